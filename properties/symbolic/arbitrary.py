"""Arbitrary states: well-typed model states that satisfy the strengthening invariants but need
not be reachable -- the states k-induction starts from.

The inductive step of a proof assumes the invariants of ``invariants.INVARIANTS`` and nothing
else about its first state.  The cross-check on the states the explorer reaches cannot see an
encoding that disagrees with the model only off the reachable set (a guard that reads
``elections_left == 1`` where the model reads ``> 0`` agrees on every state of a configuration
with one election); these states can.  They are reachable states perturbed in the components
the invariants leave free -- epochs, zkVersions, incarnations, the clock and the timers, fault
budgets, replayed offsets, flags, messages, queued items, records -- and kept when they

- fit the layout (``Layout(cfg).values`` does not raise),
- are well-typed (``problems`` finds nothing: indices in range, kinds the configuration
  produces, ``NO_NODE``/``NO_TIME`` where the model uses them),
- satisfy the invariants that hold for the design, evaluated through the compiled Z3 terms
  (``crosscheck.compile_terms``), so the filter is exactly what the proof assumes: for the
  shipped design every invariant of the mode; for a variant, those that hold on every sampled
  reachable state of it (a variant breaks some of them on reachable states),
- and are not reachable.

Everything derives from one integer seed: the same seed gives the same states.
"""
from __future__ import annotations

import random
from collections import Counter
from functools import lru_cache

from model import kafka
from model.config import (CONTROLLER, CONTROLLER_LISTENER, INTER_BROKER_LISTENER, KRAFT, Design,
                          ModelConfig)
from model.state import (ENVELOPE_REQUEST, ENVELOPE_RESPONSE, FORWARD,
                         MUTATION_RECORD, NO_NODE, NO_TIME, NO_VERSIONS, REGISTER_CONTROLLER,
                         REGISTRATION, REGISTRATION_REQUEST, REGISTRATION_RESPONSE, REPLY_CLIENT,
                         REPLY_ENVELOPE, REPLY_REGISTRATION, STATIC_ENDPOINTS, UNRESOLVED_ENDPOINTS,
                         ITEM_TYPES, MSG_ARITY, MSG_TYPES,
                         RECORD_TYPES, Channel, Client, ControllerRegistrationRequest,
                         ControllerRegistrationResponse, EnvelopeRequest, EnvelopeResponse, Event,
                         Item, Msg, MutationRecord, Node, Quorum, Record, RegisterControllerRecord,
                         Reply, Response, State, Write, Zk, item, message, record, replace)
from properties.symbolic.state import BUDGETS, Layout

POOL = 500          # reachable states sampled as starting points
TRIES = 40          # candidates per accepted state before a generator gives up
_BOUNDS = dict(zip(BUDGETS, ("max_elections", "max_session_expiries", "max_crashes",
                             "max_restarts", "max_drops", "max_listener_updates")))


# --------------------------------------------------------------------------------------------
# the typed domain of a configuration


class Domain:
    """Which values each component of a configuration's state may take: the model indexes the
    configuration with them (a client index picks a ``ClientSpec``, a channel's peer a
    listener), so a value outside makes the model fail, not disagree."""

    def __init__(self, cfg: ModelConfig, lay: Layout | None = None):
        self.cfg = cfg
        self.lay = lay or Layout(cfg)
        self.cap = self.lay.cap
        self.kraft = cfg.mode == KRAFT
        self.nodes = tuple(range(len(cfg.nodes)))
        self.clients = tuple(range(len(cfg.clients)))
        # clients whose request a controller writes (DescribeCluster is answered in place)
        self.mutators = tuple(c for c, spec in enumerate(cfg.clients)
                              if spec.api in kafka.API_OPERATION)
        # a channel's peer (and a cached controller): a node with the listener broker-to-
        # controller traffic uses (L-29): a KRaft controller's controller listener (in a
        # migration too, MG-2), a ZK broker's inter-broker listener
        def role(p):
            return CONTROLLER_LISTENER if (self.kraft or cfg.nodes[p].role == CONTROLLER) \
                else INTER_BROKER_LISTENER
        self.peers = tuple(p for p in self.nodes if cfg.node_listener(p, role(p)) is not None)
        self.leaders = cfg.controllers() if self.kraft else self.nodes
        # only brokers forward (in ZK mode every node is one, but for a migration's KRaft
        # controller)
        self.forwarders = cfg.brokers() if self.mutators else ()
        # the brokers of a migration, which write entity configs themselves (MG-6), and the
        # brokers still on the old IBP (MG-1)
        self.config_writers = tuple(n for n in self.nodes
                                    if f"n{n}.cw.len" in self.lay.sorts) if self.mutators else ()
        self.legacy = tuple(n for n in self.nodes if f"n{n}.legacy_ibp" in self.lay.sorts)
        self.registrants = cfg.controllers() if (self.kraft and cfg.registration) else ()
        self.carriers = tuple(sorted(set(self.forwarders) | set(self.registrants)))
        self.listeners = tuple(range(len(cfg.listener_names)))
        self.principals = tuple(range(len(cfg.principal_names)))
        self.own_principal = tuple(cfg.principal_names.index(spec.principal) for spec in cfg.nodes)
        self.target = tuple(cfg.listener_index(cfg.node_listener(p, role(p)).name)
                            if p in self.peers else 0 for p in self.nodes)
        self.versions = tuple(sorted({spec.api_max for spec in cfg.nodes}))
        self.errors = tuple(sorted(kafka.ERROR_NAMES))
        kinds = []
        if self.forwarders:
            kinds += [ENVELOPE_REQUEST, ENVELOPE_RESPONSE]
        if self.registrants:
            kinds += [REGISTRATION_REQUEST, REGISTRATION_RESPONSE]
        self.msg_kinds = tuple(kinds)
        rec = []
        if self.kraft and self.mutators:
            rec.append(MUTATION_RECORD)
        if self.kraft and (cfg.registration or cfg.initially_registered):
            rec.append(REGISTER_CONTROLLER)
        self.record_kinds = tuple(rec)
        hows = ([REPLY_CLIENT] if self.mutators else []) + (
            [REPLY_ENVELOPE] if self.forwarders else []) + (
            [REPLY_REGISTRATION] if self.registrants else [])
        self.reply_hows = tuple(hows)
        self.budgets = tuple((b, getattr(cfg, bound)) for b, bound in _BOUNDS.items()
                             if getattr(cfg, bound) > 0)
        self.endpoints = self.lay.endpoints


