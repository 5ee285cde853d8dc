"""Incremental checking of the ALWAYS clauses (properties/incremental.py): what a step changed,
what each clause reads (registry.READS), and explorations that give the same results, traces
and violating states as asking every clause in every state."""
from __future__ import annotations

import pytest

from model import next as N
from model.config import VARIANTS
from model.configs import CONFIGS
from properties import footprint as FP
from properties import incremental as I
from properties import registry as R
from properties.explore import explore
from properties.kafka_spec import KafkaSpec
from properties.spec import incremental_checks

TINY = [n for n, c in CONFIGS.items() if c.tier == "tiny"]
SMALL = [n for n, c in CONFIGS.items() if c.tier == "small"]
_TIMINGS = ("seconds", "distinct_per_second", "generated_per_second")


def _name(loc) -> str:
    """A footprint location (properties/footprint.py) as an incremental location name."""
    if loc[0] == "s":
        return loc[1]
    if loc[0] in ("node", "client"):
        return f"{loc[0]}.{loc[2]}"
    if loc[0] in ("zk", "quorum"):
        return f"{loc[0]}.{loc[1]}"
    return "network"            # a message's presence, the whole network, its size


def _reachable(cfg, limit: int) -> list:
    """Up to about ``limit`` states of ``cfg`` (correct design), breadth first, each with the
    state it was first found from (None for the initial state)."""
    s0 = N.initial_state(cfg)
    parent = {s0: None}
    frontier = [s0]
    d = KafkaSpec(cfg)._model_design
    while frontier and len(parent) < limit:
        nxt = []
        for s in frontier:
            for _, t in N.successors(s, cfg, d):
                if t not in parent:
                    parent[t] = s
                    nxt.append(t)
        frontier = nxt
    return list(parent.items())


def _undeclared_reads(cfg, states) -> dict:
    """Clause name -> the locations it read on ``states`` that ``registry.READS`` does not
    declare."""
    d = KafkaSpec(cfg).design
    missing: dict = {}
    for holds, _, name in R._clause_plan(cfg)[2]:
        declared = set(R.READS.get(name, I.LOCATIONS))
        for s in states:
            _, reads = FP.reads_of(holds, s, cfg, d)
            extra = {_name(x) for x in reads} - declared
            if extra:
                missing.setdefault(name, set()).update(extra)
    return missing


