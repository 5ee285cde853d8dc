"""Strengthening invariants for the k-induction proofs: each states one fact about every
reachable state, with why it holds.  A proof proves them together with its property (they
are checked in the base case and carried through the inductive step), so a wrong invariant
makes a proof fail, never succeed.
"""
from __future__ import annotations

from typing import NamedTuple
from collections.abc import Callable

import z3

from model import kafka
from model.config import CONTROLLER, KRAFT, ZK, ModelConfig
from model.state import (ENVELOPE_REQUEST, ENVELOPE_RESPONSE, FEATURE_LEVEL, FORWARD,
                         MUTATION_RECORD, NO_NODE, NO_TIME, REGISTER_CONTROLLER, REGISTRATION,
                         REGISTRATION_REQUEST, REGISTRATION_RESPONSE, REPLY_CLIENT, REPLY_ENVELOPE,
                         REPLY_REGISTRATION)
from properties.symbolic.actions import _epoch_holder, _item_timeout
from properties.symbolic.props import (_latest_registration, log_appended_by_current_leader,
                                      registration_traffic)
from properties.symbolic.state import And, Sym, _cap_of


class Invariant(NamedTuple):
    name: str
    doc: str
    holds: Callable             # (S, cfg, design) -> Z3 Bool
    modes: tuple = ("zk", "kraft")


def _seq_lengths(S: Sym, cfg, d):
    parts = []
    for prefix in S.lay.seq_prefixes:
        if prefix + ".len" in S.lay.sorts:
            parts.append(z3.And(S[prefix + ".len"] >= 0,
                                S[prefix + ".len"] <= _cap_of(S.lay, prefix)))
    return And(*parts)


def _zk_version_nonneg(S: Sym, cfg, d):
    return S["zk.epoch_version"] >= 0


def _node_version_not_ahead(S: Sym, cfg, d):
    return And(*(S.node(n, "zk_epoch_version") <= S["zk.epoch_version"]
                 for n in range(S.lay.n)))


def _current_version_current_epoch(S: Sym, cfg, d):
    return And(*(z3.Implies(S.node(n, "zk_epoch_version") == S["zk.epoch_version"],
                            S.node(n, "zk_epoch") == S["zk.epoch"]) for n in range(S.lay.n)))


def _holders_cover_epochs(S: Sym, cfg, d):
    return And(S["zk.epoch"] >= 0, S["zk.holders.len"] == S["zk.epoch"] + 1)


def _active_epoch_not_ahead(S: Sym, cfg, d):
    return And(*(z3.Implies(S.node(n, "zk_active"), S.node(n, "zk_epoch") <= S["zk.epoch"])
                 for n in range(S.lay.n)))


def _writes_not_ahead(S: Sym, cfg, d):
    return And(*(z3.Implies(used, S[f"zk.writes.{k}.zk_epoch"] <= S["zk.epoch"])
                 for k, used in S.seq_items("zk.writes")))


# -- the ZK-to-KRaft migration (MG-1..MG-7): facts about the KRaft controllers of a ZK-mode
# configuration; without one (every configuration but a migration's) each is true outright


def _kraft_controller(cfg, x):
    """Node index term ``x`` names a KRaft controller (a CONTROLLER-role node of ZK mode)."""
    return z3.Or(*(x == c for c in cfg.controllers())) if cfg.controllers() else \
        z3.BoolVal(False)


def _claim_after_bounce(S: Sym, cfg, d):
    """While a broker runs the old IBP, no KRaft controller holds the current epoch."""
    legacy = [S.node(n, "legacy_ibp") for n in range(S.lay.n)
              if f"n{n}.legacy_ibp" in S.lay.sorts]
    if not legacy or not cfg.controllers():
        return z3.BoolVal(True)
    return z3.Implies(z3.Or(*legacy),
                      z3.Not(_kraft_controller(cfg, _epoch_holder(S, S["zk.epoch"]))))


def _controller_znode_names_epoch_holder(S: Sym, cfg, d):
    if not cfg.controllers():
        return z3.BoolVal(True)
    owner = S["zk.controller"]
    return z3.Implies(owner != NO_NODE, _epoch_holder(S, S["zk.epoch"]) == owner)


