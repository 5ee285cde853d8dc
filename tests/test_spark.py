"""Spark campaign execution and the fingerprint-partitioned BFS (kipcheck/campaign/spark.py,
properties/partitioned.py).

The partitioned BFS is first checked without a JVM (``explore_partitioned``: the same record
functions as the Spark job, run in this process) against ``properties.explore.explore`` on every
tiny configuration and seeded variant: counts, levels, per-action coverage, witnesses, the
violation, the trace and the violating state must be identical.  The Spark tests share ONE
SparkSession (module fixture; a cold JVM costs 7-14 s here) and are skipped when pyspark or Java
is missing.

Every Spark test is marked ``slow`` (run them with ``pytest -m slow tests/test_spark.py``, about
2-4 minutes here): the session alone costs 7-14 s and the first job 2-6 s on this shared 2-core
machine, so even one Spark test would take this file past its 20 s budget in the default run.
The default run checks the same BFS record functions in-process.
"""
from __future__ import annotations

import importlib.util
import os
import pickle
import shutil
import subprocess
import sys
import time
import types

import pytest

from bench.twophase import TwoPhaseSpec
from properties import partitioned as bfs
from model.configs import CONFIGS, TINY
from properties.explore import explore, replay
from properties.kafka_spec import KafkaSpec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the largest tiny configurations (10,941-36,447 states): their correct design is slow-tier
SLOW_TINY = ("kraft-registration", "kraft-listeners", "kraft-misconfigured",
             "kraft-broker-registration", "kraft-controller-endpoints", "kraft-broker-endpoints")


def _summary(r) -> tuple:
    return (r.distinct, r.generated, r.depth, r.complete, r.stop_reason, r.violation,
            r.violations_seen, r.trace, r.initial_index, r.violating_state,
            dict(r.action_counts), r.witnesses_reached, r.witnesses_missing,
            list(r.states_per_depth), r.peak_frontier)


def _pairs(configs):
    return [(c, v) for c in configs for v in ("correct",) + tuple(CONFIGS[c].variants)]


def _spec(config, variant):
    return KafkaSpec.named(config, None if variant == "correct" else variant)


# ---- the partitioned BFS without a JVM ---------------------------------------------------------

@pytest.mark.parametrize("config,variant",
                         _pairs([c for c in TINY if c not in SLOW_TINY])
                         + [(c, v) for c, v in _pairs(SLOW_TINY) if v != "correct"])
def test_partitioned_bfs_equals_explore(config, variant):
    spec = _spec(config, variant)
    expected = explore(spec)
    got = bfs.explore_partitioned(spec, partitions=3)
    assert _summary(got) == _summary(expected)
    if expected.violation is not None:      # the trace is a real, replayable counterexample
        states = replay(spec, got.initial_index, got.trace)
        assert spec.violation(states[-1], spec.successors(states[-1])) == got.violation


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(SLOW_TINY))
def test_partitioned_bfs_equals_explore_big_tiny(config):
    spec = _spec(config, "correct")
    assert _summary(bfs.explore_partitioned(spec, partitions=4)) == _summary(explore(spec))


@pytest.mark.parametrize("config,variant,options", [
    pytest.param("kraft-forward-leader-change", "correct", {"symmetry": True},
                 marks=pytest.mark.slow),
    ("kraft-forward-leader-change", "correct", {"symmetry": True, "max_states": 500}),
    ("kraft-forward-leader-change", "correct", {"max_states": 700}),
    ("zk-forward-zombie", "correct", {"max_states": 1}),
    ("zk-forward-zombie", "correct", {"max_depth": 4}),
    ("zk-envelope-security", "authorize-as-forwarder", {"stop_at_violation": False})])
def test_partitioned_bfs_options_equal_explore(config, variant, options):
    """Symmetry (the stored representative is the first discovered), max_states (the cut keeps
    the first discovered states), max_depth, and exploring past a violation."""
    spec = _spec(config, variant)
    expected = explore(spec, **options)
    got = bfs.explore_partitioned(spec, partitions=4, **options)
    assert _summary(got) == _summary(expected)
    if "max_states" in options:
        assert got.distinct == options["max_states"] and got.stop_reason == "max_states"
    if not options.get("stop_at_violation", True):
        assert got.complete and got.violation is not None


@pytest.mark.parametrize("flaw", [None, "rm-commit-without-msg", "tm-commit-unprepared"])
def test_partitioned_bfs_state_witnesses_twophase(flaw):
    """TwoPhase declares state-predicate witnesses (checked once per new state, also after a
    max_states cut) and has an injective packed fingerprint."""
    spec = TwoPhaseSpec(5, flaw=flaw)
    for options in ({}, {"max_states": 3000}, {"symmetry": True}):
        assert _summary(bfs.explore_partitioned(spec, partitions=3, **options)) == _summary(
            explore(spec, **options))
    assert explore(TwoPhaseSpec(5)).distinct == 8832          # TLC's count (DESIGN 9)


