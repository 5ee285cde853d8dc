"""Design-mutation adequacy: how strong are the properties?

``kipcheck mutate`` changes the model's protocol steps (``model/actions.py``) one site at a
time, explores each *mutant* exhaustively on the tiny configurations and asks whether the
properties notice.  A property suite that passes the correct design and also passes a design
with a guard dropped says nothing about that guard.

Mutants (``generate``)
----------------------
The source of ``model.actions`` is parsed (``ast``) and every function body is visited in
source order; each mutant is ONE change at ONE site.  Operators, in the order they are tried
at a site:

``drop-conjunct`` / ``drop-disjunct``
    drop one operand of an ``and`` / ``or``.  The model's guards are mostly written as
    ``if a or b: return None`` (the step is disabled when ...), so a dropped disjunct there is a
    dropped conjunct of the step's enabling condition.
``negate-guard``
    negate the test of an ``if`` / ``elif`` / conditional expression / comprehension filter
    (``not x`` becomes ``x``, a single comparison flips its operator: ``==`` / ``!=``,
    ``<`` / ``>=``, ``in`` / ``not in``).
``negate-conjunct``
    negate one operand of an ``and`` / ``or``.
``negate-condition``
    negate a comparison that is a value rather than a test
    (``registered_in_log=rec.incarnation_id == node.incarnation``, ``return m.kind == ...``).
``boundary``
    move a comparison boundary: ``<`` / ``<=``, ``>`` / ``>=``.
``off-by-one``
    ``x + k`` becomes ``x + (k + 1)``, ``x - k`` becomes ``x - (k + 1)``.
``old-value``
    ``x + k`` / ``x - k`` becomes ``x``: the old epoch, zkVersion, incarnation, hop count,
    offset or budget where the new one is meant.
``skip-field``
    drop one keyword of ``replace(...)`` / ``._replace(...)`` (the field keeps its old value)
    or of a record constructor such as ``Node(...)`` / ``Response(...)`` (it takes its
    default).
``return-unchanged``
    ``return replace(x, ...)`` becomes ``return x``, and ``return f(s, ...)`` (an effect on the
    state ``s``: ``_set_node``, ``_respond``, ``_send_reply``, ...) becomes ``return s``: the
    step's last effect is lost.

Docstrings, ``assert`` statements and annotations are never mutated.  A mutant is dropped
(and counted) when it does not compile, when its function is the same syntax tree as the
original, or when it is the same tree as an earlier mutant.

Each mutant has an ID (``M0042``, its position in generation order: it moves when
``actions.py`` changes) and a stable *key*, ``function: operator: change`` with the change in
normalised source text (``ast.unparse``), e.g. ``controller_processes_event: drop-disjunct:
d.zombie_writes_unfenced or node.zk_epoch_version == zk.epoch_version =>
node.zk_epoch_version == zk.epoch_version``; no line numbers, so it survives unrelated edits of
the file (a second identical change in one function gets `` #2``).  The triage file is keyed
by it.

Applying a mutant (``applied``)
-------------------------------
The rest of the model reaches the actions through function objects: ``model.next`` binds
``A.func`` into ``ACTION_TABLE`` at import time, and ``model.describe``,
``properties.registry`` and ``properties.kafka_spec`` import helpers by name.  Rather than
re-import every one of those modules, the mutant replaces the ``__code__`` of the one
module-level function that contains the site; every reference, however it was imported,
reaches the same function object and so runs the mutant.  The code is compiled from the
mutated syntax tree of that function alone, with the module's ``__future__`` flags and file
name and the original line numbers, so tracebacks and traces point at the real lines.  Before
any mutant runs, the unmutated function compiled the same way must equal the loaded one
(code-object equality: byte code, constants, names, line table); otherwise the file on disk is
not the code that is loaded (someone edited ``actions.py`` during the run) and the run stops.
``applied`` restores the original code in a ``finally``, so mutants never leak into each
other; a worker (process pool, Spark executor) runs one mutant at a time.

Which configurations (``statement_coverage``)
---------------------------------------------
The correct design is explored once per configuration with every statement of ``actions.py``
instrumented (``set.add(line)`` before it).  A mutant changes only the statement holding its
site.  If a configuration's exploration of the correct design never executes that statement,
the mutant's exploration of that configuration executes exactly the same code and is the
correct design's, state for state: it is equivalent there by construction and is not
explored.  A mutant whose site no configuration executes is *equivalent
(unreached)*: a gap of the configurations, not of the properties, listed apart.

Classification (``run_mutant``)
-------------------------------
The configurations that execute the site are explored in increasing size of the correct
design's state space (so a kill is usually found on the cheapest), each with the full property
registry and the whole-graph checks, stopping at the first violation.  Two shortcuts, both
exact, unless the mutated function is one the clauses, witnesses or quiescence call
(``_registry_reads``): first, the mutant's successors of every state the correct design
reaches are compared with the correct design's (``_same_graph``); if all agree, the mutant's
exploration IS the correct design's and the configuration is done (``same_graph``); second, in
the exploration, a state the correct design also reaches is checked only against the
quiescent clauses (``_mutant_spec``).  The classes:

``killed``
    a property clause (``properties/registry.py``) or a whole-graph check (SETTLE, DEADLOCK,
    PROGRESS) is violated.  The trace is the explorer's shortest one; it is replayed under the
    mutant (it must end in the same violation) and under the correct design (where it must
    not: either a step is not enabled or the end state is fine).  Also killed, by a witness: every
    configuration is complete with nothing violated, but a witness the correct design reaches
    on one of them the mutant reaches on none (``kipcheck check`` fails on it, exit 4).
``equivalent``
    every explored configuration is complete and reaches exactly the correct design's set of
    observations (``observation``).  The projection is STRICTER than
    ``model.observe.observe(state, cfg)`` (what the implementation must match: client
    responses and DescribeCluster endpoints, the writes as (client, writer, writer's epoch),
    the registrations, each controller's ``registered_in_log``): it adds, in full, what the
    world outside the nodes records -- each client's final responses (with the envelope error
    and whether the forward was retried), ZooKeeper (``/controller``, ``/controller_epoch``
    with its zkVersion, every write with the epoch current in ZooKeeper when it landed) and
    the committed metadata log with the quorum's leader and epoch.  ``observe`` alone cannot
    tell a deposed controller's write from a timely one (both are (client, writer, epoch) in
    a snapshot), so an unfenced zombie write would pass as "equivalent" with it.  Excluded
    are the nodes' own bookkeeping (channels, queued events, timers, metadata caches, ghost
    variables), messages in flight and the fault budgets: a mutant that changes only those
    without changing a reachable observation changes nothing anyone outside can see.  We
    compare the SET of reachable observations, not sequences: every clause of the registry
    is a predicate of one state (quiescent ones of a state and its successors), so a
    property can tell two designs apart only through the states they reach.  The result also
    says whether the set of reachable *states* is identical (``identical``) or only the
    observations are (``observably``).
``survived``
    some configuration reaches an observation the correct design cannot (or misses one it
    reaches) and nothing is violated: a gap in the properties, or a harmless change.  The
    result carries the shortest trace (breadth-first) under the mutant to a state whose
    observation the correct design never reaches; when the mutant only loses observations, the
    shortest trace under the correct design to one the mutant never reaches.  Witnesses the
    mutant no longer reaches are listed too (``kipcheck check`` would flag those, exit 4).
``crashed``
    the mutant raises a Python exception (an ``IndexError`` from a negated bounds guard, say).
    The model is then not a transition relation at all; that says nothing about the
    properties, so crashed mutants are listed apart with the exception and the trace to the
    step that raises, and are EXCLUDED from adequacy (neither killed nor survived).
``unbounded``
    a configuration's exploration passes the state bound (``BOUND_FACTOR`` times the correct
    design's reachable states, at least ``BOUND_MIN``) or the per-configuration time bound
    (``TIME_BOUND`` seconds) without a violation: typically a dropped budget decrement that
    makes elections or restarts unbounded, or a changed timeout that multiplies the
    interleavings.  There is no verdict; listed apart, excluded from adequacy.  A violation
    found before the bound still kills: the configurations after the first one cut by the
    bound are searched for a violation only (up to the correct design's number of states, no
    whole-graph checks), which is cheaper than exploring each to the bound.

``adequacy = killed / (killed + survived)``; triaged survivors (reviewed, harmless) still count
as survived in the figure but do not fail the run.  ``adequacy_non_equivalent = killed /
(killed + untriaged survivors)`` counts the triaged ones as equivalent mutants (a legal design
or a changed bound, by a recorded reason), the usual mutation score.

Determinism: generation is a function of the source; ``--sample N`` draws with
``random.Random(seed)``; the explorer is deterministic; so a run's classifications, traces and
counts (everything but the timings) are the same on every executor.
"""
from __future__ import annotations

