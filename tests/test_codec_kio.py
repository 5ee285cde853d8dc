"""The codec cross-checked against an independent implementation: kio (issue 16, scope item 8).

kio (Aiven-Open/kio, pinned in the ``dev`` extra) generates one frozen dataclass per schema,
version and struct from Kafka's own JSON schemas, with its own serializer and parser.  For every
(schema, version) that both know, random messages drawn from OUR ``MessageSchema`` are

1. encoded by ``encode`` and by kio's ``entity_writer``: the bytes must be identical (both write
   tagged fields in ascending tag order, as Kafka does, so byte equality is meaningful);
2. decoded by our codec from kio's bytes: the result must be the original message, and every
   byte must be consumed (``decode`` itself ignores trailing bytes, as Kafka does);
3. parsed by kio's ``entity_reader`` from our bytes: the result must be the kio entity of the
   message, and kio must consume every byte.

"Both know" is the same schema name and version in ``SCHEMAS`` and in kio's index.  kio 0.6.5
was generated from a later Kafka than our schemas (apache/kafka 1eb7644, trunk 2024-10-25): it has
APIs added since (StreamsGroupHeartbeat, ListConfigResources ...), lacks the versions KIP-896
removed in Kafka 4.0 (FetchRequest v0-v3, ProduceRequest v0-v2, CreateTopicsRequest v0-v1 ...) and
has versions that were unreleased in our snapshot as they were finally released.  So the layout of
each (schema, version) is compared structurally first -- field names, order, types, tags,
nullability, the default that means "tagged field absent", the message's flexibility -- and a
pair whose layouts differ is skipped.  The skips are listed, with the difference found, in
``LAYOUT_DIFFERENCES`` below; the test fails if the detected differences and that list disagree,
so a new difference is looked at rather than silently skipped.

kio models some fields more richly than the wire type, and the strategy then draws from the
sub-domain kio can hold (kio's convention, not a codec difference):

- ``ErrorCode``/``PartitionErrorCode`` are the ``ErrorCode`` enum: only error codes kio knows;
- fields kio treats as durations (``ThrottleTimeMs``, ``TimeoutMs`` ...) are ``timedelta``s: for
  int64 ones, only milliseconds a ``timedelta`` holds exactly (|ms| < 2**43, as kio computes the
  milliseconds through a float);
- fields kio treats as instants (``LogAppendTimeMs``, ``ExpiryTimestampMs`` ...) are timezone-aware
  ``datetime``s: 0 up to the end of year 9999, plus -1 where kio reads -1 as ``None``;
- a uuid is ``None`` in kio when it is the zero uuid, and a tagged field at its default is kio's
  default for that field (both mean "absent").

Strings are valid Unicode (kio encodes with strict UTF-8; our codec's handling of unpaired
surrogates, like Java's, is tested in ``test_impl_codec``), floats are finite and there are no
unknown tagged fields (kio rejects them on parse).

The default run is cheap and deterministic (``derandomize``, a few examples per pair); the
``slow`` variant draws many more.  It prints how many pairs it checked, and fails when that count
drops below the floor measured for the schema directory in use (``MIN_CHECKED_PAIRS``).
"""
from __future__ import annotations

import dataclasses
import datetime
import io
import sys
import types
import typing
import uuid
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impl.protocol import SCHEMAS, encode
from impl.protocol.codec import read_message
from impl.protocol.primitives import INT_RANGES, Reader
from impl.protocol.schema import Field, MessageSchema, StructSchema

if sys.version_info < (3, 11):
    pytest.skip("kio, the independent implementation, needs Python >= 3.11",
                allow_module_level=True)

try:        # on 3.11+ the dev extra installs kio: its absence fails test_kio_is_installed
    from kio.schema.errors import ErrorCode
    from kio.schema.index import schema_name_map
    from kio.serial import entity_reader, entity_writer
    from kio.serial._implicit_defaults import get_tagged_field_default
    from kio.serial.readers import tz_aware_from_i64
    from kio.static.primitive import i32Timedelta, i64Timedelta
except ImportError as error:
    KIO_IMPORT_ERROR: ImportError | None = error
else:
    KIO_IMPORT_ERROR = None


# ------------------------------------------------------------------------------------------
# What is checked, and what is skipped