def problems(s: State, cfg: ModelConfig, dom: Domain | None = None) -> list:
    """Why ``s`` is not a well-typed state of ``cfg`` (empty: it is).  Every reachable state
    is well-typed; so is every state ``Generator`` yields."""
    w = dom or Domain(cfg)
    out = []

    def need(ok, what):
        if not ok:
            out.append(what)

    def is_int(x):
        return isinstance(x, int) and not isinstance(x, bool)

    def ints(where, *xs):
        need(all(is_int(x) for x in xs), f"{where}: not an int")

    def bools(where, *xs):
        need(all(isinstance(x, bool) for x in xs), f"{where}: not a bool")

    def reply_ok(where, r, hows):
        if r == ():
            return
        need(isinstance(r, Reply) and r.how in hows, f"{where}: bad reply {r!r}")
        if not isinstance(r, Reply):
            return
        ints(where, *r)
        if r.how == REPLY_CLIENT:
            need(r.to in w.mutators, f"{where}: reply to client {r.to}")
        elif r.how == REPLY_ENVELOPE:
            need(r.to in w.nodes and r.key in w.mutators, f"{where}: envelope reply {r}")
        else:
            need(r.to in w.registrants and r.key >= 0, f"{where}: registration reply {r}")
        need(r.listener in w.listeners, f"{where}: listener {r.listener}")

    need(isinstance(s, State), "not a State")
    ints("now", s.now)
    need(s.now >= 0, f"now {s.now} < 0")
    for b in BUDGETS:
        ints(b, getattr(s, b))
        need(getattr(s, b) >= 0, f"{b} < 0")
    need(len(s.nodes) == len(w.nodes) and len(s.clients) == len(w.clients), "record counts")
    refs = (NO_NODE,) + w.peers
    for i, node in enumerate(s.nodes):
        p = f"nodes[{i}]"
        need(isinstance(node, Node), f"{p}: not a Node")
        bools(p, node.alive, node.session_expired, node.zk_active, node.send_requested,
              node.pending_rpc, node.registered_in_log)
        ints(p, node.incarnation, node.zk_epoch, node.zk_epoch_version, node.known_controller,
             node.ctrl_versions, node.replayed, node.retry_at)
        need(node.incarnation >= 0, f"{p}.incarnation < 0")
        need(node.known_controller in refs, f"{p}.known_controller {node.known_controller}")
        need(node.ctrl_versions == NO_VERSIONS or node.ctrl_versions >= 0, f"{p}.ctrl_versions")
        need(isinstance(node.not_controller_from, frozenset)
             and node.not_controller_from <= set(w.nodes), f"{p}.not_controller_from")
        if w.kraft:
            need(not node.session_expired and not node.zk_active and node.zk_epoch == -1
                 and node.zk_epoch_version == -1 and node.events == (), f"{p}: ZK fields set")
            need(0 <= node.replayed, f"{p}.replayed < 0")
            need(node.retry_at == NO_TIME or node.retry_at >= 0, f"{p}.retry_at")
        else:
            need(node.replayed == 0 and not node.send_requested and not node.pending_rpc
                 and not node.registered_in_log and node.retry_at == NO_TIME,
                 f"{p}: KRaft fields set")
            need(node.zk_epoch >= -1 and node.zk_epoch_version >= -1, f"{p}: epoch < -1")
            need(isinstance(node.events, tuple), f"{p}.events")
            bools(p, node.legacy_ibp)
            need(isinstance(node.config_writes, tuple), f"{p}.config_writes")
            for k, cw in enumerate(node.config_writes):
                need(isinstance(cw, tuple) and len(cw) == 2 and cw[0] in w.mutators
                     and is_int(cw[1]) and cw[1] >= 0, f"{p}.config_writes[{k}]: {cw!r}")
            for k, ev in enumerate(node.events):
                q = f"{p}.events[{k}]"
                need(isinstance(ev, Event) and ev.req in w.mutators, f"{q}: {ev!r}")
                bools(q, ev.via_envelope, ev.privileged, ev.sender_cluster_action, ev.acked)
                reply_ok(q, ev.reply, (REPLY_CLIENT, REPLY_ENVELOPE))
        ch = node.channel
        need(isinstance(ch, Channel) and ch.cached in refs, f"{p}.channel.cached")
        items = [(f"{p}.channel.queue[{k}]", it, False) for k, it in enumerate(ch.queue)]
        if ch.inflight != ():
            items.append((f"{p}.channel.inflight", ch.inflight, True))
        for q, it, flying in items:
            ok = isinstance(it, Item) and type(it) is ITEM_TYPES.get(it.kind)
            need(ok, f"{q}: not an Item")
            if not ok:
                continue
            ints(q, *it[:3], *it[4:])       # all but requeued: kind, client or incarnation, ...
            bools(q, it.requeued)
            if it.kind == FORWARD:
                need(i in w.forwarders and it.client in w.mutators, f"{q}: forward {it}")
                need(it.hops >= 1, f"{q}: {it}")
            else:
                need(i in w.registrants and it.incarnation_id >= 0 and it.reserved >= 1,
                     f"{q}: kind {it.kind} on node {i}")
            need(it.created >= 0, f"{q}: {it}")
            need((it.sent >= 0) if flying else (it.sent == NO_TIME), f"{q}.sent {it.sent}")
        need(not (ch.inflight and any(ch.inflight is it for it in ch.queue)),
             f"{p}.channel: the in-flight item is also queued")
    for c, cl in enumerate(s.clients):
        p = f"clients[{c}]"
        need(isinstance(cl, Client), f"{p}: not a Client")
        bools(p, cl.sent, cl.forwarded)
        ints(p, cl.sent_at, cl.version)
        need(cl.sent_at == NO_TIME or cl.sent_at >= 0, f"{p}.sent_at")
        for k, r in enumerate(cl.responses):
            need(isinstance(r, Response) and isinstance(r.endpoints, frozenset)
                 and all(isinstance(e, tuple) and len(e) == 3 and e[:2] in w.endpoints
                         and type(e[2]) is int for e in r.endpoints)
                 and len({e[:2] for e in r.endpoints}) == len(r.endpoints),
                 f"{p}.responses[{k}]: {r!r}")
            ints(f"{p}.responses[{k}]", r.code, r.envelope_error)
            bools(f"{p}.responses[{k}]", r.retried)
    need(isinstance(s.network, frozenset), "network: not a frozenset")
    for m in s.network:
        ok = isinstance(m, Msg) and type(m) is MSG_TYPES.get(m.kind)
        need(ok and m.kind in w.msg_kinds, f"network: {m!r}")
        if not ok:
            continue
        ints(f"network {m}", *m)
        need(m.src in w.nodes and m.dst in w.nodes and m.listener in w.listeners
             and m.sender_principal in w.principals, f"network: {m} out of range")
        if m.kind in (ENVELOPE_REQUEST, ENVELOPE_RESPONSE):
            need(m.client in w.mutators, f"network: {m} for no forwarded client")
        if m.kind == ENVELOPE_REQUEST:
            need(m.hops >= 1, f"network: {m} with hops < 1")
        if m.kind == REGISTRATION_REQUEST:
            need(m.src in w.registrants and m.incarnation_id >= 0, f"network: {m}")
        if m.kind == REGISTRATION_RESPONSE:
            need(m.dst in w.registrants and m.incarnation_id >= 0, f"network: {m}")
    zk, q = s.zk, s.quorum
    need(isinstance(zk, Zk) and isinstance(q, Quorum), "zk/quorum records")
    if w.kraft:
        need(zk == Zk(), "zk: set in KRaft mode")
        need(q.leader in (NO_NODE,) + w.leaders, f"quorum.leader {q.leader}")
        ints("quorum.epoch", q.epoch)
        need(q.epoch >= 0, "quorum.epoch < 0")
        recs = [(f"quorum.log[{k}]", r, ()) for k, r in enumerate(q.log)]
        for k, pending in enumerate(q.uncommitted):
            ok = isinstance(pending, tuple) and len(pending) == 2
            need(ok, f"quorum.uncommitted[{k}]: {pending!r}")
            if ok:
                recs.append((f"quorum.uncommitted[{k}]", pending[0], pending[1]))
        for where, r, reply in recs:
            ok = isinstance(r, Record) and type(r) is RECORD_TYPES.get(r.kind)
            need(ok, f"{where}: not a Record")
            if not ok:
                continue
            ints(where, *r[:5])             # kind, its two fields, epoch, writer
            bools(where, r.via_envelope, r.sender_cluster_action)
            need(r.epoch >= 0 and r.writer in (NO_NODE,) + w.nodes, f"{where}: {r}")
            if r.kind == MUTATION_RECORD:
                need(r.client in w.mutators, f"{where}: mutation of client {r.client}")
            elif r.kind == REGISTER_CONTROLLER:
                need(r.controller_id in w.leaders and r.incarnation_id >= 0,
                     f"{where}: registration {r}")
            reply_ok(where, reply, w.reply_hows)
    else:
        need(q == Quorum(), "quorum: set in ZK mode")
        need(zk.controller in (NO_NODE,) + w.nodes, f"zk.controller {zk.controller}")
        ints("zk", zk.epoch, zk.epoch_version)
        need(zk.epoch >= 0 and zk.epoch_version >= 0, "zk: epoch < 0")
        for k, wr in enumerate(zk.writes):
            where = f"zk.writes[{k}]"
            need(isinstance(wr, Write) and wr.req in w.mutators and wr.writer in w.nodes,
                 f"{where}: {wr!r}")
            bools(where, wr.via_envelope, wr.privileged, wr.sender_cluster_action,
                  wr.routed_locally)
            ints(where, wr.writer_epoch, wr.zk_epoch)
        need(isinstance(zk.epoch_holders, tuple), "zk.epoch_holders: not a tuple")
        for k, h in enumerate(zk.epoch_holders):
            ints(f"zk.epoch_holders[{k}]", h)
            need(h in (NO_NODE,) + w.nodes, f"zk.epoch_holders[{k}]: {h}")
    try:
        w.lay.values(s)
    except ValueError as exc:           # CapacityExceeded, or a constant of the mode changed
        out.append(f"layout: {exc}")
    return out


