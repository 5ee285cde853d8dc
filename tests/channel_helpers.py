"""Helpers shared by the controller-channel tests (tests/test_impl_channel.py and the channel
part of tests/test_impl_forwarding.py)."""
from impl.context import ChannelRequest

CREATE_TOPICS = 19


def item(tag: str, log: list, api_key: int = CREATE_TOPICS) -> ChannelRequest:
    """A CreateTopics request whose callbacks log (tag, what, code/now)."""
    return ChannelRequest(
        api_key=api_key,
        build=lambda v: {"Topics": [{"Name": tag, "NumPartitions": 1, "ReplicationFactor": 1}]},
        on_response=lambda code, body, now: log.append((tag, "response", code, now)),
        on_timeout=lambda now: log.append((tag, "timeout", now)),
        description=tag)
