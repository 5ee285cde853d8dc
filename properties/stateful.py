"""The Hypothesis stateful engine: a thin ``RuleBasedStateMachine`` over a ``Spec``, with swarm
testing, novelty guidance, shrinking to a replayable trace, and coverage against ground truth.

The adapter holds no protocol logic.  The model decides everything: which steps are enabled
(``spec.successors``), what a step does (the successor it returns), which property a state
violates (``spec.violation``) and which witnesses a transition shows (``spec.witnesses_hit``).
Hypothesis chooses, at every step, one of the model's enabled steps, and shrinks the sequence
of choices when an invariant fails.  docs/stateful.md explains the design; in short:

The machine (``machine_for``)
    ``@initialize start`` enters the initial state.  One ``@rule take_step(i)`` with
    ``i = st.integers(0, 2**16 - 1)`` takes one of the current state's enabled steps (those
    the round's swarm allows), chosen by ``i``.  When no allowed step is enabled the episode is
    over and the rule starts a new one: the model's fault budgets make every run quiesce after
    a few dozen steps, and without restarts most rule calls of a long example would stutter
    (two thirds of them on kraft-registration).  The counterexample is the failing episode,
    with the path that led to its start.  One ``@invariant no_property_violated`` checks the
    property registry on every state entered.  One rule, one integer per step: every choice
    costs Hypothesis tens of microseconds of bookkeeping, so few choices per step is the main
    lever on steps/s (a ``st.data()`` draw of ``integers(0, n - 1)`` makes three times more).

Swarm testing (``Swarm``)
    Every round draws from its seed a subset of the configuration's actions to switch off: in
    half of the rounds nothing, otherwise each fault kind with probability 1/2 and each other
    action with probability 1/4 (Groen et al.'s swarm testing: leaving some actions out makes
    the deep behaviours they would interrupt, a crash before a commit, far more likely).  A
    swarm never switches off every action enabled in the initial state.

Novelty guidance (``Novelty``, ``novelty=True``)
    Two bits of ``i`` choose between a uniformly chosen enabled step (``i & 3 == 0``) and a
    uniformly chosen *novel* one: a step into a state the run has not visited.  The novel steps
    not taken are remembered as the *frontier*.  Where no novel step is enabled, the rule jumps:
    it takes a frontier step from where it was found (a new episode, whose path is the path to
    that state), trying a few recent frontier items; only if they were all visited since does it
    take a uniform step.  This is a coverage-guided fuzzer's corpus (AFL, Go-Explore) inside
    Hypothesis: three steps in four go where the run has not been.  For shrinking, a choice
    sequence must replay to the same steps, so the memory a round reads is frozen at the
    round's start (what earlier rounds wrote; a round's own discoveries serve the next round,
    and within an example, the states it visited itself).  Rounds are short (10 examples) so
    the memory is fresh.  The memory is the run's: a failing round replays by rerunning the run
    from its seed, and the trace replays alone.

Rounds (``fuzz_spec``, ``fuzz``)
    A run is a sequence of rounds, each a Hypothesis run of ``examples_per_round`` examples of
    ``steps_per_example`` rule calls with round seed ``round_seed(seed, r)`` and its swarm,
    until a property fails, the profile's rounds are done, or the time budget is spent
    (checked before every example).  The failing round's index, seed and swarm are reported.

Counterexamples
    The violation of Hypothesis's shrunk example is minimised further (``minimise``: delete
    single steps, then pairs, while the trace still reaches a violation of the same property)
    and returned as a trace in the project's JSON format (engine ``"stateful"``).

Coverage
    The fingerprints of every state visited (all rounds) are kept; ``properties.coverage``
    compares them with the explorer's reachable set of the same configuration, computed once
    and cached.

Determinism: ``database=None``, ``deadline=None``, every health check off and a fixed seed
per round; a run then depends only on its seed, the switches, the profile and the model.
Hypothesis also mixes integers mined from the process's local modules into its draws, which
would make a seed's run depend on what the process imported; the rounds switch that off
(``_without_local_constants``, a Hypothesis internal).  The recorded trace, not the seed, is
the reproducer of record (it survives Hypothesis upgrades).  Only the time budget can make two
runs of one seed differ, by stopping one of them earlier.
"""
from __future__ import annotations

