"""The admin client's side of KIP-919: ``bootstrap.servers`` or ``bootstrap.controllers``.

Sans I/O, as Kafka's ``KafkaAdminClient`` / ``AdminMetadataManager`` /
``AdminBootstrapAddresses`` decide it (rules D-4 to D-9):

- D-4 ``AdminBootstrapAddresses.from_config``: exactly one of the two LIST configs (default "")
  must be set, with Kafka's ConfigException messages;
- D-5 with ``bootstrap.controllers`` the metadata refresh is DescribeCluster
  {IncludeClusterAuthorizedOperations=false, EndpointType=2}; a non-zero ErrorCode is thrown, an
  EndpointType other than 2 is MismatchedEndpointTypeException, the controller is the node whose
  id is ControllerId; with ``bootstrap.servers`` it is a Metadata request;
- D-6 fatal metadata failures (stop retrying, fail every pending call): authentication,
  MismatchedEndpointType, UnsupportedEndpointType, UnsupportedVersion; anything else is retried;
- D-7 calls that cannot go to controllers fail at once with UnsupportedEndpointTypeException;
- D-8 brokers in ``bootstrap.controllers`` give MISMATCHED_ENDPOINT_TYPE, controllers in
  ``bootstrap.servers`` "The node does not support METADATA";
- D-9 ``describeCluster`` with ``bootstrap.servers`` sends EndpointType=1 and falls back to
  Metadata on UnsupportedVersion (never with ``bootstrap.controllers``).

Version negotiation is ``NodeApiVersions.latestUsableVersion`` against the node's ApiVersions
ranges, and requests are written with ``impl.protocol``: a DescribeCluster with EndpointType=2
that can only go out as v0 fails to serialize with UnsupportedVersion, as Kafka's does
(EndpointType is not ignorable).  ``bootstrap_exchange`` runs one metadata refresh against a
node given as a request-bytes -> response-bytes function; it is what the KIP-919 client
compatibility matrix is made of.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable, Mapping

from impl.protocol import (API_KEYS, ProtocolError, encode_request, parse_response)
from impl.protocol.api_keys import DESCRIBE_CLUSTER, METADATA
from impl.protocol.errors import (CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST,
                                  MISMATCHED_ENDPOINT_TYPE, NOT_CONTROLLER,
                                  UNKNOWN_SERVER_ERROR, UNSUPPORTED_ENDPOINT_TYPE,
                                  UNSUPPORTED_VERSION)

ENDPOINT_BROKER, ENDPOINT_CONTROLLER = 1, 2

BOOTSTRAP_SERVERS = "bootstrap.servers"
BOOTSTRAP_CONTROLLERS = "bootstrap.controllers"

# D-7: the calls whose NodeProvider supports controllers at apache/kafka commit 1eb7644
# (docs/rules.md).
CONTROLLER_SUPPORTED_CALLS = frozenset({
    "describeCluster", "describeAcls", "createAcls", "deleteAcls", "describeConfigs",
    "alterConfigs", "incrementalAlterConfigs", "alterPartitionReassignments",
    "listPartitionReassignments", "describeFeatures", "updateFeatures",
    "describeMetadataQuorum", "addRaftVoter", "removeRaftVoter"})


# --------------------------------------------------------------------------------------------
# exceptions (``org.apache.kafka.common.errors``), by error code


class ConfigException(Exception):
    """``org.apache.kafka.common.config.ConfigException``."""


class ApiException(Exception):
    code = UNKNOWN_SERVER_ERROR

    def __init__(self, message: str | None = None):
        super().__init__(message)
        self.message = message


class UnknownServerException(ApiException):
    code = UNKNOWN_SERVER_ERROR


class ClusterAuthorizationException(ApiException):
    code = CLUSTER_AUTHORIZATION_FAILED


class UnsupportedVersionException(ApiException):
    code = UNSUPPORTED_VERSION


class NotControllerException(ApiException):
    code = NOT_CONTROLLER


class InvalidRequestException(ApiException):
    code = INVALID_REQUEST


class MismatchedEndpointTypeException(ApiException):
    code = MISMATCHED_ENDPOINT_TYPE


class UnsupportedEndpointTypeException(ApiException):
    code = UNSUPPORTED_ENDPOINT_TYPE


class AuthenticationException(ApiException):
    """A failed SASL/SSL handshake (not an error code of a response)."""


_BY_CODE = {cls.code: cls for cls in (ClusterAuthorizationException, UnsupportedVersionException,
                                      NotControllerException, InvalidRequestException,
                                      MismatchedEndpointTypeException,
                                      UnsupportedEndpointTypeException)}


def exception_for(code: int, message: str | None) -> ApiException:
    """``Errors.forCode(code).exception(message)``."""
    cls = _BY_CODE.get(code)
    if cls is None:
        error = UnknownServerException(message)
        error.code = code
        return error
    return cls(message)


# D-6 (``AdminMetadataManager.updateFailed``)
FATAL_METADATA_ERRORS = (AuthenticationException, MismatchedEndpointTypeException,
                         UnsupportedEndpointTypeException, UnsupportedVersionException)


# --------------------------------------------------------------------------------------------
# configuration


def _list_config(value: str | None) -> list[str]:
    """A LIST config: comma-separated, entries trimmed, empty entries dropped."""
    if value is None:
        return []
    return [item.strip() for item in value.split(",") if item.strip()]


def _host_port(entry: str, config: str) -> tuple[str, int]:
    """``ClientUtils.parseAndValidateAddresses``: host:port with a numeric port."""
    host, sep, port = entry.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit():
        raise ConfigException(f"Invalid url in {config}: {entry}")
    return host, int(port)


@dataclass(frozen=True)
class AdminBootstrapAddresses:
    using_bootstrap_controllers: bool
    addresses: tuple            # tuple[(host, port)]

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> AdminBootstrapAddresses:
        """D-4, Kafka's messages verbatim."""
        servers = _list_config(config.get(BOOTSTRAP_SERVERS))
        controllers = _list_config(config.get(BOOTSTRAP_CONTROLLERS))
        if not servers and not controllers:
            raise ConfigException("You must set either bootstrap.servers or "
                                  "bootstrap.controllers")
        if servers and controllers:
            raise ConfigException("You cannot set both bootstrap.servers and "
                                  "bootstrap.controllers")
        key, entries = ((BOOTSTRAP_CONTROLLERS, controllers) if controllers
                        else (BOOTSTRAP_SERVERS, servers))
        return cls(bool(controllers), tuple(_host_port(e, key) for e in entries))


