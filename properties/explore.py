"""Exhaustive explicit-state exploration (the TLC-like engine of kipcheck).

``explore(spec)`` runs a breadth-first search over the states reachable from
``spec.initial_states()`` under ``spec.successors``.  It is level-synchronous: level ``d`` holds
the states at distance ``d`` from an initial state, and every state of level ``d`` is expanded
(and checked with ``spec.violation``) before any state of level ``d + 1``, so the first violation
found is at minimal depth and its trace is a shortest counterexample.

Visited set
-----------
The explorer keeps 64-bit fingerprints (``spec.fingerprint(state) & (2**64 - 1)``), not states.
Each finished level is stored as two
``array`` objects: its fingerprints, sorted (``array('Q')``, 8 bytes each), and for every state the
index of its parent in the previous level's array (``array('I')``, 4 bytes each; for level 0 the
index of the initial state in ``spec.initial_states()``).  That is 12 bytes per visited state
(``ExploreResult.bytes_per_state`` is measured with ``sys.getsizeof`` on those arrays).  Only the
frontier (the level being expanded, with its states, and the candidates of the next level) lives
in ordinary Python dicts and lists, and is freed level by level (``peak_frontier``,
``peak_frontier_bytes``).  A level's states are expanded in fingerprint order, so runs are
deterministic.

Membership is decided in bulk at the end of each level: the candidates of level ``d + 1`` (a dict
keyed by fingerprint, which already removes duplicates within the level) are checked against the
stored levels, either by scanning a level's array against the dict (C speed, ~50 ns per stored
fingerprint) or, when the candidates are few compared with the level, by binary search in it
(~0.2-1 us per candidate); the cheaper one is chosen per array.  So that a deep, narrow state space
does not pay one check per stored level per level, levels smaller than ``max(64, distinct / 512)``
are also copied into a few merged sorted runs (sizes decreasing geometrically) and checked there;
the copies are counted in ``bytes_per_state`` (negligible for wide state spaces; at worst 20
bytes per state for very deep ones).  The cost of this scheme is ~ (stored states) x 50 ns per
level for wide state spaces: about 0.5 us per state on TwoPhase-8 (25 levels), where a Python set
would cost 60-70 bytes per state instead of 12.

Traces are rebuilt from the parent links: walk back to level 0, then replay forward from the
initial state, choosing at each depth the first successor whose fingerprint (with symmetry: the
fingerprint of its canonical form) is the recorded one.  A path in the quotient graph always lifts
to a concrete path, so the trace is concrete and replays with ``spec.step``.

Fingerprint collisions
----------------------
Two different states with the same fingerprint are taken for one, so the part of the state space
behind the second is not explored.  As in TLC, if fingerprints behave like independent uniform
64-bit values, the probability of any collision among ``n`` distinct states is at most
``n * (n - 1) / 2 / 2**64 < n**2 / 2**65`` (``ExploreResult.collision_probability_bound``): about
8e-8 for 1.7 million states, 1e-4 for 61 million.  A spec whose fingerprint is injective (e.g. a
packed state that fits in 64 bits) has no collisions at all.

Counting conventions (as TLC): ``generated`` counts the initial states plus every transition
computed (including stuttering self-loops); ``action_counts`` counts transitions per action name
(every name of ``spec.action_names()``, zeros included); ``depth`` is the largest distance from an
initial state among the stored states (``len(states_per_depth) - 1``).

Witnesses are checked only while at least one is still unreached.  Where each is looked for is
``properties.spec.witness_scopes(spec)``: a state predicate (it reads only ``nxt``) once per
distinct state, initial states included (``witnesses_hit(None, None, state, wanted)``: exact for
a state predicate and an order of magnitude cheaper than per transition); a witness that reads
the step (``witnesses_hit(prev, step, nxt, wanted)``) only on transitions of the actions it
names, or on every transition when it names none.  The hot loop runs as soon as no witness
that reads the step is still wanted.  An optional
``describe(state)`` method is used for graph labels.

Performance notes (CPython 3.11): the hot loop (``_expand_fast``) costs per transition one
``fingerprint`` call, one dict probe and one per-action counter update; a transition whose
fingerprint is that of its source (a stuttering self-loop) is skipped before the dict probe.
Symmetry, graph export and per-transition witnesses use ``_expand_general``.  A spec whose
states are their own fingerprints (packed ints, ``properties.spec.states_are_fingerprints``)
uses ``_expand_packed``: no fingerprint call and one candidate dict instead of two (on
TwoPhase-8 0.78x the time of ``_expand_fast``: whole process, median of 7 pairs).

Incremental checks (``properties.spec.incremental_checks``; the Kafka model under the correct
design, properties/incremental.py): when a candidate is first found, the hot loops note the
token of the transition that found it (what the step changed, or "everything" when its source
violated something), and a state with a token is checked by ``violation_since``, which asks only
the ALWAYS clauses that read something the step changed.  Initial states, and the states of a
level after one expanded by ``_expand_general`` (symmetry, graph export, per-transition
witnesses), are checked in full.
"""
from __future__ import annotations

import gc
import signal
import sys
import threading
import time
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate, repeat
from typing import Any

from model.step import Step
from properties.spec import (incremental_checks, note_step_witnesses, progress_edges_of,
                             states_are_fingerprints, witness_scopes)

