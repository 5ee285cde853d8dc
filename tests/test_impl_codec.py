"""The reference implementation's wire codec (``impl/protocol``), issue 4 "Done when" item 1.

- Hypothesis round trips, with strategies generated from the schemas themselves: every primitive
  (``Reader``/``Writer``, and compact / non-compact / nullable strings, bytes and arrays through a
  synthetic schema), every schema in the reference directory at every version it supports, whole
  requests and responses with their headers, the principal serde and the Envelope.
- Golden bytes derived by hand from the schemas (reference 1.1, 2.6): one EnvelopeRequest, one
  serialized principal with its version prefix (F-12) and one DescribeClusterRequest v1, each
  with every byte explained.
- Truncated and corrupted inputs give Kafka's error codes: INVALID_REQUEST for an unparseable
  request on the socket, the F-29 mapping inside an Envelope (97, 42, 35 in Kafka's order),
  UNSUPPORTED_VERSION for a version outside a schema, UNKNOWN_SERVER_ERROR for an unusable
  forwarded response (reference table 1.6); arbitrary bytes never raise anything else.
"""
import ast
import subprocess
import sys
import uuid
from ipaddress import IPv4Address, IPv6Address
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impl.protocol import (API_KEYS, FORWARDABLE_API_KEYS, INVALID_REQUEST,
                           PRINCIPAL_DESERIALIZATION_FAILURE, SCHEMAS, UNKNOWN_SERVER_ERROR,
                           UNKNOWN_TAGGED_FIELDS, UNSUPPORTED_VERSION, KafkaPrincipal,
                           MissingSchemaError, ProtocolError, RawTaggedField, SchemaError,
                           build_envelope_request, decode, deserialize_principal, encode,
                           encode_request, encode_response, parse_forwarded_client_address,
                           parse_request, parse_request_body, parse_request_header,
                           parse_response,
                           request_header_version, response_header_version, serialize_principal,
                           unwrap_envelope)
from impl.protocol import schema as schema_module
from impl.protocol.primitives import INT_RANGES, Reader, Writer
from impl.protocol.schema import (DEFAULT_SCHEMA_DIR, SCHEMA_DIR_ENV, load_schemas, parse_schema,
                                  schema_dir, strip_comments)

ROOT = Path(__file__).resolve().parent.parent

ROUND_TRIP = settings(max_examples=10, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow])
FUZZ = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------------------
# Strategies generated from the schemas


def type_values(field, ftype, version, flexible):
    kind = ftype.kind
    if kind in INT_RANGES:
        return st.integers(*INT_RANGES[kind])
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.uuids() | st.just(uuid.UUID(int=0))
    if kind == "string":
        return st.text(max_size=6)
    if kind in ("bytes", "records"):
        return st.binary(max_size=6)
    if kind == "struct":
        return struct_values(ftype.struct, version, flexible)
    return st.lists(type_values(field, ftype.element, version, flexible), max_size=2)


def field_values(field, version, flexible):
    if version not in field.versions:
        return st.builds(field.default_value)
    values = type_values(field, field.type, version, flexible)
    return st.none() | values if version in field.nullable_versions else values


def with_unknown_tags(pair):
    value, unknown = pair
    if unknown:
        value[UNKNOWN_TAGGED_FIELDS] = unknown
    return value


def struct_values(struct, version, flexible):
    fields = st.fixed_dictionaries({f.name: field_values(f, version, flexible)
                                    for f in struct.fields})
    if not flexible:
        return fields
    unknown = st.lists(st.integers(0, 40).filter(lambda tag: tag not in struct.tags),
                       unique=True, max_size=2).flatmap(
        lambda tags: st.tuples(*[st.builds(RawTaggedField, st.just(tag), st.binary(max_size=3))
                                 for tag in sorted(tags)]).map(list))
    return st.tuples(fields, unknown).map(with_unknown_tags)


def message_values(schema, version):
    return struct_values(schema.struct, version, version in schema.flexible_versions)


def versions_of(schema):
    return range(schema.valid_versions.lowest, schema.valid_versions.highest + 1)


# The APIs the model's messages stand for: Metadata, CreateTopics, CreateAcls, ApiVersions,
# IncrementalAlterConfigs, Envelope, DescribeCluster, BrokerRegistration, ControllerRegistration.
CORE_API_KEYS = frozenset({3, 19, 30, 18, 44, 58, 60, 62, 70})


def _in_default_run(schema, version) -> bool:
    """Every version of the core APIs (and of headers, records and the principal data); the
    highest version of any other.  tests/test_codec_kio.py checks every version of every schema
    against an independent codec in the default run; the slow tier round-trips them all here
    too."""
    return (schema.api_key is None or schema.api_key in CORE_API_KEYS
            or version == schema.valid_versions.highest)


def _cases(pairs):
    return [(n, v) if _in_default_run(SCHEMAS[n], v) else pytest.param(n, v, marks=pytest.mark.slow)
            for n, v in pairs]


ALL_VERSIONS = [(name, v) for name, s in sorted(SCHEMAS.items()) for v in versions_of(s)]
SCHEMA_VERSIONS = _cases(ALL_VERSIONS)
REQUESTS = _cases([(n, v) for n, v in ALL_VERSIONS if SCHEMAS[n].type == "request"])
RESPONSES = _cases([(n, v) for n, v in ALL_VERSIONS if SCHEMAS[n].type == "response"])
# Requests and responses round-trip with their headers below; this is for the rest (headers,
# metadata records, the principal data, the consumer protocol)
OTHER_MESSAGES = _cases([(n, v) for n, v in ALL_VERSIONS
                         if SCHEMAS[n].type not in ("request", "response")])
FORWARDABLE_REQUESTS = _cases([(n, v) for n, v in ALL_VERSIONS if SCHEMAS[n].type == "request"
                               and SCHEMAS[n].api_key in FORWARDABLE_API_KEYS])

principals = st.builds(KafkaPrincipal, st.text(max_size=8), st.text(max_size=8), st.booleans())
addresses = (st.ip_addresses(v=4) |
             st.ip_addresses(v=6).filter(lambda address: address.ipv4_mapped is None))


# ------------------------------------------------------------------------------------------
# Primitives


