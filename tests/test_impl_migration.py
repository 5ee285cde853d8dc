"""The ZooKeeper-to-KRaft migration of the reference implementation (impl/zk_migration.py, the
migration parts of impl/zk_controller.py and impl/cluster): rules MG-1..MG-7, F-4, F-6."""
from __future__ import annotations

import json

import pytest

from impl.protocol.errors import NONE, NOT_CONTROLLER, STALE_CONTROLLER_EPOCH, UNKNOWN_SERVER_ERROR
from impl.zk import SetDataOp
from impl.zk_controller import (CHECK_CONTROLLER_DATA_VERSION, CHECK_CONTROLLER_EPOCH,
                                CONTROLLER_EPOCH_PATH, CONTROLLER_PATH, ControllerMovedException,
                                KafkaZkClient, ZkCluster, config_mutation, encode_controller_epoch,
                                is_api_forwarding_enabled)
from impl.zk_migration import MIGRATION_PATH

TOPIC_CONFIG = "/config/topics/orders"
B1, B2, C3 = 0, 1, 2


def migration_cluster(check=CHECK_CONTROLLER_EPOCH, ready=True, claims_before=False):
    """B1 (the ZK controller) and B2, ZK brokers; C3 a KRaft controller; the topic ``orders``
    exists (its config znode too)."""
    c = ZkCluster(3, kraft_controllers=(C3,), entity_config_check=check,
                  brokers_ready=lambda: ready, claims_before_brokers_ready=claims_before)
    admin = KafkaZkClient(c.zk)
    admin.connect(0)
    m = config_mutation(None, "topics", "orders", {})
    admin.create_recursive(m.path, 0, m.data)
    return c


def iac(tag):
    return config_mutation(tag, "topics", "orders", {"retention.ms": "1000"})


def controller_json(c):
    data, stat = c.zk.peek(CONTROLLER_PATH)
    return json.loads(data), stat


# ---- MG-4, MG-5: /controller and the claim -------------------------------------------------


def test_controller_znode_json_of_a_zk_and_of_the_kraft_controller():
    """MG-4: a ZK controller writes version 2 with kraftControllerEpoch -1, ephemeral; the
    KRaft controller's claim (MG-5) bumps /controller_epoch, deletes /controller and creates it
    persistent with its id and epoch, and ZK elections are over."""
    c = migration_cluster()
    js, stat = controller_json(c)
    assert js == {"version": 2, "brokerid": B1, "timestamp": "0", "kraftControllerEpoch": -1}
    assert stat.ephemeral_owner == c.brokers[B1].session_id and stat.version == 0
    c3 = c.kraft_controllers[C3]
    assert c3.leader_epoch == 1 and not c3.zk_active and c.zk.peek(MIGRATION_PATH) is not None
    assert c.controller_claims_zk_leadership(C3, 7) is True
    js, new = controller_json(c)
    assert js == {"version": 2, "brokerid": C3, "timestamp": "7", "kraftControllerEpoch": 1}
    assert new.ephemeral_owner == 0 and new.version == 0 and new.czxid > stat.czxid
    assert c.controller_epoch() == (2, 2)
    assert (c3.zk_active, c3.epoch, c3.epoch_zk_version) == (True, 2, 2)
    assert c.controller_claims_zk_leadership(C3, 8) is None          # claimed already
    c.zk_expires_session(B1, 9)                                       # /controller is not B1's
    c.broker_handles_session_expiry(B1, 10)
    assert c.controller() == C3 and c.broker_elects_controller(B1, 11) is None


def test_claim_fails_with_controller_moved_when_a_higher_kraft_epoch_holds_controller():
    """MG-5: /controller holding kraftControllerEpoch >= ours is ControllerMovedException; the
    driver only logs it and stays in BECOME_CONTROLLER; nothing in ZooKeeper changes."""
    c = migration_cluster()
    other = KafkaZkClient(c.zk)
    other.connect(1)
    assert other.try_register_kraft_controller_as_active(3000, 5, 2) == (2, 2)
    c3 = c.kraft_controllers[C3]
    with pytest.raises(ControllerMovedException,
                       match="Cannot register KRaft controller 2 with epoch 1 as the current "
                             "controller register in ZK has the same or newer epoch 5."):
        c3.migration_client.claim_controller_leadership(c3.state, 3)
    txns = len(c.zk.txn_log)
    assert c.controller_claims_zk_leadership(C3, 4) is False
    assert "same or newer epoch 5" in c3.errors[-1]
    assert not c3.zk_active and c.controller() == 3000 and len(c.zk.txn_log) == txns


