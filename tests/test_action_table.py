"""The model's action table (``model.next.ACTION_TABLE``) is the one home of what the model
knows about its actions, and the facts derived from it agree with the rest of the project:
the views ``ACTIONS``/``ACTION_NAMES``/``FAULT_ACTIONS``/``fault_budgets``, the budgets the
actions really spend, the pruning ``_plan`` does, the implementation's own vocabulary
(``impl.cluster.STEPS`` and ``FAULTS``), and which configuration catches which variant."""
from collections import deque
from dataclasses import fields, replace

import pytest

import impl.cluster as impl_cluster
from model import actions as A
from model import next as model_next
from model.config import BROKER, CONTROLLER, KRAFT, VARIANTS, ZK, Design, ModelConfig
from model.configs import CONFIGS, TINY
from model.next import (ACTION_BY_NAME, ACTION_NAMES, ACTION_TABLE, ACTIONS, BOTH, CLIENT_ARG,
                        FAULT_ACTIONS, MSG_ARG, NODE_ARG, NONE_ARG, fault_budgets)
from model.step import Step

_INT_FIELDS = {f.name for f in fields(ModelConfig) if f.type in ("int", int)}
_BOOL_FIELDS = {f.name for f in fields(ModelConfig) if f.type in ("bool", bool)}
_BOUNDS = sorted(f for f in _INT_FIELDS if f.startswith("max_"))
WALK_BOUND = 1500          # states per configuration for the behavioural checks


def _walk(cfg, design=Design(), bound=WALK_BOUND):
    """The first ``bound`` reachable states, breadth-first, with their successors."""
    s0 = model_next.initial_state(cfg)
    seen, queue = {s0}, deque([s0])
    while queue and len(seen) <= bound:
        s = queue.popleft()
        succ = model_next.successors(s, cfg, design)
        yield s, succ
        for _, t in succ:
            if t not in seen:
                seen.add(t)
                queue.append(t)


# ---- the table itself --------------------------------------------------------------------------

def test_every_action_function_is_named_like_its_entry():
    for a in ACTION_TABLE:
        assert a.fn.__name__ == a.name, a.name
        assert getattr(A, a.name) is a.fn, a.name


def test_every_entry_is_well_formed():
    assert len(set(ACTION_NAMES)) == len(ACTION_NAMES)
    for a in ACTION_TABLE:
        assert a.arg in (NONE_ARG, CLIENT_ARG, NODE_ARG, MSG_ARG), a.name
        assert bool(a.msg_kinds) == (a.arg == MSG_ARG), a.name
        assert a.mode in (ZK, KRAFT, BOTH), a.name
        assert a.role in (None, BROKER, CONTROLLER), a.name
        assert a.role is None or a.arg == NODE_ARG, a.name
        assert a.budget is None or a.budget in _BOUNDS, a.name
        assert a.requires is None or a.requires in _BOOL_FIELDS, a.name
        if a.mode == ZK and a.role == CONTROLLER:
            # ZK mode has brokers only, and a KRaft controller in a migration
            assert a.requires == "migration", a.name


def test_the_views_are_derived_from_the_table():
    assert ACTIONS == tuple((a.name, a.fn, a.arg, a.msg_kinds) for a in ACTION_TABLE)
    assert all(len(entry) == 4 for entry in ACTIONS)
    assert ACTION_NAMES == tuple(name for name, *_ in ACTIONS)
    assert FAULT_ACTIONS == {a.name for a in ACTION_TABLE if a.fault}
    assert ACTION_BY_NAME == {a.name: a for a in ACTION_TABLE}
    for cfg in CONFIGS.values():
        plan = model_next._plan(cfg)
        assert all(len(entry) == 5 for entry in plan)
        assert [e[:4] for e in plan] == [e for e in ACTIONS if e[0] in {p[0] for p in plan}]


def test_fault_actions_have_budgets():
    for name in FAULT_ACTIONS:
        assert ACTION_BY_NAME[name].budget is not None, name


def test_every_fault_bound_limits_some_action():
    limited = {a.budget for a in ACTION_TABLE if a.budget}
    assert limited == set(_BOUNDS) - {"max_time", "max_in_flight"}


@pytest.mark.parametrize("config", list(CONFIGS))
def test_fault_budgets_match_the_configuration_bounds(config):
    cfg = CONFIGS[config]
    budgets = fault_budgets(cfg)
    assert set(budgets) == {a.name for a in ACTION_TABLE if a.budget}
    for name, n in budgets.items():
        assert n == getattr(cfg, ACTION_BY_NAME[name].budget)
    # a budget of zero leaves the action out of the plan; a positive one keeps it (in its mode)
    planned = {name for name, *_ in model_next._plan(cfg)}
    for name, n in budgets.items():
        if ACTION_BY_NAME[name].mode in (cfg.mode, BOTH):
            assert (name in planned) == (n > 0), name


def _counter_of(cfg, bound):
    """The State field ``initial_state`` fills from the ModelConfig bound ``bound``."""
    base = model_next.initial_state(cfg)
    more = model_next.initial_state(replace(cfg, **{bound: getattr(cfg, bound) + 1}))
    diff = [f for f in base._fields if getattr(base, f) != getattr(more, f)]
    assert len(diff) == 1, (bound, diff)
    return diff[0]