@pytest.mark.parametrize("kind", sorted(INT_RANGES))
@ROUND_TRIP
@given(data=st.data())
def test_integer_round_trip(kind, data):
    value = data.draw(st.integers(*INT_RANGES[kind]))
    writer = Writer()
    getattr(writer, f"write_{kind}")(value)
    encoded = writer.getvalue()
    assert len(encoded) == {"int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
                            "int64": 8}[kind]
    reader = Reader(encoded)
    assert getattr(reader, f"read_{kind}")() == value and reader.remaining == 0


@pytest.mark.parametrize("kind, values", [
    ("bool", st.booleans()),
    ("float64", st.floats(allow_nan=False)),
    ("uuid", st.uuids()),
    ("varint", st.integers(*INT_RANGES["int32"])),
    ("unsigned_varint", st.integers(0, (1 << 31) - 1)),   # read back as a Java int (below)
    ("varlong", st.integers(*INT_RANGES["int64"])),
    ("unsigned_varlong", st.integers(0, (1 << 64) - 1)),
])
@ROUND_TRIP
@given(data=st.data())
def test_other_primitive_round_trip(kind, values, data):
    value = data.draw(values)
    writer = Writer()
    getattr(writer, f"write_{kind}")(value)
    reader = Reader(writer.getvalue())
    assert getattr(reader, f"read_{kind}")() == value and reader.remaining == 0


@pytest.mark.parametrize("kind, value, encoded", [
    # ByteUtilsTest vectors: 7 bits per byte, least significant group first, high bit = more
    ("unsigned_varint", 0, b"\x00"),
    ("unsigned_varint", 300, b"\xac\x02"),
    ("unsigned_varint", (1 << 31) - 1, b"\xff\xff\xff\xff\x07"),
    ("varint", 0, b"\x00"),                     # zig-zag: 0, -1, 1, -2 -> 0, 1, 2, 3
    ("varint", -1, b"\x01"),
    ("varint", 1, b"\x02"),
    ("varint", -(1 << 31), b"\xff\xff\xff\xff\x0f"),
    ("varlong", -(1 << 63), b"\xff" * 9 + b"\x01"),
])
def test_varint_vectors(kind, value, encoded):
    writer = Writer()
    getattr(writer, f"write_{kind}")(value)
    assert writer.getvalue() == encoded
    assert getattr(Reader(encoded), f"read_{kind}")() == value


def test_unsigned_varint_reads_as_a_java_int():
    # Kafka keeps an unsigned varint in a Java int: 0xFFFFFFFF is -1, and bits past 32 are lost
    assert Reader(b"\xff\xff\xff\xff\x0f").read_unsigned_varint() == -1
    assert Reader(b"\x80\x80\x80\x80\x10").read_unsigned_varint() == 0


@pytest.mark.parametrize("data, reader", [
    (b"\xff\xff\xff\xff\xff", Reader.read_unsigned_varint),      # 5th byte continues
    (b"\xff\xff\xff\xff\xff\x00", Reader.read_varint),
    (b"\xff" * 10, Reader.read_unsigned_varlong),                 # 10th byte continues
    (b"\x80", Reader.read_unsigned_varint),                       # truncated
    (b"\x00" * 15, Reader.read_uuid),
    (b"", Reader.read_bool),
])
def test_bad_primitive_bytes_are_protocol_errors(data, reader):
    with pytest.raises(ProtocolError) as error:
        reader(Reader(data))
    assert error.value.code == UNKNOWN_SERVER_ERROR


def test_strings_decode_invalid_utf8_as_java_does_and_bools_accept_any_non_zero_byte():
    reader = Reader(b"\x00\x02\xc3\x28")        # int16 length 2, then an invalid UTF-8 pair
    assert reader.read_string("S", compact=False, nullable=False) == "\ufffd("
    assert Reader(b"\x02").read_bool() is True


@pytest.mark.parametrize("write", [
    lambda w: w.write_int8(128), lambda w: w.write_uint16(-1), lambda w: w.write_int32(True),
    lambda w: w.write_bool(1), lambda w: w.write_uuid("not a uuid"),
    lambda w: w.write_string(None, "S", compact=True, nullable=False),
    lambda w: w.write_string("x" * 0x8000, "S", compact=True, nullable=False),
    lambda w: w.write_bytes("text", "B", compact=False, nullable=False),
    lambda w: w.write_unsigned_varlong(-1),
])
def test_unserializable_values_are_protocol_errors(write):
    with pytest.raises(ProtocolError) as error:
        write(Writer())
    assert error.value.code == UNKNOWN_SERVER_ERROR


# A synthetic schema exercising every type and attribute the generator supports: non-compact in
# v0, compact and tagged in v1, nullable forms, a per-field flexibleVersions override, defaults
# (hex, float, string, null), inline and common structs, nullable and tagged structs.
PRIMITIVES = parse_schema({
    "name": "PrimitivesData", "type": "data", "validVersions": "0-1", "flexibleVersions": "1+",
    "fields": [
        {"name": "Int8", "type": "int8", "versions": "0+"},
        {"name": "Int16", "type": "int16", "versions": "0+"},
        {"name": "Uint16", "type": "uint16", "versions": "0+"},
        {"name": "Int32", "type": "int32", "versions": "0+"},
        {"name": "Uint32", "type": "uint32", "versions": "0+"},
        {"name": "Int64", "type": "int64", "versions": "0+"},
        {"name": "Float64", "type": "float64", "versions": "0+"},
        {"name": "Bool", "type": "bool", "versions": "0+"},
        {"name": "Uuid", "type": "uuid", "versions": "0+"},
        {"name": "Str", "type": "string", "versions": "0+"},
        {"name": "NullableStr", "type": "string", "versions": "0+", "nullableVersions": "0+"},
        {"name": "OldStyleStr", "type": "string", "versions": "0+", "flexibleVersions": "none"},
        {"name": "Bytes", "type": "bytes", "versions": "0+"},
        {"name": "NullableBytes", "type": "bytes", "versions": "0+", "nullableVersions": "0+"},
        {"name": "Records", "type": "records", "versions": "0+", "nullableVersions": "0+"},
        {"name": "Ints", "type": "[]int32", "versions": "0+"},
        {"name": "Strings", "type": "[]string", "versions": "0+", "nullableVersions": "0+"},
        {"name": "Uuids", "type": "[]uuid", "versions": "0+"},
        {"name": "Common", "type": "Pair", "versions": "0+", "nullableVersions": "0+"},
        {"name": "Pairs", "type": "[]Pair", "versions": "0+"},
        {"name": "Inline", "type": "InlineStruct", "versions": "0+", "fields": [
            {"name": "X", "type": "int32", "versions": "0+", "default": "0x10"}]},
        {"name": "TaggedStr", "type": "string", "versions": "1+", "taggedVersions": "1+",
         "tag": 0, "nullableVersions": "1+", "default": "dflt"},
        {"name": "TaggedPair", "type": "Pair", "versions": "1+", "taggedVersions": "1+",
         "tag": 2, "nullableVersions": "1+", "default": "null"},
        {"name": "TaggedLongs", "type": "[]int64", "taggedVersions": "1+", "tag": "5"},
    ],
    "commonStructs": [{"name": "Pair", "versions": "0+", "fields": [
        {"name": "Key", "type": "string", "versions": "0+"},
        {"name": "Value", "type": "float64", "versions": "0+", "default": "1.5"}]}],
})


