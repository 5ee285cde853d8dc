"""Whole-graph checks on an exploration's state graph, as TLC checks deadlock and liveness on the
graph it built: SETTLE (the cluster can always settle), DEADLOCK, and PROGRESS (a healthy
cluster can always answer).

The explorer (``explore(graph_checks=True)``, the default) records, for every state it expands
and in the order it expands them (breadth-first: the order of the stored levels, so a state's
number is its global index), its *status* -- OPEN, SETTLED or DEADLOCKED (``status_of``) --
and the fingerprints of its successors: one ``bytearray`` entry per state and one ``array('Q')``
entry (8 bytes) per transition, plus an ``array('Q')`` offset per state.  Nothing else: no
networkx graph.  After a COMPLETE exploration (not one stopped by a violation, ``max_states`` or
``max_depth``: part of the graph is unknown then) ``check`` maps the successor fingerprints to
state numbers (one dict, freed at once) and decides:

* DEADLOCK: a DEADLOCKED state is reachable;
* SETTLE (``AG EF settled``): from every reachable state a SETTLED state is reachable.
  Backward reachability: mark the settled states, propagate to every state with a marked
  successor (``_reach``: forward passes until nothing changes, then, if needed, along a compact
  reversed adjacency, two ``array('I')``); every unmarked state is *stuck*.  Every successor of
  a stuck state is stuck, so following successors from one stays among stuck states and, the
  graph being finite, comes round: that cycle is the loop the cluster is caught in.

* PROGRESS (``AG (owed -> EF met)`` per goal, over the transitions that are not faults): for a
  spec with ``progress_marks`` (properties/progress.py for Kafka: a client waiting within its
  deadline in a healthy cluster is owed an answer other than REQUEST_TIMED_OUT; a pending
  registration RPC whose messages are not lost is owed its response), every state that owes a
  goal reaches one where it is met without a fault (and, for a *strict* goal, without a
  timeout).  The explorer records, per state, the goal marks (``array('Q')``: bit 2g owed,
  bit 2g+1 met) and, per transition, its class (one byte: ordinary, fault, timeout); the
  check is one backward reachability per goal over the allowed transitions.  It is what the
  safety clauses cannot say: a design that answers late, or only by a timeout, breaks no
  clause, and SETTLE holds because the timeout does settle the cluster.

All three counterexamples are the shortest: the first offending state in breadth-first order.
PROGRESS also shows one continuation without a fault from that state (``example_path``), to
show what happens to the request instead.

A spec says what the statuses are (``status_of``): SETTLED where ``settled(state, succ)``;
DEADLOCKED where it is not settled and has no successor at all (TLC's deadlock), or where its
optional ``deadlocked(state, succ)`` says so; OPEN otherwise.

For the Kafka model (``KafkaSpec.graph_status``), as TLC tells a deadlock from a proper
termination:

* SETTLED: no progress step is enabled (``model.next.quiescent``: faults do not count) and no
  work is outstanding (``properties.outstanding``), or *cut by the time bound*: the clock is
  at ``max_time`` and something waits for a point in time (a deadline or a backoff timer), so
  what comes next is decided by the bound, not by the protocol (the states a TLC constraint
  cuts off).
* DEADLOCKED: no progress step is enabled, the bound did not cut it, and work is outstanding:
  a live node or client waits for something nothing in the state can deliver (an unanswered
  request, a channel item, a pending registration RPC, a queued registration check...).  Only
  faults could still happen; waiting for one is not a protocol.
* OPEN: a progress step is enabled.

A deadlocked state does **not** count as settled: the cluster has stopped, but not finished.
DEADLOCK is reported before SETTLE (TLC reports a deadlock first too), so a SETTLE report
always means that no state is deadlocked and the stuck states are caught in a loop; and a
deadlock shows as DEADLOCK, never as the SETTLE violation of the states that can only reach it.
The check is bounded (the time bound cuts), and finds the loops no clock can end: loops in
which nothing waits for time.

``replay_check`` re-checks a graph-check trace (``kipcheck replay``): for SETTLE that the loop
comes back to its start and that no settled state is reachable from it (the explorer re-run
from that state); for DEADLOCK that the last state is deadlocked; for PROGRESS that the last
state owes a goal that no path without a fault (the explorer re-run from it) meets.
"""
from __future__ import annotations

