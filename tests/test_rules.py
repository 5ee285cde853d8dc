"""Every rule of Kafka's behaviour that kipcheck cites is defined in docs/rules.md.

The code's docstrings and comments and the docs cite rule IDs (``F-17``, ``R-8``, ``F-29d``,
ranges such as ``F-11 to F-34``, ``L-0..L-27`` or ``R-12..14``, steps such as ``F-21.4``) and the
sections and tables of the rule legend ("docs/rules.md section 1.2", "reference table 1.6",
"table 1.11").  This test reads every ``*.py`` under the source and test packages and every
``*.md`` under docs/ plus README.md, and checks that each cited ID is a ``#### ID`` heading of
docs/rules.md (both ends of a range), that each cited step is a numbered step of its rule, and
that each cited section or table is a numbered heading there.  ``W-n`` (kipcheck's own lint
warnings, docs/lint-config.md) are not rule IDs.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RULES_MD = ROOT / "docs" / "rules.md"
PY_DIRS = ("model", "properties", "impl", "kipcheck", "bench", "tests", "scripts")

# a rule ID, optionally with a letter (F-29d) and numbered steps (F-21.4, F-21.3/4)
_ID = r"([FRDLZ])-(\d+)([a-z])?"
RULE_ID = re.compile(r"\b" + _ID + r"\b((?:\.\d+(?:/\d+)*)?)")
# a range; the upper end may drop the prefix (R-12..14)
RULE_RANGE = re.compile(r"\b" + _ID + r"\s*(?:\.\.|\bto\b|–|—|\bthrough\b)\s*"
                        r"(?:\1-)?(\d+)([a-z])?\b")
# the rule definitions: a heading made of the ID alone
RULE_HEADING = re.compile(r"^#{2,6} ([FRDLZ]-\d+[a-z]?)\s*$", re.M)
SECTION_HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.M)

_NUM = r"\d+(?:\.\d+)?(?!\.?\d)"         # 5, 1.6; not the 3.7 of a version 3.7.0
_MORE = r"(?P<more>(?:\s*(?:,|/|\band\b)\s*" + _NUM + r")*)"
# "reference section 5", "kafka-behaviour.md section 3", "docs/rules.md section 1.2",
# "Reference sections 1.1, 2.1 and 2.6", "reference 1.2", "table 1.6 / 1.11",
# "tables 1.6 and 1.11", "table 1.6 of docs/rules.md".  Numbered tables are always the legend's;
# a bare "section N" may be another document's (docs/implementation.md section 6, DESIGN), so a
# section counts only when the citation names the legend.
_LEGEND = r"(?:reference|kafka-behaviour\.md|rules\.md)"
CITE_AFTER = re.compile(_LEGEND + r"[`\s#*]+(?:(?:sections?|tables?)\s+)?(?P<num>" + _NUM + ")"
                        + _MORE, re.I)
CITE_BEFORE = re.compile(r"\b(?:sections?|tables?)\s+(?P<num>" + _NUM + ")" + _MORE
                         + r"\s+of\s+`?(?:docs/)?rules\.md", re.I)
CITE_TABLE = re.compile(r"\btables?\s+(?P<num>\d+\.\d+(?!\.?\d))" + _MORE, re.I)


def _cited_files():
    files = [p for d in PY_DIRS for p in sorted((ROOT / d).rglob("*.py"))
             if ".venv" not in p.parts and p != Path(__file__).resolve()]
    files += sorted((ROOT / "docs").glob("*.md"))
    files.append(ROOT / "README.md")
    return [p for p in files if p.exists()]


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _citations():
    """(kind, value, where) for every citation: kind "id" (value "F-29d"), "step" (value
    ("F-21", 4)) or "heading" (value "1.6", "5")."""
    out = []
    for path in _cited_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in RULE_ID.finditer(text):
            where = f"{_rel(path)}:{_line_of(text, m.start())}"
            rule = f"{m.group(1)}-{m.group(2)}{m.group(3) or ''}"
            out.append(("id", rule, where))
            if m.group(4):
                for step in m.group(4)[1:].split("/"):
                    out.append(("step", (rule, int(step)), where))
        for m in RULE_RANGE.finditer(text):
            where = f"{_rel(path)}:{_line_of(text, m.start())}"
            out.append(("id", f"{m.group(1)}-{m.group(4)}{m.group(5) or ''}", where))
        for pattern in (CITE_AFTER, CITE_BEFORE, CITE_TABLE):
            for m in pattern.finditer(text):
                where = f"{_rel(path)}:{_line_of(text, m.start())}"
                for num in [m.group("num")] + re.findall(_NUM, m.group("more")):
                    out.append(("heading", num, where))
    return out


def _rule_bodies(text: str) -> dict:
    """ID -> the text between its heading and the next heading."""
    heads = list(re.finditer(r"^#{2,6} .*$", text, re.M))
    bodies = {}
    for i, h in enumerate(heads):
        m = RULE_HEADING.match(h.group(0))
        if m:
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            bodies[m.group(1)] = text[h.end():end]
    return bodies


@pytest.fixture(scope="module")
def legend():
    return RULES_MD.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def citations():
    return _citations()


def _report(missing: dict) -> str:
    return "\n".join(f"  {key}: cited at {', '.join(sorted(set(wheres)))}"
                     for key, wheres in sorted(missing.items(), key=lambda kv: str(kv[0])))


def test_rules_are_defined_once_with_a_statement_and_a_source(legend):
    ids = RULE_HEADING.findall(legend)
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    bodies = _rule_bodies(legend)
    for rule, body in bodies.items():
        paragraphs = [p for p in re.split(r"\n\s*\n", body.strip()) if p.strip()]
        assert len(paragraphs) >= 2, f"{rule}: needs a statement and a source"
        assert any(p.startswith("Source:") for p in paragraphs), f"{rule}: no 'Source:' line"
    for prefix in "FRDLZ":                      # every family is numbered without gaps
        nums = sorted({int(re.match(r"\w-(\d+)", i).group(1)) for i in ids if i[0] == prefix})
        assert nums == list(range(nums[0], nums[-1] + 1)), (prefix, nums)


def test_every_cited_rule_id_is_defined(legend, citations):
    defined = set(RULE_HEADING.findall(legend))
    missing = {}
    for kind, value, where in citations:
        if kind == "id" and value not in defined:
            missing.setdefault(value, []).append(where)
    assert not missing, "rule IDs cited but not defined in docs/rules.md:\n" + _report(missing)


def test_every_cited_step_exists(legend, citations):
    bodies = _rule_bodies(legend)
    missing = {}
    for kind, value, where in citations:
        if kind != "step":
            continue
        rule, step = value
        body = bodies.get(rule)
        if body is not None and not re.search(rf"^{step}\. ", body, re.M):
            missing.setdefault(f"{rule}.{step}", []).append(where)
    assert not missing, "rule steps cited but not numbered in docs/rules.md:\n" + _report(missing)


def test_every_cited_section_and_table_is_a_heading(legend, citations):
    headings = set(SECTION_HEADING.findall(legend))
    missing = {}
    for kind, value, where in citations:
        if kind == "heading" and value not in headings:
            missing.setdefault(value, []).append(where)
    assert not missing, ("sections/tables of the legend cited but not headings of "
                         "docs/rules.md:\n" + _report(missing))


def test_the_citation_parser():
    text = ("F-17, R-8 and F-29d; F-11 to F-34, L-0..L-27, R-12..14, F-21.3/4, D-3.1; "
            "W-3, KAFKA-12677, P7; reference section 1.2, tables 1.6 and 1.11, "
            "section 5 of docs/rules.md, reference 2.1, the reference 3.7.0 tag, DESIGN section 9")
    ids = [f"{m.group(1)}-{m.group(2)}{m.group(3) or ''}" for m in RULE_ID.finditer(text)]
    assert ids == ["F-17", "R-8", "F-29d", "F-11", "F-34", "L-0", "L-27", "R-12", "F-21",
                   "D-3"]
    ends = [(f"{m.group(1)}-{m.group(2)}", m.group(4)) for m in RULE_RANGE.finditer(text)]
    assert ends == [("F-11", "34"), ("L-0", "27"), ("R-12", "14")]
    assert [m.group(4) for m in RULE_ID.finditer(text) if m.group(4)] == [".3/4", ".1"]
    nums = []
    for pattern in (CITE_AFTER, CITE_BEFORE, CITE_TABLE):
        for m in pattern.finditer(text):
            nums += [m.group("num")] + re.findall(_NUM, m.group("more"))
    assert sorted(set(nums)) == ["1.11", "1.2", "1.6", "2.1", "5"]
