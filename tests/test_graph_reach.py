"""The whole-graph checks' reachability (properties/graphcheck.py, ``_reach``): forward passes
with a region cut and a backward fallback must mark exactly the states the plain backward search
marks, wherever the answer is needed, on graphs of every shape (seeded, so a failure replays)."""
import random
from array import array
from functools import cache, partial
from itertools import accumulate

import pytest

from properties import graphcheck as G


def _graph(rng: random.Random, n: int, back: float):
    """A random graph on ``n`` states: per state 0-4 successors, a ``back`` share of them to a
    state not deeper (as a BFS order's same-level and earlier-level transitions)."""
    succ = []
    for i in range(n):
        out = []
        for _ in range(rng.randrange(5)):
            if i + 1 < n and rng.random() >= back:
                out.append(rng.randrange(i + 1, min(n, i + 6)))
            else:
                out.append(rng.randrange(0, i + 1))
        succ.append(out)
    off = array("Q", accumulate([0] + [len(o) for o in succ]))
    tgt = array("I", [j for o in succ for j in o])
    return off, tgt


def _reversed_once(n, off, tgt):
    """What ``check`` gives ``_reach``: the reversed graph, built on first call."""
    return cache(partial(G._Reversed, n, off, tgt))


def _expected(good: bytearray, off, tgt, keep=None) -> bytearray:
    return G._backward(bytearray(good), G._Reversed(len(good), off, tgt), keep)


@pytest.mark.parametrize("seed", range(60))
def test_reach_marks_what_the_backward_search_marks(seed):
    rng = random.Random(seed)
    n = rng.randrange(1, 300)
    off, tgt = _graph(rng, n, back=rng.choice((0.0, 0.2, 0.6, 1.0)))
    good = bytearray(1 if rng.random() < rng.choice((0.0, 0.02, 0.2)) else 0 for _ in range(n))
    keep = None if seed % 2 else bytes(rng.random() < 0.7 for _ in range(len(tgt)))
    need = None if seed % 3 == 0 else bytearray(rng.random() < 0.3 for _ in range(n))
    want = _expected(good, off, tgt, keep)
    got = G._reach(bytearray(good), off, tgt, _reversed_once(n, off, tgt), keep, need)
    if need is None:
        assert got == want
    else:
        assert [i for i in range(n) if need[i] and not got[i]] == \
               [i for i in range(n) if need[i] and not want[i]]
    assert all(want[i] for i in range(n) if got[i])     # never marks a state that cannot reach


@pytest.mark.parametrize("need_all", [True, False])
def test_a_long_backward_chain_falls_back_to_the_reversed_graph(need_all):
    """State i's only successor is i - 1 and only state 0 is marked: each forward pass (deepest
    first) marks one more state, so the passes give up and the reversed graph finishes."""
    n = 3 * G._MAX_PASSES
    off = array("Q", [0, 0] + list(range(1, n)))
    tgt = array("I", range(n - 1))
    good = bytearray([1] + [0] * (n - 1))
    once = _reversed_once(n, off, tgt)
    need = None if need_all else bytearray([0] * (n - 1) + [1])
    got = G._reach(good, off, tgt, once, None, need)
    assert once.cache_info().currsize == 1              # the fallback ran
    assert got == bytearray([1] * n)


def test_stuck_states_stay_unmarked_and_the_reversed_graph_is_not_built():
    """A loop that cannot reach the marked state: the second pass changes nothing (the
    fixpoint), so the answer comes without reversing the graph."""
    # 0 marked; 1 -> 0; 2 <-> 3 (a loop); 4 -> 2
    off = array("Q", [0, 0, 1, 2, 3, 4])
    tgt = array("I", [0, 3, 2, 2])
    once = _reversed_once(5, off, tgt)
    got = G._reach(bytearray([1, 0, 0, 0, 0]), off, tgt, once)
    assert got == bytearray([1, 1, 0, 0, 0])
    assert once.cache_info().currsize == 0


