"""The documentation cannot drift from the model: the generated blocks of docs/model.md and
docs/design-variants.md are what ``kipcheck.docgen`` produces now, every name a user meets
(actions, properties, clauses, witnesses, variants, configurations) appears in the docs, and the
worked example of design-variants.md still applies to the code it quotes."""
import re
from pathlib import Path

import pytest

from kipcheck import docgen
from model import next as model_next
from model.config import VARIANTS, Design
from model.configs import CONFIGS
from properties.registry import PROPERTIES, WITNESSES

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def texts():
    return {name: (DOCS / name).read_text() for name in docgen.DOCS}


@pytest.fixture(scope="module")
def all_text(texts):
    return "\n".join(texts.values())


# ------------------------------------------------------------------------------------------
# (a) generated blocks equal what docgen produces now


@pytest.mark.parametrize("fname, block", [(f, b) for f, bs in docgen.DOCS.items() for b in bs])
def test_generated_block_is_up_to_date(texts, fname, block):
    found = docgen.blocks_in(texts[fname])
    assert block in found, f"docs/{fname} lacks the markers of block {block}"
    assert found[block] == docgen.generate(block), (
        f"docs/{fname}: generated block {block} is out of date; run "
        f"'python -m kipcheck.docgen --write'")


def test_no_unknown_blocks(texts):
    for fname, text in texts.items():
        assert set(docgen.blocks_in(text)) <= set(docgen.BLOCKS), fname


def test_check_agrees(texts):
    assert docgen.stale_blocks() == []


def test_render_keeps_the_prose_and_replaces_only_blocks():
    text = ("intro\n<!-- BEGIN GENERATED: variant-table -->\nOLD-CONTENT-XYZ\n"
            "<!-- END GENERATED: variant-table -->\noutro\n")
    out = docgen.render(text, ("variant-table",))
    assert out.startswith("intro\n<!-- BEGIN GENERATED: variant-table -->\n")
    assert out.endswith("<!-- END GENERATED: variant-table -->\noutro\n")
    assert "OLD-CONTENT-XYZ" not in out and "zombie-writes-unfenced" in out
    assert docgen.render(out, ("variant-table",)) == out        # idempotent
    with pytest.raises(docgen.DocError):
        docgen.render("no markers\n", ("variant-table",))
    with pytest.raises(docgen.DocError):
        docgen.render("<!-- BEGIN GENERATED: nope -->\n<!-- END GENERATED: nope -->\n")


def test_rule_ids_are_extracted():
    assert docgen.rule_ids("R-12..R-14: x (R-15, R-18); F-21.3/4; KAFKA-12677, KIP-590") == \
        ["R-12", "R-13", "R-14", "R-15", "R-18", "F-21.3"]


def test_variant_traces_are_deterministic_and_catch_every_variant():
    text = docgen.generate("variant-traces")
    # only an accepted miss may be reported not caught, and it says so
    missed = {v.name for v in VARIANTS.values() if not v.must_be_caught}
    for section in text.split("\n### ")[1:]:
        name = section.split("\n", 1)[0]
        if "NOT CAUGHT" in section:
            assert name in missed and "NOT CAUGHT** (an accepted miss" in section, name
    for v in VARIANTS.values():
        assert f"### {v.name}\n" in text
    # no timings, nothing that changes from run to run
    assert not re.search(r"\d+\.\d+ s\b|distinct/s", text)


# ------------------------------------------------------------------------------------------
# (b) every name appears in the docs


def test_every_action_is_documented(all_text):
    for name in model_next.ACTION_NAMES:
        assert f"`{name}`" in all_text, name


def test_every_property_and_clause_is_documented(all_text):
    for p in PROPERTIES:
        assert f"| {p.id} | {p.name} |" in all_text, p.id
        for c in p.clauses:
            assert f"`{c.name}`" in all_text, c.name


def test_every_witness_is_documented(all_text):
    for w in WITNESSES:
        assert f"`{w}`" in all_text, w


def test_every_variant_and_flag_is_documented(all_text, texts):
    for v in VARIANTS.values():
        assert v.name in texts["design-variants.md"], v.name
        for flag in v.flags:
            assert f"`{flag}`" in all_text, flag
    for flag in Design().__dataclass_fields__:
        assert flag in all_text, flag


def test_every_configuration_is_documented(texts):
    for name in CONFIGS:
        assert f"`{name}`" in texts["model.md"], name


def test_the_readme_lists_every_configuration_command_and_the_seeded_count():
    """The README is what users read first: its hand-written lists follow the code."""
    from kipcheck.cli import build_parser
    from model.config import SEEDED
    readme = (ROOT / "README.md").read_text()
    for name in CONFIGS:
        assert f"`{name}`" in readme, name
    seeded = sum(v.kind == SEEDED for v in VARIANTS.values())
    assert f"lists the {seeded} seeded variants" in readme
    commands = build_parser()._subparsers._group_actions[0].choices
    for command in commands:
        assert f"kipcheck {command} " in readme, command


# ------------------------------------------------------------------------------------------
# the worked example of design-variants.md


def _diff_blocks(text):
    return re.findall(r"```diff\n(.*?)```", text, re.S)


def _hunks(diff):
    """(path, old-side lines) of every hunk of a unified diff."""
    path, hunk, out = None, None, []
    for line in diff.splitlines():
        if line.startswith("--- a/"):
            path = line[len("--- a/"):]
        elif line.startswith("+++ "):
            continue
        elif line.startswith("@@"):
            hunk = []
            out.append((path, hunk))
        elif hunk is not None and line[:1] in (" ", "-", ""):
            hunk.append(line[1:])
    return out


def test_worked_example_diffs_still_apply(texts):
    """The lines the worked example quotes as context or removes are still in the code, in
    that order: the example shows the real surrounding lines."""
    blocks = _diff_blocks(texts["design-variants.md"])
    assert blocks, "design-variants.md has no worked-example diff"
    hunks = [h for b in blocks for h in _hunks(b)]
    assert {p for p, _ in hunks} >= {"model/config.py", "model/actions.py"}
    for path, old in hunks:
        current = (ROOT / path).read_text().splitlines()
        assert any(_in_order_nearby(current, i, old) for i in range(len(current))), (
            f"the worked example's hunk for {path} no longer matches the code:\n"
            + "\n".join(old))


def _in_order_nearby(current, i, old, slack=20):
    """``old`` appears in ``current`` from line ``i`` on, in order, with at most ``slack``
    lines between: a researcher following the how-to adds a flag at the end of ``Design`` or
    a variant at the end of ``VARIANTS`` (the very places the example's context shows), and
    that must not break this test."""
    if not old or _digits_free(current[i]) != _digits_free(old[0]):
        return False
    at = i
    for line in old[1:]:
        window = [_digits_free(x) for x in current[at + 1:at + 2 + slack]]
        if _digits_free(line) not in window:
            return False
        at = at + 1 + window.index(_digits_free(line))
    return True


def _digits_free(line):
    # a count the example removes (the seeded variants') moves on with every new variant
    return re.sub(r"\d+", "#", line)


def test_worked_example_is_still_hypothetical():
    """The example adds a NEW flaw; if it has become real, pick another one for the doc."""
    assert "envelope-skips-cluster-action" not in VARIANTS
    assert "envelope_skips_cluster_action" not in Design().__dataclass_fields__
    assert "kraft-envelope-security" not in CONFIGS