__all__ = ["ExploreResult", "ReplayError", "explore", "replay", "write_dot", "write_graphml",
           "GRAPH_LIMIT"]

_MASK = 0xFFFFFFFFFFFFFFFF
GRAPH_LIMIT = 200_000           # graph export is refused above this many distinct states
_PROGRESS_EVERY = 1.0           # seconds between progress lines
_CHUNK = 2048                   # states expanded between two progress/clock checks
_SMALL_LEVEL = 64               # a level is "small" below
_SMALL_SHARE = 512              # max(_SMALL_LEVEL, distinct / _SMALL_SHARE) states
STOPPED = -1                    # what an expansion returns when asked to stop (no violation)
INTERRUPTED = "interrupted"     # stop reasons of a search asked to stop: Ctrl-C, the time budget
MAX_SECONDS = "max_seconds"
_EVERY = -1                     # the token that asks every check (properties.spec)
_NO_TOKENS = (None, None, None, None, None)     # ``incr`` of an expansion without tokens


class Stopper:
    """When a long search should stop early, checked between chunks of states: ``max_seconds``
    after it was made, or (``interruptible``, in the main thread) at the first Ctrl-C.  The
    first SIGINT only sets a flag (and calls ``on_interrupt``, e.g. to tell worker processes),
    so the search ends at the next chunk with the levels it stored, as an incomplete result
    whose ``stop_reason`` is ``"interrupted"``; a second SIGINT raises KeyboardInterrupt as
    usual (for a search that does not check: the whole-graph checks, a trace being rebuilt).
    Use as a context manager: the previous SIGINT handler is restored on exit."""

    def __init__(self, max_seconds: float | None = None, interruptible: bool = False,
                 on_interrupt=None):
        if max_seconds is not None and not max_seconds > 0:
            raise ValueError("max_seconds must be a positive number of seconds")
        self.deadline = None if max_seconds is None else time.monotonic() + max_seconds
        self.interruptible = interruptible
        self.on_interrupt = on_interrupt
        self.reason: str | None = None
        self._previous = None

    @property
    def active(self) -> bool:
        """Is there anything to check at all?"""
        return self.deadline is not None or self.interruptible

    def should_stop(self) -> bool:
        if self.reason is None and self.deadline is not None and time.monotonic() >= self.deadline:
            self.reason = MAX_SECONDS
        return self.reason is not None

    def _on_sigint(self, signum, frame) -> None:
        if self.reason == INTERRUPTED:
            raise KeyboardInterrupt
        self.reason = INTERRUPTED
        if self.on_interrupt is not None:
            self.on_interrupt()

    def __enter__(self) -> Stopper:
        if self.interruptible and threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


class ReplayError(Exception):
    """A step of a trace is not enabled in the state it is applied to."""

    def __init__(self, index: int, step, state=None, message: str | None = None):
        self.index = index
        self.step = step
        self.state = state
        super().__init__(message or f"step {index} ({step}) is not enabled")


@dataclass
class ExploreResult:
    spec_name: str
    distinct: int
    generated: int
    depth: int
    complete: bool
    violation: str | None
    trace: tuple                       # Steps from initial_states()[initial_index]
    initial_index: int | None
    violating_state: Any
    action_counts: dict
    witnesses_reached: tuple
    witnesses_missing: tuple
    seconds: float
    states_per_depth: list
    bytes_per_state: float
    peak_frontier: int
    symmetry: bool
    graph: Any = None
    peak_frontier_bytes: int = 0       # containers of the live levels (not the state objects)
    violations_seen: tuple = ()        # every property ID found violated (stop_at_violation=False)
    stop_reason: str | None = None     # None, "violation", "max_states", "max_depth"
    visited_bytes: int = 0             # the permanent storage behind bytes_per_state
    fingerprints: Any = None           # keep_fingerprints: every stored fingerprint, sorted
    # whole-graph checks (properties/graphcheck.py): run only on complete explorations
    graph_checked: bool = False        # SETTLE, DEADLOCK (and PROGRESS) were decided
    graph_violation: str | None = None  # "SETTLE", "DEADLOCK" or "PROGRESS"
    graph_trace: tuple = ()            # shortest steps to the first stuck/deadlocked state
    graph_initial_index: int | None = None
    graph_state: Any = None            # that state
    graph_stem: tuple = ()             # SETTLE: steps from graph_state to the loop
    graph_loop: tuple = ()             # SETTLE: the loop's steps (it comes back round)
    graph_stuck: int = 0               # SETTLE: how many states cannot reach a settled one;
    #                                    PROGRESS: how many owe the goal and cannot meet it
    graph_goal: int | None = None      # PROGRESS: the goal (client) owed and not met
    graph_example: tuple = ()          # PROGRESS: one fault-free continuation from graph_state
    graph_bytes: int = 0               # the recorded graph (bytes)

    @property
    def distinct_per_second(self) -> float:
        return self.distinct / max(self.seconds, 1e-9)

    @property
    def generated_per_second(self) -> float:
        return self.generated / max(self.seconds, 1e-9)

    @property
    def collision_probability_bound(self) -> float:
        """Upper bound on the probability that two distinct states shared a fingerprint."""
        return self.distinct ** 2 / 2.0 ** 65

    @property
    def ok(self) -> bool:
        return self.violation is None and not self.witnesses_missing

    def to_dict(self) -> dict:
        """A JSON-ready summary (no graph; the violating state as ``repr``)."""
        return {
            "spec": self.spec_name, "distinct": self.distinct, "generated": self.generated,
            "depth": self.depth, "complete": self.complete, "violation": self.violation,
            "violations_seen": list(self.violations_seen),
            "trace": [Step(*s).to_json() for s in self.trace],   # [action, [args...]]
            "initial_index": self.initial_index,
            "violating_state": None if self.violating_state is None else repr(self.violating_state),
            "action_counts": dict(self.action_counts),
            "witnesses_reached": list(self.witnesses_reached),
            "witnesses_missing": list(self.witnesses_missing),
            "seconds": self.seconds, "distinct_per_second": self.distinct_per_second,
            "generated_per_second": self.generated_per_second,
            "states_per_depth": list(self.states_per_depth),
            "bytes_per_state": self.bytes_per_state, "visited_bytes": self.visited_bytes,
            "peak_frontier": self.peak_frontier, "peak_frontier_bytes": self.peak_frontier_bytes,
            "symmetry": self.symmetry, "stop_reason": self.stop_reason,
            "collision_probability_bound": self.collision_probability_bound,
            "graph_checked": self.graph_checked, "graph_violation": self.graph_violation,
            "graph_trace": [Step(*s).to_json() for s in self.graph_trace],
            "graph_stem": [Step(*s).to_json() for s in self.graph_stem],
            "graph_loop": [Step(*s).to_json() for s in self.graph_loop],
            "graph_stuck": self.graph_stuck, "graph_goal": self.graph_goal,
            "graph_example": [Step(*s).to_json() for s in self.graph_example],
        }


