"""The one exception the wire codec raises for bad bytes, and the Kafka error codes it carries.

Codes are those of ``org.apache.kafka.common.protocol.Errors`` (docs/rules.md section 5).  Each
layer of the codec reports the code Kafka reports at that layer:

- the schema level (``codec.decode``/``codec.encode``, Kafka's generated ``XxxData`` classes):
  a version outside the schema's ``validVersions`` or a non-default value in a field the version
  lacks is UNSUPPORTED_VERSION (35, Kafka's ``UnsupportedVersionException``); anything else
  (truncated bytes, a bad varint, a negative length for a non-nullable field, a value that cannot
  be serialized) is UNKNOWN_SERVER_ERROR (-1), the code ``Errors.forException`` gives the plain
  ``RuntimeException``/``BufferUnderflowException`` Kafka throws there;
- the request level (``wire.parse_request``, Kafka's ``RequestHeader.parse`` and
  ``RequestContext.parseRequest``) turns every failure into INVALID_REQUEST (42);
- the envelope level (``envelope.unwrap_envelope``, ``EnvelopeUtils``) follows rule F-29:
  PRINCIPAL_DESERIALIZATION_FAILURE (97), INVALID_REQUEST (42), UNSUPPORTED_VERSION (35).

``errors_as`` is how a layer re-labels the error of the layer below, keeping it as ``__cause__``.

The servers, the controller channel and the admin client answer with or react to more codes,
named here so that every ``impl`` module takes its codes from this one place:
NOT_LEADER_OR_FOLLOWER (6), REQUEST_TIMED_OUT (7), STALE_CONTROLLER_EPOCH (11, Kafka's
``ControllerMovedException``), NETWORK_EXCEPTION (13, what a client's ``NetworkClient`` reports
for a closed connection), TOPIC_AUTHORIZATION_FAILED (29), CLUSTER_AUTHORIZATION_FAILED (31, a
denied mutation), NOT_CONTROLLER (41), SASL_AUTHENTICATION_FAILED (58),
MISMATCHED_ENDPOINT_TYPE (114) and UNSUPPORTED_ENDPOINT_TYPE (115); the topics requests need
(AutoTopicCreationManager, FindCoordinator, Metadata, the controller's CreateTopics; AT-1 to
AT-6 of docs/rules.md) add UNKNOWN_TOPIC_OR_PARTITION (3), LEADER_NOT_AVAILABLE (5),
COORDINATOR_NOT_AVAILABLE (15), INVALID_TOPIC_EXCEPTION (17), GROUP_AUTHORIZATION_FAILED (30),
TOPIC_ALREADY_EXISTS (36), POLICY_VIOLATION (44) and TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53);
KRaft broker registration and heartbeats (docs/rules.md section 8) add STALE_BROKER_EPOCH (77),
DUPLICATE_BROKER_REGISTRATION (101), BROKER_ID_NOT_REGISTERED (102), INCONSISTENT_CLUSTER_ID
(104) and INVALID_REGISTRATION (119).  ``ERROR_NAMES`` names the
codes named here; ``ERROR_MESSAGES`` is Kafka's default message (``Errors.message()``) of every
code.
"""
from __future__ import annotations

from contextlib import contextmanager
from collections.abc import Iterator

UNKNOWN_SERVER_ERROR = -1
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
STALE_CONTROLLER_EPOCH = 11
NETWORK_EXCEPTION = 13
COORDINATOR_NOT_AVAILABLE = 15
INVALID_TOPIC_EXCEPTION = 17
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
NOT_CONTROLLER = 41
INVALID_REQUEST = 42
POLICY_VIOLATION = 44
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
SASL_AUTHENTICATION_FAILED = 58
LISTENER_NOT_FOUND = 72
STALE_BROKER_EPOCH = 77
PRINCIPAL_DESERIALIZATION_FAILURE = 97
DUPLICATE_BROKER_REGISTRATION = 101
BROKER_ID_NOT_REGISTERED = 102
INCONSISTENT_CLUSTER_ID = 104
MISMATCHED_ENDPOINT_TYPE = 114
UNSUPPORTED_ENDPOINT_TYPE = 115
INVALID_REGISTRATION = 119

