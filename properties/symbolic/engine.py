"""Bounded model checking and k-induction over the encoded transition relation.

``bmc`` unrolls Next from the configuration's initial state and asks Z3, depth by depth, for
a state that violates the property; a counterexample is read back as the model's ``Step``s,
replayed by the executable model (``model.next.replay``), and reported only if the model
reaches a state violating the same property, each symbolic state equal to the model's.

``prove`` is k-induction: the property conjoined with its strengthening invariants
(``properties.symbolic.invariants``) holds in the first k states of every path from the
initial state (base), and any k consecutive states that satisfy it are followed by one that
does (step, from an arbitrary state: epochs, zkVersions, incarnations, times and fault budgets
are unconstrained integers there).  A failed step yields a counterexample to induction (CTI).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import z3

from model import next as model_next
from model.config import Design, ModelConfig
from properties import registry
from properties.symbolic import invariants as inv_mod
from properties.symbolic.fidelity import EncodingRefused, require_encoding  # noqa: F401
from properties.symbolic.next import STUTTER, Encoding
from properties.symbolic.props import clause_terms
from properties.symbolic.state import And, Layout, Sym


class EncodingMismatch(RuntimeError):
    """A Z3 path the executable model does not follow: a bug in the encoding."""


@dataclass
class BmcResult:
    config: str
    variant: str
    property: str
    depth: int                  # deepest level searched (or the counterexample's length)
    found: bool
    clause: str | None = None
    steps: list = field(default_factory=list)
    seconds: float = 0.0
    capacity: str = ""

    def trace(self):
        from properties.trace import Trace
        return Trace(self.config, self.variant, tuple(self.steps), self.property, self.clause,
                     engine="bmc")


@dataclass
class ProofResult:
    config: str
    variant: str
    property: str
    status: str                 # "proved" | "counterexample" | "unknown"
    depth: int                  # k of the successful induction (or the last tried)
    seconds: float
    invariants: tuple = ()      # strengthening invariants used (names)
    bounds: str = ""
    detail: str = ""            # CTI or counterexample summary
    counterexample: BmcResult | None = None
    cti: object = None          # (Z3 model, symbolic states, failing names) of the last CTI


def _decode_path(enc: Encoding, model, states, acts):
    """The model Steps of a Z3 path (stutters dropped) and the decoded states."""
    steps, decoded = [], [enc.lay.decode_model(model, states[0])]
    for t, act in enumerate(acts):
        a = enc.act_value(model, act)
        if a == STUTTER:
            continue
        inst = enc.instances[a]
        S = states[t]

        def val(key, S=S):
            x = model.eval(S[key], model_completion=True)
            return z3.is_true(x) if enc.lay.sort(key) == "b" else x.as_long()
        steps.append(enc.step_of(inst, val))
        decoded.append(enc.lay.decode_model(model, states[t + 1]))
    return steps, decoded


def _violated_clause(enc: Encoding, state, pid: str) -> str | None:
    """The registry clause of ``pid`` that a model state violates (Python predicates)."""
    succ = model_next.successors(state, enc.cfg, enc.design)
    q = None
    for clause in registry.BY_ID[pid].clauses:
        if clause.kind == registry.QUIESCENT:
            if q is None:
                q = model_next.quiescent(state, enc.cfg, enc.design, succ)
            if not q:
                continue
        if not clause.holds(state, enc.cfg, enc.design):
            return clause.name
    return None


def bmc(cfg: ModelConfig, design: Design, pid: str, k: int, variant: str = "correct",
        enc: Encoding | None = None, progress=None, timeout_s: float | None = None,
        gate: bool = True) -> BmcResult:
    """The shortest counterexample of length <= k to property ``pid``, replayed by the
    executable model, or ``found=False`` if there is none within the capacities.  Raises
    ``EncodingRefused`` when the encoding cannot be shown to agree with the model under
    ``design`` (``fidelity.require_encoding``; ``gate=False``: the caller checked)."""
    if gate:
        require_encoding(cfg, design, variant)
    t0 = time.perf_counter()
    enc = enc or Encoding(cfg, design)
    lay = enc.lay
    res = BmcResult(cfg.name, variant, pid, 0, False, capacity=_capacity_text(lay))
    states, acts, steps = _unroll(enc, k, progress)

    built = {}

    def violation(d):
        # built once per step: the first queries and the shortest search share them
        if d not in built:
            built[d] = clause_terms(enc, states[d], pid)
        return built[d]

    # 1. Fresh, non-incremental queries at depth k: with stutter steps, "a violation within
    #    k steps" is "a violation at step k".  Z3 preprocesses a whole query far better than
    #    an incremental one (zk-small, depth 12, no counterexample: 58 s depth by depth on
    #    one solver, 5 s as one query), and the correct design's answer is these queries.
    #    One query per clause, each with the property at the steps before (``_holds_before``):
    #    a clause's refutation then needs only the last step, much as an induction step does,
    #    where one query for them all made Z3 refute each clause along the whole path
    #    (kraft-small, depth 12: 23.9 s in all; one query for every clause 76 s with the
    #    lemmas, 101 s without; docs/proofs.md).
    if progress:
        progress(k, k)
    lemmas = _holds_before(violation, k)
    for _, f in violation(k):
        solver = _solver(timeout_s)
        solver.add(*steps)
        solver.add(*lemmas)
        solver.add(z3.Not(f))
        r = solver.check()
        if r == z3.unknown:
            raise TimeoutError(f"Z3 gave up at depth {k}: {solver.reason_unknown()}")
        if r == z3.sat:
            break
    else:
        res.depth = k
        res.seconds = time.perf_counter() - t0
        return res
    model = solver.model()
    longest = sum(1 for a in acts if enc.act_value(model, a) != STUTTER)
    # 2. The shortest: depth by depth on one incremental solver up to the length of the path
    #    found (satisfiable queries at shallow depths are where incremental solving is fast).
    solver = _solver(timeout_s)
    for t in range(longest + 1):
        terms = violation(t)
        solver.push()
        solver.add(z3.Not(And(*(f for _, f in terms))))
        r = solver.check()
        if r == z3.sat:
            model = solver.model()
            found, decoded = _decode_path(enc, model, states[:t + 1], acts[:t])
            clause = next(name for name, f in terms
                          if z3.is_false(model.eval(f, model_completion=True)))
            _check_replay(enc, found, decoded, pid, clause)
            res.depth, res.found, res.clause, res.steps = len(found), True, clause, found
            res.seconds = time.perf_counter() - t0
            return res
        solver.pop()
        if r == z3.unknown:
            raise TimeoutError(f"Z3 gave up at depth {t}: {solver.reason_unknown()}")
        if t < len(steps):
            solver.add(steps[t])
    raise EncodingMismatch(f"Z3 found a violation within {k} steps and none within "
                           f"{longest}, the length of the path it found")


def _solver(timeout_s):
    solver = z3.Solver()
    if timeout_s:
        solver.set("timeout", int(timeout_s * 1000))
    return solver


def _holds_before(violation, k: int) -> list:
    """The property at steps 1..k-1, as lemmas for the query "violated at step k".

    Sound because a stutter step is enabled everywhere and leaves the state as it is: a path
    whose first violation is at step t <= k becomes one whose first violation is at step k by
    k - t stutters at the start, where the state is the initial one, which satisfies the
    property (checked here: otherwise no lemma, and the path of length 0 is the answer).
    With them Z3 refutes each clause at step k from the property at step k - 1, much as an
    induction step does, instead of along the whole path (``bmc``'s first queries)."""
    if k < 2 or not z3.is_true(z3.simplify(And(*(f for _, f in violation(0))))):
        return []
    return [And(*(f for _, f in violation(t))) for t in range(1, k)]


def _unroll(enc: Encoding, k: int, progress=None):
    """The initial state, k symbolic states after it, their instance selectors, and the k
    transition formulas between them.  Next is built once over two generic states and
    copied to each step by substitution (building it per step in Python costs seconds per
    step on the small configurations)."""
    lay = enc.lay
    pre, post, act = lay.fresh("pre"), lay.fresh("post"), enc.act_var("act")
    generic = enc.transition(pre, post, act, stutter=True) if k else None
    variables = [key for key in lay.keys if z3.is_const(pre[key])
                 and pre[key].decl().kind() == z3.Z3_OP_UNINTERPRETED]
    states = [lay.concrete(model_next.initial_state(enc.cfg))]
    acts, steps = [], []
    for t in range(k):
        if progress:
            progress(t, k)
        nxt = lay.fresh(t + 1)
        a = enc.act_var(f"act@{t}")
        pairs = [(pre[key], states[t][key]) for key in variables]
        pairs += [(post[key], nxt[key]) for key in variables]
        steps.append(z3.substitute(generic, *pairs, (act, a)))
        states.append(nxt)
        acts.append(a)
    return states, acts, steps


def _check_replay(enc: Encoding, steps, decoded, pid, clause):
    """Replay a Z3 counterexample in the model; every state must match the decoded one and
    the last must violate the same clause."""
    try:
        replayed = model_next.replay(enc.cfg, enc.design, steps)
    except ValueError as exc:
        raise EncodingMismatch(f"the model cannot replay the Z3 path: {exc}") from None
    for i, (a, b) in enumerate(zip(replayed, decoded)):
        if a != b:
            raise EncodingMismatch(f"state {i} of the Z3 path differs from the model's")
    got = _violated_clause(enc, replayed[-1], pid)
    if got != clause:
        raise EncodingMismatch(f"Z3 says {pid} [{clause}] fails, the model says {got}")


def _capacity_text(lay: Layout) -> str:
    c = lay.cap
    mode = (f"metadata log {c.log}, uncommitted records {c.uncommitted}" if lay.kraft else
            f"ZK events per controller {c.events}, ZK writes {c.writes}")
    if c.config_writes:         # a ZK-to-KRaft migration's brokers (MG-6)
        mode += f", entity-config writes per broker {c.config_writes}"
    return (f"network {c.network} messages, channel queue {c.queue}, {mode}, "
            f"responses per client {c.responses}")


class _Reads(dict):
    """A state's components that records which ones a term builder reads."""

    def __init__(self, v):
        super().__init__(v)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return dict.__getitem__(self, key)


def _step_by_instance(enc: Encoding, builders, timeout_s, S: Sym, applied):
    """None if every instance preserves the goal; else (instance, failing goal parts, Z3
    model, the symbolic state); "unknown" if Z3 gave up.  ``builders``: (name, S -> term);
    ``S`` an arbitrary state (``lay.fresh``) and ``applied`` ``enc.apply_unbounded(S, inst)``
    of every instance, in order.

    A goal term that reads no component the instance changes is the same term after the
    step as before it (the builders are functions of the components they read), so it holds
    after because it held before: it is neither rebuilt nor asked."""
    solver = z3.Solver()
    solver.set("timeout", int(timeout_s * 1000))
    reads = []
    for _, build in builders:
        v = _Reads(S.v)
        solver.add(build(Sym(enc.lay, v)))
        reads.append(v.read)
    for inst in enc.instances:
        guard, T = applied[inst.index]
        en = And(guard, T.fits)             # as enc.apply: a step past a capacity is not taken
        if z3.is_false(z3.simplify(en)):
            continue
        changed = {k for k, x in T.v.items() if x is not S.v[k]}
        after = [(name, build(T)) for (name, build), keys in zip(builders, reads)
                 if keys & changed]
        if not after:
            continue
        # one query per goal term: Z3 answers many small queries sooner than their
        # disjunction (the commit of a batch of records: 8 s instead of 22 s on
        # kraft-listeners)
        solver.push()
        solver.add(en)
        for _name, f in after:
            solver.push()
            solver.add(z3.Not(f))
            r = solver.check()
            if r == z3.sat:
                model = solver.model()
                failing = [n for n, g in after
                           if z3.is_false(model.eval(g, model_completion=True))]
                return inst, failing, model, S
            solver.pop()
            if r == z3.unknown:
                return "unknown"
        solver.pop()
    return None


def _finish_with_quiescent(res: ProofResult, enc: Encoding, step_terms, quiescent_terms,
                           quiescent: tuple, k: int, n_invs: int, timeout_s: float,
                           S: Sym | None = None, applied=None) -> None:
    """The always clauses and the invariants are k-inductive, so they hold in every reachable
    state; a quiescent clause is proved if they imply it there: one query, no transition.
    ``S``, ``applied``: an arbitrary state and its instances' ``apply_unbounded`` if built
    already (the 1-induction step's; this query has a solver of its own, so it may reuse
    the state, and the quiescence test reads the guards instead of rebuilding every action)."""
    res.status = "proved"
    res.detail = f"{k}-inductive with {n_invs} strengthening invariants"
    if not quiescent:
        return
    if S is None:
        S, applied = enc.lay.fresh("q"), None
    solver = z3.Solver()
    solver.set("timeout", int(timeout_s * 1000))
    solver.add(*(f for _, f in step_terms(S)))
    every = quiescent_terms(S, applied)
    solver.add(z3.Not(And(*(f for _, f in every))))
    r = solver.check()
    if r == z3.unsat:
        res.detail += (f"; they imply the quiescent clause{'s' if len(quiescent) > 1 else ''} "
                       f"({', '.join(quiescent)})")
        return
    res.status = "unknown"
    if r == z3.unknown:
        res.detail = f"Z3 gave up on the quiescent clauses: {solver.reason_unknown()}"
        return
    model = solver.model()
    failing = [n for n, f in every if z3.is_false(model.eval(f, model_completion=True))]
    res.detail = (f"the invariants are {k}-inductive but do not imply {', '.join(failing)} in "
                  f"every quiescent state they allow")
    res.cti = (model, [S], failing)


def bounds_text(enc: Encoding) -> str:
    cfg = enc.cfg
    return (f"fixed: {len(cfg.nodes)} nodes, {len(cfg.clients)} clients, their listeners, "
            f"principals and ACLs, max_time {cfg.max_time}, forward_timeout "
            f"{cfg.forward_timeout}, registration_timeout {cfg.registration_timeout}; "
            f"sequences within capacities ({_capacity_text(enc.lay)}); "
            f"unbounded: epochs, zkVersions, incarnations, log offsets and fault budgets "
            f"(any integer in the inductive step)")


def prove(cfg: ModelConfig, design: Design, pid: str, variant: str = "correct",
          max_k: int = 4, enc: Encoding | None = None, timeout_s: float = 120.0,
          invariants=None, clauses=None, gate: bool = True) -> ProofResult:
    """k-induction for ``pid`` strengthened by its invariants, for k = 1..max_k.  The goal
    is every clause of the property, or the clauses named in ``clauses``.  Raises
    ``EncodingRefused`` when the encoding cannot be shown to agree with the model under
    ``design`` (``gate=False``: the caller checked)."""
    if gate:
        require_encoding(cfg, design, variant)
    t0 = time.perf_counter()
    enc = enc or Encoding(cfg, design)
    lay = enc.lay
    invs = inv_mod.for_property(cfg, pid) if invariants is None else invariants
    names = tuple(i.name for i in invs)
    res = ProofResult(cfg.name, variant, pid, "unknown", 0, 0.0, names, bounds_text(enc))

    only = None if clauses is None else tuple(clauses)
    quiescent = tuple(c.name for c in registry.BY_ID[pid].clauses
                      if c.kind == registry.QUIESCENT and (only is None or c.name in only))
    always = tuple(c.name for c in registry.BY_ID[pid].clauses
                   if c.name not in quiescent and (only is None or c.name in only))

    def builders(names):
        out = [(f"{pid} [{name}]",
                lambda S, name=name: clause_terms(enc, S, pid, only=(name,))[0][1])
               for name in names]
        return out + [(f"invariant {i.name}", lambda S, i=i: i.holds(S, cfg, design))
                      for i in invs]

    def goal_terms(S, names=None):
        names = always + quiescent if names is None else names
        return [(n, build(S)) for n, build in builders(names)]

    def quiescent_terms(S, applied=None):
        q = enc.quiescent(S, applied)
        return [(f"{pid} [{name}]", f)
                for name, f in clause_terms(enc, S, pid, quiescent=q, only=quiescent)]

    def step_terms(S):
        # The inductive step carries the always clauses and the invariants; a quiescent
        # clause is not a hypothesis there (its quiescence test applies every action, and
        # it would be rebuilt for every successor): it must follow from them instead.
        return goal_terms(S, always)

    # base case, incrementally deeper
    base = z3.Solver()
    base.set("timeout", int(timeout_s * 1000))
    bstates = [lay.concrete(model_next.initial_state(cfg))]
    bacts = []
    # inductive step: a path of arbitrary states
    for k in range(1, max_k + 1):
        # base: no violation in the first k states (depth k-1)
        t = k - 1
        if t:
            # one more step from the initial state, built only when a deeper k is tried
            # (the transition takes seconds to build on the larger configurations)
            nxt = lay.fresh(f"b{t}")
            act = enc.act_var(f"bact@{t - 1}")
            base.add(enc.transition(bstates[t - 1], nxt, act, stutter=True))
            bstates.append(nxt)
            bacts.append(act)
        terms = goal_terms(bstates[t])
        base.push()
        base.add(z3.Not(And(*(f for _, f in terms))))
        r = base.check()
        if r == z3.sat:
            model = base.model()
            failing = [n for n, f in terms if z3.is_false(model.eval(f, model_completion=True))]
            prop_fail = [n for n in failing if n.startswith(pid)]
            if prop_fail:
                steps, decoded = _decode_path(enc, model, bstates, bacts)
                clause = prop_fail[0].split("[")[1].rstrip("]")
                _check_replay(enc, steps, decoded, pid, clause)
                cex = BmcResult(cfg.name, variant, pid, len(steps), True, clause, steps,
                                capacity=_capacity_text(lay))
                res.status, res.depth, res.counterexample = "counterexample", k, cex
                res.detail = f"{pid} [{clause}] fails after {len(steps)} steps"
            else:
                res.detail = (f"a strengthening invariant is wrong: {', '.join(failing)} "
                              f"fails in a reachable state at depth {t}")
            res.seconds = time.perf_counter() - t0
            return res
        base.pop()
        if r == z3.unknown:
            res.detail = f"Z3 gave up on the base case at depth {t}"
            break
        if k == 1:
            # 1-induction, one query per action instance: the goal in an arbitrary state,
            # the instance's guard, and the goal broken in its successor (terms over the
            # state, no successor variables).  Each instance is applied to the state once;
            # the quiescent query reads the same guards.
            S = lay.fresh("s")
            applied = [enc.apply_unbounded(S, inst) for inst in enc.instances]
            cti = _step_by_instance(enc, builders(always), timeout_s, S, applied)
            res.depth = 1
            if cti is None:
                _finish_with_quiescent(res, enc, step_terms, quiescent_terms, quiescent, 1,
                                       len(invs), timeout_s, S, applied)
                break
            if cti == "unknown":
                res.detail = "Z3 gave up on the inductive step at k=1"
                break
            inst, failing, model, S = cti
            res.detail = (f"not 1-inductive: after {inst} from a state satisfying the goal, "
                          f"{', '.join(failing)} fails")
            res.cti = (model, [S], failing)
            continue
        # step: k states satisfying the goal, then one that does not
        step = z3.Solver()
        step.set("timeout", int(timeout_s * 1000))
        states = [lay.fresh("s0")]
        for i in range(k):
            step.add(*(f for _, f in step_terms(states[i])))
            nxt = lay.fresh(f"s{i + 1}")
            step.add(enc.transition(states[i], nxt, enc.act_var(f"sact@{i}"), stutter=False))
            states.append(nxt)
        last = step_terms(states[k])
        step.add(z3.Not(And(*(f for _, f in last))))
        r = step.check()
        res.depth = k
        if r == z3.unsat:
            _finish_with_quiescent(res, enc, step_terms, quiescent_terms, quiescent, k,
                                   len(invs), timeout_s)
            break
        if r == z3.unknown:
            res.detail = f"Z3 gave up on the inductive step at k={k}: {step.reason_unknown()}"
            break
        model = step.model()
        failing = [n for n, f in last if z3.is_false(model.eval(f, model_completion=True))]
        a = enc.act_value(model, enc.act_var(f"sact@{k - 1}"))
        res.detail = (f"not {k}-inductive: after {enc.instances[a]} from a state satisfying "
                      f"the goal, {', '.join(failing)} fails")
        res.cti = (model, states, failing)
    res.seconds = time.perf_counter() - t0
    return res
