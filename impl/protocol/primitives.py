"""Kafka's primitive wire types: ``Reader`` and ``Writer`` over a byte string.

Big-endian int8/int16/int32/int64, uint16/uint32, float64, bool, uuid (two int64s, most
significant first), unsigned varint (at most 5 bytes), zig-zag varint, unsigned varlong (at most
10 bytes), zig-zag varlong, and the three length-prefixed forms (string, bytes, array length),
each either *non-compact* (int16 length for strings, int32 for bytes and arrays, -1 = null) or
*compact* (unsigned varint of length + 1, 0 = null), as written by Kafka's ``ByteUtils``,
``ByteBufferAccessor``, ``Readable`` and the generated message classes
(``MessageDataGenerator.generateVariableLengthReader``/``Writer``).

Reading follows the Java code exactly, including its 32-bit arithmetic: an unsigned varint is
returned as the Java ``int`` Kafka holds (so ``0xFFFFFFFF`` reads as -1), a compact length is
that int minus one (wrapping like Java), strings longer than 0x7fff bytes are rejected, and
invalid UTF-8 is replaced by U+FFFD as ``new String(bytes, UTF_8)`` does (Kafka does not reject
it).  Every failure -- too few bytes, a varint with the continuation bit set in its last byte, a
negative length for a non-nullable value, a collection longer than the bytes left -- raises
``ProtocolError`` with UNKNOWN_SERVER_ERROR, the code Kafka's ``Errors.forException`` gives the
``RuntimeException`` it throws there; callers re-label it (see ``errors``).

Writing checks ranges and types (Python is not Java) and raises ``ProtocolError`` with
UNKNOWN_SERVER_ERROR for a value Kafka could not have held or serialized.  Strings are encoded
like Java's ``String.getBytes(UTF_8)``: an unpaired surrogate becomes ``?``.
"""
from __future__ import annotations

import struct
import uuid

from impl.protocol.errors import UNKNOWN_SERVER_ERROR, ProtocolError

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_FLOAT64 = struct.Struct(">d")

MAX_STRING_LENGTH = 0x7FFF        # longest string, in UTF-8 bytes, the generated code accepts

INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


def java_int(value: int) -> int:
    """``value`` truncated to 32 bits, two's complement, like a Java ``int``."""
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def malformed(message: str) -> ProtocolError:
    return ProtocolError(UNKNOWN_SERVER_ERROR, message)


