"""Topics a request needs, in the reference implementation (impl/auto_topics.py, the create-topic
path of impl/kraft.py, impl/cluster): rules AT-1 to AT-5 of docs/rules.md at Kafka 3.8.0.

A KRaft cluster built from its ``server.properties``, without the model: controllers C0 (the
leader) and C2, broker B1.  C0 and C2 run ``create.topic.policy.class.name``, refusing the topic
``orders``.  alice may describe groups and topics and create topics; mallory may do nothing;
the brokers and controllers authenticate as ``broker``."""
from __future__ import annotations

import random

import pytest

from impl.auto_topics import (CREATE_TOPIC_POLICY_CLASS_NAME, GROUP_METADATA_TOPIC_NAME,
                              REFUSED_TOPICS_CONFIG, REFUSED_TOPICS_POLICY,
                              AutoTopicCreationManager, MetadataRequestContext,
                              create_topic_policy, invalid_topic)
from impl.channel import ControllerChannel
from impl.cluster import AUTO_CREATE_ERRORS_ONLY_LOGGED, INTERNAL_TOPICS_BYPASS_POLICY, Cluster
from impl.cluster_config import (FIND_COORDINATOR, KRAFT_MODE, METADATA, ClientConfig,
                                 ClusterConfig, NodeConfig)
from impl.context import ControllerInfo, RequestContext
from impl.kraft import ClusterAuthorizer, QuorumController, RaftQuorum
from impl.protocol import KafkaPrincipal, parse_request, parse_response, unwrap_envelope
from impl.protocol.api_keys import CREATE_TOPICS, ENVELOPE
from impl.protocol.api_keys import FIND_COORDINATOR as FIND_COORDINATOR_KEY
from impl.protocol.api_keys import METADATA as METADATA_KEY
from impl.forwarding import envelope_response
from impl.protocol import encode_response
from impl.protocol.errors import (CLUSTER_AUTHORIZATION_FAILED, COORDINATOR_NOT_AVAILABLE,
                                  ERROR_NAMES, GROUP_AUTHORIZATION_FAILED,
                                  INVALID_TOPIC_EXCEPTION, LEADER_NOT_AVAILABLE,
                                  NETWORK_EXCEPTION, NONE, NOT_CONTROLLER, POLICY_VIOLATION,
                                  REQUEST_TIMED_OUT, TOPIC_ALREADY_EXISTS,
                                  TOPIC_AUTHORIZATION_FAILED, UNKNOWN_SERVER_ERROR,
                                  UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION)
from impl.sim import Event

C0, B1, C2 = 0, 1, 2
PROTOCOLS = ("listener.security.protocol.map", "CONTROLLER:SSL,CLIENT:SASL_SSL,INTERNAL:SSL")
VOTERS = ("controller.quorum.voters", "0@c0:9093,2@c2:9093")
POLICY = ((CREATE_TOPIC_POLICY_CLASS_NAME, REFUSED_TOPICS_POLICY),
          (REFUSED_TOPICS_CONFIG, "orders"))


def _controller(i: int, name: str) -> NodeConfig:
    return NodeConfig(i, name, "controller", (
        ("process.roles", "controller"), ("node.id", str(i)), VOTERS,
        ("controller.listener.names", "CONTROLLER"), ("listeners", f"CONTROLLER://{name}:9093"),
        PROTOCOLS) + POLICY, "broker")


NODES = (
    _controller(C0, "c0"),
    NodeConfig(B1, "B1", "broker", (
        ("process.roles", "broker"), ("node.id", "1"), VOTERS,
        ("controller.listener.names", "CONTROLLER"),
        ("listeners", "CLIENT://b1:9092,INTERNAL://b1:9192"), PROTOCOLS,
        ("advertised.listeners", "CLIENT://b1:9092,INTERNAL://b1:9192"),
        ("inter.broker.listener.name", "INTERNAL"),
        ("offsets.topic.replication.factor", "1")), "broker"),
    _controller(C2, "c2"),
)
ACLS = frozenset({("alice", "DESCRIBE", "GROUP"), ("alice", "DESCRIBE", "TOPIC"),
                  ("alice", "CREATE", "TOPIC"), ("broker", "CREATE", "TOPIC"),
                  ("broker", "CLUSTER_ACTION", "CLUSTER")})
