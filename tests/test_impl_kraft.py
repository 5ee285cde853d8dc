"""impl/kraft.py: the Raft quorum, replay, and the active controller's write path (R-12..R-18)."""
from __future__ import annotations

import random
import uuid

import pytest

from impl.context import RequestContext
from impl.kraft import (MV_3_7_IV0, ClusterAuthorizer, NotControllerError, QuorumController,
                        RaftQuorum, feature_level_record)
from impl.protocol import KafkaPrincipal
from impl.protocol.api_keys import CREATE_ACLS, CREATE_TOPICS, INCREMENTAL_ALTER_CONFIGS
from impl.protocol.errors import (CLUSTER_AUTHORIZATION_FAILED, NONE, NOT_CONTROLLER,
                                  UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION)

BROKER = KafkaPrincipal("User", "broker")
ALICE = KafkaPrincipal("User", "alice")
AUTH = ClusterAuthorizer({"User:broker": {"CLUSTER_ACTION"}, "User:alice": {"ALTER"}})


def ctx(principal=BROKER, listener="CONTROLLER"):
    return RequestContext(listener_name=listener, security_protocol="PLAINTEXT",
                          principal=principal)


def cluster(mv=MV_3_7_IV0, leader=1):
    quorum = RaftQuorum(voters=(1, 2, 3), metadata_version=mv, leader_id=leader)
    ctrls = {n: QuorumController(n, quorum, AUTH, random.Random(n)) for n in (1, 2, 3)}
    return quorum, ctrls


CREATE = {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1,
                      "Assignments": [], "Configs": [{"Name": "cleanup.policy",
                                                      "Value": "compact"}]}],
          "timeoutMs": 1000, "validateOnly": False}


def registration(cid=2, incarnation=uuid.UUID(int=7, version=4), port=9093, protocol=0):
    return {"ControllerId": cid, "IncarnationId": incarnation, "ZkMigrationReady": True,
            "Listeners": [{"Name": "CONTROLLER", "Host": f"c{cid}", "Port": port,
                           "SecurityProtocol": protocol}],
            "Features": [{"Name": "metadata.version", "MinSupportedVersion": 1,
                          "MaxSupportedVersion": 21}]}


def test_bootstrap_log_starts_with_metadata_version():
    quorum, _ = cluster(mv=14)
    assert quorum.log[0].record.name == "FeatureLevelRecord"
    assert quorum.metadata_version() == 14
    assert quorum.leader_epoch == 1 and quorum.leader_id == 1


def test_mutation_reply_only_after_commit():
    """R-17: the active controller appends, and answers only once the record is committed."""
    quorum, ctrls = cluster()
    assert ctrls[1].controller_accepts_mutation(CREATE_TOPICS, CREATE, waiter="req-1") is None
    assert len(quorum.log) == 1 and len(quorum.uncommitted) == 1      # appended, not committed
    result = ctrls[1].controller_commits_records()
    assert [r.waiter for r in result.replies] == ["req-1"]
    reply = result.replies[0]
    assert reply.error_code == NONE and reply.source == 1
    topic = reply.body["Topics"][0]
    assert topic["ErrorCode"] == NONE and isinstance(topic["TopicId"], uuid.UUID)
    names = [e.record.name for e in quorum.log]
    assert names == ["FeatureLevelRecord", "TopicRecord", "ConfigRecord"]
    assert quorum.log[1].record.data["TopicId"] == topic["TopicId"]
    assert quorum.log[1].leader_epoch == 1 and quorum.log[1].writer == 1
    # nothing left: the commit step is no longer enabled
    assert ctrls[1].controller_commits_records() is None


