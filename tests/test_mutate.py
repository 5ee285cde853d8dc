"""``kipcheck mutate`` (properties/mutate.py, kipcheck/mutate_cli.py): the operators, the
classification of mutants of model/actions.py, their application and isolation, determinism,
the triage file and the command's bad input."""
import json

import pytest

from kipcheck.cli import main
from model.config import Design
from model.next import replay, successors
from properties import mutate as M
from properties import registry
from properties.kafka_spec import get_config

SNIPPET = '''from __future__ import annotations


def step(s, cfg, d, n):
    """Docstring: if a and b, n < 3 -- never mutated."""
    assert n >= 0 and n < 9
    if s.alive and n < 3:
        return replace(s, epoch=s.epoch + 1, owner=n)
    ok = s.alive and s.alive
    return None
'''


@pytest.fixture(scope="module")
def gen():
    return M.generate()


def _find(gen, function, operator, change_prefix):
    found = [m for m in gen.mutants if m.function == function and m.operator == operator
             and m.change.startswith(change_prefix)]
    assert found, (f"no {operator} mutant of {function} starting {change_prefix!r}: has "
                   f"model/actions.py changed?")
    return found[0]


def _plan(gen, *configs):
    return M.MutationPlan(gen.source_sha, tuple(configs))


def _stable(rec: dict) -> dict:
    """A record without what depends on the clock or the process."""
    out = {k: v for k, v in rec.items() if k not in ("seconds", "worker")}
    out["configs"] = [{k: v for k, v in row.items() if k != "seconds"}
                      for row in rec["configs"]]
    return out


# ---- operators ------------------------------------------------------------------------------

def test_operators_generate_the_expected_mutants_of_a_snippet():
    g = M.generate(SNIPPET, "<snippet>")
    got = [(m.operator, m.change) for m in g.mutants]
    assert got == [
        ("drop-conjunct", "s.alive and n < 3 => n < 3"),
        ("drop-conjunct", "s.alive and n < 3 => s.alive"),
        ("negate-guard", "s.alive and n < 3 => not (s.alive and n < 3)"),
        ("negate-conjunct", "s.alive => not s.alive"),
        ("negate-conjunct", "n < 3 => n >= 3"),
        ("boundary", "n < 3 => n <= 3"),
        ("return-unchanged", "return replace(s, ...) => return s"),
        ("skip-field", "replace(s, ...) without epoch=s.epoch + 1"),
        ("skip-field", "replace(s, ...) without owner=n"),
        ("off-by-one", "s.epoch + 1 => s.epoch + 2"),
        ("old-value", "s.epoch + 1 => s.epoch"),
        # ``ok = s.alive and s.alive``: dropping either operand gives the same tree (one is
        # dropped as a duplicate); negating either does not
        ("drop-conjunct", "s.alive and s.alive => s.alive"),
        ("negate-conjunct", "s.alive => not s.alive"),
        ("negate-conjunct", "s.alive => not s.alive"),
    ]
    assert g.dropped == {"does not compile": 0, "identical": 0, "duplicate": 1}
    # nothing from the docstring or the assert; IDs in order; keys unique and line-free
    assert [m.id for m in g.mutants] == [f"M{i:04d}" for i in range(len(g.mutants))]
    keys = [m.key for m in g.mutants]
    assert len(set(keys)) == len(keys)
    assert keys[-1] == "step: negate-conjunct: s.alive => not s.alive #3"
    assert all(m.line in (7, 8, 9) for m in g.mutants)
    boundary = g.mutants[5]
    assert boundary.label == "M0005 boundary model/actions.py:7 in step"
    assert "-    if s.alive and n < 3:\n+    if s.alive and n <= 3:" in boundary.diff
    assert "@@ -6,3 +6,3 @@" in boundary.diff


