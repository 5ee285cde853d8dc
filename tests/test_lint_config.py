"""``kipcheck lint-config`` on the sample files of examples/lint/: valid files exit 0, each
error file exits 2 with its rule, each security-warning file exits 1 with its warning, each
note file and Kafka's quickstart files exit 0 (1 with ``--strict``); unreadable and malformed
files give one line on stderr and exit 2, never a traceback."""
import re
from pathlib import Path

import pytest

from cli_helpers import one_line, run

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "examples" / "lint"
VALID = {"broker-zk.properties": "ZooKeeper-mode broker",
         "broker-kraft.properties": "KRaft broker",
         "controller-kraft.properties": "KRaft controller"}
ERRORS = sorted(SAMPLES.glob("error-*.properties"))
WARNINGS = sorted(SAMPLES.glob("warning-*.properties"))
NOTES = sorted(SAMPLES.glob("note-*.properties"))
QUICKSTART = sorted(SAMPLES.glob("quickstart-*.properties"))


def rule_of(path: Path) -> str:
    return re.match(r"(?:error|warning|note)-([LW]-\d+)-", path.name)[1]


def test_the_samples_cover_every_rule_a_file_can_break_and_every_warning():
    assert sorted({p.name for p in SAMPLES.glob("*.properties")}) == sorted(
        [*VALID, *(p.name for p in ERRORS + WARNINGS + NOTES + QUICKSTART)])
    # L-1, L-4, L-10, L-18, L-19, L-25..L-27 are behaviour, never an error of their own
    assert sorted(rule_of(p) for p in ERRORS) == sorted(
        f"L-{n}" for n in (0, 2, 3, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 20, 21, 22, 23,
                           24))
    # W-3 is a security warning where the node authenticates or authorizes, else a note
    assert sorted({rule_of(p) for p in WARNINGS + NOTES}) == [f"W-{n}" for n in range(1, 7)]
    assert [rule_of(p) for p in WARNINGS] == ["W-2", "W-3"]
    assert len(QUICKSTART) == 4


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_sample_exits_0(name, capsys):
    path = str(SAMPLES / name)
    code, out, err = run(["lint-config", path], capsys)
    assert (code, err) == (0, "")
    assert out == f"{path}: valid {VALID[name]}, no warnings\n"


@pytest.mark.parametrize("path", ERRORS, ids=lambda p: p.name)
def test_error_sample_exits_2_with_its_rule(path, capsys):
    code, out, err = run(["lint-config", str(path)], capsys)
    lines = out.splitlines()
    assert (code, err, len(lines)) == (2, "", 2)
    assert lines[0].startswith(f"{rule_of(path)} error: ")
    assert lines[1] == f"{path}: invalid, 1 error (Kafka stops at the first one)"


@pytest.mark.parametrize("path", WARNINGS, ids=lambda p: p.name)
def test_warning_sample_exits_1_with_its_warning(path, capsys):
    code, out, err = run(["lint-config", str(path)], capsys)
    lines = out.splitlines()
    assert (code, err, len(lines)) == (1, "", 2)
    assert lines[0].startswith(f"{rule_of(path)} warning: ")
    assert re.fullmatch(rf"{re.escape(str(path))}: valid .+, 1 warning", lines[1])


@pytest.mark.parametrize("path", NOTES, ids=lambda p: p.name)
def test_note_sample_exits_0_and_1_when_strict(path, capsys):
    code, out, err = run(["lint-config", str(path)], capsys)
    lines = out.splitlines()
    assert (code, err, len(lines)) == (0, "", 2)
    assert lines[0].startswith(f"{rule_of(path)} note: ")
    assert re.fullmatch(rf"{re.escape(str(path))}: valid .+, 1 note", lines[1])
    code, strict_out, _ = run(["lint-config", str(path), "--strict"], capsys)
    assert (code, strict_out) == (1, out)


@pytest.mark.parametrize("path", QUICKSTART, ids=lambda p: p.name)
def test_kafkas_quickstart_files_are_not_flagged(path, capsys):
    """Kafka's own quickstart configurations (all PLAINTEXT, no authorizer) get notes only."""
    code, out, err = run(["lint-config", str(path)], capsys)
    assert (code, err) == (0, "")
    assert " warning" not in out and " note: " in out


def test_plaintext_envelope_listener_is_a_warning_once_anything_is_secured(tmp_path, capsys):
    """W-3's severity follows the node's security: no authorizer and no authenticated
    listener -> a note; an authorizer, or an SSL/SASL listener beside it -> a warning."""
    base = ("process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
            "controller.quorum.voters=1@c1:9093\n")
    f = tmp_path / "c.properties"
    cases = [("listeners=CONTROLLER://:9093\n", 0, "note"),
             ("listeners=CONTROLLER://:9093\nauthorizer.class.name=org.apache.kafka.metadata."
              "authorizer.StandardAuthorizer\n", 1, "warning"),
             ("process.roles=broker,controller\nlisteners=CONTROLLER://:9093,SECURE://:9094\n"
              "listener.security.protocol.map=CONTROLLER:PLAINTEXT,SECURE:SASL_SSL\n"
              "inter.broker.listener.name=SECURE\nsasl.enabled.mechanisms=PLAIN\n"
              "sasl.mechanism.inter.broker.protocol=PLAIN\n", 1, "warning")]
    for extra, want_code, severity in cases:
        f.write_text(base + extra)
        code, out, _ = run(["lint-config", str(f)], capsys)
        assert code == want_code, out
        assert [line for line in out.splitlines() if line.startswith("W-3 ")][0].startswith(
            f"W-3 {severity}: listener CONTROLLER accepts EnvelopeRequest")


