"""The Kafka model seen through the engines' ``Spec`` protocol (properties/spec.py)."""
from __future__ import annotations

from model import next as model_next
from model.actions import time_pending
from model.config import VARIANTS, Design, ModelConfig, design_for
from model.configs import CONFIGS, SMALL
from model.symmetry import canonical
from properties import incremental, progress, registry
from properties.graphcheck import DEADLOCKED, OPEN, SETTLED
from properties.outstanding import outstanding


class UnknownName(KeyError):
    """An unknown configuration or variant name; the message lists the valid ones."""

    def __str__(self) -> str:
        return self.args[0]


def get_config(name: str) -> ModelConfig:
    try:
        return CONFIGS[name]
    except KeyError:
        raise UnknownName(f"unknown configuration {name!r}; configurations: "
                          f"{', '.join(CONFIGS)}") from None


def get_design(variant: str | None) -> Design:
    try:
        return design_for(variant)
    except KeyError:
        raise UnknownName(f"unknown variant {variant!r}; variants: correct, "
                          f"{', '.join(VARIANTS)}") from None


class WatchedDesign(Design):
    """A design that records which of its flags that are on the model read.  A flag never read
    in a whole exploration changed nothing: the variant's state space there is the correct
    design's, and "no violation" says nothing about the flaw ("indistinguishable from the
    correct design on C").  Only the model's actions see it; the properties read the plain
    design (P8 reads the variant's own design, which is not the branch being reached)."""

    def __getattribute__(self, name):
        value = object.__getattribute__(self, name)
        if value is True:
            object.__getattribute__(self, "_read").add(name)
        return value

    def __reduce__(self):           # travels (Spark, process pools) as the plain design
        return (Design, tuple(object.__getattribute__(self, f)
                              for f in Design.__dataclass_fields__))


def watched(design: Design) -> WatchedDesign:
    w = WatchedDesign(**{f: getattr(design, f) for f in Design.__dataclass_fields__})
    object.__setattr__(w, "_read", set())
    return w


