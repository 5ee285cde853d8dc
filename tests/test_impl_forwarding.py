"""Request forwarding (KIP-590) in the reference implementation: ``impl/channel.py`` and
``impl/forwarding.py`` against reference section 1 (F-1 to F-36, tables 1.6 and 1.11).

Everything runs on real bytes: a client's CreateTopics request is encoded with ``impl.protocol``,
forwarded by a ``ForwardingManager`` through a ``ControllerChannel`` (ApiVersions handshake
included), decoded and checked by an ``EnvelopeReceiver`` on the controller, answered by a small
controller handler, wrapped (F-34) and unwrapped again; the clock is an explicit integer.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from ipaddress import IPv4Address

import pytest

from channel_helpers import item

from impl.channel import (KRAFT_FORWARDING_RETRY_TIMEOUT_MS, ZK_FORWARDING_RETRY_TIMEOUT_MS,
                          REGISTRATION_RETRY_TIMEOUT_MS, ControllerChannel, FatalExitError,
                          IllegalStateError, api_versions_response, error_counts, own_api_ranges)
from impl.context import ChannelRequest, ControllerInfo, RequestContext
from impl.forwarding import (CLOSE, CLUSTER_ACTION, CLUSTER_RESOURCE, DISPATCH, ENVELOPE_ERROR,
                             FORWARD, KRAFT_BROKER, KRAFT_CONTROLLER, LOCAL, ZK_BROKER,
                             ApiVersion, EnvelopeReceiver, ForwardingManager, envelope_response,
                             error_response_body, forwarding_decision, intersect,
                             intersect_forwardable_apis, promotes_to_not_controller,
                             wrap_inner_response)
from impl.protocol import (API_KEYS, FORWARDABLE_API_KEYS, KafkaPrincipal, build_envelope_request,
                           decode, encode, encode_request, encode_response, get_schema,
                           parse_request, parse_request_header, parse_response)
from impl.protocol.errors import (ERROR_MESSAGES, NETWORK_EXCEPTION, NOT_CONTROLLER,
                                  REQUEST_TIMED_OUT, UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION)
from impl.protocol import schema as schema_module

CLUSTER_AUTHORIZATION_FAILED = 31
INVALID_REQUEST = 42
PRINCIPAL_DESERIALIZATION_FAILURE = 97
NOT_LEADER_OR_FOLLOWER = 6

ALICE = KafkaPrincipal("User", "alice")
BROKER = KafkaPrincipal("User", "broker")
MALLORY = KafkaPrincipal("User", "mallory")
CONTROLLER = ControllerInfo(3000, "CONTROLLER", "SASL_SSL")
OTHER_CONTROLLER = ControllerInfo(3001, "CONTROLLER", "SASL_SSL")
CLIENT_CTX = RequestContext("EXTERNAL", "SASL_SSL", ALICE, client_address="192.0.2.7",
                            client_id="admin-1", connection_id="c1")
ENVELOPE_CTX = RequestContext("CONTROLLER", "SASL_SSL", BROKER, client_address="10.0.0.1",
                              connection_id="e1", from_privileged_listener=True)


def acl(principal, operation, resource) -> bool:
    """ACLs: the broker principal has CLUSTER_ACTION on the cluster; nobody else does."""
    return principal == BROKER and operation == CLUSTER_ACTION and resource == CLUSTER_RESOURCE


def create_topics(correlation_id: int = 11, version: int = 7,
                  topics: tuple[str, ...] = ("orders",)) -> bytes:
    header = {"RequestApiKey": 19, "RequestApiVersion": version,
              "CorrelationId": correlation_id, "ClientId": "admin-1"}
    body = {"Topics": [{"Name": t, "NumPartitions": 3, "ReplicationFactor": 1} for t in topics],
            "timeoutMs": 30000}
    return encode_request(header, body)


def decode_envelope(payload: bytes) -> tuple[dict, dict]:
    header, body = parse_request(payload)
    assert header["RequestApiKey"] == 58
    return header, body


def reencode_envelope(payload: bytes, **changes) -> bytes:
    header, body = decode_envelope(payload)
    body.update(changes)
    return encode_request(header, body)


@dataclass
class Controller:
    """A controller node: ApiVersions, the Envelope checks and a CreateTopics handler, or
    ``handler(decision)`` giving the inner response body of any API."""
    receiver: EnvelopeReceiver
    ranges: dict = field(default_factory=own_api_ranges)
    topic_error: int = 0                 # the inner CreateTopics error per topic
    throttle_ms: int = 0                 # the controller's quota throttle in the inner response
    handled: list = field(default_factory=list)
    handler: object = None

    def answer(self, payload: bytes, ctx: RequestContext = ENVELOPE_CTX):
        """The bytes it sends back, or None if it closes the connection."""
        if payload[:2] == b"\x00\x12":                # ApiVersions
            return api_versions_response(payload, self.ranges)
        decision = self.receiver.receive(payload, ctx)
        self.handled.append(decision)
        if decision.kind == CLOSE:
            return None
        if decision.kind == ENVELOPE_ERROR:
            return decision.response
        if self.handler is not None:
            inner = self.handler(decision)
            return wrap_inner_response(decision.envelope_header, decision.inner_header, inner)
        inner = {"ThrottleTimeMs": self.throttle_ms,
                 "Topics": [{"Name": t["Name"], "ErrorCode": self.topic_error,
                             "NumPartitions": t["NumPartitions"],
                             "ReplicationFactor": t["ReplicationFactor"]}
                            for t in decision.inner_body["Topics"]]}
        return wrap_inner_response(decision.envelope_header, decision.inner_header, inner)


class Broker:
    """A forwarding broker wired to a controller through its channel, on a simulated clock."""

    def __init__(self, controller: Controller | None, *,
                 retry_timeout_ms: int = KRAFT_FORWARDING_RETRY_TIMEOUT_MS,
                 provider=None, **manager_args):
        self.controller = controller
        self.provider_answer = CONTROLLER if controller is not None else None
        self.channel = ControllerChannel(provider or (lambda: self.provider_answer),
                                         retry_timeout_ms=retry_timeout_ms)
        self.manager = ForwardingManager(self.channel, **manager_args)
        self.outcomes = []
        self.sent = []
        self.now = 0
        self.tamper = None               # payload -> payload, applied to Envelopes in transit

    def forward(self, request: bytes = None, ctx: RequestContext = CLIENT_CTX):
        return self.manager.forward(request or create_topics(), ctx, self.now,
                                    self.outcomes.append)

    def run(self, until_ms: int = 200_000, controller_for=None) -> None:
        """Free-running: wake at the channel's deadlines, deliver each request at once."""
        while not self.outcomes and self.now <= until_ms:
            for out in self.channel.poll(self.now):
                self.sent.append(out)
                target = (controller_for(out.destination) if controller_for
                          else self.controller)
                payload = out.payload
                if out.api_key == 58 and self.tamper is not None:
                    payload = self.tamper(payload)
                answer = target.answer(payload)
                if answer is None:
                    self.channel.on_disconnect(self.now)
                else:
                    self.channel.on_response(out.correlation_id, answer, self.now)
            if self.outcomes:
                break
            deadline = self.channel.next_deadline_ms()
            assert deadline is not None
            self.now = max(self.now, deadline)


def kraft_controller(**kw) -> Controller:
    return Controller(EnvelopeReceiver(role=KRAFT_CONTROLLER, authorizer=acl), **kw)


def one_outcome(broker: Broker):
    assert len(broker.outcomes) == 1, broker.outcomes
    return broker.outcomes[0]


def client_topic_errors(outcome) -> list[int]:
    body = parse_response(outcome.response, parse_request(create_topics())[0])
    return [t["ErrorCode"] for t in body["Topics"]]


# ------------------------------------------------------------------------------------------
# Table 1.11, one test per row


