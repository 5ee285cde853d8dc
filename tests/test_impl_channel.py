"""impl/channel.py: ``ControllerChannel`` (NodeToControllerChannelManager, F-14 to F-21) at its
edges -- the cases a mutation run of the channel showed no test for.

- an unreadable controller response (F-21 has no row for it: Kafka's request thread dies);
- re-queue at the front keeps the item's original deadline (F-21.3, F-21.4, F-17);
- the next wake-up and the retry deadlines of queued items (F-19, F-20), at the boundary;
- the ApiVersions handshake at its lowest (v0) and highest versions, and KIP-511's retry;
- the remaining branches: building a request fails, authentication failure with nothing in
  flight, an idle connection closing.

The v0 and v4 ApiVersions bytes are written by hand here (``struct``), not with the codec, so a
codec bug cannot hide a channel bug.
"""
from __future__ import annotations

import struct
from itertools import pairwise

import pytest

from channel_helpers import item

from impl.channel import (KRAFT_FORWARDING_RETRY_TIMEOUT_MS, REGISTRATION_RETRY_TIMEOUT_MS,
                          ControllerChannel, FatalExitError, api_versions_response, error_counts,
                          own_api_ranges)
from impl.context import ControllerInfo
from impl.protocol import encode_response, parse_request, parse_request_header
from impl.protocol.api_keys import API_VERSIONS
from impl.protocol.errors import NOT_CONTROLLER, SASL_AUTHENTICATION_FAILED, UNSUPPORTED_VERSION

CONTROLLER = ControllerInfo(3000, "CONTROLLER", "SASL_SSL")
CREATE_TOPICS = 19




def channel_with(answer=CONTROLLER, *, retry_timeout_ms=KRAFT_FORWARDING_RETRY_TIMEOUT_MS,
                 versions=True, **kw):
    """A channel whose provider answers ``state["answer"]``; with ``versions`` the controller's
    ApiVersions are known at connect time (no handshake on the wire)."""
    state = {"answer": answer}
    if versions:
        kw["controller_api_versions"] = lambda info: own_api_ranges()
    channel = ControllerChannel(lambda: state["answer"], retry_timeout_ms=retry_timeout_ms, **kw)
    return channel, state


def topic_of(out) -> str:
    return parse_request(out.payload)[1]["Topics"][0]["Name"]


def ok_reply(out, error: int = 0) -> bytes:
    return encode_response(CREATE_TOPICS, out.api_version, out.correlation_id,
                           {"Topics": [{"Name": topic_of(out), "ErrorCode": error}]})


# ------------------------------------------------------------------------------------------
# 1. An unreadable response.  Kafka: NetworkClient.handleCompletedReceives takes the request
# off the in-flight list, parseResponse throws, the exception escapes NetworkClient.poll and
# InterBrokerSendThread.pollOnce turns it into FatalExitError -> Exit.exit(1).  Nothing is
# completed, nothing is re-queued.


def _truncated(out):
    return ok_reply(out)[:-1]


def _header_only(out):
    return struct.pack(">i", out.correlation_id)


def _garbage(out):
    return b"\xff" * 16


def _empty(out):
    return b""


def _other_correlation_id(out):
    return encode_response(CREATE_TOPICS, out.api_version, out.correlation_id + 1,
                           {"Topics": [{"Name": topic_of(out), "ErrorCode": 0}]})


@pytest.mark.parametrize("corrupt", [_truncated, _header_only, _garbage, _empty,
                                     _other_correlation_id])
def test_unreadable_response_ends_the_process_without_completing_or_requeueing(corrupt):
    log = []
    channel, _ = channel_with()
    channel.enqueue(item("a", log), 0)
    channel.enqueue(item("b", log), 0)
    out = channel.poll(0)[0]
    assert topic_of(out) == "a"
    with pytest.raises(FatalExitError) as raised:
        channel.on_response(out.correlation_id, corrupt(out), 10)
    assert raised.value.status_code == 1 and channel.exit_status == 1
    assert str(raised.value).startswith("unhandled exception caught in InterBrokerSendThread")
    # neither completed (F-21.5), nor re-queued (F-21.3/4), nor timed out later
    assert log == [] and channel.inflight is None
    assert [i.description for i in channel.queue] == ["b"]
    # the thread is dead: it neither discovers, sends, expires nor wakes up again
    assert channel.next_deadline_ms() is None
    assert channel.poll(20) == [] and channel.expire(10 ** 9) == [] and log == []
    assert channel.discover_controller(10 ** 9) is None


