"""The protocol steps: one pure function per step, ``action(s, cfg, d, *args) -> State | None``.

``None`` means the step is not enabled.  Guards come first, the effect last.  Names are
actor-verb-object in Kafka's words; rule IDs (F-*, R-*, D-*, L-*, Z-*) point into
``docs/rules.md``.  Helpers whose names start with ``_`` are parts of a
step (what a node does on receipt of a request, how a reply travels), not steps themselves.

A message step is given a message of a kind it takes (``msg_kinds`` in
``model.next.ACTION_TABLE``) that is in the network: ``model.next`` ensures it (``successors``
by construction, ``step`` by checking a hand-written step), so the steps do not check it again.
"""
from __future__ import annotations

from typing import NamedTuple

from model import kafka
from model.config import (BROKER, CONTROLLER, CONTROLLER_LISTENER, DESCRIBE, FIND_COORDINATOR,
                          FORGED_ENVELOPE, INTER_BROKER_LISTENER, KRAFT, METADATA, ZK, Design,
                          ModelConfig)
from model.state import (BROKER_HEARTBEAT_REQUEST, BROKER_HEARTBEAT_RESPONSE,
                         BROKER_REGISTRATION_CHANGE, BROKER_REGISTRATION_REQUEST,
                         BROKER_REGISTRATION_RESPONSE, CREATE_TOPICS_REQUEST,
                         CREATE_TOPICS_RESPONSE, ENVELOPE_REQUEST, ENVELOPE_RESPONSE,
                         FEATURE_LEVEL, FENCED, FORWARD, LIFECYCLE_REQUESTS, LIFECYCLE_RESPONSES,
                         MUTATION_RECORD, NO_NODE, NO_TIME, NO_VERSIONS, REGISTER_BROKER,
                         REGISTER_CONTROLLER, REGISTRATION, REGISTRATION_REQUEST,
                         REGISTRATION_RESPONSE, REPLY_BROKER_REGISTRATION, REPLY_CLIENT,
                         REPLY_CREATE_TOPICS, REPLY_ENVELOPE, REPLY_HEARTBEAT,
                         REPLY_REGISTRATION, STATIC_ENDPOINTS, TOPIC_CREATION, TOPIC_RECORD,
                         UNFENCED, UNRESOLVED_ENDPOINTS,
                         BrokerHeartbeatRequest, BrokerHeartbeatResponse,
                         BrokerRegistrationChangeRecord, BrokerRegistrationRequest,
                         BrokerRegistrationResponse, Channel, ControllerRegistrationRequest,
                         ControllerRegistrationResponse, CreateTopicsRequest,
                         CreateTopicsResponse, EnvelopeRequest, EnvelopeResponse,
                         Event, ForwardItem, Item, Msg, MutationRecord, Node, Record,
                         RegisterBrokerRecord, RegisterControllerRecord, RegistrationItem, Reply,
                         Response, State, TopicCreationItem, TopicRecord, Write, replace,
                         with_nodes)

RESPONSES = (ENVELOPE_RESPONSE, REGISTRATION_RESPONSE) + LIFECYCLE_RESPONSES + \
    (CREATE_TOPICS_RESPONSE,)
REQUESTS = (ENVELOPE_REQUEST, REGISTRATION_REQUEST) + LIFECYCLE_REQUESTS + (CREATE_TOPICS_REQUEST,)

# --------------------------------------------------------------------------------------------
# small pure helpers


def _set_node(s: State, n: int, node: Node) -> State:
    nodes = list(s.nodes)
    nodes[n] = node
    return with_nodes(s, tuple(nodes))


def _respond(s: State, c: int, response: Response) -> State:
    """Client ``c`` receives a final response."""
    clients = list(s.clients)
    cl = clients[c]
    clients[c] = cl._replace(responses=cl.responses + (response,))
    return replace(s, clients=tuple(clients))


def _waiting(s: State, c: int) -> bool:
    cl = s.clients[c]
    return cl.sent and not cl.responses


def principal_index(cfg: ModelConfig, principal: str) -> int:
    return cfg.principal_names.index(principal)


def advertised_version(s: State, cfg: ModelConfig, d: Design, n: int) -> int:
    """F-35: the max version of the forwardable APIs node ``n`` advertises to clients: the
    intersection with the active controller's range once the channel knows it."""
    own = cfg.nodes[n].api_max
    known = s.nodes[n].ctrl_versions
    if known == NO_VERSIONS or d.versions_not_intersected:
        return own
    return min(own, known)


def metadata_version(s: State, n: int | None = None) -> int:
    """metadata.version from the FeatureLevelRecords of the log: the committed log, or the
    prefix node ``n`` has replayed (a controller starts at MINIMUM_KRAFT_VERSION, R-3)."""
    log = s.quorum.log
    return metadata_version_of(log[:len(log) if n is None else s.nodes[n].replayed])


def metadata_version_of(records) -> int:
    """metadata.version after these records: the level of the last FeatureLevelRecord."""
    level = kafka.MINIMUM_KRAFT_VERSION
    for rec in records:
        if rec.kind == FEATURE_LEVEL:
            level = rec.level
    return level


def unsupported_feature(cfg: ModelConfig, n: int, incarnation: int, mv: int,
                        ignore_omitted: bool = False, zero_min_sent_as_one: bool = False
                        ) -> str | None:
    """BR-4.9 (processRegistrationFeature): the first finalized feature whose level the
    software of node ``n``'s process run ``incarnation`` does not support, None if it
    supports them all.  A registration without metadata.version supports [1, 1]; one without
    kraft.version supports only level 0 (KAFKA-17305's fix), unless ``ignore_omitted``
    (3.8.0: a finalized feature the registration omits is not checked).
    ``zero_min_sent_as_one``: the request states a range that starts at 0 as starting at 1
    (KAFKA-17492)."""
    features = cfg.nodes[n].features(incarnation)
    if features is None:
        return None
    ranges = {name: (lo, hi) for name, lo, hi in features}
    for name, level in ((kafka.METADATA_VERSION_FEATURE, mv),) + cfg.finalized_features:
        if name in ranges:
            lo, hi = ranges[name]
        elif name == kafka.METADATA_VERSION_FEATURE:
            lo = hi = kafka.MINIMUM_KRAFT_VERSION
        elif ignore_omitted:
            continue
        else:
            lo = hi = 0
        if zero_min_sent_as_one and name in ranges and lo == 0:
            lo = 1      # KAFKA-17492: a BrokerRegistrationRequest below v4 said [1, hi]
        if not lo <= level <= hi:
            return name
    return None


def advertised_endpoints(cfg: ModelConfig, d: Design, n: int, incarnation: int) -> int:
    """The endpoints process run ``incarnation`` of node ``n`` puts in its registration
    requests: its advertised listeners with a blank host resolved to the canonical host name and
    port 0 to the port this run bound (``ListenerInfo.withWildcardHostnamesResolved``,
    ``withEphemeralPortsCorrected``: EP-1..EP-5), computed once at start-up.  The variant sends
    them as configured (KAFKA-15458)."""
    if d.registers_unresolved_endpoints and cfg.endpoints_need_resolving(n):
        return UNRESOLVED_ENDPOINTS
    return incarnation if cfg.endpoints_per_run(n) else STATIC_ENDPOINTS


def listener_endpoint(lst, endpoints: int) -> int:
    """The endpoints token of one listener of a registration that carries ``endpoints``: a
    listener configured in full is the same in every process run (STATIC_ENDPOINTS); only
    port 0 depends on the run, and only a blank host or port 0 can be left unresolved."""
    if endpoints == UNRESOLVED_ENDPOINTS:
        return UNRESOLVED_ENDPOINTS if lst.needs_resolving else STATIC_ENDPOINTS
    return endpoints if lst.port == 0 else STATIC_ENDPOINTS


def item_timeout(cfg: ModelConfig, d: Design, item: Item) -> int | None:
    """The channel's retry timeout for an item (F-17), None when it has none.  A broker's own
    CreateTopicsRequest shares the forwarding channel and its timeout (AT-4)."""
    if item.kind in (FORWARD, TOPIC_CREATION):
        return None if d.forward_without_deadline else cfg.forward_timeout
    return None if d.registration_without_deadline else cfg.registration_timeout


def expired_item(s: State, cfg: ModelConfig, d: Design, n: int) -> Item | None:
    """The item node ``n``'s channel must time out now, if any.  The one in flight expires by
    the network timeout, counted from its send (``InFlightRequests``: the NetworkClient's
    request timeout, min(controller.socket.timeout.ms, retryTimeoutMs), F-16; the model
    takes it equal to the retry timeout, as on a ZK broker where both are
    request.timeout.ms); the connection closes, the item goes back to the queue and, being
    past its retry timeout by then, is dropped at once.  A queued item expires by the retry
    timeout counted from its enqueue (F-17, F-19).  The queue is in creation order (FIFO, a
    re-queued item is the oldest), so only its head can be due."""
    ch = s.nodes[n].channel
    item = ch.inflight
    if item:
        timeout = item_timeout(cfg, d, item)
        if timeout is not None and s.now - item.sent >= timeout:
            return item
    if ch.queue:
        item = ch.queue[0]
        timeout = item_timeout(cfg, d, item)
        if timeout is not None and s.now - item.created >= timeout:
            return item
    return None


def provider_controller(s: State, cfg: ModelConfig, n: int) -> int:
    """F-15: the controller a node's channel would talk to.  Brokers use their metadata cache
    (learned late); KRaft controllers ask their own Raft client, which knows the leader."""
    if cfg.mode == KRAFT and cfg.nodes[n].role == CONTROLLER:
        return s.quorum.leader
    return s.nodes[n].known_controller


def target_listener(cfg: ModelConfig, p: int) -> int:
    """L-29: broker-to-controller traffic uses a KRaft controller's controller listener (in a
    migration too, MG-2) or a ZK controller's privileged inter-broker listener."""
    role = CONTROLLER_LISTENER if cfg.nodes[p].role == CONTROLLER else INTER_BROKER_LISTENER
    return cfg.listener_index(cfg.node_listener(p, role).name)


def broker_forwards(cfg: ModelConfig, node: Node) -> bool:
    """F-4, MG-1: a ZK broker has a ForwardingManager iff forwarding is on and its IBP is at
    least 3.4-IV0 (a legacy-IBP broker of a migration has not been bounced into it yet)."""
    return cfg.zk_forwarding and not node.legacy_ibp


def kraft_controller_cached(cfg: ModelConfig, node: Node) -> bool:
    """F-6, MG-3: the broker's metadata cache names a KRaft controller
    (KRaftCachedControllerId, learned from an UpdateMetadataRequest)."""
    p = node.known_controller
    return p != NO_NODE and cfg.nodes[p].role == CONTROLLER


