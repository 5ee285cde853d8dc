"""impl/lifecycle.py and impl/broker_registration.py: KRaft broker registration and heartbeats,
the broker's BrokerLifecycleManager (BL-*) and the active controller's side (BR-*, BH-*)."""
from __future__ import annotations

import random
import uuid

import pytest

from impl.broker_registration import (BROKER_REGISTRATION_CHANGE_RECORD, FENCE, MV_3_7_IV2,
                                      REGISTER_BROKER_RECORD, UNFENCE, BrokerRegistration,
                                      ClusterControlManager, broker_registration_change_record,
                                      broker_registration_response, broker_registrations,
                                      broker_reply,
                                      register_broker_record_version, replay_broker_registrations)
from impl.context import RequestContext
from impl.kraft import MV_3_7_IV0, ClusterAuthorizer, MetadataRecord, RaftQuorum
from impl.lifecycle import (BROKER_HEARTBEAT_INTERVAL_MS, RECOVERY, RUNNING, STARTING,
                            BrokerLifecycleManager)
from impl.protocol import KafkaPrincipal, decode, encode
from impl.protocol.api_keys import API_KEYS, BROKER_HEARTBEAT, BROKER_REGISTRATION
from impl.protocol.errors import (BROKER_ID_NOT_REGISTERED, CLUSTER_AUTHORIZATION_FAILED,
                                  DUPLICATE_BROKER_REGISTRATION, INCONSISTENT_CLUSTER_ID,
                                  INVALID_REGISTRATION, NONE, NOT_CONTROLLER, STALE_BROKER_EPOCH,
                                  UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION)

CLUSTER = "kipcheck-cluster"
BROKER = KafkaPrincipal("User", "broker")
ALICE = KafkaPrincipal("User", "alice")
AUTH = ClusterAuthorizer({"User:broker": {"CLUSTER_ACTION"}, "User:alice": {"ALTER"}})
LISTENERS = ({"Name": "INTERNAL", "Host": "b4", "Port": 9092, "SecurityProtocol": 0},)
TIMEOUT = 9000


def ctx(principal=BROKER):
    return RequestContext(listener_name="CONTROLLER", security_protocol="PLAINTEXT",
                          principal=principal)


def setup(mv=MV_3_7_IV0, now=0):
    """A quorum led by controller 1, its ClusterControlManager activated at ``now``, and the
    other voter's (inactive) manager."""
    quorum = RaftQuorum(voters=(1, 2, 3), metadata_version=mv, leader_id=1)
    active = ClusterControlManager(1, AUTH, cluster_id=CLUSTER)
    active.activate(now, quorum)
    return quorum, active, ClusterControlManager(2, AUTH, cluster_id=CLUSTER)


def broker(node=4, seed=4, **kwargs):
    return BrokerLifecycleManager(node, random.Random(seed), CLUSTER, LISTENERS, **kwargs)


def register(ctrl, quorum, body, now=0, **kwargs):
    """Send a registration and commit it; the controller's answer."""
    immediate = ctrl.controller_handles_broker_registration(ctx(), body, quorum, now,
                                                            waiter="reg", **kwargs)
    if immediate is not None:
        return immediate
    [reply] = [broker_reply(w, ctrl.node_id) for w in quorum.commit()]
    return reply


def heartbeat(ctrl, quorum, body, now, **kwargs):
    immediate = ctrl.controller_handles_broker_heartbeat(ctx(), body, quorum, now,
                                                         waiter="hb", **kwargs)
    if immediate is not None:
        return immediate
    [reply] = [broker_reply(w, ctrl.node_id) for w in quorum.commit()]
    return reply


def registered(mv=MV_3_7_IV0, now=0):
    quorum, active, other = setup(mv, now)
    b = broker()
    reply = register(active, quorum, b.broker_sends_registration(now), now)
    b.broker_handles_registration_response(reply.error_code, reply.body)
    return quorum, active, other, b


# --------------------------------------------------------------------------------------------
# controller: registration


def test_new_registration_gets_the_next_offset_as_epoch_and_is_fenced():
    """BR-3, BR-5: epoch = the next write offset = the record's offset; Fenced = true; the
    answer only after the commit (BR-2)."""
    quorum, active, _ = setup()
    body = broker().broker_sends_registration(0)
    expected_epoch = quorum.next_offset()
    assert active.controller_handles_broker_registration(ctx(), body, quorum, 0,
                                                         waiter="reg") is None
    assert len(quorum.uncommitted) == 1            # appended, not answered
    [write] = quorum.commit()
    reply = broker_reply(write, 1)
    assert (reply.waiter, reply.api_key, reply.error_code) == ("reg", BROKER_REGISTRATION, NONE)
    assert reply.body["BrokerEpoch"] == expected_epoch
    record = quorum.log[-1].record
    assert record.name == REGISTER_BROKER_RECORD and record.data["Fenced"] is True
    assert record.data["BrokerEpoch"] == quorum.log[-1].offset == expected_epoch
    assert record.version == register_broker_record_version(MV_3_7_IV0) == 2
    assert "LogDirs" not in record.data            # only from 3.7-IV2 (BR-5)
    reg = broker_registrations(quorum)[4]
    assert (reg.epoch, reg.fenced, reg.record_offset) == (expected_epoch, True, expected_epoch)
    assert active.heartbeat_manager.brokers[4].last_contact_ms == 0