def _v4_garbage(channel, handshake):
    return handshake, b"\x00\x01"


def _v4_other_correlation_id(channel, handshake):
    """A v0 answer (the KIP-511 fallback path) whose correlation id is not the request's."""
    return handshake, api_versions_v0_response(handshake.correlation_id + 1, 0,
                                               {API_VERSIONS: (0, 4)})


def _v0_garbage(channel, handshake):
    """After a KIP-511 retry at v0 there is no fallback left."""
    channel.on_response(handshake.correlation_id, api_versions_v0_response(
        handshake.correlation_id, UNSUPPORTED_VERSION, {API_VERSIONS: (0, 0)}), 1)
    retry = channel.poll(1)[0]
    assert retry.api_version == 0
    return retry, struct.pack(">ih", retry.correlation_id, 0)      # truncated ApiKeys


@pytest.mark.parametrize("corrupt", [_v4_garbage, _v4_other_correlation_id, _v0_garbage])
def test_unreadable_api_versions_response_ends_the_process(corrupt):
    """Neither ``ApiVersionsResponse.parse`` nor its fallback to v0 can read it."""
    log = []
    channel, _ = channel_with(versions=False)
    channel.enqueue(item("a", log), 0)
    handshake = channel.poll(0)[0]
    assert handshake.api_key == API_VERSIONS
    sent, data = corrupt(channel, handshake)
    with pytest.raises(FatalExitError):
        channel.on_response(sent.correlation_id, data, 2)
    assert channel.exit_status == 1 and channel.inflight_request is None
    assert [i.description for i in channel.queue] == ["a"] and log == []
    assert channel.poll(3) == []


def test_trailing_bytes_after_a_response_are_not_an_error():
    """``AbstractResponse.parseResponse`` reads the body and never looks at what is left."""
    log = []
    channel, _ = channel_with()
    channel.enqueue(item("a", log), 0)
    out = channel.poll(0)[0]
    assert channel.on_response(out.correlation_id, ok_reply(out) + b"\x00junk", 5)
    assert log == [("a", "response", 0, 5)] and channel.exit_status is None


def test_a_stale_response_is_not_read_at_all():
    """A response for a correlation id not in flight (of a connection already closed) is
    dropped before parsing: even garbage does not end the process."""
    log = []
    channel, _ = channel_with()
    channel.enqueue(item("a", log), 0)
    out = channel.poll(0)[0]
    assert channel.on_response(out.correlation_id + 7, b"\xff", 1) is False
    channel.on_disconnect(2)
    assert channel.on_response(out.correlation_id, b"\xff", 3) is False
    assert channel.exit_status is None and log == []


# ------------------------------------------------------------------------------------------
# 1b. Where Kafka does re-queue (disconnect F-21.3, NOT_CONTROLLER F-21.4): at the front
# (requestQueue.putFirst), with the item's createdTimeMs unchanged (F-17).


@pytest.mark.parametrize("how", ["disconnect", "not_controller"])
def test_requeue_is_at_the_front_and_keeps_the_original_deadline(how):
    log = []
    channel, _ = channel_with(retry_timeout_ms=REGISTRATION_RETRY_TIMEOUT_MS)
    channel.enqueue(item("a", log), 0)
    out = channel.poll(0)[0]
    channel.enqueue(item("b", log), 100)
    channel.enqueue(item("c", log), 200)
    if how == "disconnect":
        channel.on_disconnect(4000)
    else:
        channel.on_response(out.correlation_id, ok_reply(out, NOT_CONTROLLER), 4000)
    assert channel.cached_controller is None                     # forgotten: re-discovered
    assert [i.description for i in channel.queue] == ["a", "b", "c"]
    assert [i.created_ms for i in channel.queue] == [0, 100, 200]
    assert channel.queue[0].extra == {"sends": 1, "requeues": 1}
    # a's deadline is still 0 + 5000, not 4000 + 5000
    assert channel.next_deadline_ms() == 4000                    # rediscover now
    assert channel.poll(4000) == []                              # reconnect backoff (50 ms)
    assert channel.next_deadline_ms() == 4050
    assert topic_of(channel.poll(4050)[0]) == "a"                # a again, before b
    assert channel.next_deadline_ms() == 5100                    # b's retry deadline
    assert channel.on_disconnect(4999).description == "a"
    assert [i.description for i in channel.expire(5000)] == ["a"]
    assert log == [("a", "timeout", 5000)]
    assert [i.description for i in channel.queue] == ["b", "c"]