class Reader:
    """Reads Kafka primitives from ``data`` starting at ``offset``; ``position`` advances."""

    __slots__ = ("_data", "position")

    def __init__(self, data: bytes | bytearray | memoryview, offset: int = 0) -> None:
        self._data = data if isinstance(data, bytes) else bytes(data)
        self.position = offset

    @property
    def remaining(self) -> int:
        return len(self._data) - self.position

    def _advance(self, size: int, what: str) -> int:
        start = self.position
        if size > len(self._data) - start:
            raise malformed(f"buffer underflow reading {what} at offset {start}: "
                            f"{size} byte(s) needed, {len(self._data) - start} available")
        self.position = start + size
        return start

    # --- fixed-size types ------------------------------------------------------------------

    def read_int8(self) -> int:
        return _INT8.unpack_from(self._data, self._advance(1, "int8"))[0]

    def read_int16(self) -> int:
        return _INT16.unpack_from(self._data, self._advance(2, "int16"))[0]

    def read_uint16(self) -> int:
        return _UINT16.unpack_from(self._data, self._advance(2, "uint16"))[0]

    def read_int32(self) -> int:
        return _INT32.unpack_from(self._data, self._advance(4, "int32"))[0]

    def read_uint32(self) -> int:
        return _UINT32.unpack_from(self._data, self._advance(4, "uint32"))[0]

    def read_int64(self) -> int:
        return _INT64.unpack_from(self._data, self._advance(8, "int64"))[0]

    def read_float64(self) -> float:
        return _FLOAT64.unpack_from(self._data, self._advance(8, "float64"))[0]

    def read_bool(self) -> bool:
        """Any non-zero byte is true (``_readable.readByte() != 0``)."""
        return self._data[self._advance(1, "bool")] != 0

    def read_uuid(self) -> uuid.UUID:
        start = self._advance(16, "uuid")
        return uuid.UUID(bytes=self._data[start:start + 16])

    # --- variable-length integers (ByteUtils) ----------------------------------------------

    def read_unsigned_varint(self) -> int:
        """``ByteUtils.readUnsignedVarint``: at most 5 bytes, returned as a Java ``int``."""
        result = 0
        for shift in (0, 7, 14, 21):
            byte = self._data[self._advance(1, "unsigned varint")]
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
        byte = self._data[self._advance(1, "unsigned varint")]
        if byte >= 0x80:
            raise malformed("Varint is too long, the most significant bit in the 5th byte is set")
        return java_int(result | (byte << 28))

    def read_varint(self) -> int:
        raw = self.read_unsigned_varint() & 0xFFFFFFFF
        return (raw >> 1) ^ -(raw & 1)

    def read_unsigned_varlong(self) -> int:
        """``ByteUtils.readUnsignedVarlong``: at most 10 bytes, as an unsigned 64-bit value."""
        result = 0
        for shift in range(0, 70, 7):
            byte = self._data[self._advance(1, "unsigned varlong")]
            if byte < 0x80:
                return (result | (byte << shift)) & 0xFFFFFFFFFFFFFFFF
            result |= (byte & 0x7F) << shift
        raise malformed("Varlong is too long, most significant bit in the 10th byte is set")

    def read_varlong(self) -> int:
        raw = self.read_unsigned_varlong()
        return (raw >> 1) ^ -(raw & 1)

    # --- raw bytes and length-prefixed values ----------------------------------------------

    def read_raw(self, size: int) -> bytes:
        """``Readable.readArray``: exactly ``size`` bytes."""
        if size < 0:
            raise malformed(f"negative byte array size {size}")
        if size > self.remaining:
            raise malformed(f"Error reading byte array of {size} byte(s): only "
                            f"{self.remaining} byte(s) available")
        start = self._advance(size, "bytes")
        return self._data[start:start + size]

    def _read_length(self, compact: bool, non_compact_reader) -> int:
        return java_int(self.read_unsigned_varint() - 1) if compact else non_compact_reader()

    def read_string(self, name: str, *, compact: bool, nullable: bool) -> str | None:
        length = self._read_length(compact, self.read_int16)
        if length < 0:
            if nullable:
                return None
            raise malformed(f"non-nullable field {name} was serialized as null")
        if length > MAX_STRING_LENGTH:
            raise malformed(f"string field {name} had invalid length {length}")
        return self.read_raw(length).decode("utf-8", "replace")

    def read_bytes(self, name: str, *, compact: bool, nullable: bool) -> bytes | None:
        length = self._read_length(compact, self.read_int32)
        if length < 0:
            if nullable:
                return None
            raise malformed(f"non-nullable field {name} was serialized as null")
        return self.read_raw(length)

    def read_array_length(self, name: str, *, compact: bool, nullable: bool) -> int | None:
        length = self._read_length(compact, self.read_int32)
        if length < 0:
            if nullable:
                return None
            raise malformed(f"non-nullable field {name} was serialized as null")
        if length > self.remaining:
            raise malformed(f"Tried to allocate a collection of size {length}, but there are "
                            f"only {self.remaining} bytes remaining.")
        return length


