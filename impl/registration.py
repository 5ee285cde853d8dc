"""``ControllerRegistrationManager`` (KIP-919): how a KRaft controller registers itself.

Kafka's ``core/src/main/scala/kafka/server/ControllerRegistrationManager.scala``, rules R-1 to
R-11 of docs/rules.md, sans I/O:

- one manager per process start, with a fresh ``incarnation_id`` (a random UUID, drawn here from
  the seeded ``random.Random`` the simulator passes in) (R-10), and the Listeners that process
  run resolved at start-up (``listener_info``: a blank host -> the canonical host name, port 0
  -> the port the run bound, EP-1..EP-5), so a controller with an ephemeral port registers a
  new endpoint each run; ``configured_listener_info`` is the listeners as configured, what a
  controller registered before KAFKA-15458 (EP-6);
- state: ``pending_rpc``, ``successful_rpcs``, ``failed_rpcs``, ``metadata_version`` (starts at
  MINIMUM_KRAFT_VERSION), ``registered_in_log``, the channel (R-2, R-3);
- the ``maybeSendControllerRegistration`` event (``controller_sends_registration``) sends only if
  not registered in the log, a channel is set, metadata.version supports registration
  (>= 3.7-IV0, R-1) and no RPC is pending (R-3); the request goes through the controller channel
  (``enqueue(ChannelRequest, now_ms)``: ``impl.context``), which retries NOT_CONTROLLER and
  disconnects itself until its 5 s retry timeout (R-11, F-21);
- the response (``controller_handles_registration_response``) clears ``pending_rpc``; an error or
  the channel's timeout backs off with ``ExponentialBackoff(100 ms, x2, 120 s, jitter 0.02)``
  (R-6, R-7); success only counts -- the manager waits for its record in the log (R-6);
- metadata deltas (``on_metadata_update``, the registration part of ``node_replays_record``)
  set ``registered_in_log`` from the registration for this id and queue the check again (R-8);
  there is no periodic re-check (R-9).

Timers are deadlines in milliseconds: ``next_deadline_ms()`` tells the simulator when the
backoff timer fires; time only moves through the ``now_ms`` arguments.
"""
from __future__ import annotations

import base64
import math
import random
import uuid
from typing import Protocol
from collections.abc import Iterable, Mapping

from impl.config import Endpoint
from impl.context import ChannelRequest
from impl.kraft import (LATEST_PRODUCTION_MV, METADATA_VERSION, MINIMUM_KRAFT_VERSION, MV_3_7_IV0,
                        JAVA_BLANK, MetadataDelta, MetadataImage, unserializable_endpoint)
from impl.protocol.api_keys import CONTROLLER_REGISTRATION
from impl.protocol.errors import NONE, UNKNOWN_SERVER_ERROR
from impl.protocol.security_protocol import SECURITY_PROTOCOL_IDS

REGISTRATION_RETRY_TIMEOUT_MS = 5000     # the "registration" channel's retryTimeoutMs (R-11, F-17)


# Kafka's reserved Uuids (Uuid.RESERVED): ZERO_UUID and METADATA_TOPIC_ID (0, 1).
_RESERVED_UUIDS = (uuid.UUID(int=0), uuid.UUID(int=1))


