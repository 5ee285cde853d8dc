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

from kipcheck.campaign.results import ResultStore  # noqa: E402
from kipcheck.campaign.runner import run_campaign  # noqa: E402
from kipcheck.campaign.seeds import shard_tasks  # noqa: E402
from kipcheck.campaign.shard import KILL_ENV  # noqa: E402
from kipcheck.campaign.spec import spec_from_dict  # noqa: E402
from kipcheck.cli import main  # noqa: E402

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
