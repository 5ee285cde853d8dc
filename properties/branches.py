"""Branch coverage of the model's protocol steps (``model/actions.py``) during exhaustive
explorations.

Why: a design flag whose branch no configuration reaches makes its variant indistinguishable
from the correct design, and a property can only catch what the configurations reach.  This
module says which branch outcomes of the model the explorations never took.

Branch outcomes (``branch_points``):

- every ``if`` and ``elif`` statement has two: ``true`` (its body's first statement ran right
  after the test) and ``false`` (right after the test, the ``else``/``elif`` ran, or, without
  one, whatever follows the statement: the next statement of the block, the loop header of an
  enclosing ``for`` for its next iteration, or the function returned);
- every conditional expression ``a if c else b``: ``true`` (``a`` was evaluated) and ``false``
  (``b`` was evaluated);
- ``and``/``or`` short-circuits and comprehension filters are not branches here: they guard
  values, not protocol steps, and line events cannot tell their outcomes apart.

How (``measure``): ``sys.settrace`` traces only the frames whose code is in the module; for
them, 'line' events record (previous line, line) arcs per code object (a 'return' is an arc to
``EXIT``), and the code objects holding a conditional expression also get 'opcode' events,
whose instruction offsets are mapped to the expression's two operands with
``code.co_positions()`` (a conditional expression is mostly on one line, where line arcs see
nothing).  An ``if`` outcome is reached when an arc leads from a line of the test into its
target statement's lines (the lines are disjoint: no ``if`` of the model shares a line with
its body).  The previous trace function (pytest-cov, a debugger) is restored afterwards; while
measuring it sees nothing.
"""
from __future__ import annotations

import ast
import dis
import importlib
import inspect
import sys
import time
from dataclasses import dataclass, field

__all__ = ["Branch", "Coverage", "branch_points", "measure", "EXIT", "Reason", "Audit",
           "load_reasons", "audit", "normalise", "reachable_percent", "UNREACHED_RESOURCE",
           "ReasonsError", "STANDARD", "explorations"]

EXIT = -1                       # the arc target of a 'return' event: the function returned


@dataclass(frozen=True)
class Branch:
    """One outcome of a decision in the model: ``outcome`` is "true" or "false"."""
    line: int
    outcome: str
    function: str               # the enclosing def, dotted for nested ones (_replies_to.keep)
    kind: str = field(compare=False)           # "if", "elif" or "ifexp"
    text: str = field(compare=False)           # the source line, stripped
    column: int = 0                            # two conditional expressions may share a line

    def where(self, path: str = "model/actions.py") -> str:
        """``path:LINE in FUNCTION: OUTCOME  source``, as the CLI prints it."""
        return f"{path}:{self.line} in {self.function}: {self.outcome}  {self.text}"

    @property
    def key(self) -> tuple:
        """(function, outcome, normalised source line): what the reasons file names, with no
        line number, so an edit elsewhere in the module does not invalidate it."""
        return (self.function, self.outcome, normalise(self.text))


def normalise(text: str) -> str:
    """A source line with its whitespace collapsed (the key of a recorded reason)."""
    return " ".join(text.split())


@dataclass(frozen=True)
class _Probe:
    """How to tell that a branch outcome was reached in one code object."""
    code_key: tuple             # (co_name, co_firstlineno)
    sources: frozenset = frozenset()           # lines of the test (if statements)
    targets: frozenset = frozenset()           # lines the outcome leads into (or EXIT)
    offsets: frozenset = frozenset()           # instruction offsets (conditional expressions)


def _span(node) -> frozenset:
    return frozenset(range(node.lineno, node.end_lineno + 1))


def _scopes(tree):
    """(function node, dotted name) for every def, outermost first."""
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                out.append((child, name))
                walk(child, name + ".")
            elif not isinstance(child, ast.ClassDef):
                walk(child, prefix)
            else:
                walk(child, f"{prefix}{child.name}.")
    walk(tree, "")
    return out


def _def_key(fn) -> tuple:
    first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
    return (fn.name, first)


def _after(stmt, parents) -> frozenset:
    """The lines that run first after ``stmt`` completes normally (``{EXIT}`` at the end of a
    function)."""
    parent = parents[stmt]
    for attr in ("body", "orelse", "finalbody"):
        block = getattr(parent, attr, None)
        if isinstance(block, list) and stmt in block:
            i = block.index(stmt)
            if i + 1 < len(block):
                return _span(block[i + 1])
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return frozenset({EXIT})
            if isinstance(parent, (ast.For, ast.AsyncFor)) and attr == "body":
                return frozenset(range(parent.lineno, parent.iter.end_lineno + 1))
            if isinstance(parent, ast.While) and attr == "body":
                return _span(parent.test)
            return _after(parent, parents)
    return _after(parent, parents)          # handlers and the like: rare in the model


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if inspect.iscode(const):
            yield from _code_objects(const)


