"""The encoding checked against the executable model, state by state.

For the states the explorer reaches (all, or a seeded sample) and every action instance:

1. Z3's guard of the instance holds exactly when the model's action is enabled;
2. the encoding's successor denotes the model's successor (decoded back to a ``State`` and
   compared with ``==``), within the capacities (``fits`` holds);
3. on a sample, through the solver and the same Next formula BMC unrolls: with the state
   fixed and the instance chosen, Z3 finds the model's successor and no other (every other
   candidate is rejected), or none where the model's action is disabled;
4. the Z3 clauses of P1-P4 and the quiescence predicate agree with the registry's Python
   predicates, and (correct design) every strengthening invariant holds.

With ``arbitrary=N``, 1, 2 and 4 (not the invariants) are also checked on N arbitrary states
(``properties.symbolic.arbitrary``): well-typed states that satisfy the strengthening
invariants but are not reachable -- the states k-induction starts from, where an encoding
that agrees on every reachable state may still disagree.  On them a model step whose
successor outgrows the layout's capacities is one the encoding rightly does not take (every
statement of the engine is about the runs within the capacities); it is counted, not reported.

Evaluating Z3 terms on tens of thousands of concrete states through the solver would take
minutes, so each instance's guard and update terms are compiled once into a Python function
(``compile_terms``: a straight-line evaluation of the Z3 DAG with Z3's semantics for the
operators the encoding uses) and evaluated per state.  The compiled code evaluates the
formulas Z3 sees; it is not a second copy of the model.
"""
from __future__ import annotations

import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import z3

from model import next as model_next
from model.step import Step
from properties.symbolic.next import Encoding, Instance
from properties.symbolic.state import CapacityExceeded, Layout

_OPS = {
    z3.Z3_OP_AND: " and ", z3.Z3_OP_OR: " or ", z3.Z3_OP_ADD: " + ", z3.Z3_OP_MUL: " * ",
}
_BIN = {z3.Z3_OP_EQ: "==", z3.Z3_OP_LE: "<=", z3.Z3_OP_LT: "<", z3.Z3_OP_GE: ">=",
        z3.Z3_OP_GT: ">", z3.Z3_OP_SUB: "-", z3.Z3_OP_IFF: "=="}


class _Dag:
    """The shape of Z3 terms, read once per node through the C API: (op, args, payload) by
    AST id, where payload is a numeral's value or a variable's name.  Z3 reuses the id of a
    freed term: the caller keeps every term it compiles alive as long as the _Dag lives."""

    def __init__(self):
        self.ctx = z3.main_ctx().ref()
        self.meta: dict[int, tuple] = {}

    def node(self, ast) -> int:
        C, ctx = z3.z3core, self.ctx
        key = C.Z3_get_ast_id(ctx, ast)
        if key in self.meta:
            return key
        kind = C.Z3_get_ast_kind(ctx, ast)
        if kind == z3.Z3_NUMERAL_AST:
            self.meta[key] = ("num", (), int(C.Z3_get_numeral_string(ctx, ast)))
            return key
        if kind != z3.Z3_APP_AST:
            raise NotImplementedError(f"AST kind {kind}")
        decl = C.Z3_get_app_decl(ctx, ast)
        op = C.Z3_get_decl_kind(ctx, decl)
        n = C.Z3_get_app_num_args(ctx, ast)
        if op == z3.Z3_OP_UNINTERPRETED and n == 0:
            name = C.Z3_get_symbol_string(ctx, C.Z3_get_decl_name(ctx, decl))
            self.meta[key] = ("var", (), name)
            return key
        args = tuple(self.node(C.Z3_get_app_arg(ctx, ast, i)) for i in range(n))
        # AtMost(..., k) keeps k as a parameter of its declaration
        payload = C.Z3_get_decl_int_parameter(ctx, decl, 0) if op == z3.Z3_OP_PB_AT_MOST else None
        self.meta[key] = (op, args, payload)
        return key