def wants_tick(s: State) -> bool:
    """Somebody waits for time: a channel item's deadline or a backoff timer."""
    for node in s.nodes:
        if not node.alive:
            continue
        ch = node.channel
        if ch.queue or ch.inflight:
            return True
        if node.retry_at != NO_TIME and node.retry_at > s.now:
            return True
        if node.lifecycle_registered and node.heartbeat_at >= s.now:
            return True         # its next heartbeat (broker.heartbeat.interval.ms, BL-10)
    # the active controller's fence timer runs while it tracks a session (BH-9)
    return any(node.hb_contact != NO_TIME for node in s.nodes)


def time_pending(s: State, cfg: ModelConfig, d: Design) -> bool:
    """Something waits for a point in time: an item with a deadline, a backoff timer, the
    active controller's fence timer for an unfenced broker's session (BH-9), or a fenced
    broker's next heartbeat, which would unfence it (BH-7)."""
    if cfg.broker_registration:
        view = _leader_view(s.quorum)
        for b, node in enumerate(s.nodes):
            if node.hb_contact == NO_TIME and not node.lifecycle_registered:
                continue
            reg = broker_registration(view, b)
            if reg is None:
                continue
            if node.hb_contact != NO_TIME and not reg.fenced:
                return True
            if (reg.fenced and node.alive and node.lifecycle_registered
                    and node.heartbeat_at >= s.now):
                return True
    for node in s.nodes:
        if not node.alive:
            continue
        ch = node.channel
        for item in ((ch.inflight,) if ch.inflight else ()) + ch.queue:
            if item_timeout(cfg, d, item) is not None:
                return True
        if node.retry_at != NO_TIME and node.retry_at > s.now:
            return True
    return False


# --------------------------------------------------------------------------------------------
# replies and connections


def _send_reply(s: State, cfg: ModelConfig, src: int, reply: Reply, env_err: int,
                inner_err: int, rec: Record | None = None, is_fenced: bool = True) -> State:
    """Answer a request: to a client directly, or as an EnvelopeResponse / registration /
    heartbeat response message (``rec``: the record whose commit answers it; ``is_fenced``:
    a heartbeat answered at once says whether its broker is fenced).  A reply to a dead node
    is lost with its connection, and so is one whose connection closed before (``()``: nobody
    waits)."""
    if rec is not None and rec.kind == BROKER_REGISTRATION_CHANGE:
        is_fenced = rec.fenced == FENCED        # the heartbeat whose unfence just committed
    if not reply:
        return s
    if reply.how == REPLY_CLIENT:
        code = env_err if env_err else inner_err
        return _respond(s, reply.to, Response(code, envelope_error=env_err))
    if not s.nodes[reply.to].alive:
        return s
    if (reply.how not in (REPLY_ENVELOPE, REPLY_CREATE_TOPICS)
            and s.nodes[reply.to].incarnation != reply.key):
        return s            # the requesting process run is gone, and its connection with it
    if reply.how == REPLY_ENVELOPE:
        msg = EnvelopeResponse(ENVELOPE_RESPONSE, src, reply.to, reply.listener, reply.key,
                               env_err, inner_err)
    elif reply.how == REPLY_CREATE_TOPICS:
        msg = CreateTopicsResponse(CREATE_TOPICS_RESPONSE, src, reply.to, reply.listener,
                                   reply.key, env_err or inner_err, 0)
    elif reply.how == REPLY_REGISTRATION:
        msg = ControllerRegistrationResponse(REGISTRATION_RESPONSE, src, reply.to, reply.listener,
                                             reply.to, env_err or inner_err, reply.key)
    elif reply.how == REPLY_BROKER_REGISTRATION:
        # BR-1: BrokerEpoch on success; an error carries only its ErrorCode (epoch -1)
        error = env_err or inner_err
        epoch = rec.broker_epoch if rec is not None and error == kafka.NONE else -1
        msg = BrokerRegistrationResponse(BROKER_REGISTRATION_RESPONSE, src, reply.to,
                                         reply.listener, reply.key, error, epoch)
    else:
        # BH-2: an error leaves IsFenced at its default, true; a heartbeat that unfenced the
        # broker is answered when its BrokerRegistrationChangeRecord commits
        error = env_err or inner_err
        fenced = 1 if error != kafka.NONE or is_fenced else 0
        held = broker_registration(_leader_view(s.quorum), reply.to) \
            if s.quorum.leader == src else None
        msg = BrokerHeartbeatResponse(BROKER_HEARTBEAT_RESPONSE, src, reply.to, reply.listener,
                                      reply.key, error, fenced,
                                      -1 if held is None else held.record.broker_epoch)
    return replace(s, network=s.network | {msg})


def _reply_not_controller(s: State, cfg: ModelConfig, d: Design, src: int, reply: Reply) -> State:
    """F-34: an inner NOT_CONTROLLER becomes the envelope's own error with no payload."""
    if not reply:
        return s
    if reply.how == REPLY_ENVELOPE and not d.not_controller_inside_ok_envelope:
        return _send_reply(s, cfg, src, reply, kafka.NOT_CONTROLLER, kafka.NONE)
    return _send_reply(s, cfg, src, reply, kafka.NONE, kafka.NOT_CONTROLLER)


def _requeue_front(node: Node) -> Node:
    """F-21.3/4: forget the controller and put the in-flight item back at the front.  The
    channel has an item in flight: every caller checks that first (the answer or the lost
    message is on its connection, or the controller it is sent to crashed)."""
    ch = node.channel
    queue = (ch.inflight._replace(requeued=True, sent=NO_TIME),) + ch.queue
    return replace(node, channel=Channel(NO_NODE, queue, ()))


def _close_connection(s: State, cfg: ModelConfig, reply: Reply) -> State:
    """The receiver closes the connection without answering (F-23, F-24): the sender sees a
    disconnect."""
    if reply.how == REPLY_CLIENT:
        return _respond(s, reply.to, Response(kafka.NETWORK_EXCEPTION))
    node = s.nodes[reply.to]
    inflight = node.channel.inflight
    if not node.alive or not inflight or inflight.kind != FORWARD or inflight.client != reply.key:
        return s
    return _set_node(s, reply.to, _requeue_front(node))


def _forget_replies(s: State, keep) -> State:
    """Pending answers (a ZK controller's queued events, the KRaft leader's uncommitted
    records) for which ``keep(reply)`` is false lose their requester: the connection they
    would travel on is closed, so the work still happens but nobody is answered."""
    nodes = s.nodes
    if any(ev.reply and not keep(ev.reply) for node in nodes for ev in node.events):
        nodes = tuple(replace(node, events=tuple(
            ev._replace(reply=()) if ev.reply and not keep(ev.reply) else ev
            for ev in node.events)) if node.events else node for node in nodes)
        s = replace(s, nodes=nodes)
    q = s.quorum
    if any(reply and not keep(reply) for _, reply in q.uncommitted):
        s = replace(s, quorum=replace(q, uncommitted=tuple(
            (rec, reply if (not reply or keep(reply)) else ()) for rec, reply in q.uncommitted)))
    return s


def _replies_to(n: int, item: Item | None = None):
    """A predicate for ``_forget_replies``: replies that do NOT go to node ``n`` (on the
    connection of channel item ``item``, or on any of its connections)."""
    how = None if item is None else {FORWARD: REPLY_ENVELOPE, REGISTRATION: REPLY_REGISTRATION,
                                     TOPIC_CREATION: REPLY_CREATE_TOPICS}[item.kind]
    # a reply's key is the client (envelopes), the incarnation (registrations) or the topic
    # (a broker's own CreateTopics): the item's second field
    key = None if item is None else item[1]

    def keep(reply: Reply) -> bool:
        if reply.how == REPLY_CLIENT or reply.to != n:
            return True
        return item is not None and (reply.how != how or reply.key != key)
    return keep


def _on_connection(m: Msg, n: int, item: Item) -> bool:
    """Is message ``m`` the request or the response of node n's channel item ``item``?"""
    if item.kind == FORWARD:
        return ((m.kind == ENVELOPE_REQUEST and m.src == n and m.client == item.client)
                or (m.kind == ENVELOPE_RESPONSE and m.dst == n and m.client == item.client))
    if item.kind == TOPIC_CREATION:
        return ((m.kind == CREATE_TOPICS_REQUEST and m.src == n and m.topic == item.topic)
                or (m.kind == CREATE_TOPICS_RESPONSE and m.dst == n and m.topic == item.topic))
    return ((m.kind == REGISTRATION_REQUEST and m.src == n
             and m.incarnation_id == item.incarnation_id)
            or (m.kind == REGISTRATION_RESPONSE and m.dst == n
                and m.incarnation_id == item.incarnation_id))


def _connection_messages(s: State, n: int, item: Item) -> frozenset:
    return frozenset(m for m in s.network if _on_connection(m, n, item))


# --------------------------------------------------------------------------------------------
# what a controller does with a mutation it accepted


def _controller_accepts_mutation(s: State, cfg: ModelConfig, d: Design, r: int, req: int,
                                 reply: Reply, via_envelope: bool, privileged: bool,
                                 sender_ca: bool) -> State:
    if cfg.mode == ZK:
        # The ZK controller queues an event; the write happens when the event runs (Z-2).
        acked = d.ack_before_commit
        if acked:
            s = _send_reply(s, cfg, r, reply, kafka.NONE, kafka.NONE)
        node = s.nodes[r]
        event = Event(req, reply, via_envelope, privileged, sender_ca, acked)
        return _set_node(s, r, replace(node, events=node.events + (event,)))
    q = s.quorum
    if q.leader != r:
        # QuorumController: the write event fails with NotControllerException (R-13, F-28).
        if d.not_controller_wrapped_as_unknown:
            # KAFKA-14167: the exception arrives wrapped in a CompletionException, which
            # Errors.forException maps to UNKNOWN_SERVER_ERROR inside an envelope marked NONE
            return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.UNKNOWN_SERVER_ERROR)
        return _reply_not_controller(s, cfg, d, r, reply)
    spec = cfg.clients[req]
    if (spec.mutation_api == kafka.CREATE_TOPICS and spec.topic_name in cfg.create_topic_policy
            and not d.create_topic_policy_ignored):
        # ReplicationControlManager runs create.topic.policy.class.name (AT-5)
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.POLICY_VIOLATION)
    record = MutationRecord(MUTATION_RECORD, req, 0, q.epoch, r, via_envelope, sender_ca)
    if d.ack_before_commit:
        s = _send_reply(s, cfg, r, reply, kafka.NONE, kafka.NONE)
        pending = (record, ())
    else:
        pending = (record, reply)
    return replace(s, quorum=replace(s.quorum, uncommitted=s.quorum.uncommitted + (pending,)))