def test_table_1_11_ok_client_gets_the_controllers_response_unchanged():
    controller = kraft_controller()
    broker = Broker(controller)
    broker.forward(create_topics(topics=("orders", "payments")))
    broker.run()
    outcome = one_outcome(broker)
    assert not outcome.close_connection and outcome.envelope_error == 0
    assert outcome.from_controller and outcome.error_code == 0
    # Exactly the bytes the controller put into ResponseData (inner header = the client's
    # correlation id, F-11/F-34).
    decision = controller.handled[-1]
    inner = {"ThrottleTimeMs": 0,
             "Topics": [{"Name": n, "ErrorCode": 0, "NumPartitions": 3, "ReplicationFactor": 1}
                        for n in ("orders", "payments")]}
    assert outcome.response == encode_response(19, 7, 11, inner)
    assert decision.inner_header["CorrelationId"] == 11
    # The first send on the new connection was ApiVersions, then the Envelope (F-35).
    assert [out.api_key for out in broker.sent] == [18, 58]


def test_table_1_11_inner_not_controller_is_retried_transparently_until_success():
    stale = kraft_controller(topic_error=NOT_CONTROLLER)
    active = kraft_controller()
    broker = Broker(stale)
    broker.forward()
    # First send goes to the stale controller: its inner NOT_CONTROLLER is promoted (F-34),
    # the channel forgets it and re-queues (F-21.4); the provider now names the new leader.
    handshake, envelope = broker.channel.poll(0)[0], None
    broker.channel.on_response(handshake.correlation_id,
                               stale.answer(handshake.payload), 0)
    envelope = broker.channel.poll(0)[0]
    reply = stale.answer(envelope.payload)
    assert decode(get_schema("EnvelopeResponse"), reply[5:], 0)["ErrorCode"] == NOT_CONTROLLER
    broker.channel.on_response(envelope.correlation_id, reply, 0)
    assert broker.channel.cached_controller is None and broker.outcomes == []
    assert broker.channel.queue[0].extra["requeues"] == 1
    broker.provider_answer = OTHER_CONTROLLER
    broker.now = 1
    broker.run(controller_for=lambda node: active if node == OTHER_CONTROLLER.node_id else stale)
    outcome = one_outcome(broker)
    assert outcome.error_code == 0 and outcome.retried and outcome.from_controller
    assert client_topic_errors(outcome) == [0]


def test_table_1_11_inner_not_controller_until_the_retry_timeout_gives_request_timed_out():
    stale = kraft_controller(topic_error=NOT_CONTROLLER)
    broker = Broker(stale)
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.error_code == REQUEST_TIMED_OUT and outcome.retried
    assert client_topic_errors(outcome) == [REQUEST_TIMED_OUT]
    # Retried every reconnect backoff (50 ms) until 60 s after the enqueue (F-17, F-19).
    assert outcome.completed_ms == KRAFT_FORWARDING_RETRY_TIMEOUT_MS
    assert len([o for o in broker.sent if o.api_key == 58]) > 100


def test_table_1_11_sender_lacks_cluster_action_gives_unknown_server_error():
    controller = Controller(EnvelopeReceiver(role=KRAFT_CONTROLLER,
                                             authorizer=lambda p, o, r: False))
    broker = Broker(controller)
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.envelope_error == CLUSTER_AUTHORIZATION_FAILED
    assert outcome.error_code == UNKNOWN_SERVER_ERROR and not outcome.from_controller
    assert client_topic_errors(outcome) == [UNKNOWN_SERVER_ERROR]
    assert outcome.body["Topics"][0]["ErrorMessage"] is None   # ApiError hides the message


def test_table_1_11_principal_not_deserializable_gives_unknown_server_error():
    broker = Broker(kraft_controller())
    broker.tamper = lambda payload: reencode_envelope(payload, RequestPrincipal=b"\x00\x07xx")
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.envelope_error == PRINCIPAL_DESERIALIZATION_FAILURE
    assert client_topic_errors(outcome) == [UNKNOWN_SERVER_ERROR]


def test_table_1_11_bad_client_address_gives_unknown_server_error():
    broker = Broker(kraft_controller())
    broker.tamper = lambda payload: reencode_envelope(payload, ClientHostAddress=b"\x0a\x00\x00")
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.envelope_error == INVALID_REQUEST
    assert client_topic_errors(outcome) == [UNKNOWN_SERVER_ERROR]


def leave_group_bytes(correlation_id: int = 11) -> bytes:
    """A LeaveGroup v5 request header (flexible: header v2) and a body we never reach."""
    header = encode(get_schema("RequestHeader"),
                    {"RequestApiKey": 13, "RequestApiVersion": 5,
                     "CorrelationId": correlation_id, "ClientId": "admin-1"}, 2)
    return header + b"\x00garbage"


def test_table_1_11_inner_api_not_forwardable_gives_unknown_server_error():
    broker = Broker(kraft_controller())
    broker.tamper = lambda payload: reencode_envelope(payload, RequestData=leave_group_bytes())
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.envelope_error == INVALID_REQUEST
    assert client_topic_errors(outcome) == [UNKNOWN_SERVER_ERROR]


@pytest.mark.parametrize("corrupt", ["header", "body", "version"])
def test_table_1_11_inner_unparsable_or_unsupported_version_closes_the_client_connection(corrupt):
    def tamper(payload):
        data = decode_envelope(payload)[1]["RequestData"]
        if corrupt == "header":
            data = data[:3]
        elif corrupt == "body":
            data = data[:-6]
        else:        # CreateTopics v99: the receiver cannot parse that version (F-29e)
            data = data[:2] + b"\x00\x63" + data[4:]
        return reencode_envelope(payload, RequestData=data)
    broker = Broker(kraft_controller())
    broker.tamper = tamper
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.envelope_error == UNSUPPORTED_VERSION
    assert outcome.close_connection and outcome.response is None
    assert outcome.error_code == NETWORK_EXCEPTION


def zk_controller(**receiver_args) -> Controller:
    args = dict(role=ZK_BROKER, authorizer=acl)
    args.update(receiver_args)
    return Controller(EnvelopeReceiver(**args))


def test_table_1_11_envelope_on_non_privileged_listener_is_a_disconnect_retried_until_timeout():
    controller = zk_controller()
    broker = Broker(controller, retry_timeout_ms=ZK_FORWARDING_RETRY_TIMEOUT_MS)
    unprivileged = RequestContext("EXTERNAL", "SASL_SSL", BROKER, from_privileged_listener=False)
    original_answer = controller.answer
    controller.answer = lambda payload, ctx=unprivileged: original_answer(payload, ctx)
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert all(d.kind == CLOSE and d.reason.startswith("F-24") for d in controller.handled)
    assert outcome.error_code == REQUEST_TIMED_OUT and outcome.envelope_error is None
    assert outcome.retried and outcome.completed_ms == ZK_FORWARDING_RETRY_TIMEOUT_MS


def test_table_1_11_no_controller_reachable_gives_request_timed_out_at_the_retry_timeout():
    broker = Broker(None)
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.error_code == REQUEST_TIMED_OUT and not outcome.retried
    assert outcome.completed_ms == KRAFT_FORWARDING_RETRY_TIMEOUT_MS
    assert broker.sent == []
    assert client_topic_errors(outcome) == [REQUEST_TIMED_OUT]


# ------------------------------------------------------------------------------------------
# The rest of table 1.6


def test_table_1_6_version_mismatch_gives_unknown_server_error_without_sending():
    ranges = own_api_ranges()
    del ranges[58]                     # a controller that does not offer the Envelope
    broker = Broker(kraft_controller(ranges=ranges))
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.error_code == UNKNOWN_SERVER_ERROR and outcome.envelope_error is None
    assert [o.api_key for o in broker.sent] == [18]


def test_table_1_6_authentication_failure_gives_unknown_server_error_and_no_retry():
    broker = Broker(kraft_controller())
    broker.forward()
    handshake = broker.channel.poll(0)[0]
    broker.channel.on_response(handshake.correlation_id,
                               broker.controller.answer(handshake.payload), 0)
    assert broker.channel.poll(0)[0].api_key == 58
    broker.channel.on_authentication_failure(5)
    outcome = one_outcome(broker)
    assert outcome.error_code == UNKNOWN_SERVER_ERROR and not outcome.retried
    assert broker.channel.queue == () and broker.channel.cached_controller is None


