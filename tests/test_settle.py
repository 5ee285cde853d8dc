"""The explorer's whole-graph checks (properties/graphcheck.py): SETTLE (from every reachable
state a settled state is reachable) and DEADLOCK (no state without a progress step, not cut by
the time bound, with work outstanding), run on complete explorations only; their traces and
`kipcheck replay`'s re-check of them."""
import json

import pytest

from kipcheck.cli import main
from model import next as model_next
from model.actions import time_pending
from model.config import VARIANTS
from model.step import Step
from properties import registry
from properties.explore import explore
from properties.graphcheck import DEADLOCK, SETTLE
from properties.kafka_spec import KafkaSpec
from properties.outstanding import PIECES, outstanding
from properties.trace import Trace, TraceError, as_pytest, replay

VARIANT = "registration-without-deadline"
STUCK = "registration-pending-stuck"        # KAFKA-20247: DEADLOCK (and P3)


def _no_progress(spec, s):
    return all(model_next.is_fault(s, spec.cfg, st)
               for st, _ in model_next.successors(s, spec.cfg, spec.design))


def _cut(spec, s):
    return s.now >= spec.cfg.max_time and time_pending(s, spec.cfg, spec.design)


def _settled(spec, s):
    """Independent of KafkaSpec.graph_status: cut by the time bound, or no progress step and
    nothing outstanding."""
    if _cut(spec, s):
        return True
    return _no_progress(spec, s) and not outstanding(s, spec.cfg, spec.design)


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


# The correct design passes SETTLE and DEADLOCK on every tiny configuration: asserted by
# tests/test_tiny_configs.py::test_correct_design_holds_and_reaches_every_witness, from the
# same exploration that checks the safety properties (one search per configuration).