@pytest.mark.parametrize("case, code", [
    ("unauthorized", CLUSTER_AUTHORIZATION_FAILED), ("inactive", NOT_CONTROLLER),
    ("not-activated", UNKNOWN_SERVER_ERROR), ("cluster-id", INCONSISTENT_CLUSTER_ID),
    ("migrating", BROKER_ID_NOT_REGISTERED), ("port-0", UNKNOWN_SERVER_ERROR),
    ("blank-host", UNKNOWN_SERVER_ERROR), ("protocol", UNKNOWN_SERVER_ERROR),
    ("feature-range", UNSUPPORTED_VERSION), ("no-metadata-version", UNSUPPORTED_VERSION)])
def test_registration_errors(case, code):
    """BR-1, BR-2, BR-4: each refusal has its code, writes nothing and answers at once with
    only the ErrorCode (BrokerEpoch -1)."""
    quorum, active, other = setup()
    body = broker().broker_sends_registration(0)
    ctrl, context = active, ctx()
    if case == "unauthorized":
        context = ctx(ALICE)
    elif case == "inactive":
        ctrl = other
    elif case == "not-activated":
        active.deactivate()
    elif case == "cluster-id":
        body["ClusterId"] = "another"
    elif case == "migrating":
        body["IsMigratingZkBroker"] = True
    elif case == "port-0":
        body["Listeners"] = [dict(LISTENERS[0], Port=0)]
    elif case == "blank-host":
        body["Listeners"] = [dict(LISTENERS[0], Host=" ")]
    elif case == "protocol":
        body["Listeners"] = [dict(LISTENERS[0], SecurityProtocol=9)]
    elif case == "feature-range":
        body["Features"] = [{"Name": "metadata.version", "MinSupportedVersion": 1,
                             "MaxSupportedVersion": MV_3_7_IV0 - 1}]
    elif case == "no-metadata-version":     # counts as [1, 1]
        body["Features"] = []
    before = quorum.next_offset()
    reply = ctrl.controller_handles_broker_registration(context, body, quorum, 0, waiter="w")
    assert reply is not None and reply.error_code == code
    assert reply.body == {"ThrottleTimeMs": 0, "ErrorCode": code, "BrokerEpoch": -1}
    assert quorum.next_offset() == before
    assert broker_registrations(quorum) == {}


@pytest.mark.parametrize("case", ["empty", "reserved", "duplicate", "foreign"])
def test_log_dir_checks_from_3_7_iv2(case):
    """BR-4.7: from metadata.version 3.7-IV2 the LogDirs must be present, unreserved, distinct
    and not another broker's: else INVALID_REGISTRATION (119)."""
    quorum, active, _ = setup(mv=MV_3_7_IV2)
    b5 = broker(5, seed=5)
    assert register(active, quorum, b5.broker_sends_registration(0)).error_code == NONE
    body = broker().broker_sends_registration(0)
    dirs = {"empty": [], "reserved": [uuid.UUID(int=42)],
            "duplicate": [body["LogDirs"][0]] * 2, "foreign": list(b5.log_dirs)}[case]
    body["LogDirs"] = dirs
    assert register(active, quorum, body).error_code == INVALID_REGISTRATION
    # the broker's own directory is fine, and the record carries it (v3)
    body["LogDirs"] = list(broker().log_dirs)
    assert register(active, quorum, body).error_code == NONE
    assert quorum.log[-1].record.version == 3
    assert quorum.log[-1].record.data["LogDirs"] == body["LogDirs"]


def test_same_incarnation_amend_keeps_epoch_and_fenced_state():
    """BR-5 (3.9, T-9): re-registering the registered incarnation keeps its epoch and its
    fenced state -- an unfenced broker stays unfenced."""
    quorum, active, _, b = registered()
    epoch = b.broker_epoch
    reply = heartbeat(active, quorum, b.broker_sends_heartbeat(0, quorum.next_offset()), 0)
    assert reply.body["IsFenced"] is False
    b.broker_handles_heartbeat_response(reply.error_code, reply.body)
    b.resend_broker_registration()                  # BL-8
    reply = register(active, quorum, b.broker_sends_registration(100), now=100)
    assert (reply.error_code, reply.body["BrokerEpoch"]) == (NONE, epoch)
    record = quorum.log[-1]
    assert record.record.data["BrokerEpoch"] == epoch and record.record.data["Fenced"] is False
    reg = broker_registrations(quorum)[4]
    assert (reg.epoch, reg.fenced, reg.record_offset) == (epoch, False, record.offset)
    assert reg.record_offset != epoch


def test_same_incarnation_amend_with_the_3_8_bump_gets_a_new_epoch_but_keeps_fenced():
    """BR-5a: at 3.8.0 the amend path takes the next offset as epoch, the fenced state is
    still copied."""
    quorum, active, _, b = registered()
    reply = heartbeat(active, quorum, b.broker_sends_heartbeat(0, quorum.next_offset()), 0)
    b.broker_handles_heartbeat_response(reply.error_code, reply.body)
    old = b.broker_epoch
    b.resend_broker_registration()
    new_offset = quorum.next_offset()
    reply = register(active, quorum, b.broker_sends_registration(100), now=100,
                     bump_same_incarnation=True)
    assert reply.body["BrokerEpoch"] == new_offset != old
    assert quorum.log[-1].record.data["Fenced"] is False
    # an amend of a fenced registration stays fenced
    quorum2, active2, _, b2 = registered()
    b2.resend_broker_registration()
    register(active2, quorum2, b2.broker_sends_registration(5), now=5,
             bump_same_incarnation=True)
    assert quorum2.log[-1].record.data["Fenced"] is True


