"""impl/cluster: a step that is not enabled says so; a bug in a step is an error, not a disabled
step.  A two-node KRaft cluster (controller C1, broker B1, one CreateTopics client on B1) built
from its ``server.properties``, without the model."""
from __future__ import annotations

import pytest

from impl.cluster import STEPS, Cluster
from impl.cluster_config import KRAFT_MODE, MUTATION, ClientConfig, ClusterConfig, NodeConfig
from impl.protocol.api_keys import (API_KEYS, CONTROLLER_REGISTRATION, CREATE_ACLS,
                                    CREATE_TOPICS, DESCRIBE_CLUSTER, ENVELOPE,
                                    INCREMENTAL_ALTER_CONFIGS)
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
NODE_STEPS = tuple(s for s in STEPS if s not in (
    "client_sends_request", "clock_ticks", "controller_commits_records",
    "controller_handles_envelope", "broker_handles_envelope_response",
    "controller_handles_registration", "controller_handles_registration_response",
    "node_discards_stale_response", "network_drops_message"))
MESSAGE_STEPS = ("controller_handles_envelope", "broker_handles_envelope_response",
                 "controller_handles_registration", "controller_handles_registration_response",
                 "node_discards_stale_response", "network_drops_message")


def cluster() -> Cluster:
    client = ClientConfig("A1", "alice", MUTATION, 1, "INTERNAL", CREATE_TOPICS)
    return Cluster(ClusterConfig("two-nodes", KRAFT_MODE, NODES, (client,),
                                 frozenset({("alice", "CREATE", "TOPIC")})), seed=0)


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
    # the EnvelopeRequest is not a response nor a registration
    for name in ("broker_handles_envelope_response", "controller_handles_registration",
                 "controller_handles_registration_response", "node_discards_stale_response"):
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
