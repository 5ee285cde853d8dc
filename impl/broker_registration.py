"""KRaft broker registration and heartbeats, controller side (rules BR-1 to BR-13, BH-1 to BH-11).

Kafka's ``ClusterControlManager`` (registrations, ``registerBroker``, ``checkBrokerEpoch``,
``replay``), ``BrokerHeartbeatManager`` (sessions) and the broker parts of
``ReplicationControlManager`` and ``QuorumController``, as the active controller runs them, on
``impl.kraft.RaftQuorum`` records, sans I/O:

- ``controller_handles_broker_registration`` (BR-1, BR-2, BR-4, BR-5, BR-8) checks in Kafka's
  order and appends one ``RegisterBrokerRecord`` whose BrokerEpoch is the next write offset
  (BR-3) for a new incarnation; the same incarnation amends the registration and keeps its
  epoch and fenced state (3.9, KAFKA-16952 = T-9), or with ``bump_same_incarnation`` gets a new
  epoch as in 3.8.0 (BR-5a).  The answer goes out once the record is committed.
- ``controller_handles_broker_heartbeat`` (BH-2 to BH-7) checks the broker epoch for equality
  (BH-4), touches the session, and unfences a fenced broker that has replayed up to its own
  RegisterBrokerRecord (BH-7) with a ``BrokerRegistrationChangeRecord`` (BH-10).
- ``controller_fences_stale_broker`` (BH-9) fences an unfenced broker whose session expired,
  strictly after ``broker.session.timeout.ms``.
- ``activate`` (BR-13) gives a new leader a fresh ``BrokerHeartbeatManager`` in which every
  registration has a full session from now; liveness is never in the log.
- ``replay_broker_registrations`` (BR-10, BR-12) is the registration part of replay: a
  RegisterBrokerRecord replaces, a BrokerRegistrationChangeRecord changes the fenced state of the
  registration with its epoch.

The controller's view of the registrations is the leader's: the committed log plus its own
uncommitted records, as Kafka's active controller replays its records as soon as it generates
them.  Records are ``impl.kraft.MetadataRecord`` values, checked with the codec and Kafka's
schemas when generated (as ``register_controller_record`` does), so a value Kafka could not
serialize fails the request with UNKNOWN_SERVER_ERROR.

Out of scope, because this implementation has no partitions, ZooKeeper migration or log
directories beyond the registration: the unclean-shutdown records of a new incarnation (BR-6:
none to write), controlled shutdown (a broker that wants to shut down has no leaderships, so it
goes straight to SHUTDOWN_NOW, BH-7), offline log directories, the heartbeat event's queue
timeout (BH-3) and, below metadata.version 3.3-IV2, Fence/UnfenceBrokerRecord (BH-10: the
BrokerRegistrationChangeRecord is written at every level).  One simplification: a heartbeat
that writes nothing is answered at once, where Kafka first waits for any pending write (BH-5).

Wiring: ``impl.kraft`` replays these records into each node's ``MetadataImage`` (BR-10, BR-12)
and answers a committed or truncated broker write with ``broker_reply`` (the success response is
in the write's ``extra["response"]``); the simulated cluster (``impl/cluster``) activates the
leader's manager at start and at each leader change (BR-13) and, when the leader's process dies
with its uncommitted records, reverts its sessions' fenced states to the committed log
(``revert_to_committed``).
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from impl.context import RequestContext
from impl.kraft import (KRAFT_VERSION, METADATA_VERSION, MINIMUM_KRAFT_VERSION, ClusterAuthorizer,
                        ControllerReply, LogEntry, MetadataRecord, PendingWrite, RaftQuorum,
                        unserializable_endpoint)
from impl.protocol import ProtocolError, encode
from impl.protocol.api_keys import BROKER_HEARTBEAT, BROKER_REGISTRATION
from impl.protocol.errors import (BROKER_ID_NOT_REGISTERED, CLUSTER_AUTHORIZATION_FAILED,
                                  DUPLICATE_BROKER_REGISTRATION, INCONSISTENT_CLUSTER_ID,
                                  INVALID_REGISTRATION, NONE, NOT_CONTROLLER, STALE_BROKER_EPOCH,
                                  UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION)
from impl.protocol.security_protocol import SECURITY_PROTOCOL_IDS

BROKER_SESSION_TIMEOUT_MS = 9000        # broker.session.timeout.ms (BH-1)

# metadata.version feature levels (MetadataVersion.java) that change what is written
MV_3_3_IV2 = 6      # isBrokerRegistrationChangeRecordSupported
MV_3_3_IV3 = 7      # isInControlledShutdownStateSupported: RegisterBrokerRecord v1
MV_3_4_IV0 = 8      # isMigrationSupported: RegisterBrokerRecord v2
MV_3_7_IV2 = 17     # isDirectoryAssignmentSupported: RegisterBrokerRecord v3, LogDirs checked

REGISTER_BROKER_RECORD = "RegisterBrokerRecord"
BROKER_REGISTRATION_CHANGE_RECORD = "BrokerRegistrationChangeRecord"
BROKER_RECORDS = (REGISTER_BROKER_RECORD, BROKER_REGISTRATION_CHANGE_RECORD)

# BrokerRegistrationFencingChange / BrokerRegistrationInControlledShutdownChange values
FENCE = 1
UNFENCE = -1
NO_CHANGE = 0
IN_CONTROLLED_SHUTDOWN = 1


# --------------------------------------------------------------------------------------------
# registrations and their replay


@dataclass(frozen=True)
class BrokerRegistration:
    """``BrokerRegistration``: what replay knows of one broker id, plus the offset of its
    latest RegisterBrokerRecord (``registerBrokerRecordOffsets``, BR-10)."""
    broker_id: int
    epoch: int
    incarnation_id: uuid.UUID
    fenced: bool
    record_offset: int
    in_controlled_shutdown: bool = False
    endpoints: tuple = ()               # the record's EndPoints (dicts)
    features: tuple = ()                # the record's Features (dicts)
    rack: str | None = None
    log_dirs: tuple = ()


def _entries(entries: Iterable[LogEntry | tuple[int, MetadataRecord]]
             ) -> Iterator[tuple[int, MetadataRecord]]:
    for entry in entries:
        if isinstance(entry, LogEntry):
            yield entry.offset, entry.record
        else:
            yield entry


def _fencing_change(value: int, current: bool) -> bool:
    """``BrokerRegistrationFencingChange.fromValue``: an unknown value is an
    IllegalStateException in Kafka (fatal on replay)."""
    if value == FENCE:
        return True
    if value == UNFENCE:
        return False
    if value == NO_CHANGE:
        return current
    raise ValueError(f"Unable to replay BrokerRegistrationChangeRecord: unknown value for "
                     f"fenced field: {value}")


def _controlled_shutdown_change(value: int, current: bool) -> bool:
    if value == IN_CONTROLLED_SHUTDOWN:
        return True
    if value == NO_CHANGE:
        return current
    raise ValueError(f"Unable to replay BrokerRegistrationChangeRecord: unknown value for "
                     f"inControlledShutdown field: {value}")


def replay_broker_registrations(entries: Iterable[LogEntry | tuple[int, MetadataRecord]],
                                strict: bool = False) -> dict[int, BrokerRegistration]:
    """The current registration of each broker id after replaying ``entries`` (``LogEntry``
    values or ``(offset, record)`` pairs), other record types skipped.

    BR-10: a RegisterBrokerRecord replaces the registration whatever its epoch or incarnation,
    and its own offset becomes the registration's record offset.  BR-12: a
    BrokerRegistrationChangeRecord applies only to a registration with the same BrokerEpoch,
    and never changes epoch or incarnation.  Kafka treats a change record without such a
    registration as a fatal replay error: ``strict`` raises ValueError, otherwise it is
    skipped."""
    registrations: dict[int, BrokerRegistration] = {}
    for offset, record in _entries(entries):
        data = record.data
        if record.name == REGISTER_BROKER_RECORD:
            registrations[data["BrokerId"]] = BrokerRegistration(
                broker_id=data["BrokerId"], epoch=data["BrokerEpoch"],
                incarnation_id=data["IncarnationId"], fenced=bool(data.get("Fenced", True)),
                record_offset=offset,
                in_controlled_shutdown=bool(data.get("InControlledShutdown", False)),
                endpoints=tuple(dict(e) for e in data.get("EndPoints", ())),
                features=tuple(dict(f) for f in data.get("Features", ())),
                rack=data.get("Rack"), log_dirs=tuple(data.get("LogDirs", ())))
        elif record.name == BROKER_REGISTRATION_CHANGE_RECORD:
            current = registrations.get(data["BrokerId"])
            if current is None or current.epoch != data["BrokerEpoch"]:
                if strict:
                    what = ("no broker registration found for that id" if current is None
                            else "no broker registration with that epoch found")
                    raise ValueError(f"Unable to replay {dict(data)}: {what}")
                continue
            log_dirs = tuple(data.get("LogDirs") or ()) or current.log_dirs
            registrations[current.broker_id] = replace(
                current, fenced=_fencing_change(data.get("Fenced", NO_CHANGE), current.fenced),
                in_controlled_shutdown=_controlled_shutdown_change(
                    data.get("InControlledShutdown", NO_CHANGE), current.in_controlled_shutdown),
                log_dirs=log_dirs)
    return registrations


def _leader_entries(quorum: RaftQuorum) -> Iterator[LogEntry]:
    """The committed log, then the leader's uncommitted appends, in offset order."""
    yield from quorum.log
    for write in quorum.uncommitted:
        yield from write.entries


