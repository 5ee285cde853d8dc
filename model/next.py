"""The Next relation: ``successors()`` in a fixed order, ``step()`` to replay one Step, the
initial state, and quiescence.

The order is the order of ``ACTION_TABLE`` below, then argument order: clients and nodes by
index, messages sorted (a message is a tuple of ints, so the order is the same in every
process).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from model import actions as A
from model.config import BROKER, CONTROLLER, KRAFT, ZK, Design, ModelConfig
from model.state import (BROKER_HEARTBEAT_REQUEST, BROKER_HEARTBEAT_RESPONSE,
                         BROKER_REGISTRATION_REQUEST, BROKER_REGISTRATION_RESPONSE,
                         CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE,
                         ENVELOPE_REQUEST, ENVELOPE_RESPONSE, FEATURE_LEVEL, MSG_KIND_NAMES,
                         MSG_ARITY, REGISTER_BROKER, REGISTER_CONTROLLER, REGISTRATION_REQUEST,
                         REGISTRATION_RESPONSE, Client, FeatureLevelRecord, Node, Quorum, NO_NODE,
                         NO_TIME, RegisterBrokerRecord, RegisterControllerRecord, State, Zk,
                         message)
from model.step import Step

# argument kinds
NONE_ARG, CLIENT_ARG, NODE_ARG, MSG_ARG = "none", "client", "node", "msg"
# the modes an action belongs to: ZK, KRAFT, or both
BOTH = "both"


@dataclass(frozen=True)
class ActionSpec:
    """Everything the model knows about one action, in one place.  ``ACTIONS``,
    ``ACTION_NAMES``, ``FAULT_ACTIONS``, ``fault_budgets`` and ``_plan`` are derived from
    ``ACTION_TABLE``; the implementation keeps its own vocabulary (``impl.cluster.STEPS`` and
    ``FAULTS``), and tests/test_action_table.py checks that the two agree.

    A message action's ``msg_kinds`` is its precondition, not a filter: ``successors`` and
    ``step`` call it only with a message of one of those kinds that is in the network (``step``
    refuses another kind with ValueError and a message not in the network as not enabled), so
    the action itself need not check either."""
    name: str
    fn: Callable
    arg: str                    # NONE_ARG | CLIENT_ARG | NODE_ARG | MSG_ARG
    msg_kinds: tuple = ()       # MSG_ARG: the message kinds it takes (its precondition)
    fault: bool = False         # always a fault (is_fault adds a conditional one)
    budget: str | None = None   # the ModelConfig bound that limits how often it happens
    mode: str = BOTH            # ZK | KRAFT | BOTH: the mode it can happen in
    role: str | None = None     # NODE_ARG: the role its node must have (None: any)
    requires: str | None = None  # a ModelConfig flag that must be on for it to happen


_ALL_MSGS = (ENVELOPE_REQUEST, ENVELOPE_RESPONSE, REGISTRATION_REQUEST, REGISTRATION_RESPONSE,
             BROKER_REGISTRATION_REQUEST, BROKER_REGISTRATION_RESPONSE, BROKER_HEARTBEAT_REQUEST,
             BROKER_HEARTBEAT_RESPONSE, CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE)
_LIFECYCLE_RESPONSES = (BROKER_REGISTRATION_RESPONSE, BROKER_HEARTBEAT_RESPONSE)

# The order is the Next order.
ACTION_TABLE = (
    ActionSpec("client_sends_request", A.client_sends_request, CLIENT_ARG),
    ActionSpec("broker_learns_controller", A.broker_learns_controller, NODE_ARG, role=BROKER),
    ActionSpec("channel_discovers_controller", A.channel_discovers_controller, NODE_ARG),
    ActionSpec("channel_sends_request", A.channel_sends_request, NODE_ARG),
    ActionSpec("channel_times_out_request", A.channel_times_out_request, NODE_ARG),
    ActionSpec("controller_handles_envelope", A.controller_handles_envelope, MSG_ARG,
               (ENVELOPE_REQUEST,)),
    ActionSpec("broker_handles_envelope_response", A.broker_handles_envelope_response, MSG_ARG,
               (ENVELOPE_RESPONSE,)),
    ActionSpec("controller_handles_create_topics", A.controller_handles_create_topics, MSG_ARG,
               (CREATE_TOPICS_REQUEST,), mode=KRAFT, requires="internal_topics"),
    ActionSpec("broker_handles_create_topics_response", A.broker_handles_create_topics_response,
               MSG_ARG, (CREATE_TOPICS_RESPONSE,), mode=KRAFT, requires="internal_topics"),
    ActionSpec("controller_sends_registration", A.controller_sends_registration, NODE_ARG,
               role=CONTROLLER, requires="registration"),
    ActionSpec("controller_handles_registration", A.controller_handles_registration, MSG_ARG,
               (REGISTRATION_REQUEST,)),
    ActionSpec("controller_handles_registration_response",
               A.controller_handles_registration_response, MSG_ARG, (REGISTRATION_RESPONSE,)),
    ActionSpec("broker_sends_registration", A.broker_sends_registration, NODE_ARG, mode=KRAFT,
               role=BROKER, requires="broker_registration"),
    ActionSpec("broker_sends_heartbeat", A.broker_sends_heartbeat, NODE_ARG, mode=KRAFT,
               role=BROKER, requires="broker_registration"),
    ActionSpec("controller_handles_broker_registration",
               A.controller_handles_broker_registration, MSG_ARG, (BROKER_REGISTRATION_REQUEST,),
               mode=KRAFT, requires="broker_registration"),
    ActionSpec("controller_handles_broker_heartbeat", A.controller_handles_broker_heartbeat,
               MSG_ARG, (BROKER_HEARTBEAT_REQUEST,), mode=KRAFT, requires="broker_registration"),
    ActionSpec("broker_handles_lifecycle_response", A.broker_handles_lifecycle_response,
               MSG_ARG, _LIFECYCLE_RESPONSES, mode=KRAFT, requires="broker_registration"),
    ActionSpec("controller_fences_stale_broker", A.controller_fences_stale_broker, NODE_ARG,
               mode=KRAFT, role=BROKER, requires="broker_registration"),
    ActionSpec("node_discards_stale_response", A.node_discards_stale_response, MSG_ARG,
               (ENVELOPE_RESPONSE, REGISTRATION_RESPONSE) + _LIFECYCLE_RESPONSES
               + (CREATE_TOPICS_RESPONSE,)),
    ActionSpec("controller_processes_event", A.controller_processes_event, NODE_ARG, mode=ZK),
    ActionSpec("controller_commits_records", A.controller_commits_records, NONE_ARG,
               mode=KRAFT),
    ActionSpec("node_replays_record", A.node_replays_record, NODE_ARG, mode=KRAFT),
    ActionSpec("broker_handles_session_expiry", A.broker_handles_session_expiry, NODE_ARG,
               mode=ZK),
    ActionSpec("broker_sends_zk_registration", A.broker_sends_zk_registration, NODE_ARG,
               mode=ZK, requires="zk_broker_registration"),
    ActionSpec("zk_creates_broker_znode", A.zk_creates_broker_znode, NODE_ARG, mode=ZK,
               requires="zk_broker_registration"),
    ActionSpec("broker_writes_entity_config", A.broker_writes_entity_config, NODE_ARG,
               mode=ZK, role=BROKER, requires="migration"),
    ActionSpec("controller_claims_zk_leadership", A.controller_claims_zk_leadership, NODE_ARG,
               mode=ZK, role=CONTROLLER, requires="migration"),
    # the second rolling bounce of the upgrade: progress, not a fault (the operator finishes
    # the upgrade the migration waits for), bounded by the brokers still on the old IBP
    ActionSpec("operator_bumps_ibp", A.operator_bumps_ibp, NODE_ARG, mode=ZK, role=BROKER,
               requires="migration"),
    ActionSpec("broker_elects_controller", A.broker_elects_controller, NODE_ARG,
               budget="max_elections", mode=ZK, role=BROKER),
    ActionSpec("controller_becomes_leader", A.controller_becomes_leader, NODE_ARG,
               budget="max_elections", mode=KRAFT, role=CONTROLLER),
    ActionSpec("clock_ticks", A.clock_ticks, NONE_ARG),
    # faults
    ActionSpec("zk_expires_session", A.zk_expires_session, NODE_ARG, fault=True,
               budget="max_session_expiries", mode=ZK, role=BROKER),
    ActionSpec("network_drops_message", A.network_drops_message, MSG_ARG, _ALL_MSGS,
               fault=True, budget="max_drops"),
    ActionSpec("node_crashes", A.node_crashes, NODE_ARG, fault=True, budget="max_crashes"),
    ActionSpec("node_restarts", A.node_restarts, NODE_ARG, fault=True, budget="max_restarts"),
    # an operator's change, like a fault: it may or may not happen
    ActionSpec("operator_updates_listeners", A.operator_updates_listeners, NODE_ARG,
               fault=True, budget="max_listener_updates", mode=ZK,
               requires="zk_broker_registration"),
)
ACTION_BY_NAME = {a.name: a for a in ACTION_TABLE}
# (name, function, argument kind, message kinds it takes); the order is the Next order.
ACTIONS = tuple((a.name, a.fn, a.arg, a.msg_kinds) for a in ACTION_TABLE)
ACTION_NAMES = tuple(a.name for a in ACTION_TABLE)
_BY_NAME = {a.name: (a.fn, a.arg) for a in ACTION_TABLE}
FAULT_ACTIONS = frozenset(a.name for a in ACTION_TABLE if a.fault)
# actions that are a fault in some states only (``is_fault`` says which)
CONDITIONAL_FAULTS = frozenset({"controller_becomes_leader"})


def fault_budgets(cfg: ModelConfig) -> dict:
    """Action name -> how many times ``cfg`` lets it happen, for every action a bound of
    ModelConfig limits (faults and elections; the two election actions share
    ``max_elections``)."""
    return {a.name: getattr(cfg, a.budget) for a in ACTION_TABLE if a.budget is not None}


def initial_state(cfg: ModelConfig) -> State:
    cfg.validate()
    ic = NO_NODE if cfg.initial_controller is None else cfg.initial_controller
    nodes = []
    log = ()
    if cfg.mode == KRAFT:
        epoch = 0 if ic == NO_NODE else 1
        log = (FeatureLevelRecord(FEATURE_LEVEL, cfg.metadata_version, 0, epoch, ic),)
        # registered by their running process (incarnation 0), endpoints resolved by it
        log += tuple(RegisterControllerRecord(REGISTER_CONTROLLER, c, 0, epoch, ic,
                                              endpoints=A.advertised_endpoints(cfg, Design(), c, 0))
                     for c in cfg.initially_registered)
        # brokers registered before the upgrade: unfenced, their epoch their record's offset
        log += tuple(RegisterBrokerRecord(REGISTER_BROKER, b, 0, epoch, ic,
                                          broker_epoch=len(log) + i, fenced=0,
                                          endpoints=A.advertised_endpoints(cfg, Design(), b, 0))
                     for i, b in enumerate(cfg.initially_registered_brokers))
    for i, spec in enumerate(cfg.nodes):
        if cfg.mode == ZK:
            active = i == ic
            nodes.append(Node(zk_active=active, zk_epoch=1 if active else -1,
                              zk_epoch_version=1 if active else -1, known_controller=ic,
                              legacy_ibp=i in cfg.legacy_ibp_brokers))
        elif spec.role == CONTROLLER:
            warm = i in cfg.initially_registered
            nodes.append(Node(replayed=len(log) if warm else 0,
                              registered_in_log=warm and cfg.registration,
                              send_requested=cfg.registration and not warm))
        elif i in cfg.initially_registered_brokers:
            # the tracker has asked for a resend of the registration (BL-8); the leader
            # tracks its session (BR-13)
            epoch_of = next(rec.broker_epoch for rec in log
                            if rec.kind == REGISTER_BROKER and rec.broker_id == i)
            nodes.append(Node(known_controller=ic, replayed=len(log), broker_epoch=epoch_of,
                              hb_contact=0 if ic != NO_NODE else NO_TIME))
        else:
            nodes.append(Node(known_controller=ic, replayed=len(log)))
    zk, quorum = Zk(), Quorum()
    epoch = 0 if ic == NO_NODE else 1
    if cfg.mode == ZK:
        # with ZooKeeper broker registration every broker starts registered (ZB-1) with the
        # listeners it started with (version 0)
        zk = Zk(controller=ic, epoch=epoch, epoch_version=epoch,
                epoch_holders=(NO_NODE,) if ic == NO_NODE else (NO_NODE, ic),
                broker_ids=(0,) * cfg.n_nodes if cfg.zk_broker_registration else ())
    else:
        quorum = Quorum(leader=ic, epoch=epoch, log=log)
    return State(now=0, nodes=tuple(nodes), clients=tuple(Client() for _ in cfg.clients),
                 network=frozenset(), zk=zk, quorum=quorum,
                 elections_left=cfg.max_elections, expiries_left=cfg.max_session_expiries,
                 crashes_left=cfg.max_crashes, restarts_left=cfg.max_restarts,
                 drops_left=cfg.max_drops, updates_left=cfg.max_listener_updates)


def _plan(cfg: ModelConfig) -> tuple:
    """``_plan_of(cfg)``, kept on the configuration itself: ``successors`` asks for it once
    per state, and an ``lru_cache`` would hash the whole configuration every time."""
    plan = cfg.__dict__.get("_next_plan")
    if plan is None:
        plan = cfg.__dict__["_next_plan"] = _plan_of(cfg)
    return plan


def _plan_of(cfg: ModelConfig) -> tuple:
    """The actions of ACTION_TABLE that can ever be enabled in ``cfg``, in the same order, as
    (name, function, argument kind, message kinds, node or client arguments): an action of the
    other mode, of a role no node has, whose budget is zero or whose required flag is off is
    never enabled, so leaving it out changes nothing but time."""
    plan = []
    for a in ACTION_TABLE:
        if a.mode != BOTH and a.mode != cfg.mode:
            continue
        if a.budget is not None and getattr(cfg, a.budget) == 0:
            continue
        if a.requires is not None and not getattr(cfg, a.requires):
            continue
        if a.arg == NODE_ARG:
            args = tuple(n for n, spec in enumerate(cfg.nodes)
                         if a.role is None or spec.role == a.role)
        elif a.arg == CLIENT_ARG:
            args = tuple(range(len(cfg.clients)))
        else:
            args = ()
        plan.append((a.name, a.fn, a.arg, a.msg_kinds, args))
    return tuple(plan)


def _steps_plan(cfg: ModelConfig) -> tuple:
    """``_plan(cfg)`` for ``successors``: per action (name, function, argument kind, message
    kinds, ((argument, its Step), ...)), the Steps of the node, client and no-argument
    actions built once (a Step is an immutable value; a message step names its message, so
    it is built per message)."""
    plan = cfg.__dict__.get("_next_steps_plan")
    if plan is None:
        plan = cfg.__dict__["_next_steps_plan"] = tuple(
            (name, fn, kind, msg_kinds,
             Step(name, ()) if kind == NONE_ARG else tuple((a, Step(name, (a,))) for a in args))
            for name, fn, kind, msg_kinds, args in _plan(cfg))
    return plan


def successors(s: State, cfg: ModelConfig, d: Design) -> list:
    """Every enabled (Step, successor) pair, in the fixed Next order."""
    out = []
    append = out.append
    msgs = sorted(s.network) if s.network else ()
    for name, fn, kind, msg_kinds, steps in _steps_plan(cfg):
        if kind == MSG_ARG:
            for m in msgs:
                if m.kind in msg_kinds:
                    t = fn(s, cfg, d, m)
                    if t is not None:
                        append((Step(name, (tuple(m),)), t))
        elif kind == NONE_ARG:
            t = fn(s, cfg, d)
            if t is not None:
                append((steps, t))
        else:
            for a, st in steps:
                t = fn(s, cfg, d, a)
                if t is not None:
                    append((st, t))
    return out


def step(s: State, cfg: ModelConfig, d: Design, st: Step) -> State | None:
    """The successor of ``s`` by ``st``, or None if it is not enabled.  Raises ValueError for
    a step that does not name an action of this model or has malformed arguments (a message
    action given a message of a kind it does not take).  A message step is enabled only if its
    message is in the network: checked here, as ``successors`` does by construction, so the
    message actions need not check their message's kind or presence themselves."""
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
        if not (isinstance(arg, tuple) and len(arg) == MSG_ARITY
                and all(isinstance(x, int) for x in arg)):
            raise ValueError(f"{st.action} takes a message ({MSG_ARITY} ints), got {arg!r}")
        kinds = ACTION_BY_NAME[st.action].msg_kinds
        if arg[0] not in kinds:
            raise ValueError(f"{st.action} takes a message of kind "
                             f"{' or '.join(_kind_name(k) for k in kinds)}, got kind "
                             f"{_kind_name(arg[0])}")
        m = message(arg)
        return fn(s, cfg, d, m) if m in s.network else None
    limit = len(s.clients) if kind == CLIENT_ARG else len(s.nodes)
    if not isinstance(arg, int) or isinstance(arg, bool) or not 0 <= arg < limit:
        raise ValueError(f"{st.action}: {kind} index {arg!r} out of range 0..{limit - 1}")
    return fn(s, cfg, d, arg)


def _kind_name(kind) -> str:
    names = dict(enumerate(MSG_KIND_NAMES))
    return f"{names[kind]} ({kind})" if kind in names else repr(kind)


def is_fault(s: State, cfg: ModelConfig, st: Step) -> bool:
    """Faults disturb; everything else is progress.  A KRaft election while the leader is
    alive is a fault (a partition); with the leader dead it is progress."""
    if st.action in FAULT_ACTIONS:
        return True
    if st.action in CONDITIONAL_FAULTS:     # a KRaft election
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
            why = ""
            if _BY_NAME[st.action][1] == MSG_ARG and tuple(st.args[0]) not in states[-1].network:
                why = ": its message is not in the network"
            raise ValueError(f"step {i + 1} ({st}) is not enabled{why}")
        states.append(t)
    return states


__all__ = ["ACTIONS", "ACTION_NAMES", "ACTION_TABLE", "ACTION_BY_NAME", "ActionSpec",
           "FAULT_ACTIONS", "CONDITIONAL_FAULTS", "fault_budgets", "initial_state", "successors",
           "step", "is_fault", "quiescent", "replay"]