CLIENTS = (
    ClientConfig("F1", "alice", FIND_COORDINATOR, B1, "CLIENT", FIND_COORDINATOR_KEY),
    ClientConfig("F2", "alice", FIND_COORDINATOR, B1, "CLIENT", FIND_COORDINATOR_KEY),
    ClientConfig("F3", "mallory", FIND_COORDINATOR, B1, "CLIENT", FIND_COORDINATOR_KEY),
    ClientConfig("F4", "alice", FIND_COORDINATOR, B1, "CLIENT", FIND_COORDINATOR_KEY),
    ClientConfig("M1", "alice", METADATA, B1, "CLIENT", METADATA_KEY, topic="payments"),
    ClientConfig("M2", "alice", METADATA, B1, "CLIENT", METADATA_KEY, topic="orders"),
    ClientConfig("M3", "mallory", METADATA, B1, "CLIENT", METADATA_KEY, topic="payments"),
)


def cluster(*bugs, acls=ACLS) -> Cluster:
    return Cluster(ClusterConfig("auto-topics", KRAFT_MODE, NODES, CLIENTS, acls,
                                 initial_controller=C0, bugs=frozenset(bugs)), seed=0)


def take(c: Cluster, name: str, *args) -> None:
    assert c.apply(Event(name, args)), (name, args)


def only(c: Cluster, api_key: int):
    (m,) = [m for m in c.network.in_flight() if m.api_key == api_key]
    return m


def codes(c: Cluster, client: str) -> list:
    return [(r.error_code, r.envelope_error) for r in c.client_results()[client]]


def send_to_controller(c: Cluster) -> None:
    """B1's channel finds the controller its metadata cache names and sends its head item."""
    if c.nodes[B1].channel.cached_controller is None:
        take(c, "channel_discovers_controller", B1)
    take(c, "channel_sends_request", B1)


# ---- AT-1: FindCoordinator --------------------------------------------------------------------


def test_find_coordinator_without_describe_on_the_group_is_refused_and_creates_nothing():
    """AT-1: KafkaApis.getCoordinator checks DESCRIBE on the group before anything else:
    GROUP_AUTHORIZATION_FAILED (30), and no topic is asked for."""
    c = cluster()
    take(c, "client_sends_request", "F3")
    assert codes(c, "F3") == [(GROUP_AUTHORIZATION_FAILED, 0)]
    assert ERROR_NAMES[GROUP_AUTHORIZATION_FAILED] == "GROUP_AUTHORIZATION_FAILED" and \
        GROUP_AUTHORIZATION_FAILED == 30
    assert c.auto_topic_state(B1).inflight_topics == () and not c.nodes[B1].channel.queue


def test_find_coordinator_asks_for_the_internal_topic_as_the_broker_without_an_envelope():
    """AT-1, AT-4: with __consumer_offsets absent from B1's image the client gets
    COORDINATOR_NOT_AVAILABLE (15) at once; B1's AutoTopicCreationManager marks the topic in
    flight and queues a plain CreateTopicsRequest (api key 19, not an Envelope) on its
    forwarding channel, sent on C0's controller listener as B1's own principal, with the
    offsets topic's partitions, replication factor and configs (L232-253)."""
    c = cluster()
    take(c, "client_sends_request", "F1")
    assert codes(c, "F1") == [(COORDINATOR_NOT_AVAILABLE, 0)]
    assert c.auto_topic_state(B1).inflight_topics == (GROUP_METADATA_TOPIC_NAME,)
    assert c.auto_topic_state(B1).requests == (((GROUP_METADATA_TOPIC_NAME,), False),)
    send_to_controller(c)
    m = only(c, CREATE_TOPICS)
    assert (m.src, m.dst, m.listener) == (B1, C0, "CONTROLLER")
    assert c.conns[m.conn].principal == "broker" and c.conns[m.conn].purpose == "forwarding"
    header, body = parse_request(m.payload)
    assert header["RequestApiKey"] == CREATE_TOPICS and header["RequestApiVersion"] == 7
    (topic,) = body["Topics"]
    assert (topic["Name"], topic["NumPartitions"], topic["ReplicationFactor"]) == \
        (GROUP_METADATA_TOPIC_NAME, 50, 1)
    assert {cfg["Name"]: cfg["Value"] for cfg in topic["Configs"]}["cleanup.policy"] == \
        "compact"
    assert body["timeoutMs"] == 30_000
    assert c.auto_topic_state(B1).requests == (((GROUP_METADATA_TOPIC_NAME,), True),)


