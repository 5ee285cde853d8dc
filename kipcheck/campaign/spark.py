"""Spark for kipcheck: campaign shards on executors, and the fingerprint-partitioned BFS.

The only module of the project that imports pyspark, and only inside functions: importing this
module needs no pyspark; using it without pyspark (or without Java) raises ``SparkUnavailable``
with the fix.

Session settings (Spark pitfalls P3-P9 in docs/campaigns.md, measured before this was
written): every listener on 127.0.0.1, no UI, log4j2 at ERROR from before the JVM starts (else the
banner still prints), ``PYSPARK_PYTHON = sys.executable`` (else workers run the system python
without the project's packages), the project root on the workers' ``PYTHONPATH`` (set before the
JVM starts), unix-domain sockets to the Python workers (about 14 ms per task instead of 26),
worker reuse left on (turning it off costs about 260 ms per task), Hypothesis' storage directory in
a temp dir (Hypothesis writes ``.hypothesis/constants`` into the cwd even with ``database=None``).
A cluster master (anything but ``local...``) differs in three: the driver keeps Spark's own
address (executors on other hosts must reach it; ``SPARK_LOCAL_IP`` chooses it), a
``PYSPARK_PYTHON`` already set is kept (the executors' Python), and the session is returned once
the executors have registered (``_await_executors``: the parallelism below is read from them).

Retries: ``local[N]`` gives each task a single attempt; the default master is ``local[N,F]`` with
``F = max_failures`` (4), and ``spark.task.maxFailures`` is set for cluster masters, so a task
whose Python worker dies is run again.  Shards are pure functions of (spec, task), so the retried
shard returns the same record.  A shard that *raises* is not retried: the task catches the
exception and returns it as data (``shard.crash_record``: type, message, where), because a pure
shard fails the same way every time, and Spark's own error for a failed task keeps only its first
line ("An exception was thrown from the Python worker:") once it is cut to one line.
``map_shards`` raises ``ShardFailed`` for it; for a batch that fails every attempt for another
reason, ``ShardBatchFailed`` carries the Python cause dug out of Spark's error text.

``explore_spark`` runs the level loop of ``properties.partitioned`` with ``SparkBackend``: the
partition states live in a cached, locally checkpointed pair RDD keyed by partition id (one
record per partition); a level is ONE Spark job: expand (narrow) -> ``partitionBy`` of the
candidates to their owners -> a partition-aligned union with the partition states (Spark builds a
``PartitionerAwareUnionRDD`` for inputs with the same partitioner, so the visited sets are never
shuffled) -> merge.  Records carry model states only as bytes that ``bfs`` pickled with C pickle
(Spark's shuffle serializer is cloudpickle, whose per-object Python hook cost more than the
search itself), and the Python workers pause the cyclic collector while a level is built.  On
this 2-core box local[2] takes 1.75x the single-process explorer's time on kraft-small and about the
same on zk-small, and far longer on the tiny configurations, whose levels are dominated by 0.3-1.3 s
of scheduling (``bench/explore_spark.py``, docs/performance.md); it is for state spaces that do not
fit one machine.
"""
from __future__ import annotations

import atexit
import functools
import importlib
import os
import queue
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from collections.abc import Iterator

from properties import partitioned as bfs

__all__ = ["SparkUnavailable", "ShardBatchFailed", "ShardFailed", "SparkShardExecutor",
           "SparkBackend", "explore_spark", "spark_session", "default_master", "python_cause"]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