def test_variant_is_caught_by_settle_with_a_replaying_trace_and_a_real_loop():
    v = VARIANTS[VARIANT]
    assert v.breaks == (SETTLE,)
    spec = KafkaSpec.named(v.config, VARIANT)
    result = explore(spec)
    assert result.complete and result.violation is None        # no P1-P9/L1 violation first
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
    obj = json.loads(out_file.read_text())
    assert obj["graph_check"] == SETTLE and obj["property"] is None
    assert 0 <= obj["loop_start"] < len(obj["steps"])
    # replay re-checks it: the loop comes back, and nothing settled is reachable from it
    assert main(["replay", str(out_file)]) == 1
    out = capsys.readouterr().out
    assert "reproduced:" in out and "SETTLE [cluster-can-settle]" in out
    assert f"the loop (steps {obj['loop_start'] + 1}.." in out
    # a trace written before the graph-check fields existed loads and replays as before
    old = {k: val for k, val in obj.items() if k not in ("graph_check", "loop_start")}
    old_file = tmp_path / "old.json"
    old_file.write_text(json.dumps(old))
    assert Trace.load(old_file).graph_check is None
    assert main(["replay", str(old_file)]) == 0        # it replays; no state property broken
    capsys.readouterr()
    # a loop that does not come back is refused (exit 2), and so is a malformed loop start
    bad = dict(obj, loop_start=obj["loop_start"] - 1 if obj["loop_start"] else 1)
    bad_file = tmp_path / "bad.json"
    bad_file.write_text(json.dumps(bad))
    assert main(["replay", str(bad_file)]) == 2
    assert "does not violate the recorded SETTLE" in capsys.readouterr().err
    for broken in (dict(obj, loop_start=len(obj["steps"])), dict(obj, loop_start=None),
                   dict(obj, graph_check="LIVELOCK"), dict(obj, property="P3")):
        with pytest.raises(TraceError):
            Trace.from_json(broken)
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
    (properties judged on the real model): B2's channel item is then owed and nothing can
    deliver it."""

    def successors(self, state):
        return [] if state.nodes[1].channel.queue else super().successors(state)

    def violation(self, state, succ):
        return super().violation(state, super().successors(state))


def test_deadlock_on_a_monkeypatched_model():
    base = KafkaSpec.named("zk-forward-zombie")
    spec = _NoSuccessorsWhileForwarding(base.cfg, base.design)
    r = explore(spec)
    assert r.complete and r.graph_checked and r.graph_violation == DEADLOCK
    end = model_next.replay(spec.cfg, spec.design, r.graph_trace)[-1]
    assert end == r.graph_state and end.nodes[1].channel.queue
    assert "channel-item-pending" in outstanding(end, spec.cfg, spec.design)
    real = model_next.successors(end, spec.cfg, spec.design)
    assert real and not model_next.quiescent(end, spec.cfg, spec.design, real)
    assert spec.successors(end) == []


# ---- DEADLOCK on the Kafka model: registration-pending-stuck (KAFKA-20247) ------------------


def test_outstanding_pieces_quote_their_rule():
    for piece in PIECES:
        assert any(k in piece.doc for k in ("KIP-590", "KIP-919", "F-", "R-", "Z-", "BL-")), \
            piece.name


def test_pending_stuck_is_caught_by_p3_and_by_deadlock_with_a_replaying_trace(tmp_path, capsys):
    v = VARIANTS[STUCK]
    assert set(v.breaks) == {"P3", DEADLOCK}
    spec = KafkaSpec.named(v.config, STUCK)
    # the explorer stops at P3 first (a property outranks the graph checks) ...
    first = explore(spec)
    assert first.violation == "P3" and not first.graph_checked
    states = model_next.replay(spec.cfg, spec.design, first.trace)
    assert registry.first_violation(states[-1], spec.cfg, spec.design,
                                    spec.successors(states[-1]))[0] == "P3"
    # ... and, exploring past it, the whole graph has a deadlock
    r = explore(spec, stop_at_violation=False)
    assert r.complete and r.violation == "P3"
    assert r.graph_checked and r.graph_violation == DEADLOCK and r.graph_loop == ()
    states = model_next.replay(spec.cfg, spec.design, r.graph_trace)
    end = states[-1]
    assert end == r.graph_state
    # independently: no progress step, not cut by the bound, and the manager still waits
    assert _no_progress(spec, end) and not _cut(spec, end)
    owed = outstanding(end, spec.cfg, spec.design)
    assert "registration-rpc-pending" in owed
    c = next(i for i, n in enumerate(end.nodes) if n.pending_rpc)
    assert end.nodes[c].alive and not end.nodes[c].channel.queue \
        and not end.nodes[c].channel.inflight
    # the shortest: no earlier state is deadlocked
    assert not any(spec.deadlocked(s, spec.successors(s)) for s in states[:-1])
    # the JSON trace names DEADLOCK, and `kipcheck replay` re-checks it (exit 1)
    path = tmp_path / "dl.json"
    Trace(v.config, STUCK, tuple(r.graph_trace), graph_check=DEADLOCK).dump(path)
    trace = Trace.load(path)
    assert trace.graph_check == DEADLOCK and trace.loop_start is None
    again = replay(trace)
    assert again.reproduced and again.graph.reproduced and again.violation[0] == "P3"
    capsys.readouterr()
    assert main(["replay", str(path)]) == 1
    out = capsys.readouterr().out
    assert "reproduced:" in out and "DEADLOCK [no-deadlock]" in out
    assert "registration-rpc-pending" in out and "also violates P3" in out
    # a prefix that stops before the deadlock is refused
    Trace(v.config, STUCK, tuple(r.graph_trace[:-1]), graph_check=DEADLOCK).dump(path)
    assert main(["replay", str(path)]) == 2
    # the correct design on the same configuration: no deadlock
    correct = explore(KafkaSpec.named(v.config))
    assert correct.graph_checked and correct.graph_violation is None


def test_pytest_export_of_graph_traces_replays(tmp_path, capsys):
    spec = KafkaSpec.named(VARIANTS[STUCK].config, STUCK)
    r = explore(spec, stop_at_violation=False)
    dl = Trace(spec.cfg.name, STUCK, tuple(r.graph_trace), graph_check=DEADLOCK)
    v = VARIANTS[VARIANT]
    s = explore(KafkaSpec.named(v.config, VARIANT))
    into = tuple(s.graph_trace) + tuple(s.graph_stem)
    st = Trace(v.config, VARIANT, into + tuple(s.graph_loop), graph_check=SETTLE,
               loop_start=len(into))
    for trace in (dl, st):
        ns: dict = {}
        exec(compile(as_pytest(trace), "<export>", "exec"), ns)
        tests = [f for name, f in ns.items() if name.startswith("test_")]
        assert len(tests) == 1
        tests[0]()
    path = tmp_path / "st.json"
    st.dump(path)
    capsys.readouterr()
    assert main(["replay", str(path), "--pytest"]) == 1
    assert "graph_check='SETTLE'" in capsys.readouterr().out


def test_spark_says_the_graph_checks_were_not_run(monkeypatch, capsys):
    import kipcheck.campaign.spark as spark
    name = "zk-envelope-security"

    def fake(spec, **_):
        return explore(spec, graph_checks=False)
    monkeypatch.setattr(spark, "explore_spark", fake)
    assert main(["explore", "--config", name, "--spark", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "whole-graph checks not run under --spark" in out and "SETTLE and DEADLOCK hold" \
        not in out
