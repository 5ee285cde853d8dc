"""``NodeToControllerChannelManager`` and its request thread, sans I/O (docs/rules.md 1.5, F-14 to
F-21, and the ApiVersions handshake behind F-35).

A broker (or a controller, for KIP-919 registrations) talks to the active controller through one
of these: a FIFO deque of ``ChannelRequest`` items, a cached controller node, and a
``NetworkClient`` with at most one request in flight.  Kafka runs it as a thread; here every step
of that thread is a method the caller drives with the simulated clock ``now_ms``:

- ``enqueue`` (``sendRequest``, F-14, F-18): stamps ``created_ms``; the retry timeout counts from
  here, not from the send (F-17, F-19);
- ``discover_controller`` (``doWork`` with no cached controller, F-15, F-20): ask the
  ``ControllerNodeProvider``; with no answer the thread polls with a 100 ms backoff;
- ``next_send`` (``generateRequests`` + ``NetworkClient.send``, F-16, F-19): the head of the queue
  goes to the cached controller, built at the version negotiated with the controller's
  ApiVersions; a fresh connection first exchanges ApiVersions (``NetworkClient`` with
  ``discoverBrokerVersions``);
- ``expire`` (F-19 and the NetworkClient request timeout): an in-flight request older than
  ``min(controller.socket.timeout.ms, retryTimeoutMs)`` is a disconnect (F-21.3); a queued item
  with ``now - created >= retryTimeoutMs`` is dropped and its ``on_timeout`` runs;
- ``on_response`` (``handleResponse``, F-21): NOT_CONTROLLER anywhere in ``errorCounts`` forgets
  the controller and re-queues the item AT THE FRONT; otherwise the callback completes.  A
  response that does not parse (truncated, garbage, another correlation id) is not retried at
  all: it ends the process (``FatalExitError``, see ``on_response``);
- ``on_disconnect`` (F-21.3) and ``on_authentication_failure`` (F-21.1);
- ``poll`` = one turn of ``doWork`` (discover, expire, send) for a free-running simulator, and
  ``next_deadline_ms`` = when that thread would wake up next.

Each item's ``extra`` counts its ``sends`` and ``requeues`` (F-21.3/4) for observation.

``ChannelRequest.on_response(error_code, body, now_ms)`` gets the response's top-level
``ErrorCode`` (0 if it has none) and the decoded body; ``body`` is ``None`` when the channel
completes without a response: an authentication failure (F-21.1, code SASL_AUTHENTICATION_FAILED)
or a version the controller does not support (F-21.2, code UNSUPPORTED_VERSION) -- Kafka's
``ClientResponse.authenticationException`` / ``versionMismatch``.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import NoReturn
from collections.abc import Callable, Iterable, Mapping

from impl.context import ChannelRequest, ControllerInfo, OutboundRequest
from impl.protocol import (API_KEYS, ProtocolError, encode_request, encode_response, get_schema,
                           parse_request_header, parse_response)
from impl.protocol.api_keys import API_VERSIONS
from impl.protocol.codec import read_message
# the Errors.java codes this module produces or reacts to (docs/rules.md section 5)
from impl.protocol.errors import (NONE, NOT_CONTROLLER, SASL_AUTHENTICATION_FAILED,
                                  UNSUPPORTED_VERSION)
from impl.protocol.primitives import Reader
from impl.protocol.wire import RESPONSE_HEADER

# docs/rules.md section 6, "Key numbers".
KRAFT_FORWARDING_RETRY_TIMEOUT_MS = 60_000     # BrokerServer L248
ZK_FORWARDING_RETRY_TIMEOUT_MS = 30_000        # request.timeout.ms default, KafkaServer L358
REGISTRATION_RETRY_TIMEOUT_MS = 5_000          # ControllerServer L383-390
CONTROLLER_SOCKET_TIMEOUT_MS = 30_000          # controller.socket.timeout.ms default
RECONNECT_BACKOFF_MS = 50                      # NodeToControllerChannelManager L184-185
NO_CONTROLLER_BACKOFF_MS = 100                 # doWork: super.pollOnce(100), L393

# SaslClientAuthenticator.MIN_RESERVED_CORRELATION_ID = Integer.MAX_VALUE - 7
_MIN_RESERVED_CORRELATION_ID = 2 ** 31 - 1 - 7
_INT_MIN = -2 ** 31

CLIENT_SOFTWARE_NAME = "apache-kafka-java"
CLIENT_SOFTWARE_VERSION = "4.0.0-SNAPSHOT"

ApiRanges = Mapping[int, "tuple[int, int]"]


class IllegalStateError(RuntimeError):
    """Kafka's ``IllegalStateException``."""


