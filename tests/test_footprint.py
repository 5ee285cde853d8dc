"""properties/footprint.py (what a step or clause reads and writes, measured) and bench/por.py
(how far partial-order reduction from those footprints shrinks the model).  No timing."""
from __future__ import annotations

import collections
import json

from bench import por
from model import next as N
from properties import footprint as FP
from properties import registry as R
from properties.kafka_spec import KafkaSpec


def _states(spec, limit=400):
    s0 = N.initial_state(spec.cfg)
    seen, frontier, out = {s0}, [s0], [s0]
    while frontier and len(out) < limit:
        nxt = []
        for s in frontier:
            for _, t in spec.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
                    out.append(t)
        frontier = nxt
    return out


def test_recording_copy_steps_as_the_state_does():
    spec = KafkaSpec.named("kraft-forward-leader-change")
    cfg, d = spec.cfg, spec.design
    taken = collections.Counter()
    for s in _states(spec):
        for st, t in spec.successors(s):
            t2, _ = FP.reads_of(N.step, s, cfg, d, st)
            assert t2 is not None and FP.writes(s, t) == FP.writes(s, t2), st
            taken[st.action] += 1
    assert len(taken) >= 8, taken


def test_reads_and_writes_of_a_replay():
    """node_replays_record reads its node's offset and the log, writes only its node."""
    spec = KafkaSpec.named("kraft-forward-leader-change")
    cfg, d = spec.cfg, spec.design
    for s in _states(spec):
        for st, t in spec.successors(s):
            if st.action != "node_replays_record":
                continue
            n = st.args[0]
            _, reads = FP.reads_of(N.step, s, cfg, d, st)
            assert {("node", n, "replayed"), ("quorum", "log")} <= reads
            assert not any(loc[0] == "node" and loc[1] != n for loc in reads)
            written = FP.writes(s, t)
            assert ("node", n, "replayed") in written
            assert all(loc[0] == "node" and loc[1] == n for loc in written), written
            return
    raise AssertionError("no replay in the first states")


def test_network_locations():
    spec = KafkaSpec.named("kraft-forward-leader-change")
    s = next(s for s in _states(spec) if s.network)
    m = min(s.network)
    _, reads = FP.reads_of(lambda x: m in x.network, s)
    assert reads == {("net", m.kind, m.dst)}
    _, reads = FP.reads_of(lambda x: len(x.network), s)
    assert reads == {FP.NETLEN}
    _, reads = FP.reads_of(lambda x: [k.kind for k in x.network], s)
    assert reads == {FP.NET_ALL}
    t = s._replace(network=s.network - {m})
    assert FP.writes(s, t) == {("net", m.kind, m.dst): "w", FP.NETLEN: "add"}
    assert FP.writes(t, s) == {("net", m.kind, m.dst): "add", FP.NETLEN: "add"}


def test_clause_reads_a_node_field():
    spec = KafkaSpec.named("kraft-forward-leader-change")
    cfg, d = spec.cfg, spec.design
    clause = next(c for _, c in R._ALWAYS if c.name == "advertised-versions-within-controller")
    s = N.initial_state(cfg)
    _, reads = FP.reads_of(clause.holds, s, cfg, d)
    assert ("node", 0, "ctrl_versions") in reads or ("node", 0, "alive") in reads


def test_bench_por_keeps_the_verdict(tmp_path):
    out = tmp_path / "por.json"
    assert por.main(["--config", "kraft-registration-leader-change", "--variant",
                     "registration-bumps-same-incarnation", "--relax", "none",
                     "--out", str(out)]) == 0
    [r] = json.loads(out.read_text())["results"]
    assert r["verdict_full"] == r["verdict_reduced"] == "P3"
    assert r["reduced_states"] <= r["full_states"] == r["footprint_states"]


def test_bench_por_reduces_where_a_stubborn_set_exists(tmp_path):
    """Without the clock's reads the stubborn sets apply on zk-forward-zombie: the machinery
    does reduce when the footprints allow it (the sound setting does not, docs/performance.md)."""
    out = tmp_path / "por.json"
    assert por.main(["--config", "zk-forward-zombie", "--relax", "now", "--out", str(out)]) == 0
    [r] = json.loads(out.read_text())["results"]
    assert r["states_with_stubborn_set"] > 0 and r["reduced_states"] < r["full_states"]


def test_bench_por_bad_input(capsys):
    assert por.main(["--relax", "sometimes"]) == 2
    assert "unknown --relax" in capsys.readouterr().err
    assert por.main(["--config", "no-such-config"]) == 2


def test_bench_por_relax_levels(tmp_path):
    """Every relax level runs and records itself; ``invisible`` and ``quorum`` make every class
    invisible; on zk-forward-zombie the loosest level reduces where the sound one does not
    (the levels act: docs/performance.md has the figures)."""
    out = tmp_path / "por.json"
    assert por.main(["--config", "zk-forward-zombie", "--out", str(out)]) == 0
    rows = {r["relax"]: r for r in json.loads(out.read_text())["results"]}
    assert list(rows) == list(por.RELAX_LEVELS)
    for level in ("invisible", "quorum"):
        assert rows[level]["invisible_classes"] == rows[level]["classes"]
    assert rows["none"]["invisible_classes"] < rows["none"]["classes"]
    assert rows["none"]["reduced_states"] == rows["none"]["full_states"]
    assert rows["quorum"]["reduced_states"] < rows["quorum"]["full_states"]
    assert all(r["verdict_reduced"] is None for r in rows.values())


def test_bench_por_bounds_cut_a_configuration(tmp_path):
    out = tmp_path / "por.json"
    bounds = {"max_elections": 0, "max_session_expiries": 0, "max_time": 1}
    assert por.main(["--config", "zk-small", "--bounds", json.dumps(bounds), "--relax",
                     "none", "--out", str(out)]) == 0
    [r] = json.loads(out.read_text())["results"]
    assert r["config"] == "zk-small-cut" and r["bounds"] == bounds
    assert r["full_states"] == r["footprint_states"] == 290


def test_bench_por_bad_bounds(capsys):
    assert por.main(["--config", "zk-small", "--bounds", '{"max_tim": 2}']) == 2
    assert "no such ModelConfig field: max_tim" in capsys.readouterr().err
    assert por.main(["--config", "zk-small", "--bounds", "[2]"]) == 2
    assert por.main(["--config", "zk-small", "--bounds", '{"max_time": -1}']) == 2
    assert "max_time must be >= 0" in capsys.readouterr().err
