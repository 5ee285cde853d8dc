"""What PROGRESS (properties/graphcheck.py) asks of a Kafka state: which client requests a
healthy cluster still owes a real answer, and which have one.

KIP-590: the broker forwards an admin mutation to the controller inside an EnvelopeRequest and
"the response will be sent back to the client"; NOT_CONTROLLER is retried "until timeout".
The timeout ends the wait of a client whose cluster failed it; it is not a way to answer one
whose cluster did not.  So, as a possibility (the model's clock may always run out a deadline,
so "never times out" is not a safety fact): in a **healthy** cluster, a client still waiting
**within its deadline** can get an answer that is not REQUEST_TIMED_OUT **without any further
fault** (``model.next.is_fault``).  The graph check decides it by backward reachability over
the explored graph's progress transitions.

Healthy: every node is up, no ZooKeeper session has expired unbeknown to its node, and (ZK)
the broker that owns ``/controller`` can read an EnvelopeRequest: a principal builder without
KafkaPrincipalSerde makes it close every envelope connection (F-23), and the forwarder then
retries until its deadline -- Kafka's behaviour for that misconfiguration, not a lost answer.
Within its deadline: less than the forward timeout since the client sent (F-17), the bound a
queued forward has; a direct request to a controller has no deadline in the model.

The same holds for a controller's ControllerRegistrationRequest (R-6: the response clears
``pendingRpc``; ``onTimeout`` is the failure path): in a healthy cluster, an RPC that is
pending, whose request, reply or response is not lost (a dropped message or a crashed peer
leaves only the timeout) and whose channel has nothing due, can be completed by its response
without a fault **and without a timeout**; a controller whose principal lacks CLUSTER_ACTION
is refused (R-12) and is not owed a success.  Completed: no RPC pending, no backoff timer (an
error response or a timeout sets one, R-7) and nothing of it left on the channel.

Goals: one per client (``c``), then one per registering controller.  ``marks`` sets bit
``2 * g`` when goal ``g`` is owed and bit ``2 * g + 1`` when it is met; ``strict(cfg)`` says
which goals may not use a timeout; ``edge(state, step)`` classifies a transition (``ORDINARY``,
``FAULT``, ``TIMEOUT``).
"""
from __future__ import annotations

from model import kafka
from model import next as model_next
from model.config import KRAFT, ZK, Design, ModelConfig
from model.state import (FORWARD, NO_NODE, NO_TIME, REGISTRATION, REGISTRATION_REQUEST,
                         REGISTRATION_RESPONSE, REPLY_REGISTRATION, State)

__all__ = ["ORDINARY", "FAULT", "TIMEOUT", "healthy", "owed", "answered", "registration_owed",
           "registration_done", "goals", "marks", "strict", "edge", "edges", "describe_goal"]

ORDINARY, FAULT, TIMEOUT = 0, 1, 2      # edge classes (one byte per transition)
TIMEOUT_ACTION = "channel_times_out_request"    # the one timeout step (F-19)


def healthy(s: State, cfg: ModelConfig) -> bool:
    """Every node up, no session expired unbeknown to its node, and (ZK) the owner of
    /controller able to read envelopes (F-23)."""
    for node in s.nodes:
        if not node.alive or node.session_expired:
            return False
    if cfg.mode == ZK:
        owner = s.zk.controller
        if owner != NO_NODE and not cfg.nodes[owner].principal_serde:
            return False
    return True


def owed(s: State, cfg: ModelConfig, d: Design, c: int) -> bool:
    """Client ``c`` has sent its request, has no answer yet, and (forwarded) is within the
    forward timeout counted from its send (F-17)."""
    cl = s.clients[c]
    if not cl.sent or cl.responses:
        return False
    if cl.forwarded and cl.sent_at != NO_TIME and s.now - cl.sent_at >= cfg.forward_timeout:
        return False
    return True


def answered(s: State, c: int) -> bool:
    """Client ``c`` has an answer that is not REQUEST_TIMED_OUT."""
    r = s.clients[c].responses
    return bool(r) and r[0].code != kafka.REQUEST_TIMED_OUT


def _registration_controllers(cfg: ModelConfig) -> tuple:
    if not cfg.registration or cfg.mode != KRAFT:
        return ()
    return tuple(cfg.controllers())


# The check states Kafka's rules itself rather than calling the model's helpers: a design
# mutant of model/actions.py must not change what PROGRESS asks.

def _rpc_not_lost(s: State, c: int, item) -> bool:
    """Controller ``c``'s registration ``item`` in flight still has its request or response in
    the network, or the leader holds its reply."""
    inc = item.incarnation_id
    if any((m.kind == REGISTRATION_REQUEST and m.src == c and m.incarnation_id == inc)
           or (m.kind == REGISTRATION_RESPONSE and m.dst == c and m.incarnation_id == inc)
           for m in s.network):
        return True
    return any(r and r.how == REPLY_REGISTRATION and r.to == c and r.key == inc
               for _, r in s.quorum.uncommitted)


