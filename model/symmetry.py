"""Canonical form (DESIGN 3.3): one representative per class of equivalent states.

Two reductions, both sound because the model only compares these values for equality and
order, and only ever creates a fresh one greater than all others:
- epochs (ZK controller epochs, /controller_epoch zkVersions, KRaft leader epochs) and each
  controller's incarnation IDs are renamed to their rank among the values the state holds;
- nodes of a ``symmetric_groups`` group of the configuration (same role, listeners,
  principal, versions, not named by any client) are permuted; the representative is the
  permutation whose state has the smallest fingerprint.
"""
from __future__ import annotations

from itertools import permutations, product

from model.config import ModelConfig
from model.state import (REGISTER_CONTROLLER, REGISTRATION, REGISTRATION_REQUEST,
                         REGISTRATION_RESPONSE, REPLY_CLIENT, REPLY_REGISTRATION, State,
                         replace)


def _ranks(values) -> dict | None:
    """Rename values by rank, keeping the smallest: {1, 3} -> {1, 2}.  None if nothing
    changes (the common case), so the caller can skip the rewrite."""
    vals = sorted(v for v in set(values) if v >= 0)
    if not vals or vals[-1] - vals[0] == len(vals) - 1:
        return None
    table = {v: vals[0] + i for i, v in enumerate(vals)}
    table[-1] = -1
    return table


class _Identity(dict):
    def __missing__(self, key):
        return key


_ID = _Identity()


def _incarnations(s: State) -> dict:
    """For each node, every incarnation value the state mentions for it."""
    incs = {n: {node.incarnation} for n, node in enumerate(s.nodes)}
    q = s.quorum
    for rec in q.log + tuple(r for r, _ in q.uncommitted):
        if rec.kind == REGISTER_CONTROLLER:
            incs[rec.controller_id].add(rec.incarnation_id)
    for _, reply in q.uncommitted:
        if reply and reply.how == REPLY_REGISTRATION:
            incs[reply.to].add(reply.key)
    for m in s.network:
        if m.kind == REGISTRATION_REQUEST:
            incs[m.src].add(m.incarnation_id)
        elif m.kind == REGISTRATION_RESPONSE:
            incs[m.dst].add(m.incarnation_id)
    for n, node in enumerate(s.nodes):
        ch = node.channel
        for item in ((ch.inflight,) if ch.inflight else ()) + ch.queue:
            if item.kind == REGISTRATION:
                incs[n].add(item.incarnation_id)
    return incs


def remap(s: State, perm: tuple, zk_epochs: dict, zk_versions: dict, kraft_epochs: dict,
          incs: dict) -> State:
    """``s`` with node i renamed perm[i], epochs and incarnations renamed by the tables
    (``incs[n]`` is the table of node n, by its old index)."""
    def nd(n):
        return n if n < 0 else perm[n]

    def reply_map(reply):
        if not reply:
            return reply
        key = incs[reply.to][reply.key] if reply.how == REPLY_REGISTRATION else reply.key
        to = reply.to if reply.how == REPLY_CLIENT else perm[reply.to]
        return reply._replace(to=to, key=key)

    def rec_map(rec):
        if rec.kind == REGISTER_CONTROLLER:
            rec = rec._replace(controller_id=perm[rec.controller_id],
                               incarnation_id=incs[rec.controller_id][rec.incarnation_id])
        return rec._replace(epoch=kraft_epochs.get(rec.epoch, rec.epoch), writer=nd(rec.writer))

    def msg_map(m):
        if m.kind == REGISTRATION_REQUEST:
            m = m._replace(controller_id=perm[m.controller_id],
                           incarnation_id=incs[m.src][m.incarnation_id])
        elif m.kind == REGISTRATION_RESPONSE:
            m = m._replace(controller_id=perm[m.controller_id],
                           incarnation_id=incs[m.dst][m.incarnation_id])
        return m._replace(src=perm[m.src], dst=perm[m.dst])

    nodes = [None] * len(s.nodes)
    for n, node in enumerate(s.nodes):
        ch = node.channel

        def item_map(item, n=n):
            if item.kind == REGISTRATION:
                return item._replace(incarnation_id=incs[n][item.incarnation_id])
            return item

        channel = ch._replace(cached=nd(ch.cached), queue=tuple(item_map(i) for i in ch.queue),
                              inflight=item_map(ch.inflight) if ch.inflight else ())
        events = tuple(e._replace(reply=reply_map(e.reply)) for e in node.events)
        nodes[perm[n]] = replace(
            node, incarnation=incs[n][node.incarnation], zk_epoch=zk_epochs[node.zk_epoch],
            zk_epoch_version=zk_versions[node.zk_epoch_version], events=events,
            known_controller=nd(node.known_controller), channel=channel,
            not_controller_from=frozenset(perm[x] for x in node.not_controller_from))
    clients = tuple(cl._replace(responses=tuple(
        r._replace(endpoints=frozenset((perm[x], li) for x, li in r.endpoints))
        if r.endpoints else r
        for r in cl.responses)) for cl in s.clients)
    zk = s.zk
    zk = replace(zk, controller=nd(zk.controller), epoch=zk_epochs[zk.epoch],
                 epoch_version=zk_versions[zk.epoch_version],
                 writes=tuple(w._replace(writer=nd(w.writer),
                                         writer_epoch=zk_epochs[w.writer_epoch],
                                         zk_epoch=zk_epochs[w.zk_epoch]) for w in zk.writes))
    q = s.quorum
    q = replace(q, leader=nd(q.leader), epoch=kraft_epochs[q.epoch],
                log=tuple(rec_map(r) for r in q.log),
                uncommitted=tuple((rec_map(r), reply_map(rp)) for r, rp in q.uncommitted))
    return replace(s, nodes=tuple(nodes), clients=clients, zk=zk, quorum=q,
                   network=frozenset(msg_map(m) for m in s.network))


def canonical(s: State, cfg: ModelConfig) -> State:
    zk = s.zk
    zk_epochs = _ranks([zk.epoch] + [n.zk_epoch for n in s.nodes]
                       + [e for w in zk.writes for e in (w.writer_epoch, w.zk_epoch)])
    zk_versions = _ranks([zk.epoch_version] + [n.zk_epoch_version for n in s.nodes])
    q = s.quorum
    kraft_epochs = _ranks([q.epoch] + [r.epoch for r in q.log]
                          + [r.epoch for r, _ in q.uncommitted])
    incs = {n: _ranks(v) for n, v in _incarnations(s).items()}
    identity = tuple(range(len(s.nodes)))
    renamed = zk_epochs or zk_versions or kraft_epochs or any(incs.values())
    zk_epochs, zk_versions, kraft_epochs = zk_epochs or _ID, zk_versions or _ID, kraft_epochs or _ID
    incs = {n: t or _ID for n, t in incs.items()}
    if renamed:
        s = remap(s, identity, zk_epochs, zk_versions, kraft_epochs, incs)
    if not cfg.symmetric_groups:
        return s
    zk_epochs = zk_versions = kraft_epochs = _ID
    incs = {n: _ID for n in incs}
    best = None
    for choice in product(*(permutations(g) for g in cfg.symmetric_groups)):
        perm = list(identity)
        for group, image in zip(cfg.symmetric_groups, choice):
            for a, b in zip(group, image):
                perm[a] = b
        t = remap(s, tuple(perm), zk_epochs, zk_versions, kraft_epochs, incs)
        if best is None or hash(t) < hash(best):
            best = t
    return best


__all__ = ["canonical", "remap"]