def _kraft_owner_holds_current_version(S: Sym, cfg, d):
    owner = S["zk.controller"]
    return And(*(z3.Implies(z3.And(owner == c, S.node(c, "alive"), S.node(c, "zk_active")),
                            S.node(c, "zk_epoch_version") == S["zk.epoch_version"])
                 for c in cfg.controllers()))


def _entity_config_reads_not_ahead(S: Sym, cfg, d):
    if not cfg.controllers():
        return z3.BoolVal(True)
    kraft_holds = _kraft_controller(cfg, _epoch_holder(S, S["zk.epoch"]))
    parts = []
    for n in range(S.lay.n):
        for k, used in S.seq_items(f"n{n}.cw"):
            version = S[f"n{n}.cw.{k}.version"]
            parts.append(z3.Implies(used, z3.And(
                version <= S["zk.epoch_version"],
                z3.Implies(version == S["zk.epoch_version"], z3.Not(kraft_holds)))))
    return And(*parts)


def _envelopes_to_kraft_controllers_on_controller_listener(S: Sym, cfg, d):
    from properties.symbolic.actions import target_listener
    parts = []
    for j in range(S.lay.cap.network):
        m = S.msg(j)
        for c in cfg.controllers():
            parts.append(z3.Implies(
                z3.And(S[f"net.{j}.present"], m["kind"] == ENVELOPE_REQUEST, m["dst"] == c),
                m["listener"] == target_listener(cfg, c)))
    return And(*parts)


def _incarnations_nonnegative(S: Sym, cfg, d):
    parts = []
    controllers = _registration_controllers(S, cfg)
    for c in controllers:
        parts.append(S.node(c, "incarnation") >= 0)
    for j in range(S.lay.cap.network):
        here = S[f"net.{j}.present"]
        request = S[f"net.{j}.kind"] == REGISTRATION_REQUEST
        if not controllers:             # no registration traffic at all
            parts.append(z3.Implies(here, z3.And(
                z3.Not(request), S[f"net.{j}.kind"] != REGISTRATION_RESPONSE)))
            continue
        parts.append(z3.Implies(z3.And(here, request), z3.And(
            S[f"net.{j}.a"] >= 0, z3.Or(*(S[f"net.{j}.src"] == c for c in controllers)))))
    if not controllers:
        parts += [z3.Implies(used, S[f"q.uncommitted.{k}.kind"] != REGISTER_CONTROLLER)
                  for k, used in S.seq_items("q.uncommitted")]
    return And(*parts)


def _log_not_ahead(S: Sym, cfg, d):
    return And(*(z3.Implies(used, S[f"q.log.{k}.epoch"] <= S["q.epoch"])
                 for k, used in S.seq_items("q.log")))


def _current_epoch_records_from_leader(S: Sym, cfg, d):
    return And(*(z3.Implies(z3.And(used, S[f"q.log.{k}.epoch"] == S["q.epoch"]),
                            S[f"q.log.{k}.writer"] == S["q.leader"])
                 for k, used in S.seq_items("q.log")))


def _items(S: Sym, n: int):
    """(in use, prefix) of node n's in-flight item, then its queue slots in order."""
    out = [(S.node(n, "ch.inflight.present"), f"n{n}.ch.inflight")]
    out += [(used, f"n{n}.ch.queue.{k}") for k, used in S.seq_items(f"n{n}.ch.queue")]
    return out


def _channel_item_kinds(S: Sym, cfg, d):
    parts = []
    for n in range(S.lay.n):
        registrant = cfg.mode == KRAFT and cfg.nodes[n].role == CONTROLLER
        if registrant and not cfg.registration:
            parts += [z3.Not(used) for used, _ in _items(S, n)]     # it queues nothing
            continue
        kind = REGISTRATION if registrant else FORWARD
        parts += [z3.Implies(used, S[p + ".kind"] == kind) for used, p in _items(S, n)]
    return And(*parts)


def _forward_items_one_hop(S: Sym, cfg, d):
    return And(*(z3.Implies(z3.And(used, S[p + ".kind"] == FORWARD), S[p + ".hops"] <= 1)
                 for n in range(S.lay.n) for used, p in _items(S, n)))


