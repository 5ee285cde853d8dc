"""The explorer's whole-graph checks (properties/graphcheck.py): SETTLE (from every reachable
state a quiescent state is reachable) and DEADLOCK (no non-quiescent state without successors),
run on complete explorations only."""
import pytest

from kipcheck.cli import main
from model import next as model_next
from model.actions import time_pending
from model.config import VARIANTS
from model.configs import TINY
from model.step import Step
from properties.explore import explore
from properties.graphcheck import DEADLOCK, SETTLE
from properties.kafka_spec import KafkaSpec

VARIANT = "registration-without-deadline"


def _settled(spec, s):
    """Independent of KafkaSpec.settled: quiescent, or cut by the time bound."""
    succ = model_next.successors(s, spec.cfg, spec.design)
    if model_next.quiescent(s, spec.cfg, spec.design, succ):
        return True
    return s.now >= spec.cfg.max_time and time_pending(s, spec.cfg, spec.design)


def _can_settle(spec, start):
    """Forward search from ``start``: is a settled state reachable?"""
    seen, todo = {start}, [start]
    while todo:
        s = todo.pop()
        if _settled(spec, s):
            return True
        for _, t in model_next.successors(s, spec.cfg, spec.design):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return False


@pytest.mark.parametrize("name", TINY)
def test_correct_design_passes_both_checks(name):
    result = explore(KafkaSpec.named(name))
    assert result.complete and result.violation is None
    assert result.graph_checked
    assert result.graph_violation is None
    assert 0 < result.graph_bytes < 100 * result.generated


def test_variant_is_caught_by_settle_with_a_replaying_trace_and_a_real_loop():
    v = VARIANTS[VARIANT]
    assert v.breaks == (SETTLE,)
    spec = KafkaSpec.named(v.config, VARIANT)
    result = explore(spec)
    assert result.complete and result.violation is None        # no P1-P8/L1 violation first
    assert result.graph_checked and result.graph_violation == SETTLE
    assert result.graph_stuck > 0 and result.graph_loop
    states = model_next.replay(spec.cfg, spec.design, result.graph_trace)
    end = states[-1]
    assert end == result.graph_state
    # independently: no settled (let alone quiescent) state is reachable from the last state
    assert not _can_settle(spec, end)
    # ... and the trace is a shortest one: every earlier state can still settle
    for s in states[:-1]:
        assert _can_settle(spec, s)
    # the loop is a real cycle of the model: every step replays, twice round, back to its start
    steps = (tuple(result.graph_trace) + tuple(result.graph_stem) + tuple(result.graph_loop)
             + tuple(result.graph_loop))
    walk = model_next.replay(spec.cfg, spec.design, steps)
    n_loop = len(result.graph_loop)
    assert walk[-1] == walk[-1 - n_loop] == walk[-1 - 2 * n_loop]
    loop_states = walk[-1 - n_loop:]
    assert all(not model_next.quiescent(s, spec.cfg, spec.design,
                                        model_next.successors(s, spec.cfg, spec.design))
               for s in loop_states)
    # the correct design settles on the same configuration
    correct = explore(KafkaSpec.named(v.config))
    assert correct.graph_checked and correct.graph_violation is None