def _receive_envelope(s: State, cfg: ModelConfig, d: Design, r: int, req: int, version: int,
                      hops: int, listener: int, sender_principal: str, reply: Reply) -> State:
    """The receiving side of an EnvelopeRequest, checks in Kafka's order (F-22..F-30)."""
    spec = cfg.clients[req]
    inner_principal = spec.claimed_principal if spec.kind == FORGED_ENVELOPE else spec.principal
    sender_ca = cfg.allows(sender_principal, kafka.CLUSTER_ACTION)
    privileged_listener = cfg.privileged_listener(r)
    privileged = (privileged_listener is not None
                  and cfg.listener_names[listener] == privileged_listener.name)
    if cfg.mode == ZK and cfg.nodes[r].role == BROKER:
        if not cfg.zk_forwarding or not cfg.nodes[r].principal_serde:
            return _close_connection(s, cfg, reply)                                   # F-23
        if not privileged and not d.envelope_any_listener:
            return _close_connection(s, cfg, reply)                                   # F-24
        if not sender_ca:
            return _send_reply(s, cfg, r, reply, kafka.CLUSTER_AUTHORIZATION_FAILED, 0)  # F-25
        if not s.nodes[r].zk_active:                                                  # F-26
            if d.reforward_forwarded and reply.how == REPLY_ENVELOPE:
                p = s.nodes[r].known_controller
                if p != NO_NODE and p != r and s.nodes[p].alive:
                    msg = EnvelopeRequest(ENVELOPE_REQUEST, r, p, target_listener(cfg, p), req,
                                          version, hops + 1,
                                          principal_index(cfg, cfg.nodes[r].principal))
                    return replace(s, network=s.network | {msg})
            if d.not_controller_unanswered:
                return s            # dropped: the forwarder waits for its network timeout
            return _send_reply(s, cfg, r, reply, kafka.NOT_CONTROLLER, kafka.NONE)
    else:
        if not sender_ca:
            return _send_reply(s, cfg, r, reply, kafka.CLUSTER_AUTHORIZATION_FAILED, 0)  # F-28
        if not cfg.nodes[r].principal_serde:
            # F-29a
            return _send_reply(s, cfg, r, reply, kafka.PRINCIPAL_DESERIALIZATION_FAILURE, 0)
    if version > cfg.nodes[r].api_max:
        return _send_reply(s, cfg, r, reply, kafka.UNSUPPORTED_VERSION, kafka.NONE)    # F-29e
    # F-30: the inner request runs as the forwarded principal.
    acting = sender_principal if d.authorize_as_forwarder else inner_principal
    if not cfg.allows(acting, kafka.API_OPERATION[spec.mutation_api]):
        return _send_reply(s, cfg, r, reply, kafka.NONE,
                           kafka.API_DENIED_ERROR[spec.mutation_api])
    return _controller_accepts_mutation(s, cfg, d, r, req, reply, True, privileged, sender_ca)


def _node_handles_describe_cluster(s: State, cfg: ModelConfig, d: Design, c: int, n: int,
                                   listener: int) -> State:
    """DescribeCluster v1 on a broker (D-2) or a controller (D-1), then D-3."""
    spec = cfg.clients[c]
    is_controller = cfg.nodes[n].role == CONTROLLER
    if is_controller:
        if metadata_version(s, n) < kafka.MV_3_7_IV0:
            return _respond(s, c, Response(kafka.UNSUPPORTED_VERSION))                # D-1.1
        if (not cfg.allows(spec.principal, kafka.ALTER_CLUSTER)
                and not d.controller_describe_without_alter):
            return _respond(s, c, Response(kafka.CLUSTER_AUTHORIZATION_FAILED))       # D-1.2
    expected = kafka.ENDPOINT_CONTROLLER if is_controller else kafka.ENDPOINT_BROKER
    if spec.endpoint_type not in (kafka.ENDPOINT_BROKER, kafka.ENDPOINT_CONTROLLER):
        return _respond(s, c, Response(kafka.UNSUPPORTED_ENDPOINT_TYPE))              # D-3.1
    if spec.endpoint_type != expected:
        return _respond(s, c, Response(kafka.MISMATCHED_ENDPOINT_TYPE))               # D-3.2
    name = cfg.listener_names[listener]
    replayed = s.quorum.log[:s.nodes[n].replayed]
    if is_controller and d.describe_controllers_from_voters:
        # the static controller.quorum.voters: host and port as configured
        candidates = [(x, STATIC_ENDPOINTS) for x in cfg.controllers()]
    elif is_controller:
        # the registrations in the log this controller has replayed, the last one of
        # each controller, with the endpoints it carries.
        latest = {}
        for rec in replayed:
            if rec.kind == REGISTER_CONTROLLER:
                latest[rec.controller_id] = rec.endpoints
        candidates = sorted(latest.items())
    elif cfg.broker_registration:
        # L-27: KRaftMetadataCache.getAliveBrokerNodes: the registered brokers in the image
        # this broker has replayed that are not fenced.
        candidates = []
        for b in cfg.brokers():
            reg = broker_registration(replayed, b)
            if reg is not None and (not reg.fenced or d.describe_lists_fenced_brokers):
                candidates.append((b, reg.record.endpoints))
    elif cfg.zk_broker_registration:
        # L-27: the brokers registered in /brokers/ids, with the endpoints their znodes carry
        # (the controller's UpdateMetadata taken as instant); the token is the version of the
        # listeners configuration, not a process run, and names all of a broker's listeners
        candidates = [(b, s.zk.broker_ids[b]) for b in cfg.brokers()
                      if s.zk.broker_ids[b] != NO_VERSIONS]
    else:
        # L-27: alive brokers; brokers that do not run their BrokerLifecycleManager stand
        # registered from configuration, unfenced while they are up.
        candidates = [(b, STATIC_ENDPOINTS) for b in cfg.brokers() if s.nodes[b].alive]
    endpoints = set()
    for x, token in candidates:
        fallback = (all(lst.name != name for lst in cfg.nodes[x].listeners)
                    and d.describe_falls_back_to_other_listener)
        for i, lst in enumerate(cfg.nodes[x].listeners):
            if lst.name == name or d.metadata_all_listeners or (fallback and i == 0):
                endpoints.add((x, cfg.listener_index(lst.name),
                               token if cfg.mode == ZK else listener_endpoint(lst, token)))
    return _respond(s, c, Response(kafka.NONE, endpoints=frozenset(endpoints)))


# --------------------------------------------------------------------------------------------
# client steps


def client_sends_request(s: State, cfg: ModelConfig, d: Design, c: int) -> State | None:
    """An admin client sends its one request to its bootstrap node on its listener; the node
    handles it on arrival (the client link is reliable; node crashes are the faults)."""
    if s.clients[c].sent:
        return None
    spec = cfg.clients[c]
    n = spec.node
    listener = cfg.listener_index(spec.listener)
    version = advertised_version(s, cfg, d, n)
    clients = list(s.clients)
    clients[c] = clients[c]._replace(sent=True, version=version)
    s = replace(s, clients=tuple(clients))
    node = s.nodes[n]
    if not node.alive:
        return _respond(s, c, Response(kafka.NETWORK_EXCEPTION))
    if spec.kind == DESCRIBE:
        return _node_handles_describe_cluster(s, cfg, d, c, n, listener)
    if spec.kind == FIND_COORDINATOR:
        return _broker_finds_coordinator(s, cfg, d, n, c)                          # AT-1
    if spec.kind == METADATA:
        return _broker_handles_metadata(s, cfg, d, n, c)                           # AT-2
    reply = Reply(REPLY_CLIENT, c, c, listener)
    if spec.kind == FORGED_ENVELOPE:
        # A client that writes its own EnvelopeRequest (KAFKA-12168's trust boundary).
        return _receive_envelope(s, cfg, d, n, c, version, 1, listener, spec.principal, reply)
    if cfg.mode == ZK:
        if node.zk_active:
            return _controller_handles_client_mutation(s, cfg, d, n, c, reply)
        forwards = broker_forwards(cfg, node)
        if (cfg.migration and spec.api == kafka.INCREMENTAL_ALTER_CONFIGS
                and not (forwards and kraft_controller_cached(cfg, node))):
            # F-6: forwarded only to a KRaft controller; processed here otherwise
            if d.entity_config_write_unchecked:
                return _broker_writes_zk(s, cfg, d, n, c, routed_locally=True)     # T-11
            return _broker_reads_controller_znode(s, cfg, d, n, c)                 # MG-6
        if d.brokers_write_zk or d.brokers_write_zk_under_controller_epoch or not forwards:
            return _broker_writes_zk(s, cfg, d, n, c, routed_locally=not forwards)  # F-5, Z-5
        return _broker_forwards_request(s, cfg, d, n, c)                           # F-3
    if cfg.nodes[n].role == BROKER:
        return _broker_forwards_request(s, cfg, d, n, c)                           # F-2
    return _controller_handles_client_mutation(s, cfg, d, n, c, reply)             # D-7


def _broker_forwards_request(s: State, cfg: ModelConfig, d: Design, n: int, c: int) -> State:
    """F-11..F-14: wrap the request in an Envelope and queue it on the controller channel.
    Under principal-serde-not-required (KAFKA-13051) a node whose principal builder is not a
    KafkaPrincipalSerde runs, and F-12's buildEnvelopeRequest throws IllegalArgumentException
    inside handle: UNKNOWN_SERVER_ERROR at once.  (The configuration is tested first, so the
    flag is read, WatchedDesign, only where it can matter.)"""
    if not cfg.nodes[n].principal_serde and d.principal_serde_not_required:
        return _respond(s, c, Response(kafka.UNKNOWN_SERVER_ERROR))
    node = s.nodes[n]
    ch = node.channel
    item = ForwardItem(FORWARD, c, s.now, False)
    clients = list(s.clients)
    clients[c] = clients[c]._replace(forwarded=True, sent_at=s.now)
    s = replace(s, clients=tuple(clients))
    return _set_node(s, n, replace(node, channel=ch._replace(queue=ch.queue + (item,))))


# --------------------------------------------------------------------------------------------
# topics a request needs: FindCoordinator's internal topic, Metadata's auto-creation (AT-1..AT-5)


def topic_exists(cfg: ModelConfig, records, topic: int) -> bool:
    """The topic is in these metadata-log records: a TopicRecord for it, or the record of a
    client's CreateTopics (forwarded, or a Metadata request's auto-creation) of it."""
    for rec in records:
        if rec.kind == TOPIC_RECORD and rec.topic == topic:
            return True
        if rec.kind == MUTATION_RECORD:
            spec = cfg.clients[rec.client]
            if (spec.mutation_api == kafka.CREATE_TOPICS
                    and cfg.topic_index(spec.topic_name) == topic):
                return True
    return False


