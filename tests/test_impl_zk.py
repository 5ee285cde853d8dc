"""The reference implementation's ZooKeeper (``impl/zk.py``) and ZK-mode controller
(``impl/zk_controller.py``), rules Z-1..Z-7 of ``kafka-behaviour.md`` section 4.

- ZooKeeper: sessions (negotiated timeout, tickTime buckets, expiry by time and by fault),
  ephemerals, zkVersions, sequential names, ``multi`` atomicity and its result codes, one-shot
  watches and their triggers.
- Controller: election with the epoch bump (Z-1), the event queue writing behind the CheckOp
  (Z-2), the zombie whose write is fenced with BADVERSION after a new election and resigns
  (Z-3, Z-7) -- and whose write lands when the CheckOp is switched off (the injected bug), the
  non-controller write path (Z-5), the metadata cache learning the controller late, Z-4 epoch
  fencing, Z-6 KRaft takeover, and a seeded random schedule that keeps the single-writer
  property with the CheckOp.
"""
import json
import random

import pytest

from impl.zk import (CheckOp, Code, CreateMode, CreateOp, DeleteOp, EventType, KeeperException,
                     KeeperState, SetDataOp, WatchedEvent, ZooKeeper, validate_path)
from impl.protocol.errors import NOT_CONTROLLER, STALE_CONTROLLER_EPOCH
from impl.zk_controller import (CONTROLLER_EPOCH_PATH, CONTROLLER_PATH, ControllerMovedException,
                                KafkaZkClient, ZkBroker, ZkCluster, ZkWrite, acl_mutation,
                                config_mutation, decode_controller, encode_controller, zk_writes)


def ev(kind, path):
    return WatchedEvent(kind, KeeperState.SYNC_CONNECTED, path)


EXPIRED = WatchedEvent(EventType.NONE, KeeperState.EXPIRED, None)


@pytest.fixture
def zk():
    return ZooKeeper(tick_time_ms=2000)


# ---- ZooKeeper: sessions ---------------------------------------------------------------------


def test_session_timeout_is_negotiated_into_the_servers_bounds(zk):
    low = zk.create_session(100, 0)
    high = zk.create_session(10 ** 6, 0)
    kafka = zk.create_session(18000, 0)
    assert (zk.session_timeout_ms(low), zk.session_timeout_ms(high),
            zk.session_timeout_ms(kafka)) == (4000, 40000, 18000)
    assert len({low, high, kafka}) == 3


def test_session_expires_by_time_in_tick_buckets_unless_touched(zk):
    a = zk.create_session(4000, 0)
    b = zk.create_session(4000, 0)
    # ExpiryQueue.roundToNextInterval(0 + 4000) = 6000 with tickTime 2000
    assert zk.session_deadline_ms(a) == 6000
    assert zk.expire_sessions(5999) == []
    assert zk.touch_session(b, 5000)            # b pings: deadline round(9000) = 10000
    assert zk.expire_sessions(6000) == [a]
    assert not zk.is_session_alive(a) and zk.is_session_alive(b)
    assert zk.poll_events(a) == [EXPIRED]
    assert not zk.touch_session(a, 6000)
    assert zk.expire_sessions(10000) == [b]


def test_expired_session_gets_session_expired_and_loses_its_ephemerals(zk):
    owner = zk.create_session(18000, 0)
    other = zk.create_session(18000, 0)
    zk.create(owner, "/eph", b"x", mode=CreateMode.EPHEMERAL, now_ms=1)
    zk.create(owner, "/persistent", b"y", now_ms=1)
    assert zk.exists(other, "/eph", now_ms=2).ephemeral_owner == owner
    zk.expire_session(owner, 3)
    assert zk.exists(other, "/eph", now_ms=4) is None
    assert zk.exists(other, "/persistent", now_ms=4).ephemeral_owner == 0
    with pytest.raises(KeeperException) as e:
        zk.get_data(owner, "/persistent", now_ms=5)
    assert e.value.code == Code.SESSIONEXPIRED
    assert str(e.value) == "KeeperErrorCode = Session expired"
    assert zk.txn_log[-1].kind == "closeSession" and zk.txn_log[-1].paths == ("/eph",)


def test_closed_session_tells_its_client_closed_not_expired(zk):
    s = zk.create_session(18000, 0)
    zk.close_session(s, 1)
    assert zk.poll_events(s) == [WatchedEvent(EventType.NONE, KeeperState.CLOSED, None)]


# ---- ZooKeeper: znodes and versions ----------------------------------------------------------


def test_versions_and_stats(zk):
    s = zk.create_session(18000, 0)
    zk.create(s, "/a", b"1", now_ms=10)
    data, stat = zk.get_data(s, "/a", now_ms=11)
    assert (data, stat.version, stat.ctime, stat.czxid == stat.mzxid) == (b"1", 0, 10, True)
    stat2 = zk.set_data(s, "/a", b"22", 0, now_ms=12)
    assert (stat2.version, stat2.data_length, stat2.mtime, stat2.czxid) == (1, 2, 12, stat.czxid)
    assert stat2.mzxid > stat.mzxid
    with pytest.raises(KeeperException) as e:
        zk.set_data(s, "/a", b"3", 0, now_ms=13)
    assert e.value.code == Code.BADVERSION and e.value.path == "/a"
    assert zk.set_data(s, "/a", b"3", -1, now_ms=13).version == 2     # -1 matches any
    with pytest.raises(KeeperException) as e:
        zk.delete(s, "/a", 1, now_ms=14)
    assert e.value.code == Code.BADVERSION
    zk.delete(s, "/a", 2, now_ms=14)
    assert zk.exists(s, "/a", now_ms=15) is None


