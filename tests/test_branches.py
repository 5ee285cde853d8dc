"""Branch coverage of the model's steps (properties/branches.py, ``kipcheck branches``)."""
import importlib
import json
import sys

import pytest

from cli_helpers import one_line, run
from model.config import VARIANTS
from model.configs import TINY
from properties import branches
from properties.branches import (EXIT, Branch, Coverage, _analyse, audit, branch_points,
                                  explorations, load_reasons, measure, normalise,
                                  reachable_percent)
from properties.kafka_spec import KafkaSpec

SYNTHETIC = '''\
def with_else(x):
    if x > 0:
        return 1
    else:
        return 2


def without_else(x, out):
    if x:
        out.append(1)
    out.append(2)


def last(x, out):
    if x:
        out.append(1)


def pick(x):
    return "yes" if x else "no"
'''


@pytest.fixture
def synthetic(tmp_path, monkeypatch):
    (tmp_path / "synthetic_steps.py").write_text(SYNTHETIC)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("synthetic_steps")
    yield mod
    sys.modules.pop("synthetic_steps", None)


def _outcomes(branches):
    return [(b.function, b.line, b.outcome, b.kind) for b in branches]


def test_branch_points_of_a_synthetic_module(synthetic):
    assert _outcomes(branch_points(synthetic)) == [
        ("with_else", 2, "true", "if"), ("with_else", 2, "false", "if"),
        ("without_else", 9, "true", "if"), ("without_else", 9, "false", "if"),
        ("last", 15, "true", "if"), ("last", 15, "false", "if"),
        ("pick", 20, "true", "ifexp"), ("pick", 20, "false", "ifexp")]
    _, probes = _analyse(synthetic)
    by = {(b.line, b.outcome): p for b, p in probes.items()}
    assert by[(2, "false")].targets == {5}              # the else block's first statement
    assert by[(9, "false")].targets == {11}             # the statement after the if
    assert by[(15, "false")].targets == {EXIT}          # the function returns


def test_measure_tells_the_outcomes_apart(synthetic):
    """A fake spec whose exploration calls the synthetic steps with chosen arguments."""
    class Spec:
        def __init__(self, name, calls):
            self.name, self.calls = name, calls

    def fake_explore(spec, **_):
        for fn, args in spec.calls:
            fn(*args)
        return type("R", (), {"distinct": 1})()

    import properties.explore
    orig = properties.explore.explore
    properties.explore.explore = fake_explore
    try:
        cov = measure([Spec("a", [(synthetic.with_else, (1,)), (synthetic.without_else, (0, [])),
                                  (synthetic.last, (0, [])), (synthetic.pick, (1,))]),
                       Spec("b", [(synthetic.last, (1, []))])], synthetic)
    finally:
        properties.explore.explore = orig
    got = {(b.line, b.outcome) for b in cov.covered_set}
    assert got == {(2, "true"), (9, "false"), (15, "false"), (15, "true"), (20, "true")}
    assert {(b.line, b.outcome) for b in cov.unreached} == {(2, "false"), (9, "true"),
                                                            (20, "false")}
    last_true = next(b for b in cov.branches if (b.line, b.outcome) == (15, "true"))
    assert cov.reached_by(last_true) == ["b"]


def test_branch_points_of_the_model():
    points = branch_points()
    assert len(points) == len(set(points)) and len(points) % 2 == 0
    assert all(isinstance(b, Branch) and b.outcome in ("true", "false") for b in points)
    flag = [b for b in points if b.function == "_receive_envelope"
            and "d.reforward_forwarded and reply.how == REPLY_ENVELOPE" in b.text]
    assert [b.outcome for b in flag] == ["true", "false"]
    assert any(b.kind == "ifexp" for b in points) and any(b.kind == "elif" for b in points)


def _find(points, function, text, outcome):
    [b] = [b for b in points if b.function == function and text in b.text
           and b.outcome == outcome]
    return b


def test_zk_forward_zombie_reaches_known_branches_and_not_the_flag_branch():
    before = sys.gettrace()
    cov = measure([KafkaSpec.named("zk-forward-zombie"),
                   KafkaSpec.named("zk-forward-zombie", "reforward-forwarded")])
    assert sys.gettrace() is before                     # the tracer is removed
    points = cov.branches
    correct, variant = (cov.reached[n] for n in ("zk-forward-zombie[correct]",
                                                  "zk-forward-zombie[reforward-forwarded]"))
    zombie = _find(points, "controller_processes_event", "not node.zk_active", "true")
    assert zombie in correct
    flag = _find(points, "_receive_envelope", "d.reforward_forwarded and reply.how", "true")
    assert flag not in correct and flag in variant
    assert cov.reached_by(flag) == ["zk-forward-zombie[reforward-forwarded]"]
    assert 0 < cov.covered < cov.total and 0 < cov.percent < 100