def test_other_mutations_become_records():
    quorum, ctrls = cluster()
    alter = {"Resources": [{"ResourceType": 2, "ResourceName": "t", "Configs": [
        {"Name": "retention.ms", "ConfigOperation": 0, "Value": "10"},
        {"Name": "cleanup.policy", "ConfigOperation": 1, "Value": None}]}],
        "ValidateOnly": False}
    acls = {"Creations": [{"ResourceType": 2, "ResourceName": "t", "ResourcePatternType": 3,
                           "Principal": "User:bob", "Host": "*", "Operation": 3,
                           "PermissionType": 3}]}
    ctrls[1].controller_accepts_mutation(INCREMENTAL_ALTER_CONFIGS, alter, waiter="a")
    ctrls[1].controller_accepts_mutation(CREATE_ACLS, acls, waiter="b")
    replies = ctrls[1].controller_commits_records().replies
    assert replies[0].body["Responses"][0]["ResourceName"] == "t"
    assert replies[1].body["Results"] == [{"ErrorCode": 0, "ErrorMessage": None}]
    assert [e.record.name for e in quorum.log[1:]] == ["ConfigRecord", "ConfigRecord",
                                                        "AccessControlEntryRecord"]
    while quorum.node_replays_record(5):
        pass
    image = quorum.image(5)
    assert image.configs[(2, "t")] == {"retention.ms": "10"}
    assert len(image.acls) == 1


def test_inactive_controller_answers_not_controller_at_once():
    """R-13 / the KRaft branch of _controller_accepts_mutation."""
    quorum, ctrls = cluster()
    reply = ctrls[2].controller_accepts_mutation(CREATE_TOPICS, CREATE, waiter="w")
    assert reply.error_code == NOT_CONTROLLER
    assert reply.body["Topics"][0]["ErrorMessage"] == "The active controller appears to be node 1."
    assert not quorum.uncommitted
    with pytest.raises(NotControllerError, match="appears to be node 1"):
        quorum.append(2, ())


def test_no_leader_message():
    quorum, ctrls = cluster(leader=-1)
    reply = ctrls[1].controller_accepts_mutation(CREATE_TOPICS, CREATE)
    assert reply.body["Topics"][0]["ErrorMessage"] == "No controller appears to be active."


def test_election_loses_uncommitted_records():
    """controller_becomes_leader: epoch + 1, the old leader's appends are gone and its waiting
    requests fail with NOT_CONTROLLER from the old leader."""
    quorum, ctrls = cluster()
    ctrls[1].controller_accepts_mutation(CREATE_TOPICS, CREATE, waiter="lost")
    replies = ctrls[2].controller_becomes_leader()
    assert quorum.leader_id == 2 and quorum.leader_epoch == 2
    assert [(r.waiter, r.source, r.error_code) for r in replies] == [("lost", 1, NOT_CONTROLLER)]
    assert not quorum.uncommitted
    assert ctrls[2].controller_commits_records() is None
    assert ctrls[1].controller_commits_records() is None          # the old leader can't commit
    assert [e.record.name for e in quorum.log] == ["FeatureLevelRecord"]
    assert ctrls[2].controller_becomes_leader() is None            # already leads: not enabled


def test_election_with_dead_old_leader_sends_nothing():
    quorum, ctrls = cluster()
    ctrls[1].controller_accepts_mutation(CREATE_TOPICS, CREATE, waiter="lost")
    assert ctrls[3].controller_becomes_leader(old_leader_alive=False) == []
    assert not quorum.uncommitted


def test_registration_appends_record_answered_after_commit():
    quorum, ctrls = cluster()
    assert ctrls[1].controller_handles_registration(ctx(), registration(), waiter="r") is None
    assert quorum.registrations() == {}                       # not committed yet
    reply = ctrls[1].controller_commits_records().replies[0]
    assert reply.body == {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None}
    record = quorum.registrations()[2]
    assert record["IncarnationId"] == uuid.UUID(int=7, version=4)
    assert record["EndPoints"] == [{"Name": "CONTROLLER", "Host": "c2", "Port": 9093,
                                    "SecurityProtocol": 0}]
    assert record["ZkMigrationReady"] is False                # trunk: hard-coded false