def _broker_creates_topic(s: State, n: int, topic: int) -> State:
    """AT-3: AutoTopicCreationManager.createTopics for a topic the broker needs itself: a topic
    already in flight on this broker is not sent again; otherwise a CreateTopicsRequest goes on
    the forwarding channel, without an Envelope (AT-4), and counts as in flight until it
    completes or times out."""
    node = s.nodes[n]
    ch = node.channel
    for it in ((ch.inflight,) if ch.inflight else ()) + ch.queue:
        if it.kind == TOPIC_CREATION and it.topic == topic:
            return s
    item = TopicCreationItem(TOPIC_CREATION, topic, s.now, False)
    return _set_node(s, n, replace(node, channel=ch._replace(queue=ch.queue + (item,))))


def _broker_finds_coordinator(s: State, cfg: ModelConfig, d: Design, n: int, c: int) -> State:
    """AT-1: FindCoordinator for a group needs DESCRIBE on the group; the coordinator lives on
    the internal __consumer_offsets: if the broker's metadata image has no such topic it asks
    for its creation, fire-and-forget, and answers COORDINATOR_NOT_AVAILABLE now (the client
    retries).  No CREATE authorization of the client is done for an internal topic."""
    spec = cfg.clients[c]
    if not cfg.allows(spec.principal, kafka.DESCRIBE_GROUP):
        return _respond(s, c, Response(kafka.GROUP_AUTHORIZATION_FAILED))
    topic = cfg.topic_index(kafka.CONSUMER_OFFSETS)
    if topic_exists(cfg, s.quorum.log[:s.nodes[n].replayed], topic):
        return _respond(s, c, Response(kafka.NONE))             # the coordinator's endpoint
    s = _broker_creates_topic(s, n, topic)
    return _respond(s, c, Response(kafka.COORDINATOR_NOT_AVAILABLE))


def _broker_handles_metadata(s: State, cfg: ModelConfig, d: Design, n: int, c: int) -> State:
    """AT-2: a Metadata request for a topic, with AllowAutoTopicCreation (and
    auto.create.topics.enable): DESCRIBE on the topic, then, for a topic the broker's image
    lacks, CREATE (on the cluster or the topic), then the CreateTopics goes to the controller in
    an Envelope with the client's principal (AT-4).  KIP-590: the broker waits for the answer and
    replies a fatal error if the creation failed; under auto-create-errors-only-logged (Kafka
    3.8.0, AT-5) it answers UNKNOWN_TOPIC_OR_PARTITION at once and only logs the answer."""
    spec = cfg.clients[c]
    if not cfg.allows(spec.principal, kafka.DESCRIBE_TOPIC):
        return _respond(s, c, Response(kafka.TOPIC_AUTHORIZATION_FAILED))
    topic = cfg.topic_index(spec.topic_name)
    leader = cfg.partition_leader(topic)
    if leader is not None:
        return _respond(s, c, _partition_metadata(s, cfg, d, n, spec.listener, leader))
    if topic_exists(cfg, s.quorum.log[:s.nodes[n].replayed], topic):
        return _respond(s, c, Response(kafka.NONE))
    if not cfg.allows(spec.principal, kafka.API_OPERATION[kafka.CREATE_TOPICS]):
        return _respond(s, c, Response(kafka.TOPIC_AUTHORIZATION_FAILED))
    s = _broker_forwards_request(s, cfg, d, n, c)
    if d.auto_create_errors_only_logged:
        return _respond(s, c, Response(kafka.UNKNOWN_TOPIC_OR_PARTITION))
    return s


def _partition_metadata(s: State, cfg: ModelConfig, d: Design, n: int, name: str,
                        leader: int) -> Response:
    """L-27, L-28 (``KRaftMetadataCache.getPartitionMetadata``, for a client at Metadata v6 or
    later): the partition's leader at its endpoint on the request's listener ``name``; if the
    leader has none there, LISTENER_NOT_FOUND when the leader is alive (a broker that does not
    register stands registered while it is up, as for DescribeCluster) and
    LEADER_NOT_AVAILABLE when it is not.  Under leader-liveness-of-local-broker (KAFKA-10312)
    the liveness looked at is the answering broker's own."""
    if s.nodes[leader].alive:
        for lst in cfg.nodes[leader].listeners:
            if lst.name == name:
                return Response(kafka.NONE, endpoints=frozenset(
                    {(leader, cfg.listener_index(name), listener_endpoint(lst, STATIC_ENDPOINTS))}))
    alive = s.nodes[n if d.leader_liveness_of_local_broker else leader].alive
    return Response(kafka.LISTENER_NOT_FOUND if alive else kafka.LEADER_NOT_AVAILABLE)


def _controller_handles_client_mutation(s: State, cfg: ModelConfig, d: Design, n: int, c: int,
                                        reply: Reply) -> State:
    spec = cfg.clients[c]
    if not cfg.allows(spec.principal, kafka.API_OPERATION[spec.api]):
        return _respond(s, c, Response(kafka.API_DENIED_ERROR[spec.api]))
    return _controller_accepts_mutation(s, cfg, d, n, c, reply, False, False, False)


def epoch_holder(zk, epoch: int) -> int:
    """The broker ZooKeeper records as having set /controller_epoch to ``epoch`` (a ghost:
    only what a write records of it, for P1)."""
    return zk.epoch_holders[epoch] if 0 <= epoch < len(zk.epoch_holders) else NO_NODE


def _broker_writes_zk(s: State, cfg: ModelConfig, d: Design, n: int, c: int,
                      routed_locally: bool = False) -> State:
    """Z-5: a non-controller ZK broker writes configs/ACLs itself, guarded only by a check
    that some /controller exists (last writer wins).  ``routed_locally``: Kafka's routing
    leaves the request to this broker (it does not forward, F-4; F-6)."""
    spec = cfg.clients[c]
    if not cfg.allows(spec.principal, kafka.API_OPERATION[spec.api]):
        return _respond(s, c, Response(kafka.API_DENIED_ERROR[spec.api]))
    zk = s.zk
    if zk.controller == NO_NODE:
        return _respond(s, c, Response(kafka.STALE_CONTROLLER_EPOCH))
    # brokers-write-zk-under-controller-epoch: the write is a multi with a CheckOp on the
    # /controller_epoch zkVersion the broker just read, so it carries the current epoch
    believed = zk.epoch if d.brokers_write_zk_under_controller_epoch else -1
    write = Write(c, n, believed, zk.epoch, False, False, False, epoch_holder(zk, zk.epoch),
                  routed_locally)
    s = replace(s, zk=replace(zk, writes=zk.writes + (write,)))
    return _respond(s, c, Response(kafka.NONE))


def _broker_reads_controller_znode(s: State, cfg: ModelConfig, d: Design, n: int,
                                   c: int) -> State:
    """MG-6, first half: KafkaZkClient.setOrCreateEntityConfigs reads /controller before it
    writes: no controller, or a KRaft controller (kraftControllerEpoch > 0), fails with
    ControllerMovedException (STALE_CONTROLLER_EPOCH); a ZK controller's registration is
    remembered for the multi's CheckOp (``broker_writes_entity_config``)."""
    spec = cfg.clients[c]
    if not cfg.allows(spec.principal, kafka.API_OPERATION[spec.api]):
        return _respond(s, c, Response(kafka.API_DENIED_ERROR[spec.api]))       # F-7
    owner = s.zk.controller
    if owner == NO_NODE or cfg.nodes[owner].role == CONTROLLER:
        return _respond(s, c, Response(kafka.STALE_CONTROLLER_EPOCH))
    node = s.nodes[n]
    return _set_node(s, n, replace(node, config_writes=node.config_writes
                                   + ((c, s.zk.epoch_version),)))

# --------------------------------------------------------------------------------------------
# metadata cache and the controller channel (NodeToControllerChannelManager)