# ------------------------------------------------------------------------------------------
# 2. The next wake-up honours every queued item's retry deadline (F-19); an item is timed out
# at its deadline (now - created >= retryTimeoutMs), not at the next 100 ms backoff tick.


def free_run(channel, until_ms: int, on_wake=None) -> list[int]:
    """Drive the channel as a simulator does: wake at ``next_deadline_ms``, poll; returns the
    wake-up times."""
    wakes, now = [], 0
    for _ in range(10_000):
        deadline = channel.next_deadline_ms()
        if deadline is None or deadline > until_ms:
            return wakes
        now = max(now, deadline)
        wakes.append(now)
        channel.poll(now)
        if on_wake:
            on_wake(now)
    raise AssertionError("the channel keeps waking at the same time")


def test_wakeup_is_at_the_earliest_queued_deadline_without_a_controller():
    log = []
    channel, _ = channel_with(None, retry_timeout_ms=REGISTRATION_RETRY_TIMEOUT_MS,
                              no_controller_backoff_ms=1_000_000)
    for tag, at in (("a", 30), ("b", 1000), ("c", 2500)):
        channel.enqueue(item(tag, log), at)
        channel.poll(at)
    assert channel.next_deadline_ms() == 5030                   # a's, the earliest
    wakes = free_run(channel, 100_000)
    assert wakes == [5030, 6000, 7500]
    assert log == [("a", "timeout", 5030), ("b", "timeout", 6000), ("c", "timeout", 7500)]
    assert channel.next_deadline_ms() is None                   # idle


def test_timeouts_fall_between_the_100_ms_backoff_ticks():
    """With Kafka's 100 ms no-controller backoff the deadline still wins when it is earlier."""
    log = []
    channel, _ = channel_with(None, retry_timeout_ms=REGISTRATION_RETRY_TIMEOUT_MS)
    channel.enqueue(item("a", log), 30)
    channel.enqueue(item("b", log), 45)
    wakes = free_run(channel, 10_000)
    assert log == [("a", "timeout", 5030), ("b", "timeout", 5045)]
    assert 5030 in wakes and 5045 in wakes and wakes[:2] == [45, 145]
    assert all(later - earlier <= 100 for earlier, later in pairwise(wakes))


def test_a_queued_items_deadline_wakes_the_thread_while_another_is_in_flight():
    """The in-flight item's own retry deadline does not count (it is no longer queued); the
    queued item's does, before the in-flight request's network timeout."""
    log = []
    channel, state = channel_with(None)
    channel.enqueue(item("a", log), 0)
    channel.enqueue(item("b", log), 10)
    channel.poll(0)
    state["answer"] = CONTROLLER
    assert topic_of(channel.poll(40_000)[0]) == "a"
    # a: created 0 but in flight (network timeout 40000 + 30000 + 1); b: deadline 60010
    assert channel.next_deadline_ms() == 60_010
    assert channel.expire(60_009) == [] and log == []
    assert [i.description for i in channel.expire(60_010)] == ["b"]
    assert log == [("b", "timeout", 60_010)] and channel.inflight.description == "a"
    assert channel.next_deadline_ms() == 70_001
    # the network timeout: a comes back (F-21.3) and is already past its retry deadline
    assert channel.expire(70_000) == [] and channel.inflight.description == "a"
    assert [i.description for i in channel.expire(70_001)] == ["a"]
    assert log[-1] == ("a", "timeout", 70_001) and channel.cached_controller is None