@pytest.mark.parametrize("version", [0, 1])
@ROUND_TRIP
@given(data=st.data())
def test_every_type_round_trips_compact_and_non_compact(version, data):
    value = data.draw(message_values(PRIMITIVES, version))
    encoded = encode(PRIMITIVES, value, version)
    decoded = decode(PRIMITIVES, encoded, version)
    assert decoded == value
    assert encode(PRIMITIVES, decoded, version) == encoded


def test_defaults_of_the_synthetic_schema():
    value = decode(PRIMITIVES, encode(PRIMITIVES, {}, 1), 1)
    assert value["Inline"] == {"X": 16} and value["TaggedStr"] == "dflt"
    assert value["TaggedPair"] is None and value["Common"] == {"Key": "", "Value": 1.5}
    assert value["Uuid"] == uuid.UUID(int=0) and value["Records"] is None
    # v0 has no tagged fields at all: TaggedStr is absent and reads as its default
    assert decode(PRIMITIVES, encode(PRIMITIVES, {}, 0), 0)["TaggedStr"] == "dflt"


def one_field(spec):
    """A flexible-from-v1 schema with the single field ``spec``."""
    return parse_schema({"name": "OneFieldData", "type": "data", "validVersions": "0-1",
                         "flexibleVersions": "1+", "fields": [{"name": "F", **spec}]})


@pytest.mark.parametrize("spec, value, version, encoded", [
    # non-compact (v0): int16 (string) or int32 (bytes, array) length, -1 = null;
    # compact (v1): unsigned varint of length + 1, 0 = null; v1 ends with 0 tagged fields
    ({"type": "string", "versions": "0+", "nullableVersions": "0+"}, None, 0, b"\xff\xff"),
    ({"type": "string", "versions": "0+", "nullableVersions": "0+"}, None, 1, b"\x00\x00"),
    ({"type": "string", "versions": "0+"}, "ab", 0, b"\x00\x02ab"),
    ({"type": "string", "versions": "0+"}, "ab", 1, b"\x03ab\x00"),
    ({"type": "string", "versions": "0+", "flexibleVersions": "none"}, "ab", 1, b"\x00\x02ab\x00"),
    ({"type": "bytes", "versions": "0+", "nullableVersions": "0+"}, None, 0, b"\xff\xff\xff\xff"),
    ({"type": "bytes", "versions": "0+"}, b"\x07", 0, b"\x00\x00\x00\x01\x07"),
    ({"type": "bytes", "versions": "0+"}, b"\x07", 1, b"\x02\x07\x00"),
    ({"type": "[]string", "versions": "0+", "nullableVersions": "0+"}, None, 0,
     b"\xff\xff\xff\xff"),
    ({"type": "[]string", "versions": "0+", "nullableVersions": "0+"}, None, 1, b"\x00\x00"),
    ({"type": "[]string", "versions": "0+"}, ["a"], 0, b"\x00\x00\x00\x01\x00\x01a"),
    ({"type": "[]string", "versions": "0+"}, ["a"], 1, b"\x02\x02a\x00"),
    ({"type": "[]int16", "versions": "0+"}, [1, -1], 1, b"\x03\x00\x01\xff\xff\x00"),
    # a nullable struct has an int8 marker (-1 null, 1 present) before its fields
    ({"type": "S", "versions": "0+", "nullableVersions": "0+",
      "fields": [{"name": "X", "type": "int8", "versions": "0+"}]}, None, 0, b"\xff"),
    ({"type": "S", "versions": "0+", "nullableVersions": "0+",
      "fields": [{"name": "X", "type": "int8", "versions": "0+"}]}, {"X": 5}, 0, b"\x01\x05"),
    # a tagged field: count, then tag, size, value -- and nothing when it holds its default
    ({"type": "int32", "versions": "1+", "taggedVersions": "1+", "tag": 3}, 0, 1, b"\x00"),
    ({"type": "int32", "versions": "1+", "taggedVersions": "1+", "tag": 3}, 9, 1,
     b"\x01\x03\x04\x00\x00\x00\x09"),
    ({"type": "S", "versions": "1+", "taggedVersions": "1+", "tag": 0, "nullableVersions": "1+",
      "fields": [{"name": "X", "type": "int8", "versions": "1+"}]}, {"X": 5}, 1,
     b"\x01\x00\x03\x01\x05\x00"),   # tagged nullable struct: varint marker 1, X, its tags
])
def test_length_prefixed_and_tagged_encodings(spec, value, version, encoded):
    schema = one_field(spec)
    assert encode(schema, {"F": value}, version) == encoded
    assert decode(schema, encoded, version) == {"F": value}