def test_the_coordinator_is_found_once_the_broker_has_replayed_the_topic():
    """AT-1, AT-5: C0 appends the TopicRecord and answers only after the commit (R-17); the
    answer clears the in-flight mark and is only logged; the coordinator is found once B1 has
    replayed the TopicRecord (with its ConfigRecords, one batch), not before."""
    c = cluster()
    take(c, "client_sends_request", "F1")
    send_to_controller(c)
    take(c, "controller_handles_create_topics", only(c, CREATE_TOPICS).id)
    assert not c.network.in_flight()                         # answered after the commit
    take(c, "controller_commits_records")
    m = only(c, CREATE_TOPICS)
    assert c.view(m).kind == "CreateTopicsResponse" and c.view(m).error == NONE
    take(c, "broker_handles_create_topics_response", m.id)
    assert c.auto_topic_state(B1).inflight_topics == ()
    assert "Auto topic creation completed" in c.nodes[B1].auto_topics.logged[-1]
    created = c.created_topics()
    assert [(t.name, t.writer, t.writer_epoch, t.principal) for t in created] == \
        [(GROUP_METADATA_TOPIC_NAME, C0, 1, "broker")]
    assert c.durable_writes() == []                # not a client's write
    take(c, "client_sends_request", "F2")
    assert codes(c, "F2") == [(COORDINATOR_NOT_AVAILABLE, 0)]     # B1 has not replayed it
    take(c, "node_replays_record", B1)
    assert GROUP_METADATA_TOPIC_NAME in c.quorum.image(B1).topics
    assert c.quorum.replayed_offset(B1) == len(c.quorum.log)      # topic and configs at once
    take(c, "client_sends_request", "F4")
    assert codes(c, "F4") == [(NONE, 0)]
    resp = parse_response(c.client_results()["F4"][0].response,
                          {"RequestApiKey": FIND_COORDINATOR_KEY, "RequestApiVersion": 5,
                           "CorrelationId": 1})
    (coordinator,) = resp["Coordinators"]
    assert (coordinator["Key"], coordinator["NodeId"], coordinator["Host"],
            coordinator["Port"]) == ("group-F4", B1, "b1", 9092)


def test_a_topic_in_flight_is_not_asked_for_again():
    """AT-3: filterCreatableTopics: while B1's CreateTopics for __consumer_offsets is in
    flight (queued or sent), another FindCoordinator gets COORDINATOR_NOT_AVAILABLE and queues
    nothing; once the first completes the topic may be asked for again."""
    c = cluster()
    take(c, "client_sends_request", "F1")
    take(c, "client_sends_request", "F2")
    assert codes(c, "F2") == [(COORDINATOR_NOT_AVAILABLE, 0)]
    assert len(c.nodes[B1].channel.queue) == 1
    manager = c.nodes[B1].auto_topics
    (topic,) = manager.create_topics({GROUP_METADATA_TOPIC_NAME}, c.now_ms)
    assert (topic["Name"], topic["ErrorCode"], topic["IsInternal"]) == \
        (GROUP_METADATA_TOPIC_NAME, UNKNOWN_TOPIC_OR_PARTITION, True)
    assert len(c.nodes[B1].channel.queue) == 1
    send_to_controller(c)
    take(c, "controller_handles_create_topics", only(c, CREATE_TOPICS).id)
    take(c, "controller_commits_records")
    take(c, "broker_handles_create_topics_response", only(c, CREATE_TOPICS).id)
    assert manager.inflight_topics == set()
    manager.create_topics({GROUP_METADATA_TOPIC_NAME}, c.now_ms)
    assert len(c.nodes[B1].channel.queue) == 1