class FatalExitError(RuntimeError):
    """Kafka's ``FatalExitError``: the request thread hit an exception nobody handles and the
    process exits with ``status_code`` (1).

    ``InterBrokerSendThread.pollOnce`` catches every ``Throwable`` that escapes
    ``NetworkClient.poll`` / ``send`` (other than ``FatalExitError`` and a shutdown's
    ``DisconnectException`` / ``InterruptedException``), logs "unhandled exception caught in
    InterBrokerSendThread" and throws ``new FatalExitError()``; ``ShutdownableThread.run``
    catches it and calls ``Exit.exit(1)`` (apache/kafka 3.7-3.9 and trunk; 2.8-3.6 had the
    same code in ``InterBrokerSendThread.scala``).  The channel raises it and is dead from then
    on (``exit_status``); what the process does next -- it stops -- is the caller's business."""

    def __init__(self, message: str, status_code: int = 1) -> None:
        super().__init__(f"unhandled exception caught in InterBrokerSendThread: {message}")
        self.status_code = status_code


def own_api_ranges(keys: Iterable[int] | None = None) -> dict[int, tuple[int, int]]:
    """The (min, max) versions this node supports for ``keys`` (default: every API it knows),
    from ``ApiKeys`` -- what its ApiVersionsResponse lists."""
    chosen = API_KEYS if keys is None else {k: API_KEYS[k] for k in keys}
    return {k: (api.valid_versions.lowest, api.valid_versions.highest)
            for k, api in chosen.items()}


def error_counts(body: Mapping | None) -> dict[int, int]:
    """``AbstractResponse.errorCounts``: every ``ErrorCode`` in the response, at any depth
    (CreateTopics counts one per topic; an EnvelopeResponse only its own, F-21.4: the inner
    response is opaque bytes)."""
    counts: dict[int, int] = {}

    def walk(value) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                if key == "ErrorCode" and isinstance(item, int):
                    counts[item] = counts.get(item, 0) + 1
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(body)
    return counts


def negotiate_version(api_key: int, ours: tuple[int, int] | None,
                      theirs: tuple[int, int] | None) -> int | None:
    """``NodeApiVersions.latestUsableVersion``: the highest version both sides support, None
    if the ranges do not overlap or one side lacks the API (a version mismatch, F-21.2)."""
    if ours is None or theirs is None:
        return None
    low, high = max(ours[0], theirs[0]), min(ours[1], theirs[1])
    return high if low <= high else None


@dataclass(frozen=True)
class InFlight:
    """What ``NetworkClient.inFlightRequests`` holds for the controller connection (max one,
    F-16).  ``item`` is None for the ApiVersions handshake of a new connection."""
    item: ChannelRequest | None
    correlation_id: int
    header: dict
    sent_ms: int
    destination: ControllerInfo


