"""Symbolic states: the model's ``State`` for one bounded configuration as Z3 terms.

A ``Sym`` is a flat record ``key -> Z3 term`` with one entry per state component, named after
the model's fields (``n1.zk_epoch`` is ``s.nodes[1].zk_epoch``; ``net.2.kind`` is the kind of
the message in network slot 2; ``zk.writes.0.writer_epoch`` is the first ZooKeeper write's
epoch).  Epochs, zkVersions, incarnations, offsets and times are unbounded Z3 integers.

What is bounded, and how:

- the nodes, clients, listeners and principals are the configuration's (fixed);
- every sequence of the model (a channel queue, the ZK controller's events, the ZooKeeper
  writes, the metadata log, the uncommitted records, a client's responses) is a length plus a
  fixed number of slots (``Capacity``); slots at or after the length are unused;
- the network (a set of messages) is a fixed number of slots with a ``present`` flag;
- a step that would outgrow a capacity is not taken (``Sym.fits`` becomes part of its guard).
  Every statement of the engine is therefore about the runs that stay within the
  capacities; ``reachable_extent`` measures how much of them the explored state space uses,
  and the tests check that the tiny configurations never reach them.

Components that the configuration's mode never changes (a KRaft node's ZooKeeper fields, a ZK
cluster's quorum; in a ZK-to-KRaft migration, a KRaft controller's ZooKeeper session, which
never expires, the IBP of a broker that starts on the new one, and the entity-config writes,
which only a migration's brokers start) are constants, not variables: the formulas stay small
and an encoding that tried to change one fails when it is built (``Sym.set`` raises).

``concrete(state)`` maps a model state to a ``Sym`` of constants (network slots in sorted
order, unused slots zero); ``decode(values)`` maps a full assignment back to a model
``State``: the cross-check compares the model's successor with the encoding's through it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import z3

from model.config import BROKER, DESCRIBE, KRAFT, ModelConfig
from model.state import (MSG_ARITY, NO_NODE, NO_TIME, NO_VERSIONS, Channel, Client, Event, Node,
                         Quorum, Reply, Response, State, Write, Zk, item, message, record)

# Field lists of the records stored in slots: (field, sort) with sort "i" (Int) or "b" (Bool).
# Channel items, messages and log records are stored by position: each kind names its fields
# its own way (model/state.py), and the slots keep one generic name per position.
ITEM_FIELDS = (("kind", "i"), ("key", "i"), ("created", "i"), ("requeued", "b"), ("hops", "i"),
               ("sent", "i"))
REPLY_FIELDS = (("how", "i"), ("to", "i"), ("key", "i"), ("listener", "i"), ("hops", "i"))
EVENT_FIELDS = (("req", "i"), ("has_reply", "b")) + tuple(
    (f"reply_{f}", s) for f, s in REPLY_FIELDS) + (
    ("via_envelope", "b"), ("privileged", "b"), ("sender_cluster_action", "b"), ("acked", "b"))
MSG_FIELDS = tuple((f, "i") for f in ("kind", "src", "dst", "listener", "key", "a", "b",
                                      "sender_principal"))
assert len(MSG_FIELDS) == MSG_ARITY
WRITE_FIELDS = (("req", "i"), ("writer", "i"), ("writer_epoch", "i"), ("zk_epoch", "i"),
                ("via_envelope", "b"), ("privileged", "b"), ("sender_cluster_action", "b"),
                ("zk_holder", "i"), ("routed_locally", "b"))
# Node.config_writes (ZK-to-KRaft migration, MG-6): (client, /controller_epoch zkVersion read)
CONFIG_WRITE_FIELDS = (("req", "i"), ("version", "i"))
RECORD_FIELDS = (("kind", "i"), ("a", "i"), ("b", "i"), ("epoch", "i"), ("writer", "i"),
                 ("via_envelope", "b"), ("sender_cluster_action", "b"), ("c", "i"), ("d", "i"),
                 ("e", "i"))
PENDING_FIELDS = RECORD_FIELDS + (("has_reply", "b"),) + tuple(
    (f"reply_{f}", s) for f, s in REPLY_FIELDS)
RESPONSE_FIELDS = (("code", "i"), ("envelope_error", "i"), ("retried", "b"))
HOLDER_FIELDS = (("node", "i"),)        # Zk.epoch_holders[e], e the slot index

NODE_SCALARS = (("alive", "b"), ("incarnation", "i"), ("session_expired", "b"),
                ("zk_active", "b"), ("zk_epoch", "i"), ("zk_epoch_version", "i"),
                ("known_controller", "i"), ("ctrl_versions", "i"), ("replayed", "i"),
                ("send_requested", "b"), ("pending_rpc", "b"), ("registered_in_log", "b"),
                ("retry_at", "i"), ("broker_epoch", "i"), ("lifecycle_registered", "b"),
                ("lifecycle_to", "i"), ("heartbeat_at", "i"), ("hb_contact", "i"),
                ("listeners_version", "i"), ("broker_info", "i"), ("zk_register_pending", "b"),
                ("zk_registering", "i"), ("legacy_ibp", "b"))
_ZK_ONLY_NODE = {"session_expired", "zk_active", "zk_epoch", "zk_epoch_version"}
_KRAFT_ONLY_NODE = {"replayed", "send_requested", "pending_rpc", "registered_in_log", "retry_at"}
# KRaft broker registration is not encoded yet: these fields are constants in every layout,
# and a configuration that runs broker registration is refused (fidelity.unencoded_actions)
_BROKER_LIFECYCLE_NODE = {"broker_epoch": -1, "lifecycle_registered": False,
                          "lifecycle_to": NO_NODE, "heartbeat_at": NO_TIME, "hb_contact": NO_TIME,
                          # ZooKeeper broker registration, not encoded either
                          "listeners_version": 0, "broker_info": 0, "zk_register_pending": False,
                          "zk_registering": NO_VERSIONS}
CLIENT_SCALARS = (("sent", "b"), ("forwarded", "b"), ("sent_at", "i"), ("version", "i"))
BUDGETS = ("elections_left", "expiries_left", "crashes_left", "restarts_left", "drops_left",
           "updates_left")

_DEFAULT = {"i": 0, "b": False}


@dataclass(frozen=True)
class Capacity:
    """Slots per sequence.  The defaults (``for_config``) exceed what the tiny
    configurations reach (``tests/test_symbolic.py`` checks it with the explorer)."""
    network: int
    queue: int          # a channel's queue
    events: int         # a ZK controller's event queue
    writes: int         # ZooKeeper writes
    log: int            # the metadata log
    uncommitted: int
    responses: int      # responses one client receives (L1 says one; variants may give two)
    holders: int = 2    # Zk.epoch_holders: epochs 0..initial + elections (+ KRaft claims)
    config_writes: int = 0  # a broker's entity-config writes in progress (migration, MG-6)

    @staticmethod
    def for_config(cfg: ModelConfig) -> Capacity:
        n_clients = len(cfg.clients)
        n_ctrl = len(cfg.controllers()) if cfg.mode == KRAFT else 0
        initial_log = (1 + len(cfg.initially_registered)) if cfg.mode == KRAFT else 0
        regs = n_ctrl * (1 + cfg.max_restarts) if cfg.registration else 0
        return Capacity(
            network=max(cfg.max_in_flight + 2, 4),
            queue=max(n_clients, 1) + (1 if cfg.registration else 0),
            events=max(n_clients, 1) + 1,
            writes=2 * n_clients + 1,
            log=initial_log + 2 * n_clients + 2 * regs + 1,
            uncommitted=n_clients + regs + 1,
            responses=2,
            # a KRaft controller's claim of /controller bumps the epoch too (MG-5): once per
            # controller, which cannot restart while it holds the persistent /controller
            holders=2 + cfg.max_elections + (len(cfg.controllers()) if cfg.migration else 0),
            config_writes=max(n_clients, 1) if cfg.migration else 0)


class Layout:
    """The keys of a configuration's symbolic state, their sorts, and the constants."""

    def __init__(self, cfg: ModelConfig, cap: Capacity | None = None):
        self.cfg = cfg
        self.cap = cap or Capacity.for_config(cfg)
        self.n = len(cfg.nodes)
        self.m = len(cfg.clients)
        kraft = cfg.mode == KRAFT
        self.kraft = kraft
        # endpoints a DescribeCluster response may list: (node, listener index) pairs; a
        # response slot holds, per pair, whether it is listed (``ep``) and the endpoints token
        # of the registration it came from (``ept``, 0 when not listed)
        self.endpoints = tuple((x, cfg.listener_index(lst.name))
                               for x in range(self.n) for lst in cfg.nodes[x].listeners) \
            if any(c.kind == DESCRIBE for c in cfg.clients) else ()
        sorts: dict[str, str] = {}      # variable keys
        consts: dict[str, object] = {}  # constant keys (never changed in this mode)

        def var(key, sort):
            sorts[key] = sort

        def const(key, sort, value=None):
            consts[key] = _DEFAULT[sort] if value is None else value

        var("now", "i")
        for b in BUDGETS:
            var(b, "i")
        for i in range(self.n):
            p = f"n{i}."
            for f, s in NODE_SCALARS:
                if f in _BROKER_LIFECYCLE_NODE:
                    const(p + f, s, _BROKER_LIFECYCLE_NODE[f])
                elif f == "legacy_ibp":
                    # only a broker on the old IBP at start has it, until its bounce (MG-1)
                    if i in cfg.legacy_ibp_brokers:
                        var(p + f, s)
                    else:
                        const(p + f, s)
                elif (kraft and f in _ZK_ONLY_NODE) or (not kraft and f in _KRAFT_ONLY_NODE) \
                        or (f == "session_expired" and cfg.nodes[i].role != BROKER):
                    # ZooKeeper expires only a broker's session (a KRaft controller of a
                    # migration writes a persistent /controller, MG-5)
                    default = {"zk_epoch": -1, "zk_epoch_version": -1, "retry_at": NO_TIME}
                    const(p + f, s, default.get(f))
                else:
                    var(p + f, s)
            for j in range(self.n):
                var(f"{p}ncf.{j}", "b")             # j in not_controller_from
            var(p + "ch.cached", "i")
            self._seq(var, p + "ch.queue", self.cap.queue, ITEM_FIELDS)
            var(p + "ch.inflight.present", "b")
            for f, s in ITEM_FIELDS:
                var(p + "ch.inflight." + f, s)
            if kraft:
                const(p + "events.len", "i")
            else:
                self._seq(var, p + "events", self.cap.events, EVENT_FIELDS)
            if self.cap.config_writes and cfg.nodes[i].role == BROKER:
                self._seq(var, p + "cw", self.cap.config_writes, CONFIG_WRITE_FIELDS)
            else:                   # only a broker of a migration writes entity configs
                const(p + "cw.len", "i")
        for c in range(self.m):
            p = f"c{c}."
            for f, s in CLIENT_SCALARS:
                var(p + f, s)
            var(p + "responses.len", "i")
            for k in range(self.cap.responses):
                for f, s in RESPONSE_FIELDS:
                    var(f"{p}responses.{k}.{f}", s)
                for x, lst in self.endpoints:
                    var(f"{p}responses.{k}.ep.{x}.{lst}", "b")
                    var(f"{p}responses.{k}.ept.{x}.{lst}", "i")
        for j in range(self.cap.network):
            var(f"net.{j}.present", "b")
            for f, s in MSG_FIELDS:
                var(f"net.{j}.{f}", s)
        if kraft:
            for f in ("controller", "epoch", "epoch_version", "writes.len", "holders.len"):
                const("zk." + f, "i", NO_NODE if f == "controller" else 0)
            var("q.leader", "i")
            var("q.epoch", "i")
            self._seq(var, "q.log", self.cap.log, RECORD_FIELDS)
            self._seq(var, "q.uncommitted", self.cap.uncommitted, PENDING_FIELDS)
        else:
            var("zk.controller", "i")
            var("zk.epoch", "i")
            var("zk.epoch_version", "i")
            self._seq(var, "zk.writes", self.cap.writes, WRITE_FIELDS)
            self._seq(var, "zk.holders", self.cap.holders, HOLDER_FIELDS)
            const("q.leader", "i", NO_NODE)
            const("q.epoch", "i")
            const("q.log.len", "i")
            const("q.uncommitted.len", "i")
        self.sorts = sorts
        self.consts = consts
        self.keys = tuple(sorts)

    @staticmethod
    def _seq(var, prefix, cap, fields):
        var(prefix + ".len", "i")
        for k in range(cap):
            for f, s in fields:
                var(f"{prefix}.{k}.{f}", s)

    # -- symbolic and concrete states ----------------------------------------------------
    def fresh(self, tag) -> Sym:
        """One Z3 variable per component, named ``key@tag``."""
        v = {}
        for k, s in self.sorts.items():
            v[k] = z3.Int(f"{k}@{tag}") if s == "i" else z3.Bool(f"{k}@{tag}")
        for k, val in self.consts.items():
            v[k] = _val(val)
        return Sym(self, v)

    def concrete(self, state: State) -> Sym:
        return Sym(self, {k: _val(x) for k, x in self.values(state).items()})

    def values(self, state: State) -> dict:
        """The Python value of every key (variables and constants) for a model state.
        Raises ``CapacityExceeded`` if a sequence outgrows its slots."""
        out = dict(self.consts)
        out["now"] = state.now
        for b in BUDGETS:
            out[b] = getattr(state, b)
        for i, node in enumerate(state.nodes):
            p = f"n{i}."
            for f, _ in NODE_SCALARS:
                if p + f in self.sorts:
                    out[p + f] = getattr(node, f)
                elif getattr(node, f) != self.consts[p + f]:
                    raise ValueError(f"{p + f} = {getattr(node, f)!r} in a {self.cfg.mode} state")
            for j in range(self.n):
                out[f"{p}ncf.{j}"] = j in node.not_controller_from
            out[p + "ch.cached"] = node.channel.cached
            self._put_seq(out, p + "ch.queue", self.cap.queue, ITEM_FIELDS, node.channel.queue,
                          _by_position(ITEM_FIELDS))
            inflight = node.channel.inflight
            out[p + "ch.inflight.present"] = bool(inflight)
            for i, (f, s) in enumerate(ITEM_FIELDS):
                out[p + "ch.inflight." + f] = inflight[i] if inflight else _DEFAULT[s]
            if not self.kraft:
                self._put_seq(out, p + "events", self.cap.events, EVENT_FIELDS, node.events,
                              _flat_event)
            elif node.events:
                raise ValueError("events in a KRaft state")
            if p + "cw.len" in self.sorts:
                self._put_seq(out, p + "cw", self.cap.config_writes, CONFIG_WRITE_FIELDS,
                              node.config_writes, _flat_config_write)
            elif node.config_writes:
                raise ValueError(f"{p}config_writes = {node.config_writes!r}: not a broker of "
                                 f"a migration")
        for c, cl in enumerate(state.clients):
            p = f"c{c}."
            for f, _ in CLIENT_SCALARS:
                out[p + f] = getattr(cl, f)
            if len(cl.responses) > self.cap.responses:
                raise CapacityExceeded(f"{p}responses", len(cl.responses), self.cap.responses)
            out[p + "responses.len"] = len(cl.responses)
            for k in range(self.cap.responses):
                r = cl.responses[k] if k < len(cl.responses) else None
                for f, s in RESPONSE_FIELDS:
                    out[f"{p}responses.{k}.{f}"] = getattr(r, f) if r else _DEFAULT[s]
                listed = {} if not r else {(x, lst): t for x, lst, t in r.endpoints}
                for x, lst in self.endpoints:
                    out[f"{p}responses.{k}.ep.{x}.{lst}"] = (x, lst) in listed
                    out[f"{p}responses.{k}.ept.{x}.{lst}"] = listed.get((x, lst), 0)
                if len(listed) != len(r.endpoints if r else ()) or \
                        not set(listed) <= set(self.endpoints):
                    raise ValueError(f"endpoints {sorted(r.endpoints)} outside the layout")
        msgs = sorted(state.network)
        if len(msgs) > self.cap.network:
            raise CapacityExceeded("net", len(msgs), self.cap.network)
        for j in range(self.cap.network):
            m = msgs[j] if j < len(msgs) else None
            out[f"net.{j}.present"] = m is not None
            for i, (f, _) in enumerate(MSG_FIELDS):
                out[f"net.{j}.{f}"] = m[i] if m else 0
        if self.kraft:
            out["q.leader"] = state.quorum.leader
            out["q.epoch"] = state.quorum.epoch
            self._put_seq(out, "q.log", self.cap.log, RECORD_FIELDS, state.quorum.log,
                          _by_position(RECORD_FIELDS))
            self._put_seq(out, "q.uncommitted", self.cap.uncommitted, PENDING_FIELDS,
                          state.quorum.uncommitted, _flat_pending)
        else:
            out["zk.controller"] = state.zk.controller
            out["zk.epoch"] = state.zk.epoch
            out["zk.epoch_version"] = state.zk.epoch_version
            self._put_seq(out, "zk.writes", self.cap.writes, WRITE_FIELDS, state.zk.writes,
                          lambda w: w)
            self._put_seq(out, "zk.holders", self.cap.holders, HOLDER_FIELDS,
                          state.zk.epoch_holders, _Holder)
            if state.zk.broker_ids:     # ZooKeeper broker registration: not encoded
                raise ValueError(f"zk.broker_ids = {state.zk.broker_ids!r}: ZooKeeper broker "
                                 f"registration is not in the encoding")
        return out

    @staticmethod
    def _put_seq(out, prefix, cap, fields, items, flat):
        if len(items) > cap:
            raise CapacityExceeded(prefix, len(items), cap)
        out[prefix + ".len"] = len(items)
        for k in range(cap):
            rec = flat(items[k]) if k < len(items) else None
            for f, s in fields:
                out[f"{prefix}.{k}.{f}"] = getattr(rec, f) if rec is not None else _DEFAULT[s]

    def decode(self, val) -> State:
        """The model state an assignment denotes (``val(key)`` gives a Python value):
        sequences cut at their length, the network the set of present slots."""
        def seq(prefix, fields, make):
            n = val(prefix + ".len")
            return tuple(make({f: val(f"{prefix}.{k}.{f}") for f, _ in fields})
                         for k in range(n))

        nodes = []
        for i in range(self.n):
            p = f"n{i}."
            sc = {f: val(p + f) for f, _ in NODE_SCALARS}
            inflight = ()
            if val(p + "ch.inflight.present"):
                inflight = item(tuple(val(p + "ch.inflight." + f) for f, _ in ITEM_FIELDS))
            channel = Channel(val(p + "ch.cached"), seq(p + "ch.queue", ITEM_FIELDS,
                                                        _of_position(ITEM_FIELDS, item)),
                              inflight)
            events = () if self.kraft else seq(p + "events", EVENT_FIELDS, _event_of)
            ncf = frozenset(j for j in range(self.n) if val(f"{p}ncf.{j}"))
            writes = seq(p + "cw", CONFIG_WRITE_FIELDS, lambda d: (d["req"], d["version"]))
            nodes.append(Node(channel=channel, events=events, not_controller_from=ncf,
                              config_writes=writes, **sc))
        clients = []
        for c in range(self.m):
            p = f"c{c}."
            rs = []
            for k in range(val(p + "responses.len")):
                q = f"{p}responses.{k}."
                eps = frozenset((x, lst, val(f"{q}ept.{x}.{lst}")) for x, lst in self.endpoints
                                if val(f"{q}ep.{x}.{lst}"))
                rs.append(Response(val(q + "code"), val(q + "envelope_error"), eps,
                                   val(q + "retried")))
            clients.append(Client(**{f: val(p + f) for f, _ in CLIENT_SCALARS},
                                  responses=tuple(rs)))
        network = frozenset(message(tuple(val(f"net.{j}.{f}") for f, _ in MSG_FIELDS))
                            for j in range(self.cap.network) if val(f"net.{j}.present"))
        if self.kraft:
            zk = Zk()
            quorum = Quorum(val("q.leader"), val("q.epoch"),
                            seq("q.log", RECORD_FIELDS, _of_position(RECORD_FIELDS, record)),
                            seq("q.uncommitted", PENDING_FIELDS, _pending_of))
        else:
            zk = Zk(val("zk.controller"), val("zk.epoch"), val("zk.epoch_version"),
                    seq("zk.writes", WRITE_FIELDS, lambda d: Write(**d)),
                    seq("zk.holders", HOLDER_FIELDS, lambda d: d["node"]))
            quorum = Quorum()
        return State(now=val("now"), nodes=tuple(nodes), clients=tuple(clients),
                     network=network, zk=zk, quorum=quorum,
                     **{b: val(b) for b in BUDGETS})

    def decode_model(self, model: z3.ModelRef, s: Sym) -> State:
        """The model state of ``s`` under a Z3 model (a counterexample's state)."""
        def val(key):
            x = model.eval(s[key], model_completion=True)
            return z3.is_true(x) if self.sort(key) == "b" else x.as_long()
        return self.decode(val)

    def sort(self, key) -> str:
        s = self.sorts.get(key)
        if s is None:
            s = "b" if isinstance(self.consts[key], bool) else "i"
        return s

    @cached_property
    def seq_prefixes(self) -> tuple:
        return tuple(k[:-4] for k in self.keys if k.endswith(".len"))