def _channel_oldest_first(S: Sym, cfg, d):
    parts = []
    for n in range(S.lay.n):
        items = _items(S, n)
        for used, p in items:
            parts.append(z3.Implies(used, S[p + ".created"] <= S["now"]))
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                (ui, pi), (uj, pj) = items[i], items[j]
                parts.append(z3.Implies(z3.And(ui, uj), S[pi + ".created"] <= S[pj + ".created"]))
    return And(*parts)


def _in_flight_sent_in_time(S: Sym, cfg, d):
    parts = []
    for n in range(S.lay.n):
        p = f"n{n}.ch.inflight"
        created, sent = S[p + ".created"], S[p + ".sent"]
        has, timeout = _item_timeout(cfg, d, S[p + ".kind"])
        parts.append(z3.Implies(S[p + ".present"], z3.And(
            created <= sent, sent <= S["now"], z3.Implies(has, sent - created < timeout))))
    return And(*parts)


def _not_controller_at_top_level(S: Sym, cfg, d):
    return And(*(z3.Implies(z3.And(S[f"net.{j}.present"], S[f"net.{j}.kind"] == ENVELOPE_RESPONSE),
                            S[f"net.{j}.b"] != kafka.NOT_CONTROLLER)
                 for j in range(S.lay.cap.network)))


def _registration_controllers(S: Sym, cfg):
    return cfg.controllers() if (cfg.mode == KRAFT and cfg.registration) else ()


def _registered_only_with_registration(S: Sym, cfg, d):
    if cfg.mode == KRAFT and cfg.registration:
        return z3.BoolVal(True)
    return And(*(z3.Not(S.node(n, "registered_in_log")) for n in range(S.lay.n)
                 if f"n{n}.registered_in_log" in S.lay.sorts))


def _node_references_in_range(S: Sym, cfg, d):
    n = S.lay.n

    def node_or_none(x, allowed=None):
        vals = range(n) if allowed is None else allowed
        return z3.Or(x == NO_NODE, *(x == v for v in vals))
    parts = []
    if cfg.mode == KRAFT:
        parts.append(node_or_none(S["q.leader"], cfg.controllers()))
    else:
        parts.append(node_or_none(S["zk.controller"]))
    for i in range(n):
        parts.append(node_or_none(S.node(i, "known_controller")))
        parts.append(node_or_none(S.node(i, "ch.cached")))
    for j in range(S.lay.cap.network):
        parts.append(z3.Implies(S[f"net.{j}.present"], z3.And(
            S[f"net.{j}.src"] >= 0, S[f"net.{j}.src"] < n,
            S[f"net.{j}.dst"] >= 0, S[f"net.{j}.dst"] < n)))
    return And(*parts)


def _reply_targets_in_range(S: Sym, cfg, d):
    """Replies waiting in the ZK event queues and the uncommitted records go to a client or
    a node of the configuration."""
    def ok(how, to):
        return z3.Or(z3.And(how == REPLY_CLIENT, to >= 0, to < S.lay.m),
                     z3.And(z3.Or(how == REPLY_ENVELOPE, how == REPLY_REGISTRATION),
                            to >= 0, to < S.lay.n))
    parts = []
    if cfg.mode == KRAFT:
        for k, used in S.seq_items("q.uncommitted"):
            p = f"q.uncommitted.{k}."
            parts.append(z3.Implies(z3.And(used, S[p + "has_reply"]),
                                    ok(S[p + "reply_how"], S[p + "reply_to"])))
    else:
        for n in range(S.lay.n):
            for k, used in S.seq_items(f"n{n}.events"):
                p = f"n{n}.events.{k}."
                parts.append(z3.Implies(z3.And(used, S[p + "has_reply"]),
                                        ok(S[p + "reply_how"], S[p + "reply_to"])))
    return And(*parts)


