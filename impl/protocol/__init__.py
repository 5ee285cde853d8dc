"""Kafka's wire format for the reference implementation, driven by Kafka's own JSON schemas.

Modules, bottom up:

- ``errors``: ``ProtocolError(code, message)``, the one exception for bad bytes, with Kafka's
  error codes and their default messages (docs/rules.md section 5) and how each layer re-labels
  the layer below (F-29);
- ``primitives``: ``Reader``/``Writer`` for int8..int64, uint16, uint32, float64, bool, uuid,
  (unsigned) varint/varlong, compact and non-compact strings, bytes and array lengths, nullable;
- ``schema``: Kafka's JSON message schemas, verbatim copies of apache/kafka
  ``clients/src/main/resources/common/message`` shipped in ``impl/protocol/schemas`` (or the
  directory ``$KIPCHECK_SCHEMAS``), in ``SCHEMAS`` by name, each parsed on first use;
- ``codec``: ``encode``/``decode`` of any schema at any valid version (versions, flexible versions,
  nullable versions, tagged fields with unknown tags preserved, defaults, nested and common
  structs, arrays);
- ``api_keys``: ``ApiKeys`` (forwardable flag, docs/rules.md section 1.2, the schema names of each
  API) and header versions (docs/rules.md section 1.1);
- ``security_protocol``: ``SecurityProtocol``'s ids, as the wire carries them;
- ``wire``: request and response bytes, header then body (``RequestHeader`` v0-2,
  ``ResponseHeader`` v0-1);
- ``principal``: ``DefaultKafkaPrincipalBuilder``'s principal serde with its version prefix (F-12);
- ``envelope``: building the Envelope (F-11 to F-13) and unwrapping it (F-29, F-30).

Messages are dicts keyed by the schemas' own field names (``"RequestData"``, ``"ClientId"``,
``"timeoutMs"``); see ``codec`` for the value types.  Nothing here imports ``model`` or
``properties``.
"""
from impl.protocol.api_keys import (API_KEYS, FORWARDABLE_API_KEYS, ApiKey, api_key,
                                    request_header_version, response_header_version)
from impl.protocol.codec import UNKNOWN_TAGGED_FIELDS, RawTaggedField, decode, encode
from impl.protocol.envelope import (ForwardedRequest, build_envelope_request,
                                    parse_forwarded_client_address, unwrap_envelope)
from impl.protocol.errors import (INVALID_REQUEST, NONE, PRINCIPAL_DESERIALIZATION_FAILURE,
                                  UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION, ProtocolError)
from impl.protocol.principal import KafkaPrincipal, deserialize_principal, serialize_principal
from impl.protocol.schema import (SCHEMAS, MessageSchema, MissingSchemaError, SchemaError,
                                  Versions, get_schema)
from impl.protocol.wire import (ParsedRequest, encode_request, encode_response, parse_request,
                                parse_request_body, parse_request_header, parse_response)

__all__ = [
    "API_KEYS", "FORWARDABLE_API_KEYS", "ApiKey", "api_key", "request_header_version",
    "response_header_version",
    "UNKNOWN_TAGGED_FIELDS", "RawTaggedField", "decode", "encode",
    "ForwardedRequest", "build_envelope_request", "parse_forwarded_client_address",
    "unwrap_envelope",
    "INVALID_REQUEST", "NONE", "PRINCIPAL_DESERIALIZATION_FAILURE", "UNKNOWN_SERVER_ERROR",
    "UNSUPPORTED_VERSION", "ProtocolError",
    "KafkaPrincipal", "deserialize_principal", "serialize_principal",
    "SCHEMAS", "MessageSchema", "MissingSchemaError", "SchemaError", "Versions", "get_schema",
    "ParsedRequest", "encode_request", "encode_response", "parse_request", "parse_request_body",
    "parse_request_header", "parse_response",
]
