"""Request forwarding (KIP-590), both ends, from docs/rules.md section 1 (F-1 to F-36, tables 1.6
and 1.11).  Sans I/O: bytes and ``now_ms`` in, decisions and bytes out.

Forwarder (a broker):

- ``forwarding_decision`` (F-2 to F-6, F-10): does this broker forward the request, handle it
  locally, or fail it;
- ``ForwardingManager`` (F-11 to F-14, table 1.6, F-32): wraps the client's original request
  bytes in an EnvelopeRequest with the client's serialized principal and address, queues it on a
  ``ControllerChannel`` (``impl/channel.py``, F-15 to F-21) and turns the outcome into exactly
  what the client sees (``ClientOutcome``).

Receiver (the ZK controller or a KRaft controller):

- ``EnvelopeReceiver.receive`` (F-22 to F-30): the checks in Kafka's order, giving an
  ``EnvelopeDecision``: close the connection, answer with an envelope-level error, or dispatch
  the inner request with the ``RequestContext`` built from the envelope;
- ``wrap_inner_response`` (F-34: an inner NOT_CONTROLLER becomes the envelope's own error) and
  ``envelope_response`` build the EnvelopeResponse bytes.

ApiVersions (F-35, F-36): ``intersect`` and ``intersect_forwardable_apis``.

Error responses follow ``AbstractRequest.getErrorResponse(e)`` of every forwardable API
(``error_response_body``): each API puts the code where its response keeps errors (per topic,
resource, filter, creation, entry or partition, and/or top-level), and the message is
``ApiError.fromThrowable``'s (null for UNKNOWN_SERVER_ERROR and for exceptions with Kafka's
default message) or, for the APIs that use ``Errors.forException(e).message()``, Kafka's default
message of the code (``ERRORS_MESSAGE``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from ipaddress import ip_address
from typing import NamedTuple

from impl.channel import (NOT_CONTROLLER, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT,
                          UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION, ControllerChannel,
                          error_counts)
from impl.context import ChannelRequest, RequestContext
from impl.protocol import (API_KEYS, MissingSchemaError, ProtocolError, build_envelope_request,
                           encode_response, parse_request, parse_request_body, parse_request_header,
                           parse_response, unwrap_envelope)
from impl.protocol.principal import KafkaPrincipal
from impl.protocol.schema import ZERO_UUID
from impl.protocol.wire import response_schema

NONE = 0
NETWORK_EXCEPTION = 13          # what a client's NetworkClient reports for a closed connection
CLUSTER_AUTHORIZATION_FAILED = 31

ENVELOPE = 58
# The forwardable APIs (ApiKeys, docs/rules.md section 1.2).
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
UNREGISTER_BROKER = 64
ALLOCATE_PRODUCER_IDS = 67
ADD_RAFT_VOTER = 80
REMOVE_RAFT_VOTER = 81

# Authorization vocabulary (AclOperation, ResourceType; the cluster resource is named
# "kafka-cluster").  ACLs are configuration: the authorizer is a callable passed in.
CLUSTER_ACTION = "CLUSTER_ACTION"
CLUSTER_RESOURCE = ("CLUSTER", "kafka-cluster")
Authorizer = Callable[[KafkaPrincipal, str, tuple], bool]

# Process roles of the node that receives a request.
ZK_BROKER = "zk_broker"              # a ZK-mode broker (the ZK controller is one of them)
KRAFT_BROKER = "broker"
KRAFT_CONTROLLER = "controller"

# Forwarding decisions (F-2 to F-6).
FORWARD = "forward"
LOCAL = "local"


# ------------------------------------------------------------------------------------------
# F-1 to F-10: does a broker forward?


def forwarding_decision(api_key: int, *, role: str, is_forwarded: bool = False,
                        forwarding_enabled: bool = False, is_active_controller: bool = False,
                        controller_is_kraft: bool = False) -> str:
    """What the broker's ``KafkaApis`` does with a client request of ``api_key``.

    - non-forwardable APIs are always handled locally (docs/rules.md section 1.2);
    - F-10: a request that came out of an Envelope is never forwarded again;
    - F-2: a KRaft broker always forwards (``RaftSupport.canForward`` is true);
    - F-3/F-4: a ZK broker forwards only if it has a ForwardingManager (forwarding enabled:
      migration + IBP >= 3.4-IV0) and is not the active controller; otherwise the request runs
      locally (F-5: per-item NOT_CONTROLLER for controller-only APIs, direct ZK writes for
      configs, quotas and ACLs);
    - F-6: a ZK broker forwards IncrementalAlterConfigs only to a KRaft controller.
    (``forwardToControllerOrFail`` cannot fail here: the APIs that use it -- UnregisterBroker,
    DescribeQuorum, Add/RemoveRaftVoter -- are in no ZK broker's scope, and a KRaft broker can
    always forward.)"""
    api = API_KEYS.get(api_key)
    if api is None or not api.forwardable:
        return LOCAL
    if role == KRAFT_CONTROLLER:
        return LOCAL
    if is_forwarded:
        return LOCAL
    if role == KRAFT_BROKER:
        return FORWARD
    can_forward = forwarding_enabled and not is_active_controller
    if not can_forward:
        return LOCAL
    if api_key == INCREMENTAL_ALTER_CONFIGS and not controller_is_kraft:
        return LOCAL
    return FORWARD


# ------------------------------------------------------------------------------------------
# getErrorResponse


def error_response_body(api_key: int, version: int, request_body: Mapping, error_code: int,
                        message: str | None = None, throttle_time_ms: int = 0) -> dict:
    """``requestBody.getErrorResponse(throttleTimeMs, e)``: the response Kafka builds for a
    request that failed as a whole with ``error_code``.

    ``message`` is the exception's message; like ``ApiError.fromThrowable`` it is dropped for
    UNKNOWN_SERVER_ERROR and when it is Kafka's default message of the code.  Every forwardable
    API follows its own ``getErrorResponse`` (``_ERROR_RESPONSES``); any other API gets the
    code in its top-level ErrorCode, if its response has one.  ThrottleTimeMs is set where that
    ``getErrorResponse`` sets it and the version has the field."""
    api_message = None if error_code == UNKNOWN_SERVER_ERROR or message == \
        ERRORS_MESSAGE.get(error_code) else message
    error = _Error(error_code, api_message, ERRORS_MESSAGE.get(error_code))
    build = _ERROR_RESPONSES.get(api_key)
    if build is None:
        try:
            names = response_schema(api_key).struct.field_names
        except (MissingSchemaError, ProtocolError):      # an unknown api key or no schema
            names = frozenset()
        body = {"ErrorCode": error_code} if "ErrorCode" in names else {}
        if "ErrorMessage" in names:
            body["ErrorMessage"] = api_message
        sets_throttle = True
    else:
        body = build(version, request_body, error)
        sets_throttle = api_key not in _NO_THROTTLE_IN_ERROR_RESPONSE
    if sets_throttle:
        _set_throttle(api_key, version, body, throttle_time_ms)
    return body


class _Error(NamedTuple):
    code: int
    api_message: str | None         # ApiError.fromThrowable(e).message()
    errors_message: str | None      # Errors.forException(e).message(): the code's default


def _items(request_body: Mapping, name: str) -> list:
    return list(request_body.get(name) or ())


def _create_topics(version: int, request: Mapping, error: _Error) -> dict:
    return {"Topics": [{"Name": topic["Name"], "ErrorCode": error.code,
                        "ErrorMessage": error.api_message}
                       for topic in _items(request, "Topics")]}


def _delete_topics(version: int, request: Mapping, error: _Error) -> dict:
    """``DeleteTopicsRequest.topics()``: v6+ names or ids, older versions names only."""
    topics = (_items(request, "Topics") if version >= 6 else
              [{"Name": name} for name in _items(request, "TopicNames")])
    return {"Responses": [{"Name": topic.get("Name"),
                           "TopicId": topic.get("TopicId", ZERO_UUID),
                           "ErrorCode": error.code}
                          for topic in topics]}


def _create_acls(version: int, request: Mapping, error: _Error) -> dict:
    return {"Results": [{"ErrorCode": error.code, "ErrorMessage": error.api_message}
                        for _ in _items(request, "Creations")]}


def _delete_acls(version: int, request: Mapping, error: _Error) -> dict:
    return {"FilterResults": [{"ErrorCode": error.code, "ErrorMessage": error.api_message}
                              for _ in _items(request, "Filters")]}


def _alter_configs(version: int, request: Mapping, error: _Error) -> dict:
    """AlterConfigs and IncrementalAlterConfigs: one result per resource."""
    return {"Responses": [{"ResourceType": resource["ResourceType"],
                           "ResourceName": resource["ResourceName"],
                           "ErrorCode": error.code, "ErrorMessage": error.api_message}
                          for resource in _items(request, "Resources")]}


def _create_partitions(version: int, request: Mapping, error: _Error) -> dict:
    return {"Results": [{"Name": topic["Name"], "ErrorCode": error.code,
                         "ErrorMessage": error.api_message}
                        for topic in _items(request, "Topics")]}


def _create_delegation_token(version: int, request: Mapping, error: _Error) -> dict:
    """``CreateDelegationTokenResponse.prepareResponse`` with ANONYMOUS owner and requester,
    timestamps -1, an empty token id and hmac."""
    body = {"ErrorCode": error.code, "PrincipalType": "User", "PrincipalName": "ANONYMOUS",
            "IssueTimestampMs": -1, "ExpiryTimestampMs": -1, "MaxTimestampMs": -1,
            "TokenId": "", "Hmac": b""}
    if version > 2:
        body["TokenRequesterPrincipalType"] = "User"
        body["TokenRequesterPrincipalName"] = "ANONYMOUS"
    return body


def _top_level_code(version: int, request: Mapping, error: _Error) -> dict:
    """Renew/ExpireDelegationToken, UnregisterBroker, AllocateProducerIds: only ErrorCode."""
    return {"ErrorCode": error.code}


def _top_level_default_message(version: int, request: Mapping, error: _Error) -> dict:
    """DescribeQuorum (``getTopLevelErrorResponse``), Add/RemoveRaftVoter: ErrorCode and the
    code's default message."""
    return {"ErrorCode": error.code, "ErrorMessage": error.errors_message}


