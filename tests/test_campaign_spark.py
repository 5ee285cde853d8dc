"""Campaigns on Spark (local mode, a real JVM): the report, and a Python worker killed mid-task.

Marked ``spark`` (and ``slow``): CI runs them with ``make test-spark``.  The kill hook
(``KIPCHECK_CAMPAIGN_TEST_KILL=DIR:INDEX``) is set before the JVM starts, so the Python workers
Spark forks inherit it: the first attempt of that shard's task dies with ``os._exit``, Spark
retries it, and the campaign must lose nothing.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java 17 (no java on PATH)", allow_module_level=True)

from kipcheck.campaign.results import ResultStore
from kipcheck.campaign.runner import run_campaign
from kipcheck.campaign.seeds import shard_tasks
from kipcheck.campaign.shard import KILL_ENV, RAISE_ENV
from kipcheck.campaign.spec import load_spec, spec_from_dict
from kipcheck.cli import main
from cli_helpers import one_line

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def _spec(tmp_path, name):
    return spec_from_dict({
        "name": name, "seed": 11, "output": str(tmp_path / name),
        "configurations": ["zk-forward-zombie", "zk-envelope-security"],
        "variants": ["correct", "zombie-writes-unfenced", "envelope-any-listener"],
        "engines": ["stateful"], "shards": 2, "determinism_check": 2, "coverage": "auto",
        "budget": {"rounds": 3, "examples_per_round": 10, "steps_per_example": 100}},
        source=str(tmp_path / f"{name}.toml"))


def _stable(records):
    return {r["key"]: r["digest"] for r in records}


def test_spark_campaign_survives_a_killed_worker_and_writes_its_report(tmp_path, monkeypatch):
    markers = tmp_path / "markers"
    markers.mkdir()
    s = _spec(tmp_path, "spark")
    victim = len(shard_tasks(s)) // 2
    monkeypatch.setenv(KILL_ENV, f"{markers}:{victim}")
    toml = tmp_path / "spark.toml"
    toml.write_text(
        'name = "spark"\nseed = 11\n'
        f'output = "{s.output}"\n'
        'configurations = ["zk-forward-zombie", "zk-envelope-security"]\n'
        'variants = ["correct", "zombie-writes-unfenced", "envelope-any-listener"]\n'
        'engines = ["stateful"]\nshards = 2\ndeterminism_check = 2\ncoverage = "auto"\n'
        '[budget]\nrounds = 3\nexamples_per_round = 10\nsteps_per_example = 100\n')
    code = main(["campaign", str(toml), "--engine", "spark", "--executors", "2", "--quiet"])
    assert code == 0
    # the victim's first attempt died (its marker names the dead worker's pid), yet every
    # shard finished once, and the results equal an undisturbed run without Spark
    dead_pid = int((markers / f"killed-{victim}").read_text())
    records = ResultStore(s.output).load_records()
    assert len(records) == len(shard_tasks(s))
    victim_record = next(r for r in records if r["index"] == victim)
    assert victim_record["pid"] != dead_pid      # the retry ran in another worker
    monkeypatch.delenv(KILL_ENV)
    calm = run_campaign(replace(s, output=str(tmp_path / "calm")), engine="serial")
    assert _stable(records) == _stable(ResultStore(tmp_path / "calm").load_records())
    assert calm.ok
    meta = json.loads((Path(s.output) / "campaign.json").read_text())
    assert meta["runs"][-1]["engine"] == "spark"
    # the report beside the Parquet: HTML and Markdown, plots that exist and are not empty
    html = (Path(s.output) / "report.html").read_text()
    assert "What was covered" in html and "reachable states" in html
    srcs = [part.split('"')[0] for part in html.split('<img src="')[1:]]
    assert {"plots/coverage-over-time.svg", "plots/failures-by-property.svg",
            "plots/throughput-per-executor.svg"} <= set(srcs)
    for src in srcs:
        svg = (Path(s.output) / src).read_text()
        assert svg.startswith("<svg") and ("<polyline" in svg or "<rect x=" in svg)
        assert len(svg) > 500
    assert "plots/coverage-over-time.svg" in (Path(s.output) / "report.md").read_text()


def test_spark_shard_that_raises_is_exit_2_with_its_python_exception(tmp_path, monkeypatch,
                                                                     capsys):
    """Issue 16: a shard raising on a Spark executor used to end the campaign with Spark's
    first line only ("An exception was thrown from the Python worker:") and exit 1.  Now: the
    Python exception's type and message, exit 2, the finished shards kept, and a --resume
    completes once the cause is gone."""
    toml = tmp_path / "raise.toml"
    toml.write_text('seed = 5\nconfigurations = ["zk-forward-zombie"]\nvariants = ["correct"]\n'
                    'engines = ["random-walk"]\nshards = 4\ncoverage = "never"\n'
                    'determinism_check = 0\n[budget]\nrounds = 1\nwalk_steps = 300\n')
    out = tmp_path / "out"
    armed = tmp_path / "armed"
    armed.write_text("")
    monkeypatch.setenv(RAISE_ENV, f"{armed}:2")
    capsys.readouterr()
    code = main(["campaign", str(toml), "--engine", "spark", "--executors", "2", "--quiet",
                 "--out", str(out)])
    line = one_line(capsys.readouterr().err)
    task = shard_tasks(load_spec(toml))[2]
    kept = ResultStore(out).finished_indices()
    assert code == 2
    assert line.startswith(f"kipcheck: shard {task.key} (seed {task.seed}) failed: "
                           f"FileNotFoundError: [Errno 2] No such file or directory: "
                           f"'{tmp_path}/missing-schema.json' (raised at "
                           f"kipcheck/campaign/shard.py:"), line
    assert line.endswith(f"; {len(kept)} of 4 shards are finished and kept in {out}/shards; "
                         f"resume with: kipcheck campaign {toml} --resume --out {out}"), line
    assert 2 not in kept
    armed.unlink()
    assert main(["campaign", str(toml), "--engine", "serial", "--quiet", "--resume",
                 "--out", str(out)]) == 0
    assert ResultStore(out).finished_indices() == {0, 1, 2, 3}