def test_create_errors_and_children(zk):
    s = zk.create_session(18000, 0)
    for path, code in (("/x/y", Code.NONODE),):
        with pytest.raises(KeeperException) as e:
            zk.create(s, path, now_ms=1)
        assert e.value.code == code
    zk.create(s, "/x", now_ms=1)
    zk.create(s, "/x/y", now_ms=1)
    with pytest.raises(KeeperException) as e:
        zk.create(s, "/x/y", now_ms=1)
    assert e.value.code == Code.NODEEXISTS
    with pytest.raises(KeeperException) as e:
        zk.delete(s, "/x", now_ms=1)
    assert e.value.code == Code.NOTEMPTY
    stat = zk.exists(s, "/x", now_ms=1)
    assert (stat.num_children, stat.cversion) == (1, 1)
    zk.create(s, "/e", mode=CreateMode.EPHEMERAL, now_ms=1)
    with pytest.raises(KeeperException) as e:
        zk.create(s, "/e/child", now_ms=1)
    assert e.value.code == Code.NOCHILDRENFOREPHEMERALS
    assert zk.get_children(s, "/", now_ms=1) == ["e", "x"]


def test_sequential_names_come_from_the_parents_cversion(zk):
    s = zk.create_session(18000, 0)
    zk.create(s, "/changes", now_ms=1)
    first = zk.create(s, "/changes/c_", mode=CreateMode.PERSISTENT_SEQUENTIAL, now_ms=1)
    zk.create(s, "/changes/other", now_ms=1)
    third = zk.create(s, "/changes/c_", mode=CreateMode.PERSISTENT_SEQUENTIAL, now_ms=1)
    assert (first, third) == ("/changes/c_0000000000", "/changes/c_0000000002")


@pytest.mark.parametrize("path, message", [
    ("", "Path length must be > 0"), ("a", "Path must start with / character"),
    ("/a/", "Path must not end with / character"), ("/a//b", "empty node name specified @3"),
    ("/a/./b", "relative paths not allowed @1")])
def test_invalid_paths_are_rejected_by_the_client(path, message):
    with pytest.raises(ValueError, match=message):
        validate_path(path)


# ---- ZooKeeper: multi ------------------------------------------------------------------------


def test_multi_is_all_or_nothing_with_zookeepers_result_codes(zk):
    s = zk.create_session(18000, 0)
    zk.create(s, "/epoch", b"1", now_ms=1)
    zk.set_data(s, "/epoch", b"2", now_ms=1)                         # version 1
    before = (zk.paths(), zk.last_zxid, len(zk.txn_log))
    ops = [CreateOp("/new", b"n"), CheckOp("/epoch", 0), SetDataOp("/epoch", b"3")]
    with pytest.raises(KeeperException) as e:
        zk.multi(s, ops, now_ms=2)
    assert e.value.code == Code.BADVERSION
    assert [(r.op, r.code) for r in e.value.results] == [
        ("create", Code.OK), ("check", Code.BADVERSION), ("setData", Code.RUNTIMEINCONSISTENCY)]
    assert (zk.paths(), zk.last_zxid, len(zk.txn_log)) == before    # nothing applied
    results = zk.multi(s, [CreateOp("/new", b"n"), CheckOp("/epoch", 1),
                           SetDataOp("/epoch", b"3", 1), SetDataOp("/new", b"m", 0)],
                       now_ms=3, tag="t")
    # later ops see earlier ones; one transaction, one zxid
    assert [r.code for r in results] == [Code.OK] * 4
    assert results[2].stat.version == 2 and results[3].stat.version == 1
    assert zk.peek("/new")[1].czxid == zk.peek("/new")[1].mzxid == zk.last_zxid == before[1] + 1
    assert zk.txn_log[-1].tag == "t" and zk.txn_log[-1].paths == ("/new", "/epoch", "/new")


def test_multi_check_on_missing_node_is_nonode_and_session_is_checked(zk):
    s = zk.create_session(18000, 0)
    with pytest.raises(KeeperException) as e:
        zk.multi(s, [CheckOp("/missing", 0)], now_ms=1)
    assert e.value.code == Code.NONODE
    zk.expire_session(s, 2)
    with pytest.raises(KeeperException) as e:
        zk.multi(s, [CreateOp("/a")], now_ms=3)
    assert e.value.code == Code.SESSIONEXPIRED
    assert zk.peek("/a") is None


def test_multi_delete_then_create_keeps_ephemeral_ownership_right(zk):
    a = zk.create_session(18000, 0)
    b = zk.create_session(18000, 0)
    zk.create(a, "/lock", mode=CreateMode.EPHEMERAL, now_ms=1)
    zk.multi(b, [DeleteOp("/lock", 0), CreateOp("/lock", b"", CreateMode.EPHEMERAL)], now_ms=2)
    assert zk.ephemerals(a) == [] and zk.ephemerals(b) == ["/lock"]
    zk.expire_session(a, 3)
    assert zk.peek("/lock") is not None
    zk.expire_session(b, 4)
    assert zk.peek("/lock") is None


# ---- ZooKeeper: watches ----------------------------------------------------------------------


def test_data_watch_is_one_shot(zk):
    w = zk.create_session(18000, 0)
    s = zk.create_session(18000, 0)
    zk.create(s, "/a", now_ms=1)
    zk.get_data(w, "/a", watch=True, now_ms=1)
    zk.set_data(s, "/a", b"1", now_ms=2)
    zk.set_data(s, "/a", b"2", now_ms=3)
    assert zk.poll_events(w) == [ev(EventType.NODE_DATA_CHANGED, "/a")]
    assert zk.poll_events(s) == []                   # the writer had no watch