def test_table_1_6_inner_correlation_id_mismatch_gives_unknown_server_error():
    controller = kraft_controller()
    original = controller.answer

    def wrong_correlation(payload, ctx=ENVELOPE_CTX):
        if parse_request_header(payload)[0]["RequestApiKey"] != 58:
            return original(payload, ctx)
        decision = controller.receiver.receive(payload, ctx)
        inner_header = dict(decision.inner_header, CorrelationId=999)
        return wrap_inner_response(decision.envelope_header, inner_header,
                                   {"Topics": [{"Name": "orders", "ErrorCode": 0}]})
    controller.answer = wrong_correlation
    broker = Broker(controller)
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.envelope_error == 0 and outcome.error_code == UNKNOWN_SERVER_ERROR


def test_f12_no_principal_serde_answers_unknown_server_error_at_once():
    broker = Broker(kraft_controller(), principal_serde=False)
    assert broker.forward() is None
    outcome = one_outcome(broker)
    assert outcome.error_code == UNKNOWN_SERVER_ERROR and broker.channel.queue == ()


def test_f11_to_f13_envelope_carries_original_bytes_principal_and_address():
    broker = Broker(kraft_controller())
    request = create_topics(correlation_id=42)
    ipv6 = RequestContext("EXTERNAL", "SSL", ALICE, client_address="2001:db8::1")
    broker.forward(request, ipv6)
    handshake = broker.channel.poll(0)[0]
    broker.channel.on_response(handshake.correlation_id,
                               broker.controller.answer(handshake.payload), 0)
    envelope = broker.channel.poll(0)[0]
    header, body = decode_envelope(envelope.payload)
    assert body["RequestData"] == request                                       # F-11
    assert body["RequestPrincipal"][:2] == b"\x00\x00"                          # F-12 prefix
    assert len(body["ClientHostAddress"]) == 16                                 # F-13
    assert header["CorrelationId"] == envelope.correlation_id != 42
    decision = broker.controller.receiver.receive(envelope.payload, ENVELOPE_CTX)
    assert decision.inner_context.principal == ALICE
    assert decision.inner_context.client_address == "2001:db8::1"


# ------------------------------------------------------------------------------------------
# Receiving side: checks in Kafka's order


def envelope_bytes(*, principal: bytes | None = None, address: bytes | None = None,
                   data: bytes | None = None) -> bytes:
    """A well-formed EnvelopeRequest with optional broken fields."""
    body = build_envelope_request(create_topics(), ALICE, IPv4Address("192.0.2.7"))
    if principal is not None:
        body["RequestPrincipal"] = principal
    if address is not None:
        body["ClientHostAddress"] = address
    if data is not None:
        body["RequestData"] = data
    header = {"RequestApiKey": 58, "RequestApiVersion": 0, "CorrelationId": 77,
              "ClientId": "broker-1"}
    return encode_request(header, body)


BAD_PRINCIPAL = b"\x00\x09"
BAD_ADDRESS = b"\x01\x02\x03"
NOT_PRIVILEGED = RequestContext("EXTERNAL", "SASL_SSL", BROKER, from_privileged_listener=False)
AS_MALLORY = RequestContext("CONTROLLER", "SASL_SSL", MALLORY, from_privileged_listener=True)


def zk_receiver(**kw) -> EnvelopeReceiver:
    args = dict(role=ZK_BROKER, authorizer=acl, forwarding_enabled=True, principal_serde=True,
                is_active_controller=lambda: True)
    args.update(kw)
    return EnvelopeReceiver(**args)


def test_f22_kraft_broker_closes_even_a_perfect_envelope():
    decision = EnvelopeReceiver(role=KRAFT_BROKER, authorizer=acl).receive(envelope_bytes(),
                                                                          ENVELOPE_CTX)
    assert decision.kind == CLOSE and decision.reason.startswith("F-22")
    assert decision.response is None


def test_f23_before_f24_forwarding_disabled_wins_over_wrong_listener():
    decision = zk_receiver(forwarding_enabled=False).receive(envelope_bytes(), NOT_PRIVILEGED)
    assert decision.kind == CLOSE and decision.reason.startswith("F-23")
    decision = zk_receiver(principal_serde=False).receive(envelope_bytes(), NOT_PRIVILEGED)
    assert decision.kind == CLOSE and decision.reason.startswith("F-23")


def test_f24_before_f25_wrong_listener_closes_before_the_acl_check():
    unprivileged_mallory = RequestContext("EXTERNAL", "SASL_SSL", MALLORY)
    decision = zk_receiver().receive(envelope_bytes(), unprivileged_mallory)
    assert decision.kind == CLOSE and decision.reason.startswith("F-24")


def test_f25_before_f26_cluster_authorization_failed_before_not_controller():
    decision = zk_receiver(is_active_controller=lambda: False).receive(envelope_bytes(),
                                                                       AS_MALLORY)
    assert decision.kind == ENVELOPE_ERROR and decision.error_code == CLUSTER_AUTHORIZATION_FAILED
    assert decision.throttled
    body = parse_response(decision.response, decision.envelope_header)
    assert body == {"ResponseData": None, "ErrorCode": CLUSTER_AUTHORIZATION_FAILED}


def test_f26_before_f29_not_controller_before_principal_deserialization():
    decision = zk_receiver(is_active_controller=lambda: False).receive(
        envelope_bytes(principal=BAD_PRINCIPAL), ENVELOPE_CTX)
    assert decision.kind == ENVELOPE_ERROR and decision.error_code == NOT_CONTROLLER
    assert not decision.throttled


@pytest.mark.parametrize("role", [ZK_BROKER, KRAFT_CONTROLLER])
@pytest.mark.parametrize("broken,expected", [
    (dict(principal=BAD_PRINCIPAL, address=BAD_ADDRESS, data=b"\x00"),
     PRINCIPAL_DESERIALIZATION_FAILURE),                              # F-29a first
    (dict(address=BAD_ADDRESS, data=b"\x00"), INVALID_REQUEST),       # F-29b before c
    (dict(data=b"\x00\x13"), UNSUPPORTED_VERSION),                     # F-29c
    (dict(data=leave_group_bytes()), INVALID_REQUEST),                 # F-29d before e
    (dict(data=create_topics()[:-4]), UNSUPPORTED_VERSION),            # F-29e
])
def test_f29_unwrap_checks_in_order(role, broken, expected):
    receiver = zk_receiver() if role == ZK_BROKER else EnvelopeReceiver(role=role, authorizer=acl)
    decision = receiver.receive(envelope_bytes(**broken), ENVELOPE_CTX)
    assert decision.kind == ENVELOPE_ERROR and decision.error_code == expected
    body = parse_response(decision.response, decision.envelope_header)
    assert body["ResponseData"] is None and decision.envelope_header["CorrelationId"] == 77


def test_f28_kraft_controller_checks_only_cluster_action_then_unwraps():
    receiver = EnvelopeReceiver(role=KRAFT_CONTROLLER, authorizer=acl,
                                is_active_controller=lambda: False)
    # No privileged-listener check, no "am I active" check (F-28).
    assert receiver.receive(envelope_bytes(), NOT_PRIVILEGED).kind == DISPATCH
    # CLUSTER_ACTION comes before the principal (F-28 before F-29a).
    decision = receiver.receive(envelope_bytes(principal=BAD_PRINCIPAL), AS_MALLORY)
    assert decision.error_code == CLUSTER_AUTHORIZATION_FAILED
    # No serde on the envelope's connection is PRINCIPAL_DESERIALIZATION_FAILURE, not a close.
    no_serde = EnvelopeReceiver(role=KRAFT_CONTROLLER, authorizer=acl, principal_serde=False)
    assert no_serde.receive(envelope_bytes(), ENVELOPE_CTX).error_code == \
        PRINCIPAL_DESERIALIZATION_FAILURE