class _Holder(NamedTuple):
    """One slot of Zk.epoch_holders, as a record with the slot's field."""
    node: int


class CapacityExceeded(ValueError):
    def __init__(self, where, size, cap):
        super().__init__(f"{where}: {size} items, capacity {cap}")
        self.where, self.size, self.cap = where, size, cap


class _Flat:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _by_position(fields):
    """Flatten a channel item, message or record into its slots by position."""
    return lambda x: _Flat(**{f: x[i] for i, (f, _) in enumerate(fields)})


def _of_position(fields, make):
    """The channel item or record (``make``: ``item`` or ``record``) of a slot's values."""
    return lambda d: make(tuple(d[f] for f, _ in fields))


def _flat_event(e: Event):
    d = {"req": e.req, "via_envelope": e.via_envelope, "privileged": e.privileged,
         "sender_cluster_action": e.sender_cluster_action, "acked": e.acked,
         "has_reply": bool(e.reply)}
    for f, s in REPLY_FIELDS:
        d["reply_" + f] = getattr(e.reply, f) if e.reply else _DEFAULT[s]
    return _Flat(**d)


def _flat_config_write(w):
    c, version = w
    return _Flat(req=c, version=version)


def _event_of(d) -> Event:
    reply = Reply(*(d["reply_" + f] for f, _ in REPLY_FIELDS)) if d["has_reply"] else ()
    return Event(d["req"], reply, d["via_envelope"], d["privileged"],
                 d["sender_cluster_action"], d["acked"])