def test_mutant_keys_survive_unrelated_edits():
    shifted = SNIPPET.replace("def step(", "X = 1\n\n\ndef helper():\n    return 2\n\n\ndef step(")
    a, b = M.generate(SNIPPET, "<a>"), M.generate(shifted, "<b>")
    assert [m.key for m in a.mutants] == [m.key for m in b.mutants]
    assert [m.line for m in a.mutants] != [m.line for m in b.mutants]


def test_generation_of_the_model_compiles_and_matches_the_loaded_code(gen):
    assert len(gen.mutants) > 100
    assert set(m.operator for m in gen.mutants) == set(M.OPERATORS)
    M.check_loaded(gen)                         # the source parsed is the code loaded
    assert len({m.key for m in gen.mutants}) == len(gen.mutants)


def test_applied_swaps_the_code_and_always_restores_it(gen):
    import model.actions as A
    m = _find(gen, "controller_processes_event", "negate-conjunct", "d.zombie_writes_unfenced")
    fn = getattr(A, m.top)
    before = fn.__code__
    with pytest.raises(RuntimeError):
        with M.applied(gen, m):
            assert fn.__code__ is not before
            raise RuntimeError("boom")
    assert fn.__code__ is before
    M.check_loaded(gen)


# ---- classification -------------------------------------------------------------------------

def test_dropping_the_checkop_epoch_check_is_killed_with_a_trace_that_replays(gen):
    # ``if d.zombie_writes_unfenced or node.zk_epoch_version == zk.epoch_version`` with its first
    # operand negated is always true under the shipped design: the CheckOp (Z-2) is gone
    m = _find(gen, "controller_processes_event", "negate-conjunct",
              "d.zombie_writes_unfenced => not d.zombie_writes_unfenced")
    rec = M.run_mutant(_plan(gen, "zk-forward-zombie"), gen, m, ("zk-forward-zombie",))
    assert rec["status"] == "killed"
    kill = rec["kill"]
    assert kill["property"] == "P1" and kill["clause"] == "zk-writes-carry-current-epoch"
    assert kill["replays_under_mutant"] and not kill["violates_under_correct"]
    cfg, d = get_config("zk-forward-zombie"), Design()
    from model.step import Step
    steps = [Step(a, M_tuples(args)) for a, args in kill["steps"]]
    with M.applied(gen, m):
        end = replay(cfg, d, steps)[-1]
        assert registry.first_violation(end, cfg, d, successors(end, cfg, d))[0] == "P1"
    try:
        end = replay(cfg, d, steps)[-1]
    except ValueError:
        pass                                    # a step the correct design does not enable
    else:
        assert registry.first_violation(end, cfg, d, successors(end, cfg, d)) is None


def M_tuples(x):
    return tuple(M_tuples(v) for v in x) if isinstance(x, list) else x


def test_a_mutant_that_changes_nothing_under_the_shipped_design_is_equivalent(gen):
    # dropping the variant flag leaves the CheckOp: identical under Design()
    m = _find(gen, "controller_processes_event", "drop-disjunct",
              "d.zombie_writes_unfenced or node.zk_epoch_version == zk.epoch_version => node.")
    rec = M.run_mutant(_plan(gen, "zk-forward-zombie"), gen, m, ("zk-forward-zombie",))
    assert rec["status"] == "equivalent" and rec["equivalence"] == "identical"
    assert rec["configs"][0]["new_observations"] == rec["configs"][0]["missing_observations"] == 0
    assert rec["configs"][0]["same_graph"]      # decided by comparing successors, no search