def test_f30_inner_request_runs_as_the_forwarded_principal_and_address():
    decision = zk_receiver().receive(envelope_bytes(), ENVELOPE_CTX)
    assert decision.kind == DISPATCH and decision.is_forwarded
    ctx = decision.inner_context
    assert ctx.principal == ALICE and ctx.client_address == "192.0.2.7"
    assert ctx.listener_name == "CONTROLLER" and ctx.from_privileged_listener
    assert ctx.client_id == "admin-1" and ctx.connection_id == "e1"
    assert decision.inner_header["RequestApiKey"] == 19
    assert decision.inner_body["Topics"][0]["Name"] == "orders"
    assert decision.inner_request_bytes == create_topics()


def test_unparseable_or_wrong_version_envelope_closes_the_connection():
    """F-38: the socket server closes the connection; no EnvelopeResponse is sent."""
    receiver = EnvelopeReceiver(role=KRAFT_CONTROLLER, authorizer=acl)
    assert receiver.receive(envelope_bytes()[:9], ENVELOPE_CTX).kind == CLOSE
    raw = bytearray(envelope_bytes())
    raw[2:4] = b"\x00\x01"                      # Envelope v1 does not exist
    decision = receiver.receive(bytes(raw), ENVELOPE_CTX)
    assert decision.kind == CLOSE and decision.reason.startswith("F-38")
    assert decision.response is None


# ------------------------------------------------------------------------------------------
# F-34 response wrapping


def test_f34_one_not_controller_among_many_topics_promotes_the_whole_envelope():
    envelope_header = {"RequestApiKey": 58, "RequestApiVersion": 0, "CorrelationId": 5}
    inner_header = parse_request(create_topics(topics=("a", "b")))[0]
    inner = {"Topics": [{"Name": "a", "ErrorCode": 0},
                        {"Name": "b", "ErrorCode": NOT_CONTROLLER}]}
    body = parse_response(wrap_inner_response(envelope_header, inner_header, inner),
                          envelope_header)
    assert body == {"ResponseData": None, "ErrorCode": NOT_CONTROLLER}
    inner["Topics"][1]["ErrorCode"] = 36          # TOPIC_ALREADY_EXISTS: wrapped as is
    body = parse_response(wrap_inner_response(envelope_header, inner_header, inner),
                          envelope_header)
    assert body["ErrorCode"] == 0
    assert parse_response(body["ResponseData"], inner_header)["Topics"][1]["ErrorCode"] == 36


def test_f34_describe_quorum_not_leader_or_follower_is_promoted_too():
    assert promotes_to_not_controller(55, {"ErrorCode": 0,
                                           "Topics": [{"ErrorCode": NOT_LEADER_OR_FOLLOWER}]})
    assert not promotes_to_not_controller(19, {"Topics": [{"ErrorCode": NOT_LEADER_OR_FOLLOWER}]})
    # F-21.4 looks at errorCounts of the EnvelopeResponse: only its own code.
    assert error_counts({"ResponseData": b"\x00\x29", "ErrorCode": 0}) == {0: 1}


# ------------------------------------------------------------------------------------------
# F-32, F-33 throttling


@pytest.mark.parametrize("controller_ms,local_ms,expected", [
    (0, 1500, 1500), (1500, 0, 1500), (3000, 1000, 3000)])
def test_f32_forwarder_throttles_by_the_max_of_controller_and_local(controller_ms, local_ms,
                                                                    expected):
    broker = Broker(kraft_controller(throttle_ms=controller_ms),
                    request_throttle_ms=lambda ctx, now: local_ms)
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.throttle_time_ms == expected
    assert parse_response(outcome.response, parse_request(create_topics())[0])[
        "ThrottleTimeMs"] == expected


def test_f32_old_version_without_throttle_field_is_still_channel_throttled():
    broker = Broker(kraft_controller(), request_throttle_ms=lambda ctx, now: 700)
    request = create_topics(version=1)
    broker.forward(request)
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.throttle_time_ms == 700
    assert "ThrottleTimeMs" not in outcome.body or outcome.body["ThrottleTimeMs"] == 0
    assert outcome.response == encode_response(19, 1, 11, {"Topics": [
        {"Name": "orders", "ErrorCode": 0}]})


def test_f32_timeout_error_response_carries_the_local_throttle():
    broker = Broker(None, request_throttle_ms=lambda ctx, now: 250)
    broker.forward()
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.error_code == REQUEST_TIMED_OUT and outcome.throttle_time_ms == 250
    assert error_response_body(19, 7, parse_request(create_topics())[1], 7, None, 250) == \
        outcome.body


# ------------------------------------------------------------------------------------------
# ControllerChannel: retry timeout, re-queue, one in flight, backoff, network timeout




def ready_channel(retry_timeout_ms=KRAFT_FORWARDING_RETRY_TIMEOUT_MS, controller_ranges=None,
                  answer=CONTROLLER):
    state = {"answer": answer}
    ranges = controller_ranges or own_api_ranges()
    channel = ControllerChannel(lambda: state["answer"], retry_timeout_ms=retry_timeout_ms,
                                controller_api_versions=lambda info: ranges)
    return channel, state


def topic_of(out) -> str:
    return parse_request(out.payload)[1]["Topics"][0]["Name"]


def test_f18_enqueue_before_start_is_an_illegal_state():
    channel = ControllerChannel(lambda: CONTROLLER, retry_timeout_ms=5000, started=False)
    with pytest.raises(IllegalStateError):
        channel.enqueue(item("a", []), 0)
    channel.start()
    channel.enqueue(item("a", []), 0)
    assert len(channel.queue) == 1


def test_f16_one_in_flight_fifo_and_increasing_correlation_ids():
    log = []
    channel, _ = ready_channel()
    for tag in "abc":
        channel.enqueue(item(tag, log), 0)
    first = channel.poll(0)
    assert [topic_of(o) for o in first] == ["a"]
    assert channel.poll(1) == [] and channel.next_send(1) is None      # one in flight
    reply = encode_response(19, 7, first[0].correlation_id,
                            {"Topics": [{"Name": "a", "ErrorCode": 0}]})
    assert channel.on_response(first[0].correlation_id, reply, 2)
    second = channel.poll(2)[0]
    assert topic_of(second) == "b" and second.correlation_id > first[0].correlation_id
    assert log == [("a", "response", 0, 2)]


def test_f21_disconnect_requeues_at_the_front_and_forgets_the_controller():
    log = []
    channel, _ = ready_channel()
    channel.enqueue(item("a", log), 0)
    channel.enqueue(item("b", log), 0)
    assert topic_of(channel.poll(0)[0]) == "a"
    assert channel.on_disconnect(10).description == "a"
    assert [i.description for i in channel.queue] == ["a", "b"]
    assert channel.cached_controller is None and channel.inflight is None
    # Rediscovered at once, but reconnecting waits reconnect.backoff.ms = 50.
    assert channel.poll(20) == [] and channel.cached_controller == CONTROLLER
    assert channel.next_deadline_ms() == 60
    assert topic_of(channel.poll(60)[0]) == "a"
    assert channel.queue[0].extra == {} and channel.inflight.extra["requeues"] == 1


def test_f21_not_controller_response_requeues_at_front_and_stale_responses_are_ignored():
    log = []
    channel, state = ready_channel()
    channel.enqueue(item("a", log), 0)
    out = channel.poll(0)[0]
    reply = encode_response(19, 7, out.correlation_id,
                            {"Topics": [{"Name": "a", "ErrorCode": NOT_CONTROLLER}]})
    assert channel.on_response(out.correlation_id, reply, 5)
    assert log == [] and channel.cached_controller is None
    assert channel.controller_api_versions is None          # the connection went with it
    assert [i.description for i in channel.queue] == ["a"]
    assert not channel.on_response(out.correlation_id, reply, 6)   # nothing in flight
    state["answer"] = OTHER_CONTROLLER
    resent = channel.poll(100)[0]
    assert resent.destination == OTHER_CONTROLLER.node_id
    assert not channel.on_response(out.correlation_id, reply, 101)  # old correlation id
    assert channel.inflight.description == "a"