import contextlib
import hashlib
import random
import time
from array import array
from bisect import bisect_left
from dataclasses import dataclass, field

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, \
    run_state_machine_as_test

from properties.coverage import MASK, Coverage, measure
from properties.kafka_spec import KafkaSpec
from properties.trace import Trace

__all__ = ["PropertyViolation", "Profile", "PROFILES", "Swarm", "RunStats", "FuzzResult",
           "FailedRound", "machine_for", "round_seed", "fuzz", "fuzz_spec", "minimise"]


class PropertyViolation(AssertionError):
    """A state of the run violates a property; carries what a trace needs."""

    def __init__(self, prop: str, clause: str | None, steps: tuple):
        self.property = prop
        self.clause = clause
        self.steps = tuple(steps)
        super().__init__(f"{prop} ({clause}) violated after {len(self.steps)} steps: "
                         + ", ".join(map(str, self.steps)))


class _BudgetSpent(KeyboardInterrupt):
    """Raised before an example when the time budget is spent.  Hypothesis takes any other
    exception for a failure of the example, and records it in its tree of choices (a later
    example with the same choices that does not raise is then "flaky"); an interrupt it
    passes through."""


# ---- profiles -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Profile:
    """A budget: ``rounds`` Hypothesis runs of ``examples_per_round`` examples of
    ``steps_per_example`` rule calls, and a wall-clock cap.  The work budget makes the result a
    function of the seed; the cap only stops a slow machine early."""
    name: str
    rounds: int
    examples_per_round: int
    steps_per_example: int
    time_budget: float          # seconds

    @property
    def rule_calls(self) -> int:
        return self.rounds * self.examples_per_round * self.steps_per_example

    def describe(self) -> str:
        return (f"{self.name}: {self.rounds} rounds x {self.examples_per_round} examples x "
                f"{self.steps_per_example} steps ({self.rule_calls:,} rule calls), "
                f"at most {self.time_budget:g} s")


PROFILES = {p.name: p for p in (
    Profile("ci", rounds=40, examples_per_round=10, steps_per_example=100, time_budget=60.0),
    Profile("dev", rounds=300, examples_per_round=10, steps_per_example=100, time_budget=300.0),
    Profile("nightly", rounds=10000, examples_per_round=10, steps_per_example=100,
            time_budget=3600.0),
)}


def get_profile(profile) -> Profile:
    if isinstance(profile, Profile):
        return profile
    try:
        return PROFILES[profile]
    except KeyError:
        raise ValueError(f"unknown profile {profile!r}; profiles: "
                         f"{', '.join(PROFILES)}") from None


# ---- swarm ----------------------------------------------------------------------------------

_FULL_SHARE = 0.5           # share of rounds with every action on
_P_OFF_FAULT = 0.5          # a fault kind is switched off with this probability
_P_OFF_OTHER = 0.25         # any other action


def _swarm_actions(spec) -> tuple:
    fn = getattr(spec, "swarm_actions", None)
    return tuple(fn()) if fn else tuple(spec.action_names())


def _fault_actions(spec) -> frozenset:
    fn = getattr(spec, "fault_actions", None)
    return frozenset(fn()) if fn else frozenset()


