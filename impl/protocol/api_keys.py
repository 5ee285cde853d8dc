"""Kafka's API keys (``ApiKeys.java``), with what the codec needs to parse any request header.

A request header's version depends on whether the API's version is flexible, so parsing the
header of a request needs every API's flexible versions before any body schema is read: an
Envelope may carry a LeaveGroup request, whose header Kafka parses before rejecting it as not
forwardable (F-29d, INVALID_REQUEST) rather than as unparseable (F-29c, UNSUPPORTED_VERSION).  The
table below is ``ApiKeys`` and the request JSON files (``validVersions``, ``flexibleVersions``) of
apache/kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99, whose
schemas ship in ``impl/protocol/schemas``; in that snapshot every response has the same flexible
versions as its request.  ``forwardable`` is the hard-coded constructor flag of ``ApiKeys``
(docs/rules.md section 1.2); it is not in the JSON.  ``message_name`` is the name of the API's
messages without the Request/Response suffix: ``ApiKeys`` takes its constant names from
``ApiMessageType``, which the generator names after the JSON ``name`` (CREATE_TOPICS ->
CreateTopicsRequest.json, CreateTopicsResponse.json).

Header versions follow ``ApiMessageTypeGenerator.generateHeaderVersion`` (docs/rules.md section
1.1): request header v2 for a flexible API version, else v1, and v0 for ControlledShutdown v0;
response header v1 for a flexible version, else v0, and always v0 for ApiVersions (KIP-511).
"""
from __future__ import annotations

from dataclasses import dataclass

from impl.protocol.errors import UNKNOWN_SERVER_ERROR, ProtocolError
from impl.protocol.schema import Versions

# the ids code refers to by name (``ApiKeys`` constants; the table below has them all)
METADATA = 3
CONTROLLED_SHUTDOWN = 7
FIND_COORDINATOR = 10
API_VERSIONS = 18
CREATE_TOPICS = 19
DELETE_TOPICS = 20
CREATE_ACLS = 30
DELETE_ACLS = 31
ALTER_CONFIGS = 33
CREATE_PARTITIONS = 37
CREATE_DELEGATION_TOKEN = 38
RENEW_DELEGATION_TOKEN = 39
EXPIRE_DELEGATION_TOKEN = 40
ELECT_LEADERS = 43
INCREMENTAL_ALTER_CONFIGS = 44
ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46
ALTER_CLIENT_QUOTAS = 49
ALTER_USER_SCRAM_CREDENTIALS = 51
DESCRIBE_QUORUM = 55
UPDATE_FEATURES = 57
ENVELOPE = 58
DESCRIBE_CLUSTER = 60
BROKER_REGISTRATION = 62
BROKER_HEARTBEAT = 63
UNREGISTER_BROKER = 64
ALLOCATE_PRODUCER_IDS = 67
CONTROLLER_REGISTRATION = 70
ADD_RAFT_VOTER = 80
REMOVE_RAFT_VOTER = 81


