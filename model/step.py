"""A step of the Next relation: an action name and its arguments.

A Step is all that is needed to replay a transition: ``step(state, config, design, s)`` in
``model.next`` gives the same successor every time.  Arguments are plain ints (node indices,
client indices, message keys) so a Step prints and parses back as JSON.
"""
from __future__ import annotations

from typing import NamedTuple


class Step(NamedTuple):
    action: str
    args: tuple = ()

    def __str__(self) -> str:  # e.g. controller_handles_envelope(1, 3)
        return f"{self.action}({', '.join(map(repr, self.args))})"

    def to_json(self) -> list:
        """``[action, [args...]]`` with every tuple a list, as JSON holds it."""
        return [self.action, [_listify(a) for a in self.args]]

    @staticmethod
    def from_json(obj) -> Step:
        if (not isinstance(obj, (list, tuple)) or len(obj) != 2 or not isinstance(obj[0], str)
                or not isinstance(obj[1], (list, tuple))):
            raise ValueError(f"a step is [action, [args...]], got {obj!r}")
        args = tuple(_tupleize(a) for a in obj[1])
        return Step(obj[0], args)


def steps_text(n: int) -> str:
    """``n`` steps in words: "1 step", "5 steps" (for counterexample headlines)."""
    return f"{n} step" if n == 1 else f"{n} steps"


def _listify(value):
    return [_listify(v) for v in value] if isinstance(value, tuple) else value


def _tupleize(value):
    if isinstance(value, list):
        return tuple(_tupleize(v) for v in value)
    if isinstance(value, (int, str)) or value is None:
        return value
    raise ValueError(f"step arguments are ints, strings or lists, got {value!r}")
