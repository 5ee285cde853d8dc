"""``kipcheck fuzz``: the stateful engine from the command line.  Exit codes, the seed printed on
every run, replayable trace files, coverage, --json/--pytest/--itf-out, bad input (one line, no
traceback) and Ctrl-C (the summary of the work done, exit 130).  Budgets are small: the whole
file runs in well under a minute."""
import json
import re

import pytest

from kipcheck import cli
from kipcheck.cli import main
from model.config import VARIANTS
from cli_helpers import one_line, run

SEED = 20261121
FAST = "brokers-write-zk"                   # found in its first example (one step)
FAST_CONFIG = VARIANTS[FAST].config


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Reachable sets cached under tmp_path, default trace files written there."""
    monkeypatch.setenv("KIPCHECK_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


def test_variant_violation_exits_1_with_seed_and_a_replayable_trace(tmp_path, capsys):
    code, out, err = run(["fuzz", "--config", FAST_CONFIG, "--variant", FAST,
                          "--seed", str(SEED)], capsys)
    assert code == 1, out + err
    assert out.splitlines()[0].startswith(f"fuzz {FAST_CONFIG} [{FAST}], profile ci (")
    assert f"seed {SEED}" in out.splitlines()[0]
    assert "VIOLATED P1" in out and "[zk-writes-carry-current-epoch]" in out
    assert "found in round 1 (round seed " in out and "minimised length 1" in out
    assert "Step('client_sends_request', (0,))," in out          # the trace's steps, pasteable
    trace = tmp_path / f"kipcheck-fuzz-{FAST_CONFIG}-{FAST}-{SEED}.json"
    assert trace.exists() and "(the default --trace-out)" in out
    assert f"kipcheck replay {trace.name}" in out
    assert (f"kipcheck fuzz --config {FAST_CONFIG} --variant {FAST} --profile ci "
            f"--seed {SEED}") in out
    assert out.rstrip().splitlines()[-1].endswith(f"seed {SEED}")
    assert json.loads(trace.read_text())["engine"] == "stateful"
    code, out, _ = run(["replay", str(trace)], capsys)
    assert code == 1 and "reproduced:" in out and "violates P1" in out


def test_pytest_itf_and_trace_out(tmp_path, capsys):
    trace, itf = tmp_path / "t.json", tmp_path / "t.itf.json"
    code, out, err = run(["fuzz", "--config", "zk-envelope-security", "--variant",
                          "envelope-any-listener", "--seed", str(SEED), "--quiet", "--pytest",
                          "--trace-out", str(trace), "--itf-out", str(itf)], capsys)
    assert code == 1
    assert "def test_zk_envelope_security_envelope_any_listener" in out
    assert "VIOLATED P4" in err and f"seed {SEED}" in err            # the summary: stderr
    namespace = {}
    exec(compile(out, "generated_test", "exec"), namespace)          # stdout is the module alone
    namespace["test_zk_envelope_security_envelope_any_listener"]()
    steps = json.loads(trace.read_text())["steps"]
    states = json.loads(itf.read_text())["states"]
    assert len(states) == len(steps) + 1
    assert not list(tmp_path.glob("kipcheck-fuzz-*.json"))          # --trace-out was honoured
    code, _, _ = run(["replay", str(trace)], capsys)
    assert code == 1


def test_correct_tiny_configuration_exits_0_with_coverage(tmp_path, capsys):
    code, out, err = run(["fuzz", "--config", "zk-envelope-security", "--seed", str(SEED),
                          "--time-budget", "2"], capsys)
    assert code == 0, out + err
    assert re.search(r"^coverage: \d+\.\d% of 1,626 reachable states", out, re.M), out
    assert "computing the reachable set of zk-envelope-security[correct] once" in err
    assert re.search(r"^witnesses reached: \d/3", out, re.M)
    assert "stopped: " in out and "no property violated" in out
    assert "Traceback" not in err and not list(tmp_path.glob("kipcheck-fuzz-*.json"))
    assert list((tmp_path / "cache" / "reachable").iterdir())        # cached for next time
    code, out, err = run(["fuzz", "--config", "zk-envelope-security", "--seed", str(SEED),
                          "--time-budget", "1", "--quiet"], capsys)
    assert code == 0 and "(reachable set from the cache)" in out and err == ""


def test_coverage_unknown_for_an_uncached_small_configuration(capsys):
    code, out, _ = run(["fuzz", "--config", "kraft-small", "--seed", "1", "--time-budget",
                        "0.5", "--quiet"], capsys)
    assert code == 0
    assert "coverage: unknown (run with --coverage always to compute the reachable set" in out
    code, out, _ = run(["fuzz", "--config", FAST_CONFIG, "--variant", FAST, "--seed", "1",
                        "--quiet", "--coverage", "never"], capsys)
    assert code == 1 and "coverage: skipped (--coverage never)" in out


def test_same_seed_same_json_trace(tmp_path, capsys):
    docs = []
    for name in ("a.json", "b.json"):
        code, out, err = run(["fuzz", "--config", "zk-envelope-security", "--variant",
                              "envelope-any-listener", "--seed", str(SEED), "--json",
                              "--quiet", "--coverage", "never", "--trace-out",
                              str(tmp_path / name)], capsys)
        assert code == 1
        docs.append(json.loads(out))
        assert f"seed {SEED}" in err                               # the header: stderr
    a, b = docs
    for key in ("spec", "config", "variant", "seed", "profile", "found", "property", "clause",
                "trace", "shrunk_length", "failed_round", "rounds", "steps_run", "distinct",
                "witnesses_reached", "witnesses_missing", "stop_reason", "coverage",
                "trace_file", "replay"):
        assert key in a, key
    assert a["found"] and a["property"] == "P4" and a["stop_reason"] == "violation"
    assert a["trace"] == b["trace"] and a["failed_round"] == b["failed_round"]
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    assert a["trace_file"] == str(tmp_path / "a.json")
    assert f"--seed {SEED}" in a["replay"]


def test_seed_is_chosen_and_printed_when_not_given(tmp_path, capsys):
    code, out, err = run(["fuzz", "--config", FAST_CONFIG, "--variant", FAST, "--json",
                          "--quiet", "--coverage", "never"], capsys)
    assert code == 1
    seed = json.loads(out)["seed"]
    assert err.splitlines()[0].endswith(f", seed {seed}")
    assert f"seed {seed}" in err.splitlines()[-1]                   # and again at the end
    assert (tmp_path / f"kipcheck-fuzz-{FAST_CONFIG}-{FAST}-{seed}.json").exists()
    code, out, _ = run(["fuzz", "--config", "zk-envelope-security", "--time-budget", "0.3",
                        "--quiet", "--coverage", "never"], capsys)
    assert code == 0 and re.match(r"fuzz zk-envelope-security \[correct\], .*, seed \d+$",
                                  out.splitlines()[0])


@pytest.mark.parametrize("args, message", [
    (["--config", "nope"], "unknown configuration 'nope'"),
    (["--config", "zk-envelope-security", "--variant", "nah"], "unknown variant 'nah'"),
    (["--config", "zk-envelope-security", "--profile", "weekly"], "invalid choice: 'weekly'"),
    (["--config", "zk-envelope-security", "--time-budget", "-1"], "--time-budget"),
    (["--config", "zk-envelope-security", "--time-budget", "0"], "--time-budget"),
    (["--config", "zk-envelope-security", "--time-budget", "nan"], "--time-budget"),
    (["--config", "zk-envelope-security", "--time-budget", "soon"], "invalid float value"),
    (["--config", "zk-envelope-security", "--seed", "x"], "invalid seed 'x'"),
    (["--config", "zk-envelope-security", "--seed", "-5"], "invalid seed '-5'"),
    (["--config", "zk-envelope-security", "--coverage", "maybe"], "invalid choice: 'maybe'"),
    (["--config", "zk-envelope-security", "--json", "--pytest"], "not allowed with"),
    (["--config", "zk-envelope-security", "--trace-out", "/no/such/dir/t.json"],
     "does not exist"),
    ([], "--config"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    code, out, err = run(["fuzz", *args], capsys)
    assert code == 2 and out == ""
    assert message in one_line(err)


def test_ctrl_c_prints_the_summary_and_exits_130(monkeypatch, capsys):
    calls = []

    def interrupt(self, stats):             # Ctrl-C arrives during the search
        calls.append(stats.steps_run)
        if stats.steps_run > 200:
            raise KeyboardInterrupt

    monkeypatch.setattr(cli._FuzzProgress, "__call__", interrupt)
    code, out, err = run(["fuzz", "--config", "zk-envelope-security", "--seed", str(SEED),
                          "--time-budget", "20", "--coverage", "never"], capsys)
    assert code == 130, out + err
    assert "stopped: interrupted" in out and f"seed {SEED}" in out
    assert "Traceback" not in err and calls


def test_states_outside_the_reachable_set_are_flagged(monkeypatch, capsys):
    from properties import coverage
    real = coverage.measure

    def skewed(visited, actions, reach):
        return real(set(visited) | {1, 2, 3}, actions, reach)      # 3 unknown fingerprints

    monkeypatch.setattr(coverage, "measure", skewed)
    code, out, _ = run(["fuzz", "--config", FAST_CONFIG, "--variant", FAST, "--seed", "1",
                        "--quiet"], capsys)
    assert code == 1
    assert "WARNING: 3 visited states are NOT in the reachable set" in out


def test_fuzz_is_listed_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "fuzz" in capsys.readouterr().out
