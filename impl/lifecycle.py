"""``BrokerLifecycleManager``: how a KRaft broker registers and heartbeats (rules BL-1 to BL-12).

Kafka's ``core/src/main/scala/kafka/server/BrokerLifecycleManager.scala`` (3.8.0 / 3.9), the
part the control-plane protocol depends on, sans I/O:

- one manager per process start, with a fresh ``incarnation_id`` drawn from the seeded
  ``random.Random`` (BL-1); ``broker_epoch`` is -1 until a registration succeeds;
- its Listeners are the broker's advertised listeners as this process run resolved them at
  start-up (``broker_listener_info``: the inter-broker listener first, a blank host the
  canonical host name, port 0 the port the run bound: EP-1, EP-3..EP-5), so each run of a
  broker with an ephemeral port registers its own endpoint;
- ``registered`` False means the next communication is a BrokerRegistrationRequest (BL-4), True
  a BrokerHeartbeatRequest (BL-9); only one request is in flight at a time
  (``communication_in_flight``, BL-9);
- a successful registration sets the epoch and sends the first heartbeat at once (BL-5); a
  failed one is retried with the same incarnation (BL-5, BL-6);
- heartbeats go out at most once per ``broker.heartbeat.interval.ms``; whatever a heartbeat's
  answer, including STALE_BROKER_EPOCH (77), the broker keeps heartbeating with the same epoch
  and never re-registers (BL-11); only ``resend_broker_registration`` (BL-8, the
  BrokerRegistrationTracker after a metadata.version change) makes the next communication a
  registration again, with the same incarnation.

What the model abstracts away: the retry backoff (``ExponentialBackoff(100 ms, x2,
broker.session.timeout.ms, jitter 0.02)``, BL-6) is computed as Kafka does and exposed as
``backoff_ms`` / ``retry_at_ms``, but nothing waits for it -- a failed or lost communication may
be retried at once; the 10 ms / 50 ms heartbeat spacing of STARTING and controlled shutdown
(BL-10) is the ordinary interval here; WantFence and WantShutDown are false (the broker is ready
to unfence as soon as it has caught up, BL-12); the initial-registration timeout (BL-7) is not
enforced.  Time only moves through the ``now_ms`` arguments.
"""
from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Mapping

from impl.kraft import LATEST_PRODUCTION_MV, METADATA_VERSION, MINIMUM_KRAFT_VERSION
from impl.protocol.api_keys import BROKER_HEARTBEAT, BROKER_REGISTRATION
from impl.protocol.errors import NONE, UNKNOWN_SERVER_ERROR
from impl.config import Endpoint
from impl.registration import ExponentialBackoff, listener_info, random_incarnation_id

# KRaftConfigs defaults (BH-1)
BROKER_HEARTBEAT_INTERVAL_MS = 2000
BROKER_SESSION_TIMEOUT_MS = 9000
INITIAL_BROKER_REGISTRATION_TIMEOUT_MS = 60000

# BrokerState names the manager moves through (BL-10); the rest of the enum is not modelled.
STARTING = "STARTING"
RECOVERY = "RECOVERY"
RUNNING = "RUNNING"


def lifecycle_backoff(rng: random.Random,
                      session_timeout_ms: int = BROKER_SESSION_TIMEOUT_MS) -> ExponentialBackoff:
    """``resendExponentialBackoff`` of BrokerLifecycleManager (BL-6): capped at the session
    timeout, so failures alone can outlast the broker's session."""
    return ExponentialBackoff(100, 2, session_timeout_ms, 0.02, rng)


def broker_listener_info(endpoints: Iterable[Endpoint], inter_broker_listener_name: str | None,
                         local_host: str | None = None,
                         bound_ports: Mapping[str, int] | None = None, *,
                         resolve: bool = True) -> tuple[dict, ...]:
    """The BrokerRegistrationRequest's Listeners (EP-1, BL-2): ``ListenerInfo.create(
    Some(inter.broker.listener.name), effectiveAdvertisedListeners)`` -- the inter-broker
    listener first, then the others in their order -- then a blank host resolved to the
    canonical host name and port 0 to the port this process run bound (``listener_info``).
    Computed once, when the broker starts.  ``resolve`` False: as configured (EP-6, the
    registers-unresolved-endpoints design)."""
    endpoints = list(endpoints)
    first = [e for e in endpoints if e.listener_name == inter_broker_listener_name][:1]
    ordered = first + [e for e in endpoints if e not in first]
    return listener_info(ordered, local_host, bound_ports, resolve=resolve)


def _is_reserved_directory(value: uuid.UUID) -> bool:
    """``DirectoryId.reserved``: most significant half 0 and least significant below 100."""
    return value.int >> 64 == 0 and (value.int & (2 ** 64 - 1)) < 100


def random_directory_id(rng: random.Random) -> uuid.UUID:
    """``DirectoryId.random``: ``Uuid.randomUuid`` until the id is not reserved."""
    while True:
        value = random_incarnation_id(rng)
        if not _is_reserved_directory(value):
            return value