def _elect_leaders(version: int, request: Mapping, error: _Error) -> dict:
    """Every requested partition gets the code (none if all partitions were asked for, a null
    TopicPartitions); the top-level ErrorCode exists from v1."""
    body = {"ReplicaElectionResults": [
        {"Topic": topic["Topic"],
         "PartitionResult": [{"PartitionId": partition, "ErrorCode": error.code,
                              "ErrorMessage": error.api_message}
                             for partition in topic.get("Partitions") or ()]}
        for topic in _items(request, "TopicPartitions")]}
    if version >= 1:
        body["ErrorCode"] = error.code
    return body


def _alter_partition_reassignments(version: int, request: Mapping, error: _Error) -> dict:
    return {"ErrorCode": error.code, "ErrorMessage": error.api_message,
            "Responses": [{"Name": topic["Name"],
                           "Partitions": [{"PartitionIndex": partition["PartitionIndex"],
                                           "ErrorCode": error.code,
                                           "ErrorMessage": error.api_message}
                                          for partition in topic.get("Partitions") or ()]}
                          for topic in _items(request, "Topics")]}


def _list_partition_reassignments(version: int, request: Mapping, error: _Error) -> dict:
    """The top-level code; the requested partitions are listed without reassignments."""
    return {"ErrorCode": error.code, "ErrorMessage": error.api_message,
            "Topics": [{"Name": topic["Name"],
                        "Partitions": [{"PartitionIndex": index}
                                       for index in topic.get("PartitionIndexes") or ()]}
                       for topic in _items(request, "Topics")]}


