"""The random-walk engine (properties/walk.py) on its own: a function of its seed, it finds a
seeded flaw with a minimised trace that replays to the violation, and on the correct design it
finds none."""
from __future__ import annotations

from model import next as model_next
from properties.kafka_spec import KafkaSpec
from properties.walk import WalkResult, random_walk

BUDGET = dict(rounds=2, walk_steps=4000, walk_depth=30, max_seconds=60.0, minimise_seconds=10.0)


def test_walk_is_a_function_of_its_seed():
    a = random_walk(KafkaSpec.named("zk-forward-zombie"), 7, **BUDGET)
    b = random_walk(KafkaSpec.named("zk-forward-zombie"), 7, **BUDGET)
    c = random_walk(KafkaSpec.named("zk-forward-zombie"), 8, **BUDGET)
    assert isinstance(a, WalkResult) and a.steps == 4000 and a.rounds == 2
    assert (a.seen, a.actions, a.swarms, a.witnesses) == (b.seen, b.actions, b.swarms, b.witnesses)
    assert a.seen != c.seen
    assert not a.failures and a.stop_reason == "budget"


def test_walk_finds_a_seeded_flaw_with_a_replaying_trace():
    spec = KafkaSpec.named("zk-forward-zombie", "zombie-writes-unfenced")
    r = random_walk(spec, 1, **{**BUDGET, "rounds": 8, "walk_steps": 20000})
    assert [f.property for f in r.failures] == ["P1"]
    f = r.failures[0]
    assert len(f.trace.steps) <= f.found_length
    end = model_next.replay(spec.cfg, spec.design, f.trace.steps)[-1]
    assert spec.violation(end, spec.successors(end)) == "P1"