def test_f17_f19_retry_timeout_counts_from_enqueue_not_from_send():
    log = []
    channel, state = ready_channel(answer=None)
    channel.enqueue(item("a", log), 0)
    assert channel.poll(0) == []
    state["answer"] = CONTROLLER
    out = channel.poll(59_000)[0]              # sent 59 s after the enqueue
    channel.on_disconnect(59_990)              # re-queued at the front ...
    assert channel.poll(59_999) == []          # (reconnect backoff: not resent yet)
    assert channel.expire(59_999) == [] and log == [] and len(channel.queue) == 1
    expired = channel.expire(60_000)           # ... and dropped 60 s after the ENQUEUE
    assert [i.description for i in expired] == ["a"] and log == [("a", "timeout", 60_000)]
    assert out.api_key == 19 and channel.queue == ()


def test_f19_expired_head_is_never_sent_and_next_items_still_go():
    log = []
    channel, state = ready_channel(retry_timeout_ms=REGISTRATION_RETRY_TIMEOUT_MS, answer=None)
    channel.enqueue(item("old", log), 0)
    channel.enqueue(item("new", log), 3000)
    state["answer"] = CONTROLLER
    channel.discover_controller(5000)
    assert channel.next_send(5000) is None                    # expire must run first
    sent = channel.poll(5000)
    assert log == [("old", "timeout", 5000)] and [topic_of(o) for o in sent] == ["new"]


def test_f20_no_controller_backs_off_100_ms_and_enqueue_does_not_wake_the_thread():
    """NodeToControllerRequestThread.enqueue wakes the thread only when a controller is known:
    a request enqueued during the 100 ms no-controller backoff waits for its end."""
    log = []
    channel, state = ready_channel(answer=None)
    channel.enqueue(item("a", log), 0)
    assert channel.poll(0) == [] and channel.cached_controller is None
    assert channel.next_deadline_ms() == 100
    channel.enqueue(item("b", log), 40)                       # no wakeup(): no controller
    assert channel.next_deadline_ms() == 100
    channel.poll(100)
    assert channel.next_deadline_ms() == 200
    state["answer"] = CONTROLLER
    assert channel.discover_controller(200) == CONTROLLER
    assert channel.discover_controller(201) is None           # cached: the provider is not asked
    assert [topic_of(o) for o in channel.poll(201)] == ["a"]


def test_network_timeout_is_min_of_socket_timeout_and_retry_timeout():
    log = []
    channel, _ = ready_channel()
    assert channel.request_timeout_ms == 30_000
    registration, _ = ready_channel(retry_timeout_ms=REGISTRATION_RETRY_TIMEOUT_MS)
    assert registration.request_timeout_ms == 5_000
    channel.enqueue(item("a", log), 0)
    channel.poll(0)
    assert channel.next_deadline_ms() == 30_001
    channel.expire(30_000)
    assert channel.inflight is not None                       # not yet: timeSinceSend > timeout
    channel.expire(30_001)
    assert channel.inflight is None and channel.cached_controller is None
    assert [i.description for i in channel.queue] == ["a"] and log == []
    # Resent, and timed out by the network again at 60 002: the item outlives its 60 s retry
    # timeout while in flight, then expires on the next expire (F-19).
    assert topic_of(channel.poll(30_051)[0]) == "a"
    assert channel.expire(60_000) == [] and channel.inflight is not None
    assert [i.description for i in channel.expire(60_052)] == ["a"]
    assert log == [("a", "timeout", 60_052)]


def test_channel_builds_at_the_negotiated_version():
    log = []
    ranges = own_api_ranges()
    ranges[19] = (2, 5)
    channel, _ = ready_channel(controller_ranges=ranges)
    channel.enqueue(item("a", log), 0)
    out = channel.poll(0)[0]
    assert out.api_version == 5 and parse_request(out.payload)[0]["RequestApiVersion"] == 5
    assert channel.controller_api_versions[19] == (2, 5)


def test_api_versions_handshake_on_the_wire_with_kip_511_fallback():
    log = []
    controller_ranges = own_api_ranges()
    controller_ranges[18] = (0, 3)                  # an older controller
    channel = ControllerChannel(lambda: CONTROLLER, retry_timeout_ms=60_000)
    channel.enqueue(item("a", log), 0)
    first = channel.poll(0)[0]
    assert first.api_key == 18 and first.api_version == 4 and channel.inflight is None
    channel.on_response(first.correlation_id, api_versions_response(first.payload,
                                                                    controller_ranges), 1)
    retry = channel.poll(1)[0]
    assert retry.api_key == 18 and retry.api_version == 3
    channel.on_response(retry.correlation_id, api_versions_response(retry.payload,
                                                                    controller_ranges), 2)
    assert channel.controller_api_versions[18] == (0, 3)
    assert channel.poll(2)[0].api_key == 19


def test_registration_not_controller_response_is_retried():
    """The registration channel (F-17: 5 s) re-queues on a top-level NOT_CONTROLLER too."""
    log = []
    channel, _ = ready_channel(retry_timeout_ms=REGISTRATION_RETRY_TIMEOUT_MS)
    request = ChannelRequest(
        api_key=70,
        build=lambda v: {"ControllerId": 3001, "IncarnationId": uuid.UUID(int=7),
                         "ZkMigrationReady": False, "Listeners": [], "Features": []},
        on_response=lambda code, body, now: log.append(code),
        on_timeout=lambda now: log.append("timeout"))
    channel.enqueue(request, 0)
    out = channel.poll(0)[0]
    assert out.api_key == 70
    reply = encode_response(70, 0, out.correlation_id, {"ErrorCode": NOT_CONTROLLER})
    channel.on_response(out.correlation_id, reply, 1)
    assert log == [] and channel.queue == (request,)
    out = channel.poll(51)[0]
    channel.on_response(out.correlation_id, encode_response(70, 0, out.correlation_id,
                                                            {"ErrorCode": 0}), 52)
    assert log == [0]


# ------------------------------------------------------------------------------------------
# F-35, F-36 ApiVersions intersection; F-1 to F-10 forwarding decision


def test_f36_intersect():
    a, b = ApiVersion(19, 2, 7), ApiVersion(19, 0, 5)
    assert intersect(a, b) == ApiVersion(19, 2, 5) == intersect(b, a)
    assert intersect(a, None) is None and intersect(None, b) is None
    assert intersect(ApiVersion(19, 6, 7), b) is None
    with pytest.raises(ValueError):
        intersect(a, ApiVersion(20, 0, 5))


def test_f35_broker_advertises_intersection_of_forwardable_apis_only():
    broker = {3: (0, 12), 19: (2, 7), 30: (0, 3), 44: (0, 1), 60: (0, 1)}
    controller = {3: (0, 1), 19: (0, 5), 30: (4, 6), 60: (0, 0)}
    advertised = intersect_forwardable_apis(broker, controller)
    assert advertised == {3: (0, 12), 19: (2, 5), 60: (0, 1)}   # 30 disjoint, 44 missing
    assert intersect_forwardable_apis(broker, None) == broker


def test_f35_channel_knows_controller_versions_only_while_connected():
    broker = Broker(kraft_controller(ranges={**own_api_ranges(), 19: (0, 4)}))
    assert broker.channel.controller_api_versions is None
    broker.forward()
    broker.run()
    advertised = intersect_forwardable_apis(own_api_ranges(),
                                            broker.channel.controller_api_versions)
    assert advertised[19] == (0, 4) and advertised[3] == own_api_ranges()[3]


