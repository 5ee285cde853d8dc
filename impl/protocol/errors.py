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

The servers' answers use a few more codes, named here for the simulated cluster
(``impl/cluster``): NETWORK_EXCEPTION (13, what a client's ``NetworkClient`` reports for a closed
connection), TOPIC_AUTHORIZATION_FAILED (29) and CLUSTER_AUTHORIZATION_FAILED (31, a denied
mutation).
"""
from __future__ import annotations

from contextlib import contextmanager
from collections.abc import Iterator

UNKNOWN_SERVER_ERROR = -1
NONE = 0
NETWORK_EXCEPTION = 13
TOPIC_AUTHORIZATION_FAILED = 29
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
PRINCIPAL_DESERIALIZATION_FAILURE = 97

ERROR_NAMES = {
    UNKNOWN_SERVER_ERROR: "UNKNOWN_SERVER_ERROR",
    NONE: "NONE",
    NETWORK_EXCEPTION: "NETWORK_EXCEPTION",
    TOPIC_AUTHORIZATION_FAILED: "TOPIC_AUTHORIZATION_FAILED",
    CLUSTER_AUTHORIZATION_FAILED: "CLUSTER_AUTHORIZATION_FAILED",
    UNSUPPORTED_VERSION: "UNSUPPORTED_VERSION",
    INVALID_REQUEST: "INVALID_REQUEST",
    PRINCIPAL_DESERIALIZATION_FAILURE: "PRINCIPAL_DESERIALIZATION_FAILURE",
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