ERROR_NAMES = {
    UNKNOWN_SERVER_ERROR: "UNKNOWN_SERVER_ERROR",
    NONE: "NONE",
    UNKNOWN_TOPIC_OR_PARTITION: "UNKNOWN_TOPIC_OR_PARTITION",
    LEADER_NOT_AVAILABLE: "LEADER_NOT_AVAILABLE",
    NOT_LEADER_OR_FOLLOWER: "NOT_LEADER_OR_FOLLOWER",
    REQUEST_TIMED_OUT: "REQUEST_TIMED_OUT",
    STALE_CONTROLLER_EPOCH: "STALE_CONTROLLER_EPOCH",
    NETWORK_EXCEPTION: "NETWORK_EXCEPTION",
    COORDINATOR_NOT_AVAILABLE: "COORDINATOR_NOT_AVAILABLE",
    INVALID_TOPIC_EXCEPTION: "INVALID_TOPIC_EXCEPTION",
    TOPIC_AUTHORIZATION_FAILED: "TOPIC_AUTHORIZATION_FAILED",
    GROUP_AUTHORIZATION_FAILED: "GROUP_AUTHORIZATION_FAILED",
    CLUSTER_AUTHORIZATION_FAILED: "CLUSTER_AUTHORIZATION_FAILED",
    UNSUPPORTED_VERSION: "UNSUPPORTED_VERSION",
    TOPIC_ALREADY_EXISTS: "TOPIC_ALREADY_EXISTS",
    NOT_CONTROLLER: "NOT_CONTROLLER",
    INVALID_REQUEST: "INVALID_REQUEST",
    POLICY_VIOLATION: "POLICY_VIOLATION",
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    SASL_AUTHENTICATION_FAILED: "SASL_AUTHENTICATION_FAILED",
    LISTENER_NOT_FOUND: "LISTENER_NOT_FOUND",
    STALE_BROKER_EPOCH: "STALE_BROKER_EPOCH",
    PRINCIPAL_DESERIALIZATION_FAILURE: "PRINCIPAL_DESERIALIZATION_FAILURE",
    DUPLICATE_BROKER_REGISTRATION: "DUPLICATE_BROKER_REGISTRATION",
    BROKER_ID_NOT_REGISTERED: "BROKER_ID_NOT_REGISTERED",
    INCONSISTENT_CLUSTER_ID: "INCONSISTENT_CLUSTER_ID",
    MISMATCHED_ENDPOINT_TYPE: "MISMATCHED_ENDPOINT_TYPE",
    UNSUPPORTED_ENDPOINT_TYPE: "UNSUPPORTED_ENDPOINT_TYPE",
    INVALID_REGISTRATION: "INVALID_REGISTRATION",
}


