"""Kafka's JSON message schemas, loaded as data for the schema-driven codec.

The files are verbatim copies of apache/kafka ``clients/src/main/resources/common/message`` (and
two records of ``metadata/src/main/resources/common/metadata``) at commit
1eb7644349cb07139d6a3c1ad1986979647cac99, shipped inside this package in ``schemas/`` (its
README says how to refresh them; docs/rules.md sections 1.1, 2.1 and 2.6 list their fields).  The
environment variable ``KIPCHECK_SCHEMAS`` names another directory.  ``SCHEMAS`` maps each schema
name (the file's name, as in Kafka) to its ``MessageSchema``; a file is parsed the first time its
schema is asked for, so importing stays cheap with every schema of Kafka on disk.

The meaning of each schema attribute is that of Kafka's generator
(``generator/src/main/java/org/apache/kafka/message``: ``MessageSpec``, ``StructSpec``,
``FieldSpec``, ``FieldType``, ``Versions``): ``validVersions``, ``flexibleVersions`` (of the
message, or a per-field override such as RequestHeader's ``ClientId: "none"``), ``versions``,
``nullableVersions``, ``taggedVersions`` with ``tag`` (``versions`` defaults to ``taggedVersions``),
``default`` (decimal or ``0x`` hex for integers, ``true``/``false``, ``null`` for nullable
strings, bytes, arrays and structs, a base64 UUID), ``ignorable``, inline structs (``fields``) and
``commonStructs``, the types bool, int8, int16, uint16, uint32, int32, int64, float64, uuid,
string, bytes, records, a struct name and ``[]T``.  A ``//`` comment outside a JSON string is
removed before parsing, as Jackson's ALLOW_COMMENTS does for Kafka.

Field values are keyed by the schema's own field names (``"ClientId"``, ``"timeoutMs"``).
"""
from __future__ import annotations

import base64
import json
import os
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_DIR_ENV = "KIPCHECK_SCHEMAS"
DEFAULT_SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"    # package data
MAX_VERSION = 0x7FFF              # Short.MAX_VALUE: the upper end of an open range "N+"

FIXED_SIZE_TYPES = frozenset({"bool", "int8", "int16", "uint16", "int32", "uint32", "int64",
                              "float64", "uuid"})
NULLABLE_TYPES = frozenset({"string", "bytes", "records", "array", "struct"})
ZERO_UUID = uuid.UUID(int=0)


class SchemaError(Exception):
    """A schema file is missing, unreadable or not a valid Kafka message schema."""


class MissingSchemaError(LookupError):
    """Kafka knows the message but the schema directory has no schema for it."""


