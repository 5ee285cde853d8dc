"""Each class of bad input or failed output, for every command and option it concerns: one line
on stderr (``kipcheck: ...``), the documented exit code, no traceback, and for outputs no work
done first (the check comes before any exploration).

The campaign's own classes (its spec, its output directory, a shard that fails) are in
tests/test_campaign.py.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kipcheck import checkjob
from kipcheck.report import Report
from properties import inputs
from cli_helpers import one_line, run

ROOT = Path(__file__).resolve().parent.parent
ZOMBIE = ["--config", "zk-forward-zombie", "--variant", "zombie-writes-unfenced"]


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KIPCHECK_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


def _a_file(tmp_path) -> Path:
    f = tmp_path / "a-file"
    f.write_text("x")
    return f


# Paths no file can be written at: (id, path builder, what the message says)
UNWRITABLE_FILES = [
    ("directory", lambda d: d, "is a directory"),
    ("proc", lambda d: Path("/proc/kipcheck-out.json"), "cannot create a file in /proc"),
    ("under-a-file", lambda d: _a_file(d) / "out.json", "is not a directory"),
    ("missing-parent", lambda d: d / "no" / "such" / "out.json", "does not exist"),
]

# (command line without the output option, output option)
FILE_OUTPUTS = [
    (["explore", *ZOMBIE], "--trace-out"),
    (["explore", *ZOMBIE], "--itf-out"),
    (["explore", "--config", "zk-forward-zombie"], "--graph-out"),
    (["fuzz", "--config", "zk-forward-zombie", "--variant", "brokers-write-zk", "--seed", "1"],
     "--trace-out"),
    (["fuzz", "--config", "zk-forward-zombie", "--variant", "brokers-write-zk", "--seed", "1"],
     "--itf-out"),
    (["prove", "--config", "zk-forward-zombie", "--property", "P1"], "--trace-out"),
    (["replay", "TRACE"], "--itf-out"),
    (["replay", "TRACE"], "--mermaid-out"),
    (["check", "--configs", "zk-forward-zombie", "--engines", "explore"], "--json"),
]


def _trace_file(tmp_path) -> str:
    path = tmp_path / "z.json"
    path.write_text(json.dumps({"format": "kipcheck-trace", "version": 1,
                                "config": "zk-forward-zombie", "variant": "correct",
                                "steps": [["client_sends_request", [0]]]}))
    return str(path)


@pytest.mark.parametrize("where, make, message", UNWRITABLE_FILES,
                         ids=[u[0] for u in UNWRITABLE_FILES])
@pytest.mark.parametrize("argv, option", FILE_OUTPUTS,
                         ids=[f"{a[0]}{o}" for a, o in FILE_OUTPUTS])
def test_unwritable_output_file_is_refused_before_any_work(tmp_path, capsys, argv, option,
                                                           where, make, message):
    argv = [_trace_file(tmp_path) if a == "TRACE" else a for a in argv]
    target = str(make(tmp_path))
    code, out, err = run([*argv, option, target], capsys)
    line = one_line(err)
    assert code == 2
    assert line.startswith(f"kipcheck: {option} {target}: ") and message in line
    assert out == ""                                   # nothing ran, nothing printed


UNWRITABLE_DIRS = [
    ("a-file", lambda d: _a_file(d), "exists and is not a directory"),
    ("proc", lambda d: Path("/proc/kipcheck-report"), "cannot create files in /proc"),
    ("under-a-file", lambda d: _a_file(d) / "report", "is not a directory"),
]


@pytest.mark.parametrize("where, make, message", UNWRITABLE_DIRS,
                         ids=[u[0] for u in UNWRITABLE_DIRS])
def test_check_out_directory_is_refused_before_any_work(tmp_path, capsys, where, make, message):
    target = str(make(tmp_path))
    code, out, err = run(["check", "--configs", "zk-forward-zombie", "--engines", "explore",
                          "--out", target], capsys)
    line = one_line(err)
    assert code == 2 and line.startswith(f"kipcheck: --out {target}: ") and message in line
    assert out == ""


def test_an_existing_output_file_is_probed_without_being_truncated(tmp_path, capsys):
    f = tmp_path / "keep.json"
    f.write_text("precious")
    code, _, _ = run(["explore", "--config", "zk-forward-zombie", "--quiet",
                      "--trace-out", str(f)], capsys)
    assert code == 0 and f.read_text() == "precious"   # no violation, so no trace written
    assert not list(tmp_path.glob(".kipcheck-probe-*"))


def test_a_report_that_cannot_be_written_after_the_work_fails_the_check(tmp_path, capsys,
                                                                        monkeypatch):
    """The disk fills up while the check runs: the tables are printed, one line names the
    report that is missing, and the exit code is 2, not 0."""
    def full_disk(self, directory):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(Report, "write", full_disk)
    code, out, err = run(["check", "--configs", "zk-forward-zombie", "--engines", "explore",
                          "--jobs", "1", "--out", str(tmp_path / "rep")], capsys)
    assert code == 2
    assert "Property x engine" in out and "FAILED: the results are above" in out
    lines = [x for x in err.splitlines() if x.startswith("kipcheck: ")]
    assert lines == [f"kipcheck: cannot write the report to {tmp_path / 'rep'}: "
                     f"No space left on device"]
    assert "Traceback" not in err


def test_a_job_that_raises_is_named_with_its_exception_and_exits_2(capsys, monkeypatch):
    def broken(config, variant, symmetry):
        raise RuntimeError(f"schema directory missing for {config}")
    monkeypatch.setattr(checkjob, "_explore", broken)
    code, out, err = run(["check", "--configs", "zk-forward-zombie", "--engines", "explore",
                          "--jobs", "1", "--out", ""], capsys)
    assert code == 2
    assert ("explore on zk-forward-zombie [correct] stopped with RuntimeError: schema "
            "directory missing for zk-forward-zombie") in out
    assert "Traceback" not in out + err


@pytest.mark.parametrize("value", ["", " , ", ","])
def test_an_empty_selection_is_bad_input(capsys, value):
    """An empty CI variable (--configs "$CONFIGS") must not turn the gate green."""
    code, out, err = run(["check", "--configs", value], capsys)
    assert code == 2 and "selects no configuration" in one_line(err) and out == ""


def test_no_command_prints_usage_on_stderr_and_exits_2(capsys):
    code, out, err = run([], capsys)
    line = one_line(err)
    assert (code, out) == (2, "")
    assert "usage: kipcheck COMMAND" in line and "check" in line and "lint-config" in line


# ---- input files ------------------------------------------------------------------------------

BAD_TEXT = [
    ("utf-16", "\ufeff{}".encode("utf-16-le"),
     "UTF-16 text; kipcheck reads UTF-8 (convert it, e.g. with iconv -f UTF-16 -t UTF-8)"),
    ("latin-1", b'{"config": "caf\xe9"}', "not UTF-8 text (byte 0xe9 at offset 15)"),
    ("binary", bytes(range(256)), "binary, not text (it contains NUL bytes)"),
    ("deep-json", b"[" * 5000 + b"]" * 5000, "nested more than 64 levels deep"),
    ("deep-objects", b'{"a":' * 3000 + b"1" + b"}" * 3000, "nested more than 64 levels deep"),
]


@pytest.mark.parametrize("kind, data, message", BAD_TEXT, ids=[b[0] for b in BAD_TEXT])
def test_a_trace_that_is_not_utf8_json_or_too_deep_is_one_line(tmp_path, capsys, kind, data,
                                                                message):
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    code, out, err = run(["replay", str(path)], capsys)
    assert (code, out) == (2, "")
    assert one_line(err) == f"kipcheck: trace {path}: {message}"


def test_a_trace_over_the_size_limit_is_refused_unread(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(inputs, "MAX_BYTES", 1000)
    path = tmp_path / "big.json"
    path.write_text(" " * 1001)
    code, _, err = run(["replay", str(path)], capsys)
    assert code == 2 and one_line(err) == (f"kipcheck: trace {path}: too large (1,001 bytes; "
                                           f"the limit is 1,000)")


def test_depth_scan_ignores_brackets_in_strings_and_comments():
    assert inputs.nesting_depth('{"a": "[[[[[[", "b": [1, {"c": 2}]}', limit=64) == 3
    assert inputs.nesting_depth("a = 1 # [[[[[[[[\nb = ['[[[', {c = 1}]", limit=64) == 2
    assert inputs.nesting_depth('"\\"[[[[" [', limit=64) == 1


@pytest.mark.parametrize("data", [bytes(range(256)), "\ufeffa=b".encode("utf-16-le"),
                                  b"[" * 5000])
def test_lint_config_reads_any_bytes_as_kafka_does(tmp_path, capsys, data):
    """A properties file is ISO-8859-1 to Kafka (Properties.load(InputStream)): binary input is
    a configuration Kafka refuses or accepts, never a traceback."""
    path = tmp_path / "odd.properties"
    path.write_bytes(data)
    code, out, err = run(["lint-config", str(path)], capsys)
    assert code in (0, 1, 2) and "Traceback" not in out + err
    assert err == "" or len(err.splitlines()) == 1


def test_lint_config_refuses_a_huge_file(tmp_path, capsys):
    path = tmp_path / "huge.properties"
    path.write_bytes(b"#" * (4 * 1024 * 1024 + 1))
    code, out, err = run(["lint-config", str(path)], capsys)
    assert (code, out) == (2, "") and "too large for a properties file" in one_line(err)


# ---- Ctrl-C -------------------------------------------------------------------------------------

def test_check_workers_die_with_a_killed_parent(tmp_path):
    """A ``check`` killed with SIGKILL (an out-of-memory kill, a CI job's time limit) cannot
    stop its pool: its workers must not go on exploring without it (kipcheck.workers)."""
    env = {**os.environ, "KIPCHECK_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kipcheck", "check", "--configs", "zk-small,kraft-small",
         "--engines", "explore", "--jobs", "2", "--out", ""], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()
    assert first.startswith("kipcheck check:"), first
    time.sleep(3)                                       # workers are busy exploring
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                             text=True).stdout.split()
    proc.kill()
    proc.wait()

    def alive():
        return [pid for pid in workers if Path(f"/proc/{pid}").exists()
                and "zombie" not in Path(f"/proc/{pid}/status").read_text()]
    deadline = time.monotonic() + 10
    while alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    left = alive()
    for pid in left:
        subprocess.run(["kill", "-9", pid], capture_output=True)
    assert workers, "the check's worker processes were not found"
    assert left == [], f"workers {left} outlived their killed parent"


def test_check_stops_soon_after_ctrl_c(tmp_path):
    """``check`` on the small configurations would explore for many minutes; Ctrl-C (SIGINT
    to the kipcheck process) ends it promptly with exit 130 and one line, its worker processes
    included.  The issue asks for 2 s; the bound here is loose so that a loaded CI machine
    does not fail it, and the measured delay is printed."""
    env = {**os.environ, "KIPCHECK_CACHE": str(tmp_path / "cache")}
    # as from an interactive shell: SIGINT at its default disposition, whatever this test
    # process inherited (a child inherits an ignored SIGINT, and Python then never raises
    # KeyboardInterrupt)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kipcheck", "check", "--configs", "zk-small,kraft-small",
         "--engines", "explore", "--jobs", "2", "--out", ""], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = proc.stderr.readline()                      # the plan: the pool is starting
    assert first.startswith("kipcheck check:"), first
    time.sleep(3)                                       # workers are busy exploring
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                             text=True).stdout.split()
    if not workers:
        proc.kill()
        pytest.fail("the check's worker processes were not found")
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        for pid in workers:             # a killed parent leaves its workers running
            subprocess.run(["kill", "-9", pid], capture_output=True)
        pytest.fail("check did not stop within 20 s of SIGINT")
    delay = time.monotonic() - t0
    print(f"check stopped {delay:.2f} s after SIGINT")
    assert proc.returncode == 130
    assert "kipcheck: interrupted after 0 of" in err and "Traceback" not in err + out
    assert delay < 10
    # no worker survives its parent
    time.sleep(0.5)
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()
             and "zombie" not in Path(f"/proc/{pid}/status").read_text()]
    assert alive == []


def test_a_stopped_pool_leaves_nothing_for_the_exit_hook():
    """``stop_pool`` (Ctrl-C in ``check`` and in a campaign) terminates the workers mid-job and
    waits for the pool's manager thread, which closes its wake-up pipe: Python 3.11's exit hook
    then has nothing to write to (racing it, the write met a closed descriptor and printed a
    traceback after "interrupted", seen once in ``test_check_stops_soon_after_ctrl_c`` in a
    fresh-clone run of ``.ci/run``)."""
    import concurrent.futures.process as pool_module
    from concurrent.futures import ProcessPoolExecutor

    from kipcheck.workers import stop_pool, worker_init
    pool = ProcessPoolExecutor(max_workers=2, initializer=worker_init, initargs=(os.getpid(),))
    futures = [pool.submit(time.sleep, 60) for _ in range(4)]
    deadline = time.monotonic() + 20
    while not any(f.running() for f in futures) and time.monotonic() < deadline:
        time.sleep(0.05)
    processes = list(pool._processes.values())
    manager = pool._executor_manager_thread
    wakeup = pool_module._threads_wakeups[manager]
    t0 = time.monotonic()
    stop_pool(pool)
    assert time.monotonic() - t0 < 10                # not the 60 s of the running jobs
    assert processes and not any(p.is_alive() for p in processes)
    assert not manager.is_alive() and wakeup._closed
