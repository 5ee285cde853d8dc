"""The encoding checked against the executable model, state by state.

For the states the explorer reaches (all, or a seeded sample) and every action instance:

1. Z3's guard of the instance holds exactly when the model's action is enabled;
2. the encoding's successor denotes the model's successor (decoded back to a ``State`` and
   compared with ``==``), within the capacities (``fits`` holds);
3. once per instance, Z3 proves the encoded transition functional: two successors of the
   same state by the same instance are equal (so the model's successor is the only one the
   encoding accepts, in every state, not only the sampled ones).

Evaluating Z3 terms on tens of thousands of concrete states through the solver would take
minutes, so each instance's guard and update terms are compiled once into a Python function
(``compile_terms``: a straight-line evaluation of the Z3 DAG with Z3's semantics for the
operators the encoding uses) and evaluated per state.  The compiled code evaluates the
formulas Z3 sees; it is not a second copy of the model.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import z3

from model import next as model_next
from model.state import Msg
from model.step import Step
from properties.symbolic.next import Encoding, Instance
from properties.symbolic.state import CapacityExceeded, Layout

_OPS = {
    z3.Z3_OP_AND: " and ", z3.Z3_OP_OR: " or ", z3.Z3_OP_ADD: " + ", z3.Z3_OP_MUL: " * ",
}
_BIN = {z3.Z3_OP_EQ: "==", z3.Z3_OP_LE: "<=", z3.Z3_OP_LT: "<", z3.Z3_OP_GE: ">=",
        z3.Z3_OP_GT: ">", z3.Z3_OP_SUB: "-", z3.Z3_OP_IFF: "=="}


def compile_terms(terms: list, index: dict, name="f"):
    """A Python function ``f(v) -> tuple`` computing ``terms`` (Z3 Int/Bool expressions over
    the variables of ``index``: variable name -> position in ``v``)."""
    lines = []
    memo: dict[int, str] = {}

    def visit(e) -> str:
        key = e.get_id()
        got = memo.get(key)
        if got is not None:
            return got
        if z3.is_int_value(e):
            out = str(e.as_long())
        elif z3.is_true(e):
            out = "True"
        elif z3.is_false(e):
            out = "False"
        elif z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out = f"v[{index[e.decl().name()]}]"
        else:
            k = e.decl().kind()
            args = [visit(a) for a in e.children()]
            if k == z3.Z3_OP_ITE:
                expr = f"({args[1]} if {args[0]} else {args[2]})"
            elif k == z3.Z3_OP_NOT:
                expr = f"(not {args[0]})"
            elif k in _OPS:
                expr = "(" + _OPS[k].join(args) + ")"
            elif k in _BIN and len(args) == 2:
                expr = f"({args[0]} {_BIN[k]} {args[1]})"
            elif k == z3.Z3_OP_UMINUS:
                expr = f"(-{args[0]})"
            elif k == z3.Z3_OP_IMPLIES:
                expr = f"((not {args[0]}) or {args[1]})"
            elif k == z3.Z3_OP_DISTINCT:
                expr = f"(len({{{', '.join(args)}}}) == {len(args)})"
            else:
                raise NotImplementedError(f"operator {e.decl()} in {e}")
            out = f"t{len(lines)}"
            lines.append(f"    {out} = {expr}")
        memo[key] = out
        return out

    results = [visit(t) for t in terms]
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
    functional: int             # instances proved functional by Z3
    seconds: float
    mismatches: list = field(default_factory=list)   # human-readable, first few

    @property
    def ok(self) -> bool:
        return not self.mismatches


def compile_encoding(enc: Encoding):
    """Each instance's guard and update over one set of variables, compiled."""
    S = enc.lay.fresh("0")
    index = {f"{k}@0": i for i, k in enumerate(enc.lay.keys)}
    out = []
    for inst in enc.instances:
        en, T = enc.apply(S, inst)
        keys = tuple(k for k in enc.lay.keys if not T[k].eq(S[k]))
        guard = compile_terms([en], index, "guard")
        update = compile_terms([T[k] for k in keys], index, "update") if keys else (lambda v: ())
        out.append(Compiled(inst, guard, keys, update))
    return out