def test_exists_watch_on_missing_node_fires_created_and_get_data_leaves_none(zk):
    w = zk.create_session(18000, 0)
    s = zk.create_session(18000, 0)
    with pytest.raises(KeeperException):
        zk.get_data(w, "/b", watch=True, now_ms=1)   # NONODE: no watch left
    assert zk.exists(w, "/a", watch=True, now_ms=1) is None
    zk.create(s, "/b", now_ms=2)
    zk.create(s, "/a", now_ms=2)
    assert zk.poll_events(w) == [ev(EventType.NODE_CREATED, "/a")]


def test_child_and_delete_watches_one_event_per_session(zk):
    w = zk.create_session(18000, 0)
    s = zk.create_session(18000, 0)
    zk.create(s, "/p", now_ms=1)
    zk.get_children(w, "/", watch=True, now_ms=1)
    zk.get_children(w, "/p", watch=True, now_ms=1)
    zk.get_data(w, "/p", watch=True, now_ms=1)
    zk.delete(s, "/p", now_ms=2)
    assert zk.poll_events(w) == [ev(EventType.NODE_DELETED, "/p"),
                                 ev(EventType.NODE_CHILDREN_CHANGED, "/")]


def test_expiry_tells_other_watchers_and_drops_the_expired_sessions_watches(zk):
    owner = zk.create_session(18000, 0)
    w = zk.create_session(18000, 0)
    zk.create(owner, "/controller", mode=CreateMode.EPHEMERAL, now_ms=1)
    zk.exists(owner, "/other", watch=True, now_ms=1)
    zk.exists(w, "/controller", watch=True, now_ms=1)
    zk.expire_session(owner, 2)
    zk.create(w, "/other", now_ms=3)
    assert zk.poll_events(w) == [ev(EventType.NODE_DELETED, "/controller")]
    assert zk.poll_events(owner) == [EXPIRED]        # not NodeCreated for /other


def test_watches_fire_only_after_a_multi_commits(zk):
    w = zk.create_session(18000, 0)
    s = zk.create_session(18000, 0)
    zk.create(s, "/a", now_ms=1)
    zk.get_data(w, "/a", watch=True, now_ms=1)
    with pytest.raises(KeeperException):
        zk.multi(s, [SetDataOp("/a", b"x"), CheckOp("/a", 7)], now_ms=2)
    assert zk.poll_events(w) == []
    zk.multi(s, [SetDataOp("/a", b"x"), CheckOp("/a", 1)], now_ms=3)
    assert zk.poll_events(w) == [ev(EventType.NODE_DATA_CHANGED, "/a")]


# ---- Z-1 election ----------------------------------------------------------------------------


def test_bootstrap_matches_the_models_initial_zk_state():
    c = ZkCluster(3, now_ms=5)
    assert c.controller() == 0 and c.controller_epoch() == (1, 1)
    assert [b.known_controller for b in c.brokers] == [0, 0, 0]
    assert [b.is_active for b in c.brokers] == [True, False, False]
    assert (c.brokers[0].epoch, c.brokers[0].epoch_zk_version) == (1, 1)
    data, stat = c.zk.peek(CONTROLLER_PATH)
    # MG-4: ControllerZNode.encode writes version 2, a ZK controller's kraftControllerEpoch -1
    assert json.loads(data) == {"version": 2, "brokerid": 0, "timestamp": "5",
                                "kraftControllerEpoch": -1}
    assert stat.ephemeral_owner == c.brokers[0].session_id
    assert c.zk.peek(CONTROLLER_EPOCH_PATH)[0] == b"1"
    empty = ZkCluster(2, initial_controller=None)
    assert empty.controller() == -1 and empty.controller_epoch() == (0, 0)
    assert [b.known_controller for b in empty.brokers] == [-1, -1]


def test_election_is_enabled_only_without_a_controller_and_bumps_the_epoch():
    c = ZkCluster(3)
    assert c.broker_elects_controller(1, 10) is None            # /controller exists
    assert c.broker_elects_controller(0, 10) is None            # already active
    c.zk_expires_session(0, 20)
    assert c.controller() == -1
    assert c.broker_elects_controller(0, 21) is None            # expiry not handled yet
    assert c.broker_elects_controller(1, 22) is True
    assert c.controller() == 1 and c.controller_epoch() == (2, 2)
    assert (c.brokers[1].epoch, c.brokers[1].epoch_zk_version) == (2, 2)
    assert c.broker_elects_controller(2, 23) is None


def test_election_multi_loses_to_a_concurrent_winner(zk):
    """Z-1: the create of /controller and the epoch CAS are one multi: a rival's /controller
    (NODEEXISTS) leaves the epoch untouched and is ControllerMovedException."""
    rival, me = KafkaZkClient(zk), KafkaZkClient(zk)
    rival.connect(0)
    me.connect(0)
    me.create_recursive(CONTROLLER_EPOCH_PATH, 0, b"4")
    zk.create(rival.session_id, CONTROLLER_PATH, encode_controller(7, 0),
              mode=CreateMode.EPHEMERAL, now_ms=0)
    with pytest.raises(ControllerMovedException):
        me.register_controller_and_increment_controller_epoch(3, 1)
    assert zk.peek(CONTROLLER_EPOCH_PATH)[0] == b"4"
    zk.expire_session(rival.session_id, 2)
    assert me.register_controller_and_increment_controller_epoch(3, 3) == (5, 1)


def test_election_recognises_its_own_earlier_write(zk):
    """Z-1: the multi was applied but the reply was lost (CONNECTIONLOSS); the retry gets
    NODEEXISTS, and since /controller holds our id and the epoch is the one we wrote, it is
    our own write: success with the epoch's zkVersion."""
    me = KafkaZkClient(zk)
    me.connect(0)
    real_multi, lost = zk.multi, []

    def lossy(session_id, ops, **kw):
        results = real_multi(session_id, ops, **kw)
        if not lost:
            lost.append(True)
            raise connection_loss()
        return results

    zk.multi = lossy
    assert me.register_controller_and_increment_controller_epoch(3, 1) == (1, 1)
    assert lost and decode_controller(zk.peek(CONTROLLER_PATH)[0], 0).controller_id == 3


