"""The state: one immutable, hashable record of tuples, frozensets and small records.

Only ints, bools, tuples, frozensets and NamedTuples of those appear, so ``hash(state)`` is
the same in every process and serves as the 64-bit fingerprint.  There is no ``None``
anywhere: CPython 3.11 hashes ``None`` by its address, which changes per process.
``NO_NODE`` (-1) stands for "no node" and ``NO_TIME`` for "no timer"; an empty tuple ``()``
for "no item".
Nodes, clients and listener names are indices into the ``ModelConfig``.
"""
from __future__ import annotations

from typing import NamedTuple

_tuple_new = tuple.__new__


def _one_pass(unknown_field):
    """A NamedTuple's ``_replace`` built in one pass (the standard one pops every field name
    from the changes, and the model's steps replace a field or two of a record many times per
    state); ``unknown_field(record, names)`` is the exception for names that are not fields."""
    def with_changes(obj, **changes):
        values = list(obj)
        index = obj._index
        try:
            for name in changes:
                values[index[name]] = changes[name]
        except KeyError:
            raise unknown_field(obj, [n for n in changes if n not in index]) from None
        return _tuple_new(type(obj), values)
    return with_changes


replace = _one_pass(lambda obj, bad: TypeError(f"{obj.__class__.__name__} has no field "
                                               f"{bad[0]!r}"))
replace.__doc__ = """``obj`` with ``changes`` to its fields, for the state records ``Node``,
    ``Zk``, ``Quorum`` and ``State`` (state updates are the explorer's hottest path); an unknown
    field raises TypeError, as ``dataclasses.replace`` does."""


NO_NODE = -1
NO_TIME = -1
NO_VERSIONS = -1

# channel item kinds (NodeToControllerChannelManager has one channel per purpose; a broker's
# auto-created topics share its forwarding channel, AT-4)
FORWARD, REGISTRATION, TOPIC_CREATION = 0, 1, 2
# message kinds on the network between nodes
ENVELOPE_REQUEST, ENVELOPE_RESPONSE, REGISTRATION_REQUEST, REGISTRATION_RESPONSE = 0, 1, 2, 3
BROKER_REGISTRATION_REQUEST, BROKER_REGISTRATION_RESPONSE = 4, 5
BROKER_HEARTBEAT_REQUEST, BROKER_HEARTBEAT_RESPONSE = 6, 7
CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE = 8, 9
MSG_KIND_NAMES = ("EnvelopeRequest", "EnvelopeResponse", "ControllerRegistrationRequest",
                  "ControllerRegistrationResponse", "BrokerRegistrationRequest",
                  "BrokerRegistrationResponse", "BrokerHeartbeatRequest",
                  "BrokerHeartbeatResponse", "CreateTopicsRequest", "CreateTopicsResponse")
# a broker's BrokerLifecycleManager talks to the active controller with these
LIFECYCLE_REQUESTS = (BROKER_REGISTRATION_REQUEST, BROKER_HEARTBEAT_REQUEST)
LIFECYCLE_RESPONSES = (BROKER_REGISTRATION_RESPONSE, BROKER_HEARTBEAT_RESPONSE)
# metadata-log record kinds
FEATURE_LEVEL, REGISTER_CONTROLLER, MUTATION_RECORD = 0, 1, 2
REGISTER_BROKER, BROKER_REGISTRATION_CHANGE = 3, 4
TOPIC_RECORD = 5
# BrokerRegistrationChangeRecord.Fenced (an int8): -1 unfenced, 0 no change, 1 fenced (BH-10)
UNFENCED, FENCED = -1, 1
# the endpoints a registration carries: the node's advertised listeners resolved by process run
# i >= 0 (port 0 became the port that run bound, a blank host the canonical host name, EP-1);
# STATIC_ENDPOINTS when they are configured in full, the same for every run; UNRESOLVED_ENDPOINTS
# as configured, with a blank host or port 0 that no client can connect to (EP-4, KAFKA-15458)
STATIC_ENDPOINTS, UNRESOLVED_ENDPOINTS = -1, -2
# how a reply reaches its requester once a write is done
REPLY_CLIENT, REPLY_ENVELOPE, REPLY_REGISTRATION = 0, 1, 2
REPLY_BROKER_REGISTRATION, REPLY_HEARTBEAT = 3, 4
REPLY_CREATE_TOPICS = 5


