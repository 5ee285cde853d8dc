"""impl/cluster: a step that is not enabled says so; a bug in a step is an error, not a disabled
step.  A two-node KRaft cluster (controller C1, broker B1, one CreateTopics client on B1) built
from its ``server.properties``, without the model."""
from __future__ import annotations

import pytest

from impl.cluster import STEPS, Cluster
from impl.cluster_config import KRAFT_MODE, MUTATION, ClientConfig, ClusterConfig, NodeConfig
from impl.protocol.api_keys import (API_KEYS, BROKER_HEARTBEAT, BROKER_REGISTRATION,
                                    CONTROLLER_REGISTRATION, CREATE_ACLS, CREATE_TOPICS,
                                    DESCRIBE_CLUSTER, ENVELOPE, INCREMENTAL_ALTER_CONFIGS)
from impl.protocol.errors import (CLUSTER_AUTHORIZATION_FAILED, ERROR_NAMES, NETWORK_EXCEPTION,
                                  TOPIC_AUTHORIZATION_FAILED)
from impl.sim import Event

PROTOCOLS = ("listener.security.protocol.map", "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT")
VOTERS = ("controller.quorum.voters", "0@c1:9092")
NODES = (
    NodeConfig(0, "C1", "controller", (
        ("process.roles", "controller"), ("node.id", "0"), VOTERS,
        ("controller.listener.names", "CONTROLLER"), ("listeners", "CONTROLLER://c1:9092"),
        PROTOCOLS), "controller"),
    NodeConfig(1, "B1", "broker", (
        ("process.roles", "broker"), ("node.id", "1"), VOTERS,
        ("controller.listener.names", "CONTROLLER"), ("listeners", "INTERNAL://b1:9192"),
        PROTOCOLS, ("advertised.listeners", "INTERNAL://b1:9192"),
        ("inter.broker.listener.name", "INTERNAL")), "broker"),
)
MESSAGE_STEPS = ("controller_handles_envelope", "broker_handles_envelope_response",
                 "controller_handles_registration", "controller_handles_registration_response",
                 "controller_handles_broker_registration", "controller_handles_broker_heartbeat",
                 "broker_handles_lifecycle_response", "node_discards_stale_response",
                 "network_drops_message")
NODE_STEPS = tuple(s for s in STEPS if s not in (
    "client_sends_request", "clock_ticks", "controller_commits_records") + MESSAGE_STEPS)


def cluster(**config) -> Cluster:
    client = ClientConfig("A1", "alice", MUTATION, 1, "INTERNAL", CREATE_TOPICS)
    return Cluster(ClusterConfig("two-nodes", KRAFT_MODE, NODES, (client,),
                                 frozenset({("alice", "CREATE", "TOPIC"),
                                            ("controller", "CLUSTER_ACTION", "CLUSTER"),
                                            ("broker", "CLUSTER_ACTION", "CLUSTER")}),
                                 **config), seed=0)


def envelope_in_flight(c: Cluster) -> int:
    """A1 sends; B1 forwards it to C1: the EnvelopeRequest's message id."""
    for ev in (Event("client_sends_request", ("A1",)),
               Event("channel_discovers_controller", (1,)),
               Event("channel_sends_request", (1,))):
        assert c.apply(ev), ev
    (m,) = c.network.in_flight()
    assert (m.api_key, m.src, m.dst) == (ENVELOPE, 1, 0)
    return m.id


def test_a_step_on_no_such_node_client_or_message_is_not_enabled():
    c = cluster()
    mid = envelope_in_flight(c)
    before = c.events()
    for name in NODE_STEPS:
        for n in (-1, 2, 99):
            assert c.apply(Event(name, (n,))) is False, (name, n)
    for name in MESSAGE_STEPS:
        assert c.apply(Event(name, (mid + 1,))) is False, name
    assert c.apply(Event("client_sends_request", ("nobody",))) is False
    # the EnvelopeRequest is not a response nor a registration nor a heartbeat
    for name in ("broker_handles_envelope_response", "controller_handles_registration",
                 "controller_handles_registration_response", "node_discards_stale_response",
                 "controller_handles_broker_registration", "controller_handles_broker_heartbeat",
                 "broker_handles_lifecycle_response"):
        assert c.apply(Event(name, (mid,))) is False, name
    assert c.events() == before
    assert c.apply(Event("controller_handles_envelope", (mid,)))


@pytest.mark.parametrize("error", [KeyError, IndexError])
def test_a_bug_in_a_step_is_an_error_not_a_disabled_step(monkeypatch, error):
    c = cluster()

    def bug(*args, **kwargs):
        raise error("bug")
    monkeypatch.setattr(c, "_expired", bug)     # channel_times_out_request's helper
    with pytest.raises(error):
        c.apply(Event("channel_times_out_request", (1,)))
    with pytest.raises(error):
        c.events()


