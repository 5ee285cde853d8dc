"""The Hypothesis stateful engine: a thin ``RuleBasedStateMachine`` over a ``Spec``.

The adapter contains no protocol logic.  The model decides everything: which steps are enabled
(``spec.successors``), what a step does (the successor it returns), which property a state
violates (``spec.violation``) and which witnesses a transition shows (``spec.witnesses_hit``).
Hypothesis only chooses, at every step, one of the model's enabled steps by its index, and
shrinks the sequence of choices when an invariant fails.

The machine (``machine_for(spec)``):

- state: the current model state, the steps taken from the initial state, the witnesses reached;
- ``@initialize`` ``start``: the initial state (``spec.initial_states()``; the Kafka model has
  one, so nothing is drawn);
- one ``@rule`` ``take_step``: the enabled steps of the current state, filtered to the allowed
  actions (swarm hook ``fault_actions``: the fault actions enabled for this run, ``None`` = all;
  progress actions are always allowed), and one of them drawn by index.  A state with no allowed
  step is terminal: the rule then stutters (does nothing) until Hypothesis ends the run.  It is
  deliberately one rule without a precondition: a rule whose precondition is false everywhere
  makes Hypothesis raise ``InvalidDefinition``, and a second "idle" rule would be subject to
  Hypothesis's own rule-level swarm (``FeatureFlags``), which disables the only valid rule in a
  large share of runs and throws those runs away as invalid;
- one ``@invariant`` ``no_property_violated``: ``spec.violation(state, succ)`` with the
  successors of the current state (computed once per state and shared with the next
  ``take_step``); a violation raises ``PropertyViolation`` (an ``AssertionError``) carrying the
  property ID, the clause and the steps.

``run_stateful(config, variant, seed=...)`` runs the machine with a fixed seed (the same seed
gives the same result in one process), catches the violation of the *shrunk* example,
minimises its steps further by deleting single steps, then pairs of steps (with the later steps
that depended on them), while the trace still replays to the same property (a small
delta-debugging pass over ``spec.step``), and returns a ``StatefulResult``
with the trace in the project's JSON trace format (``properties.trace.Trace``,
engine ``"stateful"``).

Determinism: with ``database=None``, ``deadline=None``, every health check off and a fixed
seed, a run depends only on the seed, the settings and the model.  Hypothesis also mixes
integers mined from the process's local modules into its draws, which would make a seed's
run depend on what the process imported; ``run_stateful`` switches that off for its runs
(``_without_local_constants``, a Hypothesis internal).  The recorded trace, not the seed, is
still the reproducer of record (it survives Hypothesis upgrades).
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, \
    run_state_machine_as_test

from model.next import FAULT_ACTIONS
from properties.kafka_spec import KafkaSpec
from properties.trace import Trace

__all__ = ["PropertyViolation", "StatefulResult", "machine_for", "run_stateful", "minimise",
           "RunStats"]


class PropertyViolation(AssertionError):
    """A state of the run violates a property; carries what a trace needs."""

    def __init__(self, prop: str, clause: str | None, steps: tuple):
        self.property = prop
        self.clause = clause
        self.steps = tuple(steps)
        super().__init__(f"{prop} ({clause}) violated after {len(self.steps)} steps: "
                         + ", ".join(map(str, self.steps)))


@dataclass
class RunStats:
    """Counters shared by every machine instance of one run (all examples, shrinking included)."""
    steps_run: int = 0
    examples: int = 0
    fingerprints: set = field(default_factory=set)
    witnesses: set = field(default_factory=set)


@dataclass
class StatefulResult:
    config: str
    variant: str
    seed: int
    found: bool
    property: str | None
    clause: str | None
    trace: Trace | None               # the minimised counterexample (engine "stateful")
    shrunk_length: int | None         # length of Hypothesis's shrunk example, before minimise
    steps_run: int                    # model steps taken over the whole run
    examples: int                     # machine runs (test cases) Hypothesis executed
    distinct: int                     # distinct state fingerprints seen
    witnesses_reached: tuple
    witnesses_missing: tuple
    seconds: float
    fault_actions: tuple | None       # the swarm's enabled fault actions, None = all

    @property
    def steps_per_second(self) -> float:
        return self.steps_run / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict:
        return {"config": self.config, "variant": self.variant, "seed": self.seed,
                "found": self.found, "property": self.property, "clause": self.clause,
                "trace": self.trace.to_json() if self.trace else None,
                "shrunk_length": self.shrunk_length, "steps_run": self.steps_run,
                "examples": self.examples, "distinct": self.distinct,
                "witnesses_reached": list(self.witnesses_reached),
                "witnesses_missing": list(self.witnesses_missing),
                "seconds": round(self.seconds, 3),
                "fault_actions": None if self.fault_actions is None else list(self.fault_actions)}


def _check_fault_actions(fault_actions):
    if fault_actions is None:
        return None
    fault_actions = frozenset(fault_actions)
    unknown = fault_actions - FAULT_ACTIONS
    if unknown:
        raise ValueError(f"unknown fault actions {sorted(unknown)}; fault actions: "
                         f"{', '.join(sorted(FAULT_ACTIONS))}")
    return fault_actions


def _clause(spec, state, prop):
    """The clause of ``prop`` that ``state`` violates, if the spec can say (KafkaSpec can)."""
    if not hasattr(spec, "clause_violated"):
        return None
    found = spec.clause_violated(state)
    return found[1] if found and found[0] == prop else None


def machine_for(spec, *, fault_actions=None, stats: RunStats | None = None):
    """A ``RuleBasedStateMachine`` class over ``spec``.

    ``fault_actions``: the fault actions (names of ``model.next.FAULT_ACTIONS``) enabled for this
    run, None = all; progress actions are always allowed.  ``stats``: counters shared by every
    instance (the run's totals); a fresh ``RunStats`` if None, available as ``Machine.stats``."""
    fault_actions = _check_fault_actions(fault_actions)
    stats = stats if stats is not None else RunStats()
    inits = tuple(spec.initial_states())
    wanted_all = tuple(spec.witness_ids())
    fingerprint = spec.fingerprint

    if fault_actions is None:
        def allowed(succ):
            return succ
    else:
        banned = FAULT_ACTIONS - fault_actions

        def allowed(succ):
            return [pair for pair in succ if pair[0].action not in banned]

    class SpecMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.state = None
            self.steps: list = []
            self.witnesses: set = set()
            self._succ = None           # successors of self.state, computed once
            self._checked = False       # self.state already checked by the invariant
            stats.examples += 1

        def _successors(self):
            if self._succ is None:
                self._succ = spec.successors(self.state)
            return self._succ

        def _enter(self, state):
            self.state = state
            self._succ = None
            self._checked = False
            stats.fingerprints.add(fingerprint(state))

        @initialize(data=st.data())
        def start(self, data):
            index = data.draw(st.integers(0, len(inits) - 1)) if len(inits) > 1 else 0
            self.initial_index = index
            self._enter(inits[index])

        @rule(data=st.data())
        def take_step(self, data):
            choices = allowed(self._successors())
            if not choices:
                return                  # terminal for this run: stutter
            step, nxt = choices[data.draw(st.integers(0, len(choices) - 1))]
            prev = self.state
            self.steps.append(step)
            stats.steps_run += 1
            if len(self.witnesses) < len(wanted_all):
                wanted = [w for w in wanted_all if w not in self.witnesses]
                hit = spec.witnesses_hit(prev, step, nxt, wanted)
                if hit:
                    self.witnesses.update(hit)
                    stats.witnesses.update(hit)
            self._enter(nxt)

        @invariant()
        def no_property_violated(self):
            if self._checked:           # a stutter: the state was checked already
                return
            prop = spec.violation(self.state, self._successors())
            self._checked = True
            if prop is not None:
                raise PropertyViolation(prop, _clause(spec, self.state, prop), self.steps)

        def __repr__(self):
            return f"SpecMachine({spec.name}, {len(self.steps)} steps)"

    SpecMachine.__name__ = SpecMachine.__qualname__ = "SpecMachine"
    SpecMachine.spec = spec
    SpecMachine.stats = stats
    SpecMachine.fault_actions = fault_actions
    return SpecMachine


def _first_violation_along(spec, steps, skip_disabled: bool = False):
    """Replay ``steps`` from the first initial state, checking every state on the way.

    Returns (property, clause, steps applied) for the first state that violates a property, or
    None if no state does.  A step that is not enabled ends the replay (None), or, with
    ``skip_disabled``, is left out (a step that depended on a deleted one goes with it)."""
    state = spec.initial_states()[0]
    applied = []
    prop = spec.violation(state, spec.successors(state))
    if prop is not None:
        return prop, _clause(spec, state, prop), applied
    for step in steps:
        try:
            nxt = spec.step(state, step)
        except ValueError:
            nxt = None
        if nxt is None:
            if skip_disabled:
                continue
            return None
        state = nxt
        applied.append(step)
        prop = spec.violation(state, spec.successors(state))
        if prop is not None:
            return prop, _clause(spec, state, prop), applied
    return None


def minimise(spec, steps, prop, *, max_seconds: float = 10.0, pairs_up_to: int = 40):
    """Delete steps while the trace still reaches a state violating ``prop`` (with no earlier
    state violating anything), a small delta-debugging pass over ``spec.step``.

    A candidate deletes one step (then, when no single step can go, two steps) and also drops
    any later step that is no longer enabled (a receipt whose send was deleted, a message whose
    key changed); it is kept if the steps left still end in a violation of ``prop``.  Pairs are
    tried for traces of at most ``pairs_up_to`` steps.  The result is 1-minimal (no single step
    can be removed) and, for short traces, 2-minimal, unless ``max_seconds`` runs out.
    Returns (steps, clause)."""
    found = _first_violation_along(spec, list(steps))
    if found is None or found[0] != prop:
        raise ValueError(f"the steps do not lead to a violation of {prop}")
    clause, steps = found[1], list(found[2])
    deadline = time.monotonic() + max_seconds

    def attempt(cand):
        nonlocal steps, clause
        got = _first_violation_along(spec, cand, skip_disabled=True)
        if got is not None and got[0] == prop and len(got[2]) < len(steps):
            steps, clause = list(got[2]), got[1]
            return True
        return False

    while time.monotonic() < deadline:
        # single deletions, from the end (later steps depend on earlier ones, not the reverse)
        changed = False
        i = len(steps) - 1
        while i >= 0 and time.monotonic() < deadline:
            if attempt(steps[:i] + steps[i + 1:]):
                changed = True
                i = min(i, len(steps))
            i -= 1
        if changed:
            continue                    # until no single step can go
        if len(steps) > pairs_up_to:
            break
        removed = False
        for j in range(len(steps) - 1, 0, -1):
            for i in range(j - 1, -1, -1):
                if time.monotonic() >= deadline:
                    break
                if attempt(steps[:i] + steps[i + 1:j] + steps[j + 1:]):
                    removed = True
                    break
            if removed:
                break
        if not removed:
            break
    return tuple(steps), clause


def _settings(max_examples, stateful_step_count, deadline):
    return settings(
        max_examples=max_examples,
        stateful_step_count=stateful_step_count,
        deadline=deadline,
        database=None,
        derandomize=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        print_blob=False,
    )


@contextlib.contextmanager
def _without_local_constants():
    """Hypothesis mixes integers mined from the *local* modules loaded in the process into its
    draws (``hypothesis.internal.conjecture.providers``), so a seed's run depends on what the
    process imported (a test module, the CLI, ...).  For an index into the enabled steps those
    constants mean nothing; switch them off for the run so that a seed gives the same run in
    every process.  Internal API: if this Hypothesis version lacks it, runs are still
    deterministic within one process set-up."""
    try:
        from hypothesis.internal.conjecture import providers
        original = providers._get_local_constants
        cache = providers.CONSTANTS_CACHE
        empty = type(providers._local_constants)()
    except (ImportError, AttributeError, TypeError):
        yield
        return
    providers._get_local_constants = lambda: empty
    cache.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.cache.clear()


def run_stateful(config, variant=None, *, seed: int, max_examples: int = 200,
                 stateful_step_count: int = 60, deadline=None, fault_actions=None,
                 minimise_seconds: float = 10.0) -> StatefulResult:
    """Run the Hypothesis stateful engine on a named configuration and design variant.

    ``seed`` fixes Hypothesis's random choices (``hypothesis.seed``); nothing is printed.  On a
    violation the shrunk example is minimised (``minimise``) and returned as a trace that
    replays with ``properties.trace.replay`` to the same property."""
    spec = KafkaSpec.named(config, variant)
    variant_name = variant or "correct"
    stats = RunStats()
    machine = machine_for(spec, fault_actions=fault_actions, stats=stats)
    machine = hypothesis.seed(seed)(machine)
    t0 = time.perf_counter()
    violation = None
    try:
        with _without_local_constants():
            run_state_machine_as_test(machine, settings=_settings(
                max_examples, stateful_step_count, deadline))
    except PropertyViolation as e:
        violation = e
    trace = clause = shrunk_length = None
    prop = None
    if violation is not None:
        prop = violation.property
        shrunk_length = len(violation.steps)
        steps, clause = minimise(spec, violation.steps, prop, max_seconds=minimise_seconds)
        trace = Trace(config, variant_name, steps, prop, clause, engine="stateful")
    seconds = time.perf_counter() - t0
    wanted = spec.witness_ids()
    fa = machine.fault_actions
    return StatefulResult(
        config=config, variant=variant_name, seed=seed, found=violation is not None,
        property=prop, clause=clause, trace=trace, shrunk_length=shrunk_length,
        steps_run=stats.steps_run, examples=stats.examples, distinct=len(stats.fingerprints),
        witnesses_reached=tuple(w for w in wanted if w in stats.witnesses),
        witnesses_missing=tuple(w for w in wanted if w not in stats.witnesses),
        seconds=seconds, fault_actions=None if fa is None else tuple(sorted(fa)))