def test_new_incarnation_with_a_valid_session_is_refused():
    """BR-4.4, BR-8: another incarnation of an unfenced broker whose last contact is within
    the session timeout -> DUPLICATE_BROKER_REGISTRATION (101); the old registration and its
    session stay."""
    quorum, active, _, b = registered()
    heartbeat(active, quorum, b.broker_sends_heartbeat(1000, quorum.next_offset()), 1000)
    restarted = broker(seed=99)
    assert restarted.incarnation_id != b.incarnation_id
    reply = register(active, quorum, restarted.broker_sends_registration(1000 + TIMEOUT),
                     now=1000 + TIMEOUT)                # still valid: last + timeout >= now
    assert reply.error_code == DUPLICATE_BROKER_REGISTRATION
    assert reply.body["BrokerEpoch"] == -1
    assert broker_registrations(quorum)[4].incarnation_id == b.incarnation_id
    assert active.heartbeat_manager.brokers[4].last_contact_ms == 1000


def test_new_incarnation_without_a_valid_session_is_accepted_and_fenced():
    """BR-7: once the session expired (now > last contact + timeout) a new incarnation takes
    the id: a new epoch, fenced, a fresh session; the old incarnation's heartbeats are stale."""
    quorum, active, _, b = registered()
    heartbeat(active, quorum, b.broker_sends_heartbeat(1000, quorum.next_offset()), 1000)
    restarted = broker(seed=99)
    now = 1000 + TIMEOUT + 1
    new_epoch = quorum.next_offset()
    reply = register(active, quorum, restarted.broker_sends_registration(now), now=now)
    assert (reply.error_code, reply.body["BrokerEpoch"]) == (NONE, new_epoch)
    reg = broker_registrations(quorum)[4]
    assert (reg.incarnation_id, reg.epoch, reg.fenced) == (restarted.incarnation_id, new_epoch,
                                                           True)
    session = active.heartbeat_manager.brokers[4]
    assert (session.last_contact_ms, session.fenced) == (now, True)
    old = heartbeat(active, quorum, b.heartbeat_request(quorum.next_offset()), now)
    assert old.error_code == STALE_BROKER_EPOCH


def test_a_fenced_but_heartbeating_broker_can_be_replaced():
    """BR-8: hasValidSession is false for a fenced broker, however recent its contact."""
    quorum, active, _, b = registered()
    heartbeat(active, quorum, b.broker_sends_heartbeat(0, 0), 0)     # not caught up: fenced
    assert broker_registrations(quorum)[4].fenced
    reply = register(active, quorum, broker(seed=7).broker_sends_registration(1), now=1)
    assert reply.error_code == NONE


def test_a_rejected_new_incarnation_does_not_drop_the_old_session():
    """T-9 (3.9): the old session is removed only once every check passed (BR-9 was 3.8.0)."""
    quorum, active, _, b = registered()
    heartbeat(active, quorum, b.broker_sends_heartbeat(0, quorum.next_offset()), 0)
    now = TIMEOUT + 1                                   # expired, but ...
    body = broker(seed=7).broker_sends_registration(now)
    body["Listeners"] = [dict(LISTENERS[0], Port=0)]    # ... this registration fails
    assert register(active, quorum, body, now=now).error_code == UNKNOWN_SERVER_ERROR
    assert 4 in active.heartbeat_manager.brokers
    assert active.controller_fences_stale_broker(4, quorum, now) is not None


# --------------------------------------------------------------------------------------------
# controller: heartbeats


def test_heartbeat_errors():
    """BH-2, BH-3, BH-4: 31, 41, 77 before registration, 77 for an older or newer epoch; error
    replies carry only the ErrorCode (IsFenced defaults true)."""
    quorum, active, other = setup()
    hb = {"BrokerId": 4, "BrokerEpoch": 1, "CurrentMetadataOffset": 0, "WantFence": False,
          "WantShutDown": False}
    assert active.controller_handles_broker_heartbeat(ctx(ALICE), hb, quorum, 0).error_code == \
        CLUSTER_AUTHORIZATION_FAILED
    assert other.controller_handles_broker_heartbeat(ctx(), hb, quorum, 0).error_code == \
        NOT_CONTROLLER
    reply = active.controller_handles_broker_heartbeat(ctx(), hb, quorum, 0)
    assert reply.error_code == STALE_BROKER_EPOCH
    assert reply.body == {"ThrottleTimeMs": 0, "ErrorCode": STALE_BROKER_EPOCH,
                          "IsCaughtUp": False, "IsFenced": True, "ShouldShutDown": False}
    b = broker()
    reply = register(active, quorum, b.broker_sends_registration(0))
    b.broker_handles_registration_response(reply.error_code, reply.body)
    for epoch in (b.broker_epoch - 1, b.broker_epoch + 1):
        hb = dict(b.heartbeat_request(quorum.next_offset()), BrokerEpoch=epoch)
        assert active.controller_handles_broker_heartbeat(ctx(), hb, quorum, 0).error_code == \
            STALE_BROKER_EPOCH
    assert broker_registrations(quorum)[4].fenced       # nothing changed