def test_owner_spreads_packed_fingerprints():
    """TwoPhase's fingerprints are packed states (low bits far from uniform); ``owner`` mixes
    them so every partition gets a fair share."""
    fps = explore(TwoPhaseSpec(5), keep_fingerprints=True).fingerprints
    for P in (2, 3, 8):
        counts = [0] * P
        for f in fps:
            counts[bfs.owner(f, P)] += 1
        assert min(counts) > 0.7 * len(fps) / P, counts
    assert {bfs.owner(f, 8) for f in fps} == set(range(8))


def test_level_records_carry_states_as_bytes_and_leave_the_collector_as_it_was():
    """What crosses a Spark shuffle or rests in its cache holds model states only as bytes
    pickled by C pickle (Spark would run its cloudpickle over every record otherwise, its
    largest cost per level); the collector, paused while a level is built, is back after."""
    import gc
    spec = _spec("zk-forward-zombie", "correct")
    parts, _ = bfs.initial_parts(spec, 2)
    args = bfs.LevelArgs(spec, 2, False, (), False, True)
    assert gc.isenabled()
    records = [r for p in parts for r in bfs.expand_records(args, p.pid, [(p.pid, p)])]
    assert gc.isenabled()
    groups = [v[1] for _, v in records if v[0] == "c"]
    assert groups and all(isinstance(g, bytes) for g in groups)
    assert all(isinstance(p.frontier_blob, bytes) for p in parts)
    merged = [next(bfs.merge_records(args, pid, [(pid, parts[pid])]
                                     + [r for r in records if r[0] == pid]))[1]
              for pid in range(2)]
    assert gc.isenabled()
    assert sum(len(m.frontier()) for m in merged) == sum(s.new for s in
                                                          (m.stats for m in merged)) > 0
    gc.disable()
    try:
        list(bfs.expand_records(args, 0, [(0, parts[0])]))
        assert not gc.isenabled()                   # left as it was: off
    finally:
        gc.enable()


def test_merge_refuses_a_record_of_another_partition():
    """A misaligned union would hand a partition records it does not own; merging them would
    lose or duplicate states, so the merge step refuses."""
    spec = _spec("zk-forward-zombie", "correct")
    parts, _ = bfs.initial_parts(spec, 2)
    args = bfs.LevelArgs(spec, 2, False, (), False, True)
    with pytest.raises(RuntimeError, match="arrived in partition 0"):
        list(bfs.merge_records(args, 0, [(0, parts[0]), (1, ("c", pickle.dumps([])))]))
    with pytest.raises(RuntimeError, match="lost its visited set"):
        list(bfs.merge_records(args, 0, [(0, ("c", pickle.dumps([])))]))


def test_spark_module_imports_without_pyspark():
    """pyspark is imported lazily: the module imports, using it says what to install."""
    code = ("import sys; sys.modules['pyspark'] = None\n"
            "import kipcheck.campaign.spark as s\n"
            "assert s.default_master(2) == 'local[2,4]', s.default_master(2)\n"
            "try:\n    s.SparkShardExecutor()\nexcept s.SparkUnavailable as e:\n"
            "    print('unavailable:', e)\nelse:\n    raise SystemExit('no error')\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "pip install 'kipcheck[spark]'" in p.stdout


# ---- Spark --------------------------------------------------------------------------------------

def _spark_missing() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'kipcheck[spark]')"
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (Spark needs Java 17+)"
    return None


@pytest.fixture(scope="module")
def spark():
    reason = _spark_missing()
    if reason:
        pytest.skip(reason)
    from pyspark import cloudpickle
    from kipcheck.campaign.spark import SparkShardExecutor
    # Workers cannot import this test module: ship its stand-in shard functions by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ex = SparkShardExecutor(executors=2, app_name="kipcheck-tests")
    yield ex
    ex.stop()


def _square(spec, task):
    """Stand-in shard function (``run_shard``'s shape: a pure function of spec and task)."""
    return {"index": task.index, "value": task.index * task.index + spec["offset"],
            "pid": os.getpid()}


