"""bench/steps.py measures the model's cost per state on a seeded sample that two runs (and two
commits with the same steps) share, and refuses bad arguments with exit code 2.  No timing is
asserted."""
from __future__ import annotations

import json
import os
import shutil
import sys

from bench import steps
from bench.explore import home_relative

SMALL_RUN = ["--config", "zk-forward-zombie", "--depth", "4", "--beam", "60", "--sample", "25",
             "--passes", "1", "--rounds", "1"]


def _run(tmp_path, name, *extra):
    out = tmp_path / name
    assert steps.main(SMALL_RUN + ["--out", str(out), *extra]) == 0
    return json.loads(out.read_text())


def test_a_run_writes_every_figure_and_a_replayable_sample(tmp_path, capsys):
    doc = _run(tmp_path, "a.json")
    entry = doc["configs"]["zk-forward-zombie"]
    assert set(entry["current_median"]) == set(steps.KEYS)
    assert all(v > 0 for v in entry["current_median"].values())
    assert entry["current"][0]["successors_per_state"] > 0
    assert doc["seed"] == 1 and doc["baseline"] is None and "ratio" not in entry
    assert "seed 1" in capsys.readouterr().out
    # the same seed samples the same states; another seed other ones
    again = _run(tmp_path, "b.json")["configs"]["zk-forward-zombie"]["current"][0]
    other = _run(tmp_path, "c.json", "--seed", "2")["configs"]["zk-forward-zombie"]["current"][0]
    assert again["sample_checksum"] == entry["current"][0]["sample_checksum"]
    assert other["sample_checksum"] != entry["current"][0]["sample_checksum"]


def test_bad_arguments_exit_2(tmp_path, capsys):
    assert steps.main(["--config", "no-such-config", "--out", str(tmp_path / "x.json")]) == 2
    assert "unknown configuration" in capsys.readouterr().err
    assert steps.main(SMALL_RUN + ["--sample", "0", "--out", str(tmp_path / "x.json")]) == 2
    assert "--sample must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_two_interpreters_on_the_same_code_sample_the_same_states(tmp_path):
    # --baseline-python without --baseline: this tree's code on both sides, the JSON naming
    # each side's interpreter (here the same one, so the samples must agree)
    doc = _run(tmp_path, "i.json", "--baseline-python", sys.executable)
    entry = doc["configs"]["zk-forward-zombie"]
    assert entry["same_sample"] is True
    assert set(entry["ratio"]) == set(steps.KEYS)
    assert doc["baseline"] == doc["commit"]
    for side in ("interpreter", "baseline_interpreter"):
        assert doc[side]["executable"] == home_relative(os.path.realpath(sys.executable))
        assert doc[side]["version"] == sys.version.split()[0]


def test_an_interpreter_that_is_not_python_exits_2(tmp_path, capsys):
    out = tmp_path / "x.json"
    assert steps.main(SMALL_RUN + ["--baseline-python", str(tmp_path / "none"),
                                   "--out", str(out)]) == 2
    assert "cannot run the interpreter" in capsys.readouterr().err
    assert steps.main(SMALL_RUN + ["--python", shutil.which("false") or "/bin/false",
                                   "--out", str(out)]) == 2
    assert "failed (exit 1)" in capsys.readouterr().err
    assert not out.exists()
