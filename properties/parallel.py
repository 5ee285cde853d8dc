"""The explorer on several processes: ``explore(spec, workers=N)``.

The search is ``explore``'s level by level, with the same stored levels, counts, shortest
traces, witnesses and whole-graph checks; only the work on a level is shared out.  The driver
(this process) keeps what ``explore`` keeps per visited state (``Visited``: 12 bytes of
fingerprint and parent index) and decides everything; each worker process holds the states of
the current level that are its share, as live objects, and a dict of every visited fingerprint
to its state number (the global index ``explore`` gives it), and does the rest:

1. *expand*: every worker expands its states (successors, ``violation``, the witnesses that read
   the step, and for the whole-graph checks each state's status and its transitions' targets as
   state numbers) and keeps as candidates the successors not visited yet, each with its
   discovery key (the parent's index in the level and the successor's position, so the
   smallest key is the discovery ``explore`` makes first).  It sends them cut into the
   workers' ranges of fingerprints, with keys tagged with its number (``_split``);
2. *merge*: each worker merges every worker's candidates in its range (the smallest tagged key
   per fingerprint) and sends back the range's new fingerprints sorted; the ranges in order are
   the sorted new level, which the driver numbers and stores as ``explore`` does.  A new state
   stays with the worker that discovered it first, except that a worker holding more than its
   share passes the surplus to one holding less (pickled: the only states that cross a process
   boundary);
3. *keep*/*take*: each worker numbers the new level's fingerprints (so the last level's
   transitions into it get their targets, and its successors count as visited), keeps its share
   of it, in index order, and checks the witnesses that are state predicates on it.

So the driver does no per-state work but storing the level and deciding who keeps what; the
deduplication, the sorting and the numbering of targets are the workers', in parallel.  The
price is memory: every worker's dict costs about 100 bytes per visited state.

A violation stops the search at the level's smallest violating index, as in ``explore``; the
workers then count again the transitions of their states below it (``recount``), so the
counts are ``explore``'s.  Workers are forked where the platform allows (the spec is inherited),
spawned with the pickled spec elsewhere, and run with the cyclic collector off.  Fingerprints
must be the same in every process (``properties/spec.py``), which the Kafka model's are.

Stopping early (``explore``'s ``max_seconds`` and ``interruptible``): the workers ignore Ctrl-C
(in a terminal it reaches the whole process group); the driver's ``Stopper`` sets an event that
the workers check, with the time left, between chunks of states, so a level being expanded ends
within a chunk; the driver drops that level and returns the levels stored before it.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import signal
import time
from array import array
from bisect import bisect_left
from itertools import repeat
from operator import floordiv, mod

from properties.explore import (MAX_SECONDS, ExploreResult, Stopper, Visited, _finish, _fmt,
                                _rebuild_trace, _EVERY, _MASK)
from properties.spec import (incremental_checks, note_step_witnesses, progress_edges_of,
                             witness_scopes)

__all__ = ["explore_parallel", "default_workers"]

_KEY = 1 << 20          # discovery key = parent index * _KEY + successor position
MAX_WORKERS = 1 << 11   # a tagged key (key * workers + worker) must fit in 64 bits
_CHECK_EVERY = 2048     # states a worker expands between two looks at the stop event


def default_workers() -> int:
    """Every core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:      # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


# ---- the worker ---------------------------------------------------------------------------------

