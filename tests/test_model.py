"""The model's own rules: standard library only, impl/ independent of model/, pure and
deterministic steps, stable fingerprints across processes, well-formed configurations."""
import ast
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from model import next as model_next
from model.config import Design, ModelConfig
from model.configs import CONFIGS, TINY
from model.step import Step

ROOT = Path(__file__).resolve().parent.parent


def imports_of(package):
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {(path.name, a.name.split(".")[0]) for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                found.add((path.name, node.module.split(".")[0]))
    return found


def test_model_imports_only_the_standard_library():
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    bad = [(f, m) for f, m in imports_of("model") if m not in stdlib and m != "model"]
    assert not bad


def test_impl_does_not_import_model():
    bad = [(f, m) for f, m in imports_of("impl") if m in {"model", "properties", "kipcheck"}]
    assert not bad


def bfs_fingerprints(name, limit=300):
    cfg = CONFIGS[name]
    d = Design()
    frontier = [model_next.initial_state(cfg)]
    out = []
    while frontier and len(out) < limit:
        s = frontier.pop(0)
        out.append(hash(s))
        frontier.extend(t for _, t in model_next.successors(s, cfg, d))
    return out


def test_fingerprints_are_the_same_in_another_process():
    """hash(state) is the fingerprint: it must not depend on the process (no str, no None)."""
    here = {name: bfs_fingerprints(name) for name in TINY}
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); from tests.test_model "
            "import bfs_fingerprints; from model.configs import TINY; "
            "print(json.dumps({n: bfs_fingerprints(n) for n in TINY}))")
    import json
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={"PYTHONHASHSEED": "12345", "PATH": ""}, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == here


def test_successors_are_deterministic_and_step_replays_them():
    for name in TINY:
        cfg = CONFIGS[name]
        s = model_next.initial_state(cfg)
        for _ in range(6):
            succ = model_next.successors(s, cfg, Design())
            assert succ == model_next.successors(s, cfg, Design())
            for st, t in succ:
                again = model_next.step(s, cfg, Design(), Step.from_json(st.to_json()))
                assert again == t
            s = succ[-1][1] if succ else s


def test_step_rejects_unknown_actions_and_bad_arguments():
    cfg = CONFIGS["zk-forward-zombie"]
    s = model_next.initial_state(cfg)
    with pytest.raises(ValueError, match="unknown action"):
        model_next.step(s, cfg, Design(), Step("teleport", ()))
    with pytest.raises(ValueError, match="out of range"):
        model_next.step(s, cfg, Design(), Step("node_crashes", (9,)))
    with pytest.raises(ValueError, match="takes a message"):
        model_next.step(s, cfg, Design(), Step("controller_handles_envelope", ((1, 2),)))
    assert model_next.step(s, cfg, Design(), Step("controller_processes_event", (0,))) is None


def test_step_checks_a_message_step_for_the_actions():
    """A message action is given only a message of a kind it takes that is in the network:
    ``step`` checks both (the actions do not), as ``successors`` ensures by construction."""
    from model.state import ENVELOPE_REQUEST, ENVELOPE_RESPONSE
    cfg = CONFIGS["zk-forward-zombie"]
    s = model_next.initial_state(cfg)
    s = model_next.step(s, cfg, Design(), Step("client_sends_request", (0,)))
    while not s.network:                # A1 is on B2, which forwards it to B1
        [(_, s)] = [(st, t) for st, t in model_next.successors(s, cfg, Design())
                    if st.action.startswith(("broker_learns", "channel_"))][:1]
    [m] = s.network
    assert m.kind == ENVELOPE_REQUEST
    handled = model_next.step(s, cfg, Design(), Step("controller_handles_envelope", (tuple(m),)))
    assert handled is not None and m not in handled.network
    # the same message as another action's: a kind it does not take
    for action in ("broker_handles_envelope_response", "node_discards_stale_response",
                   "controller_handles_registration"):
        with pytest.raises(ValueError, match=f"{action} takes a message of kind .*got kind "
                                             f"EnvelopeRequest"):
            model_next.step(s, cfg, Design(), Step(action, (tuple(m),)))
    # a message that is not (or no longer) in the network: not enabled
    gone = Step("controller_handles_envelope", (tuple(m),))
    assert model_next.step(handled, cfg, Design(), gone) is None
    answer = m._replace(kind=ENVELOPE_RESPONSE, src=m.dst, dst=m.src)
    assert model_next.step(s, cfg, Design(),
                           Step("broker_handles_envelope_response", (tuple(answer),))) is None
    with pytest.raises(ValueError, match="is not enabled: its message is not in the network"):
        model_next.replay(cfg, Design(), [Step("controller_handles_envelope", (tuple(m),))])