def test_f2_to_f10_forwarding_decision():
    assert forwarding_decision(19, role=KRAFT_BROKER) == FORWARD                     # F-2
    assert forwarding_decision(19, role=ZK_BROKER) == LOCAL                          # F-4
    assert forwarding_decision(19, role=ZK_BROKER, forwarding_enabled=True) == FORWARD
    assert forwarding_decision(19, role=ZK_BROKER, forwarding_enabled=True,
                               is_active_controller=True) == LOCAL                   # F-3
    assert forwarding_decision(44, role=ZK_BROKER, forwarding_enabled=True) == LOCAL  # F-6
    assert forwarding_decision(44, role=ZK_BROKER, forwarding_enabled=True,
                               controller_is_kraft=True) == FORWARD
    assert forwarding_decision(19, role=ZK_BROKER, forwarding_enabled=True,
                               is_forwarded=True) == LOCAL                           # F-10
    assert forwarding_decision(13, role=KRAFT_BROKER) == LOCAL      # LeaveGroup: not forwardable
    assert forwarding_decision(19, role=KRAFT_CONTROLLER) == LOCAL


def test_envelope_response_bytes_round_trip():
    data = envelope_response(9, NOT_CONTROLLER)
    assert parse_response(data, {"RequestApiKey": 58, "RequestApiVersion": 0,
                                 "CorrelationId": 9}) == {"ResponseData": None,
                                                          "ErrorCode": NOT_CONTROLLER}


def test_malformed_client_request_closes_the_connection_without_forwarding():
    broker = Broker(kraft_controller())
    assert broker.forward(create_topics()[:7]) is None
    outcome = one_outcome(broker)
    assert outcome.close_connection and broker.channel.queue == ()


def test_envelope_only_errors_never_reach_the_client_under_corruption():
    """P7 on real bytes: corrupt one to three bytes of the Envelope on its first trip (seeded);
    whatever the controller makes of it, the client sees the controller's own response, an
    error the forwarder built (UNKNOWN_SERVER_ERROR, REQUEST_TIMED_OUT) or a closed connection
    -- never CLUSTER_AUTHORIZATION_FAILED, NOT_CONTROLLER, INVALID_REQUEST or
    PRINCIPAL_DESERIALIZATION_FAILURE of the envelope.  Corrupting the Envelope's api key or
    correlation id (header bytes 0-1, 4-7) can make the controller's answer unreadable as the
    response the broker waits for: the broker's send thread then exits (``FatalExitError``),
    and nothing reaches the client."""
    import random
    rng = random.Random(590)
    seen = set()
    for _ in range(150):
        broker = Broker(kraft_controller())
        first = {"done": False, "positions": set()}

        def tamper(payload, first=first):
            if first["done"]:
                return payload
            first["done"] = True
            data = bytearray(payload)
            for _ in range(rng.randint(1, 3)):
                position = rng.randrange(len(data))
                first["positions"].add(position)
                data[position] = rng.randrange(256)
            return bytes(data)
        broker.tamper = tamper
        broker.forward()
        try:
            broker.run()
        except FatalExitError:
            assert first["positions"] & {0, 1, 4, 5, 6, 7}, first["positions"]
            assert broker.outcomes == []
            seen.add("exit")
            continue
        outcome = one_outcome(broker)
        seen.add((outcome.close_connection, outcome.envelope_error, outcome.error_code))
        if outcome.close_connection:
            assert outcome.envelope_error == UNSUPPORTED_VERSION
        elif outcome.from_controller:
            assert outcome.envelope_error == 0 and outcome.error_code == 0
        else:
            assert outcome.error_code in (UNKNOWN_SERVER_ERROR, REQUEST_TIMED_OUT)
            assert outcome.error_code not in (CLUSTER_AUTHORIZATION_FAILED, NOT_CONTROLLER,
                                              INVALID_REQUEST, PRINCIPAL_DESERIALIZATION_FAILURE)
    # The corruption reached several layers (success, envelope errors, closes).
    assert len(seen) >= 4, seen


# ------------------------------------------------------------------------------------------
# Every forwardable API (reference 1.2): Envelopes carrying AlterConfigs, DeleteTopics and
# CreatePartitions, and the broker-built error response (getErrorResponse) of each API.

TOPIC_ID = uuid.UUID(int=0x5EED)


def sample_request(key: int, version: int) -> dict:
    """A request body of ``key`` at ``version`` with several items where the API has items."""
    if key == 19:
        return {"Topics": [{"Name": n, "NumPartitions": 3, "ReplicationFactor": 1}
                           for n in ("orders", "payments")], "timeoutMs": 30000}
    if key == 20:
        if version >= 6:
            return {"Topics": [{"Name": "orders", "TopicId": uuid.UUID(int=0)},
                               {"Name": None, "TopicId": TOPIC_ID}], "TimeoutMs": 30000}
        return {"TopicNames": ["orders", "payments"], "TimeoutMs": 30000}
    if key == 30:
        return {"Creations": [{"ResourceType": 2, "ResourceName": n, "ResourcePatternType": 3,
                               "Principal": "User:bob", "Host": "*", "Operation": 3,
                               "PermissionType": 3} for n in ("orders", "payments", "audit")]}
    if key == 31:
        return {"Filters": [{"ResourceTypeFilter": 2, "ResourceNameFilter": n,
                             "PatternTypeFilter": 3, "PrincipalFilter": None,
                             "HostFilter": None, "Operation": 1, "PermissionType": 1}
                            for n in ("orders", None)]}
    if key in (33, 44):
        config = {"Name": "retention.ms", "Value": "60000"}
        if key == 44:
            config["ConfigOperation"] = 0
        return {"Resources": [{"ResourceType": 2, "ResourceName": "orders", "Configs": [config]},
                              {"ResourceType": 4, "ResourceName": "1", "Configs": []}],
                "ValidateOnly": False}
    if key == 37:
        return {"Topics": [{"Name": "orders", "Count": 6, "Assignments": None},
                           {"Name": "payments", "Count": 4, "Assignments": [{"BrokerIds": [1]}]}],
                "TimeoutMs": 30000, "ValidateOnly": False}
    if key == 38:
        body = {"Renewers": [{"PrincipalType": "User", "PrincipalName": "bob"}],
                "MaxLifetimeMs": -1}
        if version >= 3:
            body.update(OwnerPrincipalType="User", OwnerPrincipalName="carol")
        return body
    if key == 39:
        return {"Hmac": b"\x01\x02", "RenewPeriodMs": 1000}
    if key == 40:
        return {"Hmac": b"\x01\x02", "ExpiryTimePeriodMs": 1000}
    if key == 43:
        body = {"TopicPartitions": [{"Topic": "orders", "Partitions": [0, 1]},
                                    {"Topic": "payments", "Partitions": [2]}], "TimeoutMs": 5000}
        if version >= 1:
            body["ElectionType"] = 1
        return body
    if key == 45:
        return {"TimeoutMs": 5000, "Topics": [
            {"Name": "orders", "Partitions": [{"PartitionIndex": 0, "Replicas": [1, 2]},
                                              {"PartitionIndex": 1, "Replicas": None}]},
            {"Name": "payments", "Partitions": [{"PartitionIndex": 4, "Replicas": [3]}]}]}
    if key == 46:
        return {"TimeoutMs": 5000, "Topics": [{"Name": "orders", "PartitionIndexes": [0, 1]}]}
    if key == 49:
        return {"Entries": [
            {"Entity": [{"EntityType": "user", "EntityName": "alice"},
                        {"EntityType": "client-id", "EntityName": None}],
             "Ops": [{"Key": "producer_byte_rate", "Value": 1024.0, "Remove": False}]},
            {"Entity": [{"EntityType": "user", "EntityName": None}], "Ops": []}],
            "ValidateOnly": False}
    if key == 51:
        upsert = {"Mechanism": 1, "Iterations": 4096, "Salt": b"s", "SaltedPassword": b"p"}
        return {"Deletions": [{"Name": "bob", "Mechanism": 2}],
                "Upsertions": [{"Name": "carol", **upsert}, {"Name": "bob", **upsert}]}
    if key == 55:
        return {"Topics": [{"TopicName": "__cluster_metadata",
                            "Partitions": [{"PartitionIndex": 0}]}]}
    if key == 57:
        update = {"Feature": "metadata.version", "MaxVersionLevel": 21}
        if version == 0:
            update["AllowDowngrade"] = False
        else:
            update["UpgradeType"] = 1
        return {"timeoutMs": 5000, "FeatureUpdates": [update]}
    if key == 64:
        return {"BrokerId": 1}
    if key == 67:
        return {"BrokerId": 1, "BrokerEpoch": 10}
    if key == 80:
        return {"ClusterId": "cluster", "TimeoutMs": 5000, "VoterId": 3,
                "VoterDirectoryId": TOPIC_ID,
                "Listeners": [{"Name": "CONTROLLER", "Host": "c3", "Port": 9093}]}
    if key == 81:
        return {"ClusterId": "cluster", "VoterId": 3, "VoterDirectoryId": TOPIC_ID}
    raise AssertionError(f"no sample request for api key {key}")


