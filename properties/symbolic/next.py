"""The symbolic Next relation: the model's action instances, in the model's order, each as a
guard and an update; ``transition(S, S2)`` is their disjunction plus a stutter step.

An *instance* is an action with its argument, as ``model.next._plan`` enumerates them: a node
or client index, nothing, or (for a message action) a network slot.  Instances are numbered;
a step of a symbolic path picks one by number (``act@t``), which is how a counterexample is
read back as the model's ``Step``s.
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from model import next as model_next
from model.config import Design, ModelConfig
from model.next import MSG_ARG, NONE_ARG
from model.step import Step
from properties.symbolic.actions import ENCODINGS
from properties.symbolic.state import And, Layout, Or, Sym

STUTTER = -1


@dataclass(frozen=True)
class Instance:
    index: int
    action: str
    kind: str           # NONE_ARG | NODE_ARG | CLIENT_ARG | MSG_ARG
    arg: int | None     # node/client index, or the network slot (MSG_ARG)
    fault: bool         # a fault action (model.next.FAULT_ACTIONS)

    def __str__(self):
        if self.arg is None:
            return self.action
        return f"{self.action}[{'slot ' if self.kind == MSG_ARG else ''}{self.arg}]"


class Encoding:
    """The encoded transition relation of one configuration and design."""

    def __init__(self, cfg: ModelConfig, design: Design, layout: Layout | None = None):
        cfg.validate()
        self.cfg = cfg
        self.design = design
        self.lay = layout or Layout(cfg)
        inst = []
        for name, _fn, kind, _kinds, args in model_next._plan(cfg):
            if kind == MSG_ARG:
                args = tuple(range(self.lay.cap.network))
            elif kind == NONE_ARG:
                args = (None,)
            for a in args:
                inst.append(Instance(len(inst), name, kind, a, name in model_next.FAULT_ACTIONS))
        self.instances = tuple(inst)
        missing = unencoded_actions(cfg)
        if missing:
            from properties.symbolic.fidelity import EncodingRefused
            raise EncodingRefused(unencoded_reason(cfg, missing))

    def apply(self, S: Sym, inst: Instance):
        """(enabled, successor) of one instance: the guard includes ``fits``."""
        en, S2 = self.apply_unbounded(S, inst)
        return And(en, S2.fits), S2

    def apply_unbounded(self, S: Sym, inst: Instance):
        """(the model's guard, successor): the guard without the capacity condition."""
        fn = ENCODINGS[inst.action]
        return fn(S, self.cfg, self.design) if inst.arg is None else \
            fn(S, self.cfg, self.design, inst.arg)

    def step_of(self, inst: Instance, S_values) -> Step:
        """The model's Step for an instance taken in a state (``S_values(key)`` gives the
        value of a key in that state: a message instance names the message in its slot)."""
        if inst.kind == NONE_ARG:
            return Step(inst.action, ())
        if inst.kind == MSG_ARG:
            from properties.symbolic.state import MSG_FIELDS
            msg = tuple(S_values(f"net.{inst.arg}.{f}") for f, _ in MSG_FIELDS)
            return Step(inst.action, (msg,))
        return Step(inst.action, (inst.arg,))

    def progress(self, S: Sym, inst: Instance, enabled):
        """The instance is enabled and is progress, not a fault (model: is_fault): an
        election while the leader is alive is a fault."""
        if inst.fault:
            return z3.BoolVal(False)
        if inst.action == "controller_becomes_leader":
            leader = S["q.leader"]
            return And(enabled, z3.Not(And(z3.Not(leader == -1), S.node(leader, "alive"))))
        return enabled

    def quiescent(self, S: Sym, applied=None):
        """model.next.quiescent: no progress step is enabled (by the model's guards: a step
        that only the capacities hold back still counts), and the time bound does not hold
        back a pending deadline.  ``applied``: ``apply_unbounded(S, inst)`` of every
        instance, in order, if the caller has built them already."""
        from properties.symbolic.actions import time_pending
        parts = []
        for inst in self.instances:
            # the model's guard: a step only the capacities hold back is still progress
            en, _ = self.apply_unbounded(S, inst) if applied is None else applied[inst.index]
            parts.append(self.progress(S, inst, en))
        stuck = And(S["now"] >= self.cfg.max_time, time_pending(S, self.cfg, self.design))
        return z3.And(z3.Not(Or(*parts)), z3.Not(stuck))

    def act_var(self, name: str):
        """The instance selector of one step: a signed bit-vector wide enough for every
        instance and the stutter (-1).  A bit-vector, not an Int: Z3 bit-blasts it into a
        handful of Booleans, where an Int selector drags every ``act == i`` into linear
        arithmetic (the depth-12 query on zk-small, measured once
        each: 62 s with an Int, 4 s with a bit-vector)."""
        width = max(4, (len(self.instances) + 1).bit_length() + 1)
        return z3.BitVec(name, width)

    @staticmethod
    def act_value(model, act) -> int:
        """The instance a Z3 model picked for ``act`` (-1: stutter)."""
        x = model.eval(act, model_completion=True)
        return x.as_signed_long() if z3.is_bv_value(x) else x.as_long()

    def transition(self, S: Sym, S2: Sym, act, stutter=True):
        """Next(S, S2) with ``act`` (``act_var``, or a Z3 Int) the instance taken (-1:
        stutter).  Each component of S2 is one ite over the instances that change it."""
        guards = []
        changed: dict[str, list] = {}
        for inst in self.instances:
            en, T = self.apply(S, inst)
            guards.append(z3.Implies(act == inst.index, en))
            for k, x in T.v.items():
                if x is not S.v[k] and not x.eq(S.v[k]):
                    changed.setdefault(k, []).append((inst.index, x))
        lo = STUTTER if stutter else 0
        parts = [act >= lo, act < len(self.instances)] + guards
        for k in self.lay.keys:
            val = S[k]
            for idx, x in reversed(changed.get(k, ())):
                val = z3.If(act == idx, x, val)
            parts.append(S2[k] == val)
        return z3.And(*parts)


def unencoded_actions(cfg: ModelConfig) -> tuple:
    """The actions ``cfg`` can take (``model.next._plan``) that the encoding has no statement
    of, in the Next order: the engine refuses such a configuration rather than answer for a
    transition relation without them."""
    return tuple(name for name, *_ in model_next._plan(cfg) if name not in ENCODINGS)


def encoded_configs(names) -> tuple:
    """The configurations among ``names`` (of ``model.configs.CONFIGS``) whose every action the
    encoding states, in the same order: the ones the engine answers for."""
    from model.configs import CONFIGS
    return tuple(c for c in names if not unencoded_actions(CONFIGS[c]))


def unencoded_reason(cfg: ModelConfig, missing: tuple) -> str:
    return (f"{cfg.name} takes {', '.join(missing)}, which the Z3 encoding "
            f"(properties/symbolic/actions.py) does not state")
