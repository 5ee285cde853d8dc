"""The safety properties P1-P4 as Z3 predicates over a symbolic state, one per clause of
``properties/registry.py`` and under the same names; and the strengthening invariants the
k-induction proofs need.

Each clause function has the registry's docstring meaning (see the registry for the KIP
sentences); ``tests/test_symbolic.py`` checks each against the registry's Python predicate on
explored states, so the two cannot drift apart.
"""
from __future__ import annotations

import z3

from model import kafka
from model.config import KRAFT, ZK, Design, ModelConfig
from model.state import (ENVELOPE_REQUEST, FORWARD, MUTATION_RECORD, NO_NODE, REGISTER_CONTROLLER,
                         REGISTRATION_REQUEST, REGISTRATION_RESPONSE, REPLY_REGISTRATION)
from properties import registry
from properties.symbolic.actions import _epoch_holder, _latest_registration
from properties.symbolic.state import TRUE, And, Eq, If, Not, Or, Sym

# --------------------------------------------------------------------------------------------
# clauses (names as in properties/registry.py)


def _meant_for_controller(S: Sym, k: int, used):
    """ZooKeeper write slot k is in use and holds a request meant for the controller (not one
    Kafka's routing leaves to a broker that does not forward: ``Write.routed_locally``)."""
    return And(used, Not(S[f"zk.writes.{k}.routed_locally"]))


def zk_writes_carry_current_epoch(S: Sym, cfg: ModelConfig, d: Design):
    if cfg.mode != ZK:
        return TRUE
    return And(*(z3.Implies(_meant_for_controller(S, k, used),
                            S[f"zk.writes.{k}.writer_epoch"] == S[f"zk.writes.{k}.zk_epoch"])
                 for k, used in S.seq_items("zk.writes")))


def active_controller_won_its_epoch(S: Sym, cfg: ModelConfig, d: Design):
    if cfg.mode != ZK:
        return TRUE
    return And(*(z3.Implies(And(S.node(n, "alive"), S.node(n, "zk_active")),
                            _epoch_holder(S, S.node(n, "zk_epoch")) == n)
                 for n in range(S.lay.n)))


def zk_writes_by_epoch_holder(S: Sym, cfg: ModelConfig, d: Design):
    if cfg.mode != ZK:
        return TRUE
    return And(*(z3.Implies(_meant_for_controller(S, k, used),
                            S[f"zk.writes.{k}.zk_holder"] == S[f"zk.writes.{k}.writer"])
                 for k, used in S.seq_items("zk.writes")))


def kraft_controller_sole_zk_writer(S: Sym, cfg: ModelConfig, d: Design):
    """Every write whose epoch a KRaft controller holds (zk_holder, a CONTROLLER-role node)
    was made by that controller."""
    controllers = cfg.controllers()
    if cfg.mode != ZK or not controllers:
        return TRUE
    parts = []
    for k, used in S.seq_items("zk.writes"):
        holder = S[f"zk.writes.{k}.zk_holder"]
        parts.append(z3.Implies(And(used, Or(*(Eq(holder, c) for c in controllers))),
                                S[f"zk.writes.{k}.writer"] == holder))
    return And(*parts)


def log_has_one_writer_per_epoch(S: Sym, cfg: ModelConfig, d: Design):
    if cfg.mode != KRAFT:
        return TRUE
    items = S.seq_items("q.log")
    parts = []
    for i, _ in items[1:]:
        for j, used_j in items[i + 1:]:
            ei, ej = S[f"q.log.{i}.epoch"], S[f"q.log.{j}.epoch"]
            parts.append(z3.Implies(used_j, And(ei <= ej, z3.Implies(
                ei == ej, S[f"q.log.{i}.writer"] == S[f"q.log.{j}.writer"]))))
    return And(*parts)


def active_controller_owns_controller_znode(S: Sym, cfg: ModelConfig, d: Design):
    """... or /controller names a KRaft controller and ZooKeeper's epoch is past the node's
    (the node was deposed by the KRaft controller's claim, MG-5)."""
    if cfg.mode != ZK:
        return TRUE
    owner = S["zk.controller"]
    parts = []
    for n in range(S.lay.n):
        deposed = And(Or(*(Eq(owner, c) for c in cfg.controllers())),
                      S["zk.epoch"] > S.node(n, "zk_epoch"))
        parts.append(z3.Implies(And(S.node(n, "alive"), S.node(n, "zk_active"),
                                    Not(S.node(n, "session_expired"))),
                                Or(Eq(owner, n), deposed)))
    return And(*parts)