# --------------------------------------------------------------------------------------------
# well-typed parts, drawn at random


def _error(rng) -> int:
    x = rng.random()
    if x < 0.5:
        return kafka.NONE
    if x < 0.7:
        return kafka.NOT_CONTROLLER
    return rng.choice((kafka.UNKNOWN_SERVER_ERROR, kafka.REQUEST_TIMED_OUT,
                       kafka.CLUSTER_AUTHORIZATION_FAILED, kafka.UNSUPPORTED_VERSION,
                       kafka.TOPIC_AUTHORIZATION_FAILED, kafka.NETWORK_EXCEPTION,
                       kafka.PRINCIPAL_DESERIALIZATION_FAILURE))


def _older(rng, incarnation: int) -> int:
    """An incarnation: mostly the current one, sometimes an older run's."""
    return max(0, incarnation - rng.choice((0, 0, 0, 1, 2)))


def _delta(rng) -> int:
    return rng.choice((-2, -1, -1, 1, 1, 2))


def _live(s: State, among) -> tuple:
    live = tuple(x for x in among if s.nodes[x].alive)
    return live or tuple(among)


def _item(w: Domain, s: State, n: int, rng, inflight=False, after=0) -> Item:
    if n in w.registrants:
        kind, key = REGISTRATION, _older(rng, s.nodes[n].incarnation)
    else:
        kind, key = FORWARD, rng.choice(w.mutators)
    created = rng.randint(after, max(after, s.now))
    sent = rng.randint(created, max(created, s.now)) if inflight else NO_TIME
    return item((kind, key, created, rng.random() < 0.3, 1, sent))