def test_kipcheck_explore_reports_settle_and_exits_1(tmp_path, capsys):
    v = VARIANTS[VARIANT]
    out_file = tmp_path / "t.json"
    rc = main(["explore", "--config", v.config, "--variant", VARIANT, "--quiet",
               "--trace-out", str(out_file)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "VIOLATED SETTLE" in out and "round this loop forever" in out
    assert out_file.exists()
    assert main(["replay", str(out_file)]) == 0        # it replays; no state property broken
    capsys.readouterr()
    # switched off: no verdict on it (the variant misses a witness instead: exit 4)
    assert main(["explore", "--config", v.config, "--variant", VARIANT, "--quiet",
                 "--no-graph-checks"]) != 1
    assert "SETTLE" not in capsys.readouterr().out


def test_check_job_counts_settle_as_catching_the_variant():
    from kipcheck.checkjob import _explore
    v = VARIANTS[VARIANT]
    r = _explore(v.config, VARIANT, False)
    assert r["violation"] == SETTLE and r["violation"] in v.breaks
    assert r["trace"] and r["complete"]


def test_incomplete_explorations_skip_the_checks():
    v = VARIANTS[VARIANT]
    spec = KafkaSpec.named(v.config, VARIANT)
    for result in (explore(spec, max_states=50), explore(spec, max_depth=3),
                   explore(spec, graph_checks=False)):
        assert not result.graph_checked and result.graph_violation is None
    # stopped by a property violation: incomplete too
    stopped = explore(KafkaSpec.named("zk-forward-zombie", "zombie-writes-unfenced"))
    assert stopped.violation and not stopped.complete and not stopped.graph_checked


class _Synthetic:
    """A hand-made graph: ``edges`` maps a state (an int) to its successors; ``settled`` is the
    set of settled states."""

    def __init__(self, edges, settled):
        self.name = "synthetic"
        self.edges = edges
        self.good = settled

    def initial_states(self):
        return [0]

    def successors(self, state):
        return [(Step("go", (t,)), t) for t in self.edges.get(state, ())]

    def step(self, state, st):
        return st.args[0] if st.args[0] in self.edges.get(state, ()) else None

    def violation(self, state, succ):
        return None

    def settled(self, state, succ):
        return state in self.good

    def witness_ids(self):
        return ()

    def witnesses_hit(self, prev, st, nxt, wanted):
        return []

    def action_names(self):
        return ("go",)

    def canonical(self, state):
        return state

    def fingerprint(self, state):
        return state * 2654435761 + 1


def test_synthetic_deadlock_and_loop():
    # 0 -> 1 -> 2 (2 has no successor and is not settled); 0 -> 3 (settled)
    r = explore(_Synthetic({0: (1, 3), 1: (2,)}, {3}))
    assert r.graph_violation == DEADLOCK and r.graph_state == 2
    assert [st.args[0] for st in r.graph_trace] == [1, 2]
    # 0 -> 1 -> 2 -> 4 -> 2 (a loop), 0 -> 3 (settled): 1 is the first stuck state
    r = explore(_Synthetic({0: (1, 3), 1: (2,), 2: (4,), 4: (2,)}, {3}))
    assert r.graph_violation == SETTLE and r.graph_state == 1 and r.graph_stuck == 3
    assert [st.args[0] for st in r.graph_stem] == [2]
    assert [st.args[0] for st in r.graph_loop] == [4, 2]
    # a self-loop is a loop too; a state that can leave the loop is not stuck
    r = explore(_Synthetic({0: (1, 3), 1: (1,)}, {3}))
    assert r.graph_violation == SETTLE and [st.args[0] for st in r.graph_loop] == [1]
    r = explore(_Synthetic({0: (1,), 1: (2,), 2: (1, 3)}, {3}))
    assert r.graph_checked and r.graph_violation is None


class _NoSuccessorsWhileForwarding(KafkaSpec):
    """The Kafka model, except that a state where B2 has a request queued has no successors
    (properties and settledness judged on the real model)."""

    def successors(self, state):
        return [] if state.nodes[1].channel.queue else super().successors(state)

    def violation(self, state, succ):
        return super().violation(state, super().successors(state))

    def settled(self, state, succ):
        return super().settled(state, super().successors(state))


def test_deadlock_on_a_monkeypatched_model():
    base = KafkaSpec.named("zk-forward-zombie")
    spec = _NoSuccessorsWhileForwarding(base.cfg, base.design)
    r = explore(spec)
    assert r.complete and r.graph_checked and r.graph_violation == DEADLOCK
    end = model_next.replay(spec.cfg, spec.design, r.graph_trace)[-1]
    assert end == r.graph_state and end.nodes[1].channel.queue
    real = model_next.successors(end, spec.cfg, spec.design)
    assert real and not model_next.quiescent(end, spec.cfg, spec.design, real)
    assert spec.successors(end) == []