def error_places(key: int, version: int, request: dict) -> list[tuple]:
    """Where Kafka's ``getErrorResponse`` of each API puts the error code (read from its
    request classes at the reference commit), as paths into the response."""
    def per(items: str, name: str) -> list[tuple]:
        return [(items, i, "ErrorCode") for i in range(len(request[name]))]
    if key == 19:
        return per("Topics", "Topics")
    if key == 20:
        return per("Responses", "Topics" if version >= 6 else "TopicNames")
    if key == 30:
        return per("Results", "Creations")
    if key == 31:
        return per("FilterResults", "Filters")
    if key in (33, 44):
        return per("Responses", "Resources")
    if key == 37:
        return per("Results", "Topics")
    if key == 43:
        places = [("ReplicaElectionResults", t, "PartitionResult", p, "ErrorCode")
                  for t, topic in enumerate(request["TopicPartitions"])
                  for p in range(len(topic["Partitions"]))]
        return places + ([("ErrorCode",)] if version >= 1 else [])
    if key == 45:
        return [("ErrorCode",)] + [("Responses", t, "Partitions", p, "ErrorCode")
                                   for t, topic in enumerate(request["Topics"])
                                   for p in range(len(topic["Partitions"]))]
    if key == 49:
        return per("Entries", "Entries")
    if key == 51:
        return [("Results", 0, "ErrorCode"), ("Results", 1, "ErrorCode")]   # bob, carol
    return [("ErrorCode",)]   # 38 39 40 46 55 57 64 67 80 81: top-level only


# The message each API's getErrorResponse writes next to the code: ApiError.fromThrowable's
# ("api"), Errors.forException(e).message() ("default"), or none (no ErrorMessage set).
DEFAULT_MESSAGE_APIS = {49, 55, 80, 81}
NO_MESSAGE_APIS = {20, 38, 39, 40, 64, 67}
NO_THROTTLE_APIS = {44, 51, 55}     # getErrorResponse ignores throttleTimeMs

FORWARDABLE_VERSIONS = [(key, version) for key in sorted(FORWARDABLE_API_KEYS)
                        for version in range(API_KEYS[key].valid_versions.lowest,
                                             API_KEYS[key].valid_versions.highest + 1)]


def at(value, path):
    for step in path:
        value = value[step]
    return value


def field_at(struct, path: tuple):
    """The schema field a response path leads to (indices skipped), None if there is none."""
    names = [step for step in path if isinstance(step, str)]
    for i, name in enumerate(names):
        found = next((f for f in struct.fields if f.name == name), None)
        if found is None or i == len(names) - 1:
            return found
        kind = found.type.element if found.type.kind == "array" else found.type
        struct = kind.struct
    return None


def message_places(places: list[tuple]) -> list[tuple]:
    return [place[:-1] + ("ErrorMessage",) for place in places]


def test_every_forwardable_api_is_covered():
    assert FORWARDABLE_API_KEYS == {19, 20, 30, 31, 33, 37, 38, 39, 40, 43, 44, 45, 46, 49, 51,
                                    55, 57, 64, 67, 80, 81}
    assert {key for key, _ in FORWARDABLE_VERSIONS} == FORWARDABLE_API_KEYS


@pytest.mark.parametrize("code", [UNKNOWN_SERVER_ERROR, REQUEST_TIMED_OUT])
@pytest.mark.parametrize("key, version", FORWARDABLE_VERSIONS)
def test_error_response_of_every_forwardable_api_carries_the_code_where_kafka_puts_it(
        key, version, code):
    request = sample_request(key, version)
    header = {"RequestApiKey": key, "RequestApiVersion": version, "CorrelationId": 11,
              "ClientId": "admin-1"}
    parsed = parse_request(encode_request(header, request))          # a real client request
    body = error_response_body(key, version, parsed.body, code, None, 250)
    data = encode_response(key, version, 11, body)
    decoded = parse_response(data, header)
    places = error_places(key, version, request)
    assert places, "every error response carries the code somewhere"
    for place in places:
        assert at(decoded, place) == code, place
    # ... and nowhere else: every other ErrorCode of the response is NONE.
    assert error_counts(decoded).get(code) == len(places)
    assert set(error_counts(decoded)) <= {code, 0}
    # The message Kafka writes next to each code, where the version has the field.
    response = get_schema(f"{API_KEYS[key].message_name}Response")
    for place in message_places(places):
        message_field = field_at(response.struct, place)
        if message_field is None or version not in message_field.versions:
            continue
        value = at(decoded, place)
        if key in NO_MESSAGE_APIS:
            assert value == message_field.default_value(), place
        elif key in DEFAULT_MESSAGE_APIS:
            assert value == ERROR_MESSAGES[code] and value, place
        else:
            assert value is None, place        # ApiError.fromThrowable: no message given
    # ThrottleTimeMs is set by getErrorResponse except for three APIs.
    if "ThrottleTimeMs" in decoded:
        throttle_in_version = parse_response(
            encode_response(key, version, 11, {**body, "ThrottleTimeMs": 1}), header
        )["ThrottleTimeMs"] == 1
        wanted = 0 if key in NO_THROTTLE_APIS or not throttle_in_version else 250
        assert decoded["ThrottleTimeMs"] == wanted


def test_error_responses_echo_the_request_items_as_kafka_does():
    deletes = error_response_body(20, 6, sample_request(20, 6), UNKNOWN_SERVER_ERROR)
    assert [(r["Name"], r["TopicId"]) for r in deletes["Responses"]] == [
        ("orders", uuid.UUID(int=0)), (None, TOPIC_ID)]
    old_deletes = error_response_body(20, 5, sample_request(20, 5), UNKNOWN_SERVER_ERROR)
    assert [r["Name"] for r in old_deletes["Responses"]] == ["orders", "payments"]
    configs = error_response_body(33, 2, sample_request(33, 2), UNKNOWN_SERVER_ERROR)
    assert [(r["ResourceType"], r["ResourceName"]) for r in configs["Responses"]] == [
        (2, "orders"), (4, "1")]
    partitions = error_response_body(37, 3, sample_request(37, 3), UNKNOWN_SERVER_ERROR)
    assert [r["Name"] for r in partitions["Results"]] == ["orders", "payments"]
    quotas = error_response_body(49, 1, sample_request(49, 1), REQUEST_TIMED_OUT)
    assert [[(e["EntityType"], e["EntityName"]) for e in entry["Entity"]]
            for entry in quotas["Entries"]] == [[("user", "alice"), ("client-id", None)],
                                                [("user", None)]]
    scram = error_response_body(51, 0, sample_request(51, 0), REQUEST_TIMED_OUT)
    assert [r["User"] for r in scram["Results"]] == ["bob", "carol"]     # distinct, sorted
    listing = error_response_body(46, 0, sample_request(46, 0), REQUEST_TIMED_OUT)
    assert listing["Topics"] == [{"Name": "orders", "Partitions": [{"PartitionIndex": 0},
                                                                   {"PartitionIndex": 1}]}]
    token = error_response_body(38, 3, sample_request(38, 3), REQUEST_TIMED_OUT)
    assert (token["PrincipalName"], token["TokenRequesterPrincipalName"], token["TokenId"],
            token["ExpiryTimestampMs"]) == ("ANONYMOUS", "ANONYMOUS", "", -1)
    assert "TokenRequesterPrincipalName" not in error_response_body(
        38, 2, sample_request(38, 2), REQUEST_TIMED_OUT)
    # ElectLeaders with a null TopicPartitions (every partition): only the top-level code
    everything = error_response_body(43, 2, {"TopicPartitions": None}, REQUEST_TIMED_OUT)
    assert everything["ReplicaElectionResults"] == [] and everything["ErrorCode"] == 7
    assert "ErrorCode" not in error_response_body(43, 0, {"TopicPartitions": None}, 7)


