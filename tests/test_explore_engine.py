"""Unit tests of the explorer (properties/explore.py) on small toy specs."""
from __future__ import annotations

import io
import random
from collections import deque

import pytest

import properties.explore as explore_mod
from bench.twophase import TwoPhaseSpec
from model.step import Step
from properties.explore import ReplayError, explore, replay, write_dot, write_graphml


class GraphSpec:
    """A directed graph as a spec: states are nodes; ``go(t)`` moves along an edge, ``stay`` is a
    self-loop on nodes listed in ``loops``; ``bad`` nodes violate property "P-bad"; witness
    "W-last" is an edge into node ``n - 1``.  The fingerprint is deliberately negative for half of
    the nodes, to exercise masking."""

    name = "graph"

    def __init__(self, n, edges, inits=(0,), bad=(), loops=()):
        self.n = n
        self.adj = {v: sorted({t for s, t in edges if s == v}) for v in range(n)}
        self.inits = tuple(inits)
        self.bad = frozenset(bad)
        self.loops = frozenset(loops)

    def initial_states(self):
        return self.inits

    def successors(self, s):
        out = [(Step("go", (t,)), t) for t in self.adj[s]]
        if s in self.loops:
            out.append((Step("stay", ()), s))
        return out

    def step(self, s, st):
        if st.action == "go" and len(st.args) == 1 and st.args[0] in self.adj[s]:
            return st.args[0]
        if st.action == "stay" and s in self.loops:
            return s
        return None

    def violation(self, s, succ):
        return "P-bad" if s in self.bad else None

    def witness_ids(self):
        return ("W-last",)

    def witnesses_hit(self, prev, step, nxt, wanted):
        return ["W-last"] if nxt == self.n - 1 and "W-last" in wanted else []

    def action_names(self):
        return ("go", "stay", "never")

    def canonical(self, s):
        return s

    def fingerprint(self, s):
        return (s * 0x9E3779B97F4A7C15) % (1 << 64) - (1 << 63)     # negative for half


def bfs_distances(spec) -> dict:
    dist = {s: 0 for s in spec.initial_states()}
    q = deque(dist)
    while q:
        s = q.popleft()
        for _, t in spec.successors(s):
            if t not in dist:
                dist[t] = dist[s] + 1
                q.append(t)
    return dist


def random_graph(seed, n=40, m=90, n_bad=2):
    rnd = random.Random(seed)
    edges = [(rnd.randrange(n), rnd.randrange(n)) for _ in range(m)]
    edges += [(i, i + 1) for i in range(0, n - 1, 3)]      # some long paths
    bad = rnd.sample(range(1, n), n_bad)
    loops = rnd.sample(range(n), 5)
    inits = (0, rnd.randrange(n)) if seed % 2 else (0,)
    return GraphSpec(n, edges, inits=inits, bad=bad, loops=loops)


@pytest.mark.parametrize("seed", range(40))
def test_shortest_counterexample_matches_brute_force(seed):
    spec = random_graph(seed)
    dist = bfs_distances(spec)
    reachable_bad = [b for b in spec.bad if b in dist]
    r = explore(spec)
    if not reachable_bad:
        assert r.violation is None and r.complete and r.distinct == len(dist)
        return
    assert r.violation == "P-bad"
    assert len(r.trace) == min(dist[b] for b in reachable_bad)
    states = replay(spec, r.initial_index, r.trace)
    assert states[-1] == r.violating_state and states[-1] in spec.bad
    assert all(s not in spec.bad for s in states[:-1])


@pytest.mark.parametrize("seed", range(10))
def test_full_exploration_counts_and_depths(seed):
    spec = random_graph(seed, n_bad=0)
    dist = bfs_distances(spec)
    r = explore(spec)
    assert r.complete and r.distinct == len(dist)
    assert r.depth == max(dist.values())
    assert r.states_per_depth == [sum(1 for d in dist.values() if d == k)
                                  for k in range(r.depth + 1)]
    transitions = sum(len(spec.successors(s)) for s in dist)
    assert r.generated == transitions + len(spec.initial_states())
    assert r.action_counts["go"] + r.action_counts["stay"] == transitions
    assert r.action_counts["never"] == 0                    # every action listed, zeros included
    into_last = any(spec.n - 1 in spec.adj[s] for s in dist)
    assert r.witnesses_missing == (() if into_last else ("W-last",))


def chain(n, bad=()):
    return GraphSpec(n, [(i, i + 1) for i in range(n - 1)], bad=bad)


def test_long_chain_is_explored_level_by_level():
    r = explore(chain(3000))
    assert r.complete and r.distinct == 3000 and r.depth == 2999
    assert r.states_per_depth == [1] * 3000
    r = explore(chain(3000, bad=(2500,)))
    assert r.violation == "P-bad" and len(r.trace) == 2500


def test_max_states_truncates_and_marks_incomplete():
    spec = random_graph(3, n_bad=0)
    full = explore(spec)
    for k in (0, 1, 5, full.distinct - 1):
        r = explore(spec, max_states=k)
        assert r.distinct == k and not r.complete and r.stop_reason == "max_states"
    r = explore(spec, max_states=full.distinct)
    assert r.complete and r.distinct == full.distinct       # exactly enough is complete


def test_max_depth_truncates_and_marks_incomplete():
    r = explore(chain(50), max_depth=10)
    assert r.distinct == 11 and r.depth == 10 and not r.complete and r.stop_reason == "max_depth"
    r = explore(chain(50), max_depth=49)
    assert r.distinct == 50 and r.complete
    # a violation beyond the bound is not found
    r = explore(chain(50, bad=(30,)), max_depth=20)
    assert r.violation is None and not r.complete