def compile_terms(terms: list, index: dict, name="f", dag: _Dag | None = None):
    """A Python function ``f(v) -> tuple`` computing ``terms`` (Z3 Int/Bool expressions over
    the variables of ``index``: variable name -> position in ``v``)."""
    dag = dag or _Dag()
    meta = dag.meta
    lines = []
    memo: dict[int, str] = {}

    def visit(key) -> str:
        got = memo.get(key)
        if got is not None:
            return got
        op, args, payload = meta[key]
        if op == "num":
            out = str(payload)
        elif op == "var":
            out = f"v[{index[payload]}]"
        elif op == z3.Z3_OP_TRUE:
            out = "True"
        elif op == z3.Z3_OP_FALSE:
            out = "False"
        else:
            a = [visit(x) for x in args]
            if op == z3.Z3_OP_ITE:
                expr = f"({a[1]} if {a[0]} else {a[2]})"
            elif op == z3.Z3_OP_NOT:
                expr = f"(not {a[0]})"
            elif op in _OPS:
                expr = "(" + _OPS[op].join(a) + ")"
            elif op in _BIN and len(a) == 2:
                expr = f"({a[0]} {_BIN[op]} {a[1]})"
            elif op == z3.Z3_OP_UMINUS:
                expr = f"(-{a[0]})"
            elif op == z3.Z3_OP_IMPLIES:
                expr = f"((not {a[0]}) or {a[1]})"
            elif op == z3.Z3_OP_PB_AT_MOST:
                expr = f"(({' + '.join(a)}) <= {payload})"
            elif op == z3.Z3_OP_DISTINCT:
                expr = f"(len({{{', '.join(a)}}}) == {len(a)})"
            else:
                raise NotImplementedError(f"Z3 operator kind {op}")
            out = f"t{len(lines)}"
            lines.append(f"    {out} = {expr}")
        memo[key] = out
        return out

    results = [visit(dag.node(t.as_ast())) for t in terms]
    src = f"def {name}(v):\n" + "\n".join(lines) + f"\n    return ({', '.join(results)},)\n"
    env: dict = {}
    exec(compile(src, f"<encoding {name}>", "exec"), env)
    return env[name]


@dataclass
class Compiled:
    inst: Instance
    guard: object               # v -> (bool,)
    keys: tuple                 # the components this instance may change
    update: object              # v -> tuple of their new values


@dataclass
class CrossCheckResult:
    config: str
    variant: str
    states: int                 # states checked
    reachable: int              # states the explorer reached
    steps: int                  # (state, enabled instance) pairs compared
    disabled: int               # (state, disabled instance) pairs checked
    solver_checks: int          # sampled steps checked through the solver on the Next formula
    clause_checks: int          # (state, clause or invariant) pairs compared
    seconds: float
    mismatches: list = field(default_factory=list)   # human-readable, first few
    arbitrary: int = 0          # arbitrary (unreachable, invariant-satisfying) states checked
    arbitrary_rejected: int = 0  # candidates the arbitrary-state filter rejected
    beyond_capacity: int = 0    # (arbitrary state, step) pairs whose successor outgrows the layout
    first: tuple | None = None  # the first mismatch: (action or clause, state field or None, text)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def _report(self, action: str, fld: str | None, text: str) -> None:
        if self.first is None:
            self.first = (action, fld, text)
        self.mismatches.append(text)


def compile_encoding(enc: Encoding, S=None):
    """Each instance's guard and update over one set of variables (``S``: the layout's
    variables tagged "0"), compiled."""
    S = enc.lay.fresh("0") if S is None else S
    index = {f"{k}@0": i for i, k in enumerate(enc.lay.keys)}
    out = []
    dag = _Dag()
    keep = []       # AST ids are reused once a term is freed: keep every term alive
    for inst in enc.instances:
        en, T = enc.apply(S, inst)
        keep.append((en, T))
        keys = tuple(k for k in enc.lay.keys if T[k].get_id() != S[k].get_id())
        guard = compile_terms([en], index, "guard", dag)
        update = compile_terms([T[k] for k in keys], index, "update", dag) if keys else \
            (lambda v: ())
        out.append(Compiled(inst, guard, keys, update))
    return out


