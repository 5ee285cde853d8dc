"""The schema-driven encoder/decoder: one interpreter of ``schema.MessageSchema`` for every message.

It does at run time what Kafka's generated ``XxxData.read``/``write`` methods do
(``MessageDataGenerator.generateClassReader``/``generateClassWriter``), field by field:

- a field outside its ``versions`` is not on the wire and decodes to its default; writing a
  non-default value there is UNSUPPORTED_VERSION ("Attempted to write a non-default X at version
  V") unless the field is ``ignorable``, in which case it is silently dropped;
- in flexible versions strings, bytes and arrays use the compact encodings (unless the field
  overrides ``flexibleVersions``) and every struct ends with its tagged-field section: a count,
  then (tag, size, value) entries.  Known tags are read straight from the stream (Kafka does not
  check the size); a known tag outside the field's tagged versions is an error; unknown tags are
  kept as ``RawTaggedField(tag, data)`` in the struct's ``UNKNOWN_TAGGED_FIELDS`` entry (Kafka's
  ``_unknownTaggedFields``) and written back in tag order.  A tagged field is written only when
  its value differs from its default;
- a non-nullable struct field is written as is; a nullable one has a marker first (int8 -1/1, or
  for a tagged field an unsigned varint 0/1);
- trailing bytes after a message are ignored, as Kafka's ``Readable``-based parsing ignores them.

Values are plain dicts keyed by the schema's field names; arrays are lists; ``uuid`` is
``uuid.UUID``; ``bytes`` and ``records`` are ``bytes``; null is ``None``.  ``decode`` returns every
field of the schema (those absent at the version hold their default); ``encode`` fills missing keys
with their defaults and rejects unknown keys.

Errors: a version outside ``validVersions`` is UNSUPPORTED_VERSION (35); malformed bytes or an
unserializable value are UNKNOWN_SERVER_ERROR (-1) at this level (see ``errors`` for how the
request and envelope layers re-label them, rule F-29).
"""
from __future__ import annotations

from typing import Any, NamedTuple
from collections.abc import Mapping

from impl.protocol.errors import UNSUPPORTED_VERSION, ProtocolError
from impl.protocol.primitives import Reader, Writer, malformed
from impl.protocol.schema import Field, FieldType, MessageSchema, StructSchema, get_schema

UNKNOWN_TAGGED_FIELDS = "_unknownTaggedFields"


class RawTaggedField(NamedTuple):
    """A tagged field this schema does not know, kept as raw bytes (Kafka's ``RawTaggedField``)."""

    tag: int
    data: bytes


_FIXED_READERS = {
    "bool": Reader.read_bool, "int8": Reader.read_int8, "int16": Reader.read_int16,
    "uint16": Reader.read_uint16, "int32": Reader.read_int32, "uint32": Reader.read_uint32,
    "int64": Reader.read_int64, "float64": Reader.read_float64, "uuid": Reader.read_uuid,
}
_FIXED_WRITERS = {
    "bool": Writer.write_bool, "int8": Writer.write_int8, "int16": Writer.write_int16,
    "uint16": Writer.write_uint16, "int32": Writer.write_int32, "uint32": Writer.write_uint32,
    "int64": Writer.write_int64, "float64": Writer.write_float64, "uuid": Writer.write_uuid,
}
_MISSING = object()


def _compact(field: Field, version: int, flexible: bool) -> bool:
    """``fieldFlexibleVersions(field)``: the field's override, else the message's flexibility."""
    if field.flexible_versions is not None:
        return version in field.flexible_versions
    return flexible


def _is_default(field: Field, value: Any) -> bool:
    default = field.default_value()
    if isinstance(value, tuple) and isinstance(default, list):
        return list(value) == default
    return value == default


def _with_field_name(field: Field, error: ProtocolError) -> ProtocolError:
    return ProtocolError(error.code, f"{field.name}: {error.message}")


# ------------------------------------------------------------------------------------------
# Reading


