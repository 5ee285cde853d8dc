"""Conformance: the model and the reference implementation driven with the same steps
(DESIGN section 6, conformance).

One adapter, this module, stands between them: ``impl`` never sees the model.  It

- builds the implementation's cluster from a ``ModelConfig`` (real ``server.properties`` for
  every node, Kafka's timeouts scaled to the model's ticks);
- maps each model ``Step`` to the implementation's event of the same name, a message step to
  the in-flight implementation message whose *projection* is the model's message (decoded
  from the real bytes: API key, client id, versions, error codes, incarnation_id, the
  Listeners a registration carries);
- projects the implementation onto the model's observations (``model.observe``): the final
  responses clients received, DescribeCluster endpoints, durable writes (ZooKeeper znodes or
  committed metadata records) with writer and epoch, RegisterControllerRecords, each
  controller's registered flag, RegisterBrokerRecords (BR-5) and each broker's lifecycle state
  (registered, broker epoch: BL-5, BL-8); in a ZK-to-KRaft migration the ``MigrationView``
  besides (/controller and /controller_epoch, who acts as controller in ZooKeeper with which
  epoch, each broker's metadata cache, its IBP gate and its pending entity-config writes,
  MG-1..MG-7); with topics requests need (AT-1..AT-5) the ``AutoTopicView`` (the TopicRecords
  of brokers' own CreateTopicsRequests, and each broker's in-flight topics and own requests on
  its channel); and the network: the multiset of in-flight messages
  (a BrokerHeartbeatResponse without the model's ghost ``registered_epoch``).  An endpoint, in
  a DescribeCluster answer, a registration request or record, becomes the model's endpoints
  token by its host and port: a configured port is STATIC_ENDPOINTS, a port process run i of
  the node bound for a port-0 listener is i, port 0 or a blank host UNRESOLVED_ENDPOINTS
  (``Projector.endpoint_token``).

After every step the two must agree.  A ``Divergence`` names the first step where they do not,
with both sides' views.

Two drivers: ``check_steps`` (a given model trace), and ``run_conformance`` (Hypothesis picks
model steps among the enabled ones; a divergence is shrunk to a shortest trace).  The other
direction, ``validate_impl_run``, lets the implementation run free in its own seeded
simulator, maps every event it took to a model step, and checks that the model can take the
same step and ends in the same observation: traces recorded from the implementation are
validated against the model.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import NamedTuple

from model import kafka
from model import next as model_next
from model.config import (BROKER, CONTROLLER, CONTROLLER_LISTENER, DESCRIBE, FIND_COORDINATOR,
                          FORGED_ENVELOPE, INTER_BROKER_LISTENER, KRAFT, METADATA, WILDCARD_HOST,
                          Design, ModelConfig, NodeSpec)
from model.configs import CONFIGS
from model.observe import Observation, observe
from model.state import (BROKER_HEARTBEAT_REQUEST, BROKER_HEARTBEAT_RESPONSE,
                         BROKER_REGISTRATION_REQUEST, BROKER_REGISTRATION_RESPONSE,
                         CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE, ENVELOPE_REQUEST,
                         ENVELOPE_RESPONSE, FORWARD, REGISTRATION_REQUEST,
                         NO_VERSIONS, REGISTRATION_RESPONSE, STATIC_ENDPOINTS, TOPIC_CREATION,
                         TOPIC_RECORD, UNRESOLVED_ENDPOINTS,
                         BrokerHeartbeatRequest, BrokerHeartbeatResponse,
                         BrokerRegistrationRequest, BrokerRegistrationResponse,
                         ControllerRegistrationRequest, ControllerRegistrationResponse,
                         CreateTopicsRequest, CreateTopicsResponse,
                         EnvelopeRequest, EnvelopeResponse, Msg, message)
from model.step import Step

from impl.auto_topics import (CREATE_TOPIC_POLICY_CLASS_NAME, REFUSED_TOPICS_CONFIG,
                              REFUSED_TOPICS_POLICY)
from impl.cluster_config import (DESCRIBE as I_DESCRIBE, FIND_COORDINATOR as I_FIND_COORDINATOR,
                                 FORGED_ENVELOPE as I_FORGED, KRAFT_FORWARD_RETRY_TIMEOUT_MS,
                                 KRAFT_MODE, METADATA as I_METADATA, MUTATION as I_MUTATION,
                                 REGISTRATION_RETRY_TIMEOUT_MS, ZK_MODE, ZK_REQUEST_TIMEOUT_MS,
                                 ClientConfig, ClusterConfig, NodeConfig)
from impl.cluster import (ACTIVATION_LEAVES_SESSIONS_UNTRACKED, AUTO_TOPIC_BUGS,
                          CLIENT_MAX_VERSION, MIGRATION_BUGS, NOT_CONTROLLER_WRAPPED_AS_UNKNOWN,
                          REGISTERS_UNRESOLVED_ENDPOINTS, REGISTRATION_BUGS,
                          REGISTRATION_IGNORES_OMITTED_FEATURES, ZK_REGISTRATION_BUGS)
from impl.lifecycle import BROKER_SESSION_TIMEOUT_MS

# The implementation bugs a test may inject (impl/cluster/ honours them): the ZK
# controller writes without the CheckOp on /controller_epoch's zkVersion (KAFKA-6082's
# zombie write, Z-2).
KNOWN_BUGS = ("skip-check-op",)
# Kafka's shipped logic (or its state before a fix) that impl/cluster/ runs with a bug named
# after the model's design variant it implements: with the variant's design on the model side,
# conformance checks the variant (the implementation's default is the model's design).
VARIANT_BUGS = (tuple(REGISTRATION_BUGS) + (REGISTERS_UNRESOLVED_ENDPOINTS,)
                + tuple(ZK_REGISTRATION_BUGS) + MIGRATION_BUGS + AUTO_TOPIC_BUGS
                + (REGISTRATION_IGNORES_OMITTED_FEATURES, ACTIVATION_LEAVES_SESSIONS_UNTRACKED,
                   NOT_CONTROLLER_WRAPPED_AS_UNKNOWN))

PROFILES = {          # (examples, steps per example)
    "ci": (60, 40),
    "dev": (600, 60),
    "nightly": (6000, 80),
}


# ---- the world: ModelConfig -> ClusterConfig ------------------------------------------------

def _host(name: str) -> str:
    return name.lower()


def _port(i: int, j: int) -> int:
    return 9092 + 100 * i + j


def _listener_address(cfg: ModelConfig, i: int, j: int) -> str:
    """``host:port`` of listener ``j`` of model node ``i``: a blank host where the model's is
    (resolved to the canonical host name, EP-3), port 0 where the model's is (a port each
    process run binds, EP-5); otherwise a host named after the node and a port of its own."""
    spec = cfg.nodes[i]
    lst = spec.listeners[j]
    host = "" if lst.host == WILDCARD_HOST else _host(spec.name)
    port = 0 if lst.port == 0 else _port(i, j)
    return f"{host}:{port}"


def node_properties(cfg: ModelConfig, i: int) -> tuple:
    """The server.properties of model node ``i``: what an operator would write."""
    spec = cfg.nodes[i]
    listeners = ",".join(f"{lst.name}://{_listener_address(cfg, i, j)}"
                         for j, lst in enumerate(spec.listeners)
                         if cfg.mode != "zk" or spec.role != BROKER
                         or lst.role != CONTROLLER_LISTENER)
    protocols = {lst.name: lst.protocol for n in cfg.nodes for lst in n.listeners}
    if cfg.mode == "zk" and spec.role == CONTROLLER:
        return _migration_controller_properties(cfg, i, listeners, protocols)
    if cfg.mode == "zk":
        # a ZK broker of a migration names the controller listener (controller.listener.names,
        # L-24) to reach the KRaft controller, but does not listen on it
        inter = cfg.node_listener(i, INTER_BROKER_LISTENER)
        props = [("broker.id", str(i)), ("zookeeper.connect", "zk1:2181"),
                 ("listeners", listeners), ("advertised.listeners", listeners),
                 ("listener.security.protocol.map",
                  ",".join(f"{k}:{v}" for k, v in sorted(protocols.items())))]
        if inter is not None:
            props.append(("inter.broker.listener.name", inter.name))
        if cfg.zk_forwarding:
            # F-4: ZK brokers forward only during a KRaft migration, which needs the KRaft
            # quorum's listener and voters configured (L-24), while the ZK controller is
            # still the active one (the phase the model's ZK configurations describe).  In a
            # configuration without KRaft controllers the voters name one outside it.  A
            # broker not yet bounced into migration mode runs an IBP below 3.4-IV0 (MG-1).
            protocols.setdefault("CONTROLLER", "SSL")
            props = [(k, ",".join(f"{a}:{b}" for a, b in sorted(protocols.items())))
                     if k == "listener.security.protocol.map" else (k, v) for k, v in props]
            ibp = LEGACY_IBP if i in cfg.legacy_ibp_brokers else MIGRATION_IBP
            props += [("zookeeper.metadata.migration.enable", "true"),
                      ("inter.broker.protocol.version", ibp),
                      ("controller.listener.names", "CONTROLLER"),
                      ("controller.quorum.voters", _voters(cfg) or "3000@kraft1:9093")]
        return tuple(props)
    controller_names = sorted({lst.name for n in cfg.nodes for lst in n.listeners
                               if lst.role == CONTROLLER_LISTENER})
    voters = ",".join(f"{c}@{_host(cfg.nodes[c].name)}:{_port(c, 0)}" for c in cfg.controllers())
    props = [("process.roles", spec.role), ("node.id", str(i)),
             ("controller.quorum.voters", voters),
             ("controller.listener.names", ",".join(controller_names)),
             ("listeners", listeners),
             ("listener.security.protocol.map",
              ",".join(f"{k}:{v}" for k, v in sorted(protocols.items())))]
    if spec.role == BROKER:
        props.append(("advertised.listeners", listeners))
        inter = cfg.node_listener(i, INTER_BROKER_LISTENER)
        if inter is not None:
            props.append(("inter.broker.listener.name", inter.name))
        if cfg.internal_topics:
            # AT-2: auto-creation on (Kafka's default, written out); AT-4: the internal topic
            # asks for no more replicas than the cluster has brokers
            props += [("auto.create.topics.enable", "true"),
                      ("offsets.topic.replication.factor", str(min(3, len(cfg.brokers()))))]
    elif cfg.create_topic_policy:
        # the active controller's ReplicationControlManager runs the policy (AT-5); the
        # configuration names the topics it refuses
        props += [(CREATE_TOPIC_POLICY_CLASS_NAME, REFUSED_TOPICS_POLICY),
                  (REFUSED_TOPICS_CONFIG, ",".join(cfg.create_topic_policy))]
    if cfg.broker_registration:
        # BH-1: the session is the model's session_timeout ticks, and a broker heartbeats at
        # most once per tick (broker_sends_heartbeat: heartbeat_at < now)
        tick = tick_ms(cfg)
        props += [("broker.session.timeout.ms", str(cfg.session_timeout * tick)),
                  ("broker.heartbeat.interval.ms", str(tick))]
    return tuple(props)


# inter.broker.protocol.version of a ZK broker of a migration: one that forwards, and one not yet
# bounced into migration mode (below 3.4-IV0, MG-1)
MIGRATION_IBP, LEGACY_IBP = "3.7-IV0", "3.3-IV3"


def _voters(cfg: ModelConfig) -> str:
    """controller.quorum.voters: each KRaft controller at its controller listener."""
    out = []
    for c in cfg.controllers():
        j = next(j for j, lst in enumerate(cfg.nodes[c].listeners)
                 if lst.role == CONTROLLER_LISTENER)
        out.append(f"{c}@{_listener_address(cfg, c, j)}")
    return ",".join(out)


def _migration_controller_properties(cfg: ModelConfig, i: int, listeners: str,
                                     protocols: dict) -> tuple:
    """A KRaft controller of a ZK-to-KRaft migration (MG-*): process.roles=controller with
    zookeeper.metadata.migration.enable and zookeeper.connect (L-0)."""
    names = sorted({lst.name for lst in cfg.nodes[i].listeners
                    if lst.role == CONTROLLER_LISTENER})
    return (("process.roles", "controller"), ("node.id", str(i)),
            ("controller.quorum.voters", _voters(cfg)),
            ("controller.listener.names", ",".join(names)), ("listeners", listeners),
            ("listener.security.protocol.map",
             ",".join(f"{k}:{v}" for k, v in sorted(protocols.items()))),
            ("zookeeper.metadata.migration.enable", "true"),
            ("zookeeper.connect", "zk1:2181"))


def tick_ms(cfg: ModelConfig) -> int:
    """Milliseconds per model tick, chosen so that Kafka's own timeout for the timer the
    configuration exercises is exactly the model's number of ticks: broker.session.timeout.ms's
    9000 ms (BH-1, BH-9) where brokers register, else the registration channel's 5000 ms
    (R-11) where controllers register, else the forwarding channel's retry timeout (60000 ms on
    a KRaft broker, request.timeout.ms = 30000 ms on a ZK broker, F-17).  The other timers are
    then configured at the model's ratio (the model orders events against deadlines, not
    against the real ratio of two timeouts): broker.heartbeat.interval.ms is one tick, as the
    model's brokers heartbeat at most once per tick (BL-9, BL-10)."""
    if cfg.broker_registration:
        return BROKER_SESSION_TIMEOUT_MS // max(1, cfg.session_timeout)
    if cfg.registration:
        return REGISTRATION_RETRY_TIMEOUT_MS // max(1, cfg.registration_timeout)
    base = KRAFT_FORWARD_RETRY_TIMEOUT_MS if cfg.mode == KRAFT else ZK_REQUEST_TIMEOUT_MS
    return base // max(1, cfg.forward_timeout)


