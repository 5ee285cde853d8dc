"""What the simulated cluster shows an observer: the result records and the read-only views
that ``properties/conformance.py`` lines up with the model's observation (nothing here changes
the cluster).

- ``client_results``: each admin client's final response, as the client received it;
- ``durable_writes``: the mutations made durable -- ZooKeeper writes (``KafkaZkClient``, with the
  controller epoch the writer held, Z-2) or committed KRaft records (``QuorumController``'s
  log, with the leader epoch);
- ``registrations``/``registered``: the ``RegisterControllerRecord``s in the committed log, with
  their endpoints, and whether a controller's ``ControllerRegistrationManager`` knows it is
  registered (R-1..R-22);
- ``broker_registrations``/``broker_lifecycle``: the ``RegisterBrokerRecord``s in the committed
  log (BR-5), with their endpoints, and what a KRaft broker's ``BrokerLifecycleManager`` holds:
  registered, and its broker epoch (BL-5, BL-8);
- ``ephemeral_port_run``/``endpoint_listener`` (from the wiring): which process run of a node
  bound a port for a port-0 listener, and which listener an endpoint belongs to -- enough to
  tell an endpoint as configured from one resolved by a given run (EP-1..EP-5);
- ``message_views``/``view``: the messages in flight decoded from their bytes (EnvelopeRequest /
  EnvelopeResponse, ControllerRegistrationRequest / Response, BrokerRegistrationRequest /
  Response, BrokerHeartbeatRequest / Response, a broker's own CreateTopicsRequest / Response);
- ``created_topics``/``auto_topic_state``: the committed TopicRecords of brokers' own
  CreateTopicsRequests, with the principal the controller created each as, and what a KRaft
  broker's AutoTopicCreationManager holds: its in-flight topics and its own requests on the
  controller channel (AT-3, AT-4);
- ``incarnations``: a node's process runs (KRaft controllers, and KRaft brokers that register:
  their incarnation ids);
- ``zk_broker_registrations``/``zk_broker_info``: with ZooKeeper broker registration, the
  /brokers/ids znodes decoded from their JSON (ZB-3, with the czxid, the broker epoch, ZB-4),
  and what a ZK broker holds: the version of its listeners configuration and the endpoints of
  its KafkaController's BrokerInfo (ZB-7, ZB-9); ``advertised_version`` (from the wiring) tells
  which version of a node's listeners configuration advertised an endpoint;
- in a ZK-to-KRaft migration (read through ``zkc`` and the wiring): ``zkc.process(n)``, each
  node's ZooKeeper side (a ZK broker's ``KafkaController`` and metadata cache, with its pending
  entity-config writes, MG-6; the KRaft controller's ZooKeeper leadership, MG-5), and
  ``api_forwarding_enabled(n)``, whether a broker's IBP lets it forward (F-4, MG-1).
"""
from __future__ import annotations

from dataclasses import dataclass

from impl.forwarding import first_error
from impl.protocol import parse_request, parse_response
from impl.auto_topics import TopicCreation
from impl.protocol.api_keys import (BROKER_HEARTBEAT, BROKER_REGISTRATION,
                                    CONTROLLER_REGISTRATION, CREATE_TOPICS, ENVELOPE)
from impl.sim import REQUEST, Message


@dataclass(frozen=True)
class ClientResult:
    """A final response as the admin client received it."""
    error_code: int
    envelope_error: int = 0             # the EnvelopeResponse error that decided it (0: none)
    # DescribeCluster: (node id, listener name, host, port) per node listed, the listener the
    # node's endpoint at host:port belongs to (None: none of its listeners')
    endpoints: frozenset = frozenset()
    response: bytes | None = None


@dataclass(frozen=True)
class DurableWrite:
    client: str                 # the client (client.id) whose mutation it is
    writer: int                 # the node that wrote it
    writer_epoch: int           # ZK: the controller epoch it held (-1: none); KRaft: leader epoch


def _endpoints(data) -> tuple:
    """A registration record's EndPoints as (listener name, host, port), in order."""
    return tuple((e["Name"], e["Host"], e["Port"]) for e in data.get("EndPoints", ()))


def _listeners(body) -> tuple:
    """A registration request's Listeners as (listener name, host, port), in order."""
    return tuple((e["Name"], e["Host"], e["Port"]) for e in body.get("Listeners", ()))


@dataclass(frozen=True)
class Registration:
    """A committed RegisterControllerRecord (R-15)."""
    controller_id: int
    incarnation_id: object
    endpoints: tuple = ()       # its EndPoints: (listener name, host, port)