# ------------------------------------------------------------------------------------------
# Versions


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; empty when ``lowest > highest`` (Kafka's ``Versions.NONE``)."""

    lowest: int
    highest: int

    @classmethod
    def parse(cls, text: str | None, default: Versions | None) -> Versions | None:
        """``Versions.parse``: ``"none"``, ``"N"``, ``"N+"`` or ``"N-M"``; absent -> ``default``."""
        if text is None or not str(text).strip():
            return default
        text = str(text).strip()
        try:
            if text == "none":
                return NO_VERSIONS
            if text.endswith("+"):
                return cls(int(text[:-1]), MAX_VERSION)
            low, dash, high = text.partition("-")
            return cls(int(low), int(high) if dash else int(low))
        except ValueError:
            raise SchemaError(f"invalid version range {text!r}") from None

    def __contains__(self, version: int) -> bool:
        return self.lowest <= version <= self.highest

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    def intersect(self, other: Versions) -> Versions:
        low, high = max(self.lowest, other.lowest), min(self.highest, other.highest)
        return Versions(low, high) if low <= high else NO_VERSIONS

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == MAX_VERSION:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


NO_VERSIONS = Versions(0, -1)


# ------------------------------------------------------------------------------------------
# Types, fields, structs, messages


@dataclass(frozen=True, eq=False)
class FieldType:
    """A field type: a primitive name, ``"struct"`` (with ``struct``) or ``"array"``."""

    kind: str
    element: FieldType | None = None
    struct: StructSchema | None = None

    def __str__(self) -> str:
        if self.kind == "array":
            return f"[]{self.element}"
        return self.struct.name if self.kind == "struct" else self.kind


@dataclass(frozen=True, eq=False)
class Field:
    name: str
    type: FieldType
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    flexible_versions: Versions | None      # per-field override, else the message's
    default: str                            # the schema's default string ("" when absent)
    ignorable: bool

    def default_value(self) -> Any:
        """The Python value of ``FieldSpec.fieldDefault``; a fresh object for arrays and structs."""
        kind = self.type.kind
        if self.default == "null":
            return None
        if kind == "bool":
            return self.default.lower() == "true"
        if kind in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
            if self.default.startswith("0x"):
                return int(self.default[2:], 16)
            return int(self.default) if self.default else 0
        if kind == "float64":
            return float(self.default) if self.default else 0.0
        if kind == "uuid":
            return (uuid.UUID(bytes=base64.urlsafe_b64decode(self.default + "=="))
                    if self.default else ZERO_UUID)
        if kind == "string":
            return self.default
        if kind == "bytes":
            return b""
        if kind == "records":
            return None
        if kind == "array":
            return []
        return self.type.struct.default_value()


@dataclass(frozen=True, eq=False)
class StructSchema:
    name: str
    versions: Versions
    fields: tuple[Field, ...]
    tags: Mapping[int, Field]               # the fields that have a tag, by tag
    field_names: frozenset[str]

    def default_value(self) -> dict:
        return {f.name: f.default_value() for f in self.fields}


@dataclass(frozen=True, eq=False)
class MessageSchema:
    name: str
    type: str                               # request, response, header, metadata, data
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    struct: StructSchema
    listeners: tuple[str, ...]


# ------------------------------------------------------------------------------------------
# Parsing a schema document


_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*')


def strip_comments(text: str) -> str:
    """Remove ``//`` comments outside JSON strings."""
    return _STRING_OR_COMMENT.sub(lambda m: m.group() if m.group().startswith('"') else "", text)


class _StructRegistry:
    """Resolves struct type names: inline ``fields`` or the message's ``commonStructs``."""

    def __init__(self, message: str, common: list[dict], flexible: Versions) -> None:
        self.message = message
        self.flexible = flexible
        self._common_specs = {spec["name"]: spec for spec in common}
        self._common: dict[str, StructSchema] = {}

    def common(self, name: str) -> StructSchema:
        if name not in self._common:
            spec = self._common_specs.get(name)
            if spec is None:
                raise SchemaError(f"{self.message}: struct type {name} has no fields and is "
                                  f"not a common struct")
            versions = Versions.parse(spec.get("versions"), None)
            if versions is None:
                raise SchemaError(f"{self.message}: common struct {name} has no versions")
            self._common[name] = self.struct(name, versions, spec.get("fields", []))
        return self._common[name]

    def struct(self, name: str, versions: Versions, specs: list[dict]) -> StructSchema:
        fields = tuple(self.field(spec) for spec in specs)
        tags = {f.tag: f for f in fields if f.tag is not None}
        if len(tags) != sum(f.tag is not None for f in fields):
            raise SchemaError(f"{self.message}: struct {name} uses a tag twice")
        return StructSchema(name, versions, fields, tags, frozenset(f.name for f in fields))

    def field_type(self, type_name: str, spec: dict, versions: Versions) -> FieldType:
        if type_name.startswith("[]"):
            element = self.field_type(type_name[2:], spec, versions)
            if element.kind == "array":
                raise SchemaError(f"{self.message}: nested arrays are not supported ({type_name})")
            return FieldType("array", element=element)
        if type_name in FIXED_SIZE_TYPES or type_name in ("string", "bytes", "records"):
            return FieldType(type_name)
        if type_name[:1].isupper():
            if "fields" in spec:
                return FieldType("struct", struct=self.struct(type_name, versions, spec["fields"]))
            return FieldType("struct", struct=self.common(type_name))
        raise SchemaError(f"{self.message}: unknown type {type_name!r}")

    def field(self, spec: dict) -> Field:
        name = spec.get("name")
        where = f"{self.message}.{name}"
        tagged = Versions.parse(spec.get("taggedVersions"), NO_VERSIONS)
        versions = Versions.parse(spec.get("versions"), None if tagged.empty else tagged)
        if versions is None:
            raise SchemaError(f"{where}: no versions")
        ftype = self.field_type(str(spec.get("type")), spec, versions)
        nullable = Versions.parse(spec.get("nullableVersions"), NO_VERSIONS)
        if not nullable.empty and ftype.kind not in NULLABLE_TYPES:
            raise SchemaError(f"{where}: type {ftype} cannot be nullable")
        override = Versions.parse(spec.get("flexibleVersions"), None)
        if override is not None and ftype.kind not in ("string", "bytes"):
            raise SchemaError(f"{where}: only string and bytes fields may override "
                              f"flexibleVersions")
        tag = spec.get("tag")
        if tag is not None:
            tag = int(tag)
            if tag < 0 or tagged.empty:
                raise SchemaError(f"{where}: tag {tag} needs taggedVersions and must be >= 0")
        elif not tagged.empty:
            raise SchemaError(f"{where}: has tagged versions, but no tag")
        flexible = override if override is not None else self.flexible
        if tagged.intersect(flexible) != tagged:
            raise SchemaError(f"{where}: tagged versions {tagged} are not a subset of the "
                              f"flexible versions {flexible}")
        result = Field(name=name, type=ftype, versions=versions, nullable_versions=nullable,
                       tagged_versions=tagged, tag=tag, flexible_versions=override,
                       default=str(spec.get("default", "")),
                       ignorable=bool(spec.get("ignorable", False)))
        try:
            result.default_value()
        except (ValueError, TypeError) as error:
            raise SchemaError(f"{where}: invalid default {result.default!r}: {error}") from None
        return result


def parse_schema(spec: Mapping[str, Any]) -> MessageSchema:
    """A ``MessageSchema`` from one decoded schema document."""
    name = spec.get("name")
    valid = Versions.parse(spec.get("validVersions"), None)
    if not name or valid is None:
        raise SchemaError(f"schema {name!r} needs a name and validVersions")
    flexible = Versions.parse(spec.get("flexibleVersions"), None)
    if flexible is None:
        raise SchemaError(f"{name}: no flexibleVersions")
    registry = _StructRegistry(name, list(spec.get("commonStructs", [])), flexible)
    api_key = spec.get("apiKey")
    return MessageSchema(name=name, type=str(spec.get("type")),
                         api_key=None if api_key is None else int(api_key),
                         valid_versions=valid, flexible_versions=flexible,
                         struct=registry.struct(name, valid, list(spec.get("fields", []))),
                         listeners=tuple(spec.get("listeners", ())))


def schema_dir() -> Path:
    """The schema directory: ``$KIPCHECK_SCHEMAS`` if set, else the copies in this package."""
    return Path(os.environ.get(SCHEMA_DIR_ENV) or DEFAULT_SCHEMA_DIR).resolve()


def read_schema(path: Path) -> MessageSchema:
    """The schema in one file, which Kafka names after the schema (``<Name>.json``)."""
    try:
        spec = json.loads(strip_comments(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as error:
        raise SchemaError(f"cannot read schema {path}: {error}") from None
    if not isinstance(spec, dict):
        raise SchemaError(f"{path}: not a schema object")
    schema = parse_schema(spec)
    if schema.name != path.stem:
        raise SchemaError(f"{path} holds schema {schema.name}; the file must be named "
                          f"{schema.name}.json")
    return schema


class SchemaDirectory(Mapping[str, MessageSchema]):
    """Every ``*.json`` schema of one directory, by schema name, each parsed on first use.

    Listing the directory is all the constructor does (besides failing if it is missing or
    empty); a schema file that cannot be parsed raises ``SchemaError`` when it is first used."""

    def __init__(self, directory: Path) -> None:
        if not directory.is_dir():
            raise SchemaError(f"Kafka schema directory not found: {directory} (set "
                              f"{SCHEMA_DIR_ENV} to the directory holding the *.json schemas)")
        self.directory = directory
        self._paths = {path.stem: path for path in sorted(directory.glob("*.json"))}
        if not self._paths:
            raise SchemaError(f"no *.json schemas in {directory}")
        self._schemas: dict[str, MessageSchema] = {}

    def __getitem__(self, name: str) -> MessageSchema:
        schema = self._schemas.get(name)
        if schema is None:
            schema = self._schemas[name] = read_schema(self._paths[name])
        return schema

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __repr__(self) -> str:
        return f"SchemaDirectory({str(self.directory)!r}, {len(self)} schemas)"


def load_schemas(directory: Path) -> SchemaDirectory:
    """Every ``*.json`` schema in ``directory``, by schema name (parsed on first use)."""
    return SchemaDirectory(directory)


SCHEMAS: SchemaDirectory = load_schemas(schema_dir())


def get_schema(name: str) -> MessageSchema:
    try:
        return SCHEMAS[name]
    except KeyError:
        raise MissingSchemaError(f"no schema named {name} in {SCHEMAS.directory}") from None


class _SchemasByApiKey(Mapping[int, MessageSchema]):
    """The request or response schemas by api key.  Building it parses every schema, so the
    codec looks schemas up by name (``wire.request_schema``); this is for callers that want the
    whole set."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._index: dict[int, MessageSchema] | None = None

    def _schemas(self) -> dict[int, MessageSchema]:
        if self._index is None:
            self._index = {s.api_key: s for s in SCHEMAS.values()
                           if s.type == self.kind and s.api_key is not None}
        return self._index

    def __getitem__(self, key: int) -> MessageSchema:
        return self._schemas()[key]

    def __iter__(self) -> Iterator[int]:
        return iter(self._schemas())

    def __len__(self) -> int:
        return len(self._schemas())


REQUEST_SCHEMAS = _SchemasByApiKey("request")
RESPONSE_SCHEMAS = _SchemasByApiKey("response")