def test_heartbeat_unfences_only_when_caught_up():
    """BH-7: a fenced broker behind its RegisterBrokerRecord stays fenced (answered at once, no
    record); once its offset reaches the record's, a BrokerRegistrationChangeRecord(Fenced -1)
    unfences it and the answer waits for the commit."""
    quorum, active, _, b = registered()
    record_offset = broker_registrations(quorum)[4].record_offset
    reply = active.controller_handles_broker_heartbeat(
        ctx(), b.broker_sends_heartbeat(10, record_offset - 1), quorum, 10, waiter="hb")
    assert reply is not None and reply.error_code == NONE
    assert (reply.body["IsFenced"], reply.body["IsCaughtUp"]) == (True, False)
    assert not quorum.uncommitted
    b.broker_handles_heartbeat_response(reply.error_code, reply.body)
    # WantFence keeps it fenced even when caught up
    want_fence = dict(b.heartbeat_request(record_offset), WantFence=True)
    reply = active.controller_handles_broker_heartbeat(ctx(), want_fence, quorum, 20)
    assert reply.body["IsFenced"] is True and reply.body["IsCaughtUp"] is True
    assert active.controller_handles_broker_heartbeat(
        ctx(), b.broker_sends_heartbeat(10 + BROKER_HEARTBEAT_INTERVAL_MS, record_offset),
        quorum, 2010, waiter="hb") is None
    [write] = quorum.commit()
    [entry] = write.entries
    assert entry.record.name == BROKER_REGISTRATION_CHANGE_RECORD
    assert entry.record.data == {"BrokerId": 4, "BrokerEpoch": b.broker_epoch, "Fenced": UNFENCE,
                                 "InControlledShutdown": 0}
    reply = broker_reply(write, 1)
    assert (reply.api_key, reply.body["IsFenced"], reply.body["IsCaughtUp"]) == \
        (BROKER_HEARTBEAT, False, True)
    assert not broker_registrations(quorum)[4].fenced
    assert active.heartbeat_manager.brokers[4].last_contact_ms == 2010
    # an unfenced broker's heartbeat writes nothing
    reply = active.controller_handles_broker_heartbeat(
        ctx(), b.heartbeat_request(record_offset), quorum, 4010)
    assert reply.body["IsFenced"] is False and not quorum.uncommitted


def test_heartbeat_epoch_check_against_the_record_offset_variant():
    """The design variant compares BrokerEpoch with the latest RegisterBrokerRecord's offset:
    after a 3.9 amend (epoch kept, a new record) the broker's epoch no longer matches it."""
    quorum, active, _, b = registered()
    hb = b.heartbeat_request(quorum.next_offset())
    assert heartbeat(active, quorum, hb, 0, check_against_record_offset=True).error_code == NONE
    b.resend_broker_registration()
    register(active, quorum, b.broker_sends_registration(10), now=10)
    hb = b.heartbeat_request(quorum.next_offset())
    assert heartbeat(active, quorum, hb, 20).error_code == NONE
    assert heartbeat(active, quorum, hb, 30,
                     check_against_record_offset=True).error_code == STALE_BROKER_EPOCH


# --------------------------------------------------------------------------------------------
# controller: session expiry and failover


def test_fencing_only_strictly_after_the_session_timeout():
    """BH-9: at last contact + 9000 the session is still valid; one ms later the broker is
    fenced by a BrokerRegistrationChangeRecord(Fenced 1) carrying the registration's epoch."""
    quorum, active, _, b = registered()
    heartbeat(active, quorum, b.broker_sends_heartbeat(500, quorum.next_offset()), 500)
    assert active.heartbeat_manager.next_check_time_ms() == 500 + TIMEOUT
    assert active.controller_fences_stale_broker(4, quorum, 500 + TIMEOUT) is None
    write = active.controller_fences_stale_broker(4, quorum, 500 + TIMEOUT + 1)
    assert write is not None and write.waiter is None
    [entry] = write.entries
    assert entry.record.data == {"BrokerId": 4, "BrokerEpoch": b.broker_epoch, "Fenced": FENCE,
                                 "InControlledShutdown": 0}
    assert active.heartbeat_manager.brokers[4].fenced
    assert active.heartbeat_manager.next_check_time_ms() is None
    assert active.controller_fences_stale_broker(4, quorum, 20000) is None    # fenced already
    quorum.commit()
    assert broker_registrations(quorum)[4].fenced
    # the next caught-up heartbeat (same epoch) unfences it again (BH-7, BL-11a)
    reply = heartbeat(active, quorum, b.heartbeat_request(quorum.next_offset()), 20000)
    assert reply.body["IsFenced"] is False


def test_fencing_needs_the_active_controller_and_an_unfenced_registration():
    quorum, active, other, b = registered()
    assert active.controller_fences_stale_broker(4, quorum, 10 ** 6) is None    # still fenced
    heartbeat(active, quorum, b.broker_sends_heartbeat(0, quorum.next_offset()), 0)
    assert other.controller_fences_stale_broker(4, quorum, 10 ** 6) is None
    assert active.controller_fences_stale_broker(99, quorum, 10 ** 6) is None