def _alter_client_quotas(version: int, request: Mapping, error: _Error) -> dict:
    """One result per entry, with its entity and the code's default message."""
    return {"Entries": [{"ErrorCode": error.code, "ErrorMessage": error.errors_message,
                         "Entity": [{"EntityType": entity["EntityType"],
                                     "EntityName": entity.get("EntityName")}
                                    for entity in entry.get("Entity") or ()]}
                        for entry in _items(request, "Entries")]}


def _alter_user_scram_credentials(version: int, request: Mapping, error: _Error) -> dict:
    """One result per user named by a deletion or an upsertion, sorted by name."""
    users = sorted({item["Name"] for item in _items(request, "Deletions")} |
                   {item["Name"] for item in _items(request, "Upsertions")})
    return {"Results": [{"User": user, "ErrorCode": error.code,
                         "ErrorMessage": error.api_message} for user in users]}


def _update_features(version: int, request: Mapping, error: _Error) -> dict:
    """``UpdateFeaturesResponse.createWithErrors``: top-level only, no per-feature results."""
    return {"ErrorCode": error.code, "ErrorMessage": error.api_message, "Results": []}


_ERROR_RESPONSES: dict[int, Callable[[int, Mapping, _Error], dict]] = {
    CREATE_TOPICS: _create_topics,
    DELETE_TOPICS: _delete_topics,
    CREATE_ACLS: _create_acls,
    DELETE_ACLS: _delete_acls,
    ALTER_CONFIGS: _alter_configs,
    CREATE_PARTITIONS: _create_partitions,
    CREATE_DELEGATION_TOKEN: _create_delegation_token,
    RENEW_DELEGATION_TOKEN: _top_level_code,
    EXPIRE_DELEGATION_TOKEN: _top_level_code,
    ELECT_LEADERS: _elect_leaders,
    INCREMENTAL_ALTER_CONFIGS: _alter_configs,
    ALTER_PARTITION_REASSIGNMENTS: _alter_partition_reassignments,
    LIST_PARTITION_REASSIGNMENTS: _list_partition_reassignments,
    ALTER_CLIENT_QUOTAS: _alter_client_quotas,
    ALTER_USER_SCRAM_CREDENTIALS: _alter_user_scram_credentials,
    DESCRIBE_QUORUM: _top_level_default_message,
    UPDATE_FEATURES: _update_features,
    UNREGISTER_BROKER: _top_level_code,
    ALLOCATE_PRODUCER_IDS: _top_level_code,
    ADD_RAFT_VOTER: _top_level_default_message,
    REMOVE_RAFT_VOTER: _top_level_default_message,
}
# getErrorResponse ignores throttleTimeMs for these (DescribeQuorumResponse has no such field).
_NO_THROTTLE_IN_ERROR_RESPONSE = frozenset({INCREMENTAL_ALTER_CONFIGS,
                                            ALTER_USER_SCRAM_CREDENTIALS, DESCRIBE_QUORUM})


