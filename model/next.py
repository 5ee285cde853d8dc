"""The Next relation: ``successors()`` in a fixed order, ``step()`` to replay one Step, the
initial state, and quiescence.

The order is the order of ``ACTIONS`` below, then argument order: clients and nodes by index,
messages sorted (a message is a tuple of ints, so the order is the same in every process).
"""
from __future__ import annotations

from functools import lru_cache

from model import actions as A
from model.config import BROKER, CONTROLLER, KRAFT, ZK, Design, ModelConfig
from model.state import (ENVELOPE_REQUEST, ENVELOPE_RESPONSE, FEATURE_LEVEL, REGISTER_CONTROLLER,
                         REGISTRATION_REQUEST, REGISTRATION_RESPONSE, Client, Msg, Node, Quorum,
                         NO_NODE, Record, State, Zk)
from model.step import Step

# argument kinds
NONE_ARG, CLIENT_ARG, NODE_ARG, MSG_ARG = "none", "client", "node", "msg"

# (name, function, argument kind, message kinds it takes); the order is the Next order.
ACTIONS = (
    ("client_sends_request", A.client_sends_request, CLIENT_ARG, ()),
    ("broker_learns_controller", A.broker_learns_controller, NODE_ARG, ()),
    ("channel_discovers_controller", A.channel_discovers_controller, NODE_ARG, ()),
    ("channel_sends_request", A.channel_sends_request, NODE_ARG, ()),
    ("channel_times_out_request", A.channel_times_out_request, NODE_ARG, ()),
    ("controller_handles_envelope", A.controller_handles_envelope, MSG_ARG, (ENVELOPE_REQUEST,)),
    ("broker_handles_envelope_response", A.broker_handles_envelope_response, MSG_ARG,
     (ENVELOPE_RESPONSE,)),
    ("controller_sends_registration", A.controller_sends_registration, NODE_ARG, ()),
    ("controller_handles_registration", A.controller_handles_registration, MSG_ARG,
     (REGISTRATION_REQUEST,)),
    ("controller_handles_registration_response", A.controller_handles_registration_response,
     MSG_ARG, (REGISTRATION_RESPONSE,)),
    ("node_discards_stale_response", A.node_discards_stale_response, MSG_ARG,
     (ENVELOPE_RESPONSE, REGISTRATION_RESPONSE)),
    ("controller_processes_event", A.controller_processes_event, NODE_ARG, ()),
    ("controller_commits_records", A.controller_commits_records, NONE_ARG, ()),
    ("node_replays_record", A.node_replays_record, NODE_ARG, ()),
    ("broker_handles_session_expiry", A.broker_handles_session_expiry, NODE_ARG, ()),
    ("broker_elects_controller", A.broker_elects_controller, NODE_ARG, ()),
    ("controller_becomes_leader", A.controller_becomes_leader, NODE_ARG, ()),
    ("clock_ticks", A.clock_ticks, NONE_ARG, ()),
    # faults
    ("zk_expires_session", A.zk_expires_session, NODE_ARG, ()),
    ("network_drops_message", A.network_drops_message, MSG_ARG,
     (ENVELOPE_REQUEST, ENVELOPE_RESPONSE, REGISTRATION_REQUEST, REGISTRATION_RESPONSE)),
    ("node_crashes", A.node_crashes, NODE_ARG, ()),
    ("node_restarts", A.node_restarts, NODE_ARG, ()),
)
ACTION_NAMES = tuple(name for name, _, _, _ in ACTIONS)
_BY_NAME = {name: (fn, kind) for name, fn, kind, _ in ACTIONS}
FAULT_ACTIONS = frozenset({"zk_expires_session", "network_drops_message", "node_crashes",
                           "node_restarts"})


def initial_state(cfg: ModelConfig) -> State:
    cfg.validate()
    ic = NO_NODE if cfg.initial_controller is None else cfg.initial_controller
    nodes = []
    log = ()
    if cfg.mode == KRAFT:
        epoch = 0 if ic == NO_NODE else 1
        log = (Record(FEATURE_LEVEL, cfg.metadata_version, 0, epoch, ic),)
        log += tuple(Record(REGISTER_CONTROLLER, c, 0, epoch, ic)
                     for c in cfg.initially_registered)
    for i, spec in enumerate(cfg.nodes):
        if cfg.mode == ZK:
            active = i == ic
            nodes.append(Node(zk_active=active, zk_epoch=1 if active else -1,
                              zk_epoch_version=1 if active else -1, known_controller=ic))
        elif spec.role == CONTROLLER:
            warm = i in cfg.initially_registered
            nodes.append(Node(replayed=len(log) if warm else 0,
                              registered_in_log=warm and cfg.registration,
                              send_requested=cfg.registration and not warm))
        else:
            nodes.append(Node(known_controller=ic, replayed=len(log)))
    zk, quorum = Zk(), Quorum()
    epoch = 0 if ic == NO_NODE else 1
    if cfg.mode == ZK:
        zk = Zk(controller=ic, epoch=epoch, epoch_version=epoch)
    else:
        quorum = Quorum(leader=ic, epoch=epoch, log=log)
    return State(now=0, nodes=tuple(nodes), clients=tuple(Client() for _ in cfg.clients),
                 network=frozenset(), zk=zk, quorum=quorum,
                 elections_left=cfg.max_elections, expiries_left=cfg.max_session_expiries,
                 crashes_left=cfg.max_crashes, restarts_left=cfg.max_restarts,
                 drops_left=cfg.max_drops)


