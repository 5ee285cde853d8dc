"""What every worker process of kipcheck's pools does first: leave Ctrl-C to the parent, and die
with the parent.  A parent killed with SIGKILL (an out-of-memory kill, ``kill -9``, a CI job's
time limit) cannot stop its pool; without this its workers would go on exploring for minutes.
And how the parent stops a pool at once (``stop_pool``), on Ctrl-C or a failure."""
from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1       # linux/prctl.h


def die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to send this process SIGTERM when its parent exits (Linux's
    ``prctl(PR_SET_PDEATHSIG)``; elsewhere nothing), and exit now if the parent is already
    gone (it may have died before the request was made)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:
        os._exit(1)


def worker_init(parent_pid: int) -> None:
    """A pool worker's initializer: Ctrl-C is the parent's to handle (it stops the pool;
    otherwise every idle worker prints its own KeyboardInterrupt traceback), and the worker
    dies with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid)


def stop_pool(executor, join_timeout: float = 1.0) -> None:
    """Stop a ``ProcessPoolExecutor`` now: queued work is cancelled, running work is not
    waited for (an exploration may run for minutes), its processes are terminated."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    manager = getattr(executor, "_executor_manager_thread", None)
    executor.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    for proc in processes:
        proc.join(timeout=join_timeout)
    if manager is not None:
        # The pool's manager thread closes its wake-up pipe on the way out.  Python 3.11's exit
        # hook writes to that pipe if it is not closed yet, and the two race: the write can meet
        # a descriptor closed under it (EBADF: a traceback after kipcheck's "interrupted"
        # line).  With the thread finished, the hook sees the pipe closed and writes nothing.
        manager.join(timeout=5)
