"""impl/describe_cluster.py and impl/admin.py: DescribeCluster (D-1..D-3, L-27, R-21), the
admin client (D-4..D-9) and KIP-919's client compatibility matrix."""
from __future__ import annotations

import random
import uuid

import pytest

from impl.admin import (AdminBootstrapAddresses, AdminClient, ClusterAuthorizationException,
                        ConfigException, MismatchedEndpointTypeException,
                        UnsupportedEndpointTypeException, UnsupportedVersionException)
from impl.context import RequestContext
from impl.describe_cluster import (INT_MIN, BrokerDescribeCluster, BrokerRegistration,
                                   ControllerDescribeCluster, compute_describe_cluster_response,
                                   handle_request_bytes)
from impl.kraft import MV_3_7_IV0, ClusterAuthorizer
from impl.protocol import KafkaPrincipal, encode_request, encode_response, parse_request, \
    parse_response

ADMIN = KafkaPrincipal("User", "admin")
READER = KafkaPrincipal("User", "reader")
AUTH = ClusterAuthorizer({"User:admin": {"ALTER"}, "User:reader": {"DESCRIBE"}})


def ctx(listener, principal=ADMIN):
    return RequestContext(listener, "PLAINTEXT", principal)


def reg(cid, *names):
    return {"ControllerId": cid, "IncarnationId": uuid.UUID(int=cid, version=4),
            "ZkMigrationReady": False, "Features": [],
            "EndPoints": [{"Name": n, "Host": f"c{cid}-{n.lower()}", "Port": 9090 + i,
                           "SecurityProtocol": 0} for i, n in enumerate(names)]}


REGS = {1: reg(1, "CONTROLLER", "SSL_CTRL"), 2: reg(2, "CONTROLLER"), 3: reg(3, "SSL_CTRL")}
BROKERS = [BrokerRegistration(4, {"PLAINTEXT": ("b4", 9092), "INTERNAL": ("b4i", 9093)}, "r1"),
           BrokerRegistration(5, {"INTERNAL": ("b5i", 9093)}),
           BrokerRegistration(6, {"PLAINTEXT": ("b6", 9092)}, alive=False)]


def controller_answer(version, body, listener="CONTROLLER", principal=ADMIN, mv=MV_3_7_IV0,
                      leader=1):
    return ControllerDescribeCluster("cid", AUTH).handle(
        ctx(listener, principal), version, body, metadata_version=mv, registrations=REGS,
        leader_id=leader)


def broker_answer(version, body, listener="PLAINTEXT", zk_controller_id=None, seed=0):
    return BrokerDescribeCluster("cid", AUTH, random.Random(seed)).handle(
        ctx(listener), version, body, brokers=BROKERS, zk_controller_id=zk_controller_id)


# ------------------------------------------------------------------------ DescribeCluster, D-1..3

def test_controller_lists_registrations_on_the_request_listener():
    """D-1.3, R-21, L-27: only controllers with an endpoint of the request's listener name."""
    body = controller_answer(1, {"EndpointType": 2})
    assert body["ErrorCode"] == 0 and body["EndpointType"] == 2 and body["ClusterId"] == "cid"
    assert [(b["BrokerId"], b["Host"]) for b in body["Brokers"]] == [(1, "c1-controller"),
                                                                    (2, "c2-controller")]
    assert body["ControllerId"] == 1 and body["ClusterAuthorizedOperations"] == INT_MIN
    other = controller_answer(1, {"EndpointType": 2}, listener="SSL_CTRL", leader=2)
    assert [b["BrokerId"] for b in other["Brokers"]] == [1, 3]
    assert other["ControllerId"] == -1          # D-3.4: the leader is not among the nodes


def test_controller_metadata_version_gate_and_alter():
    """D-1.1 before D-1.2; ALTER on CLUSTER, DESCRIBE is not enough."""
    old = controller_answer(1, {"EndpointType": 2}, principal=READER, mv=MV_3_7_IV0 - 1)
    assert old["ErrorCode"] == 35
    assert old["ErrorMessage"] == ("Direct-to-controller communication is not supported with "
                                   "the current MetadataVersion.")
    denied = controller_answer(1, {"EndpointType": 2}, principal=READER)
    assert denied["ErrorCode"] == 31 and denied["Brokers"] == []