def broker_learns_controller(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """A broker's metadata cache catches up with who the controller is: a ZK watch on
    /controller (Z-1), or the KRaft leader seen by its Raft client.  Late by design."""
    node = s.nodes[n]
    truth = s.zk.controller if cfg.mode == ZK else s.quorum.leader
    if (node.known_controller == truth or not node.alive or cfg.nodes[n].role != BROKER
            or node.session_expired):
        return None
    return _set_node(s, n, replace(node, known_controller=truth))


def channel_discovers_controller(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """F-20: with no cached controller and work queued, ask the provider (F-15)."""
    node = s.nodes[n]
    ch = node.channel
    if not ch.queue or ch.cached != NO_NODE or not node.alive:
        return None
    p = provider_controller(s, cfg, n)
    if p == NO_NODE:
        return None
    return _set_node(s, n, replace(node, channel=ch._replace(cached=p),
                                   not_controller_from=node.not_controller_from - {p}))


def channel_sends_request(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """F-16, F-19: send the head of the queue to the cached controller, one at a time.  A
    dead controller means a failed connection: forget it (F-21.3)."""
    node = s.nodes[n]
    ch = node.channel
    if not ch.queue or ch.inflight or ch.cached == NO_NODE or not node.alive:
        return None
    if expired_item(s, cfg, d, n) is not None:
        return None
    p = ch.cached
    if not s.nodes[p].alive:
        return _set_node(s, n, replace(node, channel=ch._replace(cached=NO_NODE)))
    if len(s.network) >= cfg.max_in_flight:
        return None
    item = ch.queue[0]
    listener = target_listener(cfg, p)
    if item.kind == FORWARD:
        msg = EnvelopeRequest(ENVELOPE_REQUEST, n, p, listener, item.client,
                              s.clients[item.client].version, item.hops,
                              principal_index(cfg, cfg.nodes[n].principal))
        versions = cfg.nodes[p].api_max          # learned from ApiVersions on connect (F-35)
    elif item.kind == TOPIC_CREATION:
        msg = CreateTopicsRequest(CREATE_TOPICS_REQUEST, n, p, listener, item.topic, 0, 0,
                                  principal_index(cfg, cfg.nodes[n].principal))
        versions = cfg.nodes[p].api_max
    else:
        msg = ControllerRegistrationRequest(
            REGISTRATION_REQUEST, n, p, listener, n, item.incarnation_id,
            advertised_endpoints(cfg, d, n, item.incarnation_id),
            principal_index(cfg, cfg.nodes[n].principal))
        versions = node.ctrl_versions
    node = replace(node, channel=Channel(p, ch.queue[1:], item._replace(sent=s.now)),
                   ctrl_versions=versions)
    return replace(_set_node(s, n, node), network=s.network | {msg})


def channel_times_out_request(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """F-19: an item older than the retry timeout is dropped and its handler's onTimeout runs:
    the forwarded request gets REQUEST_TIMED_OUT (F-17, table 1.6); the registration manager
    clears pendingRpc and backs off (R-6, R-7).  An expired in-flight item is the network
    timeout: the connection closes and its messages are gone."""
    node = s.nodes[n]
    if not node.alive:
        return None
    item = expired_item(s, cfg, d, n)
    if item is None:
        return None
    ch = node.channel
    network = s.network
    closed = item is ch.inflight
    if closed:
        # the network timeout closes the connection: its messages are lost
        network = network - _connection_messages(s, n, item)
        ch = Channel(NO_NODE, ch.queue, ())
    else:
        ch = ch._replace(queue=ch.queue[1:])
    node = replace(node, channel=ch)
    if item.kind == REGISTRATION:
        node = replace(node, pending_rpc=d.registration_pending_stuck, retry_at=s.now + 1)
    s = replace(_set_node(s, n, node), network=network)
    if closed:
        # ... and so is the answer the controller may still send on it
        s = _forget_replies(s, _replies_to(n, item))
    if item.kind == FORWARD and _waiting(s, item.client):
        s = _respond(s, item.client, Response(kafka.REQUEST_TIMED_OUT, retried=item.requeued))
    return s


def broker_handles_envelope_response(s: State, cfg: ModelConfig, d: Design,
                                     m: Msg) -> State | None:
    """F-21 and table 1.6: NOT_CONTROLLER re-queues at the front and forgets the controller;
    otherwise the callback completes and the client gets its answer."""
    if not _response_matches(s, m):
        return None
    n = m.dst
    node = s.nodes[n]
    ch = node.channel
    s = replace(s, network=s.network - {m})
    item = ch.inflight
    if m.error == kafka.NOT_CONTROLLER:
        node = _requeue_front(node)
        node = replace(node, not_controller_from=node.not_controller_from | {m.src})
        return _set_node(s, n, node)
    told = (node.not_controller_from | {m.src} if m.inner_error == kafka.NOT_CONTROLLER
            else node.not_controller_from)
    s = _set_node(s, n, replace(node, channel=ch._replace(inflight=()), not_controller_from=told))
    if not _waiting(s, m.client):
        return s
    if m.error == kafka.NONE:
        code = m.inner_error
        if code == kafka.NONE and cfg.clients[m.client].kind == METADATA:
            code = kafka.LEADER_NOT_AVAILABLE       # created; its leader is not known yet
        response = Response(code, retried=item.requeued)
    elif m.error == kafka.UNSUPPORTED_VERSION:
        # The forwarder closes the client connection so it renegotiates (KAFKA-10674).
        response = Response(kafka.NETWORK_EXCEPTION, envelope_error=m.error,
                            retried=item.requeued)
    else:
        code = m.error if d.leak_envelope_error else kafka.UNKNOWN_SERVER_ERROR
        response = Response(code, envelope_error=m.error, retried=item.requeued)
    return _respond(s, m.client, response)


def node_discards_stale_response(s: State, cfg: ModelConfig, d: Design, m: Msg) -> State | None:
    """A response nobody waits for (its connection is gone, or it answers an old
    incarnation) is dropped on arrival."""
    if _response_matches(s, m):
        return None
    return replace(s, network=s.network - {m})


def _response_matches(s: State, m: Msg) -> bool:
    node = s.nodes[m.dst]
    if m.kind in LIFECYCLE_RESPONSES:
        return (node.alive and node.lifecycle_to == m.src
                and m.incarnation_id == node.incarnation)
    inflight = node.channel.inflight
    if not node.alive or not inflight or node.channel.cached != m.src:
        return False
    if m.kind == ENVELOPE_RESPONSE:
        return inflight.kind == FORWARD and inflight.client == m.client
    if m.kind == CREATE_TOPICS_RESPONSE:
        return inflight.kind == TOPIC_CREATION and inflight.topic == m.topic
    return (inflight.kind == REGISTRATION
            and inflight.incarnation_id == m.incarnation_id == node.incarnation)


# --------------------------------------------------------------------------------------------
# controllers


def controller_handles_envelope(s: State, cfg: ModelConfig, d: Design, m: Msg) -> State | None:
    """Deliver an EnvelopeRequest to its controller (any order: the network reorders).  The
    controller is alive: every message in the network is addressed to a live node (a sender
    checks that its peer is alive, and a crash drops the messages to the crashed node; the
    invariant messages-to-live-nodes of properties/symbolic/invariants.py)."""
    s = replace(s, network=s.network - {m})
    reply = Reply(REPLY_ENVELOPE, m.src, m.client, m.listener, m.hops)
    sender = cfg.principal_names[m.sender_principal]
    return _receive_envelope(s, cfg, d, m.dst, m.client, m.version, m.hops, m.listener, sender,
                             reply)


def controller_handles_create_topics(s: State, cfg: ModelConfig, d: Design,
                                     m: Msg) -> State | None:
    """A broker's own CreateTopicsRequest at a KRaft controller (AT-4, AT-5):
    ControllerApis.handleCreateTopics authorizes CREATE for the connection's principal (the
    broker), QuorumController's write fails on a controller that is not active (R-13);
    ReplicationControlManager runs create.topic.policy.class.name and refuses a topic that
    exists; otherwise the TopicRecord is appended and answered once committed (R-17)."""
    s = replace(s, network=s.network - {m})
    r = m.dst
    reply = Reply(REPLY_CREATE_TOPICS, m.src, m.topic, m.listener)
    sender = cfg.principal_names[m.sender_principal]
    if not cfg.allows(sender, kafka.API_OPERATION[kafka.CREATE_TOPICS]):
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.TOPIC_AUTHORIZATION_FAILED)
    q = s.quorum
    if q.leader != r:
        return _reply_not_controller(s, cfg, d, r, reply)
    if (cfg.topic_names[m.topic] in cfg.create_topic_policy
            and not d.internal_topics_bypass_policy and not d.create_topic_policy_ignored):
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.POLICY_VIOLATION)
    if topic_exists(cfg, _leader_view(q), m.topic):
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.TOPIC_ALREADY_EXISTS)
    rec = TopicRecord(TOPIC_RECORD, m.topic, 0, q.epoch, r, False,
                      cfg.allows(sender, kafka.CLUSTER_ACTION), m.sender_principal)
    return replace(s, quorum=replace(q, uncommitted=q.uncommitted + ((rec, reply),)))


def broker_handles_create_topics_response(s: State, cfg: ModelConfig, d: Design,
                                          m: Msg) -> State | None:
    """The answer to a broker's own CreateTopicsRequest: NOT_CONTROLLER re-queues it at the
    front and forgets the controller (F-21.4); any other answer completes it, which clears the
    topic's in-flight mark and is only logged (AT-5): nobody waits for it."""
    if not _response_matches(s, m):
        return None
    n = m.dst
    node = s.nodes[n]
    s = replace(s, network=s.network - {m})
    if m.error == kafka.NOT_CONTROLLER:
        node = _requeue_front(node)
        return _set_node(s, n, replace(node, not_controller_from=node.not_controller_from
                                       | {m.src}))
    return _set_node(s, n, replace(node, channel=node.channel._replace(inflight=())))


def controller_processes_event(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """Z-2/Z-3: the ZK controller runs its next queued write as a multi with a CheckOp on the
    /controller_epoch zkVersion it got at election; BADVERSION means the controller moved:
    ControllerMovedException, resign, answer NOT_CONTROLLER."""
    node = s.nodes[n]
    if not node.events or cfg.mode != ZK or not node.alive:
        return None
    event, rest = node.events[0], node.events[1:]
    node = replace(node, events=rest)
    zk = s.zk
    if not node.zk_active:
        s = _set_node(s, n, node)
        return s if event.acked else _reply_not_controller(s, cfg, d, n, event.reply)
    if d.zombie_writes_unfenced or node.zk_epoch_version == zk.epoch_version:
        write = Write(event.req, n, node.zk_epoch, zk.epoch, event.via_envelope,
                      event.privileged, event.sender_cluster_action, epoch_holder(zk, zk.epoch))
        s = replace(_set_node(s, n, node), zk=replace(zk, writes=zk.writes + (write,)))
        return s if event.acked else _send_reply(s, cfg, n, event.reply, kafka.NONE, kafka.NONE)
    node = replace(node, zk_active=False, zk_epoch=-1, zk_epoch_version=-1)
    s = _set_node(s, n, node)
    return s if event.acked else _reply_not_controller(s, cfg, d, n, event.reply)


def controller_commits_records(s: State, cfg: ModelConfig, d: Design) -> State | None:
    """The KRaft leader commits what it appended; waiting requests are answered only now
    (R-17: 'the success response is sent only after the record is committed')."""
    q = s.quorum
    if cfg.mode != KRAFT or not q.uncommitted or q.leader == NO_NODE or not s.nodes[q.leader].alive:
        return None
    log = q.log + tuple(rec for rec, _ in q.uncommitted)
    s = replace(s, quorum=replace(q, log=log, uncommitted=()))
    # The active controller applied these records when it generated them: no replay lag;
    # its publishers (its registration manager, R-8) see them as committed now.
    leader = s.nodes[q.leader]
    if leader.replayed == len(q.log):
        leader = replace(leader, replayed=len(log))
        for rec, _ in q.uncommitted:
            leader = _publish_record(cfg, d, q.leader, leader, rec)
        s = _set_node(s, q.leader, leader)
    for rec, reply in q.uncommitted:
        if reply:
            s = _send_reply(s, cfg, q.leader, reply, kafka.NONE, kafka.NONE, rec)
    return s


def controller_sends_registration(s: State, cfg: ModelConfig, d: Design, c: int) -> State | None:
    """R-3/R-4: the manager's maybeSendControllerRegistration event runs.  It is queued only
    at start-up (R-2), by a metadata delta touching this controller's registration or the
    features (R-8), or by the failure backoff timer (R-7) -- there is no periodic re-check
    (R-9).  It sends only if not registered in the log, no RPC is pending and the replayed
    metadata.version supports registration (R-1); otherwise it just logs.  While an RPC is
    pending the event waits (registration-no-recheck-after-success is Kafka as read at 3.7.0 to
    3.8.0 and trunk of 2024-10-25, which drops it: docs/findings/registration-no-recheck.md)."""
    node = s.nodes[c]
    due = node.retry_at != NO_TIME and s.now >= node.retry_at
    if not cfg.registration or not node.alive or not (node.send_requested or due):
        return None
    if node.pending_rpc and not d.registration_no_recheck_after_success:
        # KIP-919 intent: a check that finds an RPC pending waits for it to complete, so a
        # delta that arrived meanwhile is not lost.  Kafka (3.7.0 to 3.8.0, trunk of 2024-10-25)
        # drops it (that variant).
        return None
    node = replace(node, send_requested=False, retry_at=NO_TIME)
    if (node.registered_in_log or node.pending_rpc
            or metadata_version(s, c) < kafka.MV_3_7_IV0):
        return _set_node(s, c, node)
    ch = node.channel
    item = RegistrationItem(REGISTRATION, node.incarnation, s.now, False)
    node = replace(node, pending_rpc=True, channel=ch._replace(queue=ch.queue + (item,)))
    return _set_node(s, c, node)


def controller_handles_registration(s: State, cfg: ModelConfig, d: Design, m: Msg) -> State | None:
    """R-12..R-14: CLUSTER_ACTION, active controller, metadata.version; then append one
    RegisterControllerRecord (last writer wins, no incarnation check: R-15, R-18).  The
    controller is alive, as for an envelope (controller_handles_envelope)."""
    r = m.dst
    s = replace(s, network=s.network - {m})
    reply = Reply(REPLY_REGISTRATION, m.src, m.incarnation_id, m.listener)
    if not cfg.allows(cfg.principal_names[m.sender_principal], kafka.CLUSTER_ACTION):
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.CLUSTER_AUTHORIZATION_FAILED)
    q = s.quorum
    if q.leader != r:
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.NOT_CONTROLLER)
    if metadata_version(s) < kafka.MV_3_7_IV0:
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.UNSUPPORTED_VERSION)
    if m.endpoints == UNRESOLVED_ENDPOINTS and not d.registers_unresolved_endpoints:
        # ListenerInfo cannot serialize port 0 or a blank host (a RuntimeException, -1);
        # before KAFKA-15458 the endpoints were copied as they came (the variant)
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.UNKNOWN_SERVER_ERROR)
    # the record copies the IncarnationId the controller chose; the variant numbers a
    # re-registration of the registered incarnation anew, as if it were a broker epoch
    # (the active controller holds every record it appended, committed or not)
    incarnation = m.incarnation_id
    if (d.registration_bumps_same_incarnation and m.incarnation_id == latest_registration(
            q.log + tuple(rec for rec, _ in q.uncommitted), m.src)):
        incarnation = m.incarnation_id + 1
    # sender_cluster_action is a ghost (P9 reads it; no step does): what the ACLs say of the
    # connection's principal, looked up afresh rather than taken from the check above
    sender_ca = cfg.allows(cfg.principal_names[m.sender_principal], kafka.CLUSTER_ACTION)
    record = RegisterControllerRecord(REGISTER_CONTROLLER, m.src, incarnation, q.epoch, r,
                                      sender_cluster_action=sender_ca, endpoints=m.endpoints)
    return replace(s, quorum=replace(q, uncommitted=q.uncommitted + ((record, reply),)))