def _has_throttle_field(api_key: int, version: int) -> bool:
    try:
        schema = response_schema(api_key)
    except (MissingSchemaError, ProtocolError):
        return False
    return any(f.name == "ThrottleTimeMs" and version in f.versions for f in schema.struct.fields)


def _set_throttle(api_key: int, version: int, body: dict, throttle_time_ms: int) -> None:
    """``AbstractResponse.maybeSetThrottleTimeMs``: only versions that carry the field."""
    if _has_throttle_field(api_key, version):
        body["ThrottleTimeMs"] = throttle_time_ms


def first_error(body: Mapping | None) -> int:
    """The first non-zero ErrorCode of a response (what the model records as the client's
    code), NONE if there is none."""
    for code in error_counts(body):
        if code != NONE:
            return code
    return NONE


# ------------------------------------------------------------------------------------------
# The forwarder


@dataclass(frozen=True)
class ClientOutcome:
    """What the client sees for a request its broker forwarded (table 1.6, table 1.11).

    ``close_connection``: the broker closes the client's connection instead of answering
    (KAFKA-10674, envelope UNSUPPORTED_VERSION); the client's NetworkClient reports a
    disconnect, ``error_code`` NETWORK_EXCEPTION.  Otherwise ``response`` is the response
    bytes (header + body, no size prefix) with the client's correlation id, ``body`` the same
    decoded, ``error_code`` the code the broker put in its own error response
    (UNKNOWN_SERVER_ERROR, REQUEST_TIMED_OUT) or, for the controller's response passed
    through, its first non-zero error code.  ``throttle_time_ms`` is how long the broker
    throttles the client's channel (F-32).  ``envelope_error`` is the EnvelopeResponse's code,
    None if no EnvelopeResponse was received."""
    close_connection: bool
    error_code: int
    response: bytes | None = None
    body: dict | None = None
    throttle_time_ms: int = 0
    envelope_error: int | None = None
    from_controller: bool = False
    completed_ms: int = 0
    requeues: int = 0

    @property
    def retried(self) -> bool:
        """The channel re-queued the Envelope at least once (NOT_CONTROLLER or a disconnect,
        F-21.3/4): the model's ``Response.retried``."""
        return self.requeues > 0


@dataclass
class ForwardedCall:
    """One client request in flight through the forwarder (the ``tag`` of its channel item).
    It keeps the client's original bytes until the response (F-1: forwardable APIs have
    ``requiresDelayedAllocation``) and its parsed header and body for the error response."""
    header: dict
    body: dict
    request_bytes: bytes
    context: RequestContext
    enqueued_ms: int
    respond: Callable[[ClientOutcome], None]
    outcome: ClientOutcome | None = None
    item: ChannelRequest | None = None


