"""The KRaft metadata quorum and the active controller's write path (``QuorumController``).

What the model abstracts in one record (``model.state.Quorum``) is here with Kafka's detail:

- ``RaftQuorum``: the Raft leader id and leader epoch, the committed metadata log, the leader's
  uncommitted appends (lost when a new leader is elected: they were never committed, so Raft
  truncates them away), ``commit()``, the one-step election ``elect(controller_id)`` (epoch + 1),
  and per-node replay cursors with the ``MetadataImage`` each node builds by replaying the log
  (features, controller registrations by id -- last writer wins, R-18 --, topics, configs, ACLs).
- ``QuorumController``: one controller process.  As the active controller it turns a mutation
  (CreateTopics, IncrementalAlterConfigs, CreateAcls) or a ``ControllerRegistrationRequest``
  into metadata records and answers only once they are committed (R-17); an inactive one answers
  NOT_CONTROLLER (R-13).  The broker registrations and heartbeats of
  ``impl.broker_registration`` write through the same quorum: their RegisterBrokerRecords and
  BrokerRegistrationChangeRecords replay into the image (BR-10, BR-12), and their waiting
  requests are answered on commit or failed on a leader change like the others (BR-2, BH-5).
  A broker's own CreateTopicsRequest (the internal topic a FindCoordinator needs, AT-4) takes
  ``controller_handles_create_topics``: ``ControllerApis.createTopics``' authorization, then
  ``ReplicationControlManager.createTopics``' name check, TOPIC_ALREADY_EXISTS and the
  ``create.topic.policy.class.name`` policy (POLICY_VIOLATION, AT-5); the policy runs on a
  client's CreateTopics too.  A committed write replays as one batch (``atomicOf``: a
  TopicRecord with its ConfigRecords).

Records are ``MetadataRecord``: the record type's name as in Kafka's metadata schemas
(``FeatureLevelRecord``, ``RegisterControllerRecord``, ``TopicRecord``, ``ConfigRecord``,
``AccessControlEntryRecord``) and its fields keyed by the schemas' names.  A
RegisterControllerRecord is encoded with ``impl.protocol``'s copy of Kafka's schema when it is
generated, and its endpoints checked as ``ListenerInfo`` checks them, so a value Kafka could not
serialize (port 0 or outside uint16, a null or blank host) fails the registration the way Kafka's
does (R-14, R-5, EP-4).

The steps mirror ``model/actions.py`` one to one: ``QuorumController.controller_accepts_mutation``
(its KRaft branch), ``controller_handles_registration``, ``controller_commits_records``,
``controller_becomes_leader``, and ``RaftQuorum.node_replays_record``.  Sans I/O: replies are
returned as ``ControllerReply`` values, the caller sends them.
"""
from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Iterable, Mapping

from impl.auto_topics import PolicyViolationError, RequestMetadata, invalid_topic
from impl.context import RequestContext
from impl.protocol import ProtocolError, encode
from impl.protocol.api_keys import (BROKER_HEARTBEAT, BROKER_REGISTRATION,
                                    CONTROLLER_REGISTRATION, CREATE_ACLS, CREATE_TOPICS,
                                    INCREMENTAL_ALTER_CONFIGS)
from impl.protocol.errors import (CLUSTER_AUTHORIZATION_FAILED, ERROR_MESSAGES,
                                  INVALID_REQUEST, INVALID_TOPIC_EXCEPTION, NONE, NOT_CONTROLLER,
                                  POLICY_VIOLATION, TOPIC_ALREADY_EXISTS,
                                  TOPIC_AUTHORIZATION_FAILED, UNKNOWN_SERVER_ERROR,
                                  UNSUPPORTED_VERSION)
from impl.protocol.principal import KafkaPrincipal
from impl.protocol.security_protocol import SECURITY_PROTOCOL_IDS

# --------------------------------------------------------------------------------------------
# Kafka's numbers

# R-16: registration error responses carry the codes' Errors.java default messages, not the
# exception text; these are the codes ``controller_handles_registration`` answers with.
DEFAULT_MESSAGES = {code: ERROR_MESSAGES[code]
                    for code in (UNKNOWN_SERVER_ERROR, CLUSTER_AUTHORIZATION_FAILED,
                                 UNSUPPORTED_VERSION, NOT_CONTROLLER)}

MUTATION_APIS = (CREATE_TOPICS, INCREMENTAL_ALTER_CONFIGS, CREATE_ACLS)

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"                  # KRaftVersion.FEATURE_NAME (KIP-853)
MINIMUM_KRAFT_VERSION = 1        # 3.0-IV1
MV_3_7_IV0 = 15                  # controller registration, controller DescribeCluster (R-1, D-1)
# 3.9-IV0, the highest production level at apache/kafka commit 1eb7644 (docs/rules.md)
LATEST_PRODUCTION_MV = 21

NO_LEADER = -1
TOPIC_RESOURCE = 2               # ConfigResource.Type.TOPIC