def kafka_uuid_string(value: uuid.UUID) -> str:
    """``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def random_incarnation_id(rng: random.Random) -> uuid.UUID:
    """``Uuid.randomUuid``: a random (version 4) UUID, drawn again while it is reserved or its
    string form starts with '-' (it would look like a command-line flag)."""
    while True:
        value = uuid.UUID(int=rng.getrandbits(128), version=4)
        if value not in _RESERVED_UUIDS and not kafka_uuid_string(value).startswith("-"):
            return value


class ExponentialBackoff:
    """``org.apache.kafka.common.utils.ExponentialBackoff``, with the jitter drawn from a seeded
    ``random.Random`` instead of ``ThreadLocalRandom``::

        term = initial * multiplier ** min(attempts, expMax)
        backoff = min(long(uniform[1 - jitter, 1 + jitter) * term), max)

    ``expMax = log(max / max(initial, 1)) / log(multiplier)`` when ``max > initial``, else 0
    (then every attempt is ``initial`` -- or ``max`` if that is smaller -- without jitter); the
    term reaches ``max`` and the jitter never takes the result above ``max`` (R-7).  Java
    divides doubles: a multiplier of 1 makes ``expMax`` infinite (a constant ``initial``), not
    an error."""

    def __init__(self, initial_interval: int, multiplier: int, max_interval: int,
                 jitter: float, rng: random.Random):
        self.initial_interval = min(max_interval, initial_interval)
        self.multiplier = multiplier
        self.max_interval = max_interval
        self.jitter = jitter
        self.rng = rng
        if max_interval > initial_interval:
            log_ratio = math.log(max_interval / max(initial_interval, 1))     # >= 0 here
            log_multiplier = math.log(multiplier)
            # Java divides doubles: x / 0.0 is Infinity, 0.0 / 0.0 NaN (neither equals 0)
            self.exp_max = (log_ratio / log_multiplier if log_multiplier != 0
                            else math.inf if log_ratio > 0 else math.nan)
        else:
            self.exp_max = 0.0

    def backoff(self, attempts: int) -> int:
        if self.exp_max == 0:
            return self.initial_interval
        exp = min(attempts, self.exp_max)
        term = self.initial_interval * math.pow(self.multiplier, exp)
        if self.jitter < 2.2250738585072014e-308:          # Double.MIN_NORMAL
            factor = 1.0
        else:
            # ThreadLocalRandom.nextDouble(origin, bound) = origin + r * (bound - origin), after
            # RandomSupport.checkRange: a jitter so small that 1 - jitter and 1 + jitter are both
            # 1.0 is an IllegalArgumentException in Java, raised before any draw.
            origin, bound = 1 - self.jitter, 1 + self.jitter
            if not (origin < bound and bound - origin < math.inf):
                raise ValueError("bound must be greater than origin")
            factor = origin + self.rng.random() * (bound - origin)
            if factor >= bound:
                factor = math.nextafter(bound, 0.0)
        value = int(factor * term)                          # Java's (long) cast truncates
        return self.max_interval if value > self.max_interval else value


def registration_backoff(rng: random.Random) -> ExponentialBackoff:
    """``resendExponentialBackoff`` of ControllerRegistrationManager (R-7)."""
    return ExponentialBackoff(100, 2, 120000, 0.02, rng)


class ControllerChannel(Protocol):
    """The controller channel the manager sends through (``NodeToControllerChannelManager``)."""

    def enqueue(self, request: ChannelRequest, now_ms: int) -> None: ...


def listener_info(endpoints: Iterable[Endpoint], local_host: str | None = None,
                  bound_ports: Mapping[str, int] | None = None, *,
                  resolve: bool = True) -> tuple[dict, ...]:
    """``ListenerInfo`` of advertised endpoints as a process run registers them (EP-1): a
    wildcard host -- null or blank, ``withWildcardHostnamesResolved``; an explicit ``0.0.0.0``
    or ``::`` is kept as written -- becomes the local canonical host name (EP-3), and port 0
    the port this run bound for the listener of that name (``withEphemeralPortsCorrected``,
    ``SocketServer.boundPort``: EP-4, EP-5; ControllerServer L167-171, BrokerServer
    L257-260).  A non-zero port is kept as configured.  Computed once, at start-up.
    ``resolve`` False: as configured (``configured_listener_info``)."""
    if not resolve:
        return configured_listener_info(endpoints)
    out = []
    for e in endpoints:
        host = e.host if e.host is not None and e.host.strip(JAVA_BLANK) else local_host
        port = e.port if e.port != 0 else (bound_ports or {}).get(e.listener_name, 0)
        out.append({"Name": e.listener_name, "Host": host, "Port": port,
                    "SecurityProtocol": SECURITY_PROTOCOL_IDS[e.security_protocol]})
    return tuple(out)


def configured_listener_info(endpoints: Iterable[Endpoint]) -> tuple[dict, ...]:
    """The advertised endpoints as configured, unresolved: a blank host stays blank (the
    empty string, which the wire can carry where Java's null could not: the
    NullPointerException of KAFKA-15458) and port 0 stays 0.  What a node registered before
    KAFKA-15458 (EP-6; the registers-unresolved-endpoints design)."""
    return tuple({"Name": e.listener_name, "Host": e.host or "", "Port": e.port,
                  "SecurityProtocol": SECURITY_PROTOCOL_IDS[e.security_protocol]}
                 for e in endpoints)


class ControllerRegistrationManager:
    """One controller process run's registration manager (R-1 to R-11).

    ``kafka_drops_check_while_pending`` picks what the ``maybeSendControllerRegistration``
    event does when it finds an RPC pending.  False (the default, like ``model.Design()``, and
    the fix proposed in docs/findings/registration-no-recheck.md): the event stays queued and
    runs once the RPC completes, as KIP-919's "If it is not, it will re-register" needs.  True:
    Kafka's ControllerRegistrationManager as read at 3.7.0, 3.7.1, 3.8.0 and trunk 1eb7644
    (2024-10-25) -- it logs "waiting for the previous RPC to complete" and is gone, and success
    only counts (the model's ``registration-no-recheck-after-success`` finding; in
    ``impl.cluster`` the bug of that name).  ``pending_stuck_on_timeout`` reproduces KAFKA-20247
    (``onTimeout`` without clearing ``pendingRpc``, as at those revisions too); ``trusts_response``
    the seeded flaw registration-trusts-response; ``registers_unresolved_endpoints`` sends the
    listeners it is given without R-5's serialization check, as the manager did before
    KAFKA-15458 (it built them from the configuration: EP-6)."""

    def __init__(self, node_id: int, rng: random.Random, listeners: Iterable[Mapping],
                 supported_features: Mapping[str, tuple[int, int]] | None = None,
                 zk_migration_ready: bool = False, *,
                 kafka_drops_check_while_pending: bool = False,
                 pending_stuck_on_timeout: bool = False, trusts_response: bool = False,
                 registers_unresolved_endpoints: bool = False):
        self.node_id = node_id
        self.rng = rng
        self.incarnation_id = random_incarnation_id(rng)            # per process start
        self.listeners = tuple(dict(listener) for listener in listeners)
        self.supported_features = dict(supported_features or
                                       {METADATA_VERSION: (MINIMUM_KRAFT_VERSION,
                                                           LATEST_PRODUCTION_MV)})
        self.zk_migration_ready = zk_migration_ready
        self.backoff = registration_backoff(rng)
        self.kafka_drops_check_while_pending = kafka_drops_check_while_pending
        self.pending_stuck_on_timeout = pending_stuck_on_timeout
        self.trusts_response = trusts_response
        self.registers_unresolved_endpoints = registers_unresolved_endpoints
        # ControllerRegistrationManager state
        self.pending_rpc = False
        self.successful_rpcs = 0
        self.failed_rpcs = 0
        self.metadata_version = MINIMUM_KRAFT_VERSION
        self.registered_in_log = False
        self.channel: ControllerChannel | None = None
        # its event queue, as far as it matters: a queued maybeSendControllerRegistration
        # event, and the deferred one of the backoff timer (one tag: a new one replaces it)
        self.send_requested = False
        self.retry_at_ms: int | None = None
        self.last_error: str | None = None
        self.requests_sent: list[dict] = []

    # -- events ------------------------------------------------------------------------------

    def start(self, channel: ControllerChannel) -> None:
        """R-2: record the channel and queue ``maybeSendControllerRegistration``."""
        self.channel = channel
        self.send_requested = True

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """R-8, the registration part of ``node_replays_record``: an event is queued only for a
        features change or a change to this node id's controller registration.  It updates
        metadata.version, sets ``registered_in_log`` from the registration for this id (absent
        or another incarnation: not registered, R-10), and queues the send check."""
        mine = self.node_id in delta.changed_controllers
        if not delta.features_changed and not mine:
            return
        if delta.features_changed:
            self.metadata_version = image.metadata_version
        if mine:
            current = image.controllers.get(self.node_id)
            if self.trusts_response:
                pass                    # the seeded flaw never re-checks the log
            elif current is None or current["IncarnationId"] != self.incarnation_id:
                self.registered_in_log = False
            else:
                self.registered_in_log = True
        self.send_requested = True

    def next_deadline_ms(self) -> int | None:
        """When the backoff timer fires, if one is set (the simulator advances time to it)."""
        return self.retry_at_ms

    def check_due(self, now_ms: int) -> bool:
        """Is ``controller_sends_registration`` enabled at ``now_ms``?"""
        due = self.retry_at_ms is not None and now_ms >= self.retry_at_ms
        if not (self.send_requested or due):
            return False
        return not (self.pending_rpc and not self.kafka_drops_check_while_pending)

    def controller_sends_registration(self, now_ms: int) -> bool | None:
        """The queued ``maybeSendControllerRegistration`` event (or the backoff timer's) runs.
        None: not enabled (nothing queued or due, or -- KIP-919 intent -- an RPC is pending and
        the event waits).  Otherwise it sends if not registered in the log, a channel is set,
        metadata.version >= 3.7-IV0 and no RPC is pending (R-3), else it only logs; the return
        value says whether a ControllerRegistrationRequest was enqueued (R-4)."""
        if not self.check_due(now_ms):
            return None
        self.send_requested = False
        self.retry_at_ms = None
        if self.registered_in_log:
            return False                # "controller is already registered"
        if self.channel is None:
            return False                # "the channel manager has not been initialized"
        if self.metadata_version < MV_3_7_IV0:
            return False                # "the metadata version ... does not support KIP-919"
        if self.pending_rpc:
            return False                # "waiting for the previous RPC to complete"
        return self._send_controller_registration(now_ms)

    def request_data(self) -> dict:
        """R-4: {ControllerId, IncarnationId, Listeners (ListenerInfo order), Features,
        ZkMigrationReady}."""
        return {"ControllerId": self.node_id, "IncarnationId": self.incarnation_id,
                "ZkMigrationReady": self.zk_migration_ready,
                "Listeners": [dict(listener) for listener in self.listeners],
                "Features": [{"Name": name, "MinSupportedVersion": lo, "MaxSupportedVersion": hi}
                             for name, (lo, hi) in sorted(self.supported_features.items())]}

    def _send_controller_registration(self, now_ms: int) -> bool:
        # ListenerInfo.toControllerRegistrationRequest checks each listener in order, the
        # port (checkPortIsSerializable) before the host (checkHostIsSerializable); the
        # RuntimeException ends the event and nothing is sent.  Before KAFKA-15458 nothing was
        # checked.
        for listener in () if self.registers_unresolved_endpoints else self.listeners:
            problem = unserializable_endpoint(listener.get("Port"), listener.get("Host"))
            if problem is not None:
                self.last_error = problem
                return False
        data = self.request_data()
        incarnation = self.incarnation_id
        request = ChannelRequest(
            api_key=CONTROLLER_REGISTRATION,
            build=lambda version: dict(data),
            on_response=lambda code, body, t: self.controller_handles_registration_response(
                code, body, t),
            on_timeout=lambda t: self.on_timeout(t),
            description=f"ControllerRegistrationRequest(controller {self.node_id})",
            tag=incarnation)
        self.channel.enqueue(request, now_ms)
        self.pending_rpc = True
        self.requests_sent.append(data)
        return True

    def controller_handles_registration_response(self, error_code: int, body: Mapping | None,
                                                 now_ms: int) -> None:
        """R-6: clear ``pending_rpc``; a transport error (authentication, version mismatch,
        no body) or a non-zero ErrorCode backs off (R-7); ErrorCode 0 only counts.  (The
        channel retries NOT_CONTROLLER itself, F-21.4; one that reaches here is an error.)"""
        self.pending_rpc = False
        # a response without a usable body counts as UNKNOWN_SERVER_ERROR
        code = error_code or (UNKNOWN_SERVER_ERROR if body is None
                              else body.get("ErrorCode", NONE))
        if code != NONE:
            self.last_error = f"registration failed with error {code}"
            self._schedule_after_failure(now_ms)
            return
        self.successful_rpcs += 1
        self.failed_rpcs = 0
        if self.trusts_response:
            self.registered_in_log = True

    def on_timeout(self, now_ms: int) -> None:
        """The channel dropped the request after its 5 s retry timeout: the failure path (R-6),
        clearing ``pending_rpc`` (the KAFKA-20247 fix; the bug kept it set)."""
        if not self.pending_stuck_on_timeout:
            self.pending_rpc = False
        self.last_error = "the channel manager timed out before sending the request"
        self._schedule_after_failure(now_ms)

    def _schedule_after_failure(self, now_ms: int) -> int:
        """R-7: the delay from ``failed_rpcs`` *before* incrementing it, then a deferred
        ``maybeSendControllerRegistration`` (replacing any earlier one)."""
        delay = self.backoff.backoff(self.failed_rpcs)
        self.failed_rpcs += 1
        self.retry_at_ms = now_ms + delay
        return delay

