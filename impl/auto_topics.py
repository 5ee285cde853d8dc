"""Topics a request needs, on a KRaft broker (KIP-590 "Internal CreateTopicsRequest Routing";
docs/rules.md AT-1 to AT-5, read at Kafka 3.8.0).  Sans I/O, like the rest of ``impl``.

- ``AutoTopicCreationManager`` (``DefaultAutoTopicCreationManager``, AT-3 to AT-5): the set of
  topics in flight on this broker; a topic already in flight is answered
  UNKNOWN_TOPIC_OR_PARTITION and not sent again; the others go to the active controller on
  the broker's controller channel -- the one ``ForwardingManager`` uses (``BrokerServer``
  L228-238, L351-352) -- as one CreateTopicsRequest: for an internal topic a plain request
  sent as the broker itself, for a Metadata request's topic wrapped in an EnvelopeRequest
  with the client's principal (``ForwardingManager.buildEnvelopeRequest``, AT-4).  What the
  client is told is where KIP-590 and Kafka part: by default the broker waits for the
  controller's answer, as the KIP says, and maps it (a creation to LEADER_NOT_AVAILABLE, as
  the ZooKeeper path does, AT-6; a refusal to itself); ``errors_only_logged`` is Kafka 3.8.0,
  which answers UNKNOWN_TOPIC_OR_PARTITION at once and only logs the controller's answer
  (AutoTopicCreationManager.scala L171-187, L216-221; docs/findings/
  auto-create-errors-only-logged.md).
- ``find_coordinator`` (``KafkaApis.handleFindCoordinatorRequest`` and ``getCoordinator``,
  AT-1): DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED; the internal topic missing
  from the broker's metadata image: ask for its creation, fire-and-forget, and answer
  COORDINATOR_NOT_AVAILABLE.
- ``handle_metadata`` (``KafkaApis.handleTopicMetadataRequest`` and ``getTopicMetadata``,
  AT-2): DESCRIBE on the topic, then for a missing topic CREATE on the cluster or the topic
  (TOPIC_AUTHORIZATION_FAILED), then auto-creation.
- the create-topic policy (``create.topic.policy.class.name``, a ``CreateTopicPolicy`` the
  controller configures with its own properties, ``ControllerServer`` L209-210) and
  ``Topic.validate``, which the controller's ``ReplicationControlManager`` runs
  (``impl.kraft.QuorumController``).

Abstracted, as in the model: partitions and their leaders (a topic in the image is taken as a
found coordinator, this broker; a topic's metadata lists no partitions), the transaction
coordinator is implemented but no configuration uses it, and quotas are permissive.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from ipaddress import ip_address

from impl.channel import ControllerChannel, negotiate_version
from impl.context import ChannelRequest, RequestContext
from impl.protocol import (ProtocolError, build_envelope_request, encode_request,
                           parse_response)
from impl.protocol.api_keys import CREATE_TOPICS, ENVELOPE
from impl.protocol.errors import (COORDINATOR_NOT_AVAILABLE, ERROR_MESSAGES,
                                  GROUP_AUTHORIZATION_FAILED, INVALID_TOPIC_EXCEPTION,
                                  LEADER_NOT_AVAILABLE, LISTENER_NOT_FOUND, NETWORK_EXCEPTION,
                                  NONE,
                                  REQUEST_TIMED_OUT, TOPIC_ALREADY_EXISTS,
                                  TOPIC_AUTHORIZATION_FAILED,
                                  TRANSACTIONAL_ID_AUTHORIZATION_FAILED, UNKNOWN_SERVER_ERROR,
                                  UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION)
from impl.protocol.schema import ZERO_UUID

# Topic.java (clients, 3.8.0)
GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME})
MAX_NAME_LENGTH = 249
_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")

# CoordinatorType (FindCoordinator's KeyType)
GROUP, TRANSACTION = 0, 1

# Kafka's defaults of the properties the manager reads (KafkaConfig, GroupCoordinatorConfig,
# TransactionLogConfigs at 3.8.0)
REQUEST_TIMEOUT_MS = 30_000
OFFSETS_TOPIC_PARTITIONS = 50
OFFSETS_TOPIC_REPLICATION_FACTOR = 3
OFFSETS_TOPIC_SEGMENT_BYTES = 100 * 1024 * 1024
TRANSACTION_TOPIC_PARTITIONS = 50
TRANSACTION_TOPIC_REPLICATION_FACTOR = 3
TRANSACTION_TOPIC_SEGMENT_BYTES = 100 * 1024 * 1024
NUM_PARTITIONS = 1
DEFAULT_REPLICATION_FACTOR = 1


def invalid_topic(name: str) -> str | None:
    """``Topic.validate``'s message for a name Kafka refuses (INVALID_TOPIC_EXCEPTION), None
    for a valid one."""
    if name == "":
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    elif not set(name) <= _LEGAL:
        reason = (f"'{name}' contains one or more characters other than ASCII alphanumerics, "
                  f"'.', '_' and '-'")
    else:
        return None
    return f"Topic name is invalid: {reason}"


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS


# --------------------------------------------------------------------------------------------
# create.topic.policy.class.name (CreateTopicPolicy; ReplicationControlManager L845-854)

CREATE_TOPIC_POLICY_CLASS_NAME = "create.topic.policy.class.name"
# the one policy class this implementation ships: it refuses the topics its property names
REFUSED_TOPICS_POLICY = "kipcheck.policy.RefusedTopicsCreateTopicPolicy"
REFUSED_TOPICS_CONFIG = "kipcheck.create.topic.policy.refused.topics"


@dataclass(frozen=True)
class RequestMetadata:
    """``CreateTopicPolicy.RequestMetadata``: numPartitions and replicationFactor, or the
    replica assignments; configs without the broker's defaults."""
    topic: str
    num_partitions: int | None
    replication_factor: int | None
    replicas_assignments: Mapping | None
    configs: Mapping


