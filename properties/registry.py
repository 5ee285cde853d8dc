"""The safety properties (P1-P9, L1) and the witnesses, in one registry.

A property is a conjunction of named clauses.  Each clause states one fact and quotes, in its
docstring, the KIP sentence or Kafka rule it enforces.  ``always`` clauses hold in every
reachable state; ``quiescent`` clauses hold in every quiescent state (no progress step
enabled, see ``model.next.quiescent``) and express bounded liveness: what must be done once
the system has nothing left to do.

Witnesses are "sometimes" predicates that must be reachable in the correct design: they show
the model is not vacuous (a model that does nothing passes every safety check).
"""
from __future__ import annotations

from typing import NamedTuple
from collections.abc import Callable

from model import kafka
from model.actions import advertised_version, epoch_holder
from model.config import (BROKER, CONTROLLER, DESCRIBE, FIND_COORDINATOR, FORGED_ENVELOPE, KRAFT,
                          METADATA, MUTATION, ZK, Design, ModelConfig)
from model.next import quiescent
from model.state import (BROKER_HEARTBEAT_RESPONSE, BROKER_REGISTRATION_CHANGE,
                         BROKER_REGISTRATION_RESPONSE,
                         ENVELOPE_REQUEST, FEATURE_LEVEL, FENCED, FORWARD, MUTATION_RECORD,
                         NO_NODE, NO_VERSIONS,
                         REGISTER_BROKER, REGISTER_CONTROLLER, REGISTRATION_REQUEST,
                         REGISTRATION_RESPONSE, REPLY_REGISTRATION, STATIC_ENDPOINTS,
                         CREATE_TOPICS_RESPONSE, TOPIC_RECORD,
                         UNRESOLVED_ENDPOINTS, State)
from model.step import Step
from properties import incremental

ALWAYS, QUIESCENT = "always", "quiescent"


class Clause(NamedTuple):
    name: str
    kind: str                   # ALWAYS | QUIESCENT
    holds: Callable             # (state, cfg, design) -> bool
    # (cfg) -> bool, or None (always): False when the clause holds in every state of the
    # configuration, decided from the configuration alone -- the clause's own first test is
    # ``if not applies(cfg): return True``, so ``first_violation`` leaves it out for that
    # configuration with the same outcome (tests/test_clauses.py checks the pairing)
    applies: Callable | None = None

    @property
    def doc(self) -> str:
        return (self.holds.__doc__ or "").strip()


class Property(NamedTuple):
    id: str
    name: str
    statement: str
    source: str
    clauses: tuple


def _per_config(fn):
    """``fn(cfg)``, computed once per configuration and kept on it (a configuration is frozen;
    the clauses ask for these facts for every state)."""
    key = "_registry" + fn.__name__

    def get(cfg):
        value = cfg.__dict__.get(key)
        if value is None:
            value = cfg.__dict__[key] = fn(cfg)
        return value
    get.__name__, get.__qualname__, get.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return get


# What a clause's outcome depends on in a configuration, decided from the configuration alone
# (the ``applies`` of a Clause; a clause's own first test)

def _zk_mode(cfg: ModelConfig) -> bool:
    return cfg.mode == ZK


def _kraft_mode(cfg: ModelConfig) -> bool:
    return cfg.mode == KRAFT


def _kraft_registration(cfg: ModelConfig) -> bool:
    """KIP-919 controller registration runs (KRaft)."""
    return bool(cfg.registration) and cfg.mode == KRAFT


def _live_active_controller(s: State) -> bool:
    """A KRaft quorum has a leader and it is up: the clauses about a settled cluster judge
    only what a live active controller would have done."""
    return s.quorum.leader != NO_NODE and s.nodes[s.quorum.leader].alive


def _broker_registration(cfg: ModelConfig) -> bool:
    return bool(cfg.broker_registration)


def _zk_broker_registration(cfg: ModelConfig) -> bool:
    return bool(cfg.zk_broker_registration)


@_per_config
def _broker_self_describers(cfg: ModelConfig) -> tuple:
    """(client, (its node, its listener index)) for every client that sends DescribeCluster to
    a broker, where brokers do not register (of either kind): such a broker's own answer lists
    it; () where they register."""
    if cfg.broker_registration or cfg.zk_broker_registration:
        return ()
    return tuple((c, (spec.node, cfg.listener_index(spec.listener)))
                 for c, spec in enumerate(cfg.clients)
                 if spec.kind == DESCRIBE and cfg.nodes[spec.node].role == BROKER)


def _has_topic_policy(cfg: ModelConfig) -> bool:
    return bool(cfg.create_topic_policy)


@_per_config
def _describers_without_alter(cfg: ModelConfig) -> tuple:
    """The clients that send DescribeCluster to a controller as a principal without ALTER on
    the cluster."""
    return tuple(c for c, spec in enumerate(cfg.clients)
                 if spec.kind == DESCRIBE and cfg.nodes[spec.node].role == CONTROLLER
                 and not cfg.allows(spec.principal, kafka.ALTER_CLUSTER))


@_per_config
def _kraft_describers(cfg: ModelConfig) -> tuple:
    """(client, role of the node it asks, listener index) for every DescribeCluster client of
    a KRaft configuration whose node answers from registrations: a controller, or a broker
    where brokers register."""
    out = []
    for c, spec in enumerate(cfg.clients):
        role = cfg.nodes[spec.node].role
        if spec.kind != DESCRIBE or cfg.mode != KRAFT or (
                role == BROKER and not cfg.broker_registration):
            continue
        out.append((c, role, cfg.listener_index(spec.listener)))
    return tuple(out)


@_per_config
def _mutating_clients(cfg: ModelConfig) -> tuple:
    """The clients whose request is a mutation: a client's own, or its own EnvelopeRequest."""
    return tuple(c for c, spec in enumerate(cfg.clients)
                 if spec.kind in (MUTATION, FORGED_ENVELOPE))


@_per_config
def _forged_clients(cfg: ModelConfig) -> frozenset:
    return frozenset(c for c, spec in enumerate(cfg.clients) if spec.kind == FORGED_ENVELOPE)


@_per_config
def _refused_metadata_clients(cfg: ModelConfig) -> tuple:
    """The Metadata clients whose topic the create-topic policy refuses."""
    return tuple(c for c, spec in enumerate(cfg.clients)
                 if spec.kind == METADATA and spec.topic_name in cfg.create_topic_policy)


@_per_config
def _authorizations(cfg: ModelConfig) -> dict:
    """Client -> its principal is allowed its mutation's operation, filled as asked."""
    return {}


def _client_authorized(cfg: ModelConfig, c: int) -> bool:
    known = _authorizations(cfg)
    ok = known.get(c)
    if ok is None:
        spec = cfg.clients[c]
        ok = known[c] = cfg.allows(spec.principal, kafka.API_OPERATION[spec.mutation_api])
    return ok


# ------------------------------------------------------------------------------------------
# P1 single-writer