def test_the_claim_waits_for_every_broker_unless_the_bug_skips_it():
    """WAIT_FOR_BROKERS (MG-1, MG-5): no claim while a broker has not registered with the
    KRaft controller; claims-before-brokers-ready claims anyway."""
    waiting = migration_cluster(ready=False)
    assert not waiting.kraft_controllers[C3].claim_due
    assert waiting.controller_claims_zk_leadership(C3, 1) is None and waiting.controller() == B1
    eager = migration_cluster(ready=False, claims_before=True)
    assert eager.controller_claims_zk_leadership(C3, 1) is True and eager.controller() == C3


# ---- the KRaft controller's dual write -------------------------------------------------------


def test_dual_write_under_the_claimed_epoch_and_its_fencing():
    """The KRaft controller writes a forwarded mutation as {CheckOp(/controller_epoch),
    SetData(/migration), SetData(config)} under the epoch it claimed; a /controller_epoch moved
    since fails it: NOT_CONTROLLER, leadership gone, nothing written.  Without leadership it
    answers NOT_CONTROLLER at once."""
    c = migration_cluster()
    c3 = c.kraft_controllers[C3]
    c.controller_accepts_mutation(C3, iac("early"))
    assert c.controller_processes_event(C3, 1).error_code == NOT_CONTROLLER
    c.controller_claims_zk_leadership(C3, 2)
    migration = c.zk.peek(MIGRATION_PATH)[1].version
    c.controller_accepts_mutation(C3, iac("A1"))
    assert c.controller_processes_event(C3, 3).error_code == NONE
    assert c.writes() == (("A1", C3, 2),)
    assert json.loads(c.zk.peek(TOPIC_CONFIG)[0])["config"] == {"retention.ms": "1000"}
    data, stat = c.zk.peek(MIGRATION_PATH)
    assert stat.version == migration + 1
    assert json.loads(data)["kraft_controller_id"] == C3
    assert json.loads(data)["kraft_controller_epoch"] == 1
    # someone else moves /controller_epoch: the next dual write is fenced
    rogue = KafkaZkClient(c.zk)
    rogue.connect(4)
    rogue._call(lambda s: c.zk.multi(s, [SetDataOp(CONTROLLER_EPOCH_PATH,
                                                   encode_controller_epoch(9))], now_ms=4), 4)
    c.controller_accepts_mutation(C3, iac("A2"))
    r = c.controller_processes_event(C3, 5)
    assert r.error_code == NOT_CONTROLLER and "zkVersion check fails" in r.message
    assert not c3.zk_active and c.writes() == (("A1", C3, 2),)


def test_the_deposed_zk_controller_learns_the_kraft_controller_and_is_fenced():
    """MG-3: B1's metadata cache learns KRaftCachedControllerId from the KRaft controller's
    UpdateMetadata; its KafkaController still acts until its next write fails the epoch
    CheckOp (Z-2, Z-3)."""
    c = migration_cluster()
    c.controller_claims_zk_leadership(C3, 1)
    assert c.broker_learns_controller(B2, 2) == C3 and c.brokers[B2].known_controller_kraft
    assert c.broker_learns_controller(B1, 2) == C3 and c.brokers[B1].is_active
    c.controller_accepts_mutation(B1, iac("late"))
    assert c.controller_processes_event(B1, 3).error_code == NOT_CONTROLLER
    assert not c.brokers[B1].is_active and c.writes() == ()


# ---- MG-6, MG-7: a broker's own entity-config write -----------------------------------------