import multiprocessing as mp
from array import array
from functools import cache, partial
from itertools import accumulate, chain, compress, islice, repeat
from operator import and_, sub
from typing import NamedTuple

from model.step import steps_text

__all__ = ["SETTLE", "DEADLOCK", "PROGRESS", "GRAPH_CHECKS", "OPEN", "SETTLED", "DEADLOCKED",
           "GraphRecorder", "status_of", "check", "stuck_loop", "replay_check", "can_settle",
           "owed_goals", "example_path"]

SETTLE = "SETTLE"
DEADLOCK = "DEADLOCK"
PROGRESS = "PROGRESS"
# ID -> (name, statement), as registry.PROPERTIES names the state properties
# what the last state of a DEADLOCK or PROGRESS trace shows (a regression test's docstring)
LAST_STATE_SHOWS = {
    DEADLOCK: "the last state is deadlocked",
    PROGRESS: "the last state owes an answer that no path without a fault gives",
}
GRAPH_CHECKS = {
    SETTLE: ("cluster-can-settle",
             "from every reachable state a settled state (quiescent with nothing outstanding, "
             "or cut by the time bound) is reachable (AG EF settled): the cluster can always "
             "settle"),
    DEADLOCK: ("no-deadlock",
               "no reachable state is deadlocked: when no progress step is enabled and the time "
               "bound has not cut the state, no live node or client still waits for work"),
    PROGRESS: ("healthy-cluster-answers",
               "in a healthy cluster (every node up, no session expired, a controller that can "
               "read envelopes) a client still waiting within its deadline can get an answer "
               "other than REQUEST_TIMED_OUT, and a pending registration RPC whose messages are "
               "not lost can be completed by its response, without any further fault (AG "
               "(owed -> EF met) over progress steps)"),
}
# a state's status (one byte per state in GraphRecorder.status)
OPEN, SETTLED, DEADLOCKED = 0, 1, 2
_GOOD = bytes([0, 1] + [0] * 254)           # status -> 1 if SETTLED (bytearray.translate)
_NOT_FAULT = bytes([1, 0, 1] + [0] * 253)    # edge class -> 1 unless a fault
_ORDINARY = bytes([1] + [0] * 255)            # edge class -> 1 if neither fault nor timeout


def status_of(spec):
    """The function (state, succ) -> OPEN | SETTLED | DEADLOCKED for ``spec``: SETTLED if
    ``spec.settled``; else DEADLOCKED if the state has no successor at all (TLC's deadlock) or
    the spec's optional ``deadlocked(state, succ)`` says so; else OPEN.  (Going through
    ``settled`` first keeps a subclass that wraps ``settled`` in charge of it.)  A spec whose
    ``status_function()`` returns a function gives the status by it directly: the one these
    rules give, computed once."""
    direct = getattr(spec, "status_function", None)
    direct = direct() if direct is not None else None
    if direct is not None:
        return direct           # the spec computes the status itself, once (KafkaSpec)
    settled = spec.settled
    deadlocked = getattr(spec, "deadlocked", None)

    def status(state, succ):
        if settled(state, succ):
            return SETTLED
        if not succ or (deadlocked is not None and deadlocked(state, succ)):
            return DEADLOCKED
        return OPEN
    return status