def zk_writes_carry_current_epoch(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Every ZooKeeper write of a request meant for the controller was made by the controller
    of the epoch current at the time.  A broker's write of a request Kafka's routing leaves to
    it (it does not forward yet) stands outside the sentence.

    KIP-590: "make the controller as the single writer to modify the config metadata in ZK";
    "After first rolling bounce to upgrade the binary version, all fellow brokers are still
    handling ZK mutation requests by themselves"; Z-2: every controller write is a multi with
    CheckOp(/controller_epoch, zkVersion at election), so a deposed controller's write fails
    (KAFKA-6082)."""
    for w in s.zk.writes:
        if w.writer_epoch != w.zk_epoch and not w.routed_locally:
            return False
    return True


def active_controller_won_its_epoch(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Every live broker acting as the active ZK controller holds an epoch it won itself, by
    the CAS that set /controller_epoch: so at most one node acts as the active controller of
    any epoch.  What the node believes is compared with what ZooKeeper recorded, not with
    another belief.

    Z-1: the elected broker creates /controller and bumps /controller_epoch with a CAS on
    its zkVersion, in one multi-op; KIP-590: "make the controller as the single writer"
    (one controller per epoch is what lets every other node fence a deposed one)."""
    for n, node in enumerate(s.nodes):
        if node.alive and node.zk_active and epoch_holder(s.zk, node.zk_epoch) != n:
            return False
    return True


def zk_writes_by_epoch_holder(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Every durable ZooKeeper write was issued by the broker that, at the time of the write,
    ZooKeeper recorded as having set /controller_epoch to its current value (the epoch's
    holder as ZooKeeper sees it), not as the writer believes: carrying the current epoch is
    not enough.

    KIP-590: "make the controller as the single writer to modify the config metadata in
    ZK"; Z-2 (the controller's writes are fenced by its epoch's zkVersion), Z-5 (the
    broker-side writes forwarding removes).  As in zk-writes-carry-current-epoch, a write
    Kafka's routing leaves to a broker that does not forward (yet) stands outside it."""
    for w in s.zk.writes:
        if w.zk_holder != w.writer and not w.routed_locally:
            return False
    return True


def kraft_controller_sole_zk_writer(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Once a KRaft controller has claimed ZooKeeper leadership, it alone writes ZooKeeper:
    every write made while a KRaft controller held /controller_epoch was that controller's
    (its dual write), whatever the broker that would otherwise have written it.

    KIP-590: "make the controller as the single writer to modify the config metadata in ZK";
    MG-5 (the KRaft controller claims /controller with a higher epoch), MG-6 (a broker's own
    entity-config write is refused once /controller names a KRaft controller; KAFKA-16539:
    brokers' writes must not land 'last writer wins' after the KRaft controller took over);
    KIP-590 Compatibility: every broker forwards after the second IBP bounce."""
    writes = s.zk.writes
    if not writes:
        return True
    nodes = cfg.nodes
    for w in writes:
        if w.zk_holder != NO_NODE and nodes[w.zk_holder].role == CONTROLLER \
                and w.writer != w.zk_holder:
            return False
    return True


def log_has_one_writer_per_epoch(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Metadata-log records come from one leader per epoch, with epochs never going back.

    KIP-590: the controller is the single metadata writer; in KRaft only the leader of the
    current epoch appends to the metadata log."""
    log = s.quorum.log
    if len(log) <= 1:
        return True
    last_epoch, writers = -1, {}
    for rec in log[1:]:
        if rec.epoch < last_epoch or writers.setdefault(rec.epoch, rec.writer) != rec.writer:
            return False
        last_epoch = rec.epoch
    return True


def active_controller_owns_controller_znode(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A live broker that acts as the active ZK controller and whose ZooKeeper session is
    still alive owns the ephemeral /controller znode: two brokers never both act as
    controller while both sessions live (a deposed controller is one whose session expired
    and that has not noticed yet).

    Z-1: a broker becomes controller only by creating /controller, which fails while another
    session owns it; the znode is ephemeral, so it goes only with its owner's session;
    KIP-590: "make the controller as the single writer".  In a migration the KRaft controller
    deletes a live ZK controller's /controller when it claims leadership (MG-5): the deposed
    broker is then a zombie like one whose session expired (its writes fail the epoch's
    CheckOp), so a /controller naming a KRaft controller, with ZooKeeper's epoch past the node's,
    stands in for the owner."""
    if not _zk_mode(cfg):
        return True
    owner = s.zk.controller
    taken = owner != NO_NODE and cfg.nodes[owner].role == CONTROLLER
    for n, node in enumerate(s.nodes):
        if node.alive and node.zk_active and not node.session_expired and not (
                owner == n or (taken and s.zk.epoch > node.zk_epoch)):
            return False
    return True


def log_appended_by_current_leader(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Only the leader of the current epoch appends to the metadata log: every record
    appended and not yet committed was appended by the current leader, in the current epoch.

    R-13: a controller that is not the active one fails the write with
    NotControllerException; KIP-590: the controller is the single metadata writer (in KRaft,
    the quorum's leader)."""
    q = s.quorum
    for rec, _ in q.uncommitted:
        if rec.writer != q.leader or rec.epoch != q.epoch:
            return False
    return True


# ------------------------------------------------------------------------------------------
# P2 bounded-forwarding


def envelope_never_nested(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A client request crosses at most one forwarding hop: no envelope carries a request
    that was already forwarded.

    KIP-590 (draft revision): "the request shall never be forwarded twice"; F-10: a
    forwarded request is never forwarded again."""
    for m in s.network:
        if m.kind == ENVELOPE_REQUEST and m.hops > 1:
            return False
    return True


def forward_ends_by_deadline(s: State, cfg: ModelConfig, d: Design) -> bool:
    """No forwarded request is still queued past its retry timeout, or in flight past its
    network timeout.

    F-17/F-19: the forwarding channel drops a queued item once now - createdTimeMs >=
    retryTimeoutMs and answers REQUEST_TIMED_OUT; F-16: an item in flight is bounded by the
    NetworkClient's request timeout from its send, not by the retry timeout (KAFKA-10667:
    forwarded requests retried indefinitely)."""
    now = s.now
    timeout = cfg.forward_timeout
    for node in s.nodes:
        if not node.alive:
            continue
        ch = node.channel
        item = ch.inflight
        if item and item.kind == FORWARD and now - item.sent > timeout:
            return False
        for item in ch.queue:
            # a re-queued item was in flight until now: up to the retry timeout (its last
            # send) plus the network timeout; it is due and leaves before the clock moves
            limit = 2 * timeout - 1 if item.requeued else timeout
            if item.kind == FORWARD and now - item.created > limit:
                return False
    return True


def forwarder_forgets_not_controller(s: State, cfg: ModelConfig, d: Design) -> bool:
    """After a NOT_CONTROLLER, the next attempt goes to a different or newer controller: no
    channel keeps a cached controller that answered NOT_CONTROLLER since it was discovered.

    F-21.4: NOT_CONTROLLER in the response -> disconnect, forget the controller, re-queue;
    KAFKA-12677 (NOT_CONTROLLER hidden inside an OK envelope kept the stale controller)."""
    for node in s.nodes:
        if node.alive:
            cached = node.channel.cached
            if cached != NO_NODE and cached in node.not_controller_from:
                return False
    return True


# ------------------------------------------------------------------------------------------
# P3 registration-converges


def _appended_records(q) -> tuple:
    """Every record of the metadata log, committed or only appended by the leader (a tuple:
    most states have nothing uncommitted, and then it is the log itself)."""
    if not q.uncommitted:
        return q.log
    return q.log + tuple([rec for rec, _ in q.uncommitted])


def _latest_registration(log, c: int, upto: int | None = None) -> int | None:
    # a restatement of model.actions.latest_registration on purpose: the clauses must not
    # change when a design mutant changes the model's helper (docs/adequacy.md)
    inc = None
    for rec in log[:upto]:
        if rec.kind == REGISTER_CONTROLLER and rec.controller_id == c:
            inc = rec.incarnation_id
    return inc


def registered_only_if_log_agrees(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A controller never believes it is registered while the log it has replayed shows
    another incarnation (or none) for its ID.

    KIP-919: "Each controller will check that the controller registration for its ID is as
    expected. If it is not, it will re-register."; R-8."""
    nodes = s.nodes
    for c in cfg.controllers():
        node = nodes[c]
        if node.alive and node.registered_in_log and \
                _latest_registration(s.quorum.log, c, node.replayed) != node.incarnation:
            return False
    return True


def registered_if_log_agrees(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A live controller whose replayed log shows its own incarnation registered for its ID
    believes it is registered (the converse of registered-only-if-log-agrees: together, its
    believed registration is what it replayed).

    KIP-919: "Each controller will check that the controller registration for its ID is as
    expected"; R-8 (the check runs on every metadata delta that touches its registration)."""
    if not _kraft_registration(cfg):
        return True
    for c in cfg.controllers():
        node = s.nodes[c]
        if node.alive and not node.registered_in_log and \
                _latest_registration(s.quorum.log, c, node.replayed) == node.incarnation:
            return False
    return True


def registration_names_incarnation_it_ran(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Every RegisterControllerRecord, committed or appended, names an incarnation that its
    controller ran (this process run or an earlier one), never one it did not.

    KIP-919: the registration includes "a randomly generated UUID uniquely identifying the
    specific incarnation of the controller" ("unique to each process run"); R-15 (the
    active controller copies the incarnation the request carries)."""
    nodes = s.nodes
    n_nodes = len(nodes)
    for rec in _appended_records(s.quorum):
        if rec.kind == REGISTER_CONTROLLER and not (
                0 <= rec.controller_id < n_nodes
                and 0 <= rec.incarnation_id <= nodes[rec.controller_id].incarnation):
            return False
    return True


def registration_carries_current_incarnation(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Once quiescent with a live leader, each live controller's registration in the log
    carries its current incarnation.

    KIP-919: "This check is necessary to fix cases where a delayed message from an older
    incarnation of controller N somehow arrives later than a more recent registration";
    R-10; KAFKA-20247 (a timed-out registration never retried)."""
    if not _kraft_registration(cfg):
        return True
    q = s.quorum
    if not _live_active_controller(s):
        return True
    for c in cfg.controllers():
        node = s.nodes[c]
        if node.alive and _latest_registration(q.log, c) != node.incarnation:
            return False
    return True


def one_registration_request_outstanding(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A controller process run has at most one ControllerRegistrationRequest outstanding: its
    request on the way to the active controller, the record that controller appended for it
    and has not yet answered, or the response on the way back -- never two of these at once.

    R-3/R-4: ``maybeSendControllerRegistration`` sends only when no RPC is pending
    (``pendingRpc``), and the NodeToControllerChannelManager sends one request at a time; a
    timeout closes the connection and takes its request and response with it (F-16, F-19).
    KIP-919: "the controller will send a ControllerRegistrationRequest" -- one registration,
    answered once, not a stream of duplicates."""
    if not _kraft_registration(cfg):
        return True
    for c in cfg.controllers():
        node = s.nodes[c]
        if not node.alive:
            continue
        inc = node.incarnation
        k = sum(1 for m in s.network
                if (m.kind == REGISTRATION_REQUEST and m.src == c and m.incarnation_id == inc)
                or (m.kind == REGISTRATION_RESPONSE and m.dst == c and m.incarnation_id == inc))
        k += sum(1 for _, r in s.quorum.uncommitted
                 if r and r.how == REPLY_REGISTRATION and r.to == c and r.key == inc)
        if k > 1:
            return False
    return True


# ------------------------------------------------------------------------------------------
# P4 forwarding-authorization


def _applied(s: State, cfg: ModelConfig):
    """(client index, via envelope, privileged listener, sender had CLUSTER_ACTION) for every
    applied mutation."""
    if cfg.mode == ZK:
        return [(w.req, w.via_envelope, w.privileged, w.sender_cluster_action) for w in s.zk.writes]
    return [(r.client, r.via_envelope, True, r.sender_cluster_action)
            for r in s.quorum.log if r.kind == MUTATION_RECORD]


def mutations_authorized_as_client(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Every applied mutation was authorized for the original client principal.

    KIP-590 Routing Request Security: the controller authorizes the inner request with the
    forwarded principal; F-30; KAFKA-12294 (requests sent with the broker's principal)."""
    for req, _, _, _ in _applied(s, cfg):
        if not _client_authorized(cfg, req):
            return False
    return True


def envelopes_only_from_trusted_senders(s: State, cfg: ModelConfig, d: Design) -> bool:
    """An envelope is applied only if its sender has CLUSTER_ACTION and, in ZK mode, it
    arrived on the privileged listener.

    F-24 (ZK controller: envelope only on the privileged listener, else the connection is
    closed), F-25/F-28 (CLUSTER_ACTION on CLUSTER), L-18."""
    for _, via, privileged, sender_ok in _applied(s, cfg):     # privileged: always in KRaft
        if via and (not sender_ok or not privileged):
            return False
    return True


# ------------------------------------------------------------------------------------------
# P9 request-admission


def envelopes_applied_only_where_accepted(s: State, cfg: ModelConfig, d: Design) -> bool:
    """No mutation arrives by envelope at a controller that must refuse every envelope: a ZK
    controller with forwarding disabled, or a controller that cannot deserialize the
    forwarded principal.

    F-23: a ZK controller without forwarding enabled (or without a principal serde) closes
    the connection of an EnvelopeRequest; F-29a: a KRaft controller without a principal
    serde answers PRINCIPAL_DESERIALIZATION_FAILURE; KIP-590 Routing Request Security (the
    controller acts as the forwarded principal, so it must be able to read it)."""
    if cfg.mode == ZK:
        for w in s.zk.writes:
            if w.via_envelope and (not cfg.zk_forwarding
                                   or not cfg.nodes[w.writer].principal_serde):
                return False
        return True
    for rec in _appended_records(s.quorum):
        if rec.kind == MUTATION_RECORD and rec.via_envelope and \
                not cfg.nodes[rec.writer].principal_serde:
            return False
    return True


def client_envelopes_only_on_privileged_listener(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A ZK broker applies an EnvelopeRequest that a client wrote itself only if the client
    sent it on the broker's privileged listener; on any other listener the connection is
    closed.  Decided from the listener the client's configuration names, not from what the
    broker computed.

    F-24: "EnvelopeRequest is only accepted on the privileged listener" (the control plane
    listener, else the inter-broker one, L-18); KAFKA-12168 (the trust boundary of
    envelopes); KIP-590 Routing Request Security."""
    if not _zk_mode(cfg):
        return True
    for w in s.zk.writes:
        spec = cfg.clients[w.req]
        if w.via_envelope and spec.kind == FORGED_ENVELOPE:
            priv = cfg.privileged_listener(spec.node)
            if priv is None or priv.name != spec.listener:
                return False
    return True


def registrations_from_cluster_action(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Every RegisterControllerRecord, committed or appended, was requested by a principal
    with CLUSTER_ACTION on the cluster.

    R-12: ControllerRegistrationRequest requires CLUSTER_ACTION on CLUSTER, else
    CLUSTER_AUTHORIZATION_FAILED; KIP-919 (the registration is an inter-controller RPC)."""
    for rec in _appended_records(s.quorum):
        if rec.kind == REGISTER_CONTROLLER and not rec.sender_cluster_action:
            return False
    return True


def controller_describe_requires_alter(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A DescribeCluster sent to a controller succeeds only for a principal with ALTER on the
    cluster.

    D-1.2: ControllerApis.handleDescribeCluster "requires ALTER on CLUSTER (not DESCRIBE!)",
    else CLUSTER_AUTHORIZATION_FAILED; KIP-919 (admin clients talking to controllers
    directly see the controllers' endpoints)."""
    if not _describers_without_alter(cfg):
        return True
    clients = s.clients
    for c in _describers_without_alter(cfg):
        for r in clients[c].responses:
            if r.code == kafka.NONE:
                return False
    return True


# ------------------------------------------------------------------------------------------
# P5 listener-isolation


def endpoints_on_request_listener(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Every endpoint returned to a client is on the listener its request arrived on, and of
    the endpoint type it asked for (controllers never get broker endpoints, nor the reverse).

    KIP-103: "the list of endpoints they get back is restricted to the listener name of the
    endpoint where they made the request"; L-27; R-21; D-3."""
    clients = s.clients
    for c, spec in enumerate(cfg.clients):
        for resp in clients[c].responses:
            if not resp.endpoints:
                continue
            want_listener = cfg.listener_index(spec.listener)
            want_role = CONTROLLER if spec.endpoint_type == kafka.ENDPOINT_CONTROLLER else BROKER
            for node, listener, _ in resp.endpoints:
                if listener != want_listener or cfg.nodes[node].role != want_role:
                    return False
    return True


@_per_config
def _leaders_with_the_listener(cfg: ModelConfig) -> tuple:
    """The clients that ask for the metadata of a topic whose partition leader has an endpoint
    on the listener they ask on: LISTENER_NOT_FOUND is never their answer."""
    out = []
    for c, spec in enumerate(cfg.clients):
        if spec.kind != METADATA:
            continue
        leader = cfg.partition_leader(cfg.topic_index(spec.topic_name))
        if leader is not None and any(lst.name == spec.listener
                                      for lst in cfg.nodes[leader].listeners):
            out.append(c)
    return tuple(out)


def listener_not_found_only_where_leader_lacks_it(s: State, cfg: ModelConfig,
                                                  d: Design) -> bool:
    """A Metadata answer is LISTENER_NOT_FOUND only for a partition whose leader has no
    endpoint on the listener the request arrived on.

    L-28; Errors.LISTENER_NOT_FOUND: "There is no listener on the leader broker that matches
    the listener on which metadata request was processed"; KIP-103 (a client is told about
    the listener it connected on); KAFKA-6546, KAFKA-10312."""
    if not _leaders_with_the_listener(cfg):
        return True
    for c in _leaders_with_the_listener(cfg):
        for r in s.clients[c].responses:
            if r.code == kafka.LISTENER_NOT_FOUND:
                return False
    return True


def broker_describe_lists_itself(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A broker's successful DescribeCluster answer lists the broker itself on the listener
    the request arrived on: the broker is alive (it answered) and has that listener (the
    request came in on it).  Where brokers register (KRaft broker registration, where a
    broker serves requests before it is unfenced; ZooKeeper broker registration, where a
    broker whose session expired is not registered until it registers again), a broker's
    own answer may leave it out: there the registrations decide (describe-lists-registered-
    endpoints, zk-registration-carries-current-endpoints).

    L-27: a broker answers with the endpoints of the alive brokers on the request's
    listener; KIP-103: "the list of endpoints they get back is restricted to the listener
    name of the endpoint where they made the request" (restricted to it, not emptied)."""
    if not _broker_self_describers(cfg):
        return True
    for c, own in _broker_self_describers(cfg):
        for r in s.clients[c].responses:
            if r.code == kafka.NONE and not any(e[:2] == own for e in r.endpoints):
                return False
    return True


def returned_endpoints_are_resolved(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Every endpoint a DescribeCluster answer hands a client has a host and a port it can
    connect to: none is an advertised listener as configured with a blank host or port 0.

    KIP-919: a controller's registration carries "the endpoints that can be used to
    communicate with this controller"; EP-1, EP-4 (a node resolves a blank host and port 0
    before it registers: "Cannot serialize ephemeral port 0 in ListenerInfo."), R-5; L-15
    (no advertised endpoint a client cannot route to); KAFKA-15458."""
    clients = s.clients
    for c in range(len(cfg.clients)):
        for r in clients[c].responses:
            for e in r.endpoints:
                if e[2] == UNRESOLVED_ENDPOINTS:
                    return False
    return True


def _registered_endpoints_by_prefix(log, cfg: ModelConfig, role: str, listener: int):
    """For k = 0 .. len(log), the endpoints on ``listener`` of the nodes of ``role``
    registered in ``log[:k]``, as replay leaves them: each node's last registration (R-18,
    BR-10); brokers only while unfenced (BR-12, L-27).  One pass over the log, lazily."""
    name = cfg.listener_names[listener]
    on = {x: [lst for lst in spec.listeners if lst.name == name]
          for x, spec in enumerate(cfg.nodes)}
    latest = {}                 # node -> the endpoints of its registration, while it counts
    brokers = {}                # broker -> (its RegisterBrokerRecord, fenced)
    for k in range(len(log) + 1):
        if k:
            rec = log[k - 1]
            if role == CONTROLLER and rec.kind == REGISTER_CONTROLLER:
                latest[rec.controller_id] = rec.endpoints
            elif role == BROKER and _replay_broker_record(brokers, rec):
                reg, fenced = brokers[rec.broker_id]
                if fenced:
                    latest.pop(rec.broker_id, None)
                else:
                    latest[rec.broker_id] = reg.endpoints
        yield frozenset((x, listener, _on_listener(lst, token)) for x, token in latest.items()
                        for lst in on[x])


def _on_listener(lst, token: int) -> int:
    # a restatement of model.actions.listener_endpoint on purpose (see _latest_registration):
    # a listener configured in full is the same in every run; only port 0 depends on the run
    if token == UNRESOLVED_ENDPOINTS:
        return token if lst.needs_resolving else STATIC_ENDPOINTS
    return token if lst.port == 0 else STATIC_ENDPOINTS


def describe_lists_registered_endpoints(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A KRaft node's successful DescribeCluster answer is the registrations of a prefix of
    the committed metadata log: on the request's listener, exactly the endpoints of every
    controller registered there (its last registration), or of every broker registered there
    and not fenced, each as its registration carries it.  (A node answers from the log it has
    replayed, which may lag: the prefix need not be the whole log.)  Brokers that do not
    register stand outside it (broker-describe-lists-itself), and so do ZooKeeper brokers,
    which answer from /brokers/ids as it is when they answer, a history the state does not
    keep (zk-registration-carries-current-endpoints states what those registrations hold).

    KIP-919: "This registration will include information about the endpoints which they
    possess ... The registration will be persisted in the metadata log as hard state"; R-21
    (describeClusterControllers: every registration with an endpoint named like the request's
    listener); L-27 (KRaftMetadataCache.getAliveBrokerNodes: the registered brokers that are
    not fenced); KIP-103 (restricted to the request's listener)."""
    if not _kraft_describers(cfg):
        return True
    log = s.quorum.log
    for c, role, listener in _kraft_describers(cfg):
        for r in s.clients[c].responses:
            if r.code == kafka.NONE and r.endpoints not in _registered_endpoints_by_prefix(
                    log, cfg, role, listener):
                return False
    return True


def zk_registration_carries_current_endpoints(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Once settled, every running ZooKeeper broker whose session is live is registered in
    /brokers/ids with the advertised listeners it runs with now.

    ZB-7: after a session expiry the broker re-registers "the latest dynamically updated
    endpoints (since KAFKA-6573)"; ZB-9 (a dynamic update rewrites /brokers/ids/N); KIP-103
    (clients are handed the registered endpoints of the listener they use, so those must be
    the broker's own)."""
    if not _zk_broker_registration(cfg):
        return True
    return all(s.zk.broker_ids[b] == s.nodes[b].listeners_version for b in cfg.brokers()
               if s.nodes[b].alive and not s.nodes[b].session_expired)


# ------------------------------------------------------------------------------------------
# P6 acknowledged-durable


def _durable_index(s: State, cfg: ModelConfig, req: int) -> int | None:
    if cfg.mode == ZK:
        return 0 if any(w.req == req for w in s.zk.writes) else None
    for i, rec in enumerate(s.quorum.log):
        if rec.kind == MUTATION_RECORD and rec.client == req:
            return i
    return None


def acknowledged_mutation_is_durable(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A mutation acknowledged as successful to a client is durable (in ZooKeeper, or
    committed to the metadata log); so is one a client sent in its own EnvelopeRequest that
    was answered NONE (a refused envelope is never answered as a success).

    KIP-590: "a successful update shall be eventually guaranteed"; R-17: the response is
    sent only after the record is committed."""
    clients = s.clients
    for c in _mutating_clients(cfg):
        for r in clients[c].responses:
            if r.code == kafka.NONE:
                if _durable_index(s, cfg, c) is None:
                    return False
                break
    return True


def acknowledged_mutation_visible(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Once quiescent, an acknowledged mutation is visible to every live broker (each has
    replayed it).

    KIP-590: "a successful update shall be eventually guaranteed"."""
    if not _kraft_mode(cfg):
        return True
    for c, spec in enumerate(cfg.clients):
        if spec.kind == MUTATION and any(r.code == kafka.NONE for r in s.clients[c].responses):
            i = _durable_index(s, cfg, c)
            if i is None:
                return False
            for b in cfg.brokers():
                if s.nodes[b].alive and s.nodes[b].replayed <= i:
                    return False
    return True


# ------------------------------------------------------------------------------------------
# P7 client-error-mapping


def clients_never_see_envelope_errors(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A client never sees an internal forwarding error: an envelope error reaches it as
    UNKNOWN_SERVER_ERROR, or (UNSUPPORTED_VERSION) as a closed connection.

    KIP-590 EnvelopeResponse Handling; table 1.6 of docs/rules.md."""
    forged = _forged_clients(cfg)
    clients = s.clients
    for c in range(len(cfg.clients)):
        if c in forged:
            continue        # it sent an EnvelopeRequest itself: envelope errors are its answer
        for r in clients[c].responses:
            if r.code in kafka.ENVELOPE_ONLY_ERRORS:
                return False
            if r.envelope_error:
                want = (kafka.NETWORK_EXCEPTION if r.envelope_error == kafka.UNSUPPORTED_VERSION
                        else kafka.UNKNOWN_SERVER_ERROR)
                if r.code != want:
                    return False
    return True


def unknown_server_error_only_for_envelope_errors(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A client gets UNKNOWN_SERVER_ERROR only as the forwarder's rendering of an envelope
    error: every outcome the model has (not the active controller, refused, denied, timed out)
    has its own code, and Errors.forException gives UNKNOWN_SERVER_ERROR only to an exception
    it cannot map, so an inner UNKNOWN_SERVER_ERROR is an answer nobody decided -- for a
    controller that is not active, a NOT_CONTROLLER the forwarder should have retried.

    KIP-590 'If the top level error code is NOT_CONTROLLER, retry until timeout'; table 1.6
    (the controller's inner response is passed through unchanged); F-34; KAFKA-14167."""
    forged = _forged_clients(cfg)
    for c, cl in enumerate(s.clients):
        if c in forged:
            continue
        for r in cl.responses:
            if r.code == kafka.UNKNOWN_SERVER_ERROR and not r.envelope_error:
                return False
    return True


# ------------------------------------------------------------------------------------------
# P8 api-version-intersection


def advertised_versions_within_controller(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Once a forwarder knows the active controller's versions, the versions it advertises
    for forwardable APIs are inside the controller's range.

    KIP-590 ApiVersion Consistency; F-35 (intersectForwardableApis); KAFKA-10674."""
    nodes = s.nodes
    for b in cfg.brokers():
        node = nodes[b]
        if node.alive and node.ctrl_versions != NO_VERSIONS and \
                advertised_version(s, cfg, d, b) > node.ctrl_versions:
            return False
    return True


# ------------------------------------------------------------------------------------------
# L1 every-request-answered


def at_most_one_final_response(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Each client request gets at most one final response.

    KIP-590: the forwarder completes each request once: "retry until timeout"."""
    for cl in s.clients:
        if len(cl.responses) > 1:
            return False
    return True


def forwarded_request_answered_by_deadline(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A forwarded request is answered by its deadline: while the client waits, its
    forwarder's channel still holds the request within the retry timeout counted from when
    the client sent it (queued), or within the network timeout counted from its last send (in
    flight).  The retry timeout alone does not bound the wait: Kafka checks it only for queued
    requests (F-19); one in flight lives until its network timeout (F-16) -- a difference the
    conformance run against the implementation showed.

    KIP-590: "If the top level error code is NOT_CONTROLLER, retry until timeout"; F-16,
    F-17, F-19 (KAFKA-10667: without the timeout, admin calls hang)."""
    for c, cl in enumerate(s.clients):
        if not cl.forwarded or cl.responses:
            continue
        ch = s.nodes[cfg.clients[c].node].channel
        item = ch.inflight
        if item and item.kind == FORWARD and item.client == c:
            if s.now - item.sent > cfg.forward_timeout:
                return False
            continue
        for item in ch.queue:
            if item.kind == FORWARD and item.client == c:
                limit = 2 * cfg.forward_timeout - 1 if item.requeued else cfg.forward_timeout
                if s.now - cl.sent_at > limit:
                    return False
    return True


def every_request_answered(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Once quiescent, every request sent has its final response (bounded liveness: the
    deadlines make the wait finite).

    KIP-590: "If the top level error code is NOT_CONTROLLER, retry until timeout"."""
    for cl in s.clients:
        if cl.sent and len(cl.responses) != 1:
            return False
    return True


# ------------------------------------------------------------------------------------------
# P10 broker-epochs


def broker_epoch_changes_with_incarnation(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A broker's epoch changes exactly when its incarnation does: two RegisterBrokerRecords
    for one broker id in a row, committed or appended, carry the same broker epoch if and only
    if they carry the same incarnation.

    KAFKA-16952: "the broker epoch ... is meant to only be bumped on broker restart" (a
    re-registration of the same incarnation keeps it); BR-3 (a new incarnation's epoch is
    the next write offset, so it differs from every earlier one); BR-5."""
    last = {}
    for rec in _appended_records(s.quorum):
        if rec.kind != REGISTER_BROKER:
            continue
        prev = last.get(rec.broker_id)
        if prev is not None and ((prev.incarnation_id == rec.incarnation_id)
                                 != (prev.broker_epoch == rec.broker_epoch)):
            return False
        last[rec.broker_id] = rec
    return True


def current_broker_never_told_stale(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A live broker is never told STALE_BROKER_EPOCH by a controller whose registration for it
    carries the very broker epoch the broker holds: while the registration it was given
    stands, its heartbeats are current.

    BH-4: a heartbeat is stale only if its epoch is not the registration's ("Expected broker
    epoch X, but got broker epoch Y"); BL-11 (the broker never re-registers after
    STALE_BROKER_EPOCH, so a wrong answer leaves a live broker unable to heartbeat until its
    session runs out and it is fenced)."""
    if not _broker_registration(cfg):
        return True
    for m in s.network:
        if m.kind != BROKER_HEARTBEAT_RESPONSE or m.error != kafka.STALE_BROKER_EPOCH:
            continue
        node = s.nodes[m.dst]
        if (node.alive and node.incarnation == m.incarnation_id and node.broker_epoch != -1
                and m.registered_epoch == node.broker_epoch):
            return False
    return True


def broker_fenced_only_after_session_expired(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Every fence of a broker, committed or appended, came after its session expired: the
    active controller had not heard from it for more than the session timeout.

    BH-9: the fence timer fences the least recently contacted unfenced broker only if it has
    no valid session (strictly more than the session timeout since its last contact); BH-1
    (broker.session.timeout.ms); KAFKA-15019 is what fencing a live broker costs."""
    timeout = cfg.session_timeout
    for rec in _appended_records(s.quorum):
        if rec.kind == BROKER_REGISTRATION_CHANGE and rec.fenced == FENCED \
                and not rec.silence > timeout:
            return False
    return True


def _replay_broker_record(brokers: dict, rec) -> bool:
    # a restatement of model.actions.broker_registration on purpose (see
    # _latest_registration): replay ``rec`` into ``brokers`` (broker -> (its
    # RegisterBrokerRecord, fenced)); True if it changed the broker's entry
    if rec.kind == REGISTER_BROKER:
        brokers[rec.broker_id] = (rec, rec.fenced == FENCED)
        return True
    cur = brokers.get(rec.broker_id) if rec.kind == BROKER_REGISTRATION_CHANGE else None
    if cur is not None and rec.broker_epoch == cur[0].broker_epoch and rec.fenced != 0:
        brokers[rec.broker_id] = (cur[0], rec.fenced == FENCED)
        return True
    return False


def _committed_registration(log, b: int):
    """(record, fenced) of broker b's registration in ``log``, or None."""
    brokers = {}
    for rec in log:
        if rec.kind in (REGISTER_BROKER, BROKER_REGISTRATION_CHANGE) and rec.broker_id == b:
            _replay_broker_record(brokers, rec)
    return brokers.get(b)


def registered_broker_unfenced_when_settled(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Once quiescent with a live active controller, every live broker that holds the committed
    registration of its broker id (its incarnation, the broker epoch it was given) is unfenced
    in the log: a broker that keeps heartbeating is not left fenced.

    BH-7: a fenced broker whose heartbeat shows it has replayed its own RegisterBrokerRecord
    (and does not want to be fenced) becomes UNFENCED; BH-9: only a session that runs out
    fences it; BL-10/BL-11: a registered broker keeps heartbeating."""
    if not _broker_registration(cfg):
        return True
    q = s.quorum
    if not _live_active_controller(s):
        return True
    for b in cfg.brokers():
        node = s.nodes[b]
        cur = _committed_registration(q.log, b)
        if (node.alive and node.lifecycle_registered and cur is not None
                and cur[0].incarnation_id == node.incarnation
                and cur[0].broker_epoch == node.broker_epoch and cur[1]):
            return False
    return True


def dead_broker_fenced_when_settled(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Once quiescent with a live active controller, no broker that is down holds an unfenced
    registration in the committed log: a broker that stops heartbeating is fenced, also when
    it stopped as the controller failed over.

    BH-9: the active controller fences an unfenced broker whose session ran out; BR-13: a
    controller that becomes active starts a session for every registered broker, so a broker
    that never heartbeats it is fenced a session timeout later; KAFKA-18138 ('Otherwise, we
    could end up in a situation where a broker fails exactly as a controller failover occurs,
    and we never fence it')."""
    if not _broker_registration(cfg):
        return True
    q = s.quorum
    if not _live_active_controller(s):
        return True
    for b in cfg.brokers():
        cur = _committed_registration(q.log, b)
        if not s.nodes[b].alive and cur is not None and not cur[1]:
            return False
    return True


# ------------------------------------------------------------------------------------------
# P11 auto-created-topics


def _created_topics(records, cfg: ModelConfig):
    """The topic names these metadata-log records create: a broker's own CreateTopics
    (TopicRecord) and every client's CreateTopics or auto-creation (MutationRecord)."""
    for rec in records:
        if rec.kind == TOPIC_RECORD:
            yield cfg.topic_names[rec.topic]
        elif rec.kind == MUTATION_RECORD:
            spec = cfg.clients[rec.client]
            if spec.mutation_api == kafka.CREATE_TOPICS:
                yield spec.topic_name


def created_topics_pass_policy(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Every topic created, committed or appended, is one the create-topic policy accepts,
    whoever asked for it: a client, or a broker for a topic a request needs (an internal
    topic).

    KIP-590 Internal CreateTopicsRequest Routing: "at the moment the direct ZK access bypasses
    the CreateTopicPolicy. This is in fact a hole in the topic creation logic that we should
    fix"; AT-5 (ReplicationControlManager runs create.topic.policy.class.name), AT-6 (no
    exemption for internal topics)."""
    if not _has_topic_policy(cfg):
        return True
    return all(name not in cfg.create_topic_policy
               for name in _created_topics(_appended_records(s.quorum), cfg))


def auto_creation_refusal_reaches_client(s: State, cfg: ModelConfig, d: Design) -> bool:
    """A Metadata request for a topic the cluster refuses to create (its create-topic policy
    refuses it) is never answered as if the topic were on its way: not UNKNOWN_TOPIC_OR_PARTITION
    nor LEADER_NOT_AVAILABLE, which tell the client to retry a topic that will never exist.

    KIP-590 Internal CreateTopicsRequest Routing: the receiving broker sends CreateTopics to
    the active controller "while waiting for the response in the mean time"; "if a
    MetadataRequest tries to create an internal topic but failed, receiving broker will reply a
    fatal error to let the client fail fast" (POLICY_VIOLATION from Metadata v10)."""
    if not _refused_metadata_clients(cfg):
        return True
    clients = s.clients
    for c in _refused_metadata_clients(cfg):
        for r in clients[c].responses:
            if r.code in (kafka.UNKNOWN_TOPIC_OR_PARTITION, kafka.LEADER_NOT_AVAILABLE):
                return False
    return True


# ------------------------------------------------------------------------------------------
# P12 supported-features


def _supports(features, name: str, level: int) -> bool:
    # restated from BR-4.9, apart from model.actions.unsupported_feature on purpose (a mutant
    # of the model's check must not change the clause)
    for feature, lo, hi in features:
        if feature == name:
            return lo <= level <= hi
    if name == kafka.METADATA_VERSION_FEATURE:
        return level == kafka.MINIMUM_KRAFT_VERSION     # a missing metadata.version is [1, 1]
    return level == 0                                   # KAFKA-17305: [0, 0]


def _supports_finalized(cfg: ModelConfig, features, mv: int) -> bool:
    """Software with ``features`` supports metadata.version ``mv`` and every other finalized
    feature at its finalized level (BR-4.9)."""
    return all(_supports(features, name, level)
               for name, level in ((kafka.METADATA_VERSION_FEATURE, mv),)
               + cfg.finalized_features)


def registered_brokers_support_finalized_features(s: State, cfg: ModelConfig,
                                                  d: Design) -> bool:
    """Every broker registration in the metadata log, committed or appended, is of a process
    run whose software supports every finalized feature at the level finalized when the
    registration was appended: metadata.version and each other finalized feature, one the
    registration omits included.

    BR-4.9: "each requested feature's finalized level ... must lie in [Min, Max], else
    UnsupportedVersionException ('Unable to register because the broker does not support
    version F of NAME')"; KAFKA-17305: "Quorum controller should check the finalized
    kraft.version during broker registration" (a broker whose registration omits kraft.version
    supports only level 0)."""
    if not _broker_registration(cfg):
        return True
    mv = kafka.MINIMUM_KRAFT_VERSION
    for rec in _appended_records(s.quorum):
        if rec.kind == FEATURE_LEVEL:
            mv = rec.level
        elif rec.kind == REGISTER_BROKER:
            features = cfg.nodes[rec.broker_id].features(rec.incarnation_id)
            if features is not None and not _supports_finalized(cfg, features, mv):
                return False
    return True


def supported_brokers_not_refused(s: State, cfg: ModelConfig, d: Design) -> bool:
    """No broker registration is refused for its features while the registering process run's
    software supports every finalized feature at its finalized level: an UNSUPPORTED_VERSION
    answer to a BrokerRegistrationRequest names a run that cannot run some finalized level.

    BR-4.9: "each requested feature's finalized level ... must lie in [Min, Max], else
    UnsupportedVersionException" -- the refusal is for a level outside the range the broker
    supports, never for one inside it; KIP-584: a broker advertises the ranges it supports and
    may join a cluster whose finalized levels lie within them (KAFKA-17492: a range starting at
    0 sent as starting at 1 refused brokers that supported kraft.version 0, and blocked
    upgrades)."""
    if not _broker_registration(cfg):
        return True
    refused = [m for m in s.network if m.kind == BROKER_REGISTRATION_RESPONSE
               and m.error == kafka.UNSUPPORTED_VERSION]
    if not refused:
        return True
    mv = kafka.MINIMUM_KRAFT_VERSION
    for rec in _appended_records(s.quorum):
        if rec.kind == FEATURE_LEVEL:
            mv = rec.level
    for m in refused:
        features = cfg.nodes[m.dst].features(m.incarnation_id)
        if features is None or _supports_finalized(cfg, features, mv):
            return False
    return True


PROPERTIES = (
    Property("P1", "single-writer",
             "every durable write was made by the controller of the current epoch at the time "
             "of the write (once a KRaft controller has claimed ZooKeeper, by it alone); a "
             "deposed controller's write never lands",
             "KIP-590 'single writer'; Z-1..Z-3; MG-5, MG-6; KAFKA-6082, KAFKA-16539",
             (Clause("zk-writes-carry-current-epoch", ALWAYS, zk_writes_carry_current_epoch),
              Clause("active-controller-won-its-epoch", ALWAYS,
                     active_controller_won_its_epoch),
              Clause("zk-writes-by-epoch-holder", ALWAYS, zk_writes_by_epoch_holder),
              Clause("kraft-controller-sole-zk-writer", ALWAYS,
                     kraft_controller_sole_zk_writer),
              Clause("active-controller-owns-controller-znode", ALWAYS,
                     active_controller_owns_controller_znode, _zk_mode),
              Clause("log-has-one-writer-per-epoch", ALWAYS, log_has_one_writer_per_epoch),
              Clause("log-appended-by-current-leader", ALWAYS,
                     log_appended_by_current_leader))),
    Property("P2", "bounded-forwarding",
             "a client request crosses at most one forwarding hop, a forwarded request is never "
             "forwarded again, every forward ends by its deadline, and after NOT_CONTROLLER the "
             "next attempt goes to a different or newer controller",
             "KIP-590 draft 'never be forwarded twice'; F-10, F-19, F-21; KAFKA-10667, KAFKA-12677",
             (Clause("envelope-never-nested", ALWAYS, envelope_never_nested),
              Clause("forward-ends-by-deadline", ALWAYS, forward_ends_by_deadline),
              Clause("forwarder-forgets-not-controller", ALWAYS,
                     forwarder_forgets_not_controller))),
    Property("P3", "registration-converges",
             "a controller never believes it is registered while its replayed log shows another "
             "incarnation; in quiescent states each live controller's registration carries its "
             "current incarnation",
             "KIP-919 'it will re-register'; R-6..R-10; KAFKA-20247",
             (Clause("registered-only-if-log-agrees", ALWAYS, registered_only_if_log_agrees),
              Clause("registered-if-log-agrees", ALWAYS, registered_if_log_agrees,
                     _kraft_registration),
              Clause("registration-names-incarnation-it-ran", ALWAYS,
                     registration_names_incarnation_it_ran),
              Clause("one-registration-request-outstanding", ALWAYS,
                     one_registration_request_outstanding, _kraft_registration),
              Clause("registration-carries-current-incarnation", QUIESCENT,
                     registration_carries_current_incarnation, _kraft_registration))),
    Property("P4", "forwarding-authorization",
             "every applied mutation was authorized for the original client principal; an "
             "envelope is applied only if its sender has CLUSTER_ACTION and (ZK) it arrived on "
             "the privileged listener",
             "KIP-590 Routing Request Security; F-24, F-25, F-28, F-30; KAFKA-12294",
             (Clause("mutations-authorized-as-client", ALWAYS, mutations_authorized_as_client),
              Clause("envelopes-only-from-trusted-senders", ALWAYS,
                     envelopes_only_from_trusted_senders))),
    Property("P5", "listener-isolation",
             "every endpoint returned to a client is on the listener the request arrived on and "
             "of the endpoint type asked for, resolved, and as the answering node's replayed "
             "registrations have it; a broker that does not register lists itself; once "
             "settled, a ZK broker's registration carries its current endpoints; a Metadata "
             "answer is LISTENER_NOT_FOUND only where the partition leader lacks the listener",
             "KIP-103; KIP-919; L-27; L-28; R-21; D-1..D-3; EP-1..EP-6",
             (Clause("endpoints-on-request-listener", ALWAYS, endpoints_on_request_listener),
              Clause("listener-not-found-only-where-leader-lacks-it", ALWAYS,
                     listener_not_found_only_where_leader_lacks_it, _leaders_with_the_listener),
              Clause("broker-describe-lists-itself", ALWAYS, broker_describe_lists_itself,
                     _broker_self_describers),
              Clause("returned-endpoints-are-resolved", ALWAYS, returned_endpoints_are_resolved),
              Clause("describe-lists-registered-endpoints", ALWAYS,
                     describe_lists_registered_endpoints, _kraft_describers),
              Clause("zk-registration-carries-current-endpoints", QUIESCENT,
                     zk_registration_carries_current_endpoints, _zk_broker_registration))),
    Property("P6", "acknowledged-durable",
             "a mutation acknowledged as successful is durable and, once quiescent, visible to "
             "every live broker",
             "KIP-590 'a successful update shall be eventually guaranteed'; R-17",
             (Clause("acknowledged-mutation-is-durable", ALWAYS, acknowledged_mutation_is_durable),
              Clause("acknowledged-mutation-visible", QUIESCENT, acknowledged_mutation_visible,
                     _kraft_mode))),
    Property("P7", "client-error-mapping",
             "a client never sees an internal forwarding error; it sees UNKNOWN_SERVER_ERROR, "
             "REQUEST_TIMED_OUT, a closed connection or the inner response",
             "KIP-590 EnvelopeResponse Handling; table 1.6",
             (Clause("clients-never-see-envelope-errors", ALWAYS,
                     clients_never_see_envelope_errors),
              Clause("unknown-server-error-only-for-envelope-errors", ALWAYS,
                     unknown_server_error_only_for_envelope_errors))),
    Property("P8", "api-version-intersection",
             "once the forwarder knows the active controller's versions, the versions it "
             "advertises for forwardable APIs are inside the controller's range",
             "KIP-590 ApiVersion Consistency; F-35; KAFKA-10674",
             (Clause("advertised-versions-within-controller", ALWAYS,
                     advertised_versions_within_controller),)),
    Property("P9", "request-admission",
             "a controller acts on a request only where Kafka admits it: no envelope at a "
             "controller that must refuse envelopes, a client's own envelope only on the "
             "privileged listener, registrations only from CLUSTER_ACTION, DescribeCluster on a "
             "controller only with ALTER",
             "KIP-590 Routing Request Security; KIP-919; F-23, F-24, F-29a, R-12, D-1.2",
             (Clause("envelopes-applied-only-where-accepted", ALWAYS,
                     envelopes_applied_only_where_accepted),
              Clause("client-envelopes-only-on-privileged-listener", ALWAYS,
                     client_envelopes_only_on_privileged_listener, _zk_mode),
              Clause("registrations-from-cluster-action", ALWAYS,
                     registrations_from_cluster_action),
              Clause("controller-describe-requires-alter", ALWAYS,
                     controller_describe_requires_alter, _describers_without_alter))),
    Property("P10", "broker-epochs",
             "a broker's epoch changes exactly when its incarnation does; a live broker holding "
             "its current registration is never told its epoch is stale, is fenced only after its "
             "session expired and, once the cluster has settled, is not left fenced; a broker "
             "that stops heartbeating is fenced once the cluster has settled",
             "KAFKA-16952; KAFKA-18138; BR-3, BR-5, BR-13, BH-4, BH-7, BH-9, BL-11",
             (Clause("broker-epoch-changes-with-incarnation", ALWAYS,
                     broker_epoch_changes_with_incarnation),
              Clause("current-broker-never-told-stale", ALWAYS, current_broker_never_told_stale,
                     _broker_registration),
              Clause("broker-fenced-only-after-session-expired", ALWAYS,
                     broker_fenced_only_after_session_expired),
              Clause("registered-broker-unfenced-when-settled", QUIESCENT,
                     registered_broker_unfenced_when_settled, _broker_registration),
              Clause("dead-broker-fenced-when-settled", QUIESCENT,
                     dead_broker_fenced_when_settled, _broker_registration))),
    Property("P11", "auto-created-topics",
             "every topic the cluster creates passes the create-topic policy, whoever asked for "
             "it; a Metadata request whose auto-creation the policy refuses is answered with the "
             "refusal, not as if the topic were coming",
             "KIP-590 Internal CreateTopicsRequest Routing; AT-1..AT-6",
             (Clause("created-topics-pass-policy", ALWAYS, created_topics_pass_policy,
                     _has_topic_policy),
              Clause("auto-creation-refusal-reaches-client", ALWAYS,
                     auto_creation_refusal_reaches_client, _refused_metadata_clients))),
    Property("P12", "supported-features",
             "every broker registration in the metadata log is of a process run whose software "
             "supports every finalized feature at its finalized level, a feature its "
             "registration omits included; a run whose software supports them all is never "
             "refused for its features",
             "KIP-919 (registrations carry the supported feature ranges); KIP-584; BR-4.9; "
             "KAFKA-17305",
             (Clause("registered-brokers-support-finalized-features", ALWAYS,
                     registered_brokers_support_finalized_features, _broker_registration),
              Clause("supported-brokers-not-refused", ALWAYS, supported_brokers_not_refused,
                     _broker_registration))),
    Property("L1", "every-request-answered",
             "each client request gets exactly one final response: never two, a forwarded one "
             "by its deadline, and every one once the cluster is quiescent",
             "KIP-590 'retry until timeout'",
             (Clause("at-most-one-final-response", ALWAYS, at_most_one_final_response),
              Clause("forwarded-request-answered-by-deadline", ALWAYS,
                     forwarded_request_answered_by_deadline),
              Clause("every-request-answered", QUIESCENT, every_request_answered))),
)
PROPERTY_IDS = tuple(p.id for p in PROPERTIES)
BY_ID = {p.id: p for p in PROPERTIES}

_ALWAYS = tuple((p.id, c) for p in PROPERTIES for c in p.clauses if c.kind == ALWAYS)

# What each ALWAYS clause reads of a state, on every path through its code and the helpers it
# calls (properties/incremental.py names the locations; node and client fields of any index).
# The explorer asks a state only the clauses that read what the step into it changed.  A clause
# not listed here reads everything (it is asked in every state); tests/test_incremental.py
# checks every entry against what the clause reads on the reachable states of the named
# configurations.  A clause whose code is changed to read more must say so here.
READS = {
    "zk-writes-carry-current-epoch": ("zk.writes",),
    "active-controller-won-its-epoch": ("node.alive", "node.zk_active", "node.zk_epoch",
                                        "zk.epoch_holders"),
    "zk-writes-by-epoch-holder": ("zk.writes",),
    "kraft-controller-sole-zk-writer": ("zk.writes",),
    "active-controller-owns-controller-znode": ("zk.controller", "zk.epoch", "node.alive",
                                                "node.zk_active", "node.session_expired",
                                                "node.zk_epoch"),
    "log-has-one-writer-per-epoch": ("quorum.log",),
    "log-appended-by-current-leader": ("quorum.uncommitted", "quorum.leader", "quorum.epoch"),
    "envelope-never-nested": ("network",),
    "forward-ends-by-deadline": ("now", "node.alive", "node.channel"),
    "forwarder-forgets-not-controller": ("node.alive", "node.channel", "node.not_controller_from"),
    "registered-only-if-log-agrees": ("node.alive", "node.registered_in_log", "node.replayed",
                                      "node.incarnation", "quorum.log"),
    "registered-if-log-agrees": ("node.alive", "node.registered_in_log", "node.replayed",
                                 "node.incarnation", "quorum.log"),
    "registration-names-incarnation-it-ran": ("quorum.log", "quorum.uncommitted",
                                              "node.incarnation"),
    "one-registration-request-outstanding": ("node.alive", "node.incarnation", "network",
                                             "quorum.uncommitted"),
    "mutations-authorized-as-client": ("zk.writes", "quorum.log"),
    "envelopes-only-from-trusted-senders": ("zk.writes", "quorum.log"),
    "endpoints-on-request-listener": ("client.responses",),
    "listener-not-found-only-where-leader-lacks-it": ("client.responses",),
    "broker-describe-lists-itself": ("client.responses",),
    "returned-endpoints-are-resolved": ("client.responses",),
    "describe-lists-registered-endpoints": ("quorum.log", "client.responses"),
    "acknowledged-mutation-is-durable": ("client.responses", "zk.writes", "quorum.log"),
    "clients-never-see-envelope-errors": ("client.responses",),
    "unknown-server-error-only-for-envelope-errors": ("client.responses",),
    "advertised-versions-within-controller": ("node.alive", "node.ctrl_versions"),
    "envelopes-applied-only-where-accepted": ("zk.writes", "quorum.log", "quorum.uncommitted"),
    "client-envelopes-only-on-privileged-listener": ("zk.writes",),
    "registrations-from-cluster-action": ("quorum.log", "quorum.uncommitted"),
    "controller-describe-requires-alter": ("client.responses",),
    "broker-epoch-changes-with-incarnation": ("quorum.log", "quorum.uncommitted"),
    "current-broker-never-told-stale": ("network", "node.alive", "node.incarnation",
                                        "node.broker_epoch"),
    "broker-fenced-only-after-session-expired": ("quorum.log", "quorum.uncommitted"),
    "created-topics-pass-policy": ("quorum.log", "quorum.uncommitted"),
    "auto-creation-refusal-reaches-client": ("client.responses",),
    "registered-brokers-support-finalized-features": ("quorum.log", "quorum.uncommitted"),
    "supported-brokers-not-refused": ("network", "quorum.log", "quorum.uncommitted"),
    "at-most-one-final-response": ("client.responses",),
    "forwarded-request-answered-by-deadline": ("client.forwarded", "client.responses",
                                               "client.sent_at", "node.channel", "now"),
}
_QUIESCENT = tuple((p.id, c) for p in PROPERTIES for c in p.clauses if c.kind == QUIESCENT)

# What a report of a violation shows of the violating state, per clause: the parts of the
# state the clause reads, and those that explain how it got there.  Names are the renderers
# of ``model.describe.FIELDS``.
RELEVANT_FIELDS = {
    "zk-writes-carry-current-epoch": ("zk-writes", "active-controller", "zk-controllers"),
    "active-controller-won-its-epoch": ("zk-controllers", "zk-epoch-holders",
                                        "active-controller"),
    "zk-writes-by-epoch-holder": ("zk-writes", "zk-epoch-holders", "zk-controllers"),
    "kraft-controller-sole-zk-writer": ("zk-writes", "zk-epoch-holders", "zk-controllers",
                                        "metadata-caches"),
    "active-controller-owns-controller-znode": ("zk-controllers", "active-controller"),
    "log-has-one-writer-per-epoch": ("metadata-log", "active-controller"),
    "log-appended-by-current-leader": ("metadata-log", "active-controller"),
    "envelopes-applied-only-where-accepted": ("applied-mutations", "client-responses"),
    "client-envelopes-only-on-privileged-listener": ("applied-mutations", "client-responses"),
    "registrations-from-cluster-action": ("registrations", "metadata-log"),
    "controller-describe-requires-alter": ("describe-responses", "client-responses"),
    "envelope-never-nested": ("envelopes-in-flight", "active-controller", "zk-controllers",
                              "metadata-caches"),
    "forward-ends-by-deadline": ("clock", "controller-channels", "client-responses"),
    "forwarder-forgets-not-controller": ("controller-channels", "active-controller",
                                         "client-responses"),
    "registered-only-if-log-agrees": ("registrations", "metadata-log"),
    "registered-if-log-agrees": ("registrations", "metadata-log"),
    "registration-names-incarnation-it-ran": ("registrations", "metadata-log"),
    "one-registration-request-outstanding": ("network", "controller-channels", "metadata-log",
                                             "registrations"),
    "registration-carries-current-incarnation": ("active-controller", "registrations",
                                                 "metadata-log", "controller-channels"),
    "mutations-authorized-as-client": ("applied-mutations", "client-responses"),
    "envelopes-only-from-trusted-senders": ("applied-mutations", "client-responses"),
    "endpoints-on-request-listener": ("describe-responses",),
    "broker-describe-lists-itself": ("describe-responses",),
    "listener-not-found-only-where-leader-lacks-it": ("partition-leaders", "client-responses"),
    "returned-endpoints-are-resolved": ("describe-responses", "registrations", "metadata-log"),
    "describe-lists-registered-endpoints": ("describe-responses", "metadata-log",
                                            "broker-registrations"),
    "zk-registration-carries-current-endpoints": ("zk-broker-registrations",
                                                  "zk-controllers"),
    "acknowledged-mutation-is-durable": ("acknowledged-mutations", "active-controller",
                                         "client-responses"),
    "acknowledged-mutation-visible": ("acknowledged-mutations", "metadata-log"),
    "clients-never-see-envelope-errors": ("client-responses",),
    "unknown-server-error-only-for-envelope-errors": ("client-responses",),
    "advertised-versions-within-controller": ("advertised-versions", "active-controller"),
    "at-most-one-final-response": ("client-responses", "controller-channels"),
    "forwarded-request-answered-by-deadline": ("clock", "client-responses",
                                               "controller-channels"),
    "every-request-answered": ("client-responses", "controller-channels", "network"),
    "created-topics-pass-policy": ("metadata-log", "controller-channels"),
    "auto-creation-refusal-reaches-client": ("client-responses", "controller-channels"),
    "registered-brokers-support-finalized-features": ("broker-registrations", "metadata-log"),
    "supported-brokers-not-refused": ("network", "broker-lifecycles", "metadata-log"),
    "broker-epoch-changes-with-incarnation": ("broker-registrations", "metadata-log"),
    "current-broker-never-told-stale": ("broker-registrations", "broker-lifecycles", "network"),
    "broker-fenced-only-after-session-expired": ("broker-registrations", "metadata-log", "clock"),
    "registered-broker-unfenced-when-settled": ("broker-registrations", "broker-lifecycles",
                                                "metadata-log"),
    "dead-broker-fenced-when-settled": ("broker-registrations", "metadata-log", "clock"),
}


def describe_violation(cfg: ModelConfig, design: Design, state: State, prop_id: str,
                       clause_name: str | None = None) -> list:
    """The violating state's facts that matter for the clause, one line each, in Kafka's
    words (the clause's ``RELEVANT_FIELDS``).  Without a clause name: those of every clause
    of the property."""
    from model.describe import describe_fields
    if clause_name is None:
        names = [c.name for c in BY_ID[prop_id].clauses]
    else:
        names = [clause_name]
    fields = []
    for name in names:
        # a clause a researcher added without its RELEVANT_FIELDS entry (tests/test_describe.py
        # fails on it) still gets its trace printed, with no facts listed
        fields += [f for f in RELEVANT_FIELDS.get(name, ()) if f not in fields]
    return describe_fields(cfg, design, state, fields)


def first_violation(s: State, cfg: ModelConfig, d: Design, succ: list,
                    changed: int | None = None) -> tuple | None:
    """(property ID, clause name) of the first violated clause in registry order, or None.
    ``succ`` is successors(s): quiescent clauses are checked only when ``s`` is quiescent.
    ``changed`` (properties/incremental.py): ``s`` was reached by a step that changed only
    these locations from a state where every ALWAYS clause held; the ALWAYS clauses that read
    none of them hold here too and are not asked."""
    plan = cfg.__dict__.get("_registry_plan")
    if plan is None or plan[0] is not _ALWAYS or plan[1] is not _QUIESCENT:
        plan = cfg.__dict__["_registry_plan"] = _clause_plan(cfg)
    always = plan[2]
    if changed is not None:
        asked = plan[4]
        always = asked.get(changed)
        if always is None:
            always = asked[changed] = tuple(
                (holds, pid, name) for (holds, pid, name), reads in zip(plan[2], plan[5])
                if reads & changed)
    for holds, pid, name in always:
        if not holds(s, cfg, d):
            return pid, name
    if plan[3] and quiescent(s, cfg, d, succ):
        for holds, pid, name in plan[3]:
            if not holds(s, cfg, d):
                return pid, name
    return None


def _clause_plan(cfg: ModelConfig) -> tuple:
    """(``_ALWAYS``, ``_QUIESCENT``, then of each, in order, (holds, property ID, clause name)
    for the clauses that apply to ``cfg``): those that do not hold in every state of it, as
    their ``applies`` says; then the ALWAYS clauses asked per mask of changed locations, and
    what each ALWAYS clause reads (``READS``).  Kept on the configuration with the tuples it
    was made from (a test that takes a clause out installs new ones)."""
    def plan(clauses):
        return tuple((c.holds, pid, c.name) for pid, c in clauses
                     if c.applies is None or c.applies(cfg))
    always = plan(_ALWAYS)
    # for incremental checks: the clauses asked per mask of changed locations (filled as
    # masks come), and each ALWAYS clause's mask of what it reads
    reads = tuple(incremental.mask_of(READS.get(name)) for _, _, name in always)
    return _ALWAYS, _QUIESCENT, always, plan(_QUIESCENT), {}, reads


# ------------------------------------------------------------------------------------------
# witnesses: (prev, step, next, cfg) -> bool


class Witness(NamedTuple):
    id: str
    description: str
    seen: Callable              # (prev, step, nxt, cfg) -> bool
    # the actions whose steps it can be seen on; () for a state predicate (it reads only
    # ``nxt``), which the engines check once per distinct state instead of once per transition
    # (tests/test_witness_scopes.py checks every declaration on the tiny configurations)
    steps: tuple = ()


def _responses(s: State, cfg: ModelConfig, kind=None):
    for c, spec in enumerate(cfg.clients):
        if kind is None or spec.kind == kind:
            for r in s.clients[c].responses:
                yield spec, r


def _led_from_the_start(cfg: ModelConfig, spec) -> bool:
    """The Metadata client's topic exists from the start with a partition leader (L-28): its
    LEADER_NOT_AVAILABLE means the leader is down, not that the topic was just auto-created."""
    return cfg.partition_leader(cfg.topic_index(spec.topic_name)) is not None


def _stale_registration_repaired(s: State, cfg: ModelConfig) -> bool:
    for c in cfg.controllers():
        incs = [rec.incarnation_id for rec in s.quorum.log
                if rec.kind == REGISTER_CONTROLLER and rec.controller_id == c]
        for i in range(len(incs)):
            for j in range(i + 1, len(incs)):
                if incs[j] < incs[i] and incs[i] in incs[j + 1:]:
                    return True
    return False


def _applied_twice(s: State, cfg: ModelConfig) -> bool:
    reqs = [req for req, _, _, _ in _applied(s, cfg)]
    return len(reqs) != len(set(reqs))


def _describe_endpoints(s: State, cfg: ModelConfig, endpoint_type: int | None = None):
    for spec, r in _responses(s, cfg):
        if spec.api == kafka.DESCRIBE_CLUSTER and endpoint_type in (None, spec.endpoint_type) \
                and r.code == kafka.NONE:
            yield r.endpoints


WITNESSES = {w.id: w for w in (
    Witness("mutation-acknowledged", "a client's mutation succeeds",
            lambda p, st, s, cfg: any(r.code == kafka.NONE
                                      for _, r in _responses(s, cfg, MUTATION))),
    Witness("mutation-denied", "an unauthorized client's forwarded mutation is refused",
            lambda p, st, s, cfg: any(r.code == kafka.TOPIC_AUTHORIZATION_FAILED
                                      for _, r in _responses(s, cfg, MUTATION))),
    Witness("zombie-write-fenced",
            "a deposed ZK controller's write fails the epoch zkVersion check and it resigns",
            lambda p, st, s, cfg: st.action == "controller_processes_event"
            and p.nodes[st.args[0]].zk_active and not s.nodes[st.args[0]].zk_active,
            ("controller_processes_event",)),
    Witness("forward-succeeds-after-not-controller",
            "a forwarded request succeeds after a NOT_CONTROLLER or disconnect retry",
            lambda p, st, s, cfg: any(r.code == kafka.NONE and r.retried
                                      for _, r in _responses(s, cfg, MUTATION))),
    Witness("request-timed-out", "a forwarded request times out with REQUEST_TIMED_OUT",
            lambda p, st, s, cfg: any(r.code == kafka.REQUEST_TIMED_OUT
                                      for _, r in _responses(s, cfg))),
    Witness("controller-moved", "a new controller epoch begins",
            lambda p, st, s, cfg: max(s.zk.epoch, s.quorum.epoch) >= 2),
    Witness("forward-applied-twice",
            "forwarding is at-least-once: a retried request is applied twice",
            lambda p, st, s, cfg: _applied_twice(s, cfg)),
    Witness("connection-closed-for-renegotiation",
            "an envelope fails with UNSUPPORTED_VERSION and the forwarder closes the client "
            "connection so it renegotiates versions",
            lambda p, st, s, cfg: any(r.envelope_error == kafka.UNSUPPORTED_VERSION
                                      for _, r in _responses(s, cfg))),
    Witness("envelope-rejected-cluster-authorization",
            "an envelope is rejected with CLUSTER_AUTHORIZATION_FAILED",
            lambda p, st, s, cfg: any(r.envelope_error == kafka.CLUSTER_AUTHORIZATION_FAILED
                                      for _, r in _responses(s, cfg))),
    Witness("forged-envelope-refused",
            "an EnvelopeRequest on a client listener gets its connection closed",
            lambda p, st, s, cfg: any(r.code == kafka.NETWORK_EXCEPTION
                                      for _, r in _responses(s, cfg, FORGED_ENVELOPE))),
    Witness("controller-registered", "a controller that started unregistered registers",
            lambda p, st, s, cfg: any(s.nodes[c].registered_in_log for c in cfg.controllers()
                                      if c not in cfg.initially_registered)),
    Witness("restarted-controller-registered",
            "a restarted controller registers its new incarnation",
            lambda p, st, s, cfg: any(s.nodes[c].registered_in_log and s.nodes[c].incarnation > 0
                                      for c in cfg.controllers())),
    Witness("stale-registration-repaired",
            "a late registration from an old incarnation overwrites the new one and the "
            "controller re-registers",
            lambda p, st, s, cfg: _stale_registration_repaired(s, cfg)),
    Witness("registration-timed-out",
            "a registration RPC times out in the channel and the manager backs off",
            lambda p, st, s, cfg: st.action == "channel_times_out_request"
            and p.nodes[st.args[0]].pending_rpc and not s.nodes[st.args[0]].pending_rpc,
            ("channel_times_out_request",)),
    Witness("describe-lists-brokers", "DescribeCluster to a broker lists broker endpoints",
            lambda p, st, s, cfg: any(e for e in _describe_endpoints(s, cfg,
                                                                    kafka.ENDPOINT_BROKER))),
    Witness("describe-lists-controllers",
            "DescribeCluster to a controller lists controller endpoints",
            lambda p, st, s, cfg: any(e for e in _describe_endpoints(s, cfg,
                                                                    kafka.ENDPOINT_CONTROLLER))),
    Witness("describe-lists-registered-controller-late",
            "DescribeCluster to a controller lists a controller that registered after start",
            lambda p, st, s, cfg: any(
                node not in cfg.initially_registered
                for e in _describe_endpoints(s, cfg, kafka.ENDPOINT_CONTROLLER)
                for node, _, _ in e)),
    Witness("describe-lists-stale-endpoint",
            "DescribeCluster lists a node's endpoints from an earlier process run than the one "
            "now running (its new registration not yet replayed where the answer came from)",
            lambda p, st, s, cfg: any(
                0 <= token < s.nodes[node].incarnation
                for e in _describe_endpoints(s, cfg) for node, _, token in e)),
    Witness("zk-broker-reregistered",
            "a ZK broker whose session expired registers in /brokers/ids again",
            lambda p, st, s, cfg: st.action == "zk_creates_broker_znode"
            and p.zk.broker_ids[st.args[0]] == NO_VERSIONS
            and s.zk.broker_ids[st.args[0]] != NO_VERSIONS
            and s.nodes[st.args[0]].incarnation == 0, ("zk_creates_broker_znode",)),
    Witness("zk-broker-listeners-updated",
            "a dynamic listener update rewrites a broker's /brokers/ids/N",
            lambda p, st, s, cfg: st.action == "operator_updates_listeners"
            and s.zk.broker_ids[st.args[0]] > 0, ("operator_updates_listeners",)),
    Witness("describe-lists-restarted-endpoint",
            "DescribeCluster lists the endpoints a restarted node bound and registered",
            lambda p, st, s, cfg: any(
                token > 0 for e in _describe_endpoints(s, cfg) for _, _, token in e)),
    Witness("mismatched-endpoint-type",
            "a client asking a broker for controllers gets MISMATCHED_ENDPOINT_TYPE",
            lambda p, st, s, cfg: any(r.code == kafka.MISMATCHED_ENDPOINT_TYPE
                                      for _, r in _responses(s, cfg))),
    Witness("broker-unfenced", "a fenced broker's caught-up heartbeat unfences it",
            lambda p, st, s, cfg: st.action == "controller_commits_records" and any(
                rec.kind == BROKER_REGISTRATION_CHANGE and rec.fenced != FENCED
                for rec in s.quorum.log[len(p.quorum.log):]), ("controller_commits_records",)),
    Witness("broker-reregistered-same-incarnation",
            "a running broker re-registers its registered incarnation (BL-8)",
            lambda p, st, s, cfg: st.action == "controller_commits_records" and any(
                rec.kind == REGISTER_BROKER and any(
                    old.kind == REGISTER_BROKER and old.broker_id == rec.broker_id
                    and old.incarnation_id == rec.incarnation_id for old in p.quorum.log)
                for rec in s.quorum.log[len(p.quorum.log):]), ("controller_commits_records",)),
    Witness("broker-fenced-by-session-timeout",
            "the active controller fences a broker whose session expired",
            lambda p, st, s, cfg: st.action == "controller_fences_stale_broker",
            ("controller_fences_stale_broker",)),
    Witness("restarted-broker-registered", "a restarted broker registers its new incarnation",
            lambda p, st, s, cfg: any(s.nodes[b].lifecycle_registered
                                      and s.nodes[b].incarnation > 0 for b in cfg.brokers())),
    Witness("broker-registration-refused-unsupported-features",
            "a broker registration whose software does not support a finalized feature level "
            "is refused with UNSUPPORTED_VERSION (BR-4.9)",
            lambda p, st, s, cfg: any(m.kind == BROKER_REGISTRATION_RESPONSE
                                      and m.error == kafka.UNSUPPORTED_VERSION
                                      for m in s.network)),
    Witness("duplicate-broker-registration-refused",
            "a new incarnation's registration is refused while the old one's session lives",
            lambda p, st, s, cfg: any(m.kind == BROKER_REGISTRATION_RESPONSE
                                      and m.error == kafka.DUPLICATE_BROKER_REGISTRATION
                                      for m in s.network)),
    Witness("describe-denied",
            "DescribeCluster to a controller without ALTER on the cluster is refused",
            lambda p, st, s, cfg: any(spec.api == kafka.DESCRIBE_CLUSTER
                                      and r.code == kafka.CLUSTER_AUTHORIZATION_FAILED
                                      for spec, r in _responses(s, cfg))),
    Witness("internal-topic-created",
            "the active controller commits the internal topic a FindCoordinator needed",
            lambda p, st, s, cfg: st.action == "controller_commits_records" and any(
                rec.kind == TOPIC_RECORD for rec in s.quorum.log[len(p.quorum.log):]),
            ("controller_commits_records",)),
    Witness("coordinator-not-available",
            "FindCoordinator is answered COORDINATOR_NOT_AVAILABLE while the internal topic is "
            "missing",
            lambda p, st, s, cfg: any(r.code == kafka.COORDINATOR_NOT_AVAILABLE
                                      for _, r in _responses(s, cfg, FIND_COORDINATOR))),
    Witness("coordinator-found",
            "FindCoordinator finds the coordinator on the auto-created internal topic",
            lambda p, st, s, cfg: any(r.code == kafka.NONE
                                      for _, r in _responses(s, cfg, FIND_COORDINATOR))),
    Witness("internal-topic-refused-by-policy",
            "the create-topic policy refuses a broker's creation of an internal topic",
            lambda p, st, s, cfg: any(m.kind == CREATE_TOPICS_RESPONSE
                                      and m.error == kafka.POLICY_VIOLATION for m in s.network)),
    Witness("auto-created-topic-answered",
            "a Metadata request's auto-created topic is answered LEADER_NOT_AVAILABLE (created, "
            "its leader not yet known)",
            lambda p, st, s, cfg: any(r.code == kafka.LEADER_NOT_AVAILABLE
                                      and not _led_from_the_start(cfg, spec)
                                      for spec, r in _responses(s, cfg, METADATA))),
    Witness("auto-creation-refused-by-policy",
            "a Metadata request's auto-creation is refused with POLICY_VIOLATION",
            lambda p, st, s, cfg: any(r.code == kafka.POLICY_VIOLATION
                                      for _, r in _responses(s, cfg, METADATA))),
    Witness("partition-leader-listed",
            "a Metadata answer lists the partition leader at its endpoint on the request's "
            "listener (L-28)",
            lambda p, st, s, cfg: any(r.code == kafka.NONE and r.endpoints
                                      for _, r in _responses(s, cfg, METADATA))),
    Witness("leader-lacks-listener",
            "a Metadata answer says LISTENER_NOT_FOUND: the partition leader is up without the "
            "request's listener (L-28)",
            lambda p, st, s, cfg: any(r.code == kafka.LISTENER_NOT_FOUND
                                      for _, r in _responses(s, cfg, METADATA))),
    Witness("leader-not-available",
            "a Metadata answer says LEADER_NOT_AVAILABLE for a partition whose leader is down "
            "(L-28)",
            lambda p, st, s, cfg: any(r.code == kafka.LEADER_NOT_AVAILABLE
                                      and _led_from_the_start(cfg, spec)
                                      for spec, r in _responses(s, cfg, METADATA))),
    Witness("kraft-controller-claimed-zk",
            "the KRaft controller claims /controller with a higher epoch (MG-5)",
            lambda p, st, s, cfg: st.action == "controller_claims_zk_leadership",
            ("controller_claims_zk_leadership",)),
    Witness("zk-controller-deposed-by-kraft",
            "the KRaft controller's claim deletes the /controller of a ZK controller whose "
            "session lives (MG-5)",
            lambda p, st, s, cfg: st.action == "controller_claims_zk_leadership"
            and p.zk.controller != NO_NODE and not p.nodes[p.zk.controller].session_expired,
            ("controller_claims_zk_leadership",)),
    Witness("mutation-forwarded-to-kraft-controller",
            "a ZK broker's forwarded mutation is written by the KRaft controller",
            lambda p, st, s, cfg: any(w.via_envelope and cfg.nodes[w.writer].role == CONTROLLER
                                      for w in s.zk.writes)),
    Witness("entity-config-written-by-broker",
            "a ZK broker writes an entity config itself under a ZK controller (F-6, MG-6)",
            lambda p, st, s, cfg: st.action == "broker_writes_entity_config"
            and len(s.zk.writes) > len(p.zk.writes), ("broker_writes_entity_config",)),
    Witness("entity-config-refused-kraft-controller",
            "a ZK broker refuses to write an entity config because /controller names a KRaft "
            "controller (MG-6)",
            lambda p, st, s, cfg: s.zk.controller != NO_NODE
            and cfg.nodes[s.zk.controller].role == CONTROLLER
            and any(spec.api == kafka.INCREMENTAL_ALTER_CONFIGS
                    and r.code == kafka.STALE_CONTROLLER_EPOCH for spec, r in _responses(s, cfg))),
    Witness("broker-bounced-to-forwarding",
            "a broker on the old IBP is bounced with the new one and forwards from then on",
            lambda p, st, s, cfg: st.action == "operator_bumps_ibp", ("operator_bumps_ibp",)),
)}


def witnesses_hit(prev: State, st: Step, nxt: State, cfg: ModelConfig, wanted) -> list:
    return [w for w in wanted if WITNESSES[w].seen(prev, st, nxt, cfg)]
