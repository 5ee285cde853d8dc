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

# clause -> the design variant only it catches
ONLY_CATCHER = {
    "active-controller-won-its-epoch": "election-keeps-epoch",
    "zk-writes-by-epoch-holder": "brokers-write-zk-under-controller-epoch",
    "registered-if-log-agrees": "registration-never-confirmed",
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
    # the correct design passes the same clause along the same steps where they replay
    by_name = {c.name: c for p in registry.PROPERTIES for c in p.clauses}
    correct = KafkaSpec.named(v.config).design
    correct_end = model_next.replay(spec.cfg, correct, result.trace)[-1]
    assert by_name[clause].holds(correct_end, spec.cfg, correct)


@pytest.mark.parametrize("clause,variant", sorted(ONLY_CATCHER.items()))
def test_no_other_clause_catches_the_variant(clause, variant, monkeypatch):
    v = VARIANTS[variant]
    _without(monkeypatch, clause)
    result = explore(KafkaSpec.named(v.config, variant))
    assert result.complete
    assert result.violation is None, (result.violation, result.trace)
    assert result.graph_violation is None


def test_every_only_catcher_is_a_registry_clause_with_a_z3_encoding():
    from properties.symbolic.props import CLAUSES
    names = {c.name for p in registry.PROPERTIES for c in p.clauses}
    assert set(ONLY_CATCHER) <= names and set(ONLY_CATCHER) <= set(CLAUSES)


@pytest.mark.slow
@pytest.mark.parametrize("name", SMALL)
def test_correct_design_passes_every_clause_on_the_small_configurations(name):
    result = explore(KafkaSpec.named(name))
    assert result.complete and result.violation is None, result.trace