def prove_functional(enc: Encoding, timeout_ms=20000) -> list:
    """Instances whose encoded successor is not unique (should be none): for each, Z3
    checks that two successors of one state differ in no component."""
    S = enc.lay.fresh("0")
    bad = []
    for inst in enc.instances:
        en, T1 = enc.apply(S, inst)
        A = enc.lay.fresh("a")
        B = enc.lay.fresh("b")
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(en)
        solver.add(*(A[k] == T1[k] for k in enc.lay.keys))
        solver.add(*(B[k] == T1[k] for k in enc.lay.keys))
        solver.add(z3.Or(*(A[k] != B[k] for k in enc.lay.keys)))
        if solver.check() != z3.unsat:
            bad.append(str(inst))
    return bad


def _model_step(enc: Encoding, state, inst: Instance, msgs):
    if inst.kind == model_next.MSG_ARG:
        if inst.arg >= len(msgs):
            return None
        st = Step(inst.action, (tuple(msgs[inst.arg]),))
    elif inst.kind == model_next.NONE_ARG:
        st = Step(inst.action, ())
    else:
        st = Step(inst.action, (inst.arg,))
    return model_next.step(state, enc.cfg, enc.design, st)


def reachable_states(cfg, design, limit=None, seed=0):
    """The explorer's reachable states (full states, in BFS order), or a seeded sample."""
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
    if limit is not None and len(order) > limit:
        rng = random.Random(seed)
        order = [order[0]] + rng.sample(order[1:], limit - 1)
    return order, len(seen)


def crosscheck(cfg, design, variant="correct", *, limit=None, seed=0, compiled=None,
               enc: Encoding | None = None, functional=True, max_mismatches=5,
               progress=None) -> CrossCheckResult:
    """Compare the encoding with the model on the explored states (all, or ``limit`` of
    them sampled with ``seed``)."""
    t0 = time.perf_counter()
    enc = enc or Encoding(cfg, design)
    lay: Layout = enc.lay
    compiled = compiled or compile_encoding(enc)
    states, total = reachable_states(cfg, design, limit, seed)
    keys = lay.keys
    res = CrossCheckResult(cfg.name, variant, 0, total, 0, 0, 0, 0.0)
    for n, s in enumerate(states):
        if progress and n % 1000 == 0:
            progress(n, len(states))
        try:
            values = lay.values(s)
        except CapacityExceeded as exc:
            res.mismatches.append(f"state #{n}: capacity exceeded: {exc}")
            break
        v = [values[k] for k in keys]
        msgs = sorted(s.network)
        res.states += 1
        for c in compiled:
            t = _model_step(enc, s, c.inst, msgs)
            g = c.guard(v)[0]
            if g != (t is not None):
                res.mismatches.append(
                    f"{c.inst} in state #{n}: model {'enabled' if t is not None else 'disabled'}, "
                    f"encoding {'enabled' if g else 'disabled'}")
            elif t is None:
                res.disabled += 1
            else:
                res.steps += 1
                new = dict(values)
                new.update(zip(c.keys, c.update(v)))
                got = lay.decode(new.__getitem__)
                if got != t:
                    res.mismatches.append(f"{c.inst} in state #{n}: {_diff(got, t)}")
            if len(res.mismatches) >= max_mismatches:
                res.seconds = time.perf_counter() - t0
                return res
    if functional:
        bad = prove_functional(enc)
        res.functional = len(enc.instances) - len(bad)
        res.mismatches.extend(f"{b}: encoded successor not unique" for b in bad)
    res.seconds = time.perf_counter() - t0
    return res


def _diff(got, want) -> str:
    """The first components where two model states differ."""
    out = []
    for f in ("now", "zk", "quorum", "network", "elections_left", "expiries_left",
              "crashes_left", "restarts_left", "drops_left"):
        if getattr(got, f) != getattr(want, f):
            out.append(f"{f}: encoding {getattr(got, f)} != model {getattr(want, f)}")
    for i, (a, b) in enumerate(zip(got.nodes, want.nodes)):
        if a != b:
            for f in a.__dataclass_fields__:
                if getattr(a, f) != getattr(b, f):
                    out.append(f"nodes[{i}].{f}: encoding {getattr(a, f)} != model {getattr(b, f)}")
    for i, (a, b) in enumerate(zip(got.clients, want.clients)):
        if a != b:
            out.append(f"clients[{i}]: encoding {a} != model {b}")
    return "; ".join(out[:4]) or "differ"
