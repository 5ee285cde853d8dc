"""The small shared vocabulary of the reference implementation's components.

Every component (forwarding, ZooKeeper, KRaft, registration, DescribeCluster, admin client) is
written *sans I/O*: it never reads a clock or a socket.  Time comes in as ``now_ms`` arguments
(the simulator's clock), bytes come in as arguments and go out as return values, and random
choices come from a ``random.Random`` the simulator seeds.  That keeps each Kafka rule testable
on its own and lets ``impl/sim.py`` (the deterministic simulator) and the conformance adapter
drive the same code one step at a time.

Nothing here imports ``model`` or ``properties``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable

from impl.protocol.principal import KafkaPrincipal


@dataclass(frozen=True)
class RequestContext:
    """What a server knows about a request besides its bytes (``RequestContext.java``): the
    connection it arrived on and who authenticated on it."""
    listener_name: str              # normalised listener name, e.g. "CONTROLLER"
    security_protocol: str          # e.g. "SASL_SSL"
    principal: KafkaPrincipal       # authenticated principal of the peer
    client_address: str = "127.0.0.1"   # peer IP address (String form, as InetAddress)
    client_id: str = ""
    connection_id: str = ""         # "local:port-peer:port-index" in Kafka; any unique text here
    from_privileged_listener: bool = False   # arrived on the control-plane / inter-broker
                                             # listener of a ZK broker (F-24, L-18)


@dataclass(frozen=True)
class ControllerInfo:
    """What a ``ControllerNodeProvider`` returns (F-15): the controller node and how to reach
    it."""
    node_id: int
    listener_name: str
    security_protocol: str = "PLAINTEXT"


@dataclass
class ChannelRequest:
    """One request queued on a ``NodeToControllerChannelManager`` (F-14):
    ``ControllerRequestCompletionHandler`` is ``on_response`` / ``on_timeout``.

    ``build(api_version)`` returns the request *body* as a dict of the schema's fields for the
    version negotiated with the controller; the channel adds the header.  ``created_ms`` is
    set by the channel at enqueue: the retry timeout counts from it (F-17, F-19)."""
    api_key: int
    build: Callable[[int], dict]
    on_response: Callable[[int, dict, int], None]   # (error_code or 0, response body, now_ms)
    on_timeout: Callable[[int], None]               # (now_ms)
    description: str = ""
    created_ms: int = -1
    tag: object = None              # owner's own reference (client request, incarnation, ...)
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class OutboundRequest:
    """A request the component wants sent: to ``destination`` on ``listener_name``."""
    destination: int
    listener_name: str
    payload: bytes                  # header + body, as on the wire (without the 4-byte size)
    correlation_id: int
    api_key: int
    api_version: int