def log_appended_by_current_leader(S: Sym, cfg: ModelConfig, d: Design):
    if cfg.mode != KRAFT:
        return TRUE
    return And(*(z3.Implies(used, And(S[f"q.uncommitted.{k}.writer"] == S["q.leader"],
                                      S[f"q.uncommitted.{k}.epoch"] == S["q.epoch"]))
                 for k, used in S.seq_items("q.uncommitted")))


def envelope_never_nested(S: Sym, cfg: ModelConfig, d: Design):
    return And(*(z3.Implies(And(S[f"net.{j}.present"], Eq(S[f"net.{j}.kind"], ENVELOPE_REQUEST)),
                            S[f"net.{j}.b"] <= 1) for j in range(S.lay.cap.network)))


def forward_ends_by_deadline(S: Sym, cfg: ModelConfig, d: Design):
    """In flight: now - sent <= the timeout (the network timeout, F-16); queued: now -
    created <= the timeout (the retry timeout, F-17, F-19), or <= twice it less one for a
    re-queued item (in flight until now, it is due and leaves before the clock moves)."""
    ft = cfg.forward_timeout
    parts = []
    for n in range(S.lay.n):
        alive = S.node(n, "alive")
        p = f"n{n}.ch.inflight"
        parts.append(z3.Implies(And(alive, S[p + ".present"], Eq(S[p + ".kind"], FORWARD)),
                                S["now"] - S[p + ".sent"] <= ft))
        for k, used in S.seq_items(f"n{n}.ch.queue"):
            p = f"n{n}.ch.queue.{k}"
            limit = If(S[p + ".requeued"], 2 * ft - 1, ft)
            parts.append(z3.Implies(And(alive, used, Eq(S[p + ".kind"], FORWARD)),
                                    S["now"] - S[p + ".created"] <= limit))
    return And(*parts)


def forwarder_forgets_not_controller(S: Sym, cfg: ModelConfig, d: Design):
    parts = []
    for n in range(S.lay.n):
        cached = S.node(n, "ch.cached")
        for j in range(S.lay.n):
            parts.append(z3.Implies(And(S.node(n, "alive"), Eq(cached, j)),
                                    Not(S.node(n, f"ncf.{j}"))))
    return And(*parts)


def registered_only_if_log_agrees(S: Sym, cfg: ModelConfig, d: Design):
    if cfg.mode != KRAFT:
        return TRUE
    parts = []
    for c in cfg.controllers():
        found, inc = _latest_registration(S, c, S.node(c, "replayed"))
        parts.append(z3.Implies(And(S.node(c, "alive"), S.node(c, "registered_in_log")),
                                And(found, inc == S.node(c, "incarnation"))))
    return And(*parts)


def registered_if_log_agrees(S: Sym, cfg: ModelConfig, d: Design):
    if not cfg.registration or cfg.mode != KRAFT:
        return TRUE
    parts = []
    for c in cfg.controllers():
        found, inc = _latest_registration(S, c, S.node(c, "replayed"))
        parts.append(z3.Implies(And(S.node(c, "alive"), Not(S.node(c, "registered_in_log"))),
                                Not(And(found, inc == S.node(c, "incarnation")))))
    return And(*parts)


def registration_names_incarnation_it_ran(S: Sym, cfg: ModelConfig, d: Design):
    if cfg.mode != KRAFT:
        return TRUE
    parts = []
    for prefix in ("q.log", "q.uncommitted"):
        for k, used in S.seq_items(prefix):
            p = f"{prefix}.{k}."
            a, b = S[p + "a"], S[p + "b"]
            parts.append(z3.Implies(And(used, Eq(S[p + "kind"], REGISTER_CONTROLLER)),
                                    And(b >= 0, Or(*(And(Eq(a, j), b <= S.node(j, "incarnation"))
                                                     for j in range(S.lay.n))))))
    return And(*parts)


def registration_carries_current_incarnation(S: Sym, cfg: ModelConfig, d: Design):
    if not cfg.registration or cfg.mode != KRAFT:
        return TRUE
    leader = S["q.leader"]
    parts = []
    for c in cfg.controllers():
        found, inc = _latest_registration(S, c)
        parts.append(z3.Implies(S.node(c, "alive"), And(found, inc == S.node(c, "incarnation"))))
    return z3.Implies(And(Not(Eq(leader, NO_NODE)), S.node(leader, "alive")), And(*parts))