def test_activate_gives_every_registration_a_fresh_session():
    """BR-13: after a leader change the new controller's sessions start at its activation."""
    quorum, active, other, b = registered()
    heartbeat(active, quorum, b.broker_sends_heartbeat(0, quorum.next_offset()), 0)
    quorum.elect(2)
    active.deactivate()
    other.activate(50000, quorum)
    session = other.heartbeat_manager.brokers[4]
    assert (session.last_contact_ms, session.fenced) == (50000, False)
    assert other.controller_fences_stale_broker(4, quorum, 50000 + TIMEOUT) is None
    assert other.controller_fences_stale_broker(4, quorum, 50000 + TIMEOUT + 1) is not None
    assert active.controller_fences_stale_broker(4, quorum, 10 ** 6) is None


def test_uncommitted_records_count_in_the_leaders_view():
    """The leader's view includes its uncommitted records: a re-registration sent before the
    first one commits is an amend of it and keeps its epoch."""
    quorum, active, _ = setup()
    b = broker()
    body = b.broker_sends_registration(0)
    assert active.controller_handles_broker_registration(ctx(), body, quorum, 0) is None
    epoch = quorum.uncommitted[0].entries[0].record.data["BrokerEpoch"]
    assert active.controller_handles_broker_registration(ctx(), body, quorum, 1,
                                                         waiter="again") is None
    assert quorum.uncommitted[1].entries[0].record.data["BrokerEpoch"] == epoch


# --------------------------------------------------------------------------------------------
# replay


def test_replay_register_replaces_and_change_needs_the_same_epoch():
    """BR-10, BR-12."""
    inc1, inc2 = uuid.UUID(int=11, version=4), uuid.UUID(int=12, version=4)

    def reg(epoch, incarnation, fenced=True):
        return MetadataRecord(REGISTER_BROKER_RECORD, {
            "BrokerId": 4, "IncarnationId": incarnation, "BrokerEpoch": epoch, "EndPoints": [],
            "Features": [], "Rack": None, "Fenced": fenced})
    entries = [(3, reg(3, inc1)), (4, broker_registration_change_record(4, 3, UNFENCE)),
               (7, reg(7, inc2)), (8, broker_registration_change_record(4, 3, FENCE))]
    current = replay_broker_registrations(entries)
    assert current[4] == BrokerRegistration(4, 7, inc2, True, 7)
    assert replay_broker_registrations(entries[:2])[4].fenced is False
    with pytest.raises(ValueError, match="no broker registration with that epoch"):
        replay_broker_registrations(entries, strict=True)
    with pytest.raises(ValueError, match="fenced"):
        replay_broker_registrations([(0, reg(0, inc1)), (1, MetadataRecord(
            BROKER_REGISTRATION_CHANGE_RECORD, {"BrokerId": 4, "BrokerEpoch": 0, "Fenced": 2}))])
    assert replay_broker_registrations([(0, broker_registration_change_record(4, 0, FENCE))]) \
        == {}


# --------------------------------------------------------------------------------------------
# the wire: the four messages and the two records


def roundtrip(name, body, version):
    decoded = decode(name, encode(name, body, version), version)
    for key, value in body.items():
        assert decoded[key] == value, (name, key)
    return decoded


def test_messages_and_records_round_trip_through_the_codec():
    quorum, active, _ = setup(mv=MV_3_7_IV2)
    b = broker()
    reg_version = API_KEYS[BROKER_REGISTRATION].valid_versions.highest
    hb_version = API_KEYS[BROKER_HEARTBEAT].valid_versions.highest
    request = b.broker_sends_registration(0)
    roundtrip("BrokerRegistrationRequest", request, reg_version)
    reply = register(active, quorum, request)
    roundtrip("BrokerRegistrationResponse", reply.body, reg_version)
    roundtrip("BrokerRegistrationResponse",
              broker_registration_response(DUPLICATE_BROKER_REGISTRATION), 0)
    b.broker_handles_registration_response(reply.error_code, reply.body)
    hb = b.broker_sends_heartbeat(0, quorum.next_offset())
    roundtrip("BrokerHeartbeatRequest", hb, hb_version)
    hb_reply = heartbeat(active, quorum, hb, 0)
    decoded = roundtrip("BrokerHeartbeatResponse", hb_reply.body, hb_version)
    assert decoded["IsFenced"] is False
    # an error response with only the ErrorCode decodes with the schema defaults (BH-2)
    only_code = decode("BrokerHeartbeatResponse",
                       encode("BrokerHeartbeatResponse", {"ErrorCode": 77}, 0), 0)
    assert (only_code["IsFenced"], only_code["IsCaughtUp"]) == (True, False)
    for entry in quorum.log[1:]:
        roundtrip(entry.record.name, entry.record.data, entry.record.version)
    assert [e.record.name for e in quorum.log[1:]] == [REGISTER_BROKER_RECORD,
                                                       BROKER_REGISTRATION_CHANGE_RECORD]


# --------------------------------------------------------------------------------------------
# the broker: BrokerLifecycleManager


def test_lifecycle_registration_request_and_incarnation():
    """BL-1, BL-4: a fresh incarnation per manager (seeded), the request's fields."""
    b, again, other = broker(seed=1), broker(seed=1), broker(seed=2)
    assert b.incarnation_id == again.incarnation_id != other.incarnation_id
    assert (b.broker_epoch, b.registered, b.communication_in_flight) == (-1, False, False)
    body = b.broker_sends_registration(0, controller_id=1)
    assert body["IncarnationId"] == b.incarnation_id and body["BrokerId"] == 4
    assert body["ClusterId"] == CLUSTER and body["Listeners"] == list(map(dict, LISTENERS))
    assert body["Features"] == [{"Name": "metadata.version", "MinSupportedVersion": 1,
                                 "MaxSupportedVersion": 21}]
    assert (body["Rack"], body["IsMigratingZkBroker"], body["PreviousBrokerEpoch"]) == \
        (None, False, -1)
    assert len(body["LogDirs"]) == 1
    assert (b.communication_in_flight, b.in_flight_to) == (True, 1)
    assert b.broker_sends_registration(1) is None               # one in flight
    assert b.broker_sends_heartbeat(1, 0) is None               # not registered