def test_unknown_tags_are_kept_and_written_back_in_tag_order():
    schema = one_field({"type": "int32", "versions": "1+", "taggedVersions": "1+", "tag": 3})
    data = (b"\x03"                      # three tagged fields
            b"\x01\x01\xaa"              # unknown tag 1, size 1
            b"\x03\x04\x00\x00\x00\x09"  # known tag 3 (F = 9)
            b"\x07\x00")                 # unknown tag 7, size 0
    value = decode(schema, data, 1)
    assert value == {"F": 9, UNKNOWN_TAGGED_FIELDS: [(1, b"\xaa"), (7, b"")]}
    assert encode(schema, value, 1) == data
    with pytest.raises(ProtocolError) as error:     # out of order: Kafka's RawTaggedFieldWriter
        encode(schema, {UNKNOWN_TAGGED_FIELDS: [(7, b""), (1, b"")]}, 1)
    assert error.value.code == UNKNOWN_SERVER_ERROR
    with pytest.raises(ProtocolError):               # a known tag cannot be written as unknown
        encode(schema, {UNKNOWN_TAGGED_FIELDS: [(3, b"")]}, 1)
    with pytest.raises(ProtocolError) as error:      # v0 is not flexible: no tagged fields
        encode(schema, {UNKNOWN_TAGGED_FIELDS: [(1, b"")]}, 0)
    assert error.value.code == UNSUPPORTED_VERSION


def test_a_known_tag_outside_its_tagged_versions_is_malformed():
    schema = parse_schema({"name": "T", "type": "data", "validVersions": "0-1",
                           "flexibleVersions": "0+", "fields": [
                               {"name": "F", "type": "int8", "versions": "1+",
                                "taggedVersions": "1+", "tag": 0}]})
    assert decode(schema, b"\x01\x00\x01\x05", 1) == {"F": 5}
    with pytest.raises(ProtocolError, match="Tag 0 is not valid for version 0"):
        decode(schema, b"\x01\x00\x01\x05", 0)


@pytest.mark.parametrize("spec, problem", [
    ({"type": "int32", "versions": "0+", "nullableVersions": "0+"}, "cannot be nullable"),
    ({"type": "int32", "versions": "0+", "tag": 1}, "needs taggedVersions"),
    ({"type": "int32", "versions": "0+", "taggedVersions": "0+", "tag": 1}, "not a subset"),
    ({"type": "int32"}, "no versions"),
    ({"type": "int33", "versions": "0+"}, "unknown type"),
    ({"type": "[]Missing", "versions": "0+"}, "not a common struct"),
    ({"type": "[][]int8", "versions": "0+"}, "nested arrays"),
    ({"type": "int32", "versions": "0+", "flexibleVersions": "none"}, "override"),
    ({"type": "int8", "versions": "0+", "default": "x"}, "invalid default"),
    ({"type": "int8", "versions": "zero"}, "invalid version range"),
])
def test_invalid_schemas_are_schema_errors(spec, problem):
    with pytest.raises(SchemaError, match=problem):
        parse_schema({"name": "Bad", "type": "data", "validVersions": "0",
                      "flexibleVersions": "1+", "fields": [{"name": "F", **spec}]})


# ------------------------------------------------------------------------------------------
# Every schema, every version (the default run takes a subset: _in_default_run)


@pytest.mark.parametrize("name, version", OTHER_MESSAGES)
@ROUND_TRIP
@given(data=st.data())
def test_every_message_round_trips(name, version, data):
    schema = SCHEMAS[name]
    value = data.draw(message_values(schema, version))
    encoded = encode(schema, value, version)
    decoded = decode(schema, encoded, version)
    assert decoded == value
    assert encode(schema, decoded, version) == encoded


@pytest.mark.parametrize("name, version", REQUESTS)
@ROUND_TRIP
@given(data=st.data())
def test_every_request_round_trips_with_its_header(name, version, data):
    schema = SCHEMAS[name]
    header = {"RequestApiKey": schema.api_key, "RequestApiVersion": version,
              "CorrelationId": data.draw(st.integers(*INT_RANGES["int32"])),
              "ClientId": data.draw(st.text(max_size=6))}
    body = data.draw(message_values(schema, version))
    encoded = encode_request(header, body)
    if request_header_version(schema.api_key, version) == 0:
        header["ClientId"] = ""     # not in RequestHeader v0, and ignorable: dropped on the wire
    assert parse_request(encoded) == (header, body)
    assert encode_request(*parse_request(encoded)) == encoded


@pytest.mark.parametrize("name, version", RESPONSES)
@ROUND_TRIP
@given(data=st.data())
def test_every_response_round_trips_with_its_header(name, version, data):
    schema = SCHEMAS[name]
    correlation_id = data.draw(st.integers(*INT_RANGES["int32"]))
    body = data.draw(message_values(schema, version))
    encoded = encode_response(schema.api_key, version, correlation_id, body)
    request_header = {"RequestApiKey": schema.api_key, "RequestApiVersion": version,
                      "CorrelationId": correlation_id, "ClientId": ""}
    assert parse_response(encoded, request_header) == body


@ROUND_TRIP
@given(principal=principals)
def test_principal_round_trips(principal):
    data = serialize_principal(principal)
    assert data[:2] == b"\x00\x00"               # the version prefix
    assert deserialize_principal(data) == principal
    assert serialize_principal(deserialize_principal(data)) == data


@pytest.mark.parametrize("name, version", FORWARDABLE_REQUESTS)
@ROUND_TRIP
@given(data=st.data())
def test_envelope_round_trips_every_forwardable_request(name, version, data):
    schema = SCHEMAS[name]
    header = {"RequestApiKey": schema.api_key, "RequestApiVersion": version,
              "CorrelationId": data.draw(st.integers(*INT_RANGES["int32"])),
              "ClientId": data.draw(st.text(max_size=6))}
    body = data.draw(message_values(schema, version))
    principal, address = data.draw(principals), data.draw(addresses)
    envelope = build_envelope_request(encode_request(header, body), principal, address)
    outer = {"RequestApiKey": 58, "RequestApiVersion": 0, "CorrelationId": 1, "ClientId": "b"}
    received = parse_request(encode_request(outer, envelope))
    forwarded = unwrap_envelope(received.body)
    assert (forwarded.principal, forwarded.client_address) == (principal, address)
    assert (forwarded.header, forwarded.body) == (header, body)


# ------------------------------------------------------------------------------------------
# Golden bytes, derived by hand from the schemas

