"""What a step or a clause of the Kafka model really reads and writes, measured.

A partial-order reduction may trust only footprints it can check.  This module measures them
on states (tests/test_footprint.py checks it against the model's records), and
``bench/por.py`` collects them over a whole reachable space to bound what a reduction by
stubborn sets could gain on the model (docs/performance.md: too little for ``--por`` to be
offered).

Locations are tuples:

- ``("s", field)``: a scalar of the State (``now``, the fault budgets);
- ``("node", n, field)``, ``("client", c, field)``: one field of one node or client;
- ``("zk", field)``, ``("quorum", field)``;
- ``("net", kind, dst)``: the messages of one kind to one node in the network;
- ``("netlen",)``: the number of messages in the network (``max_in_flight`` reads it).

Reads are recorded by running the function on a copy of the state made of subclasses of the
model's records (NamedTuples) that note every field read (``recording``); writes are the fields
whose values differ between a state and its successor (``writes``).  A message step reads its
message's presence; reading the whole network (iterating it) reads every ``net`` location.
"""
from __future__ import annotations

from model.state import Client, Node, Quorum, State, Zk

_reads: list = []           # the set being recorded into (a stack: recordings do not nest)

NET_ALL = ("net", "*", "*")
NETLEN = ("netlen",)


def _note(loc) -> None:
    if _reads:
        _reads[-1].add(loc)


def _recording(base, prefix: tuple, skip=frozenset()):
    """A subclass of the record ``base`` (a NamedTuple) that notes every field read as
    ``prefix + (field,)`` (the fields in ``skip`` are recorded by the records they hold)."""
    fields = frozenset(base._fields) - skip
    get = tuple.__getattribute__

    def __getattribute__(self, name):
        if name in fields:
            _note(prefix + (name,))
        return get(self, name)

    return type("Recording" + base.__name__, (base,),
                {"__slots__": (), "__getattribute__": __getattribute__})


_classes: dict = {}


def _recording_class(base, prefix: tuple, skip=frozenset()):
    key = (base, prefix)
    cls = _classes.get(key)
    if cls is None:
        cls = _classes[key] = _recording(base, prefix, skip)
    return cls


_STATE_RECORDS = frozenset({"nodes", "clients", "network", "zk", "quorum"})
_STATE_SCALARS = tuple(f for f in State._fields if f not in _STATE_RECORDS)


class _RNet(frozenset):
    """The network: membership of a message reads its location; iterating, its size."""
    def __contains__(self, m):
        _note(("net", m[0], m[2]))
        return frozenset.__contains__(self, m)

    def __iter__(self):
        _note(NET_ALL)
        return frozenset.__iter__(self)

    def __len__(self):
        _note(NETLEN)
        return frozenset.__len__(self)

    def __or__(self, other):
        return frozenset(frozenset.__iter__(self)) | other

    def __sub__(self, other):
        return frozenset(frozenset.__iter__(self)) - other


def recording(s: State) -> State:
    """A copy of ``s`` that notes what is read of it (into the innermost ``record`` block)."""
    nodes = tuple(_recording_class(Node, ("node", i))._make(n) for i, n in enumerate(s.nodes))
    clients = tuple(_recording_class(Client, ("client", i))._make(c)
                    for i, c in enumerate(s.clients))
    return _recording_class(State, ("s",), _STATE_RECORDS)._make(
        s._replace(nodes=nodes, clients=clients, network=_RNet(s.network),
                   zk=_recording_class(Zk, ("zk",))._make(s.zk),
                   quorum=_recording_class(Quorum, ("quorum",))._make(s.quorum)))


class record:
    """``with record() as reads: f(recording(s))`` collects the locations ``f`` reads."""
    def __enter__(self) -> set:
        self.reads = set()
        _reads.append(self.reads)
        return self.reads

    def __exit__(self, *exc) -> None:
        _reads.pop()


def reads_of(fn, s: State, *args) -> tuple:
    """(result, locations read) of ``fn(recording(s), *args)``."""
    with record() as reads:
        result = fn(recording(s), *args)
    return result, reads


def _changed(prefix: tuple, fields, a, b, out: dict) -> None:
    if a is not b:
        for f, x, y in zip(fields, tuple.__iter__(a), tuple.__iter__(b)):
            if x != y:
                out[prefix + (f,)] = "w"


def writes(s: State, t: State) -> dict:
    """The locations whose values differ between ``s`` and ``t``, each with how it changed:
    ``"add"`` for a network location that only gained messages and for the network's size
    (additions and removals of different messages commute), ``"w"`` otherwise."""
    out: dict = {}
    sv = dict(zip(State._fields, tuple.__iter__(s)))
    tv = dict(zip(State._fields, tuple.__iter__(t)))
    for f in _STATE_SCALARS:
        if sv[f] != tv[f]:
            out[("s", f)] = "w"
    for i, (a, b) in enumerate(zip(sv["nodes"], tv["nodes"])):
        _changed(("node", i), Node._fields, a, b, out)
    for i, (a, b) in enumerate(zip(sv["clients"], tv["clients"])):
        _changed(("client", i), Client._fields, a, b, out)
    _changed(("zk",), Zk._fields, sv["zk"], tv["zk"], out)
    _changed(("quorum",), Quorum._fields, sv["quorum"], tv["quorum"], out)
    a = frozenset(frozenset.__iter__(sv["network"]))
    b = frozenset(frozenset.__iter__(tv["network"]))
    if a != b:
        for m in a - b:
            out[("net", m[0], m[2])] = "w"
        for m in b - a:
            out.setdefault(("net", m[0], m[2]), "add")
        out[NETLEN] = "add"
    return out


__all__ = ["NET_ALL", "NETLEN", "recording", "record", "reads_of", "writes"]