def solver_check(enc: Encoding, states, samples: int, seed: int, res=None) -> list:
    """Through the solver, on the one Next formula BMC uses: for sampled (state, instance)
    pairs, with the state's values fixed, Z3 finds the model's successor when the model's
    action is enabled, no other successor (every other candidate is rejected), and none when
    it is disabled.  Returns mismatches."""
    return [text for _, _, text in _solver_check(enc, states, samples, seed, res)]


def _solver_check(enc: Encoding, states, samples: int, seed: int, res=None, S0=None) -> list:
    """``solver_check``'s mismatches as (action, state field or None, text); ``S0``: the
    state variables of the step's first state (default: fresh ones)."""
    lay = enc.lay
    S0, S1 = lay.fresh("x") if S0 is None else S0, lay.fresh("y")
    act = z3.Int("act")
    solver = z3.Solver()
    solver.add(enc.transition(S0, S1, act, stutter=True))
    rng = random.Random(seed)
    bad = []
    for _ in range(samples):
        s = states[rng.randrange(len(states))]
        msgs = sorted(s.network)
        _, by_step = _successors(enc, s)
        enabled = [i for i in enc.instances if _step_for(i, msgs) in by_step]
        inst = rng.choice(enabled) if enabled and rng.random() < 0.8 else rng.choice(enc.instances)
        t = by_step.get(_step_for(inst, msgs))
        vals = lay.values(s)
        solver.push()
        solver.add(*(S0[k] == (z3.BoolVal(vals[k]) if lay.sorts[k] == "b" else z3.IntVal(vals[k]))
                     for k in lay.keys))
        solver.add(act == inst.index)
        r = solver.check()
        if res is not None:
            res.solver_checks += 1
        if t is None:
            if r != z3.unsat:
                bad.append((inst.action, None,
                            f"solver: {inst} accepted where the model's action is disabled"))
        elif r != z3.sat:
            bad.append((inst.action, None, f"solver: {inst} rejected the model's successor ({r})"))
        else:
            model = solver.model()
            got = lay.decode_model(model, S1)
            if got != t:
                bad.append((inst.action, _first_field(got, t),
                            f"solver: {inst}: {_diff(got, t)}"))
            solver.add(z3.Or(*(S1[k] != model.eval(S1[k], model_completion=True)
                               for k in lay.keys)))
            if solver.check() != z3.unsat:
                bad.append((inst.action, None, f"solver: {inst} accepts a second successor"))
        solver.pop()
        if bad:
            break
    return bad


class _Predicates:
    """The Z3 clauses of P1-P4 (and, for the correct design, every strengthening invariant)
    compiled, beside the registry's Python predicates they must agree with."""

    def __init__(self, enc: Encoding, invariants: bool, S=None):
        from properties import registry
        from properties.symbolic import invariants as inv_mod
        from properties.symbolic.props import CLAUSES, SUPPORTED
        self.enc = enc
        S = enc.lay.fresh("0") if S is None else S
        index = {f"{k}@0": i for i, k in enumerate(enc.lay.keys)}
        names, terms, self.py = [], [], {}
        for pid in SUPPORTED:
            for clause in registry.BY_ID[pid].clauses:
                names.append(f"{pid} [{clause.name}]")
                terms.append(CLAUSES[clause.name](S, enc.cfg, enc.design))
                self.py[names[-1]] = clause.holds
        names.append("quiescent")
        terms.append(enc.quiescent(S))
        if invariants:
            for inv in inv_mod.INVARIANTS.values():
                if enc.cfg.mode in inv.modes:
                    names.append(f"invariant {inv.name}")
                    terms.append(inv.holds(S, enc.cfg, enc.design))
        self.names = names
        self._keep = (S, terms)
        self.fn = compile_terms(terms, index, "predicates")

    def evaluate(self, v) -> dict:
        return dict(zip(self.names, self.fn(v)))

    def expected(self, s, succ) -> dict:
        """The registry's verdicts in model state ``s`` (``succ``: its successors)."""
        cfg, d = self.enc.cfg, self.enc.design
        out = {}
        for name in self.names:
            if name == "quiescent":
                out[name] = model_next.quiescent(s, cfg, d, succ)
            elif name.startswith("invariant "):
                out[name] = True
            else:
                out[name] = self.py[name](s, cfg, d)
        return out


