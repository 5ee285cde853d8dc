"""The project's JSON trace format, version 1, and its replay.

A trace names its configuration and design variant, lists the steps from the initial state
and, for a counterexample, the property and clause violated at its end -- or, for a
counterexample to a whole-graph check of the explorer (properties/graphcheck.py), the check
(``graph_check``: SETTLE or DEADLOCK) and, for SETTLE, where the loop begins (``loop_start``:
the loop is the steps after the first ``loop_start`` ones, and comes back to the state after
step ``loop_start``).  ``replay`` runs it through ``model.next.step`` and checks that the end
state violates the same property, or re-checks the graph check (``graphcheck.replay_check``).
Traces written before the graph-check fields existed load as traces that name no property.

    {"format": "kipcheck-trace", "version": 1, "config": "zk-forward-zombie",
     "variant": "zombie-writes-unfenced", "property": "P1",
     "clause": "zk-writes-carry-current-epoch", "engine": "explore",
     "model_hash": "...", "steps": [["client_sends_request", [0]], ...],
     "descriptions": ["A1 (admin) sends CreateTopics to B2 on CLIENT", ...]}

    {..., "property": null, "clause": null, "graph_check": "SETTLE", "loop_start": 3, ...}
"""
from __future__ import annotations

import hashlib
import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import model
from model.describe import describe_step
from model.step import Step
from properties import registry
from properties.graphcheck import (GRAPH_CHECKS, LAST_STATE_SHOWS, SETTLE, GraphReplay,
                                   replay_check)
from properties.inputs import InputError, load_json
from properties.kafka_spec import KafkaSpec, UnknownName

FORMAT = "kipcheck-trace"
VERSION = 1


class TraceError(ValueError):
    """A trace file that is malformed or does not match the model; the message says why."""


def model_hash() -> str:
    """SHA-256 over the model's source files: a trace records which model produced it."""
    h = hashlib.sha256()
    root = Path(model.__file__).parent
    for path in sorted(root.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@dataclass
class Trace:
    config: str
    variant: str
    steps: tuple
    property: str | None = None
    clause: str | None = None
    engine: str = "explore"
    model_hash: str = field(default_factory=model_hash)
    graph_check: str | None = None  # SETTLE | DEADLOCK (properties/graphcheck.py), or None
    loop_start: int | None = None   # SETTLE: the loop is steps[loop_start:]

    def to_json(self) -> dict:
        spec = KafkaSpec.named(self.config, self.variant)
        obj = {"format": FORMAT, "version": VERSION, "config": self.config,
               "variant": self.variant, "property": self.property, "clause": self.clause}
        if self.graph_check is not None:
            obj["graph_check"] = self.graph_check
            obj["loop_start"] = self.loop_start
        obj.update({"engine": self.engine, "model_hash": self.model_hash,
                    "steps": [st.to_json() for st in self.steps],
                    "descriptions": [describe_step(spec.cfg, st) for st in self.steps]})
        return obj

    def dump(self, path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1) + "\n")

    @staticmethod
    def from_json(obj) -> Trace:
        if not isinstance(obj, dict):
            raise TraceError("a trace is a JSON object")
        if obj.get("format") != FORMAT:
            raise TraceError(f"not a kipcheck trace (format is {obj.get('format')!r}, "
                             f"expected {FORMAT!r})")
        if obj.get("version") != VERSION:
            raise TraceError(f"unsupported trace version {obj.get('version')!r} "
                             f"(this kipcheck reads version {VERSION})")
        for key in ("config", "variant", "steps"):
            if key not in obj:
                raise TraceError(f"missing field {key!r}")
        if not isinstance(obj["config"], str) or not isinstance(obj["variant"], str):
            raise TraceError("fields 'config' and 'variant' must be strings")
        if not isinstance(obj["steps"], list):
            raise TraceError("field 'steps' must be a list")
        prop = obj.get("property")
        if prop is not None and prop not in registry.BY_ID:
            raise TraceError(f"unknown property {prop!r}; properties: "
                             f"{', '.join(registry.PROPERTY_IDS)}")
        check = obj.get("graph_check")
        if check is not None and check not in GRAPH_CHECKS:
            raise TraceError(f"unknown whole-graph check {check!r}; checks: "
                             f"{', '.join(GRAPH_CHECKS)}")
        if check is not None and prop is not None:
            raise TraceError("a trace names a property or a whole-graph check, not both")
        loop_start = obj.get("loop_start")
        if loop_start is not None and (check != SETTLE or not isinstance(loop_start, int)
                                       or isinstance(loop_start, bool)
                                       or not 0 <= loop_start < len(obj["steps"])):
            raise TraceError(f"field 'loop_start' must be a step index 0..{len(obj['steps']) - 1} "
                             f"of a SETTLE trace, got {loop_start!r}")
        if check == SETTLE and loop_start is None:
            raise TraceError("a SETTLE trace needs 'loop_start' (where its loop begins)")
        steps = []
        for i, raw in enumerate(obj["steps"]):
            try:
                steps.append(Step.from_json(raw))
            except ValueError as e:
                raise TraceError(f"step {i + 1}: {e}") from None
        try:
            KafkaSpec.named(obj["config"], obj["variant"])
        except UnknownName as e:
            raise TraceError(str(e)) from None
        return Trace(obj["config"], obj["variant"], tuple(steps), prop, obj.get("clause"),
                     obj.get("engine", "explore"), obj.get("model_hash", ""), check, loop_start)

    @staticmethod
    def load(path) -> Trace:
        try:
            obj = load_json(path)
        except InputError as e:
            raise TraceError(str(e)) from None
        return Trace.from_json(obj)