# the model's ACL operations as Kafka ACL bindings (operation, resource type)
ACL_BINDINGS = {"CREATE_TOPIC": ("CREATE", "TOPIC"), "ALTER_CONFIGS": ("ALTER_CONFIGS", "TOPIC"),
                kafka.ALTER_CLUSTER: ("ALTER", "CLUSTER"),
                kafka.CLUSTER_ACTION: ("CLUSTER_ACTION", "CLUSTER"),
                kafka.DESCRIBE_GROUP: ("DESCRIBE", "GROUP"),
                kafka.DESCRIBE_TOPIC: ("DESCRIBE", "TOPIC")}


# The model gives each node one ``api_max``: the highest version it parses of CreateTopics,
# the API whose range changed across Kafka releases in the configurations.  Other mutations
# have ranges of their own (IncrementalAlterConfigs 0-1, CreateAcls 0-3) that the model does
# not have, so conformance is defined for configurations whose clients send CreateTopics,
# DescribeCluster or a CreateTopics inside an Envelope -- and, in a migration configuration
# whose every node parses the latest version (the model's api_max at its default, so that no
# version check can fail), IncrementalAlterConfigs and CreateAcls: there the model's version
# number stands for "the latest", which the implementation's latest of that API projects to.
CONFORMANCE_APIS = (kafka.CREATE_TOPICS, kafka.DESCRIBE_CLUSTER)
LATEST_ONLY_APIS = (kafka.INCREMENTAL_ALTER_CONFIGS, kafka.CREATE_ACLS)
MODEL_LATEST_VERSION = next(f.default for f in fields(NodeSpec) if f.name == "api_max")


