"""Each clause of P1 and P3 restated from the KIPs' intent catches a design change that no other
clause and no whole-graph check catches: the clause is not implied by the rest.

For each (clause, variant): on the variant's home configuration the explorer reports exactly
that clause, with a shortest trace that replays; with the clause taken out of the registry,
the same exploration completes with nothing violated (no property, no SETTLE or DEADLOCK).
The correct design passing every clause on the tiny configurations is tests/test_tiny_configs.py;
on the small ones, the slow tier below.
"""
from __future__ import annotations

import pytest

from model import next as model_next
from model.config import VARIANTS
from model.configs import SMALL
from properties import registry
from properties.explore import explore
from properties.kafka_spec import KafkaSpec
from tiers import slow_unless

# clause -> the design variant only it catches
ONLY_CATCHER = {
    "active-controller-won-its-epoch": "election-keeps-epoch",
    "zk-writes-by-epoch-holder": "brokers-write-zk-under-controller-epoch",
    "registered-if-log-agrees": "registration-never-confirmed",
    "registration-names-incarnation-it-ran": "registration-bumps-same-incarnation",
    "describe-lists-registered-endpoints": "describe-controllers-from-voters",
    "returned-endpoints-are-resolved": "registers-unresolved-endpoints",
    "zk-registration-carries-current-endpoints": "broker-info-not-cached",
    "controller-describe-requires-alter": "controller-describe-without-alter",
    "broker-epoch-changes-with-incarnation": "broker-reregistration-bumps-epoch",
    "kraft-controller-sole-zk-writer": "claims-before-brokers-ready",
    "created-topics-pass-policy": "internal-topics-bypass-policy",
    "auto-creation-refusal-reaches-client": "auto-create-errors-only-logged",
    "registered-brokers-support-finalized-features": "registration-ignores-omitted-features",
    "dead-broker-fenced-when-settled": "activation-leaves-sessions-untracked",
    "unknown-server-error-only-for-envelope-errors": "not-controller-wrapped-as-unknown",
}


def _without(monkeypatch, clause_name):
    """The registry with one clause taken out (what first_violation checks)."""
    monkeypatch.setattr(registry, "_ALWAYS", tuple(
        (pid, c) for pid, c in registry._ALWAYS if c.name != clause_name))
    monkeypatch.setattr(registry, "_QUIESCENT", tuple(
        (pid, c) for pid, c in registry._QUIESCENT if c.name != clause_name))


@pytest.mark.parametrize("clause,variant", sorted(ONLY_CATCHER.items()))
def test_clause_catches_its_variant_with_a_replaying_trace(clause, variant):
    v = VARIANTS[variant]
    spec = KafkaSpec.named(v.config, variant)
    result = explore(spec)
    assert result.violation in v.breaks
    end = model_next.replay(spec.cfg, spec.design, result.trace)[-1]
    assert registry.first_violation(end, spec.cfg, spec.design, spec.successors(end)) == (
        result.violation, clause)
    # the correct design passes the same clause along the same steps where they replay (a
    # variant that changes what a message carries, such as registers-unresolved-endpoints,
    # leaves the shipped design without that message from then on)
    # (a quiescent clause where the state is quiescent)
    by_name = {c.name: c for p in registry.PROPERTIES for c in p.clauses}
    correct = KafkaSpec.named(v.config).design

    def must_hold(state):
        if by_name[clause].kind == registry.ALWAYS:
            return True
        succ = model_next.successors(state, spec.cfg, correct)
        return model_next.quiescent(state, spec.cfg, correct, succ)

    s, checked, last = model_next.initial_state(spec.cfg), 0, None
    for st in (None,) + tuple(result.trace):
        s = s if st is None else model_next.step(s, spec.cfg, correct, st)
        if s is None:
            break
        last = s
        if must_hold(s):
            assert by_name[clause].holds(s, spec.cfg, correct)
            checked += 1
    if not checked and by_name[clause].kind == registry.QUIESCENT:
        # no state along the trace is quiescent under the correct design (it still has work
        # to do there, such as fencing a broker): every quiescent state it reaches from the
        # last one that replays satisfies the clause
        checked = _quiescent_ahead_hold(by_name[clause], spec.cfg, correct, last)
    assert checked