import __future__
import ast
import copy
import difflib
import hashlib
import inspect
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["Mutant", "Generation", "MutationPlan", "MutantTask", "OPERATORS", "STATUSES",
           "generate", "actions_source", "applied", "statement_coverage", "plan_tasks",
           "run_mutant", "run_mutant_task", "load_triage", "summarize", "TriageError",
           "SourceChanged", "BOUND_FACTOR", "BOUND_MIN", "TIME_BOUND", "DISPLAY_PATH"]

DISPLAY_PATH = "model/actions.py"
OPERATORS = ("drop-conjunct", "drop-disjunct", "negate-guard", "negate-conjunct",
             "negate-condition", "boundary", "off-by-one", "old-value", "skip-field",
             "return-unchanged")
STATUSES = ("killed", "survived", "equivalent", "crashed", "unbounded")
BOUND_FACTOR = 4            # a mutant may reach this many times the correct design's states
BOUND_MIN = 20_000          # ... and at least this many
TIME_BOUND = 600.0          # seconds per configuration: a safety net behind the state bound
_OP_RANK = {op: i for i, op in enumerate(OPERATORS)}


class SourceChanged(RuntimeError):
    """The source of model/actions.py is not the code that is loaded (edited during a run)."""


class TriageError(ValueError):
    """The triage file is malformed."""


# ============================================================================================
# generation


@dataclass(frozen=True)
class Mutant:
    """One change at one site of model/actions.py (picklable: no code, no syntax tree)."""
    index: int
    operator: str
    function: str               # the enclosing def, dotted for nested ones
    top: str                    # the module-level function whose code the mutant replaces
    line: int
    site_lines: tuple           # executing any of these runs the mutated code
    key: str                    # stable: function, operator, change in normalised source
    change: str                 # the change, "before => after" (normalised source)
    diff: str                   # unified diff of the mutated source lines

    @property
    def id(self) -> str:
        return f"M{self.index:04d}"

    @property
    def label(self) -> str:
        return f"{self.id} {self.operator} {DISPLAY_PATH}:{self.line} in {self.function}"

    def to_json(self) -> dict:
        return {"id": self.id, "key": self.key, "operator": self.operator,
                "function": self.function, "line": self.line, "change": self.change,
                "diff": self.diff}


@dataclass
class Generation:
    """The mutants of one source text, with what is needed to compile them."""
    source_sha: str
    path: str                   # the file the code objects name (the loaded module's)
    mutants: tuple
    dropped: dict               # reason -> count: "does not compile", "identical", "duplicate"
    functions: tuple            # module-level function names, in source order
    _edits: dict = field(default_factory=dict, repr=False)    # index -> (top, fn node, edit)
    _flags: int = 0
    _originals: dict = field(default_factory=dict, repr=False)  # top -> fn node

    def code(self, mutant: Mutant):
        """The code object of ``mutant.top`` with the mutation applied."""
        top, fn_node, edit = self._edits[mutant.index]
        with _edited(fn_node, edit) as fn:
            return _compile_function(fn, self.path, self._flags)

    def original_code(self, top: str):
        return _compile_function(self._originals[top], self.path, self._flags)

    def by_id(self) -> dict:
        return {m.id: m for m in self.mutants}


def _norm(node) -> str:
    return " ".join(ast.unparse(node).split())


_FLIP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
         ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In,
         ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}


def _negate(e):
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        return copy.deepcopy(e.operand)
    if isinstance(e, ast.Compare) and len(e.ops) == 1 and type(e.ops[0]) in _FLIP:
        return ast.Compare(copy.deepcopy(e.left), [_FLIP[type(e.ops[0])]()],
                           copy.deepcopy(e.comparators))
    return ast.UnaryOp(ast.Not(), copy.deepcopy(e))


def _int_const(e) -> bool:
    return (isinstance(e, ast.Constant) and isinstance(e.value, int)
            and not isinstance(e.value, bool))