def _within(pos, node) -> bool:
    line, end_line, col, end_col = pos
    if line is None or col is None:
        return False
    return ((line, col) >= (node.lineno, node.col_offset)
            and (end_line, end_col) <= (node.end_lineno, node.end_col_offset))


_ANALYSED: dict = {}             # (path, source) -> (path, probes): the analysis takes seconds


def _analyse(module):
    """Branches of ``module`` and their probes, from its source and its compiled code (cached
    per source text)."""
    path = inspect.getsourcefile(module)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    if (path, source) not in _ANALYSED:
        _ANALYSED.clear()
        _ANALYSED[(path, source)] = _analyse_source(path, source)
    return _ANALYSED[(path, source)]


def _analyse_source(path: str, source: str):
    lines = source.splitlines()
    tree = ast.parse(source, path)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    codes = list(_code_objects(compile(source, path, "exec")))
    probes: dict[Branch, _Probe] = {}
    seen = set()
    for fn, name in reversed(_scopes(tree)):       # innermost first: a node is claimed once
        key = _def_key(fn)
        for node in ast.walk(fn):
            if node in seen or node is fn:
                continue
            if not isinstance(node, (ast.If, ast.IfExp)):
                continue
            seen.add(node)
            text = lines[node.lineno - 1].strip()
            if isinstance(node, ast.If):
                kind = "elif" if text.startswith("elif") else "if"
                false_to = _span(node.orelse[0]) if node.orelse else _after(node, parents)
                for outcome, targets in (("true", _span(node.body[0])), ("false", false_to)):
                    b = Branch(node.lineno, outcome, name, kind, text, node.col_offset)
                    probes[b] = _Probe(key, _span(node.test), targets)
            else:
                for outcome, operand in (("true", node.body), ("false", node.orelse)):
                    b = Branch(node.lineno, outcome, name, "ifexp", text, node.col_offset)
                    found = [((c.co_name, c.co_firstlineno), off)
                             for c in codes for off, pos in _offsets(c)
                             if _within(pos, operand)]
                    if not found:
                        raise ValueError(f"{path}:{node.lineno}: no instruction of the "
                                         f"conditional expression's {outcome} operand")
                    code_key = found[0][0]
                    probes[b] = _Probe(code_key, offsets=frozenset(
                        off for k, off in found if k == code_key))
    order = sorted(probes, key=lambda b: (b.line, b.column, b.outcome != "true"))
    return path, {b: probes[b] for b in order}


def _offsets(code):
    """(offset, position) of each instruction of ``code`` (not of nested code objects)."""
    return [(ins.offset, ins.positions[:4] if ins.positions else (None,) * 4)
            for ins in dis.get_instructions(code)]


def branch_points(module=None) -> list[Branch]:
    """Every branch outcome of ``module`` (default ``model.actions``), in line order."""
    return list(_analyse(_module(module))[1])


def _module(module):
    if module is None:
        return importlib.import_module("model.actions")
    return importlib.import_module(module) if isinstance(module, str) else module


@dataclass
class Coverage:
    """Which branch outcomes each exploration reached.  ``reached`` maps a spec name
    (``config[variant]``) to the branches it took, so a report can name the configuration (or
    variant) that reaches a branch."""
    branches: tuple
    reached: dict
    path: str = "model/actions.py"
    seconds: float = 0.0

    @property
    def covered_set(self) -> frozenset:
        return frozenset().union(*self.reached.values()) if self.reached else frozenset()

    @property
    def covered(self) -> int:
        return len(self.covered_set)

    @property
    def total(self) -> int:
        return len(self.branches)

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / self.total if self.total else 100.0

    @property
    def unreached(self) -> list:
        got = self.covered_set
        return [b for b in self.branches if b not in got]

    def reached_by(self, branch: Branch) -> list:
        """The spec names whose exploration reached ``branch``."""
        return [name for name, got in self.reached.items() if branch in got]

    def only_by_variants(self) -> list:
        """(branch, spec names) for every outcome reached, but by no exploration of the
        correct design (``config[correct]``): only a design variant reaches it."""
        correct = frozenset().union(*(got for name, got in self.reached.items()
                                      if name.endswith("[correct]")))
        got = self.covered_set
        return [(b, self.reached_by(b)) for b in self.branches if b in got and b not in correct]

    def to_json(self) -> dict:
        def row(b):
            return {"function": b.function, "line": b.line, "outcome": b.outcome,
                    "kind": b.kind, "text": b.text}
        return {"path": self.path, "covered": self.covered, "total": self.total,
                "percent": round(self.percent, 2), "seconds": round(self.seconds, 2),
                "explorations": {name: len(got) for name, got in self.reached.items()},
                "unreached": [row(b) for b in self.unreached],
                "reached": [dict(row(b), by=self.reached_by(b))
                            for b in self.branches if b in self.covered_set]}