def test_output_carries_kafkas_message(capsys):
    path = SAMPLES / "error-L-14-inter-broker-not-advertised.properties"
    _, out, _ = run(["lint-config", str(path)], capsys)
    assert out.splitlines()[0] == (
        "L-14 error: requirement failed: inter.broker.listener.name must be a listener name "
        "defined in advertised.listeners. The valid options based on currently configured "
        "listeners are CLIENT")
    _, out, _ = run(["lint-config", str(SAMPLES / "note-W-5-several-controller-listeners"
                                              ".properties")], capsys)
    assert out.splitlines()[0] == (
        "W-5 note: controller.listener.names has multiple entries; only the first will be "
        "used since process.roles=broker: [CONTROLLER, CONTROLLER_OLD]")
    _, out, _ = run(["lint-config", str(SAMPLES / "note-W-4-principal-builder-without-serde"
                                              ".properties")], capsys)
    assert out.startswith("W-4 note: principal.builder.class "
                          "com.example.kafka.LdapPrincipalBuilder (listeners CLIENT, REPLICATION) "
                          "is not known to implement KafkaPrincipalSerde")


def test_default_kraft_controller_gets_several_warnings(tmp_path, capsys):
    """A ZK-mode default needs zookeeper.connect; a KRaft controller on the defaults (PLAINTEXT
    controller listener, custom builder) collects W-3 and W-4, in ID order, as notes: nothing
    on it is secured."""
    f = tmp_path / "c.properties"
    f.write_text("process.roles=controller\ncontroller.listener.names=CONTROLLER\n"
                 "listeners=CONTROLLER://:9093\nprincipal.builder.class=com.example.B\n")
    code, out, _ = run(["lint-config", str(f)], capsys)
    assert code == 0
    assert [line.split()[:2] for line in out.splitlines()[:-1]] == [["W-3", "note:"],
                                                                    ["W-4", "note:"]]
    assert out.splitlines()[-1].endswith("valid KRaft controller, 2 notes")


@pytest.mark.parametrize("text, role, expected", [
    # no process.roles: checked as process.roles=ROLE, unless a ZooKeeper-mode broker
    ("controller.listener.names=CONTROLLER\nlisteners=CONTROLLER://c1:9093\n"
     "listener.security.protocol.map=CONTROLLER:SSL\n", "controller",
     "valid KRaft controller (process.roles=controller from --role), no warnings"),
    ("zookeeper.connect=zk:2181\nlisteners=SSL://b1:9093,CLIENT://b1:9092\n"
     "listener.security.protocol.map=SSL:SSL,CLIENT:SSL\nsecurity.inter.broker.protocol=SSL\n",
     "broker", "valid ZooKeeper-mode broker, no warnings"),
    ("process.roles=broker,controller\ncontroller.listener.names=CONTROLLER\n"
     "listeners=CLIENT://b1:9092,CONTROLLER://b1:9093\ninter.broker.listener.name=CLIENT\n"
     "listener.security.protocol.map=CLIENT:SSL,CONTROLLER:SSL\n", "controller",
     "valid KRaft combined broker and controller, 1 note"),         # W-1: clients on CLIENT
])
def test_role(tmp_path, capsys, text, role, expected):
    f = tmp_path / "x.properties"
    f.write_text(text)
    code, out, _ = run(["lint-config", str(f), "--role", role], capsys)
    assert out.splitlines()[-1] == f"{f}: {expected}"
    assert code == (1 if "warning" in expected and "no warnings" not in expected else 0)


def test_role_must_match_process_roles(capsys):
    path = SAMPLES / "broker-kraft.properties"
    code, out, err = run(["lint-config", str(path), "--role", "controller"], capsys)
    assert (code, out) == (2, "")
    assert one_line(err) == f"kipcheck: --role controller: {path} has process.roles=broker"


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.properties", "No such file or directory"),
    (lambda d: d, "Is a directory"),
    (lambda d: _write(d, "a=1\nlisteners=PLAINTEXT://:9092\\\n  ,SSL://\\u12G4:9093\n"),
     "line 2: Malformed \\uxxxx encoding."),
])
def test_unreadable_or_malformed_file_is_one_line_exit_2(tmp_path, capsys, make, message):
    path = make(tmp_path)
    code, out, err = run(["lint-config", str(path)], capsys)
    assert (code, out) == (2, "")
    assert one_line(err) == f"kipcheck: {path}: {message}"


def test_bad_role_is_one_line_exit_2(capsys):
    code, _, err = run(["lint-config", str(SAMPLES / "broker-zk.properties"), "--role", "zk"],
                       capsys)
    assert code == 2 and "invalid choice: 'zk'" in one_line(err)


def test_unprintable_characters_stay_on_one_line(tmp_path, capsys):
    f = _write(tmp_path, "zookeeper.connect=zk:2181\nlisteners=PLAINTEXT://a\\nb:9092\\uD800\n")
    code, out, _ = run(["lint-config", str(f)], capsys)
    assert code == 2 and len(out.splitlines()) == 2
    assert "PLAINTEXT://a\\nb:9092\\ud800" in out.splitlines()[0]


def test_lint_config_is_documented():
    doc = (ROOT / "docs" / "lint-config.md").read_text()
    assert all(f"| {rule} " in doc for rule in [f"L-{n}" for n in range(28)]
               + [f"W-{n}" for n in range(1, 7)])
    assert "kipcheck lint-config" in (ROOT / "README.md").read_text()


def _write(directory: Path, text: str) -> Path:
    f = directory / "bad.properties"
    f.write_text(text, encoding="latin-1")
    return f