def _call_name(call) -> str:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return ""


def _state_base(e):
    """The name a chain of effects starts from: ``s`` in ``replace(_set_node(s, ...), ...)``,
    ``node`` in ``node._replace(...)``."""
    while True:
        if isinstance(e, ast.Call):
            if isinstance(e.func, ast.Attribute) and e.func.attr == "_replace":
                e = e.func.value
            elif e.args:
                e = e.args[0]
            else:
                return None
        elif isinstance(e, ast.Name):
            return e
        else:
            return None


def _is_record_call(call) -> bool:
    name = _call_name(call)
    return bool(call.keywords) and (name in ("replace", "_replace")
                                    or (isinstance(call.func, ast.Name) and name[:1].isupper()))


def _edits_at(node, ctx: str):
    """(operator, argument, before-node, after-node) for each mutation of ``node``; ``ctx`` is
    "test" (an if/elif/while/conditional/filter test), "operand" (an and/or operand) or ""."""
    out = []
    if isinstance(node, ast.BoolOp):
        name = "drop-conjunct" if isinstance(node.op, ast.And) else "drop-disjunct"
        for i in range(len(node.values)):
            rest = [copy.deepcopy(v) for j, v in enumerate(node.values) if j != i]
            after = rest[0] if len(rest) == 1 else ast.BoolOp(type(node.op)(), rest)
            out.append((name, i, node, after))
    if ctx == "test":
        out.append(("negate-guard", None, node, _negate(node)))
    elif ctx == "operand":
        out.append(("negate-conjunct", None, node, _negate(node)))
    elif isinstance(node, ast.Compare):
        out.append(("negate-condition", None, node, _negate(node)))
    if isinstance(node, ast.Compare):
        for k, op in enumerate(node.ops):
            if type(op) in _BOUNDARY:
                after = copy.deepcopy(node)
                after.ops[k] = _BOUNDARY[type(op)]()
                out.append(("boundary", k, node, after))
    if (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))
            and _int_const(node.right)):
        after = copy.deepcopy(node)
        after.right = ast.Constant(node.right.value + 1)
        out.append(("off-by-one", None, node, after))
        out.append(("old-value", None, node, copy.deepcopy(node.left)))
    if isinstance(node, ast.Call) and _is_record_call(node):
        for i, kw in enumerate(node.keywords):
            if kw.arg is None:
                continue
            after = copy.deepcopy(node)
            del after.keywords[i]
            out.append(("skip-field", i, node, after))
    if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
        base = _state_base(node.value)
        direct = _call_name(node.value) in ("replace", "_replace")
        if base is not None and (base.id == "s" or direct):
            out.append(("return-unchanged", None, node,
                        ast.Return(ast.Name(base.id, ast.Load()))))
    return out


def _change_text(op: str, before, after) -> str:
    if op == "skip-field":
        kw = next(k for k in before.keywords if k not in after.keywords
                  and all(_norm(k) != _norm(a) for a in after.keywords))
        base = _state_base(before)
        head = f"{_call_name(before)}({base.id if base is not None else '...'}, ...)"
        return f"{head} without {kw.arg}={_norm(kw.value)}"
    if op == "return-unchanged":
        base = _state_base(before.value)
        return f"return {_call_name(before.value)}({base.id}, ...) => return {base.id}"
    return f"{_norm(before)} => {_norm(after)}"


def _children(node):
    """(field, index, child) in field order, skipping what is never mutated."""
    for name, value in ast.iter_fields(node):
        if name in ("decorator_list", "returns", "args", "type_comment") and isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if name == "annotation":
            continue
        if isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, ast.AST):
                    yield name, i, v
        elif isinstance(value, ast.AST):
            yield name, None, value


def _is_docstring(stmt, parent) -> bool:
    return (isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and parent.body and parent.body[0] is stmt and isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str))


def _sites(fn):
    """(path from ``fn``, node, context, enclosing statement, dotted def name) in source
    order (pre-order over the fields, which is source order for the model's code)."""
    out = []

    def walk(node, path, stmt, name):
        for fname, idx, child in _children(node):
            if isinstance(child, ast.Assert) or _is_docstring(child, node):
                continue
            cpath = path + ((fname, idx),)
            cname = name
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                cname = f"{name}.{child.name}"
            cstmt = child if isinstance(child, ast.stmt) else stmt
            if isinstance(child, ast.expr_context) or isinstance(child, (ast.operator,
                                                                         ast.cmpop,
                                                                         ast.boolop,
                                                                         ast.unaryop)):
                continue
            if fname == "test" and isinstance(node, (ast.If, ast.While, ast.IfExp)):
                ctx = "test"
            elif fname == "ifs" and isinstance(node, ast.comprehension):
                ctx = "test"
            elif fname == "values" and isinstance(node, ast.BoolOp):
                ctx = "operand"
            else:
                ctx = ""
            out.append((cpath, child, ctx, cstmt, cname))
            walk(child, cpath, cstmt, cname)
    walk(fn, (), fn, fn.name)
    return out


def _get(node, path):
    for fname, idx in path:
        node = getattr(node, fname) if idx is None else getattr(node, fname)[idx]
    return node


@contextmanager
def _edited(fn_node, edit):
    """``fn_node`` with ``edit`` = (path, after-node) applied in place for the block, then
    restored (copying a whole function's tree per mutant costs seconds over a run)."""
    path, after = edit
    parent = _get(fn_node, path[:-1])
    fname, idx = path[-1]
    old = getattr(parent, fname) if idx is None else getattr(parent, fname)[idx]
    new = copy.deepcopy(after)
    for n in ast.walk(new):                 # new nodes take the site's position
        if "lineno" in getattr(n, "_attributes", ()):
            ast.copy_location(n, old)
    if idx is None:
        setattr(parent, fname, new)
    else:
        getattr(parent, fname)[idx] = new
    try:
        yield fn_node
    finally:
        if idx is None:
            setattr(parent, fname, old)
        else:
            getattr(parent, fname)[idx] = old


def _future_flags(tree) -> int:
    flags = 0
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            for alias in stmt.names:
                feature = getattr(__future__, alias.name, None)
                if feature is not None:
                    flags |= feature.compiler_flag
    return flags