def _flat_pending(p):
    rec, reply = p
    d = {f: rec[i] for i, (f, _) in enumerate(RECORD_FIELDS)}
    d["has_reply"] = bool(reply)
    for f, s in REPLY_FIELDS:
        d["reply_" + f] = getattr(reply, f) if reply else _DEFAULT[s]
    return _Flat(**d)


def _pending_of(d):
    rec = record(tuple(d[f] for f, _ in RECORD_FIELDS))
    reply = Reply(*(d["reply_" + f] for f, _ in REPLY_FIELDS)) if d["has_reply"] else ()
    return (rec, reply)


def _val(x):
    if isinstance(x, bool):
        return z3.BoolVal(x)
    return z3.IntVal(x)


TRUE = z3.BoolVal(True)
FALSE = z3.BoolVal(False)
_TRUE_ID, _FALSE_ID = TRUE.get_id(), FALSE.get_id()

# Fast tests on terms: the z3 module's is_true/is_int_value make several C calls each, and
# building the encoding calls them millions of times.  True and False are hash-consed (one
# AST each), and numerals are IntNumRef objects.


def _t(c) -> bool:
    return c is True or (c is not False and isinstance(c, z3.BoolRef) and c.get_id() == _TRUE_ID)


def _f(c) -> bool:
    return c is False or (c is not True and isinstance(c, z3.BoolRef) and c.get_id() == _FALSE_ID)


