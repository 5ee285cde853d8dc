"""Work still outstanding in a Kafka state: what DEADLOCK (properties/graphcheck.py) looks for.

TLC tells a deadlock from a proper termination: a state with no successor is a deadlock
unless the spec declares it final.  In the Kafka model a state with nothing left to do may
still have successors -- faults -- so kipcheck asks the question of the *progress* steps
(``model.next.is_fault``): a state in which no progress step is enabled and that the time
bound has not cut (``model.next.quiescent``) has terminated properly when nothing is owed any
more, and is **deadlocked** when some live node or client still waits for something that
nothing in the state can deliver.

``outstanding(state, cfg, design)`` is that "something is owed": the named pieces below, one
fact each, with the KIP sentence or the Kafka rule (docs/rules.md) that says the work must end.
It reads the state only (no successor), so it can be asked of any state; it only means
"deadlocked" in a quiescent one -- elsewhere outstanding work is simply work in progress.

What is deliberately not counted: a client whose bootstrap node died (its connection is
closed: the model answers it NETWORK_EXCEPTION at the crash, and Kafka's admin client ends its
own wait by request.timeout.ms / default.api.timeout.ms); work held by a dead node (its
process is gone with its queues, table 1.6's disconnect path answers whoever waited on it); a
broker whose metadata cache is stale (nobody waits on it); a controller whose registration is
not current while its manager is idle (R-9: Kafka then waits for the next metadata delta, and
P3's quiescent clause judges the outcome); a message to a dead node (its connection is gone).
"""
from __future__ import annotations

from typing import NamedTuple
from collections.abc import Callable

from model.config import Design, ModelConfig
from model.describe import node_name
from model.state import MSG_KIND_NAMES, NO_NODE, NO_TIME, State

__all__ = ["Piece", "PIECES", "outstanding", "describe_outstanding"]


class Piece(NamedTuple):
    name: str
    owed: Callable              # (state, cfg, design) -> tuple of short descriptions

    @property
    def doc(self) -> str:
        return (self.owed.__doc__ or "").strip()


def client_awaits_answer(s: State, cfg: ModelConfig, d: Design) -> tuple:
    """A client has sent its request to a live node and has no final response yet.

    KIP-590: "If the top level error code is NOT_CONTROLLER, retry until timeout": a forwarded
    request ends with the controller's answer or REQUEST_TIMED_OUT (F-17, F-19, table 1.6); a
    request the node handles itself is answered when the write is done (Z-2, R-17).  L1
    (every-request-answered).  A client whose node died is not counted: its connection closed
    (NETWORK_EXCEPTION), and the admin client's own request timeout ends its wait anyway."""
    return tuple(f"{cfg.clients[c].name} waits for the answer to its request to "
                 f"{node_name(cfg, cfg.clients[c].node)}"
                 for c, cl in enumerate(s.clients)
                 if cl.sent and not cl.responses and s.nodes[cfg.clients[c].node].alive)


def channel_item_pending(s: State, cfg: ModelConfig, d: Design) -> tuple:
    """A live node's controller channel holds a queued or in-flight request.

    F-19: "items whose age has reached retryTimeoutMs (...) are removed and their onTimeout()
    is invoked; otherwise, if a controller address is known, the first item is removed and
    sent"; F-16: one in flight is bounded by the NetworkClient's request timeout; F-21: its
    response completes or re-queues it.  So every item leaves the channel: sent and answered,
    or timed out (F-17: KAFKA-10667, forwarded requests retried indefinitely, is the bug)."""
    out = []
    for n, node in enumerate(s.nodes):
        if not node.alive:
            continue
        ch = node.channel
        if ch.inflight:
            out.append(f"{node_name(cfg, n)}'s channel has a request in flight")
        if ch.queue:
            out.append(f"{node_name(cfg, n)}'s channel has {len(ch.queue)} request(s) queued")
    return tuple(out)


def registration_rpc_pending(s: State, cfg: ModelConfig, d: Design) -> tuple:
    """A live controller's registration manager has an RPC pending (pendingRpc).

    R-6: the response handler sets "pendingRpc = false", and onTimeout (the registration
    channel's 5 s retry timeout, R-11) takes the failure path, which clears it too; R-3: while
    it is set, maybeSendControllerRegistration only logs.  KAFKA-20247: a timeout that never
    clears it leaves the controller unregistered for good."""
    return tuple(f"{node_name(cfg, n)}'s registration manager waits for a pending RPC"
                 for n, node in enumerate(s.nodes) if node.alive and node.pending_rpc)


def registration_check_queued(s: State, cfg: ModelConfig, d: Design) -> tuple:
    """A live controller's maybeSendControllerRegistration event is queued, or its failure
    backoff timer is due, and has not run.

    R-2 (start), R-8 (a metadata delta touching its registration or the features) and R-7
    (the deferred retry after a failure) put the event on the manager's event queue, and an
    event on that queue runs: KIP-919 "Each controller will check that the controller
    registration for its ID is as expected. If it is not, it will re-register."."""
    return tuple(f"{node_name(cfg, n)}'s registration check is "
                 + ("queued" if node.send_requested else "due (failure backoff)")
                 + " and has not run"
                 for n, node in enumerate(s.nodes)
                 if node.alive and (node.send_requested
                                    or (node.retry_at != NO_TIME and s.now >= node.retry_at)))