@dataclass(frozen=True)
class Swarm:
    """The actions a round switches off (in the spec's action order)."""
    disabled: tuple = ()

    @classmethod
    def draw(cls, spec, seed: int) -> Swarm:
        """The swarm of the round with seed ``seed`` (a pure function of both)."""
        rng = random.Random(seed)
        if rng.random() < _FULL_SHARE:
            return cls()
        names = _swarm_actions(spec)
        faults = _fault_actions(spec)
        init_actions = {stp.action for s0 in spec.initial_states()
                        for stp, _ in spec.successors(s0)}
        for _ in range(100):
            off = tuple(a for a in names
                        if rng.random() < (_P_OFF_FAULT if a in faults else _P_OFF_OTHER))
            if not init_actions or init_actions - set(off):
                return cls(off)
        return cls()

    @classmethod
    def parse(cls, spec, text: str) -> Swarm:
        """The inverse of ``describe``: "all" or "off: a, b"."""
        text = text.strip()
        if text in ("", "all"):
            return cls()
        if not text.startswith("off:"):
            raise ValueError(f"a swarm is 'all' or 'off: ACTION, ...', got {text!r}")
        names = [n.strip() for n in text[4:].split(",") if n.strip()]
        known = _swarm_actions(spec)
        bad = [n for n in names if n not in known]
        if bad:
            raise ValueError(f"unknown actions {bad} in the swarm; actions: {', '.join(known)}")
        return cls(tuple(a for a in known if a in names))

    def describe(self) -> str:
        return "all" if not self.disabled else "off: " + ", ".join(self.disabled)