class PolicyViolationError(Exception):
    """``PolicyViolationException``: ReplicationControlManager answers POLICY_VIOLATION with
    its message."""


class RefusedTopicsCreateTopicPolicy:
    """A ``CreateTopicPolicy`` (``Configurable``: ``getConfiguredInstance`` hands it the
    server's properties) that refuses the topics listed in ``REFUSED_TOPICS_CONFIG``."""

    def __init__(self) -> None:
        self.refused: frozenset = frozenset()

    def configure(self, configs: Mapping[str, str]) -> None:
        names = configs.get(REFUSED_TOPICS_CONFIG, "")
        self.refused = frozenset(n.strip() for n in names.split(",") if n.strip())

    def validate(self, metadata: RequestMetadata) -> None:
        if metadata.topic in self.refused:
            raise PolicyViolationError(f"Topic {metadata.topic} is not allowed by the "
                                       f"cluster's create topic policy.")


_POLICY_CLASSES = {REFUSED_TOPICS_POLICY: RefusedTopicsCreateTopicPolicy}


def create_topic_policy(properties: Mapping[str, str]):
    """``ControllerServer.startup``: ``Option(config.getConfiguredInstance(
    create.topic.policy.class.name, classOf[CreateTopicPolicy]))``: None when unset; an
    unknown class fails the start-up (ValueError, Kafka's ConfigException)."""
    name = (properties.get(CREATE_TOPIC_POLICY_CLASS_NAME) or "").strip()
    if not name:
        return None
    cls = _POLICY_CLASSES.get(name)
    if cls is None:
        raise ValueError(f"Invalid value {name} for configuration "
                         f"{CREATE_TOPIC_POLICY_CLASS_NAME}: Class {name} cannot be found")
    policy = cls()
    policy.configure(properties)
    return policy


# --------------------------------------------------------------------------------------------
# the manager


def _metadata_topic(name: str, code: int, topic_id=ZERO_UUID, partitions=()) -> dict:
    """A ``MetadataResponseTopic`` (without partitions unless given)."""
    return {"ErrorCode": code, "Name": name, "TopicId": topic_id,
            "IsInternal": is_internal(name), "Partitions": list(partitions)}