def _msg(w: Domain, s: State, rng, kind=None) -> Msg:
    kind = rng.choice(w.msg_kinds) if kind is None else kind
    listener = rng.choice(w.listeners)
    if kind == ENVELOPE_REQUEST:
        src, dst = rng.choice(w.forwarders), rng.choice(_live(s, w.peers))
        principal = w.own_principal[src] if rng.random() < 0.8 else rng.choice(w.principals)
        listener = w.target[dst] if rng.random() < 0.8 else listener
        return EnvelopeRequest(kind, src, dst, listener, rng.choice(w.mutators),
                               rng.choice(w.versions), rng.choice((1, 1, 1, 2)), principal)
    if kind == ENVELOPE_RESPONSE:
        return EnvelopeResponse(kind, rng.choice(w.peers), rng.choice(_live(s, w.forwarders)),
                                listener, rng.choice(w.mutators), _error(rng), _error(rng))
    if kind == REGISTRATION_REQUEST:
        src, dst = rng.choice(w.registrants), rng.choice(_live(s, w.peers))
        principal = w.own_principal[src] if rng.random() < 0.8 else rng.choice(w.principals)
        listener = w.target[dst] if rng.random() < 0.8 else listener
        return ControllerRegistrationRequest(kind, src, dst, listener, src,
                                             _older(rng, s.nodes[src].incarnation),
                                             rng.choice(ENDPOINT_TOKENS), principal)
    dst = rng.choice(_live(s, w.registrants))
    return ControllerRegistrationResponse(kind, rng.choice(w.peers), dst, listener, dst,
                                          _error(rng), _older(rng, s.nodes[dst].incarnation))


def _reply(w: Domain, s: State, rng, hows=None):
    hows = w.reply_hows if hows is None else hows
    if not hows or rng.random() < 0.15:
        return ()
    how = rng.choice(hows)
    listener = rng.choice(w.listeners)
    if how == REPLY_CLIENT:
        c = rng.choice(w.mutators)
        return Reply(how, c, c, listener)
    if how == REPLY_ENVELOPE:
        return Reply(how, rng.choice(w.forwarders), rng.choice(w.mutators), listener,
                     rng.choice((1, 1, 2)))
    c = rng.choice(w.registrants)
    return Reply(how, c, _older(rng, s.nodes[c].incarnation), listener)


def _trusted(rng) -> tuple:
    """(via envelope, privileged, sender had CLUSTER_ACTION): mostly what a controller
    accepts."""
    via = rng.random() < 0.5
    return via, (not via) or rng.random() < 0.9, (not via) or rng.random() < 0.9


def _event(w: Domain, s: State, rng) -> Event:
    via, privileged, ca = _trusted(rng)
    reply = _reply(w, s, rng, (REPLY_ENVELOPE,) if via else (REPLY_CLIENT,))
    return Event(rng.choice(w.mutators), reply, via, privileged and via, ca and via,
                 rng.random() < 0.2)


def _write(w: Domain, s: State, rng) -> Write:
    via, privileged, ca = _trusted(rng)
    epoch = s.zk.epoch if rng.random() < 0.8 else max(0, s.zk.epoch + _delta(rng))
    local = bool(w.config_writers or w.legacy) and not via and rng.random() < 0.5
    return Write(rng.choice(w.mutators), rng.choice(w.nodes), epoch, s.zk.epoch, via,
                 privileged and via, ca and via, routed_locally=local)


# endpoints tokens an arbitrary registration or response may carry (model.state)
ENDPOINT_TOKENS = (STATIC_ENDPOINTS, UNRESOLVED_ENDPOINTS, 0, 1, 2)


def _record(w: Domain, s: State, rng, kind=None) -> Record:
    kind = rng.choice(w.record_kinds) if kind is None else kind
    q = s.quorum
    writer = q.leader if (q.leader != NO_NODE and rng.random() < 0.8) else rng.choice(w.leaders)
    epoch = q.epoch if rng.random() < 0.7 else max(0, q.epoch - rng.choice((1, 2)))
    if kind == REGISTER_CONTROLLER:
        c = rng.choice(w.leaders)
        return RegisterControllerRecord(kind, c, _older(rng, s.nodes[c].incarnation), epoch,
                                        writer, endpoints=rng.choice(ENDPOINT_TOKENS))
    via = rng.random() < 0.5
    return MutationRecord(kind, rng.choice(w.mutators), 0, epoch, writer, via,
                          rng.random() < (0.9 if via else 0.5))


def _pending(w: Domain, s: State, rng) -> tuple:
    rec = _record(w, s, rng)._replace(epoch=s.quorum.epoch, writer=s.quorum.leader)
    if rec.kind == REGISTER_CONTROLLER:
        reply = Reply(REPLY_REGISTRATION, rec.controller_id, rec.incarnation_id,
                      rng.choice(w.listeners)) \
            if (rec.controller_id in w.registrants and rng.random() < 0.8) else ()
    else:
        reply = _reply(w, s, rng, tuple(h for h in w.reply_hows if h != REPLY_REGISTRATION))
    return rec, reply


