"""The explorer on the TwoPhase reference model (bench/twophase.py): pinned state counts."""
from __future__ import annotations

import pytest

from bench.twophase import (ACTIONS, FLAWS, TwoPhaseSpec, decode, slow_successors, tc_consistent,
                            type_ok)
from model.step import Step
from properties.explore import explore, replay
from properties.spec import states_are_fingerprints

# TLC / Stateright reachable-state counts, and the RM-symmetry quotient counts computed here and
# cross-checked below by canonicalizing every reachable state.
COUNTS = {3: 288, 5: 8_832}
SYMMETRY_COUNTS = {3: 80, 5: 314}


def reachable(spec) -> set:
    """Every reachable state by a plain set-based BFS (independent of the explorer)."""
    seen = set(spec.initial_states())
    frontier = list(seen)
    while frontier:
        nxt = []
        for s in frontier:
            for _, t in spec.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return seen


@pytest.mark.parametrize("n", sorted(COUNTS))
def test_reachable_counts_pinned(n):
    r = explore(TwoPhaseSpec(n))
    assert r.distinct == COUNTS[n]
    assert r.complete and r.violation is None and r.trace == ()
    assert r.depth == 3 * n + 1 == len(r.states_per_depth) - 1
    assert sum(r.states_per_depth) == r.distinct
    assert r.witnesses_missing == ()
    assert set(r.witnesses_reached) == set(TwoPhaseSpec(n).witness_ids())
    assert set(r.action_counts) == set(ACTIONS) and all(r.action_counts[a] > 0 for a in ACTIONS)
    assert sum(r.action_counts.values()) == r.generated - 1        # minus the initial state
    assert r.distinct == len(reachable(TwoPhaseSpec(n)))


@pytest.mark.parametrize("n", sorted(SYMMETRY_COUNTS))
def test_symmetry_counts_pinned_and_brute_forced(n):
    spec = TwoPhaseSpec(n)
    r = explore(spec, symmetry=True)
    assert r.distinct == SYMMETRY_COUNTS[n]
    assert r.complete and r.violation is None and r.symmetry
    assert r.witnesses_missing == ()
    # Independent: canonicalize the whole reachable set and count the representatives.
    assert len({spec.canonical(s) for s in reachable(spec)}) == SYMMETRY_COUNTS[n]


def test_canonical_is_a_representative_of_the_orbit():
    spec = TwoPhaseSpec(4)
    for s in reachable(spec):
        c = spec.canonical(s)
        assert spec.canonical(c) == c
        v, w = decode(4, s), decode(4, c)
        assert v["tmState"] == w["tmState"]
        assert sorted(v["rmState"]) == sorted(w["rmState"])
        assert len(v["tmPrepared"]) == len(w["tmPrepared"]) and len(v["msgs"]) == len(w["msgs"])


@pytest.mark.parametrize("flaw", FLAWS)
def test_fast_successors_match_the_action_functions(flaw):
    for n in (3, 4):
        spec = TwoPhaseSpec(n, flaw=flaw)
        for s in reachable(spec):
            succ = spec.successors(s)
            assert succ == slow_successors(n, s, flaw=flaw)
            for st, t in succ:
                assert spec.step(s, st) == t


def test_invariants_hold_on_every_reachable_state():
    spec = TwoPhaseSpec(5)
    for s in reachable(spec):
        assert type_ok(5, s)
        assert tc_consistent(5, s)
        assert spec.violation(s, spec.successors(s)) is None


def test_fingerprints_are_deterministic_64_bit():
    for kind in ("identity", "mix"):
        spec = TwoPhaseSpec(5, fingerprint=kind)
        fps = {spec.fingerprint(s) for s in reachable(spec)}
        assert len(fps) == COUNTS[5]
        assert all(0 <= f < 2 ** 64 for f in fps)
    # a pure function of the int (no salted hashing), the same for any spec size
    mix3, mix9 = TwoPhaseSpec(3, fingerprint="mix"), TwoPhaseSpec(9, fingerprint="mix")
    assert mix3.fingerprint(7) == mix9.fingerprint(7) != 7


def test_mix_fingerprint_gives_the_same_counts():
    assert explore(TwoPhaseSpec(5, fingerprint="mix")).distinct == COUNTS[5]
    assert explore(TwoPhaseSpec(5, fingerprint="mix"), symmetry=True).distinct == SYMMETRY_COUNTS[5]


