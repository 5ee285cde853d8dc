"""The steps of the simulated cluster: what can happen next and what it does, in Kafka's words.

``events()`` lists the enabled steps in a fixed order (``STEPS``, then each step's candidate
arguments); ``apply(event)`` takes one and says whether it was enabled.  Each ``_ev_<step>``
handler decides enabledness by explicit checks -- an unknown node id, client name or message id,
a message of the wrong kind, a dead node -- and returns False; any exception out of a handler is
a bug in the implementation and propagates.  The handlers and the helpers only they use stand for:

- admin clients (``KafkaAdminClient`` over a reliable link): a request handled on arrival by the
  node it is sent to -- forwarded by a broker's ``ForwardingManager`` (F-1..F-21), handled by a
  controller directly (D-7), written to ZooKeeper by a non-forwarding ZK broker, DescribeCluster
  (D-1, D-2: a controller lists the controller registrations it has replayed, a KRaft broker
  whose brokers register the unfenced broker registrations it has replayed, each at the
  endpoints its record carries), a forged EnvelopeRequest (F-22..F-30); the version is the
  broker's advertised intersection (F-35);
- requests that need topics (AT-1..AT-5): a KRaft broker's FindCoordinator (DESCRIBE on the
  group, COORDINATOR_NOT_AVAILABLE while ``__consumer_offsets`` is missing from its replayed
  image) and Metadata with auto-creation (DESCRIBE then CREATE on the topic), its
  ``AutoTopicCreationManager`` on the forwarding channel, and the controller's
  ``controller_handles_create_topics`` for the broker's own CreateTopicsRequest;
- the controller side: the receiving side of an EnvelopeRequest (``KafkaApis.handleEnvelope``,
  F-22..F-27; ``ControllerApis.handleEnvelopeRequest``, F-28..F-30, the inner request authorized
  as the client), the mutation written by the ``QuorumController`` or the ZK ``KafkaController``,
  ControllerRegistrationRequest handling (R-12..R-16);
- KRaft broker registration: a broker's ``BrokerLifecycleManager`` sends BrokerRegistration and
  BrokerHeartbeat requests (api keys 62, 63) to the controller its metadata cache names, on that
  controller's listener (BL-3..BL-11), one at a time; the active controller's
  ``ClusterControlManager`` answers them (BR-1..BR-8, BH-2..BH-7) and fences a broker whose
  session expired (BH-9, BH-10);
- the network: connections opened per (node, listener, purpose) and closed by a disconnect, a
  network timeout (F-16) or the receiver (F-23, F-24); ``NetworkClient``'s disconnect re-queues
  the channel's request (F-21.3);
- ZooKeeper broker registration: a ZK broker's ``RegisterBrokerAndReelect`` sends the create
  of /brokers/ids/<id> with its cached BrokerInfo and ZooKeeper applies it (ZB-4..ZB-7); a
  restart waits for the old session's znode to go (ZB-5);
- the ZK-to-KRaft migration: a ZK broker of a migration routes IncrementalAlterConfigs by F-6
  and, when it processes it itself, writes in two steps -- the reads of /controller with the
  request, the multi as ``broker_writes_entity_config`` (MG-6, MG-7); a broker on an IBP below
  3.4-IV0 writes ZooKeeper itself (F-4, MG-1) until ``operator_bumps_ibp``; the KRaft
  controller claims /controller (``controller_claims_zk_leadership``, MG-5), handles the
  brokers' envelopes on its controller listener (F-28..F-30) and dual-writes them
  (``controller_processes_event``);
- time: ``clock_ticks`` and the channel deadlines due in the current tick (F-16, F-19);
- faults (``FAULTS``, budgeted like the model's bounds): lost messages, crashes, restarts, ZK
  session expiries, elections, and an operator's dynamic listener update (ZB-9).
"""
from __future__ import annotations

import random
from ipaddress import ip_address

from impl.auto_topics import GROUP, find_coordinator, handle_metadata, partition_metadata
from impl.broker_registration import ClusterControlManager
from impl.channel import ControllerChannel, negotiate_version
from impl.cluster.observation import ClientResult
from impl.cluster.wiring import CLUSTER_ID, Conn, Node
from impl.cluster_config import DESCRIBE, FIND_COORDINATOR, FORGED_ENVELOPE, METADATA, ClientConfig
from impl.context import RequestContext
from impl.describe_cluster import (BrokerDescribeCluster, BrokerRegistration,
                                   ControllerDescribeCluster, kraft_alive_brokers)
from impl.forwarding import (CLOSE, DISPATCH, ClientOutcome, envelope_response,
                             error_response_body, first_error, wrap_inner_response)
from impl.kraft import mutation_response
from impl.protocol import (build_envelope_request, encode_request, encode_response,
                           parse_request, parse_request_header, parse_response)
from impl.protocol.api_keys import (BROKER_HEARTBEAT, BROKER_REGISTRATION,
                                    CONTROLLER_REGISTRATION, CREATE_ACLS, CREATE_TOPICS,
                                    DESCRIBE_CLUSTER, ENVELOPE, INCREMENTAL_ALTER_CONFIGS)
from impl.protocol.api_keys import FIND_COORDINATOR as FIND_COORDINATOR_KEY
from impl.protocol.api_keys import METADATA as METADATA_KEY
from impl.protocol.errors import (CLUSTER_AUTHORIZATION_FAILED, NETWORK_EXCEPTION, NONE,
                                  TOPIC_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION)