def _same(a, b) -> bool:
    return a is b or a.get_id() == b.get_id()


def If(c, a, b):
    """``a if c else b`` for a Python or Z3 condition, without building a term when the
    condition is known."""
    if _t(c):
        return a
    if _f(c):
        return b
    if a is b:
        return a
    a = _val(a) if isinstance(a, (bool, int)) else a
    b = _val(b) if isinstance(b, (bool, int)) else b
    if _same(a, b):
        return a
    return z3.If(c, a, b)


def And(*cs):
    out = []
    for c in cs:
        if _t(c):
            continue
        if _f(c):
            return FALSE
        out.append(c)
    if not out:
        return TRUE
    return out[0] if len(out) == 1 else z3.And(*out)


def Or(*cs):
    out = []
    for c in cs:
        if _f(c):
            continue
        if _t(c):
            return TRUE
        out.append(c)
    if not out:
        return FALSE
    return out[0] if len(out) == 1 else z3.Or(*out)


def Not(c):
    if _t(c):
        return FALSE
    if _f(c):
        return TRUE
    return z3.Not(c)


def Eq(a, b):
    """``a == b`` that folds when both sides are numerals (or the same term)."""
    ai, bi = isinstance(a, int), isinstance(b, int)
    if ai and bi:
        return _val(a == b)
    an = ai or isinstance(a, z3.IntNumRef)
    bn = bi or isinstance(b, z3.IntNumRef)
    if an and bn:
        return _val((a if ai else a.as_long()) == (b if bi else b.as_long()))
    if not ai and not bi and _same(a, b):
        return TRUE
    if isinstance(a, z3.BoolRef) and isinstance(b, z3.BoolRef):
        ta, fa, tb, fb = _t(a), _f(a), _t(b), _f(b)
        if (ta or fa) and (tb or fb):
            return _val(ta == tb)
    return a == b