class KafkaSpec:
    def __init__(self, cfg: ModelConfig, design: Design = Design(), variant: str = "correct"):
        cfg.validate()
        self.cfg = cfg
        self.design = design
        self.variant = variant
        self.name = f"{cfg.name}[{variant}]"
        self._flags_on = design.flags_on()
        # the model's view of the design: watched where a flag is on (a cheap wrapper: only
        # variants pay for it)
        self._model_design = watched(design) if self._flags_on else design
        self._progress_goals = progress.goals(cfg)
        # The explorer asks a state only the ALWAYS clauses that read what the step into it
        # changed (properties/incremental.py).  Not under a variant: a flag may lead a helper
        # the clauses call down a path that reads more than the correct design's code does;
        # nor for a subclass with its own ``violation``, which ``violation_since`` would skip.
        self.checks_incrementally = (not self._flags_on
                                     and type(self).violation is KafkaSpec.violation)

    def flags_unreached(self) -> tuple:
        """The flags that are on and that no step taken so far has read: their branches were
        never reached, so they changed nothing in what was explored."""
        if not self._flags_on:
            return ()
        read = object.__getattribute__(self._model_design, "_read")
        return tuple(f for f in self._flags_on if f not in read)

    def flags_read(self) -> frozenset:
        """The flags that are on and that a step taken so far has read."""
        if not self._flags_on:
            return frozenset()
        return frozenset(object.__getattribute__(self._model_design, "_read"))

    def note_flags_read(self, names) -> None:
        """Count ``names`` as read: steps taken in another process (``explore`` with workers)
        read them."""
        if self._flags_on:
            object.__getattribute__(self._model_design, "_read").update(names)

    @classmethod
    def named(cls, config: str, variant: str | None = None) -> KafkaSpec:
        return cls(get_config(config), get_design(variant), variant or "correct")

    def initial_states(self):
        return [model_next.initial_state(self.cfg)]

    def successors(self, state):
        return model_next.successors(state, self.cfg, self._model_design)

    def step(self, state, st):
        return model_next.step(state, self.cfg, self._model_design, st)

    def violation(self, state, succ):
        found = registry.first_violation(state, self.cfg, self.design, succ)
        return None if found is None else found[0]

    # properties.spec.incremental_checks: what a step changed, and the check that uses it
    changes = staticmethod(incremental.changes)

    def violation_since(self, state, succ, changed: int):
        found = registry.first_violation(state, self.cfg, self.design, succ, changed)
        return None if found is None else found[0]

    def cut(self, state) -> bool:
        """Cut by the time bound: the clock is at ``max_time`` and something waits for a point
        in time, so the bound, not the protocol, decides what comes next."""
        cfg = self.cfg
        return state.now >= cfg.max_time and time_pending(state, cfg, self.design)

    def graph_status(self, state, succ) -> int:
        """For the whole-graph checks (properties/graphcheck.py): SETTLED when cut by the time
        bound, or when no progress step is enabled (``model.next.quiescent``) and no work is
        outstanding (properties/outstanding.py); DEADLOCKED when no progress step is enabled,
        the bound did not cut it and work is outstanding (a live node or client waits for
        something nothing can deliver); OPEN otherwise (a progress step is enabled)."""
        if self.cut(state):
            return SETTLED
        s, cfg = state, self.cfg
        for st, _ in succ:
            if not model_next.is_fault(s, cfg, st):
                return OPEN
        return DEADLOCKED if outstanding(state, cfg, self.design) else SETTLED

    def status_function(self):
        """``graph_status``, for ``graphcheck.status_of``, where ``settled`` and ``deadlocked``
        are this class's (both read ``graph_status``, so the status they give is it); None
        where a subclass has its own (``status_of`` then asks them)."""
        cls = type(self)
        if cls.settled is KafkaSpec.settled and cls.deadlocked is KafkaSpec.deadlocked:
            return self.graph_status
        return None

    def settled(self, state, succ) -> bool:
        """Settled for SETTLE: cut by the time bound, or quiescent with nothing outstanding.
        A deadlocked state is not settled (``graph_status``)."""
        return self.graph_status(state, succ) == SETTLED

    def deadlocked(self, state, succ) -> bool:
        """DEADLOCK: no progress step, not cut by the time bound, work outstanding."""
        return self.graph_status(state, succ) == DEADLOCKED

    def progress_marks(self, state) -> int:
        """PROGRESS's goal marks (properties/progress.py): per client and per registering
        controller, owed by a healthy cluster / met."""
        return progress.marks(state, self.cfg, self.design, self._progress_goals)

    def progress_edge(self, state, st) -> int:
        """A transition's class for PROGRESS: ordinary, a fault or a timeout."""
        return progress.edge(state, self.cfg, st)

    def progress_edges(self, state, succ) -> list:
        """``progress_edge`` of each of the transitions ``succ`` (the explorer asks for all of a
        state's at once: ``progress.edges``), or of this class's subclass's own
        ``progress_edge``."""
        if type(self).progress_edge is not KafkaSpec.progress_edge:
            return [self.progress_edge(state, st) for st, _ in succ]
        return progress.edges(state, self.cfg, succ)

    def progress_strict(self) -> tuple:
        return progress.strict(self.cfg)

    def clause_violated(self, state):
        """(property ID, clause name) violated by ``state``, for reports."""
        return registry.first_violation(state, self.cfg, self.design, self.successors(state))

    def witness_ids(self):
        return tuple(self.cfg.witnesses)

    def witnesses_hit(self, prev, st, nxt, wanted):
        return registry.witnesses_hit(prev, st, nxt, self.cfg, wanted)

    def witness_steps(self) -> dict:
        """Witness ID -> the actions whose steps can show it; () for a state predicate
        (properties.spec.witness_scopes)."""
        return {w: registry.WITNESSES[w].steps for w in self.cfg.witnesses}

    def action_names(self):
        return model_next.ACTION_NAMES

    def swarm_actions(self):
        """The actions that can ever be enabled in this configuration, in Next order: what a
        swarm run may switch off (switching off an action that is never enabled changes
        nothing)."""
        return tuple(entry[0] for entry in model_next._plan(self.cfg))

    def fault_actions(self):
        """The fault kinds among ``swarm_actions`` (a swarm leaves them out more often)."""
        return tuple(a for a in self.swarm_actions() if a in model_next.FAULT_ACTIONS)

    def canonical(self, state):
        return canonical(state, self.cfg)

    # the fingerprint is hash(state) (model/state.py): the builtin itself, so that the explorer
    # calls no Python function for it, once per transition
    fingerprint = staticmethod(hash)


def small_config_names():
    return SMALL