def _response(w: Domain, s: State, rng) -> Response:
    eps = frozenset(e + (rng.choice(ENDPOINT_TOKENS),) for e in w.endpoints
                    if rng.random() < 0.5)
    return Response(_error(rng), rng.choice((0, 0, 0, _error(rng))), eps, rng.random() < 0.3)


# --------------------------------------------------------------------------------------------
# perturbations: each changes one thing and keeps the state well-typed


def _tset(t: tuple, k: int, x) -> tuple:
    return t[:k] + (x,) + t[k + 1:]


def _tdel(t: tuple, k: int) -> tuple:
    return t[:k] + t[k + 1:]


def _mix(old: tuple, new: tuple, rng) -> tuple:
    """``old`` with one of its parts taken from ``new``."""
    k = rng.randrange(len(old))
    return _tset(old, k, new[k])


def _set_node(s: State, i: int, **kw) -> State:
    return replace(s, nodes=_tset(s.nodes, i, replace(s.nodes[i], **kw)))


def _set_channel(s: State, i: int, **kw) -> State:
    return _set_node(s, i, channel=s.nodes[i].channel._replace(**kw))


def _set_client(s: State, c: int, **kw) -> State:
    return replace(s, clients=_tset(s.clients, c, s.clients[c]._replace(**kw)))


def _set_msg(s: State, m: Msg, new: Msg) -> State:
    return replace(s, network=(s.network - {m}) | {new})


def _set_log(s: State, k: int, rec: Record) -> State:
    return replace(s, quorum=replace(s.quorum, log=_tset(s.quorum.log, k, rec)))


def _set_pending(s: State, k: int, pending: tuple) -> State:
    return replace(s, quorum=replace(s.quorum, uncommitted=_tset(s.quorum.uncommitted, k,
                                                                  pending)))


def _set_zk_epoch(s: State, epoch: int, rng, nodes) -> State:
    holders = s.zk.epoch_holders[:epoch + 1]
    holders += tuple(rng.choice((NO_NODE,) + nodes) for _ in range(epoch + 1 - len(holders)))
    return replace(s, zk=replace(s.zk, epoch=epoch, epoch_holders=holders))


def _set_write(s: State, k: int, wr: Write) -> State:
    return replace(s, zk=replace(s.zk, writes=_tset(s.zk.writes, k, wr)))


def _set_config_write(s: State, i: int, k: int, cw: tuple) -> State:
    return _set_node(s, i, config_writes=_tset(s.nodes[i].config_writes, k, cw))


def _set_event(s: State, i: int, k: int, ev: Event) -> State:
    return _set_node(s, i, events=_tset(s.nodes[i].events, k, ev))


def _items(s: State, w: Domain):
    """(node, queue index or None for the in-flight item, item) of every channel item."""
    for i in w.carriers:
        ch = s.nodes[i].channel
        for k, it in enumerate(ch.queue):
            yield i, k, it
        if ch.inflight:
            yield i, None, ch.inflight


def _set_item(s: State, i: int, k, it: Item) -> State:
    ch = s.nodes[i].channel
    if k is None:
        return _set_channel(s, i, inflight=it)
    return _set_channel(s, i, queue=_tset(ch.queue, k, it))