@dataclass(frozen=True)
class BrokerRegistrationView:
    """A committed RegisterBrokerRecord (BR-5)."""
    broker_id: int
    incarnation_id: object
    broker_epoch: int
    endpoints: tuple = ()       # its EndPoints: (listener name, host, port)


@dataclass(frozen=True)
class ZkBrokerRegistrationView:
    """A /brokers/ids/<id> znode, decoded (``BrokerIdZNode.decode``)."""
    broker_id: int
    endpoints: tuple            # (listener name, host, port), in the znode's order
    broker_epoch: int           # its czxid (ZB-4)
    json_version: int


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
    api_key: int = -1           # EnvelopeRequest: the inner request's API key
    hops: int = 1
    sender_principal: str = ""  # requests: the sending connection's principal name
    error: int = 0              # responses: the top-level error code
    inner_error: int = 0        # EnvelopeResponse: the inner response's first error
    # registrations: the IncarnationId; broker heartbeats (which do not carry it): the one of
    # the broker process run whose connection carries them
    incarnation_id: object = None
    broker_id: int = -1         # BrokerRegistrationRequest: BrokerId
    broker_epoch: int = -1      # BrokerHeartbeatRequest, BrokerRegistrationResponse
    metadata_offset: int = -1   # BrokerHeartbeatRequest: CurrentMetadataOffset
    is_fenced: bool = True      # BrokerHeartbeatResponse: IsFenced
    # Controller/BrokerRegistrationRequest: its Listeners as (listener name, host, port)
    listeners: tuple = ()
    # a broker's own CreateTopicsRequest / its CreateTopicsResponse: the topics' names
    topics: tuple = ()


@dataclass(frozen=True)
class CreatedTopic:
    """A committed TopicRecord a controller wrote for a broker's own CreateTopicsRequest (the
    internal topic of a FindCoordinator, AT-4): the topic, the leader that wrote it with its
    epoch, and the principal the controller authorized the request as."""
    name: str
    writer: int
    writer_epoch: int
    principal: str


@dataclass(frozen=True)
class AutoTopicState:
    """What a KRaft broker's AutoTopicCreationManager holds (AT-3): its in-flight topics, and
    its own CreateTopicsRequests on the controller channel as (topics, in flight), the one in
    flight first, then the queue in order.  A broker that is down holds nothing."""
    inflight_topics: tuple = ()
    requests: tuple = ()