MAX_FAILURES = 4            # attempts per Spark task (a dead Python worker costs one)
EXECUTOR_WAIT = 30.0        # seconds a cluster master may take to register its executors

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.pygw.name = org.apache.spark.api.python.PythonGatewayServer
logger.pygw.level = error
# A task attempt that fails (a dead Python worker, a raising shard) is retried; Spark would log
# each failed attempt with a JVM stack trace.  A task that fails every attempt still reaches the
# caller as a Python exception (ShardBatchFailed / Py4JJavaError) with Spark's message.
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = fatal
logger.tsm.name = org.apache.spark.scheduler.TaskSetManager
logger.tsm.level = fatal
"""


class SparkUnavailable(RuntimeError):
    """pyspark is not installed or Java cannot be found."""


class ShardBatchFailed(RuntimeError):
    """A batch of shards failed on every attempt Spark allowed."""


class ShardFailed(ShardBatchFailed):
    """A shard raised on an executor: ``index`` is its task index, ``type`` the Python
    exception's type name, ``description`` the exception on one line (type: message (raised
    at path:line in function))."""

    def __init__(self, index, type_name: str, description: str):
        self.index, self.type, self.description = index, type_name, description
        super().__init__(f"shard {index} failed: {description}")


# The line that ends a Python traceback: "module.Name: message" or a bare "Name" (frames are
# indented, so it is the first line after "Traceback ..." that is not).
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?::.*)?$")
_LOST_TASK = re.compile(r"most recent failure: Lost task .*?\): (.*)")
_JAVA_CLASS = re.compile(r"^(?:[a-z_]\w*\.)+[A-Z]\w*: ")


def python_cause(text: str, limit: int = 400) -> str:
    """The cause in Spark's text for a failed task, on one line: the exception line that ends
    the last Python traceback in it ("FileNotFoundError: [Errno 2] ..."); without one, the
    reason of the last lost task ("Python worker exited unexpectedly (crashed)"); else the
    first line."""
    lines = str(text).splitlines()
    starts = [i for i, line in enumerate(lines) if "Traceback (most recent call last):" in line]
    if starts:
        for line in lines[starts[-1] + 1:]:
            if line and not line[0].isspace() and _EXCEPTION_LINE.match(line.strip()):
                return _one_line(line, limit)
    for line in reversed(lines):
        m = _LOST_TASK.search(line)
        if m:
            return _one_line(_JAVA_CLASS.sub("", m.group(1)), limit)
    first = next((line for line in lines if line.strip()), "")
    return _one_line(_JAVA_CLASS.sub("", first.strip()), limit) or "unknown cause"


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _require_pyspark():
    try:
        importlib.import_module("pyspark")
    except ImportError as e:
        raise SparkUnavailable(
            "Spark support needs pyspark (and Java 17+): pip install 'kipcheck[spark]'") from e
    java_home = os.environ.get("JAVA_HOME")
    if not shutil.which("java") and not (java_home and Path(java_home, "bin", "java").exists()):
        raise SparkUnavailable("Spark needs a Java runtime (17 or newer): no 'java' on PATH and "
                               "JAVA_HOME is not set")


def default_master(executors: int | None = None, max_failures: int = MAX_FAILURES) -> str:
    """``local[N,F]``: N executor threads (default: every core), F attempts per task."""
    n = executors or os.cpu_count() or 1
    return f"local[{n},{max_failures}]"


def spark_session(master: str | None = None, executors: int | None = None,
                  app_name: str = "kipcheck", quiet: bool = True,
                  max_failures: int = MAX_FAILURES):
    """(SparkSession, created): the active session if there is one (then ``master`` and
    ``executors`` are not applied and ``created`` is False), else a new one configured as in
    the module docstring."""
    _require_pyspark()
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkContext._active_spark_context
    if active is not None:
        return SparkSession(active), False
    master = master or default_master(executors, max_failures)
    local = master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("SPARK_LOCAL_HOSTNAME", "localhost")
        os.environ["PYSPARK_PYTHON"] = sys.executable
    else:       # the executors' Python may live elsewhere: the user's PYSPARK_PYTHON wins
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if str(PROJECT_ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(PROJECT_ROOT)] + [p for p in paths if p])
    tmp = Path(tempfile.mkdtemp(prefix="kipcheck-spark-"))
    # Spark leaves its local directory behind; the JVM may write into it until the driver's
    # process ends, so it goes then
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    (tmp / "log4j2.properties").write_text(_LOG4J2)
    (tmp / "hypothesis").mkdir()
    b = (SparkSession.builder.master(master).appName(app_name)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.python.unix.domain.socket.enabled", "true")
         .config("spark.python.worker.reuse", "true")
         .config("spark.task.maxFailures", str(max_failures))
         .config("spark.sql.shuffle.partitions", str(2 * (executors or os.cpu_count() or 1)))
         .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
         .config("spark.local.dir", str(tmp))
         .config("spark.executorEnv.HYPOTHESIS_STORAGE_DIRECTORY", str(tmp / "hypothesis"))
         .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"]))
    if quiet:
        b = (b.config("spark.driver.extraJavaOptions",
                      f"-Dlog4j2.configurationFile=file:{tmp / 'log4j2.properties'}")
             .config("spark.python.daemon.module", "kipcheck.campaign.spark"))
    if local:       # a cluster's executors must reach the driver: Spark's own address there
        b = (b.config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1"))
    elif executors and master.startswith("spark://"):
        # a standalone master ignores spark.executor.instances and takes every free core:
        # N executors there are N one-core executors, at most N cores in all
        b = b.config("spark.executor.cores", "1").config("spark.cores.max", str(executors))
    elif executors:
        b = b.config("spark.executor.instances", str(executors))
    from kipcheck.campaign.shard import KILL_ENV, RAISE_ENV
    for name in (KILL_ENV, RAISE_ENV):      # test hooks reach workers of a JVM started earlier
        if os.environ.get(name):
            b = b.config(f"spark.executorEnv.{name}", os.environ[name])
    session = b.getOrCreate()
    if quiet:
        session.sparkContext.setLogLevel("ERROR")
    if not local:
        _await_executors(session.sparkContext)
    return session, True


def _await_executors(sc, limit: float = EXECUTOR_WAIT, settle: float = 2.0) -> int:
    """Wait until a cluster master's executors have registered: at least one, then no new one
    for ``settle`` seconds, at most ``limit`` seconds in all; returns how many registered.

    The SparkContext is returned before they register (a standalone master does not wait at
    all: ``spark.scheduler.minRegisteredResourcesRatio`` is 0 there, 0.8 on YARN and
    Kubernetes), and ``defaultParallelism`` counts only the cores registered so far, at least
    2: the campaign's concurrent shard batches (``SparkShardExecutor.slots``) and explore's
    partitions would stay at 2 and 4 on a cluster of any size.  Not with dynamic allocation,
    whose executors start only for submitted tasks."""
    if sc.getConf().get("spark.dynamicAllocation.enabled", "false").strip().lower() == "true":
        return 0
    status = sc._jsc.sc().getExecutorMemoryStatus     # the driver's block manager + executors'
    t0 = changed = time.monotonic()
    seen = 0
    while time.monotonic() - t0 < limit:
        n = status().size() - 1
        now = time.monotonic()
        if n != seen:
            seen, changed = n, now
        elif n > 0 and now - changed >= settle:
            break
        time.sleep(0.2)
    return seen


# ---- campaign shards --------------------------------------------------------------------------

def _run_batch(fn, spec, tasks) -> Iterator[dict]:
    """One Spark task: the shards of one partition, in order, as plain records.  A shard that
    raises ends the batch with its crash record (the exception as data, module docstring).
    Shard results are labelled with this executor: the host and the pid of its Python worker
    daemon, which every Python worker of one executor shares."""
    from kipcheck.campaign.shard import crash_record
    for task in tasks:
        try:
            r = fn(spec, task)
        except Exception as e:              # sent back as data (module docstring)
            yield crash_record(task, e)
            return
        if hasattr(r, "to_record"):
            r = r.to_record()
            r["executor"] = f"spark/{socket.gethostname()}/{os.getppid()}"
        yield r


class SparkShardExecutor:
    """Runs campaign shards on Spark executors (``local[N]`` by default).

    ``map_shards`` cuts the tasks into contiguous batches of at most two shards, and at least
    ``slots x waves`` of them (a Spark task costs 14-26 ms, so one should run for a second or
    more, which a shard does; several waves keep every executor busy
    when shards take unequal times) and submits every batch as its own one-task job from a pool
    of ``slots`` driver threads, so each batch's records are yielded as soon as it is done and
    the caller can write results while the campaign runs."""

    def __init__(self, master: str | None = None, executors: int | None = None,
                 app_name: str = "kipcheck", quiet: bool = True, *,
                 max_failures: int = MAX_FAILURES, waves: int = 4):
        t0 = time.perf_counter()
        self.session, self._owned = spark_session(master, executors, app_name, quiet,
                                                  max_failures)
        self.sc = self.session.sparkContext
        self.startup_seconds: float = time.perf_counter() - t0
        self.master: str = self.sc.master
        self.slots: int = max(1, self.sc.defaultParallelism)   # local[N]: N; cluster: cores
        self.waves = max(1, waves)
        self._stopped = False

    def map_shards(self, spec, tasks, fn=None, *, partitions: int | None = None
                   ) -> Iterator[dict]:
        """Yield ``fn(spec, task)`` as records (``ShardResult.to_record()`` dicts), in
        completion order, computed on the executors; ``fn`` defaults to
        ``kipcheck.campaign.shard.run_shard``.  Every task is yielded exactly once: a batch
        whose Python worker dies is re-run by Spark (up to ``max_failures`` attempts) and,
        shards being pure, gives the same records; a shard that raises raises ``ShardFailed``
        here with its exception's type and message (no retry: it would fail again), after the
        records of its batch that came before it; a batch that fails every attempt raises
        ``ShardBatchFailed`` with the Python cause (both after cancelling the other
        batches)."""
        from kipcheck.campaign.shard import crash_of
        if self._stopped:
            raise RuntimeError("this SparkShardExecutor has been stopped")
        if fn is None:
            from kipcheck.campaign.shard import run_shard as fn
        tasks = list(tasks)
        if not tasks:
            return
        # Batches of at most two shards (each shard should run >= 1 s, the runner warns
        # otherwise, so a batch outweighs a Spark task's 14-26 ms) and at least ``waves``
        # batches per slot: results stream back every shard or two, which is what the
        # progress line and an interrupted campaign's saved shards are made of.
        default = max(self.slots * self.waves, -(-len(tasks) // 2))
        n_parts = max(1, min(len(tasks), partitions or default))
        rdd = self.sc.parallelize(tasks, n_parts)
        func = functools.partial(_run_batch, fn, spec)
        group = f"kipcheck-shards-{uuid.uuid4().hex}"
        done: queue.Queue = queue.Queue()
        stop = threading.Event()

        def run(i: int) -> None:
            if stop.is_set():
                done.put((i, None))
                return
            try:
                self.sc.setJobGroup(group, f"kipcheck shard batch {i}", interruptOnCancel=True)
                done.put((i, self.sc.runJob(rdd, func, [i])))
            except BaseException as e:          # handed to the consumer, which re-raises
                done.put((i, e))

        pool = ThreadPoolExecutor(max_workers=min(n_parts, self.slots),
                                  thread_name_prefix="kipcheck-shards")
        for i in range(n_parts):
            pool.submit(run, i)
        received = 0
        try:
            while received < n_parts:
                i, out = done.get()
                received += 1
                if isinstance(out, BaseException):
                    raise ShardBatchFailed(
                        f"shard batch {i} ({_batch_of(tasks, n_parts, i)}) failed on every "
                        f"attempt: {python_cause(out)}") from out
                if out is None:
                    continue
                for record in out:
                    crash = crash_of(record)
                    if crash is not None:
                        raise ShardFailed(crash.get("index"), crash.get("type"),
                                          crash.get("description"))
                    yield record
        finally:
            if received < n_parts:
                stop.set()
                self.sc.cancelJobGroup(group)
            pool.shutdown(wait=True, cancel_futures=True)

    def stop(self) -> None:
        """Stop the SparkSession if this executor created it."""
        if not self._stopped:
            self._stopped = True
            if self._owned:
                self.session.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _batch_of(tasks: list, parts: int, i: int) -> str:
    """The tasks SparkContext.parallelize puts in partition ``i``: their keys (shards), else
    the range of their indices."""
    n = len(tasks)
    batch = tasks[i * n // parts:(i + 1) * n // parts]
    keys = [getattr(t, "key", None) for t in batch]
    if batch and all(keys):
        return "shards " + ", ".join(keys)
    ids = [getattr(t, "index", None) for t in batch]
    return f"tasks {ids[0]}..{ids[-1]}" if batch else "no tasks"


# ---- distributed exhaustive exploration -------------------------------------------------------

def _identity(k: int) -> int:
    """The partition function of every pair RDD of the BFS: keys are partition ids.  One
    function object, so Spark sees equal partitioners and aligns the unions."""
    return k


def _keys_of(record):
    return bfs.new_keys(record[1])


def _stats_of(record):
    return record[1].stats


def _recount_record(args: bfs.LevelArgs, below: int, record):
    p = record[1]
    return bfs.recount(p, args.spec, args.partitions, symmetry=args.symmetry,
                       wanted=args.wanted, per_transition=args.per_transition, below=below)


def _cut_value(args: bfs.LevelArgs, last_key, part):
    return bfs.cut(part, last_key, args.spec, wanted=args.wanted)


def _lookup_partition(depth: int, fp: int, records):
    for _, part in records:
        yield bfs.lookup(part, depth, fp)


class SparkBackend:
    """The partition states as a pair RDD ``(pid, Part)`` with ``P`` partitions; see the module
    docstring.  Every RDD that outlives a level is persisted and locally checkpointed (the
    lineage of an iterative job otherwise grows by a shuffle per level, pitfall P8)."""

    def __init__(self, sc, partitions: int):
        self.sc = sc
        self.P = partitions
        self.parts = None
        self.pending = None
        self.jobs = 0

    def _materialize(self, rdd) -> list:
        from pyspark import StorageLevel
        rdd.persist(StorageLevel.MEMORY_AND_DISK)
        rdd.localCheckpoint()
        stats = rdd.map(_stats_of).collect()
        self.jobs += 1
        return stats

    def start(self, parts: list) -> None:
        rdd = self.sc.parallelize([(p.pid, p) for p in parts], self.P).partitionBy(
            self.P, _identity)
        self._materialize(rdd)
        self.parts = rdd

    def level(self, a: bfs.LevelArgs) -> list:
        P = self.P
        shuffled = self.parts.mapPartitionsWithIndex(
            functools.partial(bfs.expand_records, a)).partitionBy(P, _identity)
        both = self.parts.union(shuffled)
        if both.partitioner is None or both.getNumPartitions() != P:
            raise RuntimeError("Spark did not align the union of the partition states with the "
                               "shuffled candidates (partitioners differ)")
        merged = both.mapPartitionsWithIndex(functools.partial(bfs.merge_records, a),
                                             preservesPartitioning=True)
        self._drop_pending()
        stats = self._materialize(merged)
        self.pending = merged
        return stats

    def accept(self) -> None:
        old, self.parts, self.pending = self.parts, self.pending, None
        if old is not None:
            old.unpersist()

    def recount(self, a: bfs.LevelArgs, below: int) -> list:
        self.jobs += 1
        return self.parts.map(functools.partial(_recount_record, a, below)).collect()

    def cut(self, a: bfs.LevelArgs, k: int) -> list:
        """Keep the first ``k`` new states in discovery order: the k-th smallest discovery key
        (one ``takeOrdered``, k keys on the driver) bounds what every partition keeps."""
        last = self.pending.flatMap(_keys_of).takeOrdered(k)[-1]
        rdd = self.pending.mapValues(functools.partial(_cut_value, a, last))
        stats = self._materialize(rdd)
        self._drop_pending()
        self.pending = rdd
        return stats

    def lookup(self, pid: int, depth: int, fp: int) -> int:
        self.jobs += 1
        (parent,) = self.sc.runJob(self.parts, functools.partial(_lookup_partition, depth, fp),
                                   [pid])
        return parent

    def _drop_pending(self) -> None:
        if self.pending is not None:
            self.pending.unpersist()
            self.pending = None

    def close(self) -> None:
        """Drop the cached partitions, waiting for the executors to answer: on a cluster, a
        session stopped with the removals still outstanding made the driver print "Still have
        N requests outstanding" and a RejectedExecutionException trace per request."""
        for rdd in (self.pending, self.parts):
            if rdd is not None:
                rdd.unpersist(blocking=True)
        self.pending = self.parts = None


