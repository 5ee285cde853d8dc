"""What a simulated cluster is made of: nodes with their Kafka properties, admin clients with
their one request, ACLs and the timeouts.  Plain data, so a conformance adapter or a test can
build one without knowing the servers.

Node properties are real ``server.properties`` entries (``listeners``,
``listener.security.protocol.map``, ``process.roles``...), validated by ``impl.config`` at
start-up exactly as a Kafka server would (L-0..L-27).
"""
from __future__ import annotations

from dataclasses import dataclass, field

ZK_MODE, KRAFT_MODE = "zk", "kraft"
MUTATION, DESCRIBE, FORGED_ENVELOPE = "mutation", "describe", "forged_envelope"
# a consumer's FindCoordinator for its group, a Metadata request with AllowAutoTopicCreation:
# both may make a KRaft broker create a topic (AT-1, AT-2)
FIND_COORDINATOR, METADATA = "find_coordinator", "metadata"

# Kafka's defaults (docs/rules.md section 6)
KRAFT_FORWARD_RETRY_TIMEOUT_MS = 60_000      # BrokerServer's forwarding channel (F-17)
ZK_REQUEST_TIMEOUT_MS = 30_000               # request.timeout.ms (F-17 on a ZK broker)
REGISTRATION_RETRY_TIMEOUT_MS = 5_000        # ControllerRegistrationManager's channel


@dataclass(frozen=True)
class NodeConfig:
    node_id: int
    name: str                   # "B1", "C2"
    role: str                   # "broker" | "controller"
    properties: tuple           # ((key, value), ...) as in server.properties
    principal: str              # the principal it authenticates as (User:<principal>)
    api_max: tuple = ()         # ((api_key, max version it parses), ...) below the schemas' max
    principal_serde: bool = True
    # a KRaft broker's supported features per process run (run i runs entry i, the last entry
    # every later run: a rolling upgrade), each ((name, min, max), ...): its
    # BrokerRegistrationRequest's Features (BL-4, BR-4.9); () -- the software's defaults
    software: tuple = ()

    def features(self, run: int) -> dict | None:
        """The supported features of process run ``run``, name -> (min, max), or None."""
        if not self.software:
            return None
        return {name: (lo, hi) for name, lo, hi in self.software[min(run, len(self.software) - 1)]}

    def props(self) -> dict:
        return dict(self.properties)


@dataclass(frozen=True)
class ClientConfig:
    name: str                   # also the client.id, and names its topic ("topic-<name>")
    principal: str
    kind: str                   # MUTATION, DESCRIBE, FORGED_ENVELOPE, FIND_COORDINATOR, METADATA
    node_id: int                # bootstrap node
    listener: str
    api_key: int
    endpoint_type: int = 1      # DescribeCluster v1 EndpointType (1 broker, 2 controller)
    claimed_principal: str = ""
    # METADATA: the topic it asks for (default "topic-<name>"); FIND_COORDINATOR's group is
    # "group-<name>"
    topic: str = ""

    @property
    def topic_name(self) -> str:
        return self.topic or f"topic-{self.name}"


@dataclass(frozen=True)
class ClusterConfig:
    name: str
    mode: str                   # ZK_MODE | KRAFT_MODE
    nodes: tuple                # tuple[NodeConfig]
    clients: tuple              # tuple[ClientConfig]
    acls: frozenset             # frozenset[(principal, operation)]
    metadata_version: int = 15
    # the finalized kraft.version (the Raft client's, KIP-853): a broker registration must
    # support it, an omitted kraft.version counting as [0, 0] (BR-4.9, KAFKA-17305)
    kraft_version: int = 0
    initial_controller: int | None = 0
    # topics that exist from the start, with the broker leading their one partition: (topic
    # name, leader node id) pairs (L-28)
    partition_leaders: tuple = ()
    initially_registered: tuple = ()
    registration: bool = False
    # KRaft brokers run a BrokerLifecycleManager and the active controller a
    # ClusterControlManager (BR-*, BH-*, BL-*); broker.session.timeout.ms and
    # broker.heartbeat.interval.ms come from each node's properties (BH-1)
    broker_registration: bool = False
    # brokers registered (unfenced, broker epoch = the record's offset) in the initial log, whose
    # running process has been asked to register again (BL-8)
    initially_registered_brokers: tuple = ()
    # ZK brokers register /brokers/ids/<id> with their advertised endpoints (at start-up, again
    # after every session expiry, rewritten by a dynamic listener update) and answer
    # DescribeCluster from those registrations (ZB-1..ZB-10)
    zk_broker_registration: bool = False
    zk_forwarding: bool = True
    # ZK-to-KRaft migration (MG-1..MG-7): the nodes with role "controller" are KRaft
    # controllers next to the ZK brokers (``impl.zk_migration``), which may claim /controller
    # and then take the brokers' forwarded mutations, dual-writing them to ZooKeeper; a ZK
    # broker forwards IncrementalAlterConfigs only to a KRaft controller (F-6) and writes it
    # itself otherwise (MG-6).  Whether a broker forwards at all is its own server.properties'
    # business (F-4: migration enabled and inter.broker.protocol.version >= 3.4-IV0)
    migration: bool = False
    forward_retry_timeout_ms: int = KRAFT_FORWARD_RETRY_TIMEOUT_MS
    registration_retry_timeout_ms: int = REGISTRATION_RETRY_TIMEOUT_MS
    request_timeout_ms: int = ZK_REQUEST_TIMEOUT_MS
    tick_ms: int = 1_000        # how far the clock moves per "clock ticks" event
    max_time_ms: int | None = None
    max_in_flight: int | None = None    # network capacity (messages in flight), None: unbounded
    bugs: frozenset = field(default_factory=frozenset)   # injected implementation bugs (tests)

    def node(self, node_id: int) -> NodeConfig:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(node_id)