def test_the_cluster_uses_kafkas_api_keys_and_error_codes():
    for key, name in ((CREATE_TOPICS, "CREATE_TOPICS"), (CREATE_ACLS, "CREATE_ACLS"),
                      (INCREMENTAL_ALTER_CONFIGS, "INCREMENTAL_ALTER_CONFIGS"),
                      (ENVELOPE, "ENVELOPE"), (DESCRIBE_CLUSTER, "DESCRIBE_CLUSTER"),
                      (CONTROLLER_REGISTRATION, "CONTROLLER_REGISTRATION")):
        assert API_KEYS[key].name == name
    assert {ERROR_NAMES[c] for c in (NETWORK_EXCEPTION, TOPIC_AUTHORIZATION_FAILED,
                                     CLUSTER_AUTHORIZATION_FAILED)} == {
        "NETWORK_EXCEPTION", "TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"}
    assert (NETWORK_EXCEPTION, TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED) == \
        (13, 29, 31)


def _take(c: Cluster, name: str, api_key: int | None = None, dst: int | None = None) -> None:
    """Apply ``name`` on the one in-flight message of ``api_key`` (a message step) or on
    node ``dst``."""
    if api_key is None:
        assert c.apply(Event(name, (dst,) if dst is not None else ())), name
        return
    (m,) = [m for m in c.network.in_flight() if m.api_key == api_key]
    assert c.apply(Event(name, (m.id,))), name


def test_a_new_broker_registers_heartbeats_and_is_unfenced_once_caught_up():
    """BL-4, BR-3, BR-5: B1's BrokerLifecycleManager registers on C1's controller listener
    (api key 62) and gets the next write offset as its epoch, fenced; BL-9, BH-7: its heartbeat
    (api key 63) is answered IsFenced until it has replayed its own RegisterBrokerRecord, then
    a BrokerRegistrationChangeRecord unfences it, answered after the commit (BH-5)."""
    c = cluster(broker_registration=True, tick_ms=2000)     # a tick: the default interval
    lifecycle = c.nodes[1].lifecycle
    assert c.nodes[0].cluster_control.heartbeat_manager is not None      # BR-13: active
    assert c.nodes[1].incarnations == [lifecycle.incarnation_id]
    assert c.broker_lifecycle(1) == (False, -1)
    _take(c, "broker_sends_registration", dst=1)
    (m,) = c.network.in_flight()
    assert (m.api_key, m.src, m.dst, m.listener) == (BROKER_REGISTRATION, 1, 0, "CONTROLLER")
    assert c.view(m).incarnation_id == lifecycle.incarnation_id
    assert not c.apply(Event("broker_sends_registration", (1,)))       # one at a time (BL-9)
    _take(c, "controller_handles_broker_registration", BROKER_REGISTRATION)
    assert not c.network.in_flight()                                   # answered after commit
    _take(c, "controller_commits_records")
    [reg] = c.broker_registrations()
    assert (reg.broker_id, reg.incarnation_id, reg.broker_epoch) == (1, lifecycle.incarnation_id,
                                                                    1)
    _take(c, "broker_handles_lifecycle_response", BROKER_REGISTRATION)
    assert c.broker_lifecycle(1) == (True, 1)
    _take(c, "broker_sends_heartbeat", dst=1)
    (m,) = c.network.in_flight()
    assert (c.view(m).broker_epoch, c.view(m).metadata_offset) == (1, 0)     # not caught up
    _take(c, "controller_handles_broker_heartbeat", BROKER_HEARTBEAT)
    (m,) = c.network.in_flight()
    assert (c.view(m).error, c.view(m).is_fenced) == (0, True)
    _take(c, "broker_handles_lifecycle_response", BROKER_HEARTBEAT)
    assert not c.apply(Event("broker_sends_heartbeat", (1,)))         # once per interval
    _take(c, "node_replays_record", dst=1)
    _take(c, "clock_ticks")
    _take(c, "broker_sends_heartbeat", dst=1)
    _take(c, "controller_handles_broker_heartbeat", BROKER_HEARTBEAT)
    _take(c, "controller_commits_records")
    (m,) = c.network.in_flight()
    assert (c.view(m).error, c.view(m).is_fenced) == (0, False)
    assert c.quorum.log[-1].record.data["Fenced"] == -1
    assert c.quorum.image(0).brokers == {}                  # C1 has not replayed the log yet
    for _ in range(3):
        _take(c, "node_replays_record", dst=0)
    assert c.quorum.image(0).brokers[1]["Fenced"] is False  # BR-12