def _compile_function(fn_node, path: str, flags: int):
    mod = ast.Module(body=[fn_node], type_ignores=[])
    code = compile(mod, path, "exec", flags=flags, dont_inherit=True)
    for const in code.co_consts:
        if inspect.iscode(const) and const.co_name == fn_node.name:
            return const
    raise ValueError(f"no code object for {fn_node.name}")    # pragma: no cover


def _header_end(stmt) -> int:
    if isinstance(stmt, (ast.If, ast.While)):
        return stmt.test.end_lineno
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return stmt.iter.end_lineno
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return stmt.items[-1].context_expr.end_lineno
    if isinstance(stmt, ast.Try):
        return stmt.lineno
    return stmt.end_lineno


def _header_text(stmt, first_line: str) -> str:
    """The statement's header (compound) or the statement (simple), unparsed, one line."""
    indent = first_line[:len(first_line) - len(first_line.lstrip())]
    if isinstance(stmt, ast.If):
        kw = "elif" if first_line.lstrip().startswith("elif") else "if"
        return f"{indent}{kw} {_norm(stmt.test)}:"
    if isinstance(stmt, ast.While):
        return f"{indent}while {_norm(stmt.test)}:"
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return f"{indent}for {_norm(stmt.target)} in {_norm(stmt.iter)}:"
    return indent + _norm(stmt)


def actions_source():
    """(path, text) of the loaded ``model.actions``'s source file."""
    import model.actions as mod
    path = inspect.getsourcefile(mod)
    with open(path, encoding="utf-8") as f:
        return path, f.read()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def generate(source: str | None = None, path: str | None = None) -> Generation:
    """Every mutant of ``source`` (default: the loaded model/actions.py), in a deterministic
    order: functions in source order, sites by (line, column), operators in ``OPERATORS``
    order."""
    if source is None:
        path, source = actions_source()
    path = path or DISPLAY_PATH
    tree = ast.parse(source, path)
    flags = _future_flags(tree)
    lines = source.splitlines()
    cands = []
    originals = {}
    functions = []
    for fn in tree.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        functions.append(fn.name)
        originals[fn.name] = fn
        for pos, (spath, node, ctx, stmt, name) in enumerate(_sites(fn)):
            for k, (op, _arg, before, after) in enumerate(_edits_at(node, ctx)):
                order = (node.lineno, node.col_offset, pos, _OP_RANK[op], k)
                cands.append((order, fn, spath, node, op, before, after, stmt, name))
    cands.sort(key=lambda c: (c[1].lineno,) + c[0])
    dropped = {"does not compile": 0, "identical": 0, "duplicate": 0}
    mutants, edits = [], {}
    seen_trees: set = set()
    seen_keys: dict = {}
    orig_dumps = {name: ast.dump(fn) for name, fn in originals.items()}
    for _order, fn, spath, node, op, before, after, stmt, name in cands:
        edit = (spath, after)
        with _edited(fn, edit) as mfn:
            dump = ast.dump(mfn)
            if dump == orig_dumps[fn.name]:
                dropped["identical"] += 1
                continue
            if (fn.name, dump) in seen_trees:
                dropped["duplicate"] += 1
                continue
            try:
                _compile_function(mfn, path, flags)
            except (SyntaxError, ValueError, TypeError):
                dropped["does not compile"] += 1
                continue
            # the statement holding the site, mutated, gives the new header text
            header = _header_text(_get(mfn, _stmt_path(fn, spath)), lines[stmt.lineno - 1])
        seen_trees.add((fn.name, dump))
        change = _change_text(op, before, after)
        key = f"{name}: {op}: {change}"
        n = seen_keys[key] = seen_keys.get(key, 0) + 1
        if n > 1:
            key += f" #{n}"
        first, last = stmt.lineno, _header_end(stmt)
        new_lines = lines[:first - 1] + [header] + lines[last:]
        diff = "\n".join(difflib.unified_diff(lines[first - 2:last + 1],
                                              new_lines[first - 2:first + 1],
                                              f"a/{DISPLAY_PATH}", f"b/{DISPLAY_PATH}",
                                              n=1, lineterm=""))
        diff = _renumber(diff, first - 1)
        idx = len(mutants)
        mutants.append(Mutant(idx, op, name, fn.name, node.lineno,
                              tuple(range(first, last + 1)), key, change, diff))
        edits[idx] = (fn.name, fn, edit)
    gen = Generation(_sha(source), path, tuple(mutants), dropped, tuple(functions))
    gen._edits = edits
    gen._flags = flags
    gen._originals = originals
    return gen


def _renumber(diff: str, offset: int) -> str:
    """Shift the hunk line numbers of a diff of a slice starting at line ``offset + 1``."""
    import re

    def shift(m):
        a, b, c, d = m.group(1), m.group(2), m.group(3), m.group(4)
        return (f"@@ -{int(a) + offset - 1}{b or ''} +{int(c) + offset - 1}{d or ''} @@")
    return re.sub(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@", shift, diff, flags=re.M)


def _stmt_path(fn, spath):
    """The path (from ``fn``) of the innermost statement on ``spath``."""
    node, best = fn, ()
    for i, (fname, idx) in enumerate(spath):
        node = getattr(node, fname) if idx is None else getattr(node, fname)[idx]
        if isinstance(node, ast.stmt):
            best = spath[:i + 1]
    return best


# ============================================================================================
# applying a mutant


def check_loaded(gen: Generation, tops=None) -> None:
    """SourceChanged unless every (or each of ``tops``) module-level function compiled from
    ``gen``'s source equals the loaded one."""
    import model.actions as mod
    for top in tops or gen.functions:
        fn = getattr(mod, top, None)
        if fn is None or gen.original_code(top) != fn.__code__:
            raise SourceChanged(f"{DISPLAY_PATH} on disk is not the loaded code (function {top} "
                                f"differs; was the file edited during the run?)")


@contextmanager
def applied(gen: Generation, mutant: Mutant):
    """Run the block with ``mutant`` in place of the correct ``mutant.top``."""
    import model.actions as mod
    fn = getattr(mod, mutant.top)
    original = fn.__code__
    check_loaded(gen, (mutant.top,))
    fn.__code__ = gen.code(mutant)
    try:
        yield
    finally:
        fn.__code__ = original


# ============================================================================================
# line coverage of the correct design


_HITS = "__kipcheck_statements_run__"       # the global the instrumented code adds to


class _Instrument(ast.NodeTransformer):
    """Before every statement, ``_HITS.add(its first line)``."""

    def _block(self, stmts):
        out = []
        for st in stmts:
            self.visit(st)
            hit = ast.parse(f"{_HITS}.add({st.lineno})").body[0]
            for n in ast.walk(hit):
                if "lineno" in getattr(n, "_attributes", ()):
                    ast.copy_location(n, st)
            out += [hit, st]
        return out

    def generic_visit(self, node):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, name, self._block(block))
        for name, value in ast.iter_fields(node):
            if name in ("body", "orelse", "finalbody"):
                continue
            if isinstance(value, list):
                for v in value:
                    if isinstance(v, ast.AST):
                        self.visit(v)
            elif isinstance(value, ast.AST):
                self.visit(value)
        return node