def test_after_a_disconnect_the_provider_is_asked_at_once_not_after_an_old_backoff():
    """Finding the controller ends the 100 ms backoff; losing it later asks again at once."""
    log = []
    channel, state = channel_with(None)
    channel.enqueue(item("a", log), 0)
    channel.poll(0)
    assert channel.next_deadline_ms() == 100
    state["answer"] = CONTROLLER
    channel.poll(100)
    channel.on_disconnect(1000)
    assert channel.next_deadline_ms() == 1000


def test_deadline_equal_to_now_is_expired_not_sent():
    """``now - created >= retryTimeoutMs``: one ms before its deadline an item is sent; at its
    deadline it is never sent (not even by a ``next_send`` before ``expire``) and expires."""
    log = []
    channel, state = channel_with(None, retry_timeout_ms=REGISTRATION_RETRY_TIMEOUT_MS,
                                  reconnect_backoff_ms=0)
    channel.enqueue(item("late", log), 0)
    channel.enqueue(item("ok", log), 1)
    channel.poll(0)
    state["answer"] = CONTROLLER
    channel.discover_controller(4999)
    assert channel.next_deadline_ms() == 4999                   # can send now
    assert topic_of(channel.next_send(4999)) == "late"          # one ms before: sent
    channel.on_disconnect(4999)
    channel.discover_controller(5000)
    assert channel.next_deadline_ms() == 5000                   # deadline == now
    assert channel.next_send(5000) is None                      # never sent at its deadline
    assert [i.description for i in channel.expire(5000)] == ["late"]
    assert log == [("late", "timeout", 5000)]
    assert channel.expire(5000) == []                           # "ok" is due at 5001
    assert topic_of(channel.next_send(5000)) == "ok"


# ------------------------------------------------------------------------------------------
# 3. The ApiVersions handshake at its boundaries (NetworkClient.handleApiVersionsResponse).


def api_versions_v0_response(correlation_id: int, error: int, ranges: dict) -> bytes:
    """ApiVersionsResponse v0 with response header v0: correlation id; ErrorCode; ApiKeys as
    an INT32-counted array of (ApiKey, MinVersion, MaxVersion); no ThrottleTimeMs."""
    data = struct.pack(">ihi", correlation_id, error, len(ranges))
    for key, (low, high) in sorted(ranges.items()):
        data += struct.pack(">hhh", key, low, high)
    return data


def api_versions_v4_response(correlation_id: int, ranges: dict) -> bytes:
    """ApiVersionsResponse v4: header v0 still (no tagged fields, KIP-511), then a flexible
    body: ErrorCode, compact array of (ApiKey, MinVersion, MaxVersion, no tags),
    ThrottleTimeMs, no tags."""
    data = struct.pack(">ih", correlation_id, 0) + bytes([len(ranges) + 1])
    for key, (low, high) in sorted(ranges.items()):
        data += struct.pack(">hhh", key, low, high) + b"\x00"
    return data + struct.pack(">i", 0) + b"\x00"


def handshake_channel():
    log = []
    channel, _ = channel_with(versions=False)
    channel.enqueue(item("a", log), 0)
    return channel, log


def test_handshake_at_the_lowest_version_v0():
    """A controller that knows only ApiVersions v0: the v4 request gets UNSUPPORTED_VERSION at
    v0 naming 0..0, the retry is a v0 request (header v1, empty body), its v0 answer is read."""
    channel, log = handshake_channel()
    first = channel.poll(0)[0]
    assert (first.api_key, first.api_version) == (API_VERSIONS, 4)
    channel.on_response(first.correlation_id, api_versions_v0_response(
        first.correlation_id, UNSUPPORTED_VERSION, {API_VERSIONS: (0, 0)}), 1)
    assert channel.cached_controller == CONTROLLER and channel.inflight_request is None
    retry = channel.poll(1)[0]
    assert (retry.api_key, retry.api_version) == (API_VERSIONS, 0)
    header, offset = parse_request_header(retry.payload)
    client_id = header["ClientId"].encode()
    assert retry.payload == struct.pack(">hhih", API_VERSIONS, 0, retry.correlation_id,
                                        len(client_id)) + client_id     # v0: nothing else
    assert offset == len(retry.payload)
    controller = {API_VERSIONS: (0, 0), CREATE_TOPICS: (2, 5)}
    channel.on_response(retry.correlation_id,
                        api_versions_v0_response(retry.correlation_id, 0, controller), 2)
    assert channel.controller_api_versions == controller
    out = channel.poll(2)[0]
    assert (out.api_key, out.api_version) == (CREATE_TOPICS, 5) and log == []


