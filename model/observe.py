"""Observations: the projection of a model state that an implementation must match
(DESIGN 3.2, last item).  ``observe(state)`` is a snapshot; ``observe_step`` lists what a
transition made visible (envelopes sent)."""
from __future__ import annotations

from typing import NamedTuple

from model.config import ModelConfig
from model.state import (ENVELOPE_REQUEST, MUTATION_RECORD, NO_VERSIONS, REGISTER_BROKER,
                         REGISTER_CONTROLLER, State)
from model.step import Step


class Observation(NamedTuple):
    responses: tuple        # per client: tuple of (error code, envelope error) final responses
    # per client: frozenset of (node, listener name, endpoints) returned, or (); endpoints as in
    # model.state (an incarnation whose bound port it is, STATIC_ENDPOINTS, UNRESOLVED_ENDPOINTS)
    endpoints: tuple
    # ZK: (client, writer node, writer epoch); KRaft: (client, leader, epoch)
    writes: tuple
    registrations: tuple    # KRaft: (controller, incarnation, endpoints) in log order
    registered: tuple       # KRaft: per controller node, its registered_in_log flag
    # KRaft: (broker, incarnation, broker epoch, endpoints) per committed RegisterBrokerRecord,
    # in log order (BR-5)
    broker_registrations: tuple = ()
    # KRaft: per broker node, its BrokerLifecycleManager's (registered, broker epoch) (BL-5,
    # BL-8); a node that is down holds (False, -1)
    broker_lifecycles: tuple = ()
    # ZK with zk_broker_registration: per broker node, the listeners version its
    # /brokers/ids/N carries, NO_VERSIONS (-1) while there is none (ZB-1..ZB-10); () otherwise
    zk_broker_ids: tuple = ()
    # ZK with zk_broker_registration: per broker node, (the version of its listeners
    # configuration, the version its KafkaController's BrokerInfo holds; -1 while it is down)
    zk_listeners: tuple = ()


def observe(s: State, cfg: ModelConfig) -> Observation:
    names = cfg.listener_names
    responses = tuple(tuple((r.code, r.envelope_error) for r in cl.responses) for cl in s.clients)
    endpoints = tuple(
        frozenset((cfg.nodes[n].name, names[li], token) for r in cl.responses
                  for n, li, token in r.endpoints)
        for cl in s.clients)
    zk_ids = zk_listeners = ()
    if cfg.mode == "zk":
        writes = tuple((w.req, w.writer, w.writer_epoch) for w in s.zk.writes)
        regs = broker_regs = lifecycles = ()
        if cfg.zk_broker_registration:
            zk_ids = tuple(s.zk.broker_ids[b] for b in cfg.brokers())
            zk_listeners = tuple((s.nodes[b].listeners_version,
                                  s.nodes[b].broker_info if s.nodes[b].alive else NO_VERSIONS)
                                 for b in cfg.brokers())
    else:
        writes = tuple((r.client, r.writer, r.epoch) for r in s.quorum.log
                       if r.kind == MUTATION_RECORD)
        regs = tuple((r.controller_id, r.incarnation_id, r.endpoints) for r in s.quorum.log
                     if r.kind == REGISTER_CONTROLLER)
        broker_regs = tuple((r.broker_id, r.incarnation_id, r.broker_epoch, r.endpoints)
                            for r in s.quorum.log if r.kind == REGISTER_BROKER)
        lifecycles = tuple((s.nodes[b].lifecycle_registered, s.nodes[b].broker_epoch)
                           for b in cfg.brokers())
    registered = tuple(s.nodes[c].registered_in_log for c in cfg.controllers())
    return Observation(responses, endpoints, writes, regs, registered, broker_regs, lifecycles,
                       zk_ids, zk_listeners)


def observe_step(prev: State, st: Step, nxt: State, cfg: ModelConfig) -> tuple:
    """Envelopes a transition put on the wire: (forwarder, controller, client, hops)."""
    return tuple((m.src, m.dst, m.client, m.hops) for m in sorted(nxt.network - prev.network)
                 if m.kind == ENVELOPE_REQUEST)