def connection_loss():
    return KeeperException(Code.CONNECTIONLOSS)


# ---- Z-2 / Z-3 the event queue and the zombie ------------------------------------------------


def cfg(tag):
    return config_mutation(tag, "topics", "orders", {"retention.ms": "1000"})


def test_mutation_is_written_only_when_its_event_runs():
    c = ZkCluster(2)
    c.controller_accepts_mutation(0, cfg("r1"))
    assert c.writes() == () and c.zk.peek("/config/topics/orders") is None
    result = c.controller_processes_event(0, 5)
    assert (result.tag, result.error_code) == ("r1", 0)
    assert c.writes() == (("r1", 0, 1),)
    data, stat = c.zk.peek("/config/topics/orders")
    assert json.loads(data) == {"version": 1, "config": {"retention.ms": "1000"}}
    assert json.loads(c.zk.peek("/config/changes/config_change_0000000000")[0]) == {
        "version": 2, "entity_path": "topics/orders"}
    c.controller_accepts_mutation(0, cfg("r2"))
    c.controller_processes_event(0, 6)
    assert c.zk.peek("/config/topics/orders")[1].version == 1        # set, not re-created
    assert c.controller_processes_event(0, 7) is None                # queue empty


def test_controller_writes_carry_the_check_op_on_the_epoch_zk_version():
    c = ZkCluster(2)
    alice = [{"principal": "User:alice", "operation": "Write"}]
    c.controller_accepts_mutation(0, acl_mutation("a", "Topic", "orders", alice))
    seen = []
    real_multi = c.zk.multi

    def spy(session_id, ops, **kw):
        seen.append(list(ops))
        return real_multi(session_id, ops, **kw)

    c.zk.multi = spy
    assert c.controller_processes_event(0, 1).error_code == 0
    assert all(ops[0] == CheckOp(CONTROLLER_EPOCH_PATH, 1) for ops in seen) and len(seen) == 3
    assert json.loads(c.zk.peek("/kafka-acl/Topic/orders")[0])["acls"] == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Write", "host": "*"}]
    assert c.zk.peek("/kafka-acl-changes/acl_changes_0000000000")[0] == b"Topic:orders"


def test_event_on_a_broker_that_is_not_active_is_not_controller():
    c = ZkCluster(2)
    c.controller_accepts_mutation(1, cfg("r"))
    result = c.controller_processes_event(1, 1)
    assert (result.error_code, c.writes()) == (NOT_CONTROLLER, ())


def zombie_cluster(check):
    """Broker 0's session expires (it does not notice), broker 1 wins the next election."""
    c = ZkCluster(3, check_epoch_zk_version=check)
    c.controller_accepts_mutation(0, cfg("zombie-write"))
    assert c.zk_expires_session(0, 100) is True
    assert c.zk_expires_session(0, 101) is None       # already expired, not yet handled
    assert c.brokers[0].is_active and c.brokers[0].session_expired      # the zombie
    assert c.broker_elects_controller(1, 110) is True
    return c


def test_zombie_write_is_fenced_by_badversion_and_the_zombie_resigns():
    c = zombie_cluster(check=True)
    result = c.controller_processes_event(0, 120)
    assert result.error_code == NOT_CONTROLLER
    assert result.message == "Controller epoch zkVersion check fails. Expected zkVersion = 1"
    assert c.writes() == () and c.zk.peek("/config/topics/orders") is None
    zombie = c.brokers[0]
    assert not zombie.is_active and (zombie.epoch, zombie.epoch_zk_version) == (-1, -1)
    assert zombie.session_expired                     # resigned, expiry still to handle
    assert c.controller() == 1
    # the new controller's write goes through under epoch 2
    c.controller_accepts_mutation(1, cfg("new-write"))
    assert c.controller_processes_event(1, 130).error_code == 0
    assert c.writes() == (("new-write", 1, 2),)


def test_without_the_check_op_the_zombie_write_lands_the_injected_bug():
    c = zombie_cluster(check=False)
    result = c.controller_processes_event(0, 120)
    assert result.error_code == 0
    assert c.writes() == (("zombie-write", 0, 1),)    # epoch 1 while /controller_epoch is 2
    assert c.controller_epoch() == (2, 2) and c.brokers[0].is_active


def test_zombie_write_before_any_new_election_still_lands():
    """Z-2 fences by the epoch zkVersion, not by the session: until someone else wins, the
    zombie's write (through its re-initialized session) passes the CheckOp, as in the model."""
    c = ZkCluster(2)
    old_session = c.brokers[0].session_id
    c.controller_accepts_mutation(0, cfg("early"))
    c.zk_expires_session(0, 10)
    assert c.controller_processes_event(0, 11).error_code == 0
    assert c.writes() == (("early", 0, 1),)
    assert c.brokers[0].session_id != old_session and c.brokers[0].session_expired


def test_handling_the_expiry_resigns_and_learns_the_current_controller():
    c = zombie_cluster(check=True)
    zombie = c.brokers[0]
    assert c.broker_learns_controller(0, 111) is None        # cannot while expiry unhandled
    assert c.broker_handles_session_expiry(0, 112) is True
    assert not zombie.is_active and not zombie.session_expired
    assert zombie.known_controller == 1 and zombie.epoch == -1
    assert c.zk.is_session_alive(zombie.session_id)
    assert c.broker_handles_session_expiry(0, 113) is None
    # its queued event now answers NOT_CONTROLLER without touching ZooKeeper
    txns = len(c.zk.txn_log)
    assert c.controller_processes_event(0, 114).error_code == NOT_CONTROLLER
    assert len(c.zk.txn_log) == txns
    # it watches /controller again: the next change reaches it
    c.zk_expires_session(1, 120)
    assert [e.type for e in zombie.pending_controller_events()] == [EventType.NODE_DELETED]