def test_visited_storage_is_compact():
    r = explore(TwoPhaseSpec(5))
    assert r.distinct == 8_832
    assert r.bytes_per_state <= 16
    assert r.visited_bytes == pytest.approx(r.bytes_per_state * r.distinct)
    assert r.peak_frontier == max(r.states_per_depth)
    assert r.peak_frontier_bytes > 0


def test_collision_bound():
    r = explore(TwoPhaseSpec(3))
    assert r.collision_probability_bound == pytest.approx(288 ** 2 / 2 ** 65)


def test_graph_export_dot_and_graphml(tmp_path):
    nx = pytest.importorskip("networkx")
    spec = TwoPhaseSpec(3)
    r = explore(spec, graph=True)
    g = r.graph
    assert g.number_of_nodes() == 288
    assert sum(1 for _, d in g.nodes(data=True) if d["initial"]) == 1
    assert {d["depth"] for _, d in g.nodes(data=True)} == set(range(11))
    assert all("tmState=" in d["label"] for _, d in g.nodes(data=True))
    assert all(d["action"] for _, _, d in g.edges(data=True))
    dot = tmp_path / "g.dot"
    write_dot(g, dot)
    text = dot.read_text()
    assert text.startswith("digraph") and text.count("->") == g.number_of_edges()
    gml = tmp_path / "g.graphml"
    write_graphml(g, gml)
    back = nx.read_graphml(gml)
    assert back.number_of_nodes() == g.number_of_nodes()
    assert back.number_of_edges() == g.number_of_edges()
    assert sorted(d["depth"] for _, d in back.nodes(data=True)) == sorted(
        d["depth"] for _, d in g.nodes(data=True))
    # with symmetry the quotient graph
    assert explore(spec, graph=True, symmetry=True).graph.number_of_nodes() == 80


def test_graph_is_refused_above_the_limit(monkeypatch):
    monkeypatch.setattr(explore_mod, "GRAPH_LIMIT", 100)
    with pytest.raises(ValueError, match="graph"):
        explore(TwoPhaseSpec(3), graph=True)
    r = explore(TwoPhaseSpec(3), graph=True, max_states=100)
    assert r.graph.number_of_nodes() == 100


def test_replay_error_on_a_disabled_step():
    spec = TwoPhaseSpec(3)
    states = replay(spec, 0, [Step("RMPrepare", (0,)), Step("TMRcvPrepared", (0,))])
    assert len(states) == 3
    with pytest.raises(ReplayError) as e:
        replay(spec, 0, [Step("RMPrepare", (0,)), Step("TMCommit", ())])
    assert e.value.index == 1 and e.value.step == Step("TMCommit", ())
    assert "1" in str(e.value) and "TMCommit" in str(e.value)
    with pytest.raises(ReplayError):
        replay(spec, 5, [])
    # JSON-shaped steps are accepted
    assert replay(spec, 0, [["RMPrepare", [0]]])[-1] == states[1]


def test_determinism():
    def run():
        d = explore(TwoPhaseSpec(4, flaw="tm-commit-unprepared"), stop_at_violation=False).to_dict()
        for k in ("seconds", "distinct_per_second", "generated_per_second"):
            d.pop(k)
        return d
    assert run() == run()
    a, b = explore(random_graph(7)), explore(random_graph(7))
    assert (a.trace, a.initial_index, a.distinct, a.generated) == (
        b.trace, b.initial_index, b.distinct, b.generated)


def test_progress_lines(monkeypatch):
    monkeypatch.setattr(explore_mod, "_PROGRESS_EVERY", 0.0)
    monkeypatch.setattr(explore_mod, "_CHUNK", 64)
    out = io.StringIO()
    r = explore(TwoPhaseSpec(4), progress=out)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 2 and all(line.startswith("[explore]") for line in lines)
    assert "complete" in lines[-1] and f"{r.distinct:,}" in lines[-1]
    assert explore(TwoPhaseSpec(3)).distinct == 288      # silent by default


def test_stop_at_violation_false_reports_the_shallowest():
    spec = GraphSpec(6, [(0, 1), (1, 2), (0, 3), (3, 4), (4, 5)], bad=(2, 5))
    r = explore(spec, stop_at_violation=False)
    assert r.complete and r.distinct == 6
    assert r.violation == "P-bad" and r.trace == (Step("go", (1,)), Step("go", (2,)))


def test_witness_on_transition_scope_and_initial_states():
    spec = GraphSpec(3, [(0, 1), (1, 2)])
    r = explore(spec)
    assert r.witnesses_reached == ("W-last",)
    spec = GraphSpec(3, [(0, 1)], inits=(0, 2))
    r = explore(spec)                               # node 2 only initial: no transition into it
    assert r.witnesses_missing == ("W-last",)


def test_duplicate_and_symmetric_initial_states():
    spec = GraphSpec(4, [(0, 1), (2, 3)], inits=(2, 0, 2))
    r = explore(spec)
    assert r.distinct == 4 and r.states_per_depth == [2, 2]
    spec = GraphSpec(4, [(0, 1), (2, 3)], inits=(2, 0), bad=(1,))
    r = explore(spec)
    assert r.initial_index == 1 and r.trace == (Step("go", (1,)),)


def test_violation_in_an_initial_state():
    spec = GraphSpec(3, [(0, 1), (1, 2)], inits=(0, 2), bad=(2,))
    r = explore(spec)
    assert r.violation == "P-bad" and r.trace == () and r.initial_index == 1
    assert r.violating_state == 2 and r.depth == 0


def test_bad_arguments():
    with pytest.raises(ValueError):
        explore(chain(3), max_states=-1)
    with pytest.raises(ValueError):
        explore(chain(3), max_depth=-1)