def broker_registrations(quorum: RaftQuorum) -> dict[int, BrokerRegistration]:
    """The active controller's registrations: committed and its own uncommitted records."""
    return replay_broker_registrations(_leader_entries(quorum))


def finalized_features(quorum: RaftQuorum) -> dict[str, int]:
    """``FeatureControlManager``'s finalized levels in the leader's view (a level 0 record
    removes the feature)."""
    levels: dict[str, int] = {}
    for entry in _leader_entries(quorum):
        if entry.record.name == "FeatureLevelRecord":
            name, level = entry.record.data["Name"], entry.record.data["FeatureLevel"]
            if level == 0:
                levels.pop(name, None)
            else:
                levels[name] = level
    return levels


# --------------------------------------------------------------------------------------------
# records and messages


def register_broker_record_version(metadata_version: int) -> int:
    """``MetadataVersion.registerBrokerRecordVersion`` (section 8.1)."""
    if metadata_version >= MV_3_7_IV2:
        return 3
    if metadata_version >= MV_3_4_IV0:
        return 2
    if metadata_version >= MV_3_3_IV3:
        return 1
    return 0


def register_broker_record(data: Mapping[str, Any], version: int) -> MetadataRecord:
    """A RegisterBrokerRecord, encoded once with Kafka's schema at ``version``: a value Kafka
    cannot serialize raises ``ProtocolError`` (UNKNOWN_SERVER_ERROR)."""
    encode(REGISTER_BROKER_RECORD, data, version)
    return MetadataRecord(REGISTER_BROKER_RECORD, dict(data), version)