def _read_value(reader: Reader, field: Field, ftype: FieldType, version: int, flexible: bool,
                tagged: bool) -> Any:
    fixed = _FIXED_READERS.get(ftype.kind)
    if fixed is not None:
        return fixed(reader)
    compact = _compact(field, version, flexible)
    nullable = version in field.nullable_versions
    if ftype.kind == "string":
        return reader.read_string(field.name, compact=compact, nullable=nullable)
    if ftype.kind in ("bytes", "records"):
        return reader.read_bytes(field.name, compact=compact, nullable=nullable)
    if ftype.kind == "struct":
        if nullable:
            if tagged and reader.read_unsigned_varint() <= 0:
                return None
            if not tagged and reader.read_int8() < 0:
                return None
        return read_struct(reader, ftype.struct, version, flexible)
    length = reader.read_array_length(field.name, compact=compact, nullable=nullable)
    if length is None:
        return None
    element = ftype.element
    fixed = _FIXED_READERS.get(element.kind)
    if fixed is not None:
        return [fixed(reader) for _ in range(length)]
    if element.kind == "struct":
        return [read_struct(reader, element.struct, version, flexible) for _ in range(length)]
    name = f"{field.name} element"
    if element.kind == "string":
        return [reader.read_string(name, compact=compact, nullable=False) for _ in range(length)]
    return [reader.read_bytes(name, compact=compact, nullable=False) for _ in range(length)]


def _read_field(reader: Reader, field: Field, version: int, flexible: bool, tagged: bool) -> Any:
    try:
        return _read_value(reader, field, field.type, version, flexible, tagged)
    except ProtocolError as error:
        raise _with_field_name(field, error) from None


def read_struct(reader: Reader, struct: StructSchema, version: int, flexible: bool) -> dict:
    """One struct at ``version``; ``flexible`` says whether the message is flexible there."""
    value: dict[str, Any] = {}
    for field in struct.fields:
        if version in field.versions and version not in field.tagged_versions:
            value[field.name] = _read_field(reader, field, version, flexible, tagged=False)
        else:
            value[field.name] = field.default_value()
    if flexible:
        unknown: list[RawTaggedField] = []
        for _ in range(reader.read_unsigned_varint()):     # a negative count reads nothing
            tag = reader.read_unsigned_varint()
            size = reader.read_unsigned_varint()
            field = struct.tags.get(tag)
            if field is None:
                unknown.append(RawTaggedField(tag, reader.read_raw(size)))
            elif version in field.versions and version in field.tagged_versions:
                value[field.name] = _read_field(reader, field, version, flexible, tagged=True)
            else:
                raise malformed(f"Tag {tag} is not valid for version {version}")
        if unknown:
            value[UNKNOWN_TAGGED_FIELDS] = unknown
    return value


# ------------------------------------------------------------------------------------------
# Writing


def _write_value(writer: Writer, field: Field, ftype: FieldType, value: Any, version: int,
                 flexible: bool, tagged: bool) -> None:
    fixed = _FIXED_WRITERS.get(ftype.kind)
    if fixed is not None:
        fixed(writer, value)
        return
    compact = _compact(field, version, flexible)
    nullable = version in field.nullable_versions
    if ftype.kind == "string":
        writer.write_string(value, field.name, compact=compact, nullable=nullable)
    elif ftype.kind in ("bytes", "records"):
        writer.write_bytes(value, field.name, compact=compact, nullable=nullable)
    elif ftype.kind == "struct":
        if value is None and not nullable:
            raise malformed(f"non-nullable field {field.name} is null")
        if nullable and tagged:
            writer.write_unsigned_varint(0 if value is None else 1)
        elif nullable:
            writer.write_int8(-1 if value is None else 1)
        if value is not None:
            write_struct(writer, ftype.struct, value, version, flexible)
    else:
        if value is not None and not isinstance(value, (list, tuple)):
            raise malformed(f"expected a list for {field.name}, got {value!r}")
        writer.write_array_length(None if value is None else len(value), field.name,
                                  compact=compact, nullable=nullable)
        element = ftype.element
        fixed = _FIXED_WRITERS.get(element.kind)
        name = f"{field.name} element"
        for element_value in value or ():
            if fixed is not None:
                fixed(writer, element_value)
            elif element.kind == "struct":
                write_struct(writer, element.struct, element_value, version, flexible)
            elif element.kind == "string":
                writer.write_string(element_value, name, compact=compact, nullable=False)
            else:
                writer.write_bytes(element_value, name, compact=compact, nullable=False)