def test_error_response_messages_follow_api_error_from_throwable():
    request = sample_request(37, 3)
    kept = error_response_body(37, 3, request, REQUEST_TIMED_OUT, "controller busy")
    assert {r["ErrorMessage"] for r in kept["Results"]} == {"controller busy"}
    # UNKNOWN_SERVER_ERROR never leaks a message; Kafka's default message is dropped.
    hidden = error_response_body(37, 3, request, UNKNOWN_SERVER_ERROR, "secret detail")
    assert {r["ErrorMessage"] for r in hidden["Results"]} == {None}
    default = error_response_body(37, 3, request, REQUEST_TIMED_OUT, "The request timed out.")
    assert {r["ErrorMessage"] for r in default["Results"]} == {None}
    # APIs that use Errors.forException(e).message() write the code's default message.
    assert error_response_body(80, 0, sample_request(80, 0), REQUEST_TIMED_OUT,
                               "controller busy")["ErrorMessage"] == "The request timed out."


def client_request(key: int, version: int, correlation_id: int = 11) -> tuple[dict, bytes]:
    header = {"RequestApiKey": key, "RequestApiVersion": version,
              "CorrelationId": correlation_id, "ClientId": "admin-1"}
    return header, encode_request(header, sample_request(key, version))


def answer_every_item(code: int):
    """A controller handler that answers every item of any request with ``code``."""
    def handler(decision):
        header = decision.inner_header
        return error_response_body(header["RequestApiKey"], header["RequestApiVersion"],
                                   decision.inner_body, code, "handled")
    return handler


THREE_APIS = [(33, 2), (33, 0), (20, 6), (20, 3), (37, 3), (37, 0)]


@pytest.mark.parametrize("key, version", THREE_APIS)
def test_envelope_carrying_the_api_is_dispatched_as_the_original_principal(key, version):
    header, data = client_request(key, version)
    envelope = build_envelope_request(data, ALICE, IPv4Address("192.0.2.7"))
    payload = encode_request({"RequestApiKey": 58, "RequestApiVersion": 0, "CorrelationId": 77,
                              "ClientId": "broker-1"}, envelope)
    for receiver in (zk_receiver(), EnvelopeReceiver(role=KRAFT_CONTROLLER, authorizer=acl)):
        decision = receiver.receive(payload, ENVELOPE_CTX)
        assert decision.kind == DISPATCH and decision.is_forwarded
        assert decision.inner_context.principal == ALICE != ENVELOPE_CTX.principal
        assert decision.inner_context.client_address == "192.0.2.7"
        assert decision.inner_header == header
        assert decision.inner_body == parse_request(data).body
        assert decision.inner_request_bytes == data


@pytest.mark.parametrize("key, version", THREE_APIS)
def test_envelope_carrying_the_api_gets_kafkas_envelope_errors(key, version):
    _, data = client_request(key, version)
    envelope = build_envelope_request(data, ALICE, IPv4Address("192.0.2.7"))
    header = {"RequestApiKey": 58, "RequestApiVersion": 0, "CorrelationId": 77,
              "ClientId": "broker-1"}
    receiver = EnvelopeReceiver(role=KRAFT_CONTROLLER, authorizer=acl)
    decision = receiver.receive(encode_request(header, envelope), AS_MALLORY)       # F-28
    assert (decision.kind, decision.error_code) == (ENVELOPE_ERROR, CLUSTER_AUTHORIZATION_FAILED)
    bad = encode_request(header, {**envelope, "RequestPrincipal": BAD_PRINCIPAL})  # F-29a
    assert receiver.receive(bad, ENVELOPE_CTX).error_code == PRINCIPAL_DESERIALIZATION_FAILURE
    truncated = encode_request(header, {**envelope, "RequestData": data[:-3]})     # F-29e
    decision = receiver.receive(truncated, ENVELOPE_CTX)
    assert (decision.kind, decision.error_code) == (ENVELOPE_ERROR, UNSUPPORTED_VERSION)
    assert parse_response(decision.response, header) == {"ResponseData": None,
                                                         "ErrorCode": UNSUPPORTED_VERSION}


@pytest.mark.parametrize("key, version", THREE_APIS)
def test_forwarded_api_end_to_end_ok_and_envelope_error(key, version):
    header, data = client_request(key, version)
    places = error_places(key, version, sample_request(key, version))
    # ok: the controller answers every item with NONE; the client gets it unchanged.
    controller = kraft_controller(handler=answer_every_item(0))
    broker = Broker(controller)
    broker.forward(data)
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.from_controller and outcome.envelope_error == 0 and outcome.error_code == 0
    assert controller.handled[-1].inner_context.principal == ALICE
    assert [at(outcome.body, p) for p in places] == [0] * len(places)
    # The sender lacks CLUSTER_ACTION (Envelope 31): the client sees UNKNOWN_SERVER_ERROR in
    # every place of its API's error response, never the envelope's code.
    denied = Controller(EnvelopeReceiver(role=KRAFT_CONTROLLER, authorizer=lambda p, o, r: False),
                        handler=answer_every_item(0))
    broker = Broker(denied)
    broker.forward(data)
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.envelope_error == CLUSTER_AUTHORIZATION_FAILED and not outcome.from_controller
    body = parse_response(outcome.response, header)
    assert [at(body, p) for p in places] == [UNKNOWN_SERVER_ERROR] * len(places)


def test_forwarded_delete_topics_inner_not_controller_until_timeout_gives_request_timed_out():
    header, data = client_request(20, 6)
    broker = Broker(kraft_controller(handler=answer_every_item(NOT_CONTROLLER)))
    broker.forward(data)
    broker.run()
    outcome = one_outcome(broker)
    assert outcome.error_code == REQUEST_TIMED_OUT and outcome.retried
    body = parse_response(outcome.response, header)
    assert [r["ErrorCode"] for r in body["Responses"]] == [REQUEST_TIMED_OUT] * 2


@pytest.fixture
def schemas_without(monkeypatch, tmp_path):
    """A ``KIPCHECK_SCHEMAS``-like directory that lacks some schemas, in place of the shipped
    one for the test's duration."""
    def use(*missing: str):
        for path in schema_module.SCHEMAS.directory.glob("*.json"):
            if path.stem not in missing:
                (tmp_path / path.name).write_bytes(path.read_bytes())
        monkeypatch.setattr(schema_module, "SCHEMAS", schema_module.load_schemas(tmp_path))
    return use


@pytest.mark.parametrize("missing", ["DeleteTopicsRequest", "DeleteTopicsResponse"])
def test_a_missing_schema_is_answered_as_an_unparseable_inner_request(schemas_without, missing):
    _, data = client_request(20, 6)
    payload = encode_request({"RequestApiKey": 58, "RequestApiVersion": 0, "CorrelationId": 77,
                              "ClientId": "broker-1"},
                             build_envelope_request(data, ALICE, IPv4Address("192.0.2.7")))
    schemas_without(missing)
    for receiver in (zk_receiver(), EnvelopeReceiver(role=KRAFT_CONTROLLER, authorizer=acl)):
        decision = receiver.receive(payload, ENVELOPE_CTX)                           # F-29e
        assert (decision.kind, decision.error_code) == (ENVELOPE_ERROR, UNSUPPORTED_VERSION)
    # The forwarder cannot read or answer it either: the socket server closes the connection.
    broker = Broker(kraft_controller())
    assert broker.forward(data) is None
    assert one_outcome(broker).close_connection and broker.channel.queue == ()
    # Other APIs are unaffected.
    assert zk_receiver().receive(envelope_bytes(), ENVELOPE_CTX).kind == DISPATCH