def _pending_mutations_authorized(S: Sym, cfg, d):
    """What the controller accepted but has not written yet satisfies P4 already."""
    ok_clients = [c for c, spec in enumerate(cfg.clients) if spec.api in kafka.API_OPERATION
                  and cfg.allows(spec.principal, kafka.API_OPERATION[spec.api])]

    def good(req, via, privileged, sender_ok):
        return z3.And(z3.Or(*(req == c for c in ok_clients)),
                      z3.Implies(via, z3.And(sender_ok, privileged)))
    parts = []
    if cfg.mode == ZK:
        for n in range(S.lay.n):
            for k, used in S.seq_items(f"n{n}.events"):
                p = f"n{n}.events.{k}."
                parts.append(z3.Implies(used, good(S[p + "req"], S[p + "via_envelope"],
                                                   S[p + "privileged"],
                                                   S[p + "sender_cluster_action"])))
            # a broker's entity-config write in progress (MG-6): checked before the read (F-7)
            for k, used in S.seq_items(f"n{n}.cw"):
                parts.append(z3.Implies(used, z3.Or(*(S[f"n{n}.cw.{k}.req"] == c
                                                      for c in ok_clients))))
    else:
        for k, used in S.seq_items("q.uncommitted"):
            p = f"q.uncommitted.{k}."
            parts.append(z3.Implies(z3.And(used, S[p + "kind"] == MUTATION_RECORD),
                                    good(S[p + "a"], S[p + "via_envelope"], z3.BoolVal(True),
                                         S[p + "sender_cluster_action"])))
    return And(*parts)


def _messages_to_live_nodes(S: Sym, cfg, d):
    return And(*(z3.Implies(S[f"net.{j}.present"], S.node(S[f"net.{j}.dst"], "alive"))
                 for j in range(S.lay.cap.network)))


def _dead_leader_uncommitted_empty(S: Sym, cfg, d):
    leader = S["q.leader"]
    return z3.Implies(z3.And(leader != NO_NODE, z3.Not(S.node(leader, "alive"))),
                      S["q.uncommitted.len"] == 0)


def _registration_items_current(S: Sym, cfg, d):
    return And(*(z3.Implies(used, S[p + ".key"] == S.node(c, "incarnation"))
                 for c in _registration_controllers(S, cfg) for used, p in _items(S, c)))


def _replay_not_ahead(S: Sym, cfg, d):
    if cfg.mode != KRAFT:
        return z3.BoolVal(True)
    return And(*(z3.And(S.node(n, "replayed") >= 0, S.node(n, "replayed") <= S["q.log.len"])
                 for n in range(S.lay.n)))


def _self_requests_current(S: Sym, cfg, d):
    parts = []
    for j in range(S.lay.cap.network):
        m = S.msg(j)
        for c in _registration_controllers(S, cfg):
            parts.append(z3.Implies(
                z3.And(S[f"net.{j}.present"], m["kind"] == REGISTRATION_REQUEST, m["src"] == c,
                       m["dst"] == c), m["a"] == S.node(c, "incarnation")))
    return And(*parts)


def _leader_self_records_current(S: Sym, cfg, d):
    parts = []
    for k, used in S.seq_items("q.uncommitted"):
        p = f"q.uncommitted.{k}."
        for c in _registration_controllers(S, cfg):
            parts.append(z3.Implies(
                z3.And(used, S[p + "kind"] == REGISTER_CONTROLLER, S[p + "a"] == c,
                       S["q.leader"] == c), S[p + "b"] == S.node(c, "incarnation")))
    return And(*parts)


# -- P3's quiescent clause: a registration that does not carry the current incarnation is
# still being worked on (the manager has something queued, pending or timed)


def _registration_record_current(S: Sym, c: int):
    """The log's last RegisterControllerRecord for ``c`` carries c's current incarnation."""
    found, inc = _latest_registration(S, c)
    return z3.And(found, inc == S.node(c, "incarnation"))


def _registrations_replayed(S: Sym, c: int):
    """Node ``c`` has replayed every RegisterControllerRecord for ``c`` in the log."""
    return And(*(z3.Implies(z3.And(used, S[f"q.log.{k}.kind"] == REGISTER_CONTROLLER,
                                   S[f"q.log.{k}.a"] == c), k < S.node(c, "replayed"))
                 for k, used in S.seq_items("q.log")))


def _clock_nonnegative(S: Sym, cfg, d):
    return S["now"] >= 0


def _log_starts_with_feature_level(S: Sym, cfg, d):
    parts = [S["q.log.len"] >= 1, S["q.log.0.kind"] == FEATURE_LEVEL,
             S["q.log.0.a"] == cfg.metadata_version]
    parts += [z3.Implies(used, S[f"q.log.{k}.kind"] != FEATURE_LEVEL)
              for k, used in S.seq_items("q.log") if k > 0]
    parts += [z3.Implies(used, S[f"q.uncommitted.{k}.kind"] != FEATURE_LEVEL)
              for k, used in S.seq_items("q.uncommitted")]
    return And(*parts)


