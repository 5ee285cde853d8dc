"""What every worker process of kipcheck's pools does first: leave Ctrl-C to the parent, and die
with the parent.  A parent killed with SIGKILL (an out-of-memory kill, ``kill -9``, a CI job's
time limit) cannot stop its pool; without this its workers would go on exploring for minutes."""
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
