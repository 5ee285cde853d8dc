"""PROGRESS (properties/graphcheck.py, properties/progress.py): in a healthy cluster a client
still waiting within its deadline can get an answer other than REQUEST_TIMED_OUT, and a pending
registration RPC whose messages are not lost can be completed by its response, without any
further fault.  Checked on the explorer's graph by backward reachability; re-checked here by
an independent forward search."""
import json

import pytest

from kipcheck.cli import main
from model import kafka
from model import next as model_next
from model.config import VARIANTS
from properties import progress
from properties.explore import explore
from properties.graphcheck import PROGRESS, replay_check
from properties.kafka_spec import KafkaSpec
from properties.trace import Trace, as_pytest

VARIANT = "not-controller-unanswered"
# a registration response that leaves the request in flight on the channel (R-6 says the
# response completes the RPC): a design mutant of model/actions.py, by its stable key
STALE_INFLIGHT = ("controller_handles_registration_response: skip-field: replace(node, ...) "
                  "without channel=node.channel._replace(inflight=())")


def _met_without_fault(spec, start, goal):
    """Forward search from ``start`` along transitions that are not faults (nor timeouts, for
    a registration goal): is the goal met somewhere?  Written apart from the graph check."""
    strict = goal >= len(spec.cfg.clients)
    done = 2 << (2 * goal)
    seen, todo = {start}, [start]
    while todo:
        s = todo.pop()
        if progress.marks(s, spec.cfg, spec.design) & done:
            return True
        for st, t in model_next.successors(s, spec.cfg, spec.design):
            if model_next.is_fault(s, spec.cfg, st):
                continue
            if strict and st.action == "channel_times_out_request":
                continue
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return False


def _reachable(spec):
    """Every reachable state of ``spec`` with its successors, once each."""
    seen, todo = set(spec.initial_states()), list(spec.initial_states())
    while todo:
        s = todo.pop()
        succ = spec.successors(s)
        yield s, succ
        for _, t in succ:
            if t not in seen:
                seen.add(t)
                todo.append(t)


# The correct design passes PROGRESS on every tiny configuration: asserted by
# tests/test_tiny_configs.py::test_correct_design_holds_and_reaches_every_witness, from the
# same exploration that checks the safety properties (one search per configuration).


def test_edges_classify_every_transition_as_edge_does():
    """``edges`` (one lookup per action) gives ``edge``'s class for every transition of every
    reachable state: faults, timeouts, ordinary steps and a KRaft election, a fault only
    while the leader is alive."""
    seen_classes = set()
    for name in ("zk-forward-zombie", "kraft-forward-leader-change", "kraft-broker-failover"):
        spec = KafkaSpec.named(name)
        cfg = spec.cfg
        for s, succ in _reachable(spec):
            want = [progress.edge(s, cfg, st) for st, _ in succ]
            assert progress.edges(s, cfg, succ) == want, (name, s)
            seen_classes.update((st.action, c) for (st, _), c in zip(succ, want))
    # both classes of the conditional fault, and the other classes, were compared
    assert {("controller_becomes_leader", progress.FAULT),
            ("controller_becomes_leader", progress.ORDINARY),
            ("channel_times_out_request", progress.TIMEOUT)} <= seen_classes
    assert {c for _, c in seen_classes} == {progress.ORDINARY, progress.FAULT, progress.TIMEOUT}


def test_goals_are_owed_somewhere_on_the_tiny_configurations():
    """The check is not vacuous: on each tiny configuration with clients some state owes a
    client an answer, and with registration some state owes a pending RPC."""
    for name in ("zk-forward-zombie", "kraft-forward-leader-change", "kraft-registration"):
        spec = KafkaSpec.named(name)
        owed = 0
        for s, _ in _reachable(spec):
            owed |= spec.progress_marks(s) & 0x5555555555555555
        goals = len(spec.cfg.clients) + (len(spec.cfg.controllers()) if spec.cfg.registration
                                        else 0)
        assert owed == sum(1 << (2 * g) for g in range(goals)), name