def latest_registration(log, c: int, upto: int | None = None) -> int | None:
    """The incarnation of the last RegisterControllerRecord for controller c among ``log``
    (its first ``upto`` records), or None: replay keeps the last one (R-18)."""
    inc = None
    for rec in log[:upto]:
        if rec.kind == REGISTER_CONTROLLER and rec.controller_id == c:
            inc = rec.incarnation_id
    return inc


def controller_handles_registration_response(s: State, cfg: ModelConfig, d: Design,
                                             m: Msg) -> State | None:
    """R-6: clear pendingRpc; an error backs off (R-7); NOT_CONTROLLER is retried by the
    channel; success changes nothing else: the manager waits for its record in the log."""
    if not _response_matches(s, m):
        return None
    c = m.dst
    node = s.nodes[c]
    s = replace(s, network=s.network - {m})
    if m.error == kafka.NOT_CONTROLLER:
        node = _requeue_front(node)
        told = node.not_controller_from | {m.src}
        return _set_node(s, c, replace(node, not_controller_from=told))
    node = replace(node, channel=node.channel._replace(inflight=()), pending_rpc=False)
    if m.error != kafka.NONE:
        node = replace(node, retry_at=s.now + 1)
    elif d.registration_trusts_response:
        node = replace(node, registered_in_log=True)
    return _set_node(s, c, node)


def _publish_record(cfg: ModelConfig, d: Design, n: int, node: Node, rec: Record) -> Node:
    """What node ``n``'s registration manager does with a record it replays (R-8): the
    registration for its ID says whether this incarnation is registered; a registration or a
    feature change queues the send check."""
    if cfg.registration and cfg.nodes[n].role == CONTROLLER:
        if (rec.kind == REGISTER_CONTROLLER and rec.controller_id == n
                and not d.registration_trusts_response
                and not (d.registration_never_confirmed
                         and rec.incarnation_id == node.incarnation)):
            node = replace(node, registered_in_log=rec.incarnation_id == node.incarnation,
                           send_requested=True)
        elif rec.kind == FEATURE_LEVEL:
            node = replace(node, send_requested=True)
    return node


def node_replays_record(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """A node replays the next committed record, at its own pace.  A controller checks the
    registration for its ID (R-8): another incarnation means it is not registered."""
    node = s.nodes[n]
    if node.replayed >= len(s.quorum.log) or cfg.mode != KRAFT or not node.alive:
        return None
    rec = s.quorum.log[node.replayed]
    node = replace(node, replayed=node.replayed + 1)
    return _set_node(s, n, _publish_record(cfg, d, n, node, rec))


# --------------------------------------------------------------------------------------------
# KRaft broker registration and heartbeats (BrokerLifecycleManager, ClusterControlManager)


class BrokerRegistration(NamedTuple):
    """A broker's current registration as replay leaves it."""
    offset: int                     # of its RegisterBrokerRecord (registerBrokerRecordOffsets)
    record: RegisterBrokerRecord
    fenced: bool                    # now, after the change records that name its epoch


def broker_registration(records, b: int) -> BrokerRegistration | None:
    """Broker ``b``'s registration among ``records`` (a log in offset order), or None.  Replay
    replaces it with each RegisterBrokerRecord (BR-10); a BrokerRegistrationChangeRecord that
    names its broker epoch fences or unfences it (BR-12)."""
    reg = None
    for i, rec in enumerate(records):
        if rec.kind == REGISTER_BROKER and rec.broker_id == b:
            reg = BrokerRegistration(i, rec, rec.fenced == FENCED)
        elif (rec.kind == BROKER_REGISTRATION_CHANGE and reg is not None and rec.broker_id == b
              and rec.broker_epoch == reg.record.broker_epoch and rec.fenced != 0):
            reg = reg._replace(fenced=rec.fenced == FENCED)
    return reg


def _leader_view(q) -> tuple:
    """The records the active controller has applied: the committed log and its own
    uncommitted records (its in-memory image, BR-2)."""
    return q.log + tuple(rec for rec, _ in q.uncommitted)


def _lifecycle_target(s: State, n: int) -> int:
    """BL-3: the broker's heartbeat channel talks to the controller it believes leads, if
    that one is up (a dead one is a failed connection: nothing is sent)."""
    p = s.nodes[n].known_controller
    return p if p != NO_NODE and s.nodes[p].alive else NO_NODE


def broker_sends_registration(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """BL-4, BL-5, BL-8: a broker that is not registered (just started, or asked to resend by
    its BrokerRegistrationTracker, or whose last attempt failed) sends a
    BrokerRegistrationRequest with its incarnation, one communication at a time."""
    node = s.nodes[n]
    if (not cfg.broker_registration or not node.alive or node.lifecycle_registered
            or node.lifecycle_to != NO_NODE):
        return None
    p = _lifecycle_target(s, n)
    if p == NO_NODE or len(s.network) >= cfg.max_in_flight:
        return None
    msg = BrokerRegistrationRequest(BROKER_REGISTRATION_REQUEST, n, p, target_listener(cfg, p),
                                    n, node.incarnation,
                                    advertised_endpoints(cfg, d, n, node.incarnation),
                                    principal_index(cfg, cfg.nodes[n].principal))
    return replace(_set_node(s, n, replace(node, lifecycle_to=p)), network=s.network | {msg})


def broker_sends_heartbeat(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """BL-9: a registered broker heartbeats with the broker epoch it was given and the offset
    of the last record it replayed, once per heartbeat interval (a tick), one communication at
    a time."""
    node = s.nodes[n]
    if (not cfg.broker_registration or not node.alive or not node.lifecycle_registered
            or node.lifecycle_to != NO_NODE or node.heartbeat_at >= s.now):
        return None
    p = _lifecycle_target(s, n)
    if p == NO_NODE or len(s.network) >= cfg.max_in_flight:
        return None
    msg = BrokerHeartbeatRequest(BROKER_HEARTBEAT_REQUEST, n, p, target_listener(cfg, p),
                                 node.incarnation, node.broker_epoch, node.replayed - 1,
                                 principal_index(cfg, cfg.nodes[n].principal))
    node = replace(node, lifecycle_to=p, heartbeat_at=s.now)
    return replace(_set_node(s, n, node), network=s.network | {msg})


def _set_hb_contact(s: State, b: int, when: int) -> State:
    node = s.nodes[b]
    return s if node.hb_contact == when else _set_node(s, b, replace(node, hb_contact=when))


def _has_valid_session(s: State, cfg: ModelConfig, b: int, reg: BrokerRegistration) -> bool:
    """BR-8: ``hasValidSession``: tracked, not fenced, contacted within the session timeout."""
    contact = s.nodes[b].hb_contact
    return not reg.fenced and contact != NO_TIME and s.now <= contact + cfg.session_timeout


def controller_handles_broker_registration(s: State, cfg: ModelConfig, d: Design,
                                           m: Msg) -> State | None:
    """BR-1, BR-2, BR-4, BR-5: CLUSTER_ACTION, active controller; another incarnation of the
    broker id with a live session is DUPLICATE_BROKER_REGISTRATION, one without loses its
    session; then one RegisterBrokerRecord, answered after its commit.  A new incarnation is
    fenced with a new broker epoch, the next write offset (BR-3); a re-registration of the
    registered incarnation keeps its epoch and its fenced state (BR-5, KAFKA-16952)."""
    r, b = m.dst, m.broker_id
    s = replace(s, network=s.network - {m})
    reply = Reply(REPLY_BROKER_REGISTRATION, m.src, m.incarnation_id, m.listener)
    sender_ca = cfg.allows(cfg.principal_names[m.sender_principal], kafka.CLUSTER_ACTION)
    if not sender_ca:
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.CLUSTER_AUTHORIZATION_FAILED)
    q = s.quorum
    if q.leader != r:
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.NOT_CONTROLLER)
    view = _leader_view(q)
    cur = broker_registration(view, b)
    if cur is not None and cur.record.incarnation_id == m.incarnation_id:
        # the amend path: 3.7.x and 3.8.x numbered it anew (that variant)
        epoch = len(view) if d.broker_reregistration_bumps_epoch else cur.record.broker_epoch
        fenced = FENCED if cur.fenced else 0
    else:
        if cur is not None and _has_valid_session(s, cfg, b, cur):
            return _send_reply(s, cfg, r, reply, kafka.NONE,
                               kafka.DUPLICATE_BROKER_REGISTRATION)
        epoch, fenced = len(view), FENCED
    if m.endpoints == UNRESOLVED_ENDPOINTS:
        # BR-4.8: ListenerInfo refuses port 0 and a blank host (a RuntimeException, -1);
        # since KAFKA-16952 the heartbeat manager is changed only after every check passed
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.UNKNOWN_SERVER_ERROR)
    if unsupported_feature(cfg, b, m.incarnation_id, metadata_version_of(view),
                           d.registration_ignores_omitted_features,
                           d.registration_raises_zero_min_version) is not None:
        # BR-4.9: the run's software does not support a finalized level (the request's
        # Features are its run's, NodeSpec.software)
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.UNSUPPORTED_VERSION)
    record = RegisterBrokerRecord(REGISTER_BROKER, b, m.incarnation_id, q.epoch, r,
                                  sender_cluster_action=sender_ca, broker_epoch=epoch,
                                  fenced=fenced, endpoints=m.endpoints)
    s = _set_hb_contact(s, b, s.now)           # heartbeatManager.register touches it (BR-5)
    return replace(s, quorum=replace(q, uncommitted=q.uncommitted + ((record, reply),)))