from impl.protocol.principal import KafkaPrincipal
from impl.protocol.schema import ZERO_UUID
from impl.sim import REQUEST, RESPONSE, Event, Message
from impl.cluster.wiring import ENTITY_CONFIG_WRITE_UNCHECKED
from impl.zk_controller import acl_mutation, config_mutation

# the ACL each mutation needs: (operation, resource type), and the error when denied
MUTATION_ACL = {CREATE_TOPICS: ("CREATE", "TOPIC"),
                INCREMENTAL_ALTER_CONFIGS: ("ALTER_CONFIGS", "TOPIC"),
                CREATE_ACLS: ("ALTER", "CLUSTER")}
DENIED = {CREATE_TOPICS: TOPIC_AUTHORIZATION_FAILED,
          INCREMENTAL_ALTER_CONFIGS: TOPIC_AUTHORIZATION_FAILED,
          CREATE_ACLS: CLUSTER_AUTHORIZATION_FAILED}
CLIENT_MAX_VERSION = {CREATE_TOPICS: 7, INCREMENTAL_ALTER_CONFIGS: 1, CREATE_ACLS: 3,
                      DESCRIBE_CLUSTER: 1, ENVELOPE: 0,
                      # a Kafka 3.8.0 client's latest FindCoordinator and Metadata (AT-1, AT-2)
                      FIND_COORDINATOR_KEY: 5, METADATA_KEY: 12}

# the BrokerLifecycleManager's two APIs (BL-4, BL-9)
LIFECYCLE_APIS = (BROKER_REGISTRATION, BROKER_HEARTBEAT)

# the step names (the order of ``events()``)
STEPS = ("client_sends_request", "broker_learns_controller", "channel_discovers_controller",
         "channel_sends_request", "channel_times_out_request", "controller_handles_envelope",
         "broker_handles_envelope_response", "controller_handles_create_topics",
         "broker_handles_create_topics_response", "controller_sends_registration",
         "controller_handles_registration", "controller_handles_registration_response",
         "broker_sends_registration", "broker_sends_heartbeat",
         "controller_handles_broker_registration", "controller_handles_broker_heartbeat",
         "broker_handles_lifecycle_response", "controller_fences_stale_broker",
         "node_discards_stale_response", "controller_processes_event",
         "controller_commits_records", "node_replays_record", "broker_handles_session_expiry",
         "broker_sends_zk_registration", "zk_creates_broker_znode",
         "broker_writes_entity_config", "controller_claims_zk_leadership", "operator_bumps_ibp",
         "broker_elects_controller", "controller_becomes_leader", "clock_ticks",
         "zk_expires_session", "network_drops_message", "node_crashes", "node_restarts",
         "operator_updates_listeners")
# the steps that take a message in flight
MESSAGE_STEPS = ("controller_handles_envelope", "broker_handles_envelope_response",
                 "controller_handles_create_topics", "broker_handles_create_topics_response",
                 "controller_handles_registration", "controller_handles_registration_response",
                 "controller_handles_broker_registration", "controller_handles_broker_heartbeat",
                 "broker_handles_lifecycle_response", "node_discards_stale_response",
                 "network_drops_message")
FAULTS = {"zk_expires_session": "session_expiries", "network_drops_message": "drops",
          "node_crashes": "crashes", "node_restarts": "restarts",
          "broker_elects_controller": "elections", "controller_becomes_leader": "elections",
          "operator_updates_listeners": "listener_updates"}


