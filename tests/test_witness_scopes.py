"""Every witness's declared scope (registry.Witness.steps) holds on the tiny configurations:
a state predicate gives the same answer without the step and its source state, and a witness
that names actions is never seen on a step of another action.  The explorer relies on both:
it checks state predicates once per distinct state and the others only on the steps they name
(properties.spec.witness_scopes)."""
from __future__ import annotations

from collections import deque

import pytest

from model.configs import CONFIGS
from properties import registry
from properties.kafka_spec import KafkaSpec
from properties.spec import seen_on_step, witness_scopes

TINY = tuple(name for name, c in CONFIGS.items() if c.tier == "tiny")
LIMIT = 4000        # states per configuration (breadth-first from the initial state)


def _transitions(spec, limit):
    init = spec.initial_states()[0]
    seen = {init}
    todo = deque([init])
    n = 0
    while todo and n < limit:
        s = todo.popleft()
        n += 1
        for st, t in spec.successors(s):
            yield s, st, t
            if t not in seen:
                seen.add(t)
                todo.append(t)


@pytest.mark.parametrize("name", TINY)
def test_witness_scopes_hold(name):
    spec = KafkaSpec.named(name)
    scopes = witness_scopes(spec)
    cfg = spec.cfg
    checked = {w: 0 for w in cfg.witnesses}
    for p, st, s in _transitions(spec, LIMIT):
        for w in cfg.witnesses:
            seen = registry.WITNESSES[w].seen
            if scopes[w] == ():
                assert seen(p, st, s, cfg) == seen(None, None, s, cfg), (w, st)
                checked[w] += 1
            elif not seen_on_step(scopes[w], st.action):
                assert not seen(p, st, s, cfg), (w, st)
                checked[w] += 1
    assert all(checked.values()), checked


def test_step_scopes_name_actions():
    """A witness that reads the step names at least one action of the model, and only those."""
    from model.next import ACTION_NAMES
    step_scoped = [w for w in registry.WITNESSES.values() if w.steps]
    assert step_scoped
    for w in step_scoped:
        assert set(w.steps) <= set(ACTION_NAMES), w.id


def test_unknown_spec_is_looked_for_on_every_transition():
    class Bare:
        def witness_ids(self):
            return ("a",)
    assert witness_scopes(Bare()) == {"a": None}
    assert seen_on_step(None, "anything") and not seen_on_step((), "anything")
    assert seen_on_step(("x",), "x") and not seen_on_step(("x",), "y")