def statement_coverage(config_names, gen: Generation | None = None, progress=None) -> dict:
    """config name -> (frozenset of the first lines of the model/actions.py statements that
    the correct design's exploration executes, distinct states).

    Measured by instrumentation rather than a line tracer (ten times cheaper): each function
    runs, for the exploration, a copy of itself with ``set.add(line)`` before every statement;
    a statement that executes adds its line.  A mutant's site is in one statement; if that
    statement never executes, the mutated code never runs."""
    import model.actions as mod
    from properties.explore import explore
    from properties.kafka_spec import KafkaSpec, get_config
    gen = gen or generate()
    check_loaded(gen)
    codes = {}
    for top, fn_node in gen._originals.items():
        inst = _Instrument().visit(copy.deepcopy(fn_node))
        codes[top] = _compile_function(inst, gen.path, gen._flags)
    out = {}
    for name in config_names:
        hits: set = set()
        originals = {top: getattr(mod, top).__code__ for top in codes}
        setattr(mod, _HITS, hits)
        t = time.perf_counter()
        try:
            for top, code in codes.items():
                getattr(mod, top).__code__ = code
            r = explore(KafkaSpec(get_config(name)))
        finally:
            for top, code in originals.items():
                getattr(mod, top).__code__ = code
            delattr(mod, _HITS)
        out[name] = (frozenset(hits), r.distinct)
        if progress is not None:
            print(f"[mutate] {name}: {len(hits)} statements of {DISPLAY_PATH} run "
                  f"({r.distinct:,} states, {time.perf_counter() - t:.1f} s)", file=progress,
                  flush=True)
    return out


# ============================================================================================
# the run: plan and tasks


@dataclass(frozen=True)
class MutationPlan:
    """What every task of a run shares (sent to the workers with each task: keep it small)."""
    source_sha: str
    configs: tuple              # the configurations selected
    bound_factor: int = BOUND_FACTOR
    bound_min: int = BOUND_MIN
    time_bound: float = TIME_BOUND


@dataclass(frozen=True)
class MutantTask:
    index: int                  # the mutant's index (generation order)
    key: str                    # its ID (executors label tasks with it)
    mutant_key: str             # its stable key: a worker checks it generated the same mutant
    configs: tuple              # configurations to explore, in order
    skipped: tuple = ()         # selected configurations that never run its site
    seed: int = 0               # the run's seed (executors name a failed task with it)


def plan_tasks(gen: Generation, mutants, coverage: dict, seed: int = 0) -> list:
    """One task per mutant: the configurations of ``coverage`` (``statement_coverage``) that
    execute the statement holding its site, smallest state space first."""
    order = sorted(coverage, key=lambda c: (coverage[c][1], c))
    tasks = []
    for m in mutants:
        run = tuple(c for c in order if m.site_lines[0] in coverage[c][0])
        tasks.append(MutantTask(m.index, m.id, m.key, run,
                                tuple(c for c in order if c not in run), seed))
    return tasks


# ---- worker side ----------------------------------------------------------------------------

_GEN: dict = {}                 # source sha -> Generation (per process)
_BASE: dict = {}                # (source sha, config) -> _Baseline


@dataclass
class _Baseline:
    """The correct design's exploration of one configuration, as a mutant is compared with
    it: each reachable state's fingerprint with the index of its observation."""
    observations: tuple         # the distinct observations, in discovery order
    obs_of: dict                # fingerprint -> index into observations
    fingerprints: object        # sorted array('Q')
    distinct: int
    witnesses: tuple            # reached
    graph: list = field(default_factory=list)   # (state, ((Step, fingerprint), ...)), BFS


_MASK = 0xFFFFFFFFFFFFFFFF


def observation(state, cfg):
    """What the analysis compares (module docstring): ``model.observe.observe`` plus, in full,
    the records the world outside the brokers and controllers keeps: every client's final
    responses, ZooKeeper (``/controller``, ``/controller_epoch`` and its zkVersion, every
    config/ACL write with the epoch current in ZooKeeper when it landed) and the committed
    metadata log with the quorum's leader and epoch."""
    from model.observe import observe
    q = state.quorum
    return (observe(state, cfg), tuple(cl.responses for cl in state.clients), state.zk, q.log,
            q.leader, q.epoch)


def _generation(plan: MutationPlan) -> Generation:
    gen = _GEN.get(plan.source_sha)
    if gen is None:
        path, source = actions_source()
        if _sha(source) != plan.source_sha:
            raise SourceChanged(f"{DISPLAY_PATH} changed since the run was planned (sha "
                                f"{plan.source_sha}, now {_sha(source)}); run it again")
        gen = _GEN[plan.source_sha] = generate(source, path)
    return gen


class _Stop(Exception):
    """The time bound of one exploration passed."""


def _registry_reads() -> frozenset:
    """The module-level functions of model/actions.py that the properties' clauses, the
    witnesses or quiescence may call (directly or through another actions function): for a
    mutant of one of them, a state the correct design reaches may evaluate differently."""
    import model.actions as mod
    from properties import registry
    funcs = {n for n, v in vars(mod).items() if inspect.isfunction(v) and v.__module__ ==
             mod.__name__}

    def names(code):
        out = set(code.co_names)
        for c in code.co_consts:
            if inspect.iscode(c):
                out |= names(c)
        return out
    uses = {f: names(getattr(mod, f).__code__) & funcs for f in funcs}
    reads = set()
    fns = [v for v in vars(registry).values() if inspect.isfunction(v)]
    fns += [c.holds for p in registry.PROPERTIES for c in p.clauses]
    fns += [w.seen for w in registry.WITNESSES.values()]
    for v in fns:
        reads |= names(v.__code__) & funcs
        if v.__module__ == mod.__name__:
            reads.add(v.__name__)
    reads.add("time_pending")               # model.next.quiescent
    todo = list(reads)
    while todo:
        for g in uses.get(todo.pop(), ()):
            if g not in reads:
                reads.add(g)
                todo.append(g)
    return frozenset(reads)


