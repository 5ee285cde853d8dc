"""kipcheck on a real Spark standalone cluster: one master and two workers started from pyspark's
own launch classes, a campaign and ``kipcheck explore --spark`` run against
``--master spark://127.0.0.1:PORT``, and their results compared with the same commands in local
mode (issue 18, item 5).

The cluster (a module fixture) is what docs/campaigns.md, "Running on an existing cluster",
starts by hand: ``$SPARK_HOME/bin/spark-class org.apache.spark.deploy.master.Master`` and two
``...deploy.worker.Worker`` with SPARK_HOME = pyspark's package directory, everything on
127.0.0.1, every port chosen by the system (``--port 0``, ``--webui-port 0``; the master's URL is
read from its log), the master's REST server off, 2 cores and 1 GiB per worker, a temporary
SPARK_CONF_DIR whose log4j2.properties keeps only ERROR lines and the Master/Worker INFO lines
this fixture waits for ("Starting Spark master at", "Registering worker").  The two cores per
worker (on any machine: a worker's cores are what it offers, not what it has) make 4 task slots,
more than the 2 Spark reports before the executors register: the campaign must run more than 2
shards at once (``spark_session`` waits for the executors).  Each daemon runs in its own process
group, which holds a worker's executors; the finalizer terminates the groups and fails if a
process of them, or below the daemons, survives (PySpark's Python daemons start a process group
of their own).

kipcheck runs as a user runs it: ``python -m kipcheck ...`` subprocesses, from a temporary
directory, the cluster's run and its local twin at the same time.  Equal means: explore prints
the same counts, coverage, verdict and counterexample (only the timing differs) and writes the
same trace; the campaign writes records with the same deterministic columns and digests
(kipcheck/campaign/results.py) and its JSON summary is the same once wall times are dropped.
The worker directories prove where it ran: every cluster run adds an application with an
executor on each worker, told to reach the driver on the loopback interface.  The campaign's
executors run a ``PYSPARK_PYTHON`` of the test's own (kept for a cluster master).

Marked ``spark`` (CI: ``make test-spark``) and ``slow``; 2.5 minutes on the project's 2-core
machine while other jobs kept it busy (load average 7-11; three JVMs of the cluster, two
executors per cluster run, four drivers).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java 17 (no java on PATH, no JAVA_HOME)", allow_module_level=True)

pytestmark = [pytest.mark.slow, pytest.mark.spark]

START_TIMEOUT = 90          # seconds for the master to start and both workers to register
RUN_TIMEOUT = 240           # seconds for one kipcheck command
CORES = 2                   # per worker (see the module docstring)
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"

# ERROR only, except the two daemons' INFO lines the fixture waits for (the master's URL, the
# workers' registration).  Executors launched by the workers read the same SPARK_CONF_DIR.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.master.name = org.apache.spark.deploy.master.Master
logger.master.level = info
logger.worker.name = org.apache.spark.deploy.worker.Worker
logger.worker.level = info
"""

_CAMPAIGN = """\
name = "cluster"
seed = 20261127
configurations = ["zk-envelope-security"]
variants = ["correct", "envelope-any-listener"]
engines = ["stateful", "random-walk"]
shards = 2
coverage = "auto"
determinism_check = 1

[budget]
rounds = 2
examples_per_round = 10
steps_per_example = 60
walk_steps = 3000
walk_depth = 30
"""


# Left by an earlier Spark test in this process (spark_session sets them for local mode) or
# by the user's shell: each process here gets only what it is given.
_INHERITED = ("SPARK_HOME", "SPARK_CONF_DIR", "SPARK_ENV_LOADED", "SPARK_LOCAL_IP",
              "SPARK_LOCAL_HOSTNAME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")


def _environment(**env: str) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in _INHERITED}
    return dict(base, **env)


# ---- the cluster --------------------------------------------------------------------------------

