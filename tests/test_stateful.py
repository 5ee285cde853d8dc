"""The Hypothesis stateful engine (properties/stateful.py): every seeded variant is found with
the ci profile and a short, replayable, locally minimal trace; the correct design passes the ci
profile with every witness reached; a seed reproduces a run (in another process too); swarm and
novelty do what they say; coverage is measured against the explorer's reachable set; the
adapter holds no protocol logic."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis.stateful import RuleBasedStateMachine

from bench.twophase import TwoPhaseSpec
from kipcheck.cli import main
from model.config import VARIANTS
from model.configs import TINY
from properties import stateful
from properties.coverage import is_cached, measure, reachable, remember
from properties import registry
from properties.explore import explore
from properties.kafka_spec import KafkaSpec
from properties.stateful import (PROFILES, Profile, PropertyViolation, Swarm, fuzz, fuzz_spec,
                                 machine_for, minimise, round_seed)
from properties.trace import Trace, replay
from tiers import slow_unless

SEED = 20261121
# fuzzing checks state properties; a variant that only a whole-graph check (SETTLE, DEADLOCK)
# catches needs the whole graph, which only the explorer builds
SEEDED = [name for name, v in VARIANTS.items() if v.kind == "seeded"
          and set(v.breaks) & set(registry.PROPERTY_IDS)]
# The default tier (docs/ci.md): the correct design's ci run on one configuration of each mode,
# the cheapest; the others run in the slow tier.  So are the three variants that take the ci
# profile longest to find (each is found by the explorer in the default tier, and by fuzz's ci
# profile in `kipcheck check`)
CI_RUN_DEFAULT = ("zk-forward-zombie", "kraft-registration-leader-change")
FOUND_SLOW = ("registration-bumps-same-incarnation", "forward-without-deadline",
              "describe-lists-fenced-brokers")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("KIPCHECK_CACHE", str(tmp_path_factory.getbasetemp() / "kipcheck-cache"))


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


@pytest.mark.parametrize("name", slow_unless(SEEDED, set(SEEDED) - set(FOUND_SLOW)))
def test_variant_is_found_by_the_ci_profile(name, tmp_path):
    """Done-when 1: found with the ci profile (its time cap is 60 s, so "found" means "found
    within 60 s"), at most the explorer's shortest length + 2, replayable, locally minimal."""
    v = VARIANTS[name]
    r = fuzz(v.config, name, seed=SEED, profile="ci")
    assert r.found and r.property in v.breaks, (r.stop_reason, r.seconds)
    assert r.stop_reason == "violation" and r.search_seconds < PROFILES["ci"].time_budget
    assert r.trace.engine == "stateful" and r.trace.property == r.property
    assert r.trace.config == v.config and r.trace.variant == name
    shortest = explore(KafkaSpec.named(v.config, name)).trace
    assert len(r.trace.steps) <= len(shortest) + 2
    assert len(r.trace.steps) <= r.shrunk_length
    again = replay(r.trace)
    assert again.reproduced and again.violation == (r.property, r.clause)
    path = tmp_path / "t.json"
    r.trace.dump(path)
    assert replay(Trace.load(path)).reproduced
    assert main(["replay", str(path)]) == 1
    spec = KafkaSpec.named(v.config, name)
    steps = list(r.trace.steps)
    for i in range(len(steps)):
        assert not _replays_to(spec, steps[:i] + steps[i + 1:], r.property)
    assert r.failed_round is not None and r.failed_round.index < r.rounds
    assert f"--seed {SEED}" in r.replay_hint()


@pytest.mark.parametrize("config", slow_unless(TINY, CI_RUN_DEFAULT))
def test_correct_design_passes_the_ci_profile_with_every_witness(config):
    """Done-when 2."""
    reach = reachable(KafkaSpec.named(config))
    r = fuzz(config, seed=SEED, profile="ci", reach=reach)
    assert not r.found and r.trace is None and r.property is None
    assert r.stop_reason == "rounds"
    assert r.rounds == PROFILES["ci"].rounds
    assert r.witnesses_missing == (), r.witnesses_missing
    assert r.coverage.outside == 0
    assert r.coverage.states_share > 0.25 and r.coverage.actions_share == 1.0


def test_same_seed_same_trace_and_same_run():
    v = VARIANTS["envelope-any-listener"]        # one the ci profile finds within seconds
    a = fuzz(v.config, v.name, seed=SEED)
    b = fuzz(v.config, v.name, seed=SEED)
    assert a.found and b.found
    assert a.steps == b.steps and a.shrunk_length == b.shrunk_length
    assert a.failed_round == b.failed_round
    assert (a.steps_run, a.rule_calls, a.examples, a.distinct) == \
           (b.steps_run, b.rule_calls, b.examples, b.distinct)
    # and the seed matters: two seeds, one small profile, the correct design
    small = Profile("t", rounds=2, examples_per_round=5, steps_per_example=40, time_budget=600)
    c, d = (fuzz("kraft-registration", seed=seed, profile=small) for seed in (SEED, SEED + 1))
    assert (c.steps_run, c.rule_calls, c.distinct) != (d.steps_run, d.rule_calls, d.distinct)


_CROSS_PROCESS = """
{imports}
from properties.stateful import fuzz, Profile
p = Profile("t", rounds=6, examples_per_round=10, steps_per_example=60, time_budget=600)
for seed in (1, 3):
    r = fuzz("kraft-registration", seed=seed, profile=p)
    print(r.examples, r.steps_run, r.distinct, r.witnesses_reached)
r = fuzz("kraft-forward-leader-change", "reforward-forwarded", seed=5)
print(r.steps, r.failed_round)
"""


@pytest.mark.slow
def test_same_seed_same_result_in_another_process():
    """Hypothesis mines integer constants from the local modules a process has imported; the
    engine switches that off, so a seed gives the same run whatever else was imported."""
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    outs = []
    for imports in ("", "import kipcheck.cli, properties.explore, bench"):
        proc = subprocess.run([sys.executable, "-c", _CROSS_PROCESS.format(imports=imports)],
                              cwd=root, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    assert outs[0] == outs[1]


def test_round_seeds_and_swarms_are_pure_functions_of_the_seed():
    spec = KafkaSpec.named("zk-forward-zombie")
    assert round_seed(7, 3) == round_seed(7, 3) != round_seed(7, 4) != round_seed(8, 3)
    swarms = [Swarm.draw(spec, round_seed(SEED, r)) for r in range(200)]
    assert swarms == [Swarm.draw(spec, round_seed(SEED, r)) for r in range(200)]
    full = sum(1 for s in swarms if not s.disabled)
    assert 60 <= full <= 140                      # half of the rounds run everything
    assert any(s.disabled for s in swarms)
    init_actions = {st.action for st, _ in spec.successors(spec.initial_states()[0])}
    for s in swarms:
        assert set(s.disabled) <= set(spec.swarm_actions())
        assert init_actions - set(s.disabled), "a swarm never switches everything off"
        assert Swarm.parse(spec, s.describe()) == s
    with pytest.raises(ValueError, match="unknown actions"):
        Swarm.parse(spec, "off: meteor_strike")


@pytest.mark.parametrize("novelty", [False, True])
def test_a_swarm_is_respected(novelty):
    spec = KafkaSpec.named("zk-forward-zombie")
    off = ("zk_expires_session", "network_drops_message")
    r = fuzz_spec(spec, seed=1, round_seeds=[11, 12, 13], round_swarm=Swarm(off),
                  novelty=novelty)
    assert r.steps_run > 0
    assert not set(off) & set(r.action_counts)
    # and without the swarm the same actions are taken
    r2 = fuzz_spec(spec, seed=1, round_seeds=[11, 12, 13], swarm=False, novelty=novelty)
    assert set(off) <= set(r2.action_counts)


@pytest.mark.slow
def test_a_swarm_can_hide_a_bug_that_needs_a_fault():
    v = VARIANTS["zombie-writes-unfenced"]
    shortest = explore(KafkaSpec.named(v.config, v.name)).trace
    faults = KafkaSpec.named(v.config).fault_actions()
    needed = {st.action for st in shortest} & set(faults)
    assert needed, "the zombie needs a fault"
    spec = KafkaSpec.named(v.config, v.name)
    hidden = fuzz_spec(spec, seed=1, round_seeds=range(5), round_swarm=Swarm(tuple(faults)))
    assert not hidden.found
    shown = fuzz_spec(spec, seed=1, round_seeds=range(40), round_swarm=Swarm())
    assert shown.found and shown.property == "P1"


@pytest.mark.slow
def test_novelty_covers_more_than_plain_on_the_same_budget():
    spec = KafkaSpec.named("kraft-listeners")
    reach = reachable(spec)
    p = Profile("t", rounds=15, examples_per_round=10, steps_per_example=100, time_budget=600)
    plain = fuzz_spec(spec, seed=2, profile=p, swarm=False, novelty=False, reach=reach)
    guided = fuzz_spec(spec, seed=2, profile=p, swarm=False, novelty=True, reach=reach)
    assert plain.coverage.outside == 0 and guided.coverage.outside == 0
    assert guided.coverage.states_covered > 2 * plain.coverage.states_covered
    assert guided.rule_calls == plain.rule_calls


def test_coverage_is_measured_against_the_cached_reachable_set(tmp_path, monkeypatch):
    monkeypatch.setenv("KIPCHECK_CACHE", str(tmp_path))
    spec = KafkaSpec.named("zk-envelope-security")
    first = reachable(spec)
    assert not first.cached and len(first) == 1626
    again = reachable(spec)
    assert again.cached and list(again.fingerprints) == list(first.fingerprints)
    assert again.actions == first.actions
    cov = measure({first.fingerprints[0], first.fingerprints[5], 12345}, ["clock_ticks"], again)
    assert cov.states_covered == 2 and cov.outside == 1 and cov.states_visited == 3
    assert 0 < cov.actions_share < 1 and "clock_ticks" not in cov.actions_missing
    # a corrupt cache file is recomputed, not trusted
    for f in (tmp_path / "reachable").iterdir():
        f.write_bytes(b"garbage")
    assert not reachable(spec).cached


def test_an_exploration_already_made_is_remembered_as_the_reachable_set(tmp_path, monkeypatch):
    monkeypatch.setenv("KIPCHECK_CACHE", str(tmp_path))
    spec = KafkaSpec.named("zk-envelope-security")
    r = explore(spec, keep_fingerprints=True, workers=2)     # graph checks on, as make test-large
    kept = remember(spec, r)
    again = reachable(spec)
    assert again.cached and len(again) == 1626
    assert list(again.fingerprints) == list(kept.fingerprints)
    fresh = reachable(spec, cache=False)                   # explored again, uncached
    assert list(fresh.fingerprints) == list(kept.fingerprints)
    assert again.actions == kept.actions == fresh.actions
    # an unfinished or symmetric exploration is not the reachable set, nor another spec's
    symmetric = KafkaSpec.named("kraft-forward-leader-change")
    for s, partial in ((spec, explore(spec, keep_fingerprints=True, max_states=100)),
                       (symmetric, explore(symmetric, symmetry=True, keep_fingerprints=True)),
                       (spec, explore(spec))):
        with pytest.raises(ValueError, match="complete exploration"):
            remember(s, partial)
    with pytest.raises(ValueError, match="not the reachable set of kraft-forward"):
        remember(symmetric, r)


def test_a_complete_kipcheck_explore_caches_the_reachable_set(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KIPCHECK_CACHE", str(tmp_path))
    spec = KafkaSpec.named("zk-envelope-security")
    assert main(["explore", "--config", "zk-envelope-security", "--max-states", "100"]) == 3
    assert not is_cached(spec)                      # an unfinished run is not the set
    assert main(["explore", "--config", "zk-envelope-security", "--symmetry"]) == 0
    assert not is_cached(spec)                      # nor a symmetric one
    assert main(["explore", "--config", "zk-envelope-security"]) == 0
    assert "reachable set of zk-envelope-security[correct] cached" in capsys.readouterr().err
    cached = reachable(spec)
    assert cached.cached
    assert list(cached.fingerprints) == list(reachable(spec, cache=False).fingerprints)


def test_twophase_plain_and_guided():
    """The engine runs any Spec: TwoPhase with 5 RMs (the published anchor's model)."""
    spec = TwoPhaseSpec(5)
    reach = reachable(spec)
    assert len(reach) == 8832
    p = Profile("t", rounds=20, examples_per_round=10, steps_per_example=100, time_budget=600)
    guided = fuzz_spec(spec, seed=1, profile=p, reach=reach)
    assert not guided.found and guided.coverage.outside == 0
    assert guided.coverage.states_share > 0.5
    flawed = fuzz_spec(TwoPhaseSpec(3, flaw="tm-commit-unprepared"), seed=1, profile=p)
    assert flawed.found and flawed.trace is None and flawed.steps


def test_machine_is_a_plain_rule_based_state_machine():
    spec = KafkaSpec.named("zk-envelope-security", "metadata-all-listeners")
    machine = machine_for(spec)
    assert issubclass(machine, RuleBasedStateMachine)
    assert issubclass(PropertyViolation, AssertionError)
    assert hasattr(machine, "TestCase")


def test_bad_budgets_are_refused():
    with pytest.raises(ValueError, match="unknown profile"):
        fuzz("zk-envelope-security", seed=1, profile="weekly")
    with pytest.raises(ValueError, match="positive"):
        fuzz("zk-envelope-security", seed=1, time_budget=0)


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
    assert not any(name.startswith(("model.",)) for name in imported), imported