class ControllerChannel:
    """``NodeToControllerChannelManager`` + ``NodeToControllerRequestThread`` (F-14 to F-21).

    ``retry_timeout_ms``: 60000 for a KRaft broker's forwarding channel, request.timeout.ms
    (30000) on a ZK broker, 5000 for the controller registration channel (F-17).
    ``local_api_versions``: this node's own (min, max) per API, used to negotiate with the
    controller.  ``controller_api_versions``: optional shortcut that supplies the controller's
    ApiVersions at connect time instead of exchanging ApiVersionsRequest/Response on the wire
    (the model's abstraction: it learns them as part of ``channel_sends_request``)."""

    def __init__(self, controller_provider: Callable[[], ControllerInfo | None], *,
                 retry_timeout_ms: int,
                 local_api_versions: ApiRanges | None = None,
                 controller_socket_timeout_ms: int = CONTROLLER_SOCKET_TIMEOUT_MS,
                 reconnect_backoff_ms: int = RECONNECT_BACKOFF_MS,
                 no_controller_backoff_ms: int = NO_CONTROLLER_BACKOFF_MS,
                 client_id: str = "",
                 controller_api_versions: Callable[[ControllerInfo], ApiRanges | None]
                 | None = None,
                 started: bool = True) -> None:
        self._provider = controller_provider
        self.retry_timeout_ms = retry_timeout_ms
        # F-16: NetworkClient request timeout = min(controller.socket.timeout.ms, retryTimeoutMs).
        self.request_timeout_ms = min(controller_socket_timeout_ms, retry_timeout_ms)
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.no_controller_backoff_ms = no_controller_backoff_ms
        self.client_id = client_id
        self._local = dict(own_api_ranges() if local_api_versions is None else local_api_versions)
        self._versions_shortcut = controller_api_versions
        self._started = started
        self._queue: deque[ChannelRequest] = deque()
        self._inflight: InFlight | None = None
        self._cached: ControllerInfo | None = None
        # NetworkClient's ApiVersions: per node, kept while the connection is up.
        self._node_versions: dict[int, dict[int, tuple[int, int]]] = {}
        # The ApiVersionsRequest version of the current connection's handshake, per node: absent
        # = the latest this node knows (a new connection's ``ApiVersionsRequest.Builder()``);
        # set by a KIP-511 UNSUPPORTED_VERSION answer, gone with the connection.
        self._handshake_retry: dict[int, int] = {}
        self.exit_status: int | None = None        # FatalExitError's status: the thread died
        self._last_disconnect_ms: dict[int, int] = {}
        self._no_controller_since: int | None = None
        self._next_correlation_id = 0
        self._now_ms = 0

    # -- observation ---------------------------------------------------------------------

    @property
    def queue(self) -> tuple[ChannelRequest, ...]:
        return tuple(self._queue)

    @property
    def inflight(self) -> ChannelRequest | None:
        """The item sent and awaiting its response (None during the ApiVersions handshake)."""
        return self._inflight.item if self._inflight else None

    @property
    def inflight_request(self) -> InFlight | None:
        return self._inflight

    @property
    def cached_controller(self) -> ControllerInfo | None:
        return self._cached

    @property
    def controller_api_versions(self) -> dict[int, tuple[int, int]] | None:
        """``controllerApiVersions()``: the active controller's ApiVersions, known only while a
        connection to it is up (F-35)."""
        if self._cached is None:
            return None
        versions = self._node_versions.get(self._cached.node_id)
        return dict(versions) if versions is not None else None

    def queue_length(self) -> int:
        """The ``QueueLength`` gauge of ForwardingManagerMetrics (F-14)."""
        return len(self._queue)

    # -- steps ---------------------------------------------------------------------------

    def start(self) -> None:
        self._started = True

    def enqueue(self, request: ChannelRequest, now_ms: int) -> None:
        """``sendRequest``: F-18 refuses before ``start``; F-17 the deadline counts from now."""
        if not self._started:
            raise IllegalStateError("Cannot enqueue a request if the request thread is not "
                                    "running")
        self._tick(now_ms)
        request.created_ms = now_ms
        self._queue.append(request)
        # NodeToControllerRequestThread.enqueue (core/.../NodeToControllerChannelManager.scala at
        # apache/kafka 1eb7644) calls wakeup() only when an active controller is known; a thread
        # in its 100 ms no-controller backoff (F-20) sleeps it out, new request or not.

    def discover_controller(self, now_ms: int) -> ControllerInfo | None:
        """F-20: with no cached controller, ask the provider (F-15) and cache its answer.
        Returns the newly cached controller, or None (cached already, or none known: the thread
        then backs off 100 ms)."""
        self._tick(now_ms)
        if self._cached is not None or self.exit_status is not None:
            return None
        info = self._provider()
        if info is None:
            self._no_controller_since = now_ms       # the thread sleeps up to 100 ms
            return None
        self._cached = info
        self._no_controller_since = None
        return info

    def expire(self, now_ms: int, max_items: int | None = None) -> list[ChannelRequest]:
        """The network request timeout of the in-flight request, then F-19 on the queue.

        An in-flight request unanswered for more than ``request_timeout_ms``
        (``InFlightRequests.hasExpiredRequest``: ``now - send > timeout``) makes NetworkClient
        close the connection; the response handler sees a disconnect (F-21.3) and puts the item
        back at the front.  Then every queued item with ``now - created >= retry_timeout_ms`` is
        removed and its ``on_timeout`` runs (``generateRequests``).  Returns those items.
        ``max_items``: remove at most that many, in queue order -- one pass of
        ``generateRequests`` taken as that many steps, the rest expiring on the next call."""
        self._tick(now_ms)
        if self.exit_status is not None:
            return []
        flight = self._inflight
        if flight is not None and now_ms - flight.sent_ms > self.request_timeout_ms:
            self._disconnect(now_ms)
        expired = [item for item in self._queue
                   if now_ms - item.created_ms >= self.retry_timeout_ms][:max_items]
        for item in expired:
            self._queue.remove(item)
            item.on_timeout(now_ms)
        return expired

    def next_send(self, now_ms: int) -> OutboundRequest | None:
        """Send the head of the queue to the cached controller (F-16: one in flight, FIFO).

        Not before ``expire`` has removed expired items (``generateRequests`` never sends one).
        A new connection first sends ApiVersionsRequest; the item waits in the queue until the
        controller's versions are known.  A request the controller cannot take at any common
        version completes with a version mismatch (F-21.2) and nothing is sent; so does one the
        codec cannot write at the negotiated version (a non-default field the version lacks:
        Kafka's ``UnsupportedVersionException`` from ``builder.build`` / ``toSend``, caught in
        ``NetworkClient.doSend``).  Any other failure to build the request escapes ``doSend`` and
        ends the process (``FatalExitError``)."""
        self._tick(now_ms)
        info = self._cached
        if self._inflight is not None or info is None or not self._queue \
                or self.exit_status is not None:
            return None
        head = self._queue[0]
        if now_ms - head.created_ms >= self.retry_timeout_ms:
            return None
        last = self._last_disconnect_ms.get(info.node_id)
        if last is not None and now_ms - last < self.reconnect_backoff_ms:
            return None                                       # reconnect.backoff.ms (F-16)
        versions = self._node_versions.get(info.node_id)
        if versions is None and self._versions_shortcut is not None:
            learned = self._versions_shortcut(info)
            if learned is not None:
                versions = self._node_versions[info.node_id] = dict(learned)
        if versions is None:
            return self._send_api_versions(info, now_ms)
        self._queue.popleft()
        version = negotiate_version(head.api_key, self._local.get(head.api_key),
                                    versions.get(head.api_key))
        if version is None:
            head.on_response(UNSUPPORTED_VERSION, None, now_ms)          # F-21.2
            return None
        header = {"RequestApiKey": head.api_key, "RequestApiVersion": version,
                  "CorrelationId": self._correlation_id(), "ClientId": self.client_id}
        try:
            payload = encode_request(header, head.build(version))
        except ProtocolError as error:
            if error.code == UNSUPPORTED_VERSION:
                # NetworkClient.doSend: catch (UnsupportedVersionException) -> a ClientResponse
                # with versionMismatch, handled as F-21.2.
                head.on_response(UNSUPPORTED_VERSION, None, now_ms)
                return None
            self._exit(error)
        self._inflight = InFlight(head, header["CorrelationId"], header, now_ms, info)
        head.extra["sends"] = head.extra.get("sends", 0) + 1
        return OutboundRequest(info.node_id, info.listener_name, payload,
                               header["CorrelationId"], head.api_key, version)

    def on_response(self, correlation_id: int, response_bytes: bytes, now_ms: int) -> bool:
        """A response on the controller connection.  Returns False if it answers nothing in
        flight (a stale response of a closed connection, dropped as the model drops it).

        F-21, in order: NOT_CONTROLLER in ``errorCounts`` -> disconnect, forget the controller,
        re-queue at the front (4); otherwise the callback completes (5).

        A response that cannot be parsed -- truncated, garbage, or a header whose correlation
        id is not the request's -- is none of these: ``NetworkClient.handleCompletedReceives``
        has already taken the request off the in-flight list (``completeNext``) when
        ``parseResponse`` throws (``SchemaException``, ``CorrelationIdMismatchException``), the
        exception escapes ``NetworkClient.poll``, and ``InterBrokerSendThread.pollOnce`` turns it
        into ``FatalExitError``: the item is neither completed nor re-queued and the process
        exits (raised here as ``FatalExitError``).  The same holds for the ApiVersions
        handshake's response (after ``ApiVersionsResponse.parse``'s fallback to v0)."""
        self._tick(now_ms)
        flight = self._inflight
        if flight is None or flight.correlation_id != correlation_id:
            return False
        if flight.item is None:
            self._handle_api_versions(flight, response_bytes, now_ms)
            return True
        try:
            body = parse_response(response_bytes, flight.header)
        except ProtocolError as error:
            self._inflight = None                   # inFlightRequests.completeNext
            self._exit(error)
        if NOT_CONTROLLER in error_counts(body):                        # F-21.4
            self._disconnect(now_ms)
            return True
        self._inflight = None
        flight.item.on_response(body.get("ErrorCode", NONE), body, now_ms)   # F-21.5
        return True

    def on_disconnect(self, now_ms: int) -> ChannelRequest | None:
        """F-21.3: the connection to the controller broke (a lost message, the peer crashed or
        closed it, F-23/F-24): forget the controller and put the in-flight item back at the
        front.  Returns the re-queued item."""
        self._tick(now_ms)
        return self._disconnect(now_ms)

    def on_authentication_failure(self, now_ms: int) -> ChannelRequest | None:
        """F-21.1: disconnect, forget the controller and complete the callback (no retry)."""
        self._tick(now_ms)
        flight = self._inflight
        if flight is None:
            return None
        self._drop_connection(now_ms)
        self._inflight = None
        if flight.item is not None:
            flight.item.on_response(SASL_AUTHENTICATION_FAILED, None, now_ms)
        return flight.item

    def poll(self, now_ms: int) -> list[OutboundRequest]:
        """One turn of the request thread (``doWork``): with no cached controller ask the provider
        (F-20); then ``generateRequests``: expire (F-19, plus the network timeout), send one
        (F-16)."""
        self.discover_controller(now_ms)
        self.expire(now_ms)
        sent = self.next_send(now_ms)
        return [sent] if sent is not None else []

    def next_deadline_ms(self) -> int | None:
        """When the request thread has something to do next: now if it can send, the in-flight
        request's network timeout, the earliest retry deadline in the queue, the reconnect
        backoff, or the 100 ms no-controller backoff.  None when idle or dead."""
        if self.exit_status is not None:
            return None
        deadlines = []
        flight = self._inflight
        if flight is not None:
            deadlines.append(flight.sent_ms + self.request_timeout_ms + 1)
        if self._queue:
            deadlines.append(min(i.created_ms for i in self._queue) + self.retry_timeout_ms)
            if self._cached is None:
                since = self._no_controller_since
                deadlines.append(self._now_ms if since is None
                                 else since + self.no_controller_backoff_ms)
            elif flight is None:
                last = self._last_disconnect_ms.get(self._cached.node_id)
                ready = self._now_ms if last is None else last + self.reconnect_backoff_ms
                deadlines.append(max(self._now_ms, ready))
        return min(deadlines) if deadlines else None

    # -- internals -------------------------------------------------------------------------

    def _tick(self, now_ms: int) -> None:
        self._now_ms = max(self._now_ms, now_ms)

    def _exit(self, error: Exception) -> NoReturn:
        """``InterBrokerSendThread.pollOnce``: an unhandled exception becomes ``FatalExitError``;
        ``ShutdownableThread.run`` then calls ``Exit.exit(1)``."""
        fatal = FatalExitError(str(error))
        self.exit_status = fatal.status_code
        raise fatal from error

    def _correlation_id(self) -> int:
        """``NetworkClient.nextCorrelationId``: 0, 1, ...; the top eight ints are reserved for
        SASL requests (``SaslClientAuthenticator.isReserved``: ``id >= Integer.MAX_VALUE - 7``),
        so after ``Integer.MAX_VALUE - 8`` comes ``MAX_RESERVED_CORRELATION_ID + 1``, which
        overflows to ``Integer.MIN_VALUE``, and the count goes on through the negatives."""
        if self._next_correlation_id >= _MIN_RESERVED_CORRELATION_ID:
            self._next_correlation_id = _INT_MIN
        cid = self._next_correlation_id
        self._next_correlation_id = cid + 1
        return cid

    def _drop_connection(self, now_ms: int) -> None:
        """``networkClient.disconnect`` + ``updateControllerAddress(null)`` for the connection of
        the request in flight (the only callers have one): the node's ApiVersions go with the
        connection, and reconnecting waits ``reconnect.backoff.ms``."""
        node = self._inflight.destination.node_id
        self._node_versions.pop(node, None)
        self._handshake_retry.pop(node, None)
        self._last_disconnect_ms[node] = now_ms
        self._cached = None

    def _disconnect(self, now_ms: int) -> ChannelRequest | None:
        flight = self._inflight
        if flight is None:
            # An idle connection closing forgets its ApiVersions, not the controller; the next
            # connection waits reconnect.backoff.ms all the same (NetworkClient
            # .processDisconnection -> ClusterConnectionStates.disconnected).
            if self._cached is not None:
                node = self._cached.node_id
                self._node_versions.pop(node, None)
                self._handshake_retry.pop(node, None)
                self._last_disconnect_ms[node] = now_ms
            return None
        self._drop_connection(now_ms)
        self._inflight = None
        if flight.item is not None:
            extra = flight.item.extra
            extra["requeues"] = extra.get("requeues", 0) + 1
            self._queue.appendleft(flight.item)                  # requestQueue.putFirst
        return flight.item

    def _send_api_versions(self, info: ControllerInfo, now_ms: int) -> OutboundRequest:
        """``handleInitiateApiVersionRequests``: a new connection asks at the latest version this
        node knows (``ApiVersionsRequest.Builder()``, put by ``handleConnections``), a KIP-511
        retry at the version the controller named."""
        version = self._handshake_retry.get(info.node_id,
                                            self._local.get(API_VERSIONS, (0, 0))[1])
        header = {"RequestApiKey": API_VERSIONS, "RequestApiVersion": version,
                  "CorrelationId": self._correlation_id(), "ClientId": self.client_id}
        body = {"ClientSoftwareName": CLIENT_SOFTWARE_NAME,
                "ClientSoftwareVersion": CLIENT_SOFTWARE_VERSION}
        payload = encode_request(header, body)
        self._inflight = InFlight(None, header["CorrelationId"], header, now_ms, info)
        return OutboundRequest(info.node_id, info.listener_name, payload,
                               header["CorrelationId"], API_VERSIONS, version)

    def _handle_api_versions(self, flight: InFlight, data: bytes, now_ms: int) -> None:
        """``NetworkClient.handleApiVersionsResponse`` (apache/kafka 3.7-3.9, trunk).

        An error answer to a request of version > 0 that is UNSUPPORTED_VERSION (KIP-511: the
        server replies at v0 with its own ApiVersions range) is retried on the same connection
        at the ``MaxVersion`` the server lists for ApiVersions, or at v0 if it lists none
        (``nodesNeedingApiVersionsFetch.put(node, new Builder(maxApiVersion))``).  Any other
        error, or any error to a v0 request, closes the connection (``selector.close`` +
        ``processDisconnection``).  A response that does not parse even as v0 ends the process,
        as in ``on_response``."""
        node = flight.destination.node_id
        try:
            body = parse_api_versions_response(data, flight.header)
        except ProtocolError as error:
            self._inflight = None                   # inFlightRequests.completeNext
            self._exit(error)
        ranges = {entry["ApiKey"]: (entry["MinVersion"], entry["MaxVersion"])
                  for entry in body["ApiKeys"]}
        if body["ErrorCode"] != NONE:
            if flight.header["RequestApiVersion"] == 0 \
                    or body["ErrorCode"] != UNSUPPORTED_VERSION:
                self._disconnect(now_ms)
                return
            self._inflight = None
            # the next send repeats the handshake at that version, on the same connection
            self._handshake_retry[node] = ranges.get(API_VERSIONS, (0, 0))[1]
            return
        self._inflight = None
        self._handshake_retry.pop(node, None)
        self._node_versions[node] = ranges


