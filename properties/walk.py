"""The seeded random walk: an engine beside the explorer and the stateful engine.

``random_walk(spec, seed, ...)`` takes ``rounds`` swarm rounds (each round's ``Swarm`` drawn
from ``round_seed(seed, r)``, like the stateful engine's) of uniform random steps over
``spec.successors`` from a ``random.Random(seed)``; a walk restarts from the initial state when
no allowed step is enabled, after ``walk_depth`` steps, and after a violation.  The first
violation of each property is minimised (``properties.stateful.minimise``) and kept; the walk
goes on, so one run can report several properties.  Everything but the timeline and the
``max_seconds`` safety cap is a function of the seed.  Campaigns (kipcheck/campaign/shard.py)
run it as the ``random-walk`` engine.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

__all__ = ["WalkFailure", "WalkResult", "random_walk"]

_MASK = 2 ** 64 - 1
_TICK = 0.5                 # seconds between timeline points
_CHECK_EVERY = 1024         # steps between checks of the safety cap


@dataclass(frozen=True)
class WalkFailure:
    """The first violation of one property: its minimised trace and where it was found."""
    property: str
    clause: str | None
    trace: object               # properties.trace.Trace, minimised
    found_length: int           # steps of the walk that found it, before minimising
    round: int


@dataclass
class WalkResult:
    seen: set                   # fingerprints of every state visited (hash & 2**64 - 1)
    swarms: list                # each round's Swarm.describe()
    rounds: int                 # rounds run
    steps: int                  # steps taken
    witnesses: set              # witnesses reached
    actions: dict               # action name -> steps taken
    failures: list = field(default_factory=list)    # list[WalkFailure], in the order found
    timeline: list = field(default_factory=list)    # (elapsed s, steps, distinct) points
    stop_reason: str = "budget"     # "budget", "time budget" or "violation" (the initial state)


def random_walk(spec, seed: int, *, rounds: int, walk_steps: int, walk_depth: int,
                max_seconds: float, minimise_seconds: float, engine: str = "random-walk",
                t0: float | None = None) -> WalkResult:
    """Walk ``spec`` (a KafkaSpec) for ``walk_steps`` steps shared by ``rounds`` rounds (see
    the module docstring); ``t0`` is the clock the timeline and ``max_seconds`` count from."""
    from properties.stateful import Swarm, minimise, round_seed
    from properties.trace import Trace
    t0 = time.perf_counter() if t0 is None else t0
    rng = random.Random(seed)
    fingerprint, successors, violation = spec.fingerprint, spec.successors, spec.violation
    init = spec.initial_states()[0]
    init_succ = successors(init)
    out = WalkResult(seen={fingerprint(init) & _MASK}, swarms=[], rounds=0, steps=0,
                     witnesses=set(), actions={})
    seen, actions, reached = out.seen, out.actions, out.witnesses
    wanted = list(spec.witness_ids())
    failed: set = set()

    def fail(prop, path, r):
        failed.add(prop)
        mini, clause = minimise(spec, path, prop, max_seconds=minimise_seconds)
        trace = Trace(spec.cfg.name, spec.variant, tuple(mini), prop, clause, engine=engine)
        out.failures.append(WalkFailure(prop, clause, trace, len(path), r))

    prop0 = violation(init, init_succ)
    if prop0 is not None:               # the initial state itself violates: nothing to walk
        fail(prop0, [], 0)
        out.timeline.append((0.0, 0, 1))
        out.stop_reason = "violation"
        return out
    per_round, extra = divmod(walk_steps, rounds)
    last_tick = time.perf_counter()
    steps = 0
    for r in range(rounds):
        sw = Swarm.draw(spec, round_seed(seed, r))
        out.swarms.append(sw.describe())
        disabled = frozenset(sw.disabled)
        quota = per_round + (extra if r == rounds - 1 else 0)
        state, succ, path = init, init_succ, []
        taken = 0
        while taken < quota:
            allowed = [p for p in succ if p[0].action not in disabled] if disabled else succ
            if not allowed or len(path) >= walk_depth:
                if not path:
                    break               # nothing this swarm allows from the initial state
                state, succ, path = init, init_succ, []
                continue
            st, nxt = allowed[rng.randrange(len(allowed))]
            taken += 1
            path.append(st)
            actions[st.action] = actions.get(st.action, 0) + 1
            if wanted:
                hit = spec.witnesses_hit(state, st, nxt, wanted)
                if hit:
                    reached.update(hit)
                    wanted = [w for w in wanted if w not in reached]
            seen.add(fingerprint(nxt) & _MASK)
            nsucc = successors(nxt)
            prop = violation(nxt, nsucc)
            if prop is not None:
                if prop not in failed:
                    fail(prop, path, r)
                state, succ, path = init, init_succ, []
            else:
                state, succ = nxt, nsucc
            if taken % _CHECK_EVERY == 0:
                now = time.perf_counter()
                if now - last_tick >= _TICK:
                    last_tick = now
                    out.timeline.append((round(now - t0, 3), steps + taken, len(seen)))
                if now - t0 >= max_seconds:
                    out.stop_reason = "time budget"
                    break
        steps += taken
        if out.stop_reason != "budget":
            break
    out.timeline.append((round(time.perf_counter() - t0, 3), steps, len(seen)))
    out.rounds, out.steps = len(out.swarms), steps
    return out
