"""Kafka's security protocol ids (``org.apache.kafka.common.security.auth.SecurityProtocol``).

What the ``SecurityProtocol`` fields on the wire carry: the listeners of a
``ControllerRegistrationRequest`` and the endpoints of a ``RegisterControllerRecord``
(docs/rules.md section 2.1).  The names are the enum's, in its order.
"""
from __future__ import annotations

SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