def compile_predicates(enc: Encoding, invariants: bool, S=None) -> _Predicates:
    return _Predicates(enc, invariants, S)


@contextmanager
def _shared_steps(enc: Encoding):
    """One symbolic state (tagged "0") whose instances' (guard, successor) terms are built
    once while the block runs: the compiled guards and updates, the quiescence predicate and
    the solver's Next formula are all made of them, and building them is most of the
    cross-check's time."""
    S = enc.lay.fresh("0")
    memo: dict = {}
    build = enc.apply_unbounded

    def apply_unbounded(S_, inst):
        if S_ is not S:
            return build(S_, inst)
        got = memo.get(inst.index)
        if got is None:
            got = memo[inst.index] = build(S_, inst)
        return got
    enc.apply_unbounded = apply_unbounded       # shadows the method on this object only
    try:
        yield S
    finally:
        del enc.apply_unbounded


def _step_for(inst: Instance, msgs):
    """The model's Step for an instance in a state whose sorted network is ``msgs`` (None:
    a message instance whose slot is empty)."""
    if inst.kind == model_next.MSG_ARG:
        return Step(inst.action, (tuple(msgs[inst.arg]),)) if inst.arg < len(msgs) else None
    if inst.kind == model_next.NONE_ARG:
        return Step(inst.action, ())
    return Step(inst.action, (inst.arg,))


def _successors(enc: Encoding, state):
    """The model's successors of a state, once: (the list, Step -> successor)."""
    succ = model_next.successors(state, enc.cfg, enc.design)
    return succ, dict(succ)


def explore(cfg, design) -> list:
    """Every reachable state (full states, no symmetry reduction), in BFS order."""
    from collections import deque
    init = model_next.initial_state(cfg)
    seen = {init}
    order = [init]
    queue = deque([init])
    while queue:
        s = queue.popleft()
        for _, t in model_next.successors(s, cfg, design):
            if t not in seen:
                seen.add(t)
                order.append(t)
                queue.append(t)
    return order


def _sample(order: list, limit, seed) -> list:
    if limit is not None and len(order) > limit:
        rng = random.Random(seed)
        return [order[0]] + rng.sample(order[1:], limit - 1)
    return order


def reachable_states(cfg, design, limit=None, seed=0):
    """The explorer's reachable states (full states, in BFS order), or a seeded sample."""
    order = explore(cfg, design)
    return _sample(order, limit, seed), len(order)


def crosscheck(cfg, design, variant="correct", *, limit=None, seed=0, arbitrary=0,
               compiled=None, enc: Encoding | None = None, reachable: list | None = None,
               solver_samples=50, max_mismatches=5, progress=None) -> CrossCheckResult:
    """Compare the encoding with the model on the explored states (all, or ``limit`` of
    them sampled with ``seed``), then on ``arbitrary`` arbitrary states drawn with ``seed``:
    ``arbitrary.Generator(cfg, design, seed=seed).generate(arbitrary)`` gives them again, in
    the order mismatches number them.  ``reachable``: ``explore(cfg, design)``, if the
    caller has it already."""
    t0 = time.perf_counter()
    enc = enc or Encoding(cfg, design)
    with _shared_steps(enc) as S:
        return _crosscheck(cfg, design, variant, enc, S, t0, limit=limit, seed=seed,
                           arbitrary=arbitrary, compiled=compiled, reachable=reachable,
                           solver_samples=solver_samples, max_mismatches=max_mismatches,
                           progress=progress)