class _Worker:
    """One worker's side: its share of the current level and the candidates of the next."""

    def __init__(self, spec, symmetry: bool, record: bool, progress_rec: bool, stop=None,
                 number: int = 0, workers: int = 1):
        self.spec = spec
        self.number, self.workers = number, workers
        self.stop = stop            # the driver's stop event (multiprocessing.Event) or None
        self.canonical = spec.canonical if symmetry else None
        self.record = record
        self.progress_rec = progress_rec
        if record:
            from properties.graphcheck import status_of
            self.status_of = status_of(spec)
        self.scopes = witness_scopes(spec)
        self.idx = array("Q")       # the global indices of its states, increasing
        self.fps = array("Q")       # their fingerprints
        self.states: list = []
        # incremental checks (properties.spec.incremental_checks; not with symmetry): each
        # state's token, from the transition that first found it (None: every check)
        incr = incremental_checks(spec) if not symmetry else None
        self.changes, self.violation_since = incr if incr is not None else (None, None)
        self.toks = None
        # the last expansion's candidates: fingerprint -> position, and their states (and
        # tokens, or None) in discovery order
        self.cand: tuple = ({}, [], None)
        # every visited fingerprint -> its state number (``keep`` adds each level's): which
        # successors are new, and the recorded transitions' targets as state numbers
        self.ids: dict = {}
        self.raw = None             # the last recorded expansion's targets, to finish
        # kept by ``keep`` (indices, fingerprints, states, tokens), ordered by ``take``
        self._pending = (array("Q"), array("Q"), [], None)

    def expand(self, wanted: list, stop: bool, below: int | None = None, emit: bool = True,
               seconds_left: float | None = None):
        spec, scopes = self.spec, self.scopes
        event = self.stop
        deadline = None if seconds_left is None else time.monotonic() + seconds_left
        stopped = False
        successors, violation = spec.successors, spec.violation
        witnesses_hit = spec.witnesses_hit
        wanted = list(wanted)
        reached: set = set()
        acount: dict = dict.fromkeys(spec.action_names(), 0)
        violations: list = []
        cand: dict = {}             # fingerprint -> its position in ``found``
        found: list = []            # the candidates' states, in discovery order
        keys: list = []             # their discovery keys, in the same order
        changes, violation_since = self.changes, self.violation_since
        toks = self.toks if changes is not None else None
        found_tok = [] if changes is not None and emit else None    # their tokens
        interned = {}.setdefault
        position = cand.get
        new_key = keys.append
        record = self.record and emit
        status, counts = bytearray(), array("I")
        # per transition its target's state number; those into the next level, not numbered
        # yet, are 0 until ``targets`` numbers them (``late``: their positions in ``tgt``,
        # ``late_at``: their targets' positions among the candidates, so that a candidate
        # reached many times is looked up once)
        tgt, late, late_at = array("I"), array("Q"), array("I")
        marks, edges = array("Q"), bytearray()
        if record and self.progress_rec:
            marks_of, edge_class = spec.progress_marks, progress_edges_of(spec)
        fingerprint, canonical, M = spec.fingerprint, self.canonical, _MASK
        ids = self.ids
        number = ids.get
        for k, (idx, here, state) in enumerate(zip(self.idx, self.fps, self.states)):
            if below is not None and idx >= below:
                break
            if not k % _CHECK_EVERY and ((event is not None and event.is_set()) or (
                    deadline is not None and time.monotonic() >= deadline)):
                stopped = True
                break
            succ = successors(state)
            v = violation(state, succ) if toks is None else violation_since(state, succ, toks[k])
            if v is not None:
                violations.append((idx, v))
                if stop:
                    break
            if record:
                status.append(self.status_of(state, succ))
                counts.append(len(succ))
                if self.progress_rec:
                    marks.append(marks_of(state))
                    edges.extend(edge_class(state, succ))
            key = idx * _KEY
            for st, s in succ:
                acount[st.action] += 1
                f = fingerprint(s if canonical is None else canonical(s)) & M
                if record:          # (emit too) one lookup: number, or new
                    t = number(f)
                    if t is None:
                        j = position(f)
                        if j is None:
                            j = cand[f] = len(found)
                            found.append(s)
                            new_key(key)
                            if found_tok is not None:
                                t = changes(state, s) if v is None else _EVERY
                                found_tok.append(interned(t, t))
                        late.append(len(tgt))
                        late_at.append(j)
                        tgt.append(0)
                    else:
                        tgt.append(t)
                elif emit and f != here and f not in cand and f not in ids:
                    cand[f] = len(found)
                    found.append(s)
                    new_key(key)
                    if found_tok is not None:
                        t = changes(state, s) if v is None else _EVERY
                        found_tok.append(interned(t, t))
                key += 1
                if wanted:
                    note_step_witnesses(witnesses_hit, scopes, wanted, reached, state, st, s)
        if emit:
            self.cand = (cand, found, found_tok)
        out = {"acount": acount, "reached": reached, "violations": violations,
               "flags_read": self.flags_read(), "stopped": stopped}
        if emit:
            out["parts"] = _split(cand, keys, self.number, self.workers)
        if record:
            out["rec"] = (self.idx[:len(status)], status, counts, marks, edges)
            self.raw = (tgt, late, late_at, cand)   # finished by ``targets``
        return out

    def targets(self, wanted: bool = True):
        """The last recorded expansion's transitions' targets as state numbers, those into the
        next level numbered now that it is; None if nothing was recorded or not ``wanted``
        (a level cut short by ``max_states``: its graph is not checked)."""
        raw, self.raw = self.raw, None
        if raw is None or not wanted:
            return None
        tgt, late, late_at, cand = raw
        numbers = array("I", map(self.ids.__getitem__, cand))  # each candidate's, in order
        for at, j in zip(late, late_at):
            tgt[at] = numbers[j]
        return tgt

    def _number(self, level, offset: int) -> None:
        self.ids.update(zip(level, range(offset, offset + len(level))))

    def flags_read(self) -> frozenset:
        """The design flags the model has read in this process (a Kafka spec watches them)."""
        read = getattr(self.spec, "flags_read", None)
        return read() if read is not None else frozenset()

    def merge(self, parts: list):
        """Merge every worker's candidates in this worker's range of fingerprints (``parts``:
        per worker, fingerprint and tagged-key arrays, see ``_split``): the smallest tagged key
        per fingerprint, that is the first discovery and the worker holding the state.  Returns
        the range's new fingerprints, sorted, and their tagged keys."""
        best: dict = {}
        for fps, tags in parts:
            mine = dict(zip(fps, tags))
            for f in mine.keys() & best.keys():     # found by another worker too
                if best[f] < mine[f]:
                    mine[f] = best[f]
            best.update(mine)
            del mine
        new = array("Q", sorted(best))
        return new, array("Q", map(best.__getitem__, new))

    def keep(self, level, offset, mine, give, number_targets: bool = True):
        """Note ``level`` (the new level's fingerprints, its states numbered from ``offset``)
        as visited; keep ``mine`` ((index, fingerprint) arrays) from the candidates.  Returns
        the states of each list of fingerprints in ``give``, pickled, one blob per worker they
        go to (the driver forwards the blobs as they are), and the last expansion's
        ``targets`` (if ``number_targets``)."""
        self._number(level, offset)
        cand, found, found_tok = self.cand
        self.cand = ({}, [], None)
        idx, fps = mine

        def tokens(part):
            return None if found_tok is None else [found_tok[cand[f]] for f in part]
        self._pending = (idx, fps, [found[cand[f]] for f in fps], tokens(fps))
        return ([pickle.dumps(([found[cand[f]] for f in part], tokens(part)),
                              pickle.HIGHEST_PROTOCOL)
                 for part in give],
                self.targets(number_targets))

    def take(self, received, wanted_state: list, level=None):
        """Add the states passed on to it (``[(index array, fingerprint array, pickled)]``) to
        its share, in index order; return the state-predicate witnesses seen on it.  ``level``:
        the level's fingerprints, to note as visited (level 0; ``keep`` notes the others')."""
        if level is not None:
            self._number(level, 0)
        idx, fps, states, toks = self._pending
        self._pending = (array("Q"), array("Q"), [], None)
        if received:
            idx, fps, states, toks = _merged(idx, fps, states, toks, received)
        self.idx, self.fps, self.states, self.toks = idx, fps, states, toks
        hits: list = []
        left = list(wanted_state)
        if left:
            hit = self.spec.witnesses_hit
            for s in self.states:
                for w in hit(None, None, s, left) or ():
                    if w in left:
                        left.remove(w)
                        hits.append(w)
                if not left:
                    break
        return hits, len(self.states)


