"""The encoding against the model on arbitrary states: well-typed states that satisfy the
strengthening invariants but are not reachable -- the states k-induction starts from, where
a cross-check on reachable states alone sees nothing (properties/symbolic/arbitrary.py)."""
import re
from functools import cache

import pytest
from tiers import slow_unless

z3 = pytest.importorskip("z3")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from model import next as model_next  # noqa: E402
from model.config import VARIANTS, Design  # noqa: E402
from model.configs import CONFIGS, TINY as ALL_TINY  # noqa: E402
from properties.symbolic.next import unencoded_actions  # noqa: E402

# the configurations the encoding states (the others are refused: tests/test_symbolic.py)
TINY = tuple(c for c in ALL_TINY if not unencoded_actions(CONFIGS[c]))
from model.step import Step  # noqa: E402
from properties.kafka_spec import get_config  # noqa: E402
from properties.symbolic import actions as sym_actions  # noqa: E402
from properties.symbolic import invariants as inv_mod  # noqa: E402
from properties.symbolic.arbitrary import Generator, generator, problems, states  # noqa: E402
from properties.symbolic.crosscheck import compile_encoding, crosscheck, explore  # noqa: E402
from properties.symbolic.next import Encoding  # noqa: E402

_ORIGINAL = dict(sym_actions.ENCODINGS)


@cache
def _explored(config: str, variant: str = "correct") -> list:
    cfg = get_config(config)
    return explore(cfg, Design() if variant == "correct" else VARIANTS[variant].design)


@pytest.mark.parametrize("config", slow_unless(TINY, [c for c in TINY
                                                 if c != "zk-migration-bounce"]))
