"""Coverage against ground truth: the explorer's reachable set of a configuration.

A random engine can only say honestly how much it covered if it knows what there is to cover.
``reachable(spec)`` runs the exhaustive explorer once (``stop_at_violation=False``, so a design
variant's whole state space counts too) and keeps every reachable state's 64-bit fingerprint,
sorted, and the actions that label at least one reachable transition.  The result is cached on
disk, keyed by the spec's name and the hash of the model's sources (``trace.model_hash``), so a
change to the model invalidates it: ``$KIPCHECK_CACHE`` or ``~/.cache/kipcheck``, about 8 bytes
per reachable state (kraft-registration: 74 k states, 0.6 MB).

``measure(visited, actions, reach)`` then states the coverage of a run: the share of reachable
states whose fingerprint the run visited, the share of reachable actions it took, and, as a
self-check, how many visited fingerprints are *not* reachable (always 0 unless the engine and
the explorer disagree about the model, or two states share a fingerprint).
"""
from __future__ import annotations

import json
import os
import re
from array import array
from dataclasses import dataclass
from pathlib import Path

from properties.explore import _MASK, explore

__all__ = ["Reachable", "Coverage", "reachable", "remember", "is_cached", "measure",
           "cache_dir"]

_MAGIC = b"kipcheck-reachable 1\n"


def cache_dir() -> Path:
    root = os.environ.get("KIPCHECK_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "kipcheck"


@dataclass(frozen=True)
class Reachable:
    """The reachable set of one spec: fingerprints (sorted ``array('Q')``) and action names."""
    spec_name: str
    fingerprints: array
    actions: tuple                     # action names with at least one reachable transition
    seconds: float                     # the exploration's time (when it was computed)
    cached: bool = False               # loaded from the disk cache

    def __len__(self) -> int:
        return len(self.fingerprints)

    def count_visited(self, visited) -> int:
        """How many reachable states are in ``visited`` (a set of masked fingerprints)."""
        return sum(map(visited.__contains__, self.fingerprints))


@dataclass(frozen=True)
class Coverage:
    states_visited: int                # distinct fingerprints the run visited
    states_reachable: int              # |reachable set|
    states_covered: int                # visited and reachable
    outside: int                       # visited but not reachable: 0 unless something is wrong
    actions_taken: tuple
    actions_reachable: tuple

    @property
    def states_share(self) -> float:
        return self.states_covered / self.states_reachable if self.states_reachable else 0.0

    @property
    def actions_share(self) -> float:
        taken = set(self.actions_taken)
        hit = sum(1 for a in self.actions_reachable if a in taken)
        return hit / len(self.actions_reachable) if self.actions_reachable else 0.0

    @property
    def actions_missing(self) -> tuple:
        taken = set(self.actions_taken)
        return tuple(a for a in self.actions_reachable if a not in taken)

    def to_dict(self) -> dict:
        return {"states_visited": self.states_visited, "states_reachable": self.states_reachable,
                "states_covered": self.states_covered,
                "states_share": round(self.states_share, 6), "outside": self.outside,
                "actions_reachable": len(self.actions_reachable),
                "actions_share": round(self.actions_share, 6),
                "actions_missing": list(self.actions_missing)}

    def describe(self) -> str:
        return (f"{self.states_share:.1%} of {self.states_reachable:,} reachable states "
                f"({self.states_covered:,}), {self.actions_share:.0%} of "
                f"{len(self.actions_reachable)} reachable actions"
                + (f"; {self.outside} visited states are NOT in the reachable set"
                   if self.outside else ""))


def _cache_path(spec) -> Path | None:
    key = getattr(spec, "cache_key", None)
    if key is None:
        from properties.kafka_spec import KafkaSpec
        if not isinstance(spec, KafkaSpec):
            return None                  # no stable identity: compute, do not cache
        from properties.trace import model_hash
        key = f"{spec.name}-{model_hash()}"
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", key)
    return cache_dir() / "reachable" / f"{safe}.bin"


def _load(path: Path, spec_name: str) -> Reachable | None:
    try:
        with open(path, "rb") as f:
            if f.readline() != _MAGIC:
                return None
            header = json.loads(f.readline())
            fps = array("Q")
            fps.frombytes(f.read())
    except (OSError, ValueError):
        return None
    if header.get("spec") != spec_name or len(fps) != header.get("count"):
        return None
    return Reachable(spec_name, fps, tuple(header["actions"]), header["seconds"], cached=True)


def _store(path: Path, reach: Reachable) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            f.write(_MAGIC)
            f.write(json.dumps({"spec": reach.spec_name, "count": len(reach.fingerprints),
                                "actions": list(reach.actions),
                                "seconds": round(reach.seconds, 3)}).encode() + b"\n")
            f.write(reach.fingerprints.tobytes())
        os.replace(tmp, path)
    except OSError:
        pass                             # a read-only home: the set is simply not cached


def is_cached(spec) -> bool:
    """Whether ``reachable(spec)`` would come from the disk cache (no exploration)."""
    path = _cache_path(spec)
    return path is not None and path.exists()


def reachable(spec, *, cache: bool = True, progress=None, workers: int | None = None) -> Reachable:
    """The reachable set of ``spec``, from the disk cache or by exploring it once (on
    ``workers`` processes; the whole-graph checks are not this function's business)."""
    path = _cache_path(spec) if cache else None
    if path is not None and path.exists():
        found = _load(path, spec.name)
        if found is not None:
            return found
    r = explore(spec, stop_at_violation=False, keep_fingerprints=True, progress=progress,
                graph_checks=False, workers=workers)
    if not r.complete:
        raise RuntimeError(f"exploration of {spec.name} did not complete ({r.stop_reason})")
    return remember(spec, r, cache=cache)


def remember(spec, result, *, cache: bool = True) -> Reachable:
    """The reachable set of ``spec`` from an exploration already made (``explore(spec,
    keep_fingerprints=True)``, complete and without symmetry), stored in the disk cache, so that
    a caller that has just explored a large configuration need not explore it again for
    ``reachable``.  A complete run covers the whole space whether or not it would have stopped
    at a violation: it found none to stop at."""
    if result.spec_name != spec.name:
        raise ValueError(f"an exploration of {result.spec_name} is not the reachable set of "
                         f"{spec.name}")
    if not result.complete or result.fingerprints is None or result.symmetry:
        raise ValueError(f"the reachable set of {spec.name} needs a complete exploration "
                         "without symmetry that kept its fingerprints")
    actions = tuple(a for a in spec.action_names() if result.action_counts.get(a, 0) > 0)
    reach = Reachable(spec.name, result.fingerprints, actions, result.seconds)
    path = _cache_path(spec) if cache else None
    if path is not None:
        _store(path, reach)
    return reach


def measure(visited, actions_taken, reach: Reachable) -> Coverage:
    """Coverage of a run that visited the fingerprints ``visited`` (masked to 64 bits) and took
    the actions ``actions_taken``, against ``reach``."""
    covered = reach.count_visited(visited)
    order = {a: i for i, a in enumerate(reach.actions)}
    taken = tuple(sorted(set(actions_taken), key=lambda a: (order.get(a, len(order)), a)))
    return Coverage(states_visited=len(visited), states_reachable=len(reach),
                    states_covered=covered, outside=len(visited) - covered,
                    actions_taken=taken, actions_reachable=reach.actions)


MASK = _MASK