class ForwardItem(NamedTuple):
    """A client's request queued on a broker's forwarding channel (F-14, F-19)."""
    kind: int           # FORWARD
    client: int         # the client whose request it is
    created: int        # enqueue time: the retry timeout counts from here (F-17)
    requeued: bool      # was put back at the front after NOT_CONTROLLER or a disconnect
    hops: int = 1       # forwarding hops this request has made once sent (F-10)
    sent: int = -1      # in flight: when it was sent (the network timeout counts from here,
                        # F-16); NO_TIME while queued


class RegistrationItem(NamedTuple):
    """A controller's ControllerRegistrationRequest queued on its channel (R-4), in
    ForwardItem's positions (the state's fingerprint, and so every exploration, is the same
    whatever the kinds' field names)."""
    kind: int           # REGISTRATION
    incarnation_id: int  # the incarnation being registered
    created: int
    requeued: bool
    reserved: int = 1   # ForwardItem's hop count; a registration is never forwarded
    sent: int = -1


class TopicCreationItem(NamedTuple):
    """A broker's own CreateTopicsRequest for a topic a request needs (the internal topic of
    FindCoordinator), queued on its forwarding channel without an Envelope (AT-3, AT-4): the
    broker's AutoTopicCreationManager counts the topic in flight until the item completes or
    times out.  In ForwardItem's positions."""
    kind: int           # TOPIC_CREATION
    topic: int          # index into ModelConfig.topic_names
    created: int
    requeued: bool
    reserved: int = 1   # ForwardItem's hop count; never forwarded on
    sent: int = -1


# a channel item, whichever its kind; ``item(t)`` rebuilds one from its tuple
Item = ForwardItem | RegistrationItem | TopicCreationItem
ITEM_TYPES = {FORWARD: ForwardItem, REGISTRATION: RegistrationItem,
              TOPIC_CREATION: TopicCreationItem}


def item(fields) -> Item:
    """The channel item whose tuple is ``fields`` (its first field says its kind)."""
    kind = ITEM_TYPES.get(fields[0]) if len(fields) == len(ForwardItem._fields) else None
    if kind is None:
        raise ValueError(f"not a channel item: {tuple(fields)!r}")
    return kind._make(fields)


class Channel(NamedTuple):
    cached: int = NO_NODE       # the controller node the channel talks to (F-20)
    queue: tuple = ()           # tuple[Item], FIFO
    inflight: tuple = ()        # the Item in flight, or (): at most one (F-16)


# Messages between nodes.  Every kind has the same eight positions (kind, src, dst, listener,
# then four of its own), so that a step names the message it takes by its tuple of ints in every
# trace; each kind names its own fields.

class EnvelopeRequest(NamedTuple):
    """F-11..F-13: a broker forwards a client's request to the controller."""
    kind: int           # ENVELOPE_REQUEST
    src: int
    dst: int
    listener: int       # index of the listener name it arrives on
    client: int         # the client whose request it carries
    version: int        # the inner request's API version
    hops: int           # forwarding hops so far (F-10)
    sender_principal: int = 0  # index into PRINCIPALS of the connection's principal


class EnvelopeResponse(NamedTuple):
    """F-34: the controller's answer to an EnvelopeRequest."""
    kind: int           # ENVELOPE_RESPONSE
    src: int
    dst: int
    listener: int
    client: int         # the client whose request it answers
    error: int          # the EnvelopeResponse's own ErrorCode
    inner_error: int    # the inner response's error
    sender_principal: int = 0


class ControllerRegistrationRequest(NamedTuple):
    """R-4: a controller registers its incarnation with the active controller."""
    kind: int           # REGISTRATION_REQUEST
    src: int
    dst: int
    listener: int
    controller_id: int
    incarnation_id: int
    endpoints: int      # its Listeners: an incarnation, STATIC_ENDPOINTS or UNRESOLVED_ENDPOINTS
    sender_principal: int = 0


class ControllerRegistrationResponse(NamedTuple):
    """R-6, R-16: the active controller's answer to a ControllerRegistrationRequest."""
    kind: int           # REGISTRATION_RESPONSE
    src: int
    dst: int
    listener: int
    controller_id: int  # the controller it answers
    error: int
    incarnation_id: int  # the incarnation whose request it answers
    sender_principal: int = 0