# DefaultKafkaPrincipalBuilder.serialize(User:alice) (reference 1.1): a 2-byte version prefix,
# then DefaultPrincipalData v0, which is flexible ("flexibleVersions": "0+"): compact strings
# and a tagged-field section.
PRINCIPAL_GOLDEN = (
    b"\x00\x00"        # version prefix = 0 (int16), DefaultPrincipalData.HIGHEST_SUPPORTED_VERSION
    b"\x05" b"User"     # Type: compact string, unsigned varint length + 1 = 5, then 4 UTF-8 bytes
    b"\x06" b"alice"    # Name: compact string, length + 1 = 6, then 5 UTF-8 bytes
    b"\x00"             # TokenAuthenticated = false (bool, one byte)
    b"\x00"             # tagged fields: count = 0 (unsigned varint)
)

# The client's request that the Envelope carries (F-11): CreateTopicsRequest v7 with no topics.
# v7 is flexible (CreateTopics "flexibleVersions": "5+"), so the header is RequestHeader v2.
INNER_CREATE_TOPICS = (
    b"\x00\x13"          # RequestApiKey = 19 (CreateTopics), int16
    b"\x00\x07"          # RequestApiVersion = 7, int16
    b"\x00\x00\x00\x2a"  # CorrelationId = 42, int32
    b"\x00\x03" b"app"   # ClientId: nullable string with an int16 length even in header v2
                         # (its "flexibleVersions": "none"), length 3, then "app"
    b"\x00"             # header tagged fields: count = 0 (header v2 is flexible)
    b"\x01"             # Topics: compact array, unsigned varint length + 1 = 1, so empty
    b"\x00\x00\x75\x30"  # timeoutMs = 30000, int32
    b"\x00"             # validateOnly = false (bool, v1+)
    b"\x00"             # body tagged fields: count = 0
)                       # 21 bytes in all

# EnvelopeRequest v0 from a broker to the controller, header included (reference 1.1).
# Envelope v0 is flexible ("flexibleVersions": "0+"), so RequestHeader v2 and compact bytes.
ENVELOPE_GOLDEN = (
    b"\x00\x3a"          # RequestApiKey = 58 (Envelope), int16
    b"\x00\x00"          # RequestApiVersion = 0, int16
    b"\x00\x00\x00\x07"  # CorrelationId = 7, int32
    b"\x00\x03" b"fwd"   # ClientId: int16 length 3, then "fwd"
    b"\x00"             # header tagged fields: count = 0
    b"\x16"             # RequestData: compact bytes, length + 1 = 22 (0x16) ...
    + INNER_CREATE_TOPICS  # ... then the client's 21-byte request, header and body (F-11)
    + b"\x10"           # RequestPrincipal: compact nullable bytes, length + 1 = 16 (0x10) ...
    + PRINCIPAL_GOLDEN   # ... then the 15-byte serialized principal (F-12)
    + b"\x05"           # ClientHostAddress: compact bytes, length + 1 = 5 ...
    b"\xc0\xa8\x00\x07"  # ... then the 4 bytes of IPv4 192.168.0.7 (F-13)
    b"\x00"             # body tagged fields: count = 0
)

# DescribeClusterRequest v1 from an admin client using bootstrap.controllers (reference 2.6,
# D-5). DescribeCluster is flexible from v0, so RequestHeader v2.
DESCRIBE_CLUSTER_V1_GOLDEN = (
    b"\x00\x3c"          # RequestApiKey = 60 (DescribeCluster), int16
    b"\x00\x01"          # RequestApiVersion = 1, int16
    b"\x00\x00\x00\x05"  # CorrelationId = 5, int32
    b"\x00\x0d" b"adminclient-1"  # ClientId: int16 length 13, then 13 UTF-8 bytes
    b"\x00"             # header tagged fields: count = 0
    b"\x01"             # IncludeClusterAuthorizedOperations = true (bool)
    b"\x02"             # EndpointType = 2 (controllers), int8, only in v1+
    b"\x00"             # body tagged fields: count = 0
)

ALICE = KafkaPrincipal("User", "alice")
ENVELOPE_HEADER = {"RequestApiKey": 58, "RequestApiVersion": 0, "CorrelationId": 7,
                   "ClientId": "fwd"}
INNER_HEADER = {"RequestApiKey": 19, "RequestApiVersion": 7, "CorrelationId": 42,
                "ClientId": "app"}
INNER_BODY = {"Topics": [], "timeoutMs": 30000, "validateOnly": False}
DESCRIBE_CLUSTER_HEADER = {"RequestApiKey": 60, "RequestApiVersion": 1, "CorrelationId": 5,
                           "ClientId": "adminclient-1"}
DESCRIBE_CLUSTER_BODY = {"IncludeClusterAuthorizedOperations": True, "EndpointType": 2}


def test_principal_golden():
    assert len(PRINCIPAL_GOLDEN) == 15
    assert serialize_principal(ALICE) == PRINCIPAL_GOLDEN
    assert deserialize_principal(PRINCIPAL_GOLDEN) == ALICE


def test_envelope_golden():
    assert len(INNER_CREATE_TOPICS) == 21
    assert encode_request(INNER_HEADER, INNER_BODY) == INNER_CREATE_TOPICS
    envelope = build_envelope_request(INNER_CREATE_TOPICS, ALICE, IPv4Address("192.168.0.7"))
    assert encode_request(ENVELOPE_HEADER, envelope) == ENVELOPE_GOLDEN
    assert parse_request(ENVELOPE_GOLDEN) == (ENVELOPE_HEADER, envelope)
    forwarded = unwrap_envelope(envelope)
    assert forwarded.principal == ALICE
    assert forwarded.client_address == IPv4Address("192.168.0.7")
    assert (forwarded.header, forwarded.body) == (INNER_HEADER, INNER_BODY)


def test_describe_cluster_v1_golden():
    assert encode_request(DESCRIBE_CLUSTER_HEADER, DESCRIBE_CLUSTER_BODY) == \
        DESCRIBE_CLUSTER_V1_GOLDEN
    assert parse_request(DESCRIBE_CLUSTER_V1_GOLDEN) == (DESCRIBE_CLUSTER_HEADER,
                                                         DESCRIBE_CLUSTER_BODY)