@pytest.mark.parametrize("code", [NOT_CONTROLLER, DUPLICATE_BROKER_REGISTRATION,
                                  CLUSTER_AUTHORIZATION_FAILED, UNKNOWN_SERVER_ERROR])
def test_lifecycle_retries_a_failed_registration_with_the_same_incarnation(code):
    """BL-5, BL-6: any error -> unregistered, retried at once (the model does not wait for the
    backoff, which is computed as information)."""
    b = broker()
    first = b.broker_sends_registration(0)
    b.broker_handles_registration_response(code, {"ErrorCode": code, "BrokerEpoch": -1},
                                           now_ms=10)
    assert (b.registered, b.broker_epoch, b.communication_in_flight) == (False, -1, False)
    assert 98 <= b.backoff_ms <= 102 and b.retry_at_ms == 10 + b.backoff_ms
    again = b.broker_sends_registration(10)
    assert again == first
    b.broker_handles_registration_response(NONE, {"ErrorCode": code})        # code in the body
    assert b.failed_attempts == 2 and 196 <= b.backoff_ms <= 204


def test_lifecycle_heartbeats_after_registration_once_per_interval():
    """BL-5: the first heartbeat is immediate after a successful registration; BL-9: then one
    per broker.heartbeat.interval.ms, never two in flight."""
    b = broker()
    b.broker_sends_registration(0)
    b.broker_handles_registration_response(NONE, {"ErrorCode": 0, "BrokerEpoch": 17})
    assert (b.registered, b.broker_epoch, b.last_heartbeat_ms) == (True, 17, None)
    assert b.broker_sends_registration(5) is None
    hb = b.broker_sends_heartbeat(5, 3)
    assert hb == {"BrokerId": 4, "BrokerEpoch": 17, "CurrentMetadataOffset": 3,
                  "WantFence": False, "WantShutDown": False}
    assert b.broker_sends_heartbeat(5 + BROKER_HEARTBEAT_INTERVAL_MS, 3) is None   # in flight
    b.broker_handles_heartbeat_response(NONE, {"ErrorCode": 0, "IsFenced": True,
                                               "IsCaughtUp": False})
    assert b.broker_sends_heartbeat(4 + BROKER_HEARTBEAT_INTERVAL_MS, 3) is None
    assert b.broker_sends_heartbeat(5 + BROKER_HEARTBEAT_INTERVAL_MS, 3) is not None
    b.connection_lost()             # the same communication is retried, within the interval rule
    assert not b.communication_in_flight
    assert b.last_heartbeat_ms == 5 + BROKER_HEARTBEAT_INTERVAL_MS


def test_lifecycle_never_reregisters_after_stale_broker_epoch():
    """BL-11: STALE_BROKER_EPOCH (77) -- or any heartbeat error -- only backs off; the epoch
    and incarnation stay and the broker keeps heartbeating, never registering."""
    b = broker()
    b.broker_sends_registration(0)
    b.broker_handles_registration_response(NONE, {"ErrorCode": 0, "BrokerEpoch": 5})
    incarnation = b.incarnation_id
    now = 0
    for _ in range(5):
        hb = b.broker_sends_heartbeat(now, 9)
        assert hb is not None and hb["BrokerEpoch"] == 5
        b.broker_handles_heartbeat_response(STALE_BROKER_EPOCH, None)
        assert (b.registered, b.broker_epoch, b.incarnation_id) == (True, 5, incarnation)
        assert b.broker_sends_registration(now) is None
        now += BROKER_HEARTBEAT_INTERVAL_MS
    assert b.registrations_sent == 1 and b.heartbeats_sent == 5


def test_lifecycle_states_follow_the_heartbeat_answers():
    """BL-10: STARTING -> RECOVERY once caught up, RECOVERY -> RUNNING once unfenced; RUNNING
    ignores IsFenced."""
    b = broker()
    b.broker_sends_registration(0)
    b.broker_handles_registration_response(NONE, {"ErrorCode": 0, "BrokerEpoch": 5})
    answers = [({"IsCaughtUp": False, "IsFenced": True}, STARTING),
               ({"IsCaughtUp": True, "IsFenced": False}, RECOVERY),
               ({"IsCaughtUp": True, "IsFenced": False}, RUNNING),
               ({"IsCaughtUp": True, "IsFenced": True}, RUNNING)]
    for i, (answer, state) in enumerate(answers):
        b.broker_sends_heartbeat(i * BROKER_HEARTBEAT_INTERVAL_MS, 0)
        b.broker_handles_heartbeat_response(NONE, dict(answer, ErrorCode=0))
        assert b.state == state
    assert b.is_fenced is True