class BrokerRegistrationRequest(NamedTuple):
    """BL-4: a KRaft broker registers its incarnation with the active controller."""
    kind: int           # BROKER_REGISTRATION_REQUEST
    src: int
    dst: int
    listener: int
    broker_id: int
    incarnation_id: int
    endpoints: int      # its Listeners, as in ControllerRegistrationRequest
    sender_principal: int = 0


class BrokerRegistrationResponse(NamedTuple):
    """BR-1: the answer, with the broker epoch the controller assigned (-1 on an error)."""
    kind: int           # BROKER_REGISTRATION_RESPONSE
    src: int
    dst: int
    listener: int
    incarnation_id: int  # the incarnation whose request it answers
    error: int
    broker_epoch: int
    sender_principal: int = 0


class BrokerHeartbeatRequest(NamedTuple):
    """BL-9: a registered broker's heartbeat, with the broker epoch it was given and the
    metadata offset it has replayed (WantFence is false: the model's brokers are ready to
    unfence as soon as they have caught up, BL-12)."""
    kind: int           # BROKER_HEARTBEAT_REQUEST
    src: int            # the broker: BrokerId
    dst: int
    listener: int
    incarnation_id: int  # the process run whose connection carries it (not on the wire)
    broker_epoch: int
    metadata_offset: int  # CurrentMetadataOffset: the records the broker has replayed
    sender_principal: int = 0


class BrokerHeartbeatResponse(NamedTuple):
    """BH-2, BH-5: the answer to a heartbeat (IsFenced is true on an error, its default)."""
    kind: int           # BROKER_HEARTBEAT_RESPONSE
    src: int
    dst: int
    listener: int
    incarnation_id: int  # the broker process run whose connection it answers
    error: int
    is_fenced: int      # 1: fenced, 0: not
    # ghost (no action reads it; P10 does, and conformance leaves it out): the broker epoch of
    # the registration the controller held for the broker when it answered, -1: none
    registered_epoch: int = -1


class CreateTopicsRequest(NamedTuple):
    """AT-4: a broker's own CreateTopicsRequest for a topic, sent as itself on the controller
    listener (no Envelope: FindCoordinator's internal topic)."""
    kind: int           # CREATE_TOPICS_REQUEST
    src: int
    dst: int
    listener: int
    topic: int          # index into ModelConfig.topic_names
    reserved5: int      # always 0
    reserved6: int      # always 0
    sender_principal: int = 0


class CreateTopicsResponse(NamedTuple):
    """The controller's answer: the topic's error (NONE once the TopicRecord is committed)."""
    kind: int           # CREATE_TOPICS_RESPONSE
    src: int
    dst: int
    listener: int
    topic: int
    error: int
    reserved6: int      # always 0
    sender_principal: int = 0


# a message between nodes, whichever its kind; ``message(t)`` rebuilds one from its tuple
Msg = EnvelopeRequest | EnvelopeResponse | ControllerRegistrationRequest | \
    ControllerRegistrationResponse | BrokerRegistrationRequest | BrokerRegistrationResponse | \
    BrokerHeartbeatRequest | BrokerHeartbeatResponse | CreateTopicsRequest | CreateTopicsResponse
MSG_TYPES = {ENVELOPE_REQUEST: EnvelopeRequest, ENVELOPE_RESPONSE: EnvelopeResponse,
             REGISTRATION_REQUEST: ControllerRegistrationRequest,
             REGISTRATION_RESPONSE: ControllerRegistrationResponse,
             BROKER_REGISTRATION_REQUEST: BrokerRegistrationRequest,
             BROKER_REGISTRATION_RESPONSE: BrokerRegistrationResponse,
             BROKER_HEARTBEAT_REQUEST: BrokerHeartbeatRequest,
             BROKER_HEARTBEAT_RESPONSE: BrokerHeartbeatResponse,
             CREATE_TOPICS_REQUEST: CreateTopicsRequest,
             CREATE_TOPICS_RESPONSE: CreateTopicsResponse}
MSG_ARITY = 8       # every kind's number of fields


def message(fields) -> Msg:
    """The message whose tuple is ``fields`` (its first field says its kind)."""
    kind = MSG_TYPES.get(fields[0]) if len(fields) == MSG_ARITY else None
    if kind is None:
        raise ValueError(f"not a message: {tuple(fields)!r}")
    return kind._make(fields)