def unsupported(cfg: ModelConfig) -> str | None:
    """Why conformance cannot run on ``cfg`` (None: it can).  FindCoordinator and Metadata
    clients (AT-1, AT-2) are in: the model gives them no version (the implementation's
    clients send their latest), and the CreateTopics a Metadata request makes is versioned
    like a forwarded CreateTopics."""
    latest_only = cfg.migration and all(n.api_max == MODEL_LATEST_VERSION for n in cfg.nodes)
    for c in cfg.clients:
        if c.api in CONFORMANCE_APIS or (latest_only and c.api in LATEST_ONLY_APIS):
            continue
        if c.kind in (FIND_COORDINATOR, METADATA):
            continue
        return (f"conformance needs clients that send CreateTopics or DescribeCluster (or, in "
                f"a migration whose nodes all parse the latest versions, "
                f"IncrementalAlterConfigs or CreateAcls): {cfg.name}'s client {c.name} sends "
                f"{kafka.API_NAMES.get(c.api, c.api)}, whose version range the model's "
                f"per-node api_max does not describe")
    return None


def cluster_config(cfg: ModelConfig, bugs=()) -> ClusterConfig:
    why = unsupported(cfg)
    if why:
        raise ValueError(why)
    unknown = [b for b in bugs if b not in KNOWN_BUGS + VARIANT_BUGS]
    if unknown:
        raise ValueError(f"unknown implementation bug {unknown[0]!r}; bugs: "
                         f"{', '.join(KNOWN_BUGS + VARIANT_BUGS)}")
    tick = tick_ms(cfg)
    nodes = tuple(NodeConfig(i, n.name, n.role, node_properties(cfg, i), n.principal,
                             api_max=((kafka.CREATE_TOPICS, n.api_max),
                                      (kafka.INCREMENTAL_ALTER_CONFIGS, min(n.api_max, 1)),
                                      (kafka.CREATE_ACLS, min(n.api_max, 3))),
                             principal_serde=n.principal_serde, software=n.software)
                  for i, n in enumerate(cfg.nodes))
    kinds = {DESCRIBE: I_DESCRIBE, FORGED_ENVELOPE: I_FORGED,
             FIND_COORDINATOR: I_FIND_COORDINATOR, METADATA: I_METADATA}
    clients = tuple(ClientConfig(c.name, c.principal, kinds.get(c.kind, I_MUTATION), c.node,
                                 c.listener, c.api, c.endpoint_type, c.claimed_principal,
                                 topic=c.topic_name if c.kind == METADATA else "")
                    for c in cfg.clients)
    return ClusterConfig(
        name=cfg.name, mode=KRAFT_MODE if cfg.mode == KRAFT else ZK_MODE, nodes=nodes,
        clients=clients,
        acls=frozenset((p,) + ACL_BINDINGS[op] for p, op in cfg.acls),
        metadata_version=cfg.metadata_version,
        kraft_version=dict(cfg.finalized_features).get(kafka.KRAFT_VERSION_FEATURE, 0),
        initial_controller=cfg.initial_controller,
        partition_leaders=tuple(cfg.partition_leaders),
        initially_registered=tuple(cfg.initially_registered), registration=cfg.registration,
        broker_registration=cfg.broker_registration,
        initially_registered_brokers=tuple(cfg.initially_registered_brokers),
        zk_broker_registration=cfg.zk_broker_registration,
        zk_forwarding=cfg.zk_forwarding, migration=cfg.migration,
        forward_retry_timeout_ms=cfg.forward_timeout * tick,
        registration_retry_timeout_ms=cfg.registration_timeout * tick,
        request_timeout_ms=cfg.forward_timeout * tick,
        tick_ms=tick, max_time_ms=cfg.max_time * tick, max_in_flight=cfg.max_in_flight,
        bugs=frozenset(bugs))