def test_handshake_at_the_highest_version_both_know():
    """Ours is v4; a controller that knows v4 (or later) answers v4 in one round trip."""
    channel, log = handshake_channel()
    first = channel.poll(0)[0]
    assert first.api_version == own_api_ranges()[API_VERSIONS][1] == 4
    controller = {API_VERSIONS: (0, 4), CREATE_TOPICS: (0, 7)}
    assert channel.on_response(first.correlation_id,
                               api_versions_v4_response(first.correlation_id, controller), 1)
    assert channel.controller_api_versions == controller
    out = channel.poll(1)[0]
    assert (out.api_key, out.api_version) == (CREATE_TOPICS, 7)
    # a newer controller (ApiVersions 0..5) answers our v4 request at v4 as well
    channel, _ = handshake_channel()
    first = channel.poll(0)[0]
    newer = {**own_api_ranges(), API_VERSIONS: (0, 5)}
    channel.on_response(first.correlation_id, api_versions_response(first.payload, newer), 1)
    assert channel.controller_api_versions[API_VERSIONS] == (0, 5)
    assert channel.poll(1)[0].api_key == CREATE_TOPICS


def test_kip_511_fallback_from_v1_reads_the_v0_answer():
    """A node whose newest ApiVersions is v1 still falls back to reading v0 (only a v0
    request has no fallback); the controller's helper answers a v0 request at v0."""
    log = []
    ours = {**own_api_ranges(), API_VERSIONS: (0, 1)}
    channel = ControllerChannel(lambda: CONTROLLER, retry_timeout_ms=60_000,
                                local_api_versions=ours)
    channel.enqueue(item("a", log), 0)
    first = channel.poll(0)[0]
    assert first.api_version == 1
    only_v0 = {**own_api_ranges(), API_VERSIONS: (0, 0)}
    channel.on_response(first.correlation_id, api_versions_response(first.payload, only_v0), 1)
    retry = channel.poll(1)[0]
    assert retry.api_version == 0
    channel.on_response(retry.correlation_id, api_versions_response(retry.payload, only_v0), 2)
    assert channel.controller_api_versions[API_VERSIONS] == (0, 0)
    assert channel.poll(2)[0].api_key == CREATE_TOPICS and channel.exit_status is None


def test_kip_511_without_an_api_versions_entry_retries_at_v0():
    """``maxApiVersion`` defaults to 0 when the error response lists no ApiVersions range."""
    channel, _ = handshake_channel()
    first = channel.poll(0)[0]
    channel.on_response(first.correlation_id, api_versions_v0_response(
        first.correlation_id, UNSUPPORTED_VERSION, {}), 1)
    assert channel.cached_controller == CONTROLLER                # no disconnect
    assert channel.poll(1)[0].api_version == 0


def test_kip_511_retries_at_the_servers_max_even_if_unchanged():
    """Kafka retries at whatever MaxVersion the server names; it has no loop guard."""
    channel, _ = handshake_channel()
    first = channel.poll(0)[0]
    channel.on_response(first.correlation_id, api_versions_v0_response(
        first.correlation_id, UNSUPPORTED_VERSION, {API_VERSIONS: (0, 4)}), 1)
    again = channel.poll(1)[0]
    assert (again.api_key, again.api_version) == (API_VERSIONS, 4)
    assert channel.cached_controller == CONTROLLER


@pytest.mark.parametrize("version, error", [(0, UNSUPPORTED_VERSION), (4, 31)])
def test_handshake_error_closes_the_connection(version, error):
    """An error to a v0 request, or any error other than UNSUPPORTED_VERSION: close."""
    channel, log = handshake_channel()
    first = channel.poll(0)[0]
    if version == 0:
        channel.on_response(first.correlation_id, api_versions_v0_response(
            first.correlation_id, UNSUPPORTED_VERSION, {}), 1)
        first = channel.poll(1)[0]
        assert first.api_version == 0
    channel.on_response(first.correlation_id, api_versions_v0_response(
        first.correlation_id, error, {API_VERSIONS: (0, 0)}), 2)
    assert channel.cached_controller is None and channel.inflight_request is None
    assert [i.description for i in channel.queue] == ["a"] and log == []
    # the next connection starts over at the latest version
    channel.discover_controller(100)
    assert channel.poll(100)[0].api_version == 4