class Sym:
    """A symbolic state: ``key -> term``, plus ``fits``, the condition that no sequence
    outgrew its slots on the way to it.  Updates build a new ``Sym``."""
    __slots__ = ("lay", "v", "fits")

    def __init__(self, lay: Layout, v: dict, fits=TRUE):
        self.lay = lay
        self.v = v
        self.fits = fits

    def __getitem__(self, key):
        return self.v[key]

    def set(self, updates: dict) -> Sym:
        v = dict(self.v)
        for k, x in updates.items():
            if k not in self.lay.sorts:
                old = self.v.get(k)
                if old is None:
                    raise KeyError(f"no component {k!r}")
                x = _val(x) if isinstance(x, (bool, int)) else x
                if not (x.eq(old) or z3.is_true(z3.simplify(x == old))):
                    raise ValueError(f"{k} is constant in {self.lay.cfg.mode} mode; "
                                     f"cannot set it to {x}")
                continue
            v[k] = _val(x) if isinstance(x, (bool, int)) else x
        return Sym(self.lay, v, self.fits)

    def requiring(self, cond) -> Sym:
        return Sym(self.lay, self.v, And(self.fits, cond))

    # -- node and client fields with a symbolic index ------------------------------------
    def node(self, i, field):
        """``s.nodes[i].field``; ``i`` may be a term (then an ite over the nodes; an
        out-of-range index reads the last node, as Python's ``nodes[-1]`` does)."""
        if isinstance(i, int):
            return self.v[f"n{i}.{field}"]
        if isinstance(i, z3.IntNumRef):
            return self.v[f"n{i.as_long()}.{field}"]
        out = self.v[f"n{self.lay.n - 1}.{field}"]
        for j in range(self.lay.n - 2, -1, -1):
            out = If(i == j, self.v[f"n{j}.{field}"], out)
        return out

    def client(self, c, field):
        if self.lay.m == 0:         # no clients: nothing reads this on a reachable state
            return z3.BoolVal(False) if field in ("sent", "forwarded") else z3.IntVal(0)
        if isinstance(c, int):
            return self.v[f"c{c}.{field}"]
        if isinstance(c, z3.IntNumRef):
            return self.v[f"c{c.as_long()}.{field}"]
        out = self.v[f"c{self.lay.m - 1}.{field}"]
        for j in range(self.lay.m - 2, -1, -1):
            out = If(c == j, self.v[f"c{j}.{field}"], out)
        return out

    def set_node(self, i, **fields) -> Sym:
        if isinstance(i, (int, z3.IntNumRef)):
            i = i if isinstance(i, int) else i.as_long()
            return self.set({f"n{i}.{f}": x for f, x in fields.items()})
        upd = {}
        for j in range(self.lay.n):
            for f, x in fields.items():
                upd[f"n{j}.{f}"] = If(i == j, x, self.v[f"n{j}.{f}"])
        return self.set(upd)

    # -- sequences ----------------------------------------------------------------------
    def seq_len(self, prefix):
        return self.v[prefix + ".len"]

    def seq_get(self, prefix, idx, field):
        """``seq[idx].field`` for a symbolic index (slot 0's value outside the slots)."""
        cap = _cap_of(self.lay, prefix)
        if isinstance(idx, int):
            return self.v[f"{prefix}.{idx}.{field}"]
        out = self.v[f"{prefix}.0.{field}"]
        for k in range(cap - 1, 0, -1):
            out = If(idx == k, self.v[f"{prefix}.{k}.{field}"], out)
        return out

    def seq_append(self, prefix, fields: dict, when=True) -> Sym:
        """Append a record (if ``when``); a full sequence makes the step not fit."""
        cap = _cap_of(self.lay, prefix)
        n = self.v[prefix + ".len"]
        upd = {prefix + ".len": If(when, n + 1, n)}
        for k in range(cap):
            hit = And(when, n == k)
            for f, x in fields.items():
                key = f"{prefix}.{k}.{f}"
                upd[key] = If(hit, x, self.v[key])
        out = self.set(upd)
        return out.requiring(Or(Not(when), n < cap))

    def seq_extend(self, prefix, src: str, fields: dict) -> Sym:
        """Append every record of sequence ``src`` in order, field ``f`` taken from ``src``'s
        field ``fields[f]``: the state of one ``seq_append`` per slot of ``src`` with its
        in-use condition as ``when``, written flat (record i lands in slot len + i, a fixed
        offset) rather than as a chain of appends, each at the length the previous one left
        (nested terms Z3 takes far longer over).  tests/test_symbolic.py checks the two are
        equal on an arbitrary state."""
        cap = _cap_of(self.lay, prefix)
        n = self.v[prefix + ".len"]
        items = self.seq_items(src)
        m = self.v[src + ".len"]
        upd = {prefix + ".len": n + If(m >= len(items), len(items), If(m <= 0, 0, m))}
        for k in range(cap):
            for f, g in fields.items():
                key = f"{prefix}.{k}.{f}"
                out = self.v[key]
                for i, used in reversed(items):
                    out = If(And(used, n == k - i), self.v[f"{src}.{i}.{g}"], out)
                upd[key] = out
        fits = And(*(Or(Not(used), n + i < cap) for i, used in items))
        return self.set(upd).requiring(fits)

    def seq_pop_front(self, prefix) -> Sym:
        """Drop the first record (the caller knows the sequence is not empty)."""
        cap = _cap_of(self.lay, prefix)
        fields = _fields_of(self.lay, prefix)
        upd = {prefix + ".len": self.v[prefix + ".len"] - 1}
        for k in range(cap):
            for f in fields:
                nxt = self.v[f"{prefix}.{k + 1}.{f}"] if k + 1 < cap else _val(
                    _DEFAULT[self.lay.sorts[f"{prefix}.{k}.{f}"]])
                upd[f"{prefix}.{k}.{f}"] = nxt
        return self.set(upd)

    def seq_push_front(self, prefix, fields: dict, when=True) -> Sym:
        """Put a record at the front (if ``when``); a full sequence makes the step not fit."""
        cap = _cap_of(self.lay, prefix)
        n = self.v[prefix + ".len"]
        upd = {prefix + ".len": If(when, n + 1, n)}
        for k in range(cap):
            for f in _fields_of(self.lay, prefix):
                key = f"{prefix}.{k}.{f}"
                upd[key] = If(when, fields[f] if k == 0 else self.v[f"{prefix}.{k - 1}.{f}"],
                              self.v[key])
        return self.set(upd).requiring(Or(Not(when), n < cap))

    def seq_clear(self, prefix) -> Sym:
        return self.set({prefix + ".len": 0})

    def seq_items(self, prefix):
        """(slot index, in-use condition) for every slot."""
        n = self.v[prefix + ".len"]
        return [(k, k < n) for k in range(_cap_of(self.lay, prefix))]

    # -- the network ----------------------------------------------------------------------
    def msg(self, j) -> dict:
        return {f: self.v[f"net.{j}.{f}"] for f, _ in MSG_FIELDS}

    def net_has(self, m: dict):
        """``m in s.network``."""
        return Or(*(And(self.v[f"net.{j}.present"],
                        *(Eq(self.v[f"net.{j}.{f}"], m[f]) for f, _ in MSG_FIELDS))
                    for j in range(self.lay.cap.network)))

    def net_add(self, m: dict, when=True) -> Sym:
        """``network | {m}`` (if ``when``): unchanged if present, else the first free slot;
        no free slot makes the step not fit."""
        present = self.net_has(m)
        add = And(when, Not(present))
        upd = {}
        taken = FALSE       # an earlier free slot took it
        for j in range(self.lay.cap.network):
            free = Not(self.v[f"net.{j}.present"])
            here = And(add, free, Not(taken))
            upd[f"net.{j}.present"] = Or(here, self.v[f"net.{j}.present"])
            for f, _ in MSG_FIELDS:
                upd[f"net.{j}.{f}"] = If(here, m[f], self.v[f"net.{j}.{f}"])
            taken = Or(taken, free)
        return self.set(upd).requiring(Or(Not(add), taken))

    def net_remove_slot(self, j, when=True) -> Sym:
        key = f"net.{j}.present"
        return self.set({key: And(Not(when), self.v[key])})

    def net_remove_where(self, pred) -> Sym:
        """``network - {m for m in network if pred(m)}``; ``pred(msg dict) -> Bool``."""
        upd = {}
        for j in range(self.lay.cap.network):
            key = f"net.{j}.present"
            upd[key] = And(self.v[key], Not(pred(self.msg(j))))
        return self.set(upd)

    def net_size(self):
        return z3.Sum([If(self.v[f"net.{j}.present"], z3.IntVal(1), z3.IntVal(0))
                       for j in range(self.lay.cap.network)])


