"""Kafka's own numbers, used by the model with their real values.

Error codes are those of ``org.apache.kafka.common.protocol.Errors`` (docs/rules.md section 5);
API keys those of ``ApiKeys``.  The state stores these ints, never strings, so that state
hashes are the same in every process (Python salts ``str`` hashes per process).
"""
from __future__ import annotations

# Errors (Errors.java)
UNKNOWN_SERVER_ERROR = -1
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3      # a topic being auto-created (AT-3, AT-5)
LEADER_NOT_AVAILABLE = 5            # a topic just created, its leader not yet known (AT-6)
REQUEST_TIMED_OUT = 7
STALE_CONTROLLER_EPOCH = 11          # ControllerMovedException
NETWORK_EXCEPTION = 13               # what a client sees when the server closes its connection
COORDINATOR_NOT_AVAILABLE = 15       # FindCoordinator while the internal topic is missing (AT-1)
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
NOT_CONTROLLER = 41
INVALID_REQUEST = 42
POLICY_VIOLATION = 44                # create.topic.policy.class.name refused the topic (AT-5)
LISTENER_NOT_FOUND = 72              # the partition leader lacks the request's listener (L-28)
STALE_BROKER_EPOCH = 77              # a heartbeat whose broker epoch is not the registration's
PRINCIPAL_DESERIALIZATION_FAILURE = 97
DUPLICATE_BROKER_REGISTRATION = 101  # another incarnation of the broker id has a live session
MISMATCHED_ENDPOINT_TYPE = 114
UNSUPPORTED_ENDPOINT_TYPE = 115

ERROR_NAMES = {
    UNKNOWN_SERVER_ERROR: "UNKNOWN_SERVER_ERROR", NONE: "NONE",
    REQUEST_TIMED_OUT: "REQUEST_TIMED_OUT", STALE_CONTROLLER_EPOCH: "STALE_CONTROLLER_EPOCH",
    NETWORK_EXCEPTION: "NETWORK_EXCEPTION",
    UNKNOWN_TOPIC_OR_PARTITION: "UNKNOWN_TOPIC_OR_PARTITION",
    LEADER_NOT_AVAILABLE: "LEADER_NOT_AVAILABLE",
    COORDINATOR_NOT_AVAILABLE: "COORDINATOR_NOT_AVAILABLE",
    GROUP_AUTHORIZATION_FAILED: "GROUP_AUTHORIZATION_FAILED",
    TOPIC_ALREADY_EXISTS: "TOPIC_ALREADY_EXISTS", POLICY_VIOLATION: "POLICY_VIOLATION",
    TOPIC_AUTHORIZATION_FAILED: "TOPIC_AUTHORIZATION_FAILED",
    CLUSTER_AUTHORIZATION_FAILED: "CLUSTER_AUTHORIZATION_FAILED",
    UNSUPPORTED_VERSION: "UNSUPPORTED_VERSION", NOT_CONTROLLER: "NOT_CONTROLLER",
    INVALID_REQUEST: "INVALID_REQUEST", STALE_BROKER_EPOCH: "STALE_BROKER_EPOCH",
    LISTENER_NOT_FOUND: "LISTENER_NOT_FOUND",
    DUPLICATE_BROKER_REGISTRATION: "DUPLICATE_BROKER_REGISTRATION",
    PRINCIPAL_DESERIALIZATION_FAILURE: "PRINCIPAL_DESERIALIZATION_FAILURE",
    MISMATCHED_ENDPOINT_TYPE: "MISMATCHED_ENDPOINT_TYPE",
    UNSUPPORTED_ENDPOINT_TYPE: "UNSUPPORTED_ENDPOINT_TYPE",
}

# Errors that only the envelope layer produces; a client must never see them (KIP-590
# "EnvelopeResponse Handling", table 1.6 of docs/rules.md).
ENVELOPE_ONLY_ERRORS = frozenset({PRINCIPAL_DESERIALIZATION_FAILURE})

# API keys (ApiKeys.java)
METADATA = 3
FIND_COORDINATOR = 10
CREATE_TOPICS = 19
CREATE_ACLS = 30
INCREMENTAL_ALTER_CONFIGS = 44
ENVELOPE = 58
DESCRIBE_CLUSTER = 60
CONTROLLER_REGISTRATION = 70
BROKER_REGISTRATION = 62
BROKER_HEARTBEAT = 63

API_NAMES = {METADATA: "Metadata", FIND_COORDINATOR: "FindCoordinator",
             CREATE_TOPICS: "CreateTopics", CREATE_ACLS: "CreateAcls",
             INCREMENTAL_ALTER_CONFIGS: "IncrementalAlterConfigs", ENVELOPE: "Envelope",
             DESCRIBE_CLUSTER: "DescribeCluster",
             CONTROLLER_REGISTRATION: "ControllerRegistration",
             BROKER_REGISTRATION: "BrokerRegistration", BROKER_HEARTBEAT: "BrokerHeartbeat"}

# The ACL operation each mutation needs, and the error an unauthorized one gets
# (CreateTopics: CREATE on the topic; IncrementalAlterConfigs on a topic: ALTER_CONFIGS;
# CreateAcls: ALTER on the cluster).
API_OPERATION = {CREATE_TOPICS: "CREATE_TOPIC", INCREMENTAL_ALTER_CONFIGS: "ALTER_CONFIGS",
                 CREATE_ACLS: "ALTER_CLUSTER"}
API_DENIED_ERROR = {CREATE_TOPICS: TOPIC_AUTHORIZATION_FAILED,
                    INCREMENTAL_ALTER_CONFIGS: TOPIC_AUTHORIZATION_FAILED,
                    CREATE_ACLS: CLUSTER_AUTHORIZATION_FAILED}
CLUSTER_ACTION = "CLUSTER_ACTION"
# what the requests that may auto-create a topic check first (AT-1, AT-2): DESCRIBE on the group
# (FindCoordinator) or on the topic (Metadata)
DESCRIBE_GROUP = "DESCRIBE_GROUP"
DESCRIBE_TOPIC = "DESCRIBE_TOPIC"
# the internal topic FindCoordinator's group coordinator lives on (AT-1)
CONSUMER_OFFSETS = "__consumer_offsets"
ALTER_CLUSTER = "ALTER_CLUSTER"

# EndpointType (EndpointType.java)
ENDPOINT_UNKNOWN, ENDPOINT_BROKER, ENDPOINT_CONTROLLER = 0, 1, 2

# metadata.version feature levels (MetadataVersion.java)
MV_3_7_IV0 = 15          # controller registration and controller DescribeCluster (R-1, D-1)
MINIMUM_KRAFT_VERSION = 1
# feature names (MetadataVersion.FEATURE_NAME, KRaftVersion.FEATURE_NAME): a registration
# carries the range of each feature its software supports (BR-4.9, R-14)
METADATA_VERSION_FEATURE = "metadata.version"
KRAFT_VERSION_FEATURE = "kraft.version"


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, str(code))