def test_lifecycle_must_reregister_option_and_resend():
    """BL-8: a process registered with an epoch that must register again: not registered, the
    epoch kept until the answer; the same incarnation when given."""
    inc = uuid.UUID(int=5, version=4)
    b = broker(broker_epoch=12, incarnation_id=inc)
    assert (b.registered, b.broker_epoch, b.incarnation_id) == (False, 12, inc)
    assert b.broker_sends_heartbeat(0, 0) is None
    assert b.broker_sends_registration(0)["IncarnationId"] == inc
    b.broker_handles_registration_response(NONE, {"ErrorCode": 0, "BrokerEpoch": 12})
    assert b.broker_sends_heartbeat(0, 0) is not None
    b.broker_handles_heartbeat_response(NONE, {"ErrorCode": 0})
    b.resend_broker_registration()
    assert b.broker_sends_heartbeat(10 ** 6, 0) is None
    assert b.broker_sends_registration(10)["IncarnationId"] == inc
    b.broker_handles_registration_response(NONE, {"ErrorCode": 0, "BrokerEpoch": 12})
    # BL-5: the heartbeat after a successful registration is immediate, even within the
    # interval of the previous one
    assert b.broker_sends_heartbeat(10, 0) is not None


def test_end_to_end_a_broker_registers_catches_up_and_is_unfenced():
    quorum, active, _ = setup()
    b = broker()
    reply = register(active, quorum, b.broker_sends_registration(0, controller_id=1))
    b.broker_handles_registration_response(reply.error_code, reply.body)
    now = 0
    for offset in (0, len(quorum.log), len(quorum.log)):
        reply = heartbeat(active, quorum, b.broker_sends_heartbeat(now, offset), now)
        b.broker_handles_heartbeat_response(reply.error_code, reply.body)
        now += BROKER_HEARTBEAT_INTERVAL_MS
    assert (b.state, b.is_fenced) == (RUNNING, False)
    assert not broker_registrations(quorum)[4].fenced


# --------------------------------------------------------------------------------------------
# endpoints: resolved per process run (EP-1..EP-5), refused unresolved (BR-4.8), and what a
# broker's DescribeCluster lists (L-27)


def test_broker_listener_info_puts_the_inter_broker_listener_first_and_resolves():
    """EP-1: ``ListenerInfo.create(Some(inter.broker.listener.name), ...)`` then a blank host
    -> the canonical host name, port 0 -> the port this run bound; as configured when the
    node registers unresolved (EP-6)."""
    from impl.config import Endpoint
    from impl.lifecycle import broker_listener_info
    endpoints = [Endpoint("CLIENT", None, 0, "SASL_SSL"), Endpoint("INTERNAL", "b2", 9192, "SSL")]
    info = broker_listener_info(endpoints, "INTERNAL", "b2.example", {"CLIENT": 40001,
                                                                     "INTERNAL": 9192})
    assert [(i["Name"], i["Host"], i["Port"]) for i in info] == [
        ("INTERNAL", "b2", 9192), ("CLIENT", "b2.example", 40001)]
    raw = broker_listener_info(endpoints, "INTERNAL", "b2.example", {"CLIENT": 40001},
                               resolve=False)
    assert [(i["Name"], i["Host"], i["Port"]) for i in raw] == [
        ("INTERNAL", "b2", 9192), ("CLIENT", "", 0)]


def endpoints_cluster(bugs=(), registered=(1,)):
    """C1 leads; B2 advertises CLIENT://:0 (a blank host, an ephemeral port) and
    INTERNAL://b2:9192, runs its BrokerLifecycleManager, and is registered in the initial log
    (``registered``); D1 asks B2 for the brokers on CLIENT."""
    from impl.cluster import Cluster
    from impl.cluster_config import (DESCRIBE, KRAFT_MODE, ClientConfig, ClusterConfig,
                                     NodeConfig)
    from impl.protocol.api_keys import DESCRIBE_CLUSTER
    common = (("controller.quorum.voters", "0@c1:9093"),
              ("controller.listener.names", "CONTROLLER"),
              ("listener.security.protocol.map", "CLIENT:SASL_SSL,CONTROLLER:SSL,INTERNAL:SSL"))
    nodes = (
        NodeConfig(0, "C1", "controller", (("process.roles", "controller"), ("node.id", "0"),
                                           ("listeners", "CONTROLLER://c1:9093")) + common,
                   "controller"),
        NodeConfig(1, "B2", "broker", (("process.roles", "broker"), ("node.id", "1"),
                                       ("listeners", "CLIENT://:0,INTERNAL://b2:9192"),
                                       ("advertised.listeners", "CLIENT://:0,INTERNAL://b2:9192"),
                                       ("inter.broker.listener.name", "INTERNAL")) + common,
                   "broker"))
    client = ClientConfig("D1", "admin", DESCRIBE, 1, "CLIENT", DESCRIBE_CLUSTER)
    acls = frozenset({("broker", "CLUSTER_ACTION", "CLUSTER")})
    return Cluster(ClusterConfig("broker-endpoints", KRAFT_MODE, nodes, (client,), acls,
                                 broker_registration=True, initial_controller=0,
                                 initially_registered_brokers=tuple(registered),
                                 bugs=frozenset(bugs)), seed=0)