def _quiescent_ahead_hold(clause, cfg, design, start, limit=50_000) -> int:
    """The number of quiescent states reachable from ``start`` (breadth first, at most
    ``limit`` states), asserting the clause on each."""
    seen, frontier, found = {start}, [start], 0
    while frontier and len(seen) < limit:
        nxt = []
        for s in frontier:
            succ = model_next.successors(s, cfg, design)
            if model_next.quiescent(s, cfg, design, succ):
                assert clause.holds(s, cfg, design), s
                found += 1
            for _, t in succ:
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return found


@pytest.mark.parametrize("clause,variant", sorted(ONLY_CATCHER.items()))
def test_no_other_clause_catches_the_variant(clause, variant, monkeypatch):
    v = VARIANTS[variant]
    _without(monkeypatch, clause)
    result = explore(KafkaSpec.named(v.config, variant))
    assert result.complete
    assert result.violation is None, (result.violation, result.trace)
    assert result.graph_violation is None


def test_every_only_catcher_is_a_registry_clause_and_p1_to_p4_have_z3_encodings():
    from properties.symbolic.props import CLAUSES
    names = {c.name for p in registry.PROPERTIES for c in p.clauses}
    assert set(ONLY_CATCHER) <= names
    assert set(ONLY_CATCHER_MUTANT) <= names
    for p in registry.PROPERTIES:
        if p.id in ("P1", "P2", "P3", "P4"):
            assert {c.name for c in p.clauses} <= set(CLAUSES), p.id


@pytest.mark.slow
@pytest.mark.parametrize("name", SMALL)
def test_correct_design_passes_every_clause_on_the_small_configurations(name):
    result = explore(KafkaSpec.named(name))
    assert result.complete and result.violation is None, result.trace


# clause -> (home configuration, the key of a design mutant of model/actions.py that only it
# catches: `kipcheck mutate --only KEY`); a mutant stands in for a variant where the flaw is one
# changed condition of a step and a flag would only restate it
ONLY_CATCHER_MUTANT = {
    # ZooKeeper expires the controller's session (its /controller goes) but the broker never
    # hears of it: it goes on acting as the active controller without owning /controller
    "active-controller-owns-controller-znode": (
        "zk-forward-zombie", "zk_expires_session: skip-field: replace(node, ...) without "
        "session_expired=True"),
    # a new leader keeps the records its predecessor appended but never committed
    "log-appended-by-current-leader": (
        "kraft-forward-leader-change", "controller_becomes_leader: skip-field: replace(q, ...) "
        "without uncommitted=()"),
    "envelopes-applied-only-where-accepted": (
        "kraft-misconfigured", "_receive_envelope: negate-guard: not "
        "cfg.nodes[r].principal_serde => cfg.nodes[r].principal_serde"),
    # every listener counts as the privileged one: a client's own envelope on CLIENT is taken
    "client-envelopes-only-on-privileged-listener": (
        "zk-envelope-security", "_receive_envelope: drop-conjunct: privileged_listener is not "
        "None and cfg.listener_names[listener] == privileged_listener.name => "
        "privileged_listener is not None"),
    "registrations-from-cluster-action": (
        "kraft-misconfigured", "controller_handles_registration: negate-guard: not "
        "cfg.allows(cfg.principal_names[m.sender_principal], kafka.CLUSTER_ACTION) => "
        "cfg.allows(cfg.principal_names[m.sender_principal], kafka.CLUSTER_ACTION)"),
    "broker-describe-lists-itself": (
        "kraft-listeners", "_node_handles_describe_cluster: negate-guard: s.nodes[b].alive => "
        "not s.nodes[b].alive"),
    "acknowledged-mutation-is-durable": (
        "kraft-misconfigured", "_send_reply: negate-guard: env_err => not env_err"),
    # a network timeout that closes the registration connection leaves its request in flight:
    # the retry puts a second request of the same incarnation beside it
    "one-registration-request-outstanding": (
        "kraft-registration", "_on_connection: drop-disjunct: m.kind == REGISTRATION_REQUEST "
        "and m.src == n and (m.incarnation_id == item.incarnation_id) or (m.kind == "
        "REGISTRATION_RESPONSE and m.dst == n and (m.incarnation_id == item.incarnation_id)) => "
        "m.kind == REGISTRATION_RESPONSE and m.dst == n and (m.incarnation_id == "
        "item.incarnation_id)"),
    # the fence timer fires when the session timeout is reached, not once it has passed (BH-9)
    "broker-fenced-only-after-session-expired": (
        "kraft-broker-registration", "controller_fences_stale_broker: boundary: s.now <= "
        "contact + cfg.session_timeout => s.now < contact + cfg.session_timeout"),
}