def test_an_invalid_name_is_refused_before_anything_is_sent():
    """AT-3: Topic.validate first: INVALID_TOPIC_EXCEPTION (17), nothing marked or queued."""
    c = cluster()
    manager = c.nodes[B1].auto_topics
    (topic,) = manager.create_topics({"bad/name"}, 0)
    assert topic["ErrorCode"] == INVALID_TOPIC_EXCEPTION and manager.inflight_topics == set()
    assert not c.nodes[B1].channel.queue
    assert invalid_topic("..") == "Topic name is invalid: '..' is not allowed"
    assert invalid_topic("a" * 250).endswith("max allowed length 249")
    assert invalid_topic("orders") is None


# ---- AT-5: the controller ---------------------------------------------------------------------


def test_the_create_topic_policy_refuses_with_policy_violation():
    """AT-5: ReplicationControlManager runs create.topic.policy.class.name: the configured
    policy refuses ``orders`` with POLICY_VIOLATION (44) and its message, answered at once,
    nothing written; a topic it allows is written."""
    policy = create_topic_policy(dict(POLICY))
    quorum = RaftQuorum((C0,), leader_id=C0)
    qc = QuorumController(C0, quorum, ClusterAuthorizer({}), random.Random(0),
                          create_topic_policy=policy)
    body = {"Topics": [{"Name": "orders", "NumPartitions": 1, "ReplicationFactor": 1,
                        "Assignments": [], "Configs": []}], "timeoutMs": 30_000,
            "validateOnly": False}
    r = qc.controller_handles_create_topics(body, "w", has_cluster_auth=True,
                                            creatable=set)
    (topic,) = r.body["Topics"]
    assert (r.error_code, topic["ErrorCode"]) == (POLICY_VIOLATION, POLICY_VIOLATION)
    assert "orders" in topic["ErrorMessage"] and not quorum.uncommitted
    allowed = dict(body, Topics=[dict(body["Topics"][0], Name="payments")])
    assert qc.controller_handles_create_topics(allowed, "w", has_cluster_auth=True,
                                               creatable=set) is None
    assert [e.record.data["Name"] for e in quorum.uncommitted[0].entries] == ["payments"]
    with pytest.raises(ValueError, match="cannot be found"):
        create_topic_policy({CREATE_TOPIC_POLICY_CLASS_NAME: "com.example.NoSuchPolicy"})
    assert create_topic_policy({}) is None


def test_a_topic_that_exists_is_topic_already_exists():
    """AT-5: RCM's check of topicsByName, which holds the active controller's uncommitted
    records too: B1 asks for __consumer_offsets again after C0 created it but before B1
    replayed it (a second FindCoordinator finds it missing): TOPIC_ALREADY_EXISTS (36)."""
    c = cluster()
    take(c, "client_sends_request", "F1")
    send_to_controller(c)
    take(c, "controller_handles_create_topics", only(c, CREATE_TOPICS).id)
    take(c, "controller_commits_records")
    take(c, "broker_handles_create_topics_response", only(c, CREATE_TOPICS).id)
    take(c, "client_sends_request", "F2")                  # B1's image still lacks it
    assert codes(c, "F2") == [(COORDINATOR_NOT_AVAILABLE, 0)]
    send_to_controller(c)
    take(c, "controller_handles_create_topics", only(c, CREATE_TOPICS).id)
    m = only(c, CREATE_TOPICS)
    assert (c.view(m).kind, c.view(m).error) == ("CreateTopicsResponse", TOPIC_ALREADY_EXISTS)
    assert len(c.created_topics()) == 1