def test_the_retry_version_belongs_to_one_connection():
    """A new connection sends ``ApiVersionsRequest.Builder()``: the latest version again."""
    channel, _ = handshake_channel()
    old = {**own_api_ranges(), API_VERSIONS: (0, 3)}
    first = channel.poll(0)[0]
    channel.on_response(first.correlation_id, api_versions_response(first.payload, old), 1)
    retry = channel.poll(1)[0]
    assert retry.api_version == 3
    channel.on_response(retry.correlation_id, api_versions_response(retry.payload, old), 2)
    out = channel.poll(2)[0]
    assert out.api_key == CREATE_TOPICS
    channel.on_disconnect(3)
    channel.discover_controller(100)
    assert channel.poll(100)[0].api_version == 4                # not 3


def test_unsupported_version_retry_is_forgotten_when_the_idle_connection_closes():
    """UNSUPPORTED_VERSION, then the connection closes before the retry is sent."""
    channel, _ = handshake_channel()
    first = channel.poll(0)[0]
    channel.on_response(first.correlation_id, api_versions_v0_response(
        first.correlation_id, UNSUPPORTED_VERSION, {API_VERSIONS: (0, 2)}), 1)
    assert channel.on_disconnect(1) is None                     # nothing in flight
    assert channel.cached_controller == CONTROLLER              # an idle close keeps it
    assert channel.poll(50) == [] and channel.next_deadline_ms() == 51   # reconnect backoff
    assert channel.poll(51)[0].api_version == 4


def test_idle_connection_closing_forgets_the_controllers_versions_only():
    log = []
    channel, _ = channel_with(versions=False)
    channel.enqueue(item("a", log), 0)
    handshake = channel.poll(0)[0]
    channel.on_response(handshake.correlation_id,
                        api_versions_response(handshake.payload, own_api_ranges()), 1)
    out = channel.poll(1)[0]
    channel.on_response(out.correlation_id, ok_reply(out), 2)
    assert channel.controller_api_versions is not None
    assert channel.on_disconnect(3) is None
    assert channel.controller_api_versions is None and channel.cached_controller == CONTROLLER
    channel.enqueue(item("b", log), 4)
    assert channel.poll(52) == []                               # reconnect backoff
    assert channel.poll(53)[0].api_key == API_VERSIONS          # a new handshake


# ------------------------------------------------------------------------------------------
# 4. Other branches.


@pytest.mark.parametrize("theirs, expected", [
    ((7, 9), 7),                  # overlap of exactly one version: ours is 0..7
    ((0, 0), 0),
    ((8, 9), None),               # disjoint by one: a version mismatch (F-21.2)
])
def test_negotiated_version_at_the_edges_of_the_overlap(theirs, expected):
    """``NodeApiVersions.latestUsableVersion``: the highest version in both ranges."""
    log = []
    ranges = {**own_api_ranges(), CREATE_TOPICS: theirs}
    channel = ControllerChannel(lambda: CONTROLLER, retry_timeout_ms=60_000,
                                controller_api_versions=lambda info: ranges)
    channel.enqueue(item("a", log), 0)
    sent = channel.poll(0)
    if expected is None:
        assert sent == [] and log == [("a", "response", UNSUPPORTED_VERSION, 0)]
    else:
        assert sent[0].api_version == expected and log == []


def test_request_the_codec_cannot_write_at_the_version_is_a_version_mismatch():
    """``NetworkClient.doSend`` catches UnsupportedVersionException (a non-default field the
    negotiated version lacks): the callback completes (F-21.2), nothing is sent."""
    log = []
    ranges = {**own_api_ranges(), CREATE_TOPICS: (0, 0)}
    channel = ControllerChannel(lambda: CONTROLLER, retry_timeout_ms=60_000,
                                controller_api_versions=lambda info: ranges)
    request = item("a", log)
    request.build = lambda v: {"Topics": [{"Name": "a", "NumPartitions": 1,
                                           "ReplicationFactor": 1}],
                               "validateOnly": True}            # v1+ only
    channel.enqueue(request, 0)
    assert channel.poll(0) == []
    assert log == [("a", "response", UNSUPPORTED_VERSION, 0)] and channel.queue == ()
    assert channel.exit_status is None and channel.inflight_request is None