def _launcher(spark_home: Path, conf: Path) -> list[str]:
    """How to run a Spark class: pyspark's ``bin/spark-class``; a pyspark without it gets the
    JVM directly, with what spark-class would add (the configuration directory and pyspark's
    jars on the class path, the daemon's memory, SPARK_MASTER_OPTS)."""
    spark_class = spark_home / "bin" / "spark-class"
    if spark_class.is_file() and os.access(spark_class, os.X_OK):
        return [str(spark_class)]
    java = (Path(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME")
            else shutil.which("java"))
    return [str(java), "-Xmx512m", "-Dspark.master.rest.enabled=false",
            "-cp", f"{conf}{os.pathsep}{spark_home / 'jars' / '*'}"]


class Cluster:
    def __init__(self, root: Path):
        import pyspark
        self.spark_home = Path(os.path.dirname(pyspark.__file__))
        self.root = root
        self.conf = root / "conf"
        self.logs = root / "logs"
        for d in (self.conf, self.logs):
            d.mkdir()
        (self.conf / "log4j2.properties").write_text(_LOG4J2)
        self.env = _environment(SPARK_HOME=str(self.spark_home), SPARK_CONF_DIR=str(self.conf),
                                SPARK_LOG_DIR=str(self.logs), SPARK_LOCAL_IP="127.0.0.1",
                                SPARK_DAEMON_MEMORY="512m",
                                SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")
        self.procs: list[subprocess.Popen] = []
        self.work_dirs: list[Path] = []
        self.url = ""

    def _start(self, name: str, args: list[str]) -> tuple[subprocess.Popen, Path]:
        log = self.logs / f"{name}.log"
        with open(log, "wb") as f:
            proc = subprocess.Popen(_launcher(self.spark_home, self.conf) + args, env=self.env,
                                    cwd=self.root, stdin=subprocess.DEVNULL, stdout=f,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc, log

    def _wait(self, pattern: str, log: Path, proc: subprocess.Popen, count: int,
              deadline: float) -> list[str]:
        regex = re.compile(pattern)
        while True:
            found = regex.findall(log.read_text(errors="replace"))
            if len(found) >= count:
                return found
            if proc.poll() is not None:
                pytest.fail(f"{log.stem} exited with {proc.returncode} before {pattern!r}:\n"
                            f"{log.read_text(errors='replace')[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {pattern!r} in {log} within {START_TIMEOUT} s:\n"
                            f"{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.3)

    def start(self, workers: int = 2) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        master, mlog = self._start("master", [MASTER, "--host", "127.0.0.1", "--port", "0",
                                              "--webui-port", "0"])
        self.url = self._wait(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", mlog,
                              master, 1, deadline)[0]
        for i in range(workers):
            work = self.root / f"work-{i}"
            work.mkdir()
            self.work_dirs.append(work)
            self._start(f"worker-{i}", [WORKER, "--host", "127.0.0.1", "--port", "0",
                                        "--webui-port", "0", "--cores", str(CORES),
                                        "--memory", "1g",
                                        "--work-dir", str(work), self.url])
        self._wait(r"Registering worker 127\.0\.0\.1:\d+", mlog, master, workers, deadline)

    def applications(self) -> dict[str, set[int]]:
        """Application id -> the workers (by number) that ran an executor of it."""
        apps: dict[str, set[int]] = {}
        for i, work in enumerate(self.work_dirs):
            for app in work.glob("app-*"):
                if any(app.iterdir()):
                    apps.setdefault(app.name, set()).add(i)
        return apps

    def stop(self) -> list[str]:
        """Terminate every daemon's process group, workers first (SIGTERM, then SIGKILL after
        30 s); the processes of those groups or below the daemons (PySpark's Python daemons
        start a process group of their own) still alive afterwards, as ``ps`` lines."""
        groups = {proc.pid for proc in self.procs}
        watched = groups | _descendants(groups)
        for proc in reversed(self.procs):
            _signal_group(proc.pid, signal.SIGTERM)
        end = time.monotonic() + 30
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        while _alive(watched, groups) and time.monotonic() < end:
            time.sleep(0.2)
        left = _alive(watched, groups)
        for line in left:
            try:
                os.kill(int(line.split()[0]), signal.SIGKILL)
            except ProcessLookupError:
                pass
        return left


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _processes() -> list[tuple[int, int, int, str]]:
    """(pid, parent pid, process group, command line) of every process."""
    ps = subprocess.run(["ps", "-eo", "pid=,ppid=,pgid=,args="], capture_output=True, text=True,
                        check=True).stdout
    rows = []
    for line in ps.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4:
            rows.append((int(parts[0]), int(parts[1]), int(parts[2]), parts[3]))
    return rows


def _descendants(roots: set[int]) -> set[int]:
    rows = _processes()
    found, frontier = set(), set(roots)
    while frontier:
        frontier = {pid for pid, ppid, _, _ in rows if ppid in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int], groups: set[int]) -> list[str]:
    return [f"{pid} {pgid} {args[:160]}" for pid, _, pgid, args in _processes()
            if pid in pids or pgid in groups]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        c.start()
        yield c
    finally:
        left = c.stop()
        assert not left, f"processes of the cluster survived its stop: {left}"


# ---- kipcheck as a user runs it -----------------------------------------------------------------

def _kipcheck(cwd: Path, *runs: tuple[list[str], dict]) -> list[tuple[int, str, str]]:
    """``python -m kipcheck ARGS`` for each (ARGS, environment additions), all at once (the
    cluster's run and its local twin spend much of their time waiting: for JVMs, executors,
    scheduling), each in its own process group (a driver and its JVM are killed together if it
    overruns); (exit code, stdout, stderr) of each, whose stderr must hold no error, exception
    or traceback (on a cluster, a session stopped with requests outstanding printed some)."""
    procs = []
    for i, (args, env) in enumerate(runs):
        with open(cwd / f"run-{i}.out", "w") as out, open(cwd / f"run-{i}.err", "w") as err:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "kipcheck", *args], cwd=cwd, env=_environment(**env),
                stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True))
    deadline = time.monotonic() + RUN_TIMEOUT
    results = []
    try:
        for i, proc in enumerate(procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pytest.fail(f"kipcheck {' '.join(runs[i][0])} ran over {RUN_TIMEOUT} s:\n"
                            f"{(cwd / f'run-{i}.err').read_text()[-3000:]}")
            out, err = (cwd / f"run-{i}.out").read_text(), (cwd / f"run-{i}.err").read_text()
            noise = [line for line in err.splitlines()
                     if "Traceback" in line or "Exception" in line or " ERROR " in line]
            assert not noise, err[-5000:]
            results.append((proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
    return results


def _new_application(cluster, before: dict) -> None:
    """The command ran on the cluster: one new application, with an executor on each worker,
    each told to reach the driver on the loopback interface (the executor's command line, at the
    top of its stderr: with SPARK_LOCAL_IP=127.0.0.1 Spark names the driver "localhost")."""
    new = {app: workers for app, workers in cluster.applications().items() if app not in before}
    assert len(new) == 1, (before, cluster.applications())
    assert list(new.values()) == [set(range(len(cluster.work_dirs)))], new
    for stderr in (w / app / executor / "stderr" for app in new for w in cluster.work_dirs
                   for executor in os.listdir(w / app)):
        drivers = re.findall(r'"--driver-url" "spark://CoarseGrainedScheduler@([^:"]+):',
                             stderr.read_text(errors="replace"))
        assert len(drivers) == 1 and drivers[0] in ("127.0.0.1", "localhost"), \
            stderr.read_text(errors="replace")[:3000]


_TIMING = re.compile(r", [\d.]+ s \([\d,]+ distinct/s\)")


def test_explore_spark_on_a_standalone_cluster_equals_local_mode(cluster, tmp_path):
    """A seeded variant whose shortest counterexample is 3 steps deep: the level jobs, the
    parent look-ups that rebuild the trace, and the verdict."""
    base = ["explore", "--config", "zk-migration", "--variant",
            "entity-config-check-passes-recreated-controller", "--spark", "--quiet"]
    before = cluster.applications()
    (code, out, err), (local_code, local_out, _) = _kipcheck(
        tmp_path,
        (base + ["--master", cluster.url, "--trace-out", str(tmp_path / "cluster.json")],
         {"SPARK_LOCAL_IP": "127.0.0.1"}),
        (base + ["--trace-out", str(tmp_path / "local.json")], {}))
    _new_application(cluster, before)
    assert (code, local_code) == (1, 1), (out, err)
    assert "56 distinct states" in out and "VIOLATED P1" in out, out
    assert (_TIMING.sub("", out).replace("cluster.json", "T.json")
            == _TIMING.sub("", local_out).replace("local.json", "T.json"))
    assert (json.loads((tmp_path / "cluster.json").read_text())
            == json.loads((tmp_path / "local.json").read_text()))


_WALL = {"seconds", "shard_seconds", "directory", "resume_hint"}
_REACH = re.compile(r"reachable set (?:from the cache|explored in [\d.]+ s)")


def _deterministic(doc):
    """The JSON summary without wall times and paths."""
    if isinstance(doc, dict):
        return {k: _deterministic(v) for k, v in doc.items() if k not in _WALL}
    if isinstance(doc, list):
        return [_deterministic(v) for v in doc]
    return _REACH.sub("reachable set", doc) if isinstance(doc, str) else doc


# the columns marked * in kipcheck/campaign/results.py (the digest's), and the digest
_RECORD = ("index", "key", "config", "variant", "engine", "shard", "seed", "swarms", "rounds",
           "steps", "distinct", "fingerprints", "witnesses", "actions", "stop_reason",
           "model_hash", "digest")


def _records(directory: Path) -> dict:
    from kipcheck.campaign.results import ResultStore
    out = {}
    for r in ResultStore(directory).load_records():
        row = {k: r[k] for k in _RECORD}
        row["failures"] = [(f["property"], f["clause"], f["trace"], f["trace_length"])
                           for f in r["failures"]]
        out[r["key"]] = (row, r["executor"], r["started_at"], r["ended_at"])
    return out


def _most_at_once(spans) -> int:
    """The largest number of (start, end) spans that overlap."""
    edges = sorted([(end, -1) for _, end in spans] + [(start, 1) for start, _ in spans])
    most = running = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def test_campaign_on_a_standalone_cluster_equals_local_mode(cluster, tmp_path):
    spec = tmp_path / "cluster.toml"
    spec.write_text(_CAMPAIGN)
    # the executors' Python as a user names it: a PYSPARK_PYTHON of their own is kept on a
    # cluster (here a wrapper that notes each start, then runs this interpreter)
    starts = tmp_path / "python-starts"
    python = tmp_path / "executor-python"
    python.write_text(f"#!/bin/sh\necho $$ >> {shlex.quote(str(starts))}\n"
                      f"exec {shlex.quote(sys.executable)} \"$@\"\n")
    python.chmod(0o755)
    before = cluster.applications()
    (code, out, err), (local_code, local_out, local_err) = _kipcheck(
        tmp_path,
        (["campaign", str(spec), "--master", cluster.url, "--quiet", "--json",
          "--out", str(tmp_path / "on-cluster")],
         {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": str(python)}),
        (["campaign", str(spec), "--quiet", "--json", "--out", str(tmp_path / "local")], {}))
    _new_application(cluster, before)
    assert starts.exists(), "the executors did not run the PYSPARK_PYTHON given"
    assert (code, local_code) == (0, 0), (err, local_err)
    summary, local = json.loads(out), json.loads(local_out)
    assert summary["ok"] and summary["done"] == summary["tasks"] == 8, summary
    assert summary["variants_found"] == {"envelope-any-listener": ["P4"]}, summary
    assert _deterministic(summary) == _deterministic(local)
    on_cluster, here = _records(tmp_path / "on-cluster"), _records(tmp_path / "local")
    assert {k: v[0] for k, v in on_cluster.items()} == {k: v[0] for k, v in here.items()}
    assert len(on_cluster) == 8
    assert all(executor.startswith("spark/") for _, executor, _, _ in on_cluster.values())
    # the cluster's 4 task slots ran shards at once (the driver counts its slots once the
    # executors have registered; before they do, Spark reports 2)
    assert _most_at_once([(s, e) for _, _, s, e in on_cluster.values()]) > 2
    meta = json.loads((tmp_path / "on-cluster" / "campaign.json").read_text())
    assert meta["runs"][-1]["engine"] == "spark" and meta["runs"][-1]["master"] == cluster.url


def test_executors_caps_a_standalone_application(cluster, tmp_path):
    """``--executors 1`` on a standalone master: one one-core executor on one worker (the master
    ignores spark.executor.instances), so one shard at a time, the same records as the run on
    the whole cluster would give; and the driver's Spark directory is gone after it."""
    spec = tmp_path / "cluster.toml"
    spec.write_text(_CAMPAIGN)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    before = cluster.applications()
    [(code, out, err)] = _kipcheck(
        tmp_path,
        (["campaign", str(spec), "--master", cluster.url, "--executors", "1", "--quiet",
          "--json", "--out", str(tmp_path / "one")],
         {"SPARK_LOCAL_IP": "127.0.0.1", "TMPDIR": str(tmp)}))
    assert code == 0, err
    new = {app: workers for app, workers in cluster.applications().items() if app not in before}
    assert len(new) == 1 and [len(w) for w in new.values()] == [1], cluster.applications()
    summary = json.loads(out)
    assert summary["ok"] and summary["done"] == 8, summary
    assert summary["variants_found"] == {"envelope-any-listener": ["P4"]}, summary
    records = _records(tmp_path / "one")
    assert _most_at_once([(s, e) for _, _, s, e in records.values()]) == 1
    assert not list(tmp.glob("kipcheck-spark-*")), list(tmp.iterdir())