# (schema, version) -> the layout difference found between our schema and kio's entity.
# Checked against what ``layout_plan`` detects (test_layout_differences_are_the_listed_ones).
LAYOUT_DIFFERENCES: dict[tuple[str, int], str] = {
    # After our snapshot, KIP-996 (pre-vote; apache/kafka#17807, KAFKA-17641, adding v2) renamed
    # CandidateEpoch/CandidateId to ReplicaEpoch/ReplicaId in every version: kio's
    # kio/schema/vote/v0/request.py has ``replica_epoch``, ``replica_id``.  Same int32s at the
    # same places on the wire; the names differ, which the structural comparison does not excuse.
    ("VoteRequest", 0): "PartitionData.CandidateEpoch: kio names it replica_epoch",
    ("VoteRequest", 1): "PartitionData.CandidateEpoch: kio names it replica_epoch",
    # An unreleased version changed on trunk: our snapshot marks ReadShareGroupStateSummary
    # "latestVersionUnstable" (share groups, KIP-932, early access), and apache/kafka#19602
    # (KAFKA-19218, 2025) added LeaderEpoch between StateEpoch and StartOffset to its v0
    # (kio's kio/schema/read_share_group_state_summary/v0/response.py has ``leader_epoch``).
    ("ReadShareGroupStateSummaryResponse", 0):
        "PartitionResult: fields ['Partition', 'ErrorCode', 'ErrorMessage', 'StateEpoch', "
        "'StartOffset'], kio has ['partition', 'error_code', 'error_message', 'state_epoch', "
        "'leader_epoch', 'start_offset']",
}

# The fewest (schema, version) pairs that must be checked: measured, then lowered by a margin.
# With Kafka's whole message directory (impl/protocol/schemas, 188 schemas) 553 pairs are in
# both, 550 checked; with the 23-schema reference copy (../shared/reference/kafka-schemas, via
# $KIPCHECK_SCHEMAS) 81 in both, 81 checked.  Any directory smaller than the whole one is held
# to the reference copy's floor.  A drop means kio's index or our schemas changed.
FULL_DIRECTORY_SCHEMAS = 150
MIN_CHECKED_PAIRS = {"full directory": 520, "reference copy": 75}


def min_checked_pairs() -> int:
    full = len(SCHEMAS) >= FULL_DIRECTORY_SCHEMAS
    return MIN_CHECKED_PAIRS["full directory" if full else "reference copy"]


# ------------------------------------------------------------------------------------------
# Pairing our schema with kio's entity, field by field

# kio's kafka_type for the types it models more richly -> the wire type it stands for
KIO_WIRE_TYPES = {"error_code": "int16", "timedelta_i32": "int32", "timedelta_i64": "int64",
                  "datetime_i64": "int64"}
TIME_TYPES = frozenset({"timedelta_i32", "timedelta_i64", "datetime_i64"})
MAX_EXACT_TIMEDELTA_MS = 1 << 43          # kio converts through total_seconds(), a float
MAX_DATETIME_MS = 253402300799999         # 9999-12-31T23:59:59.999Z, datetime.max's year
ZERO_UUID = uuid.UUID(int=0)


class LayoutDifference(Exception):
    """Our schema and kio's entity lay a message out differently at this version."""


@dataclasses.dataclass(frozen=True, eq=False)
class FieldPlan:
    """One field present at the version, with kio's view of it."""

    field: Field
    kio_name: str
    kio_kind: str               # kio's kafka_type for a primitive (element), else "struct"
    array: bool
    nullable: bool              # on the wire, at this version
    kio_optional: bool          # kio's annotation admits None
    tagged: bool
    struct: StructPlan | None   # the (element) struct
    kio_absent: object = None   # kio's value of a tagged field that is absent


@dataclasses.dataclass(frozen=True, eq=False)
class StructPlan:
    """A struct at one version: its fields present there, paired with kio's dataclass."""

    struct: StructSchema
    kio_class: type
    present: tuple[FieldPlan, ...]


def _without_none(annotation) -> tuple[object, bool]:
    """``X | None`` -> (X, True); anything else -> (it, False)."""
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        args = typing.get_args(annotation)
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return rest[0], True
    return annotation, False