def test_configuration_validation():
    cfg = CONFIGS["kraft-forward-leader-change"]
    with pytest.raises(ValueError, match="not interchangeable"):
        replace(cfg, symmetric_groups=((0, 1),)).validate()
    with pytest.raises(ValueError, match="mode"):
        replace(cfg, mode="raft").validate()
    with pytest.raises(ValueError, match="no listener"):
        replace(cfg, clients=(replace(cfg.clients[0], listener="NOPE"),)).validate()
    with pytest.raises(ValueError, match="max_time"):
        replace(cfg, max_time=-1).validate()
    for c in CONFIGS.values():
        c.validate()
        assert isinstance(c, ModelConfig)


def test_actions_are_pure():
    """Applying a step never changes the state it was applied to (frozen records)."""
    cfg = CONFIGS["kraft-registration"]
    s = model_next.initial_state(cfg)
    snapshot = repr(s)
    for _, t in model_next.successors(s, cfg, Design()):
        model_next.successors(t, cfg, Design())
    assert repr(s) == snapshot


def test_fast_replace_matches_namedtuple_replace():
    from model.state import Node, Quorum, State, Zk, replace as fast_replace
    node = Node(known_controller=3, replayed=2)
    for changes in ({}, {"alive": False}, {"replayed": 5, "pending_rpc": True}):
        a, b = fast_replace(node, **changes), node._replace(**changes)
        assert a == b and type(a) is Node and hash(a) == hash(b)
    assert fast_replace(Quorum(), leader=1) == Quorum(leader=1)
    assert type(fast_replace(Zk(), epoch=2)) is Zk
    moved = fast_replace(node, replayed=7)
    assert hash(moved) == hash(Node(known_controller=3, replayed=7)) != hash(node)
    with pytest.raises(TypeError, match="no field 'bogus'"):
        fast_replace(node, bogus=1)
    with pytest.raises(TypeError, match="no field '_hash'"):
        fast_replace(node, replayed=1, _hash=1)
    s = model_next.initial_state(CONFIGS["kraft-registration"])
    assert type(fast_replace(s, now=1)) is State and fast_replace(s, now=1).now == 1


def test_state_records_hash_as_the_tuple_of_their_fields():
    """A state record hashes (and so fingerprints) as the tuple of its field values, and
    survives a pickle round trip (the parallel explorer's workers send states)."""
    import pickle

    from model.state import Node, Quorum, State, Zk
    seen = 0
    for name in TINY:
        cfg = CONFIGS[name]
        frontier = [model_next.initial_state(cfg)]
        for _ in range(40):
            if not frontier:
                break
            s = frontier.pop(0)
            back = pickle.loads(pickle.dumps(s))
            assert back == s and hash(back) == hash(s) and type(back) is State
            for rec in (s, s.zk, s.quorum) + s.nodes:
                assert type(rec) in (Node, Quorum, State, Zk)
                assert hash(rec) == hash(tuple(getattr(rec, f) for f in rec._fields))
                seen += 1
            frontier.extend(t for _, t in model_next.successors(s, cfg, Design()))
    assert seen > 1000


def test_each_kind_names_its_own_fields_in_the_same_positions():
    """Every kind of message, record and channel item is its own record with its own field
    names, in the positions every kind of its family shares: ``message``/``record``/``item``
    rebuild the kind from a tuple, a record equals and hashes as its tuple (so a state's
    fingerprint does not depend on the names), and anything else is refused."""
    from model.state import (ITEM_TYPES, MSG_ARITY, MSG_TYPES, RECORD_TYPES, item, message,
                             record)
    for build, kinds in ((message, MSG_TYPES), (record, RECORD_TYPES), (item, ITEM_TYPES)):
        widths = {len(cls._fields) for cls in kinds.values()}
        assert len(widths) == 1, kinds
        width = widths.pop()
        for kind, cls in kinds.items():
            t = (kind,) + tuple(range(1, width))
            rebuilt = build(t)
            assert type(rebuilt) is cls and rebuilt == t and hash(rebuilt) == hash(t)
        with pytest.raises(ValueError):
            build((max(kinds) + 1,) + (0,) * (width - 1))
        with pytest.raises(ValueError):
            build((0,) * (width + 1))
    assert MSG_ARITY == len(next(iter(MSG_TYPES.values()))._fields)
    # the kinds' own names, not one generic name with a meaning per kind
    assert message((2, 1, 0, 0, 1, 3, 0, 1)).incarnation_id == 3
    assert message((0, 1, 0, 1, 4, 7, 1, 1)).client == 4
    assert record((1, 1, 2, 1, 0, False, True, 0, 0, 0)).controller_id == 1
    assert record((3, 1, 0, 1, 0, False, True, 5, 1, -1)).broker_epoch == 5
    assert record((4, 1, 5, 1, 0, False, True, -1, 0, 0)).fenced == -1
    assert message((6, 1, 0, 0, 2, 5, 7, 1)).metadata_offset == 7
    assert message((7, 0, 1, 0, 2, 77, 1, 5)).registered_epoch == 5
    assert item((0, 5, 0, False, 1, -1)).client == 5