def test_trigger_controller_move_deletes_controller_behind_the_check():
    c = ZkCluster(2)
    c.brokers[0].trigger_controller_move(5)
    assert c.controller() == -1 and not c.brokers[0].is_active
    assert c.broker_elects_controller(1, 6) is True and c.controller_epoch() == (2, 2)


def test_negative_expected_epoch_zk_version_other_than_match_any_is_rejected(zk):
    client = KafkaZkClient(zk)
    client.connect(0)
    with pytest.raises(ValueError, match="should be non-negative or equal to -1"):
        client.retry_request_until_connected(CreateOp("/x"), -2, 1)


# ---- the metadata cache learns late ----------------------------------------------------------


def test_metadata_cache_learns_the_new_controller_only_in_its_own_step():
    c = ZkCluster(3)
    c.zk_expires_session(0, 10)
    c.broker_elects_controller(1, 11)
    b2 = c.brokers[2]
    assert b2.known_controller == 0                               # stale: late by design
    assert b2.pending_controller_events() == [ev(EventType.NODE_DELETED, CONTROLLER_PATH)]
    assert c.broker_learns_controller(2, 12) == 1
    assert b2.known_controller == 1 and b2.pending_controller_events() == []
    assert c.broker_learns_controller(2, 13) is None             # nothing new
    # the re-registered watch sees the next move
    c.zk_expires_session(1, 20)
    assert b2.pending_controller_events() == [ev(EventType.NODE_DELETED, CONTROLLER_PATH)]
    assert c.broker_learns_controller(2, 21) == -1


def test_restarted_broker_knows_no_controller_until_it_learns():
    c = ZkCluster(3)
    c.node_crashes(2)
    assert c.broker_learns_controller(2, 5) is None              # dead
    c.node_restarts(2, 6)
    assert c.brokers[2].known_controller == -1 and c.brokers[2].incarnation == 1
    assert c.broker_learns_controller(2, 7) == 0


# ---- Z-5 non-controller writers --------------------------------------------------------------


def test_broker_writes_zk_directly_guarded_only_by_some_controller():
    c = ZkCluster(3)
    assert c.broker_writes_zk(2, cfg("direct"), 5) == 0
    assert c.writes() == (("direct", 2, -1),)
    c.zk_expires_session(0, 6)                                    # no /controller now
    assert c.broker_writes_zk(2, cfg("none"), 7) == STALE_CONTROLLER_EPOCH
    assert c.writes() == (("direct", 2, -1),)


def test_direct_write_check_passes_for_any_controller_last_writer_wins(zk):
    """Z-5: the CheckOp is on /controller's zkVersion, which is 0 for every ephemeral
    /controller: a write prepared under one controller lands under the next."""
    c = ZkCluster(3)
    writer = c.brokers[2].zk_client
    registration = writer.get_controller_registration(1)
    assert registration.controller_id == 0 and registration.zk_version == 0
    c.zk_expires_session(0, 2)
    c.broker_elects_controller(1, 3)
    writer.set_or_create_entity_configs(cfg("late"), 4, tag=ZkWrite("late", 2, -1),
                                        registration=registration)
    assert c.writes() == (("late", 2, -1),)


def test_direct_write_refused_when_a_kraft_controller_holds_controller():
    """Z-5 and Z-6: a KRaft controller takes /controller (persistent, epoch CAS); ZK brokers'
    direct writes are then ControllerMovedException, and their sessions no longer matter."""
    c = ZkCluster(2)
    kraft = KafkaZkClient(c.zk)
    kraft.connect(0)
    assert kraft.try_register_kraft_controller_as_active(3000, 5, 1) == (2, 2)
    reg = decode_controller(*c.zk.peek(CONTROLLER_PATH)[:1], 0)
    assert (reg.controller_id, reg.kraft_epoch) == (3000, 5)
    assert c.zk.peek(CONTROLLER_PATH)[1].ephemeral_owner == 0
    assert c.broker_writes_zk(1, cfg("x"), 2) == STALE_CONTROLLER_EPOCH
    with pytest.raises(ControllerMovedException, match="same or newer epoch 5"):
        kraft.try_register_kraft_controller_as_active(3001, 5, 3)
    # the deposed ZK controller's metadata cache learns of it (MG-3: KRaftCachedControllerId);
    # its KafkaController still believes it is active until its next event, whose write
    # fails the /controller_epoch CheckOp (Z-2) and resigns it (Z-3)
    assert c.broker_learns_controller(0, 4) == 3000 and c.brokers[0].known_controller_kraft
    assert c.brokers[0].is_active and c.brokers[0].pending_controller_events()
    c.controller_accepts_mutation(0, cfg("late"))
    r = c.controller_processes_event(0, 5)
    assert r.error_code == NOT_CONTROLLER and not c.brokers[0].is_active
    assert c.writes() == ()


# ---- Z-4 receivers fence stale controller epochs ---------------------------------------------


def test_requests_from_an_older_controller_epoch_are_stale():
    c = ZkCluster(3)
    b2 = c.brokers[2]
    assert b2.fence_controller_request(1) == 0
    c.zk_expires_session(0, 1)
    c.broker_elects_controller(1, 2)
    assert b2.fence_controller_request(2) == 0
    assert b2.fence_controller_request(1) == STALE_CONTROLLER_EPOCH   # the zombie's RPC


# ---- sessions driven by time -----------------------------------------------------------------