@pytest.fixture(scope="module")
def generation():
    from properties import mutate
    return mutate.generate()


def _mutant(generation, key):
    found = [m for m in generation.mutants if m.key == key]
    assert found, f"no mutant {key!r}: has model/actions.py changed? (kipcheck mutate --list)"
    return found[0]


@pytest.mark.parametrize("clause", sorted(ONLY_CATCHER_MUTANT))
def test_clause_catches_its_mutant_with_a_replaying_trace(clause, generation):
    from properties import mutate
    config, key = ONLY_CATCHER_MUTANT[clause]
    spec = KafkaSpec.named(config)
    with mutate.applied(generation, _mutant(generation, key)):
        result = explore(spec)
        assert result.violation is not None, "the mutant is not caught"
        end = model_next.replay(spec.cfg, spec.design, result.trace)[-1]
        assert registry.first_violation(end, spec.cfg, spec.design, spec.successors(end))[1] \
            == clause
    # under the correct design the same steps (as far as they are enabled) keep the clause
    by_name = {c.name: c for p in registry.PROPERTIES for c in p.clauses}
    s = model_next.initial_state(spec.cfg)
    for st in result.trace:
        nxt = model_next.step(s, spec.cfg, spec.design, st)
        if nxt is None:
            break
        s = nxt
        assert by_name[clause].holds(s, spec.cfg, spec.design)


# the three whose whole search without their clause takes the longest (20-30 s each) run in
# the slow tier; the default tier still shows their clause catches their mutant (above)
NO_OTHER_MUTANT_SLOW = ("broker-fenced-only-after-session-expired",
                        "one-registration-request-outstanding",
                        "registrations-from-cluster-action")


@pytest.mark.parametrize("clause", slow_unless(
    sorted(ONLY_CATCHER_MUTANT), set(ONLY_CATCHER_MUTANT) - set(NO_OTHER_MUTANT_SLOW)))
def test_no_other_clause_catches_the_mutant(clause, generation, monkeypatch):
    from properties import mutate
    config, key = ONLY_CATCHER_MUTANT[clause]
    _without(monkeypatch, clause)
    with mutate.applied(generation, _mutant(generation, key)):
        result = explore(KafkaSpec.named(config))
    assert result.complete
    assert result.violation is None, (result.violation, result.trace)
    assert result.graph_violation is None


def test_a_clause_left_out_for_a_configuration_holds_there_by_its_first_test():
    """``first_violation`` leaves out the clauses whose ``applies`` is False for the
    configuration: sound because each such clause begins with ``if not applies(cfg): return
    True`` (so it holds in every state of it), checked here on the source, and so is every
    configuration's plan (the same clauses in registry order, less those)."""
    import ast
    import inspect
    import textwrap

    from model.configs import CONFIGS
    for p in registry.PROPERTIES:
        for c in p.clauses:
            if c.applies is None:
                continue
            fn = ast.parse(textwrap.dedent(inspect.getsource(c.holds))).body[0]
            body = fn.body[1:] if isinstance(fn.body[0], ast.Expr) else fn.body
            first = body[0]
            assert isinstance(first, ast.If) and not first.orelse, c.name
            assert ast.unparse(first.test) == f"not {c.applies.__name__}(cfg)", c.name
            assert len(first.body) == 1 and ast.unparse(first.body[0]) == "return True", c.name
    for cfg in CONFIGS.values():
        plan = registry._clause_plan(cfg)
        for clauses, kept in ((registry._ALWAYS, plan[2]), (registry._QUIESCENT, plan[3])):
            assert [(pid, c.name) for pid, c in clauses
                    if c.applies is None or c.applies(cfg)] == [(pid, n) for _, pid, n in kept]
            assert all(holds is c.holds for (holds, _, n), c in zip(
                kept, (c for _, c in clauses if c.applies is None or c.applies(cfg))))