@pytest.mark.parametrize("config", TINY)
def test_each_step_spends_exactly_its_own_budget(config):
    """The table's budget is the one the action really spends: a step of a budgeted action
    takes one from that bound's counter and no other; an unbudgeted step takes none."""
    cfg = CONFIGS[config]
    counters = {b: _counter_of(cfg, b) for b in {a.budget for a in ACTION_TABLE if a.budget}}
    for s, succ in _walk(cfg):
        for st, t in succ:
            spent = {b for b, c in counters.items() if getattr(t, c) != getattr(s, c)}
            budget = ACTION_BY_NAME[st.action].budget
            assert spent == ({budget} if budget else set()), st
            for b in spent:
                assert getattr(t, counters[b]) == getattr(s, counters[b]) - 1, st


def _every_argument(s, cfg, a):
    if a.arg == NONE_ARG:
        return [()]
    if a.arg == CLIENT_ARG:
        return [(c,) for c in range(len(cfg.clients))]
    if a.arg == NODE_ARG:
        return [(n,) for n in range(cfg.n_nodes)]
    return [(m,) for m in sorted(s.network)]


@pytest.mark.parametrize("config", TINY)
def test_what_the_plan_leaves_out_is_never_enabled(config):
    """``_plan`` prunes by the table's mode, role, budget, required flag and message kinds; in
    every reachable state, what it prunes is indeed not enabled, so pruning changes nothing.
    A message of a kind the action does not take is not a step at all: the kinds are the
    action's precondition, and ``step`` refuses another kind as malformed."""
    cfg = CONFIGS[config]
    design = Design()
    planned = {name: (kinds, set(args)) for name, _, _, kinds, args in model_next._plan(cfg)}
    for s, _ in _walk(cfg, bound=400):
        for a in ACTION_TABLE:
            for args in _every_argument(s, cfg, a):
                if a.arg == MSG_ARG and args[0].kind not in a.msg_kinds:
                    with pytest.raises(ValueError, match="takes a message of kind"):
                        model_next.step(s, cfg, design, Step(a.name, (tuple(args[0]),)))
                    continue
                if a.name in planned:
                    kinds, allowed = planned[a.name]
                    if a.arg == NODE_ARG and args[0] in allowed:
                        continue
                    if a.arg == MSG_ARG and args[0].kind in kinds:
                        continue
                    if a.arg in (NONE_ARG, CLIENT_ARG):
                        continue
                assert a.fn(s, cfg, design, *args) is None, (a.name, args)


# ---- the implementation's vocabulary ----------------------------------------------------------

def test_impl_steps_are_the_model_actions_in_the_same_order():
    assert impl_cluster.STEPS == ACTION_NAMES


def test_impl_faults_are_the_budgeted_actions_with_the_same_budgets():
    budgeted = {a.name: a.budget for a in ACTION_TABLE if a.budget}
    assert set(impl_cluster.FAULTS) == set(budgeted)
    # the implementation's budget names are the model's bounds without "max_", so actions that
    # share a bound in the model (the two elections) share a budget in the implementation
    for name, impl_budget in impl_cluster.FAULTS.items():
        assert "max_" + impl_budget == budgeted[name], name


@pytest.mark.parametrize("config", ["zk-forward-zombie", "kraft-listeners",
                                    "kraft-broker-registration"])
def test_impl_events_take_the_model_argument_kinds(config):
    from properties.conformance import new_cluster
    cfg = CONFIGS[config]
    cluster = new_cluster(cfg, 0)
    in_flight = [(m.id,) for m in cluster.network.in_flight()]
    for a in ACTION_TABLE:
        candidates = cluster._candidates(a.name)
        expected = {NONE_ARG: [()],
                    CLIENT_ARG: [(c.name,) for c in cfg.clients],
                    NODE_ARG: [(n,) for n in range(cfg.n_nodes)],
                    MSG_ARG: in_flight}[a.arg]
        assert sorted(candidates) == sorted(expected), a.name


# ---- variants and the configurations that catch them ------------------------------------------

def test_every_variant_config_exists_and_lists_it():
    for v in VARIANTS.values():
        assert v.config in CONFIGS, v.name
        assert CONFIGS[v.config].tier == "tiny", v.name
        assert v.name in CONFIGS[v.config].variants, v.name


def test_a_configuration_lists_exactly_the_variants_it_catches():
    for name, cfg in CONFIGS.items():
        assert cfg.variants == tuple(v.name for v in VARIANTS.values() if v.config == name)
    assert sorted(v for cfg in CONFIGS.values() for v in cfg.variants) == sorted(VARIANTS)
    assert "registration-no-recheck-after-success" in CONFIGS["kraft-registration"].variants
    assert all(not CONFIGS[c].variants for c in CONFIGS if CONFIGS[c].tier == "small")


def test_variants_is_not_a_field():
    """Derived, so a configuration cannot list a variant another configuration catches."""
    assert "variants" not in {f.name for f in fields(ModelConfig)}
    assert hash(CONFIGS["kraft-registration"])           # still a dict / lru_cache key