class Reply(NamedTuple):
    """Who is waiting for a write, and how the answer travels."""
    how: int            # REPLY_CLIENT | REPLY_ENVELOPE | REPLY_REGISTRATION
    to: int             # client index | forwarding node | registering controller
    key: int            # client index | client index | incarnation
    listener: int = 0   # the listener the request arrived on (the reply goes back on it)
    hops: int = 1


class Write(NamedTuple):
    """A durable ZooKeeper write (config/ACL znode), with who made it and under which epoch."""
    req: int            # client index whose mutation this is
    writer: int         # node that issued the write
    writer_epoch: int   # the controller epoch the writer believed it held (-1: not a controller)
    zk_epoch: int       # /controller_epoch at the time of the write
    via_envelope: bool
    privileged: bool    # the envelope arrived on the privileged listener (F-24)
    sender_cluster_action: bool  # the envelope's sender had CLUSTER_ACTION (F-25)
    # ghost: the broker ZooKeeper records as having set /controller_epoch to its value at the
    # time of the write (Zk.epoch_holders[zk_epoch] then); NO_NODE: none
    zk_holder: int = NO_NODE
    # ghost: a broker's own write of a request Kafka's routing leaves to the broker (it does
    # not forward: an IBP below 3.4-IV0, F-4; IncrementalAlterConfigs under a ZK controller
    # during a migration, F-6), not a write of a request meant for the controller
    routed_locally: bool = False


# Metadata-log records (KRaft).  Every kind has the same ten positions (kind, two of its own,
# who appended it in which epoch, the ghosts P4/P9 read, then three more of its own), as channel
# items and messages do: a state's fingerprint depends on positions only.

class FeatureLevelRecord(NamedTuple):
    """The FeatureLevelRecord for metadata.version the log starts with (R-1)."""
    kind: int           # FEATURE_LEVEL
    level: int          # the metadata.version feature level
    reserved: int       # always 0
    epoch: int          # leader epoch that appended it
    writer: int         # the leader that appended it
    via_envelope: bool = False
    sender_cluster_action: bool = True
    reserved7: int = 0
    reserved8: int = 0
    reserved9: int = 0


class RegisterControllerRecord(NamedTuple):
    """R-15: a controller's registration, as the active controller appended it, with the
    endpoints its request carried."""
    kind: int           # REGISTER_CONTROLLER
    controller_id: int
    incarnation_id: int
    epoch: int
    writer: int
    via_envelope: bool = False
    sender_cluster_action: bool = True
    endpoints: int = STATIC_ENDPOINTS   # as in ControllerRegistrationRequest
    reserved8: int = 0
    reserved9: int = 0


class MutationRecord(NamedTuple):
    """The record of a client's mutation (CreateTopics, CreateAcls, ...)."""
    kind: int           # MUTATION_RECORD
    client: int         # the client whose mutation it is
    reserved: int       # always 0
    epoch: int
    writer: int
    via_envelope: bool = False      # it came in an EnvelopeRequest
    sender_cluster_action: bool = True  # ghost: that envelope's sender had CLUSTER_ACTION
    reserved7: int = 0
    reserved8: int = 0
    reserved9: int = 0


class RegisterBrokerRecord(NamedTuple):
    """BR-5: a KRaft broker's registration, as the active controller appended it: a new
    incarnation is fenced with a new broker epoch (the record's offset, BR-3); a re-registration
    of the registered incarnation keeps its epoch and its fenced state (BR-5, KAFKA-16952)."""
    kind: int           # REGISTER_BROKER
    broker_id: int
    incarnation_id: int
    epoch: int
    writer: int
    via_envelope: bool = False
    sender_cluster_action: bool = True  # ghost: the registering connection had CLUSTER_ACTION
    broker_epoch: int = -1
    fenced: int = FENCED                # FENCED or 0 (RegisterBrokerRecord.Fenced, a bool)
    endpoints: int = STATIC_ENDPOINTS   # as in BrokerRegistrationRequest