@dataclass(frozen=True)
class ApiKey:
    id: int
    name: str                       # the ApiKeys enum name, e.g. CREATE_TOPICS
    valid_versions: Versions
    flexible_versions: Versions
    forwardable: bool

    @property
    def message_name(self) -> str:
        """``CreateTopics`` for CREATE_TOPICS: the schemas are ``<message_name>Request`` and
        ``<message_name>Response``."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    def is_flexible(self, version: int) -> bool:
        """Like the generated ``VersionConditional``: a flexible range that covers every valid
        version needs no comparison, so it holds for any version."""
        flexible = self.flexible_versions
        if flexible.empty:
            return False
        return version in flexible or flexible.lowest <= self.valid_versions.lowest


# (id, ApiKeys name, validVersions, flexibleVersions, forwardable)
_TABLE = (
    (0, "PRODUCE", "0-11", "9+", False),
    (1, "FETCH", "0-17", "12+", False),
    (2, "LIST_OFFSETS", "0-10", "6+", False),
    (3, "METADATA", "0-12", "9+", False),
    (4, "LEADER_AND_ISR", "0-7", "4+", False),
    (5, "STOP_REPLICA", "0-4", "2+", False),
    (6, "UPDATE_METADATA", "0-8", "6+", False),
    (7, "CONTROLLED_SHUTDOWN", "0-3", "3+", False),
    (8, "OFFSET_COMMIT", "0-9", "8+", False),
    (9, "OFFSET_FETCH", "0-9", "6+", False),
    (10, "FIND_COORDINATOR", "0-6", "3+", False),
    (11, "JOIN_GROUP", "0-9", "6+", False),
    (12, "HEARTBEAT", "0-4", "4+", False),
    (13, "LEAVE_GROUP", "0-5", "4+", False),
    (14, "SYNC_GROUP", "0-5", "4+", False),
    (15, "DESCRIBE_GROUPS", "0-5", "5+", False),
    (16, "LIST_GROUPS", "0-5", "3+", False),
    (17, "SASL_HANDSHAKE", "0-1", "none", False),
    (18, "API_VERSIONS", "0-4", "3+", False),
    (19, "CREATE_TOPICS", "0-7", "5+", True),
    (20, "DELETE_TOPICS", "0-6", "4+", True),
    (21, "DELETE_RECORDS", "0-2", "2+", False),
    (22, "INIT_PRODUCER_ID", "0-5", "2+", False),
    (23, "OFFSET_FOR_LEADER_EPOCH", "0-4", "4+", False),
    (24, "ADD_PARTITIONS_TO_TXN", "0-5", "3+", False),
    (25, "ADD_OFFSETS_TO_TXN", "0-4", "3+", False),
    (26, "END_TXN", "0-5", "3+", False),
    (27, "WRITE_TXN_MARKERS", "0-1", "1+", False),
    (28, "TXN_OFFSET_COMMIT", "0-4", "3+", False),
    (29, "DESCRIBE_ACLS", "0-3", "2+", False),
    (30, "CREATE_ACLS", "0-3", "2+", True),
    (31, "DELETE_ACLS", "0-3", "2+", True),
    (32, "DESCRIBE_CONFIGS", "0-4", "4+", False),
    (33, "ALTER_CONFIGS", "0-2", "2+", True),
    (34, "ALTER_REPLICA_LOG_DIRS", "0-2", "2+", False),
    (35, "DESCRIBE_LOG_DIRS", "0-4", "2+", False),
    (36, "SASL_AUTHENTICATE", "0-2", "2+", False),
    (37, "CREATE_PARTITIONS", "0-3", "2+", True),
    (38, "CREATE_DELEGATION_TOKEN", "0-3", "2+", True),
    (39, "RENEW_DELEGATION_TOKEN", "0-2", "2+", True),
    (40, "EXPIRE_DELEGATION_TOKEN", "0-2", "2+", True),
    (41, "DESCRIBE_DELEGATION_TOKEN", "0-3", "2+", False),
    (42, "DELETE_GROUPS", "0-2", "2+", False),
    (43, "ELECT_LEADERS", "0-2", "2+", True),
    (44, "INCREMENTAL_ALTER_CONFIGS", "0-1", "1+", True),
    (45, "ALTER_PARTITION_REASSIGNMENTS", "0", "0+", True),
    (46, "LIST_PARTITION_REASSIGNMENTS", "0", "0+", True),
    (47, "OFFSET_DELETE", "0", "none", False),
    (48, "DESCRIBE_CLIENT_QUOTAS", "0-1", "1+", False),
    (49, "ALTER_CLIENT_QUOTAS", "0-1", "1+", True),
    (50, "DESCRIBE_USER_SCRAM_CREDENTIALS", "0", "0+", False),
    (51, "ALTER_USER_SCRAM_CREDENTIALS", "0", "0+", True),
    (52, "VOTE", "0-1", "0+", False),
    (53, "BEGIN_QUORUM_EPOCH", "0-1", "1+", False),
    (54, "END_QUORUM_EPOCH", "0-1", "1+", False),
    (55, "DESCRIBE_QUORUM", "0-2", "0+", True),
    (56, "ALTER_PARTITION", "0-3", "0+", False),
    (57, "UPDATE_FEATURES", "0-2", "0+", True),
    (58, "ENVELOPE", "0", "0+", False),
    (59, "FETCH_SNAPSHOT", "0-1", "0+", False),
    (60, "DESCRIBE_CLUSTER", "0-1", "0+", False),
    (61, "DESCRIBE_PRODUCERS", "0", "0+", False),
    (62, "BROKER_REGISTRATION", "0-4", "0+", False),
    (63, "BROKER_HEARTBEAT", "0-1", "0+", False),
    (64, "UNREGISTER_BROKER", "0", "0+", True),
    (65, "DESCRIBE_TRANSACTIONS", "0", "0+", False),
    (66, "LIST_TRANSACTIONS", "0-1", "0+", False),
    (67, "ALLOCATE_PRODUCER_IDS", "0", "0+", True),
    (68, "CONSUMER_GROUP_HEARTBEAT", "0-1", "0+", False),
    (69, "CONSUMER_GROUP_DESCRIBE", "0", "0+", False),
    (70, "CONTROLLER_REGISTRATION", "0", "0+", False),
    (71, "GET_TELEMETRY_SUBSCRIPTIONS", "0", "0+", False),
    (72, "PUSH_TELEMETRY", "0", "0+", False),
    (73, "ASSIGN_REPLICAS_TO_DIRS", "0", "0+", False),
    (74, "LIST_CLIENT_METRICS_RESOURCES", "0", "0+", False),
    (75, "DESCRIBE_TOPIC_PARTITIONS", "0", "0+", False),
    (76, "SHARE_GROUP_HEARTBEAT", "0", "0+", False),
    (77, "SHARE_GROUP_DESCRIBE", "0", "0+", False),
    (78, "SHARE_FETCH", "0", "0+", False),
    (79, "SHARE_ACKNOWLEDGE", "0", "0+", False),
    (80, "ADD_RAFT_VOTER", "0", "0+", True),
    (81, "REMOVE_RAFT_VOTER", "0", "0+", True),
    (82, "UPDATE_RAFT_VOTER", "0", "0+", False),
    (83, "INITIALIZE_SHARE_GROUP_STATE", "0", "0+", False),
    (84, "READ_SHARE_GROUP_STATE", "0", "0+", False),
    (85, "WRITE_SHARE_GROUP_STATE", "0", "0+", False),
    (86, "DELETE_SHARE_GROUP_STATE", "0", "0+", False),
    (87, "READ_SHARE_GROUP_STATE_SUMMARY", "0", "0+", False),
)

API_KEYS: dict[int, ApiKey] = {
    key: ApiKey(key, name, Versions.parse(valid, None), Versions.parse(flexible, None), forwardable)
    for key, name, valid, flexible, forwardable in _TABLE
}
FORWARDABLE_API_KEYS = frozenset(key for key, api in API_KEYS.items() if api.forwardable)


def api_key(key: int) -> ApiKey:
    """``ApiKeys.forId``: an unknown id is an ``IllegalArgumentException`` in Kafka."""
    api = API_KEYS.get(key)
    if api is None:
        raise ProtocolError(UNKNOWN_SERVER_ERROR, f"Unexpected api key: {key}")
    return api


def request_header_version(key: int, version: int) -> int:
    if key == CONTROLLED_SHUTDOWN and version == 0:
        return 0
    return 2 if api_key(key).is_flexible(version) else 1


def response_header_version(key: int, version: int) -> int:
    if key == API_VERSIONS:
        return 0
    return 1 if api_key(key).is_flexible(version) else 0