# ------------------------------------------------------------------------------------------
# Truncated and corrupted bytes


def error_code(call, *args, **kwargs):
    with pytest.raises(ProtocolError) as error:
        call(*args, **kwargs)
    return error.value.code


def envelope_with(**fields):
    envelope = build_envelope_request(INNER_CREATE_TOPICS, ALICE, IPv4Address("192.168.0.7"))
    envelope.update({{"data": "RequestData", "principal": "RequestPrincipal",
                      "address": "ClientHostAddress"}[k]: v for k, v in fields.items()})
    return envelope


@pytest.mark.parametrize("golden", [ENVELOPE_GOLDEN, DESCRIBE_CLUSTER_V1_GOLDEN],
                         ids=["envelope", "describe-cluster"])
def test_every_truncated_request_is_invalid_request(golden):
    # RequestHeader.parse / RequestContext.parseRequest: InvalidRequestException, and the
    # socket server closes the connection (F-22, F-38)
    for length in range(len(golden)):
        assert error_code(parse_request, golden[:length]) == INVALID_REQUEST, length


def test_every_truncated_principal_is_a_deserialization_failure():
    for length in range(len(PRINCIPAL_GOLDEN)):
        assert error_code(deserialize_principal, PRINCIPAL_GOLDEN[:length]) == \
            PRINCIPAL_DESERIALIZATION_FAILURE, length
        assert error_code(unwrap_envelope, envelope_with(principal=PRINCIPAL_GOLDEN[:length])) \
            == PRINCIPAL_DESERIALIZATION_FAILURE, length


def test_every_truncated_inner_request_is_unsupported_version():
    # F-29c (header) and F-29e (body): the embedded request cannot be parsed
    for length in range(len(INNER_CREATE_TOPICS)):
        assert error_code(unwrap_envelope, envelope_with(data=INNER_CREATE_TOPICS[:length])) \
            == UNSUPPORTED_VERSION, length


def test_every_truncated_forwarded_response_is_unknown_server_error():
    # ForwardingManager.parseResponse (reference table 1.6)
    body = {"ErrorCode": 0, "ThrottleTimeMs": 0, "ClusterId": "c", "ControllerId": 1,
            "Brokers": [{"BrokerId": 1, "Host": "h", "Port": 9093, "Rack": None}]}
    data = encode_response(60, 1, 5, body)
    assert parse_response(data, DESCRIBE_CLUSTER_HEADER)["Brokers"][0]["Port"] == 9093
    for length in range(len(data)):
        assert error_code(parse_response, data[:length], DESCRIBE_CLUSTER_HEADER) == \
            UNKNOWN_SERVER_ERROR, length
    assert error_code(parse_response, None, DESCRIBE_CLUSTER_HEADER) == UNKNOWN_SERVER_ERROR
    mismatched = {**DESCRIBE_CLUSTER_HEADER, "CorrelationId": 6}
    assert error_code(parse_response, data, mismatched) == UNKNOWN_SERVER_ERROR


def test_a_bad_varint_length():
    # RequestData's length as a 5-byte varint whose last byte still has the continuation bit
    start = ENVELOPE_GOLDEN.index(b"\x16" + INNER_CREATE_TOPICS)
    corrupt = ENVELOPE_GOLDEN[:start] + b"\xff\xff\xff\xff\xff" + ENVELOPE_GOLDEN[start + 1:]
    with pytest.raises(ProtocolError, match="Varint is too long") as error:
        parse_request(corrupt)
    assert (error.value.code, error.value.error_name) == (INVALID_REQUEST, "INVALID_REQUEST")
    body = corrupt[14:]                                     # after the 14-byte request header
    assert error_code(decode, "EnvelopeRequest", body, 0) == UNKNOWN_SERVER_ERROR


def test_a_length_beyond_the_buffer():
    # ClientId claims 0x7fff bytes; then RequestData claims 16382 (varint ff 7f = 16383 = n + 1)
    corrupt = DESCRIBE_CLUSTER_V1_GOLDEN.replace(b"\x00\x0dadminclient", b"\x7f\xffadminclient")
    with pytest.raises(ProtocolError, match="Error parsing request header") as error:
        parse_request(corrupt)
    assert error.value.code == INVALID_REQUEST
    corrupt = ENVELOPE_GOLDEN.replace(b"\x16" + INNER_CREATE_TOPICS,
                                      b"\xff\x7f" + INNER_CREATE_TOPICS)
    assert error_code(parse_request, corrupt) == INVALID_REQUEST
    # a compact array of 100 topics in 7 remaining bytes (the generated code's own check)
    corrupt = INNER_CREATE_TOPICS[:-7] + b"\x65" + INNER_CREATE_TOPICS[-6:]
    with pytest.raises(ProtocolError, match="Tried to allocate a collection of size 100"):
        decode("CreateTopicsRequest", corrupt[14:], 7)
    assert error_code(unwrap_envelope, envelope_with(data=corrupt)) == UNSUPPORTED_VERSION


@pytest.mark.parametrize("principal, problem", [
    (b"\x00\x01" + PRINCIPAL_GOLDEN[2:], "Invalid principal data version 1"),
    (b"\xff\xff" + PRINCIPAL_GOLDEN[2:], "Invalid principal data version -1"),
    (b"\x00\x00\x00" + PRINCIPAL_GOLDEN[3:], "non-nullable field Type was serialized as null"),
    (b"\x00\x00\x81\x80\x02", "string field Type had invalid length 32768"),
    (None, "the principal bytes are null"),
    (b"", "buffer underflow"),
])
def test_bad_principals(principal, problem):
    with pytest.raises(ProtocolError, match=problem) as error:
        deserialize_principal(principal)
    assert error.value.code == PRINCIPAL_DESERIALIZATION_FAILURE
    assert error_code(unwrap_envelope, envelope_with(principal=principal)) == \
        PRINCIPAL_DESERIALIZATION_FAILURE


LEAVE_GROUP_V4 = (b"\x00\x0d\x00\x04\x00\x00\x00\x01\x00\x00\x00"  # LeaveGroup v4, header v2
                  b"\x02g\x01\x00")                                  # (any body)