def broker_registration_change_record(broker_id: int, broker_epoch: int,
                                      fenced: int) -> MetadataRecord:
    """BH-10: BrokerRegistrationChangeRecord v0 {BrokerId, BrokerEpoch, Fenced} (1 fenced, -1
    unfenced, 0 no change), InControlledShutdown 0."""
    data = {"BrokerId": broker_id, "BrokerEpoch": broker_epoch, "Fenced": fenced,
            "InControlledShutdown": NO_CHANGE}
    encode(BROKER_REGISTRATION_CHANGE_RECORD, data, 0)
    return MetadataRecord(BROKER_REGISTRATION_CHANGE_RECORD, data, 0)


def broker_registration_response(error_code: int, broker_epoch: int = -1) -> dict:
    """BR-1: ErrorCode and, on success, the BrokerEpoch; an error leaves it at -1."""
    return {"ThrottleTimeMs": 0, "ErrorCode": error_code,
            "BrokerEpoch": broker_epoch if error_code == NONE else -1}


def broker_heartbeat_response(error_code: int, is_caught_up: bool = False,
                              is_fenced: bool = True, should_shut_down: bool = False) -> dict:
    """BH-2: an error carries only the ErrorCode, so IsFenced keeps its schema default true
    and IsCaughtUp false."""
    if error_code != NONE:
        is_caught_up, is_fenced, should_shut_down = False, True, False
    return {"ThrottleTimeMs": 0, "ErrorCode": error_code, "IsCaughtUp": is_caught_up,
            "IsFenced": is_fenced, "ShouldShutDown": should_shut_down}


def broker_reply(write: PendingWrite, source: int, error_code: int = NONE
                 ) -> ControllerReply | None:
    """The answer to a broker registration or heartbeat that waited for ``write``: its success
    response once committed (BR-2, BH-5), or ``error_code`` (NOT_CONTROLLER when the write was
    lost to a new leader).  None when nobody waits or the write is not a broker API's."""
    if write.waiter is None or write.api_key not in (BROKER_REGISTRATION, BROKER_HEARTBEAT):
        return None
    if error_code == NONE:
        body = dict(write.extra["response"])
    elif write.api_key == BROKER_REGISTRATION:
        body = broker_registration_response(error_code)
    else:
        body = broker_heartbeat_response(error_code)
    return ControllerReply(write.waiter, source, write.api_key, body["ErrorCode"], body)