@pytest.mark.parametrize("side,version,endpoint_type,code,message", [
    ("controller", 1, 0, 115, "Unsupported endpoint type 0"),
    ("broker", 1, 7, 115, "Unsupported endpoint type 7"),
    ("broker", 0, 0, 42, "Unsupported endpoint type 0"),
    ("broker", 1, 2, 114, "The request was sent to an endpoint of type BROKER, but we wanted an "
                          "endpoint of type CONTROLLER"),
    ("controller", 1, 1, 114, "The request was sent to an endpoint of type CONTROLLER, but we "
                              "wanted an endpoint of type BROKER"),
    ("controller", 0, 1, 42, "The request was sent to an endpoint of type CONTROLLER, but we "
                             "wanted an endpoint of type BROKER"),
])
def test_d3_error_responses(side, version, endpoint_type, code, message):
    """D-3.1/D-3.2: v1 gets 115/114, v0 INVALID_REQUEST; only ErrorCode/Message are set."""
    answer = controller_answer if side == "controller" else broker_answer
    body = answer(version, {"EndpointType": endpoint_type, "IncludeClusterAuthorizedOperations":
                            True})
    assert (body["ErrorCode"], body["ErrorMessage"]) == (code, message)
    assert (body["EndpointType"], body["ClusterId"], body["ControllerId"], body["Brokers"],
            body["ClusterAuthorizedOperations"]) == (1, "", -1, [], INT_MIN)


def test_v0_request_to_controller_is_invalid_request_on_the_wire():
    """A v0 request always carries EndpointType 1, so a controller answers INVALID_REQUEST."""
    request = encode_request({"RequestApiKey": 60, "RequestApiVersion": 0, "CorrelationId": 3,
                              "ClientId": "a"}, {})
    data = handle_request_bytes(request, lambda v, b: controller_answer(v, b))
    body = parse_response(data, {"RequestApiKey": 60, "RequestApiVersion": 0,
                                 "CorrelationId": 3})
    assert body["ErrorCode"] == 42


def test_broker_side_lists_alive_brokers_of_the_listener():
    """D-2, L-27: brokers lacking the listener and dead brokers are left out; rack kept."""
    body = broker_answer(1, {"EndpointType": 1})
    assert body["Brokers"] == [{"BrokerId": 4, "Host": "b4", "Port": 9092, "Rack": "r1"}]
    # KRaft: the ControllerId is a random alive broker; -1 when that broker is not listed.
    ids = {broker_answer(1, {}, seed=s)["ControllerId"] for s in range(20)}
    assert ids == {4, -1}
    zk = broker_answer(1, {}, listener="INTERNAL", zk_controller_id=5)
    assert zk["ControllerId"] == 5 and [b["BrokerId"] for b in zk["Brokers"]] == [4, 5]


def test_cluster_authorized_operations():
    """D-3.3: INT_MIN unless asked; 0 without DESCRIBE; else the bitfield."""
    def ops(principal, include=True):
        return compute_describe_cluster_response(
            1, {"EndpointType": 1, "IncludeClusterAuthorizedOperations": include}, 1, [], "c",
            -1, ctx("PLAINTEXT", principal), AUTH)["ClusterAuthorizedOperations"]
    assert ops(ADMIN, include=False) == INT_MIN
    assert ops(KafkaPrincipal("User", "nobody")) == 0
    assert ops(ADMIN) == (1 << 7) | (1 << 8)
    assert ops(READER) == 1 << 8


# ------------------------------------------------------------------------ admin client, D-4..9

def test_bootstrap_config_errors():
    with pytest.raises(ConfigException,
                       match="^You must set either bootstrap.servers or bootstrap.controllers$"):
        AdminBootstrapAddresses.from_config({"bootstrap.servers": " , "})
    with pytest.raises(ConfigException,
                       match="^You cannot set both bootstrap.servers and bootstrap.controllers$"):
        AdminBootstrapAddresses.from_config({"bootstrap.servers": "b:9092",
                                             "bootstrap.controllers": "c:9093"})
    with pytest.raises(ConfigException, match="Invalid url in bootstrap.controllers: c"):
        AdminBootstrapAddresses.from_config({"bootstrap.controllers": "c"})
    addresses = AdminBootstrapAddresses.from_config({"bootstrap.controllers": "c1:9093, c2:9093"})
    assert addresses.using_bootstrap_controllers
    assert addresses.addresses == (("c1", 9093), ("c2", 9093))


def test_calls_not_supported_via_controllers():
    """D-7."""
    admin = AdminClient({"bootstrap.controllers": "c:9093"})
    with pytest.raises(UnsupportedEndpointTypeException, match="not yet supported"):
        admin.check_call_supported("createTopics")
    admin.check_call_supported("incrementalAlterConfigs")
    AdminClient({"bootstrap.servers": "b:9092"}).check_call_supported("createTopics")


def test_metadata_failures_fatal_or_retried():
    """D-6: UnsupportedVersion and the endpoint-type errors are fatal, authorization is not."""
    admin = AdminClient({"bootstrap.controllers": "c:9093"})
    assert not admin.metadata_update_failed(ClusterAuthorizationException("no"))
    assert admin.fatal_exception is None
    assert admin.metadata_update_failed(MismatchedEndpointTypeException("x"))
    assert isinstance(admin.fatal_exception, MismatchedEndpointTypeException)


