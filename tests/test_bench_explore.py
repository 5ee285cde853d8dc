"""bench/explore.py's comparison mode: two sides in turn on a tiny configuration, each side's
interpreter named in the JSON, and bad arguments refused with exit code 2 before any run.  No
timing is asserted."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench import explore as bench_explore
from bench.explore import home_relative

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _in_git_checkout() -> bool:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              ).returncode == 0
    except OSError:
        return False


def test_interpreter_facts_name_this_interpreter():
    path, facts = bench_explore.interpreter(sys.executable)
    assert path == sys.executable
    assert facts == bench_explore.interpreter(None)[1]
    assert facts["executable"] == home_relative(os.path.realpath(sys.executable))
    assert facts["version"] == sys.version.split()[0]
    assert facts["libpython_shared"] in (True, False, None)
    assert bench_explore.machine_info()["interpreter"] == facts


@pytest.mark.skipif(not _in_git_checkout(), reason="compares against a commit: needs git")
def test_compare_runs_both_sides_under_the_interpreters_named(tmp_path, capsys):
    out = tmp_path / "c.json"
    code = bench_explore.main(["--baseline", "HEAD", "--kafka", "zk-forward-zombie", "--runs",
                               "1", "--baseline-python", sys.executable, "--out", str(out)])
    assert code == 0, capsys.readouterr()
    doc = json.loads(out.read_text())
    (target,) = doc["targets"]
    # the same counts on both sides (HEAD's model and this tree's are the same model)
    assert target["distinct"]["baseline"] == target["distinct"]["current"] == 2690
    assert doc["notes"] == []
    this = home_relative(os.path.realpath(sys.executable))
    for side in ("baseline", "current"):
        assert doc[side]["interpreter"]["executable"] == this
        assert target["runs"][side][0]["cpu_seconds"] > 0
    assert "interpreters: baseline" in capsys.readouterr().out


def test_a_bad_interpreter_exits_2_before_any_run(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert bench_explore.main(["--baseline", "HEAD", "--kafka", "zk-forward-zombie",
                               "--python", str(tmp_path / "no-python"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot run the interpreter" in err and "no-python" in err
    assert not out.exists()


def test_paths_under_home_are_written_from_tilde(monkeypatch):
    monkeypatch.setenv("HOME", "/home/someone")
    assert home_relative("--prefix=/home/someone/.pyenv/x /home/someoneelse/y") == \
        "--prefix=~/.pyenv/x /home/someoneelse/y"
    assert home_relative("/usr/bin/python3.11") == "/usr/bin/python3.11"