def new_cluster(cfg: ModelConfig, seed: int, bugs=()):
    from impl.cluster import Cluster
    return Cluster(cluster_config(cfg, bugs), seed=seed)


# ---- projection: implementation -> model vocabulary ------------------------------------------

class Projector:
    """Names in the implementation (node ids, client ids, topic names, incarnation UUIDs,
    listener names, principals) -> the model's indices."""

    def __init__(self, cfg: ModelConfig):
        self.cfg = cfg
        self.client_index = {c.name: i for i, c in enumerate(cfg.clients)}
        self.listener_index = {name: i for i, name in enumerate(cfg.listener_names)}
        self.principal_index = {name: i for i, name in enumerate(cfg.principal_names)}
        self.topic_index = {name: i for i, name in enumerate(cfg.topic_names)}

    def topic(self, names) -> object:
        """The model's topic index of a CreateTopics that names one topic; anything else (an
        unknown name, several topics) stays as it is, which no index equals."""
        if len(names) == 1 and names[0] in self.topic_index:
            return self.topic_index[names[0]]
        return tuple(names)

    def incarnation_rank(self, cluster, node: int, incarnation_id) -> int:
        """The model numbers a node's process runs 0, 1, ...; the implementation draws a UUID
        per run.  An incarnation_id no run of the node had projects to -1."""
        history = cluster.incarnations(node)
        return history.index(incarnation_id) if incarnation_id in history else -1

    def endpoint_token(self, cluster, node: int, host, port: int):
        """The model's endpoints token (``model.state``) of one endpoint of ``node`` the
        implementation shows: a blank host or port 0 is UNRESOLVED_ENDPOINTS (as configured,
        EP-4); a port that process run i of the node bound for a port-0 listener is i (EP-5);
        a port the node is configured with is STATIC_ENDPOINTS.  Any other endpoint stays
        ``host:port``, which no model token equals."""
        if port == 0 or not (host or "").strip():
            return UNRESOLVED_ENDPOINTS
        run = cluster.ephemeral_port_run(node, port)
        if run is not None:
            return run
        configured = {_port(node, j) for j, lst in enumerate(self.cfg.nodes[node].listeners)
                      if lst.port != 0}
        return STATIC_ENDPOINTS if port in configured else f"{host}:{port}"

    def listeners_token(self, cluster, node: int, endpoints) -> object:
        """The model's token of a ZooKeeper registration (``/brokers/ids/N``'s endpoints, or a
        broker's cached BrokerInfo, as (listener name, host, port)): the version of the node's
        listeners configuration that advertised all of them, every listener of that version
        present; anything else stays the endpoints as text, which no model token equals."""
        versions = {cluster.advertised_version(node, name, host, port)
                    for name, host, port in endpoints}
        if len(versions) == 1 and None not in versions:
            names = {lst.name for lst in self.cfg.nodes[node].listeners}
            if {name for name, _, _ in endpoints} == names and len(endpoints) == len(names):
                return versions.pop()
        return tuple(f"{name}://{host}:{port}" for name, host, port in endpoints)

    def registration_token(self, cluster, node: int, endpoints) -> object:
        """The model's endpoints token of a registration (its request's Listeners or its
        record's EndPoints, as (name, host, port)): UNRESOLVED_ENDPOINTS if any is; else the
        one process run whose bound ports it carries; else STATIC_ENDPOINTS.  Endpoints of
        several runs at once have no model token (their tokens are shown instead)."""
        tokens = {self.endpoint_token(cluster, node, host, port) for _, host, port in endpoints}
        if UNRESOLVED_ENDPOINTS in tokens:
            return UNRESOLVED_ENDPOINTS
        others = tokens - {STATIC_ENDPOINTS}
        if not others:
            return STATIC_ENDPOINTS
        return next(iter(others)) if len(others) == 1 else tuple(sorted(map(str, others)))

    def message(self, cluster, view) -> Msg | None:
        """The model message an implementation message stands for, or None for messages the
        model does not have (the ApiVersions handshake on connect: the model learns the
        controller's versions with the first send, F-35)."""
        li = self.listener_index.get(view.listener, -1)
        if view.kind == "EnvelopeRequest":
            return EnvelopeRequest(ENVELOPE_REQUEST, view.src, view.dst, li,
                                   self.client_index.get(view.client, -1),
                                   self.model_version(view.api_key, view.api_version),
                                   view.hops, self.principal_index.get(view.sender_principal, -1))
        if view.kind == "EnvelopeResponse":
            return EnvelopeResponse(ENVELOPE_RESPONSE, view.src, view.dst, li,
                                    self.client_index.get(view.client, -1), view.error,
                                    view.inner_error)
        if view.kind == "ControllerRegistrationRequest":
            return ControllerRegistrationRequest(
                REGISTRATION_REQUEST, view.src, view.dst, li, view.src,
                self.incarnation_rank(cluster, view.src, view.incarnation_id),
                self.registration_token(cluster, view.src, view.listeners),
                self.principal_index.get(view.sender_principal, -1))
        if view.kind == "ControllerRegistrationResponse":
            return ControllerRegistrationResponse(
                REGISTRATION_RESPONSE, view.src, view.dst, li, view.dst, view.error,
                self.incarnation_rank(cluster, view.dst, view.incarnation_id))
        if view.kind == "BrokerRegistrationRequest":
            return BrokerRegistrationRequest(
                BROKER_REGISTRATION_REQUEST, view.src, view.dst, li, view.broker_id,
                self.incarnation_rank(cluster, view.src, view.incarnation_id),
                self.registration_token(cluster, view.src, view.listeners),
                self.principal_index.get(view.sender_principal, -1))
        if view.kind == "BrokerRegistrationResponse":
            return BrokerRegistrationResponse(
                BROKER_REGISTRATION_RESPONSE, view.src, view.dst, li,
                self.incarnation_rank(cluster, view.dst, view.incarnation_id), view.error,
                view.broker_epoch)
        if view.kind == "BrokerHeartbeatRequest":
            return BrokerHeartbeatRequest(
                BROKER_HEARTBEAT_REQUEST, view.src, view.dst, li,
                self.incarnation_rank(cluster, view.src, view.incarnation_id), view.broker_epoch,
                view.metadata_offset, self.principal_index.get(view.sender_principal, -1))
        if view.kind == "CreateTopicsRequest":
            return CreateTopicsRequest(CREATE_TOPICS_REQUEST, view.src, view.dst, li,
                                       self.topic(view.topics), 0, 0,
                                       self.principal_index.get(view.sender_principal, -1))
        if view.kind == "CreateTopicsResponse":
            return CreateTopicsResponse(CREATE_TOPICS_RESPONSE, view.src, view.dst, li,
                                        self.topic(view.topics), view.error, 0)
        if view.kind == "BrokerHeartbeatResponse":
            # registered_epoch is a ghost no implementation has: 0 here, and 0 in the
            # model's messages too when the networks are compared (``comparable``)
            return BrokerHeartbeatResponse(
                BROKER_HEARTBEAT_RESPONSE, view.src, view.dst, li,
                self.incarnation_rank(cluster, view.dst, view.incarnation_id), view.error,
                1 if view.is_fenced else 0, 0)
        return None

    @staticmethod
    def model_version(api_key: int, version: int) -> int:
        """An inner request's version in the model's terms: CreateTopics's own; the latest
        version of IncrementalAlterConfigs or CreateAcls (see ``unsupported``) the model's
        latest; any other stays as it is, which the model's version does not equal."""
        if api_key in LATEST_ONLY_APIS and version == CLIENT_MAX_VERSION[api_key]:
            return MODEL_LATEST_VERSION
        return version

    def migration(self, cluster) -> MigrationView:
        """The implementation's ``MigrationView``: ``/controller`` and ``/controller_epoch`` as
        an observer reads them, which process acts as controller in ZooKeeper (a ZK broker's
        ``KafkaController.isActive``, the KRaft controller's ZooKeeper leadership) with its
        epoch and zkVersion, each broker's metadata cache, whether it forwards (F-4, MG-1),
        and its pending entity-config writes (MG-6) with the ``/controller_epoch`` zkVersion at
        the read."""
        cfg = self.cfg
        zkc = cluster.zkc
        active = []
        for n in range(cfg.n_nodes):
            p = zkc.process(n)
            active.append((p.is_active, p.epoch, p.epoch_zk_version) if p.is_active
                          else (False, -1, -1))
        brokers = cfg.brokers()
        return MigrationView(
            zkc.controller(), zkc.controller_epoch(), tuple(active),
            tuple(zkc.brokers[b].known_controller for b in brokers),
            tuple(not cluster.api_forwarding_enabled(b) for b in brokers),
            tuple(tuple((self.client_index.get(w.mutation.tag, -1), w.epoch_zk_version_at_read)
                        for w in zkc.brokers[b].config_writes) for b in brokers))

    def auto_topics(self, cluster) -> AutoTopicView:
        """The implementation's ``AutoTopicView``: the committed TopicRecords of brokers' own
        CreateTopicsRequests with the principal the controller created each as, and per broker
        its AutoTopicCreationManager's in-flight topics and own requests on the channel."""
        topics = tuple((self.topic((t.name,)), t.writer, t.writer_epoch,
                        self.principal_index.get(t.principal, -1))
                       for t in cluster.created_topics())
        states = [cluster.auto_topic_state(b) for b in self.cfg.brokers()]
        return AutoTopicView(
            topics, tuple(tuple(sorted(self.topic((t,)) for t in st.inflight_topics))
                          for st in states),
            tuple(tuple((self.topic(names), in_flight) for names, in_flight in st.requests)
                  for st in states))

    def network(self, cluster) -> dict:
        """model message -> implementation message ids carrying it."""
        out = {}
        for view in cluster.message_views():
            m = self.message(cluster, view)
            if m is not None:
                out.setdefault(m, []).append(view.id)
        return out

    def observation(self, cluster) -> Observation:
        cfg = self.cfg
        results = cluster.client_results()
        responses = tuple(tuple((r.error_code, r.envelope_error)
                                for r in results.get(c.name, ())) for c in cfg.clients)
        if cfg.zk_broker_registration:
            # a ZK broker lists the /brokers/ids endpoints: the token is the version of the
            # listeners configuration that advertised the endpoint
            def token(n, lst, host, port):
                version = cluster.advertised_version(n, lst, host, port)
                return f"{host}:{port}" if version is None else version
        else:
            def token(n, lst, host, port):
                return self.endpoint_token(cluster, n, host, port)
        endpoints = tuple(frozenset((cfg.nodes[n].name, lst, token(n, lst, host, port))
                                    for r in results.get(c.name, ())
                                    for n, lst, host, port in r.endpoints)
                          for c in cfg.clients)
        writes = tuple((self.client_index.get(w.client, -1), w.writer, w.writer_epoch)
                       for w in cluster.durable_writes())
        if cfg.mode == KRAFT:
            regs = tuple((r.controller_id, self.incarnation_rank(cluster, r.controller_id,
                                                                 r.incarnation_id),
                          self.registration_token(cluster, r.controller_id, r.endpoints))
                         for r in cluster.registrations())
            broker_regs = tuple((r.broker_id, self.incarnation_rank(cluster, r.broker_id,
                                                                    r.incarnation_id),
                                 r.broker_epoch,
                                 self.registration_token(cluster, r.broker_id, r.endpoints))
                                for r in cluster.broker_registrations())
            lifecycles = tuple(cluster.broker_lifecycle(b) for b in cfg.brokers())
        else:
            regs = broker_regs = lifecycles = ()
        registered = tuple(cluster.registered(c) for c in cfg.controllers())
        zk_ids = zk_listeners = ()
        if cfg.zk_broker_registration:
            znodes = {r.broker_id: r for r in cluster.zk_broker_registrations()}
            zk_ids = tuple(self.listeners_token(cluster, b, znodes[b].endpoints)
                           if b in znodes else NO_VERSIONS for b in cfg.brokers())
            zk_listeners = tuple(
                (version, NO_VERSIONS if cached is None
                 else self.listeners_token(cluster, b, cached))
                for b in cfg.brokers() for version, cached in (cluster.zk_broker_info(b),))
        return Observation(responses, endpoints, writes, regs, registered, broker_regs,
                           lifecycles, zk_ids, zk_listeners)