def _scalars(s: State, w: Domain, kind: str, rng) -> list:
    """Thunks, each giving ``s`` with one scalar of ``kind`` changed."""
    out = []
    add = out.append
    q, zk = s.quorum, s.zk
    if kind == "budget":
        for b, bound in w.budgets:
            add(lambda b=b, bound=bound: replace(s, **{b: rng.randint(0, bound + 2)}))
    elif kind == "clock":
        add(lambda: replace(s, now=rng.randint(0, w.cfg.max_time + 1)))
    elif kind == "epoch" and w.kraft:
        add(lambda: replace(s, quorum=replace(q, epoch=max(0, q.epoch + _delta(rng)))))
        for k, rec in enumerate(q.log[1:], 1):
            add(lambda k=k, r=rec: _set_log(s, k, r._replace(epoch=max(0, r.epoch + _delta(rng)))))
        for k, (rec, reply) in enumerate(q.uncommitted):
            add(lambda k=k, r=rec, y=reply: _set_pending(
                s, k, (r._replace(epoch=max(0, r.epoch + _delta(rng))), y)))
    elif kind == "epoch":
        # an epoch move, with ZooKeeper's holder record kept in step (one slot per epoch)
        add(lambda: _set_zk_epoch(s, max(0, zk.epoch + _delta(rng)), rng, w.nodes))
        for k in range(len(zk.epoch_holders)):
            add(lambda k=k: replace(s, zk=replace(zk, epoch_holders=_tset(
                zk.epoch_holders, k, rng.choice((NO_NODE,) + w.nodes)))))
        add(lambda: replace(s, zk=replace(zk, epoch_version=max(0, zk.epoch_version
                                                                + _delta(rng)))))
        for i in w.nodes:
            add(lambda i=i: _set_node(s, i, zk_epoch=rng.choice(
                (-1, zk.epoch, max(-1, zk.epoch + _delta(rng))))))
            add(lambda i=i: _set_node(s, i, zk_epoch_version=rng.choice(
                (-1, zk.epoch_version, max(-1, zk.epoch_version + _delta(rng))))))
        for k, wr in enumerate(zk.writes):
            f = rng.choice(("writer_epoch", "zk_epoch"))
            add(lambda k=k, wr=wr, f=f: _set_write(s, k, wr._replace(
                **{f: getattr(wr, f) + _delta(rng)})))
        for i in w.config_writers:
            for k, (c, version) in enumerate(s.nodes[i].config_writes):
                add(lambda i=i, k=k, c=c, v=version: _set_config_write(
                    s, i, k, (c, max(0, v + _delta(rng)))))
    elif kind == "incarnation":
        for i in w.nodes:
            add(lambda i=i: _set_node(s, i, incarnation=max(0, s.nodes[i].incarnation
                                                            + _delta(rng))))
        for i, k, it in _items(s, w):
            if it.kind == REGISTRATION:
                add(lambda i=i, k=k, it=it: _set_item(s, i, k, it._replace(
                    incarnation_id=max(0, it.incarnation_id + _delta(rng)))))
        for m in s.network:
            if m.kind in (REGISTRATION_REQUEST, REGISTRATION_RESPONSE):
                add(lambda m=m: _set_msg(s, m, m._replace(
                    incarnation_id=max(0, m.incarnation_id + _delta(rng)))))
        for k, rec in enumerate(q.log):
            if rec.kind == REGISTER_CONTROLLER:
                add(lambda k=k, r=rec: _set_log(s, k, r._replace(
                    incarnation_id=max(0, r.incarnation_id + _delta(rng)))))
        for k, (rec, reply) in enumerate(q.uncommitted):
            if rec.kind == REGISTER_CONTROLLER:
                add(lambda k=k, r=rec, y=reply: _set_pending(
                    s, k, (r._replace(incarnation_id=max(0, r.incarnation_id + _delta(rng))), y)))
            if reply and reply.how == REPLY_REGISTRATION:
                add(lambda k=k, r=rec, y=reply: _set_pending(
                    s, k, (r, y._replace(key=max(0, y.key + _delta(rng))))))
    elif kind == "time":
        top = w.cfg.max_time + 1
        for i, k, it in _items(s, w):
            add(lambda i=i, k=k, it=it: _set_item(s, i, k, it._replace(
                created=rng.randint(0, it.sent if k is None else top))))
            if k is None:
                add(lambda i=i, it=it: _set_item(s, i, None, it._replace(
                    sent=rng.randint(it.created, max(it.created, top)))))
        for c in w.clients:
            add(lambda c=c: _set_client(s, c, sent_at=rng.choice((NO_TIME, rng.randint(0, top)))))
        if w.kraft:
            for i in w.nodes:
                add(lambda i=i: _set_node(s, i, retry_at=rng.choice(
                    (NO_TIME, rng.randint(max(0, s.now - 1), s.now + 2)))))
    elif kind == "replayed" and w.kraft:
        for i in w.nodes:
            add(lambda i=i: _set_node(s, i, replayed=rng.randint(0, len(q.log))))
    elif kind == "flag":
        names = ("alive", "send_requested", "pending_rpc", "registered_in_log") if w.kraft \
            else ("alive", "session_expired", "zk_active")
        for i in w.nodes:
            for f in names:
                add(lambda i=i, f=f: _set_node(s, i, **{f: not getattr(s.nodes[i], f)}))
        for i in w.legacy:
            add(lambda i=i: _set_node(s, i, legacy_ibp=not s.nodes[i].legacy_ibp))
        for c in w.clients:
            for f in ("sent", "forwarded"):
                add(lambda c=c, f=f: _set_client(s, c, **{f: not getattr(s.clients[c], f)}))
        for i, k, it in _items(s, w):
            add(lambda i=i, k=k, it=it: _set_item(s, i, k, it._replace(requeued=not it.requeued)))
        for i in w.nodes:
            for k, ev in enumerate(s.nodes[i].events):
                f = rng.choice(("via_envelope", "privileged", "sender_cluster_action", "acked"))
                add(lambda i=i, k=k, ev=ev, f=f: _set_event(s, i, k, ev._replace(
                    **{f: not getattr(ev, f)})))
        for k, wr in enumerate(zk.writes):
            f = rng.choice(("via_envelope", "privileged", "sender_cluster_action")
                           + (("routed_locally",) if w.config_writers or w.legacy else ()))
            add(lambda k=k, wr=wr, f=f: _set_write(s, k, wr._replace(**{f: not getattr(wr, f)})))
        for k, rec in enumerate(q.log):
            f = rng.choice(("via_envelope", "sender_cluster_action"))
            add(lambda k=k, r=rec, f=f: _set_log(s, k, r._replace(**{f: not getattr(r, f)})))
        for c, cl in enumerate(s.clients):
            for k, r in enumerate(cl.responses):
                add(lambda c=c, k=k, r=r: _set_client(s, c, responses=_tset(
                    s.clients[c].responses, k, r._replace(retried=not r.retried))))
    elif kind == "reference":
        refs = (NO_NODE,) + w.peers
        for i in w.nodes:
            add(lambda i=i: _set_node(s, i, known_controller=rng.choice(refs)))
            add(lambda i=i: _set_channel(s, i, cached=rng.choice(refs)))
            add(lambda i=i: _set_node(s, i, ctrl_versions=rng.choice(
                (NO_VERSIONS,) + w.versions)))
            add(lambda i=i: _set_node(s, i, not_controller_from=s.nodes[i].not_controller_from
                                      ^ {rng.choice(w.nodes)}))
        if w.kraft:
            add(lambda: replace(s, quorum=replace(q, leader=rng.choice((NO_NODE,) + w.leaders))))
        else:
            add(lambda: replace(s, zk=replace(zk, controller=rng.choice((NO_NODE,) + w.nodes))))
        for c in w.clients:
            add(lambda c=c: _set_client(s, c, version=rng.choice(w.versions)))
    elif kind == "field":
        # one field of a message, a queued item, an event, a write, a record or a response,
        # redrawn from its domain (a fresh part of the same kind lends it)
        for m in s.network:
            add(lambda m=m: _set_msg(s, m, message(
                m[:(i := rng.choice(range(MSG_ARITY)))] + (_msg(w, s, rng, m.kind)[i],)
                + m[i + 1:])))
        for i, k, it in _items(s, w):
            if it.kind == FORWARD:
                add(lambda i=i, k=k, it=it: _set_item(s, i, k, it._replace(
                    client=rng.choice(w.mutators), hops=rng.choice((1, 1, 2)))))
        for i in w.nodes:
            for k, ev in enumerate(s.nodes[i].events):
                add(lambda i=i, k=k, ev=ev: _set_event(s, i, k, ev._replace(
                    **{(f := rng.choice(("req", "reply"))): getattr(_event(w, s, rng), f)})))
        for k, wr in enumerate(zk.writes):
            add(lambda k=k, wr=wr: _set_write(s, k, wr._replace(
                **{(f := rng.choice(("req", "writer"))): getattr(_write(w, s, rng), f)})))
        for i in w.config_writers:
            for k, (_c, version) in enumerate(s.nodes[i].config_writes):
                add(lambda i=i, k=k, v=version: _set_config_write(
                    s, i, k, (rng.choice(w.mutators), v)))
        for k, rec in enumerate(q.log[1:], 1):
            # the kind's first own field (level, controller_id, client) or the writer
            add(lambda k=k, r=rec: _set_log(s, k, record(
                r[:(i := rng.choice((1, 4)))] + (_record(w, s, rng, r.kind)[i],) + r[i + 1:])))
        for k, pending in enumerate(q.uncommitted):
            add(lambda k=k, p=pending: _set_pending(s, k, _mix(p, _pending(w, s, rng), rng)))
        for c, cl in enumerate(s.clients):
            for k, r in enumerate(cl.responses):
                add(lambda c=c, k=k, r=r: _set_client(s, c, responses=_tset(
                    s.clients[c].responses, k, r._replace(
                        **{(f := rng.choice(("code", "envelope_error", "endpoints"))): getattr(
                            _response(w, s, rng), f)}))))
    return out