def test_an_inactive_controller_answers_not_controller_and_the_request_is_requeued():
    """AT-5, R-13, F-21.4: C2 becomes leader after B1 cached C0; C0's write event fails with
    NOT_CONTROLLER (41); B1's channel forgets C0 and puts the request back at the front, the
    topic still in flight; once B1 learns C2 the request goes there and is created."""
    c = cluster()
    take(c, "client_sends_request", "F1")
    take(c, "channel_discovers_controller", B1)
    take(c, "controller_becomes_leader", C2)
    take(c, "channel_sends_request", B1)
    take(c, "controller_handles_create_topics", only(c, CREATE_TOPICS).id)
    m = only(c, CREATE_TOPICS)
    assert (m.src, c.view(m).error) == (C0, NOT_CONTROLLER)
    take(c, "broker_handles_create_topics_response", m.id)
    ch = c.nodes[B1].channel
    assert ch.cached_controller is None and ch.inflight is None
    (item,) = ch.queue
    assert item.extra["requeues"] == 1
    assert c.auto_topic_state(B1).inflight_topics == (GROUP_METADATA_TOPIC_NAME,)
    take(c, "broker_learns_controller", B1)
    send_to_controller(c)
    assert only(c, CREATE_TOPICS).dst == C2
    take(c, "controller_handles_create_topics", only(c, CREATE_TOPICS).id)
    take(c, "controller_commits_records")
    assert [(t.writer, t.writer_epoch) for t in c.created_topics()] == [(C2, 2)]


def test_a_broker_without_create_is_refused_by_the_controller():
    """AT-5: ControllerApis.createTopics authorizes the connection's principal (the broker's,
    AT-4): without CREATE on the cluster or the topic, TOPIC_AUTHORIZATION_FAILED (29), even
    on an inactive controller (an empty write is answered at once)."""
    for elect in (False, True):
        c = cluster(acls=ACLS - {("broker", "CREATE", "TOPIC")})
        take(c, "client_sends_request", "F1")
        take(c, "channel_discovers_controller", B1)
        if elect:
            take(c, "controller_becomes_leader", C2)        # C0 is no longer active
        take(c, "channel_sends_request", B1)
        take(c, "controller_handles_create_topics", only(c, CREATE_TOPICS).id)
        m = only(c, CREATE_TOPICS)
        assert (m.src, c.view(m).error) == (C0, TOPIC_AUTHORIZATION_FAILED)
        assert not c.quorum.uncommitted


def test_the_retry_timeout_clears_the_in_flight_mark():
    """AT-5: onTimeout clears the in-flight topic (F-19: the channel's retry timeout)."""
    c = cluster()
    take(c, "client_sends_request", "F1")
    manager = c.nodes[B1].auto_topics
    c.now_ms = c.config.forward_retry_timeout_ms
    take(c, "channel_times_out_request", B1)
    assert manager.inflight_topics == set() and not c.nodes[B1].channel.queue
    assert "timed out" in manager.logged[-1]


# ---- AT-2, AT-4: Metadata with auto-creation -------------------------------------------------


def test_metadata_needs_describe_then_create_on_the_topic():
    """AT-2: handleTopicMetadataRequest: without DESCRIBE on the topic,
    TOPIC_AUTHORIZATION_FAILED (29) and nothing is created; with DESCRIBE but without CREATE
    on the cluster or the topic, TOPIC_AUTHORIZATION_FAILED too."""
    c = cluster()
    take(c, "client_sends_request", "M3")
    assert codes(c, "M3") == [(TOPIC_AUTHORIZATION_FAILED, 0)]
    c = cluster(acls=ACLS - {("alice", "CREATE", "TOPIC")})
    take(c, "client_sends_request", "M1")
    assert codes(c, "M1") == [(TOPIC_AUTHORIZATION_FAILED, 0)]
    assert not c.nodes[B1].channel.queue


def metadata_answer(c: Cluster, client: str) -> tuple:
    """``client``'s Metadata: B1 sends its auto-creation to C0, which answers."""
    take(c, "client_sends_request", client)
    send_to_controller(c)
    take(c, "controller_handles_envelope", only(c, ENVELOPE).id)
    if not [m for m in c.network.in_flight() if m.api_key == ENVELOPE]:
        take(c, "controller_commits_records")
    m = only(c, ENVELOPE)
    take(c, "broker_handles_envelope_response", m.id)
    return c.view(m)


