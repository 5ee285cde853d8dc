"""Branch coverage of the model's steps (properties/branches.py, ``kipcheck branches``)."""
import importlib
import json
import sys

import pytest

from cli_helpers import one_line, run
from properties.branches import EXIT, Branch, _analyse, branch_points, measure
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
    code, out, err = run(["branches", "--configs", "zk-forward-zombie", "--quiet"], capsys)
    assert code == 0, err
    assert "branch coverage of model/actions.py:" in out and "%)" in out
    flag = _find(branch_points(), "_receive_envelope", "d.reforward_forwarded and reply.how",
                 "true")
    assert f"  model/actions.py:{flag.line} in _receive_envelope: true  if d.reforward" in out
    code, out, _ = run(["branches", "--configs", "zk-envelope-security", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["total"] == len(branch_points()) and doc["unreached"]


def test_cli_unknown_configuration_is_bad_input(capsys):
    code, out, err = run(["branches", "--configs", "zk-forward-zombie,nope"], capsys)
    assert code == 2 and not out
    assert "unknown configuration 'nope'" in one_line(err)