def test_pings_keep_a_broker_session_alive_and_a_dead_broker_expires():
    """Broker 1 pings every timeout/3 = 2000 ms; broker 0 (crashed) never does: its deadline
    round(0 + 6000) = 8000 passes, ZooKeeper expires it and /controller goes."""
    c = ZkCluster(2, session_timeout_ms=6000)
    c.node_crashes(0)
    expired = {}
    for now in range(0, 20001, 1000):
        pinged = c.brokers[1].zk_client.maybe_ping(now)
        assert pinged == (now > 0 and now % 2000 == 0)
        for sid in c.zk.expire_sessions(now):
            expired[sid] = now
    assert expired == {c.brokers[0].session_id: 8000}
    assert c.controller() == -1 and c.zk.is_session_alive(c.brokers[1].session_id)


# ---- the single-writer property under a seeded random schedule -------------------------------


def epochs_at_writes(zk):
    """The /controller_epoch value at each ZkWrite, replayed from the transaction log."""
    epoch, out = 0, []
    for txn in zk.txn_log:
        if CONTROLLER_EPOCH_PATH in txn.paths and txn.kind == "multi":
            epoch += 1
        if isinstance(txn.tag, ZkWrite):
            out.append((txn.tag, epoch))
    return out


def random_run(seed, check, steps=400):
    rng = random.Random(seed)
    c = ZkCluster(3, check_epoch_zk_version=check)
    results = []
    for t in range(1, steps + 1):
        n = rng.randrange(3)
        action = rng.choice(("elect", "accept", "process", "process", "expire", "handle",
                             "learn", "direct"))
        if action == "elect":
            results.append(c.broker_elects_controller(n, t))
        elif action == "accept":
            if c.brokers[n].is_active:
                c.controller_accepts_mutation(n, cfg(f"m{t}"))
        elif action == "process":
            r = c.controller_processes_event(n, t)
            results.append(r and r.error_code)
        elif action == "expire" and rng.random() < 0.3:
            results.append(c.zk_expires_session(n, t))
        elif action == "handle":
            results.append(c.broker_handles_session_expiry(n, t))
        elif action == "learn":
            results.append(c.broker_learns_controller(n, t))
        elif action == "direct" and not c.brokers[n].is_active:
            results.append(c.broker_writes_zk(n, cfg(f"d{t}"), t))
    return c, results


def test_random_schedule_is_deterministic_and_keeps_single_writer_with_the_check():
    c, results = random_run(7, check=True)
    c2, results2 = random_run(7, check=True)
    assert results == results2 and c.writes() == c2.writes()
    assert [t.zxid for t in c.zk.txn_log] == [t.zxid for t in c2.zk.txn_log]
    controller_writes = [(w, e) for w, e in epochs_at_writes(c.zk) if w.writer_epoch != -1]
    assert controller_writes, "the schedule made no controller write"
    assert all(w.writer_epoch == e for w, e in controller_writes)
    assert c.controller_epoch()[0] > 2                    # several elections happened


def test_random_schedules_without_the_check_break_single_writer():
    broken = 0
    for seed in range(20):
        c, _ = random_run(seed, check=False)
        broken += any(w.writer_epoch not in (-1, e) for w, e in epochs_at_writes(c.zk))
    assert broken > 0
    for seed in range(20):
        c, _ = random_run(seed, check=True)
        assert all(w.writer_epoch in (-1, e) for w, e in epochs_at_writes(c.zk)), seed


def test_zk_writes_lists_only_tagged_writes_in_commit_order():
    c = ZkCluster(2)
    c.controller_accepts_mutation(0, cfg("a"))
    c.controller_processes_event(0, 1)
    c.broker_writes_zk(1, cfg("b"), 2)
    assert zk_writes(c.zk) == (("a", 0, 1), ("b", 1, -1))
    assert len(c.zk.txn_log) > 2                          # untagged txns are not writes


def test_broker_without_start_has_no_session():
    zk = ZooKeeper()
    b = ZkBroker(4, zk, start=False)
    assert b.session_id is None and not b.alive and b.elect(0) is None


# ---- ZB-1..ZB-10 broker registration in /brokers/ids -------------------------------------------


def _advertised(host, port):
    """A broker's effectiveAdvertisedListeners: CLIENT at ``port``, INTERNAL at ``port + 1``."""
    from impl.config import Endpoint
    return (Endpoint("CLIENT", host, port, "SASL_SSL"), Endpoint("INTERNAL", host, port + 1, "SSL"))


class _Listeners:
    """The brokers' current advertised listeners (what an operator changes) and their
    ``KafkaServer.createBrokerInfo``."""

    def __init__(self, brokers):
        self.current = {n: _advertised(f"b{n + 1}", 9092 + 100 * n) for n in range(brokers)}

    def __call__(self, n, zk_client, now_ms):
        from impl.zk_controller import create_broker_info
        return create_broker_info(zk_client, n, self.current[n], now_ms=now_ms, bound_ports={},
                                  canonical_host=f"b{n + 1}.test")


def registration_cluster(**switches):
    listeners = _Listeners(2)
    return ZkCluster(2, create_broker_info=listeners, **switches), listeners


def znode_ports(c, n):
    from impl.zk_controller import broker_id_path, decode_broker_info
    got = c.zk.peek(broker_id_path(n))
    return None if got is None else [e.port for e in
                                     decode_broker_info(n, got[0]).broker.end_points]


def update_listeners(c, listeners, n, port, now_ms):
    """An operator moves broker ``n``'s advertised listeners to ``port``: the broker's
    KafkaController.updateBrokerInfo(createBrokerInfo)."""
    listeners.current[n] = _advertised(f"b{n + 1}", port)
    return c.operator_updates_listeners(n, listeners(n, c.brokers[n].zk_client, now_ms), now_ms)


