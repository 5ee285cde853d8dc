"""Observations: the projection of a model state that an implementation must match
(DESIGN 3.2, last item).  ``observe(state)`` is a snapshot; ``observe_step`` lists what a
transition made visible (envelopes sent)."""
from __future__ import annotations

from typing import NamedTuple

from model.config import ModelConfig
from model.state import ENVELOPE_REQUEST, MUTATION_RECORD, REGISTER_CONTROLLER, State
from model.step import Step


class Observation(NamedTuple):
    responses: tuple        # per client: tuple of (error code, envelope error) final responses
    endpoints: tuple        # per client: frozenset of (node, listener name) returned, or ()
    # ZK: (client, writer node, writer epoch); KRaft: (client, leader, epoch)
    writes: tuple
    registrations: tuple    # KRaft: (controller, incarnation) in log order
    registered: tuple       # KRaft: per controller node, its registered_in_log flag


def observe(s: State, cfg: ModelConfig) -> Observation:
    names = cfg.listener_names
    responses = tuple(tuple((r.code, r.envelope_error) for r in cl.responses) for cl in s.clients)
    endpoints = tuple(
        frozenset((cfg.nodes[n].name, names[li]) for r in cl.responses for n, li in r.endpoints)
        for cl in s.clients)
    if cfg.mode == "zk":
        writes = tuple((w.req, w.writer, w.writer_epoch) for w in s.zk.writes)
        regs = ()
    else:
        writes = tuple((r.client, r.writer, r.epoch) for r in s.quorum.log
                       if r.kind == MUTATION_RECORD)
        regs = tuple((r.controller_id, r.incarnation_id) for r in s.quorum.log
                     if r.kind == REGISTER_CONTROLLER)
    registered = tuple(s.nodes[c].registered_in_log for c in cfg.controllers())
    return Observation(responses, endpoints, writes, regs, registered)


def observe_step(prev: State, st: Step, nxt: State, cfg: ModelConfig) -> tuple:
    """Envelopes a transition put on the wire: (forwarder, controller, client, hops)."""
    return tuple((m.src, m.dst, m.client, m.hops) for m in sorted(nxt.network - prev.network)
                 if m.kind == ENVELOPE_REQUEST)
