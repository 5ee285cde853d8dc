"""The Hypothesis stateful engine (properties/stateful.py): the correct design passes, the
seeded variants are found with short, replayable, locally minimal traces, a seed reproduces a
run, and the adapter holds no protocol logic."""
import ast
from pathlib import Path

import pytest
from hypothesis.stateful import RuleBasedStateMachine

from kipcheck.cli import main
from model.config import VARIANTS
from model.configs import TINY
from model.next import FAULT_ACTIONS
from properties import stateful
from properties.explore import explore
from properties.kafka_spec import KafkaSpec
from properties.stateful import PropertyViolation, machine_for, minimise, run_stateful
from properties.trace import Trace, replay

SEED = 20261121

# variants the default test run checks; every one is found in well under 3 s on this machine
FAST_VARIANTS = ["zombie-writes-unfenced", "brokers-write-zk", "envelope-any-listener",
                 "metadata-all-listeners", "ack-before-commit", "leak-envelope-error"]


def _replays_to(spec, steps, prop):
    """The first state along ``steps`` that violates anything violates ``prop``, at the end."""
    state = spec.initial_states()[0]
    for st in steps:
        if spec.violation(state, spec.successors(state)) is not None:
            return False
        try:
            state = spec.step(state, st)
        except ValueError:
            return False
        if state is None:
            return False
    return spec.violation(state, spec.successors(state)) == prop


@pytest.mark.parametrize("config", TINY)
def test_correct_design_passes_a_small_budget(config):
    r = run_stateful(config, seed=SEED, max_examples=30, stateful_step_count=40)
    assert not r.found and r.trace is None and r.property is None
    assert r.steps_run > 0 and r.distinct > 1
    assert r.examples >= 30
    spec = KafkaSpec.named(config)
    assert set(r.witnesses_reached) | set(r.witnesses_missing) == set(spec.witness_ids())
    assert r.witnesses_reached, "a correct run reaches at least one witness"


@pytest.mark.parametrize("name", FAST_VARIANTS)
def test_variant_is_found_with_a_short_replayable_trace(name, tmp_path):
    v = VARIANTS[name]
    r = run_stateful(v.config, name, seed=SEED)
    assert r.found and r.property in v.breaks
    assert r.trace.engine == "stateful" and r.trace.property == r.property
    assert r.trace.config == v.config and r.trace.variant == name
    shortest = explore(KafkaSpec.named(v.config, name)).trace
    assert len(r.trace.steps) <= len(shortest) + 2
    assert len(r.trace.steps) <= r.shrunk_length
    # replays (also through the JSON file and `kipcheck replay`) to the same violation
    again = replay(r.trace)
    assert again.reproduced and again.violation == (r.property, r.clause)
    path = tmp_path / "t.json"
    r.trace.dump(path)
    assert replay(Trace.load(path)).reproduced
    assert main(["replay", str(path)]) == 1
    # locally minimal: no single step can be deleted
    spec = KafkaSpec.named(v.config, name)
    steps = list(r.trace.steps)
    for i in range(len(steps)):
        assert not _replays_to(spec, steps[:i] + steps[i + 1:], r.property)


def test_same_seed_same_result():
    v = VARIANTS["zombie-writes-unfenced"]
    a = run_stateful(v.config, v.name, seed=SEED)
    b = run_stateful(v.config, v.name, seed=SEED)
    assert a.found and b.found
    assert a.trace.steps == b.trace.steps and a.shrunk_length == b.shrunk_length
    assert (a.steps_run, a.examples, a.distinct) == (b.steps_run, b.examples, b.distinct)
    c1 = run_stateful("zk-envelope-security", seed=3, max_examples=20, stateful_step_count=30)
    c2 = run_stateful("zk-envelope-security", seed=3, max_examples=20, stateful_step_count=30)
    assert (c1.steps_run, c1.distinct, c1.witnesses_reached) == \
           (c2.steps_run, c2.distinct, c2.witnesses_reached)


_CROSS_PROCESS = """
{imports}
from properties.stateful import run_stateful
for seed in (1, 3):  # without the fix these two runs differ between the two processes
    r = run_stateful("kraft-registration", seed=seed, max_examples=60, stateful_step_count=40)
    print(r.examples, r.steps_run, r.distinct, r.witnesses_reached)
"""


