"""Counterexamples read in Kafka's words: every step of every configuration is one sentence,
actor first, with its arguments named (no raw tuples, no bare action names), the same every
time; a violation lists the violating state's facts that its clause is about."""
import re
from collections import deque
from functools import cache

import pytest

from model import next as model_next
from model.config import VARIANTS, design_for
from model.configs import CONFIGS, TINY
from model.describe import _STEPS, FIELDS, describe_fields, describe_step, describe_trace
from model.state import ENVELOPE_REQUEST, REGISTRATION_REQUEST, message
from model.step import Step
from properties import registry
from properties.explore import explore
from properties.kafka_spec import KafkaSpec

# states expanded per (configuration, design): small enough for CI on a shared machine; the
# coverage test below walks further until every action of Next has been met
TINY_BOUND = 300
SMALL_BOUND = 100
COVERAGE_BOUND = 1500

RAW = [
    (re.compile(r"\(\s*-?\d"), "a parenthesis opening on a number (a tuple)"),
    (re.compile(r"[\[\]{}]"), "a bracket (a list, set or dict)"),
    (re.compile(r"\b(True|False|None)\b"), "a Python constant"),
    (re.compile(r"\b(Msg|Step|Item|Record|Reply|Event|Response|Write|Channel|ForwardItem|"
                r"RegistrationItem|EnvelopeRequest|EnvelopeResponse|ControllerRegistrationRequest|"
                r"ControllerRegistrationResponse|FeatureLevelRecord|RegisterControllerRecord|"
                r"MutationRecord)\("),
     "a record's repr"),
    (re.compile(r"\b(?!t=)\w+="), "a keyword argument"),
]


def raw_reprs(text: str) -> list:
    return [why for pattern, why in RAW if pattern.search(text)]