def test_broker_znode_json_is_brokeridznode_encode():
    """ZB-3: version 5 from IBP 2.7-IV0 with every field; the top-level host and port are the
    first PLAINTEXT endpoint's (null and -1 without one); version 4 has no features, version 2
    no listener map; rack from version 3.  Decoding gives the BrokerInfo back."""
    from impl.zk_controller import (Broker, BrokerInfo, EndPoint, decode_broker_info,
                                    encode_broker_info)
    info = BrokerInfo.create(Broker(1, (EndPoint("b2", 9192, "CLIENT", "SASL_SSL"),
                                        EndPoint("b2", 9193, "INTERNAL", "SSL")), "r1",
                                    (("metadata.version", (1, 21)),)), "3.7-IV0")
    assert info.version == 5 and info.path == "/brokers/ids/1" and info.jmx_port == -1
    data = encode_broker_info(info, 1234)
    assert b" " not in data                                 # Jackson's compact form
    assert json.loads(data) == {
        "version": 5, "host": None, "port": -1,
        "endpoints": ["CLIENT://b2:9192", "INTERNAL://b2:9193"], "jmx_port": -1,
        "timestamp": "1234", "rack": "r1",
        "listener_security_protocol_map": {"CLIENT": "SASL_SSL", "INTERNAL": "SSL"},
        "features": {"metadata.version": {"min_version": 1, "max_version": 21}}}
    assert decode_broker_info(1, data) == info
    mixed = Broker(2, (EndPoint("b3", 9300, "SSL", "SSL"),
                       EndPoint("b3", 9301, "EXTERNAL", "PLAINTEXT"),
                       EndPoint("::1", 9302, "LOCAL", "PLAINTEXT"),
                       EndPoint(None, 9303, "X", "SSL")),
                   "r2", (("metadata.version", (1, 21)),))
    v4 = json.loads(encode_broker_info(BrokerInfo.create(mixed, "2.6-IV0"), 0))
    assert v4["version"] == 4 and (v4["host"], v4["port"]) == ("b3", 9301)
    assert v4["endpoints"][2:] == ["LOCAL://[::1]:9302", "X://:9303"]
    assert "features" not in v4 and v4["rack"] == "r2" and v4["listener_security_protocol_map"]
    v2 = json.loads(encode_broker_info(BrokerInfo.create(mixed, "0.10.0-IV0"), 0))
    assert v2["version"] == 2 and "listener_security_protocol_map" not in v2
    assert "rack" not in v2 and "features" not in v2


def test_broker_epoch_is_the_czxid_of_the_checked_ephemeral_create():
    """ZB-1, ZB-4: every broker registers at start-up with one multi {Create(null data,
    EPHEMERAL), SetData(data, version 0)}; the broker epoch is the znode's czxid, its dataVersion
    1, its owner the broker's session, which the client remembers (KAFKA-7165)."""
    from impl.zk_controller import broker_id_path
    c, _ = registration_cluster()
    for n, b in enumerate(c.brokers):
        data, stat = c.zk.peek(broker_id_path(n))
        assert b.broker_epoch == stat.czxid and stat.version == 1
        assert stat.ephemeral_owner == b.session_id
        assert b.zk_client.current_zookeeper_session_id == b.session_id
        txn = next(t for t in c.zk.txn_log if t.zxid == stat.czxid)
        assert txn.kind == "multi" and txn.paths == (broker_id_path(n),) * 2
    assert json.loads(c.zk.peek(broker_id_path(1))[0])["endpoints"] == [
        "CLIENT://b2:9192", "INTERNAL://b2:9193"]
    assert c.brokers[0].broker_epoch < c.brokers[1].broker_epoch
    # ZB-2: an endpoint another broker registered is refused
    from impl.zk_controller import create_broker_info
    with pytest.raises(ValueError, match="already registered by broker 0"):
        create_broker_info(c.brokers[1].zk_client, 1, _advertised("b1", 9092), now_ms=1,
                           bound_ports={}, canonical_host="b2.test")


def test_checked_ephemeral_create_on_an_existing_znode(zk):
    """ZB-5: the current session's own znode is returned as it is (same czxid, data not
    rewritten); another session's is NodeExists; one left by the session of the client's
    previous create while it is on a new session is deleted and created again."""
    me, other = KafkaZkClient(zk), KafkaZkClient(zk)
    me.connect(0)
    other.connect(0)
    me.create_recursive("/brokers/ids", 0, throw_if_path_exists=False)
    path = "/brokers/ids/1"
    first = me.checked_ephemeral_create(path, b'{"v":1}', 1)
    assert me.checked_ephemeral_create(path, b'{"v":2}', 2) == first
    assert zk.peek(path)[0] == b'{"v":1}'
    with pytest.raises(KeeperException) as e:
        other.checked_ephemeral_create(path, b'{"v":9}', 3)
    assert e.value.code == Code.NODEEXISTS
    me.session_id = zk.create_session(18000, 4)        # a new session, the old one alive
    again = me.checked_ephemeral_create(path, b'{"v":3}', 5)
    assert again.czxid > first.czxid and again.version == 1
    assert zk.peek(path)[0] == b'{"v":3}' and zk.peek(path)[1].ephemeral_owner == me.session_id


def test_reregistration_after_expiry_registers_the_cached_broker_info():
    """ZB-6, ZB-7, ZB-9: a listener update rewrites the znode (the czxid stays) and the cached
    BrokerInfo; the expiry deletes the ephemeral znode; the new session queues
    RegisterBrokerAndReelect, whose create carries the updated endpoints under a new czxid."""
    from impl.zk_controller import broker_id_path
    c, listeners = registration_cluster()
    b, path = c.brokers[1], broker_id_path(1)
    epoch0 = b.broker_epoch
    assert update_listeners(c, listeners, 1, 10192, 10) is True
    assert znode_ports(c, 1) == [10192, 10193]
    assert c.zk.peek(path)[1].czxid == epoch0 and c.zk.peek(path)[1].version == 2
    c.zk_expires_session(1, 20)
    assert c.zk.peek(path) is None
    assert c.broker_sends_zk_registration(1, 21) is None        # expiry not handled yet
    assert c.broker_handles_session_expiry(1, 22) is True and b.register_pending
    assert c.zk_creates_broker_znode(1, 23) is None             # nothing on its way
    assert c.broker_sends_zk_registration(1, 24) is True
    assert c.broker_sends_zk_registration(1, 24) is None and c.zk.peek(path) is None
    epoch = c.zk_creates_broker_znode(1, 25)
    assert epoch == b.broker_epoch > epoch0 and c.zk.peek(path)[1].czxid == epoch
    assert c.zk.peek(path)[1].ephemeral_owner == b.session_id
    assert znode_ports(c, 1) == [10192, 10193]
    assert znode_ports(c, 0) == [9092, 9093]                    # the other broker untouched