def _name_matches(ours: str, kio_name: str, kio_kind: str) -> bool:
    """kio snake-cases names, adds ``_`` to builtins' names and drops ``Ms`` from time fields."""
    theirs = kio_name.replace("_", "").lower()
    if kio_kind in TIME_TYPES and ours.endswith("Ms"):
        ours = ours[:-2]
    return ours.lower() == theirs


def _where(struct: StructSchema, field: Field) -> str:
    return f"{struct.name}.{field.name}"


def layout_plan(schema: MessageSchema, version: int, kio_class: type) -> StructPlan:
    """Pair our schema at ``version`` with kio's entity, or raise ``LayoutDifference``."""
    flexible = version in schema.flexible_versions
    if kio_class.__flexible__ != flexible:
        raise LayoutDifference(f"flexible here: ours {flexible}, kio {kio_class.__flexible__}")
    return _struct_plan(schema.struct, kio_class, version, flexible, schema.name)


def _struct_plan(struct: StructSchema, kio_class: type, version: int, flexible: bool,
                 message: str) -> StructPlan:
    if not dataclasses.is_dataclass(kio_class):
        raise LayoutDifference(f"{struct.name}: kio has {kio_class!r}, not a struct")
    ours = [f for f in struct.fields if version in f.versions]
    theirs = dataclasses.fields(kio_class)
    if len(ours) != len(theirs):
        raise LayoutDifference(f"{struct.name}: fields {[f.name for f in ours]}, kio has "
                               f"{[f.name for f in theirs]}")
    hints = typing.get_type_hints(kio_class)
    return StructPlan(struct, kio_class, tuple(
        _field_plan(struct, field, kio_field, hints[kio_field.name], version, flexible, message)
        for field, kio_field in zip(ours, theirs, strict=True)))


def _field_plan(struct: StructSchema, field: Field, kio_field: dataclasses.Field, annotation,
                version: int, flexible: bool, message: str) -> FieldPlan:
    where = _where(struct, field)
    inner, optional = _without_none(annotation)
    array = field.type.kind == "array"
    ftype = field.type.element if array else field.type
    if array:
        if typing.get_origin(inner) is not tuple:
            raise LayoutDifference(f"{where}: an array, kio has {annotation}")
        inner = _without_none(typing.get_args(inner)[0])[0]
    elif typing.get_origin(inner) is tuple:
        raise LayoutDifference(f"{where}: {field.type}, kio has an array")
    if ftype.kind == "struct":
        kio_kind = "struct"
        if not dataclasses.is_dataclass(inner):
            raise LayoutDifference(f"{where}: {field.type}, kio has {annotation}")
    else:
        kio_kind = kio_field.metadata.get("kafka_type", "?")
        if KIO_WIRE_TYPES.get(kio_kind, kio_kind) != ftype.kind:
            raise LayoutDifference(f"{where}: {field.type}, kio has {kio_kind}")
    if not _name_matches(field.name, kio_field.name, kio_kind):
        raise LayoutDifference(f"{where}: kio names it {kio_field.name}")

    tagged = version in field.tagged_versions
    kio_tag = kio_field.metadata.get("tag")
    if (field.tag if tagged else None) != kio_tag:
        raise LayoutDifference(f"{where}: tag {field.tag if tagged else None}, kio {kio_tag}")
    nullable = version in field.nullable_versions
    if nullable and not optional:
        raise LayoutDifference(f"{where}: nullable, kio's {annotation} is not")
    kio_none_is_a_value = (ftype.kind == "uuid" or kio_kind == "datetime_i64") and not array
    if optional and not nullable and not tagged and not kio_none_is_a_value:
        raise LayoutDifference(f"{where}: not nullable, kio's {annotation} is")
    if field.flexible_versions is not None and (version in field.flexible_versions) != flexible:
        # kio special-cases exactly one such field: RequestHeader's ClientId, always legacy
        if (message, field.name) != ("RequestHeader", "ClientId"):
            raise LayoutDifference(f"{where}: flexibleVersions {field.flexible_versions}, "
                                   f"which kio does not model")

    struct_plan = (_struct_plan(ftype.struct, inner, version, flexible, message)
                   if kio_kind == "struct" else None)
    plan = FieldPlan(field, kio_field.name, kio_kind, array, nullable, optional, tagged,
                     struct_plan)
    if tagged:
        absent = get_tagged_field_default(kio_field)
        ours = to_kio_value(plan, field.default_value())
        if absent is not None and absent != ours:
            raise LayoutDifference(f"{where}: absent when {field.default_value()!r}, kio when "
                                   f"{absent!r}")
        plan = dataclasses.replace(plan, kio_absent=absent)
    return plan