@pytest.mark.parametrize("check", [CHECK_CONTROLLER_DATA_VERSION, CHECK_CONTROLLER_EPOCH])
def test_stale_controller_epoch_when_controller_names_a_kraft_controller(check):
    """MG-6: the read of /controller finds the KRaft controller's registration:
    ControllerMovedException "... directly when there is a KRaft controller." ->
    STALE_CONTROLLER_EPOCH (11) at once; nothing pending, nothing written."""
    c = migration_cluster(check)
    c.controller_claims_zk_leadership(C3, 1)
    b2 = c.brokers[B2]
    assert b2.start_entity_config_write(iac("A1"), 2) == STALE_CONTROLLER_EPOCH
    assert not b2.config_writes and c.writes() == ()
    with pytest.raises(ControllerMovedException,
                       match="Cannot set entity configs for topics orders directly when there "
                             "is a KRaft controller."):
        b2.zk_client.read_entity_config_guard(iac("A1"), 3, check)


def test_aba_write_lands_under_kafka_3_8_and_is_refused_by_the_fixed_design():
    """MG-7b: B2 reads B1's /controller (dataVersion 0), the KRaft controller's claim deletes
    and re-creates it (dataVersion 0 again, a new czxid), then B2's multi arrives.  Kafka
    3.8.0's CheckOp(/controller, 0) passes and the config lands after the takeover; the fixed
    design's CheckOp on the /controller_epoch zkVersion read first fails:
    STALE_CONTROLLER_EPOCH, nothing written."""
    outcomes = {}
    for check in (CHECK_CONTROLLER_DATA_VERSION, CHECK_CONTROLLER_EPOCH):
        c = migration_cluster(check)
        b2 = c.brokers[B2]
        assert b2.start_entity_config_write(iac("A1"), 1) is None
        pending = b2.config_writes[0]
        assert pending.guard.registration.controller_id == B1
        assert pending.guard.registration.zk_version == 0
        assert pending.epoch_zk_version_at_read == 1
        old_czxid = c.zk.peek(CONTROLLER_PATH)[1].czxid
        c.controller_claims_zk_leadership(C3, 2)
        assert c.zk.peek(CONTROLLER_PATH)[1].version == 0
        assert c.zk.peek(CONTROLLER_PATH)[1].czxid != old_czxid
        outcomes[check] = (c.broker_writes_entity_config(B2, 3), c.writes(),
                           json.loads(c.zk.peek(TOPIC_CONFIG)[0])["config"])
        assert not b2.config_writes
    assert outcomes[CHECK_CONTROLLER_DATA_VERSION] == (
        ("A1", NONE), (("A1", B2, -1),), {"retention.ms": "1000"})
    assert outcomes[CHECK_CONTROLLER_EPOCH] == (("A1", STALE_CONTROLLER_EPOCH), (), {})


def test_a_failed_check_is_a_keeper_exception_in_kafka_3_8():
    """MG-7a: /controller is gone at the multi (B1's session expired).  Kafka 3.8.0: the
    multi's NONODE looks like a missing config znode, createOrSet's createRecursive finds it
    there (NODEEXISTS), the second set fails the same way: a KeeperException (NoNode) ->
    UNKNOWN_SERVER_ERROR (-1).  The fixed design: ControllerMovedException ->
    STALE_CONTROLLER_EPOCH."""
    for check, code in ((CHECK_CONTROLLER_DATA_VERSION, UNKNOWN_SERVER_ERROR),
                        (CHECK_CONTROLLER_EPOCH, STALE_CONTROLLER_EPOCH)):
        c = migration_cluster(check)
        assert c.brokers[B2].start_entity_config_write(iac("A1"), 1) is None
        c.zk_expires_session(B1, 2)
        assert c.controller() == -1
        assert c.broker_writes_entity_config(B2, 3) == ("A1", code)
        assert c.writes() == ()


def test_entity_config_write_under_the_same_zk_controller_lands_in_both_designs():
    for check in (CHECK_CONTROLLER_DATA_VERSION, CHECK_CONTROLLER_EPOCH):
        c = migration_cluster(check)
        assert c.brokers[B2].start_entity_config_write(iac("A1"), 1) is None
        assert c.broker_writes_entity_config(B2, 2) == ("A1", NONE)
        assert c.writes() == (("A1", B2, -1),)
        assert c.broker_writes_entity_config(B2, 3) is None          # nothing pending