def test_metadata_auto_creation_travels_in_an_envelope_with_the_clients_principal():
    """AT-4: the CreateTopics of a Metadata request's topic is wrapped in an EnvelopeRequest
    (58) carrying the client's principal and address, the Metadata request's client id and
    correlation id, at the controller's latest usable CreateTopics version; the topic gets
    num.partitions and default.replication.factor."""
    c = cluster()
    take(c, "client_sends_request", "M1")
    assert codes(c, "M1") == []                       # the broker waits (KIP-590)
    assert c.auto_topic_state(B1).inflight_topics == ("payments",)
    assert c.auto_topic_state(B1).requests == ()      # not one of the broker's own
    send_to_controller(c)
    m = only(c, ENVELOPE)
    assert c.conns[m.conn].principal == "broker"
    envelope = parse_request(m.payload)[1]
    forwarded = unwrap_envelope(envelope)
    assert str(forwarded.principal) == "User:alice"
    assert str(forwarded.client_address) == "192.0.2.10"
    assert (forwarded.header["RequestApiKey"], forwarded.header["RequestApiVersion"],
            forwarded.header["ClientId"], forwarded.header["CorrelationId"]) == \
        (CREATE_TOPICS, 7, "M1", 1)
    (topic,) = forwarded.body["Topics"]
    assert (topic["Name"], topic["NumPartitions"], topic["ReplicationFactor"]) == \
        ("payments", 1, 1)


def test_a_created_topic_is_answered_leader_not_available():
    """The KIP's design (the default): B1 waits for C0's answer; a creation is
    LEADER_NOT_AVAILABLE (5) to the client (the topic has no leader yet, as the ZooKeeper path
    answers it, AT-6); the write is the client's."""
    c = cluster()
    view = metadata_answer(c, "M1")
    assert (view.error, view.inner_error) == (NONE, NONE)
    assert codes(c, "M1") == [(LEADER_NOT_AVAILABLE, 0)]
    assert [(w.client, w.writer) for w in c.durable_writes()] == [("M1", C0)]
    assert c.auto_topic_state(B1).inflight_topics == ()
    resp = parse_response(c.client_results()["M1"][0].response,
                          {"RequestApiKey": METADATA_KEY, "RequestApiVersion": 12,
                           "CorrelationId": 1})
    assert [(t["Name"], t["ErrorCode"]) for t in resp["Topics"]] == \
        [("payments", LEADER_NOT_AVAILABLE)]


def test_a_refused_auto_creation_reaches_the_client():
    """The KIP's design: the policy's POLICY_VIOLATION (44) from C0's inner response is the
    client's answer, so it fails fast (P11's auto-creation-refusal-reaches-client)."""
    c = cluster()
    view = metadata_answer(c, "M2")
    assert (view.error, view.inner_error) == (NONE, POLICY_VIOLATION)
    assert codes(c, "M2") == [(POLICY_VIOLATION, 0)]
    assert c.durable_writes() == []


def test_a_waiting_metadata_request_times_out():
    """The KIP's design: the channel's retry timeout ends the wait with REQUEST_TIMED_OUT (7),
    as for a forwarded request (table 1.6)."""
    c = cluster()
    take(c, "client_sends_request", "M1")
    c.now_ms = c.config.forward_retry_timeout_ms
    take(c, "channel_times_out_request", B1)
    assert codes(c, "M1") == [(REQUEST_TIMED_OUT, 0)]


def test_kafka_answers_unknown_topic_or_partition_at_once_and_only_logs_the_refusal():
    """auto-create-errors-only-logged (Kafka 3.8.0, AT-5, L171-187 and L216-221): the client
    gets UNKNOWN_TOPIC_OR_PARTITION (3) at once; C0's POLICY_VIOLATION is only logged, and the
    next Metadata request would be answered 3 again: the client retries a topic that will
    never exist."""
    c = cluster(AUTO_CREATE_ERRORS_ONLY_LOGGED)
    take(c, "client_sends_request", "M2")
    assert codes(c, "M2") == [(UNKNOWN_TOPIC_OR_PARTITION, 0)]
    assert c.auto_topic_state(B1).inflight_topics == ("orders",)
    send_to_controller(c)
    take(c, "controller_handles_envelope", only(c, ENVELOPE).id)
    m = only(c, ENVELOPE)
    assert c.view(m).inner_error == POLICY_VIOLATION
    take(c, "broker_handles_envelope_response", m.id)
    assert codes(c, "M2") == [(UNKNOWN_TOPIC_OR_PARTITION, 0)]
    manager = c.nodes[B1].auto_topics
    assert manager.inflight_topics == set()
    assert "Auto topic creation completed for ['orders']" in manager.logged[-1]