def test_request_the_codec_cannot_write_at_all_ends_the_process():
    """Any other exception from ``build`` / ``toSend`` escapes ``doSend``: FatalExitError."""
    log = []
    channel, _ = channel_with()
    request = item("a", log)
    request.build = lambda v: {"Topics": [{"Name": None, "NumPartitions": 1,
                                           "ReplicationFactor": 1}]}   # not nullable
    channel.enqueue(request, 0)
    with pytest.raises(FatalExitError):
        channel.poll(0)
    assert channel.exit_status == 1 and log == []


def test_authentication_failure_with_nothing_in_flight_does_nothing():
    log = []
    channel, _ = channel_with()
    channel.enqueue(item("a", log), 0)
    assert channel.on_authentication_failure(0) is None
    assert channel.cached_controller is None and log == []       # never discovered
    assert topic_of(channel.poll(1)[0]) == "a"
    assert channel.on_authentication_failure(2).description == "a"
    assert log == [("a", "response", SASL_AUTHENTICATION_FAILED, 2)]
    assert channel.cached_controller is None and channel.queue == ()
    assert channel.inflight_request is None


def test_correlation_ids_skip_the_sasl_reserved_range_and_go_negative():
    """``NetworkClient.nextCorrelationId``: ..., MAX_VALUE - 8, then MIN_VALUE, MIN_VALUE + 1;
    the top eight ints are SaslClientAuthenticator's.  The negative id goes on the wire and
    its response is matched."""
    log = []
    channel, _ = channel_with()
    channel._next_correlation_id = 2 ** 31 - 9                  # two billion requests later
    ids = []
    for tag in "abc":
        channel.enqueue(item(tag, log), 0)
        out = channel.poll(0)[0]
        assert parse_request_header(out.payload)[0]["CorrelationId"] == out.correlation_id
        ids.append(out.correlation_id)
        assert channel.on_response(out.correlation_id, ok_reply(out), 1)
    assert ids == [2 ** 31 - 9, -2 ** 31, -2 ** 31 + 1]
    assert [entry[:3] for entry in log] == [("a", "response", 0), ("b", "response", 0),
                                             ("c", "response", 0)]


def test_a_controller_without_known_versions_gets_the_handshake_on_the_wire():
    """``controller_api_versions`` may not know a node (None): NetworkClient asks it."""
    log = []
    channel = ControllerChannel(lambda: CONTROLLER, retry_timeout_ms=60_000,
                                controller_api_versions=lambda info: None)
    channel.enqueue(item("a", log), 0)
    out = channel.poll(0)[0]
    assert (out.api_key, out.api_version) == (API_VERSIONS, 4)


def test_error_counts_counts_every_error_code_at_any_depth():
    """``AbstractResponse.errorCounts``: CreateTopics one per topic; an EnvelopeResponse only
    its own code (its ResponseData is opaque bytes, F-21.4)."""
    body = {"ThrottleTimeMs": 0,
            "Topics": [{"Name": "a", "ErrorCode": NOT_CONTROLLER},
                       {"Name": "b", "ErrorCode": NOT_CONTROLLER},
                       {"Name": "c", "ErrorCode": 0}]}
    assert error_counts(body) == {NOT_CONTROLLER: 2, 0: 1}
    assert error_counts({"ErrorCode": 0, "ResponseData": b"\x00\x29"}) == {0: 1}
    assert error_counts(None) == {}


def test_queue_length_and_inflight_request_observers():
    log = []
    channel, _ = channel_with()
    for tag in "abc":
        channel.enqueue(item(tag, log), 0)
    assert channel.queue_length() == 3 and channel.inflight_request is None
    out = channel.poll(0)[0]
    assert channel.queue_length() == 2 and out.correlation_id == 0   # NetworkClient: from 0
    flight = channel.inflight_request
    assert (flight.correlation_id, flight.sent_ms, flight.destination) == \
        (out.correlation_id, 0, CONTROLLER)
