"""DescribeCluster v0-1 (KIP-919) on brokers and on controllers, as Kafka answers it.

- D-1 controllers (``ControllerApis.handleDescribeCluster``): metadata.version >= 3.7-IV0 else
  UNSUPPORTED_VERSION (35) "Direct-to-controller communication is not supported with the current
  MetadataVersion."; then ALTER (not DESCRIBE) on CLUSTER else CLUSTER_AUTHORIZATION_FAILED (31);
  then D-3 with expected type CONTROLLER, the nodes being the controller registrations this
  controller has replayed -- the last one of each controller (R-18) -- with an endpoint named
  like the request's listener, at the host and port that registration carries (R-21), and the
  controller id the Raft leader's.
- D-2 brokers (``KafkaApis.handleDescribeCluster``): no metadata.version gate, no ALTER check;
  expected type BROKER; the alive brokers with an endpoint on the request's listener (L-27, rack
  included); controller id: ZK the real controller, KRaft a random alive broker id.  On a KRaft
  broker whose brokers register, the alive brokers are the registrations it has replayed that
  are not fenced, at the endpoints their records carry (``kraft_alive_brokers``).
- D-3 (``AuthHelper.computeDescribeClusterResponse``): endpoint type UNKNOWN is
  UNSUPPORTED_ENDPOINT_TYPE (115) at v1 / INVALID_REQUEST (42) at v0; a type other than the
  expected one is MISMATCHED_ENDPOINT_TYPE (114) at v1 / INVALID_REQUEST at v0; these error
  responses hold only ErrorCode/ErrorMessage (EndpointType stays at its default 1);
  ClusterAuthorizedOperations is INT_MIN unless asked for; a controller id that is not among
  the returned nodes becomes -1.

Responses are ``DescribeClusterResponse`` bodies (dicts keyed by the schema's field names), so
``impl.protocol.encode_response`` writes them as Kafka would; ``handle_request_bytes`` does the
whole round trip from request bytes to response bytes.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping

from impl.context import RequestContext
from impl.kraft import MV_3_7_IV0, ClusterAuthorizer
from impl.protocol import encode_response, parse_request
from impl.protocol.api_keys import DESCRIBE_CLUSTER
from impl.protocol.errors import (CLUSTER_AUTHORIZATION_FAILED, ERROR_MESSAGES, INVALID_REQUEST,
                                  MISMATCHED_ENDPOINT_TYPE, NONE, UNSUPPORTED_ENDPOINT_TYPE,
                                  UNSUPPORTED_VERSION)

INT_MIN = -2147483648           # ClusterAuthorizedOperations "omitted"

ENDPOINT_UNKNOWN, ENDPOINT_BROKER, ENDPOINT_CONTROLLER = 0, 1, 2
ENDPOINT_TYPE_NAMES = {ENDPOINT_UNKNOWN: "UNKNOWN", ENDPOINT_BROKER: "BROKER",
                       ENDPOINT_CONTROLLER: "CONTROLLER"}

# D-1.1's message is Kafka's verbatim; for D-1.2 Kafka puts the exception text (which quotes the
# request) in ErrorMessage: kipcheck uses the code's default message instead.
MESSAGES = {
    CLUSTER_AUTHORIZATION_FAILED: ERROR_MESSAGES[CLUSTER_AUTHORIZATION_FAILED],
    UNSUPPORTED_VERSION: "Direct-to-controller communication is not supported with the current "
                         "MetadataVersion.",
}


def endpoint_type_from_id(type_id: int) -> int:
    """``EndpointType.fromId``: anything but 1 or 2 is UNKNOWN."""
    return type_id if type_id in (ENDPOINT_BROKER, ENDPOINT_CONTROLLER) else ENDPOINT_UNKNOWN


@dataclass(frozen=True)
class DescribedNode:
    """One entry of ``Brokers`` in the response (a broker or a controller)."""
    node_id: int
    host: str
    port: int
    rack: str | None = None

    def as_field(self) -> dict:
        return {"BrokerId": self.node_id, "Host": self.host, "Port": self.port, "Rack": self.rack}


@dataclass(frozen=True)
class BrokerRegistration:
    """What the metadata cache knows of a broker: its endpoints by listener name, its rack."""
    broker_id: int
    endpoints: Mapping[str, tuple]          # listener name -> (host, port)
    rack: str | None = None
    alive: bool = True                      # KRaft: registered and unfenced; ZK: in /brokers/ids


def kraft_alive_brokers(brokers: Mapping[int, Mapping], include_fenced: bool = False
                        ) -> list[BrokerRegistration]:
    """L-27 on a KRaft broker whose brokers register (``KRaftMetadataCache.getAliveBrokerNodes``
    over the image this broker has replayed): every registered broker that is not fenced --
    ``filterNot(_.fenced())``, the fenced state as the BrokerRegistrationChangeRecords left it
    (BR-12) -- with the endpoints and rack of its latest RegisterBrokerRecord (BR-10).
    ``brokers`` is the image's broker id -> RegisterBrokerRecord data; ``include_fenced`` lists
    the fenced ones too (a design variant, not Kafka)."""
    out = []
    for broker_id in sorted(brokers):
        data = brokers[broker_id]
        fenced = bool(data.get("Fenced", True))
        if fenced and not include_fenced:
            continue
        endpoints = {e["Name"]: (e["Host"], e["Port"]) for e in data.get("EndPoints", ())}
        out.append(BrokerRegistration(broker_id, endpoints, data.get("Rack")))
    return out


def error_response(code: int, message: str | None) -> dict:
    """An error response of D-1/D-3: only ErrorCode and ErrorMessage differ from the defaults
    (ClusterId "", ControllerId -1, EndpointType 1 -- even on a controller --, no nodes)."""
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message,
            "EndpointType": ENDPOINT_BROKER, "ClusterId": "", "ControllerId": -1, "Brokers": [],
            "ClusterAuthorizedOperations": INT_MIN}


def compute_describe_cluster_response(version: int, request: Mapping, expected: int,
                                      nodes: Iterable[DescribedNode], cluster_id: str,
                                      controller_id: int, context: RequestContext,
                                      authorizer: ClusterAuthorizer) -> dict:
    """D-3, in Kafka's order."""
    requested_id = request.get("EndpointType", ENDPOINT_BROKER)
    requested = endpoint_type_from_id(requested_id)
    if requested == ENDPOINT_UNKNOWN:                                                # D-3.1
        code = UNSUPPORTED_ENDPOINT_TYPE if version >= 1 else INVALID_REQUEST
        return error_response(code, f"Unsupported endpoint type {requested_id}")
    if requested != expected:                                                        # D-3.2
        code = MISMATCHED_ENDPOINT_TYPE if version >= 1 else INVALID_REQUEST
        return error_response(code, f"The request was sent to an endpoint of type "
                                    f"{ENDPOINT_TYPE_NAMES[expected]}, but we wanted an "
                                    f"endpoint of type {ENDPOINT_TYPE_NAMES[requested]}")
    operations = INT_MIN                                                             # D-3.3
    if request.get("IncludeClusterAuthorizedOperations"):
        operations = (authorizer.authorized_operations(context.principal)
                      if authorizer.authorize(context.principal, "DESCRIBE") else 0)
    nodes = list(nodes)
    if controller_id not in {n.node_id for n in nodes}:                              # D-3.4
        controller_id = -1
    return {"ThrottleTimeMs": 0, "ErrorCode": NONE, "ErrorMessage": None,            # D-3.5
            "EndpointType": expected, "ClusterId": cluster_id, "ControllerId": controller_id,
            "Brokers": [n.as_field() for n in nodes],
            "ClusterAuthorizedOperations": operations}