_ZK_ONLY = {"controller_processes_event", "broker_handles_session_expiry",
            "broker_elects_controller", "zk_expires_session"}
_KRAFT_ONLY = {"controller_commits_records", "node_replays_record", "controller_becomes_leader"}
_BUDGET = {"broker_elects_controller": "max_elections",
           "controller_becomes_leader": "max_elections",
           "zk_expires_session": "max_session_expiries", "node_crashes": "max_crashes",
           "node_restarts": "max_restarts", "network_drops_message": "max_drops"}
_ROLE = {"broker_learns_controller": BROKER, "controller_becomes_leader": CONTROLLER,
         "controller_sends_registration": CONTROLLER}


@lru_cache(maxsize=64)
def _plan(cfg: ModelConfig) -> tuple:
    """The actions of ACTIONS that can ever be enabled in ``cfg``, in the same order, with
    their node or client arguments: an action of the other mode, of a role no node has, or
    whose fault budget is zero is never enabled, so leaving it out changes nothing but time."""
    plan = []
    for name, fn, kind, msg_kinds in ACTIONS:
        if (name in _ZK_ONLY and cfg.mode != ZK) or (name in _KRAFT_ONLY and cfg.mode != KRAFT):
            continue
        if name in _BUDGET and getattr(cfg, _BUDGET[name]) == 0:
            continue
        if name == "controller_sends_registration" and not cfg.registration:
            continue
        if kind == NODE_ARG:
            args = tuple(n for n, spec in enumerate(cfg.nodes)
                         if name not in _ROLE or spec.role == _ROLE[name])
        elif kind == CLIENT_ARG:
            args = tuple(range(len(cfg.clients)))
        else:
            args = ()
        plan.append((name, fn, kind, msg_kinds, args))
    return tuple(plan)


def successors(s: State, cfg: ModelConfig, d: Design) -> list:
    """Every enabled (Step, successor) pair, in the fixed Next order."""
    out = []
    append = out.append
    msgs = sorted(s.network) if s.network else ()
    for name, fn, kind, msg_kinds, args in _plan(cfg):
        if kind == MSG_ARG:
            for m in msgs:
                if m.kind in msg_kinds:
                    t = fn(s, cfg, d, m)
                    if t is not None:
                        append((Step(name, (tuple(m),)), t))
        elif kind == NONE_ARG:
            t = fn(s, cfg, d)
            if t is not None:
                append((Step(name, ()), t))
        else:
            for a in args:
                t = fn(s, cfg, d, a)
                if t is not None:
                    append((Step(name, (a,)), t))
    return out


def step(s: State, cfg: ModelConfig, d: Design, st: Step) -> State | None:
    """The successor of ``s`` by ``st``, or None if it is not enabled.  Raises ValueError for
    a step that does not name an action of this model or has malformed arguments."""
    entry = _BY_NAME.get(st.action)
    if entry is None:
        raise ValueError(f"unknown action {st.action!r}; actions: {', '.join(ACTION_NAMES)}")
    fn, kind = entry
    args = tuple(st.args)
    if kind == NONE_ARG:
        if args:
            raise ValueError(f"{st.action} takes no arguments, got {list(args)}")
        return fn(s, cfg, d)
    if len(args) != 1:
        raise ValueError(f"{st.action} takes one argument, got {list(args)}")
    arg = args[0]
    if kind == MSG_ARG:
        if not (isinstance(arg, tuple) and len(arg) == len(Msg._fields)
                and all(isinstance(x, int) for x in arg)):
            raise ValueError(f"{st.action} takes a message ({len(Msg._fields)} ints), got {arg!r}")
        return fn(s, cfg, d, Msg(*arg))
    limit = len(s.clients) if kind == CLIENT_ARG else len(s.nodes)
    if not isinstance(arg, int) or isinstance(arg, bool) or not 0 <= arg < limit:
        raise ValueError(f"{st.action}: {kind} index {arg!r} out of range 0..{limit - 1}")
    return fn(s, cfg, d, arg)


def is_fault(s: State, cfg: ModelConfig, st: Step) -> bool:
    """Faults disturb; everything else is progress.  A KRaft election while the leader is
    alive is a fault (a partition); with the leader dead it is progress."""
    if st.action in FAULT_ACTIONS:
        return True
    if st.action == "controller_becomes_leader":
        leader = s.quorum.leader
        return leader != NO_NODE and s.nodes[leader].alive
    return False


def quiescent(s: State, cfg: ModelConfig, d: Design, succ: list) -> bool:
    """No progress step is enabled: only faults could happen.  A state where a deadline or a
    backoff timer is pending but the time bound stops the clock is not quiescent: that is an
    artefact of the bound, not of the protocol."""
    for st, _ in succ:
        if not is_fault(s, cfg, st):
            return False
    return not (s.now >= cfg.max_time and A.time_pending(s, cfg, d))


def replay(cfg: ModelConfig, d: Design, steps) -> list:
    """The states along ``steps`` from the initial state; raises ValueError at the first step
    that is not enabled."""
    states = [initial_state(cfg)]
    for i, st in enumerate(steps):
        t = step(states[-1], cfg, d, st)
        if t is None:
            raise ValueError(f"step {i + 1} ({st}) is not enabled")
        states.append(t)
    return states


__all__ = ["ACTIONS", "ACTION_NAMES", "FAULT_ACTIONS", "initial_state", "successors", "step",
           "is_fault", "quiescent", "replay"]