# ------------------------------------------------------------------------------------------
# Our message -> kio's entity


def to_kio_value(plan: FieldPlan, value):
    """The kio value of one field's value (the whole array for an array field)."""
    if value is None:
        return None
    if plan.array:
        return tuple(_to_kio_element(plan, element) for element in value)
    return _to_kio_element(plan, value)


def _to_kio_element(plan: FieldPlan, value):
    kind = plan.kio_kind
    if kind == "struct":
        return to_kio(plan.struct, value)
    if kind == "uuid":
        return None if value == ZERO_UUID else value
    if kind == "error_code":
        return ErrorCode(value)
    if kind == "timedelta_i32":
        return i32Timedelta.parse(datetime.timedelta(milliseconds=value))
    if kind == "timedelta_i64":
        return i64Timedelta.parse(datetime.timedelta(milliseconds=value))
    if kind == "datetime_i64":
        return None if value == -1 and plan.kio_optional else tz_aware_from_i64(value)
    return value


def to_kio(plan: StructPlan, value: dict):
    """kio's entity for our struct value."""
    kwargs = {}
    for field_plan in plan.present:
        field_value = value[field_plan.field.name]
        if field_plan.tagged and field_value == field_plan.field.default_value():
            kwargs[field_plan.kio_name] = field_plan.kio_absent
        else:
            kwargs[field_plan.kio_name] = to_kio_value(field_plan, field_value)
    return plan.kio_class(**kwargs)


# ------------------------------------------------------------------------------------------
# Strategies drawn from our schema (within kio's domain where kio's types are narrower)


def _long(short):
    """A string, bytes or list of 128 or more: its length takes a two-byte varint (drawing that
    many elements one by one would be slow)."""
    return short * 128


def _element_values(plan: FieldPlan, version: int) -> st.SearchStrategy:
    kind, wire = plan.kio_kind, (plan.field.type.element if plan.array else plan.field.type).kind
    if kind == "struct":
        return struct_values(plan.struct, version)
    if kind == "error_code":
        return st.sampled_from(sorted(code.value for code in ErrorCode))
    if kind == "timedelta_i64":
        return st.integers(-MAX_EXACT_TIMEDELTA_MS, MAX_EXACT_TIMEDELTA_MS)
    if kind == "datetime_i64":
        instants = st.integers(0, MAX_DATETIME_MS)
        return st.just(-1) | instants if plan.kio_optional else instants
    if wire in INT_RANGES:
        return st.integers(*INT_RANGES[wire])
    if wire == "bool":
        return st.booleans()
    if wire == "float64":
        return st.floats(allow_nan=False, allow_infinity=False)
    if wire == "uuid":
        return st.just(ZERO_UUID) | st.uuids()
    if wire == "string":
        return st.text(max_size=8) | st.text(min_size=1, max_size=3).map(_long)
    return st.binary(max_size=8) | st.binary(min_size=1, max_size=3).map(_long)  # and records


def _field_values(plan: FieldPlan, version: int) -> st.SearchStrategy:
    values = _element_values(plan, version)
    if plan.array:
        values = st.lists(values, max_size=3)
        if plan.kio_kind != "struct":
            values |= st.lists(_element_values(plan, version), min_size=1, max_size=2).map(_long)
    if plan.nullable:
        values = st.none() | values
    if plan.tagged:                         # absent (at its default) as well as present
        values = st.builds(plan.field.default_value) | values
    return values


def struct_values(plan: StructPlan, version: int) -> st.SearchStrategy:
    present = {p.field.name: p for p in plan.present}
    return st.fixed_dictionaries({
        field.name: (_field_values(present[field.name], version) if field.name in present
                     else st.builds(field.default_value))
        for field in plan.struct.fields})


# ------------------------------------------------------------------------------------------
# The pairs