def test_a_survivor_is_detected_with_a_trace_to_an_observation_the_correct_design_lacks(
        gen, monkeypatch):
    # synthetic: with every property removed, the unfenced zombie write changes what is
    # observable (a write by a deposed controller) and nothing catches it
    monkeypatch.setattr(registry, "first_violation", lambda *a, **k: None)
    monkeypatch.setattr(registry, "PROPERTIES", ())
    monkeypatch.setattr(M, "_witnesses_lost", lambda *a: ())   # nor the fenced-write witness
    m = _find(gen, "controller_processes_event", "negate-conjunct",
              "d.zombie_writes_unfenced => not d.zombie_writes_unfenced")
    rec = M.run_mutant(_plan(gen, "zk-forward-zombie"), gen, m, ("zk-forward-zombie",))
    assert rec["status"] == "survived"
    diff = rec["difference"]
    assert diff["direction"] == "new" and diff["config"] == "zk-forward-zombie"
    assert rec["configs"][0]["new_observations"] > 0
    cfg, d = get_config("zk-forward-zombie"), Design()
    from model.step import Step
    observe = M.observation
    steps = [Step(a, M_tuples(args)) for a, args in diff["steps"]]
    with M.applied(gen, m):
        end = replay(cfg, d, steps)[-1]
    assert any(w.writer_epoch != w.zk_epoch for w in end.zk.writes)     # the zombie's write
    base = M._baseline(_plan(gen, "zk-forward-zombie"), "zk-forward-zombie")
    assert observe(end, cfg) not in base.observations
    # shortest: no proper prefix reaches an observation the correct design lacks
    with M.applied(gen, m):
        states = replay(cfg, d, steps)
    assert all(observe(s, cfg) in base.observations for s in states[:-1])


def test_a_mutant_that_raises_is_crashed_with_the_raising_step(gen):
    m = _find(gen, "controller_processes_event", "negate-conjunct", "not node.events => ")
    rec = M.run_mutant(_plan(gen, "zk-forward-zombie"), gen, m, ("zk-forward-zombie",))
    assert rec["status"] == "crashed"
    assert rec["crash"]["error"].startswith("IndexError")
    assert rec["crash"]["steps"][-1][0] == "controller_processes_event"


def test_unreached_sites_are_equivalent_by_construction(gen):
    cov = M.statement_coverage(("zk-envelope-security",), gen)
    tasks = M.plan_tasks(gen, gen.mutants, cov)
    # every KRaft-only step is never run by a ZK configuration
    kraft = [t for t, m in zip(tasks, gen.mutants) if m.top == "controller_commits_records"]
    assert kraft and all(t.configs == () for t in kraft)
    assert any(t.configs for t in tasks)
    rec = M.run_mutant_task(_plan(gen, "zk-envelope-security"), kraft[0])
    assert rec["status"] == "equivalent" and rec["equivalence"] == "unreached"
    assert rec["skipped_configs"] == ["zk-envelope-security"]


# ---- determinism ----------------------------------------------------------------------------

def test_same_seed_same_sample_and_same_results(gen):
    a = M.sample_mutants(gen.mutants, 6, 11)
    assert a == M.sample_mutants(gen.mutants, 6, 11)
    assert a != M.sample_mutants(gen.mutants, 6, 12)
    assert [m.index for m in a] == sorted(m.index for m in a)
    plan = _plan(gen, "zk-envelope-security")
    cov = M.statement_coverage(plan.configs, gen)
    tasks = M.plan_tasks(gen, a, cov)
    first = [_stable(M.run_mutant_task(plan, t)) for t in tasks]
    again = [_stable(M.run_mutant_task(plan, t)) for t in tasks]
    assert first == again


# ---- triage ---------------------------------------------------------------------------------

def test_triage_file_parses_and_names_existing_mutants(gen):
    triage = M.load_triage()
    assert 0 <= triage["target"] <= 1
    keys = {m.key for m in gen.mutants}
    unknown = [k for k in triage["entries"] if k not in keys]
    assert not unknown, f"triage entries naming no mutant of model/actions.py: {unknown}"
    assert all(reason.strip() for reason in triage["entries"].values())


def test_triage_rejects_malformed_entries():
    with pytest.raises(M.TriageError):
        M.load_triage('[[survivor]]\nkey = "x"\n')                  # no reason
    with pytest.raises(M.TriageError):
        M.load_triage('[[survivor]]\nkey = "x"\nreason = "a"\n[[survivor]]\nkey = "x"\n'
                      'reason = "b"\n')                              # twice
    with pytest.raises(M.TriageError):
        M.load_triage("[adequacy]\ntarget = 2\n")
    t = M.load_triage('[adequacy]\ntarget = 0.5\n[[survivor]]\nkey = "k"\nreason = "why"\n')
    assert t == {"target": 0.5, "entries": {"k": "why"}}


