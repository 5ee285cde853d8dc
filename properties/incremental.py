"""Incremental checking of the ALWAYS clauses: a state is checked only against the clauses that
read what the step into it changed.

A clause is a function of the state locations it reads.  If a state ``t`` was reached by a step
from a state ``s`` in which every ALWAYS clause held, a clause that reads nothing the step
changed holds in ``t`` too: it computes the same thing.  So the explorer, which has ``s`` at hand
when it first finds ``t``, notes which locations the step changed (``changes(s, t)``, a bit mask
over ``LOCATIONS``), and when it expands ``t`` asks only the clauses that read one of them
(``registry.first_violation(..., changed=mask)``); the first violated clause in registry order is
the same, since every clause left out holds.

Locations are named as in ``properties/footprint.py`` but without node and client indices: a
clause that reads ``node.channel`` reads it of any node.  ``network`` is the whole set of messages
in flight, and a State scalar (``now``, the fault budgets) is named by its field.

What changed is found by identity, not by declarations: a step builds its successor with
``replace``, so every record it did not touch is the same object in both states, and a field
holding the same object holds the same value (the records are immutable).  A field that holds
an equal but rebuilt value counts as changed, which only checks more.  What a clause reads is
declared (``registry.READS``); a clause without a declaration reads everything, and
tests/test_incremental.py checks every declaration against what the clause reads on the
reachable states of the named configurations (``footprint.reads_of``).

``FULL`` asks every clause: for initial states, and for a state first found from one that
violated something (not every clause held there).
"""
from __future__ import annotations

from itertools import compress
from operator import is_not

from model.state import Client, Node, Quorum, State, Zk

_RECORDS = {"nodes": ("node", Node), "clients": ("client", Client), "zk": ("zk", Zk),
            "quorum": ("quorum", Quorum)}


def _locations() -> tuple:
    out = []
    for f in State._fields:
        if f in _RECORDS:
            prefix, record = _RECORDS[f]
            out += [f"{prefix}.{x}" for x in record._fields]
        else:
            out.append(f)                   # network, now, the budgets
    return tuple(out)


LOCATIONS = _locations()
BIT = {name: 1 << i for i, name in enumerate(LOCATIONS)}
FULL = (1 << len(LOCATIONS)) - 1

_MANY, _ONE, _WHOLE = 0, 1, 2


def _plan() -> tuple:
    """Per State field: (how it is compared, its bits): the bits of each field of a record
    (nodes and clients: per record of the tuple), or the field's own bit."""
    out = []
    for f in State._fields:
        if f in _RECORDS:
            prefix, record = _RECORDS[f]
            bits = tuple(BIT[f"{prefix}.{x}"] for x in record._fields)
            out.append((_MANY if f in ("nodes", "clients") else _ONE, bits))
        else:
            out.append((_WHOLE, BIT[f]))
    return tuple(out)


_PLAN = _plan()
_FIELDS = range(len(State._fields))


def changes(s: State, t: State) -> int:
    """The locations (a mask of ``BIT``) whose value may differ between ``s`` and ``t``: those
    holding different objects (a superset of the locations whose values differ)."""
    mask = 0
    plan = _PLAN
    for i in compress(_FIELDS, map(is_not, s, t)):
        how, bits = plan[i]
        if how == _WHOLE:
            mask |= bits
        elif how == _ONE:
            mask |= sum(compress(bits, map(is_not, s[i], t[i])))
        else:
            for a, b in zip(s[i], t[i]):
                if a is not b:
                    mask |= sum(compress(bits, map(is_not, a, b)))
    return mask


def mask_of(names) -> int:
    """The mask of these location names (``FULL`` for None: reads everything); a name that is
    not a location raises ValueError."""
    if names is None:
        return FULL
    mask = 0
    for name in names:
        bit = BIT.get(name)
        if bit is None:
            raise ValueError(f"{name!r} is not a state location; locations: "
                             f"{', '.join(LOCATIONS)}")
        mask |= bit
    return mask


def names_of(mask: int) -> tuple:
    """The location names of a mask, in ``LOCATIONS`` order."""
    return tuple(name for name in LOCATIONS if mask & BIT[name])