def test_variant_breaks_progress_with_a_replaying_trace():
    v = VARIANTS[VARIANT]
    assert v.breaks == (PROGRESS,)
    spec = KafkaSpec.named(v.config, VARIANT)
    result = explore(spec)
    assert result.complete and result.violation is None         # no state property first
    assert result.graph_violation == PROGRESS and result.graph_goal == 0
    states = model_next.replay(spec.cfg, spec.design, result.graph_trace)
    end = states[-1]
    assert end == result.graph_state
    assert progress.marks(end, spec.cfg, spec.design) & 1        # A1 is owed an answer
    assert not _met_without_fault(spec, end, 0)
    # shortest: no earlier state owes the goal without being able to meet it
    for s in states[:-1]:
        assert not progress.marks(s, spec.cfg, spec.design) & 1 or _met_without_fault(spec, s, 0)
    # the example continuation ends with A1 timed out, and takes no fault
    walk = model_next.replay(spec.cfg, spec.design,
                             tuple(result.graph_trace) + tuple(result.graph_example))
    assert walk[-1].clients[0].responses[0].code == kafka.REQUEST_TIMED_OUT
    assert not any(model_next.is_fault(a, spec.cfg, st)
                   for a, st in zip(walk[len(states) - 1:], result.graph_example))
    # the re-check kipcheck replay runs
    assert replay_check(spec, states, PROGRESS, None).reproduced is True
    # the shipped design, from the same steps, answers A1 (NOT_CONTROLLER, re-queue, success)
    correct = KafkaSpec.named(v.config)
    good = model_next.replay(correct.cfg, correct.design, result.graph_trace)
    assert _met_without_fault(correct, good[-1], 0)
    assert replay_check(correct, good, PROGRESS, None).reproduced is False
    assert explore(correct).graph_violation is None


def test_kipcheck_explore_reports_progress_and_replay_rechecks_it(tmp_path, capsys):
    v = VARIANTS[VARIANT]
    out_file = tmp_path / "p.json"
    assert main(["explore", "--config", v.config, "--variant", VARIANT, "--quiet",
                 "--trace-out", str(out_file)]) == 1
    out = capsys.readouterr().out
    assert "VIOLATED PROGRESS healthy-cluster-answers" in out
    assert "for example, if nothing fails any more" in out and "REQUEST_TIMED_OUT" in out
    obj = json.loads(out_file.read_text())
    assert obj["graph_check"] == PROGRESS and obj["loop_start"] is None
    assert main(["replay", str(out_file)]) == 1
    out = capsys.readouterr().out
    assert "reproduced:" in out and "PROGRESS [healthy-cluster-answers]" in out
    # the steps replayed under the shipped design do not reproduce it: refused, exit 2
    good = dict(obj, variant="correct")
    good_file = tmp_path / "good.json"
    good_file.write_text(json.dumps(good))
    assert main(["replay", str(good_file)]) == 2
    assert "does not violate the recorded PROGRESS" in capsys.readouterr().err
    # exported as a pytest test, it replays
    ns: dict = {}
    exec(compile(as_pytest(Trace.load(out_file)), "<export>", "exec"), ns)
    [test] = [f for name, f in ns.items() if name.startswith("test_")]
    test()


def test_a_registration_rpc_left_in_flight_breaks_progress(generation):
    from properties import mutate
    [mutant] = [m for m in generation.mutants if m.key == STALE_INFLIGHT]
    spec = KafkaSpec.named("kraft-registration")
    with mutate.applied(generation, mutant):
        result = explore(spec)
        assert result.complete and result.violation is None
        assert result.graph_violation == PROGRESS
        goal = result.graph_goal
        assert goal >= len(spec.cfg.clients)            # a controller's registration RPC
        states = model_next.replay(spec.cfg, spec.design, result.graph_trace)
        assert not _met_without_fault(spec, states[-1], goal)
        assert replay_check(spec, states, PROGRESS, None).reproduced is True
    # without the mutant the same search passes (tests/test_tiny_configs.py)


@pytest.fixture(scope="module")
def generation():
    from properties import mutate
    return mutate.generate()