# ---- the two design variants as implementation bugs --------------------------------------------


def test_internal_topics_bypass_policy_skips_the_policy_for_the_brokers_own_request_only():
    """internal-topics-bypass-policy: a CreateTopicsRequest a broker sends as itself skips
    create.topic.policy.class.name; a client's auto-creation in an Envelope does not."""
    policy = create_topic_policy({CREATE_TOPIC_POLICY_CLASS_NAME: REFUSED_TOPICS_POLICY,
                                  REFUSED_TOPICS_CONFIG: GROUP_METADATA_TOPIC_NAME})
    body = {"Topics": [{"Name": GROUP_METADATA_TOPIC_NAME, "NumPartitions": 50,
                        "ReplicationFactor": 1, "Assignments": [], "Configs": []}],
            "timeoutMs": 30_000, "validateOnly": False}
    for bypass, refused in ((False, True), (True, False)):
        quorum = RaftQuorum((C0,), leader_id=C0)
        qc = QuorumController(C0, quorum, ClusterAuthorizer({}), random.Random(0),
                              create_topic_policy=policy, internal_topics_bypass_policy=bypass)
        r = qc.controller_handles_create_topics(body, "w", has_cluster_auth=True, creatable=set)
        assert (r is not None and r.error_code == POLICY_VIOLATION) == refused
        assert bool(quorum.uncommitted) != refused
        forwarded = qc.controller_handles_create_topics(body, "w", has_cluster_auth=True,
                                                        creatable=set, forwarded=True)
        assert forwarded is not None and forwarded.error_code in (POLICY_VIOLATION,
                                                                  TOPIC_ALREADY_EXISTS)
    c = cluster(INTERNAL_TOPICS_BYPASS_POLICY)
    assert c.nodes[C0].qc.internal_topics_bypass_policy
    assert not cluster().nodes[C0].qc.internal_topics_bypass_policy


def test_the_manager_shares_the_forwarding_channel_in_fifo_order():
    """AT-4: BrokerServer gives the AutoTopicCreationManager the forwarding channel: a
    FindCoordinator's CreateTopics and a Metadata request's Envelope queue behind each other
    and travel one at a time."""
    c = cluster()
    take(c, "client_sends_request", "F1")
    take(c, "client_sends_request", "M1")
    ch = c.nodes[B1].channel
    assert [item.api_key for item in ch.queue] == [CREATE_TOPICS, ENVELOPE]
    assert ch is c.nodes[B1].forwarding.channel is c.nodes[B1].auto_topics.channel
    send_to_controller(c)
    assert not c.apply(Event("channel_sends_request", (B1,)))      # one in flight (F-16)
    assert sorted(c.auto_topic_state(B1).inflight_topics) == [GROUP_METADATA_TOPIC_NAME,
                                                              "payments"]


def test_the_metadata_version_follows_the_controllers_api_versions():
    """AT-4 (L194-202): the controller's latest usable CreateTopics version once the channel
    knows its ApiVersions, else the broker's latest."""
    ranges = {CREATE_TOPICS: (2, 7), ENVELOPE: (0, 0)}
    channel = ControllerChannel(lambda: ControllerInfo(0, "CONTROLLER"), retry_timeout_ms=60_000,
                                local_api_versions=ranges,
                                controller_api_versions=lambda info: {CREATE_TOPICS: (0, 5),
                                                                      ENVELOPE: (0, 0)})
    manager = AutoTopicCreationManager(channel, {}, ranges)
    ctx = RequestContext("CLIENT", "SASL_SSL", KafkaPrincipal("User", "alice"), "192.0.2.10",
                         "M1")
    manager.create_topics({"t0"}, 0, MetadataRequestContext(ctx, 9), lambda answer: None)
    channel.discover_controller(0)
    out = channel.next_send(0)              # the controller's versions are learned on connect
    assert unwrap_envelope(parse_request(out.payload)[1]).header["RequestApiVersion"] == 7
    manager.create_topics({"t1"}, 0, MetadataRequestContext(ctx, 10), lambda answer: None)
    (queued,) = channel.queue
    assert unwrap_envelope(queued.build(0)).header["RequestApiVersion"] == 5


@pytest.mark.parametrize("inner, envelope, expected", [
    (TOPIC_ALREADY_EXISTS, NONE, (LEADER_NOT_AVAILABLE, 0, False)),     # AT-6's mapping
    (POLICY_VIOLATION, NONE, (POLICY_VIOLATION, 0, False)),
    (None, UNSUPPORTED_VERSION, (NETWORK_EXCEPTION, UNSUPPORTED_VERSION, True)),   # KAFKA-10674
    (None, CLUSTER_AUTHORIZATION_FAILED, (UNKNOWN_SERVER_ERROR, CLUSTER_AUTHORIZATION_FAILED,
                                          False)),                       # table 1.6
])
def test_what_a_waiting_metadata_client_is_told(inner, envelope, expected):
    """The KIP's design, on the channel's bytes: the EnvelopeResponse to a Metadata request's
    auto-creation decides the client's answer; every answer clears the in-flight mark."""
    ranges = {CREATE_TOPICS: (0, 7), ENVELOPE: (0, 0)}
    channel = ControllerChannel(lambda: ControllerInfo(0, "CONTROLLER"), retry_timeout_ms=60_000,
                                local_api_versions=ranges,
                                controller_api_versions=lambda info: ranges)
    manager = AutoTopicCreationManager(channel, {}, ranges)
    ctx = RequestContext("CLIENT", "SASL_SSL", KafkaPrincipal("User", "alice"), "192.0.2.10",
                         "M1")
    answers = []
    assert manager.create_topics({"payments"}, 0, MetadataRequestContext(ctx, 3),
                                 answers.append) == []
    channel.discover_controller(0)
    out = channel.next_send(0)
    env_header, env_body = parse_request(out.payload)
    data = None
    if inner is not None:
        inner_header = unwrap_envelope(env_body).header
        data = encode_response(CREATE_TOPICS, inner_header["RequestApiVersion"], 3,
                               {"ThrottleTimeMs": 0, "Topics": [
                                   {"Name": "payments", "ErrorCode": inner,
                                    "ErrorMessage": None}]})
    assert channel.on_response(env_header["CorrelationId"],
                               envelope_response(env_header["CorrelationId"], envelope, data), 0)
    (answer,) = answers
    assert (answer.topic_errors["payments"], answer.envelope_error,
            answer.close_connection) == expected
    assert manager.inflight_topics == set()


def test_l28_partition_metadata_names_the_leader_or_why_it_cannot():
    """KRaftMetadataCache.getPartitionMetadata for Metadata v6+: the leader with the listener;
    alive without it, LISTENER_NOT_FOUND; not alive, LEADER_NOT_AVAILABLE (KAFKA-10312: the
    leader's liveness decides, not the answering broker's)."""
    from impl.auto_topics import partition_metadata
    from impl.protocol.errors import LEADER_NOT_AVAILABLE, LISTENER_NOT_FOUND, NONE
    alive = {2: {"CLIENT": ("b2", 9092), "INTERNAL": ("b2", 9093)}, 3: {"INTERNAL": ("b3", 9093)}}
    listed = partition_metadata(0, 2, "CLIENT", alive)
    assert (listed["ErrorCode"], listed["LeaderId"]) == (NONE, 2)
    lacking = partition_metadata(0, 3, "CLIENT", alive)
    assert (lacking["ErrorCode"], lacking["LeaderId"]) == (LISTENER_NOT_FOUND, -1)
    down = partition_metadata(0, 4, "CLIENT", alive)
    assert (down["ErrorCode"], down["LeaderId"]) == (LEADER_NOT_AVAILABLE, -1)
    assert down["ReplicaNodes"] == [4]
