"""Whole-graph checks on an exploration's state graph, as TLC checks deadlock and liveness on the
graph it built: SETTLE (the cluster can always settle) and DEADLOCK.

The explorer (``explore(graph_checks=True)``, the default) records, for every state it expands
and in the order it expands them (breadth-first: the order of the stored levels, so a state's
number is its global index), whether the spec calls it *settled* (``spec.settled(state, succ)``)
and the fingerprints of its successors: one ``bytearray`` entry per state and one ``array('Q')``
entry (8 bytes) per transition, plus an ``array('Q')`` offset per state.  Nothing else: no
networkx graph.  After a COMPLETE exploration (not one stopped by a violation, ``max_states`` or
``max_depth``: part of the graph is unknown then) ``check`` maps the successor fingerprints to
state numbers (one dict, freed at once) and decides:

* DEADLOCK: a state that is not settled and has no successor at all (not even a fault);
* SETTLE (``AG EF settled``): from every reachable state a settled state is reachable.  Backward
  reachability: mark the settled states, propagate along reversed edges (a compact reversed
  adjacency, two ``array('I')``); every unmarked state is *stuck*.  Every successor of a stuck
  state is stuck, so following successors from one stays among stuck states and, the graph
  being finite, comes round: that cycle is the loop the cluster is caught in.

Both counterexamples are the shortest: the first offending state in breadth-first order.  A
DEADLOCK is reported before SETTLE (a deadlocked state is also stuck).

For the Kafka model (``KafkaSpec.settled``) settled means ``model.next.quiescent`` -- no
progress step is enabled, faults do not count -- or *cut by the time bound*: the clock is at
``max_time`` and something waits for a point in time (a deadline or a backoff timer), so what
comes next is decided by the bound, not by the protocol (the states a TLC constraint cuts
off).  So the check is a bounded one, and it finds the loops no clock can end: a loop in which
nothing waits for time.
"""
from __future__ import annotations

from array import array
from itertools import accumulate, chain

__all__ = ["SETTLE", "DEADLOCK", "GRAPH_CHECKS", "GraphRecorder", "check", "stuck_loop"]

SETTLE = "SETTLE"
DEADLOCK = "DEADLOCK"
# ID -> (name, statement), as registry.PROPERTIES names the state properties
GRAPH_CHECKS = {
    SETTLE: ("cluster-can-settle",
             "from every reachable state a quiescent state is reachable (AG EF quiescent): the "
             "cluster can always settle"),
    DEADLOCK: ("no-deadlock",
               "every state that is not quiescent has a successor"),
}


class GraphRecorder:
    """What the explorer records per expanded state for the whole-graph checks."""

    __slots__ = ("settled", "succ_fps", "offsets")

    def __init__(self):
        self.settled = bytearray()          # per state: 1 if settled
        self.succ_fps = array("Q")          # every transition's target fingerprint
        self.offsets = array("Q", [0])      # state i's targets: succ_fps[offsets[i]:offsets[i+1]]

    @property
    def nbytes(self) -> int:
        return (len(self.settled) + self.succ_fps.itemsize * len(self.succ_fps)
                + self.offsets.itemsize * len(self.offsets))


def _targets(rec: GraphRecorder, fp_levels) -> array:
    """The successor fingerprints as state numbers (the stored order of ``fp_levels``)."""
    ids = dict(zip(chain.from_iterable(fp_levels), range(len(rec.settled))))
    return array("I", map(ids.__getitem__, rec.succ_fps))


def check(rec: GraphRecorder, fp_levels):
    """(check ID, number of the first offending state, targets, stuck states) or None;
    ``targets`` maps every transition to the number of its target state (for ``stuck_loop``);
    ``stuck states`` counts the states that cannot reach a settled one (SETTLE; 1 for
    DEADLOCK: the first deadlocked state, the rest is not counted)."""
    n = len(rec.settled)
    settled = rec.settled
    off = rec.offsets
    tgt = _targets(rec, fp_levels)
    for i in range(n):
        if not settled[i] and off[i] == off[i + 1]:
            return DEADLOCK, i, tgt, 1
    if all(settled):
        return None
    # reversed adjacency (CSR): preds of j are rev[start[j]:start[j + 1]]
    counts = [0] * (n + 1)
    for j in tgt:
        counts[j + 1] += 1
    start = array("I", accumulate(counts))
    fill = list(start[:n])
    rev = array("I", bytes(4 * len(tgt)))
    for i in range(n):
        for k in range(off[i], off[i + 1]):
            j = tgt[k]
            rev[fill[j]] = i
            fill[j] += 1
    del fill, counts
    good = bytearray(settled)
    todo = [i for i in range(n) if settled[i]]
    while todo:
        j = todo.pop()
        for k in range(start[j], start[j + 1]):
            i = rev[k]
            if not good[i]:
                good[i] = 1
                todo.append(i)
    first = good.find(0)
    return None if first < 0 else (SETTLE, first, tgt, n - sum(good))


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
    spec): the check, the shortest trace to the offending state, then (SETTLE) the way into the
    loop and the loop, each step in Kafka's words with the ``Step(...)`` to paste into a test."""
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
        show(f"counterexample ({len(trace)} steps) to a state that is not quiescent and has no "
             f"successor:", 0, len(trace))
        return lines
    show(f"counterexample ({len(trace)} steps) to a state from which no quiescent state is "
         f"reachable ({result.graph_stuck:,} such states):", 0, len(trace))
    if stem:
        show(f"then, still unable to settle ({len(stem)} steps):", len(trace),
             len(trace) + len(stem))
    start = len(trace) + len(stem)
    show(f"and round this loop forever ({len(loop)} steps, back to the state after step "
         f"{start}; every way out of it leads only to states that cannot settle either):",
         start, len(every))
    return lines