class MigrationView(NamedTuple):
    """What a ZK-to-KRaft migration shows besides ``model.observe.Observation`` (whose
    ``writes`` already carry the KRaft controller's dual writes, with the epoch it claimed):
    ``/controller``'s holder (-1: none), ``/controller_epoch`` as (epoch, zkVersion), per node
    whether it acts as controller in ZooKeeper, with the epoch and the /controller_epoch
    zkVersion it won (its election's or its claim's; (False, -1, -1) when it does not), per
    broker the controller its metadata cache names, whether it still runs an IBP below
    3.4-IV0 (it does not forward, MG-1), and its entity-config writes between the read of
    /controller and the multi (MG-6): (client, /controller_epoch zkVersion at the read)."""
    controller: int
    controller_epoch: tuple
    controllers: tuple
    caches: tuple
    legacy_ibp: tuple
    config_writes: tuple


def model_migration_view(s, cfg: ModelConfig) -> MigrationView:
    """The model's ``MigrationView`` of state ``s``."""
    brokers = cfg.brokers()
    return MigrationView(
        s.zk.controller, (s.zk.epoch, s.zk.epoch_version),
        tuple((True, nd.zk_epoch, nd.zk_epoch_version) if nd.zk_active else (False, -1, -1)
              for nd in s.nodes),
        tuple(s.nodes[b].known_controller for b in brokers),
        tuple(s.nodes[b].legacy_ibp for b in brokers),
        tuple(tuple(s.nodes[b].config_writes) for b in brokers))