@pytest.mark.parametrize("controller,principal,mv,code", [
    (1, ALICE, MV_3_7_IV0, CLUSTER_AUTHORIZATION_FAILED),
    (2, BROKER, MV_3_7_IV0, NOT_CONTROLLER),
    (1, BROKER, MV_3_7_IV0 - 1, UNSUPPORTED_VERSION),
    (2, ALICE, MV_3_7_IV0 - 1, CLUSTER_AUTHORIZATION_FAILED),  # R-12 is checked first
    (2, BROKER, MV_3_7_IV0 - 1, NOT_CONTROLLER),               # R-13 before R-14
])
def test_registration_rejected(controller, principal, mv, code):
    """R-12..R-14 in Kafka's order, with the codes' default messages (R-16)."""
    quorum, ctrls = cluster(mv=mv)
    reply = ctrls[controller].controller_handles_registration(ctx(principal), registration(), "w")
    assert reply.error_code == code
    assert reply.body["ErrorCode"] == code
    expected = {31: "Cluster authorization failed.", 35: "The version of API is not supported.",
                41: "This is not the correct controller for this cluster."}[code]
    assert reply.body["ErrorMessage"] == expected
    assert not quorum.uncommitted


@pytest.mark.parametrize("kwargs", [{"protocol": 9}, {"port": 70000}])
def test_registration_unserializable_is_unknown_server_error(kwargs):
    """R-14: an unknown security protocol id or an endpoint Kafka cannot write is -1."""
    quorum, ctrls = cluster()
    reply = ctrls[1].controller_handles_registration(ctx(), registration(**kwargs), "w")
    assert reply.error_code == UNKNOWN_SERVER_ERROR
    assert not quorum.uncommitted


def test_registration_last_writer_wins_without_incarnation_check():
    """R-15/R-18: an older incarnation's registration committed later overwrites."""
    quorum, ctrls = cluster()
    new, old = uuid.UUID(int=2, version=4), uuid.UUID(int=1, version=4)
    ctrls[1].controller_handles_registration(ctx(), registration(incarnation=new), "n")
    ctrls[1].controller_handles_registration(ctx(), registration(incarnation=old), "o")
    ctrls[1].controller_commits_records()
    assert quorum.registrations()[2]["IncarnationId"] == old
    deltas = [quorum.node_replays_record(3) for _ in range(3)]
    assert deltas[0].features_changed and not deltas[0].changed_controllers
    assert deltas[1].changed_controllers == {2} and deltas[2].changed_controllers == {2}
    assert quorum.image(3).controllers[2]["IncarnationId"] == old
    assert quorum.node_replays_record(3) is None


def test_replay_cursors_are_per_node():
    quorum, ctrls = cluster(mv=14)
    quorum.append(1, [feature_level_record("metadata.version", MV_3_7_IV0)])
    ctrls[1].controller_commits_records()
    # the leader was caught up? no: it had replayed nothing, so its cursor stays
    assert quorum.replayed_offset(1) == 0
    quorum.node_replays_record(2)
    assert quorum.metadata_version(2) == 14 and quorum.image(2).metadata_version == 14
    quorum.node_replays_record(2)
    assert quorum.metadata_version(2) == MV_3_7_IV0 and quorum.replayed_offset(3) == 0
    assert quorum.image_delta(2).features_changed


def test_caught_up_leader_applies_its_own_commits():
    """The leader applied its records when it generated them: its cursor moves with the
    commit, and the delta is handed to its own publishers."""
    quorum, ctrls = cluster()
    quorum.catch_up(1)
    ctrls[1].controller_handles_registration(ctx(), registration(cid=1), "r")
    result = ctrls[1].controller_commits_records()
    assert quorum.replayed_offset(1) == len(quorum.log) == 2
    assert result.leader_deltas[0].changed_controllers == {1}


def test_cluster_authorizer_implications():
    auth = ClusterAuthorizer({"User:a": {"ALTER"}, "User:b": {"ALL"}})
    a, b, c = (KafkaPrincipal("User", n) for n in "abc")
    assert auth.authorize(a, "DESCRIBE") and not auth.authorize(a, "CLUSTER_ACTION")
    assert auth.authorize(b, "CLUSTER_ACTION") and not auth.authorize(c, "DESCRIBE")
    assert auth.authorized_operations(a) == (1 << 7) | (1 << 8)
