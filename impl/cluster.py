"""A simulated Kafka cluster: the reference implementation's servers wired to the
deterministic simulator's network (``impl/sim.py``).

Each node is a process with Kafka's parts:

- every node: its ``server.properties`` validated by ``impl.config`` (L-0..L-27), listeners
  bound to addresses, a principal it authenticates as;
- a broker: the metadata cache's controller, a ``ForwardingManager`` on a ``ControllerChannel``
  (F-1..F-21, table 1.6), DescribeCluster (D-2), and in ZK mode its ``KafkaController`` and the
  EnvelopeRequest receiving side (F-22..F-27) over a shared ZooKeeper (``impl/zk_controller``);
- a KRaft controller: a ``QuorumController`` over the shared ``RaftQuorum`` (``impl/kraft``),
  the receiving side (F-28..F-30), DescribeCluster (D-1), and its
  ``ControllerRegistrationManager`` (R-1..R-22) on its own ``ControllerChannel``.

Bytes travel between nodes as ``Message``s: requests built by the channels (real
EnvelopeRequest / ControllerRegistrationRequest bytes), responses built by the receivers.  An
admin client's request is handled on arrival (the client link is reliable; the faults are on the
inter-node network and in the processes).

``events()`` lists what can happen next, in a fixed order; ``apply(event)`` does it and says
whether it was enabled.  The event names are Kafka-worded steps (``channel_sends_request``,
``controller_handles_envelope``, ``node_crashes``...) so that one adapter can line them up with
another description of the same protocol; nothing here imports it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from ipaddress import ip_address

from impl import config as listener_config
from impl.channel import ControllerChannel, own_api_ranges
from impl.cluster_config import (DESCRIBE, FORGED_ENVELOPE, KRAFT_MODE, ClientConfig,
                                 ClusterConfig, NodeConfig)
from impl.context import ControllerInfo, RequestContext
from impl.describe_cluster import (BrokerDescribeCluster, BrokerRegistration,
                                   ControllerDescribeCluster)
from impl.forwarding import (CLOSE, DISPATCH, KRAFT_CONTROLLER, ZK_BROKER,
                             ClientOutcome, EnvelopeReceiver, ForwardingManager,
                             envelope_response, error_response_body, first_error,
                             wrap_inner_response)
from impl.kraft import (ClusterAuthorizer, QuorumController, RaftQuorum, mutation_response,
                        register_controller_record)
from impl.protocol import (build_envelope_request, encode_request, encode_response,
                           parse_request, parse_request_header, parse_response)
from impl.protocol.principal import KafkaPrincipal
from impl.registration import ControllerRegistrationManager
from impl.sim import REQUEST, RESPONSE, Event, Message, Network
from impl.zk_controller import ZkCluster, acl_mutation, config_mutation

# error codes (Errors.java)
NONE = 0
NETWORK_EXCEPTION = 13
UNSUPPORTED_VERSION = 35
NOT_CONTROLLER = 41
CREATE_TOPICS, CREATE_ACLS, INCREMENTAL_ALTER_CONFIGS = 19, 30, 44
ENVELOPE, DESCRIBE_CLUSTER, CONTROLLER_REGISTRATION, API_VERSIONS = 58, 60, 70, 18

PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

# the ACL each mutation needs: (operation, resource type), and the error when denied
MUTATION_ACL = {CREATE_TOPICS: ("CREATE", "TOPIC"),
                INCREMENTAL_ALTER_CONFIGS: ("ALTER_CONFIGS", "TOPIC"),
                CREATE_ACLS: ("ALTER", "CLUSTER")}
DENIED = {CREATE_TOPICS: 29, INCREMENTAL_ALTER_CONFIGS: 29, CREATE_ACLS: 31}
CLIENT_MAX_VERSION = {CREATE_TOPICS: 7, INCREMENTAL_ALTER_CONFIGS: 1, CREATE_ACLS: 3,
                      DESCRIBE_CLUSTER: 1, ENVELOPE: 0}

# the step names (the order of ``events()``)
STEPS = ("client_sends_request", "broker_learns_controller", "channel_discovers_controller",
         "channel_sends_request", "channel_times_out_request", "controller_handles_envelope",
         "broker_handles_envelope_response", "controller_sends_registration",
         "controller_handles_registration", "controller_handles_registration_response",
         "node_discards_stale_response", "controller_processes_event",
         "controller_commits_records", "node_replays_record", "broker_handles_session_expiry",
         "broker_elects_controller", "controller_becomes_leader", "clock_ticks",
         "zk_expires_session", "network_drops_message", "node_crashes", "node_restarts")
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

FAULTS = {"zk_expires_session": "session_expiries", "network_drops_message": "drops",
          "node_crashes": "crashes", "node_restarts": "restarts",
          "broker_elects_controller": "elections", "controller_becomes_leader": "elections"}


@dataclass(frozen=True)
class ClientResult:
    """A final response as the admin client received it."""
    error_code: int
    envelope_error: int = 0             # the EnvelopeResponse error that decided it (0: none)
    endpoints: frozenset = frozenset()  # DescribeCluster: (node id, listener name)
    response: bytes | None = None


@dataclass(frozen=True)
class DurableWrite:
    client: str                 # the client (client.id) whose mutation it is
    writer: int                 # the node that wrote it
    writer_epoch: int           # ZK: the controller epoch it held (-1: none); KRaft: leader epoch


@dataclass(frozen=True)
class Registration:
    controller_id: int
    incarnation_id: object


@dataclass(frozen=True)
class MessageView:
    """What a message is, decoded from its bytes (for observers and adapters)."""
    id: int
    kind: str                   # "EnvelopeRequest", "EnvelopeResponse", ..., "ApiVersions..."
    src: object
    dst: object
    listener: str
    client: str = ""            # Envelope: the inner request's client id
    api_version: int = -1       # EnvelopeRequest: the inner request's version
    hops: int = 1
    sender_principal: str = ""  # requests: the sending connection's principal name
    error: int = 0              # responses: the top-level error code
    inner_error: int = 0        # EnvelopeResponse: the inner response's first error
    incarnation_id: object = None


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
    purpose: str                # "forwarding" | "registration"
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
    incarnations: list = field(default_factory=list)


class Cluster:
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
        self._sent_on: dict = {}        # (node, run, correlation id) -> connection id
        self.budget = None                           # fault budget for free-running runs
        for spec in config.nodes:
            props = spec.props()
            lc = listener_config.validate(props)
            self.nodes[spec.node_id] = Node(spec, lc, spec.role)
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

    def _address(self, node_id: int, listener: str) -> tuple:
        ep = self.nodes[node_id].listeners.advertised_endpoint(
            listener, controller=self.nodes[node_id].role == "controller")
        if ep is None:
            for e in self.nodes[node_id].listeners.bound_listeners:
                if e.listener_name == listener:
                    ep = e
        return ep.host, ep.port

    def endpoint_listener(self, node_id: int, host: str, port: int) -> str | None:
        for e in self.nodes[node_id].listeners.bound_listeners:
            if (e.host, e.port) == (host, port):
                return e.listener_name
        return None

    def _controller_listener(self, node_id: int) -> str:
        """L-29: brokers reach the controller on its controller listener (KRaft) or on its
        privileged inter-broker listener (ZK)."""
        lc = self.nodes[node_id].listeners
        if self.kraft:
            return lc.controller_listener_names[0]
        return lc.privileged_listener_name

    def _channel_for(self, node_id: int, retry_ms: int, provider) -> ControllerChannel:
        return ControllerChannel(
            provider, retry_timeout_ms=retry_ms, local_api_versions=self._api_ranges(node_id),
            controller_socket_timeout_ms=max(retry_ms, self.config.request_timeout_ms),
            reconnect_backoff_ms=0, client_id=f"{self.nodes[node_id].spec.name.lower()}-channel",
            controller_api_versions=lambda info: self._api_ranges(info.node_id))

    def _start_zk(self) -> None:
        cfg = self.config
        self.zkc = ZkCluster(len(cfg.nodes), initial_controller=cfg.initial_controller,
                             check_epoch_zk_version="skip-check-op" not in self.bugs,
                             session_timeout_ms=18_000)
        for n in self.nodes:
            self._start_zk_broker(n)

    def _start_zk_broker(self, n: int) -> None:
        node = self.nodes[n]
        zb = self.zkc.brokers[n]

        def provider(zb=zb, n=n):
            c = zb.known_controller
            if c < 0:
                return None
            return ControllerInfo(c, self._controller_listener(c))
        node.channel = self._channel_for(n, self.config.forward_retry_timeout_ms, provider)
        node.forwarding = ForwardingManager(node.channel, principal_serde=node.spec.principal_serde)
        node.receiver = EnvelopeReceiver(
            role=ZK_BROKER, authorizer=self.acls, forwarding_enabled=self.config.zk_forwarding,
            principal_serde=node.spec.principal_serde, is_active_controller=lambda: zb.is_active)
        node.incarnations.append(node.run)

    def _start_kraft(self) -> None:
        cfg = self.config
        controllers = [n for n, node in self.nodes.items() if node.role == "controller"]
        ic = -1 if cfg.initial_controller is None else cfg.initial_controller
        for n in controllers:
            self._new_registration_manager(n)
        boot = []
        for c in cfg.initially_registered:
            boot.append(register_controller_record(self.nodes[c].registration.request_data()
                                                   if self.nodes[c].registration else
                                                   self._registration_data(c)))
        self.quorum = RaftQuorum(controllers, cfg.metadata_version, ic, boot)
        for n, node in self.nodes.items():
            if node.role == "controller":
                node.qc = QuorumController(n, self.quorum, self.acls.cluster, self.rng)
                node.receiver = EnvelopeReceiver(role=KRAFT_CONTROLLER, authorizer=self.acls,
                                                 principal_serde=node.spec.principal_serde)
                if n in cfg.initially_registered:
                    delta = self.quorum.catch_up(n)
                    if node.registration:
                        node.registration.on_metadata_update(delta, self.quorum.image(n))
                        node.registration.send_requested = False   # registered before the run
            else:
                self.quorum.catch_up(n)
                node.known_controller = ic
                self._start_kraft_broker(n)

    def _registration_data(self, c: int) -> dict:
        node = self.nodes[c]
        return {"ControllerId": c, "IncarnationId": node.incarnations[-1],
                "ZkMigrationReady": False, "Listeners": self._listener_info(c), "Features": []}

    def _listener_info(self, c: int) -> list:
        lc = self.nodes[c].listeners
        out = []
        for name in lc.controller_listener_names:
            host, port = self._address(c, name)
            proto = lc.security_protocol_map.get(name, "PLAINTEXT")
            out.append({"Name": name, "Host": host, "Port": port,
                        "SecurityProtocol": PROTOCOL_IDS.get(proto, 0)})
        return out

    def _new_registration_manager(self, c: int) -> None:
        node = self.nodes[c]
        provider = self._leader_info
        node.channel = self._channel_for(c, self.config.registration_retry_timeout_ms, provider)
        if self.config.registration:
            switches = {flag: True for bug, flag in REGISTRATION_BUGS.items() if bug in self.bugs}
            node.registration = ControllerRegistrationManager(c, self.rng, self._listener_info(c),
                                                              **switches)
            node.incarnations.append(node.registration.incarnation_id)
            node.registration.start(node.channel)
        else:
            import uuid
            node.incarnations.append(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _leader_info(self):
        leader = self.quorum.leader_id
        if leader < 0:
            return None
        return ControllerInfo(leader, self._controller_listener(leader))

    def _start_kraft_broker(self, n: int) -> None:
        node = self.nodes[n]

        def provider(node=node):
            c = node.known_controller
            if c < 0:
                return None
            return ControllerInfo(c, self._controller_listener(c))
        node.channel = self._channel_for(n, self.config.forward_retry_timeout_ms, provider)
        node.forwarding = ForwardingManager(node.channel, principal_serde=node.spec.principal_serde)
        node.incarnations.append(node.run)

    # ==== observation ============================================================================

    def incarnations(self, node_id: int) -> list:
        return list(self.nodes[node_id].incarnations)

    def client_results(self) -> dict:
        return {k: list(v) for k, v in self.results.items()}

    def durable_writes(self) -> list:
        """The mutations made durable, in order: ZooKeeper writes with their writer and the
        controller epoch it held; KRaft committed records with the leader and its epoch, one
        per mutation (a CreateTopics's ConfigRecords belong to its TopicRecord)."""
        if not self.kraft:
            return [DurableWrite(tag, writer, epoch) for tag, writer, epoch in self.zkc.writes()]
        out, topic = [], None
        for entry in self.quorum.log:
            rec = entry.record
            if rec.name == "TopicRecord":
                topic = (rec.data["Name"], entry.leader_epoch)
            elif rec.name == "ConfigRecord" and topic == (rec.data["ResourceName"],
                                                          entry.leader_epoch):
                continue
            elif rec.name not in ("ConfigRecord", "AccessControlEntryRecord"):
                topic = None
                continue
            client = self._client_of_resource(rec.data)
            if client:
                out.append(DurableWrite(client, entry.writer, entry.leader_epoch))
        return out

    def _client_of_resource(self, data) -> str | None:
        name = data.get("Name") if "TopicId" in data else data.get("ResourceName")
        if isinstance(name, str) and name.startswith("topic-"):
            return name[len("topic-"):]
        return None

    def registrations(self) -> list:
        return [Registration(e.record.data["ControllerId"], e.record.data["IncarnationId"])
                for e in self.quorum.log if e.record.name == "RegisterControllerRecord"]

    def registered(self, node_id: int) -> bool:
        node = self.nodes[node_id]
        return bool(node.alive and node.registration and node.registration.registered_in_log)

    def message_views(self) -> list:
        return [self.view(m) for m in self.network.in_flight()]

    def view(self, m: Message) -> MessageView:
        conn = self.conns.get(m.conn)
        principal = conn.principal if conn else ""
        if m.kind == REQUEST:
            header, body = parse_request(m.payload)
            if m.api_key == ENVELOPE:
                inner_header, _ = parse_request(body["RequestData"])
                return MessageView(m.id, "EnvelopeRequest", m.src, m.dst, m.listener,
                                   client=inner_header["ClientId"],
                                   api_version=inner_header["RequestApiVersion"],
                                   sender_principal=principal)
            if m.api_key == CONTROLLER_REGISTRATION:
                return MessageView(m.id, "ControllerRegistrationRequest", m.src, m.dst,
                                   m.listener, sender_principal=principal,
                                   incarnation_id=body["IncarnationId"])
            return MessageView(m.id, f"request {m.api_key}", m.src, m.dst, m.listener)
        req_header = {"RequestApiKey": m.api_key, "RequestApiVersion": m.api_version,
                      "CorrelationId": m.correlation_id}
        body = parse_response(m.payload, req_header)
        origin = self._request_of.get(m.id)
        if m.api_key == ENVELOPE:
            client, inner_error = origin[0] if origin else "", 0
            data = body.get("ResponseData")
            if data is not None and origin:
                inner = parse_response(data, origin[1])
                inner_error = first_error(inner)
            return MessageView(m.id, "EnvelopeResponse", m.src, m.dst, m.listener,
                               client=client, error=body.get("ErrorCode", 0),
                               inner_error=inner_error)
        if m.api_key == CONTROLLER_REGISTRATION:
            return MessageView(m.id, "ControllerRegistrationResponse", m.src, m.dst,
                               m.listener, error=body.get("ErrorCode", 0),
                               incarnation_id=origin[0] if origin else None)
        return MessageView(m.id, f"response {m.api_key}", m.src, m.dst, m.listener)

    # ==== events =================================================================================

    def set_fault_budget(self, budget: dict) -> None:
        self.budget = dict(budget)

    def events(self) -> list:
        out = []
        for name in STEPS:
            for args in self._candidates(name):
                ev = Event(name, args, fault=name in FAULTS and self._is_fault(name, args))
                if self._enabled(ev):
                    out.append(ev)
        return out

    def _is_fault(self, name, args) -> bool:
        if name == "controller_becomes_leader" and self.kraft:
            leader = self.quorum.leader_id
            return leader >= 0 and self.nodes[leader].alive
        return name != "broker_elects_controller"

    def _candidates(self, name):
        if name == "client_sends_request":
            return [(c,) for c in self.clients]
        if name in ("clock_ticks", "controller_commits_records"):
            return [()]
        if name in ("controller_handles_envelope", "broker_handles_envelope_response",
                    "controller_handles_registration", "controller_handles_registration_response",
                    "node_discards_stale_response", "network_drops_message"):
            return [(m.id,) for m in self.network.in_flight()]
        return [(n,) for n in sorted(self.nodes)]

    def _enabled(self, ev: Event) -> bool:
        if self.budget is not None and ev.name in FAULTS:
            if self.budget.get(ev.name, 0) <= 0:
                return False
        return self._dispatch(ev, dry=True)

    def apply(self, ev: Event) -> bool:
        ok = self._dispatch(ev, dry=False)
        if ok and self.budget is not None and ev.name in FAULTS:
            self.budget[ev.name] = self.budget.get(ev.name, 0) - 1
            if ev.name in ("broker_elects_controller", "controller_becomes_leader"):
                for k in ("broker_elects_controller", "controller_becomes_leader"):
                    self.budget[k] = self.budget[ev.name]
        return ok

    def why_not(self, ev: Event) -> str:
        return f"{ev} is not enabled in the implementation"

    def _dispatch(self, ev: Event, dry: bool) -> bool:
        fn = getattr(self, "_ev_" + ev.name, None)
        if fn is None:
            return False
        try:
            return bool(fn(*ev.args, dry=dry))
        except (KeyError, IndexError):
            return False

    # ---- admin clients ---------------------------------------------------------------------------

    def _client_request(self, c: ClientConfig, version: int) -> bytes:
        topic = f"topic-{c.name}"
        header = {"RequestApiKey": c.api_key, "RequestApiVersion": version,
                  "CorrelationId": 1, "ClientId": c.name}
        if c.api_key == CREATE_TOPICS:
            body = {"Topics": [{"Name": topic, "NumPartitions": 1, "ReplicationFactor": 1,
                                "Assignments": [], "Configs": []}],
                    "timeoutMs": 30_000, "validateOnly": False}
        elif c.api_key == INCREMENTAL_ALTER_CONFIGS:
            body = {"Resources": [{"ResourceType": 2, "ResourceName": topic,
                                   "Configs": [{"Name": "retention.ms", "ConfigOperation": 0,
                                                "Value": "60000"}]}], "ValidateOnly": False}
        elif c.api_key == CREATE_ACLS:
            body = {"Creations": [{"ResourceType": 2, "ResourceName": topic,
                                   "ResourcePatternType": 3, "Principal": "User:reader",
                                   "Host": "*", "Operation": 3, "PermissionType": 3}]}
        else:
            header["RequestApiKey"] = DESCRIBE_CLUSTER
            body = {"IncludeClusterAuthorizedOperations": False,
                    "EndpointType": c.endpoint_type}
        return encode_request(header, body)

    def _advertised_max(self, n: int, api_key: int) -> int:
        """F-35: a broker advertises the intersection of its own range with the active
        controller's, once its channel knows it."""
        own = self._api_ranges(n).get(api_key, (0, CLIENT_MAX_VERSION.get(api_key, 0)))[1]
        node = self.nodes[n]
        if node.channel is not None and node.role == "broker":
            theirs = node.channel.controller_api_versions
            if theirs and api_key in theirs:
                return min(own, theirs[api_key][1])
        return own

    def _respond(self, client: str, result: ClientResult) -> None:
        self.results[client].append(result)

    def _ev_client_sends_request(self, name: str, dry: bool) -> bool:
        if name in self.sent:
            return False
        if dry:
            return True
        c = self.clients[name]
        self.sent.add(name)
        node = self.nodes[c.node_id]
        if not node.alive:
            self._respond(name, ClientResult(NETWORK_EXCEPTION))
            return True
        ctx = RequestContext(c.listener,
                             node.listeners.security_protocol_map.get(c.listener, "PLAINTEXT"),
                             KafkaPrincipal("User", c.principal), "192.0.2.10", c.name,
                             f"client-{name}",
                             from_privileged_listener=(not self.kraft and c.listener ==
                                                       node.listeners.privileged_listener_name))
        if c.kind == DESCRIBE:
            self._describe_cluster(c, node, ctx)
            return True
        if c.kind == FORGED_ENVELOPE:
            version = min(self._advertised_max(c.node_id, CREATE_TOPICS), 7)
            inner = self._client_request(ClientConfig(c.name, c.claimed_principal, "mutation",
                                                      c.node_id, c.listener, c.api_key),
                                         version)
            env = build_envelope_request(inner, KafkaPrincipal("User", c.claimed_principal),
                                         ip_address("192.0.2.10"))
            data = encode_request({"RequestApiKey": ENVELOPE, "RequestApiVersion": 0,
                                   "CorrelationId": 7, "ClientId": c.name}, env)
            self._receive_envelope(c.node_id, data, ctx, reply=("client", name))
            return True
        version = min(self._advertised_max(c.node_id, c.api_key),
                      CLIENT_MAX_VERSION[c.api_key])
        data = self._client_request(c, version)
        if self.kraft and node.role == "broker":
            self._forward(c, node, data, ctx)
        elif self.kraft:
            self._controller_handles_mutation(c.node_id, data, ctx, ("client", name))
        else:
            zb = self.zkc.brokers[c.node_id]
            if zb.is_active:
                self._controller_handles_mutation(c.node_id, data, ctx, ("client", name))
            elif not self.config.zk_forwarding:
                self._broker_writes_zk(c.node_id, data, ctx, name)
            else:
                self._forward(c, node, data, ctx)
        return True

    def _forward(self, c: ClientConfig, node: Node, data: bytes, ctx: RequestContext) -> None:
        def respond(outcome: ClientOutcome, name=c.name, node=node, run=node.run):
            if node.run != run or not node.alive:
                return
            env = outcome.envelope_error or 0
            code = NETWORK_EXCEPTION if outcome.close_connection else outcome.error_code
            if self.results[name]:
                return
            self._respond(name, ClientResult(code, env))
        node.forwarding.forward(data, ctx, self.now_ms, respond)

    def _describe_cluster(self, c: ClientConfig, node: Node, ctx: RequestContext) -> None:
        header, body = parse_request(self._client_request(c, 1))
        version = header["RequestApiVersion"]
        if node.role == "controller":
            regs = self.quorum.image(node.spec.node_id).controllers
            mv = self.quorum.metadata_version(node.spec.node_id)
            resp = ControllerDescribeCluster("kipcheck-cluster", self.acls.cluster).handle(
                ctx, version, body, metadata_version=mv, registrations=regs,
                leader_id=self.quorum.leader_id)
        else:
            brokers = []
            for n, other in sorted(self.nodes.items()):
                if other.role != "broker":
                    continue
                eps = {}
                for e in other.listeners.bound_listeners:
                    eps[e.listener_name] = (e.host, e.port)
                brokers.append(BrokerRegistration(n, eps, None, other.alive))
            zk_controller = None if self.kraft else self.zkc.controller()
            resp = BrokerDescribeCluster("kipcheck-cluster", self.acls.cluster,
                                         random.Random(self.seed)).handle(
                ctx, version, body, brokers=brokers, zk_controller_id=zk_controller)
        code = resp["ErrorCode"]
        endpoints = frozenset()
        if code == NONE:
            endpoints = frozenset((b["BrokerId"], self.endpoint_listener(b["BrokerId"], b["Host"],
                                                                         b["Port"]))
                                  for b in resp["Brokers"])
        data = encode_response(DESCRIBE_CLUSTER, version, header["CorrelationId"], resp)
        self._respond(c.name, ClientResult(code, 0, endpoints, data))

    # ---- the controller side ---------------------------------------------------------------------

    def _authorized_mutation(self, principal: KafkaPrincipal, api_key: int) -> bool:
        op, rtype = MUTATION_ACL[api_key]
        return self.acls.allows(principal, op, rtype)

    def _controller_handles_mutation(self, n: int, data: bytes, ctx: RequestContext, reply,
                                     envelope=None) -> None:
        """A mutation that reached a controller (directly from an admin client, D-7, or out of
        an Envelope, F-30): authorize as the request's principal, then write."""
        header, body = parse_request(data)
        key = header["RequestApiKey"]
        if not self._authorized_mutation(ctx.principal, key):
            self._reply_mutation(n, reply, header, body, DENIED[key])
            return
        if self.kraft:
            r = self.nodes[n].qc.controller_accepts_mutation(key, body, waiter=(reply, header))
            if r is not None:
                self._reply_mutation(n, reply, header, body, r.error_code)
            return
        tag = header["ClientId"]
        topic = f"topic-{tag}"
        if key == CREATE_ACLS:
            mutation = acl_mutation(tag, "Topic", topic, [{"principal": "User:reader",
                                                           "operation": "Read"}])
        else:
            # CreateTopics writes the topic's config znode with its assignment (AdminZkClient);
            # IncrementalAlterConfigs writes /config/topics/<name>.
            mutation = config_mutation(tag, "topics", topic, {"retention.ms": "60000"})
        self._zk_waiters[(n, tag)] = (reply, header, body)
        self.zkc.controller_accepts_mutation(n, mutation)

    def _reply_mutation(self, n: int, reply, header, body, code: int) -> None:
        key = header["RequestApiKey"]
        resp = mutation_response(key, body, code, None) if key in MUTATION_ACL else \
            error_response_body(key, header["RequestApiVersion"], body, code)
        self._send_reply(n, reply, header, resp)

    def _send_reply(self, n: int, reply, header, resp: dict) -> None:
        kind = reply[0]
        if kind == "client":
            env_err = 0
            code = first_error(resp)
            self._respond(reply[1], ClientResult(code, env_err))
            return
        if kind == "client-envelope":
            # a forged envelope sent by a client: the envelope's answer goes to the client
            return
        if kind == "envelope":
            _, conn_id, env_header = reply
            conn = self.conns.get(conn_id)
            if conn is None or not self._conn_open(conn):
                return
            payload = wrap_inner_response(env_header, header, resp)
            self._send(RESPONSE, n, conn, env_header, payload, ENVELOPE, 0)
            return
        if kind == "registration":
            _, conn_id, reg_header = reply
            conn = self.conns.get(conn_id)
            if conn is None or not self._conn_open(conn):
                return
            payload = encode_response(CONTROLLER_REGISTRATION, reg_header["RequestApiVersion"],
                                      reg_header["CorrelationId"], resp)
            self._send(RESPONSE, n, conn, reg_header, payload, CONTROLLER_REGISTRATION,
                       reg_header["RequestApiVersion"])

    def _conn_open(self, conn: Conn) -> bool:
        a, b = self.nodes[conn.src], self.nodes[conn.dst]
        return (conn.id not in self.closed and a.alive and b.alive and a.run == conn.src_run
                and b.run == conn.dst_run)

    def _receive_envelope(self, n: int, data: bytes, ctx: RequestContext, reply) -> None:
        """F-22..F-30 on node ``n``, then the node's own checks: the inner version it parses
        (F-29e) and the inner request's authorization (F-30)."""
        node = self.nodes[n]
        decision = node.receiver.receive(data, ctx)
        if reply[0] == "client":
            if decision.kind == CLOSE:
                self._respond(reply[1], ClientResult(NETWORK_EXCEPTION))
                return
            if decision.kind != DISPATCH:
                self._respond(reply[1], ClientResult(decision.error_code, decision.error_code))
                return
            inner = decision.inner_header
            if inner["RequestApiVersion"] > self._api_ranges(n).get(inner["RequestApiKey"],
                                                                     (0, -1))[1]:
                self._respond(reply[1], ClientResult(UNSUPPORTED_VERSION, UNSUPPORTED_VERSION))
                return
            self._controller_handles_mutation(n, decision.inner_request_bytes,
                                              decision.inner_context, reply)
            return
        _, conn_id, env_header = reply
        conn = self.conns[conn_id]
        if decision.kind == CLOSE:
            self._close_conn(conn)
            return
        if decision.kind != DISPATCH:
            self._send(RESPONSE, n, conn, env_header, decision.response, ENVELOPE, 0)
            return
        inner = decision.inner_header
        if inner["RequestApiVersion"] > self._api_ranges(n).get(inner["RequestApiKey"], (0, -1))[1]:
            self._send(RESPONSE, n, conn, env_header,
                       envelope_response(env_header["CorrelationId"], UNSUPPORTED_VERSION),
                       ENVELOPE, 0)
            return
        self._controller_handles_mutation(n, decision.inner_request_bytes,
                                          decision.inner_context, reply)

    def _broker_writes_zk(self, n: int, data: bytes, ctx: RequestContext, name: str) -> None:
        header, body = parse_request(data)
        key = header["RequestApiKey"]
        if not self._authorized_mutation(ctx.principal, key):
            self._respond(name, ClientResult(DENIED[key]))
            return
        code = self.zkc.broker_writes_zk(n, config_mutation(name, "topics", f"topic-{name}",
                                                            {"retention.ms": "60000"}),
                                         self.now_ms)
        self._respond(name, ClientResult(code))

    # ---- the network -----------------------------------------------------------------------------

    def _send(self, kind: str, src: int, conn: Conn, header, payload: bytes, api_key: int,
              version: int) -> Message:
        dst = conn.dst if kind == REQUEST else conn.src
        m = self.network.send(kind=kind, src=src, dst=dst, listener=conn.listener, conn=conn.id,
                              correlation_id=header["CorrelationId"], api_key=api_key,
                              api_version=version, payload=payload, now_ms=self.now_ms)
        if kind == RESPONSE:
            origin = self._origin.get((conn.id, header["CorrelationId"]))
            if origin is not None:
                self._request_of[m.id] = origin
        return m

    def _close_conn(self, conn: Conn) -> None:
        """The receiver closes the connection (F-23, F-24): the sender sees a disconnect."""
        node = self.nodes[conn.src]
        self._closed_by_peer(conn)
        if node.alive and node.run == conn.src_run and node.channel is not None:
            flight = node.channel.inflight_request
            if flight is not None and flight.destination.node_id == conn.dst:
                node.channel.on_disconnect(self.now_ms)

    def _closed_by_peer(self, conn: Conn) -> None:
        """A connection closes: what is on it is lost, and nothing more will travel on it (the
        next request opens a new one)."""
        self.closed.add(conn.id)
        self.network.drop_where(lambda m: m.conn == conn.id)

    def _inflight_conn(self, n: int) -> Conn | None:
        """The connection node ``n``'s channel has its request in flight on."""
        node = self.nodes[n]
        flight = node.channel.inflight_request if node.channel is not None else None
        if flight is None:
            return None
        cid = self._sent_on.get((n, node.run, flight.correlation_id))
        return self.conns.get(cid) if cid else None

    def _disconnect(self, n: int) -> None:
        """Node ``n``'s channel loses its connection (a lost message, a network timeout):
        NetworkClient closes it and the channel re-queues (F-21.3)."""
        conn = self._inflight_conn(n)
        if conn is not None:
            self._closed_by_peer(conn)

    def _conn(self, src: int, dst: int, listener: str, purpose: str) -> Conn:
        a, b = self.nodes[src], self.nodes[dst]
        key = (src, dst, listener, purpose)
        gen = self._generation.get(key, 0)
        cid = f"{src}:{a.run}->{dst}:{b.run}/{listener}/{purpose}#{gen}"
        conn = self.conns.get(cid)
        if conn is None or cid in self.closed:
            if conn is not None:
                gen += 1
                self._generation[key] = gen
                cid = f"{src}:{a.run}->{dst}:{b.run}/{listener}/{purpose}#{gen}"
            conn = Conn(cid, src, dst, listener, purpose, a.spec.principal, a.run, b.run)
            self.conns[cid] = conn
        return conn

    # ==== the steps =============================================================================

    def _ev_broker_learns_controller(self, n: int, dry: bool) -> bool:
        node = self.nodes[n]
        if not node.alive or node.role != "broker":
            return False
        if self.kraft:
            truth = self.quorum.leader_id
            if node.known_controller == truth:
                return False
            if not dry:
                node.known_controller = truth
            return True
        zb = self.zkc.brokers[n]
        if zb.session_expired:
            return False
        truth = self.zkc.controller()
        if zb.known_controller == truth:
            return False
        if not dry:
            self.zkc.broker_learns_controller(n, self.now_ms)
        return True

    def _ev_channel_discovers_controller(self, n: int, dry: bool) -> bool:
        node = self.nodes[n]
        ch = node.channel
        if not node.alive or ch is None or ch.cached_controller is not None or not ch.queue:
            return False
        if self.kraft and node.role == "controller":
            info = self._leader_info()
        elif self.kraft:
            info = None if node.known_controller < 0 else node.known_controller
        else:
            info = None if self.zkc.brokers[n].known_controller < 0 else 1
        if info is None:
            return False
        if not dry:
            ch.discover_controller(self.now_ms)
        return True

    # Time.  The clock moves by ``tick_ms`` per ``clock_ticks``; in between, steps happen at
    # the current time.  A channel deadline that falls inside the current tick's window is due
    # now: firing it moves the clock forward to the deadline (still inside the window), which
    # is when Kafka's request thread would wake up for it.

    def _window_end(self) -> int:
        tick = self.config.tick_ms
        return (self.now_ms // tick + 1) * tick

    def _due_deadline(self, ch: ControllerChannel) -> int | None:
        """The earliest channel deadline due within the current window: the in-flight
        request's network timeout (``now - send > requestTimeoutMs``, F-16) or a queued item's
        retry timeout (``now - created >= retryTimeoutMs``, F-19)."""
        end = self._window_end()
        due = []
        flight = ch.inflight_request
        if flight is not None and flight.item is not None:
            d = flight.sent_ms + ch.request_timeout_ms + 1
            if d < end:
                due.append(d)
        for item in ch.queue:
            d = item.created_ms + ch.retry_timeout_ms
            if d < end:
                due.append(d)
        return min(due) if due else None

    def _expired(self, ch: ControllerChannel) -> bool:
        return self._due_deadline(ch) is not None

    def _ev_channel_sends_request(self, n: int, dry: bool) -> bool:
        node = self.nodes[n]
        ch = node.channel
        if (not node.alive or ch is None or ch.inflight_request is not None or not ch.queue
                or ch.cached_controller is None or self._expired(ch)):
            return False
        p = ch.cached_controller.node_id
        if self.nodes[p].alive and self.config.max_in_flight is not None and \
                len(self.network) >= self.config.max_in_flight:
            return False
        if dry:
            return True
        out = ch.next_send(self.now_ms)
        if out is None:
            return True
        purpose = "registration" if out.api_key == CONTROLLER_REGISTRATION else "forwarding"
        if not self.nodes[p].alive:
            # connection refused: NetworkClient reports a disconnect (F-21.3)
            ch.on_disconnect(self.now_ms)
            return True
        conn = self._conn(n, out.destination, out.listener_name, purpose)
        header = parse_request_header(out.payload)[0]
        m = self._send(REQUEST, n, conn, header, out.payload, out.api_key, out.api_version)
        self._sent_on[(n, node.run, header["CorrelationId"])] = conn.id
        if out.api_key == ENVELOPE:
            body = parse_request(out.payload)[1]
            inner_header, _ = parse_request(body["RequestData"])
            self._origin[(conn.id, header["CorrelationId"])] = (inner_header["ClientId"],
                                                               inner_header)
        elif out.api_key == CONTROLLER_REGISTRATION:
            body = parse_request(out.payload)[1]
            self._origin[(conn.id, header["CorrelationId"])] = (body["IncarnationId"], header)
        del m
        return True

    def _ev_channel_times_out_request(self, n: int, dry: bool) -> bool:
        node = self.nodes[n]
        ch = node.channel
        if not node.alive or ch is None or not self._expired(ch):
            return False
        if dry:
            return True
        self.now_ms = max(self.now_ms, self._due_deadline(ch))
        flight = ch.inflight_request
        if flight is not None and self.now_ms - flight.sent_ms > ch.request_timeout_ms:
            # the network timeout closes the connection: what was on it is gone, and so is
            # the answer the controller may still send on it
            self._disconnect(n)
        ch.expire(self.now_ms)
        return True

    def _deliverable(self, mid: int, kinds) -> Message | None:
        m = self.network.get(mid)
        if m is None:
            return None
        if (m.kind, m.api_key) not in kinds:
            return None
        return m

    def _ev_controller_handles_envelope(self, mid: int, dry: bool) -> bool:
        m = self._deliverable(mid, {(REQUEST, ENVELOPE)})
        if m is None or not self.nodes[m.dst].alive:
            return False
        if dry:
            return True
        self.network.take(mid)
        conn = self.conns[m.conn]
        header = parse_request_header(m.payload)[0]
        ctx = self._server_context(conn, header)
        self._receive_envelope(m.dst, m.payload, ctx, ("envelope", conn.id, header))
        return True

    def _server_context(self, conn: Conn, header) -> RequestContext:
        """What the receiving node knows of a request from another node: the listener and its
        security protocol, the sender's authenticated principal and address, and whether the
        listener is the privileged one (ZK mode, F-24, L-18)."""
        lc = self.nodes[conn.dst].listeners
        return RequestContext(conn.listener, lc.security_protocol_map.get(conn.listener,
                                                                          "PLAINTEXT"),
                              KafkaPrincipal("User", conn.principal),
                              f"192.0.2.{conn.src + 1}", header.get("ClientId") or "",
                              conn.id,
                              from_privileged_listener=(not self.kraft and conn.listener ==
                                                        lc.privileged_listener_name))

    def _response_matches(self, m: Message) -> bool:
        conn = self.conns.get(m.conn)
        node = self.nodes[m.dst]
        if conn is None or not node.alive or node.run != conn.src_run or node.channel is None:
            return False
        flight = node.channel.inflight_request
        return (flight is not None and flight.correlation_id == m.correlation_id
                and flight.destination.node_id == m.src
                and (flight.item is not None and flight.item.api_key == m.api_key))

    def _ev_broker_handles_envelope_response(self, mid: int, dry: bool) -> bool:
        m = self._deliverable(mid, {(RESPONSE, ENVELOPE)})
        if m is None or not self._response_matches(m):
            return False
        if dry:
            return True
        self.network.take(mid)
        self.nodes[m.dst].channel.on_response(m.correlation_id, m.payload, self.now_ms)
        return True

    def _ev_node_discards_stale_response(self, mid: int, dry: bool) -> bool:
        m = self._deliverable(mid, {(RESPONSE, ENVELOPE), (RESPONSE, CONTROLLER_REGISTRATION)})
        if m is None or self._response_matches(m):
            return False
        if not dry:
            self.network.take(mid)
        return True

    def _ev_controller_sends_registration(self, c: int, dry: bool) -> bool:
        node = self.nodes[c]
        reg = node.registration
        if not node.alive or reg is None or not reg.check_due(self.now_ms):
            return False
        if not dry:
            reg.controller_sends_registration(self.now_ms)
        return True

    def _ev_controller_handles_registration(self, mid: int, dry: bool) -> bool:
        m = self._deliverable(mid, {(REQUEST, CONTROLLER_REGISTRATION)})
        if m is None or not self.nodes[m.dst].alive:
            return False
        if dry:
            return True
        self.network.take(mid)
        conn = self.conns[m.conn]
        header, body = parse_request(m.payload)
        ctx = self._server_context(conn, header)
        qc = self.nodes[m.dst].qc
        reply = ("registration", conn.id, header)
        r = qc.controller_handles_registration(ctx, body, waiter=(reply, header))
        if r is not None:
            self._send_reply(m.dst, reply, header, r.body)
        return True

    def _ev_controller_handles_registration_response(self, mid: int, dry: bool) -> bool:
        m = self._deliverable(mid, {(RESPONSE, CONTROLLER_REGISTRATION)})
        if m is None or not self._response_matches(m):
            return False
        node = self.nodes[m.dst]
        origin = self._request_of.get(m.id)
        if node.registration is None or origin is None or \
                origin[0] != node.registration.incarnation_id:
            return False
        if dry:
            return True
        self.network.take(mid)
        node.channel.on_response(m.correlation_id, m.payload, self.now_ms)
        return True

    def _ev_controller_processes_event(self, n: int, dry: bool) -> bool:
        if self.kraft:
            return False
        zb = self.zkc.brokers[n]
        if not zb.alive or not zb.events:
            return False
        if dry:
            return True
        r = self.zkc.controller_processes_event(n, self.now_ms)
        waiter = self._zk_waiters.pop((n, r.tag), None)
        if waiter is not None:
            reply, header, body = waiter
            self._reply_mutation(n, reply, header, body, r.error_code)
        return True

    def _ev_controller_commits_records(self, dry: bool) -> bool:
        if not self.kraft:
            return False
        leader = self.quorum.leader_id
        if leader < 0 or not self.nodes[leader].alive or not self.quorum.uncommitted:
            return False
        if dry:
            return True
        res = self.nodes[leader].qc.controller_commits_records()
        node = self.nodes[leader]
        for delta in res.leader_deltas:
            if node.registration is not None:
                node.registration.on_metadata_update(delta, self.quorum.image(leader))
        for r in res.replies:
            (reply, header) = r.waiter
            self._send_reply(leader, reply, header, r.body)
        return True

    def _ev_node_replays_record(self, n: int, dry: bool) -> bool:
        if not self.kraft:
            return False
        node = self.nodes[n]
        if not node.alive or self.quorum.replayed_offset(n) >= len(self.quorum.log):
            return False
        if dry:
            return True
        delta = self.quorum.node_replays_record(n)
        if node.registration is not None:
            node.registration.on_metadata_update(delta, self.quorum.image(n))
        return True

    def _ev_broker_handles_session_expiry(self, n: int, dry: bool) -> bool:
        if self.kraft:
            return False
        zb = self.zkc.brokers[n]
        if not zb.alive or not zb.session_expired:
            return False
        if not dry:
            self.zkc.broker_handles_session_expiry(n, self.now_ms)
        return True

    def _ev_broker_elects_controller(self, n: int, dry: bool) -> bool:
        if self.kraft:
            return False
        zb = self.zkc.brokers[n]
        if not zb.alive or zb.session_expired or zb.is_active or self.zkc.controller() >= 0:
            return False
        if not dry:
            self.zkc.broker_elects_controller(n, self.now_ms)
        return True

    def _ev_controller_becomes_leader(self, c: int, dry: bool) -> bool:
        if not self.kraft:
            return False
        node = self.nodes[c]
        if node.role != "controller" or not node.alive or self.quorum.leader_id == c:
            return False
        if dry:
            return True
        old = self.quorum.leader_id
        replies = node.qc.controller_becomes_leader(
            old_leader_alive=old >= 0 and self.nodes[old].alive)
        for r in replies or ():
            (reply, header) = r.waiter
            self._send_reply(old, reply, header, r.body)
        return True

    def _ev_clock_ticks(self, dry: bool) -> bool:
        limit = self.config.max_time_ms
        if limit is not None and self._window_end() > limit:
            return False
        waiting = False
        for node in self.nodes.values():
            if not node.alive:
                continue
            ch = node.channel
            if ch is not None and (ch.queue or ch.inflight_request is not None):
                waiting = True
                if self._expired(ch):
                    return False
            reg = node.registration
            if reg is not None and reg.retry_at_ms is not None and reg.retry_at_ms > self.now_ms:
                waiting = True
        if not waiting:
            return False
        if not dry:
            self.now_ms = self._window_end()
        return True

    def _ev_zk_expires_session(self, n: int, dry: bool) -> bool:
        if self.kraft:
            return False
        zb = self.zkc.brokers[n]
        if zb.session_expired or zb.session_id is None or \
                not self.zkc.zk.is_session_alive(zb.session_id):
            return False
        if not dry:
            self.zkc.zk_expires_session(n, self.now_ms)
        return True

    def _ev_network_drops_message(self, mid: int, dry: bool) -> bool:
        m = self.network.get(mid)
        if m is None:
            return False
        if dry:
            return True
        self.network.drop(mid)
        conn = self.conns.get(m.conn)
        if conn is None:
            return True
        owner = self.nodes[conn.src]
        if owner.alive and owner.run == conn.src_run and owner.channel is not None:
            flight = owner.channel.inflight_request
            if flight is not None and flight.correlation_id == m.correlation_id and \
                    flight.destination.node_id == conn.dst:
                self._closed_by_peer(conn)
                owner.channel.on_disconnect(self.now_ms)
        return True

    def _ev_node_crashes(self, n: int, dry: bool) -> bool:
        node = self.nodes[n]
        if not node.alive:
            return False
        if dry:
            return True
        node.alive = False
        # its connections close: what was sent to it, and the responses it sent on them
        self.network.drop_where(lambda m: m.dst == n or (m.src == n and m.kind == RESPONSE))
        for p, peer in sorted(self.nodes.items()):
            if p == n or not peer.alive or peer.channel is None:
                continue
            flight = peer.channel.inflight_request
            if flight is not None and flight.destination.node_id == n and flight.item is not None:
                peer.channel.on_disconnect(self.now_ms)
        for name, c in self.clients.items():
            if c.node_id == n and name in self.sent and not self.results[name]:
                self._respond(name, ClientResult(NETWORK_EXCEPTION))
        if self.kraft:
            if self.quorum.leader_id == n:
                self.quorum.drop_uncommitted()
        else:
            self.zkc.node_crashes(n)
        return True

    def _ev_node_restarts(self, n: int, dry: bool) -> bool:
        node = self.nodes[n]
        if node.alive:
            return False
        if not self.kraft:
            zb = self.zkc.brokers[n]
            if self.zkc.controller() == n and not zb.session_expired:
                return False
        if dry:
            return True
        node.alive = True
        node.run += 1
        if self.kraft and node.role == "controller":
            self._new_registration_manager(n)
            if node.registration is not None:
                node.registration.on_metadata_update(self.quorum.image_delta(n),
                                                     self.quorum.image(n))
        elif self.kraft:
            node.known_controller = -1
            self._start_kraft_broker(n)
        else:
            self.zkc.node_restarts(n, self.now_ms)
            self._start_zk_broker(n)
        return True