class AutoTopicView(NamedTuple):
    """What a configuration with topics requests need (``ModelConfig.internal_topics``, AT-1 to
    AT-5) shows besides the observation (whose ``writes`` carry a Metadata request's
    auto-creation, a client's CreateTopics): the committed TopicRecords of brokers' own
    CreateTopicsRequests as (topic, writer, epoch, principal created as), and per broker its
    AutoTopicCreationManager's in-flight topics (sorted) and its own CreateTopicsRequests on
    the controller channel as (topic, in flight), in channel order.  The model's in-flight set
    is its channel's items: a broker's own CreateTopics, and the Envelope of a Metadata
    request's auto-creation (Kafka marks both, AT-3)."""
    topics: tuple
    inflight: tuple
    requests: tuple


def model_auto_topic_view(s, cfg: ModelConfig) -> AutoTopicView:
    """The model's ``AutoTopicView`` of state ``s``."""
    topics = tuple((r.topic, r.writer, r.epoch, r.principal) for r in s.quorum.log
                   if r.kind == TOPIC_RECORD)
    inflight, requests = [], []
    for b in cfg.brokers():
        node = s.nodes[b]
        ch = node.channel
        items = ([(ch.inflight, True)] if ch.inflight else []) + [(i, False) for i in ch.queue]
        if not node.alive:
            items = []
        names = {i.topic for i, _ in items if i.kind == TOPIC_CREATION}
        names |= {cfg.topic_index(cfg.clients[i.client].topic_name) for i, _ in items
                  if i.kind == FORWARD and cfg.clients[i.client].kind == METADATA}
        inflight.append(tuple(sorted(names)))
        requests.append(tuple((i.topic, fl) for i, fl in items if i.kind == TOPIC_CREATION))
    return AutoTopicView(topics, tuple(inflight), tuple(requests))