def partition_metadata(index: int, leader: int, listener_name: str,
                       alive_endpoints: Mapping[int, Mapping[str, tuple]]) -> dict:
    """``KRaftMetadataCache.getPartitionMetadata`` (L89-118) for Metadata v6 or later (L-28):
    the leader with its endpoint on the request's listener; a leader alive without that
    listener, LISTENER_NOT_FOUND and leader -1; a leader that is not alive (not among
    ``alive_endpoints``, broker id -> listener name -> (host, port)), LEADER_NOT_AVAILABLE.
    Replicas and ISR are the leader alone (one replica)."""
    endpoints = alive_endpoints.get(leader)
    if endpoints is None:
        error, leader_id = LEADER_NOT_AVAILABLE, -1
    elif listener_name not in endpoints:
        error, leader_id = LISTENER_NOT_FOUND, -1
    else:
        error, leader_id = NONE, leader
    return {"ErrorCode": error, "PartitionIndex": index, "LeaderId": leader_id,
            "LeaderEpoch": -1, "ReplicaNodes": [leader], "IsrNodes": [leader],
            "OfflineReplicas": []}


def _created_as_leader_not_available(code: int) -> int:
    """The topic's answer to a client that waited: created, or found existing (another
    request's creation), it has no leader yet -- LEADER_NOT_AVAILABLE, as ``createTopicsInZk``
    answers (L128-135, AT-6); a refusal is itself."""
    return LEADER_NOT_AVAILABLE if code in (NONE, TOPIC_ALREADY_EXISTS) else code


@dataclass(frozen=True)
class MetadataRequestContext:
    """What ``createTopics`` gets for a Metadata request (``Some(request.context)``): the
    request's context, and its header's correlation id (Kafka's RequestContext holds the
    header)."""
    context: RequestContext
    correlation_id: int


@dataclass(frozen=True)
class CreationAnswer:
    """What the broker tells a Metadata client that waited for the controller (the KIP's
    design): each sent topic's error, the EnvelopeResponse's error (0: none, or no Envelope
    answer), and whether the broker closes the client's connection instead (an Envelope
    answered UNSUPPORTED_VERSION, KAFKA-10674, as for a forwarded request)."""
    topic_errors: dict
    envelope_error: int = 0
    close_connection: bool = False


@dataclass
class TopicCreation:
    """The ``tag`` of a channel item the manager queued: the topics it asks for, and whether
    it travels in an Envelope for a Metadata request (False: the broker's own request)."""
    topics: tuple
    for_metadata: bool
    inner_header: dict | None = None
    answered: bool = False


