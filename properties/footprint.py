"""What a step or a clause of the Kafka model really reads and writes, measured.

Partial-order reduction (``properties/por.py``) trusts the footprints that ``model/footprint.py``
declares.  This module measures them, so that a test can check every declaration against the
model's behaviour on the reachable states (tests/test_footprint.py), and so that ``--por`` can
check the writes of every step it takes.

Locations are tuples:

- ``("s", field)``: a scalar of the State (``now``, the fault budgets);
- ``("node", n, field)``, ``("client", c, field)``: one field of one node or client;
- ``("zk", field)``, ``("quorum", field)``;
- ``("net", kind, dst)``: the messages of one kind to one node in the network;
- ``("netlen",)``: the number of messages in the network (``max_in_flight`` reads it).

Reads are recorded by running the function on a copy of the state made of subclasses of the
model's records that note every field read (``recording``); writes are the fields whose values
differ between a state and its successor (``writes``).  A message step reads its message's
presence; reading the whole network (iterating it) reads every ``net`` location.
"""
from __future__ import annotations

from model.state import Client, Node, Quorum, State, Zk

_reads: list = []           # the set being recorded into (a stack: recordings do not nest)

NET_ALL = ("net", "*", "*")
NETLEN = ("netlen",)


def _note(loc) -> None:
    if _reads:
        _reads[-1].add(loc)


def _recording_record(base, prefix_of):
    """A subclass of the frozen dataclass ``base`` that notes every field read."""
    fields = frozenset(base.__dataclass_fields__)
    get = object.__getattribute__

    def __getattribute__(self, name):
        if name in fields:
            _note(prefix_of(self) + (name,))
        return get(self, name)

    return type("Recording" + base.__name__, (base,), {"__getattribute__": __getattribute__})


_RNode = _recording_record(Node, lambda self: ("node", object.__getattribute__(self, "__dict__")
                                                ["_ix"]))
_RZk = _recording_record(Zk, lambda self: ("zk",))
_RQuorum = _recording_record(Quorum, lambda self: ("quorum",))
_STATE_SCALARS = frozenset(State.__dataclass_fields__) - {"nodes", "clients", "network", "zk",
                                                           "quorum"}


class _RState(State):
    def __getattribute__(self, name):
        if name in _STATE_SCALARS:
            _note(("s", name))
        return object.__getattribute__(self, name)


_client_classes: dict = {}


def _rclient(i: int):
    cls = _client_classes.get(i)
    if cls is None:
        fields = frozenset(Client._fields)
        tget = tuple.__getattribute__

        def __getattribute__(self, name):
            if name in fields:
                _note(("client", i, name))
            return tget(self, name)

        cls = _client_classes[i] = type(f"RecordingClient{i}", (Client,),
                                        {"__slots__": (), "__getattribute__": __getattribute__})
    return cls


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


def _copy_as(cls, obj, **extra):
    new = object.__new__(cls)
    d = dict(object.__getattribute__(obj, "__dict__"))
    d.pop("_hash", None)
    d.update(extra)
    object.__setattr__(new, "__dict__", d)
    return new


def recording(s: State) -> State:
    """A copy of ``s`` that notes what is read of it (into the innermost ``record`` block)."""
    nodes = tuple(_copy_as(_RNode, n, _ix=i) for i, n in enumerate(s.nodes))
    clients = tuple(_rclient(i)._make(c) for i, c in enumerate(s.clients))
    return _copy_as(_RState, s, nodes=nodes, clients=clients, network=_RNet(s.network),
                    zk=_copy_as(_RZk, s.zk), quorum=_copy_as(_RQuorum, s.quorum))


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


def _fields(rec) -> dict:
    d = object.__getattribute__(rec, "__dict__")
    return {f: d[f] for f in type(rec).__dataclass_fields__}


def writes(s: State, t: State) -> dict:
    """The locations whose values differ between ``s`` and ``t``, each with how it changed:
    ``"add"`` for a network location that only gained messages and for the network's size
    (additions and removals of different messages commute), ``"w"`` otherwise."""
    out = {}
    for f in _STATE_SCALARS:
        if getattr(s, f) != getattr(t, f):
            out[("s", f)] = "w"
    for i, (a, b) in enumerate(zip(s.nodes, t.nodes)):
        if a is not b:
            fa, fb = _fields(a), _fields(b)
            for f, v in fa.items():
                if fb[f] != v:
                    out[("node", i, f)] = "w"
    for i, (a, b) in enumerate(zip(s.clients, t.clients)):
        if a != b:
            for f, x, y in zip(Client._fields, a, b):
                if x != y:
                    out[("client", i, f)] = "w"
    for name in ("zk", "quorum"):
        a, b = getattr(s, name), getattr(t, name)
        if a is not b:
            fb = _fields(b)
            for f, v in _fields(a).items():
                if fb[f] != v:
                    out[(name, f)] = "w"
    if s.network is not t.network and s.network != t.network:
        for m in s.network - t.network:
            out[("net", m[0], m[2])] = "w"
        for m in t.network - s.network:
            out.setdefault(("net", m[0], m[2]), "add")
        out[NETLEN] = "add"
    return out


__all__ = ["NET_ALL", "NETLEN", "recording", "record", "reads_of", "writes"]
