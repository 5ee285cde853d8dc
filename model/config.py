"""Every bound and every design decision of the model, in two records.

``ModelConfig`` is the world: nodes with their listeners and principals, admin clients and
the one request each sends, ACLs, ``metadata.version``, the fault budget and the time bound.
``Design`` is the protocol design: one named flag per decision.  ``Design()`` is the design of
the KIPs as Kafka ships it; a design variant (section 5 of DESIGN.md) flips one flag.

Time is abstract: a tick is a slice of time, and ``forward_timeout`` (the forwarding channel's
retry timeout: 60000 ms on a KRaft broker, ``request.timeout.ms`` = 30000 ms on a ZK broker,
F-17) and ``registration_timeout`` (the registration channel's 5000 ms, R-11) are counted in
ticks.  Only the order of events against these deadlines matters to the properties, not the
real ratio of the timeouts (docs/model.md gives the scale per configuration).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property

from model import kafka

ZK, KRAFT = "zk", "kraft"
BROKER, CONTROLLER = "broker", "controller"
# listener roles (KIP-103): client traffic, inter-broker (privileged in ZK mode, L-18), controller
CLIENT_LISTENER, INTER_BROKER_LISTENER, CONTROLLER_LISTENER = "client", "inter_broker", "controller"
# what a client does
MUTATION, DESCRIBE, FORGED_ENVELOPE = "mutation", "describe", "forged_envelope"
# ... or asks for a group's coordinator (FindCoordinator, AT-1), or for a topic's metadata with
# AllowAutoTopicCreation (Metadata, AT-2): both may make the broker create a topic
FIND_COORDINATOR, METADATA = "find_coordinator", "metadata"


# an advertised host left blank: the node resolves it to its canonical host name (EP-3)
WILDCARD_HOST = ""


@dataclass(frozen=True)
class Listener:
    name: str                   # normalised (upper-case) listener name, e.g. "INTERNAL"
    protocol: str               # security protocol, e.g. "SASL_SSL"
    role: str                   # CLIENT_LISTENER | INTER_BROKER_LISTENER | CONTROLLER_LISTENER
    # the advertised endpoint as configured: a blank host is resolved to the canonical host
    # name and port 0 to the port the process bound (EP-1..EP-5), so with port 0 every
    # process run of the node has its own endpoint
    host: str = "localhost"
    port: int = 9092

    @property
    def needs_resolving(self) -> bool:
        return self.host == WILDCARD_HOST or self.port == 0


@dataclass(frozen=True)
class NodeSpec:
    name: str                   # "B1", "C2": brokers B*, KRaft controllers C*
    role: str                   # BROKER | CONTROLLER (in ZK mode every node is a broker)
    listeners: tuple            # tuple[Listener]
    principal: str              # the principal this node authenticates as on other nodes
    api_max: int = 7            # highest version of the forwardable APIs it parses (F-35)
    # the principal builder of the listener envelopes arrive on implements KafkaPrincipalSerde
    # (F-23, F-29a).  A listener-prefixed principal.builder.class escapes KafkaConfig's startup
    # check (lint-config W-4), so a node can lack it there; its client listeners' builder always
    # has one since that check (KAFKA-13051), so a forwarder always builds its envelope (F-12).
    principal_serde: bool = True
    # The features its software supports, per process run (a restart may start other software:
    # a rolling upgrade), the last entry for every later run: each a tuple of (feature, min
    # level, max level), the Features of its registration (BR-4.9, R-14).  Empty: every run
    # supports every finalized feature at its level.
    software: tuple = ()

    def features(self, incarnation: int) -> tuple | None:
        """The supported features of process run ``incarnation``, None when unconstrained."""
        if not self.software:
            return None
        return self.software[min(incarnation, len(self.software) - 1)]


@dataclass(frozen=True)
class ClientSpec:
    name: str
    principal: str
    kind: str                   # MUTATION | DESCRIBE | FORGED_ENVELOPE
    node: int                   # index of the node it sends to (bootstrap target)
    listener: str               # name of the listener it connects to
    api: int = kafka.CREATE_TOPICS
    endpoint_type: int = kafka.ENDPOINT_BROKER   # DescribeCluster v1 EndpointType
    claimed_principal: str = ""  # FORGED_ENVELOPE: the principal written into RequestPrincipal
    topic: str = ""             # METADATA: the topic it asks for (default: "<name>-topic")

    @property
    def mutation_api(self) -> int:
        """The API of the mutation the request makes at the controller: a Metadata request's
        auto-creation is a CreateTopics (AT-2, AT-4)."""
        return kafka.CREATE_TOPICS if self.kind == METADATA else self.api

    @property
    def topic_name(self) -> str:
        """The topic the request creates or needs: FindCoordinator's group coordinator needs
        the internal __consumer_offsets (AT-1)."""
        if self.kind == FIND_COORDINATOR:
            return kafka.CONSUMER_OFFSETS
        return self.topic or f"{self.name}-topic"


@dataclass(frozen=True)
class ModelConfig:
    name: str
    description: str
    mode: str                   # ZK | KRAFT
    nodes: tuple                # tuple[NodeSpec]
    clients: tuple              # tuple[ClientSpec]
    acls: frozenset             # frozenset[(principal, operation)]
    tier: str = "tiny"          # "tiny": CI, exhaustive in seconds; "small": minutes
    zk_forwarding: bool = True  # ZK brokers forward (KIP-590 design; F-4 migration mode)
    registration: bool = False  # KIP-919 controller registration runs
    metadata_version: int = kafka.MV_3_7_IV0
    # finalized levels of the features other than metadata.version, as (feature, level): fixed
    # (no UpdateFeatures here); a broker's registration must support each (BR-4.9)
    finalized_features: tuple = ()
    initial_controller: int | None = 0  # ZK: elected controller at start; KRaft: leader
    initially_registered: tuple = ()   # KRaft controllers registered (incarnation 0) at start
    # KRaft brokers run their BrokerLifecycleManager: they register, heartbeat, and the active
    # controller fences and unfences them (BR-*, BH-*, BL-*)
    broker_registration: bool = False
    # KRaft brokers registered (incarnation 0, unfenced) at start, in a log written before an
    # upgrade of metadata.version: their BrokerRegistrationTracker has asked for a resend of
    # the registration (BL-8), which the start-up state stands just after
    initially_registered_brokers: tuple = ()
    session_timeout: int = 1    # broker.session.timeout.ms in ticks (BH-1, BH-9)
    # ZK brokers register the ephemeral /brokers/ids/N with their advertised endpoints, again
    # after every session expiry, and answer DescribeCluster from those registrations (ZB-*)
    zk_broker_registration: bool = False
    # KRaft brokers create the topics requests need through the active controller: the
    # internal __consumer_offsets for FindCoordinator, as the broker itself and without an
    # Envelope, and a Metadata request's auto-created topic in an Envelope with the client's
    # principal (AT-1..AT-5); ``create_topic_policy`` names the topics the controller's
    # create.topic.policy.class.name refuses (POLICY_VIOLATION)
    internal_topics: bool = False
    create_topic_policy: tuple = ()
    # topics that exist from the start, each with the node that leads its one partition:
    # (topic name, leader node index) pairs; a Metadata request for one answers with the
    # leader's endpoint on the request's listener, or says why it cannot (L-27, L-28)
    partition_leaders: tuple = ()
    # ZK-to-KRaft migration (MG-1..MG-7): the brokers run with
    # zookeeper.metadata.migration.enable, the configuration's KRaft controllers (role
    # CONTROLLER, in ZK mode) may claim /controller (MG-5) and then take the brokers' forwarded
    # requests, dual-writing them to ZooKeeper; IncrementalAlterConfigs is forwarded only to a
    # KRaft controller, and processed by the broker itself under a ZK controller (F-6, MG-6)
    migration: bool = False
    # brokers not yet bounced into migration mode: their inter.broker.protocol.version is below
    # 3.4-IV0, so they do not forward and handle ZK mutations themselves (KIP-590: "After first
    # rolling bounce ... all fellow brokers are still handling ZK mutation requests by
    # themselves"; F-4, MG-1); ``operator_bumps_ibp`` bounces one with the new IBP
    legacy_ibp_brokers: tuple = ()
    forward_timeout: int = 2
    registration_timeout: int = 1
    max_time: int = 3
    max_elections: int = 0
    max_session_expiries: int = 0
    max_crashes: int = 0
    max_restarts: int = 0
    max_drops: int = 0
    # dynamic advertised-listener updates (ZB-9, KIP-226); with zk_broker_registration only
    # (KRaft refuses them, and without registrations nothing reads the listeners version)
    max_listener_updates: int = 0
    max_in_flight: int = 3
    symmetric_groups: tuple = ()       # tuples of interchangeable node indices (section 3.3)
    witnesses: tuple = ()              # witness IDs that must be reachable here

    # -- derived, read-only views -------------------------------------------------------
    @property
    def variants(self) -> tuple:
        """The design variants this configuration must catch: those of ``VARIANTS`` whose
        ``config`` is its name, in the order of ``VARIANTS`` (seeded and findings alike)."""
        return tuple(v.name for v in VARIANTS.values() if v.config == self.name)

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @cached_property
    def listener_names(self) -> tuple:
        """Every listener name in the cluster, sorted: endpoints in the state are indices here."""
        return tuple(sorted({lst.name for node in self.nodes for lst in node.listeners}))

    @cached_property
    def _listener_indices(self) -> dict:
        return {name: i for i, name in enumerate(self.listener_names)}

    def listener_index(self, name: str) -> int:
        return self._listener_indices[name]

    @cached_property
    def principal_names(self) -> tuple:
        """Every principal named by a node, a client or an ACL, sorted: messages carry indices."""
        names = {n.principal for n in self.nodes} | {c.principal for c in self.clients}
        names |= {c.claimed_principal for c in self.clients if c.claimed_principal}
        names |= {p for p, _ in self.acls}
        return tuple(sorted(names))

    @cached_property
    def topic_names(self) -> tuple:
        """Every topic a client's request creates or needs, and every topic the create-topic
        policy names, sorted: messages and records carry indices here."""
        names = ({c.topic_name for c in self.clients} | set(self.create_topic_policy)
                 | {t for t, _ in self.partition_leaders})
        return tuple(sorted(names))

    def partition_leader(self, topic: int) -> int | None:
        """The node leading the partition of topic ``topic`` (an index into topic_names), for
        a topic that exists from the start; None for any other."""
        name = self.topic_names[topic]
        for t, leader in self.partition_leaders:
            if t == name:
                return leader
        return None

    @cached_property
    def _topic_indices(self) -> dict:
        return {name: i for i, name in enumerate(self.topic_names)}

    def topic_index(self, name: str) -> int:
        return self._topic_indices[name]

    def endpoints_per_run(self, node: int) -> bool:
        """The node advertises a listener with port 0: each process run binds its own port
        (EP-5), so each run has its own endpoints."""
        return any(lst.port == 0 for lst in self.nodes[node].listeners)

    def endpoints_need_resolving(self, node: int) -> bool:
        """Some advertised listener of the node has a blank host or port 0 (EP-3, EP-4)."""
        return any(lst.needs_resolving for lst in self.nodes[node].listeners)

    def brokers(self) -> tuple:
        return self._brokers

    def controllers(self) -> tuple:
        return self._controllers

    # computed once: the actions and the clauses ask for them for every state
    @cached_property
    def _brokers(self) -> tuple:
        return tuple(i for i, n in enumerate(self.nodes) if n.role == BROKER)

    @cached_property
    def _controllers(self) -> tuple:
        return tuple(i for i, n in enumerate(self.nodes) if n.role == CONTROLLER)

    def allows(self, principal: str, operation: str) -> bool:
        return (principal, operation) in self.acls

    def node_listener(self, node: int, role: str):
        for lst in self.nodes[node].listeners:
            if lst.role == role:
                return lst
        return None

    def privileged_listener(self, node: int):
        """L-18: with no control plane listener, a broker's inter-broker listener is
        privileged; a KRaft controller serves envelopes on its controller listener only."""
        if self.nodes[node].role == CONTROLLER:
            return self.node_listener(node, CONTROLLER_LISTENER)
        return self.node_listener(node, INTER_BROKER_LISTENER)

    def validate(self) -> None:
        """Raise ValueError if the configuration is not one the model can run."""
        if self.mode not in (ZK, KRAFT):
            raise ValueError(f"{self.name}: mode must be {ZK!r} or {KRAFT!r}, not {self.mode!r}")
        if not self.nodes:
            raise ValueError(f"{self.name}: no nodes")
        for node in self.nodes:
            if self.mode == ZK and node.role != BROKER and not self.migration:
                raise ValueError(f"{self.name}: ZK mode has brokers only, and KRaft "
                                 f"controllers only with migration on ({node.name})")
            names = [lst.name for lst in node.listeners]
            if len(set(names)) != len(names):
                raise ValueError(f"{self.name}: {node.name}: Each listener must have a "
                                 f"different name")
        for c in self.clients:
            if not 0 <= c.node < self.n_nodes:
                raise ValueError(f"{self.name}: client {c.name} targets unknown node {c.node}")
            if c.listener not in {lst.name for lst in self.nodes[c.node].listeners}:
                raise ValueError(f"{self.name}: client {c.name}: node {self.nodes[c.node].name} "
                                 f"has no listener {c.listener}")
        ic = self.initial_controller
        if ic is not None and not 0 <= ic < self.n_nodes:
            raise ValueError(f"{self.name}: initial_controller {ic} out of range")
        if self.mode == KRAFT and ic is not None and self.nodes[ic].role != CONTROLLER:
            raise ValueError(f"{self.name}: the KRaft leader must be a controller")
        for b in self.initially_registered_brokers:
            if (self.mode != KRAFT or not self.broker_registration
                    or not 0 <= b < self.n_nodes or self.nodes[b].role != BROKER):
                raise ValueError(f"{self.name}: initially_registered_brokers names {b}, not a "
                                 f"KRaft broker with broker_registration on")
        if self.broker_registration and self.mode != KRAFT:
            raise ValueError(f"{self.name}: broker_registration is KRaft broker registration")
        if self.broker_registration and self.symmetric_groups:
            # lifecycle_to and the heartbeat sessions name nodes: the permutation of
            # model/symmetry.py does not rename them
            raise ValueError(f"{self.name}: symmetric_groups with broker_registration")
        if self.create_topic_policy and not self.internal_topics:
            # the policy (AT-5) comes with the topics requests need, whose configurations the
            # Z3 encoding refuses: it does not state the policy for a client's CreateTopics
            raise ValueError(f"{self.name}: create_topic_policy needs internal_topics")
        for t, leader in self.partition_leaders:
            # brokers that register (broker_registration) are alive to the metadata cache by
            # their registrations, which the leader lookup does not read
            if not self.internal_topics or self.broker_registration or \
                    not isinstance(leader, int) or not 0 <= leader < self.n_nodes or \
                    self.nodes[leader].role != BROKER:
                raise ValueError(f"{self.name}: partition_leaders: topic {t!r} needs a broker "
                                 f"as its leader, in a configuration with internal_topics and "
                                 f"without broker_registration")
        if self.internal_topics and self.mode != KRAFT:
            raise ValueError(f"{self.name}: internal_topics is KRaft brokers' topic creation "
                             f"through the controller")
        if self.migration and self.mode != ZK:
            raise ValueError(f"{self.name}: migration is the ZK-to-KRaft migration of a ZK "
                             f"cluster")
        if self.migration and (len(self.controllers()) != 1 or self.symmetric_groups
                               or self.zk_broker_registration):
            # one KRaft controller, the quorum's leader, stands for the quorum (the model
            # holds no KRaft election in ZK mode); the two other combinations are untried
            raise ValueError(f"{self.name}: migration needs exactly one KRaft controller, and "
                             f"no symmetry or ZooKeeper broker registration")
        if self.mode == ZK and self.initial_controller is not None and \
                self.nodes[self.initial_controller].role != BROKER:
            raise ValueError(f"{self.name}: the initial ZK controller must be a broker")
        for b in self.legacy_ibp_brokers:
            if not self.migration or not 0 <= b < self.n_nodes or self.nodes[b].role != BROKER:
                raise ValueError(f"{self.name}: legacy_ibp_brokers names {b}, not a broker of "
                                 f"a migration")
        for c in self.clients:
            if c.kind in (FIND_COORDINATOR, METADATA) and (
                    not self.internal_topics or self.nodes[c.node].role != BROKER):
                raise ValueError(f"{self.name}: client {c.name}: FindCoordinator and Metadata "
                                 f"go to a broker of a configuration with internal_topics")
            if self.migration and self.nodes[c.node].role != BROKER:
                raise ValueError(f"{self.name}: client {c.name}: in a migration clients talk "
                                 f"to brokers")
        if self.zk_broker_registration and self.mode != ZK:
            raise ValueError(f"{self.name}: zk_broker_registration is ZooKeeper broker "
                             f"registration")
        for bound in ("forward_timeout", "registration_timeout", "session_timeout", "max_time",
                      "max_elections", "max_listener_updates",
                      "max_session_expiries", "max_crashes", "max_restarts", "max_drops",
                      "max_in_flight"):
            if getattr(self, bound) < 0:
                raise ValueError(f"{self.name}: {bound} must be >= 0")
        for group in self.symmetric_groups:
            specs = {(self.nodes[i].role, self.nodes[i].listeners, self.nodes[i].principal,
                      self.nodes[i].api_max, self.nodes[i].principal_serde) for i in group}
            if (len(specs) != 1 or any(c.node in group for c in self.clients)
                    or self.initial_controller in group
                    or set(group) & set(self.initially_registered)):
                # registrations in the initial log are ordered: they break the symmetry
                raise ValueError(f"{self.name}: nodes {group} are not interchangeable")


@dataclass(frozen=True)
class Design:
    """The design decisions.  Every flag is False in the design Kafka ships."""
    zombie_writes_unfenced: bool = False
    brokers_write_zk: bool = False
    reforward_forwarded: bool = False
    not_controller_inside_ok_envelope: bool = False
    forward_without_deadline: bool = False
    registration_trusts_response: bool = False
    registration_pending_stuck: bool = False
    envelope_any_listener: bool = False
    authorize_as_forwarder: bool = False
    metadata_all_listeners: bool = False
    ack_before_commit: bool = False
    leak_envelope_error: bool = False
    versions_not_intersected: bool = False
    registration_no_recheck_after_success: bool = False
    registration_without_deadline: bool = False
    election_keeps_epoch: bool = False
    brokers_write_zk_under_controller_epoch: bool = False
    registration_never_confirmed: bool = False
    describe_controllers_from_voters: bool = False
    controller_describe_without_alter: bool = False
    not_controller_unanswered: bool = False
    registration_bumps_same_incarnation: bool = False
    broker_reregistration_bumps_epoch: bool = False
    heartbeat_checks_record_offset: bool = False
    registers_unresolved_endpoints: bool = False
    describe_lists_fenced_brokers: bool = False
    broker_info_not_cached: bool = False
    broker_info_update_races_registration: bool = False
    claims_before_brokers_ready: bool = False
    entity_config_write_unchecked: bool = False
    entity_config_check_passes_recreated_controller: bool = False
    internal_topics_bypass_policy: bool = False
    auto_create_errors_only_logged: bool = False
    registration_ignores_omitted_features: bool = False
    activation_leaves_sessions_untracked: bool = False
    registration_raises_zero_min_version: bool = False
    unfence_waits_for_committed_offset: bool = False
    not_controller_wrapped_as_unknown: bool = False
    expire_drops_queued_events: bool = False
    create_topic_policy_ignored: bool = False
    principal_serde_not_required: bool = False
    describe_falls_back_to_other_listener: bool = False
    leader_liveness_of_local_broker: bool = False

    def flags_on(self) -> tuple:
        return tuple(f.name for f in fields(self) if getattr(self, f.name))


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    source: str                 # the Kafka bug or KIP sentence it comes from
    breaks: tuple               # property IDs it must break (any one of them counts)
    flags: tuple                # Design flags it turns on
    config: str                 # the tiny configuration that catches it
    kind: str = "seeded"        # SEEDED | FINDING | ACCEPTED_MISS (see below)
    # further tiny configurations `kipcheck branches` explores it on (properties/branches.py):
    # branches of its flag that its home cannot reach (the other mode's side, a case the home
    # lacks).  Only ``config`` decides whether it is caught.
    extra_homes: tuple = ()

    @property
    def design(self) -> Design:
        return Design(**{flag: True for flag in self.flags})

    @property
    def must_be_caught(self) -> bool:
        """Everything but an accepted miss: not catching it fails ``kipcheck check``."""
        return self.kind != ACCEPTED_MISS


# Variant kinds: a flaw put in on purpose (DESIGN section 5); Kafka's shipped behaviour where
# kipcheck found that it breaks a property; a flaw the properties are known not to catch on
# its configuration, documented with the reason in its description (reported as NOT CAUGHT,
# not a failure of the check: a known gap kept in view, not hidden).
SEEDED, FINDING, ACCEPTED_MISS = "seeded", "finding", "accepted-miss"
VARIANT_KINDS = (SEEDED, FINDING, ACCEPTED_MISS)


VARIANTS = {v.name: v for v in (
    Variant("zombie-writes-unfenced",
            "the ZK controller writes without the CheckOp on the /controller_epoch zkVersion",
            "KAFKA-6082; Z-2", ("P1",), ("zombie_writes_unfenced",), "zk-forward-zombie"),
    Variant("brokers-write-zk",
            "non-controller ZK brokers write configs/ACLs to ZooKeeper themselves",
            "F-5, Z-5 (ZK mode without forwarding); KIP-590 'single writer'", ("P1",),
            ("brokers_write_zk",), "zk-forward-zombie",
            # its home has only an authorized client: the broker's own ACL check needs another
            extra_homes=("zk-envelope-security",)),
    Variant("reforward-forwarded",
            "a broker that is not the controller forwards a forwarded request again",
            "KIP-590 draft: 'the request shall never be forwarded twice'; F-10", ("P2",),
            ("reforward_forwarded",), "zk-forward-zombie"),
    Variant("not-controller-inside-ok-envelope",
            "a stale controller puts NOT_CONTROLLER inside an envelope marked OK",
            "KAFKA-12677; F-34", ("P2", "L1"), ("not_controller_inside_ok_envelope",),
            "kraft-forward-leader-change"),
    Variant("forward-without-deadline",
            "the forwarder re-queues a forwarded request forever, with no retry timeout",
            "KAFKA-10667; F-17, F-19", ("P2", "L1"), ("forward_without_deadline",),
            "kraft-forward-leader-change"),
    Variant("registration-trusts-response",
            "a controller marks itself registered on a success response and never re-checks the "
            "log",
            "KIP-919: 'Each controller will check that the controller registration for its ID is "
            "as expected. If it is not, it will re-register.'; R-6, R-8", ("P3",),
            ("registration_trusts_response",), "kraft-registration"),
    Variant("registration-pending-stuck",
            "a registration timeout never clears the pending-RPC flag",
            "KAFKA-20247 (KAFKA-18874); R-6", ("P3", "DEADLOCK"), ("registration_pending_stuck",),
            "kraft-registration"),
    Variant("envelope-any-listener",
            "the ZK controller accepts envelopes on client listeners",
            "KIP-590 Routing Request Security; F-24, L-18; KAFKA-12168", ("P4",),
            ("envelope_any_listener",), "zk-envelope-security"),
    Variant("authorize-as-forwarder",
            "the inner request is authorized with the forwarding broker's principal",
            "KAFKA-12294; F-30", ("P4",), ("authorize_as_forwarder",), "zk-envelope-security"),
    Variant("metadata-all-listeners",
            "DescribeCluster lists endpoints of every listener, not only the request's",
            "KIP-103: 'restricted to the listener name of the endpoint where they made the "
            "request'; L-27, R-21", ("P5",), ("metadata_all_listeners",), "kraft-listeners"),
    Variant("ack-before-commit",
            "the controller answers success before the write is durable",
            "KIP-590: 'a successful update shall be eventually guaranteed'; R-17", ("P6",),
            ("ack_before_commit",), "kraft-forward-leader-change",
            # its ZK side: a write acknowledged when queued, then fenced or written
            extra_homes=("zk-forward-zombie",)),
    Variant("leak-envelope-error",
            "the forwarder passes the envelope error code to the client",
            "KIP-590 EnvelopeResponse Handling; table 1.6 of docs/rules.md", ("P7",),
            ("leak_envelope_error",), "zk-envelope-security"),
    Variant("versions-not-intersected",
            "the forwarder advertises its own versions for forwardable APIs",
            "KAFKA-10674; F-35", ("P8",), ("versions_not_intersected",),
            "kraft-forward-leader-change"),
    Variant("registration-no-recheck-after-success",
            "Kafka as read at 3.7.0, 3.7.1, 3.8.0 and trunk 1eb7644 (2024-10-25): a registration "
            "check that finds an RPC pending is dropped and a success response only counts, so "
            "an old incarnation's record replayed while the new incarnation's RPC is pending "
            "stays until a feature-level change, a snapshot load or a restart (R-9)",
            "kipcheck finding (docs/findings/registration-no-recheck.md): "
            "ControllerRegistrationManager.maybeSendControllerRegistration only logs while "
            "pendingRpc (L210-211 at 3.7.0 to 3.8.0, L209-210 at trunk) and onComplete only "
            "counts a success (L257-259; trunk L256-258) (R-3, R-6, R-8, R-9); contradicts "
            "KIP-919 'If it is not, it will re-register.'", ("P3",),
            ("registration_no_recheck_after_success",), "kraft-registration", kind="finding"),
    Variant("registration-without-deadline",
            "the registration channel re-queues the registration forever, with no retry "
            "timeout: with the leader gone the controller spins on its channel and never settles",
            "KAFKA-10667 (no retry timeout on the controller channel) applied to the "
            "registration channel; F-17, F-19, R-7", ("SETTLE",),
            ("registration_without_deadline",), "kraft-registration-leader-loss"),
    Variant("election-keeps-epoch",
            "a newly elected ZK controller's multi-op rewrites /controller_epoch with the epoch "
            "it holds instead of bumping it (the zkVersion still moves), so the deposed "
            "controller and the new one both act as controller of one epoch; the zombie's "
            "writes are still fenced by the zkVersion",
            "Z-1 (election bumps /controller_epoch by a CAS); KIP-590 'single writer': the "
            "controller epoch must name one controller", ("P1",), ("election_keeps_epoch",),
            "zk-forward-zombie"),
    Variant("brokers-write-zk-under-controller-epoch",
            "non-controller ZK brokers write configs/ACLs to ZooKeeper themselves, each write a "
            "multi with a CheckOp on the /controller_epoch zkVersion they just read, so every "
            "write carries the current epoch without being the controller's",
            "KIP-590: 'make the controller as the single writer to modify the config metadata "
            "in ZK'; Z-2, Z-5", ("P1",), ("brokers_write_zk_under_controller_epoch",),
            "zk-forward-zombie"),
    Variant("registration-never-confirmed",
            "a controller's registration manager acts on a RegisterControllerRecord for its ID "
            "only when it names another incarnation (it re-registers) and ignores the one naming "
            "its own, so it never learns that it is registered",
            "KIP-919: 'Each controller will check that the controller registration for its ID "
            "is as expected'; R-8", ("P3",), ("registration_never_confirmed",),
            "kraft-registration"),
    Variant("describe-controllers-from-voters",
            "a controller answers DescribeCluster from its static controller.quorum.voters "
            "list instead of the controller registrations it has replayed, so a controller "
            "that has not registered (yet) is listed with the endpoints of its configuration",
            "KIP-919: controllers register 'information about the endpoints which they "
            "possess' and 'The registration will be persisted in the metadata log as hard "
            "state'; R-21, D-1.3 (describeClusterControllers reads the registrations)",
            ("P5",), ("describe_controllers_from_voters",), "kraft-listeners"),
    Variant("controller-describe-without-alter",
            "a controller answers DescribeCluster the way a broker does (D-2), without the ALTER "
            "on CLUSTER check, so any principal reads the controllers' endpoints",
            "D-1.2 (ControllerApis.handleDescribeCluster requires ALTER on CLUSTER, not "
            "DESCRIBE); KIP-919 'communicating directly with the controller quorum will "
            "require special configurations'", ("P9",), ("controller_describe_without_alter",),
            "kraft-listeners"),
    Variant("not-controller-unanswered",
            "a ZK broker that is not the active controller drops an EnvelopeRequest without "
            "answering NOT_CONTROLLER, so the forwarder learns of the move only from its "
            "network timeout and the client gets REQUEST_TIMED_OUT while a controller is up",
            "KIP-590: 'If the top level error code is NOT_CONTROLLER, retry until timeout' (the "
            "forwarder must be told to retry); F-26 (KafkaApis answers NOT_CONTROLLER)",
            ("PROGRESS",), ("not_controller_unanswered",), "zk-forward-zombie"),
    Variant("registration-bumps-same-incarnation",
            "the active controller numbers a ControllerRegistrationRequest for the incarnation "
            "already registered as a new registration, as it numbers broker epochs, and records "
            "the next incarnation instead of the one the request carries: the log names an "
            "incarnation the controller never ran until its manager notices and re-registers",
            "KIP-919: 'There is also no epoch - the incarnation ID, chosen by the controller "
            "itself, is what we use'; R-15 (the record copies IncarnationId); the broker-side "
            "bump it mirrors shipped until KAFKA-16952 (a broker's re-registration of its "
            "registered incarnation got a new broker epoch)",
            ("P3",), ("registration_bumps_same_incarnation",),
            "kraft-registration-leader-change"),
    Variant("broker-reregistration-bumps-epoch",
            "Kafka 3.7.x and 3.8.x: the active controller gives a re-registration of the broker "
            "incarnation already registered a new broker epoch (the next write offset), as it "
            "does for a new incarnation, while it keeps the registration's fenced state",
            "KAFKA-16952 (T-9, fixed in 3.9.0): 'Do not bump broker epoch when re-registering "
            "the same incarnation' -- the broker epoch 'is meant to only be bumped on broker "
            "restart'; BR-5, BR-5a, BL-8 (the re-registration after a metadata.version upgrade, "
            "KAFKA-16757)", ("P10",), ("broker_reregistration_bumps_epoch",),
            "kraft-broker-registration"),
    Variant("heartbeat-checks-record-offset",
            "the active controller checks a heartbeat's broker epoch against the offset of the "
            "broker's latest RegisterBrokerRecord (BR-3's epoch, true of a new incarnation only) "
            "instead of the registration's broker epoch: once a re-registration keeps the epoch, "
            "the live broker's heartbeats are answered STALE_BROKER_EPOCH and its session runs "
            "out",
            "BH-4 (checkBrokerEpoch compares with registration.epoch()); BR-3 and BR-5 (the "
            "epoch is the record's offset only for a new incarnation; KAFKA-16952 keeps it on a "
            "re-registration)", ("P10",), ("heartbeat_checks_record_offset",),
            "kraft-broker-registration"),
    Variant("registers-unresolved-endpoints",
            "a node registers its advertised listeners as configured, a blank host and port 0 "
            "unresolved, instead of resolving them first: the active controller copies a "
            "controller's endpoints into its RegisterControllerRecord unchecked (R-14), and "
            "controllers hand them to admin clients",
            "KAFKA-15458 ('Fully resolve endpoint information before registering "
            "controllers'); EP-1, EP-4, EP-6, R-5", ("P5",),
            ("registers_unresolved_endpoints",), "kraft-controller-endpoints"),
    Variant("describe-lists-fenced-brokers",
            "a KRaft broker's DescribeCluster lists every registered broker on the listener, "
            "fenced ones too",
            "L-27: KRaftMetadataCache.getAliveBrokerNodes lists the registered brokers "
            "filterNot(_.fenced()); KIP-103 (the brokers a client can use)", ("P5",),
            ("describe_lists_fenced_brokers",), "kraft-broker-endpoints"),
    Variant("broker-info-not-cached",
            "a dynamic advertised-listener update writes the new endpoints to /brokers/ids/N but "
            "leaves the BrokerInfo KafkaController re-registers with: after a session expiry "
            "the broker registers its startup endpoints again",
            "KAFKA-6573 ('Update brokerInfo in KafkaController on listener update'); ZB-7, ZB-9",
            ("P5",), ("broker_info_not_cached",), "zk-broker-registration"),
    Variant("broker-info-update-races-registration",
            "Kafka's ZK mode as read at 3.8.0: the dynamic listener update (config thread) is "
            "not serialized with the re-registration after a session expiry (controller event "
            "thread); if the re-registration read the old BrokerInfo, the update's SetData "
            "finds no znode (NONODE, only logged), and the create then writes the old "
            "endpoints, which nothing rewrites",
            "ZB-10 (KafkaController.processRegisterBrokerAndReelect and updateBrokerInfo, "
            "KafkaZkClient.updateBrokerInfo, 3.8.0); docs/findings/zk-broker-info-race.md",
            ("P5",), ("broker_info_update_races_registration",), "zk-broker-registration",
            kind=FINDING),
    Variant("claims-before-brokers-ready",
            "the KRaft controller claims /controller while a broker still runs the old IBP "
            "(not bounced into migration mode), which goes on writing ZooKeeper itself after "
            "the KRaft controller took over",
            "KIP-590 Compatibility: 'The upgrade path shall be guarded by the IBP ... With the "
            "second IBP bump rolling bounce, all upgraded brokers will be using the new routing "
            "algorithm'; MG-1, MG-5 (KRaftMigrationDriver claims leadership only after "
            "WAIT_FOR_BROKERS: every ZK broker registered with the KRaft controller)",
            ("P1",), ("claims_before_brokers_ready",), "zk-migration-bounce"),
    Variant("entity-config-write-unchecked",
            "a ZK broker in a migration processes IncrementalAlterConfigs itself under a ZK "
            "controller (F-6) and writes the entity config with a plain SetData, without "
            "reading /controller first: last writer wins even after the KRaft controller took "
            "over",
            "KAFKA-16539 (T-11, 'Fix IncrementalAlterConfigs during ZK migration'): "
            "setOrCreateEntityConfigs before the fix; MG-6", ("P1",),
            ("entity_config_write_unchecked",), "zk-migration"),
    Variant("entity-config-check-passes-recreated-controller",
            "Kafka as read at 3.8.0: a ZK broker's entity-config write checks /controller by "
            "its dataVersion, read before the write; the KRaft controller's claim deletes and "
            "re-creates /controller (dataVersion 0 again), so a write whose read saw the ZK "
            "controller lands after the KRaft controller took over",
            "kipcheck finding (docs/findings/entity-config-check-aba.md): "
            "KafkaZkClient.setOrCreateEntityConfigs (CheckOp(/controller, zkVersion read)) and "
            "tryRegisterKRaftControllerAsActiveController (Delete + Create /controller), "
            "3.8.0; MG-6, MG-7", ("P1",),
            ("entity_config_check_passes_recreated_controller",), "zk-migration", kind=FINDING),
    Variant("internal-topics-bypass-policy",
            "the active controller creates the topics a broker asks for itself (the internal "
            "topic a FindCoordinator needs) without running create.topic.policy.class.name, as "
            "ZooKeeper brokers did when they created internal topics with their own ZooKeeper "
            "client",
            "KIP-590 Internal CreateTopicsRequest Routing: 'at the moment the direct ZK access "
            "bypasses the CreateTopicPolicy. This is in fact a hole in the topic creation logic "
            "that we should fix'; AT-5, AT-6 (no exemption for internal topics)", ("P11",),
            ("internal_topics_bypass_policy",), "kraft-internal-topics-policy"),
    Variant("auto-create-errors-only-logged",
            "Kafka as read at 3.8.0: a KRaft broker answers a Metadata request that needs "
            "auto-creation with UNKNOWN_TOPIC_OR_PARTITION at once and only logs the "
            "controller's answer to its CreateTopics, so a creation the controller refuses "
            "(POLICY_VIOLATION) leaves the client retrying a topic that will never exist",
            "KIP-590 Internal CreateTopicsRequest Routing: 'if a MetadataRequest tries to create "
            "an internal topic but failed, receiving broker will reply a fatal error to let the "
            "client fail fast'; AT-5 (AutoTopicCreationManager L171-187 logs the response at "
            "debug); docs/findings/auto-create-errors-only-logged.md", ("P11",),
            ("auto_create_errors_only_logged",), "kraft-internal-topics", kind=FINDING),
    Variant("registration-ignores-omitted-features",
            "the active controller checks only the features a broker registration lists: a "
            "broker whose software predates kraft.version omits it and registers although "
            "kraft.version is finalized at 1, a level it cannot run",
            "KAFKA-17305 ('Quorum controller should check the finalized kraft.version during "
            "broker registration', fixed on trunk 2024-08-21 after 3.8.0); BR-4.9", ("P12",),
            ("registration_ignores_omitted_features",), "kraft-broker-features"),
    Variant("activation-leaves-sessions-untracked",
            "a controller that becomes active starts its heartbeat manager without a contact "
            "time for the brokers already registered: a broker that fails as the controller "
            "fails over never heartbeats the new one, is never tracked, and is never fenced",
            "KAFKA-18138 ('The controller must add all extant brokers to BrokerHeartbeatTracker "
            "when activating', PR #18009, 2024-12); BR-13, BH-9", ("P10",),
            ("activation_leaves_sessions_untracked",), "kraft-broker-failover"),
    Variant("registration-raises-zero-min-version",
            "a broker's registration states a supported range that starts at 0 as starting at "
            "1 (BrokerRegistrationRequest below v4): a broker whose software supports "
            "kraft.version 0..1 is refused with UNSUPPORTED_VERSION by a controller with "
            "kraft.version finalized at 0, and retries for ever",
            "KAFKA-17492 ('skip features with minVersion of 0 instead of replacing 0 with 1 "
            "when BrokerRegistrationRequest < 4', e311716bebc, 2024-09; the replacement came "
            "with KAFKA-17011); BR-4.9", ("P12",),
            ("registration_raises_zero_min_version",), "kraft-broker-features-v0"),
    Variant("unfence-waits-for-committed-offset",
            "the active controller unfences a broker only once the metadata offset its "
            "heartbeat reports has reached the controller's last committed offset, instead of "
            "the offset of the broker's own RegisterBrokerRecord: on a busy log the broker "
            "never catches up and stays fenced (accepted miss: the model's log is finite and "
            "has no periodic NoOpRecord, so the broker always catches up in the end)",
            "KAFKA-13959 ('Controller should unfence Broker with busy metadata log', PR #12274, "
            "50e5b32a6d5, 3.3.0); BH-5, BH-7", ("P10",),
            ("unfence_waits_for_committed_offset",), "kraft-broker-registration",
            kind=ACCEPTED_MISS),
    Variant("not-controller-wrapped-as-unknown",
            "a KRaft controller that is not active fails a forwarded mutation with the "
            "NotControllerException wrapped in a CompletionException, which Errors.forException "
            "maps to UNKNOWN_SERVER_ERROR: the envelope is answered NONE with an inner "
            "UNKNOWN_SERVER_ERROR, the forwarder does not retry and the client fails",
            "KAFKA-14167 ('Completion exceptions should not be translated directly to error "
            "codes', bc90c29fafc, 3.4.0: UpdateFeatures, AllocateProducerIds); KIP-590 'If the "
            "top level error code is NOT_CONTROLLER, retry until timeout'; F-34, R-13",
            ("P7",),
            ("not_controller_wrapped_as_unknown",), "kraft-forward-leader-change"),
    Variant("expire-drops-queued-events",
            "a ZK controller that learns its session expired clears its event queue without "
            "completing the events that carry a callback: a forwarded mutation it accepted is "
            "never answered, the forwarder waits for its network timeout and the client gets "
            "REQUEST_TIMED_OUT while a controller is up",
            "KAFKA-10193 ('Add preemption for controller events that have callbacks', "
            "680e68413b4, 2.7.0: ApiPartitionReassignment, ListPartitionReassignments had no "
            "preempt; ControllerEventManager.clearAndPut(Expire)); KIP-590 'If the top level "
            "error code is NOT_CONTROLLER, retry until timeout'; Z-3",
            ("PROGRESS",),
            ("expire_drops_queued_events",), "zk-forward-zombie"),
    Variant("create-topic-policy-ignored",
            "a KRaft controller accepts create.topic.policy.class.name but never runs it: every "
            "CreateTopics it handles, forwarded from a client, a Metadata request's "
            "auto-creation or a broker's own, creates a topic the policy refuses",
            "KAFKA-13151 ('Disallow policy configs in KRaft since they are not yet supported', "
            "6f104935e9f, 3.0.0; the policy came to KRaft with KAFKA-13279, 85548acafbc); "
            "KIP-590 Internal CreateTopicsRequest Routing; AT-5",
            ("P11",),
            ("create_topic_policy_ignored",), "kraft-internal-topics"),
    Variant("principal-serde-not-required",
            "a broker whose principal.builder.class does not implement KafkaPrincipalSerde "
            "starts (no configuration check) and cannot build an EnvelopeRequest: every "
            "request it forwards fails at once with UNKNOWN_SERVER_ERROR",
            "KAFKA-13051 ('Require Principal Serde to be defined for 3.0'; KafkaConfig "
            "validateValues 'principal.builder.class must implement KafkaPrincipalSerde'); F-12 "
            "(buildEnvelopeRequest throws IllegalArgumentException without a serde)",
            ("P7",),
            ("principal_serde_not_required",), "kraft-forwarder-without-serde"),
    Variant("leader-liveness-of-local-broker",
            "a broker answering Metadata for a partition whose leader it cannot list on the "
            "request's listener looks at its own liveness instead of the leader's: a leader "
            "that is down is reported as LISTENER_NOT_FOUND instead of LEADER_NOT_AVAILABLE",
            "KAFKA-10312 ('Fix error code returned in Metadata response when leader is not "
            "available', f19cd6ca48c, 2020-08-24: MetadataCache.getPartitionMetadata tested "
            "whether the local broker, not the leader, was alive); L-28",
            ("P5",), ("leader_liveness_of_local_broker",), "kraft-metadata-leaders"),
    Variant("describe-falls-back-to-other-listener",
            "a node answers DescribeCluster with, for a listed node that has no endpoint on "
            "the request's listener, that node's endpoint on another listener instead of "
            "leaving the node out",
            "KIP-103: 'restricted to the listener name of the endpoint where they made the "
            "request'; L-27 (brokers lacking the listener are omitted); the seedable flaw 'fall "
            "back to another listener's endpoint' of the missing-listener family of KAFKA-6546 "
            "and KAFKA-10312",
            ("P5",), ("describe_falls_back_to_other_listener",), "kraft-listeners"),
)}


def design_for(variant: str | None) -> Design:
    """The Design of a variant name; None or "correct" gives the shipped design."""
    if variant in (None, "", "correct"):
        return Design()
    try:
        return VARIANTS[variant].design
    except KeyError:
        raise KeyError(variant) from None

