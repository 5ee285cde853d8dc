"""Trace exports: ITF (the Apalache / Quint informal trace format) and Mermaid sequence
diagrams."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from model.describe import describe_step, node_name
from model.state import message
from properties.graphcheck import LAST_STATE_SHOWS
from properties.trace import ReplayResult

_SAFE = 2 ** 53 - 1


def to_itf_value(v):
    """A model value as an ITF value: records for dataclasses and NamedTuples, sequences
    for tuples, {"#set": [...]} for frozensets, {"#bigint": "..."} past 2^53."""
    if isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v if -_SAFE <= v <= _SAFE else {"#bigint": str(v)}
    if dataclasses.is_dataclass(v):
        return {f.name: to_itf_value(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {name: to_itf_value(getattr(v, name)) for name in v._fields}
    if isinstance(v, tuple):
        return [to_itf_value(x) for x in v]
    if isinstance(v, frozenset):
        return {"#set": [to_itf_value(x) for x in sorted(v, key=repr)]}
    raise TypeError(f"no ITF form for {type(v).__name__}")


def to_itf(result: ReplayResult) -> dict:
    trace = result.trace
    first = result.states[0]
    var_names = list(first._fields) + ["action"]
    states = []
    for i, s in enumerate(result.states):
        obj = {"#meta": {"index": i}}
        obj.update({name: to_itf_value(getattr(s, name)) for name in s._fields})
        obj["action"] = "init" if i == 0 else str(trace.steps[i - 1])
        states.append(obj)
    return {"#meta": {"format": "ITF", "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
                      "source": f"kipcheck {trace.config} [{trace.variant}]",
                      "description": _description(trace),
                      "model_hash": trace.model_hash},
            "vars": var_names, "states": states}


def _description(trace) -> str:
    """What the trace shows: a property, a whole-graph check (SETTLE: where its loop starts),
    or nothing."""
    if trace.property:
        return f"violates {trace.property}"
    if getattr(trace, "graph_check", None) == "SETTLE":
        return f"violates SETTLE: the states from index {trace.loop_start} loop forever"
    if getattr(trace, "graph_check", None):
        return f"violates {trace.graph_check}: {LAST_STATE_SHOWS[trace.graph_check]}"
    return "trace"


def write_itf(result: ReplayResult, path) -> None:
    Path(path).write_text(json.dumps(to_itf(result), indent=1) + "\n")


def to_mermaid(result: ReplayResult, cfg) -> str:
    """A Mermaid sequence diagram of the messages a trace sends and delivers."""
    lines = ["sequenceDiagram"]
    for c in cfg.clients:
        lines.append(f"    participant {c.name}")
    for n in cfg.nodes:
        lines.append(f"    participant {n.name}")
    for i, st in enumerate(result.trace.steps):
        if st.action == "client_sends_request":
            c = cfg.clients[st.args[0]]
            lines.append(f"    {c.name}->>{node_name(cfg, c.node)}: "
                         f"{_mermaid_text(describe_step(cfg, st))}")
        elif st.args and isinstance(st.args[0], tuple):
            m = message(st.args[0])
            lines.append(f"    {node_name(cfg, m.src)}-->>{node_name(cfg, m.dst)}: "
                         f"{i + 1}. {_mermaid_text(describe_step(cfg, st))}")
        else:
            who = node_name(cfg, st.args[0]) if st.args else cfg.nodes[0].name
            lines.append(f"    Note over {who}: {i + 1}. {_mermaid_text(describe_step(cfg, st))}")
    return "\n".join(lines) + "\n"


def _mermaid_text(text: str) -> str:
    """Message text for Mermaid, where ';' ends a statement and '#' starts an entity."""
    return text.replace("#", "#35;").replace(";", "#59;")