def _mutant_spec(cfg, *, target=None, deadline=None, base: _Baseline | None = None):
    """A KafkaSpec that records the observations of the states it expands, turns an
    exception of the model into the pseudo-violation CRASH (with the state it happened in),
    and, with ``target`` (observation -> bool), reports the first state whose observation
    satisfies it as the pseudo-violation TARGET instead of checking properties.

    With ``base`` (the correct design's exploration): a state the correct design also reaches
    (same fingerprint) satisfies every ``always`` clause, since the correct design passed
    them in the same state (clauses are predicates of the state, and the caller passes no
    ``base`` for a mutant of a function the clauses call), and its observation is known; only
    the ``quiescent`` clauses are checked there, with the mutant's successors.  A state of
    its own is checked in full.  This skips most of the checking for mutants that change
    little."""
    from model.config import Design
    from model.next import quiescent
    from properties.kafka_spec import KafkaSpec
    from properties.registry import PROPERTIES, QUIESCENT
    observe = observation
    later = tuple((p.id, c) for p in PROPERTIES for c in p.clauses if c.kind == QUIESCENT)
    design = Design()
    obs_of = base.obs_of if base is not None else {}

    class MutantSpec(KafkaSpec):
        def __init__(self):
            super().__init__(cfg)
            self.observations: set = set()      # observations of states the correct design
            self.known: set = set()             # lacks; indices into base.observations
            self.crash = None                   # (exception, state)
            self.count = 0

        def successors(self, state):
            try:
                return super().successors(state)
            except Exception as e:      # the mutant's own failure, reported as data
                if self.crash is None:
                    self.crash = (e, state)
                return []

        def violation(self, state, succ):
            if self.crash is not None and self.crash[1] is state:
                return "CRASH"
            self.count += 1
            if deadline is not None and not self.count & 1023 and time.monotonic() > deadline:
                raise _Stop()
            try:
                if target is not None:
                    return "TARGET" if target(observe(state, cfg)) else None
                i = obs_of.get(hash(state) & _MASK)
                if i is not None:
                    self.known.add(i)
                    if later and quiescent(state, cfg, design, succ):
                        for pid, clause in later:
                            if not clause.holds(state, cfg, design):
                                return pid
                    return None
                self.observations.add(observe(state, cfg))
                return super().violation(state, succ)
            except Exception as e:
                self.crash = (e, state)
                return "CRASH"

        def reached_observations(self) -> set:
            return self.observations | {base.observations[i] for i in self.known}

        def settled(self, state, succ):
            try:
                return super().settled(state, succ)
            except Exception as e:
                if self.crash is None:
                    self.crash = (e, state)
                return True

        def witnesses_hit(self, prev, st, nxt, wanted):
            try:
                return super().witnesses_hit(prev, st, nxt, wanted)
            except Exception as e:
                if self.crash is None:
                    self.crash = (e, nxt)
                return []

    return MutantSpec()


def _same_graph(cfg, base: _Baseline) -> bool:
    """Does the code in place give every state the correct design reaches exactly the
    correct design's successors (same steps, same fingerprints)?  Then, by induction from
    the initial state, it reaches the same states by the same transitions, and the
    exploration would be the correct design's, verdicts included (the caller makes sure no
    property, witness or quiescence reads the mutated function).  Stops at the first state
    that differs (breadth-first order: usually within a few states)."""
    from model.config import Design
    from model.next import successors
    d = Design()
    try:
        for state, expected in base.graph:
            got = successors(state, cfg, d)
            if len(got) != len(expected):
                return False
            for (st, t), (est, efp) in zip(got, expected):
                if st != est or hash(t) & _MASK != efp:
                    return False
    except Exception:           # the full exploration reports it
        return False
    return True


def _baseline(plan: MutationPlan, name: str) -> _Baseline:
    key = (plan.source_sha, name)
    b = _BASE.get(key)
    if b is None:
        from properties.explore import explore
        observe = observation
        from properties.kafka_spec import KafkaSpec, get_config
        cfg = get_config(name)
        seen: dict = {}

        class Recording(KafkaSpec):
            def violation(self, state, succ):
                obs = observe(state, cfg)
                seen[hash(state) & _MASK] = index.setdefault(obs, len(index))
                graph.append((state, tuple((st, hash(t) & _MASK) for st, t in succ)))
                return super().violation(state, succ)
        index: dict = {}
        graph: list = []
        r = explore(Recording(cfg), keep_fingerprints=True)
        if r.violation or r.graph_violation or not r.complete:
            raise RuntimeError(f"the correct design does not pass {name} "
                               f"({r.violation or r.graph_violation or 'incomplete'}): "
                               f"mutation adequacy needs a passing baseline")
        b = _BASE[key] = _Baseline(tuple(index), seen, r.fingerprints, r.distinct,
                                   r.witnesses_reached, graph)
    return b


def _describe(cfg, steps) -> list:
    from model.config import Design
    from model.describe import describe_step, describe_trace
    try:
        return describe_trace(cfg, Design(), steps)
    except Exception:           # the mutant breaks the describer: the steps alone
        return [describe_step(cfg, st) for st in steps]


def _jsonable(x):
    return [_jsonable(v) for v in x] if isinstance(x, (tuple, list)) else x


def _steps_json(steps) -> list:
    """Steps as JSON values (``[action, [args...]]``, a message as a list of ints)."""
    return [_jsonable(st.to_json()) for st in steps]


def _replay_violation(cfg, steps):
    """(replays, property/clause or graph check at the end) of ``steps`` under whatever code
    is in place now; replays False when a step is not enabled."""
    from model.config import Design
    from model.next import replay, successors
    from properties.registry import first_violation
    d = Design()
    try:
        states = replay(cfg, d, steps)
    except ValueError:
        return False, None
    end = states[-1]
    found = first_violation(end, cfg, d, successors(end, cfg, d))
    return True, (list(found) if found else None)


def _one_line_exception(e: BaseException) -> str:
    tb = e.__traceback__
    where = ""
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith(("actions.py",)):
            where = f" (raised at {DISPLAY_PATH}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name})"
        tb = tb.tb_next
    msg = " ".join(str(e).split())[:200]
    return f"{type(e).__name__}: {msg}{where}" if msg else f"{type(e).__name__}{where}"


