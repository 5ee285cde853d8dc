"""Stopping a long exploration early and keeping what it found: ``explore(max_seconds=...,
interruptible=True)`` in one process and on workers, and ``kipcheck explore --max-seconds`` and
Ctrl-C (exit 3 and 130, the summary of the levels finished printed, no traceback)."""
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import one_line, run
from properties.explore import INTERRUPTED, MAX_SECONDS, Stopper, explore
from properties.kafka_spec import KafkaSpec

CONFIG = "zk-forward-zombie"            # 2,690 states, 20 levels: quick to explore in full


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("KIPCHECK_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


class _CtrlCAfter(KafkaSpec):
    """The spec whose ``successors`` sends SIGINT to ``target()`` at its ``after``-th call, as
    a user's Ctrl-C arriving in the middle of a level: once, whichever worker process gets
    there first (each worker counts its own calls; a second SIGINT would abort the search)."""

    def __init__(self, name, after, target):
        super().__init__(KafkaSpec.named(name).cfg)
        self.after, self.target, self.calls = after, target, 0
        self.sent = multiprocessing.get_context("fork").Value("b", 0)  # shared by the workers

    def successors(self, state):
        self.calls += 1
        if self.calls == self.after:
            with self.sent.get_lock():
                if not self.sent.value:
                    self.sent.value = 1
                    os.kill(self.target(), signal.SIGINT)
        return super().successors(state)


@pytest.fixture(scope="module")
def full():
    """The whole search, to compare the stopped ones with."""
    return explore(KafkaSpec.named(CONFIG), workers=1)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_time_budget_stops_the_search_and_keeps_the_levels_before(workers, full):
    r = explore(KafkaSpec.named(CONFIG), workers=workers, max_seconds=1e-9)
    assert not r.complete and r.stop_reason == MAX_SECONDS
    # the budget is spent before level 0 is expanded in full: level 1 is dropped
    assert r.states_per_depth == full.states_per_depth[:1] and r.distinct == 1
    assert r.violation is None and not r.graph_checked


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_stops_the_search_and_keeps_the_levels_before(workers, full):
    before = signal.getsignal(signal.SIGINT)
    # one process: the 1,000th state expanded; on workers, a worker's 400th sends the SIGINT to
    # the driver (Ctrl-C in a terminal reaches every process of the group; the workers ignore it)
    spec = (_CtrlCAfter(CONFIG, 1000, os.getpid) if workers == 1
            else _CtrlCAfter(CONFIG, 400, os.getppid))
    r = explore(spec, workers=workers, interruptible=True)
    assert not r.complete and r.stop_reason == INTERRUPTED
    levels = len(r.states_per_depth)
    assert 1 < levels < len(full.states_per_depth)
    # the levels stored are the full search's, the one being expanded is dropped
    assert r.states_per_depth == full.states_per_depth[:levels]
    assert r.distinct == sum(full.states_per_depth[:levels])
    if workers == 1:                    # the 1,000th expansion is in the level after the last
        assert sum(full.states_per_depth[:levels - 1]) < 1000 <= sum(
            full.states_per_depth[:levels])
    assert not r.graph_checked
    assert signal.getsignal(signal.SIGINT) is before        # the handler is put back


def test_a_second_ctrl_c_raises_keyboard_interrupt():
    with Stopper(interruptible=True) as stopper:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)
        assert stopper.should_stop() and stopper.reason == INTERRUPTED
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)


def test_without_a_stopper_ctrl_c_is_a_keyboard_interrupt():
    """The library default: interruptible=False leaves Ctrl-C alone (kipcheck check and the
    campaigns stop on KeyboardInterrupt themselves).  Python's own SIGINT handler is put in
    place for the test: a pytest-xdist worker ignores SIGINT."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            explore(_CtrlCAfter(CONFIG, 100, os.getpid), workers=1)
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_cli_refuses_a_bad_time_budget(value, capsys):
    code, _, err = run(["explore", "--config", CONFIG, f"--max-seconds={value}"], capsys)
    assert code == 2
    assert "--max-seconds" in one_line(err)


def test_cli_time_budget_reports_the_levels_finished(capsys):
    code, out, err = run(["explore", "--config", "zk-small", "--workers", "1",
                          "--max-seconds", "0.5", "--quiet"], capsys)
    assert code == 3, out + err
    first = out.splitlines()[0]
    assert first.startswith("zk-small[correct]: ") and "INCOMPLETE (max_seconds)" in first
    assert "no property violated within the bounds" in out
    assert "INCOMPLETE: the search stopped early (max_seconds)" in out
    assert "Traceback" not in err


def test_cli_ctrl_c_prints_the_summary_and_exits_130(tmp_path):
    """As from a terminal: SIGINT to the whole process group, workers included, while the
    search is under way; the summary of the levels finished comes out and no process is
    left."""
    env = {**os.environ, "KIPCHECK_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kipcheck", "explore", "--config", "zk-small", "--workers", "2"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = proc.stderr.readline()                   # the first progress line: under way
        assert line.startswith("[explore] depth"), line
        workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                 text=True).stdout.split()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, out + err
    assert "-- INCOMPLETE (interrupted)" in out.splitlines()[0]
    assert "no property violated within the bounds" in out
    assert "INCOMPLETE: the search stopped early (interrupted)" in out
    assert "Traceback" not in err + out
    assert "incomplete (interrupted)" in err            # the last progress line
    time.sleep(0.5)
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()
             and "zombie" not in Path(f"/proc/{pid}/status").read_text()]
    assert workers and alive == []