class _Recorder:
    """The trace functions for one exploration.  A code object is traced only while some of
    its branch outcomes are unreached: once all are, its frames run untraced (a hot helper
    saturates within a few states, which keeps the overhead to a few times the plain run)."""

    def __init__(self, path: str, probes: dict):
        self.path = path
        self.arcs: dict[tuple, dict] = {}       # code key -> {(line, line): {branch}}
        self.offsets: dict[tuple, dict] = {}    # code key -> {offset: {branch}}
        self.pending: dict[tuple, set] = {}     # code key -> branches not reached yet
        for b, p in probes.items():
            self.pending.setdefault(p.code_key, set()).add(b)
            if p.offsets:
                table = self.offsets.setdefault(p.code_key, {})
                for off in p.offsets:
                    table.setdefault(off, set()).add(b)
            else:
                table = self.arcs.setdefault(p.code_key, {})
                for a in p.sources:
                    for z in p.targets:
                        table.setdefault((a, z), set()).add(b)
        self.reached: set = set()
        self._keys: dict = {}

    def global_trace(self, frame, event, arg):
        code = frame.f_code
        if code.co_filename != self.path:
            return None                 # other frames run untraced
        key = self._keys.get(code)
        if key is None:
            key = self._keys[code] = (code.co_name, code.co_firstlineno)
        pending = self.pending.get(key)
        if not pending:
            return None                 # no branch here, or all reached
        arcs = self.arcs.get(key, {})
        offsets = self.offsets.get(key)
        if offsets:
            frame.f_trace_opcodes = True
        reached = self.reached
        last = EXIT

        def hit(found):
            pending.difference_update(found)
            reached.update(found)
            return local if pending else None

        def local(frame, event, arg):
            nonlocal last
            if event == "line":
                line = frame.f_lineno
                found = arcs.get((last, line))
                last = line
                if found:
                    return hit(found)
            elif event == "opcode":
                found = offsets.get(frame.f_lasti)
                if found:
                    return hit(found)
            elif event == "return":
                found = arcs.get((last, EXIT))
                if found:
                    hit(found)
            return local
        return local


def measure(specs, module=None, *, progress=None, stop_at_violation: bool = False) -> Coverage:
    """Explore each spec (``properties.kafka_spec.KafkaSpec``) with the tracer on and return
    the branch outcomes each reached.  ``stop_at_violation=False`` (default) explores a
    variant's whole state space, not only up to its first violation.  ``progress``: a file for
    one line per exploration."""
    from properties.explore import explore
    mod = _module(module)
    path, probes = _analyse(mod)
    reached = {}
    t0 = time.perf_counter()
    for spec in specs:
        rec = _Recorder(path, probes)
        t = time.perf_counter()
        previous = sys.gettrace()
        sys.settrace(rec.global_trace)
        try:
            result = explore(spec, stop_at_violation=stop_at_violation)
        finally:
            sys.settrace(previous)
        reached[spec.name] = frozenset(rec.reached)
        if progress is not None:
            print(f"  {spec.name}: {result.distinct:,} states, {len(reached[spec.name])} "
                  f"branch outcomes, {time.perf_counter() - t:.1f} s", file=progress)
    return Coverage(tuple(probes), reached, mod.__name__.replace(".", "/") + ".py",
                    time.perf_counter() - t0)


# --------------------------------------------------------------------------------------------
# Recorded reasons for the outcomes the standard measure does not reach

UNREACHED_RESOURCE = "branches_unreached.toml"
REASON_KINDS = ("defensive", "variant", "small")
# The standard measure the reasons are recorded for: every tiny configuration under the correct
# design, plus every design variant on its home configuration and its extra homes
# (``Variant.extra_homes``).
STANDARD = ("tiny configurations, correct design and every variant on its home configuration "
            "and extra homes")


