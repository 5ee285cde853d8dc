"""The pytest plugin (kipcheck/pytest_plugin.py) as a user meets it: pytest run in a subprocess
inside a sample project that knows nothing of kipcheck, with the plugin loaded from the
``pytest11`` entry point of the installed package."""
import importlib.metadata
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from model.config import VARIANTS
from properties.registry import PROPERTIES
from properties.trace import Trace, replay

CONFIG = "zk-envelope-security"
VARIANT = "envelope-any-listener"
ITEM_NAMES = [f"{p.id}[{CONFIG}]" for p in PROPERTIES] + [f"witnesses[{CONFIG}]"]


@pytest.fixture
def project(tmp_path):
    """A sample project: an empty tests/ directory and a pytest.ini that pins the rootdir."""
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


def run_pytest(cwd: Path, *args, timeout=120):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def junit_cases(xml_path: Path) -> dict:
    """name -> (classname, outcome, element) of every testcase of a JUnit XML file."""
    out = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = tag
        out[case.get("name")] = (case.get("classname"), outcome, case)
    return out


def junit_properties(case) -> dict:
    return {p.get("name"): p.get("value") for p in case.iter("property")}


def test_entry_point_is_registered():
    eps = importlib.metadata.entry_points(group="pytest11")
    assert any(e.name == "kipcheck" and e.value == "kipcheck.pytest_plugin" for e in eps)


def test_without_a_profile_the_plugin_collects_nothing(project):
    r = run_pytest(project)
    assert r.returncode == 5, r.stdout + r.stderr            # no tests collected
    assert "collected 0 items" in r.stdout
    assert "kipcheck: profile" not in r.stdout


def test_correct_design_passes_one_case_per_property(project):
    r = run_pytest(project, "--kipcheck-profile=ci", f"--kipcheck-configs={CONFIG}",
                   "--junitxml=out.xml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kipcheck: profile ci: " in r.stdout and "seed 0;" in r.stdout     # the header
    cases = junit_cases(project / "out.xml")
    assert list(cases) == ITEM_NAMES                          # P1..P9, L1, witnesses, in order
    for name, (classname, outcome, case) in cases.items():
        assert classname == f"kipcheck.{CONFIG}", name
        assert outcome == "passed", name
        props = junit_properties(case)
        assert props["kipcheck_seed"] == "0" and props["kipcheck_config"] == CONFIG
        assert int(props["kipcheck_steps"]) > 0 and int(props["kipcheck_distinct_states"]) > 0
    assert not (project / ".kipcheck" / "traces").exists() or not list(
        (project / ".kipcheck" / "traces").iterdir())


def test_variant_fails_its_property_with_a_replayable_trace(project):
    assert VARIANTS[VARIANT].config == CONFIG and VARIANTS[VARIANT].breaks == ("P4",)
    r = run_pytest(project, "--kipcheck-profile=ci", f"--kipcheck-configs={CONFIG}",
                   f"--kipcheck-variant={VARIANT}", "--junitxml=out.xml")
    assert r.returncode == 1, r.stdout + r.stderr
    cases = junit_cases(project / "out.xml")
    assert list(cases) == ITEM_NAMES
    assert {c for c, _, _ in cases.values()} == {f"kipcheck.{CONFIG}.{VARIANT}"}
    outcomes = {name: outcome for name, (_, outcome, _) in cases.items()}
    assert outcomes.pop(f"P4[{CONFIG}]") == "failure"
    # the run stopped at P4: witness coverage is not assessed (skipped, not failed)
    assert outcomes.pop(f"witnesses[{CONFIG}]") == "skipped"
    assert set(outcomes.values()) == {"passed"}
    for name in outcomes:                       # the passing cases say why they passed
        note = junit_properties(cases[name][2])["kipcheck_note"]
        assert note.startswith("run stopped at P4 after ") and "not violated up to then" in note

    failure = cases[f"P4[{CONFIG}]"][2].find("failure")
    message, text = failure.get("message"), failure.text
    assert "seed 0" in message and "envelopes-only-from-trusted-senders" in message
    found = re.search(r"(\S+\.json)", message)
    assert found, message
    trace_path = project / found.group(1)
    assert trace_path.exists() and trace_path.parent == project / ".kipcheck" / "traces"
    assert f"kipcheck replay {found.group(1)}" in text
    assert (f"kipcheck fuzz --config {CONFIG} --variant {VARIANT} --profile ci --seed 0"
            in text)
    assert "def test_p4_" in text and "round seed " in text
    trace = Trace.load(trace_path)
    assert (trace.config, trace.variant, trace.property) == (CONFIG, VARIANT, "P4")
    assert replay(trace).reproduced


def test_selection_by_keyword_and_marker(project):
    r = run_pytest(project, "--kipcheck-profile=ci", f"--kipcheck-configs=tiny,{CONFIG}",
                   "--collect-only", "-q", "-m", "kipcheck", "-k", f"{CONFIG} and (P4 or P6)")
    assert r.returncode == 0, r.stdout + r.stderr
    ids = [ln for ln in r.stdout.splitlines() if ln.startswith("kipcheck/")]
    assert ids == [f"kipcheck/{CONFIG}::P4[{CONFIG}]", f"kipcheck/{CONFIG}::P6[{CONFIG}]"]
    r = run_pytest(project, "--kipcheck-profile=ci", "--collect-only", "-q", "-m", "not kipcheck")
    assert r.returncode == 5, r.stdout + r.stderr


def test_bad_name_is_a_usage_error(project):
    r = run_pytest(project, "--kipcheck-profile=ci", "--kipcheck-configs=no-such-config")
    assert r.returncode == 4, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert "Traceback" not in out
    errors = [ln for ln in out.splitlines() if ln.startswith("ERROR")]
    assert len(errors) == 1
    assert "--kipcheck-configs: unknown configuration 'no-such-config'" in errors[0]
    assert CONFIG in errors[0]                  # it lists the valid names


def test_ini_configures_and_the_command_line_wins(project):
    (project / "pytest.ini").write_text(
        "[pytest]\nkipcheck_profile = ci\nkipcheck_configs = bogus\nkipcheck_seed = 7\n")
    r = run_pytest(project, "--collect-only", "-q")
    assert r.returncode == 4 and "kipcheck_configs (ini): unknown configuration 'bogus'" in (
        r.stdout + r.stderr)
    r = run_pytest(project, f"--kipcheck-configs={CONFIG}", "--collect-only")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"collected {len(ITEM_NAMES)} items" in r.stdout and "seed 7;" in r.stdout
    r = run_pytest(project, "--kipcheck-profile=off", f"--kipcheck-configs={CONFIG}")
    assert r.returncode == 5, r.stdout + r.stderr


def test_fixture_for_a_projects_own_tests(project):
    (project / "tests" / "test_design.py").write_text(
        "from model.config import VARIANTS\n\n\n"
        "def test_variant_is_caught(kipcheck_fuzz):\n"
        f"    result = kipcheck_fuzz({CONFIG!r}, {VARIANT!r})\n"
        f"    assert result.property in VARIANTS[{VARIANT!r}].breaks\n"
        "    assert result.seed == 3 and result.profile == 'ci'\n"
        "    assert kipcheck_fuzz.trace_path(result).exists()\n"
        f"    assert kipcheck_fuzz({CONFIG!r}, {VARIANT!r}) is result   # run once\n")
    r = run_pytest(project, "--kipcheck-seed=3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout
