"""Named configurations.  ``tiny`` ones are explored exhaustively in CI in seconds; ``small``
ones take minutes and are for nightly runs and benchmarks.  Which design variants a
configuration must catch is not listed here: ``ModelConfig.variants`` derives it from each
variant's ``Variant.config`` (model/config.py).

Principals: ``admin`` may create topics, alter configs and alter the cluster; ``user`` may do
nothing; ``broker`` is the brokers' and controllers' own principal (CLUSTER_ACTION and every
operation, as a super user); ``broker-b3`` is a broker principal someone forgot to grant
CLUSTER_ACTION (a misconfigured ACL).
"""
from __future__ import annotations

from dataclasses import replace

from model import kafka
from model.config import (BROKER, CLIENT_LISTENER, CONTROLLER, CONTROLLER_LISTENER, DESCRIBE,
                          FIND_COORDINATOR, FORGED_ENVELOPE, INTER_BROKER_LISTENER, KRAFT,
                          METADATA, MUTATION, WILDCARD_HOST, ZK, ClientSpec, Listener,
                          ModelConfig, NodeSpec)

CLIENT = Listener("CLIENT", "SASL_SSL", CLIENT_LISTENER)
INTERNAL = Listener("INTERNAL", "SSL", INTER_BROKER_LISTENER)
CONTROLLER_L = Listener("CONTROLLER", "SSL", CONTROLLER_LISTENER)

_ALL_OPS = ("CREATE_TOPIC", "ALTER_CONFIGS", kafka.ALTER_CLUSTER, kafka.DESCRIBE_GROUP,
            kafka.DESCRIBE_TOPIC)
ACLS = frozenset({("admin", op) for op in _ALL_OPS}
                 | {("broker", op) for op in _ALL_OPS + (kafka.CLUSTER_ACTION,)}
                 | {("broker-b3", op) for op in _ALL_OPS})


def _broker(name, listeners=(CLIENT, INTERNAL), principal="broker", api_max=7):
    return NodeSpec(name, BROKER, listeners, principal, api_max)


def _controller(name, api_max=7):
    return NodeSpec(name, CONTROLLER, (CONTROLLER_L,), "broker", api_max)


def _mutation(name, node, principal="admin", api=kafka.CREATE_TOPICS, listener="CLIENT"):
    return ClientSpec(name, principal, MUTATION, node, listener, api)


def _describe(name, node, endpoint_type, listener, principal="admin"):
    return ClientSpec(name, principal, DESCRIBE, node, listener, kafka.DESCRIBE_CLUSTER,
                      endpoint_type)


ZK_FORWARD_ZOMBIE = ModelConfig(
    name="zk-forward-zombie",
    description="ZK mode with forwarding: B1 is controller, B2 forwards A1's CreateTopics; "
                "B1's session can expire (a zombie), B2 can be elected, one message can be lost.",
    mode=ZK, nodes=(_broker("B1"), _broker("B2")),
    clients=(_mutation("A1", 1),), acls=ACLS,
    initial_controller=0, max_elections=1, max_session_expiries=1, max_drops=1,
    forward_timeout=2, max_time=3,
    witnesses=("mutation-acknowledged", "zombie-write-fenced",
               "forward-succeeds-after-not-controller", "request-timed-out", "controller-moved",
               "forward-applied-twice"),
)

KRAFT_FORWARD_LEADER_CHANGE = ModelConfig(
    name="kraft-forward-leader-change",
    description="KRaft: B1 forwards A1's CreateTopics; C1 leads, C2 and C3 (older, API max "
                "v5) can take over; B1 learns the new leader late.",
    mode=KRAFT,
    nodes=(_broker("B1"), _controller("C1"), _controller("C2", api_max=5),
           _controller("C3", api_max=5)),
    clients=(_mutation("A1", 0),), acls=ACLS,
    initial_controller=1, max_elections=1,
    forward_timeout=2, max_time=3, symmetric_groups=((2, 3),),
    witnesses=("mutation-acknowledged", "controller-moved", "request-timed-out",
               "connection-closed-for-renegotiation"),
)

KRAFT_REGISTRATION = ModelConfig(
    name="kraft-registration",
    description="KRaft controller registration: C1 leads and is registered, C2 starts fresh, "
                "may crash and restart with a new incarnation while its old registration "
                "request is still on the wire.",
    mode=KRAFT, nodes=(_controller("C1"), _controller("C2")), clients=(), acls=ACLS,
    registration=True, initial_controller=0, initially_registered=(0,),
    max_crashes=1, max_restarts=1, registration_timeout=1, max_time=3,
    witnesses=("controller-registered", "restarted-controller-registered",
               "stale-registration-repaired", "registration-timed-out"),
)

KRAFT_LISTENERS = ModelConfig(
    name="kraft-listeners",
    description="KIP-103/KIP-919 listeners: B1 has CLIENT and INTERNAL listeners, B2 only "
                "INTERNAL; controllers C1 (registered leader) and C2 (registering) have "
                "CONTROLLER; clients DescribeCluster brokers and controllers, one to the "
                "wrong endpoint type, one without ALTER on the cluster.",
    mode=KRAFT,
    nodes=(_broker("B1"), _broker("B2", listeners=(INTERNAL,)), _controller("C1"),
           _controller("C2")),
    clients=(_describe("D1", 0, kafka.ENDPOINT_BROKER, "CLIENT"),
             _describe("D2", 2, kafka.ENDPOINT_CONTROLLER, "CONTROLLER"),
             _describe("D3", 0, kafka.ENDPOINT_CONTROLLER, "CLIENT"),
             _describe("D4", 2, kafka.ENDPOINT_CONTROLLER, "CONTROLLER", principal="user")),
    acls=ACLS, registration=True, initial_controller=2, initially_registered=(2,),
    witnesses=("describe-lists-brokers", "describe-lists-controllers",
               "describe-lists-registered-controller-late", "mismatched-endpoint-type",
               "describe-denied"),
)

ZK_ENVELOPE_SECURITY = ModelConfig(
    name="zk-envelope-security",
    description="ZK envelope trust boundary: B1 is controller; U1 (no ACLs) forwards through "
                "B2; A1 forwards through B3, whose principal lacks CLUSTER_ACTION; F1 writes "
                "its own EnvelopeRequest on B1's client listener with leaked broker "
                "credentials, claiming to be admin.",
    mode=ZK,
    nodes=(_broker("B1"), _broker("B2"), _broker("B3", principal="broker-b3")),
    clients=(_mutation("U1", 1, principal="user"), _mutation("A1", 2),
             ClientSpec("F1", "broker", FORGED_ENVELOPE, 0, "CLIENT", kafka.CREATE_TOPICS,
                        claimed_principal="admin")),
    acls=ACLS, initial_controller=0,
    witnesses=("mutation-denied", "envelope-rejected-cluster-authorization",
               "forged-envelope-refused"),
)

KRAFT_REGISTRATION_LEADER_LOSS = ModelConfig(
    name="kraft-registration-leader-loss",
    description="KRaft controller registration when the leader is lost for good: C1 leads and "
                "is registered, C2 starts fresh and registers; C1 may crash and never come "
                "back (no election, no restart), so C2's registration can only time out.",
    mode=KRAFT, nodes=(_controller("C1"), _controller("C2")), clients=(), acls=ACLS,
    registration=True, initial_controller=0, initially_registered=(0,),
    max_crashes=1, registration_timeout=1, max_time=2,
    witnesses=("controller-registered", "registration-timed-out"),
)

# -- tiny configurations that reach the branches the ones above leave out (kipcheck branches) -

ZK_CONTROLLER_CRASH = ModelConfig(
    name="zk-controller-crash",
    description="ZK crashes and restarts: B1 is controller and its principal builder does not "
                "implement KafkaPrincipalSerde, so it closes every envelope connection (F-23); "
                "B2 forwards A1's CreateTopics; one node can crash and restart (B1 "
                "only once its session has expired), B1's session can expire, B2 be elected.",
    mode=ZK,
    nodes=(NodeSpec("B1", BROKER, (CLIENT, INTERNAL), "broker", principal_serde=False),
           _broker("B2")),
    clients=(_mutation("A1", 1),), acls=ACLS,
    initial_controller=0, max_elections=1, max_session_expiries=1, max_crashes=1,
    max_restarts=1,
    witnesses=("mutation-acknowledged", "forward-succeeds-after-not-controller",
               "request-timed-out", "controller-moved"),
)

KRAFT_MISCONFIGURED = ModelConfig(
    name="kraft-misconfigured",
    description="KRaft misconfigurations: B1's principal lacks CLUSTER_ACTION, so C1 refuses "
                "its envelope with A1's CreateTopics (F-28); C1 (leader) has no principal serde "
                "(F-29a), met by F1's own EnvelopeRequest on the controller listener; U1 (no "
                "ACLs) sends a mutation to C1 directly (D-7); C2's principal lacks "
                "CLUSTER_ACTION, so its registration is refused (R-12) and it backs off; D1 "
                "asks C2, which may not have replayed metadata.version yet, for an unknown "
                "endpoint type (D-1.1, D-3.1); the network holds one message at a time.",
    mode=KRAFT,
    nodes=(_broker("B1", principal="broker-b3"),
           NodeSpec("C1", CONTROLLER, (CONTROLLER_L,), "broker", principal_serde=False),
           NodeSpec("C2", CONTROLLER, (CONTROLLER_L,), "broker-b3")),
    clients=(_mutation("A1", 0),
             _mutation("U1", 1, principal="user", listener="CONTROLLER"),
             ClientSpec("F1", "broker", FORGED_ENVELOPE, 1, "CONTROLLER", kafka.CREATE_TOPICS,
                        claimed_principal="admin"),
             _describe("D1", 2, kafka.ENDPOINT_UNKNOWN, "CONTROLLER")),
    acls=ACLS, registration=True, initial_controller=1, initially_registered=(1,),
    max_in_flight=1,
    witnesses=("envelope-rejected-cluster-authorization", "mutation-denied",
               "request-timed-out", "registration-timed-out"),
)

KRAFT_REGISTRATION_LEADER_CHANGE = ModelConfig(
    name="kraft-registration-leader-change",
    description="KRaft registration across a leader change: C1 leads and is registered, C2 "
                "registers; C2 can be elected while its request to C1 is on the wire (C1 "
                "answers NOT_CONTROLLER and the channel retries), or C1 can crash and C2 be "
                "elected with the old leader dead.",
    mode=KRAFT, nodes=(_controller("C1"), _controller("C2")), clients=(), acls=ACLS,
    registration=True, initial_controller=0, initially_registered=(0,),
    max_crashes=1, max_elections=1, registration_timeout=1, max_time=3,
    witnesses=("controller-registered", "registration-timed-out", "controller-moved"),
)

KRAFT_FORWARDER_WITHOUT_SERDE = ModelConfig(
    name="kraft-forwarder-without-serde",
    description="KRaft forwarding from a broker configured with a principal builder that is "
                "not a KafkaPrincipalSerde: C1 leads; A1 sends CreateTopics to B1, which must "
                "wrap A1's principal in an EnvelopeRequest (F-12). KafkaConfig's startup check "
                "(KAFKA-13051) gives B1's client listener a serde, so only a variant that drops "
                "the check reaches F-12's failure.",
    mode=KRAFT,
    nodes=(NodeSpec("B1", BROKER, (CLIENT, INTERNAL), "broker", principal_serde=False),
           _controller("C1")),
    clients=(_mutation("A1", 0),), acls=ACLS, initial_controller=1,
    witnesses=("mutation-acknowledged",),
)

# -- small configurations: minutes, for nightly runs and the benchmark ----------------------

ZK_SMALL = replace(
    ZK_FORWARD_ZOMBIE, name="zk-small", tier="small",
    description="ZK with three brokers: B1 is controller; A1 forwards through B2 and A2 "
                "(IncrementalAlterConfigs) through B3; two sessions can expire, two elections.",
    nodes=(_broker("B1"), _broker("B2"), _broker("B3")),
    clients=(_mutation("A1", 1), _mutation("A2", 2, api=kafka.INCREMENTAL_ALTER_CONFIGS)),
    max_elections=2, max_session_expiries=2, max_drops=0, max_time=3,
    witnesses=("mutation-acknowledged", "zombie-write-fenced",
               "forward-succeeds-after-not-controller", "request-timed-out", "controller-moved"),
)

KRAFT_SMALL = replace(
    KRAFT_FORWARD_LEADER_CHANGE, name="kraft-small", tier="small",
    description="KRaft forwarding at scale: B1 forwards A1's CreateTopics and U1's (no ACLs) "
                "IncrementalAlterConfigs; C1 leads, C2 or C3 (older, API max v5) can take over; "
                "one message can be lost.",
    clients=(_mutation("A1", 0), _mutation("U1", 0, principal="user",
                                           api=kafka.INCREMENTAL_ALTER_CONFIGS)),
    max_elections=1, max_drops=1, max_time=3,
    witnesses=("mutation-acknowledged", "mutation-denied", "controller-moved",
               "request-timed-out", "connection-closed-for-renegotiation"),
)

# The standard small tier: every sub-protocol and every fault kind the mode has, on at once.

ZK_ALL = ModelConfig(
    name="zk-all", tier="small",
    description="ZK with everything on: B1 is controller; B2 forwards A1's "
                "IncrementalAlterConfigs; D1 asks B1 for the brokers (DescribeCluster on the "
                "client listener); one election, one session expiry, one crash, one restart, "
                "one lost message.",
    mode=ZK, nodes=(_broker("B1"), _broker("B2")),
    clients=(_mutation("A1", 1, api=kafka.INCREMENTAL_ALTER_CONFIGS),
             _describe("D1", 0, kafka.ENDPOINT_BROKER, "CLIENT")),
    acls=ACLS, initial_controller=0, max_elections=1, max_session_expiries=1, max_crashes=1,
    max_restarts=1, max_drops=1,
    witnesses=("mutation-acknowledged", "zombie-write-fenced",
               "forward-succeeds-after-not-controller", "request-timed-out", "controller-moved",
               "forward-applied-twice", "describe-lists-brokers"),
)

KRAFT_ALL = ModelConfig(
    name="kraft-all", tier="small",
    description="KRaft with everything on that fits in minutes: B1 forwards A1's CreateTopics "
                "to C1, the registered leader; D1 asks C1 for the controllers (DescribeCluster "
                "on the controller listener); one crash, one restart (C1 comes back as a new "
                "incarnation and registers again), one lost message.  No election: with a "
                "second controller the state space passes 1.5 million states.",
    mode=KRAFT, nodes=(_broker("B1"), _controller("C1")),
    clients=(_mutation("A1", 0), _describe("D1", 1, kafka.ENDPOINT_CONTROLLER, "CONTROLLER")),
    acls=ACLS, registration=True, initial_controller=1, initially_registered=(1,),
    max_crashes=1, max_restarts=1, max_drops=1,
    witnesses=("mutation-acknowledged", "request-timed-out", "forward-applied-twice",
               "forward-succeeds-after-not-controller", "restarted-controller-registered",
               "registration-timed-out", "describe-lists-controllers"),
)

KRAFT_BROKER_REGISTRATION = ModelConfig(
    name="kraft-broker-registration",
    description="KRaft broker registration: C1 leads; B2 was registered before a "
                "metadata.version upgrade and re-registers its running incarnation (BL-8), "
                "heartbeats, may crash (its session runs out and it is fenced) and restart with "
                "a new incarnation, which registers fenced and is unfenced once caught up.",
    mode=KRAFT, nodes=(_controller("C1"), _broker("B2")), clients=(), acls=ACLS,
    broker_registration=True, initial_controller=0, initially_registered_brokers=(1,),
    max_crashes=1, max_restarts=1, session_timeout=1, max_time=3,
    witnesses=("broker-reregistered-same-incarnation", "broker-unfenced",
               "broker-fenced-by-session-timeout", "restarted-broker-registered",
               "duplicate-broker-registration-refused"),
)

KRAFT_BROKER_FAILOVER = ModelConfig(
    name="kraft-broker-failover",
    description="Broker sessions across a controller failover: C1 leads, C2 can take over (one "
                "election); B3 is registered and heartbeats; one crash (B3, or C1 before C2 is "
                "elected): a broker that dies as the controller fails over must still be fenced "
                "by the new active controller (BR-13, BH-9).",
    mode=KRAFT, nodes=(_controller("C1"), _controller("C2"), _broker("B3")), clients=(),
    acls=ACLS, broker_registration=True, initial_controller=0,
    initially_registered_brokers=(2,),
    max_elections=1, max_crashes=1, session_timeout=1, max_time=2,
    witnesses=("broker-fenced-by-session-timeout",),
)

# B2's software in kraft-broker-features: its first process run predates kraft.version (the
# registration omits the feature); its restart runs upgraded software that supports it (BR-4.9)
SOFTWARE_BEFORE_KRAFT_VERSION = ((kafka.METADATA_VERSION_FEATURE, 1, 20),)
SOFTWARE_WITH_KRAFT_VERSION = ((kafka.METADATA_VERSION_FEATURE, 1, 20),
                               (kafka.KRAFT_VERSION_FEATURE, 0, 1))

KRAFT_BROKER_FEATURES = ModelConfig(
    name="kraft-broker-features",
    description="Registrations carry supported features: C1 leads with kraft.version finalized "
                "at 1; B2's first process run is older software whose registration omits "
                "kraft.version, which the active controller refuses with UNSUPPORTED_VERSION "
                "(BR-4.9 with KAFKA-17305's fix); B2 may crash and restart with upgraded "
                "software, which registers.",
    mode=KRAFT,
    nodes=(_controller("C1"), replace(_broker("B2"), software=(SOFTWARE_BEFORE_KRAFT_VERSION,
                                                                SOFTWARE_WITH_KRAFT_VERSION))),
    clients=(), acls=ACLS, broker_registration=True, initial_controller=0,
    finalized_features=((kafka.KRAFT_VERSION_FEATURE, 1),),
    # B2's old software retries its refused registration for ever (BL-5): a second crash lets
    # it stop where C1's crash and restart took the one restart
    max_crashes=2, max_restarts=1, session_timeout=1, max_time=2,
    witnesses=("broker-registration-refused-unsupported-features",
               "restarted-broker-registered"),
)

KRAFT_BROKER_FEATURES_V0 = ModelConfig(
    name="kraft-broker-features-v0",
    description="Supported ranges that start at 0: C1 leads with kraft.version finalized at 0 "
                "(a static quorum); B2's software supports kraft.version 0..1, so it registers "
                "(BR-4.9) and is unfenced; no faults.",
    mode=KRAFT,
    nodes=(_controller("C1"), replace(_broker("B2"), software=(SOFTWARE_WITH_KRAFT_VERSION,))),
    clients=(), acls=ACLS, broker_registration=True, initial_controller=0,
    finalized_features=((kafka.KRAFT_VERSION_FEATURE, 0),),
    max_crashes=0, max_restarts=0, session_timeout=1, max_time=2,
    witnesses=("broker-unfenced",),
)

# advertised as configured with a blank host and port 0: resolved and bound anew by each
# process run (EP-1..EP-5)
CONTROLLER_EPHEMERAL = Listener("CONTROLLER", "SSL", CONTROLLER_LISTENER, host=WILDCARD_HOST,
                                port=0)
CLIENT_EPHEMERAL = Listener("CLIENT", "SASL_SSL", CLIENT_LISTENER, host=WILDCARD_HOST, port=0)

KRAFT_CONTROLLER_ENDPOINTS = ModelConfig(
    name="kraft-controller-endpoints",
    description="KIP-919 registrations carry endpoints: C1 leads and is registered; C2 "
                "advertises CONTROLLER with a blank host and port 0, so each of its process "
                "runs binds its own port and registers it; C2 may crash and restart; D1 asks "
                "C1 for the controllers and may be told C2's old endpoint or its new one.",
    mode=KRAFT,
    nodes=(_controller("C1"), NodeSpec("C2", CONTROLLER, (CONTROLLER_EPHEMERAL,), "broker")),
    clients=(_describe("D1", 0, kafka.ENDPOINT_CONTROLLER, "CONTROLLER"),), acls=ACLS,
    registration=True, initial_controller=0, initially_registered=(0,),
    max_crashes=1, max_restarts=1, registration_timeout=1, max_time=1,
    witnesses=("describe-lists-registered-controller-late", "describe-lists-stale-endpoint",
               "describe-lists-restarted-endpoint"),
)

KRAFT_BROKER_ENDPOINTS = ModelConfig(
    name="kraft-broker-endpoints",
    description="Brokers answer DescribeCluster from their registrations: C1 leads; B2 "
                "advertises CLIENT with a blank host and port 0, registers (fenced until it has "
                "caught up), may crash and restart (a new incarnation, a new port, registered "
                "once the old session has run out); D1 asks B2 for the brokers on CLIENT; the "
                "network holds one message at a time.",
    mode=KRAFT,
    nodes=(_controller("C1"), NodeSpec("B2", BROKER, (CLIENT_EPHEMERAL, INTERNAL), "broker")),
    clients=(_describe("D1", 1, kafka.ENDPOINT_BROKER, "CLIENT"),), acls=ACLS,
    broker_registration=True, initial_controller=0,
    max_crashes=1, max_restarts=1, session_timeout=1, max_time=2, max_in_flight=1,
    witnesses=("describe-lists-brokers", "describe-lists-stale-endpoint",
               "describe-lists-restarted-endpoint"),
)

ZK_BROKER_REGISTRATION = ModelConfig(
    name="zk-broker-registration",
    description="ZooKeeper broker registration: B1 is controller, B1 and B2 are registered in "
                "/brokers/ids; an operator may update one broker's advertised listeners and "
                "one session may expire (its ephemeral znode goes, the broker re-registers "
                "with the BrokerInfo its KafkaController holds); D1 asks B1 for the brokers on "
                "CLIENT.",
    mode=ZK, nodes=(_broker("B1"), _broker("B2")),
    clients=(_describe("D1", 0, kafka.ENDPOINT_BROKER, "CLIENT"),), acls=ACLS,
    initial_controller=0, zk_broker_registration=True, max_session_expiries=1,
    max_listener_updates=1,
    witnesses=("describe-lists-brokers", "zk-broker-reregistered", "zk-broker-listeners-updated"),
)

# a ZK broker of a migration also has the controller listener, to reach the KRaft controller
# (controller.listener.names, L-24; MG-2)
def _migrating_broker(name):
    return _broker(name, listeners=(CLIENT, INTERNAL, CONTROLLER_L))


def _iac(name, node):
    return _mutation(name, node, api=kafka.INCREMENTAL_ALTER_CONFIGS)


ZK_MIGRATION = ModelConfig(
    name="zk-migration",
    description="ZK-to-KRaft migration: B1 is the ZK controller, B2 forwards (IBP 3.4+), C3 "
                "is the KRaft controller and may claim /controller; A1 sends "
                "IncrementalAlterConfigs to B2, which forwards it only once its metadata "
                "cache names the KRaft controller and otherwise writes the config itself "
                "after reading /controller; B1's session may expire and B2 be elected before "
                "the KRaft controller claims /controller.",
    mode=ZK, nodes=(_migrating_broker("B1"), _migrating_broker("B2"), _controller("C3")),
    clients=(_iac("A1", 1),), acls=ACLS, initial_controller=0, migration=True,
    max_session_expiries=1, max_elections=1,
    witnesses=("kraft-controller-claimed-zk", "zk-controller-deposed-by-kraft",
               "mutation-forwarded-to-kraft-controller", "entity-config-written-by-broker",
               "entity-config-refused-kraft-controller"),
)

ZK_MIGRATION_BOUNCE = ModelConfig(
    name="zk-migration-bounce",
    description="KIP-590's two-bounce upgrade in a migration: B1 is the ZK controller, B2 still "
                "runs the old IBP (it writes ZooKeeper itself) until an operator bounces it "
                "with the new one; C3 is the KRaft controller; A1 sends CreateAcls to B2.",
    mode=ZK, nodes=(_migrating_broker("B1"), _migrating_broker("B2"), _controller("C3")),
    clients=(_mutation("A1", 1, api=kafka.CREATE_ACLS),), acls=ACLS, initial_controller=0,
    migration=True, legacy_ibp_brokers=(1,),
    witnesses=("kraft-controller-claimed-zk", "broker-bounced-to-forwarding",
               "mutation-forwarded-to-kraft-controller", "mutation-acknowledged"),
)

def _find_coordinator(name, node, principal="admin"):
    return ClientSpec(name, principal, FIND_COORDINATOR, node, "CLIENT", kafka.FIND_COORDINATOR)


def _metadata(name, node, topic, principal="admin"):
    return ClientSpec(name, principal, METADATA, node, "CLIENT", kafka.METADATA, topic=topic)


KRAFT_INTERNAL_TOPICS = ModelConfig(
    name="kraft-internal-topics",
    description="Topics created for requests that need them: C1 leads; F1 and F2 ask B2 for a "
                "group coordinator, so B2 creates __consumer_offsets through C1 as itself; M1 "
                "asks B2 for the metadata of 'orders' with auto-creation, which B2 sends to "
                "C1 in an Envelope, and the create-topic policy refuses 'orders'.",
    mode=KRAFT, nodes=(_controller("C1"), _broker("B2")),
    clients=(_find_coordinator("F1", 1), _find_coordinator("F2", 1),
             _metadata("M1", 1, "orders")),
    acls=ACLS, initial_controller=0, internal_topics=True, create_topic_policy=("orders",),
    max_time=2,
    witnesses=("internal-topic-created", "coordinator-not-available", "coordinator-found",
               "auto-creation-refused-by-policy"),
)

KRAFT_METADATA_LEADERS = ModelConfig(
    name="kraft-metadata-leaders",
    description="Metadata for partitions led elsewhere (L-27, L-28): C1 leads; 'orders' is led "
                "by B3, which has CLIENT, and 'audit' by B4, which has only INTERNAL; M1 and M2 "
                "ask B2 on CLIENT for the metadata of 'orders' and 'audit', and B2 forwards A1's "
                "CreateTopics to C1; one node can crash and restart. A leader that is up with "
                "the listener is listed, one up without it is LISTENER_NOT_FOUND, one that is "
                "down is LEADER_NOT_AVAILABLE.",
    mode=KRAFT, nodes=(_controller("C1"), _broker("B2"), _broker("B3"),
                       _broker("B4", listeners=(INTERNAL,))),
    clients=(_metadata("M1", 1, "orders"), _metadata("M2", 1, "audit"), _mutation("A1", 1)),
    acls=ACLS, initial_controller=0, internal_topics=True,
    partition_leaders=(("orders", 2), ("audit", 3)), max_crashes=1, max_restarts=1, max_time=1,
    witnesses=("partition-leader-listed", "leader-lacks-listener", "leader-not-available"),
)

KRAFT_INTERNAL_TOPICS_POLICY = ModelConfig(
    name="kraft-internal-topics-policy",
    description="The create-topic policy and internal topics: C1 leads and its policy refuses "
                "__consumer_offsets; F1 asks B2 for a group coordinator, so B2 asks C1 to "
                "create __consumer_offsets as itself; M1 asks B2 for the metadata of "
                "'payments' with auto-creation, which the policy allows.",
    mode=KRAFT, nodes=(_controller("C1"), _broker("B2")),
    clients=(_find_coordinator("F1", 1), _metadata("M1", 1, "payments")),
    acls=ACLS, initial_controller=0, internal_topics=True,
    create_topic_policy=(kafka.CONSUMER_OFFSETS,), max_time=2,
    witnesses=("internal-topic-refused-by-policy", "coordinator-not-available",
               "auto-created-topic-answered"),
)

# -- medium configurations: three nodes, two clients, a crash and a restart, registration and
# forwarding on; decided by the explorer within the hour on two cores (make test-large, the
# nightly campaign) ---------------------------------------------------------------------------

ZK_MEDIUM = ModelConfig(
    name="zk-medium", tier="medium",
    description="ZK with three brokers, registered in /brokers/ids: B1 is controller; A1's "
                "CreateTopics is forwarded by B2 and U2's (no ACLs) IncrementalAlterConfigs by "
                "B3; one "
                "broker can crash and restart, one session expire (a crashed broker's with "
                "it), one election.",
    mode=ZK, nodes=(_broker("B1"), _broker("B2"), _broker("B3")),
    clients=(_mutation("A1", 1), _mutation("U2", 2, principal="user",
                                           api=kafka.INCREMENTAL_ALTER_CONFIGS)),
    acls=ACLS, initial_controller=0, zk_broker_registration=True, max_elections=1,
    max_session_expiries=1, max_crashes=1, max_restarts=1, forward_timeout=2, max_time=2,
    witnesses=("mutation-acknowledged", "mutation-denied", "forward-succeeds-after-not-controller",
               "request-timed-out", "controller-moved", "zk-broker-reregistered"),
)

KRAFT_MEDIUM = ModelConfig(
    name="kraft-medium", tier="medium",
    description="KRaft with three controllers and a broker: C1 leads; C1, C2 and C3 are "
                "registered (KIP-919); B4 forwards A1's CreateTopics; D1 asks C1 for the "
                "controllers (DescribeCluster on the controller listener); one crash and restart "
                "(a controller comes back as a new incarnation and registers again), one "
                "election.",
    mode=KRAFT,
    nodes=(_controller("C1"), _controller("C2"), _controller("C3"), _broker("B4")),
    clients=(_mutation("A1", 3), _describe("D1", 0, kafka.ENDPOINT_CONTROLLER, "CONTROLLER")),
    acls=ACLS, registration=True, initial_controller=0, initially_registered=(0, 1, 2),
    max_elections=1, max_crashes=1, max_restarts=1, forward_timeout=1, max_time=1,
    witnesses=("mutation-acknowledged", "controller-moved", "restarted-controller-registered",
               "describe-lists-controllers"),
)