class ClusterSteps:
    """The steps of ``Cluster`` (a mixin over ``ClusterWiring``'s state)."""

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
        if name in MESSAGE_STEPS:
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
        """Whether ``ev`` is enabled (``dry``), or take it.  The handler decides by explicit
        checks; an exception out of it is a bug in the implementation, not a disabled step, and
        propagates."""
        fn = getattr(self, "_ev_" + ev.name, None)
        if fn is None:
            return False
        return bool(fn(*ev.args, dry=dry))

    def _node(self, n) -> Node | None:
        """Node ``n``, or None when no node has that id (a step on it is not enabled)."""
        return self.nodes.get(n)

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
        elif c.api_key == FIND_COORDINATOR_KEY:
            # a consumer's lookup of its group's coordinator (KeyType GROUP)
            group = f"group-{c.name}"
            body = ({"KeyType": GROUP, "CoordinatorKeys": [group]} if version >= 4
                    else {"Key": group, "KeyType": GROUP})
        elif c.api_key == METADATA_KEY:
            body = {"Topics": [{"TopicId": ZERO_UUID, "Name": c.topic_name}],
                    "AllowAutoTopicCreation": True, "IncludeTopicAuthorizedOperations": False}
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
        if name not in self.clients or name in self.sent:
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
        if c.kind in (FIND_COORDINATOR, METADATA):
            self._broker_handles_topic_request(c, node, ctx)
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
            forwards = node.forwarding is not None                      # F-4, MG-1
            if zb.is_active:
                self._controller_handles_mutation(c.node_id, data, ctx, ("client", name))
            elif (self.config.migration and c.api_key == INCREMENTAL_ALTER_CONFIGS
                  and not (forwards and zb.known_controller_kraft)):
                # F-6: IncrementalAlterConfigs is forwarded only to a KRaft controller
                self._broker_processes_entity_config(c.node_id, data, ctx, name)
            elif not forwards:
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

    # ---- requests that need topics (AT-1..AT-5) ------------------------------------------------

    def _broker_handles_topic_request(self, c: ClientConfig, node: Node,
                                      ctx: RequestContext) -> None:
        """FindCoordinator (AT-1) or Metadata (AT-2) at a KRaft broker's ``KafkaApis``, the
        latest version both ends know.  The broker's metadata image is what it has replayed;
        a topic it lacks goes to its ``AutoTopicCreationManager``.  Neither API is served by a
        controller nor, here, by a ZK broker (whose creation paths, AT-6, are not
        implemented): the connection is closed."""
        n = c.node_id
        if not (self.kraft and node.role == "broker" and node.auto_topics is not None):
            self._respond(c.name, ClientResult(NETWORK_EXCEPTION))
            return
        version = min(self._api_ranges(n)[c.api_key][1], CLIENT_MAX_VERSION[c.api_key])
        data = self._client_request(c, version)
        header, body = parse_request(data)
        image = self.quorum.image(n)
        me = self._advertised_endpoint(n, ctx.listener_name)
        if c.kind == FIND_COORDINATOR:
            resp = find_coordinator(ctx, version, body, authorize=self.acls.allows,
                                    image_topics=image.topics, manager=node.auto_topics,
                                    now_ms=self.now_ms, coordinator=(n,) + me)
            data = encode_response(c.api_key, version, header["CorrelationId"], resp)
            self._respond(c.name, ClientResult(first_error(resp), 0, frozenset(), data))
            return

        def answered(resp: dict, answer, name=c.name, run=node.run) -> None:
            # the client waits on this process run's connection
            if node.run != run or not node.alive or self.results[name]:
                return
            code = NETWORK_EXCEPTION if answer.close_connection else first_error(resp)
            data = None if answer.close_connection else encode_response(
                METADATA_KEY, version, header["CorrelationId"], resp)
            self._respond(name, ClientResult(code, answer.envelope_error, frozenset(), data))
        props = node.spec.props()
        leaders = dict(self.config.partition_leaders)
        # L-27: brokers that do not register stand registered from their configuration while
        # they are up (partition_leaders is for such configurations)
        alive = {b: self.resolved_endpoints(b) for b in leaders.values() if self.nodes[b].alive}

        def partitions_of(name: str) -> list:
            if name not in leaders:
                return []
            return [partition_metadata(0, leaders[name], ctx.listener_name, alive)]
        topics = {**{t: ZERO_UUID for t in leaders}, **image.topics}
        resp = handle_metadata(
            ctx, header, body, authorize=self.acls.allows, image_topics=topics,
            auto_create_enable=props.get("auto.create.topics.enable", "true").strip().lower()
            == "true", manager=node.auto_topics, now_ms=self.now_ms, brokers=[(n,) + me],
            cluster_id=CLUSTER_ID, controller_id=n, on_answer=answered,
            partitions_of=partitions_of)
        if resp is not None:
            data = encode_response(METADATA_KEY, version, header["CorrelationId"], resp)
            # the leaders listed, at their endpoints on the request's listener
            listed = {p["LeaderId"] for t in resp["Topics"] for p in t["Partitions"]
                      if p["LeaderId"] >= 0}
            endpoints = frozenset(
                (b, self.endpoint_listener(b, *alive[b][ctx.listener_name]))
                + alive[b][ctx.listener_name] for b in listed)
            self._respond(c.name, ClientResult(first_error(resp), 0, endpoints, data))

    def _advertised_endpoint(self, n: int, listener: str) -> tuple:
        """(host, port) of node ``n``'s advertised ``listener`` as its process run resolved
        it (EP-1)."""
        return self.resolved_endpoints(n).get(listener, ("", -1))

    def _describe_cluster(self, c: ClientConfig, node: Node, ctx: RequestContext) -> None:
        header, body = parse_request(self._client_request(c, 1))
        version = header["RequestApiVersion"]
        if node.role == "controller":
            regs = self.quorum.image(node.spec.node_id).controllers
            mv = self.quorum.metadata_version(node.spec.node_id)
            resp = ControllerDescribeCluster("kipcheck-cluster", self.acls.cluster).handle(
                ctx, version, body, metadata_version=mv, registrations=regs,
                leader_id=self.quorum.leader_id)
        elif self.kraft and self.config.broker_registration:
            # L-27: the registrations this broker has replayed, unfenced ones only, at the
            # endpoints their records carry
            brokers = kraft_alive_brokers(self.quorum.image(node.spec.node_id).brokers)
            resp = BrokerDescribeCluster("kipcheck-cluster", self.acls.cluster,
                                         random.Random(self.seed)).handle(
                ctx, version, body, brokers=brokers)
        elif self.config.zk_broker_registration:
            # L-27 on a ZK broker: the brokers registered in /brokers/ids, at the endpoints
            # their znodes carry -- what the controller's UpdateMetadata publishes (ZB-11),
            # taken as instant
            brokers = [BrokerRegistration(b, {e.listener_name: (e.host, e.port)
                                              for e in info.broker.end_points},
                                          info.broker.rack)
                       for b, (info, _) in sorted(self.zkc.registered_brokers().items())]
            resp = BrokerDescribeCluster("kipcheck-cluster", self.acls.cluster,
                                         random.Random(self.seed)).handle(
                ctx, version, body, brokers=brokers, zk_controller_id=self.zkc.controller())
        else:
            # brokers that do not register stand registered from their configuration
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
                                                                         b["Port"]),
                                   b["Host"], b["Port"])
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
                self._send_reply(n, reply, header, r.body)
            return
        tag = header["ClientId"]
        mutation = self._mutation_of(key, tag)
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
        if kind == "create_topics":
            # a broker's own CreateTopicsRequest, answered on its connection (AT-4)
            _, conn_id, req_header = reply
            conn = self.conns.get(conn_id)
            if conn is None or not self._conn_open(conn):
                return
            version = req_header["RequestApiVersion"]
            payload = encode_response(CREATE_TOPICS, version, req_header["CorrelationId"], resp)
            self._send(RESPONSE, n, conn, req_header, payload, CREATE_TOPICS, version)
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
            return
        if kind == "lifecycle":
            # a BrokerRegistration or BrokerHeartbeat response on the broker's heartbeat
            # connection, lost if that connection or either process run is gone
            _, conn_id, req_header = reply
            conn = self.conns.get(conn_id)
            if conn is None or not self._conn_open(conn):
                return
            key, version = req_header["RequestApiKey"], req_header["RequestApiVersion"]
            payload = encode_response(key, version, req_header["CorrelationId"], resp)
            self._send(RESPONSE, n, conn, req_header, payload, key, version)

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

    def _mutation_of(self, key: int, tag: str):
        """The ZooKeeper write of client ``tag``'s mutation: CreateAcls an ACL znode, the
        others its topic's config znode (CreateTopics writes the topic's config znode with its
        assignment, AdminZkClient; IncrementalAlterConfigs /config/topics/<name>)."""
        topic = f"topic-{tag}"
        if key == CREATE_ACLS:
            return acl_mutation(tag, "Topic", topic, [{"principal": "User:reader",
                                                       "operation": "Read"}])
        return config_mutation(tag, "topics", topic, {"retention.ms": "60000"})

    def _broker_writes_zk(self, n: int, data: bytes, ctx: RequestContext, name: str) -> None:
        """A ZK broker that does not forward (F-4; an IBP below 3.4-IV0 in a migration, MG-1)
        handles a mutation itself (F-5, Z-5): CreateAcls through ``AclAuthorizer`` (no
        /controller check), a config through ``setOrCreateEntityConfigs`` in one go."""
        header, body = parse_request(data)
        key = header["RequestApiKey"]
        if not self._authorized_mutation(ctx.principal, key):
            self._respond(name, ClientResult(DENIED[key]))
            return
        mutation = self._mutation_of(key, name)
        if key == CREATE_ACLS:
            code = self.zkc.brokers[n].write_acls_directly(mutation, self.now_ms)
        else:
            code = self.zkc.broker_writes_zk(n, mutation, self.now_ms)
        self._respond(name, ClientResult(code))

    def _broker_processes_entity_config(self, n: int, data: bytes, ctx: RequestContext,
                                        name: str) -> None:
        """F-6, MG-6: a ZK broker of a migration processes IncrementalAlterConfigs itself
        (``ZkAdminManager`` -> ``setOrCreateEntityConfigs``): authorization (F-7), then the
        reads of /controller -- STALE_CONTROLLER_EPOCH at once when there is none or it names a
        KRaft controller; otherwise the multi is sent later (``broker_writes_entity_config``).
        With the injected bug entity-config-write-unchecked the write happens at once,
        unchecked (before KAFKA-16539)."""
        header, body = parse_request(data)
        key = header["RequestApiKey"]
        if not self._authorized_mutation(ctx.principal, key):
            self._respond(name, ClientResult(DENIED[key]))
            return
        zb = self.zkc.brokers[n]
        mutation = self._mutation_of(key, name)
        if ENTITY_CONFIG_WRITE_UNCHECKED in self.bugs:
            self._respond(name, ClientResult(zb.write_entity_config_unchecked(mutation,
                                                                              self.now_ms)))
            return
        code = zb.start_entity_config_write(mutation, self.now_ms)
        if code is not None:
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
        node = self._node(n)
        if node is None or not node.alive or node.role != "broker":
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
        node = self._node(n)
        if node is None:
            return False
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
        node = self._node(n)
        if node is None:
            return False
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
        node = self._node(n)
        if node is None:
            return False
        ch = node.channel
        if not node.alive or ch is None or not self._expired(ch):
            return False
        if dry:
            return True
        # the item in flight first when its network timeout falls in this tick, as the model
        # takes it (within a tick the model does not order deadlines)
        flight = ch.inflight_request
        network_deadline = (None if flight is None or flight.item is None
                            else flight.sent_ms + ch.request_timeout_ms + 1)
        if network_deadline is not None and network_deadline < self._window_end():
            self.now_ms = max(self.now_ms, network_deadline)
        else:
            self.now_ms = max(self.now_ms, self._due_deadline(ch))
        if flight is not None and self.now_ms - flight.sent_ms > ch.request_timeout_ms:
            # the network timeout closes the connection: what was on it is gone, and so is
            # the answer the controller may still send on it
            self._disconnect(n)
        # one item per step, as the model times them out: items due together (a forwarded
        # request and the broker's own CreateTopics queued in one instant) go one step each
        ch.expire(self.now_ms, max_items=1)
        return True

    def _deliverable(self, mid: int, kinds) -> Message | None:
        m = self.network.get(mid)
        if m is None:
            return None
        if (m.kind, m.api_key) not in kinds:
            return None
        return m

    def _request_to_live_node(self, mid: int, api_key: int) -> Message | None:
        """The request ``mid`` of ``api_key`` in flight to a live node, or None."""
        m = self._deliverable(mid, {(REQUEST, api_key)})
        return m if m is not None and self.nodes[m.dst].alive else None

    def _ev_controller_handles_envelope(self, mid: int, dry: bool) -> bool:
        m = self._request_to_live_node(mid, ENVELOPE)
        if m is None or dry:
            return m is not None
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
        return self._channel_takes_response(mid, dry, ENVELOPE)

    def _channel_takes_response(self, mid: int, dry: bool, api_key: int) -> bool:
        """The response ``mid`` of API ``api_key`` to the request in flight on its
        destination's controller channel, handed to the channel (F-21)."""
        m = self._deliverable(mid, {(RESPONSE, api_key)})
        if m is None or not self._response_matches(m):
            return False
        if dry:
            return True
        self.network.take(mid)
        self.nodes[m.dst].channel.on_response(m.correlation_id, m.payload, self.now_ms)
        return True

    def _ev_controller_handles_create_topics(self, mid: int, dry: bool) -> bool:
        """A broker's own CreateTopicsRequest (no Envelope, AT-4) at a KRaft controller:
        ``ControllerApis.handleCreateTopics`` authorizes the connection's principal, the
        ``QuorumController`` writes (impl.kraft, AT-5)."""
        m = self._request_to_live_node(mid, CREATE_TOPICS)
        if m is None or self.nodes[m.dst].qc is None:
            return False
        if dry:
            return True
        self.network.take(mid)
        conn = self.conns[m.conn]
        header, body = parse_request(m.payload)
        ctx = self._server_context(conn, header)
        reply = ("create_topics", conn.id, header)
        before = len(self.quorum.uncommitted)
        r = self.nodes[m.dst].qc.controller_handles_create_topics(
            body, waiter=(reply, header),
            has_cluster_auth=self.acls.allows(ctx.principal, "CREATE", "CLUSTER"),
            creatable=lambda names: {x for x in names
                                     if self.acls.allows(ctx.principal, "CREATE", "TOPIC")})
        for write in self.quorum.uncommitted[before:]:
            for entry in write.entries:
                if entry.record.name == "TopicRecord":
                    self._created_as[entry.record.data["TopicId"]] = ctx.principal.name
        if r is not None:
            self._send_reply(m.dst, reply, header, r.body)
        return True

    def _ev_broker_handles_create_topics_response(self, mid: int, dry: bool) -> bool:
        """The controller's answer to the broker's own CreateTopicsRequest: NOT_CONTROLLER
        re-queues it (F-21.4), anything else completes it (the AutoTopicCreationManager clears
        the topic's in-flight mark and logs, AT-5)."""
        return self._channel_takes_response(mid, dry, CREATE_TOPICS)

    def _ev_node_discards_stale_response(self, mid: int, dry: bool) -> bool:
        m = self._deliverable(mid, {(RESPONSE, key) for key in (ENVELOPE, CONTROLLER_REGISTRATION,
                                                               CREATE_TOPICS)
                                    + LIFECYCLE_APIS})
        if m is None:
            return False
        if self._lifecycle_response_matches(m) if m.api_key in LIFECYCLE_APIS else \
                self._response_matches(m):
            return False
        if not dry:
            self.network.take(mid)
        return True

    def _ev_controller_sends_registration(self, c: int, dry: bool) -> bool:
        node = self._node(c)
        if node is None:
            return False
        reg = node.registration
        if not node.alive or reg is None or not reg.check_due(self.now_ms):
            return False
        if not dry:
            reg.controller_sends_registration(self.now_ms)
        return True

    def _ev_controller_handles_registration(self, mid: int, dry: bool) -> bool:
        m = self._request_to_live_node(mid, CONTROLLER_REGISTRATION)
        if m is None or dry:
            return m is not None
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

    # ---- KRaft broker registration and heartbeats --------------------------------------------

    def _lifecycle_target(self, n: int) -> int | None:
        """BL-3: the heartbeat channel talks to the controller the broker's metadata cache
        names; a dead one is a failed connection, so nothing is sent."""
        p = self.nodes[n].known_controller
        return p if p >= 0 and p in self.nodes and self.nodes[p].alive else None

    def _room_in_flight(self) -> bool:
        return self.config.max_in_flight is None or len(self.network) < self.config.max_in_flight

    def _lifecycle_sender(self, n: int):
        """Broker ``n``'s live BrokerLifecycleManager and the controller it would talk to, or
        None."""
        node = self._node(n)
        if node is None or not node.alive or node.lifecycle is None:
            return None
        p = self._lifecycle_target(n)
        if p is None or not self._room_in_flight():
            return None
        return node.lifecycle, p

    def _send_lifecycle(self, n: int, p: int, api_key: int, body: dict) -> None:
        """The request's bytes on the broker's heartbeat connection to controller ``p``, on
        ``p``'s controller listener (BL-3, L-29), at the highest version both ends parse."""
        node = self.nodes[n]
        version = negotiate_version(api_key, self._api_ranges(n).get(api_key),
                                    self._api_ranges(p).get(api_key))
        key = (n, node.run)
        self._correlation[key] = correlation = self._correlation.get(key, 0) + 1
        header = {"RequestApiKey": api_key, "RequestApiVersion": version,
                  "CorrelationId": correlation,
                  "ClientId": f"{node.spec.name.lower()}-heartbeat-channel"}
        conn = self._conn(n, p, self._controller_listener(p), "heartbeat")
        self._send(REQUEST, n, conn, header, encode_request(header, body), api_key, version)

    def _ev_broker_sends_registration(self, n: int, dry: bool) -> bool:
        """BL-4, BL-5, BL-8: an unregistered broker (just started, asked to resend, or whose
        last attempt failed) sends its BrokerRegistrationRequest, one communication at a
        time."""
        sender = self._lifecycle_sender(n)
        if sender is None or not sender[0].registration_enabled():
            return False
        if not dry:
            lifecycle, p = sender
            body = lifecycle.broker_sends_registration(self.now_ms, controller_id=p)
            self._send_lifecycle(n, p, BROKER_REGISTRATION, body)
        return True

    def _ev_broker_sends_heartbeat(self, n: int, dry: bool) -> bool:
        """BL-9: a registered broker heartbeats with its broker epoch and the offset of the
        last record it replayed, at most once per broker.heartbeat.interval.ms."""
        sender = self._lifecycle_sender(n)
        if sender is None or not sender[0].heartbeat_enabled(self.now_ms):
            return False
        if not dry:
            lifecycle, p = sender
            body = lifecycle.broker_sends_heartbeat(
                self.now_ms, self.quorum.replayed_offset(n) - 1, controller_id=p)
            self._send_lifecycle(n, p, BROKER_HEARTBEAT, body)
        return True

    def _lifecycle_request(self, mid: int, api_key: int):
        """The lifecycle request ``mid`` to a live controller, and that controller's
        ClusterControlManager, or None."""
        m = self._request_to_live_node(mid, api_key)
        if m is None or self.nodes[m.dst].cluster_control is None:
            return None
        return m, self.nodes[m.dst].cluster_control

    def _controller_handles_lifecycle(self, mid: int, api_key: int, dry: bool) -> bool:
        found = self._lifecycle_request(mid, api_key)
        if found is None or dry:
            return found is not None
        m, ccm = found
        self.network.take(mid)
        conn = self.conns[m.conn]
        header, body = parse_request(m.payload)
        ctx = self._server_context(conn, header)
        reply = ("lifecycle", conn.id, header)
        handle = (ClusterControlManager.controller_handles_broker_registration
                  if api_key == BROKER_REGISTRATION
                  else ClusterControlManager.controller_handles_broker_heartbeat)
        r = handle(ccm, ctx, body, self.quorum, self.now_ms, waiter=(reply, header))
        if r is not None:
            self._send_reply(m.dst, reply, header, r.body)
        return True

    def _ev_controller_handles_broker_registration(self, mid: int, dry: bool) -> bool:
        """BR-1..BR-5: the controller's answer, at once for a refusal, after the commit of its
        RegisterBrokerRecord otherwise."""
        return self._controller_handles_lifecycle(mid, BROKER_REGISTRATION, dry)

    def _ev_controller_handles_broker_heartbeat(self, mid: int, dry: bool) -> bool:
        """BH-2..BH-7: the controller's answer, after the commit of the
        BrokerRegistrationChangeRecord that unfences the broker, at once otherwise."""
        return self._controller_handles_lifecycle(mid, BROKER_HEARTBEAT, dry)

    def _lifecycle_response_matches(self, m: Message) -> bool:
        """A lifecycle response is awaited by the process run whose connection it came back on,
        while its one communication is in flight to the controller that answers."""
        conn = self.conns.get(m.conn)
        node = self.nodes.get(m.dst)
        if conn is None or node is None or not node.alive or node.run != conn.src_run:
            return False
        lifecycle = node.lifecycle
        return (lifecycle is not None and lifecycle.communication_in_flight
                and lifecycle.in_flight_to == m.src)

    def _ev_broker_handles_lifecycle_response(self, mid: int, dry: bool) -> bool:
        """BL-5, BL-10, BL-11: the answer ends the communication in flight."""
        m = self._deliverable(mid, {(RESPONSE, key) for key in LIFECYCLE_APIS})
        if m is None or not self._lifecycle_response_matches(m):
            return False
        if dry:
            return True
        self.network.take(mid)
        body = parse_response(m.payload, {"RequestApiKey": m.api_key,
                                          "RequestApiVersion": m.api_version,
                                          "CorrelationId": m.correlation_id})
        lifecycle = self.nodes[m.dst].lifecycle
        if m.api_key == BROKER_REGISTRATION:
            lifecycle.broker_handles_registration_response(NONE, body, self.now_ms)
        else:
            lifecycle.broker_handles_heartbeat_response(NONE, body, self.now_ms)
        return True

    def _active_cluster_control(self) -> ClusterControlManager | None:
        """The leader's ClusterControlManager (whether its process is up or not)."""
        if not self.kraft or self.quorum.leader_id < 0:
            return None
        return self.nodes[self.quorum.leader_id].cluster_control

    def _ev_controller_fences_stale_broker(self, b: int, dry: bool) -> bool:
        """BH-9, BH-10: the live leader's fence timer fences broker ``b``, unfenced with its
        session expired, with a BrokerRegistrationChangeRecord nobody waits for."""
        node = self._node(b)
        ccm = self._active_cluster_control()
        if node is None or node.role != "broker" or ccm is None or \
                not self.nodes[self.quorum.leader_id].alive or \
                not ccm.stale_broker(b, self.quorum, self.now_ms):
            return False
        if not dry:
            ccm.controller_fences_stale_broker(b, self.quorum, self.now_ms)
        return True

    def _ev_controller_processes_event(self, n: int, dry: bool) -> bool:
        """Z-2, Z-3: a ZK controller's next queued mutation, written behind the epoch CheckOp;
        in a migration also the KRaft controller's, dual-written under its claimed epoch."""
        if self.kraft or self._node(n) is None:
            return False
        zb = self.zkc.process(n)
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
        node = self._node(n)
        if node is None or not node.alive or self.quorum.replayed_offset(n) >= len(self.quorum.log):
            return False
        if dry:
            return True
        delta = self.quorum.node_replays_record(n)
        if node.registration is not None:
            node.registration.on_metadata_update(delta, self.quorum.image(n))
        return True

    def _ev_broker_handles_session_expiry(self, n: int, dry: bool) -> bool:
        if self.kraft or self._node(n) is None:
            return False
        zb = self.zkc.brokers[n]
        if zb is None or not zb.alive or not zb.session_expired:
            return False
        if not dry:
            self.zkc.broker_handles_session_expiry(n, self.now_ms)
        return True

    def _zk_registering_broker(self, n: int):
        """Node ``n``'s ``ZkBroker`` where ZK brokers register in /brokers/ids, else None."""
        if self.kraft or not self.config.zk_broker_registration or self._node(n) is None:
            return None
        return self.zkc.brokers[n]

    def _ev_broker_sends_zk_registration(self, n: int, dry: bool) -> bool:
        """ZB-7: the broker's RegisterBrokerAndReelect runs (queued at start-up and by every
        new session): ``registerBroker`` reads KafkaController's BrokerInfo and sends the
        checked ephemeral create of /brokers/ids/<id>."""
        zb = self._zk_registering_broker(n)
        if zb is None or not zb.alive or zb.session_expired or not zb.register_pending or \
                zb.registering is not None:
            return False
        if not dry:
            self.zkc.broker_sends_zk_registration(n, self.now_ms)
        return True

    def _ev_zk_creates_broker_znode(self, n: int, dry: bool) -> bool:
        """ZB-4, ZB-5: ZooKeeper applies the create on its way; the broker epoch is the new
        znode's czxid (an error is only logged, ZB-8)."""
        zb = self._zk_registering_broker(n)
        if zb is None or not zb.alive or zb.registering is None:
            return False
        if not dry:
            self.zkc.zk_creates_broker_znode(n, self.now_ms)
        return True

    def _ev_operator_updates_listeners(self, n: int, dry: bool) -> bool:
        """ZB-9 (KIP-226): an operator alters broker ``n``'s ``advertised.listeners`` (a
        dynamic broker config, kept in /config/brokers/<id>; the broker's config manager
        delivering it is taken as part of the step).  The new config is installed, then
        ``DynamicListenerConfig.reconfigure`` sees the advertised endpoints changed and calls
        ``KafkaController.updateBrokerInfo(createBrokerInfo)``: the cached BrokerInfo, then a
        SetData of /brokers/ids/<id> (NONODE only logged).  It waits while a registration is
        on its way (unless Kafka's unserialized config thread is injected, ZB-10)."""
        zb = self._zk_registering_broker(n)
        if zb is None or not zb.alive or zb.broker_info_update_waits:
            return False
        if not dry:
            self.install_dynamic_listeners(n)
            info = self.create_broker_info(n, zb.zk_client, self.now_ms)
            self.zkc.operator_updates_listeners(n, info, self.now_ms)
        return True

    def _ev_broker_writes_entity_config(self, n: int, dry: bool) -> bool:
        """MG-6: the broker's pending entity-config multi reaches ZooKeeper: {CheckOp(s),
        SetData} (MG-7 for Kafka 3.8.0's check); the client gets its answer."""
        if self.kraft or not self.config.migration or self._node(n) is None:
            return False
        zb = self.zkc.brokers[n]
        if zb is None or not zb.alive or not zb.config_writes:
            return False
        if dry:
            return True
        name, code = self.zkc.broker_writes_entity_config(n, self.now_ms)
        if name in self.results and not self.results[name]:
            self._respond(name, ClientResult(code))
        return True

    def _ev_controller_claims_zk_leadership(self, c: int, dry: bool) -> bool:
        """MG-5: the KRaft controller's migration driver, past WAIT_FOR_BROKERS, claims
        ZooKeeper leadership (``tryRegisterKRaftControllerAsActiveController``).  A failed
        claim is only logged, as in Kafka: the step was taken."""
        if self.kraft or not self.config.migration or c not in self.zkc.kraft_controllers:
            return False
        if not self.zkc.kraft_controllers[c].claim_due:
            return False
        if not dry:
            self.zkc.controller_claims_zk_leadership(c, self.now_ms)
        return True

    def _ev_operator_bumps_ibp(self, n: int, dry: bool) -> bool:
        """The second rolling bounce (KIP-590 Compatibility, MG-1): an operator restarts a
        broker still on an IBP below 3.4-IV0 with inter.broker.protocol.version 3.4-IV0 or
        later, gracefully -- when it is not the controller and has nothing in flight: no
        entity-config write pending, its controller channel idle."""
        if self.kraft or not self.config.migration:
            return False
        node = self._node(n)
        if node is None or node.role != "broker" or not node.alive:
            return False
        zb = self.zkc.brokers[n]
        if (not node.listeners.migration_enabled or self.api_forwarding_enabled(n)
                or zb.is_active or zb.config_writes):
            return False
        ch = node.channel
        if ch is not None and (ch.queue or ch.inflight_request is not None):
            return False
        if not dry:
            self.bump_inter_broker_protocol(n)
        return True

    def _ev_broker_elects_controller(self, n: int, dry: bool) -> bool:
        if self.kraft or self._node(n) is None:
            return False
        zb = self.zkc.brokers[n]
        if zb is None or not zb.alive or zb.session_expired or zb.is_active or \
                self.zkc.controller() >= 0:
            return False
        if not dry:
            self.zkc.broker_elects_controller(n, self.now_ms)
        return True

    def _ev_controller_becomes_leader(self, c: int, dry: bool) -> bool:
        if not self.kraft:
            return False
        node = self._node(c)
        if node is None or node.role != "controller" or not node.alive or \
                self.quorum.leader_id == c:
            return False
        if dry:
            return True
        old = self.quorum.leader_id
        replies = node.qc.controller_becomes_leader(
            old_leader_alive=old >= 0 and self.nodes[old].alive)
        if node.cluster_control is not None:
            # BR-13: the sessions go with the leadership; the new leader's start afresh
            if old >= 0 and self.nodes[old].cluster_control is not None:
                self.nodes[old].cluster_control.deactivate()
            node.cluster_control.activate(self.now_ms, self.quorum)
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
            lifecycle = node.lifecycle
            if lifecycle is not None and lifecycle.registered and \
                    lifecycle.last_heartbeat_ms is not None and \
                    lifecycle.last_heartbeat_ms + lifecycle.heartbeat_interval_ms > self.now_ms:
                waiting = True          # its next heartbeat (BL-10)
        ccm = self._active_cluster_control()
        if ccm is not None and ccm.heartbeat_manager is not None and \
                ccm.heartbeat_manager.has_tracked_session():
            waiting = True              # the leader's fence timer counts from a contact (BH-9)
        if not waiting:
            return False
        if not dry:
            self.now_ms = self._window_end()
        return True

    def _ev_zk_expires_session(self, n: int, dry: bool) -> bool:
        if self.kraft or self._node(n) is None:
            return False
        zb = self.zkc.brokers[n]
        if zb is None or zb.session_expired or zb.session_id is None or \
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
        if m.api_key in LIFECYCLE_APIS:
            # the broker's communication in flight on this connection ends with it (BL-5)
            lifecycle = owner.lifecycle
            if owner.alive and owner.run == conn.src_run and lifecycle is not None and \
                    lifecycle.communication_in_flight and lifecycle.in_flight_to == conn.dst:
                self._closed_by_peer(conn)
                lifecycle.connection_lost(self.now_ms)
            return True
        if owner.alive and owner.run == conn.src_run and owner.channel is not None:
            flight = owner.channel.inflight_request
            if flight is not None and flight.correlation_id == m.correlation_id and \
                    flight.destination.node_id == conn.dst:
                self._closed_by_peer(conn)
                owner.channel.on_disconnect(self.now_ms)
        return True

    def _ev_node_crashes(self, n: int, dry: bool) -> bool:
        node = self._node(n)
        if node is None or not node.alive:
            return False
        if dry:
            return True
        node.alive = False
        # its connections close: what was sent to it, and the responses it sent on them
        self.network.drop_where(lambda m: m.dst == n or (m.src == n and m.kind == RESPONSE))
        for p, peer in sorted(self.nodes.items()):
            if p == n or not peer.alive:
                continue
            lifecycle = peer.lifecycle
            if lifecycle is not None and lifecycle.communication_in_flight and \
                    lifecycle.in_flight_to == n:
                lifecycle.connection_lost(self.now_ms)      # BL-5: its controller is gone
            if peer.channel is None:
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
                if node.cluster_control is not None:
                    # the sessions stay with the leadership (BR-13), their fenced states back
                    # at the committed registrations
                    node.cluster_control.revert_to_committed(self.quorum)
            # a crashed broker's session stays with the active controller until it expires
            # (BH-9); its late requests may still arrive
        else:
            self.zkc.node_crashes(n)
        return True

    def _ev_node_restarts(self, n: int, dry: bool) -> bool:
        node = self._node(n)
        if node is None or node.alive:
            return False
        if not self.kraft:
            zb = self.zkc.brokers[n]
            expired = zb is not None and zb.session_expired
            # the process holding /controller comes back only once its session has expired
            # (a KRaft controller's persistent /controller never goes: as in the model)
            if self.zkc.controller() == n and not expired:
                return False
            if self.config.zk_broker_registration and \
                    self.zkc.registered_brokers().get(n) is not None:
                # the old session's /brokers/ids/<id> is still there: the new process's
                # registerBroker fails with NodeExistsException (ZB-5) and it does not start
                return False
        if dry:
            return True
        node.alive = True
        node.run += 1
        self._bind_listeners(n)             # a new SocketServer: port-0 listeners rebind (EP-5)
        if self.kraft and node.role == "controller":
            # still the leader if it was (no election happened): the new process activates a
            # fresh ClusterControlManager, a session contacted now for every registered
            # broker (BR-13)
            if self.quorum.leader_id == n and node.cluster_control is not None:
                node.cluster_control.deactivate()
                node.cluster_control.activate(self.now_ms, self.quorum)
            self._new_registration_manager(n)
            if node.registration is not None:
                node.registration.on_metadata_update(self.quorum.image_delta(n),
                                                     self.quorum.image(n))
        elif self.kraft:
            node.known_controller = -1
            self._start_kraft_broker(n)     # a new BrokerLifecycleManager: a new incarnation
        else:
            self.zkc.node_restarts(n, self.now_ms)
            self._start_zk_broker(n)
        return True
