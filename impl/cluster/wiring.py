"""The wiring of the simulated cluster: each node's process started with Kafka's parts and bound
to the simulator's network (``impl/sim.py``).

- ``Node``: one process -- its ``server.properties`` validated by ``impl.config`` (L-0..L-27),
  listeners bound to addresses, its role, its process runs, and the parts below;
- ``Conn``: one connection between two nodes on a listener, as a principal, within one process
  run of each end;
- ``Acls``: the ACL bindings as ``AclAuthorizer``/``StandardAuthorizer`` see them;
- ``ClusterWiring``: start-up, what ``KafkaServer`` (ZK), ``BrokerServer`` and
  ``ControllerServer`` wire together: a broker's ``ControllerChannel``
  (``NodeToControllerChannelManager``, reaching the controller on the listener of L-29) with its
  ``ForwardingManager`` (F-1..F-21) -- on a KRaft broker also its
  ``AutoTopicCreationManager`` (``impl/auto_topics``, AT-3, AT-4) -- and, in ZK mode, the
  ``EnvelopeReceiver`` of its ``KafkaApis`` (F-22..F-27) over the shared ZooKeeper
  (``impl/zk_controller``); a KRaft controller's ``QuorumController`` over the shared
  ``RaftQuorum`` (``impl/kraft``) with its ``create.topic.policy.class.name``, its
  ``EnvelopeReceiver`` (F-28..F-30) and its ``ControllerRegistrationManager`` (R-1..R-22) on its
  own channel; the API versions each node parses (F-35);
- with KRaft broker registration on: each KRaft broker's ``BrokerLifecycleManager`` (BL-1..BL-12,
  a fresh incarnation per process run; a broker registered in the initial log starts holding
  its broker epoch, asked to register again, BL-8) and each controller's
  ``ClusterControlManager`` (BR-*, BH-*), the leader's activated at start (BR-13); both read
  ``broker.session.timeout.ms`` and ``broker.heartbeat.interval.ms`` from the node's
  ``server.properties`` (BH-1).

Every process run binds its listeners (``_bind_listeners``): a port-0 listener gets a fresh
port from a per-cluster counter, as from the operating system (EP-5).  A KRaft node registers
its advertised listeners as that run resolved them at start-up -- a blank host becomes the
node's canonical host name, port 0 the port the run bound (EP-1, EP-3, EP-4) -- so each run of
a node with an ephemeral port registers its own endpoint; the bug
``registers-unresolved-endpoints`` registers them as configured (EP-6, KAFKA-15458).

Restarting a node (``node_restarts``, in ``steps``) goes through the same start-up code.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from impl import config as listener_config
from impl.broker_registration import (MV_3_7_IV2, ClusterControlManager,
                                      register_broker_record,
                                      register_broker_record_version)
from impl.auto_topics import AutoTopicCreationManager, create_topic_policy
from impl.channel import ControllerChannel, own_api_ranges
from impl.cluster_config import KRAFT_MODE, ClientConfig, ClusterConfig, NodeConfig
from impl.context import ControllerInfo
from impl.forwarding import KRAFT_CONTROLLER, ZK_BROKER, EnvelopeReceiver, ForwardingManager
from impl.kraft import ClusterAuthorizer, QuorumController, RaftQuorum, register_controller_record
from impl.protocol.api_keys import INCREMENTAL_ALTER_CONFIGS
from impl.lifecycle import (BROKER_HEARTBEAT_INTERVAL_MS, BROKER_SESSION_TIMEOUT_MS,
                            BrokerLifecycleManager, broker_listener_info)
from impl.protocol.principal import KafkaPrincipal
from impl.registration import ControllerRegistrationManager, listener_info
from impl.sim import Network
from impl.zk_controller import (CHECK_CONTROLLER_DATA_VERSION, CHECK_CONTROLLER_EPOCH,
                                 DEFAULT_INTER_BROKER_PROTOCOL_VERSION, BrokerInfo, KafkaZkClient,
                                 ZkCluster, config_mutation, create_broker_info,
                                 is_api_forwarding_enabled)

# ``ClusterConfig.bugs`` this cluster honours besides ``skip-check-op`` (the ZK controller writes
# without the CheckOp, Z-2): Kafka's shipped ControllerRegistrationManager logic where the
# reference implementation's default is the proposed fix.  The name is the model's variant
# (``--variant``), so a cluster with the bug is the implementation of that design.
#   registration-no-recheck-after-success: a maybeSendControllerRegistration event that finds an
#   RPC pending logs "waiting for the previous RPC to complete" and is gone, and the success
#   handler only counts (ControllerRegistrationManager.scala L200-214, L238-265 at trunk
#   1eb7644349c; L201-215, L239-266 at 3.7.0 and 3.8.0); default: the check waits for the RPC
#   and runs when it completes (docs/findings/registration-no-recheck.md).
KAFKA_REGISTRATION_NO_RECHECK = "registration-no-recheck-after-success"
REGISTRATION_BUGS = {KAFKA_REGISTRATION_NO_RECHECK: "kafka_drops_check_while_pending"}

# ``ClusterConfig.bugs``: every KRaft node registers its advertised listeners as configured,
# a blank host and port 0 unresolved, and the active controller copies a controller's into its
# RegisterControllerRecord unchecked -- Kafka before KAFKA-15458 (EP-6; the model's variant of
# that name).  A broker's are still refused (BR-4.8).  Default: resolved at start-up (EP-1).
REGISTERS_UNRESOLVED_ENDPOINTS = "registers-unresolved-endpoints"

# ``ClusterConfig.bugs`` of ZooKeeper broker registration, named after the model's variants, and
# the ``ZkBroker`` switch each turns on:
#   broker-info-not-cached: a dynamic listener update writes /brokers/ids/<id> but leaves
#   KafkaController's brokerInfo, which a session expiry re-registers (before KAFKA-6573);
#   broker-info-update-races-registration: the update does not wait for a registration on its
#   way to ZooKeeper (Kafka's config thread against its controller event thread, ZB-10).
BROKER_INFO_NOT_CACHED = "broker-info-not-cached"
BROKER_INFO_UPDATE_RACES_REGISTRATION = "broker-info-update-races-registration"
ZK_REGISTRATION_BUGS = {BROKER_INFO_NOT_CACHED: "broker_info_not_cached",
                        BROKER_INFO_UPDATE_RACES_REGISTRATION:
                            "broker_info_update_races_registration"}

# ``ClusterConfig.bugs`` of the ZK-to-KRaft migration, named after the model's variants:
#   claims-before-brokers-ready: the KRaft controller's migration driver claims /controller
#   without waiting for every ZK broker to register with it (WAIT_FOR_BROKERS skipped), so a
#   broker still on an IBP below 3.4-IV0 goes on writing ZooKeeper itself (MG-1, MG-5);
#   entity-config-write-unchecked: a ZK broker writes an entity config with no /controller
#   check, only "some /controller exists" (before KAFKA-16539, T-11);
#   entity-config-check-passes-recreated-controller: Kafka 3.8.0's setOrCreateEntityConfigs,
#   whose CheckOp compares /controller's dataVersion -- 0 again once the KRaft controller's
#   claim re-created it (MG-7; docs/findings/entity-config-check-aba.md).  Default: the fixed
#   design, which also checks the /controller_epoch zkVersion read before /controller.
CLAIMS_BEFORE_BROKERS_READY = "claims-before-brokers-ready"
ENTITY_CONFIG_WRITE_UNCHECKED = "entity-config-write-unchecked"
ENTITY_CONFIG_CHECK_PASSES_RECREATED_CONTROLLER = "entity-config-check-passes-recreated-controller"
MIGRATION_BUGS = (CLAIMS_BEFORE_BROKERS_READY, ENTITY_CONFIG_WRITE_UNCHECKED,
                  ENTITY_CONFIG_CHECK_PASSES_RECREATED_CONTROLLER)

# ``ClusterConfig.bugs`` of the topics requests need (AT-1..AT-5), named after the model's
# variants:
#   internal-topics-bypass-policy: the active controller does not run
#   create.topic.policy.class.name for a CreateTopicsRequest a broker sends as itself (the
#   internal topic of a FindCoordinator), the hole KIP-590 names in ZooKeeper brokers' direct
#   creation (``QuorumController(internal_topics_bypass_policy=True)``);
#   auto-create-errors-only-logged: Kafka 3.8.0's AutoTopicCreationManager, which answers a
#   Metadata request's auto-creation UNKNOWN_TOPIC_OR_PARTITION at once and only logs the
#   controller's answer (AutoTopicCreationManager.scala L171-187, L216-221;
#   docs/findings/auto-create-errors-only-logged.md).  Default: the policy runs on every
#   creation and the broker waits for the controller's answer, as KIP-590 says.
INTERNAL_TOPICS_BYPASS_POLICY = "internal-topics-bypass-policy"
AUTO_CREATE_ERRORS_ONLY_LOGGED = "auto-create-errors-only-logged"
AUTO_TOPIC_BUGS = (INTERNAL_TOPICS_BYPASS_POLICY, AUTO_CREATE_ERRORS_ONLY_LOGGED)

# ``ClusterConfig.bugs``: the active controller checks only the features a broker registration
# lists, so a broker whose software omits kraft.version registers although it is finalized --
# Kafka 3.8.0, before KAFKA-17305 (BR-4.9; the model's variant of that name).  Default: an
# omitted finalized feature counts as [0, 0].
REGISTRATION_IGNORES_OMITTED_FEATURES = "registration-ignores-omitted-features"

# ``ClusterConfig.bugs``: a controller that becomes active tracks no contact time for the
# brokers already registered, so its fence timer never fences one that stops heartbeating --
# Kafka before KAFKA-18138's fix (BR-13; the model's variant of that name).  Default: every
# registered broker's session starts at activation.
ACTIVATION_LEAVES_SESSIONS_UNTRACKED = "activation-leaves-sessions-untracked"

# ``ClusterConfig.bugs``: a KRaft controller that is not active answers a client's write (a
# forwarded mutation) with UNKNOWN_SERVER_ERROR instead of NOT_CONTROLLER -- Kafka before
# KAFKA-14167's fix (the model's variant of that name).  Default: NOT_CONTROLLER (R-13), which
# the forwarder retries (F-34).
NOT_CONTROLLER_WRAPPED_AS_UNKNOWN = "not-controller-wrapped-as-unknown"

# the inter.broker.protocol.version an operator's second rolling bounce sets (MG-1)
MIGRATION_INTER_BROKER_PROTOCOL_VERSION = "3.7-IV0"

# the operator's dynamic listener update number v advertises every listener at its configured
# port + v * DYNAMIC_PORT_STEP (a port-0 listener keeps port 0 under a host of its own per update)
DYNAMIC_PORT_STEP = 1000

# the cluster id every broker registers with and every controller expects (BR-4.2)
CLUSTER_ID = "kipcheck-cluster"

# where the ports the simulated operating system hands out for port-0 listeners start (Linux's
# ip_local_port_range); one counter per cluster, so that every process run binds a fresh port
EPHEMERAL_PORT_BASE = 32768


def canonical_host_name(node_name: str) -> str:
    """``InetAddress.getLocalHost().getCanonicalHostName()`` on the machine of node
    ``node_name``: what a blank advertised host resolves to (EP-3)."""
    return f"{node_name.lower()}.kipcheck.test"


class Acls:
    """The ACLs as Kafka bindings (principal, operation, resource type), with the implied
    operations of ``AclAuthorizer``/``StandardAuthorizer`` for CLUSTER (``ClusterAuthorizer``)."""

    def __init__(self, bindings):
        self.bindings = frozenset(bindings)
        grants = {}
        for principal, op, rtype in self.bindings:
            if rtype == "CLUSTER":
                grants.setdefault(f"User:{principal}", set()).add(op)
        self.cluster = ClusterAuthorizer(grants)

    def allows(self, principal: KafkaPrincipal, operation: str, resource_type: str) -> bool:
        if resource_type == "CLUSTER":
            return self.cluster.authorize(principal, operation)
        return (principal.name, operation, resource_type) in self.bindings

    def __call__(self, principal, operation, resource) -> bool:      # forwarding's Authorizer
        rtype = resource[0] if isinstance(resource, tuple) else str(resource)
        return self.allows(principal, operation, rtype.upper())


@dataclass
class Conn:
    """One connection: who opened it, to which node and listener, as which principal, in
    which process runs of both ends (a restart of either end closes it)."""
    id: str
    src: int
    dst: int
    listener: str
    purpose: str                # "forwarding" | "registration" | "heartbeat" (BL-3)
    principal: str
    src_run: int
    dst_run: int


@dataclass
class Node:
    spec: NodeConfig
    listeners: object           # impl.config.ListenerConfig
    role: str                   # "broker" | "controller"
    alive: bool = True
    run: int = 0                # process runs so far - 1
    channel: ControllerChannel | None = None
    forwarding: ForwardingManager | None = None
    registration: ControllerRegistrationManager | None = None
    qc: QuorumController | None = None
    known_controller: int = -1  # KRaft broker metadata cache (ZK: ZkBroker.known_controller)
    receiver: EnvelopeReceiver | None = None
    # a KRaft broker's AutoTopicCreationManager, on its forwarding channel (AT-3, AT-4)
    auto_topics: AutoTopicCreationManager | None = None
    # KRaft broker registration: a broker's manager (this process run's) and a controller's
    # ClusterControlManager (active while it leads)
    lifecycle: BrokerLifecycleManager | None = None
    cluster_control: ClusterControlManager | None = None
    incarnations: list = field(default_factory=list)
    # per process run: the port each bound listener got (``SocketServer.boundPort``, EP-5):
    # the configured one, or for port 0 one the operating system chose for that run
    bound_ports: list = field(default_factory=list)
    # per version of its listeners configuration (0: server.properties, then one per dynamic
    # update, kept across restarts as Kafka keeps them in /config/brokers/<id>): its
    # ``effectiveAdvertisedListeners`` (impl.config.Endpoint tuples)
    listener_versions: list = field(default_factory=list)

    @property
    def listeners_version(self) -> int:
        return len(self.listener_versions) - 1


class ClusterWiring:
    """The nodes of a ``ClusterConfig`` started and wired to one ``Network``, and the state the
    steps and the observations share (the clock, the clients' results, the connections)."""

    def __init__(self, config: ClusterConfig, seed: int = 0):
        self.config = config
        self.seed = seed
        self.rng = random.Random(seed)
        self.now_ms = 0
        self.network = Network()
        self.acls = Acls(config.acls)
        self.kraft = config.mode == KRAFT_MODE
        self.bugs = config.bugs
        self.nodes: dict[int, Node] = {}
        self.clients: dict[str, ClientConfig] = {c.name: c for c in config.clients}
        self.sent: set = set()
        self.results: dict[str, list] = {c.name: [] for c in config.clients}
        self.conns: dict[str, Conn] = {}
        self.closed: set = set()        # connection ids closed (a reply on one is lost)
        self._generation: dict = {}     # (src, dst, listener, purpose) -> connections opened
        self._zk_waiters: dict = {}     # (ZK controller, client id) -> who waits for the write
        self._origin: dict = {}         # (connection, correlation id) -> what the request was
        self._request_of: dict = {}     # response message id -> what its request was
        self._views: dict = {}          # message id -> (message, its view), those in flight
        self._sent_on: dict = {}        # (node, run, correlation id) -> connection id
        self._correlation: dict = {}    # (node, run) -> the heartbeat channel's last id
        # TopicId -> the principal a controller created the topic as, for the TopicRecords of
        # brokers' own CreateTopicsRequests (what the controller's request log shows)
        self._created_as: dict = {}
        self.budget = None                           # fault budget for free-running runs
        self.unresolved_endpoints = REGISTERS_UNRESOLVED_ENDPOINTS in self.bugs
        self._next_ephemeral_port = EPHEMERAL_PORT_BASE
        for spec in config.nodes:
            props = spec.props()
            lc = listener_config.validate(props)
            self.nodes[spec.node_id] = Node(spec, lc, spec.role,
                                            listener_versions=[lc.advertised_broker_listeners])
            self._bind_listeners(spec.node_id)
        if self.kraft:
            self._start_kraft()
        else:
            self._start_zk()

    # ==== start-up ================================================================================

    def _api_ranges(self, node_id: int) -> dict:
        ranges = own_api_ranges()
        for key, hi in self.nodes[node_id].spec.api_max:
            if key in ranges:
                lo = ranges[key][0]
                ranges[key] = (lo, min(hi, ranges[key][1]))
        return ranges

    # ---- endpoints (EP-1..EP-5) ------------------------------------------------------------------

    def _bind_listeners(self, node_id: int) -> dict:
        """A process run of ``node_id`` starts its ``SocketServer``: each bound listener gets its
        configured port, a port-0 listener a fresh one from the operating system (the acceptor
        opens its socket in its constructor, so the port is known before anything registers,
        EP-5).  Recorded per run."""
        node = self.nodes[node_id]
        ports = {}
        for e in node.listeners.bound_listeners:
            if e.port != 0:
                ports[e.listener_name] = e.port
            else:
                ports[e.listener_name] = self._next_ephemeral_port
                self._next_ephemeral_port += 1
        node.bound_ports.append(ports)
        return ports

    def canonical_host(self, node_id: int) -> str:
        return canonical_host_name(self.nodes[node_id].spec.name)

    def resolved_endpoints(self, node_id: int, run: int | None = None) -> dict:
        """Listener name -> (host, port) of the node's advertised listeners (broker and
        controller ones) as process run ``run`` (default: the current one) resolved them."""
        node = self.nodes[node_id]
        run = node.run if run is None else run
        lc = node.listeners
        out = {}
        for listener in listener_info(lc.advertised_broker_listeners
                                      + lc.advertised_controller_listeners,
                                      self.canonical_host(node_id), node.bound_ports[run]):
            out.setdefault(listener["Name"], (listener["Host"], listener["Port"]))
        return out

    def endpoint_listener(self, node_id: int, host: str, port: int) -> str | None:
        """The listener of ``node_id`` whose endpoint is ``host:port``: a bound listener as
        configured (a blank host and ``""`` alike), or an advertised listener as one of the
        node's process runs resolved it."""
        node = self.nodes.get(node_id)
        if node is None:
            return None
        for e in node.listeners.bound_listeners + node.listeners.advertised_listeners:
            if ((e.host or ""), e.port) == ((host or ""), port):
                return e.listener_name
        for run in range(len(node.bound_ports)):
            for name, address in self.resolved_endpoints(node_id, run).items():
                if address == (host, port):
                    return name
        for endpoints in node.listener_versions[1:]:
            for e in endpoints:
                if self._advertises(node_id, e, host, port):
                    return e.listener_name
        return None

    def _advertises(self, node_id: int, e, host: str, port: int) -> bool:
        """Whether advertised endpoint ``e`` of ``node_id`` is ``host:port`` as the broker
        resolves it (ZB-2: a blank host is the canonical host name, port 0 a port one of its
        process runs bound)."""
        node = self.nodes[node_id]
        resolved_host = e.host if (e.host or "").strip() else self.canonical_host(node_id)
        if resolved_host != host:
            return False
        return e.port == port or (e.port == 0 and any(
            ports.get(e.listener_name) == port for ports in node.bound_ports))

    def advertised_version(self, node_id: int, listener: str, host: str, port: int) -> int | None:
        """The version of ``node_id``'s listeners configuration (0: as started, then one per
        dynamic update) whose advertised ``listener`` is ``host:port``; None: none."""
        node = self.nodes.get(node_id)
        if node is None:
            return None
        for version, endpoints in enumerate(node.listener_versions):
            for e in endpoints:
                if e.listener_name == listener and self._advertises(node_id, e, host, port):
                    return version
        return None

    def ephemeral_port_run(self, node_id: int, port: int) -> int | None:
        """The process run of ``node_id`` that bound ``port`` for a port-0 listener, if any."""
        node = self.nodes.get(node_id)
        if node is None:
            return None
        ephemeral = {e.listener_name for e in node.listeners.bound_listeners if e.port == 0}
        for run, ports in enumerate(node.bound_ports):
            if any(ports.get(name) == port for name in ephemeral):
                return run
        return None

    def _controller_listener(self, node_id: int) -> str:
        """L-29: brokers reach the controller on its controller listener (KRaft, and a KRaft
        controller of a migration, MG-2) or on its privileged inter-broker listener (ZK)."""
        lc = self.nodes[node_id].listeners
        if self.kraft or self.nodes[node_id].role == "controller":
            return lc.controller_listener_names[0]
        return lc.privileged_listener_name

    def _zk_broker_controller_info(self, n: int) -> ControllerInfo | None:
        """``MetadataCacheControllerNodeProvider.getControllerInfo`` of ZK broker ``n`` (MG-2):
        a ``ZkCachedControllerId`` is that broker on its privileged listener; a
        ``KRaftCachedControllerId`` the Raft leader on the first of this broker's own
        ``controller.listener.names``; none: None."""
        zb = self.zkc.brokers[n]
        c = zb.known_controller
        if c < 0:
            return None
        if zb.known_controller_kraft:
            return ControllerInfo(c, self.nodes[n].listeners.controller_listener_names[0].strip())
        return self._controller_info(c)

    def api_forwarding_enabled(self, n: int) -> bool:
        """F-4, MG-1: node ``n``'s current server.properties enable API forwarding
        (``zookeeper.metadata.migration.enable`` and an IBP >= 3.4-IV0)."""
        node = self.nodes[n]
        props = node.spec.props()
        return is_api_forwarding_enabled(
            node.listeners.migration_enabled,
            props.get("inter.broker.protocol.version", DEFAULT_INTER_BROKER_PROTOCOL_VERSION))

    def zk_brokers_registered_with_kraft(self) -> bool:
        """The KRaft controller's WAIT_FOR_BROKERS test: every ZK broker has registered with
        it -- which a ZK broker's BrokerLifecycleManager does (``isMigratingZkBroker``, BL-13,
        KAFKA-14448) only when it runs migration mode with an IBP >= 3.4-IV0, the same
        condition as forwarding (MG-1).  The registrations are taken as made at start-up."""
        return all(self.api_forwarding_enabled(n) for n, node in self.nodes.items()
                   if node.role == "broker")

    def _channel_for(self, node_id: int, retry_ms: int, provider) -> ControllerChannel:
        return ControllerChannel(
            provider, retry_timeout_ms=retry_ms, local_api_versions=self._api_ranges(node_id),
            controller_socket_timeout_ms=max(retry_ms, self.config.request_timeout_ms),
            reconnect_backoff_ms=0, client_id=f"{self.nodes[node_id].spec.name.lower()}-channel",
            controller_api_versions=lambda info: self._api_ranges(info.node_id))

    def _start_zk(self) -> None:
        cfg = self.config
        switches = {flag: True for bug, flag in ZK_REGISTRATION_BUGS.items() if bug in self.bugs}
        kraft = [n for n, node in self.nodes.items() if node.role == "controller"]
        if kraft and not cfg.migration:
            raise ValueError(f"{cfg.name}: KRaft controllers in ZK mode only in a migration")
        if ENTITY_CONFIG_CHECK_PASSES_RECREATED_CONTROLLER in self.bugs:
            check = CHECK_CONTROLLER_DATA_VERSION
        else:
            check = CHECK_CONTROLLER_EPOCH
        self.zkc = ZkCluster(len(cfg.nodes), initial_controller=cfg.initial_controller,
                             check_epoch_zk_version="skip-check-op" not in self.bugs,
                             session_timeout_ms=18_000,
                             create_broker_info=(self.create_broker_info
                                                 if cfg.zk_broker_registration else None),
                             entity_config_check=check, kraft_controllers=kraft,
                             brokers_ready=self.zk_brokers_registered_with_kraft,
                             claims_before_brokers_ready=(
                                 CLAIMS_BEFORE_BROKERS_READY in self.bugs),
                             **switches)
        self._create_altered_topics()
        for n in self.nodes:
            self._start_zk_broker(n)

    def _create_altered_topics(self) -> None:
        """The topics the clients' IncrementalAlterConfigs alter exist (an admin created them
        before the run): ``/config/topics/<topic>`` holds their (empty) configs, as
        ``AdminZkClient.createTopicWithAssignment`` left them.  Kafka answers
        UNKNOWN_TOPIC_OR_PARTITION for a missing topic, which the model does not have."""
        topics = [f"topic-{c.name}" for c in self.config.clients
                  if c.api_key == INCREMENTAL_ALTER_CONFIGS]
        if not topics:
            return
        admin = KafkaZkClient(self.zkc.zk)
        admin.connect(self.now_ms)
        for topic in topics:
            m = config_mutation(None, "topics", topic, {})
            admin.create_recursive(m.path, self.now_ms, m.data, throw_if_path_exists=False)
        self.zkc.zk.close_session(admin.session_id, self.now_ms)

    # ---- ZooKeeper broker registration (ZB-1..ZB-10) -------------------------------------------

    def create_broker_info(self, n: int, zk_client: KafkaZkClient, now_ms: int) -> BrokerInfo:
        """``KafkaServer.createBrokerInfo`` of node ``n`` (ZB-2): its current advertised
        listeners (the dynamic updates included) resolved by its current process run, its
        ``inter.broker.protocol.version`` and ``broker.rack``."""
        node = self.nodes[n]
        props = node.spec.props()
        return create_broker_info(
            zk_client, n, node.listener_versions[-1], now_ms=now_ms,
            bound_ports=node.bound_ports[node.run], canonical_host=self.canonical_host(n),
            inter_broker_protocol_version=props.get("inter.broker.protocol.version",
                                                    DEFAULT_INTER_BROKER_PROTOCOL_VERSION),
            rack=props.get("broker.rack"))

    def dynamic_advertised_listeners(self, n: int, version: int) -> str:
        """The ``advertised.listeners`` an operator sets on broker ``n`` for its update number
        ``version``: each advertised listener at its configured port + version *
        DYNAMIC_PORT_STEP (port 0 stays 0, under the host ``<node>-v<version>``)."""
        node = self.nodes[n]
        entries = []
        for e in node.listener_versions[0]:
            if e.port == 0:
                host, port = f"{node.spec.name.lower()}-v{version}", 0
            else:
                host, port = e.host or "", e.port + version * DYNAMIC_PORT_STEP
            if ":" in host:
                host = f"[{host}]"
            entries.append(f"{e.listener_name}://{host}:{port}")
        return ",".join(entries)

    def install_dynamic_listeners(self, n: int) -> None:
        """``DynamicBrokerConfig.updateCurrentConfig`` with the operator's next
        ``advertised.listeners``: the new configuration is validated as a whole (L-0..L-27),
        then by ``DynamicListenerConfig.validateReconfiguration`` (an existing listener keeps
        its security protocol, the inter-broker listener stays advertised), then installed."""
        node = self.nodes[n]
        props = dict(node.spec.props())
        props["advertised.listeners"] = self.dynamic_advertised_listeners(
            n, node.listeners_version + 1)
        lc = listener_config.validate(props)
        old = {e.listener_name: e.security_protocol for e in node.listener_versions[-1]}
        for e in lc.advertised_broker_listeners:
            if e.listener_name in old and old[e.listener_name] != e.security_protocol:
                raise ValueError(f"Security protocol cannot be updated for existing listener "
                                 f"{e.listener_name}")
        if lc.inter_broker_listener_name not in {e.listener_name
                                                 for e in lc.advertised_broker_listeners}:
            raise ValueError(f"Advertised listener must be specified for inter-broker listener "
                             f"{lc.inter_broker_listener_name}")
        node.listener_versions.append(lc.advertised_broker_listeners)

    def _start_zk_broker(self, n: int) -> None:
        """``KafkaServer.startup`` of ZK broker ``n`` (or, in a migration, the KRaft
        controller's ``ControllerServer``): the controller channel, and a ForwardingManager on
        it only if API forwarding is enabled (F-4, MG-1)."""
        node = self.nodes[n]
        if node.role == "controller":
            self._start_migration_controller(n)
            return
        node.channel = self._channel_for(n, self.config.forward_retry_timeout_ms,
                                         lambda: self._zk_broker_controller_info(n))
        self._enable_forwarding(n)
        node.incarnations.append(node.run)

    def _enable_forwarding(self, n: int) -> None:
        """The ForwardingManager (F-4) and KafkaApis' envelope receiving side (F-23: forwarding
        enabled) as node ``n``'s current server.properties make them."""
        node = self.nodes[n]
        zb = self.zkc.brokers[n]
        forwards = self.api_forwarding_enabled(n)
        # the client listeners' builder has a serde (KafkaConfig's check, KAFKA-13051); the
        # spec's principal_serde is the envelope listener's (F-23), see _start_kraft_broker
        node.forwarding = ForwardingManager(node.channel) if forwards else None
        node.receiver = EnvelopeReceiver(
            role=ZK_BROKER, authorizer=self.acls, forwarding_enabled=forwards,
            principal_serde=node.spec.principal_serde, is_active_controller=lambda: zb.is_active)

    def _start_migration_controller(self, n: int) -> None:
        """A KRaft controller of a migration: ``ControllerApis``' envelope receiving side
        (F-28..F-30) on its controller listener; its ``KRaftMigrationController`` is in
        ``zkc.kraft_controllers``."""
        node = self.nodes[n]
        node.channel = None
        node.forwarding = None
        node.receiver = EnvelopeReceiver(role=KRAFT_CONTROLLER, authorizer=self.acls,
                                         principal_serde=node.spec.principal_serde)
        node.incarnations.append(node.run)

    def bump_inter_broker_protocol(self, n: int) -> None:
        """The operator's second rolling bounce of broker ``n`` (KIP-590 Compatibility; model:
        operator_bumps_ibp): its server.properties get ``inter.broker.protocol.version``
        MIGRATION_INTER_BROKER_PROTOCOL_VERSION, validated as a whole (L-0..L-27), and the
        restarted ``KafkaServer`` has a ForwardingManager (MG-1).  The bounce is graceful and
        taken as one step, as the model takes it: the rest of the broker -- its ZooKeeper
        session, KafkaController, metadata cache, controller channel -- carries over."""
        node = self.nodes[n]
        props = dict(node.spec.props())
        props["inter.broker.protocol.version"] = MIGRATION_INTER_BROKER_PROTOCOL_VERSION
        node.listeners = listener_config.validate(props)
        node.spec = replace(node.spec, properties=tuple(props.items()))
        self._enable_forwarding(n)

    def _start_kraft(self) -> None:
        cfg = self.config
        controllers = [n for n, node in self.nodes.items() if node.role == "controller"]
        ic = -1 if cfg.initial_controller is None else cfg.initial_controller
        for n in controllers:
            self._new_registration_manager(n)
        boot = []
        for c in cfg.initially_registered:
            # registered by its running process, which resolved its listeners (EP-1)
            data = (self.nodes[c].registration.request_data() if self.nodes[c].registration
                    else self._registration_data(c))
            boot.append(register_controller_record(
                dict(data, Listeners=list(self._listener_info(c, resolve=True)))))
        running = {}
        if cfg.broker_registration:
            for b in cfg.initially_registered_brokers:
                # the offset of its RegisterBrokerRecord, after metadata.version's record
                running[b] = self._new_lifecycle_manager(b, broker_epoch=1 + len(boot))
                boot.append(self._bootstrap_broker_record(running[b]))
        self.quorum = RaftQuorum(controllers, cfg.metadata_version, ic, boot)
        for n, node in self.nodes.items():
            if node.role == "controller":
                node.qc = QuorumController(
                    n, self.quorum, self.acls.cluster, self.rng,
                    check_controller_endpoints=not self.unresolved_endpoints,
                    create_topic_policy=create_topic_policy(node.spec.props()),
                    internal_topics_bypass_policy=INTERNAL_TOPICS_BYPASS_POLICY in self.bugs,
                    not_controller_wrapped_as_unknown=(
                        NOT_CONTROLLER_WRAPPED_AS_UNKNOWN in self.bugs))
                node.receiver = EnvelopeReceiver(role=KRAFT_CONTROLLER, authorizer=self.acls,
                                                 principal_serde=node.spec.principal_serde)
                if cfg.broker_registration:
                    node.cluster_control = ClusterControlManager(
                        n, self.acls.cluster, cluster_id=CLUSTER_ID,
                        session_timeout_ms=self._session_timeout_ms(n),
                        kraft_version=cfg.kraft_version,
                        ignore_omitted_features=REGISTRATION_IGNORES_OMITTED_FEATURES in cfg.bugs,
                        activation_leaves_sessions_untracked=(
                            ACTIVATION_LEAVES_SESSIONS_UNTRACKED in cfg.bugs))
                    if n == ic:
                        node.cluster_control.activate(self.now_ms, self.quorum,     # BR-13
                                                      running=True)
                if n in cfg.initially_registered:
                    delta = self.quorum.catch_up(n)
                    if node.registration:
                        node.registration.on_metadata_update(delta, self.quorum.image(n))
                        node.registration.send_requested = False   # registered before the run
            else:
                self.quorum.catch_up(n)
                node.known_controller = ic
                self._start_kraft_broker(n, running.get(n))

    def _registration_data(self, c: int) -> dict:
        node = self.nodes[c]
        return {"ControllerId": c, "IncarnationId": node.incarnations[-1],
                "ZkMigrationReady": False, "Listeners": self._listener_info(c), "Features": []}

    def _listener_info(self, c: int, resolve: bool | None = None) -> list:
        """The ControllerRegistrationRequest's Listeners of controller ``c``'s current process
        run (EP-1): its advertised controller listeners with a blank host resolved to the
        canonical host name and port 0 to the port this run bound; as configured under
        ``registers-unresolved-endpoints`` (``resolve`` None: as the cluster runs)."""
        node = self.nodes[c]
        return list(listener_info(node.listeners.advertised_controller_listeners,
                                  self.canonical_host(c), node.bound_ports[node.run],
                                  resolve=(not self.unresolved_endpoints if resolve is None
                                           else resolve)))

    def _new_registration_manager(self, c: int) -> None:
        node = self.nodes[c]
        provider = self._leader_info
        node.channel = self._channel_for(c, self.config.registration_retry_timeout_ms, provider)
        if self.config.registration:
            switches = {flag: True for bug, flag in REGISTRATION_BUGS.items() if bug in self.bugs}
            node.registration = ControllerRegistrationManager(
                c, self.rng, self._listener_info(c),
                registers_unresolved_endpoints=self.unresolved_endpoints, **switches)
            node.incarnations.append(node.registration.incarnation_id)
            node.registration.start(node.channel)
        else:
            import uuid
            node.incarnations.append(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _controller_info(self, c: int) -> ControllerInfo | None:
        """What a ControllerNodeProvider returns for controller ``c`` (-1: none known)."""
        return None if c < 0 else ControllerInfo(c, self._controller_listener(c))

    def _leader_info(self):
        return self._controller_info(self.quorum.leader_id)

    def _start_kraft_broker(self, n: int, lifecycle: BrokerLifecycleManager | None = None) -> None:
        """``BrokerServer.startup``: the forwarding channel and, with broker registration, this
        process run's BrokerLifecycleManager (BL-1: a fresh incarnation, unless ``lifecycle``
        is the running process's manager of the initial state); a broker's incarnations are
        its managers' IncarnationIds then, else its process runs."""
        node = self.nodes[n]
        node.channel = self._channel_for(n, self.config.forward_retry_timeout_ms,
                                         lambda: self._controller_info(node.known_controller))
        # the spec's principal_serde is the envelope listener's (F-23, F-29a); the client
        # listeners' builder has a serde, as KafkaConfig's startup check requires (KAFKA-13051),
        # so the forwarder builds every envelope (F-12), as the model's does
        node.forwarding = ForwardingManager(node.channel)
        # BrokerServer L351-352: the AutoTopicCreationManager shares the forwarding channel
        node.auto_topics = AutoTopicCreationManager(
            node.channel, node.spec.props(), self._api_ranges(n),
            errors_only_logged=AUTO_CREATE_ERRORS_ONLY_LOGGED in self.bugs)
        if not self.config.broker_registration:
            node.incarnations.append(node.run)
            return
        node.lifecycle = lifecycle or self._new_lifecycle_manager(n)
        node.incarnations.append(node.lifecycle.incarnation_id)

    # ---- KRaft broker registration -------------------------------------------------------------

    def _node_ms(self, n: int, key: str, default: int) -> int:
        """A timeout of node ``n``'s ``server.properties`` (KRaftConfigs, BH-1)."""
        return int(self.nodes[n].spec.props().get(key, default))

    def _session_timeout_ms(self, n: int) -> int:
        return self._node_ms(n, "broker.session.timeout.ms", BROKER_SESSION_TIMEOUT_MS)

    def _broker_listener_info(self, n: int, resolve: bool | None = None) -> list:
        """BL-2, EP-1: the broker's advertised listeners (the controller listeners left out,
        L-25), the inter-broker listener first, as its current process run resolved them; the
        BrokerRegistrationRequest's Listeners.  As configured under
        ``registers-unresolved-endpoints`` (``resolve`` None: as the cluster runs)."""
        node = self.nodes[n]
        lc = node.listeners
        if resolve is None:
            resolve = not self.unresolved_endpoints
        return list(broker_listener_info(lc.advertised_broker_listeners,
                                         lc.inter_broker_listener_name, self.canonical_host(n),
                                         node.bound_ports[node.run], resolve=resolve))

    def _new_lifecycle_manager(self, n: int, broker_epoch: int = -1) -> BrokerLifecycleManager:
        """One process run's BrokerLifecycleManager (BL-1, BL-2).  ``broker_epoch`` >= 0: the
        running process registered with that epoch before a metadata.version upgrade, and its
        BrokerRegistrationTracker has asked it to register again (BL-8)."""
        lifecycle = BrokerLifecycleManager(
            n, self.rng, CLUSTER_ID, self._broker_listener_info(n),
            self.config.nodes[n].features(self.nodes[n].run), broker_epoch=broker_epoch,
            heartbeat_interval_ms=self._node_ms(n, "broker.heartbeat.interval.ms",
                                                BROKER_HEARTBEAT_INTERVAL_MS),
            session_timeout_ms=self._session_timeout_ms(n))
        if broker_epoch >= 0:
            lifecycle.resend_broker_registration()
        return lifecycle

    def _bootstrap_broker_record(self, lifecycle: BrokerLifecycleManager):
        """The RegisterBrokerRecord of a broker registered in the initial log (BR-5): its
        incarnation, its epoch (the record's offset, BR-3), unfenced."""
        mv = self.config.metadata_version
        request = lifecycle.registration_request()
        data = {"BrokerId": lifecycle.node_id, "IsMigratingZkBroker": False,
                "IncarnationId": lifecycle.incarnation_id, "BrokerEpoch": lifecycle.broker_epoch,
                # as the running process resolved them when it registered (EP-1)
                "EndPoints": self._broker_listener_info(lifecycle.node_id, resolve=True),
                "Features": request["Features"], "Rack": None,
                "Fenced": False, "InControlledShutdown": False}
        if mv >= MV_3_7_IV2:
            data["LogDirs"] = list(lifecycle.log_dirs)
        return register_broker_record(data, register_broker_record_version(mv))
