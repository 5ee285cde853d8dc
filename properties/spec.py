"""What an engine needs from a model: the ``Spec`` protocol.

Engines (the explorer, later the Hypothesis and Z3 engines) see a model only through this
interface, so the same explorer runs the Kafka model and the TwoPhase reference model of
``bench/``.  States must be hashable; ``fingerprint`` must be deterministic across processes
(no ``str`` hashes: Python salts them per process).
"""
from __future__ import annotations

from typing import Any, Protocol
from collections.abc import Hashable, Iterable, Sequence

from model.step import Step


class Spec(Protocol):
    name: str

    def initial_states(self) -> Sequence[Hashable]:
        """The initial states, in a fixed order."""

    def successors(self, state) -> list[tuple[Step, Any]]:
        """The Next relation from ``state``: (step, successor) pairs in a fixed order."""

    def step(self, state, step: Step):
        """The successor of ``state`` by ``step``, or None if ``step`` is not enabled."""

    def violation(self, state, succ: list[tuple[Step, Any]]) -> str | None:
        """The ID of the first property (registry order) that ``state`` violates, or None.

        ``succ`` is ``successors(state)``, passed in so quiescence checks cost nothing extra."""

    def witness_ids(self) -> tuple[str, ...]:
        """The witnesses this spec expects to be reachable, in a fixed order."""

    def witnesses_hit(self, prev, step: Step, nxt, wanted: Iterable[str]) -> list[str]:
        """Which of the still ``wanted`` witnesses the transition prev --step--> nxt shows."""

    def action_names(self) -> tuple[str, ...]:
        """Every action of the Next relation (for per-action coverage)."""

    def canonical(self, state):
        """A representative of ``state`` under the spec's symmetries (identity if none)."""

    def fingerprint(self, state) -> int:
        """A deterministic 64-bit fingerprint of ``state``."""


def states_are_fingerprints(spec) -> bool:
    """Optional protocol extension: a spec with ``fingerprint_is_state = True`` promises that
    every state is an ``int`` in [0, 2**64) and is its own fingerprint (``fingerprint(s) ==
    s``: a packed state, injective, so it has no collisions).  The one-process explorer's hot
    loop then neither calls ``fingerprint`` nor keeps a second copy of the candidate states
    (``properties.explore._expand_packed``); its other loops and the parallel engine still
    call ``fingerprint``, which must agree."""
    return getattr(spec, "fingerprint_is_state", False) is True


def incremental_checks(spec):
    """Optional protocol extension: ``(changes, violation_since)`` where a spec with
    ``checks_incrementally = True`` offers them, else None.  ``changes(prev, nxt)`` is an int
    token of what a transition changed; ``violation_since(state, succ, token)`` is
    ``violation(state, succ)`` for a state reached by a transition of that token from a state
    where ``violation`` found nothing (properties/incremental.py).  The explorer uses them, in
    one process and in its workers (not with symmetry; ``explore --spark`` does not); a token
    of -1 (every bit) asks every check."""
    if getattr(spec, "checks_incrementally", False) is not True:
        return None
    return spec.changes, spec.violation_since


def witness_scopes(spec) -> dict:
    """Witness ID -> where the engines look for it: ``()`` for a state predicate (its
    ``witnesses_hit`` reads only ``nxt``: checked once per distinct state, initial states
    included), a tuple of action names (seen only on steps of those actions), or ``None`` (any
    transition).  Optional protocol extensions: ``witness_steps()`` gives the mapping; a spec
    without it but with ``witness_scope = "state"`` has only state predicates; otherwise every
    witness may be seen on any transition."""
    ids = tuple(spec.witness_ids())
    steps_of = getattr(spec, "witness_steps", None)
    if steps_of is not None:
        scopes = steps_of()
        return {w: (tuple(scopes[w]) if scopes[w] is not None else None) for w in ids}
    state = getattr(spec, "witness_scope", "transition") == "state"
    return {w: (() if state else None) for w in ids}


def progress_edges_of(spec):
    """(state, succ) -> the classes of a state's transitions for PROGRESS: the spec's optional
    ``progress_edges(state, succ)``, or ``progress_edge(state, step)`` asked per transition."""
    edges = getattr(spec, "progress_edges", None)
    if edges is not None:
        return edges
    edge = spec.progress_edge
    return lambda state, succ: [edge(state, st) for st, _ in succ]


def seen_on_step(scope, action: str) -> bool:
    """Whether a witness of ``scope`` (``witness_scopes``) can be seen on a step of ``action``."""
    return scope is None or (bool(scope) and action in scope)


def note_step_witnesses(witnesses_hit, scopes: dict, wanted: list, reached: set, prev, st,
                        nxt) -> None:
    """Check the still ``wanted`` witnesses that can be seen on ``st`` (``witness_scopes``) on
    the transition prev --st--> nxt; move those seen from ``wanted`` to ``reached``."""
    ws = [w for w in wanted if seen_on_step(scopes[w], st.action)]
    if ws:
        for w in witnesses_hit(prev, st, nxt, ws) or ():
            if w in wanted:
                wanted.remove(w)
                reached.add(w)