class ForwardingManager:
    """``ForwardingManagerImpl`` + ``ForwardingResponseHandler`` + ``sendForwardedResponse``.

    ``principal_serde``: the client connections' principal builder implements
    ``KafkaPrincipalSerde`` (F-12; ``KafkaConfig`` requires it, so only a misconfigured test
    broker lacks it).  ``request_throttle_ms(context, now_ms)``: the local request-quota throttle
    the broker records for the request when it answers (F-32), 0 by default."""

    def __init__(self, channel: ControllerChannel, *, principal_serde: bool = True,
                 request_throttle_ms: Callable[[RequestContext, int], int] | None = None) -> None:
        self.channel = channel
        self.principal_serde = principal_serde
        self._request_throttle = request_throttle_ms or (lambda context, now_ms: 0)
        self.completed: list[ClientOutcome] = []

    def forward(self, request_bytes: bytes, ctx: RequestContext, now_ms: int,
                respond: Callable[[ClientOutcome], None]) -> ChannelRequest | None:
        """``forwardRequest``: build the Envelope and enqueue it (F-11 to F-14).  Returns the
        queued channel item, or None if the request was answered at once: bytes the socket
        server would not accept close the connection (F-38), and so does an API whose request
        or response schema a ``KIPCHECK_SCHEMAS`` directory lacks (this broker could neither
        read nor answer it); no principal serde is an IllegalArgumentException in ``handle``
        -> UNKNOWN_SERVER_ERROR (F-12)."""
        try:
            header, body = parse_request(request_bytes)
            response_schema(header["RequestApiKey"])
        except (ProtocolError, MissingSchemaError):
            self._complete(respond, ClientOutcome(True, NETWORK_EXCEPTION, completed_ms=now_ms))
            return None
        call = ForwardedCall(header, body, bytes(request_bytes), ctx, now_ms, respond)
        if not self.principal_serde:
            self._send_error(call, UNKNOWN_SERVER_ERROR, now_ms, envelope_error=None)
            return None
        try:
            address = ip_address(ctx.client_address)
        except ValueError:
            # InetAddress of the socket is always an IP; anything else is a broken caller.
            self._send_error(call, UNKNOWN_SERVER_ERROR, now_ms, envelope_error=None)
            return None
        envelope = build_envelope_request(call.request_bytes, ctx.principal, address)
        item = ChannelRequest(
            api_key=ENVELOPE,
            build=lambda version: envelope,
            on_response=lambda code, response, t: self._on_response(call, code, response, t),
            on_timeout=lambda t: self._on_timeout(call, t),
            description=f"{API_KEYS[header['RequestApiKey']].name} from {ctx.principal} "
                        f"correlation id {header['CorrelationId']}",
            tag=call)
        call.item = item
        self.channel.enqueue(item, now_ms)
        return item

    # ForwardingResponseHandler (table 1.6)

    def _on_response(self, call: ForwardedCall, code: int, envelope: dict | None,
                     now_ms: int) -> None:
        if envelope is None:
            # versionMismatch / authenticationException from NetworkClient: the callback
            # completes with no response -> UNKNOWN_SERVER_ERROR (table 1.6 rows 1-2).
            self._send_error(call, UNKNOWN_SERVER_ERROR, now_ms, envelope_error=None)
            return
        envelope_error = envelope.get("ErrorCode", NONE)
        if envelope_error == UNSUPPORTED_VERSION:
            # responseCallback(None) -> handleInvalidVersionsDuringForwarding: close the
            # client's connection so it renegotiates ApiVersions (KAFKA-10674).
            self._complete(call.respond, ClientOutcome(True, NETWORK_EXCEPTION,
                                                       envelope_error=envelope_error,
                                                       completed_ms=now_ms), call)
            return
        if envelope_error != NONE:
            # Every other envelope error is hidden from the client.
            self._send_error(call, UNKNOWN_SERVER_ERROR, now_ms, envelope_error=envelope_error)
            return
        try:
            inner = parse_response(envelope.get("ResponseData"), call.header)
        except ProtocolError:
            # ForwardingManager.parseResponse: unparseable or correlation id mismatch.
            self._send_error(call, UNKNOWN_SERVER_ERROR, now_ms, envelope_error=NONE)
            return
        self._send_forwarded(call, inner, now_ms, envelope_error=NONE, from_controller=True)

    def _on_timeout(self, call: ForwardedCall, now_ms: int) -> None:
        """F-19: retryTimeoutMs elapsed -> ``TimeoutException`` -> REQUEST_TIMED_OUT."""
        self._send_error(call, REQUEST_TIMED_OUT, now_ms, envelope_error=None)

    def _send_error(self, call: ForwardedCall, code: int, now_ms: int,
                    envelope_error: int | None) -> None:
        version = call.header["RequestApiVersion"]
        body = error_response_body(call.header["RequestApiKey"], version, call.body, code)
        self._send_forwarded(call, body, now_ms, envelope_error=envelope_error,
                             from_controller=False, error_code=code)

    def _send_forwarded(self, call: ForwardedCall, body: dict, now_ms: int, *,
                        envelope_error: int | None, from_controller: bool,
                        error_code: int | None = None) -> None:
        """``RequestHandlerHelper.sendForwardedResponse`` (F-32): the client is throttled for
        max(the controller's throttle in the response, the local request-quota throttle), and
        that value is written into the response."""
        key, version = call.header["RequestApiKey"], call.header["RequestApiVersion"]
        throttle = max(int(body.get("ThrottleTimeMs", 0) or 0),
                       int(self._request_throttle(call.context, now_ms)))
        if throttle > 0:
            _set_throttle(key, version, body, throttle)
        data = encode_response(key, version, call.header["CorrelationId"], body)
        code = first_error(body) if error_code is None else error_code
        self._complete(call.respond, ClientOutcome(False, code, data, body, throttle,
                                                   envelope_error, from_controller, now_ms),
                       call)

    def _complete(self, respond: Callable[[ClientOutcome], None], outcome: ClientOutcome,
                  call: ForwardedCall | None = None) -> None:
        if call is not None:
            if call.item is not None:
                outcome = replace(outcome, requeues=call.item.extra.get("requeues", 0))
            call.outcome = outcome
        self.completed.append(outcome)
        respond(outcome)