def _something_due(s: State, cfg: ModelConfig, d: Design, c: int) -> bool:
    """Node ``c``'s channel must time an item out now: the one in flight past its network
    timeout, or the queue's head past its retry timeout (F-16, F-17, F-19)."""
    def timeout(item):
        if item.kind == FORWARD:
            return None if d.forward_without_deadline else cfg.forward_timeout
        return None if d.registration_without_deadline else cfg.registration_timeout
    ch = s.nodes[c].channel
    if ch.inflight:
        t = timeout(ch.inflight)
        if t is not None and s.now - ch.inflight.sent >= t:
            return True
    if ch.queue:
        t = timeout(ch.queue[0])
        if t is not None and s.now - ch.queue[0].created >= t:
            return True
    return False


def registration_owed(s: State, cfg: ModelConfig, d: Design, c: int) -> bool:
    """Controller ``c`` has a registration RPC pending that a healthy cluster can complete:
    its principal may register (R-12), nothing on its channel is due, and the RPC is queued
    or in flight with its messages not lost."""
    node = s.nodes[c]
    if not node.alive or not node.pending_rpc:
        return False
    if not cfg.allows(cfg.nodes[c].principal, kafka.CLUSTER_ACTION):
        return False
    if _something_due(s, cfg, d, c):
        return False
    item = node.channel.inflight
    if item and item.kind == REGISTRATION:
        return _rpc_not_lost(s, c, item)
    return any(i.kind == REGISTRATION for i in node.channel.queue)


def registration_done(s: State, c: int) -> bool:
    """No RPC pending, no backoff timer, and no registration left on its channel."""
    node = s.nodes[c]
    ch = node.channel
    return (node.alive and not node.pending_rpc and node.retry_at == NO_TIME
            and not (ch.inflight and ch.inflight.kind == REGISTRATION)
            and not any(i.kind == REGISTRATION for i in ch.queue))


def goals(cfg: ModelConfig) -> tuple:
    """The goals in order, as ``(is a controller, index)``: the clients, then the registering
    controllers (at most ``graphcheck.MAX_GOALS``: two bits each in a 64-bit mark)."""
    from properties.graphcheck import MAX_GOALS
    out = (tuple((False, c) for c in range(len(cfg.clients)))
           + tuple((True, c) for c in _registration_controllers(cfg)))
    if len(out) > MAX_GOALS:
        raise ValueError(f"{cfg.name}: {len(out)} PROGRESS goals (clients and registering "
                         f"controllers); at most {MAX_GOALS} fit the explorer's goal marks")
    return out


def marks(s: State, cfg: ModelConfig, d: Design, goal_list: tuple | None = None) -> int:
    """Bit 2g: goal g is owed by a healthy cluster; bit 2g+1: it is met.  ``goal_list``:
    ``goals(cfg)``, passed in by a caller that asks for many states."""
    m = 0
    ok = None
    for g, (controller, i) in enumerate(goals(cfg) if goal_list is None else goal_list):
        if registration_done(s, i) if controller else answered(s, i):
            m |= 2 << (2 * g)
        elif registration_owed(s, cfg, d, i) if controller else owed(s, cfg, d, i):
            if ok is None:
                ok = healthy(s, cfg)
            if ok:
                m |= 1 << (2 * g)
    return m


def strict(cfg: ModelConfig) -> tuple:
    """Per goal: True where the goal may not be met through a timeout (a registration RPC:
    its timeout is its failure path)."""
    return (False,) * len(cfg.clients) + (True,) * len(_registration_controllers(cfg))


def edge(s: State, cfg: ModelConfig, st) -> int:
    if model_next.is_fault(s, cfg, st):
        return FAULT
    return TIMEOUT if st.action == TIMEOUT_ACTION else ORDINARY


# per action its class where the action alone decides it (``edge``); a conditional fault's
# depends on the state
_EDGE_CLASS = {name: FAULT if name in model_next.FAULT_ACTIONS else
               TIMEOUT if name == TIMEOUT_ACTION else ORDINARY
               for name in model_next.ACTION_NAMES if name not in model_next.CONDITIONAL_FAULTS}


def edges(s: State, cfg: ModelConfig, succ) -> list:
    """``edge`` of each of a state's transitions ``succ``, asked for all at once (the explorer
    asks per expanded state: looked up per action, not derived per transition)."""
    of = _EDGE_CLASS.get
    out = []
    for st, _ in succ:
        c = of(st.action)
        out.append(edge(s, cfg, st) if c is None else c)
    return out


def describe_goal(cfg: ModelConfig, goal: int) -> str:
    if goal < len(cfg.clients):
        spec = cfg.clients[goal]
        return (f"client {spec.name} waits for its {kafka.API_NAMES.get(spec.api, 'request')} "
                f"within its deadline in a healthy cluster, and no path without a fault gives "
                f"it an answer other than REQUEST_TIMED_OUT")
    c = _registration_controllers(cfg)[goal - len(cfg.clients)]
    return (f"{cfg.nodes[c].name}'s ControllerRegistrationRequest is pending in a healthy "
            f"cluster with its messages not lost, and no path without a fault or a timeout "
            f"completes it with its response")