def _write_field(writer: Writer, field: Field, value: Any, version: int, flexible: bool,
                 tagged: bool) -> None:
    try:
        _write_value(writer, field, field.type, value, version, flexible, tagged)
    except ProtocolError as error:
        raise _with_field_name(field, error) from None


def _raw_tagged_fields(struct: StructSchema, value: Mapping) -> list[RawTaggedField]:
    raw = value.get(UNKNOWN_TAGGED_FIELDS) or ()
    previous = -1
    result = []
    for entry in raw:
        if (not isinstance(entry, tuple) or len(entry) != 2 or not isinstance(entry[0], int)
                or not isinstance(entry[1], (bytes, bytearray))):
            raise malformed(f"{struct.name}: an unknown tagged field must be (tag, bytes), "
                            f"got {entry!r}")
        tag, data = entry
        if tag in struct.tags:
            raise malformed(f"Attempted to use tag {tag} as an undefined tag.")
        if tag <= previous:
            raise malformed(f"Invalid raw tag field list: tag {tag} comes after tag {previous}, "
                            f"but is not higher than it.")
        previous = tag
        result.append(RawTaggedField(tag, bytes(data)))
    return result


def write_struct(writer: Writer, struct: StructSchema, value: Mapping, version: int,
                 flexible: bool) -> None:
    """One struct at ``version``; missing keys take their defaults."""
    if not isinstance(value, Mapping):
        raise malformed(f"expected a mapping for {struct.name}, got {value!r}")
    unknown_keys = value.keys() - struct.field_names - {UNKNOWN_TAGGED_FIELDS}
    if unknown_keys:
        raise malformed(f"{struct.name} has no field(s) {sorted(unknown_keys)}")
    tagged: list[tuple[int, bytes]] = []
    for field in struct.fields:
        field_value = value.get(field.name, _MISSING)
        if field_value is _MISSING:
            field_value = field.default_value()
        if version not in field.versions:
            if not field.ignorable and not _is_default(field, field_value):
                raise ProtocolError(UNSUPPORTED_VERSION, f"Attempted to write a non-default "
                                                         f"{field.name} at version {version}")
        elif version in field.tagged_versions:
            if not _is_default(field, field_value):
                payload = Writer()
                _write_field(payload, field, field_value, version, flexible, tagged=True)
                tagged.append((field.tag, payload.getvalue()))
        else:
            _write_field(writer, field, field_value, version, flexible, tagged=False)
    raw = _raw_tagged_fields(struct, value)
    if not flexible:
        if raw:
            raise ProtocolError(UNSUPPORTED_VERSION, f"Tagged fields were set, but version "
                                f"{version} of this message does not support them.")
        return
    entries = sorted(tagged + raw)
    writer.write_unsigned_varint(len(entries))
    for tag, data in entries:
        writer.write_unsigned_varint(tag)
        writer.write_unsigned_varint(len(data))
        writer.write_raw(data)


# ------------------------------------------------------------------------------------------
# Messages


def _resolve(schema: MessageSchema | str) -> MessageSchema:
    return schema if isinstance(schema, MessageSchema) else get_schema(schema)


def _check_version(schema: MessageSchema, version: int, verb: str) -> None:
    if version not in schema.valid_versions:
        raise ProtocolError(UNSUPPORTED_VERSION, f"Can't {verb} version {version} of "
                            f"{schema.name} (valid versions: {schema.valid_versions})")


def read_message(reader: Reader, schema: MessageSchema | str, version: int) -> dict:
    """Read one message at ``version`` from ``reader``, leaving it just after the message."""
    schema = _resolve(schema)
    _check_version(schema, version, "read")
    return read_struct(reader, schema.struct, version, version in schema.flexible_versions)


def write_message(writer: Writer, schema: MessageSchema | str, value: Mapping,
                  version: int) -> None:
    schema = _resolve(schema)
    _check_version(schema, version, "write")
    write_struct(writer, schema.struct, value, version, version in schema.flexible_versions)


def decode(schema: MessageSchema | str, data: bytes, version: int) -> dict:
    """The message ``schema`` (a schema or its name) at ``version`` from ``data``."""
    return read_message(Reader(data), schema, version)


def encode(schema: MessageSchema | str, value: Mapping, version: int) -> bytes:
    """The bytes of ``value`` as the message ``schema`` at ``version``."""
    writer = Writer()
    write_message(writer, schema, value, version)
    return writer.getvalue()
