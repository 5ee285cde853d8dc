"""Fingerprint-partitioned breadth-first search: the pure half of ``explore --spark``.

``properties.explore.explore`` keeps the whole visited set in one process.  Here the state space
is cut into ``P`` partitions by fingerprint (``owner(fp, P)``); partition ``i`` owns the visited
fingerprints with ``owner(fp) == i`` and the frontier states among them.  One BFS level is

1. **expand** (every partition, in parallel): each frontier state's successors, the property
   check, per-action counts and witnesses; successors are grouped by the partition that owns
   their fingerprint;
2. **shuffle**: every group goes to its owner;
3. **merge** (every partition, in parallel): the candidates are deduplicated against the
   partition's own visited levels and become its next frontier level.

An engine like ``explore``; ``kipcheck/campaign/spark.py`` only schedules it on executors.  On
one machine, ``explore(spec, workers=N)`` (properties/parallel.py) shares the work out without
partitioning the visited set.  Nothing in this module needs a JVM:
``explore_partitioned(spec, partitions=P)`` runs the same three steps in one process
(``LocalBackend``) and the Spark driver in ``spark.py`` runs them as one Spark job per level
(``SparkBackend``).  The level loop (``run_bfs``) is shared, so the Spark
run and the in-process run take every decision the same way.

Same result as ``explore``
--------------------------
``explore`` expands a level in fingerprint order and keeps, for each new fingerprint, the first
successor that reached it.  A partitioned run has no global order during the expansion, so each
candidate carries its *discovery key* ``(parent fingerprint, index among the parent's
successors)``: the smallest key is exactly the successor ``explore`` meets first.  Keeping the
smallest key makes the stored representative (which matters under symmetry), the parent link
(hence the counterexample trace) and a ``max_states`` cut ("first discovered first") identical to
``explore``'s.  A violation is ``explore``'s first one: the smallest fingerprint among the
violating states of the shallowest violating level; and since ``explore`` stops *before* expanding
the violating state, the transitions of that level are recounted for the states with a smaller
fingerprint only (``recount``).  So ``distinct``, ``generated``, ``depth``, ``states_per_depth``,
``action_counts``, witnesses, the violation, the trace and the violating state all agree with
``explore`` (``tests/test_spark.py`` checks this on every tiny configuration and variant).

Storage per partition (``Part``): for each depth a sorted ``array('Q')`` of fingerprints and an
``array('Q')`` of parent fingerprints (level 0: the index in ``spec.initial_states()``), 16 bytes
per visited state; the states themselves are kept only for the frontier, as one pickled list
(``Part.frontier_blob``), and candidates cross the shuffle as one pickled list per owner: what Spark
moves and caches is bytes, never model objects (see ``expand_records``).  Parent links stay in the
partition that owns the child; a trace is rebuilt by one lookup per depth (``lookup``) and a replay
from the initial state that matches fingerprints, as ``explore`` does.
"""
from __future__ import annotations

import gc
import heapq
import pickle
import time
from array import array
from bisect import bisect_left
from contextlib import contextmanager
from dataclasses import dataclass, field

from model.step import Step
from properties.spec import note_step_witnesses, witness_scopes

__all__ = ["Part", "LevelStats", "owner", "initial_parts", "expand", "merge", "recount",
           "new_keys", "cut", "lookup", "expand_records", "merge_records", "LevelArgs", "run_bfs",
           "LocalBackend", "explore_partitioned", "gc_paused"]

_MASK = 0xFFFFFFFFFFFFFFFF
_GOLDEN = 0x9E3779B97F4A7C15