# --------------------------------------------------------------------------------------------
# version negotiation


def latest_usable_version(api: int, node_versions: Mapping[int, tuple[int, int]]) -> int:
    """``NodeApiVersions.latestUsableVersion`` for the client's full range of ``api``."""
    key = API_KEYS[api]
    name = key.name
    if api not in node_versions:
        raise UnsupportedVersionException(f"The node does not support {name}")
    oldest, latest = key.valid_versions.lowest, key.valid_versions.highest
    lo, hi = node_versions[api]
    if hi < oldest or lo > latest:
        raise UnsupportedVersionException(
            f"The broker does not support {name} with version in range [{oldest},{latest}]. "
            f"The supported range is [{lo},{hi}].")
    return min(hi, latest)


@dataclass(frozen=True)
class PreparedRequest:
    header: dict
    payload: bytes              # header + body, without the size prefix

    @property
    def api_key(self) -> int:
        return self.header["RequestApiKey"]

    @property
    def api_version(self) -> int:
        return self.header["RequestApiVersion"]


@dataclass(frozen=True)
class DescribedNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class ClusterView:
    """What a metadata refresh or a describeCluster call gives the admin client."""
    cluster_id: str | None
    nodes: tuple                # tuple[DescribedNode]
    controller: DescribedNode | None
    authorized_operations: int | None = None