def _pending_rpc_has_item(S: Sym, cfg, d):
    parts = []
    for c in _registration_controllers(S, cfg):
        has = z3.Or(S.node(c, "ch.inflight.present"), S[f"n{c}.ch.queue.len"] > 0)
        parts.append(z3.Implies(S.node(c, "alive"), S.node(c, "pending_rpc") == has))
    return And(*parts)


def _one_registration_at_a_time(S: Sym, cfg, d):
    parts = []
    for c in _registration_controllers(S, cfg):
        qlen = S[f"n{c}.ch.queue.len"]
        parts.append(z3.And(qlen <= 1, z3.Implies(S.node(c, "ch.inflight.present"), qlen == 0)))
    return And(*parts)


def _on_open_connection(S: Sym, c: int, peer):
    """Controller ``c``'s registration is in flight to ``peer`` (its channel's connection)."""
    return z3.And(S.node(c, "ch.inflight.present"),
                  S[f"n{c}.ch.inflight.key"] == S.node(c, "incarnation"),
                  S.node(c, "ch.cached") == peer)


def _registration_traffic_on_open_connection(S: Sym, cfg, d):
    parts = []
    for c in _registration_controllers(S, cfg):
        alive = S.node(c, "alive")
        parts += [z3.Implies(z3.And(alive, cond), _on_open_connection(S, c, peer))
                  for cond, peer in registration_traffic(S, c)]
    return And(*parts)


def _no_future_incarnations(S: Sym, cfg, d):
    parts = []
    for c in _registration_controllers(S, cfg):
        inc = S.node(c, "incarnation")
        for j in range(S.lay.cap.network):
            m = S.msg(j)
            here = S[f"net.{j}.present"]
            parts.append(z3.Implies(z3.And(here, m["kind"] == REGISTRATION_REQUEST,
                                           m["src"] == c), m["a"] <= inc))
            parts.append(z3.Implies(z3.And(here, m["kind"] == REGISTRATION_RESPONSE,
                                           m["dst"] == c), m["b"] <= inc))
        for k, used in S.seq_items("q.uncommitted"):
            p = f"q.uncommitted.{k}."
            parts.append(z3.Implies(
                z3.And(used, S[p + "has_reply"], S[p + "reply_how"] == REPLY_REGISTRATION,
                       S[p + "reply_to"] == c), S[p + "reply_key"] <= inc))
    return And(*parts)


def _registration_replies_match_records(S: Sym, cfg, d):
    parts = []
    for k, used in S.seq_items("q.uncommitted"):
        p = f"q.uncommitted.{k}."
        parts.append(z3.Implies(
            z3.And(used, S[p + "has_reply"], S[p + "reply_how"] == REPLY_REGISTRATION),
            z3.And(S[p + "kind"] == REGISTER_CONTROLLER, S[p + "a"] == S[p + "reply_to"],
                   S[p + "b"] == S[p + "reply_key"])))
    return And(*parts)


def _success_response_noticed(S: Sym, cfg, d):
    parts = []
    for c in _registration_controllers(S, cfg):
        # one term per controller, shared by its network slots (built once: it reads the log)
        noticed = z3.Or(_registration_record_current(S, c),
                        z3.Not(_registrations_replayed(S, c)), S.node(c, "send_requested"))
        for j in range(S.lay.cap.network):
            m = S.msg(j)
            parts.append(z3.Implies(
                z3.And(S[f"net.{j}.present"], S.node(c, "alive"),
                       m["kind"] == REGISTRATION_RESPONSE, m["dst"] == c, m["a"] == kafka.NONE,
                       m["b"] == S.node(c, "incarnation")),
                noticed))
    return And(*parts)


def _registration_work_pending(S: Sym, cfg, d):
    parts = []
    for c in _registration_controllers(S, cfg):
        node = lambda f, c=c: S.node(c, f)  # noqa: E731
        parts.append(z3.Implies(
            z3.And(node("alive"), z3.Not(_registration_record_current(S, c)),
                   node("replayed") >= 1, _registrations_replayed(S, c)),
            z3.Or(node("send_requested"), node("pending_rpc"), node("retry_at") != NO_TIME)))
    return And(*parts)