def _crosscheck(cfg, design, variant, enc: Encoding, S, t0, *, limit, seed, arbitrary, compiled,
                reachable, solver_samples, max_mismatches, progress) -> CrossCheckResult:
    lay: Layout = enc.lay
    compiled = compiled or compile_encoding(enc, S)
    order = explore(cfg, design) if reachable is None else reachable
    states = _sample(order, limit, seed)
    keys = lay.keys
    res = CrossCheckResult(cfg.name, variant, 0, len(order), 0, 0, 0, 0, 0.0)
    predicates = compile_predicates(enc, invariants=(variant == "correct"), S=S)

    def check(s, where: str, is_reachable: bool) -> bool:
        """Compare in one state; False once ``max_mismatches`` are reported."""
        try:
            values = lay.values(s)
        except CapacityExceeded as exc:
            res._report("capacity", exc.where, f"{where}: capacity exceeded: {exc}")
            return False
        v = [values[k] for k in keys]
        msgs = sorted(s.network)
        succ, by_step = _successors(enc, s)
        got = predicates.evaluate(v)
        want = predicates.expected(s, succ)
        for name, g in got.items():
            if not is_reachable and name.startswith("invariant "):
                continue        # assumed by the generator, not a fact to compare
            res.clause_checks += 1
            if g != want[name]:
                res._report(name, None, f"{name} in {where}: model {want[name]}, Z3 {g}")
        for c in compiled:
            t = by_step.get(_step_for(c.inst, msgs))
            g = c.guard(v)[0]
            if g != (t is not None):
                if not is_reachable and not g and not _fits(lay, t):
                    res.beyond_capacity += 1
                    continue
                res._report(c.inst.action, None,
                            f"{c.inst} in {where}: model "
                            f"{'enabled' if t is not None else 'disabled'}, "
                            f"encoding {'enabled' if g else 'disabled'}")
            elif t is None:
                res.disabled += 1
            else:
                res.steps += 1
                new = dict(values)
                new.update(zip(c.keys, c.update(v)))
                got = lay.decode(new.__getitem__)
                if got != t:
                    res._report(c.inst.action, _first_field(got, t),
                                f"{c.inst} in {where}: {_diff(got, t)}")
            if len(res.mismatches) >= max_mismatches:
                return False
        return len(res.mismatches) < max_mismatches

    for n, s in enumerate(states):
        if progress and n % 1000 == 0:
            progress(n, len(states))
        res.states += 1
        if not check(s, f"state #{n} (seed {seed})", True):
            return _done(res, t0)
    if arbitrary:
        from properties.symbolic.arbitrary import Generator
        gen = Generator(cfg, design, reachable=order, enc=enc, seed=seed)
        for n, s in enumerate(gen.generate(arbitrary)):
            res.arbitrary += 1
            res.arbitrary_rejected = gen.rejected
            if not check(s, f"arbitrary state #{n} (seed {seed})", False):
                return _done(res, t0)
        res.arbitrary_rejected = gen.rejected
    if solver_samples and not res.mismatches:
        for action, fld, text in _solver_check(enc, states, solver_samples, seed, res, S):
            res._report(action, fld, text)
    return _done(res, t0)


def _done(res: CrossCheckResult, t0: float) -> CrossCheckResult:
    res.seconds = time.perf_counter() - t0
    return res


def _fits(lay: Layout, state) -> bool:
    try:
        lay.values(state)
    except CapacityExceeded:
        return False
    return True


def _differences(got, want) -> list:
    """(component, text) for every component where two model states differ, in the order of
    the state record: "now", "zk", ..., "nodes[1].registered_in_log", "clients[0]"."""
    out = []
    for f in ("now", "zk", "quorum", "network", "elections_left", "expiries_left",
              "crashes_left", "restarts_left", "drops_left", "updates_left"):
        if getattr(got, f) != getattr(want, f):
            out.append((f, f"{f}: encoding {getattr(got, f)} != model {getattr(want, f)}"))
    for i, (a, b) in enumerate(zip(got.nodes, want.nodes)):
        if a != b:
            for f in a._fields:
                if getattr(a, f) != getattr(b, f):
                    out.append((f"nodes[{i}].{f}", f"nodes[{i}].{f}: encoding {getattr(a, f)} "
                                                   f"!= model {getattr(b, f)}"))
    for i, (a, b) in enumerate(zip(got.clients, want.clients)):
        if a != b:
            out.append((f"clients[{i}]", f"clients[{i}]: encoding {a} != model {b}"))
    return out


def _first_field(got, want) -> str | None:
    diff = _differences(got, want)
    return diff[0][0] if diff else None


def _diff(got, want) -> str:
    """The first components where two model states differ."""
    return "; ".join(text for _, text in _differences(got, want)[:4]) or "differ"