def _cap_of(lay: Layout, prefix: str) -> int:
    cap = lay.__dict__.setdefault("_caps", {}).get(prefix)
    if cap is None:
        cap = 0
        while any(k.startswith(f"{prefix}.{cap}.") for k in lay.sorts):
            cap += 1
        lay._caps[prefix] = cap
    return cap


def _fields_of(lay: Layout, prefix: str) -> tuple:
    fl = lay.__dict__.setdefault("_fields", {}).get(prefix)
    if fl is None:
        head = f"{prefix}.0."
        fl = tuple(k[len(head):] for k in lay.sorts if k.startswith(head))
        lay._fields[prefix] = fl
    return fl


def ite(c, a: Sym, b: Sym) -> Sym:
    """The state ``a if c else b``: one ite per component that differs."""
    if _t(c):
        return a
    if _f(c):
        return b
    v = {}
    bv = b.v
    for k, x in a.v.items():
        y = bv[k]
        v[k] = x if (x is y or x.get_id() == y.get_id()) else z3.If(c, x, y)
    fits = a.fits if _same(a.fits, b.fits) else z3.If(c, a.fits, b.fits)
    return Sym(a.lay, v, fits)


__all__ = ["Capacity", "Layout", "Sym", "ite", "If", "And", "Or", "Not", "Eq", "TRUE", "FALSE",
           "CapacityExceeded"]