def round_seed(seed: int, r: int) -> int:
    """The seed of round ``r`` of a run with seed ``seed``: 64 bits of BLAKE2b, so that rounds
    are independent and the derivation is the same everywhere."""
    digest = hashlib.blake2b(f"kipcheck-round:{seed}:{r}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


# ---- the machine ----------------------------------------------------------------------------

@dataclass
class RunStats:
    """Counters shared by every machine instance of a run (all rounds, shrinking included)."""
    steps_run: int = 0
    rule_calls: int = 0
    examples: int = 0
    restarts: int = 0
    seen: set = field(default_factory=set)          # masked fingerprints, every round
    actions: dict = field(default_factory=dict)     # action name -> steps taken
    witnesses: set = field(default_factory=set)
    wanted: list = field(default_factory=list)      # witnesses not reached yet
    timeline: list = field(default_factory=list)    # (seconds, steps, distinct)
    started: float = field(default_factory=time.perf_counter)
    deadline: float | None = None                   # perf_counter time to stop at
    progress: object = None                         # callable(RunStats) or None
    progress_every: float = 0.5
    _last_tick: float = 0.0
    round_index: int = 0
    rounds_planned: int = 0

    @property
    def distinct(self) -> int:
        return len(self.seen)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def tick(self, may_stop: bool) -> None:
        now = time.perf_counter()
        if now - self._last_tick >= self.progress_every:
            self._last_tick = now
            self.timeline.append((round(now - self.started, 3), self.steps_run, len(self.seen)))
            if self.progress is not None:
                self.progress(self)
        if may_stop and self.deadline is not None and now >= self.deadline:
            raise _BudgetSpent()


_JUMP_TRIES = 3             # frontier items a rule call tries before it gives up


def _mix(i: int, k: int) -> int:
    """A pick for the ``k``-th restart of a rule call with choice ``i`` (a pure function; the
    multipliers are odd 32-bit constants, so that consecutive tries land far apart)."""
    return ((i * 0x9E3779B1) ^ (k * 0x85EBCA77)) >> 7 & 0xFFFFFF


class Novelty:
    """The novelty memory of a run, shared by its rounds: which example first visited each
    state, and the frontier: steps into unvisited states that a walk saw but did not take.

    ``first_seen``: fingerprint -> index of the first example that visited the state.
    ``pending``: frontier items ``(tag, parent state, step, state, episode, position)``,
    appended in the order examples found them (``tags``: the finding example's index, non-
    decreasing); ``episode``/``position`` say where the parent state is on a recorded episode,
    so the item's path from the initial state can be rebuilt.  ``episodes``: ``(parent episode,
    parent position, steps)`` per episode that recorded something.

    An example with cut ``c`` reads only what examples with smaller indices wrote
    (``first_seen[fp] < c``, ``pending[:bisect(tags, c - 1)]``), so its steps are a function of
    its choices and of the run before it: the shrinker (which runs with the failing example's
    cut) replays a choice sequence to the same steps.  Stale frontier items (visited since) are
    skipped when met and dropped between rounds (``compact``)."""

    def __init__(self, pending_limit: int = 300_000, window: int = 4096):
        self.first_seen: dict = {}
        self.pushed: set = set()
        self.tags = array("Q")
        self.pending: list = []
        self.episodes: list = []
        self.pending_limit = pending_limit
        self.window = window

    def usable(self, cut: int) -> int:
        """How many frontier items an example with cut ``cut`` may use."""
        return bisect_left(self.tags, cut)

    def path(self, episode: int, position: int) -> list:
        """The steps from the initial state to ``position`` on ``episode``."""
        parts = []
        while episode >= 0:
            parent, parent_pos, steps = self.episodes[episode]
            parts.append(steps[:position])
            episode, position = parent, parent_pos
        return [st for part in reversed(parts) for st in part]

    def compact(self, fingerprint) -> None:
        """Drop the frontier items visited since they were found (between rounds only)."""
        seen = self.first_seen
        keep = [it for it in self.pending if fingerprint(it[3]) & MASK not in seen]
        self.pending = keep
        self.tags = array("Q", (it[0] for it in keep))


def machine_for(spec, *, swarm: Swarm | None = None, novelty: Novelty | None = None,
                stats: RunStats | None = None):
    """A ``RuleBasedStateMachine`` class over ``spec`` for one round.

    ``swarm``: the actions switched off (None = none).  ``novelty``: the run's ``Novelty``
    memory (None = no guidance: every step uniform, every episode from the initial state).
    ``stats``: the counters of the run (a fresh ``RunStats`` if None), ``Machine.stats``."""
    stats = stats if stats is not None else RunStats()
    if not stats.wanted and not stats.witnesses:
        stats.wanted = list(spec.witness_ids())
    inits = tuple(spec.initial_states())
    fingerprint = spec.fingerprint
    successors = spec.successors
    violation = spec.violation
    witnesses_hit = spec.witnesses_hit
    seen = stats.seen
    actions = stats.actions
    disabled = frozenset(swarm.disabled) if swarm else frozenset()
    nov = novelty
    if nov is not None:
        first_seen, pushed, episodes = nov.first_seen, nov.pushed, nov.episodes
        tags, pending = nov.tags, nov.pending
        cut = stats.examples            # the round's first example: its memory is frozen
        usable = nov.usable(cut)
    failed: list = []                   # examples of this round that failed

    def allowed(succ):
        return [p for p in succ if p[0].action not in disabled] if disabled else succ

    class SpecMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            stats.tick(may_stop=not failed)
            self.index = stats.examples
            stats.examples += 1
            if nov is not None:
                self.cut = cut
                self.local: set = set()
                self.usable = usable
            self.state = None
            self.steps: list = []
            self.parent = (-1, 0)       # where the episode starts: (episode, position)
            self.episode = -1           # this episode's record, once it recorded something
            self._succ = None           # successors of self.state, computed once
            self._checked = False       # self.state already checked by the invariant

        # -- bookkeeping ----------------------------------------------------------------
        def _enter(self, state):
            self.state = state
            self._succ = None
            self._checked = False
            fp = fingerprint(state) & MASK
            seen.add(fp)
            if nov is not None:
                self.local.add(fp)
                if fp not in first_seen:
                    first_seen[fp] = self.index

        def _unseen(self, state) -> bool:
            fp = fingerprint(state) & MASK
            if fp in self.local:
                return False
            first = first_seen.get(fp)
            return first is None or first >= self.cut

        def _record(self) -> int:
            if self.episode < 0:
                self.episode = len(episodes)
                episodes.append((self.parent[0], self.parent[1], self.steps))
            return self.episode

        def _push(self, others):
            """Remember the novel steps not taken here (the frontier)."""
            for step, nxt in others:
                if len(pending) >= nov.pending_limit:
                    return
                fp = fingerprint(nxt) & MASK
                if fp not in pushed:
                    pushed.add(fp)
                    tags.append(self.index)
                    pending.append((self.index, self.state, step, nxt, self._record(),
                                    len(self.steps)))

        def _new_episode(self, parent, state):
            stats.restarts += 1
            self.steps = []
            self.parent = parent
            self.episode = -1
            self.state = state
            self._succ = None

        def _jump(self, i) -> bool:
            """Take a frontier step from where it was found (a new episode); False if the
            items tried were all visited since."""
            usable = self.usable
            if not usable:
                return False
            width = min(usable, nov.window)
            for attempt in range(_JUMP_TRIES):
                item = pending[usable - 1 - _mix(i, attempt) % width]
                if item[2].action not in disabled and self._unseen(item[3]):
                    _, parent_state, step, nxt, ep, pos = item
                    self._new_episode((ep, pos), parent_state)
                    self._take(step, nxt)
                    return True
            return False

        def _take(self, step, nxt):
            prev = self.state
            self.steps.append(step)
            stats.steps_run += 1
            name = step.action
            actions[name] = actions.get(name, 0) + 1
            if stats.wanted:
                hit = witnesses_hit(prev, step, nxt, stats.wanted)
                if hit:
                    stats.witnesses.update(hit)
                    stats.wanted[:] = [w for w in stats.wanted if w not in stats.witnesses]
            self._enter(nxt)

        def full_steps(self) -> list:
            ep, pos = self.parent
            return (nov.path(ep, pos) if ep >= 0 else []) + self.steps

        # -- rules ----------------------------------------------------------------------
        @initialize()
        def start(self):
            self._enter(inits[0])

        @rule(i=st.integers(0, 2 ** 16 - 1))
        def take_step(self, i):
            stats.rule_calls += 1
            succ = self._succ
            if succ is None:
                succ = self._succ = successors(self.state)
            choices = allowed(succ)
            if nov is not None:
                pick = i >> 2
                if i & 3:               # three in four: go where the run has not been
                    novel_all = [p for p in succ if self._unseen(p[1])]
                    novel = [p for p in novel_all if p[0].action not in disabled] \
                        if disabled else novel_all
                    if novel:
                        step, nxt = novel[pick % len(novel)]
                        if len(novel_all) > 1:
                            # the frontier keeps the switched-off steps too, for later rounds
                            self._push([p for p in novel_all if p[0] is not step])
                        self._take(step, nxt)
                        return
                    if self._jump(i):
                        return
            else:
                pick = i
            if not choices:             # the episode is over: start a new one
                self._new_episode((-1, 0), inits[0])
                self._enter(inits[0])
                self._checked = True    # the initial state was checked at start
                succ = self._succ = successors(self.state)
                choices = allowed(succ)
                if not choices:
                    return
            step, nxt = choices[pick % len(choices)]
            if nov is not None:
                # a uniform step leaves novel successors behind too: queue them, or states
                # reached only by uniform steps never have their other branches explored
                others = [p for p in succ if p[0] is not step and self._unseen(p[1])]
                if others:
                    self._push(others)
            self._take(step, nxt)

        @invariant()
        def no_property_violated(self):
            if self._checked:           # a restart: the state was checked already
                return
            succ = self._succ
            if succ is None:
                succ = self._succ = successors(self.state)
            prop = violation(self.state, succ)
            self._checked = True
            if prop is not None:
                failed.append(self.index)
                raise PropertyViolation(prop, _clause(spec, self.state, prop),
                                        self.full_steps())

        def __repr__(self):
            return f"SpecMachine({spec.name}, {len(self.steps)} steps)"

    SpecMachine.__name__ = SpecMachine.__qualname__ = "SpecMachine"
    SpecMachine.spec = spec
    SpecMachine.stats = stats
    SpecMachine.swarm = swarm or Swarm()
    SpecMachine.novelty = novelty
    return SpecMachine


def _clause(spec, state, prop):
    """The clause of ``prop`` that ``state`` violates, if the spec can say (KafkaSpec can)."""
    if not hasattr(spec, "clause_violated"):
        return None
    found = spec.clause_violated(state)
    return found[1] if found and found[0] == prop else None


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


def _settings(max_examples, stateful_step_count):
    return settings(
        max_examples=max_examples,
        stateful_step_count=stateful_step_count,
        deadline=None,
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



# ---- runs -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class FailedRound:
    """Where a failure came from: enough to replay the round alone."""
    index: int
    round_seed: int
    swarm: Swarm
    novelty: bool

    def to_dict(self) -> dict:
        return {"index": self.index, "round_seed": self.round_seed,
                "swarm": self.swarm.describe(), "novelty": self.novelty}


@dataclass
class FuzzResult:
    spec_name: str
    config: str | None
    variant: str | None
    seed: int
    profile: str
    swarm: bool                       # swarm testing on
    novelty: bool                     # novelty guidance on
    found: bool
    property: str | None
    clause: str | None
    steps: tuple | None               # the minimised counterexample's steps
    trace: Trace | None               # the same as a project trace (Kafka specs)
    shrunk_length: int | None         # Hypothesis's shrunk example, before ``minimise``
    failed_round: FailedRound | None
    rounds: int                       # rounds run (the failing one included)
    steps_run: int                    # model steps taken, every round, shrinking included
    rule_calls: int
    examples: int
    restarts: int
    distinct: int                     # distinct state fingerprints visited
    action_counts: dict
    witnesses_reached: tuple
    witnesses_missing: tuple
    seconds: float                    # the whole run, minimising included
    search_seconds: float             # the Hypothesis rounds only
    stop_reason: str                  # "violation", "rounds", "time budget", "interrupted"
    timeline: list
    coverage: Coverage | None = None
    visited: set | None = None        # the fingerprints visited (for coverage and merging)

    @property
    def steps_per_second(self) -> float:
        return self.steps_run / self.search_seconds if self.search_seconds > 0 else 0.0

    def to_dict(self) -> dict:
        return {
            "spec": self.spec_name, "config": self.config, "variant": self.variant,
            "seed": self.seed, "profile": self.profile, "swarm": self.swarm,
            "novelty": self.novelty, "found": self.found, "property": self.property,
            "clause": self.clause,
            "trace": self.trace.to_json() if self.trace else (
                [s.to_json() for s in self.steps] if self.steps else None),
            "shrunk_length": self.shrunk_length,
            "failed_round": self.failed_round.to_dict() if self.failed_round else None,
            "rounds": self.rounds, "steps_run": self.steps_run, "rule_calls": self.rule_calls,
            "examples": self.examples, "restarts": self.restarts, "distinct": self.distinct,
            "steps_per_second": round(self.steps_per_second, 1),
            "action_counts": dict(self.action_counts),
            "witnesses_reached": list(self.witnesses_reached),
            "witnesses_missing": list(self.witnesses_missing),
            "seconds": round(self.seconds, 3), "search_seconds": round(self.search_seconds, 3),
            "stop_reason": self.stop_reason, "timeline": [list(t) for t in self.timeline],
            "coverage": self.coverage.to_dict() if self.coverage else None,
        }

    def replay_hint(self) -> str:
        """The command that reruns this run (deterministic: the failing round comes again,
        unless a time budget stops the rerun earlier)."""
        if self.config is None:
            return ""
        parts = ["kipcheck fuzz", f"--config {self.config}"]
        if self.variant and self.variant != "correct":
            parts.append(f"--variant {self.variant}")
        parts += [f"--profile {self.profile}", f"--seed {self.seed}"]
        if not self.swarm:
            parts.append("--no-swarm")
        if not self.novelty:
            parts.append("--no-novelty")
        return " ".join(parts)


def fuzz_spec(spec, *, seed: int, profile="ci", swarm: bool = True, novelty: bool = True,
              time_budget: float | None = None, rounds: int | None = None,
              round_seeds=None, round_swarm: Swarm | None = None, progress=None,
              reach=None, minimise_seconds: float = 10.0) -> FuzzResult:
    """Fuzz ``spec`` round after round until a property fails or the budget is spent.

    ``seed``: the run's seed (round ``r`` has seed ``round_seed(seed, r)``).  ``profile``: a
    name of ``PROFILES`` or a ``Profile``.  ``swarm``/``novelty``: the two guidance switches
    (both off is plain Hypothesis stateful testing over the model, with restarts).
    ``time_budget``: seconds, overriding the profile's cap.  ``rounds``: overrides the
    profile's.  ``round_seeds``: run exactly these round seeds (tests, campaigns), each with
    ``round_swarm`` if given, else the swarm its seed draws.  ``progress``: called with the
    ``RunStats`` about twice a second.  ``reach``: a ``coverage.Reachable`` to measure the
    coverage against."""
    prof = get_profile(profile)
    budget = prof.time_budget if time_budget is None else time_budget
    if budget <= 0:
        raise ValueError("the time budget must be positive")
    n_rounds = prof.rounds if rounds is None else rounds
    if round_seeds is not None:
        plan = [(r, int(s)) for r, s in enumerate(round_seeds)]
    else:
        plan = [(r, round_seed(seed, r)) for r in range(n_rounds)]
    stats = RunStats(progress=progress, rounds_planned=len(plan))
    stats.deadline = stats.started + budget
    stats.wanted = list(spec.witness_ids())
    memory = Novelty() if novelty else None
    violation = None
    failed = None
    stop_reason = "rounds"
    done = 0
    search = 0.0
    for r, rs in plan:
        if time.perf_counter() >= stats.deadline:
            stop_reason = "time budget"
            break
        if round_swarm is not None:
            sw = round_swarm
        else:
            sw = Swarm.draw(spec, rs) if swarm else Swarm()
        stats.round_index = r
        if memory is not None and r > 0:
            memory.compact(spec.fingerprint)
        machine = hypothesis.seed(rs)(machine_for(spec, swarm=sw, novelty=memory, stats=stats))
        t = time.perf_counter()
        try:
            with _without_local_constants():
                run_state_machine_as_test(machine, settings=_settings(
                    prof.examples_per_round, prof.steps_per_example))
        except PropertyViolation as e:
            violation = e
            failed = FailedRound(r, rs, sw, novelty)
        except _BudgetSpent:
            stop_reason = "time budget"
        except KeyboardInterrupt:
            stop_reason = "interrupted"
        finally:
            search += time.perf_counter() - t
            done += 1
        if violation is not None:
            stop_reason = "violation"
            break
        if stop_reason != "rounds":
            break
    stats.timeline.append((round(stats.elapsed(), 3), stats.steps_run, len(stats.seen)))
    steps = clause = shrunk_length = prop = trace = None
    if violation is not None:
        prop = violation.property
        shrunk_length = len(violation.steps)
        steps, clause = minimise(spec, violation.steps, prop, max_seconds=minimise_seconds)
        if isinstance(spec, KafkaSpec):
            trace = Trace(spec.cfg.name, spec.variant, steps, prop, clause, engine="stateful")
    wanted = tuple(spec.witness_ids())
    kafka = isinstance(spec, KafkaSpec)
    result = FuzzResult(
        spec_name=spec.name, config=spec.cfg.name if kafka else None,
        variant=spec.variant if kafka else None, seed=seed, profile=prof.name,
        swarm=swarm or round_swarm is not None, novelty=novelty, found=violation is not None,
        property=prop, clause=clause, steps=steps, trace=trace, shrunk_length=shrunk_length,
        failed_round=failed, rounds=done, steps_run=stats.steps_run,
        rule_calls=stats.rule_calls, examples=stats.examples, restarts=stats.restarts,
        distinct=len(stats.seen), action_counts=dict(stats.actions),
        witnesses_reached=tuple(w for w in wanted if w in stats.witnesses),
        witnesses_missing=tuple(w for w in wanted if w not in stats.witnesses),
        seconds=stats.elapsed(), search_seconds=search, stop_reason=stop_reason,
        timeline=stats.timeline, visited=stats.seen)
    if reach is not None:
        result.coverage = measure(stats.seen, stats.actions, reach)
    return result


def fuzz(config: str, variant: str | None = None, **kwargs) -> FuzzResult:
    """``fuzz_spec`` on a named configuration and design variant (``kipcheck fuzz``)."""
    return fuzz_spec(KafkaSpec.named(config, variant), **kwargs)