def describe_cluster_controllers(registrations: Mapping[int, Mapping],
                                 listener_name: str) -> list[DescribedNode]:
    """R-21 ``ControllerRegistrationsPublisher.describeClusterControllers``: every registration
    with an endpoint whose name equals the request's listener name exactly (L-27), rack null."""
    nodes = []
    for controller_id in sorted(registrations):
        for endpoint in registrations[controller_id]["EndPoints"]:
            if endpoint["Name"] == listener_name:
                nodes.append(DescribedNode(controller_id, endpoint["Host"], endpoint["Port"]))
                break
    return nodes


@dataclass
class ControllerDescribeCluster:
    """DescribeCluster as a KRaft controller answers it (D-1).  ``registrations`` is the
    controller registrations of the metadata this controller has replayed, ``metadata_version``
    its replayed metadata.version, ``leader_id`` the Raft leader (-1: none)."""
    cluster_id: str
    authorizer: ClusterAuthorizer

    def handle(self, context: RequestContext, version: int, request: Mapping, *,
               metadata_version: int, registrations: Mapping[int, Mapping],
               leader_id: int) -> dict:
        if metadata_version < MV_3_7_IV0:                                            # D-1.1
            return error_response(UNSUPPORTED_VERSION, MESSAGES[UNSUPPORTED_VERSION])
        if not self.authorizer.authorize(context.principal, "ALTER"):               # D-1.2
            return error_response(CLUSTER_AUTHORIZATION_FAILED,
                                  MESSAGES[CLUSTER_AUTHORIZATION_FAILED])
        nodes = describe_cluster_controllers(registrations, context.listener_name)  # D-1.3
        return compute_describe_cluster_response(version, request, ENDPOINT_CONTROLLER, nodes,
                                                 self.cluster_id, leader_id, context,
                                                 self.authorizer)


@dataclass
class BrokerDescribeCluster:
    """DescribeCluster as a broker answers it (D-2).  ``zk_controller_id`` is the ZK
    controller in ZK mode; in KRaft mode (None) the ControllerId is a random alive broker id
    drawn from ``rng`` (Kafka hides the controllers from clients of brokers)."""
    cluster_id: str
    authorizer: ClusterAuthorizer
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def handle(self, context: RequestContext, version: int, request: Mapping, *,
               brokers: Iterable[BrokerRegistration],
               zk_controller_id: int | None = None) -> dict:
        brokers = sorted((b for b in brokers if b.alive), key=lambda b: b.broker_id)
        nodes = [DescribedNode(b.broker_id, *b.endpoints[context.listener_name], b.rack)
                 for b in brokers if context.listener_name in b.endpoints]            # L-27
        if zk_controller_id is not None:
            controller_id = zk_controller_id
        else:
            controller_id = self.rng.choice(brokers).broker_id if brokers else -1
        return compute_describe_cluster_response(version, request, ENDPOINT_BROKER, nodes,
                                                 self.cluster_id, controller_id, context,
                                                 self.authorizer)


def handle_request_bytes(data: bytes, respond) -> bytes:
    """Parse a DescribeCluster request (header and body), answer it with ``respond(version,
    body) -> response body``, and encode the response with the request's correlation id."""
    header, body = parse_request(data)
    if header["RequestApiKey"] != DESCRIBE_CLUSTER:
        raise ValueError(f"not a DescribeCluster request: api key {header['RequestApiKey']}")
    version = header["RequestApiVersion"]
    return encode_response(DESCRIBE_CLUSTER, version, header["CorrelationId"],
                           respond(version, body))
