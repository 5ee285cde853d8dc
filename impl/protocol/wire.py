"""Requests and responses as bytes: a header then a body, without the 4-byte size prefix.

This is the form a client's request takes inside an Envelope's ``RequestData`` (F-11) and the form
of an inner response in ``ResponseData`` (F-34).  It follows Kafka's:

- ``RequestHeader.parse``: the api key and version are read first to choose the header version
  (``api_keys.request_header_version``); any failure, including an unknown api key, is
  INVALID_REQUEST (42); a null ``ClientId`` is read as ``""``;
- ``RequestContext.parseRequest`` / ``AbstractRequest``: any failure to parse the body, including
  a version outside the API's valid versions, is INVALID_REQUEST (42); the socket server then
  closes the connection (F-22, F-38), which is the caller's business.  An ApiVersions request
  of an unsupported version is not parsed and is answered as v0 (KIP-511, F-38);
- ``AbstractResponse.parseResponse`` as the forwarder calls it (``ForwardingManager.parseResponse``,
  table 1.6 of docs/rules.md): a missing or unparseable response or a correlation id that differs
  from the request's is UNKNOWN_SERVER_ERROR (-1).

Headers and bodies are dicts keyed by the schemas' field names (``RequestApiKey``,
``RequestApiVersion``, ``CorrelationId``, ``ClientId``).  Every API of ``ApiKeys`` has its schemas
in the package; only a schema directory chosen with ``KIPCHECK_SCHEMAS`` can lack one, and then a
request or response of that API raises ``MissingSchemaError`` (not a ``ProtocolError``: the bytes
may be fine; the Envelope's receiver answers it as an unparseable inner request, F-29e).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from impl.protocol.api_keys import (API_VERSIONS, api_key, request_header_version,
                                    response_header_version)
from impl.protocol.codec import read_message, write_message
from impl.protocol.errors import (INVALID_REQUEST, UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION,
                                  ProtocolError, errors_as)
from impl.protocol.primitives import Reader, Writer, malformed
from impl.protocol.schema import MessageSchema, MissingSchemaError, SchemaError, get_schema

REQUEST_HEADER = get_schema("RequestHeader")
RESPONSE_HEADER = get_schema("ResponseHeader")


class ParsedRequest(NamedTuple):
    header: dict
    body: dict


def request_schema(key: int) -> MessageSchema:
    """The request schema of api key ``key``; ``MissingSchemaError`` if the directory lacks it."""
    return _message_schema(key, "request")


def response_schema(key: int) -> MessageSchema:
    """The response schema of api key ``key``; ``MissingSchemaError`` if the directory lacks it."""
    return _message_schema(key, "response")


def _message_schema(key: int, kind: str) -> MessageSchema:
    api = api_key(key)
    try:
        schema = get_schema(api.message_name + kind.capitalize())
    except MissingSchemaError as error:
        raise MissingSchemaError(f"no {kind} schema for {api.name} (api key {key}): "
                                 f"{error}") from None
    if schema.type != kind or schema.api_key != key:
        raise SchemaError(f"{schema.name} is a {schema.type} of api key {schema.api_key}, "
                          f"not the {kind} of {api.name} (api key {key})")
    return schema


def _key_and_version(header: Mapping) -> tuple[int, int]:
    key, version = header.get("RequestApiKey"), header.get("RequestApiVersion")
    if not isinstance(key, int) or not isinstance(version, int):
        raise malformed(f"a request header needs integer RequestApiKey and RequestApiVersion, "
                        f"got {key!r} and {version!r}")
    return key, version


def encode_request(header: Mapping, body: Mapping) -> bytes:
    """The request header (of the version the API's version implies) followed by the body."""
    key, version = _key_and_version(header)
    writer = Writer()
    write_message(writer, REQUEST_HEADER, header, request_header_version(key, version))
    write_message(writer, request_schema(key), body, version)
    return writer.getvalue()


def parse_request_header(data: bytes) -> tuple[dict, int]:
    """``RequestHeader.parse``: the header and the offset where the body starts."""
    reader, key = Reader(data), -1
    try:
        key = reader.read_int16()
        header_version = request_header_version(key, reader.read_int16())
        reader.position = 0
        header = read_message(reader, REQUEST_HEADER, header_version)
    except ProtocolError as error:
        raise ProtocolError(INVALID_REQUEST, f"Error parsing request header. Our best guess of "
                                             f"the apiKey is: {key}: {error.message}") from error
    if header["ClientId"] is None:
        header["ClientId"] = ""
    return header, reader.position


def parse_request_body(data: bytes, header: Mapping, offset: int) -> dict:
    """The body that starts at ``offset`` of ``data``, given its parsed ``header``
    (``RequestContext.parseRequest``); INVALID_REQUEST if it cannot be parsed."""
    key, version = header["RequestApiKey"], header["RequestApiVersion"]
    api = api_key(key)
    if key == API_VERSIONS and version not in api.valid_versions:
        return request_schema(key).struct.default_value()
    with errors_as(INVALID_REQUEST, f"Error getting request for apiKey: {api.name}, "
                                    f"apiVersion: {version}"):
        if version not in api.valid_versions:
            raise ProtocolError(UNSUPPORTED_VERSION,
                                f"The {api.name} protocol does not support version {version}")
        return read_message(Reader(data, offset), request_schema(key), version)


def parse_request(data: bytes) -> ParsedRequest:
    """Header and body of a request (``RequestHeader.parse`` then ``parseRequest``)."""
    header, offset = parse_request_header(data)
    return ParsedRequest(header, parse_request_body(data, header, offset))


def encode_response(key: int, version: int, correlation_id: int, body: Mapping) -> bytes:
    """The response header (of the version the API's version implies) followed by the body."""
    writer = Writer()
    write_message(writer, RESPONSE_HEADER, {"CorrelationId": correlation_id},
                  response_header_version(key, version))
    write_message(writer, response_schema(key), body, version)
    return writer.getvalue()


def parse_response(data: bytes | None, request_header: Mapping) -> dict:
    """The body of the response to ``request_header``; UNKNOWN_SERVER_ERROR if unusable."""
    key, version = _key_and_version(request_header)
    with errors_as(UNKNOWN_SERVER_ERROR, f"Failed to parse the {api_key(key).name} v{version} "
                                         f"response"):
        if data is None:
            raise malformed("the response data is null")
        reader = Reader(data)
        header = read_message(reader, RESPONSE_HEADER, response_header_version(key, version))
        expected = request_header.get("CorrelationId")
        if header["CorrelationId"] != expected:
            raise malformed(f"Correlation id for response ({header['CorrelationId']}) does not "
                            f"match request ({expected})")
        return read_message(reader, response_schema(key), version)
