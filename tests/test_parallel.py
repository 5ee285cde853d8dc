"""``explore(spec, workers=N)`` (properties/parallel.py) against the one-process explorer: on
every tiny configuration and design variant the counts, levels, per-action coverage, witnesses,
violation, shortest trace, violating state and whole-graph verdicts are identical; so are the
options (symmetry, bounds, exploring on past a violation, the stored fingerprints) and the flags a
variant's steps read.  The largest tiny configurations' correct designs are slow-tier (4-6 s
each twice here)."""
from __future__ import annotations

import pickle
from array import array

import pytest

from bench.twophase import TwoPhaseSpec
from model.configs import CONFIGS, TINY
from properties.explore import explore
from properties.kafka_spec import KafkaSpec
from properties.parallel import (MAX_WORKERS, _balance, _merged, _split, default_workers,
                                 explore_parallel)

SLOW_TINY = ("kraft-registration", "kraft-listeners", "kraft-misconfigured",
             "kraft-broker-registration", "kraft-controller-endpoints", "kraft-broker-endpoints")

FIELDS = ("distinct", "generated", "depth", "complete", "stop_reason", "violation",
          "violations_seen", "trace", "initial_index", "violating_state", "action_counts",
          "witnesses_reached", "witnesses_missing", "states_per_depth", "peak_frontier",
          "graph_checked", "graph_violation", "graph_trace", "graph_initial_index",
          "graph_state", "graph_stem", "graph_loop", "graph_stuck", "graph_goal",
          "graph_example")


def _summary(r) -> dict:
    return {f: getattr(r, f) for f in FIELDS}


def _spec(config, variant):
    return KafkaSpec.named(config, None if variant == "correct" else variant)


def _pairs(configs):
    return [(c, v) for c in configs for v in ("correct",) + tuple(CONFIGS[c].variants)]


def _cases():
    fast = _pairs([c for c in TINY if c not in SLOW_TINY])
    fast += [(c, v) for c, v in _pairs(SLOW_TINY) if v != "correct"]
    slow = [pytest.param(c, "correct", marks=pytest.mark.slow) for c in SLOW_TINY]
    return fast + slow


@pytest.mark.parametrize("config,variant", _cases())
def test_workers_equal_one_process(config, variant):
    one = explore(_spec(config, variant))
    two = explore(_spec(config, variant), workers=2)
    assert _summary(two) == _summary(one)


@pytest.mark.parametrize("config,variant,options", [
    ("zk-forward-zombie", "correct", {"symmetry": True}),
    ("kraft-registration-leader-loss", "correct", {"max_states": 700}),
    ("kraft-registration-leader-loss", "correct", {"max_depth": 6}),
    ("zk-forward-zombie", "zombie-writes-unfenced", {"stop_at_violation": False}),
    ("zk-migration", "correct", {"keep_fingerprints": True}),
    ("zk-migration", "correct", {"graph_checks": False}),
])
@pytest.mark.parametrize("workers", [2, 3])
def test_workers_options_equal_one_process(config, variant, options, workers):
    one = explore(_spec(config, variant), **options)
    many = explore(_spec(config, variant), workers=workers, **options)
    assert _summary(many) == _summary(one)
    if options.get("keep_fingerprints"):
        assert list(many.fingerprints) == list(one.fingerprints)


def test_workers_on_twophase():
    """Another spec (state-predicate witnesses, no whole-graph checks): TwoPhase-4 is 1,568
    states (TLC's count)."""
    one = explore(TwoPhaseSpec(4))
    many = explore(TwoPhaseSpec(4), workers=3)
    assert many.distinct == 1_568 and _summary(many) == _summary(one)


def test_flags_read_in_workers_count_in_the_driver():
    """A variant's flags are read by the model in the worker processes; the driver's spec
    learns them (else every variant would look indistinguishable from the correct design)."""
    spec = _spec("zk-forward-zombie", "zombie-writes-unfenced")
    assert spec.flags_unreached()                    # nothing explored yet
    explore(spec, workers=2)
    assert spec.flags_unreached() == ()


def test_a_failing_worker_is_reported_with_its_cause():
    class Broken(TwoPhaseSpec):
        def __init__(self, n):
            super().__init__(n)
            self.successors = self.broken

        def broken(self, state):
            raise KeyError("no such resource manager")
    with pytest.raises(RuntimeError, match="KeyError: 'no such resource manager'"):
        explore_parallel(Broken(3), 2)