# ------------------------------------------------------------------------------------------
# The receiver


CLOSE = "close"
ENVELOPE_ERROR = "envelope_error"
DISPATCH = "dispatch"


@dataclass(frozen=True)
class EnvelopeDecision:
    """What the receiver does with an EnvelopeRequest.

    ``CLOSE``: close the connection without a response (F-22, F-23, F-24, F-38).
    ``ENVELOPE_ERROR``: send ``response`` (EnvelopeResponse bytes) with ``error_code`` and null
    ResponseData; ``throttled`` says whether the channel is throttled (only
    CLUSTER_AUTHORIZATION_FAILED, F-25; the others are exempt as ENVELOPE is a clusterAction API).
    ``DISPATCH``: run ``inner_header``/``inner_body`` in the controller's handler with
    ``inner_context`` (F-30); the request is forwarded (``is_forwarded``): never forwarded again
    (F-10), not channel-throttled (F-33), its response wrapped by ``wrap_inner_response``."""
    kind: str
    reason: str
    error_code: int = NONE
    response: bytes | None = None
    throttled: bool = False
    envelope_header: dict | None = None
    inner_header: dict | None = None
    inner_body: dict | None = None
    inner_context: RequestContext | None = None
    inner_request_bytes: bytes | None = None
    is_forwarded: bool = field(default=False)