def _split(cand: dict, keys: list, number: int, workers: int) -> list:
    """A worker's candidates (fingerprints, in discovery order; ``keys`` their
    discovery keys) cut into the workers' ranges of fingerprints (worker j merges those from
    j * 2**64 / workers on): per range, the fingerprints and their tagged keys, ``key *
    workers + number``, which order as the keys do (no two states share a key) and name the
    worker holding the state."""
    parts = [(array("Q"), array("Q")) for _ in range(workers)]
    for f, k in zip(cand, keys):
        fps, tags = parts[(f * workers) >> 64]
        fps.append(f)
        tags.append(k * workers + number)
    return parts


def _merged(idx: array, fps: array, states: list, toks, received: list):
    """A worker's own share (``idx`` increasing, as ``keep`` gets it; ``toks`` its states'
    tokens or None) with the states passed on to it (``[(index array, fingerprint array,
    pickled (states, tokens or None))]``), in increasing index order.

    Few states move (the surplus of a level), so the received ones are sorted alone and
    inserted by slices: linear in the share, not a sort of it."""
    r_idx, r_fps, r_states, r_toks = [], [], [], []
    for i, f, blob in received:
        r_idx += i
        r_fps += f
        got, got_toks = pickle.loads(blob)
        r_states += got
        if got_toks is None:
            toks = None                 # every worker has tokens or none has
        else:
            r_toks += got_toks
    out_idx, out_fps, out_states, out_toks = array("Q"), array("Q"), [], []
    at = 0
    for j in sorted(range(len(r_idx)), key=r_idx.__getitem__):
        i = r_idx[j]
        to = bisect_left(idx, i, at)
        out_idx += idx[at:to]
        out_fps += fps[at:to]
        out_states += states[at:to]
        out_idx.append(i)
        out_fps.append(r_fps[j])
        out_states.append(r_states[j])
        if toks is not None:
            out_toks += toks[at:to]
            out_toks.append(r_toks[j])
        at = to
    out_idx += idx[at:]
    out_fps += fps[at:]
    out_states += states[at:]
    if toks is None:
        return out_idx, out_fps, out_states, None
    out_toks += toks[at:]
    return out_idx, out_fps, out_states, out_toks