def lifecycle_round(cluster, api_key=BROKER_REGISTRATION):
    """B2 sends its next lifecycle request to C1, C1 handles it (and commits what it wrote),
    B2 handles the answer; the request as decoded from its bytes and the answer's error."""
    from impl.sim import Event
    send = ("broker_sends_registration" if api_key == BROKER_REGISTRATION
            else "broker_sends_heartbeat")
    assert cluster.apply(Event(send, (1,)))
    (m,) = cluster.network.in_flight()
    request = cluster.view(m)
    handle = ("controller_handles_broker_registration" if api_key == BROKER_REGISTRATION
              else "controller_handles_broker_heartbeat")
    assert cluster.apply(Event(handle, (m.id,)))
    cluster.apply(Event("controller_commits_records", ()))
    (r,) = cluster.network.in_flight()
    answer = cluster.view(r)
    assert cluster.apply(Event("broker_handles_lifecycle_response", (r.id,)))
    return request, answer.error


def restart(cluster):
    """B2 crashes and starts again: a new process run, which learns the controller."""
    from impl.sim import Event
    for name in ("node_crashes", "node_restarts", "broker_learns_controller"):
        assert cluster.apply(Event(name, (1,))), name


def test_each_broker_run_registers_its_own_resolved_endpoint():
    """EP-1, EP-5, BL-2: the BrokerRegistrationRequest's Listeners are this run's (the
    inter-broker listener first; CLIENT at the canonical host name and the port the run
    bound); a restart binds a fresh port, and its RegisterBrokerRecord carries it (BR-5)."""
    from impl.cluster.wiring import canonical_host_name
    cluster = endpoints_cluster()
    b2, host = cluster.nodes[1], canonical_host_name("B2")
    first = b2.bound_ports[0]["CLIENT"]
    # registered in the initial log by the running process, with its resolved endpoints
    assert cluster.broker_registrations()[0].endpoints == (("INTERNAL", "b2", 9192),
                                                           ("CLIENT", host, first))
    request, error = lifecycle_round(cluster)                  # BL-8: registers again
    assert error == NONE
    assert request.listeners == (("INTERNAL", "b2", 9192), ("CLIENT", host, first))
    restart(cluster)
    second = b2.bound_ports[1]["CLIENT"]
    assert second != first and cluster.ephemeral_port_run(1, second) == 1
    assert b2.lifecycle.listeners[1] == {"Name": "CLIENT", "Host": host, "Port": second,
                                         "SecurityProtocol": 3}


def test_br_4_8_an_unresolved_broker_registration_is_refused_with_unknown_server_error():
    """BR-4.8 (``ListenerInfo.toBrokerRegistrationRecord``, EP-4): a broker that registers its
    listeners as configured (registers-unresolved-endpoints) sends CLIENT with a blank host and
    port 0; the active controller refuses it with UNKNOWN_SERVER_ERROR (-1), after the
    duplicate-registration check, BrokerEpoch -1, no record; the broker stays unregistered."""
    from impl.cluster.wiring import REGISTERS_UNRESOLVED_ENDPOINTS
    cluster = endpoints_cluster(bugs=(REGISTERS_UNRESOLVED_ENDPOINTS,), registered=())
    before = len(cluster.quorum.log)
    request, error = lifecycle_round(cluster)
    assert request.listeners == (("INTERNAL", "b2", 9192), ("CLIENT", "", 0))
    assert error == UNKNOWN_SERVER_ERROR
    assert len(cluster.quorum.log) == before and not cluster.quorum.uncommitted
    assert cluster.broker_lifecycle(1) == (False, -1)
    assert cluster.nodes[1].lifecycle.last_error == UNKNOWN_SERVER_ERROR
    # resolved (the default), the same registration goes through
    assert lifecycle_round(endpoints_cluster(registered=()))[1] == NONE


def test_broker_describe_cluster_leaves_out_fenced_brokers():
    """L-27 (``KRaftMetadataCache.getAliveBrokerNodes``: ``filterNot(_.fenced())``): a broker
    answers from the registrations it has replayed, unfenced ones only, at the endpoints their
    records carry; a broker that is fenced again (BH-9) drops out once that is replayed."""
    from impl.describe_cluster import BrokerDescribeCluster, kraft_alive_brokers
    quorum, active, _ = setup()
    b4 = broker()
    b5 = BrokerLifecycleManager(5, random.Random(5), CLUSTER,
                                ({"Name": "INTERNAL", "Host": "b5", "Port": 9192,
                                  "SecurityProtocol": 0},))
    for b in (b4, b5):
        reply = register(active, quorum, b.broker_sends_registration(0))
        b.broker_handles_registration_response(reply.error_code, reply.body)
    # B4 catches up and is unfenced; B5 stays fenced
    reply = heartbeat(active, quorum, b4.broker_sends_heartbeat(0, quorum.next_offset()), 0)
    assert reply.body["IsFenced"] is False
    describe = BrokerDescribeCluster(CLUSTER, AUTH)
    context = RequestContext("INTERNAL", "PLAINTEXT", ALICE)

    def described():
        quorum.catch_up(4)
        brokers = kraft_alive_brokers(quorum.image(4).brokers)
        body = describe.handle(context, 1, {"EndpointType": 1}, brokers=brokers)
        return [(n["BrokerId"], n["Host"], n["Port"]) for n in body["Brokers"]]
    assert described() == [(4, "b4", 9092)]
    assert [b.broker_id for b in kraft_alive_brokers(quorum.image(4).brokers,
                                                     include_fenced=True)] == [4, 5]
    assert active.controller_fences_stale_broker(4, quorum, TIMEOUT + 1) is not None
    quorum.commit()
    assert described() == []