def _crash_once(spec, task):
    """Stand-in shard that kills its Python worker the first time it runs task ``crash_at``
    (the marker file, created atomically, remembers the attempt and the dead worker's pid)."""
    if task.index == spec["crash_at"]:
        try:
            fd = os.open(spec["marker"], os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            os._exit(17)
    return {"index": task.index, "value": task.index * 7 + spec["offset"], "pid": os.getpid()}


def _tasks(n):
    return [types.SimpleNamespace(index=i) for i in range(n)]


@pytest.mark.slow
@pytest.mark.spark
def test_map_shards_yields_every_task_once(spark):
    tasks = _tasks(23)
    records = list(spark.map_shards({"offset": 5}, tasks, fn=_square))
    assert sorted(r["index"] for r in records) == list(range(23))
    assert all(r["value"] == r["index"] ** 2 + 5 for r in records)
    assert all(r["pid"] != os.getpid() for r in records)          # computed on executors
    assert spark.master == "local[2,4]" and spark.slots == 2
    assert spark.startup_seconds > 0
    assert list(spark.map_shards({"offset": 5}, [], fn=_square)) == []


@pytest.mark.slow
@pytest.mark.spark
def test_map_shards_streams_results(spark):
    """The first batch's records arrive while a slow batch is still running."""
    def slow_last(spec, task):
        if task.index == spec["slow"]:
            time.sleep(spec["sleep"])
        return {"index": task.index, "at": time.time()}

    tasks = _tasks(8)
    t0 = time.time()
    arrivals = []
    for r in spark.map_shards({"slow": 7, "sleep": 4.0}, tasks, fn=slow_last, partitions=8):
        arrivals.append((time.time() - t0, r["index"]))
    assert sorted(i for _, i in arrivals) == list(range(8))
    assert arrivals[-1][1] == 7                               # the slow shard comes last
    assert arrivals[0][0] < arrivals[-1][0] - 2.0, arrivals   # ... and nobody waited for it


@pytest.mark.slow
@pytest.mark.spark
def test_map_shards_survives_a_killed_python_worker(spark, tmp_path):
    """Spark re-runs the batch whose worker died (``local[N,F]``: F attempts); no shard is lost
    or duplicated and the results equal an undisturbed run."""
    marker = tmp_path / "crashed"
    tasks = _tasks(12)
    calm = list(spark.map_shards({"crash_at": -1, "marker": str(marker), "offset": 1}, tasks,
                                 fn=_crash_once))
    assert not marker.exists()
    hit = list(spark.map_shards({"crash_at": 5, "marker": str(marker), "offset": 1}, tasks,
                                fn=_crash_once))
    assert marker.exists()                                     # the worker really died ...
    dead = int(marker.read_text())
    assert dead not in {r["pid"] for r in hit if r["index"] == 5}   # ... and shard 5 re-ran
    strip = lambda rs: sorted((r["index"], r["value"]) for r in rs)  # noqa: E731
    assert strip(hit) == strip(calm)
    assert len(hit) == len(tasks)


def _broken(spec, task):
    """Stand-in shard that raises for task ``broken``, counting its attempts in a file."""
    if task.index == spec["broken"]:
        with open(spec["attempts"], "a") as f:
            f.write(f"{os.getpid()}\n")
        raise ValueError(f"shard {task.index} is broken")
    return {"index": task.index}


@pytest.mark.slow
@pytest.mark.spark
def test_map_shards_returns_a_raising_shard_as_its_exception(spark, tmp_path):
    """A shard that raises is not retried (it is pure: it would raise again) and reaches the
    driver as its Python exception's type and message, not as Spark's first line."""
    from kipcheck.campaign.spark import ShardBatchFailed, ShardFailed
    attempts = tmp_path / "attempts"
    with pytest.raises(ShardFailed) as e:
        list(spark.map_shards({"broken": 2, "attempts": str(attempts)}, _tasks(4), fn=_broken,
                              partitions=4))
    assert isinstance(e.value, ShardBatchFailed)
    assert e.value.index == 2 and e.value.type == "ValueError"
    assert e.value.description.startswith("ValueError: shard 2 is broken (raised at ")
    assert "An exception was thrown" not in str(e.value)
    assert len(attempts.read_text().splitlines()) == 1          # one attempt, no retries


def _unpicklable(spec, task):
    return {"index": task.index, "rows": (i for i in range(3))}     # a generator


@pytest.mark.slow
@pytest.mark.spark
def test_map_shards_digs_the_python_cause_out_of_a_failed_batch(spark):
    """A batch that fails outside the shard function (here: its result does not pickle) fails
    every attempt; the error keeps the Python exception that ends Spark's traceback."""
    from kipcheck.campaign.spark import ShardBatchFailed
    with pytest.raises(ShardBatchFailed) as e:
        list(spark.map_shards({}, _tasks(2), fn=_unpicklable, partitions=1))
    msg = str(e.value)
    assert msg.startswith("shard batch 0 (tasks 0..1) failed on every attempt: ")
    assert msg.endswith("TypeError: cannot pickle 'generator' object"), msg
    assert "\n" not in msg


@pytest.mark.slow
@pytest.mark.spark
def test_explore_spark_finds_the_shortest_counterexample(spark):
    from kipcheck.campaign.spark import explore_spark
    spec = _spec("zk-forward-zombie", "zombie-writes-unfenced")
    got = explore_spark(spec, session=spark.session, partitions=2)
    assert _summary(got) == _summary(explore(spec))
    assert got.violation == "P1" and len(got.trace) == got.depth
    states = replay(spec, got.initial_index, got.trace)        # the normal replay accepts it
    assert states[-1] == got.violating_state
    assert spec.violation(states[-1], spec.successors(states[-1])) == "P1"


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("config", [c if c not in SLOW_TINY else
                                    pytest.param(c, marks=pytest.mark.large) for c in TINY])
def test_explore_spark_equals_explore_on_tiny_configs(spark, config):
    """On Spark, the smaller tiny configurations (CI's Spark run); the six larger ones are in
    make test-large (14-28 s each here), and in process on every core in the slow tier
    (test_partitioned_bfs_equals_explore_big_tiny)."""
    from kipcheck.campaign.spark import explore_spark
    spec = _spec(config, "correct")
    symmetry = bool(CONFIGS[config].symmetric_groups)
    got = explore_spark(spec, session=spark.session, symmetry=symmetry)
    assert _summary(got) == _summary(explore(spec, symmetry=symmetry))


@pytest.mark.slow
@pytest.mark.spark
def test_explore_spark_seeded_variants_and_options(spark):
    from kipcheck.campaign.spark import explore_spark
    for config, variant in _pairs(["zk-envelope-security", "kraft-forward-leader-change"]):
        spec = _spec(config, variant)
        assert _summary(explore_spark(spec, session=spark.session, partitions=3)) == _summary(
            explore(spec)), (config, variant)
    spec = _spec("kraft-forward-leader-change", "ack-before-commit")
    for options in ({"stop_at_violation": False}, {"max_states": 150, "symmetry": True},
                    {"max_depth": 3}):
        assert _summary(explore_spark(spec, session=spark.session, **options)) == _summary(
            explore(spec, **options)), options


@pytest.mark.slow
@pytest.mark.spark
def test_explore_spark_small_config_bounded(spark):
    """The small configurations have more than 400,000 states (explore alone needs minutes),
    beyond a ~60 s test on Spark here: zk-small is checked up to a 20,000-state cut, which
    exercises the distributed cut (the first discovered states) on a small configuration."""
    from kipcheck.campaign.spark import explore_spark
    spec = _spec("zk-small", "correct")
    got = explore_spark(spec, session=spark.session, max_states=20_000)
    assert got.distinct == 20_000 and not got.complete
    assert _summary(got) == _summary(explore(spec, max_states=20_000))


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.large
def test_explore_spark_equals_explore_on_kraft_small(spark):
    """A whole small configuration: kraft-small's 522,422 states, every count equal to the
    single-process explorer's (270 s here, 2026-11-26: Spark pays about 0.6 s per BFS level).
    In ``make test-large``: with it the Spark tier took about 11 of CI's 30 minutes; CI keeps
    the tiny configurations' equality and the bounded zk-small cut."""
    from kipcheck.campaign.spark import explore_spark
    spec = _spec("kraft-small", "correct")
    got = explore_spark(spec, session=spark.session)
    assert got.complete and got.distinct == 522_422
    assert _summary(got) == _summary(explore(spec))


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.large
def test_explore_spark_equals_explore_on_zk_small(spark):
    """The other small configuration: zk-small's 4,927,238 states (2026-11-26), every count equal
    to the single-process explorer's.  Beyond CI's budget (29 minutes on 2 cores, 2026-11-22):
    ``make test-large`` runs it; progress goes to stderr (``-s`` shows it).  The
    single-process search goes first: Spark reaps Python workers idle for a minute, and its
    daemon prints a BrokenPipeError for each one it loses that way."""
    from kipcheck.campaign.spark import explore_spark
    spec = _spec("zk-small", "correct")
    t0 = time.perf_counter()
    want = explore(spec, progress=sys.stderr)
    explore_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    got = explore_spark(spec, session=spark.session, progress=sys.stderr)
    print(f"zk-small: explore --spark {time.perf_counter() - t0:.0f} s, explore {explore_s:.0f} "
          f"s, {got.distinct:,} states", file=sys.stderr)
    assert got.complete and got.distinct == 4_496_477
    assert _summary(got) == _summary(want)