# AclOperation codes, and what ``AclAuthorizer``/``StandardAuthorizer`` treat as implied:
# an ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE; ALTER_CONFIGS implies
# DESCRIBE_CONFIGS; ALL implies everything.
ACL_OPERATION_CODES = {"ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7,
                       "DESCRIBE": 8, "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10,
                       "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12}
_IMPLIED_BY = {"DESCRIBE": {"READ", "WRITE", "DELETE", "ALTER"},
               "DESCRIBE_CONFIGS": {"ALTER_CONFIGS"}}
# AclEntry.supportedOperations(CLUSTER): the bits DescribeCluster can report (D-3.3).
CLUSTER_OPERATIONS = ("CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
                      "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE")


class ClusterAuthorizer:
    """ACLs on the CLUSTER resource: which principal (``"User:alice"``) may do which operation.
    Enough for the checks of this module and ``describe_cluster`` (CLUSTER_ACTION for
    registration R-12, ALTER and DESCRIBE for DescribeCluster D-1/D-3)."""

    def __init__(self, grants: Mapping[str, Iterable[str]]):
        self.grants = {principal: frozenset(ops) for principal, ops in grants.items()}

    def authorize(self, principal: KafkaPrincipal, operation: str) -> bool:
        allowed = self.grants.get(str(principal), frozenset())
        return ("ALL" in allowed or operation in allowed
                or bool(allowed & _IMPLIED_BY.get(operation, set())))

    def authorized_operations(self, principal: KafkaPrincipal) -> int:
        """``Utils.to32BitField`` of the cluster operations the principal may do (D-3.3)."""
        bits = 0
        for op in CLUSTER_OPERATIONS:
            if self.authorize(principal, op):
                bits |= 1 << ACL_OPERATION_CODES[op]
        return bits


# --------------------------------------------------------------------------------------------
# records


@dataclass(frozen=True)
class MetadataRecord:
    """One metadata record: its type name (Kafka's ``MetadataRecordType``) and fields."""
    name: str
    data: Mapping[str, Any]
    version: int = 0


def feature_level_record(feature: str, level: int) -> MetadataRecord:
    return MetadataRecord("FeatureLevelRecord", {"Name": feature, "FeatureLevel": level})


JAVA_BLANK = "".join(map(chr, range(33)))           # what String.trim() removes


def unserializable_endpoint(port: int, host: str | None) -> str | None:
    """``ListenerInfo.checkPortIsSerializable`` then ``checkHostIsSerializable`` (metadata
    module, apache/kafka 3.7-3.9 and trunk; R-5, EP-4): Kafka's message for an endpoint a
    registration cannot carry -- port 0, out of range, a null or blank host --, None if it
    can."""
    if port == 0:
        return "Cannot serialize ephemeral port 0 in ListenerInfo."
    if port < 0:
        return f"Cannot serialize negative port number {port} in ListenerInfo."
    if port > 65535:
        return f"Cannot serialize invalid port number {port} in ListenerInfo."
    if host is None:
        return "Cannot serialize null host in ListenerInfo."
    if not host.strip(JAVA_BLANK):
        return "Cannot serialize empty host in ListenerInfo."
    return None


def register_controller_record(request: Mapping[str, Any],
                               copy_zk_migration_ready: bool = False,
                               check_endpoints: bool = True) -> MetadataRecord:
    """R-14: ``ClusterControlManager.registerController`` copies ControllerId, IncarnationId,
    the listeners as EndPoints (a map keyed by name: a repeated name keeps its first position
    and the last value, R-15) and the features; ZkMigrationReady is copied in 3.7-3.9 and
    ``false`` on trunk.  An unknown security protocol id or an endpoint Kafka cannot serialize
    (``ListenerInfo.toControllerRegistrationRecord``: port 0 or out of range, a null or blank
    host, EP-4) is a RuntimeException, i.e. UNKNOWN_SERVER_ERROR (raised here as
    ``ProtocolError(-1)``).  ``check_endpoints`` False copies the endpoints as they come, as
    Kafka did before KAFKA-15458 (the registers-unresolved-endpoints design)."""
    endpoints: dict[str, dict] = {}
    for listener in request.get("Listeners", ()):
        if listener["SecurityProtocol"] not in SECURITY_PROTOCOL_IDS.values():
            raise ProtocolError(UNKNOWN_SERVER_ERROR,
                                f"Unknown security protocol id {listener['SecurityProtocol']}")
        endpoints[listener["Name"]] = {"Name": listener["Name"], "Host": listener["Host"],
                                       "Port": listener["Port"],
                                       "SecurityProtocol": listener["SecurityProtocol"]}
    if check_endpoints:
        for endpoint in endpoints.values():
            problem = unserializable_endpoint(endpoint["Port"], endpoint["Host"])
            if problem is not None:
                raise ProtocolError(UNKNOWN_SERVER_ERROR, problem)
    features: dict[str, dict] = {}
    for feature in request.get("Features", ()):
        features[feature["Name"]] = dict(feature)
    data = {"ControllerId": request["ControllerId"], "IncarnationId": request["IncarnationId"],
            "ZkMigrationReady": bool(request.get("ZkMigrationReady")) and copy_zk_migration_ready,
            "EndPoints": list(endpoints.values()), "Features": list(features.values())}
    encode("RegisterControllerRecord", data, 0)     # raises ProtocolError(-1) if unserializable
    return MetadataRecord("RegisterControllerRecord", data)


def _uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def mutation_records(api_key: int, body: Mapping[str, Any],
                     rng: random.Random) -> tuple[tuple[MetadataRecord, ...], dict]:
    """The records a mutation becomes, and what its success response needs (topic ids).

    CreateTopics: a TopicRecord with a fresh topic id and a ConfigRecord per config; replica
    placement (PartitionRecords) is out of scope.  IncrementalAlterConfigs: a ConfigRecord per
    SET/APPEND/SUBTRACT (Value) or DELETE (Value null).  CreateAcls: an AccessControlEntryRecord
    per creation with a fresh ACL id.  ``validateOnly`` requests produce no records."""
    records: list[MetadataRecord] = []
    extra: dict = {}
    if api_key == CREATE_TOPICS:
        topic_ids = {}
        for topic in body.get("Topics", ()):
            topic_ids[topic["Name"]] = _uuid(rng)
            if body.get("validateOnly"):
                continue
            records.append(MetadataRecord("TopicRecord", {"Name": topic["Name"],
                                                          "TopicId": topic_ids[topic["Name"]]}))
            for cfg in topic.get("Configs", ()):
                records.append(MetadataRecord("ConfigRecord", {
                    "ResourceType": TOPIC_RESOURCE, "ResourceName": topic["Name"],
                    "Name": cfg["Name"], "Value": cfg["Value"]}))
        extra["topic_ids"] = topic_ids
    elif api_key == INCREMENTAL_ALTER_CONFIGS:
        if not body.get("ValidateOnly"):
            for resource in body.get("Resources", ()):
                for cfg in resource.get("Configs", ()):
                    value = None if cfg["ConfigOperation"] == 1 else cfg["Value"]   # 1 = DELETE
                    records.append(MetadataRecord("ConfigRecord", {
                        "ResourceType": resource["ResourceType"],
                        "ResourceName": resource["ResourceName"],
                        "Name": cfg["Name"], "Value": value}))
    elif api_key == CREATE_ACLS:
        for creation in body.get("Creations", ()):
            records.append(MetadataRecord("AccessControlEntryRecord", {
                "Id": _uuid(rng), "ResourceType": creation["ResourceType"],
                "ResourceName": creation["ResourceName"],
                "PatternType": creation.get("ResourcePatternType", 3),
                "Principal": creation["Principal"], "Host": creation["Host"],
                "Operation": creation["Operation"], "PermissionType": creation["PermissionType"]}))
    else:
        raise ValueError(f"api key {api_key} is not a mutation this controller handles")
    return tuple(records), extra


def mutation_response(api_key: int, body: Mapping[str, Any], error_code: int,
                      error_message: str | None = None, extra: Mapping | None = None) -> dict:
    """The response body of a mutation with one error code for every item (the controller's
    answer is all-or-nothing for one write event)."""
    message = error_message if error_code else None
    if api_key == CREATE_TOPICS:
        ids = (extra or {}).get("topic_ids", {})
        # the topics ReplicationControlManager refused while creating others (AT-5)
        refused = (extra or {}).get("topic_errors", {})
        topics = []
        for topic in body.get("Topics", ()):
            code, text = refused.get(topic["Name"], (error_code, message))
            item = {"Name": topic["Name"], "ErrorCode": code, "ErrorMessage": text}
            if not code and topic["Name"] in ids:
                item["TopicId"] = ids[topic["Name"]]
            topics.append(item)
        return {"ThrottleTimeMs": 0, "Topics": topics}
    if api_key == INCREMENTAL_ALTER_CONFIGS:
        return {"ThrottleTimeMs": 0, "Responses": [
            {"ErrorCode": error_code, "ErrorMessage": message,
             "ResourceType": r["ResourceType"], "ResourceName": r["ResourceName"]}
            for r in body.get("Resources", ())]}
    if api_key == CREATE_ACLS:
        return {"ThrottleTimeMs": 0, "Results": [
            {"ErrorCode": error_code, "ErrorMessage": message}
            for _ in body.get("Creations", ())]}
    if api_key == CONTROLLER_REGISTRATION:
        # the default message of the code, null on success.
        return {"ThrottleTimeMs": 0, "ErrorCode": error_code,
                "ErrorMessage": DEFAULT_MESSAGES.get(error_code) if error_code else None}
    raise ValueError(f"no response builder for api key {api_key}")


# --------------------------------------------------------------------------------------------
# the log, the image, replay


@dataclass(frozen=True)
class LogEntry:
    offset: int
    leader_epoch: int           # the epoch of the leader that appended it
    writer: int                 # that leader's node id (-1: the bootstrap checkpoint)
    record: MetadataRecord


@dataclass
class MetadataImage:
    """What replaying the log up to a cursor gives (``MetadataImage``)."""
    features: dict = field(default_factory=dict)          # name -> level
    controllers: dict = field(default_factory=dict)       # id -> RegisterControllerRecord data
    topics: dict = field(default_factory=dict)            # name -> topic id
    configs: dict = field(default_factory=dict)           # (type, name) -> {config: value}
    acls: dict = field(default_factory=dict)              # acl id -> record data
    # broker id -> its RegisterBrokerRecord data, Fenced as the change records left it
    brokers: dict = field(default_factory=dict)

    @property
    def metadata_version(self) -> int:
        return self.features.get(METADATA_VERSION, MINIMUM_KRAFT_VERSION)


@dataclass(frozen=True)
class MetadataDelta:
    """What one replay step changed, as ``MetadataDelta`` tells the publishers (R-8): whether the
    features changed, and which controller ids' registrations changed."""
    records: tuple
    features_changed: bool
    changed_controllers: frozenset

    @classmethod
    def of(cls, records: Iterable[MetadataRecord]) -> MetadataDelta:
        records = tuple(records)
        return cls(records, any(r.name == "FeatureLevelRecord" for r in records),
                   frozenset(r.data["ControllerId"] for r in records
                             if r.name == "RegisterControllerRecord"))


def apply_record(image: MetadataImage, record: MetadataRecord) -> None:
    """Replay one record into an image; every kind is last writer wins."""
    data = record.data
    if record.name == "FeatureLevelRecord":
        image.features[data["Name"]] = data["FeatureLevel"]
    elif record.name == "RegisterControllerRecord":
        # put-overwrite by controller id, no incarnation check.
        image.controllers[data["ControllerId"]] = data
    elif record.name == "TopicRecord":
        image.topics[data["Name"]] = data["TopicId"]
    elif record.name == "ConfigRecord":
        configs = image.configs.setdefault((data["ResourceType"], data["ResourceName"]), {})
        if data["Value"] is None:
            configs.pop(data["Name"], None)
        else:
            configs[data["Name"]] = data["Value"]
    elif record.name == "AccessControlEntryRecord":
        image.acls[data["Id"]] = data
    elif record.name == "RegisterBrokerRecord":
        # BR-10: a registration replaces the broker id's, whatever its epoch or incarnation.
        image.brokers[data["BrokerId"]] = dict(data)
    elif record.name == "BrokerRegistrationChangeRecord":
        _apply_registration_change(image, data)
    else:
        raise ValueError(f"unknown metadata record type {record.name}")


def _apply_registration_change(image: MetadataImage, data: Mapping[str, Any]) -> None:
    """BR-12 (``ClusterControlManager.replayRegistrationChange``): the change names the
    registration by its broker epoch and only moves its fenced state (-1 unfenced, 0 no change,
    1 fenced); a change for another epoch, or an unknown value, is a fatal replay error in
    Kafka (a RuntimeException / IllegalStateException), raised here as ValueError."""
    current = image.brokers.get(data["BrokerId"])
    if current is None or current["BrokerEpoch"] != data["BrokerEpoch"]:
        raise ValueError(f"Unable to replay {dict(data)}: no broker registration with that "
                         f"epoch found")
    fenced = data.get("Fenced", 0)
    if fenced not in (-1, 0, 1):
        raise ValueError(f"Unable to replay BrokerRegistrationChangeRecord: unknown value for "
                         f"fenced field: {fenced}")
    if fenced:
        image.brokers[data["BrokerId"]] = dict(current, Fenced=fenced == 1)


@dataclass
class PendingWrite:
    """Records the leader appended and who waits for their commit (R-17)."""
    entries: tuple              # tuple[LogEntry]
    leader: int
    waiter: object = None       # the caller's reference; None: nobody waits
    api_key: int = -1
    request: Mapping = field(default_factory=dict)
    extra: Mapping = field(default_factory=dict)


class NotControllerError(Exception):
    """``NotControllerException`` with Kafka's message (R-13)."""

    def __init__(self, leader_id: int):
        super().__init__(f"The active controller appears to be node {leader_id}."
                         if leader_id != NO_LEADER else "No controller appears to be active.")
        self.code = NOT_CONTROLLER


class RaftQuorum:
    """The Raft quorum as the model abstracts it: a leader and epoch, a committed log, the
    leader's uncommitted appends, and a replay cursor and image per node."""

    def __init__(self, voters: Iterable[int], metadata_version: int = MV_3_7_IV0,
                 leader_id: int = NO_LEADER, bootstrap_records: Iterable[MetadataRecord] = ()):
        self.voters = tuple(voters)
        self.leader_id = leader_id
        self.leader_epoch = 0 if leader_id == NO_LEADER else 1
        # The bootstrap checkpoint: metadata.version first (model: initial_state).
        self.log: list[LogEntry] = []
        for record in (feature_level_record(METADATA_VERSION, metadata_version),
                       *bootstrap_records):
            self.log.append(LogEntry(len(self.log), self.leader_epoch, leader_id, record))
        self.uncommitted: list[PendingWrite] = []
        self._cursors: dict[int, int] = {}
        self._images: dict[int, MetadataImage] = {}
        # the offsets where a committed batch ends: each bootstrap record is one, and so is
        # each write (``ControllerResult.atomicOf``: a CreateTopics's TopicRecord with its
        # ConfigRecords), which replay applies as a whole
        self._batch_ends: set[int] = set(range(1, len(self.log) + 1))

    # -- the leader's writes -----------------------------------------------------------------

    def next_offset(self) -> int:
        return len(self.log) + sum(len(w.entries) for w in self.uncommitted)

    def append(self, writer: int, records: Iterable[MetadataRecord], **pending) -> PendingWrite:
        """The leader appends records (not yet committed).  Only the leader of the current
        epoch may append: anybody else is a NotControllerError (R-13)."""
        if writer != self.leader_id:
            raise NotControllerError(self.leader_id)
        offset = self.next_offset()
        entries = tuple(LogEntry(offset + i, self.leader_epoch, writer, r)
                        for i, r in enumerate(records))
        write = PendingWrite(entries, writer, **pending)
        self.uncommitted.append(write)
        return write

    def commit(self) -> list[PendingWrite]:
        """Everything the leader appended becomes committed, in order."""
        done, self.uncommitted = self.uncommitted, []
        for write in done:
            self.log.extend(write.entries)
            if write.entries:
                self._batch_ends.add(len(self.log))
        return done

    def elect(self, controller_id: int) -> list[PendingWrite]:
        """One-step election: ``controller_id`` leads with epoch + 1.  The old leader's
        uncommitted appends are lost (Raft truncates them); they are returned so the old leader
        can fail their waiters."""
        if controller_id not in self.voters:
            raise ValueError(f"{controller_id} is not a voter")
        lost, self.uncommitted = self.uncommitted, []
        self.leader_id, self.leader_epoch = controller_id, self.leader_epoch + 1
        return lost

    def drop_uncommitted(self) -> list[PendingWrite]:
        """The leader's process died: what it had not committed is gone with it."""
        lost, self.uncommitted = self.uncommitted, []
        return lost

    # -- replay --------------------------------------------------------------------------------

    def replayed_offset(self, node_id: int) -> int:
        return self._cursors.get(node_id, 0)

    def image(self, node_id: int) -> MetadataImage:
        return self._images.setdefault(node_id, MetadataImage())

    def node_replays_record(self, node_id: int) -> MetadataDelta | None:
        """``node_replays_record``: the node replays the next committed batch -- one record,
        or the records of one atomic write (a topic and its configs) -- each node at its own
        pace; None when it has replayed everything."""
        cursor = self.replayed_offset(node_id)
        if cursor >= len(self.log):
            return None
        end = min((e for e in self._batch_ends if e > cursor), default=len(self.log))
        records = [e.record for e in self.log[cursor:end]]
        for record in records:
            apply_record(self.image(node_id), record)
        self._cursors[node_id] = end
        return MetadataDelta.of(records)

    def catch_up(self, node_id: int, upto: int | None = None) -> MetadataDelta:
        """Replay everything committed (or up to ``upto``) at once, as one delta."""
        upto = len(self.log) if upto is None else upto
        cursor = self.replayed_offset(node_id)
        records = [e.record for e in self.log[cursor:upto]]
        for record in records:
            apply_record(self.image(node_id), record)
        self._cursors[node_id] = max(cursor, upto)
        return MetadataDelta.of(records)

    def image_delta(self, node_id: int) -> MetadataDelta:
        """The delta from the empty image to what the node has replayed: what a restarted
        process's publishers see first when it loads its log from disk."""
        return MetadataDelta.of(e.record for e in self.log[:self.replayed_offset(node_id)])

    def metadata_version(self, node_id: int | None = None) -> int:
        """metadata.version of the committed log, or of the prefix ``node_id`` replayed."""
        upto = len(self.log) if node_id is None else self.replayed_offset(node_id)
        level = MINIMUM_KRAFT_VERSION
        for entry in self.log[:upto]:
            if entry.record.name == "FeatureLevelRecord" and \
                    entry.record.data["Name"] == METADATA_VERSION:
                level = entry.record.data["FeatureLevel"]
        return level

    def registrations(self) -> dict[int, Mapping]:
        """Controller registrations of the whole committed log, last writer wins (R-18)."""
        out: dict[int, Mapping] = {}
        for entry in self.log:
            if entry.record.name == "RegisterControllerRecord":
                out[entry.record.data["ControllerId"]] = entry.record.data
        return out


# --------------------------------------------------------------------------------------------
# the controller


@dataclass(frozen=True)
class ControllerReply:
    """A response a controller sends: to ``waiter`` (the caller's reference), from ``source``."""
    waiter: object
    source: int
    api_key: int
    error_code: int
    body: dict


@dataclass(frozen=True)
class CommitResult:
    replies: tuple              # tuple[ControllerReply]: the waiting requests, answered now
    leader_deltas: tuple        # tuple[MetadataDelta]: what the leader's publishers see


class QuorumController:
    """One KRaft controller process (``QuorumController`` + ``ControllerApis``)."""

    def __init__(self, node_id: int, quorum: RaftQuorum, authorizer: ClusterAuthorizer,
                 rng: random.Random, copy_zk_migration_ready: bool = False,
                 check_controller_endpoints: bool = True, create_topic_policy=None,
                 internal_topics_bypass_policy: bool = False,
                 not_controller_wrapped_as_unknown: bool = False):
        self.node_id = node_id
        self.quorum = quorum
        self.authorizer = authorizer
        self.rng = rng
        self.copy_zk_migration_ready = copy_zk_migration_ready
        # False: a controller's endpoints are copied into its RegisterControllerRecord
        # unchecked, as before KAFKA-15458 (R-14; the registers-unresolved-endpoints design)
        self.check_controller_endpoints = check_controller_endpoints
        # create.topic.policy.class.name, configured (impl.auto_topics.create_topic_policy);
        # None: no policy
        self.create_topic_policy = create_topic_policy
        # True: a CreateTopicsRequest a broker sends as itself (not in an Envelope: the
        # internal topic a FindCoordinator needs) skips the policy -- the hole KIP-590 names
        # in ZooKeeper brokers' direct creation (the internal-topics-bypass-policy design)
        self.internal_topics_bypass_policy = internal_topics_bypass_policy
        # True: Kafka before KAFKA-14167's fix -- the NotControllerException of a client's
        # write reaches ControllerApis wrapped in a CompletionException, which
        # Errors.forException maps to UNKNOWN_SERVER_ERROR (the not-controller-wrapped-as-unknown
        # design)
        self.not_controller_wrapped_as_unknown = not_controller_wrapped_as_unknown

    @property
    def is_active(self) -> bool:
        return self.quorum.leader_id == self.node_id

    def _not_controller(self, waiter, api_key: int, body: Mapping) -> ControllerReply:
        message = str(NotControllerError(self.quorum.leader_id))
        return ControllerReply(waiter, self.node_id, api_key, NOT_CONTROLLER,
                               mutation_response(api_key, body, NOT_CONTROLLER, message))

    def controller_accepts_mutation(self, api_key: int, body: Mapping,
                                    waiter: object = None) -> ControllerReply | None:
        """The KRaft branch of ``_controller_accepts_mutation``: the request was authorized
        (as the client's principal) by the caller.  Not the active controller: the write event
        fails with NotControllerException now (R-13, F-28).  A CreateTopics runs
        create.topic.policy.class.name (AT-5: a Metadata request's auto-creation, forwarded,
        comes here too): a refused topic is POLICY_VIOLATION.  Otherwise the records are
        appended and the reply waits for the commit (R-17): None is returned."""
        if not self.is_active:
            if self.not_controller_wrapped_as_unknown:
                return ControllerReply(waiter, self.node_id, api_key, UNKNOWN_SERVER_ERROR,
                                       mutation_response(api_key, body, UNKNOWN_SERVER_ERROR))
            return self._not_controller(waiter, api_key, body)
        refused = self._policy_refusals(body) if api_key == CREATE_TOPICS else {}
        return self._write_topics_or_answer(api_key, body, refused, waiter, client_write=True)

    def _write_topics_or_answer(self, api_key: int, body: Mapping, refused: Mapping,
                                waiter, client_write: bool = False) -> ControllerReply | None:
        """Append the records of everything ``refused`` does not name and answer on commit;
        when every topic is refused there is nothing to write and the refusals are answered
        now.  (Kafka completes such a read-only write event once the records already appended
        commit, if any are pending, QuorumController L784-809; the model answers at once, and
        so does this implementation.)"""
        if api_key == CREATE_TOPICS and refused:
            topics = [t for t in body.get("Topics", ()) if t["Name"] not in refused]
            if not topics:
                first = next(iter(refused.values()))
                return ControllerReply(waiter, self.node_id, api_key, first[0],
                                       mutation_response(api_key, body, first[0], first[1],
                                                         extra={"topic_errors": refused}))
            records, extra = mutation_records(api_key, dict(body, Topics=topics), self.rng)
            extra = dict(extra, topic_errors=dict(refused))
        else:
            records, extra = mutation_records(api_key, body, self.rng)
        if client_write and self.not_controller_wrapped_as_unknown:
            extra = dict(extra, client_write=True)      # its loss is answered as KAFKA-14167
        self.quorum.append(self.node_id, records, waiter=waiter, api_key=api_key,
                           request=body, extra=extra)
        return None

    def _policy_refusals(self, body: Mapping) -> dict:
        """``ReplicationControlManager.maybeCheckCreateTopicPolicy`` (L845-854) for each topic:
        name -> (POLICY_VIOLATION, the policy's message), for the topics the configured
        create.topic.policy.class.name refuses.  The policy sees the request's partitions and
        replication factor (-1: the defaults), and its configs (AT-5)."""
        policy = self.create_topic_policy
        if policy is None:
            return {}
        refused = {}
        for topic in body.get("Topics", ()):
            configs = {c["Name"]: c["Value"] for c in topic.get("Configs", ())}
            metadata = RequestMetadata(topic["Name"], topic.get("NumPartitions"),
                                       topic.get("ReplicationFactor"), None, configs)
            try:
                policy.validate(metadata)
            except PolicyViolationError as e:
                refused[topic["Name"]] = (POLICY_VIOLATION, str(e))
        return refused

    def topic_names(self) -> set:
        """The topics in the active controller's in-memory state: the committed log and its
        own uncommitted records (``topicsByName``, a timeline map of the latest state)."""
        names = {e.record.data["Name"] for e in self.quorum.log
                 if e.record.name == "TopicRecord"}
        for write in self.quorum.uncommitted:
            names |= {e.record.data["Name"] for e in write.entries
                      if e.record.name == "TopicRecord"}
        return names

    def controller_handles_create_topics(self, body: Mapping, waiter: object = None, *,
                                         has_cluster_auth: bool,
                                         creatable: Callable[[Iterable[str]], set],
                                         forwarded: bool = False) -> ControllerReply | None:
        """A CreateTopicsRequest at this controller: ``ControllerApis.handleCreateTopics`` and
        ``createTopics`` (ControllerApis.scala L358-444 at 3.8.0), ``QuorumController
        .createTopics`` (L1969-1978) and ``ReplicationControlManager.createTopics``
        (L600-681), checks in Kafka's order:

        - a name given twice is INVALID_REQUEST; CREATE on the cluster, or else on each topic,
          for the connection's principal (``has_cluster_auth``, ``creatable``), else
          TOPIC_AUTHORIZATION_FAILED "Authorization failed.";
        - nothing left to create: answered now, active controller or not; otherwise an
          inactive controller's write event fails with NOT_CONTROLLER for the whole request
          (R-13; the broker's channel retries, F-21.4);
        - per topic: ``Topic.validate`` (INVALID_TOPIC_EXCEPTION), a topic in the active
          controller's state (committed or its own uncommitted records) TOPIC_ALREADY_EXISTS,
          then create.topic.policy.class.name (POLICY_VIOLATION) -- skipped for a request
          not in an Envelope under ``internal_topics_bypass_policy``;
        - the TopicRecord (and a ConfigRecord per config) of each topic left, answered once
          committed (R-17); the refusals ride in the same response.

        The AutoTopicCreationManager's own request for an internal topic comes here (AT-4,
        AT-5); a client's CreateTopics, forwarded or direct, takes
        ``controller_accepts_mutation``, which the model keeps generic (no
        TOPIC_ALREADY_EXISTS: applying a forwarded request twice is forwarding's
        at-least-once)."""
        names = [t["Name"] for t in body.get("Topics", ())]
        duplicates = {n for n in names if names.count(n) > 1}
        unique = [n for n in names if n not in duplicates]
        authorized = set(unique) if has_cluster_auth else set(creatable(unique))
        refused: dict = {n: (INVALID_REQUEST, "Duplicate topic name.") for n in duplicates}
        refused.update({n: (TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
                        for n in unique if n not in authorized})
        effective = [t for t in body.get("Topics", ()) if t["Name"] in authorized]
        if not effective:
            return self._answer_topics(body, refused, waiter)
        if not self.is_active:
            return self._not_controller(waiter, CREATE_TOPICS, body)
        existing = self.topic_names()
        check_policy = forwarded or not self.internal_topics_bypass_policy
        policy_refusals = self._policy_refusals({"Topics": effective}) if check_policy else {}
        for topic in effective:
            name = topic["Name"]
            problem = invalid_topic(name)
            if problem is not None:
                refused[name] = (INVALID_TOPIC_EXCEPTION, problem)
            elif name in existing:
                refused[name] = (TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            elif name in policy_refusals:
                refused[name] = policy_refusals[name]
        return self._write_topics_or_answer(CREATE_TOPICS, body, refused, waiter)

    def _answer_topics(self, body: Mapping, refused: Mapping, waiter) -> ControllerReply:
        first = next(iter(refused.values()), (NONE, None))
        return ControllerReply(waiter, self.node_id, CREATE_TOPICS, first[0],
                               mutation_response(CREATE_TOPICS, body, first[0], first[1],
                                                 extra={"topic_errors": dict(refused)}))

    def _write_metadata_version(self) -> int:
        """metadata.version as the active controller's FeatureControlManager sees it: the
        committed log plus its own uncommitted FeatureLevelRecords."""
        level = self.quorum.metadata_version()
        for write in self.quorum.uncommitted:
            for entry in write.entries:
                if entry.record.name == "FeatureLevelRecord" and \
                        entry.record.data["Name"] == METADATA_VERSION:
                    level = entry.record.data["FeatureLevel"]
        return level

    def controller_handles_registration(self, context: RequestContext, body: Mapping,
                                        waiter: object = None) -> ControllerReply | None:
        """``ControllerApis.handleControllerRegistration`` then
        ``QuorumController.registerController``, checks in Kafka's order:

        - R-12: CLUSTER_ACTION on CLUSTER, else CLUSTER_AUTHORIZATION_FAILED (31);
        - R-13: the active controller, else NOT_CONTROLLER (41);
        - R-14: metadata.version >= 3.7-IV0, else UNSUPPORTED_VERSION (35); an unknown security
          protocol or unserializable endpoint (port 0, a blank host: EP-4) is
          UNKNOWN_SERVER_ERROR (-1);
        - then exactly one RegisterControllerRecord carrying the request's Listeners as its
          EndPoints, no incarnation or voter check (R-15), answered after the commit (R-17).
          Error messages are the codes' defaults (R-16)."""
        def error(code: int) -> ControllerReply:
            return ControllerReply(waiter, self.node_id, CONTROLLER_REGISTRATION, code,
                                   mutation_response(CONTROLLER_REGISTRATION, body, code))
        if not self.authorizer.authorize(context.principal, "CLUSTER_ACTION"):
            return error(CLUSTER_AUTHORIZATION_FAILED)
        if not self.is_active:
            return error(NOT_CONTROLLER)
        if self._write_metadata_version() < MV_3_7_IV0:
            return error(UNSUPPORTED_VERSION)
        try:
            record = register_controller_record(body, self.copy_zk_migration_ready,
                                                self.check_controller_endpoints)
        except ProtocolError:
            return error(UNKNOWN_SERVER_ERROR)
        self.quorum.append(self.node_id, (record,), waiter=waiter,
                           api_key=CONTROLLER_REGISTRATION, request=body)
        return None

    def controller_commits_records(self) -> CommitResult | None:
        """The leader commits what it appended and answers the waiting requests now (R-17).
        Not enabled (None) unless this node leads and has something uncommitted.  The leader
        applied the records when it generated them, so its replay cursor moves along if it was
        caught up; Kafka also publishes them to its own publishers (its registration manager),
        returned as ``leader_deltas``."""
        q = self.quorum
        if not self.is_active or not q.uncommitted:
            return None
        caught_up = q.replayed_offset(self.node_id) == len(q.log)
        done = q.commit()
        deltas = []
        if caught_up:
            for write in done:
                if write.entries:
                    deltas.append(q.catch_up(self.node_id, write.entries[-1].offset + 1))
        replies = tuple(_write_reply(w, self.node_id, NONE) for w in done
                        if w.waiter is not None)
        return CommitResult(replies, tuple(deltas))

    def controller_becomes_leader(self, old_leader_alive: bool = True
                                  ) -> list[ControllerReply] | None:
        """``controller_becomes_leader``: this controller leads with epoch + 1 (None if it
        already leads).  The old leader's uncommitted records are lost; if its process is alive
        it fails their waiting requests with NOT_CONTROLLER."""
        q = self.quorum
        if self.is_active:
            return None
        old = q.leader_id
        lost = q.elect(self.node_id)
        if old == NO_LEADER or not old_leader_alive:
            return []
        message = str(NotControllerError(self.node_id))
        replies = []
        for w in lost:
            if w.waiter is None:
                continue
            if w.extra.get("client_write"):
                # KAFKA-14167: the old leader's write event fails with the wrapped exception
                replies.append(_write_reply(w, old, UNKNOWN_SERVER_ERROR))
                continue
            replies.append(_write_reply(w, old, NOT_CONTROLLER, message))
        return replies


def _write_reply(write: PendingWrite, source: int, error_code: int,
                 message: str | None = None) -> ControllerReply:
    """The answer to the request that waited for ``write``: its success response once the
    write is committed (R-17, BR-2, BH-5), or ``error_code`` (NOT_CONTROLLER when a new leader
    truncated it away, R-13).  A broker registration or heartbeat carries only its ErrorCode
    on an error (BR-1, BH-2) and its success body was decided when the records were generated
    (``impl.broker_registration.broker_reply``); the other writes are mutations and controller
    registrations (``mutation_response``)."""
    if write.api_key in (BROKER_REGISTRATION, BROKER_HEARTBEAT):
        from impl.broker_registration import broker_reply     # it builds on this module
        return broker_reply(write, source, error_code)
    extra = write.extra if error_code == NONE else None
    return ControllerReply(write.waiter, source, write.api_key, error_code,
                           mutation_response(write.api_key, write.request, error_code, message,
                                             extra=extra))