def _signed_halves(value: uuid.UUID) -> tuple[int, int]:
    """``Uuid.compareTo`` compares the two halves as signed longs."""
    def signed(half: int) -> int:
        return half - 2 ** 64 if half >= 2 ** 63 else half
    return signed(value.int >> 64), signed(value.int & (2 ** 64 - 1))


class BrokerLifecycleManager:
    """One broker process run's lifecycle manager (BL-1 to BL-12).

    ``broker_epoch`` >= 0 starts the manager as a process that registered with that epoch and
    must register again (BL-8): ``registered`` False, the epoch kept.  ``incarnation_id`` keeps
    a given incarnation instead of drawing one (the same process, BL-1)."""

    def __init__(self, node_id: int, rng: random.Random, cluster_id: str,
                 listeners: Iterable[Mapping],
                 supported_features: Mapping[str, tuple[int, int]] | None = None,
                 log_dirs: Iterable[uuid.UUID] | None = None, rack: str | None = None, *,
                 broker_epoch: int = -1, incarnation_id: uuid.UUID | None = None,
                 heartbeat_interval_ms: int = BROKER_HEARTBEAT_INTERVAL_MS,
                 session_timeout_ms: int = BROKER_SESSION_TIMEOUT_MS):
        self.node_id = node_id
        self.rng = rng
        # BL-1: the incarnation is drawn once, when the manager is built
        self.incarnation_id = (incarnation_id if incarnation_id is not None
                               else random_incarnation_id(rng))
        # BL-2: the inputs are frozen at start
        self.cluster_id = cluster_id
        self.listeners = tuple(dict(listener) for listener in listeners)
        self.supported_features = dict(supported_features or
                                       {METADATA_VERSION: (MINIMUM_KRAFT_VERSION,
                                                           LATEST_PRODUCTION_MV)})
        self.log_dirs = tuple(sorted(log_dirs if log_dirs is not None
                                     else (random_directory_id(rng),), key=_signed_halves))
        self.rack = rack
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.backoff = lifecycle_backoff(rng, session_timeout_ms)
        # BrokerLifecycleManager state
        self.broker_epoch = broker_epoch
        self.registered = False
        self.communication_in_flight = False
        self.in_flight_api: int | None = None       # BROKER_REGISTRATION or BROKER_HEARTBEAT
        self.in_flight_to: int | None = None        # the controller it was sent to
        self.last_heartbeat_ms: int | None = None
        self.failed_attempts = 0
        self.backoff_ms: int | None = None          # information only: the delay Kafka would wait
        self.retry_at_ms: int | None = None
        self.state = STARTING
        self.is_fenced: bool | None = None          # from the last successful heartbeat
        self.is_caught_up: bool | None = None
        self.last_error: int | None = None
        self.registrations_sent = 0
        self.heartbeats_sent = 0

    # -- what is enabled -----------------------------------------------------------------------

    def registration_enabled(self) -> bool:
        """BL-4: the next communication is a registration and nothing is in flight.  A failed
        attempt's backoff is not waited for (the model does not time retries)."""
        return not self.registered and not self.communication_in_flight

    def heartbeat_enabled(self, now_ms: int) -> bool:
        """BL-9: registered, nothing in flight, and at most one heartbeat per interval."""
        if not self.registered or self.communication_in_flight:
            return False
        return (self.last_heartbeat_ms is None
                or now_ms >= self.last_heartbeat_ms + self.heartbeat_interval_ms)

    # -- requests ------------------------------------------------------------------------------

    def registration_request(self) -> dict:
        """BL-4: the BrokerRegistrationRequest body (LogDirs sorted by ``Uuid.compareTo``)."""
        return {"BrokerId": self.node_id, "ClusterId": self.cluster_id,
                "IncarnationId": self.incarnation_id,
                "Listeners": [dict(listener) for listener in self.listeners],
                "Features": [{"Name": name, "MinSupportedVersion": lo, "MaxSupportedVersion": hi}
                             for name, (lo, hi) in sorted(self.supported_features.items())],
                "Rack": self.rack, "IsMigratingZkBroker": False,
                "LogDirs": list(self.log_dirs), "PreviousBrokerEpoch": -1}

    def heartbeat_request(self, metadata_offset: int) -> dict:
        """BL-9: the BrokerHeartbeatRequest body; CurrentMetadataOffset is the offset the
        broker's metadata loader has applied."""
        return {"BrokerId": self.node_id, "BrokerEpoch": self.broker_epoch,
                "CurrentMetadataOffset": metadata_offset, "WantFence": False,
                "WantShutDown": False}

    def broker_sends_registration(self, now_ms: int,
                                  controller_id: int | None = None) -> dict | None:
        """``sendBrokerRegistration`` (BL-4): the request body, or None when not enabled
        (registered already, or a communication in flight)."""
        if not self.registration_enabled():
            return None
        self._in_flight(BROKER_REGISTRATION, controller_id)
        self.registrations_sent += 1
        return self.registration_request()

    def broker_sends_heartbeat(self, now_ms: int, metadata_offset: int,
                               controller_id: int | None = None) -> dict | None:
        """``sendBrokerHeartbeat`` (BL-9): the request body, or None when not enabled."""
        if not self.heartbeat_enabled(now_ms):
            return None
        self._in_flight(BROKER_HEARTBEAT, controller_id)
        self.last_heartbeat_ms = now_ms
        self.heartbeats_sent += 1
        return self.heartbeat_request(metadata_offset)

    def _in_flight(self, api_key: int, controller_id: int | None) -> None:
        self.communication_in_flight = True
        self.in_flight_api = api_key
        self.in_flight_to = controller_id

    def _clear_in_flight(self) -> None:
        self.communication_in_flight = False
        self.in_flight_api = None
        self.in_flight_to = None

    # -- responses -----------------------------------------------------------------------------

    @staticmethod
    def _code(error_code: int, body: Mapping | None) -> int:
        """The response's error: a transport error, else the body's ErrorCode; no body at all
        is a failure too (``responseBody() == null``), counted as UNKNOWN_SERVER_ERROR."""
        if error_code:
            return error_code
        if body is None:
            return UNKNOWN_SERVER_ERROR
        return body.get("ErrorCode", NONE)

    def broker_handles_registration_response(self, error_code: int, body: Mapping | None,
                                             now_ms: int | None = None) -> None:
        """``BrokerRegistrationResponseEvent`` (BL-5): clear the in-flight flag; ErrorCode 0
        takes the BrokerEpoch, marks the broker registered and makes the next heartbeat
        immediate; any error (NOT_CONTROLLER, DUPLICATE_BROKER_REGISTRATION,
        CLUSTER_AUTHORIZATION_FAILED, ...) leaves it unregistered, to retry with the same
        incarnation after the backoff (BL-6, information only here)."""
        if not self._answered(error_code, body, now_ms):
            return
        self.broker_epoch = body.get("BrokerEpoch", -1)
        self.registered = True
        self.last_heartbeat_ms = None       # scheduleNextCommunicationImmediately

    def broker_handles_heartbeat_response(self, error_code: int, body: Mapping | None,
                                          now_ms: int | None = None) -> None:
        """``BrokerHeartbeatResponseEvent`` (BL-10, BL-11): clear the in-flight flag.  An error
        of any kind -- STALE_BROKER_EPOCH (77) included -- only backs off: the epoch, the
        incarnation and ``registered`` stay, so the next heartbeat carries the same epoch.
        Success records IsFenced / IsCaughtUp and moves STARTING -> RECOVERY once caught up,
        RECOVERY -> RUNNING once unfenced; RUNNING ignores IsFenced."""
        if not self._answered(error_code, body, now_ms):
            return
        self.is_fenced = bool(body.get("IsFenced", True))
        self.is_caught_up = bool(body.get("IsCaughtUp", False))
        if self.state == STARTING:
            if self.is_caught_up:
                self.state = RECOVERY
        elif self.state == RECOVERY:
            if not self.is_fenced:
                self.state = RUNNING

    def connection_lost(self, now_ms: int | None = None) -> None:
        """The request or its answer was lost (dropped, the controller crashed, the channel
        timed out): Kafka's ``onTimeout`` path.  The in-flight flag clears, so the same kind of
        communication is sent again -- a registration at once, a heartbeat when its interval
        allows."""
        self._clear_in_flight()
        self._after_failure(None, now_ms)

    def _answered(self, error_code: int, body: Mapping | None, now_ms: int | None) -> bool:
        """What every answer does first: clear the in-flight flag; a failure backs off (BL-6),
        a success resets the failure count (``failedAttempts = 0``, BL-5, BL-10).  True on
        success."""
        self._clear_in_flight()
        code = self._code(error_code, body)
        if code != NONE:
            self._after_failure(code, now_ms)
            return False
        self.failed_attempts = 0
        self.backoff_ms = self.retry_at_ms = None
        self.last_error = None
        return True

    def _after_failure(self, code: int | None, now_ms: int | None) -> None:
        """``scheduleNextCommunicationAfterFailure`` (BL-6): the delay from ``failed_attempts``
        before incrementing it.  Kept as information; nothing here waits for it."""
        self.last_error = code
        self.backoff_ms = self.backoff.backoff(self.failed_attempts)
        self.failed_attempts += 1
        self.retry_at_ms = None if now_ms is None else now_ms + self.backoff_ms

    # -- re-registration -----------------------------------------------------------------------

    def resend_broker_registration(self) -> None:
        """``resendBrokerRegistrationUnlessZkMode`` (BL-8): the next communication is a
        registration with the same incarnation and listeners; the epoch is kept until the
        answer replaces it."""
        self.registered = False
