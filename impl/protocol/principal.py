"""The principal serde of ``DefaultKafkaPrincipalBuilder``, which fills the Envelope's
``RequestPrincipal`` (F-12) and reads it back on the controller (F-29a).

``serialize_principal`` (``DefaultKafkaPrincipalBuilder.serialize``, docs/rules.md section 1.1)
writes a 2-byte version prefix -- the highest version of ``DefaultPrincipalData``, 0 -- then
``DefaultPrincipalData`` at that version (flexible: compact strings, a tagged-field section), as
``MessageUtil.toVersionPrefixedBytes`` does.  ``deserialize_principal`` reads the prefix, rejects a
version outside ``DefaultPrincipalData``'s valid versions ("Invalid principal data version N") and
reads the struct.  Every failure -- null bytes, fewer than two bytes, a bad version, a truncated or
null field -- is PRINCIPAL_DESERIALIZATION_FAILURE (97), because
``EnvelopeUtils.parseForwardedPrincipal`` turns any exception of the serde into that error (F-29a).
Trailing bytes are ignored, as in Kafka.
"""
from __future__ import annotations

from dataclasses import dataclass

from impl.protocol.codec import read_message, write_message
from impl.protocol.errors import PRINCIPAL_DESERIALIZATION_FAILURE, errors_as
from impl.protocol.primitives import Reader, Writer, malformed
from impl.protocol.schema import get_schema

PRINCIPAL_DATA = get_schema("DefaultPrincipalData")


@dataclass(frozen=True)
class KafkaPrincipal:
    """``KafkaPrincipal``: a type (``User``), a name, and whether a delegation token authenticated
    it on the forwarding broker."""

    principal_type: str
    name: str
    token_authenticated: bool = False

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


def serialize_principal(principal: KafkaPrincipal) -> bytes:
    version = PRINCIPAL_DATA.valid_versions.highest
    writer = Writer()
    writer.write_int16(version)
    write_message(writer, PRINCIPAL_DATA, {"Type": principal.principal_type,
                                           "Name": principal.name,
                                           "TokenAuthenticated": principal.token_authenticated},
                  version)
    return writer.getvalue()


def deserialize_principal(data: bytes | None) -> KafkaPrincipal:
    with errors_as(PRINCIPAL_DESERIALIZATION_FAILURE,
                   "Failed to deserialize client principal from envelope"):
        if data is None:
            raise malformed("the principal bytes are null")
        reader = Reader(data)
        version = reader.read_int16()
        if version not in PRINCIPAL_DATA.valid_versions:
            raise malformed(f"Invalid principal data version {version}")
        fields = read_message(reader, PRINCIPAL_DATA, version)
    return KafkaPrincipal(fields["Type"], fields["Name"], fields["TokenAuthenticated"])