@dataclass
class AutoTopicCreationManager:
    """``DefaultAutoTopicCreationManager`` of a KRaft broker (no ZooKeeper controller object:
    every creation goes to the controller, AT-3).  ``properties``: the broker's
    server.properties (``request.timeout.ms``, ``offsets.topic.*``,
    ``transaction.state.log.*``, ``num.partitions``, ``default.replication.factor``).
    ``local_api_versions``: this broker's own version ranges, to build a Metadata request's
    CreateTopics at the version the controller can take (AT-4).  ``errors_only_logged``:
    Kafka 3.8.0's completion handler; False: the broker waits for the answer (KIP-590)."""
    channel: ControllerChannel
    properties: Mapping[str, str] = field(default_factory=dict)
    local_api_versions: Mapping[int, tuple] = field(default_factory=dict)
    errors_only_logged: bool = False
    inflight_topics: set = field(default_factory=set)
    logged: list = field(default_factory=list)      # the handler's debug and warn lines

    def _int(self, key: str, default: int) -> int:
        return int(self.properties.get(key, default))

    def creatable_topic(self, name: str) -> dict:
        """``creatableTopic`` (L232-253): the internal topics get their coordinator's
        partitions, replication factor and topic configs, any other topic num.partitions and
        default.replication.factor."""
        if name == GROUP_METADATA_TOPIC_NAME:
            segment = self._int("offsets.topic.segment.bytes", OFFSETS_TOPIC_SEGMENT_BYTES)
            return {"Name": name,
                    "NumPartitions": self._int("offsets.topic.num.partitions",
                                               OFFSETS_TOPIC_PARTITIONS),
                    "ReplicationFactor": self._int("offsets.topic.replication.factor",
                                                   OFFSETS_TOPIC_REPLICATION_FACTOR),
                    "Assignments": [],
                    # GroupCoordinator.offsetsTopicConfigs (L95-102)
                    "Configs": [{"Name": "cleanup.policy", "Value": "compact"},
                                {"Name": "segment.bytes", "Value": str(segment)},
                                {"Name": "compression.type", "Value": "producer"}]}
        if name == TRANSACTION_STATE_TOPIC_NAME:
            segment = self._int("transaction.state.log.segment.bytes",
                                TRANSACTION_TOPIC_SEGMENT_BYTES)
            return {"Name": name,
                    "NumPartitions": self._int("transaction.state.log.num.partitions",
                                               TRANSACTION_TOPIC_PARTITIONS),
                    "ReplicationFactor": self._int("transaction.state.log.replication.factor",
                                                   TRANSACTION_TOPIC_REPLICATION_FACTOR),
                    "Assignments": [],
                    # TransactionLog.transactionTopicConfigs (min.insync.replicas left out)
                    "Configs": [{"Name": "cleanup.policy", "Value": "compact"},
                                {"Name": "segment.bytes", "Value": str(segment)},
                                {"Name": "unclean.leader.election.enable", "Value": "false"}]}
        return {"Name": name, "NumPartitions": self._int("num.partitions", NUM_PARTITIONS),
                "ReplicationFactor": self._int("default.replication.factor",
                                               DEFAULT_REPLICATION_FACTOR),
                "Assignments": [], "Configs": []}

    def create_topics(self, topics: Iterable[str], now_ms: int,
                      metadata: MetadataRequestContext | None = None,
                      on_answer: Callable[[CreationAnswer], None] | None = None) -> list[dict]:
        """``createTopics`` (L90-106) with ``filterCreatableTopics`` (L276-303): an invalid
        name is INVALID_TOPIC_EXCEPTION, a topic already in flight UNKNOWN_TOPIC_OR_PARTITION;
        the rest is marked in flight and sent (``sendCreateTopicRequest``, L158-225).
        Returns the ``MetadataResponseTopic``s answered now: the sent topics too
        (UNKNOWN_TOPIC_OR_PARTITION, L216-221) unless the broker waits for the controller's
        answer -- a Metadata request (``metadata``) when not ``errors_only_logged`` -- in
        which case ``on_answer`` gets it once, on completion or timeout."""
        answered, creatable = [], []
        for name in sorted(set(topics)):
            if invalid_topic(name) is not None:
                answered.append(_metadata_topic(name, INVALID_TOPIC_EXCEPTION))
            elif name in self.inflight_topics:
                answered.append(_metadata_topic(name, UNKNOWN_TOPIC_OR_PARTITION))
            else:
                self.inflight_topics.add(name)
                creatable.append(name)
        if not creatable:
            return answered
        waits = metadata is not None and not self.errors_only_logged and on_answer is not None
        self._send_create_topic_request(tuple(creatable), now_ms, metadata,
                                        on_answer if waits else None)
        if not waits:
            answered += [_metadata_topic(name, UNKNOWN_TOPIC_OR_PARTITION) for name in creatable]
        return answered

    def _create_topics_version(self) -> int:
        """L194-202: the controller's latest usable CreateTopics version once the channel
        knows the controller's ApiVersions, else this broker's latest."""
        own = self.local_api_versions.get(CREATE_TOPICS, (0, 7))
        theirs = self.channel.controller_api_versions
        if theirs is None:
            return own[1]
        version = negotiate_version(CREATE_TOPICS, own, theirs.get(CREATE_TOPICS))
        return own[1] if version is None else version

    def _send_create_topic_request(self, names: tuple, now_ms: int,
                                   metadata: MetadataRequestContext | None,
                                   on_answer: Callable[[CreationAnswer], None] | None) -> None:
        body = {"Topics": [self.creatable_topic(name) for name in names],
                "timeoutMs": self._int("request.timeout.ms", REQUEST_TIMEOUT_MS),
                "validateOnly": False}
        if metadata is None:
            tag = TopicCreation(names, False)
            item = ChannelRequest(api_key=CREATE_TOPICS, build=lambda version: body,
                                  on_response=lambda code, response, t: self._on_complete(
                                      tag, code, response, None),
                                  on_timeout=lambda t: self._on_timeout(tag, None),
                                  description=f"CreateTopics of {', '.join(names)}", tag=tag)
        else:
            ctx = metadata.context
            # L204-211: the client's id and correlation id, the client's principal and address
            header = {"RequestApiKey": CREATE_TOPICS,
                      "RequestApiVersion": self._create_topics_version(),
                      "CorrelationId": metadata.correlation_id, "ClientId": ctx.client_id}
            envelope = build_envelope_request(encode_request(header, body), ctx.principal,
                                              ip_address(ctx.client_address))
            tag = TopicCreation(names, True, header)
            item = ChannelRequest(api_key=ENVELOPE, build=lambda version: envelope,
                                  on_response=lambda code, response, t: self._on_complete(
                                      tag, code, response, on_answer),
                                  on_timeout=lambda t: self._on_timeout(tag, on_answer),
                                  description=f"CreateTopics of {', '.join(names)} for "
                                              f"{ctx.principal} in an EnvelopeRequest",
                                  tag=tag)
        self.channel.enqueue(item, now_ms)

    def _clear(self, tag: TopicCreation) -> None:
        """``clearInflightRequests`` (L227-230)."""
        self.inflight_topics.difference_update(tag.topics)

    def _on_timeout(self, tag: TopicCreation, on_answer) -> None:
        """``onTimeout`` (L172-175): the retry timeout of the channel (F-19)."""
        self._clear(tag)
        self.logged.append(f"DEBUG Auto topic creation timed out for {list(tag.topics)}.")
        self._answer(tag, on_answer, CreationAnswer({t: REQUEST_TIMED_OUT for t in tag.topics}))

    def _on_complete(self, tag: TopicCreation, code: int, response: dict | None,
                     on_answer) -> None:
        """``onComplete`` (L177-187).  Kafka 3.8.0 clears the in-flight mark and logs; the
        KIP's design also tells the waiting client: a creation LEADER_NOT_AVAILABLE (the topic
        has no leader yet, AT-6), a refusal its error; the Envelope's own errors as for a
        forwarded request (table 1.6: no response, or an Envelope error, is
        UNKNOWN_SERVER_ERROR; UNSUPPORTED_VERSION closes the client's connection)."""
        self._clear(tag)
        if response is None:
            what = ("authentication exception" if code != UNSUPPORTED_VERSION
                    else "invalid version exception")
            self.logged.append(f"WARN Auto topic creation failed for {list(tag.topics)} with "
                               f"{what}")
            self._answer(tag, on_answer,
                         CreationAnswer({t: UNKNOWN_SERVER_ERROR for t in tag.topics}))
            return
        self.logged.append(f"DEBUG Auto topic creation completed for {list(tag.topics)} with "
                           f"response {response}.")
        if on_answer is None:
            return
        if not tag.for_metadata:
            inner = response
        else:
            envelope_error = response.get("ErrorCode", NONE)
            if envelope_error == UNSUPPORTED_VERSION:
                self._answer(tag, on_answer, CreationAnswer(
                    {t: NETWORK_EXCEPTION for t in tag.topics}, envelope_error, True))
                return
            if envelope_error != NONE:
                self._answer(tag, on_answer, CreationAnswer(
                    {t: UNKNOWN_SERVER_ERROR for t in tag.topics}, envelope_error))
                return
            try:
                inner = parse_response(response.get("ResponseData"), tag.inner_header)
            except ProtocolError:
                self._answer(tag, on_answer,
                             CreationAnswer({t: UNKNOWN_SERVER_ERROR for t in tag.topics}))
                return
        errors = {t["Name"]: t.get("ErrorCode", NONE) for t in inner.get("Topics", ())}
        self._answer(tag, on_answer, CreationAnswer(
            {t: _created_as_leader_not_available(errors.get(t, UNKNOWN_SERVER_ERROR))
             for t in tag.topics}))

    @staticmethod
    def _answer(tag: TopicCreation, on_answer, answer: CreationAnswer) -> None:
        if on_answer is not None and not tag.answered:
            tag.answered = True
            on_answer(answer)