# Errors.message(): Kafka's default message of every error code (Errors.java, apache/kafka
# commit 1eb7644349cb07139d6a3c1ad1986979647cac99); None for NONE, whose exception is null.
ERROR_MESSAGES: dict[int, str | None] = {
    -1: "The server experienced an unexpected error when processing the request.",
    0: None,
    1: "The requested offset is not within the range of offsets maintained by the server.",
    2: ("This message has failed its CRC checksum, exceeds the valid size, has a null key for a "
        "compacted topic, or is otherwise corrupt."),
    3: "This server does not host this topic-partition.",
    4: "The requested fetch size is invalid.",
    5: ("There is no leader for this topic-partition as we are in the middle of a leadership "
        "election."),
    6: ("For requests intended only for the leader, this error indicates that the broker is not "
        "the current leader. For requests intended for any replica, this error indicates that the "
        "broker is not a replica of the topic partition."),
    7: "The request timed out.",
    8: "The broker is not available.",
    9: ("The replica is not available for the requested topic-partition. Produce/Fetch requests "
        "and other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER "
        "if the broker is not a replica of the topic-partition."),
    10: "The request included a message larger than the max message size the server will accept.",
    11: "The controller moved to another broker.",
    12: "The metadata field of the offset request was too large.",
    13: "The server disconnected before a response was received.",
    14: "The coordinator is loading and hence can't process requests.",
    15: "The coordinator is not available.",
    16: "This is not the correct coordinator.",
    17: "The request attempted to perform an operation on an invalid topic.",
    18: "The request included message batch larger than the configured segment size on the server.",
    19: "Messages are rejected since there are fewer in-sync replicas than required.",
    20: "Messages are written to the log, but to fewer in-sync replicas than required.",
    21: "Produce request specified an invalid value for required acks.",
    22: "Specified group generation id is not valid.",
    23: ("The group member's supported protocols are incompatible with those of existing members "
        "or first group member tried to join with empty protocol type or empty protocol list."),
    24: "The configured groupId is invalid.",
    25: "The coordinator is not aware of this member.",
    26: ("The session timeout is not within the range allowed by the broker (as configured by "
        "group.min.session.timeout.ms and group.max.session.timeout.ms)."),
    27: "The group is rebalancing, so a rejoin is needed.",
    28: "The committing offset data size is not valid.",
    29: "Topic authorization failed.",
    30: "Group authorization failed.",
    31: "Cluster authorization failed.",
    32: "The timestamp of the message is out of acceptable range.",
    33: "The broker does not support the requested SASL mechanism.",
    34: "Request is not valid given the current SASL state.",
    35: "The version of API is not supported.",
    36: "Topic with this name already exists.",
    37: "Number of partitions is below 1.",
    38: "Replication factor is below 1 or larger than the number of available brokers.",
    39: "Replica assignment is invalid.",
    40: "Configuration is invalid.",
    41: "This is not the correct controller for this cluster.",
    42: ("This most likely occurs because of a request being malformed by the client library or "
        "the message was sent to an incompatible broker. See the broker logs for more details."),
    43: "The message format version on the broker does not support the request.",
    44: "Request parameters do not satisfy the configured policy.",
    45: "The broker received an out of order sequence number.",
    46: "The broker received a duplicate sequence number.",
    47: "Producer attempted to produce with an old epoch.",
    48: "The producer attempted a transactional operation in an invalid state.",
    49: ("The producer attempted to use a producer id which is not currently assigned to its "
        "transactional id."),
    50: ("The transaction timeout is larger than the maximum value allowed by the broker (as "
        "configured by transaction.max.timeout.ms)."),
    51: ("The producer attempted to update a transaction while another concurrent operation on "
        "the same transaction was ongoing."),
    52: ("Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the "
        "current coordinator for a given producer."),
    53: "Transactional Id authorization failed.",
    54: "Security features are disabled.",
    55: ("The broker did not attempt to execute this operation. This may happen for batched RPCs "
        "where some operations in the batch failed, causing the broker to respond without trying "
        "the rest."),
    56: "Disk error when trying to access log file on the disk.",
    57: "The user-specified log directory is not found in the broker config.",
    58: "SASL Authentication failed.",
    59: ("This exception is raised by the broker if it could not locate the producer metadata "
        "associated with the producerId in question. This could happen if, for instance, the "
        "producer's records were deleted because their retention time had elapsed. Once the last "
        "records of the producerId are removed, the producer's metadata is removed from the "
        "broker, and future appends by the producer will return this exception."),
    60: "A partition reassignment is in progress.",
    61: "Delegation Token feature is not enabled.",
    62: "Delegation Token is not found on server.",
    63: "Specified Principal is not valid Owner/Renewer.",
    64: ("Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on "
        "delegation token authenticated channels."),
    65: "Delegation Token authorization failed.",
    66: "Delegation Token is expired.",
    67: "Supplied principalType is not supported.",
    68: "The group is not empty.",
    69: "The group id does not exist.",
    70: "The fetch session ID was not found.",
    71: "The fetch session epoch is invalid.",
    72: ("There is no listener on the leader broker that matches the listener on which metadata "
        "request was processed."),
    73: "Topic deletion is disabled.",
    74: "The leader epoch in the request is older than the epoch on the broker.",
    75: "The leader epoch in the request is newer than the epoch on the broker.",
    76: "The requesting client does not support the compression type of given partition.",
    77: "Broker epoch has changed.",
    78: ("The leader high watermark has not caught up from a recent leader election so the "
        "offsets cannot be guaranteed to be monotonically increasing."),
    79: ("The group member needs to have a valid member id before actually entering a consumer "
        "group."),
    80: "The preferred leader was not available.",
    81: "The consumer group has reached its max size.",
    82: ("The broker rejected this static consumer since another consumer with the same "
        "group.instance.id has registered with a different member.id."),
    83: "Eligible topic partition leaders are not available.",
    84: "Leader election not needed for topic partition.",
    85: "No partition reassignment is in progress.",
    86: ("Deleting offsets of a topic is forbidden while the consumer group is actively "
        "subscribed to it."),
    87: "This record has failed the validation on broker and hence will be rejected.",
    88: "There are unstable offsets that need to be cleared.",
    89: "The throttling quota has been exceeded.",
    90: "There is a newer producer with the same transactionalId which fences the current one.",
    91: "A request illegally referred to a resource that does not exist.",
    92: "A request illegally referred to the same resource twice.",
    93: "Requested credential would not meet criteria for acceptability.",
    94: ("Indicates that the either the sender or recipient of a voter-only request is not one of "
        "the expected voters."),
    95: "The given update version was invalid.",
    96: "Unable to update finalized features due to an unexpected server error.",
    97: ("Request principal deserialization failed during forwarding. This indicates an internal "
        "error on the broker cluster security setup."),
    98: "Requested snapshot was not found.",
    99: ("Requested position is not greater than or equal to zero, and less than the size of the "
        "snapshot."),
    100: "This server does not host this topic ID.",
    101: "This broker ID is already in use.",
    102: "The given broker ID was not registered.",
    103: "The log's topic ID did not match the topic ID in the request.",
    104: "The clusterId in the request does not match that found on the server.",
    105: "The transactionalId could not be found.",
    106: "The fetch session encountered inconsistent topic ID usage.",
    107: "The new ISR contains at least one ineligible replica.",
    108: ("The AlterPartition request successfully updated the partition state but the leader has "
        "changed."),
    109: "The requested offset is moved to tiered storage.",
    110: ("The member epoch is fenced by the group coordinator. The member must abandon all its "
        "partitions and rejoin."),
    111: ("The instance ID is still used by another member in the consumer group. That member "
        "must leave first."),
    112: "The assignor or its version range is not supported by the consumer group.",
    113: ("The member epoch is stale. The member must retry after receiving its updated member "
        "epoch via the ConsumerGroupHeartbeat API."),
    114: "The request was sent to an endpoint of the wrong type.",
    115: "This endpoint type is not supported yet.",
    116: "This controller ID is not known.",
    117: "Client sent a push telemetry request with an invalid or outdated subscription ID.",
    118: ("Client sent a push telemetry request larger than the maximum size the broker will "
        "accept."),
    119: "The controller has considered the broker registration to be invalid.",
    120: ("The server encountered an error with the transaction. The client can abort the "
        "transaction to continue using this transactional ID."),
    121: "The record state is invalid. The acknowledgement of delivery could not be completed.",
    122: "The share session was not found.",
    123: "The share session epoch is invalid.",
    124: ("The share coordinator rejected the request because the share-group state epoch did not "
        "match."),
    125: "The voter key doesn't match the receiving replica's key.",
    126: "The voter is already part of the set of voters.",
    127: "The voter is not part of the set of voters.",
    128: "The regular expression is not valid.",
}


class ProtocolError(Exception):
    """Bytes Kafka would reject (or a value it could not serialize), with Kafka's error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{ERROR_NAMES.get(code, code)}: {message}")
        self.code = code
        self.message = message

    @property
    def error_name(self) -> str:
        return ERROR_NAMES.get(self.code, str(self.code))


@contextmanager
def errors_as(code: int, context: str) -> Iterator[None]:
    """Re-raise any ``ProtocolError`` from the block with ``code``, prefixing ``context``."""
    try:
        yield
    except ProtocolError as error:
        raise ProtocolError(code, f"{context}: {error.message}") from error
