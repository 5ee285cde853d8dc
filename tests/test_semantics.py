"""Targeted checks of protocol details the variants do not cover: the metadata.version gate,
observations, and the client-visible outcomes of table 1.6."""
from dataclasses import replace

from model import kafka
from model import next as model_next
from model.config import Design
from model.configs import KRAFT_LISTENERS, ZK_ENVELOPE_SECURITY
from model.observe import observe, observe_step
from properties.explore import explore
from properties.kafka_spec import KafkaSpec


def reachable(cfg, design=Design()):
    """Every reachable state (tiny configurations only)."""
    seen = {model_next.initial_state(cfg)}
    frontier = list(seen)
    while frontier:
        s = frontier.pop()
        for _, t in model_next.successors(s, cfg, design):
            if t not in seen:
                seen.add(t)
                frontier.append(t)
    return seen


def test_metadata_version_below_3_7_blocks_registration_and_controller_describe():
    """R-1/R-3: no ControllerRegistration below 3.7-IV0; D-1: DescribeCluster to a controller
    answers UNSUPPORTED_VERSION."""
    cfg = replace(KRAFT_LISTENERS, name="mv-3.6", metadata_version=kafka.MV_3_7_IV0 - 1,
                  initially_registered=())
    codes = set()
    for s in reachable(cfg):
        assert not any(m.kind == 2 for m in s.network)               # no registration request
        assert not any(r.kind == 1 for r in s.quorum.log)           # no RegisterControllerRecord
        for c, spec in enumerate(cfg.clients):
            if spec.node == 2:
                codes |= {r.code for r in s.clients[c].responses}
    assert codes == {kafka.UNSUPPORTED_VERSION}


def test_client_outcomes_of_forwarding_match_table_1_6():
    """Table 1.6 / 1.11: envelope 31 -> UNKNOWN_SERVER_ERROR; forged envelope on a client
    listener -> connection closed; inner TOPIC_AUTHORIZATION_FAILED passes through."""
    cfg = ZK_ENVELOPE_SECURITY
    outcomes = {c: set() for c in range(len(cfg.clients))}
    for s in reachable(cfg):
        for c, cl in enumerate(s.clients):
            outcomes[c] |= {(r.code, r.envelope_error) for r in cl.responses}
    timed_out = (kafka.REQUEST_TIMED_OUT, 0)         # any forward may run out of time
    assert outcomes[0] == {(kafka.TOPIC_AUTHORIZATION_FAILED, 0), timed_out}       # U1
    assert outcomes[1] == {(kafka.UNKNOWN_SERVER_ERROR, kafka.CLUSTER_AUTHORIZATION_FAILED),
                           timed_out}                                              # A1 via B3
    assert outcomes[2] == {(kafka.NETWORK_EXCEPTION, 0)}                            # F1


def test_observations_of_a_trace():
    spec = KafkaSpec.named("zk-envelope-security", "authorize-as-forwarder")
    result = explore(spec)
    states = model_next.replay(spec.cfg, spec.design, result.trace)
    obs = observe(states[-1], spec.cfg)
    assert obs.writes and obs.writes[0][0] == 0 and obs.writes[0][1] == 0   # U1's write, by B1
    sent = [e for a, st, b in zip(states, result.trace, states[1:])
            for e in observe_step(a, st, b, spec.cfg)]
    assert sent == [(1, 0, 0, 1)]            # one envelope B2 -> B1 for U1, one hop
    assert observe(states[0], spec.cfg).responses == ((), (), ())