DELETE_TOPICS_V6 = b"\x00\x14\x00\x06\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x75\x30\x00"


@pytest.mark.parametrize("envelope, code", [
    # F-29a: checked first, even when everything after it is bad too
    (envelope_with(principal=b"\x00\x09", address=b"\x01", data=b""),
     PRINCIPAL_DESERIALIZATION_FAILURE),
    # F-29b: InetAddress.getByAddress needs 4 or 16 bytes; checked before the inner request
    (envelope_with(address=b"\x01\x02\x03\x04\x05", data=b""), INVALID_REQUEST),
    (envelope_with(address=b""), INVALID_REQUEST),
    # F-29c: inner header unparseable, or an api key Kafka does not know
    (envelope_with(data=b"\x00\x63" + INNER_CREATE_TOPICS[2:]), UNSUPPORTED_VERSION),
    # F-29d: not forwardable (LeaveGroup, Envelope in Envelope), checked before the body
    (envelope_with(data=LEAVE_GROUP_V4), INVALID_REQUEST),
    (envelope_with(data=ENVELOPE_GOLDEN), INVALID_REQUEST),
    (envelope_with(data=DESCRIBE_CLUSTER_V1_GOLDEN), INVALID_REQUEST),
    # F-29e: a version the receiver does not support (CreateTopics v8), or a bad body
    (envelope_with(data=INNER_CREATE_TOPICS[:2] + b"\x00\x08" + INNER_CREATE_TOPICS[4:]),
     UNSUPPORTED_VERSION),
    (envelope_with(data=INNER_CREATE_TOPICS[:-2] + b"\x00\x05"), UNSUPPORTED_VERSION),
])
def test_unwrapping_follows_f29_in_kafkas_order(envelope, code):
    assert error_code(unwrap_envelope, envelope) == code


def test_no_principal_serde_on_the_envelope_connection():
    assert error_code(unwrap_envelope, envelope_with(), principal_serde=False) == \
        PRINCIPAL_DESERIALIZATION_FAILURE


def test_client_addresses():
    assert parse_forwarded_client_address(b"\x7f\x00\x00\x01") == IPv4Address("127.0.0.1")
    assert parse_forwarded_client_address(IPv6Address("::1").packed) == IPv6Address("::1")
    # Java's InetAddress.getByAddress turns an IPv4-mapped IPv6 address into IPv4
    mapped = IPv6Address("::ffff:10.0.0.1").packed
    assert parse_forwarded_client_address(mapped) == IPv4Address("10.0.0.1")


def test_a_forwardable_api_without_a_schema_is_a_missing_schema_not_bad_bytes(monkeypatch,
                                                                              tmp_path):
    # the package has every schema: only a directory chosen with KIPCHECK_SCHEMAS can lack one
    for path in schema_dir().glob("*.json"):
        if not path.name.startswith("DeleteTopics"):
            (tmp_path / path.name).write_bytes(path.read_bytes())
    monkeypatch.setattr(schema_module, "SCHEMAS", load_schemas(tmp_path))
    header, offset = parse_request_header(DELETE_TOPICS_V6)
    with pytest.raises(MissingSchemaError, match="DELETE_TOPICS"):
        parse_request_body(DELETE_TOPICS_V6, header, offset)
    # inside an Envelope the receiver can neither read nor answer it: F-29e
    with pytest.raises(ProtocolError, match="DELETE_TOPICS") as error:
        unwrap_envelope(envelope_with(data=DELETE_TOPICS_V6))
    assert error.value.code == UNSUPPORTED_VERSION


@pytest.mark.parametrize("name, version", [("DescribeClusterRequest", 2),
                                           ("EnvelopeRequest", 1),
                                           ("DefaultPrincipalData", -1)])
def test_a_version_outside_the_schema_is_unsupported_version(name, version):
    assert error_code(decode, name, b"\x00" * 16, version) == UNSUPPORTED_VERSION
    assert error_code(encode, name, {}, version) == UNSUPPORTED_VERSION


def test_request_versions_outside_the_api_on_the_socket_and_apiversions():
    # On the socket any parse failure is INVALID_REQUEST (the connection is closed)
    too_new = DESCRIBE_CLUSTER_V1_GOLDEN[:2] + b"\x00\x02" + DESCRIBE_CLUSTER_V1_GOLDEN[4:]
    assert error_code(parse_request, too_new) == INVALID_REQUEST
    # ... except ApiVersions, whose unsupported versions are answered as v0 (KIP-511, F-38)
    api_versions_v9 = b"\x00\x12\x00\x09\x00\x00\x00\x03\x00\x00\x00\xde\xad"
    assert parse_request(api_versions_v9).body == {"ClientSoftwareName": "",
                                                   "ClientSoftwareVersion": ""}
    # an unknown api key
    assert error_code(parse_request, b"\x7f\x7f\x00\x00\x00\x00\x00\x01\x00\x00") == \
        INVALID_REQUEST


def test_version_dependent_fields():
    # EndpointType is not ignorable: a v0 request cannot carry anything but the default 1 (2.6)
    assert error_code(encode, "DescribeClusterRequest", {"EndpointType": 2}, 0) == \
        UNSUPPORTED_VERSION
    # ... and a v0 request reads as EndpointType 1 (D-3)
    assert decode("DescribeClusterRequest", b"\x00\x00", 0)["EndpointType"] == 1
    # an ignorable field is dropped where the version lacks it (ThrottleTimeMs is v2+)
    encoded = encode("CreateTopicsResponse", {"ThrottleTimeMs": 100}, 0)
    assert decode("CreateTopicsResponse", encoded, 0)["ThrottleTimeMs"] == 0
    # a tagged field (TopicConfigErrorCode, tag 0) travels only when it is not its default
    topic = {"Name": "t", "ErrorCode": 0, "TopicConfigErrorCode": 29}
    plain = encode("CreateTopicsResponse", {"Topics": [{**topic, "TopicConfigErrorCode": 0}]}, 5)
    tagged = encode("CreateTopicsResponse", {"Topics": [topic]}, 5)
    assert len(tagged) == len(plain) + 4     # tag 0, size 2, int16 29 (count 0 -> 1 in place)
    assert decode("CreateTopicsResponse", tagged, 5)["Topics"][0]["TopicConfigErrorCode"] == 29