def controller_handles_broker_heartbeat(s: State, cfg: ModelConfig, d: Design,
                                        m: Msg) -> State | None:
    """BH-2..BH-7: CLUSTER_ACTION, active controller; a broker epoch other than the
    registration's is STALE_BROKER_EPOCH (an equality check, BH-4); the session is touched;
    a fenced broker that has replayed its own RegisterBrokerRecord is unfenced by a
    BrokerRegistrationChangeRecord, answered after its commit; otherwise the answer is
    immediate."""
    r, b = m.dst, m.src
    s = replace(s, network=s.network - {m})
    reply = Reply(REPLY_HEARTBEAT, m.src, m.incarnation_id, m.listener)
    if not cfg.allows(cfg.principal_names[m.sender_principal], kafka.CLUSTER_ACTION):
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.CLUSTER_AUTHORIZATION_FAILED)
    q = s.quorum
    if q.leader != r:
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.NOT_CONTROLLER)
    cur = broker_registration(_leader_view(q), b)
    expected = None if cur is None else (
        cur.offset if d.heartbeat_checks_record_offset else cur.record.broker_epoch)
    if cur is None or m.broker_epoch != expected:
        return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.STALE_BROKER_EPOCH)
    s = _set_hb_contact(s, b, s.now)
    # KAFKA-13959: before 3.3 the target was the controller's last committed offset
    target = len(q.log) - 1 if d.unfence_waits_for_committed_offset else cur.offset
    if cur.fenced and m.metadata_offset >= target:
        record = BrokerRegistrationChangeRecord(BROKER_REGISTRATION_CHANGE, b,
                                                cur.record.broker_epoch, q.epoch, r,
                                                fenced=UNFENCED)
        return replace(s, quorum=replace(q, uncommitted=q.uncommitted + ((record, reply),)))
    return _send_reply(s, cfg, r, reply, kafka.NONE, kafka.NONE, is_fenced=cur.fenced)


def broker_handles_lifecycle_response(s: State, cfg: ModelConfig, d: Design,
                                      m: Msg) -> State | None:
    """BL-5, BL-10, BL-11: the answer ends the communication in flight.  A successful
    registration gives the broker its epoch and its next heartbeat goes at once; any error is
    retried later, a registration with the same incarnation; a heartbeat error, even
    STALE_BROKER_EPOCH, only backs off: the broker never re-registers on its own."""
    if not _response_matches(s, m):
        return None
    n = m.dst
    node = replace(s.nodes[n], lifecycle_to=NO_NODE)
    if m.kind == BROKER_REGISTRATION_RESPONSE and m.error == kafka.NONE:
        node = replace(node, broker_epoch=m.broker_epoch, lifecycle_registered=True,
                       heartbeat_at=NO_TIME)
    return replace(_set_node(s, n, node), network=s.network - {m})


def controller_fences_stale_broker(s: State, cfg: ModelConfig, d: Design,
                                   b: int) -> State | None:
    """BH-9, BH-10: the active controller's fence timer finds broker ``b`` unfenced with its
    session expired (strictly more than the session timeout since its last contact) and
    fences it with a BrokerRegistrationChangeRecord naming the registration's epoch; the
    heartbeat manager stops tracking it."""
    q = s.quorum
    contact = s.nodes[b].hb_contact
    if (not cfg.broker_registration or q.leader == NO_NODE or not s.nodes[q.leader].alive
            or contact == NO_TIME or s.now <= contact + cfg.session_timeout):
        return None
    cur = broker_registration(_leader_view(q), b)
    if cur is None or cur.fenced:
        return None
    record = BrokerRegistrationChangeRecord(BROKER_REGISTRATION_CHANGE, b,
                                            cur.record.broker_epoch, q.epoch, q.leader,
                                            fenced=FENCED,
                                            silence=min(s.now - contact, cfg.session_timeout + 1))
    s = _set_hb_contact(s, b, NO_TIME)
    return replace(s, quorum=replace(q, uncommitted=q.uncommitted + ((record, ()),)))


# --------------------------------------------------------------------------------------------
# elections, sessions, crashes, restarts, time