def _raising_step(cfg, state):
    """The first step (Next order) whose action raises in ``state``, and the exception."""
    from model.config import Design
    from model.next import _plan
    from model.step import Step
    d = Design()
    msgs = sorted(state.network)
    for name, fn, kind, msg_kinds, args in _plan(cfg):
        if kind == "msg":
            calls = [(Step(name, (tuple(m),)), (m,)) for m in msgs if m.kind in msg_kinds]
        elif kind == "none":
            calls = [(Step(name, ()), ())]
        else:
            calls = [(Step(name, (a,)), (a,)) for a in args]
        for st, a in calls:
            try:
                fn(state, cfg, d, *a)
            except Exception as e:
                return st, e
    return None, None


def run_mutant(plan: MutationPlan, gen: Generation, mutant: Mutant, configs) -> dict:
    """Classify ``mutant`` on ``configs`` (in order); a JSON-ready record."""
    from properties.explore import explore
    from properties.kafka_spec import get_config
    t0 = time.perf_counter()
    rec: dict = {"index": mutant.index, "id": mutant.id, "key": mutant.key,
                 "status": None, "configs": [], "source_sha": plan.source_sha}
    bases = {name: _baseline(plan, name) for name in configs}      # unmutated code
    reads = _registry_reads()
    status = None
    unbounded = False
    diffs = []                   # (config, new, missing)
    with applied(gen, mutant):
        for name in configs:
            cfg = get_config(name)
            base = bases[name]
            # after a configuration passed the bound the verdict can only be a kill: the
            # rest are searched for a violation up to the correct design's own size
            bound = (base.distinct if unbounded
                     else max(plan.bound_factor * base.distinct, plan.bound_min))
            tc = time.perf_counter()
            if not unbounded and mutant.top not in reads and _same_graph(cfg, base):
                rec["configs"].append({"config": name, "seconds": round(
                    time.perf_counter() - tc, 3), "distinct": base.distinct, "complete": True,
                    "stop": None, "same_graph": True, "witnesses_missing": [],
                    "new_observations": 0, "missing_observations": 0, "same_states": True})
                continue
            spec = _mutant_spec(cfg, deadline=time.monotonic() + plan.time_bound,
                                base=None if mutant.top in reads else base)
            try:
                r = explore(spec, max_states=bound, keep_fingerprints=True,
                            graph_checks=not unbounded)
            except _Stop:
                r = None
            except Exception as e:      # raised outside the actions' calls (a fingerprint)
                rec["configs"].append({"config": name,
                                       "seconds": round(time.perf_counter() - tc, 3)})
                rec["crash"] = {"config": name, "error": _one_line_exception(e),
                                "steps": [], "descriptions": []}
                status = "crashed"
                break
            row = {"config": name, "seconds": round(time.perf_counter() - tc, 3)}
            if unbounded:
                row["kill_search_only"] = True
            rec["configs"].append(row)
            if r is None:
                row.update(complete=False, stop="time bound")
                unbounded = True
                continue
            row.update(distinct=r.distinct, complete=r.complete, stop=r.stop_reason)
            if r.violation == "CRASH":
                exc, state = spec.crash
                step, raised = _raising_step(cfg, state)
                steps = tuple(r.trace) + ((step,) if step is not None else ())
                rec["crash"] = {"config": name,
                                "error": _one_line_exception(raised or exc),
                                "steps": _steps_json(steps), "descriptions": _describe(
                                    cfg, steps)}
                status = "crashed"
                break
            if r.violation is not None or r.graph_violation is not None:
                if r.violation is not None:
                    steps = tuple(r.trace)
                    clause = spec.clause_violated(r.violating_state)
                    prop, cl = r.violation, (clause[1] if clause else None)
                else:
                    steps = tuple(r.graph_trace) + tuple(r.graph_stem) + tuple(r.graph_loop)
                    prop, cl = r.graph_violation, None
                kill_steps = steps
                kill = {"by": "property", "config": name, "property": prop, "clause": cl,
                        "steps": _steps_json(steps), "descriptions": _describe(cfg, steps)}
                if r.violation is not None:
                    ok, found = _replay_violation(cfg, steps)
                    kill["replays_under_mutant"] = ok and found is not None
                rec["kill"] = kill
                row["violation"] = [prop, cl]
                status = "killed"
                break
            if not r.complete or unbounded:
                unbounded = True
                continue
            row["witnesses_missing"] = [w for w in base.witnesses
                                        if w not in r.witnesses_reached]
            reached = spec.reached_observations()
            new = reached - set(base.observations)
            missing = set(base.observations) - reached
            row["new_observations"] = len(new)
            row["missing_observations"] = len(missing)
            row["same_states"] = (r.fingerprints == base.fingerprints)
            if new or missing:
                diffs.append((name, new, missing))
        if status is None and not unbounded and diffs:
            # the shortest trace under the mutant to an observation the correct design never
            # reaches; else, under the correct design, to one the mutant never reaches
            name, new, missing = next((x for x in diffs if x[1]), diffs[0])
            cfg = get_config(name)
            if new:
                spec = _mutant_spec(cfg, target=new.__contains__)
                r = explore(spec, graph_checks=False)
                steps = tuple(r.trace)
                rec["difference"] = {"config": name, "direction": "new",
                                     "observation": repr(_obs(r.violating_state, cfg)),
                                     "state": _state_lines(cfg, r.violating_state),
                                     "steps": _steps_json(steps),
                                     "descriptions": _describe(cfg, steps)}
            else:
                rec["difference"] = {"config": name, "direction": "missing"}
    if rec.get("difference", {}).get("direction") == "missing":
        # under the correct design (the mutant is no longer in place)
        name = rec["difference"]["config"]
        cfg = get_config(name)
        missing = next(x[2] for x in diffs if x[0] == name)
        spec = _mutant_spec(cfg, target=missing.__contains__)
        r = explore(spec, graph_checks=False)
        steps = tuple(r.trace)
        rec["difference"].update(observation=repr(_obs(r.violating_state, cfg)),
                                 state=_state_lines(cfg, r.violating_state),
                                 steps=_steps_json(steps), descriptions=_describe(cfg, steps))
    if status == "killed" and "replays_under_mutant" in rec["kill"]:
        ok, found = _replay_violation(get_config(rec["kill"]["config"]), kill_steps)
        rec["kill"]["violates_under_correct"] = bool(ok and found)
    lost = _witnesses_lost(bases, rec["configs"]) if status is None and not unbounded else ()
    if status is None:
        if unbounded:
            status = "unbounded"
        elif lost:
            # kipcheck check fails (exit 4) on it: the mutant no longer does something the
            # correct design does on these configurations, and nothing else would say so
            status = "killed"
            rec["kill"] = {"by": "witness", "property": "WITNESS", "clause": lost[0],
                           "witnesses": list(lost),
                           "configs": [name for name in configs
                                       if set(lost) & set(bases[name].witnesses)],
                           "steps": [], "descriptions": []}
        elif diffs:
            status = "survived"
        else:
            status = "equivalent"
            rec["equivalence"] = ("identical" if all(row.get("same_states")
                                                     for row in rec["configs"])
                                  else "observably")
    rec["status"] = status
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    return rec