def parse_api_versions_response(data: bytes, request_header: Mapping) -> dict:
    """``ApiVersionsResponse.parse``: read at the request's version, and if that fails read
    again at v0 -- a server that does not support the request's version answers at v0 with
    UNSUPPORTED_VERSION (KIP-511; the response header is always v0)."""
    try:
        return parse_response(data, request_header)
    except ProtocolError:
        if request_header["RequestApiVersion"] == 0:
            raise
        reader = Reader(data)
        header = read_message(reader, RESPONSE_HEADER, 0)
        if header["CorrelationId"] != request_header["CorrelationId"]:
            raise
        return read_message(reader, get_schema("ApiVersionsResponse"), 0)


def api_versions_response(request_bytes: bytes, ranges: ApiRanges) -> bytes:
    """The controller's answer to an ApiVersionsRequest (``ApiVersionsResponse``): its ranges at
    the request's version; for a version it does not support, UNSUPPORTED_VERSION at v0 with
    only the ApiVersions range (KIP-511)."""
    header, _ = parse_request_header(request_bytes)
    version = header["RequestApiVersion"]
    correlation_id = header["CorrelationId"]
    own = ranges.get(API_VERSIONS, (0, 0))
    if not own[0] <= version <= own[1]:
        body = {"ErrorCode": UNSUPPORTED_VERSION,
                "ApiKeys": [{"ApiKey": API_VERSIONS, "MinVersion": own[0],
                             "MaxVersion": own[1]}]}
        return encode_response(API_VERSIONS, 0, correlation_id, body)
    body = {"ErrorCode": NONE,
            "ApiKeys": [{"ApiKey": key, "MinVersion": low, "MaxVersion": high}
                        for key, (low, high) in sorted(ranges.items())]}
    return encode_response(API_VERSIONS, version, correlation_id, body)


__all__ = [
    "ControllerChannel", "FatalExitError", "InFlight", "IllegalStateError",
    "api_versions_response",
    "error_counts", "negotiate_version", "own_api_ranges", "parse_api_versions_response",
    "KRAFT_FORWARDING_RETRY_TIMEOUT_MS", "ZK_FORWARDING_RETRY_TIMEOUT_MS",
    "REGISTRATION_RETRY_TIMEOUT_MS", "CONTROLLER_SOCKET_TIMEOUT_MS", "RECONNECT_BACKOFF_MS",
    "NO_CONTROLLER_BACKOFF_MS",
]