KRAFT_MEDIUM_REGISTERING = ModelConfig(
    name="kraft-medium-registering", tier="medium",
    description="KRaft with three controllers and a broker, one of them registering: C1 leads; "
                "C1 and C2 are registered; C3 starts unregistered and advertises CONTROLLER "
                "with a blank host and port 0, so each of its process runs registers the port "
                "it binds (KIP-919); B4 forwards A1's CreateTopics; D1 asks C1 for the "
                "controllers; one crash and restart, no election.",
    mode=KRAFT,
    nodes=(_controller("C1"), _controller("C2"),
           NodeSpec("C3", CONTROLLER, (CONTROLLER_EPHEMERAL,), "broker"), _broker("B4")),
    clients=(_mutation("A1", 3), _describe("D1", 0, kafka.ENDPOINT_CONTROLLER, "CONTROLLER")),
    acls=ACLS, registration=True, initial_controller=0, initially_registered=(0, 1),
    max_crashes=1, max_restarts=1, forward_timeout=1, max_time=1,
    witnesses=("mutation-acknowledged", "controller-registered",
               "restarted-controller-registered", "describe-lists-controllers",
               "describe-lists-registered-controller-late", "describe-lists-restarted-endpoint"),
)

# kraft-medium without the election, with a second crash and a second tick
KRAFT_MEDIUM_LEADER_LOSS = replace(
    KRAFT_MEDIUM, name="kraft-medium-leader-loss",
    description="KRaft with three controllers and a broker whose leader can be lost for good: "
                "C1 leads; C1, C2 and C3 are registered; B4 forwards A1's CreateTopics; D1 "
                "asks C1 for the controllers; two crashes and one restart, no election; "
                "one-tick retry timeouts and a time bound of two ticks, so a forwarded request "
                "or a restarted controller's registration can outlive its retry timeout and "
                "back off, and a controller can restart and register again while C1 is down.",
    max_elections=0, max_crashes=2, max_time=2,
    witnesses=("mutation-acknowledged", "forward-succeeds-after-not-controller",
               "request-timed-out", "forward-applied-twice", "restarted-controller-registered",
               "registration-timed-out", "describe-lists-controllers"),
)

CONFIGS = {c.name: c for c in (ZK_FORWARD_ZOMBIE, KRAFT_FORWARD_LEADER_CHANGE,
                               KRAFT_REGISTRATION, KRAFT_LISTENERS, ZK_ENVELOPE_SECURITY,
                               KRAFT_REGISTRATION_LEADER_LOSS, ZK_CONTROLLER_CRASH,
                               KRAFT_MISCONFIGURED, KRAFT_REGISTRATION_LEADER_CHANGE,
                               KRAFT_BROKER_REGISTRATION, KRAFT_CONTROLLER_ENDPOINTS,
                               KRAFT_BROKER_ENDPOINTS, ZK_BROKER_REGISTRATION,
                               ZK_MIGRATION, ZK_MIGRATION_BOUNCE, KRAFT_INTERNAL_TOPICS,
                               KRAFT_INTERNAL_TOPICS_POLICY, KRAFT_BROKER_FEATURES,
                               KRAFT_BROKER_FAILOVER, KRAFT_BROKER_FEATURES_V0,
                               KRAFT_FORWARDER_WITHOUT_SERDE, KRAFT_METADATA_LEADERS,
                               ZK_MEDIUM, KRAFT_MEDIUM, KRAFT_MEDIUM_REGISTERING,
                               KRAFT_MEDIUM_LEADER_LOSS,
                               ZK_SMALL, KRAFT_SMALL, ZK_ALL, KRAFT_ALL)}
TINY = tuple(name for name, c in CONFIGS.items() if c.tier == "tiny")
SMALL = tuple(name for name, c in CONFIGS.items() if c.tier == "small")
MEDIUM = tuple(name for name, c in CONFIGS.items() if c.tier == "medium")
