"""Output files and directories named on the command line (``--trace-out``, ``--itf-out``,
``--graph-out``, ``--mermaid-out``, ``check --json``, ``check --out``, ``campaign --out``).

Each command checks its outputs before any work starts (``check_output_file``,
``check_output_dir``: one line, exit 2), so that an hour of exploration is not lost to a typo
in a path; a write that still fails later (a full disk, a directory removed meanwhile) is
reported in one line by ``write_output`` and turns the exit code into 2 once the results have
been printed.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from collections.abc import Callable

from kipcheck.errors import BadInput


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _probe_directory(directory: Path) -> str | None:
    """Why a file cannot be created in ``directory``, or None.  Creating one is the only test
    that holds for root (who passes every permission check) and for pseudo file systems such
    as /proc (where even root cannot create files)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".kipcheck-probe-", dir=directory)
    except OSError as e:
        return e.strerror or str(e)
    os.close(fd)
    os.unlink(name)
    return None


def check_output_file(option: str, path: str | None) -> None:
    """BadInput unless a file can be written at ``path`` (an existing file is appended to for
    the probe, never truncated; a new one is created and removed again)."""
    if not path:
        return
    p = Path(path)
    if p.is_dir():
        raise BadInput(f"{option} {path}: is a directory; give a file name")
    if p.exists():
        try:
            with open(p, "ab"):
                pass
        except OSError as e:
            raise BadInput(f"{option} {path}: cannot write to it: {e.strerror or e}") from None
        return
    parent = p.parent
    if not parent.exists():
        raise BadInput(f"{option} {path}: directory {parent} does not exist")
    if not parent.is_dir():
        raise BadInput(f"{option} {path}: {parent} is not a directory")
    why = _probe_directory(parent)
    if why:
        raise BadInput(f"{option} {path}: cannot create a file in {parent}: {why}")


def check_output_dir(option: str, path: str | None) -> None:
    """BadInput unless ``path`` is, or can be made, a directory kipcheck can write files in.
    Nothing is created: the nearest existing ancestor is probed instead."""
    if not path:
        return
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise BadInput(f"{option} {path}: exists and is not a directory")
    base = _nearest_existing(p.absolute())
    if not base.is_dir():
        raise BadInput(f"{option} {path}: {base} is not a directory")
    why = _probe_directory(base)
    if why:
        raise BadInput(f"{option} {path}: cannot create files in {base}: {why}")


def write_output(what: str, path, write: Callable[[], object], err=None) -> bool:
    """Run ``write`` (which writes ``what`` to ``path``); on an OSError print one line and
    return False, so that the command still prints its results and then exits 2."""
    try:
        write()
    except OSError as e:
        print(f"kipcheck: cannot write {what} to {path}: {e.strerror or e}",
              file=err or sys.stderr)
        return False
    return True