class AdminClient:
    """The admin client's bootstrap and metadata logic (D-4 to D-9)."""

    def __init__(self, config: Mapping[str, str], client_id: str = "adminclient-1"):
        self.bootstrap = AdminBootstrapAddresses.from_config(config)       # D-4
        self.client_id = client_id
        self.correlation_id = 0
        self.fatal_exception: ApiException | None = None
        self.cluster: ClusterView | None = None

    @property
    def uses_controllers(self) -> bool:
        return self.bootstrap.using_bootstrap_controllers

    def _prepare(self, api: int, version: int, body: Mapping) -> PreparedRequest:
        self.correlation_id += 1
        header = {"RequestApiKey": api, "RequestApiVersion": version,
                  "CorrelationId": self.correlation_id, "ClientId": self.client_id}
        try:
            return PreparedRequest(header, encode_request(header, body))
        except ProtocolError as error:
            # NetworkClient.doSend: building the request at this version failed.
            if error.code == UnsupportedVersionException.code:
                raise UnsupportedVersionException(error.message) from error
            raise

    def check_call_supported(self, call: str) -> None:
        """D-7: with bootstrap.controllers, a call whose NodeProvider does not support
        controllers fails at once."""
        if self.uses_controllers and call not in CONTROLLER_SUPPORTED_CALLS:
            raise UnsupportedEndpointTypeException(
                "This Admin API is not yet supported when communicating directly with the "
                "controller quorum.")

    # -- the metadata refresh --------------------------------------------------------------

    def metadata_request(self, node_versions: Mapping[int, tuple[int, int]]) -> PreparedRequest:
        """D-5: DescribeCluster{EndpointType=2} with bootstrap.controllers, Metadata (no topics)
        otherwise.  Raises UnsupportedVersionException when the node lacks the API (D-8) or the
        request cannot be written at the usable version."""
        if self.uses_controllers:
            version = latest_usable_version(DESCRIBE_CLUSTER, node_versions)
            return self._prepare(DESCRIBE_CLUSTER, version,
                                 {"IncludeClusterAuthorizedOperations": False,
                                  "EndpointType": ENDPOINT_CONTROLLER})
        version = latest_usable_version(METADATA, node_versions)
        return self._prepare(METADATA, version, {"Topics": [], "AllowAutoTopicCreation": True})

    def handle_metadata_response(self, request: PreparedRequest, data: bytes) -> ClusterView:
        body = parse_response(data, request.header)
        if request.api_key == DESCRIBE_CLUSTER:
            view = parse_describe_cluster_response(body, ENDPOINT_CONTROLLER)
        else:
            view = parse_metadata_response(body)
        self.cluster = view
        return view

    def metadata_update_failed(self, error: Exception) -> bool:
        """D-6: a fatal error is kept and fails every pending call; others are retried after
        the backoff.  Returns whether it was fatal."""
        if isinstance(error, FATAL_METADATA_ERRORS):
            self.fatal_exception = error
            return True
        return False

    # -- describeCluster (D-9) ------------------------------------------------------------

    def describe_cluster_request(self, node_versions: Mapping[int, tuple[int, int]],
                                 include_authorized_operations: bool = False) -> PreparedRequest:
        """describeCluster: DescribeCluster with EndpointType 2 (controllers) or 1 (brokers).
        With bootstrap.servers a node without DescribeCluster gets a Metadata request instead
        (the fallback of D-9); with bootstrap.controllers there is no fallback."""
        self.check_call_supported("describeCluster")
        endpoint_type = ENDPOINT_CONTROLLER if self.uses_controllers else ENDPOINT_BROKER
        body = {"IncludeClusterAuthorizedOperations": include_authorized_operations,
                "EndpointType": endpoint_type}
        try:
            version = latest_usable_version(DESCRIBE_CLUSTER, node_versions)
            return self._prepare(DESCRIBE_CLUSTER, version, body)
        except UnsupportedVersionException:
            if self.uses_controllers:
                raise
        version = latest_usable_version(METADATA, node_versions)
        return self._prepare(METADATA, version,
                             {"Topics": [], "AllowAutoTopicCreation": False,
                              "IncludeClusterAuthorizedOperations": include_authorized_operations
                              and 8 <= version <= 10})

    def handle_describe_cluster_response(self, request: PreparedRequest,
                                         data: bytes) -> ClusterView:
        body = parse_response(data, request.header)
        if request.api_key == DESCRIBE_CLUSTER:
            expected = ENDPOINT_CONTROLLER if self.uses_controllers else ENDPOINT_BROKER
            return parse_describe_cluster_response(body, expected)
        return parse_metadata_response(body)

    # -- one whole refresh ----------------------------------------------------------------

    def bootstrap_exchange(self, node_versions: Mapping[int, tuple[int, int]],
                           send: Callable[[bytes], bytes]) -> ClusterView:
        """One metadata refresh against one bootstrap node: negotiate, send, parse.  A failure
        goes through ``metadata_update_failed`` (D-6) and is raised."""
        try:
            request = self.metadata_request(node_versions)
            return self.handle_metadata_response(request, send(request.payload))
        except ApiException as error:
            self.metadata_update_failed(error)
            raise


def parse_describe_cluster_response(body: Mapping, expected: int) -> ClusterView:
    """``parseDescribeClusterResponse`` (D-5): a non-zero ErrorCode is thrown as its exception;
    the wrong EndpointType is MismatchedEndpointTypeException; the controller is the node whose
    id is ControllerId (None if -1 or not listed)."""
    if body["ErrorCode"]:
        raise exception_for(body["ErrorCode"], body["ErrorMessage"])
    if body["EndpointType"] != expected:
        # The exception class is Kafka's (D-5); this message text is kipcheck's own.
        raise MismatchedEndpointTypeException(
            f"Expected response from {'CONTROLLER' if expected == 2 else 'BROKER'} endpoint, "
            f"but got response from endpoint type {body['EndpointType']}")
    nodes = tuple(DescribedNode(b["BrokerId"], b["Host"], b["Port"], b["Rack"])
                  for b in body["Brokers"])
    controller = next((n for n in nodes if n.node_id == body["ControllerId"]), None)
    operations = body["ClusterAuthorizedOperations"]
    return ClusterView(body["ClusterId"], nodes, controller,
                       None if operations == -2147483648 else operations)


def parse_metadata_response(body: Mapping) -> ClusterView:
    nodes = tuple(DescribedNode(b["NodeId"], b["Host"], b["Port"], b.get("Rack"))
                  for b in body["Brokers"])
    controller = next((n for n in nodes if n.node_id == body.get("ControllerId", -1)), None)
    return ClusterView(body.get("ClusterId"), nodes, controller)