def test_cli_prints_the_coverage(capsys):
    code, out, err = run(["branches", "--configs", "zk-forward-zombie", "--no-variants",
                          "--quiet"], capsys)
    assert code == 0, err
    assert "branch coverage of model/actions.py:" in out and "%)" in out
    flag = _find(branch_points(), "_receive_envelope", "d.reforward_forwarded and reply.how",
                 "true")
    assert f"  model/actions.py:{flag.line} in _receive_envelope: true  if d.reforward" in out
    # a recorded reason is printed under its outcome, on any selection
    holder = _find(branch_points(), "epoch_holder", "zk.epoch_holders[epoch]", "false")
    i = out.index(f"  model/actions.py:{holder.line} in epoch_holder: false")
    assert out[i:].splitlines()[1].startswith("      defensive: A write is recorded with")
    assert "NO RECORDED REASON" not in out          # flagged only on the standard measure
    assert "reasons are recorded for the standard measure" in out
    code, out, _ = run(["branches", "--configs", "zk-envelope-security", "--no-variants",
                        "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["total"] == len(branch_points()) and doc["unreached"]
    assert doc["standard"] is False
    assert any(row["reason"] and row["reason"]["kind"] == "defensive" for row in doc["unreached"])


def test_cli_unknown_configuration_is_bad_input(capsys):
    code, out, err = run(["branches", "--configs", "zk-forward-zombie,nope"], capsys)
    assert code == 2 and not out
    assert "unknown configuration 'nope'" in one_line(err)


# --------------------------------------------------------------------------------------------
# The recorded reasons of the outcomes the standard measure does not reach
# (properties/branches_unreached.toml)

def test_every_recorded_reason_names_an_outcome_of_the_model():
    reasons = load_reasons()
    assert reasons
    keys = {b.key for b in branch_points()}
    assert [r for r in reasons if r.key not in keys] == []
    assert all(r.reason and r.kind in ("defensive", "variant", "small") for r in reasons)
    assert all(r.reached_by for r in reasons if r.kind != "defensive")


def test_reasons_reached_elsewhere_are_reached_there():
    """A "variant" or "small" reason records the explorations that do reach its outcome:
    explore them and check (the cheap ones; a reason naming a small configuration is checked
    by the slow tier)."""
    reasons = [r for r in load_reasons() if r.reached_by]
    names = sorted({n for r in reasons for n in r.reached_by})
    cheap = [n for n in names if n.split("[")[0] in TINY]
    specs = [KafkaSpec.named(n.split("[")[0], n.split("[")[1].rstrip("]") or None)
             for n in cheap]
    cov = measure(specs)
    for r in reasons:
        for name in r.reached_by:
            if name in cheap:
                assert any(b.key == r.key for b in cov.reached[name]), (r.function, name)


def test_a_key_does_not_depend_on_line_numbers_or_spacing():
    a = Branch(10, "true", "f", "if", "if  x and\ty:")
    b = Branch(99, "true", "f", "if", "if x and y:")
    assert a.key == b.key == ("f", "true", normalise("if x   and y:"))


SYNTHETIC_REASONS = """
[[unreached]]
function = "with_else"
outcome = "false"
text = "if x > 0:"
kind = "defensive"
reason = "callers pass positive numbers"

[[unreached]]
function = "last"
outcome = "true"
text = "if x:"
kind = "defensive"
reason = "stale: the measure reaches it"

[[unreached]]
function = "gone"
outcome = "true"
text = "if nothing:"
kind = "defensive"
reason = "stale: no such branch"
"""


def test_audit_sorts_unreached_outcomes_into_explained_unexplained_and_stale(synthetic):
    points = branch_points(synthetic)
    by = {(b.function, b.outcome): b for b in points}
    reached = {by[("with_else", "true")], by[("last", "true")], by[("last", "false")],
               by[("without_else", "true")], by[("without_else", "false")],
               by[("pick", "true")]}
    cov = Coverage(tuple(points), {"x[correct]": frozenset(reached)})
    au = audit(cov, load_reasons(SYNTHETIC_REASONS))
    assert {b.function for b in au.explained} == {"with_else"}
    assert [(b.function, b.outcome) for b in au.unexplained] == [("pick", "false")]
    assert sorted((r.function, why) for r, why in au.stale) == [
        ("gone", "names no branch outcome of the module"), ("last", "the outcome is reached")]
    assert not au.ok
    assert reachable_percent(cov, au) == pytest.approx(100 * 6 / 7)


@pytest.mark.parametrize("text, message", [
    ('[[unreached]]\nfunction = "f"\noutcome = "true"\ntext = "if x:"\nkind = "defensive"\n',
     "entry 1: missing reason"),
    ('[[unreached]]\nfunction = "f"\noutcome = "maybe"\ntext = "if x:"\nkind = "defensive"\n'
     'reason = "r"\n', "outcome must be true or false"),
    ('[[unreached]]\nfunction = "f"\noutcome = "true"\ntext = "if x:"\nkind = "other"\n'
     'reason = "r"\n', "kind must be one of"),
    ('[[unreached]]\nfunction = "f"\noutcome = "true"\ntext = "if x:"\nkind = "defensive"\n'
     'reason = "r"\nline = 3\n', "unknown field line"),
    ('x = = 1', "branches_unreached.toml"),
])
def test_malformed_reasons_are_one_line_errors(text, message):
    with pytest.raises(branches.ReasonsError, match=message):
        load_reasons(text)


def _fake_measure(monkeypatch, unreached_keys):
    """``kipcheck branches`` on the standard measure, with a measure that reaches every
    outcome but those with the given keys (no exploration)."""
    points = tuple(branch_points())

    def fake(specs, module=None, **_):
        got = frozenset(b for b in points if b.key not in unreached_keys)
        return Coverage(points, {s.name: got for s in specs[:1]})
    monkeypatch.setattr(branches, "measure", fake)


def test_cli_standard_measure_exit_code_follows_the_reasons(capsys, monkeypatch):
    recorded = {r.key for r in load_reasons()}
    _fake_measure(monkeypatch, recorded)
    code, out, err = run(["branches", "--quiet"], capsys)
    assert code == 0, out + err
    assert "every unreached outcome has a recorded reason" in out
    assert "without the" in out and "recorded as defensive" in out

    extra = _find(branch_points(), "client_sends_request", "if not node.alive:", "true")
    _fake_measure(monkeypatch, recorded | {extra.key})
    code, out, _ = run(["branches", "--quiet"], capsys)
    assert code == 1
    i = out.index(f"  model/actions.py:{extra.line} in client_sends_request: true")
    assert "NO RECORDED REASON" in out[i:].splitlines()[1]
    assert "1 unreached outcome(s) without a recorded reason, 0 stale reason(s)" in out

    stale = sorted(recorded)[0]
    _fake_measure(monkeypatch, recorded - {stale})
    code, out, _ = run(["branches", "--quiet", "--json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["standard"] and doc["without_reason"] == 0
    assert [(r["function"], r["why"]) for r in doc["stale_reasons"]] == [
        (stale[0], "the outcome is reached")]


# What each tiny configuration added for branch coverage is there for: (function, a fragment of
# the test's source line, outcome) it must reach under the correct design.
ADDED_FOR = {
    "zk-controller-crash": [
        ("_close_connection", "if reply.how == REPLY_CLIENT:", "false"),
        ("_close_connection", "if not node.alive or not inflight", "true"),
        ("_close_connection", "if not node.alive or not inflight", "false"),
        ("_receive_envelope", "if not cfg.zk_forwarding or", "true"),
        ("client_sends_request", "if not node.alive:", "true"),
        ("node_crashes", "if spec.node == n and _waiting(s, c):", "true"),
        ("node_restarts", "s.zk.controller == n and not node.session_expired", "true")],
    "kraft-misconfigured": [
        ("_receive_envelope", "if not sender_ca:", "true"),
        ("_receive_envelope", "if not cfg.nodes[r].principal_serde:", "true"),
        ("_send_reply", "code = env_err if env_err else inner_err", "true"),
        ("_node_handles_describe_cluster", "if metadata_version(s, n)", "true"),
        ("_node_handles_describe_cluster", "if spec.endpoint_type not in", "true"),
        ("client_sends_request", "if cfg.nodes[n].role == BROKER:", "false"),
        ("_controller_handles_client_mutation", "if not cfg.allows(", "true"),
        ("channel_sends_request", "if len(s.network) >= cfg.max_in_flight:", "true"),
        ("controller_handles_registration", "kafka.CLUSTER_ACTION", "true"),
        ("controller_handles_registration_response", "if m.error != kafka.NONE:", "true")],
    "kraft-registration-leader-change": [
        ("controller_becomes_leader", "if old != NO_NODE and s.nodes[old].alive:", "false"),
        ("controller_handles_registration", "if q.leader != r:", "true"),
        ("controller_handles_registration_response", "if m.error == kafka.NOT_CONTROLLER:",
         "true")],
}


def test_configurations_added_for_coverage_reach_their_outcomes():
    cov = measure([KafkaSpec.named(name) for name in ADDED_FOR])
    points = cov.branches
    for name, wanted in ADDED_FOR.items():
        got = cov.reached[f"{name}[correct]"]
        for function, text, outcome in wanted:
            # a line may occur twice in a function (ZK and KRaft sides): one must be reached
            found = [b for b in points if b.function == function and text in b.text
                     and b.outcome == outcome]
            assert found and any(b in got for b in found), (name, function, text, outcome)


# What each variant's extra homes (Variant.extra_homes) are there for: (configuration,
# function, a fragment of the test's source line, outcome) that the variant must reach there
# and reaches on no configuration of the standard measure otherwise.
EXTRA_HOME_FOR = {
    "ack-before-commit": [
        ("zk-forward-zombie", "_controller_accepts_mutation", "if acked:", "true"),
        ("zk-forward-zombie", "controller_processes_event",
         "return s if event.acked else _send_reply(", "true"),
        ("zk-forward-zombie", "controller_processes_event",
         "return s if event.acked else _reply_not_controller(", "true")],
    "brokers-write-zk": [
        ("zk-envelope-security", "_broker_writes_zk", "if not cfg.allows(", "true")],
}


def test_extra_homes_are_other_tiny_configurations_and_reach_their_outcomes():
    extra = {v.name: v.extra_homes for v in VARIANTS.values() if v.extra_homes}
    assert extra == {name: tuple(sorted({c for c, *_ in rows}))
                     for name, rows in EXTRA_HOME_FOR.items()}
    for name, homes in extra.items():
        assert all(c in TINY and c != VARIANTS[name].config for c in homes), name
    assert (("zk-forward-zombie", "ack-before-commit") in explorations(TINY)
            and ("zk-forward-zombie", "ack-before-commit") not in explorations(TINY, False))
    cov = measure([KafkaSpec.named(c, name) for name, rows in EXTRA_HOME_FOR.items()
                   for c in sorted({c for c, *_ in rows})])
    points = cov.branches
    for name, rows in EXTRA_HOME_FOR.items():
        for config, function, text, outcome in rows:
            found = [b for b in points if b.function == function and text in b.text
                     and b.outcome == outcome]
            # a line may occur twice in a function (a zombie's event, a fenced write): all are
            assert found and all(b in cov.reached[f"{config}[{name}]"] for b in found), (
                name, config, function, text)


def test_cli_names_the_explorations_of_an_outcome_only_a_variant_reaches(capsys, monkeypatch):
    points = tuple(branch_points())
    flag = _find(points, "_broker_writes_zk", "if not cfg.allows(", "true")

    def fake(specs, module=None, **_):
        base = frozenset(points[:10])
        return Coverage(points, {"zk-envelope-security[correct]": base,
                                 "zk-envelope-security[brokers-write-zk]": base | {flag}})
    monkeypatch.setattr(branches, "measure", fake)
    code, out, err = run(["branches", "--configs", "zk-envelope-security", "--quiet"], capsys)
    assert code == 0, err
    assert "reached only under a design variant (1):" in out
    i = out.index(f"  model/actions.py:{flag.line} in _broker_writes_zk: true")
    assert out[i:].splitlines()[1] == "      by zk-envelope-security[brokers-write-zk]"


# --------------------------------------------------------------------------------------------
# The standard measure itself (every tiny configuration, every variant on its home and its
# extra homes: about three minutes of one process, so in the slow tier)

# Raw coverage the standard measure must keep, and coverage of the outcomes not recorded as
# defensive (docs/model.md, "Branch coverage").
MIN_PERCENT = 98.0
MIN_REACHABLE_PERCENT = 98.0


@pytest.fixture(scope="module")
def standard():
    cov = measure([KafkaSpec.named(c, v) for c, v in explorations(TINY)])
    return cov, audit(cov, load_reasons())


@pytest.mark.slow
def test_standard_measure_reaches_the_target(standard):
    cov, au = standard
    assert cov.percent >= MIN_PERCENT, f"{cov.covered}/{cov.total}"
    assert reachable_percent(cov, au) >= MIN_REACHABLE_PERCENT


@pytest.mark.slow
def test_every_unreached_outcome_has_a_reason_and_no_reason_is_stale(standard):
    _, au = standard
    assert [b.where() for b in au.unexplained] == []
    assert [(r.function, r.outcome, r.text, why) for r, why in au.stale] == []