def explore_spark(spec, *, master: str | None = None, executors: int | None = None,
                  symmetry: bool = False, max_states: int | None = None,
                  max_depth: int | None = None, progress=None, stop_at_violation: bool = True,
                  partitions: int | None = None, session=None):
    """Exhaustive BFS of ``spec`` on Spark, partitioned by state fingerprint; the result (an
    ``ExploreResult``) has the same counts, levels, violation, trace and violating state as
    ``properties.explore.explore(spec, ...)`` with the same arguments.

    ``session``: a SparkSession to use (left running); otherwise the active one is used (left
    running) or a new one is started from ``master``/``executors`` and stopped at the end.
    ``partitions``: fingerprint partitions (default 2 x the executor slots)."""
    owned = False
    if session is None:
        session, owned = spark_session(master, executors, "kipcheck-explore")
    try:
        sc = session.sparkContext
        P = partitions or 2 * max(1, sc.defaultParallelism)
        backend = SparkBackend(sc, P)
        try:
            return bfs.run_bfs(spec, backend, partitions=P, symmetry=symmetry,
                               max_states=max_states, max_depth=max_depth, progress=progress,
                               stop_at_violation=stop_at_violation, label="explore --spark")
        finally:
            backend.close()
    finally:
        if owned:
            session.stop()


# ---- the Python worker daemon ------------------------------------------------------------------

def _run_quiet_daemon() -> None:
    """PySpark's worker daemon (``pyspark.daemon.manager``) without one traceback.

    Spark reaps a Python worker that has been idle for a minute by closing its socket; the
    worker then fails to flush and PySpark's daemon prints a ``BrokenPipeError`` traceback to
    the job's stderr (reproduced with a session left idle for 75 s; Spark pitfall P5 saw it at
    ``stop()`` too).  Such a worker
    is ending anyway: here it ends quietly (code 1, as the daemon does for a worker that fails).
    A task whose worker dies mid-task is unaffected: the JVM sees the closed connection and
    retries the task.  Spark runs this as ``python -m kipcheck.campaign.spark`` when
    ``spark.python.daemon.module`` names this module (``spark_session(quiet=True)``)."""
    import pyspark.daemon as daemon
    worker = daemon.worker

    def quiet_worker(sock, authenticated):
        try:
            return worker(sock, authenticated)
        except BrokenPipeError:
            return 1

    daemon.worker = quiet_worker          # manager() looks ``worker`` up in its module
    daemon.manager()


if __name__ == "__main__":
    _run_quiet_daemon()