# ---- MG-1, F-4: who forwards ------------------------------------------------------------------


def test_api_forwarding_needs_migration_mode_and_ibp_3_4():
    """MetadataVersion.isApiForwardingEnabled: IBP >= 3.4-IV0, and only in migration mode."""
    assert is_api_forwarding_enabled(True, "3.4-IV0")
    assert is_api_forwarding_enabled(True, "3.7-IV0") and is_api_forwarding_enabled(True, "3.4")
    assert not is_api_forwarding_enabled(True, "3.3-IV3")
    assert not is_api_forwarding_enabled(True, "3.3")
    assert not is_api_forwarding_enabled(False, "3.7-IV0")


def _driver(config, bugs=()):
    from model.configs import CONFIGS
    from properties.conformance import Driver
    d = Driver(CONFIGS[config], 0, bugs=bugs)
    assert d.start() is None
    return d


def _take(d, action, arg=None):
    """Apply the model's enabled step ``action`` (with its argument ``arg`` if given) to both
    sides; it must conform."""
    from model import next as model_next
    steps = [st for st, _ in model_next.successors(d.state, d.cfg, d.design)
             if st.action == action and (arg is None or st.args == (arg,))]
    assert steps, f"{action} not enabled in the model"
    div = d.apply(steps[0])
    assert div is None, div.describe()
    return steps[0]


def test_a_legacy_ibp_broker_does_not_forward_until_bounced():
    """zk-migration-bounce: B2 runs IBP 3.3-IV3, so it has no ForwardingManager and writes
    A1's CreateAcls itself (AclAuthorizer); the KRaft controller cannot claim yet
    (WAIT_FOR_BROKERS).  After the operator's bounce B2 forwards, and the claim is due."""
    from impl.sim import Event
    d = _driver("zk-migration-bounce")
    cluster = d.cluster
    b2 = cluster.nodes[B2]
    assert b2.spec.props()["inter.broker.protocol.version"] == "3.3-IV3"
    assert b2.forwarding is None and not cluster.api_forwarding_enabled(B2)
    assert not cluster.apply(Event("controller_claims_zk_leadership", (C3,)))
    _take(d, "client_sends_request")
    assert [(w.client, w.writer, w.writer_epoch) for w in cluster.durable_writes()] == [
        ("A1", B2, -1)]
    assert cluster.client_results()["A1"][0].error_code == NONE
    assert not cluster.network.in_flight()
    fresh = _driver("zk-migration-bounce")
    _take(fresh, "operator_bumps_ibp", B2)
    node = fresh.cluster.nodes[B2]
    assert node.spec.props()["inter.broker.protocol.version"] == "3.7-IV0"
    assert node.forwarding is not None and fresh.cluster.zkc.kraft_controllers[C3].claim_due
    _take(fresh, "client_sends_request")
    assert len(node.channel.queue) == 1 and fresh.cluster.durable_writes() == []


def test_forwarded_to_the_kraft_controller_on_its_controller_listener_and_dual_written():
    """F-6, MG-2: once B2's metadata cache names the KRaft controller, A1's
    IncrementalAlterConfigs is forwarded to C3 on the CONTROLLER listener; C3 dual-writes it
    under the epoch it claimed and A1 gets NONE."""
    d = _driver("zk-migration")
    for action, arg in (("controller_claims_zk_leadership", C3), ("broker_learns_controller", B2),
                        ("client_sends_request", None), ("channel_discovers_controller", B2),
                        ("channel_sends_request", B2)):
        _take(d, action, arg)
    (view,) = d.cluster.message_views()
    assert (view.kind, view.dst, view.listener, view.api_version) == (
        "EnvelopeRequest", C3, "CONTROLLER", 1)
    for action, arg in (("controller_handles_envelope", None), ("controller_processes_event", C3),
                        ("broker_handles_envelope_response", None)):
        _take(d, action, arg)
    assert [(w.client, w.writer, w.writer_epoch) for w in d.cluster.durable_writes()] == [
        ("A1", C3, 2)]
    assert d.cluster.client_results()["A1"][0].error_code == NONE