def _serve(conn, spec, symmetry, record, progress_rec, stop, number, workers) -> None:
    gc.disable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C is the driver's to handle
    if isinstance(spec, bytes):
        spec = pickle.loads(spec)
    w = _Worker(spec, symmetry, record, progress_rec, stop, number, workers)
    while True:
        try:
            cmd, args = conn.recv()
        except EOFError:
            return
        if cmd == "stop":
            return
        try:
            conn.send(("ok", getattr(w, cmd)(*args)))
        except BaseException as exc:           # the driver re-raises it with the cause
            import traceback
            conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


class _Pool:
    """The worker processes, each behind a pipe; ``call`` sends one command to each and
    gathers the answers (the workers run in parallel between the sends and the receives)."""

    def __init__(self, spec, n: int, symmetry: bool, record: bool, progress_rec: bool):
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        carried = spec if ctx.get_start_method() == "fork" else pickle.dumps(spec)
        self.stop = ctx.Event()         # set by the driver to end the current expansion early
        self.conns, self.procs = [], []
        for number in range(n):
            mine, theirs = ctx.Pipe()
            p = ctx.Process(target=_serve,
                            args=(theirs, carried, symmetry, record, progress_rec, self.stop,
                                  number, n),
                            daemon=True)
            p.start()
            theirs.close()
            self.conns.append(mine)
            self.procs.append(p)

    def call(self, cmd: str, per_worker: list) -> list:
        self.send(cmd, per_worker)
        return self.receive()

    def send(self, cmd: str, per_worker: list) -> None:
        """Start ``cmd`` on every worker (``receive`` gathers the answers)."""
        for conn, args in zip(self.conns, per_worker):
            conn.send((cmd, args))

    def receive(self) -> list:
        out = []
        for k, conn in enumerate(self.conns):
            try:
                status, value = conn.recv()
            except EOFError:
                raise RuntimeError(f"explore worker {k} died (exit code "
                                   f"{self.procs[k].exitcode})") from None
            if status == "error":
                raise RuntimeError(f"explore worker {k} failed: {value}")
            out.append(value)
        return out

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(("stop", ()))
            except (OSError, ValueError):
                pass
        for p in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
        for conn in self.conns:
            conn.close()


# ---- the driver ---------------------------------------------------------------------------------