def test_before_kafka_6573_the_reregistration_carries_the_startup_endpoints():
    """KAFKA-6573 switched off (``broker_info_not_cached``): the update writes ZooKeeper but not
    KafkaController's BrokerInfo, so the registration after a session expiry puts the start-up
    endpoints back."""
    c, listeners = registration_cluster(broker_info_not_cached=True)
    b = c.brokers[1]
    assert update_listeners(c, listeners, 1, 10192, 10) is True
    assert znode_ports(c, 1) == [10192, 10193]
    assert [e.port for e in b.broker_info.broker.end_points] == [9192, 9193]
    c.zk_expires_session(1, 20)
    c.broker_handles_session_expiry(1, 21)
    c.broker_sends_zk_registration(1, 22)
    c.zk_creates_broker_znode(1, 23)
    assert znode_ports(c, 1) == [9192, 9193]


def test_update_broker_info_on_a_missing_znode_is_nonode_only_logged():
    """ZB-9: ``updateBrokerInfo`` sets the BrokerInfo, then its SetData finds no znode (the
    session expired): KeeperException NONODE, logged; nothing is created.  The queued
    registration then registers the new endpoints."""
    from impl.zk_controller import broker_id_path
    c, listeners = registration_cluster()
    b = c.brokers[1]
    c.zk_expires_session(1, 10)
    c.broker_handles_session_expiry(1, 11)
    txns = len(c.zk.txn_log)
    assert update_listeners(c, listeners, 1, 10192, 12) is False
    assert "KeeperErrorCode = NoNode for /brokers/ids/1" in b.errors[-1]
    assert c.zk.peek(broker_id_path(1)) is None and len(c.zk.txn_log) == txns
    assert [e.port for e in b.broker_info.broker.end_points] == [10192, 10193]
    with pytest.raises(KeeperException) as e:
        b.zk_client.update_broker_info(b.broker_info, 13)
    assert e.value.code == Code.NONODE
    c.broker_sends_zk_registration(1, 14)
    c.zk_creates_broker_znode(1, 15)
    assert znode_ports(c, 1) == [10192, 10193]


def test_a_listener_update_waits_for_the_registration_on_its_way_unless_racing():
    """By default the update waits while a registration's create is on its way; Kafka's
    unserialized config thread (ZB-10) updates the BrokerInfo, its SetData is NONODE, and the
    create then writes the old endpoints, which nothing rewrites."""
    for races in (False, True):
        c, listeners = registration_cluster(broker_info_update_races_registration=races)
        b = c.brokers[1]
        c.zk_expires_session(1, 10)
        c.broker_handles_session_expiry(1, 11)
        c.broker_sends_zk_registration(1, 12)               # reads the BrokerInfo of 9192
        result = update_listeners(c, listeners, 1, 10192, 13)
        if not races:
            assert result is None and b.broker_info_update_waits
            c.zk_creates_broker_znode(1, 14)
            assert update_listeners(c, listeners, 1, 10192, 15) is True
            assert znode_ports(c, 1) == [10192, 10193]
        else:
            assert result is False and "NoNode" in b.errors[-1]
            c.zk_creates_broker_znode(1, 14)
            assert znode_ports(c, 1) == [9192, 9193]
            assert [e.port for e in b.broker_info.broker.end_points] == [10192, 10193]


def test_a_new_process_cannot_register_over_the_old_sessions_znode():
    """ZB-5 at start-up: the crashed process's session still holds /brokers/ids/<id>, so the
    new process's registerBroker is NodeExists and its start-up fails."""
    c, listeners = registration_cluster()
    c.node_crashes(1)
    fresh = ZkBroker(1, c.zk, start=False)
    with pytest.raises(KeeperException) as e:
        fresh.startup(5, lambda zk_client, now_ms: listeners(1, zk_client, now_ms))
    assert e.value.code == Code.NODEEXISTS


@pytest.mark.parametrize("variant, steps", [
    ("broker-info-not-cached",
     ("operator_updates_listeners", "zk_expires_session", "broker_handles_session_expiry",
      "broker_sends_zk_registration", "zk_creates_broker_znode")),
    ("broker-info-update-races-registration",
     ("zk_expires_session", "broker_handles_session_expiry", "broker_sends_zk_registration",
      "operator_updates_listeners", "zk_creates_broker_znode")),
])
def test_the_injected_bug_is_the_models_variant(variant, steps, monkeypatch):
    """The simulated cluster with the bug named after a variant follows that variant's model in
    lockstep; without it, it diverges from the variant."""
    import properties.conformance as conformance
    from model.config import VARIANTS
    from model.configs import CONFIGS
    from model.step import Step
    monkeypatch.setattr(conformance, "KNOWN_BUGS", conformance.KNOWN_BUGS + (variant,))
    cfg, design = CONFIGS["zk-broker-registration"], VARIANTS[variant].design
    trace = [Step(name, (1,)) for name in steps]
    assert conformance.check_steps(cfg, trace, design=design, bugs=(variant,)) is None
    div = conformance.check_steps(cfg, trace, design=design)
    assert div is not None and div.index <= len(trace)