def test_same_seed_same_result_in_another_process():
    """Hypothesis mines integer constants from the local modules a process has imported; the
    engine switches that off, so a seed gives the same run whatever else was imported."""
    import os
    import subprocess
    import sys
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    outs = []
    for imports in ("", "import kipcheck.cli, impl, properties.explore, bench"):
        proc = subprocess.run([sys.executable, "-c", _CROSS_PROCESS.format(imports=imports)],
                              cwd=root, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    assert outs[0] == outs[1]


def test_swarm_fault_actions_restrict_the_faults_taken():
    v = VARIANTS["zombie-writes-unfenced"]
    shortest = explore(KafkaSpec.named(v.config, v.name)).trace
    assert any(st.action in FAULT_ACTIONS for st in shortest), "the zombie needs a fault"
    none = run_stateful(v.config, v.name, seed=SEED, max_examples=40, stateful_step_count=30,
                        fault_actions=frozenset())
    assert none.fault_actions == ()
    if none.found:
        assert not any(st.action in FAULT_ACTIONS for st in none.trace.steps)
    allowed = frozenset({"zk_expires_session"})
    some = run_stateful(v.config, v.name, seed=SEED, fault_actions=allowed)
    assert some.found and some.fault_actions == ("zk_expires_session",)
    assert {st.action for st in some.trace.steps} & FAULT_ACTIONS <= allowed
    with pytest.raises(ValueError, match="unknown fault actions"):
        run_stateful(v.config, v.name, seed=1, fault_actions={"meteor_strike"})


def test_machine_is_a_plain_rule_based_state_machine():
    spec = KafkaSpec.named("zk-envelope-security", "metadata-all-listeners")
    machine = machine_for(spec)
    assert issubclass(machine, RuleBasedStateMachine)
    assert issubclass(PropertyViolation, AssertionError)
    # usable directly as a unittest/pytest test case, like any Hypothesis state machine
    assert hasattr(machine, "TestCase")


def test_minimise_removes_steps_that_do_not_matter():
    v = VARIANTS["ack-before-commit"]
    spec = KafkaSpec.named(v.config, v.name)
    result = explore(spec)
    shortest = list(result.trace)
    # pad the shortest counterexample with a step that is enabled but does not matter
    init = spec.initial_states()[0]
    padded = next(([st] + shortest for st, _ in spec.successors(init)
                   if _replays_to(spec, [st] + shortest, result.violation)), None)
    assert padded is not None
    steps, clause = minimise(spec, padded, result.violation)
    assert _replays_to(spec, list(steps), result.violation)
    assert len(steps) < len(padded)
    for i in range(len(steps)):
        assert not _replays_to(spec, list(steps[:i] + steps[i + 1:]), result.violation)
    with pytest.raises(ValueError):
        minimise(spec, shortest[:-1], result.violation)


def test_minimise_removes_pairs_of_steps():
    """A crash and its restart can only go together: the pair pass removes them."""
    from model.step import Step
    v = VARIANTS["registration-pending-stuck"]
    spec = KafkaSpec.named(v.config, v.name)
    result = explore(spec)
    shortest = list(result.trace)
    node = shortest[0].args[0]
    padded = [Step("node_crashes", (node,)), Step("node_restarts", (node,))] + shortest
    assert _replays_to(spec, padded, result.violation)
    for i in range(len(padded)):      # no single step of the padded trace can go
        assert not _replays_to(spec, padded[:i] + padded[i + 1:], result.violation)
    steps, _ = minimise(spec, padded, result.violation)
    assert list(steps) == shortest


def test_adapter_holds_no_protocol_logic():
    """The machine only calls the spec: properties/stateful.py does not import the model's
    actions (nor its state layout)."""
    tree = ast.parse(Path(stateful.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    assert "model.actions" not in imported
    assert "model.state" not in imported
    assert not any(name.startswith(("model.actions", "model.state", "model.kafka"))
                   for name in imported)


SEEDED = [name for name, v in VARIANTS.items() if v.kind == "seeded"]


@pytest.mark.slow
@pytest.mark.parametrize("name", SEEDED)
def test_every_seeded_variant_is_found(name):
    """All 13 seeded variants (DESIGN section 5), 1000 examples x 60 steps.  (The kipcheck
    finding registration-no-recheck-after-success, 18 steps deep, is not found by plain random
    stateful testing in minutes; it is left to the explorer.)"""
    v = VARIANTS[name]
    r = run_stateful(v.config, name, seed=SEED, max_examples=1000)
    assert r.found and r.property in v.breaks
    assert r.seconds < 60
    assert len(r.trace.steps) <= len(explore(KafkaSpec.named(v.config, name)).trace) + 2
    assert replay(r.trace).reproduced