INVARIANTS = {i.name: i for i in (
    Invariant("sequence-lengths",
              "Every sequence's length is between 0 and its capacity (appends past the "
              "capacity are not taken).", _seq_lengths),
    Invariant("zk-epoch-version-nonnegative",
              "The /controller_epoch zkVersion is never negative: it starts at 0 (or 1 with "
              "an initial controller) and only grows (Z-1).", _zk_version_nonneg, ("zk",)),
    Invariant("node-epoch-version-not-ahead",
              "No broker holds a /controller_epoch zkVersion newer than ZooKeeper's: a node "
              "takes the zkVersion its own election wrote, or -1 (Z-1, Z-3).",
              _node_version_not_ahead, ("zk",)),
    Invariant("current-version-current-epoch",
              "A broker holding the current /controller_epoch zkVersion holds the current "
              "controller epoch: the election writes both in one multi (Z-1), and the "
              "zkVersion changes exactly when the epoch does.",
              _current_version_current_epoch, ("zk",)),
    Invariant("holders-cover-epochs",
              "ZooKeeper has recorded a holder slot for every epoch up to the current one and "
              "none beyond: every write of /controller_epoch sets the slot of the epoch it "
              "writes, and epochs move by one (Z-1).", _holders_cover_epochs, ("zk",)),
    Invariant("active-epoch-not-ahead",
              "No broker acts as controller of an epoch newer than /controller_epoch: it "
              "takes the epoch its own election wrote (Z-1).", _active_epoch_not_ahead, ("zk",)),
    Invariant("writes-not-ahead",
              "No ZooKeeper write carries an epoch newer than /controller_epoch: it records "
              "the epoch current when it was made, and epochs only grow.", _writes_not_ahead,
              ("zk",)),
    Invariant("claim-after-bounce",
              "In a ZK-to-KRaft migration, while a broker still runs the old IBP no KRaft "
              "controller holds the current controller epoch: the KRaft controller claims "
              "/controller only once every broker has been bounced into migration mode "
              "(MG-1, MG-5), and an IBP bump is never undone.", _claim_after_bounce, ("zk",)),
    Invariant("controller-znode-names-epoch-holder",
              "In a migration, /controller, while it exists, names the holder of the current "
              "controller epoch: a broker's election and the KRaft controller's claim write "
              "both in one multi (Z-1, MG-5), and a session expiry only deletes /controller.",
              _controller_znode_names_epoch_holder, ("zk",)),
    Invariant("kraft-owner-holds-current-version",
              "A KRaft controller that /controller names and that acts as controller holds the "
              "current /controller_epoch zkVersion: its claim wrote it (MG-5), and nobody else "
              "writes /controller_epoch while the persistent /controller names it.",
              _kraft_owner_holds_current_version, ("zk",)),
    Invariant("entity-config-reads-not-ahead",
              "A broker's entity-config write in progress carries a /controller_epoch "
              "zkVersion no newer than ZooKeeper's, and while that zkVersion is still the "
              "current one no KRaft controller holds the current epoch: the broker read it "
              "with a ZK controller's /controller (MG-6), and a KRaft controller's claim bumps "
              "the zkVersion (MG-5).", _entity_config_reads_not_ahead, ("zk",)),
    Invariant("envelopes-to-kraft-controllers-on-controller-listener",
              "In a migration, every EnvelopeRequest to a KRaft controller travels on its "
              "controller listener: a broker's channel sends to a controller on that listener "
              "(L-29, MG-2), and it is the only listener a KRaft controller has.",
              _envelopes_to_kraft_controllers_on_controller_listener, ("zk",)),
    Invariant("incarnations-nonnegative",
              "Incarnations start at 0 and a restart takes the next one, so every "
              "controller's incarnation and every registration request's is >= 0, and only "
              "controllers send registrations; without registration (KIP-919 off) there is "
              "no registration traffic and no registration is appended (R-1).",
              _incarnations_nonnegative, ("kraft",)),
    Invariant("uncommitted-from-current-leader",
              "Every uncommitted record was appended by the current leader in the current "
              "epoch: only the leader appends, and an election drops what its predecessor had "
              "not committed.", log_appended_by_current_leader, ("kraft",)),
    Invariant("log-not-ahead-of-epoch",
              "No committed record carries an epoch newer than the quorum's: records come "
              "from uncommitted ones of the then current epoch, and epochs only grow.",
              _log_not_ahead, ("kraft",)),
    Invariant("current-epoch-records-from-leader",
              "Committed records of the current epoch were written by the current leader: "
              "one leader per epoch.", _current_epoch_records_from_leader, ("kraft",)),
    Invariant("channel-item-kinds",
              "A KRaft controller's channel carries only its registration, and nothing "
              "where registration is off; every other node's carries only forwarded requests "
              "(only brokers forward, F-2/F-3; only controllers register, R-3, and only where "
              "the registration manager runs, R-1).", _channel_item_kinds),
    Invariant("forward-items-one-hop",
              "A forwarded request waiting in a channel has made at most one hop: the "
              "forwarder creates it with one, and re-queueing keeps it (F-10, F-14).",
              _forward_items_one_hop),
    Invariant("channel-oldest-first",
              "A channel's items are in creation order, the in-flight one first, none "
              "created in the future: items are appended at the current time, and a re-queued "
              "item goes back to the front (F-14, F-21).", _channel_oldest_first),
    Invariant("in-flight-sent-in-time",
              "The in-flight item was sent after it was created and not in the future, and, "
              "if it has a timeout, before that timeout was due: a channel sends only a head "
              "that has not expired, at the current time (F-16, F-19).",
              _in_flight_sent_in_time),
    Invariant("not-controller-at-top-level",
              "No EnvelopeResponse in flight carries NOT_CONTROLLER inside: the controller "
              "promotes it to the envelope's own error (F-34).", _not_controller_at_top_level),
    Invariant("registered-only-with-registration",
              "Without controller registration (KIP-919 off), no node ever believes it is "
              "registered.", _registered_only_with_registration, ("kraft",)),
    Invariant("node-references-in-range",
              "Every node index in the state (the leader, /controller, a cached or known "
              "controller, a message's ends) names a node of the configuration, or NO_NODE; "
              "the KRaft leader is a controller.", _node_references_in_range),
    Invariant("reply-targets-in-range",
              "Every reply waiting for a write (in a ZK controller's event queue or with an "
              "uncommitted record) goes to a client or a node of the configuration.",
              _reply_targets_in_range),
    Invariant("pending-mutations-authorized",
              "Every mutation a controller accepted but has not yet written (a queued ZK "
              "event, an uncommitted record) was authorized for its client's principal and, "
              "if it came in an envelope, from a sender with CLUSTER_ACTION on the privileged "
              "listener: the controller checks before it queues (F-24, F-25, F-28, F-30); so "
              "was every entity-config write a broker of a migration has started (F-7, MG-6).",
              _pending_mutations_authorized),
    Invariant("messages-to-live-nodes",
              "Every message in flight is addressed to a live node: nothing is sent to a dead "
              "node, and a crash drops the messages to the crashed node.",
              _messages_to_live_nodes),
    Invariant("dead-leader-uncommitted-empty",
              "A dead leader has no uncommitted records: its crash drops them.",
              _dead_leader_uncommitted_empty, ("kraft",)),
    Invariant("registration-items-current",
              "A controller's queued or in-flight registration carries its current "
              "incarnation: a restart empties the channel (R-3).",
              _registration_items_current, ("kraft",)),
    Invariant("replay-not-ahead",
              "Every node has replayed a prefix of the committed log (0 to its length).",
              _replay_not_ahead,
              ("kraft",)),
    Invariant("self-requests-current",
              "A registration a controller sent to itself (as leader) carries its current "
              "incarnation: a crash drops every message to the crashed node.",
              _self_requests_current, ("kraft",)),
    Invariant("leader-self-records-current",
              "An uncommitted registration of the leader itself carries its current "
              "incarnation: the leader appends only what it received as leader, its own "
              "requests come from its current incarnation, and a crash or an election drops "
              "the uncommitted records.", _leader_self_records_current, ("kraft",)),
    Invariant("clock-nonnegative",
              "The clock starts at 0 and only moves forward, so a timer set to now + 1 is "
              "never mistaken for NO_TIME (-1).", _clock_nonnegative),
    Invariant("log-starts-with-feature-level",
              "The committed log starts with the FeatureLevelRecord of the configuration's "
              "metadata.version and holds no other: the model writes no feature change, so a "
              "controller that has replayed one record has the version that decides whether "
              "it registers (R-1).", _log_starts_with_feature_level, ("kraft",)),
    Invariant("pending-rpc-has-item",
              "A live controller's pendingRpc is set exactly while its channel holds its "
              "registration (queued or in flight): the manager sets both when it sends, and "
              "the response, the timeout (R-6) and a crash clear both.",
              _pending_rpc_has_item, ("kraft",)),
    Invariant("one-registration-at-a-time",
              "A controller's channel holds at most one registration, queued or in flight: "
              "the manager queues one only while no RPC is pending (R-4).",
              _one_registration_at_a_time, ("kraft",)),
    Invariant("registration-traffic-on-open-connection",
              "A registration request of a controller's current incarnation, the reply the "
              "leader holds for it, and its response all travel on the connection of the "
              "registration in flight: a timeout, a lost message, NOT_CONTROLLER or a crash "
              "at either end closes that connection and takes them with it.",
              _registration_traffic_on_open_connection, ("kraft",)),
    Invariant("no-future-incarnations",
              "Registration traffic of a controller (requests, the leader's replies, "
              "responses) carries its current incarnation or an older one: a restart draws a "
              "larger one.", _no_future_incarnations, ("kraft",)),
    Invariant("registration-replies-match-records",
              "The leader holds a registration reply only with the RegisterControllerRecord it "
              "appended for that request (R-15), for the same controller and incarnation.",
              _registration_replies_match_records, ("kraft",)),
    Invariant("success-response-noticed",
              "A success response to a controller's current incarnation comes after its "
              "record is committed; if a later registration for its ID (an older incarnation's "
              "late request) has overtaken it and the controller has replayed that, the "
              "controller has queued a new send check (R-8), which waits for the pending RPC.",
              _success_response_noticed, ("kraft",)),
    Invariant("registration-work-pending",
              "A live controller that has replayed its metadata.version and every "
              "registration for its ID, while the log's last registration for it carries "
              "another incarnation (or there is none), has work in progress: a send check "
              "queued (R-2, R-8), an RPC pending, or a backoff timer set (R-7).",
              _registration_work_pending, ("kraft",)),)}

