"""Human-readable text for steps and states, in Kafka's words (for traces and reports)."""
from __future__ import annotations

from model import kafka
from model.config import ModelConfig
from model.state import (ENVELOPE_REQUEST, ENVELOPE_RESPONSE, MSG_KIND_NAMES, REGISTRATION_REQUEST,
                         Msg)
from model.step import Step


def node_name(cfg: ModelConfig, n: int) -> str:
    return cfg.nodes[n].name if 0 <= n < len(cfg.nodes) else "-"


def describe_msg(cfg: ModelConfig, m: Msg) -> str:
    src, dst = node_name(cfg, m.src), node_name(cfg, m.dst)
    lst = cfg.listener_names[m.listener]
    kind = MSG_KIND_NAMES[m.kind]
    if m.kind == ENVELOPE_REQUEST:
        return (f"{kind} {src}->{dst} on {lst}: {cfg.clients[m.key].name}'s "
                f"{kafka.API_NAMES[cfg.clients[m.key].api]} v{m.a}, hops {m.b}")
    if m.kind == ENVELOPE_RESPONSE:
        return (f"{kind} {src}->{dst}: {cfg.clients[m.key].name}, envelope "
                f"{kafka.error_name(m.a)}, inner {kafka.error_name(m.b)}")
    if m.kind == REGISTRATION_REQUEST:
        return f"{kind} {src}->{dst}: controller {node_name(cfg, m.key)} incarnation {m.a}"
    return (f"{kind} {src}->{dst}: {kafka.error_name(m.a)} for incarnation {m.b}")


def describe_step(cfg: ModelConfig, st: Step) -> str:
    """One line: who does what, e.g. 'B1 handles EnvelopeRequest B2->B1 ...'."""
    args = st.args
    if st.action == "client_sends_request":
        c = cfg.clients[args[0]]
        what = kafka.API_NAMES.get(c.api, str(c.api))
        if c.kind == "forged_envelope":
            what = f"a forged EnvelopeRequest claiming {c.claimed_principal}"
        return f"{c.name} ({c.principal}) sends {what} to {node_name(cfg, c.node)} on {c.listener}"
    if args and isinstance(args[0], tuple):
        return f"{st.action.replace('_', ' ')}: {describe_msg(cfg, Msg(*args[0]))}"
    if args:
        return f"{node_name(cfg, args[0])}: {st.action.replace('_', ' ')}"
    return st.action.replace("_", " ")