class BrokerRegistrationChangeRecord(NamedTuple):
    """BH-10: the active controller fences (session expired, BH-9) or unfences (a caught-up
    heartbeat, BH-7) a registered broker; it names the registration by its broker epoch."""
    kind: int           # BROKER_REGISTRATION_CHANGE
    broker_id: int
    broker_epoch: int
    epoch: int
    writer: int
    via_envelope: bool = False
    sender_cluster_action: bool = True
    fenced: int = 0                     # FENCED, UNFENCED or 0 (no change)
    # ghost (no action reads it; P10 does): a fence's ticks since the active controller last
    # heard from the broker, as its heartbeat manager recorded it, counted up to
    # session_timeout + 1 (beyond, every value says the same: expired); 0 for an unfence
    silence: int = 0
    reserved9: int = 0


class TopicRecord(NamedTuple):
    """A topic the active controller created for a broker's own CreateTopicsRequest (the
    internal topic of FindCoordinator, AT-4).  A client's CreateTopics, forwarded or its
    Metadata's auto-creation, is a MutationRecord."""
    kind: int           # TOPIC_RECORD
    topic: int          # index into ModelConfig.topic_names
    reserved: int       # always 0
    epoch: int
    writer: int
    via_envelope: bool = False
    sender_cluster_action: bool = True
    principal: int = 0  # the principal it was created as: the requesting broker's
    reserved8: int = 0
    reserved9: int = 0


# a metadata-log record, whichever its kind; ``record(t)`` rebuilds one from its tuple
Record = FeatureLevelRecord | RegisterControllerRecord | MutationRecord | RegisterBrokerRecord | \
    BrokerRegistrationChangeRecord | TopicRecord
RECORD_TYPES = {FEATURE_LEVEL: FeatureLevelRecord, REGISTER_CONTROLLER: RegisterControllerRecord,
                MUTATION_RECORD: MutationRecord, REGISTER_BROKER: RegisterBrokerRecord,
                BROKER_REGISTRATION_CHANGE: BrokerRegistrationChangeRecord,
                TOPIC_RECORD: TopicRecord}


def record(fields) -> Record:
    """The record whose tuple is ``fields`` (its first field says its kind)."""
    kind = RECORD_TYPES.get(fields[0]) if len(fields) == len(MutationRecord._fields) else None
    if kind is None:
        raise ValueError(f"not a metadata-log record: {tuple(fields)!r}")
    return kind._make(fields)


class Event(NamedTuple):
    """A queued ZK-controller event: a mutation to write, and who waits for it."""
    req: int
    reply: Reply
    via_envelope: bool
    privileged: bool
    sender_cluster_action: bool
    acked: bool         # already answered (only under ack-before-commit)


class Response(NamedTuple):
    """A final response as a client received it."""
    code: int
    envelope_error: int = 0     # the envelope-level error that decided it (0: none)
    # DescribeCluster: (node, listener index, endpoints) triples, endpoints as a registration
    # carries them (STATIC_ENDPOINTS for a node whose endpoints come from configuration)
    endpoints: frozenset = frozenset()
    retried: bool = False       # the forward was retried after NOT_CONTROLLER or disconnect


class Client(NamedTuple):
    sent: bool = False
    forwarded: bool = False     # its broker forwarded the request (it has a deadline, F-17)
    sent_at: int = NO_TIME      # when it sent a forwarded request (the deadline counts from here)
    version: int = 0            # the API version it used (the broker's advertised max, F-35)
    responses: tuple = ()       # tuple[Response]; L1: never more than one