# Which invariants each property's proof uses, per mode.
PLAN = {
    "P1": ("sequence-lengths", "zk-epoch-version-nonnegative", "node-epoch-version-not-ahead",
           "current-version-current-epoch", "holders-cover-epochs", "active-epoch-not-ahead",
           "writes-not-ahead", "uncommitted-from-current-leader",
           "log-not-ahead-of-epoch", "current-epoch-records-from-leader",
           # the ZK-to-KRaft migration
           "claim-after-bounce", "controller-znode-names-epoch-holder",
           "kraft-owner-holds-current-version", "entity-config-reads-not-ahead"),
    "P2": ("sequence-lengths", "channel-item-kinds", "forward-items-one-hop",
           "channel-oldest-first", "in-flight-sent-in-time",
           "not-controller-at-top-level"),
    "P3": ("node-references-in-range", "reply-targets-in-range", "sequence-lengths",
           "replay-not-ahead", "registered-only-with-registration", "channel-item-kinds",
           "registration-items-current", "self-requests-current",
           "leader-self-records-current", "messages-to-live-nodes",
           "dead-leader-uncommitted-empty",
           # the quiescent clause: registration work in progress
           "clock-nonnegative", "log-starts-with-feature-level", "one-registration-at-a-time",
           "pending-rpc-has-item", "registration-traffic-on-open-connection",
           "no-future-incarnations", "registration-replies-match-records",
           "success-response-noticed", "registration-work-pending",
           # registration-names-incarnation-it-ran
           "incarnations-nonnegative"),
    "P4": ("sequence-lengths", "pending-mutations-authorized",
           "envelopes-to-kraft-controllers-on-controller-listener"),
}


def for_property(cfg: ModelConfig, pid: str) -> list:
    return [INVARIANTS[n] for n in PLAN.get(pid, ()) if cfg.mode in INVARIANTS[n].modes]