def explorations(configs, variants: bool = True) -> list:
    """The (configuration, variant) pairs a measure over ``configs`` explores: each
    configuration under the correct design (variant None), then, with ``variants``, every
    design variant on its home configuration and on each of its extra homes, among
    ``configs``."""
    from model.config import VARIANTS
    out = [(c, None) for c in configs]
    if variants:
        out += [(c, v.name) for v in VARIANTS.values() for c in (v.config,) + v.extra_homes
                if c in configs]
    return out


class ReasonsError(ValueError):
    """The reasons file is malformed (one line saying where)."""


@dataclass(frozen=True)
class Reason:
    """Why one unreached branch outcome is not reached.  ``kind``: ``defensive`` (no state of
    the model can take it: a guard for hand-written steps, or a case every caller rules out),
    ``variant`` (only a design variant reaches it, on a configuration that is neither its home
    nor one of its extra homes) or
    ``small`` (only a small configuration reaches it).  ``reached_by``: the explorations that do
    reach it (``config[variant]``), measured once and recorded."""
    function: str
    outcome: str
    text: str
    kind: str
    reason: str
    reached_by: tuple = ()

    @property
    def key(self) -> tuple:
        return (self.function, self.outcome, normalise(self.text))

    def note(self) -> str:
        by = f" Reached by {', '.join(self.reached_by)}." if self.reached_by else ""
        return f"{self.kind}: {self.reason}{by}"


def _toml(text: str) -> dict:
    from properties.inputs import InputError, loads_toml
    try:
        return loads_toml(text, UNREACHED_RESOURCE)
    except InputError as e:
        raise ReasonsError(str(e)) from None


def load_reasons(text: str | None = None) -> list:
    """The recorded reasons: ``text`` (TOML), by default the package's
    ``properties/branches_unreached.toml`` (package data)."""
    if text is None:
        from importlib import resources
        text = resources.files("properties").joinpath(UNREACHED_RESOURCE).read_text("utf-8")
    data = _toml(text)
    out, seen = [], set()
    for i, row in enumerate(data.get("unreached", []), 1):
        where = f"{UNREACHED_RESOURCE}: entry {i}"
        missing = {"function", "outcome", "text", "kind", "reason"} - set(row)
        if missing:
            raise ReasonsError(f"{where}: missing {', '.join(sorted(missing))}")
        unknown = set(row) - {"function", "outcome", "text", "kind", "reason", "reached_by"}
        if unknown:
            raise ReasonsError(f"{where}: unknown field {', '.join(sorted(unknown))}")
        if row["outcome"] not in ("true", "false"):
            raise ReasonsError(f"{where}: outcome must be true or false")
        if row["kind"] not in REASON_KINDS:
            raise ReasonsError(f"{where}: kind must be one of {', '.join(REASON_KINDS)}")
        r = Reason(row["function"], row["outcome"], row["text"], row["kind"],
                   " ".join(row["reason"].split()), tuple(row.get("reached_by", ())))
        if r.key in seen:
            raise ReasonsError(f"{where}: {r.function} {r.outcome} is listed twice")
        seen.add(r.key)
        out.append(r)
    return out


@dataclass
class Audit:
    """The unreached outcomes of a measure against the recorded reasons.  ``explained``:
    unreached outcome -> its reason; ``unexplained``: unreached outcomes without one;
    ``stale``: (reason, why) for a reason that names no branch of the module, or a branch that
    the measure reached (the reason no longer holds)."""
    explained: dict
    unexplained: list
    stale: list

    @property
    def ok(self) -> bool:
        return not self.unexplained and not self.stale


def audit(cov: Coverage, reasons: list) -> Audit:
    """Match the unreached outcomes of ``cov`` with ``reasons`` by key (function, outcome,
    normalised source line).  One reason covers every branch with its key (two identical lines
    in one function); each of them must be unreached."""
    by_key = {r.key: r for r in reasons}
    got = cov.covered_set
    explained, unexplained = {}, []
    for b in cov.unreached:
        r = by_key.get(b.key)
        if r is None:
            unexplained.append(b)
        else:
            explained[b] = r
    keys = {}
    for b in cov.branches:
        keys.setdefault(b.key, []).append(b)
    stale = []
    for r in reasons:
        branches = keys.get(r.key)
        if not branches:
            stale.append((r, "names no branch outcome of the module"))
        elif any(b in got for b in branches):
            stale.append((r, "the outcome is reached"))
    return Audit(explained, unexplained, stale)


def reachable_percent(cov: Coverage, reasons_audit: Audit) -> float:
    """Coverage of the outcomes not recorded as defensive (unreachable by construction)."""
    defensive = sum(1 for r in reasons_audit.explained.values() if r.kind == "defensive")
    total = cov.total - defensive
    return 100.0 * cov.covered / total if total else 100.0