def _fmt(n: int) -> str:
    return f"{n:,}"


def _dups_in_level(cand: dict, level: array):
    """The keys of ``cand`` that occur in the sorted fingerprint array ``level`` (a collection).

    Scanning the level against the dict costs ~50 ns per level entry; a binary search ~(200 +
    45 log2 |level|) ns per candidate (CPython 3.11, measured), so few candidates use bisect."""
    n_level = len(level)
    if not n_level or not cand:
        return []
    if len(cand) * (4 + n_level.bit_length()) < n_level:
        out = []
        for f in cand:
            i = bisect_left(level, f)
            if i < n_level and level[i] == f:
                out.append(f)
        return out
    return cand.keys() & level


class Visited:
    """The stored levels (see the module docstring): per level its sorted fingerprints and each
    state's parent index in the previous level, and the arrays membership is checked against
    (every big level, and the small levels merged into ``runs``)."""

    def __init__(self, membership: bool = True):
        self.membership = membership          # False: ``dups`` is not used (parallel.py)
        self.fp_levels: list[array] = []      # per level: sorted fingerprints
        self.par_levels: list[array] = []     # per level: parent index in the previous level
        # Membership is checked against every big level and against ``runs``: the small levels
        # (copied and) merged into sorted arrays of geometrically decreasing sizes, so that a
        # deep, narrow state space does not cost one check per stored level for every new
        # level; at most ~_SMALL_SHARE levels are big.
        self.big_levels: list[array] = []
        self.runs: list[array] = []
        self.states_per_depth: list[int] = []
        self.distinct = 0

    def dups(self, cand) -> set:
        """The keys of ``cand`` (a dict keyed by fingerprint) already stored."""
        if not self.membership:     # pragma: no cover - a caller's mistake
            raise RuntimeError("Visited(membership=False) cannot answer dups()")
        dups: set = set()
        for level in self.big_levels:
            dups.update(_dups_in_level(cand, level))
        for level in self.runs:
            dups.update(_dups_in_level(cand, level))
        return dups

    def add_level(self, order: list, parents) -> None:
        """Store a level: ``order`` its fingerprints, sorted; ``parents`` their parent indices."""
        fps = array("Q", order)
        self.fp_levels.append(fps)
        self.par_levels.append(array("I", parents))
        if self.membership:
            self._index(fps)
        self.states_per_depth.append(len(order))
        self.distinct += len(order)

    def _index(self, fps: array) -> None:
        """Add a stored level to what ``dups`` checks: a big level as it is, a small one merged
        into ``runs``."""
        runs = self.runs
        if len(fps) >= max(_SMALL_LEVEL, self.distinct // _SMALL_SHARE):
            self.big_levels.append(fps)
        elif fps:
            runs.append(fps)
            while len(runs) > 1 and len(runs[-2]) <= 2 * len(runs[-1]):
                top = runs.pop()
                runs.append(array("Q", sorted(runs.pop() + top)))

    @property
    def nbytes(self) -> int:
        """The permanent storage (merged runs count only where they are copies: a run that is
        a level's own array is not)."""
        getsizeof = sys.getsizeof
        level_ids = {id(a) for a in self.fp_levels}
        return (sum(map(getsizeof, self.fp_levels)) + sum(map(getsizeof, self.par_levels))
                + getsizeof(self.fp_levels) + getsizeof(self.par_levels)
                + getsizeof(self.big_levels) + getsizeof(self.runs)
                + sum(getsizeof(a) for a in self.runs if id(a) not in level_ids))


def _expand_fast(cur, cur_fps, successors, violation, fingerprint, acount, tick, on_violation,
                 incr=_NO_TOKENS):
    """Expand one level: no symmetry, no graph, no per-transition witnesses (the hot loop).

    ``cur_fps[i]`` is the fingerprint of ``cur[i]``: a successor with the same fingerprint is a
    self-loop and is skipped before the dict lookup (they are common: stuttering steps).
    Returns (candidates fp -> state, candidates fp -> parent index, index of the violating state
    that stopped the expansion or None).  Transitions are counted only in ``acount``.

    ``incr``: ``_NO_TOKENS``, or a spec's incremental checks
    (``properties.spec.incremental_checks``) as (changes, violation_since, toks, ntok,
    interned): ``cur[i]`` is checked by ``violation_since`` with its token ``toks[i]`` (when
    ``toks`` is not None), and each candidate gets in ``ntok`` the token of the transition that
    first found it (``interned`` shares equal tokens)."""
    nxt: dict = {}
    npar: dict = {}
    M = _MASK
    n_cur = len(cur)
    changes, violation_since, toks, ntok, interned = incr
    for start in range(0, n_cur, _CHUNK):
        end = min(start + _CHUNK, n_cur)
        for idx in range(start, end):
            state = cur[idx]
            succ = successors(state)
            v = (violation(state, succ) if toks is None
                 else violation_since(state, succ, toks[idx]))
            if v is not None and on_violation(v, idx):
                return nxt, npar, idx
            here = cur_fps[idx]
            for st, s in succ:
                acount[st.action] += 1
                f = fingerprint(s) & M
                if f != here and f not in nxt:
                    nxt[f] = s
                    npar[f] = idx
                    if ntok is not None:
                        t = changes(state, s) if v is None else _EVERY
                        ntok[f] = interned(t, t)
        if tick is not None and tick(end, nxt):
            return nxt, npar, STOPPED
    return nxt, npar, None


def _expand_packed(cur, successors, violation, acount, tick, on_violation):
    """``_expand_fast`` for a spec whose states are their own fingerprints
    (``properties.spec.states_are_fingerprints``): no fingerprint call, no mask, and one dict,
    the candidates' parent indices, whose keys are the candidate states themselves."""
    npar: dict = {}
    n_cur = len(cur)
    for start in range(0, n_cur, _CHUNK):
        end = min(start + _CHUNK, n_cur)
        for idx in range(start, end):
            state = cur[idx]
            succ = successors(state)
            v = violation(state, succ)
            if v is not None and on_violation(v, idx):
                return npar, npar, idx
            for st, s in succ:
                acount[st.action] += 1
                if s != state and s not in npar:
                    npar[s] = idx
        if tick is not None and tick(end, npar):
            return npar, npar, STOPPED
    return npar, npar, None


def _expand_checked(cur, cur_fps, successors, violation, fingerprint, acount, tick, on_violation,
                    settled, rec, rec_fns=None, incr=_NO_TOKENS):
    """``_expand_fast`` that also records, for the whole-graph checks (properties/graphcheck.py),
    each state's status (``settled`` here is ``graphcheck.status_of(spec)``: OPEN, SETTLED or
    DEADLOCKED) and the fingerprints of all its successors; for PROGRESS (``rec.marks``), the
    state's goal marks and each transition's class (``rec_fns``: the spec's
    ``progress_marks`` and ``spec.progress_edges_of(spec)``); ``incr`` as for
    ``_expand_fast``."""
    nxt: dict = {}
    npar: dict = {}
    M = _MASK
    n_cur = len(cur)
    bits = rec.status
    out = rec.succ_fps
    offsets = rec.offsets
    marks, edges_of = rec.marks, rec.edge
    marks_of, edge_class = rec_fns if marks is not None else (None, None)
    changes, violation_since, toks, ntok, interned = incr
    for start in range(0, n_cur, _CHUNK):
        end = min(start + _CHUNK, n_cur)
        for idx in range(start, end):
            state = cur[idx]
            succ = successors(state)
            v = (violation(state, succ) if toks is None
                 else violation_since(state, succ, toks[idx]))
            if v is not None and on_violation(v, idx):
                return nxt, npar, idx
            bits.append(settled(state, succ))
            if marks is not None:
                marks.append(marks_of(state))
                edges_of.extend(edge_class(state, succ))
            here = cur_fps[idx]
            for st, s in succ:
                acount[st.action] += 1
                f = fingerprint(s) & M
                out.append(f)
                if f != here and f not in nxt:
                    nxt[f] = s
                    npar[f] = idx
                    if ntok is not None:
                        t = changes(state, s) if v is None else _EVERY
                        ntok[f] = interned(t, t)
            offsets.append(len(out))
        if tick is not None and tick(end, nxt):
            return nxt, npar, STOPPED
    return nxt, npar, None


def _expand_general(cur, cur_fps, successors, violation, fingerprint, acount, tick,
                    on_violation, *, canonical, wanted, witnesses_hit, reached, edges,
                    settled=None, rec=None, rec_fns=None, scopes=None):
    """Expand one level with symmetry and/or graph edges and/or per-transition witnesses."""
    nxt: dict = {}
    npar: dict = {}
    M = _MASK
    n_cur = len(cur)
    for start in range(0, n_cur, _CHUNK):
        end = min(start + _CHUNK, n_cur)
        for idx in range(start, end):
            state = cur[idx]
            succ = successors(state)
            v = violation(state, succ)
            if v is not None and on_violation(v, idx):
                return nxt, npar, idx
            if rec is not None:
                rec.status.append(settled(state, succ))
                if rec.marks is not None:
                    rec.marks.append(rec_fns[0](state))
                    rec.edge.extend(rec_fns[1](state, succ))
            here = cur_fps[idx]
            for st, s in succ:
                acount[st.action] += 1
                f = fingerprint(canonical(s) if canonical is not None else s) & M
                if f != here and f not in nxt:
                    nxt[f] = s
                    npar[f] = idx
                if rec is not None:
                    rec.succ_fps.append(f)
                if edges is not None:
                    edges.append((here, f, st))
                if wanted:
                    note_step_witnesses(witnesses_hit, scopes, wanted, reached, state, st, s)
            if rec is not None:
                rec.offsets.append(len(rec.succ_fps))
        if tick is not None and tick(end, nxt):
            return nxt, npar, STOPPED
    return nxt, npar, None


def explore(spec, *, symmetry: bool = False, max_states: int | None = None,
            max_depth: int | None = None, progress=None, graph: bool = False,
            stop_at_violation: bool = True, keep_fingerprints: bool = False,
            graph_checks: bool = True, pause_gc: bool = True,
            workers: int | None = None, max_seconds: float | None = None,
            interruptible: bool = False) -> ExploreResult:
    """Breadth-first exploration of ``spec`` (see the module docstring).

    ``symmetry``: fingerprint ``spec.canonical(state)`` instead of the state.  ``max_states``:
    store at most that many distinct states (the last level is cut, first discovered first).
    ``keep_fingerprints``: return every stored fingerprint in ``result.fingerprints`` (one sorted
    ``array('Q')``; the reachable set that coverage is measured against).
    ``max_depth``: store no state deeper than that.  Either bound, when it cuts something, makes
    the result ``complete=False``.  ``progress``: a file (e.g. ``sys.stderr``) for a status line
    about every second.  ``graph``: also build the state graph (networkx; refused above
    ``GRAPH_LIMIT`` states).  ``stop_at_violation=False`` explores everything and reports the first
    (shallowest) violation found.  ``graph_checks``: when the spec has ``settled(state, succ)``,
    record the state graph compactly and, if the exploration is complete, run the whole-graph
    checks SETTLE, DEADLOCK and (a spec with ``progress_marks``) PROGRESS
    (properties/graphcheck.py; ``result.graph_violation``).  ``pause_gc``: switch CPython's
    cyclic garbage collector off while exploring (states are trees of tuples and records that
    never form cycles; reference counting frees them, and the collector would otherwise walk
    every live state again and again as the frontier grows) and back on at the end.
    ``workers``: share the expansion of each level among that many processes
    (properties/parallel.py; the same result, ``seconds`` in wall time); 1 or None: this
    process only.  Not with ``graph``.  ``max_seconds``: stop the search once that much time
    has passed; ``interruptible``: stop it at the first Ctrl-C (``Stopper``).  Either stops it
    between two chunks of states, drops the level being expanded and returns the levels stored
    so far as an incomplete result (``stop_reason`` ``"max_seconds"`` or ``"interrupted"``);
    the whole-graph checks are not run (they need the whole graph)."""
    stopper = Stopper(max_seconds, interruptible)
    if workers is not None and workers > 1:
        if graph:
            raise ValueError("graph export needs workers=1")
        from properties.parallel import explore_parallel

        def search():
            # the driver stores levels and records millions of graph rows per run: the
            # collector is paused in it too (the workers pause their own)
            return explore_parallel(spec, workers, symmetry=symmetry, max_states=max_states,
                                    max_depth=max_depth, progress=progress,
                                    stop_at_violation=stop_at_violation,
                                    keep_fingerprints=keep_fingerprints,
                                    graph_checks=graph_checks, stopper=stopper)
    else:
        def search():
            with stopper:
                return _explore(spec, symmetry, max_states, max_depth, progress, graph,
                                stop_at_violation, keep_fingerprints, graph_checks, stopper)
    if not pause_gc or not gc.isenabled():
        return search()
    gc.disable()
    try:
        return search()
    finally:
        gc.enable()


def _explore(spec, symmetry, max_states, max_depth, progress, graph, stop_at_violation,
             keep_fingerprints, graph_checks, stopper: Stopper) -> ExploreResult:
    if max_states is not None and max_states < 0:
        raise ValueError("max_states must be >= 0")
    if max_depth is not None and max_depth < 0:
        raise ValueError("max_depth must be >= 0")
    t0 = time.perf_counter()
    getsizeof = sys.getsizeof
    successors = spec.successors
    violation = spec.violation
    fingerprint = spec.fingerprint
    canonical = spec.canonical if symmetry else None
    describe = getattr(spec, "describe", None) or str
    M = _MASK
    packed = not symmetry and states_are_fingerprints(spec)
    incr_fns = incremental_checks(spec)

    acount = {a: 0 for a in spec.action_names()}
    witness_ids = tuple(spec.witness_ids())
    reached: set = set()
    witnesses_hit = spec.witnesses_hit
    # state predicates once per distinct state (in commit_level); the others per transition of
    # the actions they name (``_expand_general``), while any of them is still wanted
    scopes = witness_scopes(spec)
    wanted_state = [w for w in witness_ids if scopes[w] == ()]
    wanted = [w for w in witness_ids if scopes[w] != ()]
    # Optional protocol extension: ``settled(state, succ)`` (and, optionally,
    # ``deadlocked(state, succ)``) turns on the whole-graph checks; ``settled`` below is the
    # per-state status function (graphcheck.status_of).
    settled = getattr(spec, "settled", None) if graph_checks else None
    rec = rec_fns = None
    if settled is not None:
        from properties.graphcheck import GraphRecorder, status_of
        settled = status_of(spec)
        # Optional: ``progress_marks(state)``, ``progress_edge(state, step)`` and
        # ``progress_strict()`` turn on PROGRESS
        marks_of = getattr(spec, "progress_marks", None)
        if marks_of is not None:
            rec_fns = (marks_of, progress_edges_of(spec))
        rec = GraphRecorder(progress=rec_fns is not None)
        if rec_fns is not None:
            rec.strict = tuple(spec.progress_strict())

    visited = Visited()
    fp_levels = visited.fp_levels
    par_levels = visited.par_levels
    states_per_depth = visited.states_per_depth
    edges: list | None = [] if graph else None
    nodes: list | None = [] if graph else None
    st = {"distinct": 0, "initial": 0, "peak": 0, "peak_bytes": 0, "last": t0, "depth": 0}
    found: list = []                      # [(property, depth, index in level)]
    violations_seen: list[str] = []
    complete = True
    stop_reason = None

    def commit_level(cand: dict, cpar: dict, dups=None) -> list:
        """Store the candidates minus ``dups``; return their states in stored (sorted) order."""
        order = sorted(cand.keys() - dups if dups else cand)
        # a packed spec's candidates are keyed by the states themselves (``_expand_packed``)
        states = order if packed else list(map(cand.__getitem__, order))
        visited.add_level(order, list(map(cpar.__getitem__, order)))
        st["distinct"] += len(order)
        if len(order) > st["peak"]:
            st["peak"] = len(order)
        live = (getsizeof(cand) + getsizeof(cpar) + getsizeof(states) + getsizeof(order)
                + (getsizeof(dups) if dups else 0))
        if live > st["peak_bytes"]:
            st["peak_bytes"] = live
        if wanted_state:
            # map/filter keep the per-state loop in C; ``wanted_state`` is the same list object
            # in every call, so a witness found is no longer asked for.
            for hits in filter(None, map(witnesses_hit, repeat(None), repeat(None), states,
                                         repeat(wanted_state))):
                for w in hits:
                    if w in wanted_state:
                        wanted_state.remove(w)
                        reached.add(w)
                if not wanted_state:
                    break
        if graph:
            if st["distinct"] > GRAPH_LIMIT:
                raise ValueError(f"graph export is limited to {GRAPH_LIMIT:,} states; "
                                 f"this exploration passed it (use max_states)")
            d = len(fp_levels) - 1
            nodes.extend((f, d, s) for f, s in zip(order, states))
        return states

    def report(final: bool, cur_len: int = 0, next_len: int = 0) -> None:
        now = time.perf_counter()
        st["last"] = now
        el = now - t0
        rate = st["distinct"] / el if el > 0 else 0.0
        if final:
            what = "complete" if complete else f"incomplete ({stop_reason})"
            viol = f"  violation {found[0][0]} at depth {found[0][1]}" if found else ""
            print(f"[explore] {spec.name}: {what}: depth {max(len(fp_levels) - 1, 0)}  distinct "
                  f"{_fmt(st['distinct'])}  generated "
                  f"{_fmt(st['initial'] + sum(acount.values()))}  "
                  f"{rate:,.0f} distinct/s  {el:.1f} s{viol}", file=progress, flush=True)
        else:
            print(f"[explore] depth {st['depth']}  distinct {_fmt(st['distinct'])}  generated "
                  f"{_fmt(st['initial'] + sum(acount.values()))}  {rate:,.0f} distinct/s  "
                  f"frontier {_fmt(cur_len)} (+{_fmt(next_len)} next)", file=progress, flush=True)

    def progress_tick(done: int, nxt: dict) -> bool:
        if time.perf_counter() - st["last"] >= _PROGRESS_EVERY:
            report(False, n_cur - done, len(nxt))
        return False

    def stopping_tick(done: int, nxt: dict) -> bool:
        if progress is not None:
            progress_tick(done, nxt)
        return stopper.should_stop()

    tick = (stopping_tick if stopper.active
            else progress_tick if progress is not None else None)

    def on_violation(v: str, idx: int) -> bool:
        if not found:
            found.append((v, st["depth"], idx))
        if v not in violations_seen:
            violations_seen.append(v)
        return stop_at_violation

    # ---- level 0 -------------------------------------------------------------------------------
    init = list(spec.initial_states())
    st["initial"] = len(init)
    cand: dict = {}                       # fingerprint -> state (first seen)
    cpar: dict = {}                       # fingerprint -> index in init
    for i, s in enumerate(init):
        f = fingerprint(canonical(s) if symmetry else s) & M
        if f not in cand:
            cand[f] = s
            cpar[f] = i
    if max_states is not None and len(cand) > max_states:
        cand = {f: cand[f] for f in list(cand)[:max_states]}
        complete = False
        stop_reason = "max_states"
    cur_states = commit_level(cand, cpar) if cand else []
    del cand, cpar
    cur_toks = None                 # the tokens of the level's states, where it has them

    # ---- level loop ----------------------------------------------------------------------------
    while cur_states:
        depth = st["depth"]
        n_cur = len(cur_states)
        per_transition = bool(wanted)
        ntok = None
        incr = _NO_TOKENS
        if incr_fns is not None and not (symmetry or graph or per_transition or packed):
            ntok = {}
            incr = (incr_fns[0], incr_fns[1], cur_toks, ntok, {}.setdefault)
        if symmetry or graph or per_transition:
            nxt, npar, stopped = _expand_general(
                cur_states, fp_levels[depth], successors, violation, fingerprint, acount, tick,
                on_violation, canonical=canonical, wanted=wanted if per_transition else None,
                witnesses_hit=witnesses_hit, reached=reached, edges=edges, settled=settled,
                rec=rec, rec_fns=rec_fns, scopes=scopes)
        elif rec is not None:
            nxt, npar, stopped = _expand_checked(
                cur_states, fp_levels[depth], successors, violation, fingerprint, acount, tick,
                on_violation, settled, rec, rec_fns, incr)
        elif packed:
            nxt, npar, stopped = _expand_packed(cur_states, successors, violation, acount, tick,
                                                on_violation)
        else:
            nxt, npar, stopped = _expand_fast(
                cur_states, fp_levels[depth], successors, violation, fingerprint, acount, tick,
                on_violation, incr)
        if stopped == STOPPED:
            complete = False                                # the level is dropped unfinished
            stop_reason = stopper.reason
            break
        if stopped is not None:
            complete = False
            stop_reason = "violation"
            break
        # Deduplicate the candidates against every stored level (this one included).
        dups = visited.dups(nxt)
        n_new = len(nxt) - len(dups)
        if not n_new:
            break                                           # nothing new: the level was last
        if stop_reason == "max_states" or (max_states is not None
                                           and st["distinct"] >= max_states):
            complete = False
            stop_reason = "max_states"
            break
        if max_depth is not None and depth >= max_depth:
            complete = False
            stop_reason = "max_depth"
            break
        if max_states is not None and st["distinct"] + n_new > max_states:
            keep = [f for f in nxt if f not in dups][:max_states - st["distinct"]]
            nxt = {f: nxt[f] for f in keep}                 # first discovered, deterministic
            dups = None
            complete = False
            stop_reason = "max_states"
        cur_states = cur_toks = None                        # free the expanded level first
        cur_states = commit_level(nxt, npar, dups)
        if ntok is not None:
            cur_toks = list(map(ntok.__getitem__, fp_levels[-1]))
        del nxt, npar, dups, ntok, incr
        st["depth"] = depth + 1
    cur_states = None
    seconds = time.perf_counter() - t0
    distinct = st["distinct"]

    # ---- trace ---------------------------------------------------------------------------------
    trace: tuple = ()
    initial_index = None
    violating_state = None
    if found:
        _, vdepth, vidx = found[0]
        initial_index, trace, violating_state = _rebuild_trace(
            spec, init, fp_levels, par_levels, vdepth, vidx, symmetry)

    visited_bytes = visited.nbytes
    result = ExploreResult(
        spec_name=spec.name, distinct=distinct,
        generated=st["initial"] + sum(acount.values()),
        depth=max(len(fp_levels) - 1, 0), complete=complete,
        violation=found[0][0] if found else None, trace=trace, initial_index=initial_index,
        violating_state=violating_state, action_counts=acount,
        witnesses_reached=tuple(w for w in witness_ids if w in reached),
        witnesses_missing=tuple(w for w in witness_ids if w not in reached),
        seconds=seconds, states_per_depth=states_per_depth,
        bytes_per_state=visited_bytes / distinct if distinct else 0.0,
        peak_frontier=st["peak"], symmetry=symmetry, peak_frontier_bytes=st["peak_bytes"],
        violations_seen=tuple(violations_seen), stop_reason=stop_reason,
        visited_bytes=visited_bytes)
    if graph:
        result.graph = _build_graph(nodes, edges, describe)
    _finish(spec, result, rec, init, visited, symmetry, keep_fingerprints, t0)
    if progress is not None:
        report(True)
    return result


def _finish(spec, result, rec, init, visited, symmetry, keep_fingerprints, t0,
            processes: int = 1) -> None:
    """The whole-graph checks of a complete exploration, and the stored fingerprints;
    ``processes``: how many processes the checks may use (the explorer's workers)."""
    if rec is not None and result.complete:
        _graph_checks(spec, result, rec, init, visited.fp_levels, visited.par_levels, symmetry,
                      processes)
        result.seconds = time.perf_counter() - t0
    if keep_fingerprints:
        every = array("Q")
        for level in visited.fp_levels:
            every.extend(level)
        result.fingerprints = array("Q", sorted(every))


def _rebuild_trace(spec, init, fp_levels, par_levels, vdepth, vidx, symmetry):
    """Walk parent links back to level 0, then replay forward matching fingerprints."""
    path = [vidx]
    for d in range(vdepth, 0, -1):
        path.append(par_levels[d][path[-1]])
    path.reverse()                                   # path[d] = index in level d
    initial_index = par_levels[0][path[0]]
    M = _MASK
    fingerprint = spec.fingerprint
    canonical = spec.canonical
    state = init[initial_index]
    steps = []
    for d in range(1, vdepth + 1):
        target = fp_levels[d][path[d]]
        for st, s in spec.successors(state):
            if fingerprint(canonical(s) if symmetry else s) & M == target:
                steps.append(st)
                state = s
                break
        else:  # pragma: no cover - only on a non-deterministic successors()
            raise RuntimeError(f"trace reconstruction failed at depth {d}: no successor has the "
                               f"recorded fingerprint (is successors() deterministic?)")
    return initial_index, tuple(steps), state


def _graph_checks(spec, result, rec, init, fp_levels, par_levels, symmetry,
                  processes: int = 1) -> None:
    """Run SETTLE, DEADLOCK and PROGRESS on the recorded graph; fill ``result.graph_*``."""
    from properties.graphcheck import PROGRESS, check, example_path, stuck_loop
    result.graph_bytes = rec.nbytes
    found = check(rec, fp_levels, processes)
    result.graph_checked = True
    if found is None:
        return
    kind, first, tgt, stuck, goal = found
    starts = list(accumulate(len(a) for a in fp_levels))
    depth = bisect_right(starts, first)
    idx = first - (starts[depth - 1] if depth else 0)
    initial_index, trace, state = _rebuild_trace(spec, init, fp_levels, par_levels, depth, idx,
                                                 symmetry)
    result.graph_violation = kind
    result.graph_trace = trace
    result.graph_initial_index = initial_index
    result.graph_state = state
    if kind == PROGRESS:
        result.graph_goal = goal
        result.graph_stuck = stuck
        result.graph_example = _steps_along(spec, state, example_path(rec, tgt, first),
                                            fp_levels, symmetry)
        return
    if kind != "SETTLE":
        return
    result.graph_stuck = stuck
    stem, cycle = stuck_loop(rec, tgt, first)
    walk = (list(stem) + list(cycle) + [cycle[0]])[1:]      # the state numbers to step to
    steps = _steps_along(spec, state, walk, fp_levels, symmetry)
    result.graph_stem = tuple(steps[:len(stem)])
    result.graph_loop = tuple(steps[len(stem):])


def _steps_along(spec, state, walk, fp_levels, symmetry) -> tuple:
    """The steps from ``state`` through the recorded states numbered ``walk``."""
    every_fp = array("Q")
    for level in fp_levels:
        every_fp.extend(level)
    steps = []
    M = _MASK
    fingerprint = spec.fingerprint
    canonical = spec.canonical
    for target in walk:
        want = every_fp[target]
        for st, s in spec.successors(state):
            if fingerprint(canonical(s) if symmetry else s) & M == want:
                steps.append(st)
                state = s
                break
        else:  # pragma: no cover - only on a non-deterministic successors()
            raise RuntimeError("path reconstruction failed: no successor has the recorded "
                               "fingerprint (is successors() deterministic?)")
    return tuple(steps)


def replay(spec, initial_index: int, steps) -> list:
    """The states along ``steps`` from ``spec.initial_states()[initial_index]`` (both ends
    included).  Raises ``ReplayError`` if a step is not enabled."""
    init = list(spec.initial_states())
    if not 0 <= initial_index < len(init):
        raise ReplayError(-1, None, None,
                          f"initial index {initial_index} out of range (0..{len(init) - 1})")
    state = init[initial_index]
    states = [state]
    for i, st in enumerate(steps):
        if not isinstance(st, Step):
            st = Step.from_json(st)
        nxt = spec.step(state, st)
        if nxt is None:
            raise ReplayError(i, st, state)
        state = nxt
        states.append(state)
    return states


# ---- graph export ------------------------------------------------------------------------------

def _build_graph(nodes, edges, describe):
    import networkx as nx
    g = nx.DiGraph()
    for f, d, s in nodes:
        g.add_node(f, depth=d, label=describe(s)[:200], initial=(d == 0))
    for src, dst, st in edges:
        if dst not in g:                  # a successor beyond the explored bound
            continue
        label = str(st)
        data = g.get_edge_data(src, dst)
        if data is None:
            g.add_edge(src, dst, action=label)
        elif label not in data["action"].split(" | "):
            data["action"] += " | " + label   # parallel transitions share one DiGraph edge
    return g


def _dot_quote(text) -> str:
    s = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{s}"'


def write_dot(graph, path) -> None:
    """Write ``graph`` (from ``explore(graph=True)``) as Graphviz DOT (no pydot needed)."""
    lines = ["digraph states {", "  node [shape=box, fontsize=10];"]
    for n, data in graph.nodes(data=True):
        attrs = [f"label={_dot_quote(data.get('label', n))}"]
        if "depth" in data:
            attrs.append(f"depth={data['depth']}")
        if data.get("initial"):
            attrs.append("peripheries=2")
        lines.append(f"  {_dot_quote(n)} [{', '.join(attrs)}];")
    for u, v, data in graph.edges(data=True):
        lines.append(f"  {_dot_quote(u)} -> {_dot_quote(v)} "
                     f"[label={_dot_quote(data.get('action', ''))}];")
    lines.append("}")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def write_graphml(graph, path) -> None:
    """Write ``graph`` as GraphML (networkx.write_graphml)."""
    import networkx as nx
    nx.write_graphml(graph, path)