def message_owed(s: State, cfg: ModelConfig, d: Design) -> tuple:
    """A message (an EnvelopeRequest or EnvelopeResponse, a ControllerRegistrationRequest or
    response) is on its way to a live node.

    F-16/F-21: a request sent on a connection is answered on it, or the connection breaks
    (disconnect, network timeout) and the sender re-queues it; R-6 and table 1.6 say what the
    requester does with the answer.  A message to a dead node is not counted: its connection
    is gone with the process."""
    return tuple(f"{MSG_KIND_NAMES[m.kind]} from {node_name(cfg, m.src)} to "
                 f"{node_name(cfg, m.dst)} is undelivered"
                 for m in sorted(s.network) if s.nodes[m.dst].alive)


def controller_event_queued(s: State, cfg: ModelConfig, d: Design) -> tuple:
    """A live ZooKeeper controller has a queued write event (and maybe the EnvelopeResponse
    owed with it).

    Z-2/Z-3: the controller runs every queued event: the write succeeds under the epoch
    zkVersion it won, or fails with ControllerMovedException and the controller resigns and
    answers NOT_CONTROLLER (F-26, F-34)."""
    return tuple(f"{node_name(cfg, n)} has {len(node.events)} controller event(s) queued"
                 for n, node in enumerate(s.nodes) if node.alive and node.events)


def records_uncommitted(s: State, cfg: ModelConfig, d: Design) -> tuple:
    """The live KRaft leader has appended records it has not committed (and the responses
    that wait for them).

    R-17: "The success response is sent only after the record is committed" -- the leader
    commits what it appended, or loses leadership and fails those requests with
    NOT_CONTROLLER (R-13, F-28)."""
    q = s.quorum
    if q.uncommitted and q.leader >= 0 and s.nodes[q.leader].alive:
        return (f"{node_name(cfg, q.leader)} has {len(q.uncommitted)} uncommitted record(s)",)
    return ()


def replay_behind(s: State, cfg: ModelConfig, d: Design) -> tuple:
    """A live KRaft node has not replayed every committed metadata record.

    KIP-590: "a successful update shall be eventually guaranteed": every node's metadata
    publisher replays the committed log (P6 acknowledged-mutation-visible), and a controller's
    registration manager learns from it whether it is registered (R-8)."""
    log = len(s.quorum.log)
    return tuple(f"{node_name(cfg, n)} has replayed {node.replayed} of {log} records"
                 for n, node in enumerate(s.nodes) if node.alive and node.replayed < log)


def session_expiry_unhandled(s: State, cfg: ModelConfig, d: Design) -> tuple:
    """A live ZK broker whose session ZooKeeper expired has not learned it yet.

    The ZooKeeper client delivers the session's Expired event and KafkaZkClient's
    session-expiry handler opens a new session, re-registers the broker and, if it was the
    controller, resigns (Z-3: ``maybeResign``).  Until then it is a zombie
    (KAFKA-6082 is what its writes must not do), so learning it is work the cluster owes."""
    return tuple(f"{node_name(cfg, n)} has not learned that ZooKeeper expired its session"
                 for n, node in enumerate(s.nodes) if node.alive and node.session_expired)


def broker_communication_pending(s: State, cfg: ModelConfig, d: Design) -> tuple:
    """A live KRaft broker's BrokerLifecycleManager has a registration or heartbeat in flight.

    BL-5, BL-10: the answer, an error or the channel's timeout ends every communication
    (``communicationInFlight`` is cleared on each path), and the next one is scheduled: a
    broker whose communication never ends can neither register nor heartbeat again."""
    return tuple(f"{node_name(cfg, n)}'s lifecycle manager waits for the answer from "
                 f"{node_name(cfg, node.lifecycle_to)}"
                 for n, node in enumerate(s.nodes)
                 if node.alive and node.lifecycle_to != NO_NODE)


PIECES = (
    Piece("client-awaits-answer", client_awaits_answer),
    Piece("channel-item-pending", channel_item_pending),
    Piece("registration-rpc-pending", registration_rpc_pending),
    Piece("registration-check-queued", registration_check_queued),
    Piece("message-owed", message_owed),
    Piece("controller-event-queued", controller_event_queued),
    Piece("records-uncommitted", records_uncommitted),
    Piece("replay-behind", replay_behind),
    Piece("session-expiry-unhandled", session_expiry_unhandled),
    Piece("broker-communication-pending", broker_communication_pending),
)


def outstanding(s: State, cfg: ModelConfig, d: Design) -> tuple:
    """The names of the pieces of work still owed in ``s`` (empty: nothing is owed)."""
    return tuple(p.name for p in PIECES if p.owed(s, cfg, d))


def describe_outstanding(s: State, cfg: ModelConfig, d: Design) -> list:
    """One line per thing owed in ``s``: '<piece>: <what waits>'."""
    return [f"{p.name}: {text}" for p in PIECES for text in p.owed(s, cfg, d)]