class EnvelopeReceiver:
    """``KafkaApis.handleEnvelope`` (ZK, F-22 to F-27) and ``ControllerApis.handleEnvelopeRequest``
    (KRaft, F-28), then ``EnvelopeUtils.handleEnvelopeRequest`` (F-29, F-30).

    ``role``: ZK_BROKER (any ZK-mode broker, the ZK controller included), KRAFT_BROKER or
    KRAFT_CONTROLLER.  ``forwarding_enabled``: ZK only, the node has a ForwardingManager (F-4).
    ``principal_serde``: the envelope connection's principal builder is a
    ``KafkaPrincipalSerde``.  ``is_active_controller``: ZK only (F-26).  ``authorizer(principal,
    operation, resource)``: the ACLs.  ``api_ranges``: the versions this node enables for the
    Envelope (F-38)."""

    def __init__(self, *, role: str, authorizer: Authorizer,
                 forwarding_enabled: bool = True, principal_serde: bool = True,
                 is_active_controller: Callable[[], bool] = lambda: True,
                 envelope_versions: tuple[int, int] = (0, 0)) -> None:
        if role not in (ZK_BROKER, KRAFT_BROKER, KRAFT_CONTROLLER):
            raise ValueError(f"unknown role {role!r}")
        self.role = role
        self.authorizer = authorizer
        self.forwarding_enabled = forwarding_enabled
        self.principal_serde = principal_serde
        self.is_active_controller = is_active_controller
        self.envelope_versions = envelope_versions

    def receive(self, request_bytes: bytes, ctx: RequestContext) -> EnvelopeDecision:
        """The checks in Kafka's order; the first that fails decides."""
        # SocketServer.parseRequestHeader: the header first, then the listener scope.
        try:
            header, offset = parse_request_header(request_bytes)
        except ProtocolError as error:
            return EnvelopeDecision(CLOSE, f"unparseable request header: {error.message}")
        if header["RequestApiKey"] != ENVELOPE:
            return EnvelopeDecision(CLOSE, "not an EnvelopeRequest")
        if self.role == KRAFT_BROKER:
            # F-22: ENVELOPE's listeners are controller and zkBroker, not broker.
            return EnvelopeDecision(CLOSE, "F-22: ENVELOPE is not enabled on a KRaft broker "
                                           "(InvalidRequestException)", envelope_header=header)
        low, high = self.envelope_versions
        if not low <= header["RequestApiVersion"] <= high:
            return EnvelopeDecision(CLOSE, "F-38: Envelope version not enabled",
                                    envelope_header=header)
        try:
            body = parse_request_body(request_bytes, header, offset)
        except ProtocolError as error:
            return EnvelopeDecision(CLOSE, f"unparseable EnvelopeRequest: {error.message}",
                                    envelope_header=header)
        if self.role == ZK_BROKER:
            if not self.forwarding_enabled or not self.principal_serde:
                return EnvelopeDecision(CLOSE, "F-23: forwarding not enabled or no principal "
                                               "serde", envelope_header=header)
            if not ctx.from_privileged_listener:
                return EnvelopeDecision(CLOSE, "F-24: Envelope not on the privileged listener",
                                        envelope_header=header)
            if not self.authorizer(ctx.principal, CLUSTER_ACTION, CLUSTER_RESOURCE):
                return self._error(header, CLUSTER_AUTHORIZATION_FAILED,
                                   "F-25: sender lacks CLUSTER_ACTION", throttled=True)
            if not self.is_active_controller():
                return self._error(header, NOT_CONTROLLER, "F-26: not the active controller")
        else:
            if not self.authorizer(ctx.principal, CLUSTER_ACTION, CLUSTER_RESOURCE):
                return self._error(header, CLUSTER_AUTHORIZATION_FAILED,
                                   "F-28: sender lacks CLUSTER_ACTION", throttled=True)
        try:
            forwarded = unwrap_envelope(body, principal_serde=self.principal_serde)   # F-29
        except ProtocolError as error:
            return self._error(header, error.code, f"F-29: {error.message}")
        inner_context = RequestContext(                                                 # F-30
            listener_name=ctx.listener_name,
            security_protocol=ctx.security_protocol,
            principal=forwarded.principal,
            client_address=str(forwarded.client_address),
            client_id=forwarded.header["ClientId"],
            connection_id=ctx.connection_id,
            from_privileged_listener=ctx.from_privileged_listener)
        return EnvelopeDecision(DISPATCH, "F-27/F-30: dispatch the inner request",
                                envelope_header=header, inner_header=forwarded.header,
                                inner_body=forwarded.body, inner_context=inner_context,
                                inner_request_bytes=bytes(body["RequestData"]),
                                is_forwarded=True)

    @staticmethod
    def _error(header: dict, code: int, reason: str, throttled: bool = False) -> EnvelopeDecision:
        return EnvelopeDecision(ENVELOPE_ERROR, reason, code,
                                envelope_response(header["CorrelationId"], code),
                                throttled=throttled, envelope_header=header)


def envelope_response(correlation_id: int, error_code: int,
                      response_data: bytes | None = None) -> bytes:
    """EnvelopeResponse v0 bytes (response header v1) with the envelope's correlation id."""
    return encode_response(ENVELOPE, 0, correlation_id,
                           {"ResponseData": response_data, "ErrorCode": error_code})