def comparable(m: Msg) -> Msg:
    """A model message as the implementation can show it: a BrokerHeartbeatResponse's last
    position, ``registered_epoch``, is a ghost (the broker epoch of the registration the
    controller held when it answered, for P10) that no implementation has on the wire, so the
    networks are compared with it left out -- zeroed here and in ``Projector.message``."""
    if m.kind == BROKER_HEARTBEAT_RESPONSE:
        return m._replace(registered_epoch=0)
    return m


def model_network(s) -> dict:
    out = {}
    for m in s.network:
        m = comparable(m)
        out[m] = out.get(m, 0) + 1
    return out


# ---- divergences -----------------------------------------------------------------------------

@dataclass
class Divergence:
    index: int                  # 1-based index of the diverging step (0: the initial state)
    step: Step | None
    kind: str                   # "not enabled in the implementation", "observation", "network",
                                # "no such message in the implementation", "migration",
                                # "auto-topics"
    model: object
    impl: object
    steps: tuple = ()           # the steps up to and including the diverging one

    def describe(self, cfg: ModelConfig | None = None) -> str:
        where = "the initial state" if self.step is None else f"step {self.index} ({self.step})"
        lines = [f"divergence at {where}: {self.kind}"]
        if self.kind in ("observation", "network", "migration", "auto-topics"):
            lines.append(f"  model: {self.model}")
            lines.append(f"  impl:  {self.impl}")
        elif self.impl is not None:
            lines.append(f"  impl: {self.impl}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"index": self.index, "step": self.step.to_json() if self.step else None,
                "kind": self.kind, "model": repr(self.model), "impl": repr(self.impl),
                "steps": [s.to_json() for s in self.steps]}


def _compare(proj: Projector, cluster, s, index, st, steps) -> Divergence | None:
    mo, io = observe(s, proj.cfg), proj.observation(cluster)
    if mo != io:
        diff = {f: (getattr(mo, f), getattr(io, f)) for f in Observation._fields
                if getattr(mo, f) != getattr(io, f)}
        return Divergence(index, st, "observation", {k: v[0] for k, v in diff.items()},
                          {k: v[1] for k, v in diff.items()}, tuple(steps))
    views = []
    if proj.cfg.migration:
        views.append(("migration", model_migration_view(s, proj.cfg), proj.migration(cluster)))
    if proj.cfg.internal_topics:
        views.append(("auto-topics", model_auto_topic_view(s, proj.cfg),
                      proj.auto_topics(cluster)))
    for kind, mv, iv in views:
        if mv != iv:
            diff = [f for f in mv._fields if getattr(mv, f) != getattr(iv, f)]
            return Divergence(index, st, kind, {f: getattr(mv, f) for f in diff},
                              {f: getattr(iv, f) for f in diff}, tuple(steps))
    mn = model_network(s)
    inet = {m: len(ids) for m, ids in proj.network(cluster).items()}
    if mn != inet:
        only_model = sorted(set(mn) - set(inet))
        only_impl = sorted(set(inet) - set(mn))
        return Divergence(index, st, "network", {"only in the model": only_model},
                          {"only in the implementation": only_impl}, tuple(steps))
    return None


class Driver:
    """The model and one implementation cluster in lockstep."""

    def __init__(self, cfg: ModelConfig, seed: int, design: Design = Design(), bugs=()):
        self.cfg, self.design = cfg, design
        self.state = model_next.initial_state(cfg)
        self.cluster = new_cluster(cfg, seed, bugs)
        self.proj = Projector(cfg)
        self.steps: list = []

    def start(self) -> Divergence | None:
        return _compare(self.proj, self.cluster, self.state, 0, None, ())

    def impl_event_args(self, st: Step):
        """The implementation arguments of a model step (ids are the model's indices; a
        message step names the implementation message that projects to the model's)."""
        if not st.args:
            return ()
        arg = st.args[0]
        kind = model_next.ACTION_BY_NAME[st.action].arg
        if kind == model_next.MSG_ARG:
            m = comparable(message(arg))
            ids = self.proj.network(self.cluster).get(m)
            return None if not ids else (ids[0],)
        if kind == model_next.CLIENT_ARG:
            return (self.cfg.clients[arg].name,)
        return (arg,)

    def apply(self, st: Step) -> Divergence | None:
        nxt = model_next.step(self.state, self.cfg, self.design, st)
        if nxt is None:
            raise ValueError(f"model step {st} is not enabled")
        self.steps.append(st)
        index = len(self.steps)
        args = self.impl_event_args(st)
        if args is None:
            return Divergence(index, st, "no such message in the implementation", None,
                              sorted(self.proj.network(self.cluster)), tuple(self.steps))
        from impl.sim import Event
        ok = self.cluster.apply(Event(st.action, args))
        if not ok:
            return Divergence(index, st, "not enabled in the implementation", None,
                              self.cluster.why_not(Event(st.action, args)), tuple(self.steps))
        self.state = nxt
        return _compare(self.proj, self.cluster, self.state, index, st, self.steps)