@dataclass
class ReplayResult:
    trace: Trace
    states: list
    violation: tuple | None         # (property, clause) at the end state
    reproduced: bool                # the recorded property is the one violated at the end
    model_hash_matches: bool
    graph: GraphReplay | None = None  # graph-check traces: the re-check (None otherwise)


def replay(trace: Trace) -> ReplayResult:
    """Replay through ``step()``; TraceError if a step is not enabled or malformed.  A
    graph-check trace is re-checked by ``graphcheck.replay_check`` (``result.graph``;
    ``reproduced`` is True only if the check fails again, whatever property the end state
    violates)."""
    spec = KafkaSpec.named(trace.config, trace.variant)
    states = [spec.initial_states()[0]]
    for i, st in enumerate(trace.steps):
        try:
            nxt = spec.step(states[-1], st)
        except ValueError as e:
            raise TraceError(f"step {i + 1} ({st}): {e}") from None
        if nxt is None:
            raise TraceError(f"step {i + 1} ({st}) is not enabled in {spec.name}: the trace does "
                             f"not match this model")
        states.append(nxt)
    end = states[-1]
    violation = registry.first_violation(end, spec.cfg, spec.design, spec.successors(end))
    graph = None
    if trace.graph_check is not None:
        graph = replay_check(spec, states, trace.graph_check, trace.loop_start)
        reproduced = graph.reproduced is True
    elif trace.property:
        reproduced = violation is not None and violation[0] == trace.property
    else:
        reproduced = violation is None
    return ReplayResult(trace, states, violation, reproduced, trace.model_hash == model_hash(),
                        graph)


def as_pytest(trace: Trace, test_name: str | None = None) -> str:
    """The trace as a ready-to-paste pytest regression test, every line within 100 columns
    (the project's line length): each step's description is a comment above it."""
    spec = KafkaSpec.named(trace.config, trace.variant)
    if trace.graph_check is not None:
        name = test_name or f"test_{trace.config}_{trace.variant}_{trace.graph_check.lower()}"
        what = (f"the loop from step {trace.loop_start + 1} never settles"
                if trace.graph_check == SETTLE else LAST_STATE_SHOWS[trace.graph_check])
        doc = f"{trace.graph_check} on {trace.config} under {trace.variant}: {what}."
    else:
        name = test_name or f"test_{trace.config}_{trace.variant}"
        doc = f"{trace.property or 'no violation'} on {trace.config} under {trace.variant}."
    name = name.replace("-", "_")
    doc_lines = textwrap.wrap(doc, 92)
    lines = [
        "from model.step import Step",
        "from properties.trace import Trace, replay",
        "",
        "",
        f"def {name}():",
    ]
    if len(doc_lines) == 1:
        lines.append(f'    """{doc_lines[0]}"""')
    else:
        lines.append(f'    """{doc_lines[0]}')
        lines += [f"    {x}" for x in doc_lines[1:-1]] + [f'    {doc_lines[-1]}"""']
    lines.append("    steps = (")
    for st in trace.steps:
        lines += textwrap.wrap(describe_step(spec.cfg, st), 100, initial_indent="        # ",
                               subsequent_indent="        #   ", break_long_words=False,
                               break_on_hyphens=False)
        lines.append(f"        Step({st.action!r}, {st.args!r}),")
    lines.append("    )")
    if trace.graph_check is not None:
        lines += [
            f"    result = replay(Trace({trace.config!r}, {trace.variant!r}, steps,",
            f"                          graph_check={trace.graph_check!r}, "
            f"loop_start={trace.loop_start!r}))",
            "    assert result.reproduced, result.graph.detail",
        ]
        return "\n".join(lines) + "\n"
    lines += [
        f"    result = replay(Trace({trace.config!r}, {trace.variant!r}, steps,",
        f"                          {trace.property!r}))",
    ]
    if trace.property:
        lines.append(f"    assert result.violation[0] == {trace.property!r}")
    else:
        lines.append("    assert result.violation is None")
    return "\n".join(lines) + "\n"