@pytest.mark.parametrize("processes", [2, 3])
def test_forked_children_map_the_transitions_as_one_process_does(processes):
    """The explorer's workers share the mapping of transitions to state numbers: forked
    children each map a share; the numbers are the same, in the same order."""
    rng = random.Random(processes)
    levels = [array("Q", sorted(rng.sample(range(1 << 62), k))) for k in (1, 7, 40, 13)]
    every = [f for level in levels for f in level]
    rec = G.GraphRecorder()
    rec.status = bytearray(len(every))
    rec.succ_fps = array("Q", [rng.choice(every) for _ in range(1000)])
    want = G._targets(rec, levels)
    assert want.tolist() == [every.index(f) for f in rec.succ_fps]
    assert G._targets(rec, levels, processes) == want


def _recorded(rng: random.Random, n: int):
    """A GraphRecorder of a random graph on ``n`` states (statuses, three goals' marks, edge
    classes, goal 1 strict) and its levels of fingerprints."""
    off, tgt = _graph(rng, n, back=rng.choice((0.1, 0.5)))
    fps = rng.sample(range(1 << 62), n)
    cut = sorted(rng.sample(range(1, n), min(3, n - 1)))
    levels = [array("Q", sorted(fps[a:b])) for a, b in zip([0] + cut, cut + [n])]
    every = [f for level in levels for f in level]
    rec = G.GraphRecorder(progress=True)
    settled = rng.choice((0.03, 0.3, 0.6))
    rec.status = bytearray(G.SETTLED if rng.random() < settled or off[i] == off[i + 1]
                           else G.OPEN for i in range(n))
    if rng.random() < 0.1:
        rec.status[rng.randrange(n)] = G.DEADLOCKED
    rec.succ_fps = array("Q", [every[j] for j in tgt])
    rec.offsets = off
    owed, met = rng.choice((0.0, 0.1)), rng.choice((0.02, 0.3, 0.6))
    rec.marks = array("Q", [sum((rng.random() < owed) << 2 * g | (rng.random() < met) << 2 * g + 1
                                for g in range(3)) for _ in range(n)])
    rec.edge = bytearray(rng.choice((0, 0, 0, 1, 2)) for _ in range(len(tgt)))
    rec.strict = (False, True, False)
    return rec, levels


def test_the_checks_in_several_processes_answer_as_one_process_does(monkeypatch):
    """SETTLE and each PROGRESS goal run at once in forked processes: the answer (which check,
    its first offending state, the count, the goal) is the one the checks in turn give, on
    seeded random graphs where each check is the first to fail somewhere."""
    monkeypatch.setattr(G, "_FORK_FROM", 0)
    kinds = set()
    for seed in range(40):
        rng = random.Random(seed)
        rec, levels = _recorded(rng, rng.randrange(2, 200))
        want = G.check(rec, levels)
        for processes in (2, 3):
            got = G.check(rec, levels, processes)
            if want is None:
                assert got is None
            else:
                kind, first, tgt, count, goal = got
                assert (kind, first, count, goal) == (want[0], want[1], want[3], want[4])
                assert tgt == want[2]
        kinds.add(None if want is None else (want[0], want[4]))
    assert {None, (G.DEADLOCK, None), (G.SETTLE, None)} <= kinds
    assert {g for k, g in kinds - {None} if k == G.PROGRESS} >= {0, 1}


@pytest.mark.parametrize("processes", [2, 3])
def test_jobs_in_processes_come_back_in_order(processes):
    jobs = [partial(bytearray, [k] * (k + 1)) for k in range(7)] + [partial(array, "I", [9, 8])]
    got = G._in_processes(jobs, processes)
    assert [bytes(r) for r in got[:7]] == [bytes([k] * (k + 1)) for k in range(7)]
    assert array("I", got[7]) == array("I", [9, 8])     # an array comes back as its raw bytes


def test_a_job_that_fails_in_a_child_is_reported():
    def fails():
        raise MemoryError("no room")
    with pytest.raises(RuntimeError, match="graph-check process died"):
        G._in_processes([partial(bytearray, 1), fails], 2)