def check_steps(cfg: ModelConfig, steps, seed: int = 0, design: Design = Design(),
                bugs=()) -> Divergence | None:
    """Drive both sides through ``steps`` (model steps); the first divergence, or None."""
    d = Driver(cfg, seed, design, bugs)
    div = d.start()
    if div:
        return div
    for st in steps:
        div = d.apply(st)
        if div:
            return div
    return None


# ---- Hypothesis-driven differential testing --------------------------------------------------

class _Diverged(Exception):
    def __init__(self, div: Divergence):
        super().__init__(div.describe())
        self.div = div


@dataclass
class ConformanceResult:
    config: str
    seed: int
    profile: str
    runs: int = 0
    steps: int = 0                  # model steps (each also applied to the implementation)
    seconds: float = 0.0
    divergence: Divergence | None = None
    shrunk_from: int | None = None
    actions: dict = field(default_factory=dict)

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    def divergence_text(self) -> str | None:
        return self.divergence.describe() if self.divergence else None

    def to_dict(self) -> dict:
        return {"config": self.config, "seed": self.seed, "profile": self.profile,
                "runs": self.runs, "steps": self.steps, "seconds": round(self.seconds, 3),
                "steps_per_second": round(self.steps_per_second, 1),
                "divergence": self.divergence.to_json() if self.divergence else None,
                "actions": dict(self.actions)}


def run_conformance(config, *, seed: int = 0, profile: str = "ci", steps: int | None = None,
                    examples: int | None = None, bugs=(), design: Design = Design(),
                    progress=None) -> ConformanceResult:
    """Hypothesis chooses model steps among the enabled ones (faults included); every step
    is applied to the model and to the implementation and the observations compared.  A
    divergence is shrunk by Hypothesis to a short trace and re-checked from scratch."""
    import hypothesis
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis import strategies as hs

    cfg = CONFIGS[config] if isinstance(config, str) else config
    why = unsupported(cfg)
    if why:
        raise ValueError(why)
    n_examples, n_steps = PROFILES[profile]
    n_examples = examples or n_examples
    n_steps = steps or n_steps
    res = ConformanceResult(cfg.name, seed, profile)
    t0 = time.perf_counter()

    def one_run(data):
        d = Driver(cfg, seed, design, bugs)
        div = d.start()
        if div:
            raise _Diverged(div)
        res.runs += 1
        for _ in range(n_steps):
            succ = model_next.successors(d.state, cfg, design)
            if not succ:
                break
            st, _ = succ[data.draw(hs.integers(0, len(succ) - 1))]
            res.steps += 1
            res.actions[st.action] = res.actions.get(st.action, 0) + 1
            div = d.apply(st)
            if div:
                raise _Diverged(div)
        if progress:
            progress(res)

    test = hypothesis.given(hs.data())(one_run)
    test = settings(max_examples=n_examples, database=None, deadline=None,
                    derandomize=False, suppress_health_check=list(HealthCheck),
                    phases=(Phase.generate, Phase.shrink), print_blob=False)(test)
    test = hypothesis.seed(seed)(test)
    try:
        test()
    except _Diverged as e:
        # Hypothesis re-raises the shrunk example's failure; re-check it from scratch.
        div = e.div
        res.shrunk_from = None
        again = check_steps(cfg, div.steps, seed, design, bugs)
        res.divergence = again or div
    res.seconds = time.perf_counter() - t0
    return res


# ---- trace validation: the implementation runs free, the model follows ------------------------

def validate_impl_run(cfg: ModelConfig, seed: int, max_steps: int = 200,
                      fault_rate: float = 0.15, design: Design = Design(), bugs=()) -> tuple:
    """Run the implementation in its own seeded simulator; map every event it takes to a
    model step and check that the model (of ``design``) can take it and ends in the same
    observation.  ``bugs``: the implementation's injected bugs (``cluster_config``).
    Returns (model steps taken, Divergence or None)."""
    from impl.sim import Simulation
    proj = Projector(cfg)
    cluster = new_cluster(cfg, seed, bugs)
    sim = Simulation(cluster, seed, fault_rate=fault_rate)
    s = model_next.initial_state(cfg)
    steps: list = []
    div = _compare(proj, cluster, s, 0, None, steps)
    if div:
        return steps, div
    cluster.set_fault_budget(model_next.fault_budgets(cfg))
    for _ in range(max_steps):
        if cluster.now_ms > cfg.max_time * cluster.config.tick_ms:
            break
        before = {m: ids for m, ids in proj.network(cluster).items()}
        event = sim.step()
        if event is None:
            break
        st = _model_step(proj, cluster, event, before, s)
        if st is None:
            continue                    # an implementation-internal event (ApiVersions)
        steps.append(st)
        nxt = model_next.step(s, cfg, design, st)
        if nxt is None:
            return steps, Divergence(len(steps), st, "the model cannot take the "
                                     "implementation's step", None, str(event), tuple(steps))
        s = nxt
        div = _compare(proj, cluster, s, len(steps), st, steps)
        if div:
            return steps, div
    return steps, None


def _model_step(proj: Projector, cluster, event, network_before: dict, s) -> Step | None:
    """The model step an implementation event stands for (None: internal).  A message step
    names the message of the model state ``s`` that projects to the implementation's (the
    ghost positions ``comparable`` leaves out are the model's own)."""
    name = event.name
    action = model_next.ACTION_BY_NAME.get(name)
    if action is None:
        return None
    kind = action.arg
    if kind == model_next.NONE_ARG:
        return Step(name, ())
    if kind == model_next.CLIENT_ARG:
        return Step(name, (proj.client_index[event.args[0]],))
    if kind == model_next.NODE_ARG:
        return Step(name, (event.args[0],))
    for m, ids in network_before.items():
        if event.args[0] in ids:
            own = [x for x in sorted(s.network) if comparable(x) == m]
            return Step(name, (tuple(own[0] if own else m),))
    return None