def _sequences(s: State, w: Domain, rng) -> list:
    """Thunks, each giving ``s`` with one message or sequence item added or dropped."""
    out = []
    add = out.append
    cap, q, zk = w.cap, s.quorum, s.zk
    if w.msg_kinds and len(s.network) < cap.network:
        add(lambda: replace(s, network=s.network | {_msg(w, s, rng)}))
    for m in s.network:
        add(lambda m=m: replace(s, network=s.network - {m}))
    for i in w.carriers:
        ch = s.nodes[i].channel
        if len(ch.queue) < cap.queue:
            after = ch.queue[-1].created if ch.queue else (ch.inflight.created if ch.inflight
                                                           else 0)
            add(lambda i=i, ch=ch, after=after: _set_channel(
                s, i, queue=ch.queue + (_item(w, s, i, rng, after=after),)))
        for k in range(len(ch.queue)):
            add(lambda i=i, ch=ch, k=k: _set_channel(s, i, queue=_tdel(ch.queue, k)))
        if ch.inflight:
            add(lambda i=i: _set_channel(s, i, inflight=()))
        elif w.peers:
            add(lambda i=i, ch=ch: _set_channel(
                s, i, inflight=_item(w, s, i, rng, inflight=True),
                cached=ch.cached if ch.cached != NO_NODE else rng.choice(w.peers)))
    if w.kraft:
        if w.record_kinds and len(q.log) < cap.log:
            add(lambda: replace(s, quorum=replace(q, log=q.log + (_record(w, s, rng),))))
        for k in range(1, len(q.log)):
            add(lambda k=k: replace(s, quorum=replace(q, log=_tdel(q.log, k))))
        if w.record_kinds and len(q.uncommitted) < cap.uncommitted:
            add(lambda: replace(s, quorum=replace(q, uncommitted=q.uncommitted
                                                  + (_pending(w, s, rng),))))
        for k in range(len(q.uncommitted)):
            add(lambda k=k: replace(s, quorum=replace(q, uncommitted=_tdel(q.uncommitted, k))))
    elif w.mutators:
        for i in w.nodes:
            events = s.nodes[i].events
            if len(events) < cap.events:
                add(lambda i=i, e=events: _set_node(s, i, events=e + (_event(w, s, rng),)))
            for k in range(len(events)):
                add(lambda i=i, e=events, k=k: _set_node(s, i, events=_tdel(e, k)))
        for i in w.config_writers:
            cws = s.nodes[i].config_writes
            if len(cws) < cap.config_writes:
                add(lambda i=i, cws=cws: _set_node(s, i, config_writes=cws + ((
                    rng.choice(w.mutators),
                    max(0, zk.epoch_version - rng.choice((0, 0, 1, 2)))),)))
            for k in range(len(cws)):
                add(lambda i=i, cws=cws, k=k: _set_node(s, i, config_writes=_tdel(cws, k)))
        if len(zk.writes) < cap.writes:
            add(lambda: replace(s, zk=replace(zk, writes=zk.writes + (_write(w, s, rng),))))
        for k in range(len(zk.writes)):
            add(lambda k=k: replace(s, zk=replace(zk, writes=_tdel(zk.writes, k))))
    for c, cl in enumerate(s.clients):
        if len(cl.responses) < cap.responses:
            add(lambda c=c, cl=cl: _set_client(s, c, responses=cl.responses
                                               + (_response(w, s, rng),)))
        for k in range(len(cl.responses)):
            add(lambda c=c, cl=cl, k=k: _set_client(s, c, responses=_tdel(cl.responses, k)))
    return out


# the kinds of perturbation, with their weights
MOVES = (("budget", 3), ("clock", 2), ("epoch", 3), ("incarnation", 2), ("time", 3),
         ("replayed", 2), ("flag", 3), ("reference", 2), ("field", 3), ("sequence", 4))
DEPTHS = (1, 1, 1, 2, 2, 3)     # perturbations per candidate