def broker_handles_session_expiry(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """The zombie learns its ZK session expired: it opens a new session and resigns (Z-3).
    With ZooKeeper broker registration the new session queues RegisterBrokerAndReelect
    (ZB-6), and a registerBroker of the old session still on its way fails with it."""
    node = s.nodes[n]
    if not node.session_expired or cfg.mode != ZK or not node.alive:
        return None
    node = replace(node, session_expired=False, zk_active=False, zk_epoch=-1,
                   zk_epoch_version=-1, known_controller=s.zk.controller)
    if d.expire_drops_queued_events:
        # KAFKA-10193: clearAndPut(Expire) drops the queue; an event without preempt() never
        # calls its callback, so nobody answers the request it carried
        node = replace(node, events=())
    if cfg.zk_broker_registration:
        node = replace(node, zk_register_pending=True, zk_registering=NO_VERSIONS)
    return _set_node(s, n, node)


# --------------------------------------------------------------------------------------------
# ZooKeeper broker registration (ZB-1..ZB-10)


def _set_broker_id(zk, n: int, version: int):
    ids = zk.broker_ids
    return replace(zk, broker_ids=ids[:n] + (version,) + ids[n + 1:])


def broker_sends_zk_registration(s: State, cfg: ModelConfig, d: Design,
                                 n: int) -> State | None:
    """ZB-1, ZB-7: the broker's RegisterBrokerAndReelect event (queued at start-up and by
    every new ZooKeeper session) runs: ``zkClient.registerBroker(brokerInfo)`` reads the
    BrokerInfo KafkaController holds and sends the create of the ephemeral /brokers/ids/N
    (ZB-4) with those endpoints; ZooKeeper applies it in a later step."""
    node = s.nodes[n]
    if (not cfg.zk_broker_registration or not node.alive or node.session_expired
            or not node.zk_register_pending or node.zk_registering != NO_VERSIONS):
        return None
    return _set_node(s, n, replace(node, zk_register_pending=False,
                                   zk_registering=node.broker_info))


def zk_creates_broker_znode(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """ZB-4, ZB-5: ZooKeeper applies the broker's create of /brokers/ids/N in its current
    session with the endpoints the request carries; a znode already there (this session's,
    ZB-5) is returned as it is, its data not rewritten."""
    node = s.nodes[n]
    if not cfg.zk_broker_registration or not node.alive or node.zk_registering == NO_VERSIONS:
        return None
    zk = s.zk
    if zk.broker_ids[n] == NO_VERSIONS:
        zk = _set_broker_id(zk, n, node.zk_registering)
    return replace(_set_node(s, n, replace(node, zk_registering=NO_VERSIONS)), zk=zk)


def operator_updates_listeners(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """ZB-9 (KIP-226): an operator alters the broker's advertised listeners.  The new
    configuration is installed, then ``updateBrokerInfo`` sets KafkaController's BrokerInfo
    and writes it to /brokers/ids/N (SetData, any version; NONODE is only logged).  The update
    waits for a registration the broker has on its way (the two are serialized: the variant
    broker-info-update-races-registration is Kafka's unserialized config thread, ZB-10);
    broker-info-not-cached (KAFKA-6573) writes ZooKeeper without the BrokerInfo."""
    node = s.nodes[n]
    if not cfg.zk_broker_registration or not node.alive or s.updates_left <= 0:
        return None
    if node.zk_registering != NO_VERSIONS and not d.broker_info_update_races_registration:
        return None
    version = node.listeners_version + 1
    node = replace(node, listeners_version=version,
                   broker_info=node.broker_info if d.broker_info_not_cached else version)
    zk = s.zk
    if zk.broker_ids[n] != NO_VERSIONS:
        zk = _set_broker_id(zk, n, version)
    return replace(_set_node(s, n, node), zk=zk, updates_left=s.updates_left - 1)


# --------------------------------------------------------------------------------------------
# ZK-to-KRaft migration (MG-1..MG-7)


def broker_writes_entity_config(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """MG-6, second half: the broker's multi {CheckOp(/controller, the version it read),
    SetData(entity config)}.  The check fails once the /controller the broker read is gone;
    the write lands otherwise, and the client is answered.  Under
    entity-config-check-passes-recreated-controller (Kafka 3.8.0, MG-7) the check compares
    /controller's dataVersion, which is 0 for every /controller ever created, so it passes
    whenever some /controller exists."""
    node = s.nodes[n]
    if not node.alive or not node.config_writes:
        return None
    (c, version), rest = node.config_writes[0], node.config_writes[1:]
    s = _set_node(s, n, replace(node, config_writes=rest))
    zk = s.zk
    if d.entity_config_check_passes_recreated_controller:
        passes = zk.controller != NO_NODE
    else:
        passes = zk.controller != NO_NODE and zk.epoch_version == version
    if not passes:
        # a KeeperException from the multi, not ControllerMovedException (MG-7a); the fixed
        # check would say the controller moved
        code = (kafka.UNKNOWN_SERVER_ERROR if d.entity_config_check_passes_recreated_controller
                else kafka.STALE_CONTROLLER_EPOCH)
        return _respond(s, c, Response(code)) if _waiting(s, c) else s
    write = Write(c, n, -1, zk.epoch, False, False, False, epoch_holder(zk, zk.epoch), True)
    s = replace(s, zk=replace(zk, writes=zk.writes + (write,)))
    return _respond(s, c, Response(kafka.NONE)) if _waiting(s, c) else s


def controller_claims_zk_leadership(s: State, cfg: ModelConfig, d: Design,
                                    c: int) -> State | None:
    """MG-5: the KRaft controller (the quorum's leader) in state BECOME_CONTROLLER claims
    ZooKeeper leadership in one multi: SetData(/controller_epoch, epoch + 1, its zkVersion),
    Delete(/controller) if present, Create(/controller, its id and kraftControllerEpoch,
    PERSISTENT).  KRaftMigrationDriver gets there only after WAIT_FOR_BROKERS: every ZK broker
    has registered with the KRaft controller, which a broker still on the old IBP has not
    (MG-1).  A deposed ZK controller's later writes fail the /controller_epoch CheckOp (Z-2);
    no ZK election follows, because /controller exists (MG-3)."""
    node = s.nodes[c]
    zk = s.zk
    if (not cfg.migration or cfg.nodes[c].role != CONTROLLER or not node.alive
            or node.zk_active):
        return None
    if not d.claims_before_brokers_ready and any(nd.legacy_ibp for nd in s.nodes):
        return None
    return _wins_controller_epoch(s, c, zk.epoch + 1)


def operator_bumps_ibp(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """The second rolling bounce of KIP-590's upgrade: the broker restarts with
    inter.broker.protocol.version 3.4-IV0 or later (and migration enabled), so from now on it
    forwards (MG-1) and registers with the KRaft controller.  The bounce is graceful and
    abstracted into one step: the broker has nothing in flight, and nothing else of it
    changes."""
    node = s.nodes[n]
    if (not node.alive or not node.legacy_ibp or node.zk_active or node.config_writes
            or node.channel.queue or node.channel.inflight):
        return None
    return _set_node(s, n, replace(node, legacy_ibp=False))


def broker_elects_controller(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """Z-1: with /controller gone, a broker creates the ephemeral /controller and bumps
    /controller_epoch by a CAS on its zkVersion, in one multi-op."""
    zk = s.zk
    if zk.controller != NO_NODE or s.elections_left <= 0:
        return None
    node = s.nodes[n]
    if (cfg.mode != ZK or cfg.nodes[n].role != BROKER or not node.alive or node.session_expired
            or node.zk_active):
        return None
    # election-keeps-epoch: the multi-op rewrites /controller_epoch with the value it holds
    # (the zkVersion still moves: ZooKeeper bumps it on every setData)
    epoch = zk.epoch if d.election_keeps_epoch else zk.epoch + 1
    return replace(_wins_controller_epoch(s, n, epoch), elections_left=s.elections_left - 1)


def _wins_controller_epoch(s: State, n: int, epoch: int) -> State:
    """The multi that makes ``n`` the controller ZooKeeper knows: /controller names it, and
    /controller_epoch is set to ``epoch`` by a CAS on its zkVersion (the zkVersion moves by
    one); ZooKeeper's log records ``n`` as the epoch's holder.  A broker's election (Z-1) and
    the KRaft controller's claim (MG-5) are both this multi."""
    zk = s.zk
    holders = zk.epoch_holders[:epoch] + (n,) + zk.epoch_holders[epoch + 1:]
    zk = replace(zk, controller=n, epoch=epoch, epoch_version=zk.epoch_version + 1,
                 epoch_holders=holders)
    node = replace(s.nodes[n], zk_active=True, zk_epoch=epoch,
                   zk_epoch_version=zk.epoch_version, known_controller=n)
    return replace(_set_node(s, n, node), zk=zk)


def controller_becomes_leader(s: State, cfg: ModelConfig, d: Design, c: int) -> State | None:
    """KRaft election in one step: a live controller becomes leader with epoch + 1.  The old
    leader's uncommitted records are lost; if it is alive it fails their requests with
    NOT_CONTROLLER."""
    q = s.quorum
    if (s.elections_left <= 0 or q.leader == c or cfg.mode != KRAFT
            or cfg.nodes[c].role != CONTROLLER or not s.nodes[c].alive):
        return None
    old = q.leader
    s = replace(s, quorum=replace(q, leader=c, epoch=q.epoch + 1, uncommitted=()),
                elections_left=s.elections_left - 1)
    if old != NO_NODE and s.nodes[old].alive:
        for rec, reply in q.uncommitted:
            if reply and d.not_controller_wrapped_as_unknown and rec.kind == MUTATION_RECORD:
                s = _send_reply(s, cfg, old, reply, kafka.NONE, kafka.UNKNOWN_SERVER_ERROR)
            elif reply:
                s = _reply_not_controller(s, cfg, d, old, reply)
    return _activate_heartbeat_manager(s, cfg, d)


def _activate_heartbeat_manager(s: State, cfg: ModelConfig, d: Design) -> State:
    """BR-13: a controller that becomes active starts a fresh heartbeat manager, with a
    session contacted now for every broker registered in its (committed) log."""
    if not cfg.broker_registration:
        return s
    registered = {rec.broker_id for rec in s.quorum.log if rec.kind == REGISTER_BROKER}
    if d.activation_leaves_sessions_untracked:
        registered = set()      # KAFKA-18138: no contact time, so the fence timer skips them
    return replace(s, nodes=tuple(
        replace(node, hb_contact=s.now if b in registered else NO_TIME)
        if node.hb_contact != (s.now if b in registered else NO_TIME) else node
        for b, node in enumerate(s.nodes)))


def clock_ticks(s: State, cfg: ModelConfig, d: Design) -> State | None:
    """Time passes, only while somebody waits for it, and never past a deadline that is due
    (a due timeout fires first)."""
    if s.now >= cfg.max_time or not wants_tick(s):
        return None
    for n in range(len(s.nodes)):
        if s.nodes[n].alive and expired_item(s, cfg, d, n) is not None:
            return None
    return replace(s, now=s.now + 1)


def zk_expires_session(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """Fault: ZooKeeper expires a node's session (the node keeps running, a zombie until it
    notices); its ephemeral /controller goes away."""
    node = s.nodes[n]
    if (s.expiries_left <= 0 or node.session_expired or cfg.mode != ZK
            or cfg.nodes[n].role != BROKER):
        return None
    zk = s.zk
    if zk.controller == n:
        zk = replace(zk, controller=NO_NODE)
    if cfg.zk_broker_registration and zk.broker_ids[n] != NO_VERSIONS:
        zk = _set_broker_id(zk, n, NO_VERSIONS)        # ephemeral: /brokers/ids/N too
    return replace(_set_node(s, n, replace(node, session_expired=True)), zk=zk,
                   expiries_left=s.expiries_left - 1)


def network_drops_message(s: State, cfg: ModelConfig, d: Design, m: Msg) -> State | None:
    """Fault: a message is lost and its connection breaks; the channel that waited on it
    re-queues at the front and forgets the controller (F-21.3)."""
    if m not in s.network or s.drops_left <= 0:
        return None
    s = replace(s, network=s.network - {m}, drops_left=s.drops_left - 1)
    owner = m.src if m.kind in REQUESTS else m.dst
    node = s.nodes[owner]
    if m.kind in LIFECYCLE_REQUESTS + LIFECYCLE_RESPONSES:
        peer = m.dst if m.kind in LIFECYCLE_REQUESTS else m.src
        if node.alive and node.lifecycle_to == peer and node.incarnation == m.incarnation_id:
            s = _set_node(s, owner, replace(node, lifecycle_to=NO_NODE))
        return s
    inflight = node.channel.inflight
    if node.alive and inflight and _on_connection(m, owner, inflight):
        s = _set_node(s, owner, _requeue_front(node))
    return s


def node_crashes(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """Fault: a node process dies.  Messages to it are gone; requests it already sent may
    still arrive (a late message from this incarnation); peers see their connection drop, and
    the responses it sent on those connections go with them (a response read before the
    crash is the other interleaving); its clients see the connection close."""
    node = s.nodes[n]
    if not node.alive or s.crashes_left <= 0:
        return None
    # hb_contact is the active controller's, not the process's: it stays
    dead = Node(alive=False, incarnation=node.incarnation, session_expired=node.session_expired,
                replayed=node.replayed, hb_contact=node.hb_contact,
                listeners_version=node.listeners_version, legacy_ibp=node.legacy_ibp)
    s = replace(_set_node(s, n, dead), crashes_left=s.crashes_left - 1,
                network=frozenset(m for m in s.network if m.dst != n
                                  and not (m.src == n and m.kind in RESPONSES)))
    s = _forget_replies(s, _replies_to(n))       # its connections close with it
    for p in range(len(s.nodes)):
        peer = s.nodes[p]
        if peer.alive and peer.channel.cached == n and peer.channel.inflight:
            s = _set_node(s, p, _requeue_front(peer))
            peer = s.nodes[p]
        if peer.alive and peer.lifecycle_to == n:
            s = _set_node(s, p, replace(peer, lifecycle_to=NO_NODE))
    for c, spec in enumerate(cfg.clients):
        if spec.node == n and _waiting(s, c):
            s = _respond(s, c, Response(kafka.NETWORK_EXCEPTION))
    if cfg.mode == KRAFT and s.quorum.leader == n and s.quorum.uncommitted:
        s = replace(s, quorum=replace(s.quorum, uncommitted=()))
    return s


def node_restarts(s: State, cfg: ModelConfig, d: Design, n: int) -> State | None:
    """Fault: a dead node starts again as a new process run with a fresh incarnation ID.
    In ZK mode its old session must have expired first if it held /controller."""
    node = s.nodes[n]
    if node.alive or s.restarts_left <= 0:
        return None
    if cfg.mode == ZK and s.zk.controller == n and not node.session_expired:
        return None
    if cfg.zk_broker_registration and s.zk.broker_ids[n] != NO_VERSIONS:
        # the old session's /brokers/ids/N is still there: registerBroker would fail at
        # start-up with NodeExistsException (ZB-5), so the process does not come up
        return None
    # The new process loads the metadata log it has on disk (the prefix it had replayed):
    # its first metadata delta carries all of it.  No registration carries the new
    # incarnation yet, so it is not registered, and its manager's start-up check is queued.
    # A ZK broker's start-up builds its BrokerInfo from its current configuration, the
    # dynamic updates included (they are kept in ZooKeeper), and registers it (ZB-1, ZB-2).
    fresh = Node(alive=True, incarnation=node.incarnation + 1, replayed=node.replayed,
                 send_requested=cfg.registration and cfg.nodes[n].role == CONTROLLER,
                 hb_contact=node.hb_contact, listeners_version=node.listeners_version,
                 broker_info=node.listeners_version,
                 zk_register_pending=cfg.zk_broker_registration, legacy_ibp=node.legacy_ibp)
    s = replace(_set_node(s, n, fresh), restarts_left=s.restarts_left - 1)
    if cfg.mode == KRAFT and s.quorum.leader == n:
        # the leader comes back as the active controller (the model holds no election for
        # it): its heartbeat manager died with the old process and starts afresh
        s = _activate_heartbeat_manager(s, cfg, d)
    return s
