"""The deterministic simulator: a seeded scheduler, a simulated clock in milliseconds and an
in-memory network of connections bound to listeners, with fault injection.

FoundationDB-style: everything that could vary between runs (which message is delivered
next, when time advances, which fault strikes) is chosen by one ``random.Random(seed)``, so a
seed replays the same run byte for byte.  The components in ``impl/`` are sans-I/O; the
cluster (``impl/cluster/``) wires them to this network and lists what can happen next as
``Event``s; ``Simulation.run`` picks among them.

Nothing here imports ``model`` or ``properties``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from collections.abc import Callable, Iterable

REQUEST, RESPONSE = "request", "response"


@dataclass(frozen=True)
class Message:
    """Bytes on a connection.  ``conn`` names the connection (a Kafka connection id); a
    request and its response share it.  ``src``/``dst`` are node ids, or a client name."""
    id: int
    kind: str                   # REQUEST | RESPONSE
    src: object
    dst: object
    listener: str               # the listener the connection is bound to on the server side
    conn: str
    correlation_id: int
    api_key: int
    api_version: int
    payload: bytes              # header + body, as on the wire (no size prefix)
    sent_ms: int = 0


class Network:
    """Messages in flight between nodes, in id order.  Kafka's connections are TCP (FIFO per
    connection), but every channel here has at most one request in flight per connection, so
    any delivery order among in-flight messages is one TCP could produce across
    connections."""

    def __init__(self) -> None:
        self._next_id = 1
        self._in_flight: dict[int, Message] = {}
        self.delivered = 0
        self.dropped = 0

    def send(self, *, kind: str, src, dst, listener: str, conn: str, correlation_id: int,
             api_key: int, api_version: int, payload: bytes, now_ms: int) -> Message:
        msg = Message(self._next_id, kind, src, dst, listener, conn, correlation_id, api_key,
                      api_version, bytes(payload), now_ms)
        self._next_id += 1
        self._in_flight[msg.id] = msg
        return msg

    def in_flight(self) -> list[Message]:
        return list(self._in_flight.values())

    def get(self, msg_id: int) -> Message | None:
        return self._in_flight.get(msg_id)

    def take(self, msg_id: int) -> Message:
        """Remove a message for delivery."""
        msg = self._in_flight.pop(msg_id)
        self.delivered += 1
        return msg

    def drop(self, msg_id: int) -> Message:
        msg = self._in_flight.pop(msg_id)
        self.dropped += 1
        return msg

    def drop_where(self, pred: Callable[[Message], bool]) -> list[Message]:
        """Lose every message matching ``pred`` (a closed connection, a dead destination)."""
        gone = [m for m in self._in_flight.values() if pred(m)]
        for m in gone:
            del self._in_flight[m.id]
        return gone

    def __len__(self) -> int:
        return len(self._in_flight)


@dataclass(frozen=True)
class Event:
    """Something that can happen next.  ``name`` uses Kafka's words (``deliver``,
    ``channel_sends_request``, ``node_crashes``...); ``args`` are node ids, client names or
    message ids; ``fault`` marks injected faults (budgeted)."""
    name: str
    args: tuple = ()
    fault: bool = False

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(repr, self.args))})"


@dataclass
class FaultBudget:
    """How many of each fault the scheduler may inject (the model's bounds, in the same
    words)."""
    drops: int = 0
    crashes: int = 0
    restarts: int = 0
    session_expiries: int = 0
    elections: int = 0

    def allows(self, kind: str) -> bool:
        return getattr(self, kind) > 0

    def spend(self, kind: str) -> None:
        setattr(self, kind, getattr(self, kind) - 1)


@dataclass
class RunLog:
    seed: int
    events: list = field(default_factory=list)     # (now_ms, Event) in order

    def record(self, now_ms: int, event: Event) -> None:
        self.events.append((now_ms, event))


class Simulation:
    """Drives a cluster: ``cluster.events()`` lists what can happen now (deterministic order),
    ``cluster.apply(event)`` does it.  Each step the scheduler picks one event uniformly from
    the seeded source, faults with probability ``fault_rate`` when any is enabled."""

    def __init__(self, cluster, seed: int, *, fault_rate: float = 0.1) -> None:
        self.cluster = cluster
        self.seed = seed
        self.rng = random.Random(seed)
        self.fault_rate = fault_rate
        self.log = RunLog(seed)

    def step(self) -> Event | None:
        events = list(self.cluster.events())
        if not events:
            return None
        faults = [e for e in events if e.fault]
        normal = [e for e in events if not e.fault]
        if faults and (not normal or self.rng.random() < self.fault_rate):
            event = faults[self.rng.randrange(len(faults))]
        else:
            event = normal[self.rng.randrange(len(normal))]
        self.log.record(self.cluster.now_ms, event)
        self.cluster.apply(event)
        return event

    def run(self, max_steps: int, *, on_step: Callable[[Event], None] | None = None) -> int:
        n = 0
        while n < max_steps:
            event = self.step()
            if event is None:
                break
            n += 1
            if on_step is not None:
                on_step(event)
        return n


def first(items: Iterable, pred: Callable) -> object | None:
    for x in items:
        if pred(x):
            return x
    return None