def _check_int(value: object, kind: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise malformed(f"expected an integer for {kind}, got {value!r}")
    low, high = INT_RANGES[kind]
    if not low <= value <= high:
        raise malformed(f"{value} is out of range for {kind} [{low}, {high}]")
    return value


class Writer:
    """Appends Kafka primitives to a buffer; ``getvalue()`` returns the bytes written."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self._buffer)

    # --- fixed-size types ------------------------------------------------------------------

    def write_int8(self, value: int) -> None:
        self._buffer += _INT8.pack(_check_int(value, "int8"))

    def write_int16(self, value: int) -> None:
        self._buffer += _INT16.pack(_check_int(value, "int16"))

    def write_uint16(self, value: int) -> None:
        self._buffer += _UINT16.pack(_check_int(value, "uint16"))

    def write_int32(self, value: int) -> None:
        self._buffer += _INT32.pack(_check_int(value, "int32"))

    def write_uint32(self, value: int) -> None:
        self._buffer += _UINT32.pack(_check_int(value, "uint32"))

    def write_int64(self, value: int) -> None:
        self._buffer += _INT64.pack(_check_int(value, "int64"))

    def write_float64(self, value: float) -> None:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise malformed(f"expected a number for float64, got {value!r}")
        self._buffer += _FLOAT64.pack(value)

    def write_bool(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise malformed(f"expected a bool, got {value!r}")
        self._buffer.append(1 if value else 0)

    def write_uuid(self, value: uuid.UUID) -> None:
        if not isinstance(value, uuid.UUID):
            raise malformed(f"expected a uuid.UUID, got {value!r}")
        self._buffer += value.bytes

    # --- variable-length integers (ByteUtils) ----------------------------------------------

    def write_unsigned_varint(self, value: int) -> None:
        value = _check_int(value, "uint32")
        while value >= 0x80:
            self._buffer.append((value & 0x7F) | 0x80)
            value >>= 7
        self._buffer.append(value)

    def write_varint(self, value: int) -> None:
        value = _check_int(value, "int32")
        self.write_unsigned_varint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)

    def write_unsigned_varlong(self, value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 64:
            raise malformed(f"{value!r} is out of range for an unsigned varlong")
        while value >= 0x80:
            self._buffer.append((value & 0x7F) | 0x80)
            value >>= 7
        self._buffer.append(value)

    def write_varlong(self, value: int) -> None:
        value = _check_int(value, "int64")
        self.write_unsigned_varlong(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)

    # --- raw bytes and length-prefixed values ----------------------------------------------

    def write_raw(self, data: bytes) -> None:
        self._buffer += data

    def _write_length(self, length: int, compact: bool, non_compact_writer) -> None:
        if compact:
            self.write_unsigned_varint(length + 1)
        else:
            non_compact_writer(length)

    def _write_null(self, name: str, compact: bool, nullable: bool, non_compact_writer) -> None:
        if not nullable:
            raise malformed(f"non-nullable field {name} is null")
        self._write_length(-1, compact, non_compact_writer)

    def write_string(self, value: str | None, name: str, *, compact: bool,
                     nullable: bool) -> None:
        if value is None:
            self._write_null(name, compact, nullable, self.write_int16)
            return
        if not isinstance(value, str):
            raise malformed(f"expected a str for {name}, got {value!r}")
        encoded = value.encode("utf-8", "replace")
        if len(encoded) > MAX_STRING_LENGTH:
            raise malformed(f"'{name}' field is too long to be serialized")
        self._write_length(len(encoded), compact, self.write_int16)
        self._buffer += encoded

    def write_bytes(self, value: bytes | None, name: str, *, compact: bool,
                    nullable: bool) -> None:
        if value is None:
            self._write_null(name, compact, nullable, self.write_int32)
            return
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise malformed(f"expected bytes for {name}, got {value!r}")
        data = bytes(value)
        self._write_length(len(data), compact, self.write_int32)
        self._buffer += data

    def write_array_length(self, length: int | None, name: str, *, compact: bool,
                           nullable: bool) -> None:
        if length is None:
            self._write_null(name, compact, nullable, self.write_int32)
        else:
            self._write_length(length, compact, self.write_int32)