class Node(NamedTuple):
    alive: bool = True
    incarnation: int = 0        # rank of this process run; a restart draws a fresh one
    # ZooKeeper client and ZK controller (Z-1..Z-3)
    session_expired: bool = False   # ZK expired the session; the node does not know yet
    zk_active: bool = False         # believes it is the active ZK controller
    zk_epoch: int = -1              # controller epoch won at election
    zk_epoch_version: int = -1      # /controller_epoch zkVersion taken at election
    events: tuple = ()              # tuple[Event]: the controller event queue
    # metadata cache: which node it believes is the controller (ZK watch / KRaft leader)
    known_controller: int = NO_NODE
    channel: Channel = Channel()
    ctrl_versions: int = NO_VERSIONS  # api_max of the controller it last connected to (F-35)
    not_controller_from: frozenset = frozenset()  # ghost (P2): told NOT_CONTROLLER by these
    replayed: int = 0               # metadata-log offset replayed (KRaft)
    # ControllerRegistrationManager (R-3..R-10)
    send_requested: bool = False    # a maybeSendControllerRegistration event is queued
    pending_rpc: bool = False
    registered_in_log: bool = False
    retry_at: int = NO_TIME         # backoff timer after a failed registration RPC
    # BrokerLifecycleManager of a KRaft broker (BL-1..BL-11)
    broker_epoch: int = -1          # _brokerEpoch: from the last successful registration
    lifecycle_registered: bool = False  # registered: False means the next communication is a
                                        # BrokerRegistrationRequest
    lifecycle_to: int = NO_NODE     # the controller its one request in flight went to (BL-9)
    heartbeat_at: int = NO_TIME     # when it last sent a heartbeat: one per tick
    # the active controller's BrokerHeartbeatManager entry for this broker (BH-8): its last
    # contact, NO_TIME when it tracks no session.  One manager is active at a time and a new
    # leader starts a fresh one (BR-13), so the entry lives in the broker's slot.
    hb_contact: int = NO_TIME
    # ZooKeeper broker registration (ZB-1..ZB-10): the version of the node's advertised
    # listeners configuration (0 at first start, +1 per dynamic update; kept in ZooKeeper, so
    # a restart keeps it), the version KafkaController's cached BrokerInfo holds, a
    # RegisterBrokerAndReelect event queued, and the BrokerInfo version of its registerBroker
    # request on its way to ZooKeeper (NO_VERSIONS: none)
    listeners_version: int = 0
    broker_info: int = 0
    zk_register_pending: bool = False
    zk_registering: int = NO_VERSIONS
    # ZK-to-KRaft migration: the broker still runs an IBP below 3.4-IV0 (it has not had the
    # bounce into migration mode, MG-1); and the entity-config writes it has started itself
    # (MG-6): (client, /controller_epoch zkVersion when it read /controller), in order
    legacy_ibp: bool = False
    config_writes: tuple = ()


class Zk(NamedTuple):
    controller: int = NO_NODE       # ephemeral /controller owner
    epoch: int = 0                  # /controller_epoch data
    epoch_version: int = 0          # /controller_epoch zkVersion
    writes: tuple = ()              # tuple[Write], in order
    # ghost (no action reads it; P1 does): epoch_holders[e] is the broker whose multi-op last
    # set /controller_epoch to e, as ZooKeeper's transaction log records it (NO_NODE: none)
    epoch_holders: tuple = ()
    # per node: the listeners version its ephemeral /brokers/ids/N carries, NO_VERSIONS while
    # there is none (zk_broker_registration only; () otherwise)
    broker_ids: tuple = ()


class Quorum(NamedTuple):
    leader: int = NO_NODE
    epoch: int = 0
    log: tuple = ()                 # committed tuple[Record]
    uncommitted: tuple = ()         # tuple[(Record, Reply | ())] appended by the leader


class State(NamedTuple):
    now: int
    nodes: tuple                    # tuple[Node]
    clients: tuple                  # tuple[Client]
    network: frozenset              # frozenset[Msg] in flight (any may be delivered next)
    zk: Zk                          # ZK mode (an empty Zk() in KRaft mode)
    quorum: Quorum                  # KRaft mode (an empty Quorum() in ZK mode)
    # fault budget left (bounds from ModelConfig)
    elections_left: int
    expiries_left: int
    crashes_left: int
    restarts_left: int
    drops_left: int
    updates_left: int = 0           # dynamic listener updates (ZooKeeper broker registration)


_NODES = State._fields.index("nodes")


def with_nodes(s: State, nodes: tuple) -> State:
    """``replace(s, nodes=nodes)``, built without keyword arguments: most steps end by
    replacing a node, so this is the explorer's most frequent update."""
    values = list(s)
    values[_NODES] = nodes
    return _tuple_new(type(s), values)


# every record's ``_replace``: ValueError for an unknown name, as NamedTuple's own
_replace = _one_pass(lambda obj, bad: ValueError(f"Got unexpected field names: {bad!r}"))


# The records are NamedTuples: built by one tuple allocation, hashed and compared in C (a state
# hashes as the nested tuple of its values, so its fingerprint is that of its field values)
for _record in (Node, Zk, Quorum, State, Channel, Reply, Write, Event, Response, Client,
                *ITEM_TYPES.values(), *MSG_TYPES.values(), *RECORD_TYPES.values()):
    _record._index = {name: i for i, name in enumerate(_record._fields)}
    _record._replace = _replace