class GraphRecorder:
    """What the explorer records per expanded state for the whole-graph checks.  With
    ``progress`` (a spec with ``progress_marks``, for PROGRESS): each state's goal marks and
    each transition's class (the spec's ``progress_edge``: 0 ordinary, 1 a fault, 2 a
    timeout)."""

    __slots__ = ("status", "succ_fps", "offsets", "marks", "edge", "strict", "targets")

    def __init__(self, progress: bool = False):
        self.status = bytearray()           # per state: OPEN | SETTLED | DEADLOCKED
        self.succ_fps = array("Q")          # every transition's target fingerprint
        self.offsets = array("Q", [0])      # state i's targets: succ_fps[offsets[i]:offsets[i+1]]
        # per state: bit 2g = goal g owed, bit 2g+1 = goal g met; per transition: its class
        self.marks = array("Q") if progress else None
        self.edge = bytearray() if progress else None
        self.strict = ()                    # per goal: True if it may not use a timeout
        # or, instead of succ_fps, the targets already as state numbers (array('I'): the
        # explorer's workers number them level by level, properties/parallel.py)
        self.targets = None

    @property
    def nbytes(self) -> int:
        extra = 0 if self.marks is None else 8 * len(self.marks) + len(self.edge)
        edges = self.succ_fps if self.targets is None else self.targets
        return (len(self.status) + edges.itemsize * len(edges)
                + self.offsets.itemsize * len(self.offsets) + extra)