class ClusterObservation:
    """The observation layer of ``Cluster`` (a mixin over ``ClusterWiring``'s state)."""

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
                if rec.data["TopicId"] in self._created_as:
                    continue            # a broker's own topic: ``created_topics``
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
        """The client whose topic a record names: its configured topic (a Metadata request's),
        or ``topic-<client>``."""
        name = data.get("Name") if "TopicId" in data else data.get("ResourceName")
        if not isinstance(name, str):
            return None
        for c in self.clients.values():
            if c.topic and c.topic == name:
                return c.name
        if name.startswith("topic-"):
            return name[len("topic-"):]
        return None

    def created_topics(self) -> list:
        """The committed TopicRecords of brokers' own CreateTopicsRequests, in log order."""
        if not self.kraft:
            return []
        return [CreatedTopic(e.record.data["Name"], e.writer, e.leader_epoch,
                             self._created_as[e.record.data["TopicId"]])
                for e in self.quorum.log
                if e.record.name == "TopicRecord" and e.record.data["TopicId"] in self._created_as]

    def auto_topic_state(self, node_id: int) -> AutoTopicState:
        node = self.nodes[node_id]
        manager = node.auto_topics
        if not node.alive or manager is None:
            return AutoTopicState()
        ch = node.channel
        items = ([(ch.inflight, True)] if ch.inflight is not None else []) + \
            [(item, False) for item in ch.queue]
        own = tuple((tuple(item.tag.topics), in_flight) for item, in_flight in items
                    if isinstance(item.tag, TopicCreation) and not item.tag.for_metadata)
        return AutoTopicState(tuple(sorted(manager.inflight_topics)), own)

    def registrations(self) -> list:
        return [Registration(e.record.data["ControllerId"], e.record.data["IncarnationId"],
                             _endpoints(e.record.data))
                for e in self.quorum.log if e.record.name == "RegisterControllerRecord"]

    def registered(self, node_id: int) -> bool:
        node = self.nodes[node_id]
        return bool(node.alive and node.registration and node.registration.registered_in_log)

    def broker_registrations(self) -> list:
        """The RegisterBrokerRecords of the committed log, in log order."""
        return [BrokerRegistrationView(e.record.data["BrokerId"], e.record.data["IncarnationId"],
                                       e.record.data["BrokerEpoch"], _endpoints(e.record.data))
                for e in self.quorum.log if e.record.name == "RegisterBrokerRecord"]

    def broker_lifecycle(self, node_id: int) -> tuple:
        """(registered, broker epoch) of the node's live BrokerLifecycleManager; a process that
        is down, or a node without one, holds (False, -1)."""
        node = self.nodes[node_id]
        if not node.alive or node.lifecycle is None:
            return False, -1
        return node.lifecycle.registered, node.lifecycle.broker_epoch

    def zk_broker_registrations(self) -> list:
        """The /brokers/ids znodes (ZooKeeper broker registration), in broker id order."""
        if self.kraft:
            return []
        return [ZkBrokerRegistrationView(b, tuple((e.listener_name, e.host, e.port)
                                                  for e in info.broker.end_points),
                                         stat.czxid, info.version)
                for b, (info, stat) in sorted(self.zkc.registered_brokers().items())]

    def zk_broker_info(self, node_id: int) -> tuple:
        """(the version of the node's listeners configuration, the endpoints of its
        KafkaController's BrokerInfo as (listener name, host, port), None while it is down or
        holds none)."""
        node = self.nodes[node_id]
        zb = None if self.kraft else self.zkc.brokers[node_id]
        info = zb.broker_info if zb is not None and zb.alive else None
        endpoints = None if info is None else tuple(
            (e.listener_name, e.host, e.port) for e in info.broker.end_points)
        return node.listeners_version, endpoints

    def _run_incarnation(self, conn) -> object:
        """The incarnation of the process run that opened connection ``conn``."""
        if conn is None:
            return None
        runs = self.nodes[conn.src].incarnations
        return runs[conn.src_run] if 0 <= conn.src_run < len(runs) else None

    def message_views(self) -> list:
        """The views of the messages in flight.  A message's view is decoded once and kept
        while it is in flight: its bytes, its connection, the request a response answers and
        the process runs it names never change after it is sent."""
        seen = self._views
        kept: dict = {}
        out = []
        for m in self.network.in_flight():
            hit = seen.get(m.id)
            v = hit[1] if hit is not None and hit[0] is m else self.view(m)
            kept[m.id] = (m, v)
            out.append(v)
        self._views = kept
        return out

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
                                   api_key=inner_header["RequestApiKey"],
                                   sender_principal=principal)
            if m.api_key == CONTROLLER_REGISTRATION:
                return MessageView(m.id, "ControllerRegistrationRequest", m.src, m.dst,
                                   m.listener, sender_principal=principal,
                                   incarnation_id=body["IncarnationId"],
                                   listeners=_listeners(body))
            if m.api_key == BROKER_REGISTRATION:
                return MessageView(m.id, "BrokerRegistrationRequest", m.src, m.dst, m.listener,
                                   sender_principal=principal, broker_id=body["BrokerId"],
                                   incarnation_id=body["IncarnationId"],
                                   listeners=_listeners(body))
            if m.api_key == CREATE_TOPICS:
                return MessageView(m.id, "CreateTopicsRequest", m.src, m.dst, m.listener,
                                   sender_principal=principal,
                                   topics=tuple(t["Name"] for t in body["Topics"]))
            if m.api_key == BROKER_HEARTBEAT:
                return MessageView(m.id, "BrokerHeartbeatRequest", m.src, m.dst, m.listener,
                                   sender_principal=principal, broker_id=body["BrokerId"],
                                   incarnation_id=self._run_incarnation(conn),
                                   broker_epoch=body["BrokerEpoch"],
                                   metadata_offset=body["CurrentMetadataOffset"])
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
        if m.api_key == CREATE_TOPICS:
            return MessageView(m.id, "CreateTopicsResponse", m.src, m.dst, m.listener,
                               error=first_error(body),
                               topics=tuple(t["Name"] for t in body["Topics"]))
        if m.api_key == BROKER_REGISTRATION:
            return MessageView(m.id, "BrokerRegistrationResponse", m.src, m.dst, m.listener,
                               error=body["ErrorCode"], broker_epoch=body["BrokerEpoch"],
                               incarnation_id=self._run_incarnation(conn))
        if m.api_key == BROKER_HEARTBEAT:
            return MessageView(m.id, "BrokerHeartbeatResponse", m.src, m.dst, m.listener,
                               error=body["ErrorCode"], is_fenced=bool(body["IsFenced"]),
                               incarnation_id=self._run_incarnation(conn))
        return MessageView(m.id, f"response {m.api_key}", m.src, m.dst, m.listener)