# --------------------------------------------------------------------------------------------
# the requests that need topics

Authorize = Callable[[object, str, str], bool]      # (principal, operation, resource type)


def get_coordinator(ctx: RequestContext, key_type: int, key: str, *, authorize: Authorize,
                    image_topics: Mapping, manager: AutoTopicCreationManager, now_ms: int,
                    coordinator: tuple | None) -> tuple[int, tuple]:
    """``KafkaApis.getCoordinator`` (L1668-1709, AT-1): (error, (node id, host, port)).
    DESCRIBE on the group (or the transactional id) first; then the internal topic in the
    broker's metadata image: absent, ``createTopics`` fire-and-forget (no metadata context:
    the broker's own request, no CREATE check of the client) and COORDINATOR_NOT_AVAILABLE;
    present, the coordinator -- its partition's leader in Kafka, here ``coordinator`` (the
    model has no partitions), COORDINATOR_NOT_AVAILABLE if there is none."""
    no_node = (-1, "", -1)
    if key_type == GROUP and not authorize(ctx.principal, "DESCRIBE", "GROUP"):
        return GROUP_AUTHORIZATION_FAILED, no_node
    if key_type == TRANSACTION and not authorize(ctx.principal, "DESCRIBE", "TRANSACTIONAL_ID"):
        return TRANSACTIONAL_ID_AUTHORIZATION_FAILED, no_node
    internal = GROUP_METADATA_TOPIC_NAME if key_type == GROUP else TRANSACTION_STATE_TOPIC_NAME
    if internal not in image_topics:
        manager.create_topics({internal}, now_ms)
        return COORDINATOR_NOT_AVAILABLE, no_node
    if coordinator is None:
        return COORDINATOR_NOT_AVAILABLE, no_node
    return NONE, coordinator