def promotes_to_not_controller(api_key: int, inner_body: Mapping) -> bool:
    """F-34: the inner response's ``errorCounts`` contains NOT_CONTROLLER anywhere, or, for
    DescribeQuorum, NOT_LEADER_OR_FOLLOWER."""
    counts = error_counts(inner_body)
    return NOT_CONTROLLER in counts or (api_key == DESCRIBE_QUORUM
                                        and NOT_LEADER_OR_FOLLOWER in counts)


def wrap_inner_response(envelope_header: Mapping, inner_header: Mapping,
                        inner_body: Mapping) -> bytes:
    """``RequestChannel.Request.buildResponseSend`` for a forwarded request (F-34): an inner
    NOT_CONTROLLER anywhere makes ``{ErrorCode: 41, ResponseData: null}`` (the rest of the inner
    response is discarded; the forwarder retries the whole request, F-21.4); otherwise
    ``{ErrorCode: 0, ResponseData: inner response header + body}``.  The Envelope goes back with
    the envelope's own correlation id."""
    key, version = inner_header["RequestApiKey"], inner_header["RequestApiVersion"]
    if promotes_to_not_controller(key, inner_body):
        return envelope_response(envelope_header["CorrelationId"], NOT_CONTROLLER)
    payload = encode_response(key, version, inner_header["CorrelationId"], inner_body)
    return envelope_response(envelope_header["CorrelationId"], NONE, payload)


# ------------------------------------------------------------------------------------------
# ApiVersions (F-35, F-36)


class ApiVersion(NamedTuple):
    """One entry of an ApiVersionsResponse."""
    api_key: int
    min_version: int
    max_version: int


def intersect(a: ApiVersion | None, b: ApiVersion | None) -> ApiVersion | None:
    """``ApiVersionsResponse.intersect`` (F-36): None if either is None or the ranges do not
    overlap; ValueError (IllegalArgumentException) if the api keys differ."""
    if a is None or b is None:
        return None
    if a.api_key != b.api_key:
        raise ValueError(f"Invalid input parameters a: {a}, b: {b}")
    low, high = max(a.min_version, b.min_version), min(a.max_version, b.max_version)
    return None if low > high else ApiVersion(a.api_key, low, high)


def intersect_forwardable_apis(broker: Mapping[int, tuple[int, int]],
                               controller: Mapping[int, tuple[int, int]] | None
                               ) -> dict[int, tuple[int, int]]:
    """What a forwarding broker advertises to clients (F-35,
    ``ApiVersionsResponse.intersectForwardableApis``): for every API in the broker's scope
    (``broker``), its own range if the API is not forwardable, else the intersection with the
    controller's range -- omitted if the controller lacks it or they do not overlap.  With the
    controller's versions unknown (``None``), the broker's own ranges for everything."""
    if controller is None:
        return dict(broker)
    advertised = {}
    for key, (low, high) in sorted(broker.items()):
        api = API_KEYS.get(key)
        if api is None or not api.forwardable:
            advertised[key] = (low, high)
            continue
        theirs = controller.get(key)
        both = intersect(ApiVersion(key, low, high),
                         ApiVersion(key, *theirs) if theirs is not None else None)
        if both is not None:
            advertised[key] = (both.min_version, both.max_version)
    return advertised


# ------------------------------------------------------------------------------------------
# Errors.message(): Kafka's default message of every error code (Errors.java, apache/kafka
# commit 1eb7644349cb07139d6a3c1ad1986979647cac99; code 99 is unassigned there)


ERRORS_MESSAGE: dict[int, str | None] = {
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


__all__ = [
    "ApiVersion", "Authorizer", "ClientOutcome", "EnvelopeDecision", "EnvelopeReceiver",
    "ERRORS_MESSAGE", "ForwardedCall", "ForwardingManager", "envelope_response",
    "error_response_body",
    "first_error", "forwarding_decision", "intersect", "intersect_forwardable_apis",
    "promotes_to_not_controller", "wrap_inner_response",
    "CLOSE", "DISPATCH", "ENVELOPE_ERROR", "FORWARD", "LOCAL",
    "KRAFT_BROKER", "KRAFT_CONTROLLER", "ZK_BROKER", "CLUSTER_ACTION", "CLUSTER_RESOURCE",
]