# --------------------------------------------------------------------------------------------
# sessions


@dataclass
class BrokerHeartbeatState:
    """``BrokerHeartbeatManager.BrokerHeartbeatState``: the last contact, whether the broker
    is in the unfenced list, and the metadata offset it last reported."""
    last_contact_ms: int
    fenced: bool = True
    metadata_offset: int = -1
    order: int = 0                      # position among equal contact times (list insertion)
    # False once ``fence`` untracked it (BH-8, BH-9): its last contact no longer counts, for the
    # fence timer or for a valid session, until ``touch`` tracks it again
    tracked: bool = True


@dataclass
class BrokerHeartbeatManager:
    """The active controller's broker sessions (BH-8); never in the log (BR-13)."""
    session_timeout_ms: int = BROKER_SESSION_TIMEOUT_MS
    brokers: dict = field(default_factory=dict)     # broker id -> BrokerHeartbeatState
    _inserted: int = 0

    def register(self, broker_id: int, fenced: bool, now_ms: int) -> None:
        """``register``: create the state if absent, then ``touch``; the reported offset is
        kept only when the fenced state changes (as Kafka does)."""
        state = self.brokers.get(broker_id)
        metadata_offset = -1
        if state is None:
            self.brokers[broker_id] = BrokerHeartbeatState(now_ms)
        elif state.fenced != fenced:
            metadata_offset = state.metadata_offset
        self.touch(broker_id, fenced, metadata_offset, now_ms)

    def touch(self, broker_id: int, fenced: bool, metadata_offset: int, now_ms: int) -> None:
        """``touch``: last contact = now; an unfenced broker goes to the end of the list."""
        state = self.brokers[broker_id]
        state.last_contact_ms = now_ms
        state.metadata_offset = metadata_offset
        state.fenced = fenced
        state.tracked = True
        self._inserted += 1
        state.order = self._inserted

    def fence(self, broker_id: int) -> None:
        """``fence``: leave the unfenced list (``untrack``); the state stays."""
        state = self.brokers.get(broker_id)
        if state is not None:
            state.fenced = True
            state.tracked = False

    def remove(self, broker_id: int) -> None:
        self.brokers.pop(broker_id, None)

    def has_valid_session(self, broker_id: int, now_ms: int) -> bool:
        """BR-8: false for an unknown, fenced or untracked broker, else ``lastContact + timeout
        >= now``."""
        state = self.brokers.get(broker_id)
        if state is None or state.fenced or not state.tracked:
            return False
        return state.last_contact_ms + self.session_timeout_ms >= now_ms

    def has_tracked_session(self) -> bool:
        """Some broker's last contact is tracked: the fence timer (BH-9) has a contact to count
        the session timeout from."""
        return any(state.tracked for state in self.brokers.values())

    def _unfenced(self) -> list[tuple[int, BrokerHeartbeatState]]:
        """The fence timer's list: the unfenced brokers with a tracked contact (Kafka's
        ``BrokerHeartbeatTracker`` holds only contact times it was given; a broker without one
        is never found stale)."""
        return sorted(((bid, s) for bid, s in self.brokers.items()
                       if not s.fenced and s.tracked),
                      key=lambda item: (item[1].last_contact_ms, item[1].order))

    def next_check_time_ms(self) -> int | None:
        """``nextCheckTimeNs`` (BH-9): the oldest unfenced contact plus the timeout; None when
        every broker is fenced (Kafka's Long.MAX_VALUE)."""
        unfenced = self._unfenced()
        return unfenced[0][1].last_contact_ms + self.session_timeout_ms if unfenced else None

    def find_one_stale_broker(self, now_ms: int) -> int | None:
        """``findOneStaleBroker`` (BH-9): the least recently contacted unfenced broker, if its
        session has expired."""
        unfenced = self._unfenced()
        if unfenced and not self.has_valid_session(unfenced[0][0], now_ms):
            return unfenced[0][0]
        return None


# --------------------------------------------------------------------------------------------
# the controller