def find_coordinator(ctx: RequestContext, version: int, body: Mapping, **kwargs) -> dict:
    """``handleFindCoordinatorRequest`` (L1611-1666): v4+ one result per key, in
    ``Coordinators``; below v4 one key, and an error answered as ``getErrorResponse`` builds
    it (ErrorMessage the code's default message, NodeId -1, Host "", Port -1)."""
    key_type = body.get("KeyType", GROUP)
    if version >= 4:
        coordinators = []
        for key in body.get("CoordinatorKeys") or ():
            error, (node_id, host, port) = get_coordinator(ctx, key_type, key, **kwargs)
            coordinators.append({"Key": key, "NodeId": node_id, "Host": host, "Port": port,
                                 "ErrorCode": error, "ErrorMessage": None})
        return {"ThrottleTimeMs": 0, "Coordinators": coordinators}
    error, (node_id, host, port) = get_coordinator(ctx, key_type, body.get("Key", ""), **kwargs)
    return {"ThrottleTimeMs": 0, "ErrorCode": error, "ErrorMessage": ERROR_MESSAGES.get(error),
            "NodeId": node_id, "Host": host, "Port": port}


def handle_metadata(ctx: RequestContext, header: Mapping, body: Mapping, *,
                    authorize: Authorize, image_topics: Mapping, auto_create_enable: bool,
                    manager: AutoTopicCreationManager, now_ms: int, brokers: Iterable[tuple],
                    cluster_id: str, controller_id: int,
                    on_answer: Callable[[dict, CreationAnswer], None],
                    partitions_of: Callable[[str], list] = lambda name: []) -> dict | None:
    """``KafkaApis.handleTopicMetadataRequest`` (L1288-1414) and ``getTopicMetadata``
    (L1245-1286), by name (AT-2): DESCRIBE on each topic (else TOPIC_AUTHORIZATION_FAILED);
    for missing topics, with AllowAutoTopicCreation and auto.create.topics.enable, CREATE on
    the cluster or else on the topic (else TOPIC_AUTHORIZATION_FAILED); the existing topics'
    metadata; the missing ones auto-created with the request's context (or, without
    auto-creation, UNKNOWN_TOPIC_OR_PARTITION / INVALID_TOPIC_EXCEPTION).  Returns the
    response body, or None while the broker waits for the controller's answer about a topic
    (the KIP's design): ``on_answer(body, answer)`` then gets the whole response.  On KRaft the
    ControllerId is a random alive broker (L1398-1402): the caller's ``controller_id``.
    ``partitions_of(name)``: an existing topic's partitions (``partition_metadata``)."""
    requested = body.get("Topics")
    all_topics = requested is None
    names = sorted(image_topics) if all_topics else [t["Name"] for t in requested]
    results: dict[str, dict] = {}
    brokers = tuple(brokers)

    def response() -> dict:
        return {"ThrottleTimeMs": 0,
                "Brokers": [{"NodeId": b, "Host": h, "Port": p, "Rack": None}
                            for b, h, p in brokers],
                "ClusterId": cluster_id, "ControllerId": controller_id,
                "Topics": [results[n] for n in names if n in results]}

    describable = [n for n in names if authorize(ctx.principal, "DESCRIBE", "TOPIC")]
    for name in names:
        if name not in describable and not all_topics:
            results[name] = _metadata_topic(name, TOPIC_AUTHORIZATION_FAILED)
    allow = (auto_create_enable and bool(body.get("AllowAutoTopicCreation", True))
             and not all_topics)
    missing = [n for n in describable if n not in image_topics]
    if allow and missing and not authorize(ctx.principal, "CREATE", "CLUSTER"):
        for name in missing:
            if not authorize(ctx.principal, "CREATE", "TOPIC"):
                results[name] = _metadata_topic(name, TOPIC_AUTHORIZATION_FAILED)
        missing = [n for n in missing if n not in results]
    for name in describable:
        if name in image_topics:
            results[name] = _metadata_topic(name, NONE, image_topics[name], partitions_of(name))
    pending = set()
    if missing and allow:
        context = MetadataRequestContext(ctx, header["CorrelationId"])

        def answered(answer: CreationAnswer) -> None:
            for name, code in answer.topic_errors.items():
                results[name] = _metadata_topic(name, code)
            on_answer(response(), answer)
        now = manager.create_topics(missing, now_ms, context, answered)
        for topic in now:
            results[topic["Name"]] = topic
        pending = set(missing) - {t["Name"] for t in now}
    else:
        for name in missing:
            code = INVALID_TOPIC_EXCEPTION if invalid_topic(name) else UNKNOWN_TOPIC_OR_PARTITION
            results[name] = _metadata_topic(name, code)

    return None if pending else response()


__all__ = [
    "AutoTopicCreationManager", "CreationAnswer", "MetadataRequestContext", "TopicCreation",
    "RefusedTopicsCreateTopicPolicy", "RequestMetadata", "PolicyViolationError",
    "create_topic_policy", "find_coordinator", "get_coordinator", "handle_metadata",
    "partition_metadata",
    "invalid_topic", "is_internal", "GROUP", "TRANSACTION", "GROUP_METADATA_TOPIC_NAME",
    "TRANSACTION_STATE_TOPIC_NAME", "INTERNAL_TOPICS", "CREATE_TOPIC_POLICY_CLASS_NAME",
    "REFUSED_TOPICS_POLICY", "REFUSED_TOPICS_CONFIG",
]