@cache
def kio_classes() -> dict[tuple[str, int], str]:
    """(schema name, version) -> kio's ``module:Class`` path; the class is the schema's name."""
    if KIO_IMPORT_ERROR is not None:
        return {}
    return {(path.rpartition(":")[2], version): path
            for versions in schema_name_map.values()
            for version, entities in versions.items()
            for path in entities.values()}


def both_know() -> list[tuple[str, int]]:
    """The (schema, version) pairs in both; only the schemas kio has are parsed."""
    known = kio_classes()
    names = sorted({name for name, _ in known} & set(SCHEMAS))
    return [(name, version) for name in names
            for version in range(SCHEMAS[name].valid_versions.lowest,
                                 SCHEMAS[name].valid_versions.highest + 1)
            if (name, version) in known]


@cache
def plans() -> dict[tuple[str, int], StructPlan | LayoutDifference]:
    """Every pair both know -> its plan, or the layout difference that excludes it."""
    from pkgutil import resolve_name
    result: dict[tuple[str, int], StructPlan | LayoutDifference] = {}
    for name, version in both_know():
        kio_class = resolve_name(kio_classes()[name, version])
        try:
            result[name, version] = layout_plan(SCHEMAS[name], version, kio_class)
        except LayoutDifference as difference:
            result[name, version] = difference
    return result


def checked_versions() -> dict[str, list[int]]:
    """Schema name -> the versions cross-checked."""
    result: dict[str, list[int]] = {}
    for (name, version), plan in plans().items():
        if isinstance(plan, StructPlan):
            result.setdefault(name, []).append(version)
    return result


@cache
def message_values(name: str, version: int) -> st.SearchStrategy:
    return struct_values(plans()[name, version], version)


# ------------------------------------------------------------------------------------------
# The cross-check


def kio_bytes(entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def cross_check(name: str, version: int, message: dict) -> None:
    """Both directions, for one message."""
    entity = to_kio(plans()[name, version], message)
    ours = encode(name, message, version)
    theirs = kio_bytes(entity)
    assert ours == theirs, f"{name} v{version}: our bytes {ours.hex()}, kio's {theirs.hex()}"
    reader = Reader(theirs)
    assert read_message(reader, name, version) == message and reader.remaining == 0
    parsed, size = entity_reader(type(entity))(ours, 0)
    assert (parsed, size) == (entity, len(ours))


CHEAP = settings(max_examples=3, derandomize=True, database=None, deadline=None,
                 suppress_health_check=list(HealthCheck))
THOROUGH = settings(max_examples=100, derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck))


def _check_every_version(name: str, data) -> None:
    for version in checked_versions()[name]:
        cross_check(name, version, data.draw(message_values(name, version),
                                             label=f"{name} v{version}"))


@pytest.mark.parametrize("name", sorted(checked_versions()))
@CHEAP
@given(data=st.data())
def test_codec_agrees_with_kio(name, data):
    _check_every_version(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(checked_versions()))
@THOROUGH
@given(data=st.data())
def test_codec_agrees_with_kio_thoroughly(name, data):
    _check_every_version(name, data)


def require_kio() -> None:
    assert KIO_IMPORT_ERROR is None, (f"kio is missing ({KIO_IMPORT_ERROR}); install the dev "
                                      f"extra: pip install -e '.[dev]'")


def test_kio_is_installed():
    """The dev extra installs kio on Python >= 3.11: without it nothing above is checked."""
    require_kio()


def test_layout_differences_are_the_listed_ones():
    require_kio()
    detected = {key: str(plan) for key, plan in plans().items()
                if isinstance(plan, LayoutDifference)}
    listed = {key: reason for key, reason in LAYOUT_DIFFERENCES.items()
              if key[0] in SCHEMAS}
    assert sorted(detected) == sorted(listed), detected


def test_enough_pairs_are_checked():
    require_kio()
    checked = sum(len(versions) for versions in checked_versions().values())
    skipped = sum(isinstance(plan, LayoutDifference) for plan in plans().values())
    print(f"\nkio cross-check: {checked} (schema, version) pairs checked, {skipped} skipped "
          f"(layout differences), {len(SCHEMAS)} schemas loaded")
    assert checked >= min_checked_pairs(), (checked, skipped, len(SCHEMAS))