class _Unpacked:
    """A TwoPhase spec that does not say its states are their own fingerprints: the explorer
    takes its ordinary hot loop (``_expand_fast``) instead of ``_expand_packed``."""

    def __init__(self, spec):
        self._spec = spec
        self.fingerprint_is_state = False

    def __getattr__(self, name):
        return getattr(self._spec, name)


@pytest.mark.parametrize("flaw", FLAWS)
@pytest.mark.parametrize("options", [{}, {"max_states": 3_000}, {"max_depth": 9},
                                     {"stop_at_violation": False}])
def test_packed_states_explore_as_fingerprinted_ones(flaw, options):
    """``fingerprint_is_state`` (the explorer's packed path) changes nothing but time: the
    counts, the levels, the cut of ``max_states``, the stored fingerprints and the trace are
    those of the ordinary path on the same spec."""
    packed = TwoPhaseSpec(5, flaw=flaw)
    assert states_are_fingerprints(packed)
    plain = _Unpacked(TwoPhaseSpec(5, flaw=flaw))
    assert not states_are_fingerprints(plain)
    a = explore(packed, keep_fingerprints=True, **options)
    b = explore(plain, keep_fingerprints=True, **options)
    timings = {"seconds": 0, "distinct_per_second": 0, "generated_per_second": 0,
               "peak_frontier_bytes": 0}   # the packed path keeps one dict fewer
    assert a.to_dict() | timings == b.to_dict() | timings
    assert a.peak_frontier_bytes <= b.peak_frontier_bytes
    assert a.fingerprints == b.fingerprints
    assert a.violating_state == b.violating_state
    if flaw is None and not options:
        assert a.distinct == COUNTS[5]
    if flaw is not None:
        assert a.violation == "TCConsistent" and a.trace


def test_only_the_identity_fingerprint_is_packed():
    assert states_are_fingerprints(TwoPhaseSpec(3))
    assert not states_are_fingerprints(TwoPhaseSpec(3, fingerprint="mix"))


def test_transition_scope_witnesses_agree_with_state_scope():
    a = explore(TwoPhaseSpec(4))
    b = explore(TwoPhaseSpec(4, witness_scope="transition"))
    assert a.witnesses_reached == b.witnesses_reached == TwoPhaseSpec(4).witness_ids()
    assert (a.distinct, a.generated, a.action_counts) == (b.distinct, b.generated, b.action_counts)


@pytest.mark.parametrize("flaw,length", [("rm-commit-without-msg", 2), ("tm-commit-unprepared", 3)])
@pytest.mark.parametrize("symmetry", [False, True])
def test_broken_twophase_is_caught_with_a_shortest_replayable_trace(flaw, length, symmetry):
    spec = TwoPhaseSpec(5, flaw=flaw)
    r = explore(spec, symmetry=symmetry)
    assert r.violation == "TCConsistent"
    assert not r.complete and r.stop_reason == "violation"
    assert len(r.trace) == length                  # BFS: the shortest counterexample
    assert all(isinstance(s, Step) for s in r.trace)
    states = replay(spec, r.initial_index, r.trace)
    assert states[-1] == r.violating_state
    assert spec.violation(states[-1], spec.successors(states[-1])) == "TCConsistent"
    assert all(spec.violation(s, spec.successors(s)) is None for s in states[:-1])
    assert not tc_consistent(5, states[-1])


def test_broken_twophase_stop_at_violation_false_explores_everything():
    spec = TwoPhaseSpec(3, flaw="rm-commit-without-msg")
    r = explore(spec, stop_at_violation=False)
    assert r.complete and r.violation == "TCConsistent" and len(r.trace) == 2
    assert r.distinct == len(reachable(spec))
    assert r.violations_seen == ("TCConsistent",)


def test_step_rejects_bad_steps():
    spec = TwoPhaseSpec(3)
    assert spec.step(0, Step("TMCommit", ())) is None              # nobody prepared
    assert spec.step(0, Step("RMPrepare", (3,))) is None           # no such RM
    assert spec.step(0, Step("NoSuchAction", ())) is None
    assert spec.step(0, Step("RMPrepare", (0,))) is not None


def test_describe_is_readable():
    spec = TwoPhaseSpec(2)
    s = spec.step(0, Step("RMPrepare", (1,)))
    text = spec.describe(s)
    assert "tmState=init" in text and "rm1=prepared" in text and "Prepared(rm1)" in text


@pytest.mark.slow
def test_twophase_7_count():
    r = explore(TwoPhaseSpec(7))
    assert r.distinct == 296_448 and r.complete and r.witnesses_missing == ()
    assert explore(TwoPhaseSpec(7), symmetry=True).distinct == 920