class ClusterControlManager:
    """The active controller's broker registration and heartbeat handling.

    ``cluster_id`` None skips the cluster id check (BR-4.2); the authorizer is the controller's
    (CLUSTER_ACTION on CLUSTER, BR-1, BH-2)."""

    def __init__(self, node_id: int, authorizer: ClusterAuthorizer, cluster_id: str | None = None,
                 session_timeout_ms: int = BROKER_SESSION_TIMEOUT_MS, *, kraft_version: int = 0,
                 ignore_omitted_features: bool = False,
                 activation_leaves_sessions_untracked: bool = False):
        self.node_id = node_id
        self.authorizer = authorizer
        self.cluster_id = cluster_id
        self.session_timeout_ms = session_timeout_ms
        # the finalized kraft.version, from the Raft client (KAFKA-17305's fix reads it there)
        self.kraft_version = kraft_version
        # 3.8.0 (before KAFKA-17305): a finalized feature the registration omits is not checked
        self.ignore_omitted_features = ignore_omitted_features
        # before KAFKA-18138's fix (PR #18009): ``activate`` registers every broker's fenced
        # state but gives the tracker no contact time for it
        self.activation_leaves_sessions_untracked = activation_leaves_sessions_untracked
        self.heartbeat_manager: BrokerHeartbeatManager | None = None

    def is_active(self, quorum: RaftQuorum) -> bool:
        return quorum.leader_id == self.node_id

    def activate(self, now_ms: int, quorum: RaftQuorum, *, running: bool = False) -> None:
        """BR-13 (``QuorumController.claim`` -> ``activate``): a new heartbeat manager in which
        every registration is tracked, with its fenced state and last contact = now.
        ``running``: the simulation starts with this controller active and its brokers
        heartbeating it (the model's initial contact time), so every session is tracked
        whatever activation would give them."""
        self.heartbeat_manager = BrokerHeartbeatManager(self.session_timeout_ms)
        for broker_id, registration in sorted(broker_registrations(quorum).items()):
            self.heartbeat_manager.register(broker_id, registration.fenced, now_ms)
            if self.activation_leaves_sessions_untracked and not running:
                # no updateContactTime: the fence timer never finds this broker stale
                self.heartbeat_manager.brokers[broker_id].tracked = False

    def revert_to_committed(self, quorum: RaftQuorum) -> None:
        """The leader's uncommitted records are gone (its process died with them, R-17): the
        sessions' fenced states go back to the committed registrations, as Kafka's in-memory
        state goes back to the last committed offset.  The last contacts, and whether they are
        tracked, stay: liveness is the active controller's, never in the log (BR-13)."""
        if self.heartbeat_manager is None:
            return
        committed = replay_broker_registrations(quorum.log)
        for broker_id, state in self.heartbeat_manager.brokers.items():
            registration = committed.get(broker_id)
            if registration is not None:
                state.fenced = registration.fenced

    def deactivate(self) -> None:
        """``deactivate``: the sessions are dropped with the leadership."""
        self.heartbeat_manager = None

    def _reply(self, waiter: object, api_key: int, code: int) -> ControllerReply:
        body = (broker_registration_response(code) if api_key == BROKER_REGISTRATION
                else broker_heartbeat_response(code))
        return ControllerReply(waiter, self.node_id, api_key, code, body)

    # -- registration --------------------------------------------------------------------------

    def controller_handles_broker_registration(self, context: RequestContext, body: Mapping,
                                               quorum: RaftQuorum, now_ms: int,
                                               bump_same_incarnation: bool = False, *,
                                               waiter: object = None) -> ControllerReply | None:
        """``ControllerApis.handleBrokerRegistration`` -> ``QuorumController.registerBroker`` ->
        ``ClusterControlManager.registerBroker`` (3.9), in Kafka's order:

        - BR-1: CLUSTER_ACTION on CLUSTER, else CLUSTER_AUTHORIZATION_FAILED (31);
        - BR-2: the active controller, else NOT_CONTROLLER (41); BR-4.1: not activated -> -1;
        - BR-4.2: another cluster id -> INCONSISTENT_CLUSTER_ID (104);
        - BR-4.4, BR-8: an existing registration with a valid session (not fenced, last contact
          within the session timeout) and another IncarnationId -> DUPLICATE_BROKER_REGISTRATION
          (101);
        - BR-4.5: a migrating ZK broker -> BROKER_ID_NOT_REGISTERED (102) (no migration here);
        - BR-4.7: from metadata.version 3.7-IV2, empty, reserved, duplicate or foreign LogDirs
          -> INVALID_REGISTRATION (119);
        - BR-4.8: an unknown security protocol or unserializable endpoint (port 0, a null or
          blank host: a listener the broker did not resolve, EP-4) -> -1;
        - BR-4.9: a finalized feature level outside the broker's range -> UNSUPPORTED_VERSION
          (35); no metadata.version range counts as [1, 1], and a finalized feature the broker
          omits as [0, 0].

        Then one RegisterBrokerRecord (BR-5), its EndPoints the request's Listeners (in
        order, one per name).  A new incarnation gets BrokerEpoch = the next
        write offset (BR-3) and Fenced = true, and the old incarnation's session is dropped
        (T-9: only now, after every check).  The same incarnation keeps the epoch, Fenced and
        InControlledShutdown of the registration (3.9); ``bump_same_incarnation`` gives it a new
        epoch as 3.8.0 does (BR-5a).  The session is registered with last contact = now; the
        answer {ErrorCode 0, BrokerEpoch} goes out after the commit (None is returned)."""
        if not self.authorizer.authorize(context.principal, "CLUSTER_ACTION"):
            return self._reply(waiter, BROKER_REGISTRATION, CLUSTER_AUTHORIZATION_FAILED)
        if not self.is_active(quorum):
            return self._reply(waiter, BROKER_REGISTRATION, NOT_CONTROLLER)
        hbm = self.heartbeat_manager
        if hbm is None:         # "ClusterControlManager is not active."
            return self._reply(waiter, BROKER_REGISTRATION, UNKNOWN_SERVER_ERROR)
        if self.cluster_id is not None and body.get("ClusterId") != self.cluster_id:
            return self._reply(waiter, BROKER_REGISTRATION, INCONSISTENT_CLUSTER_ID)
        broker_id = body["BrokerId"]
        registrations = broker_registrations(quorum)
        existing = registrations.get(broker_id)
        new_incarnation = existing is None or existing.incarnation_id != body["IncarnationId"]
        if existing is not None and new_incarnation and hbm.has_valid_session(broker_id, now_ms):
            return self._reply(waiter, BROKER_REGISTRATION, DUPLICATE_BROKER_REGISTRATION)
        if body.get("IsMigratingZkBroker"):
            return self._reply(waiter, BROKER_REGISTRATION, BROKER_ID_NOT_REGISTERED)
        features = finalized_features(quorum)
        if self.kraft_version:
            features[KRAFT_VERSION] = self.kraft_version
        metadata_version = features.get(METADATA_VERSION, MINIMUM_KRAFT_VERSION)
        log_dirs = list(body.get("LogDirs", ()))
        if metadata_version >= MV_3_7_IV2 and \
                self._invalid_log_dirs(broker_id, log_dirs, registrations):
            return self._reply(waiter, BROKER_REGISTRATION, INVALID_REGISTRATION)
        endpoints = self._endpoints(body.get("Listeners", ()))
        if endpoints is None:
            return self._reply(waiter, BROKER_REGISTRATION, UNKNOWN_SERVER_ERROR)
        record_features = self._features(body.get("Features", ()), features,
                                         self.ignore_omitted_features)
        if record_features is None:
            return self._reply(waiter, BROKER_REGISTRATION, UNSUPPORTED_VERSION)

        if new_incarnation:
            epoch, fenced, in_controlled_shutdown = quorum.next_offset(), True, False
        else:
            epoch = quorum.next_offset() if bump_same_incarnation else existing.epoch
            fenced, in_controlled_shutdown = existing.fenced, existing.in_controlled_shutdown
        data = {"BrokerId": broker_id, "IsMigratingZkBroker": False,
                "IncarnationId": body["IncarnationId"], "BrokerEpoch": epoch,
                "EndPoints": endpoints, "Features": record_features, "Rack": body.get("Rack"),
                "Fenced": fenced, "InControlledShutdown": in_controlled_shutdown}
        if metadata_version >= MV_3_7_IV2:
            data["LogDirs"] = log_dirs
        try:
            record = register_broker_record(data, register_broker_record_version(metadata_version))
        except ProtocolError:
            return self._reply(waiter, BROKER_REGISTRATION, UNKNOWN_SERVER_ERROR)
        quorum.append(self.node_id, (record,), waiter=waiter, api_key=BROKER_REGISTRATION,
                      request=body, extra={"response": broker_registration_response(NONE, epoch)})
        if new_incarnation:
            hbm.remove(broker_id)
        hbm.register(broker_id, fenced, now_ms)
        return None

    @staticmethod
    def _invalid_log_dirs(broker_id: int, log_dirs: list,
                          registrations: Mapping[int, BrokerRegistration]) -> bool:
        """BR-4.7: no directory, a reserved one (``DirectoryId.reserved``), a duplicate, or one
        another broker registered."""
        if not log_dirs:
            return True
        if any(d.int >> 64 == 0 and (d.int & (2 ** 64 - 1)) < 100 for d in log_dirs):
            return True
        if len(set(log_dirs)) != len(log_dirs):
            return True
        owners = {d: bid for bid, r in registrations.items() for d in r.log_dirs}
        return any(owners.get(d, broker_id) != broker_id for d in log_dirs)

    @staticmethod
    def _endpoints(listeners: Iterable[Mapping]) -> list[dict] | None:
        """BR-4.8: ``ListenerInfo.fromBrokerRegistrationRequest`` (a map by name: a repeated
        name keeps its first position and the last value) then ``toBrokerRegistrationRecord``
        (serializable ports and hosts).  None: Kafka's RuntimeException."""
        endpoints: dict[str, dict] = {}
        for listener in listeners:
            if listener["SecurityProtocol"] not in SECURITY_PROTOCOL_IDS.values():
                return None
            endpoints[listener["Name"]] = {"Name": listener["Name"], "Host": listener["Host"],
                                           "Port": listener["Port"],
                                           "SecurityProtocol": listener["SecurityProtocol"]}
        for endpoint in endpoints.values():
            if unserializable_endpoint(endpoint["Port"], endpoint["Host"]) is not None:
                return None
        return list(endpoints.values())

    @staticmethod
    def _features(requested: Iterable[Mapping], finalized: Mapping[str, int],
                  ignore_omitted: bool = False) -> list[dict] | None:
        """BR-4.9 (3.9 ``registerBroker`` and ``processRegistrationFeature``): the record's
        Features, or None when a finalized level is outside the broker's range.  A finalized
        feature the broker omits must be at level 0 (KAFKA-17305's check of kraft.version),
        unless ``ignore_omitted`` (3.8.0)."""
        def supported(name: str, low: int, high: int) -> bool:
            default = 1 if name == METADATA_VERSION else 0
            return low <= finalized.get(name, default) <= high
        out: list[dict] = []
        names = set()
        for feature in requested:
            if not supported(feature["Name"], feature["MinSupportedVersion"],
                             feature["MaxSupportedVersion"]):
                return None
            out.append({"Name": feature["Name"],
                        "MinSupportedVersion": feature["MinSupportedVersion"],
                        "MaxSupportedVersion": feature["MaxSupportedVersion"]})
            names.add(feature["Name"])
        if METADATA_VERSION not in names:
            if not supported(METADATA_VERSION, MINIMUM_KRAFT_VERSION, MINIMUM_KRAFT_VERSION):
                return None
            out.append({"Name": METADATA_VERSION, "MinSupportedVersion": MINIMUM_KRAFT_VERSION,
                        "MaxSupportedVersion": MINIMUM_KRAFT_VERSION})
            names.add(METADATA_VERSION)
        for name, level in finalized.items():
            if (not ignore_omitted and name not in names and level != 0
                    and not supported(name, 0, 0)):
                return None
        return out

    # -- heartbeats ----------------------------------------------------------------------------

    def controller_handles_broker_heartbeat(self, context: RequestContext, body: Mapping,
                                            quorum: RaftQuorum, now_ms: int,
                                            check_against_record_offset: bool = False, *,
                                            waiter: object = None) -> ControllerReply | None:
        """``ControllerApis.handleBrokerHeartBeatRequest`` -> ``processBrokerHeartbeat``
        (QuorumController, ReplicationControlManager), in Kafka's order:

        - BH-2: CLUSTER_ACTION on CLUSTER, else 31; the active controller, else 41;
        - BH-3, BH-4: no registration -> STALE_BROKER_EPOCH (77); BrokerEpoch different from
          the registration's epoch (an equality check: newer is stale too) -> 77.  With
          ``check_against_record_offset`` (a design variant, not Kafka) the BrokerEpoch is
          compared with the offset of the broker's latest RegisterBrokerRecord instead;
        - BH-7: the next state.  FENCED: WantShutDown -> SHUTDOWN_NOW; not WantFence and
          CurrentMetadataOffset >= the RegisterBrokerRecord's offset -> UNFENCED; else FENCED.
          UNFENCED: WantFence -> FENCED (SHUTDOWN_NOW with WantShutDown); WantShutDown ->
          SHUTDOWN_NOW (no partitions, so no leaderships to move); else UNFENCED;
        - BH-5, BH-10: a changed state writes a BrokerRegistrationChangeRecord (Fenced -1 with
          the broker's epoch, or 1), the session is touched (last contact = now), and the reply
          {IsCaughtUp = offset >= record offset, IsFenced, ShouldShutDown} goes out after the
          commit (None is returned); without a record it is returned at once.

        The current state is the session's (Kafka's unfenced list), which always agrees with the
        registration's Fenced here.  In the design variant the change record carries the
        registration's epoch, so that it replays."""
        if not self.authorizer.authorize(context.principal, "CLUSTER_ACTION"):
            return self._reply(waiter, BROKER_HEARTBEAT, CLUSTER_AUTHORIZATION_FAILED)
        if not self.is_active(quorum):
            return self._reply(waiter, BROKER_HEARTBEAT, NOT_CONTROLLER)
        hbm = self.heartbeat_manager
        if hbm is None:
            return self._reply(waiter, BROKER_HEARTBEAT, UNKNOWN_SERVER_ERROR)
        broker_id = body["BrokerId"]
        registration = broker_registrations(quorum).get(broker_id)
        if registration is None:
            return self._reply(waiter, BROKER_HEARTBEAT, STALE_BROKER_EPOCH)
        expected = (registration.record_offset if check_against_record_offset
                    else registration.epoch)
        if body["BrokerEpoch"] != expected:
            return self._reply(waiter, BROKER_HEARTBEAT, STALE_BROKER_EPOCH)
        session = hbm.brokers.get(broker_id)
        if session is None:     # heartbeatStateOrThrow: "Broker N is not registered."
            return self._reply(waiter, BROKER_HEARTBEAT, UNKNOWN_SERVER_ERROR)

        offset = body["CurrentMetadataOffset"]
        want_fence, want_shut_down = bool(body.get("WantFence")), bool(body.get("WantShutDown"))
        caught_up = offset >= registration.record_offset
        if session.fenced:
            if want_shut_down:
                next_fenced, shut_down = True, True
            else:
                next_fenced, shut_down = want_fence or not caught_up, False
        else:
            next_fenced, shut_down = want_fence or want_shut_down, want_shut_down
        changed = (next_fenced, shut_down) != (session.fenced, False)
        records = ()
        if changed:
            records = (broker_registration_change_record(
                broker_id, registration.epoch, FENCE if next_fenced else UNFENCE),)
        hbm.touch(broker_id, next_fenced, offset, now_ms)
        response = broker_heartbeat_response(NONE, caught_up, next_fenced, shut_down)
        if not records:
            return ControllerReply(waiter, self.node_id, BROKER_HEARTBEAT, NONE, response)
        quorum.append(self.node_id, records, waiter=waiter, api_key=BROKER_HEARTBEAT,
                      request=body, extra={"response": response})
        return None

    # -- session expiry ------------------------------------------------------------------------

    def controller_fences_stale_broker(self, broker_id: int, quorum: RaftQuorum,
                                       now_ms: int) -> PendingWrite | None:
        """BH-9 (``maybeFenceOneStaleBroker`` for this broker): an unfenced registration whose
        session expired -- strictly ``now > last contact + broker.session.timeout.ms`` -- gets
        a BrokerRegistrationChangeRecord {Fenced 1, BrokerEpoch = the registration's}, nobody
        waiting for it, and leaves the unfenced list (BH-10).  None when there is nothing to
        fence (not active, unknown, fenced already, or the session is still valid)."""
        if not self.stale_broker(broker_id, quorum, now_ms):
            return None
        registration = broker_registrations(quorum)[broker_id]
        record = broker_registration_change_record(broker_id, registration.epoch, FENCE)
        write = quorum.append(self.node_id, (record,))
        self.heartbeat_manager.fence(broker_id)
        return write

    def stale_broker(self, broker_id: int, quorum: RaftQuorum, now_ms: int) -> bool:
        """BH-9: would ``controller_fences_stale_broker`` fence ``broker_id`` now?  Active, an
        unfenced registration, and a tracked, unfenced session that has expired."""
        hbm = self.heartbeat_manager
        if not self.is_active(quorum) or hbm is None:
            return False
        registration = broker_registrations(quorum).get(broker_id)
        session = hbm.brokers.get(broker_id)
        if (registration is None or registration.fenced or session is None or session.fenced
                or not session.tracked):
            return False
        return not hbm.has_valid_session(broker_id, now_ms)