def registration_traffic(S: Sym, c: int) -> list:
    """(condition, the peer at the other end) for each place a registration RPC of controller
    ``c``'s current incarnation can be: a request in the network, the reply the leader holds
    with the record it appended, a response in the network."""
    inc = S.node(c, "incarnation")
    on = []
    for j in range(S.lay.cap.network):
        m = S.msg(j)
        here = S[f"net.{j}.present"]
        on.append((And(here, m["kind"] == REGISTRATION_REQUEST, m["src"] == c, m["a"] == inc),
                   m["dst"]))
        on.append((And(here, m["kind"] == REGISTRATION_RESPONSE, m["dst"] == c, m["b"] == inc),
                   m["src"]))
    for k, used in S.seq_items("q.uncommitted"):
        p = f"q.uncommitted.{k}."
        on.append((And(used, S[p + "has_reply"], S[p + "reply_how"] == REPLY_REGISTRATION,
                       S[p + "reply_to"] == c, S[p + "reply_key"] == inc), S["q.leader"]))
    return on


def one_registration_request_outstanding(S: Sym, cfg: ModelConfig, d: Design):
    if not cfg.registration or cfg.mode != KRAFT:
        return TRUE
    return And(*(z3.Implies(S.node(c, "alive"),
                            z3.AtMost(*(cond for cond, _ in registration_traffic(S, c)), 1))
                 for c in cfg.controllers()))


def _applied(S: Sym, cfg: ModelConfig):
    """(in use, client index, via envelope, privileged, sender had CLUSTER_ACTION)."""
    if cfg.mode == ZK:
        return [(used, S[f"zk.writes.{k}.req"], S[f"zk.writes.{k}.via_envelope"],
                 S[f"zk.writes.{k}.privileged"], S[f"zk.writes.{k}.sender_cluster_action"])
                for k, used in S.seq_items("zk.writes")]
    return [(And(used, Eq(S[f"q.log.{k}.kind"], MUTATION_RECORD)), S[f"q.log.{k}.a"],
             S[f"q.log.{k}.via_envelope"], TRUE, S[f"q.log.{k}.sender_cluster_action"])
            for k, used in S.seq_items("q.log")]


def mutations_authorized_as_client(S: Sym, cfg: ModelConfig, d: Design):
    ok = [c for c, spec in enumerate(cfg.clients)
          if spec.api in kafka.API_OPERATION
          and cfg.allows(spec.principal, kafka.API_OPERATION[spec.api])]
    return And(*(z3.Implies(used, Or(*(Eq(req, c) for c in ok)))
                 for used, req, _, _, _ in _applied(S, cfg)))


def envelopes_only_from_trusted_senders(S: Sym, cfg: ModelConfig, d: Design):
    return And(*(z3.Implies(And(used, via),
                            And(sender_ok, privileged if cfg.mode == ZK else TRUE))
                 for used, _, via, privileged, sender_ok in _applied(S, cfg)))


CLAUSES = {f.__name__.replace("_", "-"): f for f in (
    zk_writes_carry_current_epoch, active_controller_won_its_epoch, zk_writes_by_epoch_holder,
    kraft_controller_sole_zk_writer, active_controller_owns_controller_znode,
    log_has_one_writer_per_epoch, log_appended_by_current_leader, envelope_never_nested,
    forward_ends_by_deadline, forwarder_forgets_not_controller, registered_only_if_log_agrees,
    registered_if_log_agrees, registration_names_incarnation_it_ran,
    one_registration_request_outstanding, registration_carries_current_incarnation,
    mutations_authorized_as_client, envelopes_only_from_trusted_senders)}

SUPPORTED = ("P1", "P2", "P3", "P4")


def clauses_of(pid: str):
    """The registry's clauses of a property with their Z3 encodings: (Clause, fn)."""
    if pid not in SUPPORTED:
        raise KeyError(f"property {pid} has no Z3 encoding; the symbolic engine checks "
                       f"{', '.join(SUPPORTED)}")
    return [(c, CLAUSES[c.name]) for c in registry.BY_ID[pid].clauses]


def property_holds(enc, S: Sym, pid: str, quiescent=None):
    """The property in state S: its always clauses, and its quiescent clauses where S is
    quiescent (``quiescent``: a precomputed ``enc.quiescent(S)``)."""
    parts = []
    for clause, fn in clauses_of(pid):
        f = fn(S, enc.cfg, enc.design)
        if clause.kind == registry.QUIESCENT:
            q = enc.quiescent(S) if quiescent is None else quiescent
            f = z3.Implies(q, f)
        parts.append(f)
    return And(*parts)


def clause_terms(enc, S: Sym, pid: str, quiescent=None, only=None):
    """(clause name, holds term) per clause (or per clause named in ``only``)."""
    out = []
    for clause, fn in clauses_of(pid):
        if only is not None and clause.name not in only:
            continue
        f = fn(S, enc.cfg, enc.design)
        if clause.kind == registry.QUIESCENT:
            q = enc.quiescent(S) if quiescent is None else quiescent
            f = z3.Implies(q, f)
        out.append((clause.name, f))
    return out