def _targets(rec: GraphRecorder, fp_levels, processes: int = 1) -> array:
    """The successor fingerprints as state numbers (the stored order of ``fp_levels``).

    The lookups (one per transition, each a few cache misses in a dict of every state) are
    most of the checks' time; with ``processes`` > 1 (the explorer's ``workers``) each of
    ``processes`` shares of the transitions is looked up by a process of its own
    (``_in_processes``)."""
    ids = dict(zip(chain.from_iterable(fp_levels), range(len(rec.status))))
    fps = rec.succ_fps
    n = len(fps)
    bounds = [n * k // processes for k in range(processes + 1)]
    parts = _in_processes([partial(_targets_share, ids, fps, bounds[k], bounds[k + 1])
                           for k in range(processes)], processes)
    del ids
    out = parts[0]
    for part in parts[1:]:
        out.frombytes(part)
    if len(out) != n:                # pragma: no cover - a child sent a short answer
        raise RuntimeError("a graph-check process sent a short answer")
    return out


_FORK_FROM = 1 << 20            # transitions below which the checks run in one process


def _targets_share(ids: dict, fps: array, start: int, end: int) -> array:
    """The state numbers of transitions ``start:end``."""
    return array("I", map(ids.__getitem__, fps[start:end]))


def _in_processes(jobs: list, processes: int) -> list:
    """The results of ``jobs`` (callables returning a bytes-like object: an ``array`` or a
    ``bytearray``), in order.  With ``processes`` > 1 and fork available, job k runs in share
    k mod ``processes``: this process runs share 0 and a forked child each other share, whose
    results come back through a pipe as bytes (an ``array``'s as its raw bytes).  The
    children inherit the graph, so nothing is copied to them; they only read it."""
    processes = min(processes, len(jobs))
    if processes <= 1 or "fork" not in mp.get_all_start_methods():
        return [job() for job in jobs]
    ctx = mp.get_context("fork")
    children = []
    try:
        for k in range(1, processes):
            mine, theirs = ctx.Pipe(duplex=False)
            child = ctx.Process(target=_run_share, args=(theirs, jobs[k::processes]),
                                daemon=True)
            child.start()
            theirs.close()
            children.append((child, mine))
        out = [None] * len(jobs)
        out[::processes] = [job() for job in jobs[::processes]]
        for k, (child, conn) in enumerate(children, 1):
            try:
                out[k::processes] = [conn.recv_bytes() for _ in jobs[k::processes]]
            except EOFError:
                raise RuntimeError(f"a graph-check process died (exit code {child.exitcode})"
                                   ) from None
        return out
    finally:
        for child, conn in children:
            conn.close()
            child.join(timeout=5)
            if child.is_alive():     # pragma: no cover - only after a failure above
                child.kill()
                child.join()


def _run_share(conn, jobs: list) -> None:
    """A forked child of ``_in_processes``: run ``jobs`` in order, send each result."""
    for job in jobs:
        result = job()
        conn.send_bytes(result.tobytes() if isinstance(result, array) else result)
    conn.close()


class _Reversed:
    """The transitions reversed, once for every check: the transitions into state j are the
    transition numbers ``rev[start[j]:start[j + 1]]`` (in increasing order), and transition k
    leaves state ``src[k]``."""

    __slots__ = ("start", "rev", "src")

    def __init__(self, n: int, off, tgt):
        counts = [0] * (n + 1)
        for j in tgt:
            counts[j + 1] += 1
        self.start = start = array("I", accumulate(counts))
        fill = list(start[:n])
        self.rev = rev = array("I", bytes(4 * start[n]))
        for k, j in enumerate(tgt):
            rev[fill[j]] = k
            fill[j] += 1
        # state i's transitions are off[i]:off[i + 1]
        self.src = array("I", chain.from_iterable(
            map(repeat, range(n), map(sub, islice(off, 1, None), off))))


def _backward(good: bytearray, rv: _Reversed, keep=None) -> bytearray:
    """Mark every state from which a marked one is reachable (in place), along every
    transition, or those with ``keep[k]`` true."""
    start, rev, src = rv.start, rv.rev, rv.src
    todo = list(compress(range(len(good)), good))
    pop, push = todo.pop, todo.append
    if keep is None:
        while todo:
            j = pop()
            for k in rev[start[j]:start[j + 1]]:
                i = src[k]
                if not good[i]:
                    good[i] = 1
                    push(i)
    else:
        while todo:
            j = pop()
            for k in rev[start[j]:start[j + 1]]:
                if keep[k]:
                    i = src[k]
                    if not good[i]:
                        good[i] = 1
                        push(i)
    return good


def check(rec: GraphRecorder, fp_levels, processes: int = 1):
    """(check ID, number of the first offending state, targets, count, goal) or None;
    ``targets`` maps every transition to the number of its target state (for ``stuck_loop``);
    ``count`` is, for SETTLE, how many states cannot reach a settled one, for PROGRESS how
    many states owe the goal and cannot meet it without a fault, and 1 for DEADLOCK (the first
    deadlocked state; the rest is not counted); ``goal`` is PROGRESS's goal (else None).
    ``processes``: how many processes may share the work.  SETTLE and each PROGRESS goal are
    one reachability each, independent of one another: in one process they run in turn and
    the first that fails ends the check; with several, they run at once (``_in_processes``)
    and the first that fails in that order is reported, so the answer is the same."""
    status = rec.status
    n = len(status)
    off = rec.offsets
    if off[-1] < _FORK_FROM:
        processes = 1                   # forking would cost more than it saves
    tgt = rec.targets if rec.targets is not None else _targets(rec, fp_levels, processes)
    first = status.find(DEADLOCKED)
    if first >= 0:
        return DEADLOCK, first, tgt, 1, None
    reversed_once = cache(partial(_Reversed, n, off, tgt))     # for _reach's fallback only
    checks = []                         # (check ID, goal, the states that need an answer, job)
    if status.count(SETTLED) != n:
        checks.append((SETTLE, None, None,
                       partial(_reach, status.translate(_GOOD), off, tgt, reversed_once)))
    checks += _progress(rec, tgt, reversed_once)
    jobs = [job for _, _, _, job in checks]
    if processes <= 1:
        goods = (job() for job in jobs)     # in turn, as far as the first that fails
    else:
        goods = _in_processes(jobs, processes)
    for (kind, goal, owes, _), good in zip(checks, goods):
        if kind == SETTLE:
            first = good.find(0)
            if first >= 0:
                return SETTLE, first, tgt, n - sum(good), None
            continue
        bad = [i for i in range(n) if owes[i] and not good[i]]
        if bad:
            return PROGRESS, bad[0], tgt, len(bad), goal
    return None


_MAX_PASSES = 8                             # forward passes before _reach reverses the graph
_FLIP = bytes([1, 0] + [0] * 254)           # good byte -> 1 if not (yet) good


def _reach(good: bytearray, off, tgt, reversed_once, keep=None, need=None) -> bytearray:
    """Mark (in place) the states from which a marked state is reachable, along every
    transition or those with ``keep[k]`` true: exactly for the states ``need`` marks (every
    state if None); others may be left unmarked once the answer for those is known.

    Forward passes, each over the states not yet marked, the deepest first (most transitions
    lead one level down, whose states the pass has just decided): a state with a marked
    successor is marked.  A pass that marks nothing has reached the fixpoint.  After the first
    pass, with ``need``, the passes go on only over the unmarked states that the needed ones
    left unmarked can reach through unmarked states (their answers depend on nothing else),
    and stop when every needed state is marked.  A pass costs a few C-level calls per state and
    needs no reversed graph; after ``_MAX_PASSES`` passes the backward search (``_backward``
    over the reversed transitions, which ``reversed_once()`` builds on its first call) finishes
    from the states marked so far, so a graph that needs many passes costs what it did
    before."""
    todo = _deepest_first(good.translate(_FLIP))
    for done in range(_MAX_PASSES):
        rest = _forward_pass(todo, good, off, tgt, keep)
        if len(rest) == len(todo):
            return good                     # the fixpoint
        if need is None:
            if not rest:
                return good
        else:
            left = list(compress(rest, map(need.__getitem__, rest)))
            if not left:
                return good                 # every needed state is marked
            if not done:
                rest = _unmarked_region(left, good, off, tgt, keep)
        todo = rest
    return _backward(good, reversed_once(), keep)


def _forward_pass(todo: list, good: bytearray, off, tgt, keep) -> list:
    """Mark each state of ``todo`` (in its order) that has a marked successor; the others."""
    get = good.__getitem__
    rest: list = []
    defer = rest.append
    if keep is None:
        for i in todo:
            if any(map(get, tgt[off[i]:off[i + 1]])):
                good[i] = 1
            else:
                defer(i)
    else:
        for i in todo:
            a, b = off[i], off[i + 1]
            if any(map(get, compress(tgt[a:b], keep[a:b]))):
                good[i] = 1
            else:
                defer(i)
    return rest


def _unmarked_region(starts: list, good: bytearray, off, tgt, keep) -> list:
    """The unmarked states reachable from ``starts`` (unmarked) through unmarked states along
    the kept transitions, deepest first: every kept successor of one is marked or in it."""
    seen = bytearray(len(good))
    for i in starts:
        seen[i] = 1
    stack = list(starts)
    pop, push = stack.pop, stack.append
    while stack:
        i = pop()
        a, b = off[i], off[i + 1]
        for j in (tgt[a:b] if keep is None else compress(tgt[a:b], keep[a:b])):
            if not seen[j] and not good[j]:
                seen[j] = 1
                push(j)
    return _deepest_first(seen)


def _deepest_first(flags) -> list:
    """The numbers of the states whose flag is set, the deepest (highest number) first."""
    return list(compress(range(len(flags) - 1, -1, -1), reversed(flags)))


MAX_GOALS = 32                              # goal marks: two bits per goal in 64 bits


def owed_goals(marks: int) -> list:
    """The goals a state's marks say are owed (bit 2g)."""
    return [g for g in range(MAX_GOALS) if marks >> (2 * g) & 1]


def _is_strict(strict: tuple, goal: int) -> bool:
    """May goal ``goal`` not be met through a timeout?"""
    return goal < len(strict) and bool(strict[goal])


def _progress(rec: GraphRecorder, tgt, reversed_once) -> list:
    """PROGRESS, per goal owed somewhere: (PROGRESS, goal, the states that owe it, the
    reachability that marks the states meeting it along transitions that are not faults (nor
    timeouts, for a strict goal)); every state that owes the goal must be marked."""
    marks = rec.marks
    if marks is None:
        return []
    every = 0
    for m in marks:
        every |= m
    allowed_of = {}                         # strict? -> the transitions a goal may use
    checks = []
    for g in owed_goals(every):
        strict = _is_strict(rec.strict, g)
        if strict not in allowed_of:
            allowed_of[strict] = rec.edge.translate(_ORDINARY if strict else _NOT_FAULT)
        owe, done = 1 << (2 * g), 2 << (2 * g)
        owes = bytearray(map(bool, map(and_, marks, repeat(owe))))
        checks.append((PROGRESS, g, owes, partial(
            _reach, bytearray(map(bool, map(and_, marks, repeat(done)))), rec.offsets, tgt,
            reversed_once, allowed_of[strict], need=owes)))
    return checks


def example_path(rec: GraphRecorder, tgt: array, first: int, limit: int = 40) -> tuple:
    """From PROGRESS's offending state ``first``: the state numbers of one walk along
    transitions that are not faults (the first such successor that is not the state itself),
    until no such transition is left, a state repeats, or ``limit`` steps: what happens to
    the request if nothing fails any more.  Every state on it fails the goal too."""
    off, edge = rec.offsets, rec.edge
    seen = {first}
    path = []
    i = first
    while len(path) < limit:
        nxt = None
        for k in range(off[i], off[i + 1]):
            if edge[k] != 1 and tgt[k] != i:
                nxt = tgt[k]
                break
        if nxt is None:
            break
        path.append(nxt)
        if nxt in seen:
            break
        seen.add(nxt)
        i = nxt
    return tuple(path)


def stuck_loop(rec: GraphRecorder, tgt: array, first: int) -> tuple:
    """From stuck state ``first``: the state numbers of a walk among stuck states (first
    successor that is not the state itself, if any) up to the first repetition, as (stem,
    cycle): ``stem`` from ``first`` (included) to the cycle's first state (excluded), ``cycle``
    the states of the cycle, in order; the walk then goes back to ``cycle[0]``."""
    off = rec.offsets
    seen: dict = {}
    path = []
    i = first
    while i not in seen:
        seen[i] = len(path)
        path.append(i)
        nxt = i
        for k in range(off[i], off[i + 1]):
            if tgt[k] != i:
                nxt = tgt[k]
                break
        i = nxt
    at = seen[i]
    return tuple(path[:at]), tuple(path[at:])


def describe(spec, result) -> list:
    """The lines ``kipcheck explore`` prints for a whole-graph violation of ``result`` (a Kafka
    spec): the check, the shortest trace to the offending state, then (DEADLOCK) what is still
    owed in it or (SETTLE) the way into the loop and the loop, each step in Kafka's words with
    the ``Step(...)`` to paste into a test."""
    from model.describe import describe_trace
    name, statement = GRAPH_CHECKS[result.graph_violation]
    trace, stem, loop = tuple(result.graph_trace), tuple(result.graph_stem), \
        tuple(result.graph_loop)
    every = trace + stem + loop
    texts = describe_trace(spec.cfg, spec.design, every)
    lines = [f"VIOLATED {result.graph_violation} {name}: {statement}"]

    def show(title, first, last):
        lines.append(title)
        for i in range(first, last):
            st = every[i]
            lines.append(f"  {i + 1:>3}. {texts[i]}")
            lines.append(f"       Step({st.action!r}, {st.args!r}),")

    if result.graph_violation == DEADLOCK:
        show(f"counterexample ({steps_text(len(trace))}) to a deadlocked state: no progress "
             f"step is enabled, the time bound has not cut it, and work is still owed:", 0,
             len(trace))
        lines += deadlock_facts(spec, result.graph_state)
        return lines
    if result.graph_violation == PROGRESS:
        from properties.progress import describe_goal
        show(f"counterexample ({steps_text(len(trace))}) to a state in which "
             f"{describe_goal(spec.cfg, result.graph_goal)} ({result.graph_stuck:,} such "
             f"states):", 0, len(trace))
        example = tuple(result.graph_example)
        if example:
            texts = describe_trace(spec.cfg, spec.design, trace + example)
            lines.append(f"for example, if nothing fails any more ({len(example)} steps; every "
                         f"other way without a fault ends no better):")
            for i in range(len(trace), len(trace) + len(example)):
                st = (trace + example)[i]
                lines.append(f"  {i + 1:>3}. {texts[i]}")
                lines.append(f"       Step({st.action!r}, {st.args!r}),")
        return lines
    show(f"counterexample ({steps_text(len(trace))}) to a state from which no settled state is "
         f"reachable ({result.graph_stuck:,} such states):", 0, len(trace))
    if stem:
        show(f"then, still unable to settle ({steps_text(len(stem))}):", len(trace),
             len(trace) + len(stem))
    start = len(trace) + len(stem)
    show(f"and round this loop forever ({len(loop)} steps, back to the state after step "
         f"{start}; every way out of it leads only to states that cannot settle either):",
         start, len(every))
    return lines


def deadlock_facts(spec, state) -> list:
    """What is owed in a deadlocked Kafka state, and what could still happen (faults only)."""
    from properties.outstanding import describe_outstanding
    lines = ["  in the last state (DEADLOCK [no-deadlock]), still owed:"]
    lines += [f"       - {text}" for text in describe_outstanding(state, spec.cfg, spec.design)]
    faults = sorted({st.action for st, _ in spec.successors(state)})
    lines.append("       - enabled: " + (", ".join(f"{a} (a fault)" for a in faults)
                                         if faults else "nothing at all"))
    return lines


# ---- re-checking a graph-check trace (``kipcheck replay``) ------------------------------------

CAN_SETTLE_LIMIT = 2_000_000        # states the replay explores from a loop before giving up


class _From:
    """``spec`` seen from ``start``: its only initial state is ``start``, and a settled state
    is a "violation", so the explorer stops at the first settled state it reaches."""

    def __init__(self, spec, start):
        self._spec, self._start, self.name = spec, start, f"{spec.name} from a loop state"
        self._status = status_of(spec)

    def initial_states(self):
        return [self._start]

    def successors(self, state):
        return self._spec.successors(state)

    def step(self, state, st):
        return self._spec.step(state, st)

    def violation(self, state, succ):
        return "settled" if self._status(state, succ) == SETTLED else None

    def witness_ids(self):
        return ()

    def witnesses_hit(self, prev, st, nxt, wanted):
        return []

    def action_names(self):
        return self._spec.action_names()

    def canonical(self, state):
        return state

    def fingerprint(self, state):
        return self._spec.fingerprint(state)


def can_settle(spec, start, max_states: int = CAN_SETTLE_LIMIT):
    """Is a settled state reachable from ``start`` (faults included)?  True / False, or None
    when ``max_states`` states were explored without an answer.  The explorer re-run from
    ``start``, with a settled state as its "violation"."""
    from properties.explore import explore
    r = explore(_From(spec, start), max_states=max_states, graph_checks=False)
    if r.violation is not None:
        return True
    return False if r.complete else None


class _FaultFree(_From):
    """``spec`` from ``start`` along transitions that are not faults (nor timeouts, for a
    strict goal); a state where goal ``goal`` is met is the "violation", so the explorer stops
    at the first one."""

    def __init__(self, spec, start, goal: int):
        super().__init__(spec, start)
        self._done = 2 << (2 * goal)
        self._allowed = (0,) if _is_strict(spec.progress_strict(), goal) else (0, 2)

    def successors(self, state):
        return [(st, s) for st, s in self._spec.successors(state)
                if self._spec.progress_edge(state, st) in self._allowed]

    def violation(self, state, succ):
        return "done" if self._spec.progress_marks(state) & self._done else None


def goal_met_without_fault(spec, start, goal: int, max_states: int = CAN_SETTLE_LIMIT):
    """Can goal ``goal`` be met from ``start`` without a fault?  True / False, or None when
    ``max_states`` states were explored without an answer."""
    from properties.explore import explore
    r = explore(_FaultFree(spec, start, goal), max_states=max_states, graph_checks=False)
    if r.violation is not None:
        return True
    return False if r.complete else None


def _replay_progress(spec, end, max_states):
    """PROGRESS: in the last state some goal is owed, and no path without a fault meets it."""
    marks = spec.progress_marks(end)
    owed = owed_goals(marks)
    if not owed:
        return GraphReplay(False, "the last state owes nothing (no client waits within its "
                           "deadline, and no registration RPC is pending, in a healthy "
                           "cluster)", ())
    unsure = None
    for g in owed:
        met = goal_met_without_fault(spec, end, g, max_states)
        if met is False:
            from properties.progress import describe_goal
            return GraphReplay(True, f"in the last state {describe_goal(spec.cfg, g)} "
                               f"(checked by exploring every fault-free path from it)", ())
        if met is None:
            unsure = g
    if unsure is not None:
        return GraphReplay(None, f"no answer within {max_states:,} states explored from the "
                           f"last state: inconclusive", ())
    return GraphReplay(False, "every goal owed in the last state can still be met without "
                       "a fault", ())


class GraphReplay(NamedTuple):
    reproduced: bool | None         # None: inconclusive (the bounded search gave up)
    detail: str                     # one line: what was checked, or why it does not hold
    facts: tuple                    # lines about the last state (DEADLOCK: what is owed)


def replay_check(spec, states, check_id: str, loop_start: int | None,
                 max_states: int = CAN_SETTLE_LIMIT) -> GraphReplay:
    """Re-check a whole-graph violation on the states a trace replayed to (``states[0]`` the
    initial state).  SETTLE: the steps from ``loop_start`` come back to the state they start
    from, and no settled state is reachable from it (and so from none of the loop's states:
    they reach one another).  DEADLOCK: the last state is deadlocked."""
    end = states[-1]
    if check_id == PROGRESS:
        return _replay_progress(spec, end, max_states)
    if check_id == DEADLOCK:
        status = status_of(spec)(end, spec.successors(end))
        facts = tuple(deadlock_facts(spec, end)) if hasattr(spec, "cfg") else ()
        if status == DEADLOCKED:
            return GraphReplay(True, "the last state is deadlocked", facts)
        why = "a progress step is enabled" if status == OPEN else "it is settled"
        return GraphReplay(False, f"the last state is not deadlocked ({why})", ())
    if check_id != SETTLE:
        raise ValueError(f"unknown whole-graph check {check_id!r}")
    if loop_start is None or not 0 <= loop_start < len(states) - 1:
        return GraphReplay(False, f"no loop: loop start {loop_start!r} is not a step of the "
                           f"trace (1..{len(states) - 1} steps)", ())
    n_loop = len(states) - 1 - loop_start
    if states[loop_start] != end:
        return GraphReplay(False, f"the last {n_loop} steps do not come back to the state "
                           f"after step {loop_start}", ())
    settles = can_settle(spec, end, max_states)
    if settles is None:
        return GraphReplay(None, f"no settled state within {max_states:,} states explored "
                           f"from the loop: inconclusive", ())
    if settles:
        return GraphReplay(False, "a settled state is reachable from the loop", ())
    return GraphReplay(True, f"the last {n_loop} steps come back to the state after step "
                       f"{loop_start}, and no settled state is reachable from it", ())