def _named(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def expected_actor(cfg, st: Step, before) -> str:
    """Who the sentence must start with."""
    arg = st.args[0] if st.args else None
    if st.action == "client_sends_request":
        return cfg.clients[arg].name
    if st.action in ("zk_expires_session", "zk_creates_broker_znode"):
        return "ZooKeeper"
    if st.action in ("operator_updates_listeners", "operator_bumps_ibp"):
        return "An operator"
    if st.action == "network_drops_message":
        return "The network"
    if st.action == "clock_ticks":
        return "Time"
    if st.action in ("controller_commits_records", "controller_fences_stale_broker"):
        if before is None:
            return "The active controller"
        return cfg.nodes[before.quorum.leader].name
    if isinstance(arg, tuple):
        return cfg.nodes[message(arg).dst].name
    return cfg.nodes[arg].name


def check(cfg, st: Step, text: str, before=None) -> None:
    where = f"{cfg.name}: {st}: {text!r}"
    assert text and "\n" not in text, where
    assert not raw_reprs(text), (raw_reprs(text), where)
    bare = st.action.replace("_", " ")
    assert text.strip().lower() != bare, where
    assert bare not in text.lower() and st.action not in text, where
    assert text.startswith(expected_actor(cfg, st, before)), where
    named = [n.name for n in cfg.nodes if _named(text, n.name)]
    if before is not None or st.args:
        assert named, f"no node named in {where}"
    if isinstance(st.args[0] if st.args else None, tuple):
        m = message(st.args[0])
        # both ends of a message are named
        assert _named(text, cfg.nodes[m.src].name) and _named(text, cfg.nodes[m.dst].name), where
        if m.kind in (ENVELOPE_REQUEST,):
            assert _named(text, cfg.clients[m.client].name), where
        if m.kind == REGISTRATION_REQUEST:
            assert f"incarnation_id {m.incarnation_id}" in text, where


def walk(cfg, design, bound):
    """(before, step, after) for the transitions of the first ``bound`` states, breadth-first."""
    s0 = model_next.initial_state(cfg)
    seen, queue, expanded = {s0}, deque([s0]), 0
    while queue and expanded < bound:
        s = queue.popleft()
        expanded += 1
        for st, t in model_next.successors(s, cfg, design):
            yield s, st, t
            if t not in seen:
                seen.add(t)
                queue.append(t)


def _designs(cfg):
    return [("correct", design_for(None))] + [(v, design_for(v)) for v in cfg.variants]


CASES = [(name, variant) for name in CONFIGS for variant, _ in _designs(CONFIGS[name])]


def _bound(config):
    return TINY_BOUND if config in TINY else SMALL_BOUND


@pytest.mark.parametrize("config, variant", CASES)
def test_every_reachable_step_reads_in_kafka_words(config, variant):
    cfg = CONFIGS[config]
    design = design_for(variant)
    stateless = {}
    for before, st, after in walk(cfg, design, _bound(config)):
        text = describe_step(cfg, st, before, after)
        # the sentence came from the states, not from the fallback for a mismatched state
        arg = st.args[0] if st.args else None
        assert text == _STEPS[st.action](cfg, arg, before, after)
        check(cfg, st, text, before)
        assert describe_step(cfg, st, before, after) == text            # stable
        if st not in stateless:
            stateless[st] = describe_step(cfg, st)
            check(cfg, st, stateless[st])


def test_every_action_of_next_is_described():
    """Every action of the Next relation is met and described in some configuration; some
    are met only deep in a walk (a stale response nobody waits for: reforward-forwarded), so
    the walks go on until each action has been seen."""
    missing = set(model_next.ACTION_NAMES)
    for config, variant in sorted(CASES, key=lambda case: case[1] == "correct"):
        cfg = CONFIGS[config]
        for before, st, after in walk(cfg, design_for(variant), COVERAGE_BOUND):
            if st.action in missing:
                check(cfg, st, describe_step(cfg, st, before, after), before)
                check(cfg, st, describe_step(cfg, st))
                missing.discard(st.action)
                if not missing:
                    return
    assert not missing, f"never reached: {sorted(missing)}"


def test_descriptions_are_the_same_in_another_process(tmp_path):
    """Nothing in a description depends on the process (set order, hashes)."""
    import subprocess
    import sys
    code = ("from model.config import design_for\n"
            "from model.configs import CONFIGS\n"
            "from tests.test_describe import walk\n"
            "from model.describe import describe_step\n"
            "for name in ('zk-forward-zombie', 'kraft-listeners'):\n"
            "    cfg = CONFIGS[name]\n"
            "    for b, st, a in walk(cfg, design_for(None), 60):\n"
            "        print(describe_step(cfg, st, b, a))\n")
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    runs = [subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                           text=True, check=True, env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout
            for seed in ("1", "2")]
    assert runs[0] == runs[1] and runs[0].count("\n") > 100


@cache
def _explored(config, variant):
    return explore(KafkaSpec.named(config, variant))


def test_step_says_what_it_found_and_did():
    """With the states around it a step names what the arguments alone cannot: the
    controller discovered, the epoch won, the write fenced or not, the record committed."""
    spec = KafkaSpec.named("zk-forward-zombie", "zombie-writes-unfenced")
    result = _explored(spec.cfg.name, spec.variant)
    texts = describe_trace(spec.cfg, spec.design, result.trace)
    # the shortest trace's interleaving of the expiry, the election and the envelope may vary
    # (equally short traces are found in the order of the states' fingerprints)
    assert any(t in ("B2's controller channel learns from its metadata cache that B1 is the "
                     "active controller (epoch 1)",
                     "B2's controller channel learns from its metadata cache that B1 is the "
                     "active controller, which is stale: no broker holds /controller")
               for t in texts)
    assert any(t.startswith("ZooKeeper expires B1's session (B1 keeps running") for t in texts)
    assert any(t.startswith(("B1 (controller of epoch 1; its ZooKeeper session has expired) "
                             "handles B2's EnvelopeRequest on INTERNAL carrying A1's "
                             "CreateTopics v7",
                             "B1 (controller of epoch 1) handles B2's EnvelopeRequest on "
                             "INTERNAL carrying A1's CreateTopics v7")) for t in texts)
    assert any("sets /controller_epoch to epoch 2, zkVersion 2" in t for t in texts)
    assert "lands in ZooKeeper without the CheckOp" in texts[-1]
    correct = KafkaSpec.named("zk-forward-zombie")
    states = model_next.replay(correct.cfg, correct.design, result.trace)
    fenced = describe_step(correct.cfg, result.trace[-1], states[-2], states[-1])
    assert "fails with BADVERSION" in fenced and "B1 resigns" in fenced
    reg = KafkaSpec.named("kraft-registration")
    steps = [Step("node_replays_record", (1,)), Step("controller_sends_registration", (1,)),
             Step("channel_discovers_controller", (1,)), Step("channel_sends_request", (1,))]
    states = model_next.replay(reg.cfg, reg.design, steps)
    (m,) = states[-1].network
    steps += [Step("controller_handles_registration", (tuple(m),)),
              Step("controller_commits_records", ())]
    texts = describe_trace(reg.cfg, reg.design, steps)
    assert texts[-1].startswith("C1 (active controller, epoch 1) commits a "
                                "RegisterControllerRecord for C2 with incarnation_id 0")


def test_describe_trace_matches_describe_step_and_survives_a_bad_step():
    spec = KafkaSpec.named("kraft-forward-leader-change", "versions-not-intersected")
    steps = list(_explored(spec.cfg.name, spec.variant).trace)
    states = model_next.replay(spec.cfg, spec.design, steps)
    texts = describe_trace(spec.cfg, spec.design, steps)
    assert texts == [describe_step(spec.cfg, st, b, a)
                     for st, b, a in zip(steps, states, states[1:], strict=False)]
    assert "supports the forwardable APIs up to v5" in texts[-1]
    # a step that is not enabled: it and the rest are described by their arguments alone
    bad = steps[:1] + [Step("node_restarts", (0,))] + steps[1:2]
    texts = describe_trace(spec.cfg, spec.design, bad)
    assert texts[1] == describe_step(spec.cfg, bad[1])
    assert texts[2] == describe_step(spec.cfg, bad[2])
    # an unknown action or malformed arguments never raise
    cfg = spec.cfg
    assert "unknown" in describe_step(cfg, Step("no_such_action", (0,)))
    assert "malformed" in describe_step(cfg, Step("controller_handles_envelope", ((0, 1),)))


# ------------------------------------------------------------------------------------------
# describe_violation


def test_every_clause_has_relevant_fields():
    clauses = {c.name for p in registry.PROPERTIES for c in p.clauses}
    assert set(registry.RELEVANT_FIELDS) == clauses
    for name, fields in registry.RELEVANT_FIELDS.items():
        assert fields and set(fields) <= set(FIELDS), name


@pytest.mark.parametrize("config", TINY)
def test_every_field_renders_on_a_reachable_state(config):
    cfg = CONFIGS[config]
    design = design_for(None)
    for _, st, after in walk(cfg, design, 40):
        for line in describe_fields(cfg, design, after, FIELDS):
            assert line and not raw_reprs(line), (config, st, line)


# an accepted miss has no violating state to describe
@pytest.mark.parametrize("name", [n for n, v in VARIANTS.items() if v.must_be_caught
                                  and set(v.breaks) & set(registry.PROPERTY_IDS)])
def test_violation_lists_the_relevant_fields(name):
    v = VARIANTS[name]
    spec = KafkaSpec.named(v.config, name)
    result = _explored(v.config, name)
    end = result.violating_state
    assert end is not None, (
        f"{name} lists a property among the ones it breaks ({', '.join(v.breaks)}), but only "
        f"the whole-graph check {result.graph_violation} catches it: list what catches it")
    pid, clause = spec.clause_violated(end)
    lines = registry.describe_violation(spec.cfg, spec.design, end, pid, clause)
    assert lines
    for line in lines:
        assert not raw_reprs(line), (name, line)
    assert any(_named(line, n.name) for line in lines for n in spec.cfg.nodes), lines
    # all the property's clauses when no clause is given
    assert set(lines) <= set(registry.describe_violation(spec.cfg, spec.design, end, pid))


def test_violation_fields_say_what_the_clause_is_about():
    def lines(config, variant):
        spec = KafkaSpec.named(config, variant)
        end = _explored(config, variant).violating_state
        pid, clause = spec.clause_violated(end)
        return "\n".join(registry.describe_violation(spec.cfg, spec.design, end, pid, clause))

    p1 = lines("zk-forward-zombie", "zombie-writes-unfenced")
    assert ("ZooKeeper write 1: A1's CreateTopics, written by B1 as controller of epoch 1 while "
            "/controller_epoch was epoch 2: not the current epoch") in p1
    assert "B2 holds /controller; /controller_epoch is epoch 2 at zkVersion 2" in p1
    p3 = lines("kraft-registration", "registration-no-recheck-after-success")
    assert ("C2 runs incarnation 1; the committed log's last RegisterControllerRecord for C2 "
            "carries incarnation_id 0") in p3
    assert "C2's ControllerRegistrationManager does not believe it is registered" in p3
    p5 = lines("kraft-listeners", "metadata-all-listeners")
    assert "D1 asked B1 on CLIENT for broker endpoints" in p5
    assert "B2's INTERNAL endpoint" in p5
    p7 = lines("zk-envelope-security", "leak-envelope-error")
    assert "it got CLUSTER_AUTHORIZATION_FAILED, from the envelope error" in p7
    with pytest.raises(KeyError):
        describe_fields(CONFIGS["zk-forward-zombie"], design_for(None),
                        model_next.initial_state(CONFIGS["zk-forward-zombie"]), ["nope"])


def test_a_clause_without_relevant_fields_does_not_lose_the_trace(monkeypatch):
    """A clause added without its RELEVANT_FIELDS entry: describing its violation lists no
    facts instead of raising KeyError after the explorer found the violation."""
    cfg = CONFIGS["kraft-registration"]
    state = model_next.initial_state(cfg)
    name = "registered-only-if-log-agrees"
    assert registry.describe_violation(cfg, design_for(None), state, "P3", name)
    monkeypatch.delitem(registry.RELEVANT_FIELDS, name)
    assert registry.describe_violation(cfg, design_for(None), state, "P3", name) == []