def _sample(pairs, n: int) -> list:
    step = max(1, len(pairs) // n)
    return pairs[::step]


def test_every_always_clause_declares_what_it_reads():
    names = [c.name for _, c in R._ALWAYS]
    assert sorted(R.READS) == sorted(names), (
        "each ALWAYS clause declares the state locations it reads in registry.READS "
        "(properties/incremental.py lists them)")
    for name, reads in R.READS.items():
        assert I.mask_of(reads), name        # every name is a location; not empty
        assert len(set(reads)) == len(reads), name


@pytest.mark.parametrize("config", TINY)
def test_declared_reads_cover_what_clauses_read(config):
    cfg = CONFIGS[config]
    states = [s for s, _ in _sample(_reachable(cfg, 20_000), 300)]
    assert _undeclared_reads(cfg, states) == {}


@pytest.mark.slow
@pytest.mark.parametrize("config", SMALL)
def test_declared_reads_cover_what_clauses_read_small(config):
    cfg = CONFIGS[config]
    states = [s for s, _ in _sample(_reachable(cfg, 200_000), 3_000)]
    assert _undeclared_reads(cfg, states) == {}


def test_a_missing_declaration_is_found(monkeypatch):
    """The check above can fail: with a location taken out of a clause's declaration it names
    the clause and the location."""
    cfg = CONFIGS["zk-forward-zombie"]
    monkeypatch.setitem(R.READS, "forward-ends-by-deadline", ("now", "node.alive"))
    states = [s for s, _ in _sample(_reachable(cfg, 20_000), 300)]
    assert _undeclared_reads(cfg, states) == {"forward-ends-by-deadline": {"node.channel"}}


@pytest.mark.parametrize("config", TINY)
def test_changes_cover_what_steps_write(config):
    """``changes(s, t)`` names every location whose value differs (``footprint.writes``)."""
    cfg = CONFIGS[config]
    for t, s in _sample(_reachable(cfg, 20_000), 500):
        if s is None:
            continue
        written = {_name(x) for x in FP.writes(s, t)}
        changed = set(I.names_of(I.changes(s, t)))
        assert written <= changed, (written - changed)
        assert I.changes(t, t) == 0


def test_changes_names_only_what_the_step_touched():
    """A step that touches one node's channel and the network leaves the clients, ZooKeeper
    and the other nodes out of the mask (or incremental checks would save nothing)."""
    cfg = CONFIGS["zk-forward-zombie"]
    d = KafkaSpec(cfg)._model_design
    s = N.initial_state(cfg)
    for st, t in N.successors(s, cfg, d):
        names = set(I.names_of(I.changes(s, t)))
        assert names, st
        assert not {n for n in names if n.startswith("zk.")} or st.action.startswith(
            ("broker_elects", "zk_", "controller_")), (st, names)
        assert len(names) < len(I.LOCATIONS) // 4, (st, names)


def test_mask_of_refuses_unknown_locations():
    with pytest.raises(ValueError, match="'node.no_such_field' is not a state location"):
        I.mask_of(("node.no_such_field",))
    assert I.mask_of(None) == I.FULL
    assert I.names_of(I.mask_of(("now", "node.alive"))) == ("now", "node.alive")


def test_incremental_checks_only_for_the_correct_design_and_the_plain_spec():
    assert incremental_checks(KafkaSpec.named("zk-forward-zombie")) is not None
    variant = next(iter(VARIANTS))
    assert incremental_checks(KafkaSpec.named("zk-forward-zombie", variant)) is None

    class Own(KafkaSpec):
        def violation(self, state, succ):
            return super().violation(state, succ)
    assert incremental_checks(Own(CONFIGS["zk-forward-zombie"])) is None


def _same(a, b) -> None:
    da, db = a.to_dict(), b.to_dict()
    for k in _TIMINGS:
        da.pop(k)
        db.pop(k)
    assert da == db
    assert a.trace == b.trace and a.violating_state == b.violating_state


def _pair(config, variant=None, **options):
    on = KafkaSpec.named(config, variant)
    on.checks_incrementally = True          # under a variant too: what it would find
    off = KafkaSpec.named(config, variant)
    off.checks_incrementally = False
    return explore(on, **options), explore(off, **options)


@pytest.mark.parametrize("config", TINY)
def test_correct_design_is_checked_incrementally(config, monkeypatch):
    """A default exploration of the correct design asks its states with masks (the wiring is
    on), and its result is the one of asking every clause."""
    asked = {True: 0, False: 0}
    real = R.first_violation

    def counting(s, cfg, d, succ, changed=None):
        asked[changed is not None] += 1
        return real(s, cfg, d, succ, changed)
    monkeypatch.setattr(R, "first_violation", counting)
    on = explore(KafkaSpec.named(config))
    assert asked[True] > 0
    off = KafkaSpec.named(config)
    off.checks_incrementally = False
    before = asked[True]
    _same(on, explore(off))
    assert asked[True] == before


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_is_found_alike(variant):
    """Each variant on its configuration, asked incrementally (which the explorer does only
    for the correct design) and asked everything: the same verdict, state, trace and counts."""
    a, b = _pair(VARIANTS[variant].config, variant)
    _same(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_is_found_alike_exploring_on(variant):
    a, b = _pair(VARIANTS[variant].config, variant, stop_at_violation=False)
    _same(a, b)


@pytest.mark.parametrize("variant", ["forward-without-deadline", "election-keeps-epoch",
                                     "registration-no-recheck-after-success"])
def test_workers_carry_the_tokens(variant):
    """Two workers pass the states they find to each other with their tokens: the same result
    as one process asking every clause."""
    on = KafkaSpec.named(VARIANTS[variant].config, variant)
    on.checks_incrementally = True
    off = KafkaSpec.named(VARIANTS[variant].config, variant)
    off.checks_incrementally = False
    a, b = explore(on, workers=2), explore(off)
    assert (a.violation, a.trace, a.violating_state, a.distinct) == (
        b.violation, b.trace, b.violating_state, b.distinct)
    assert a.violation is not None


def test_a_clause_declared_to_read_too_little_is_missed(monkeypatch):
    """Why the declarations matter: with ``forward-ends-by-deadline`` declared not to read the
    clock, the tick that takes a queued forward past its deadline (it changes only the clock)
    is not asked about, and the variant is not found where it was."""
    variant = "forward-without-deadline"
    config = VARIANTS[variant].config
    a, b = _pair(config, variant)
    assert a.violation == b.violation == "P2"
    monkeypatch.setitem(R.READS, "forward-ends-by-deadline", ("node.alive", "node.channel"))
    cfg = KafkaSpec.named(config).cfg
    cfg.__dict__.pop("_registry_plan", None)
    try:
        a, b = _pair(config, variant)
        assert (a.violation, a.trace) != (b.violation, b.trace)
    finally:
        cfg.__dict__.pop("_registry_plan", None)
