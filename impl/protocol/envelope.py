"""The Envelope's payload: built by the forwarder (F-11 to F-13), unwrapped by the controller
(F-29).

``build_envelope_request`` makes the EnvelopeRequest body from the client's request bytes
(header and body without the size prefix, F-11), the client's principal serialized with its
version prefix (F-12) and the raw bytes of the client's address (F-13).

``unwrap_envelope`` is ``EnvelopeUtils.handleEnvelopeRequest`` (docs/rules.md section 1.7), after
the receiving checks F-22 to F-28 that the caller makes.  Its steps, in Kafka's order, and the error
each one raises (the controller answers with an EnvelopeResponse carrying that code and null
ResponseData):

- F-29a principal: no principal serde on the envelope's connection, or bytes the serde cannot
  read -> PRINCIPAL_DESERIALIZATION_FAILURE (97);
- F-29b client address: not 4 or 16 bytes (``InetAddress.getByAddress``) -> INVALID_REQUEST (42);
- F-29c inner header: unparseable, including an unknown api key -> UNSUPPORTED_VERSION (35);
- F-29d inner api not forwardable (``ApiKeys.forwardable``) -> INVALID_REQUEST (42);
- F-29e inner body: unparseable, including a version the API does not support ->
  UNSUPPORTED_VERSION (35).  A schema directory chosen with ``KIPCHECK_SCHEMAS`` that lacks the
  API's request or response schema gives the same answer: the receiver can neither read the
  request nor answer it (the shipped schemas cover every API).

The result carries what F-30 takes from inside the envelope: the inner header and body, the
forwarded principal and the forwarded client address.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address

from impl.protocol.api_keys import api_key
from impl.protocol.errors import (INVALID_REQUEST, PRINCIPAL_DESERIALIZATION_FAILURE,
                                  UNSUPPORTED_VERSION, ProtocolError, errors_as)
from impl.protocol.principal import KafkaPrincipal, deserialize_principal, serialize_principal
from impl.protocol.schema import MissingSchemaError
from impl.protocol.wire import parse_request_body, parse_request_header, response_schema


@dataclass(frozen=True)
class ForwardedRequest:
    principal: KafkaPrincipal
    client_address: IPv4Address | IPv6Address
    header: dict
    body: dict


def build_envelope_request(request_data: bytes, principal: KafkaPrincipal,
                           client_address: IPv4Address | IPv6Address) -> dict:
    """The EnvelopeRequest body (``ForwardingManager.buildEnvelopeRequest``)."""
    return {"RequestData": bytes(request_data),
            "RequestPrincipal": serialize_principal(principal),
            "ClientHostAddress": client_address.packed}


def parse_forwarded_client_address(raw: bytes) -> IPv4Address | IPv6Address:
    """``InetAddress.getByAddress``: 4 or 16 bytes; Java reads an IPv4-mapped IPv6 address
    (``::ffff:a.b.c.d``) as the IPv4 address."""
    if len(raw) == 4:
        return IPv4Address(raw)
    if len(raw) == 16:
        address = IPv6Address(raw)
        return address.ipv4_mapped or address
    raise ProtocolError(INVALID_REQUEST, f"Failed to parse client address from envelope: addr "
                                         f"is of illegal length {len(raw)}")


def unwrap_envelope(envelope: Mapping, *, principal_serde: bool = True) -> ForwardedRequest:
    """The forwarded request inside a decoded EnvelopeRequest body, checked as in F-29.

    ``principal_serde`` says whether the envelope's connection has a principal serde."""
    if not principal_serde:
        raise ProtocolError(PRINCIPAL_DESERIALIZATION_FAILURE, "Could not deserialize principal "
                            "since no `KafkaPrincipalSerde` has been defined")
    principal = deserialize_principal(envelope["RequestPrincipal"])
    client_address = parse_forwarded_client_address(envelope["ClientHostAddress"])
    data = envelope["RequestData"]
    with errors_as(UNSUPPORTED_VERSION, "Failed to parse request header from envelope"):
        header, offset = parse_request_header(data)
    api = api_key(header["RequestApiKey"])
    if not api.forwardable:
        raise ProtocolError(INVALID_REQUEST, f"API {api.name} is not enabled or is not eligible "
                                             f"for forwarding")
    with errors_as(UNSUPPORTED_VERSION, "Failed to parse forwarded request with header "
                                        f"{header}"):
        try:
            body = parse_request_body(data, header, offset)
            response_schema(api.id)
        except MissingSchemaError as error:
            raise ProtocolError(UNSUPPORTED_VERSION, str(error)) from error
    return ForwardedRequest(principal, client_address, header, body)
