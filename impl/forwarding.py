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
message of the code (``impl.protocol.errors.ERROR_MESSAGES``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from ipaddress import ip_address
from typing import NamedTuple

from impl.channel import ControllerChannel, error_counts
from impl.context import ChannelRequest, RequestContext
from impl.protocol import (API_KEYS, MissingSchemaError, ProtocolError, build_envelope_request,
                           encode_response, parse_request, parse_request_body, parse_request_header,
                           parse_response, unwrap_envelope)
# ENVELOPE and the forwardable APIs (ApiKeys, docs/rules.md section 1.2)
from impl.protocol.api_keys import (ADD_RAFT_VOTER, ALLOCATE_PRODUCER_IDS, ALTER_CLIENT_QUOTAS,
                                    ALTER_CONFIGS, ALTER_PARTITION_REASSIGNMENTS,
                                    ALTER_USER_SCRAM_CREDENTIALS, CREATE_ACLS,
                                    CREATE_DELEGATION_TOKEN, CREATE_PARTITIONS, CREATE_TOPICS,
                                    DELETE_ACLS, DELETE_TOPICS, DESCRIBE_QUORUM, ELECT_LEADERS,
                                    ENVELOPE, EXPIRE_DELEGATION_TOKEN, INCREMENTAL_ALTER_CONFIGS,
                                    LIST_PARTITION_REASSIGNMENTS, REMOVE_RAFT_VOTER,
                                    RENEW_DELEGATION_TOKEN, UNREGISTER_BROKER, UPDATE_FEATURES)
from impl.protocol.errors import (CLUSTER_AUTHORIZATION_FAILED, ERROR_MESSAGES, NETWORK_EXCEPTION,
                                  NONE, NOT_CONTROLLER, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT,
                                  UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION)
from impl.protocol.principal import KafkaPrincipal
from impl.protocol.schema import ZERO_UUID
from impl.protocol.wire import response_schema

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
        ERROR_MESSAGES.get(error_code) else message
    error = _Error(error_code, api_message, ERROR_MESSAGES.get(error_code))
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


__all__ = [
    "ApiVersion", "Authorizer", "ClientOutcome", "EnvelopeDecision", "EnvelopeReceiver",
    "ForwardedCall", "ForwardingManager", "envelope_response", "error_response_body",
    "first_error", "forwarding_decision", "intersect", "intersect_forwardable_apis",
    "promotes_to_not_controller", "wrap_inner_response",
    "CLOSE", "DISPATCH", "ENVELOPE_ERROR", "FORWARD", "LOCAL",
    "KRAFT_BROKER", "KRAFT_CONTROLLER", "ZK_BROKER", "CLUSTER_ACTION", "CLUSTER_RESOURCE",
]