def test_balance_passes_the_surplus_on():
    own, moves = _balance([0, 0, 0, 0, 0, 1], 2)
    assert own == [[0, 1, 2], [5]] and moves == {(0, 1): [3, 4]}
    own, moves = _balance([1, 1, 1, 1], 3)
    assert own == [[], [0, 1], []] and moves == {(1, 0): [2, 3]}     # share: ceil(4 / 3)
    own, moves = _balance([], 2)
    assert own == [[], []] and moves == {}


def test_split_cuts_the_candidates_into_the_workers_ranges():
    """Worker j merges the fingerprints from j * 2**64 / workers on, so the merged ranges in
    order are the sorted level; a tagged key orders as the key and names the worker."""
    top = 1 << 64
    first = [-(-top * j // 3) for j in range(3)]        # each range's first fingerprint
    fps = [top - 1, 0, first[1], first[1] - 1, first[2], 5]
    cand = dict.fromkeys(fps, "state")
    keys = [7, 3, 9, 11, 2, 4]
    parts = _split(cand, keys, 1, 3)
    assert [list(f) for f, _ in parts] == [[0, first[1] - 1, 5], [first[1]],
                                           [top - 1, first[2]]]
    assert [list(t) for _, t in parts] == [[3 * 3 + 1, 11 * 3 + 1, 4 * 3 + 1], [9 * 3 + 1],
                                           [7 * 3 + 1, 2 * 3 + 1]]
    one = _split(cand, keys, 0, 1)
    assert list(one[0][0]) == fps and list(one[0][1]) == keys


def test_merged_puts_the_states_passed_on_in_index_order():
    own = (array("Q", [1, 4, 5, 9]), array("Q", [10, 40, 50, 90]), ["a", "d", "e", "i"])
    received = [(array("Q", [8, 0]), array("Q", [80, 0]), pickle.dumps((["h", "z"], None))),
                (array("Q", [6]), array("Q", [60]), pickle.dumps((["f"], None)))]
    idx, fps, states, toks = _merged(*own, None, received)
    assert list(idx) == [0, 1, 4, 5, 6, 8, 9]
    assert list(fps) == [0, 10, 40, 50, 60, 80, 90]
    assert states == ["z", "a", "d", "e", "f", "h", "i"]
    assert toks is None


def test_merged_keeps_each_state_with_its_token():
    """The incremental checks' tokens (properties/incremental.py) travel with their states;
    where one side has none, the merged share has none (every clause is asked)."""
    own = (array("Q", [1, 4]), array("Q", [10, 40]), ["a", "d"], [11, 14])
    received = [(array("Q", [8, 0]), array("Q", [80, 0]), pickle.dumps((["h", "z"], [18, 10]))),
                (array("Q", [2]), array("Q", [20]), pickle.dumps((["b"], [12])))]
    idx, fps, states, toks = _merged(*own, received)
    assert states == ["z", "a", "b", "d", "h"]
    assert toks == [10, 11, 12, 14, 18]
    received[1] = (array("Q", [2]), array("Q", [20]), pickle.dumps((["b"], None)))
    assert _merged(*own, received)[3] is None
    assert _merged(*own[:3], None, received[:1])[3] is None


def test_bad_worker_counts():
    with pytest.raises(ValueError, match="workers"):
        explore_parallel(TwoPhaseSpec(3), 0)
    with pytest.raises(ValueError, match="workers"):
        explore_parallel(TwoPhaseSpec(3), MAX_WORKERS + 1)
    with pytest.raises(ValueError, match="graph"):
        explore(TwoPhaseSpec(3), workers=2, graph=True)
    assert default_workers() >= 1


def test_the_driver_pauses_the_collector_as_one_process_does(monkeypatch):
    """The driver merges and records millions of small tuples in a large run: with the cyclic
    collector on it walked them again and again (zk-small's per-level records alone took 15 s).
    ``explore(workers=N)`` pauses it around the search and turns it back on after."""
    import gc

    import properties.parallel as parallel
    seen = []
    real = parallel.explore_parallel

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel, "explore_parallel", spy)
    assert gc.isenabled()
    r = explore(TwoPhaseSpec(3), workers=2)
    assert seen == [False] and gc.isenabled()
    assert r.distinct == 288
    explore(TwoPhaseSpec(3), workers=2, pause_gc=False)
    assert seen == [False, True]
