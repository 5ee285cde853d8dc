"""Every design variant is caught by the explorer with the property DESIGN section 5 names,
and its printed trace replays through step() to the same violation (done-when item 3)."""
import json
from dataclasses import replace

import pytest

from kipcheck.cli import main
from model import next as model_next
from model.config import VARIANTS
from model.configs import KRAFT_FORWARD_LEADER_CHANGE
from properties import registry
from properties.explore import explore
from properties.kafka_spec import KafkaSpec
from properties.trace import Trace, replay

SEEDED = [v for v in VARIANTS.values() if v.kind == "seeded"]


def test_seeded_variants_cover_every_property():
    assert len(SEEDED) == 38
    broken = {p for v in SEEDED for p in v.breaks}
    assert {"P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10", "P11", "P12", "L1",
            "SETTLE", "PROGRESS"} <= broken


# variants that break a whole-graph check (SETTLE, DEADLOCK) are tested in tests/test_settle.py
@pytest.mark.parametrize("name", [n for n, v in VARIANTS.items() if v.must_be_caught
                                  and set(v.breaks) <= set(registry.PROPERTY_IDS)])
def test_variant_is_caught_and_trace_replays(name, tmp_path):
    v = VARIANTS[name]
    spec = KafkaSpec.named(v.config, name)
    result = explore(spec)
    assert result.violation in v.breaks
    # the trace replays through step() to the same violation
    states = model_next.replay(spec.cfg, spec.design, result.trace)
    end = states[-1]
    found = registry.first_violation(end, spec.cfg, spec.design, spec.successors(end))
    assert found is not None and found[0] == result.violation
    # no shorter prefix violates anything (BFS gives a shortest counterexample)
    for prefix in states[:-1]:
        assert registry.first_violation(prefix, spec.cfg, spec.design,
                                        spec.successors(prefix)) is None
    # the JSON trace round-trips and `kipcheck replay` reproduces it
    trace = Trace(v.config, name, tuple(result.trace), result.violation, found[1])
    path = tmp_path / "t.json"
    trace.dump(path)
    again = replay(Trace.load(path))
    assert again.reproduced and again.violation == found
    assert main(["replay", str(path)]) == 1


def test_l1_breaks_without_a_deadline():
    """L1 is falsifiable: without the retry timeout a forwarded request is not answered by its
    deadline (the same state also breaks P2's deadline clause)."""
    spec = KafkaSpec.named("kraft-forward-leader-change", "forward-without-deadline")
    end = explore(spec).violating_state
    clause = dict((c.name, c) for p in registry.PROPERTIES for c in p.clauses)
    assert not clause["forwarded-request-answered-by-deadline"].holds(end, spec.cfg, spec.design)
    correct = KafkaSpec.named("kraft-forward-leader-change")
    assert explore(correct).violation is None


def test_l1_quiescent_clause_breaks_when_a_request_is_dropped():
    """The quiescent L1 clause fails when a request is silently lost: a broker whose
    forwarding item vanished (simulated by editing a reachable state) leaves its client
    waiting in a quiescent state."""
    cfg = replace(KRAFT_FORWARD_LEADER_CHANGE, name="l1-probe")
    spec = KafkaSpec(cfg)
    s = spec.initial_states()[0]
    from model.step import Step
    s = spec.step(s, Step("client_sends_request", (0,)))
    node = s.nodes[0]
    lost = s._replace(nodes=(node._replace(channel=node.channel._replace(queue=())),)
                      + s.nodes[1:])
    # drain every progress step: nothing can answer the client any more
    succ = spec.successors(lost)
    while any(not model_next.is_fault(lost, cfg, st) for st, _ in succ):
        lost = next(t for st, t in succ if not model_next.is_fault(lost, cfg, st))
        succ = spec.successors(lost)
    assert model_next.quiescent(lost, cfg, spec.design, succ)
    assert registry.first_violation(lost, cfg, spec.design, succ)[0] == "L1"


def test_registration_finding_reproduces_kafka_race():
    """Kafka's ControllerRegistrationManager (3.7.0-3.8.0, trunk): the old incarnation's record
    lands while the new RPC is pending; the check is dropped and never redone."""
    spec = KafkaSpec.named("kraft-registration", "registration-no-recheck-after-success")
    result = explore(spec)
    assert result.violation == "P3"
    actions = [st.action for st in result.trace]
    assert "node_crashes" in actions and "node_restarts" in actions
    assert actions[-1] == "controller_handles_registration_response"
    regs = [(r.controller_id, r.incarnation_id) for r in result.violating_state.quorum.log
            if r.kind == 1]
    assert regs[-1] == (1, 0) and (1, 1) in regs       # C2's old incarnation won last
    assert json.loads(json.dumps(Trace(spec.cfg.name, spec.variant, tuple(result.trace),
                                       "P3").to_json()))["steps"]


def test_a_broker_refused_although_it_supports_the_finalized_levels_is_caught():
    """P12's converse clause: the refusal itself is the violation (an always clause), found
    after the two steps that send it, whatever the fault budget; the correct design passes."""
    v = VARIANTS["registration-raises-zero-min-version"]
    spec = KafkaSpec.named(v.config, v.name)
    result = explore(spec)
    assert spec.clause_violated(result.violating_state) == ("P12", "supported-brokers-not-refused")
    assert [st.action for st in result.trace] == ["broker_sends_registration",
                                                  "controller_handles_broker_registration"]
    assert explore(KafkaSpec.named(v.config)).violation is None