@contextmanager
def gc_paused():
    """Python's cyclic garbage collector off for the block (and back as it was after).

    A level unpickles (or builds) millions of tuples, frozensets and records in one burst, none of
    them freed before the level ends, so the collector's allocation counters trip again and again
    and every full collection walks the whole frontier: kraft-small to depth 15 on the local backend
    took 87.5 s with the collector and 27.9 s without (``pickle.loads`` alone 50.9 s against 6.1 s;
    2026-11-22, before the frontier was kept pickled).  The model's records hold no reference
    cycles, so reference counting frees everything the collector would; the collector runs again
    once the block is left."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def owner(fp: int, partitions: int) -> int:
    """The partition that owns fingerprint ``fp``.

    A multiplicative (Fibonacci) mix first: a spec's fingerprint may be a packed state whose low
    bits are far from uniform (TwoPhase's identity fingerprint), and ``fp % P`` would then load
    partitions unevenly."""
    return (((fp * _GOLDEN) & _MASK) >> 32) % partitions


@dataclass
class LevelStats:
    """What one partition reports for one level (summed on the driver by ``combine``)."""
    action_counts: dict = field(default_factory=dict)
    transition_hits: set = field(default_factory=set)   # witnesses seen on transitions
    state_hits: set = field(default_factory=set)        # witnesses seen on new states
    violations: list = field(default_factory=list)      # (fingerprint, property ID)
    expanded: int = 0                                    # frontier states expanded
    new: int = 0                                         # new states merged into this partition
    visited_bytes: int = 0                               # the partition's visited arrays

    def add(self, other: LevelStats) -> LevelStats:
        for a, n in other.action_counts.items():
            self.action_counts[a] = self.action_counts.get(a, 0) + n
        self.transition_hits |= other.transition_hits
        self.state_hits |= other.state_hits
        self.violations.extend(other.violations)
        self.expanded += other.expanded
        self.new += other.new
        self.visited_bytes += other.visited_bytes
        return self


def combine(stats) -> LevelStats:
    out = LevelStats()
    for s in stats:
        out.add(s)
    return out


@dataclass
class Part:
    """One partition's share of the search: its visited levels and its frontier."""
    pid: int
    fps: list                   # per depth: sorted array('Q') of owned fingerprints
    parents: list               # per depth: array('Q') of parent fingerprints (depth 0: index)
    keys: array                 # last level: successor index in the parent's successors()
    frontier_blob: bytes        # last level: the states (one pickled list), aligned with fps[-1]
    stats: LevelStats | None = None

    def frontier(self) -> list:
        """The frontier states.  They travel and rest as one pickled list: Spark re-reads a
        partition's record in the merge only for its visited arrays, and the frontier must not
        be rebuilt there (a state costs about 15-20 us to unpickle, a bytes object nothing)."""
        return pickle.loads(self.frontier_blob)

    def visited_bytes(self) -> int:
        return sum(a.itemsize * len(a) for a in self.fps) + sum(
            a.itemsize * len(a) for a in self.parents)


def _pack(states: list) -> bytes:
    return pickle.dumps(states, pickle.HIGHEST_PROTOCOL)


def _fingerprint_of(spec, symmetry: bool):
    fingerprint = spec.fingerprint
    if not symmetry:
        return lambda s: fingerprint(s) & _MASK
    canonical = spec.canonical
    return lambda s: fingerprint(canonical(s)) & _MASK


def _state_witnesses(spec, states, wanted) -> set:
    """Those of ``wanted`` that are state predicates (``properties.spec.witness_scopes``),
    checked once per new state as ``explore``'s ``commit_level`` does."""
    hits: set = set()
    if not wanted:
        return hits
    scopes = witness_scopes(spec)
    left = [w for w in wanted if scopes[w] == ()]
    if not left:
        return hits
    hit = spec.witnesses_hit
    for s in states:
        for w in hit(None, None, s, left) or ():
            if w in left:
                left.remove(w)
                hits.add(w)
        if not left:
            break
    return hits


def initial_parts(spec, partitions: int, *, symmetry: bool = False,
                  max_states: int | None = None, wanted=()) -> tuple[list, dict]:
    """Level 0 as ``partitions`` Parts, and facts for the driver: ``initial`` (number of initial
    states), ``distinct``, ``cut`` (``max_states`` cut level 0), ``state_hits``, ``init``."""
    fp_of = _fingerprint_of(spec, symmetry)
    init = list(spec.initial_states())
    cand: dict = {}
    for i, s in enumerate(init):
        f = fp_of(s)
        if f not in cand:
            cand[f] = (i, s)
    cut0 = max_states is not None and len(cand) > max_states
    if cut0:
        cand = {f: cand[f] for f in list(cand)[:max_states]}      # first in initial order
    hits = _state_witnesses(spec, [s for _, s in cand.values()], wanted)
    groups: list[list] = [[] for _ in range(partitions)]
    for f in cand:
        groups[owner(f, partitions)].append(f)
    parts = []
    for pid, fs in enumerate(groups):
        fs.sort()
        parts.append(Part(pid, [array("Q", fs)], [array("Q", [cand[f][0] for f in fs])],
                          array("I", bytes(4 * len(fs))), _pack([cand[f][1] for f in fs])))
    return parts, {"initial": len(init), "distinct": len(cand), "cut": cut0, "state_hits": hits,
                   "init": init}


def expand(part: Part, spec, partitions: int, *, symmetry: bool, wanted=(),
           per_transition: bool = False, stop_at_violation: bool = True,
           below: int | None = None, emit: bool = True):
    """Expand ``part``'s frontier in fingerprint order (``explore``'s order).

    Returns (groups, stats): ``groups[o]`` is a list of candidates ``(fp, parent fp, successor
    index, state)`` owned by partition ``o``, already reduced to the first (smallest key) one per
    fingerprint.  A successor whose fingerprint is its parent's (a stuttering self-loop) is not a
    candidate, as in ``explore``.  With ``stop_at_violation`` a violating state is not expanded
    (``explore`` stops there).  ``below``: expand only the states with a smaller fingerprint (the
    recount of a violating level); ``emit=False``: counts only."""
    fp_of = _fingerprint_of(spec, symmetry)
    successors = spec.successors
    violation = spec.violation
    witnesses_hit = spec.witnesses_hit
    scopes = witness_scopes(spec) if per_transition else {}
    left = [w for w in wanted if scopes[w] != ()] if per_transition else []
    reached: set = set()
    acount: dict = {}
    violations = []
    local: dict = {}
    expanded = 0
    for here, state in zip(part.fps[-1], part.frontier()):
        if below is not None and here >= below:
            break
        succ = successors(state)
        v = violation(state, succ)
        if v is not None:
            violations.append((here, v))
            if stop_at_violation:
                continue
        expanded += 1
        for j, (st, s) in enumerate(succ):
            acount[st.action] = acount.get(st.action, 0) + 1
            if emit:
                f = fp_of(s)
                if f != here and f not in local:
                    local[f] = (f, here, j, s)
            if left:
                note_step_witnesses(witnesses_hit, scopes, left, reached, state, st, s)
    groups: list[list] = [[] for _ in range(partitions)]
    for f, c in local.items():
        groups[owner(f, partitions)].append(c)
    return groups, LevelStats(action_counts=acount, transition_hits=reached,
                              violations=violations, expanded=expanded)


def merge(part: Part, candidates, spec=None, *, wanted=()) -> Part:
    """A new Part: ``part`` plus a provisional next level made of the ``candidates`` (an iterable
    of ``(fp, parent fp, successor index, state)`` from every partition) that are not visited
    yet, each fingerprint represented by its smallest discovery key.  Witnesses that are state
    predicates are checked on the new states (``spec`` needed only for that).  ``part`` itself
    is not changed, so the driver can still drop the new level."""
    best: dict = {}
    for c in candidates:
        f = c[0]
        b = best.get(f)
        if b is None or (c[1], c[2]) < (b[1], b[2]):
            best[f] = c
    dups: set = set()
    for level in part.fps:
        if best and level:
            dups.update(best.keys() & level)
    order = sorted(best.keys() - dups if dups else best)
    chosen = [best[f] for f in order]
    states = [c[3] for c in chosen]
    new = Part(part.pid, part.fps + [array("Q", order)],
               part.parents + [array("Q", [c[1] for c in chosen])],
               array("I", [c[2] for c in chosen]), _pack(states))
    hits = _state_witnesses(spec, states, wanted) if spec is not None else set()
    new.stats = LevelStats(new=len(order), state_hits=hits, visited_bytes=new.visited_bytes())
    return new


def recount(part: Part, spec, partitions: int, *, symmetry: bool, wanted, per_transition: bool,
            below: int) -> LevelStats:
    """Transitions and transition witnesses of the frontier states with fingerprint < ``below``."""
    return expand(part, spec, partitions, symmetry=symmetry, wanted=wanted,
                  per_transition=per_transition, below=below, emit=False)[1]


def new_keys(part: Part):
    """Discovery keys ``(parent fp, successor index)`` of the last level (for a cut)."""
    return list(zip(part.parents[-1], part.keys))


def cut(part: Part, last_key, spec=None, *, wanted=()) -> Part:
    """``part`` with its last level cut to the states whose discovery key is <= ``last_key``
    (``explore``'s max_states cut keeps the first discovered states)."""
    keep = [i for i, k in enumerate(zip(part.parents[-1], part.keys)) if k <= tuple(last_key)]
    fps, pars, frontier = part.fps[-1], part.parents[-1], part.frontier()
    states = [frontier[i] for i in keep]
    new = Part(part.pid, part.fps[:-1] + [array("Q", [fps[i] for i in keep])],
               part.parents[:-1] + [array("Q", [pars[i] for i in keep])],
               array("I", [part.keys[i] for i in keep]), _pack(states))
    hits = _state_witnesses(spec, states, wanted) if spec is not None else set()
    new.stats = LevelStats(new=len(keep), state_hits=hits, visited_bytes=new.visited_bytes())
    return new


def lookup(part: Part, depth: int, fp: int) -> int:
    """The parent fingerprint (depth 0: the initial-state index) stored for ``fp``."""
    level = part.fps[depth]
    i = bisect_left(level, fp)
    if i == len(level) or level[i] != fp:
        raise KeyError(f"fingerprint {fp:#x} is not stored at depth {depth} "
                       f"in partition {part.pid}")
    return part.parents[depth][i]


# ---- the level loop, shared by the in-process and the Spark backends ----------------------------

@dataclass
class LevelArgs:
    """What every partition needs to expand one level (pickled into the Spark job)."""
    spec: object
    partitions: int
    symmetry: bool
    wanted: tuple
    per_transition: bool
    stop_at_violation: bool


def expand_records(a: LevelArgs, pid: int, records):
    """Spark's expand step over one partition's records ``(pid, Part)``: yields ``(owner,
    ("c", pickled [candidate, ...]))`` per owning partition and ``(pid, ("s", LevelStats))``,
    all keyed by the partition that must receive them."""
    with gc_paused():         # Spark unpickles ``records`` and pickles what we yield in here
        for _, part in records:
            groups, stats = expand(part, a.spec, a.partitions, symmetry=a.symmetry,
                                   wanted=a.wanted, per_transition=a.per_transition,
                                   stop_at_violation=a.stop_at_violation)
            for o, g in enumerate(groups):
                if g:
                    # Pickled here, by C pickle: Spark's own serializer for a shuffle is
                    # cloudpickle, whose per-object Python hook made it the largest cost of a
                    # level (38 of 125 worker-seconds, kraft-small to depth 14); it now sees
                    # one bytes object per group.
                    yield o, ("c", pickle.dumps(g, pickle.HIGHEST_PROTOCOL))
            yield pid, ("s", stats)


def merge_records(a: LevelArgs, pid: int, records):
    """Spark's merge step over partition ``pid`` of the union (its ``Part`` plus every record
    the expand step keyed to it): yields ``(pid, new Part)`` whose ``stats`` hold the level's
    counts for this partition.  A record keyed to another partition means the union was not
    partition-aligned, which would silently lose states, so it is an error."""
    with gc_paused():
        part = None
        cands: list = []
        stats = LevelStats()
        for k, v in records:
            if k != pid:
                raise RuntimeError(f"record for partition {k} arrived in partition {pid}")
            if isinstance(v, Part):
                part = v
            elif v[0] == "c":
                cands.extend(pickle.loads(v[1]))
            else:
                stats.add(v[1])
        if part is None:
            raise RuntimeError(f"partition {pid} lost its visited set")
        new = merge(part, cands, a.spec, wanted=a.wanted)
        new.stats = stats.add(new.stats)
        del part, cands
        yield pid, new


class LocalBackend:
    """Runs the partitioned BFS in this process through the same record functions as Spark
    (with lists for the shuffle and a pickle round trip per record, so what Spark would
    fail to serialise fails here too): the reference for ``SparkBackend`` and a JVM-free way to
    test the partitioning."""

    def __init__(self, partitions: int = 4):
        if partitions < 1:
            raise ValueError("partitions must be >= 1")
        self.partitions = partitions
        self.parts: list = []
        self.pending: list | None = None

    def start(self, parts: list) -> None:
        self.parts = parts

    def level(self, a: LevelArgs) -> list:
        with gc_paused():
            inbox: list[list] = [[(p.pid, p)] for p in self.parts]
            for p in self.parts:
                for key, value in expand_records(a, p.pid, [(p.pid, p)]):
                    inbox[key].append((key, pickle.loads(pickle.dumps(value))))
            self.pending = [next(merge_records(a, pid, recs))[1]
                            for pid, recs in enumerate(inbox)]
        return [p.stats for p in self.pending]

    def accept(self) -> None:
        self.parts, self.pending = self.pending, None

    def recount(self, a: LevelArgs, below: int) -> list:
        return [recount(p, a.spec, a.partitions, symmetry=a.symmetry, wanted=a.wanted,
                        per_transition=a.per_transition, below=below) for p in self.parts]

    def cut(self, a: LevelArgs, k: int) -> list:
        last = heapq.nsmallest(k, (key for p in self.pending for key in new_keys(p)))[-1]
        self.pending = [cut(p, last, a.spec, wanted=a.wanted) for p in self.pending]
        return [p.stats for p in self.pending]

    def lookup(self, pid: int, depth: int, fp: int) -> int:
        return lookup(self.parts[pid], depth, fp)


def run_bfs(spec, backend, *, partitions: int, symmetry: bool = False,
            max_states: int | None = None, max_depth: int | None = None, progress=None,
            stop_at_violation: bool = True, label: str = "explore-partitioned"):
    """The level loop of a partitioned BFS over ``backend`` (``LocalBackend`` or spark.py's
    ``SparkBackend``); returns a ``properties.explore.ExploreResult`` with ``explore``'s
    counting conventions (see the module docstring)."""
    from properties.explore import ExploreResult

    if max_states is not None and max_states < 0:
        raise ValueError("max_states must be >= 0")
    if max_depth is not None and max_depth < 0:
        raise ValueError("max_depth must be >= 0")
    t0 = time.perf_counter()
    witness_ids = tuple(spec.witness_ids())
    scopes = witness_scopes(spec)
    reached: set = set()
    acount = {a: 0 for a in spec.action_names()}
    parts, facts = initial_parts(spec, partitions, symmetry=symmetry, max_states=max_states,
                                 wanted=witness_ids)
    reached |= facts["state_hits"]
    init = facts["init"]
    distinct = facts["distinct"]
    states_per_depth = [distinct] if distinct else []
    complete = not facts["cut"]
    stop_reason = "max_states" if facts["cut"] else None
    found = None                       # (property, depth, fingerprint)
    violations_seen: list = []
    visited_bytes = 16 * distinct
    last_report = [t0]

    def say(text: str, force: bool = False) -> None:
        now = time.perf_counter()
        if progress is not None and (force or now - last_report[0] >= 1.0):
            last_report[0] = now
            print(f"[{label}] {text}", file=progress, flush=True)

    backend.start(parts)
    del parts
    depth = 0
    while states_per_depth:
        wanted = tuple(w for w in witness_ids if w not in reached)
        args = LevelArgs(spec, partitions, symmetry, wanted,
                         any(scopes[w] != () for w in wanted), stop_at_violation)
        agg = combine(backend.level(args))
        if agg.violations:
            first_fp, first_v = min(agg.violations)
            if found is None:
                found = (first_v, depth, first_fp)
            if stop_at_violation:
                # explore stops at its first violating state: only the states before it (in
                # fingerprint order) were expanded and counted.
                if first_v not in violations_seen:
                    violations_seen.append(first_v)
                part = combine(backend.recount(args, first_fp))
                for a, n in part.action_counts.items():
                    acount[a] = acount.get(a, 0) + n
                reached |= part.transition_hits
                complete = False
                stop_reason = "violation"
                break
            for _, v in sorted(agg.violations):
                if v not in violations_seen:
                    violations_seen.append(v)
        for a, n in agg.action_counts.items():
            acount[a] = acount.get(a, 0) + n
        reached |= agg.transition_hits
        n_new = agg.new
        el = time.perf_counter() - t0
        say(f"depth {depth}  distinct {distinct:,}  generated "
            f"{facts['initial'] + sum(acount.values()):,}  next level {n_new:,}  "
            f"{distinct / el if el > 0 else 0:,.0f} distinct/s  {el:.0f} s")
        if not n_new:
            break
        if stop_reason == "max_states" or (max_states is not None and distinct >= max_states):
            complete = False
            stop_reason = "max_states"
            break
        if max_depth is not None and depth >= max_depth:
            complete = False
            stop_reason = "max_depth"
            break
        state_hits = agg.state_hits
        if max_states is not None and distinct + n_new > max_states:
            cagg = combine(backend.cut(args, max_states - distinct))
            n_new, state_hits = cagg.new, cagg.state_hits
            agg.visited_bytes = cagg.visited_bytes
            complete = False
            stop_reason = "max_states"
        backend.accept()
        reached |= state_hits
        states_per_depth.append(n_new)
        distinct += n_new
        visited_bytes = agg.visited_bytes
        depth += 1

    trace: tuple = ()
    initial_index = None
    violating_state = None
    if found is not None:
        _, vdepth, vfp = found
        path = [vfp]
        for d in range(vdepth, 0, -1):
            path.append(backend.lookup(owner(path[-1], partitions), d, path[-1]))
        path.reverse()
        initial_index = backend.lookup(owner(path[0], partitions), 0, path[0])
        initial_index, trace, violating_state = _replay_path(spec, init, initial_index, path,
                                                             symmetry)
    seconds = time.perf_counter() - t0
    result = ExploreResult(
        spec_name=spec.name, distinct=distinct, generated=facts["initial"] + sum(acount.values()),
        depth=max(len(states_per_depth) - 1, 0), complete=complete,
        violation=found[0] if found else None, trace=trace, initial_index=initial_index,
        violating_state=violating_state, action_counts=acount,
        witnesses_reached=tuple(w for w in witness_ids if w in reached),
        witnesses_missing=tuple(w for w in witness_ids if w not in reached),
        seconds=seconds, states_per_depth=states_per_depth,
        bytes_per_state=visited_bytes / distinct if distinct else 0.0,
        peak_frontier=max(states_per_depth, default=0), symmetry=symmetry,
        violations_seen=tuple(violations_seen), stop_reason=stop_reason,
        visited_bytes=visited_bytes)
    say(f"{spec.name}: {'complete' if complete else f'incomplete ({stop_reason})'}: depth "
        f"{result.depth}  distinct {distinct:,}  generated {result.generated:,}  "
        f"{seconds:.1f} s" + (f"  violation {found[0]} at depth {found[1]}" if found else ""),
        force=True)
    return result


def _replay_path(spec, init, initial_index, path, symmetry):
    """Replay from ``init[initial_index]`` choosing at each depth the first successor whose
    fingerprint is the recorded one (a path in the quotient graph lifts to a concrete one)."""
    fp_of = _fingerprint_of(spec, symmetry)
    state = init[initial_index]
    steps: list[Step] = []
    for d in range(1, len(path)):
        for st, s in spec.successors(state):
            if fp_of(s) == path[d]:
                steps.append(st)
                state = s
                break
        else:
            raise RuntimeError(f"trace reconstruction failed at depth {d}: no successor has the "
                               f"recorded fingerprint (is successors() deterministic across "
                               f"processes?)")
    return initial_index, tuple(steps), state


def explore_partitioned(spec, *, partitions: int = 4, symmetry: bool = False,
                        max_states: int | None = None, max_depth: int | None = None,
                        progress=None, stop_at_violation: bool = True):
    """The partitioned BFS in this process (no Spark): same result as ``explore``."""
    return run_bfs(spec, LocalBackend(partitions), partitions=partitions, symmetry=symmetry,
                   max_states=max_states, max_depth=max_depth, progress=progress,
                   stop_at_violation=stop_at_violation, label="explore-partitioned")