def perturb(s: State, w: Domain, rng, depth: int | None = None) -> State:
    """``s`` with ``depth`` (default: drawn from DEPTHS) random perturbations applied; each is
    well-typed by construction.  ``rng``: a ``random.Random`` (or Hypothesis's)."""
    depth = rng.choice(DEPTHS) if depth is None else depth
    kinds = [k for k, _ in MOVES]
    weights = [x for _, x in MOVES]
    for _ in range(depth):
        for _attempt in range(8):
            kind = rng.choices(kinds, weights)[0]
            moves = _sequences(s, w, rng) if kind == "sequence" else _scalars(s, w, kind, rng)
            if moves:
                t = rng.choice(moves)()
                if t != s:
                    s = t
                    break
    return s


# --------------------------------------------------------------------------------------------
# the filter and the generator


class Generator:
    """Arbitrary states of one configuration and design (see the module docstring).

    ``reachable``: the explorer's states in BFS order (explored here when omitted);
    ``enc``: an ``Encoding`` whose layout to use; ``seed``: the pool of starting points."""

    def __init__(self, cfg: ModelConfig, design: Design, *, reachable=None, enc=None,
                 seed: int = 0, pool: int = POOL):
        from properties.symbolic import invariants as inv_mod
        from properties.symbolic.crosscheck import _Dag, compile_terms, explore
        self.cfg, self.design, self.seed = cfg, design, seed
        self.lay = enc.lay if enc is not None else Layout(cfg)
        self.dom = Domain(cfg, self.lay)
        order = explore(cfg, design) if reachable is None else reachable
        self.reachable = set(order)
        rng = random.Random(f"arbitrary-pool-{seed}")
        self.pool = list(order) if len(order) <= pool else \
            [order[0]] + rng.sample(order[1:], pool - 1)
        # the invariants, compiled over the layout's variables
        S = self.lay.fresh("0")
        index = {f"{k}@0": i for i, k in enumerate(self.lay.keys)}
        invs = [inv for inv in inv_mod.INVARIANTS.values() if cfg.mode in inv.modes]
        terms = [inv.holds(S, cfg, design) for inv in invs]
        self._keep = (S, terms)
        fn = compile_terms(terms, index, "invariants", _Dag()) if terms else (lambda v: ())
        names = tuple(inv.name for inv in invs)
        if design.flags_on():
            # a variant breaks some invariants on reachable states: keep those that hold on
            # every pooled one
            ok = [True] * len(names)
            for s in self.pool:
                for j, x in enumerate(fn(self._vector(s))):
                    ok[j] = ok[j] and x
            self._which = tuple(j for j in range(len(names)) if ok[j])
        else:
            self._which = tuple(range(len(names)))
        self._all_names = names
        self.invariants = tuple(names[j] for j in self._which)
        self._fn = fn
        self.stats = Counter()          # verdicts of the candidates drawn so far

    def _vector(self, s: State) -> list:
        values = self.lay.values(s)
        return [values[k] for k in self.lay.keys]

    def verdict(self, s: State) -> str | None:
        """Why ``s`` is rejected (None: accepted): "reachable", "layout", or the first
        invariant it breaks."""
        if s in self.reachable:
            return "reachable"
        try:
            v = self._vector(s)
        except ValueError:
            return "layout"
        got = self._fn(v)
        for j in self._which:
            if not got[j]:
                return f"invariant {self._all_names[j]}"
        return None

    def attempt(self, rng, tries: int = TRIES, seen=None) -> State | None:
        """One accepted state drawn with ``rng`` within ``tries`` candidates, or None."""
        for _ in range(tries):
            s = perturb(rng.choice(self.pool), self.dom, rng)
            why = "duplicate" if (seen is not None and s in seen) else self.verdict(s)
            self.stats[why or "accepted"] += 1
            if why is None:
                return s
        return None

    def generate(self, count: int, seed: int | None = None):
        """Up to ``count`` distinct accepted states from ``seed`` (default: the generator's),
        lazily; the first k are the same whatever ``count`` is."""
        rng = random.Random(f"arbitrary-{self.seed if seed is None else seed}")
        seen = set()
        for _ in range(count):
            s = self.attempt(rng, TRIES, seen)
            if s is None:
                return
            seen.add(s)
            yield s

    @property
    def rejected(self) -> int:
        return sum(n for why, n in self.stats.items() if why != "accepted")


def arbitrary_states(cfg: ModelConfig, design: Design | None = None, count: int = 100, *,
                     seed: int = 0, reachable=None, enc=None, pool: int = POOL) -> list:
    """``count`` arbitrary states of ``cfg`` under ``design`` (fewer if candidates run out),
    the same for the same seed."""
    gen = Generator(cfg, design or Design(), reachable=reachable, enc=enc, seed=seed, pool=pool)
    return list(gen.generate(count))


@lru_cache(maxsize=8)
def generator(cfg: ModelConfig, design: Design, seed: int = 0, pool: int = POOL) -> Generator:
    """A shared ``Generator`` (exploring and compiling once per configuration and design)."""
    return Generator(cfg, design, seed=seed, pool=pool)


def states(cfg: ModelConfig, design: Design | None = None, *, seed: int = 0, pool: int = POOL,
           tries: int = TRIES):
    """A Hypothesis strategy of arbitrary states of ``cfg`` under ``design``: Hypothesis
    draws the perturbations (``st.randoms``), the filter is the generator's."""
    from hypothesis import assume
    from hypothesis import strategies as st
    gen = generator(cfg, design or Design(), seed, pool)

    def build(rnd):
        s = gen.attempt(rnd, tries)
        assume(s is not None)
        return s
    return st.randoms(use_true_random=False).map(build)


__all__ = ["Domain", "Generator", "POOL", "arbitrary_states", "generator", "perturb",
           "problems", "states"]