def test_describe_cluster_falls_back_to_metadata_only_with_bootstrap_servers():
    """D-9."""
    no_describe = {3: (0, 12)}
    servers = AdminClient({"bootstrap.servers": "b:9092"})
    request = servers.describe_cluster_request(no_describe)
    assert request.api_key == 3 and request.api_version == 12
    request = servers.describe_cluster_request({3: (0, 12), 60: (0, 1)})
    assert request.api_key == 60 and parse_request(request.payload).body["EndpointType"] == 1
    controllers = AdminClient({"bootstrap.controllers": "c:9093"})
    with pytest.raises(UnsupportedVersionException, match="does not support DESCRIBE_CLUSTER"):
        controllers.describe_cluster_request(no_describe)


# ------------------------------------------------------------------------ KIP-919 matrix

PRE_BROKER = {3: (0, 12), 60: (0, 0), 18: (0, 3)}            # DescribeCluster v0 only
POST_BROKER = {3: (0, 12), 60: (0, 1), 18: (0, 4)}
PRE_CONTROLLER = {18: (0, 3), 55: (0, 1), 57: (0, 1)}        # no Metadata, no DescribeCluster
POST_CONTROLLER = {18: (0, 4), 55: (0, 2), 57: (0, 1), 60: (0, 1), 70: (0, 0)}


def node(kind, mv=MV_3_7_IV0):
    """A server as request bytes -> response bytes, refusing APIs it does not advertise."""
    versions = {"pre-broker": PRE_BROKER, "post-broker": POST_BROKER,
                "pre-controller": PRE_CONTROLLER, "post-controller": POST_CONTROLLER}[kind]

    def send(payload):
        header, body = parse_request(payload)
        key, version = header["RequestApiKey"], header["RequestApiVersion"]
        lo, hi = versions[key]
        assert lo <= version <= hi, "the client must not send what the node does not support"
        if key == 3:
            response = {"Brokers": [{"NodeId": 4, "Host": "b4", "Port": 9092, "Rack": None}],
                        "ClusterId": "cid", "ControllerId": 4, "Topics": []}
        elif kind.endswith("broker"):
            response = broker_answer(version, body, zk_controller_id=4)
        else:
            response = controller_answer(version, body, mv=mv)
        return encode_response(key, version, header["CorrelationId"], response)
    return versions, send


MATRIX = [
    # (bootstrap config, node kind, outcome): outcome is a node-id list or (exception, text)
    ("bootstrap.servers", "pre-broker", [4]),
    ("bootstrap.servers", "post-broker", [4]),
    ("bootstrap.servers", "pre-controller",
     (UnsupportedVersionException, "The node does not support METADATA")),
    ("bootstrap.servers", "post-controller",
     (UnsupportedVersionException, "The node does not support METADATA")),
    # KIP table says MISMATCHED_ENDPOINT here and "v1 not supported" for the post-KIP-919
    # broker; the code does the reverse: a v0-only broker cannot carry EndpointType=2.
    ("bootstrap.controllers", "pre-broker",
     (UnsupportedVersionException, "non-default EndpointType at version 0")),
    ("bootstrap.controllers", "post-broker",
     (MismatchedEndpointTypeException, "The request was sent to an endpoint of type BROKER, "
                                       "but we wanted an endpoint of type CONTROLLER")),
    ("bootstrap.controllers", "pre-controller",
     (UnsupportedVersionException, "The node does not support DESCRIBE_CLUSTER")),
    ("bootstrap.controllers", "post-controller", [1, 2]),
]


@pytest.mark.parametrize("config,kind,outcome", MATRIX,
                         ids=[f"{c}-{k}" for c, k, _ in MATRIX])
def test_kip919_client_compatibility_matrix(config, kind, outcome):
    admin = AdminClient({config: "host:9092"})
    versions, send = node(kind)
    if isinstance(outcome, list):
        view = admin.bootstrap_exchange(versions, send)
        assert [n.node_id for n in view.nodes] == outcome
        expected_controller = 1 if config == "bootstrap.controllers" else 4
        assert view.controller is not None and view.controller.node_id == expected_controller
        assert view.cluster_id == "cid"
        assert admin.fatal_exception is None
    else:
        error, text = outcome
        with pytest.raises(error, match=text):
            admin.bootstrap_exchange(versions, send)
        assert isinstance(admin.fatal_exception, error)           # D-6: fatal, no retry


def test_matrix_post_controller_with_old_metadata_version():
    """The KIP says UNSUPPORTED_ENDPOINT_TYPE; the code (D-1.1) answers UNSUPPORTED_VERSION,
    which the admin client treats as fatal (D-6)."""
    admin = AdminClient({"bootstrap.controllers": "c:9093"})
    versions, send = node("post-controller", mv=MV_3_7_IV0 - 1)
    with pytest.raises(UnsupportedVersionException, match="Direct-to-controller"):
        admin.bootstrap_exchange(versions, send)
    assert isinstance(admin.fatal_exception, UnsupportedVersionException)