def test_generated_states_are_well_typed_unreachable_and_satisfy_the_invariants(config):
    cfg = get_config(config)
    order = _explored(config)
    reach = set(order)
    # the type check accepts what the model reaches (it is not stricter than the model)
    for s in order[::max(1, len(order) // 200)]:
        assert problems(s, cfg) == [], s
    gen = Generator(cfg, Design(), reachable=order, seed=7)
    out = list(gen.generate(150))
    assert len(out) == len(set(out)) == 150
    assert sum(s not in reach for s in out) == 150        # none is reachable
    assert gen.stats["accepted"] == 150 and gen.rejected > 0    # the filter is not vacuous
    assert gen.invariants == tuple(i.name for i in inv_mod.INVARIANTS.values()
                                   if cfg.mode in i.modes)
    for s in out:
        assert problems(s, cfg, gen.dom) == [], s
        assert gen.verdict(s) is None
        model_next.successors(s, cfg, Design())           # the model runs on it
    # the same seed gives the same states; another seed others
    assert list(Generator(cfg, Design(), reachable=order, seed=7).generate(150)) == out
    assert list(Generator(cfg, Design(), reachable=order, seed=8).generate(150)) != out


def test_the_filter_is_what_z3_says_of_the_invariants():
    """The compiled invariants the generator filters with evaluate as Z3 does: on generated
    states (and on rejected candidates) each invariant simplifies to the filter's verdict."""
    import random
    from properties.symbolic.arbitrary import perturb
    cfg = get_config("kraft-forward-leader-change")
    gen = Generator(cfg, Design(), reachable=_explored("kraft-forward-leader-change"), seed=3)
    rng = random.Random(3)
    invs = [inv_mod.INVARIANTS[name] for name in gen.invariants]
    seen = {True: 0, False: 0}
    for _ in range(30):
        s = perturb(rng.choice(gen.pool), gen.dom, rng)
        why = gen.verdict(s)
        if why in ("reachable", "layout"):
            continue
        S = gen.lay.concrete(s)
        holds = [z3.is_true(z3.simplify(inv.holds(S, cfg, Design()))) for inv in invs]
        assert all(holds) == (why is None)
        if why is not None:
            assert not holds[gen.invariants.index(why.removeprefix("invariant "))]
        seen[why is None] += 1
    assert seen[True] and seen[False]


def test_a_variant_keeps_the_invariants_its_reachable_states_satisfy():
    """A variant that breaks an invariant on reachable states is not held to it: KAFKA-12677's
    NOT_CONTROLLER inside an OK envelope breaks not-controller-at-top-level."""
    v = VARIANTS["not-controller-inside-ok-envelope"]
    cfg = get_config(v.config)
    gen = Generator(cfg, v.design, reachable=_explored(v.config, v.name), seed=1)
    every = {i.name for i in inv_mod.INVARIANTS.values() if cfg.mode in i.modes}
    assert "not-controller-at-top-level" not in gen.invariants
    assert 0 < len(gen.invariants) < len(every)
    assert len(list(gen.generate(50))) == 50


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_hypothesis_strategy_draws_arbitrary_states(data):
    cfg = get_config("zk-envelope-security")
    s = data.draw(states(cfg))
    gen = generator(cfg, Design())
    assert problems(s, cfg, gen.dom) == []
    assert gen.verdict(s) is None and s not in gen.reachable


@pytest.mark.slow
@pytest.mark.parametrize("config", TINY)
def test_encoding_agrees_with_the_model_on_arbitrary_states(config):
    """1,000 arbitrary states per configuration (the default run checks the 200 of the
    pre-proof sample, tests/test_symbolic.py::test_encoding_agrees_with_the_model)."""
    res = crosscheck(get_config(config), Design(), limit=100, seed=3, arbitrary=1000,
                     solver_samples=0, reachable=_explored(config))
    assert res.ok, res.mismatches
    assert res.first is None
    assert res.states == 100 and res.arbitrary == 1000 and res.arbitrary_rejected > 0
    assert res.steps > res.states + res.arbitrary and res.disabled > 0


# -- a disagreement only an unreachable state shows ---------------------------------------------

def _elect_only_with_one_election_left(S, cfg, d, n):
    """broker_elects_controller with a planted bug: the budget guard reads == 1 where the
    model reads > 0.  With max_elections = 1 no reachable state tells them apart."""
    enabled, S2 = _ORIGINAL["broker_elects_controller"](S, cfg, d, n)
    return z3.And(enabled, S["elections_left"] == 1), S2


def _elect_into_epoch_two(S, cfg, d, n):
    """broker_elects_controller with a planted bug: the new controller records epoch 2, which
    is what every reachable election of zk-forward-zombie (epoch 1, one election) yields."""
    enabled, S2 = _ORIGINAL["broker_elects_controller"](S, cfg, d, n)
    return enabled, S2.set_node(n, zk_epoch=2)


def _encoding(config):
    cfg = get_config(config)
    enc = Encoding(cfg, Design())
    return cfg, enc, compile_encoding(enc)


def test_arbitrary_states_find_a_guard_bug_that_reachable_states_miss(monkeypatch):
    monkeypatch.setitem(sym_actions.ENCODINGS, "broker_elects_controller",
                        _elect_only_with_one_election_left)
    cfg, enc, compiled = _encoding("zk-forward-zombie")
    order = _explored("zk-forward-zombie")
    every = crosscheck(cfg, Design(), compiled=compiled, enc=enc, reachable=order,
                       solver_samples=0)
    assert every.ok and every.states == every.reachable == len(order)    # all of them
    res = crosscheck(cfg, Design(), limit=50, seed=5, arbitrary=300, compiled=compiled,
                     enc=enc, reachable=order, solver_samples=0)
    assert not res.ok and res.states == 50
    assert res.first[:2] == ("broker_elects_controller", None)           # a guard
    assert all(m.startswith("broker_elects_controller[") and " in arbitrary state #" in m
               and "(seed 5): model enabled, encoding disabled" in m for m in res.mismatches)
    # the text replays: the seed regenerates the state, which has more than one election left
    n = int(re.search(r"arbitrary state #(\d+)", res.first[2]).group(1))
    gen = Generator(cfg, Design(), reachable=order, seed=5)
    s = list(gen.generate(n + 1))[n]
    assert s.elections_left > 1 and s not in set(order)


def test_first_mismatch_names_the_action_and_the_state_field(monkeypatch):
    monkeypatch.setitem(sym_actions.ENCODINGS, "broker_elects_controller", _elect_into_epoch_two)
    cfg, enc, compiled = _encoding("zk-forward-zombie")
    order = _explored("zk-forward-zombie")
    # invisible on reachable states: every reachable election starts from epoch 1
    elections = [Step("broker_elects_controller", (n,)) for n in range(len(cfg.nodes))]
    assert all(s.zk.epoch == 1 for s in order for e in elections
               if model_next.step(s, cfg, Design(), e) is not None)
    res = crosscheck(cfg, Design(), limit=20, seed=1, arbitrary=200, compiled=compiled, enc=enc,
                     reachable=order, solver_samples=0, max_mismatches=1)
    action, field, text = res.first
    assert action == "broker_elects_controller"
    assert re.fullmatch(r"nodes\[\d\]\.zk_epoch", field)
    assert text == res.mismatches[0]
    assert re.match(r"broker_elects_controller\[\d\] in arbitrary state #\d+ \(seed 1\): "
                    rf"{re.escape(field)}: encoding 2 != model \d", text)