def test_summary_counts_triage_and_target():
    recs = [{"id": "M0000", "key": "a", "status": "killed"},
            {"id": "M0001", "key": "b", "status": "survived"},
            {"id": "M0002", "key": "c", "status": "crashed"},
            {"id": "M0003", "key": "d", "status": "equivalent", "equivalence": "unreached"}]
    s = M.summarize(recs, {"target": 0.5, "entries": {}})
    assert s["adequacy"] == 0.5 and s["untriaged"] == ["M0001"] and not s["ok"]
    s = M.summarize(recs, {"target": 0.5, "entries": {"b": "harmless"}})
    assert s["ok"] and s["triaged"] == ["M0001"] and s["equivalent_unreached"] == 1
    assert not M.summarize(recs, {"target": 0.6, "entries": {"b": "harmless"}})["ok"]


# ---- the command ----------------------------------------------------------------------------

@pytest.mark.parametrize("argv, words", [
    (["--configs", "no-such-config"], "unknown configuration 'no-such-config'"),
    (["--configs", ","], "selects no configuration"),
    (["--only", "M99999"], "no such mutant"),
    (["--out", "/nonexistent-dir/x.json"], "does not exist"),
    (["--sample", "0"], "must be positive"),
])
def test_bad_input_exits_2_with_one_line(capsys, tmp_path, argv, words):
    out = ["--out", str(tmp_path / "r.json")] if "--out" not in argv else []
    assert main(["mutate", *argv, *out, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_list_prints_every_mutant_and_runs_nothing(capsys, tmp_path, gen):
    out = tmp_path / "r.json"
    assert main(["mutate", "--list", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("\n    ") == len(gen.mutants)
    assert gen.mutants[0].label in text and not out.exists()


def test_processes_engine_gives_the_same_results_as_serial(tmp_path, capsys):
    runs = {}
    for engine in ("serial", "processes"):
        out = tmp_path / f"{engine}.json"
        code = main(["mutate", "--configs", "zk-envelope-security", "--sample", "5", "--seed",
                     "4", "--engine", engine, "--workers", "2", "--out", str(out), "--quiet",
                     "--target", "0"])
        doc = json.loads(out.read_text())
        runs[engine] = (code, [_stable(r) for r in doc["mutants"]], doc["summary"])
    capsys.readouterr()
    assert runs["serial"] == runs["processes"]
    assert len(runs["serial"][1]) == 5


def test_a_mutant_that_loses_a_witness_is_killed_by_the_witness(gen):
    # with the drop budget test negated no message is ever lost on zk-forward-zombie: nothing is
    # violated (a network that loses nothing is a kinder one), but the retry after a lost
    # envelope never happens, and `kipcheck check` fails on the witness no configuration reaches
    m = _find(gen, "network_drops_message", "negate-conjunct", "s.drops_left <= 0 => ")
    rec = M.run_mutant(_plan(gen, "zk-forward-zombie"), gen, m, ("zk-forward-zombie",))
    assert rec["status"] == "killed"
    kill = rec["kill"]
    assert kill["by"] == "witness" and kill["property"] == "WITNESS"
    assert kill["witnesses"] and kill["configs"] == ["zk-forward-zombie"]
    base = M._baseline(_plan(gen, "zk-forward-zombie"), "zk-forward-zombie")
    assert set(kill["witnesses"]) <= set(base.witnesses)
    assert kill["witnesses"] == sorted(rec["configs"][0]["witnesses_missing"])
    summary = M.summarize([rec], M.load_triage())
    assert summary["killed_by_witness"] == 1 and summary["counts"]["killed"] == 1