def _witnesses_lost(bases: dict, rows) -> tuple:
    """The witnesses the correct design reaches on some of the configurations and the mutant
    on none (``kipcheck check`` asks each witness of some configuration of its selection)."""
    want, got = set(), set()
    for row in rows:
        base = bases[row["config"]].witnesses
        want.update(base)
        got.update(w for w in base if w not in row.get("witnesses_missing", ()))
    return tuple(sorted(want - got))


def _obs(state, cfg):
    from model.observe import observe
    return observe(state, cfg)


def _state_lines(cfg, state) -> list:
    """The observable parts of ``state`` in Kafka's words (for a survivor's report)."""
    from model.config import Design
    from model.describe import describe_fields
    try:
        return describe_fields(cfg, Design(), state, ("active-controller", "zk-writes",
                                                      "metadata-log", "registrations",
                                                      "client-responses"))
    except Exception:           # the mutant breaks a renderer: the projection alone
        return [repr(_obs(state, cfg))]


def run_mutant_task(plan: MutationPlan, task: MutantTask) -> dict:
    """A worker's entry point (serial, process pool, Spark): classify one mutant."""
    import os
    import socket
    gen = _generation(plan)
    if task.index >= len(gen.mutants) or gen.mutants[task.index].key != task.mutant_key:
        raise SourceChanged(f"mutant {task.key} is not the one planned ({task.mutant_key!r}); "
                            f"{DISPLAY_PATH} changed during the run")
    mutant = gen.mutants[task.index]
    if not task.configs:
        rec = {"index": mutant.index, "id": mutant.id, "key": mutant.key,
               "status": "equivalent", "equivalence": "unreached", "configs": [],
               "seconds": 0.0, "source_sha": plan.source_sha}
    else:
        rec = run_mutant(plan, gen, mutant, task.configs)
    rec["skipped_configs"] = list(task.skipped)
    rec["worker"] = f"{socket.gethostname()}/{os.getpid()}"
    return rec


# ============================================================================================
# triage and summary


TRIAGE_RESOURCE = "adequacy_triage.toml"


def _toml_loads(text: str) -> dict:
    from properties.inputs import InputError, loads_toml
    try:
        return loads_toml(text, TRIAGE_RESOURCE)
    except InputError as e:
        raise TriageError(str(e)) from None


def load_triage(text: str | None = None) -> dict:
    """The reviewed survivors: {"target": float, "entries": {key: reason}}.  Default: the
    package's ``properties/adequacy_triage.toml`` (package data)."""
    if text is None:
        from importlib import resources
        text = resources.files("properties").joinpath(TRIAGE_RESOURCE).read_text("utf-8")
    data = _toml_loads(text)
    target = data.get("adequacy", {}).get("target", 0.0)
    if not isinstance(target, (int, float)) or not 0 <= target <= 1:
        raise TriageError(f"{TRIAGE_RESOURCE}: [adequacy] target must be a number in [0, 1]")
    entries = {}
    for i, e in enumerate(data.get("survivor", [])):
        if (not isinstance(e, dict) or not isinstance(e.get("key"), str)
                or not isinstance(e.get("reason"), str) or not e["reason"].strip()):
            raise TriageError(f"{TRIAGE_RESOURCE}: [[survivor]] {i + 1} needs key and reason "
                              f"(non-empty strings)")
        if e["key"] in entries:
            raise TriageError(f"{TRIAGE_RESOURCE}: key listed twice: {e['key']!r}")
        entries[e["key"]] = " ".join(e["reason"].split())
    return {"target": float(target), "entries": entries}


def summarize(records, triage: dict) -> dict:
    """Counts per class, adequacy, and the survivors split into triaged and untriaged."""
    counts = {s: 0 for s in STATUSES}
    unreached = identical = 0
    for r in records:
        counts[r["status"]] += 1
        if r["status"] == "equivalent":
            if r.get("equivalence") == "unreached":
                unreached += 1
            elif r.get("equivalence") == "identical":
                identical += 1
    killed, survived = counts["killed"], counts["survived"]
    by_witness = sum(1 for r in records
                     if r["status"] == "killed" and r.get("kill", {}).get("by") == "witness")
    adequacy = killed / (killed + survived) if killed + survived else 1.0
    entries = triage["entries"]
    triaged = [r for r in records if r["status"] == "survived" and r["key"] in entries]
    untriaged = [r for r in records if r["status"] == "survived" and r["key"] not in entries]
    # a triaged survivor was reviewed as harmless: equivalent to the correct design as far as
    # the KIPs' intent goes; over the rest ("non-equivalent"), the figure issue 14 targets
    rest = killed + len(untriaged)
    return {"counts": counts, "adequacy": adequacy,
            "adequacy_non_equivalent": killed / rest if rest else 1.0,
            "target": triage["target"],
            "equivalent_unreached": unreached, "equivalent_identical": identical,
            "killed_by_witness": by_witness,
            "triaged": [r["id"] for r in triaged], "untriaged": [r["id"] for r in untriaged],
            "ok": not untriaged and adequacy >= triage["target"]}


def sample_mutants(mutants, n: int | None, seed: int):
    """``n`` mutants drawn with ``random.Random(seed)`` (in generation order), or all."""
    if n is None or n >= len(mutants):
        return list(mutants)
    picked = random.Random(seed).sample(range(len(mutants)), n)
    return [mutants[i] for i in sorted(picked)]