def _balance(holder: list, n_workers: int) -> tuple[list, dict]:
    """Who keeps which state of the new level: ``holder[pos]`` is the worker that discovered
    position ``pos`` first.  A worker holding more than ``ceil(n / workers)`` passes the surplus
    (its last positions) to workers holding fewer.  Returns (per worker, the positions it keeps
    from its own candidates; ``{(from, to): positions}`` passed on)."""
    share = -(-len(holder) // n_workers)
    own: list[list] = [[] for _ in range(n_workers)]
    for pos, w in enumerate(holder):
        own[w].append(pos)
    size = [len(o) for o in own]
    moves: dict = {}
    spare = [w for w in range(n_workers) if size[w] < share]
    for w in range(n_workers):
        while size[w] > share and spare:
            to = spare[0]
            take = min(share - size[to], size[w] - share)
            moves.setdefault((w, to), []).extend(own[w][-take:])
            del own[w][-take:]
            size[w] -= take
            size[to] += take
            if size[to] >= share:
                spare.pop(0)
    return own, moves


def explore_parallel(spec, workers: int, *, symmetry: bool = False,
                     max_states: int | None = None, max_depth: int | None = None,
                     progress=None, stop_at_violation: bool = True,
                     keep_fingerprints: bool = False, graph_checks: bool = True,
                     stopper: Stopper | None = None) -> ExploreResult:
    """``explore`` with the expansion of each level shared by ``workers`` processes (see the
    module docstring); the result is ``explore``'s (``seconds`` is wall time).  ``stopper``:
    when to stop early (``properties.explore.Stopper``; none by default)."""
    stopper = stopper if stopper is not None else Stopper()
    with stopper:
        return _explore_parallel(spec, workers, symmetry, max_states, max_depth, progress,
                                 stop_at_violation, keep_fingerprints, graph_checks, stopper)


def _explore_parallel(spec, workers, symmetry, max_states, max_depth, progress,
                      stop_at_violation, keep_fingerprints, graph_checks,
                      stopper: Stopper) -> ExploreResult:
    if not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"workers must be from 1 to {MAX_WORKERS}")
    if max_states is not None and max_states < 0:
        raise ValueError("max_states must be >= 0")
    if max_depth is not None and max_depth < 0:
        raise ValueError("max_depth must be >= 0")
    t0 = time.perf_counter()
    M = _MASK
    fingerprint = spec.fingerprint
    canonical = spec.canonical
    acount = {a: 0 for a in spec.action_names()}
    witness_ids = tuple(spec.witness_ids())
    scopes = witness_scopes(spec)
    reached: set = set()
    wanted_state = [w for w in witness_ids if scopes[w] == ()]
    wanted = [w for w in witness_ids if scopes[w] != ()]
    rec = None
    record = graph_checks and getattr(spec, "settled", None) is not None
    progress_rec = record and getattr(spec, "progress_marks", None) is not None
    if record:
        from properties.graphcheck import GraphRecorder
        rec = GraphRecorder(progress=progress_rec)
        rec.targets = array("I")    # the workers number the targets (``_Worker.targets``)
        if progress_rec:
            rec.strict = tuple(spec.progress_strict())

    note_flags = getattr(spec, "note_flags_read", None)
    visited = Visited(membership=False)     # the workers check membership (``_Worker.ids``)
    found: list = []                     # [(property, depth, index in level)]
    violations_seen: list = []
    complete, stop_reason = True, None
    peak = 0
    last = [t0]

    def say(depth: int, final: bool = False) -> None:
        now = time.perf_counter()
        if progress is None or (not final and now - last[0] < 1.0):
            return
        last[0] = now
        el = now - t0
        gen = len(init) + sum(acount.values())
        rate = visited.distinct / el if el > 0 else 0.0
        if final:
            what = "complete" if complete else f"incomplete ({stop_reason})"
            viol = f"  violation {found[0][0]} at depth {found[0][1]}" if found else ""
            print(f"[explore] {spec.name}: {what}: depth {max(len(visited.fp_levels) - 1, 0)}  "
                  f"distinct {_fmt(visited.distinct)}  generated {_fmt(gen)}  {rate:,.0f} "
                  f"distinct/s  {el:.1f} s  {workers} workers{viol}", file=progress, flush=True)
        else:
            print(f"[explore] depth {depth}  distinct {_fmt(visited.distinct)}  generated "
                  f"{_fmt(gen)}  {rate:,.0f} distinct/s  {workers} workers", file=progress,
                  flush=True)

    # ---- level 0 (as explore) ------------------------------------------------------------------
    init = list(spec.initial_states())
    first: dict = {}
    for i, s in enumerate(init):
        f = fingerprint(canonical(s) if symmetry else s) & M
        if f not in first:
            first[f] = i
    if max_states is not None and len(first) > max_states:
        first = {f: first[f] for f in list(first)[:max_states]}
        complete, stop_reason = False, "max_states"
    order = sorted(first)
    visited.add_level(order, [first[f] for f in order])
    peak = len(order)

    pool = _Pool(spec, workers, symmetry, record, progress_rec)
    stopper.on_interrupt = pool.stop.set

    def seconds_left():
        return None if stopper.deadline is None else max(0.0, stopper.deadline - time.monotonic())

    try:
        # level 0's states go round the workers, pickled
        per = [[] for _ in range(workers)]
        for pos, f in enumerate(order):
            per[pos % workers].append((pos, f, init[first[f]]))
        answers = pool.call("take", [
            ([(array("Q", [p for p, _, _ in mine]), array("Q", [f for _, f, _ in mine]),
               pickle.dumps(([s for _, _, s in mine], None), pickle.HIGHEST_PROTOCOL))]
              if mine else [],
             wanted_state, visited.fp_levels[0]) for mine in per])
        _note_state_hits(answers, wanted_state, reached)

        depth = 0
        recorded = None             # a level's graph records, put in order during the next one
        while visited.states_per_depth and visited.states_per_depth[-1]:
            n_cur = visited.states_per_depth[-1]
            if stopper.should_stop():
                pool.stop.set()
            pool.send("expand", [(wanted, stop_at_violation, None, True, seconds_left())]
                      * workers)
            if recorded is not None:    # the last level's records, while the workers expand
                _record(rec, *recorded)
                recorded = None
            answers = pool.receive()
            stopped = any(a["stopped"] for a in answers)
            if note_flags is not None:
                for a in answers:
                    note_flags(a["flags_read"])
            level_counts = [a["acount"] for a in answers]
            level_hits = [a["reached"] for a in answers]
            viols = sorted(v for a in answers for v in a["violations"])
            if viols:
                if not found:
                    found.append((viols[0][1], depth, viols[0][0]))
                if stop_at_violation and not stopped:
                    # explore stops at the first violating state: count only the states before
                    below = viols[0][0]
                    recount = pool.call("expand", [(wanted, True, below, False)] * workers)
                    level_counts = [a["acount"] for a in recount]
                    level_hits = [a["reached"] for a in recount]
                    viols = viols[:1]
                for _, v in viols:
                    if v not in violations_seen:
                        violations_seen.append(v)
            for counts in level_counts:
                for a, k in counts.items():
                    acount[a] += k
            for hits in level_hits:
                for w in hits:
                    if w in wanted:
                        wanted.remove(w)
                        reached.add(w)
            if found and stop_at_violation:
                complete, stop_reason = False, "violation"
                break
            if stopped:                 # the level is dropped unfinished
                complete, stop_reason = False, stopper.reason or MAX_SECONDS
                break
            if rec is not None:
                expanded = [a["rec"] for a in answers]
            # merge: each worker merges its range of fingerprints (the smallest discovery key per
            # fingerprint, and who holds that state); the ranges in order are the sorted level
            parts = [a["parts"] for a in answers]
            del answers
            merged = pool.call("merge", [([p[j] for p in parts],) for j in range(workers)])
            del parts
            new, tags = array("Q"), array("Q")
            for fps, t in merged:
                new += fps
                tags += t
            del merged
            n_new = len(new)            # the workers sent only states not yet visited
            if not n_new:
                if rec is not None:
                    recorded = (_with_targets(expanded, pool.call("targets", [()] * workers)),
                                n_cur)
                break
            if stop_reason == "max_states" or (max_states is not None
                                               and visited.distinct >= max_states):
                complete, stop_reason = False, "max_states"
                break
            if max_depth is not None and depth >= max_depth:
                complete, stop_reason = False, "max_depth"
                break
            if max_states is not None and visited.distinct + n_new > max_states:
                first = sorted(sorted(range(n_new), key=tags.__getitem__)    # first discovered
                               [:max_states - visited.distinct])
                new = array("Q", map(new.__getitem__, first))
                tags = array("Q", map(tags.__getitem__, first))
                complete, stop_reason = False, "max_states"
            visited.add_level(new, map(floordiv, tags, repeat(workers * _KEY)))
            peak = max(peak, len(new))
            kept, moves = _balance(list(map(mod, tags, repeat(workers))), workers)
            del tags
            give = [[] for _ in range(workers)]
            for (src, to), positions in sorted(moves.items()):
                give[src].append((to, positions))
            level = visited.fp_levels[-1]
            kept_answers = pool.call("keep", [
                (level, visited.distinct - len(level),
                 (array("Q", kept[w]), array("Q", map(new.__getitem__, kept[w]))),
                 [list(map(new.__getitem__, ps)) for _, ps in give[w]], stop_reason is None)
                for w in range(workers)])
            blobs = [b for b, _ in kept_answers]
            if rec is not None and stop_reason is None:
                recorded = (_with_targets(expanded, [t for _, t in kept_answers]), n_cur)
            del kept_answers
            received = [[] for _ in range(workers)]
            for src in range(workers):
                for (to, positions), blob in zip(give[src], blobs[src]):
                    received[to].append((array("Q", positions),
                                         array("Q", map(new.__getitem__, positions)), blob))
            answers = pool.call("take", [(received[w], wanted_state) for w in range(workers)])
            _note_state_hits(answers, wanted_state, reached)
            depth += 1
            say(depth)
        if recorded is not None:
            _record(rec, *recorded)
    finally:
        pool.close()

    seconds = time.perf_counter() - t0
    fp_levels, par_levels = visited.fp_levels, visited.par_levels
    trace, initial_index, violating_state = (), None, None
    if found:
        _, vdepth, vidx = found[0]
        initial_index, trace, violating_state = _rebuild_trace(
            spec, init, fp_levels, par_levels, vdepth, vidx, symmetry)
    distinct = visited.distinct
    visited_bytes = visited.nbytes
    result = ExploreResult(
        spec_name=spec.name, distinct=distinct, generated=len(init) + sum(acount.values()),
        depth=max(len(fp_levels) - 1, 0), complete=complete,
        violation=found[0][0] if found else None, trace=trace, initial_index=initial_index,
        violating_state=violating_state, action_counts=acount,
        witnesses_reached=tuple(w for w in witness_ids if w in reached),
        witnesses_missing=tuple(w for w in witness_ids if w not in reached),
        seconds=seconds, states_per_depth=visited.states_per_depth,
        bytes_per_state=visited_bytes / distinct if distinct else 0.0,
        peak_frontier=peak, symmetry=symmetry, violations_seen=tuple(violations_seen),
        stop_reason=stop_reason, visited_bytes=visited_bytes)
    _finish(spec, result, rec, init, visited, symmetry, keep_fingerprints, t0, workers)
    if progress is not None:
        say(len(fp_levels) - 1, final=True)
    return result


def _note_state_hits(answers, wanted_state: list, reached: set) -> None:
    for hits, _ in answers:
        for w in hits:
            if w in wanted_state:
                wanted_state.remove(w)
                reached.add(w)


def _with_targets(expanded: list, targets: list) -> list:
    """Each worker's records of a level with its transitions' targets."""
    return [part + (tgt,) for part, tgt in zip(expanded, targets)]


def _record(rec, parts: list, n: int) -> None:
    """Append the workers' records of one level to ``rec`` in the level's index order."""
    rows: list = [None] * n
    for idx, status, counts, marks, edges, targets in parts:
        at = 0
        for k, i in enumerate(idx):
            c = counts[k]
            rows[i] = (status[k], targets[at:at + c], marks[k] if rec.marks is not None else 0,
                       edges[at:at + c] if rec.marks is not None else b"")
            at += c
    out, offsets = rec.targets, rec.offsets
    for st, tgts, mark, edge in rows:
        rec.status.append(st)
        out.extend(tgts)
        offsets.append(len(out))
        if rec.marks is not None:
            rec.marks.append(mark)
            rec.edge.extend(edge)