def test_a_null_client_id_reads_as_empty():
    header = {**DESCRIBE_CLUSTER_HEADER, "ClientId": None}
    encoded = encode_request(header, DESCRIBE_CLUSTER_BODY)
    assert encoded[8:10] == b"\xff\xff"
    assert parse_request(encoded).header["ClientId"] == ""


@pytest.mark.parametrize("value, problem", [
    ({"Bogus": 1}, "no field"),
    ({"IncludeClusterAuthorizedOperations": 1}, "expected a bool"),
    ({"EndpointType": 300}, "out of range"),
])
def test_unserializable_messages(value, problem):
    with pytest.raises(ProtocolError, match=problem) as error:
        encode("DescribeClusterRequest", value, 1)
    assert error.value.code == UNKNOWN_SERVER_ERROR


# Arbitrary bytes never escape as anything but ProtocolError (or a missing schema).

@pytest.mark.parametrize("name, version", SCHEMA_VERSIONS)
@FUZZ
@given(data=st.binary(max_size=40))
def test_arbitrary_bytes_decode_or_raise_protocol_error(name, version, data):
    try:
        decode(name, data, version)
    except ProtocolError as error:
        assert error.code == UNKNOWN_SERVER_ERROR


@FUZZ
@given(data=st.binary(max_size=60) | st.builds(lambda prefix, rest: prefix + rest,
                                               st.sampled_from([ENVELOPE_GOLDEN[:4],
                                                                DESCRIBE_CLUSTER_V1_GOLDEN[:4],
                                                                INNER_CREATE_TOPICS[:4]]),
                                               st.binary(max_size=40)))
def test_arbitrary_requests_parse_or_raise_invalid_request(data):
    try:
        parse_request(data)
    except ProtocolError as error:
        assert error.code == INVALID_REQUEST
    except MissingSchemaError:
        pass


@FUZZ
@given(principal=st.none() | st.binary(max_size=20), address=st.binary(max_size=17),
       data=st.binary(max_size=40) | st.just(INNER_CREATE_TOPICS).map(lambda d: d[:14]).flatmap(
           lambda header: st.binary(max_size=20).map(lambda body: header + body)))
def test_arbitrary_envelopes_unwrap_or_raise_an_f29_code(principal, address, data):
    try:
        unwrap_envelope({"RequestData": data, "RequestPrincipal": principal,
                         "ClientHostAddress": address})
    except ProtocolError as error:
        assert error.code in (PRINCIPAL_DESERIALIZATION_FAILURE, INVALID_REQUEST,
                              UNSUPPORTED_VERSION)
    except MissingSchemaError:
        pass


# ------------------------------------------------------------------------------------------
# Header versions, API keys, schema loading


@pytest.mark.parametrize("key, version, request_header, response_header", [
    (58, 0, 2, 1),      # Envelope v0 is flexible (reference 1.1)
    (60, 0, 2, 1),      # DescribeCluster, flexible from v0
    (70, 0, 2, 1),      # ControllerRegistration
    (19, 4, 1, 0),      # CreateTopics v4 is not flexible ...
    (19, 5, 2, 1),      # ... v5 is
    (44, 0, 1, 0),      # IncrementalAlterConfigs, flexible from v1
    (30, 2, 2, 1),      # CreateAcls, flexible from v2
    (18, 3, 2, 0),      # ApiVersionsResponse always has header v0 (KIP-511)
    (7, 0, 0, 0),       # ControlledShutdown v0 has a request header without ClientId
    (7, 1, 1, 0),
])
def test_header_versions(key, version, request_header, response_header):
    assert request_header_version(key, version) == request_header
    assert response_header_version(key, version) == response_header


def test_controlled_shutdown_v0_header_has_no_client_id():
    header, offset = parse_request_header(b"\x00\x07\x00\x00\x00\x00\x00\x09rest")
    assert header == {"RequestApiKey": 7, "RequestApiVersion": 0, "CorrelationId": 9,
                      "ClientId": ""} and offset == 8


def test_api_key_table_agrees_with_the_schemas_and_the_reference():
    for schema in SCHEMAS.values():
        if schema.type in ("request", "response"):
            api = API_KEYS[schema.api_key]
            assert (api.valid_versions, api.flexible_versions) == \
                (schema.valid_versions, schema.flexible_versions), schema.name
    # reference section 1.2
    assert FORWARDABLE_API_KEYS == {19, 20, 30, 31, 33, 37, 38, 39, 40, 43, 44, 45, 46, 49, 51,
                                    55, 57, 64, 67, 80, 81}


def test_schema_directory(monkeypatch, tmp_path):
    assert schema_dir() == DEFAULT_SCHEMA_DIR.resolve()
    assert (DEFAULT_SCHEMA_DIR / "EnvelopeRequest.json").is_file()
    (tmp_path / "EnvelopeResponse.json").write_text(
        (DEFAULT_SCHEMA_DIR / "EnvelopeResponse.json").read_text())
    monkeypatch.setenv(SCHEMA_DIR_ENV, str(tmp_path))
    assert schema_dir() == tmp_path.resolve()
    assert list(load_schemas(schema_dir())) == ["EnvelopeResponse"]
    with pytest.raises(SchemaError, match=str(tmp_path / "missing")):
        load_schemas(tmp_path / "missing")


def test_import_fails_clearly_without_schemas(tmp_path):
    missing = tmp_path / "nowhere"
    result = subprocess.run([sys.executable, "-c", "import impl.protocol"], cwd=ROOT,
                            env={"PATH": "/usr/bin:/bin", SCHEMA_DIR_ENV: str(missing)},
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "SchemaError" in result.stderr and str(missing) in result.stderr


def test_comments_are_stripped_outside_strings_only():
    text = '{"a": "http://x", // comment\n "b": 1} // end'
    assert strip_comments(text) == '{"a": "http://x", \n "b": 1} '


def test_impl_never_imports_model_or_properties():
    for path in (ROOT / "impl").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert name.split(".")[0] not in ("model", "properties"), (path, name)
