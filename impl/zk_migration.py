"""The KRaft controller of a ZooKeeper-to-KRaft migration, as far as KIP-590 needs it (rules
MG-1..MG-7 of ``docs/rules.md`` section 8.7), on the in-memory ensemble of ``impl/zk.py``, sans
I/O.

During a migration the KRaft controller quorum runs next to the ZooKeeper-mode brokers.  Its
active controller's ``KRaftMigrationDriver`` waits until every ZK broker has registered with it
(WAIT_FOR_BROKERS: a broker does so only once it runs with ``zookeeper.metadata.migration.enable``
and ``inter.broker.protocol.version`` >= 3.4-IV0, MG-1), then claims ZooKeeper leadership
(BECOME_CONTROLLER, MG-5): ``KafkaZkClient.tryRegisterKRaftControllerAsActiveController``, one
multi that bumps ``/controller_epoch``, deletes ``/controller`` and creates it *persistent* with
the KRaft controller's id and epoch (MG-4).  From then on it is the controller ZooKeeper knows:
no ZK election can happen (``/controller`` exists, MG-3), a deposed ZK controller's writes fail
the ``/controller_epoch`` CheckOp (Z-2), and the brokers, told by its UpdateMetadataRequest
(``KRaftCachedControllerId``, MG-3), forward their mutations to it on its controller listener
(MG-2).  It handles the EnvelopeRequests in ``ControllerApis`` (F-28..F-30) and dual-writes each
mutation to ZooKeeper (DUAL_WRITE) through ``ZkMigrationClient``:
``retryMigrationRequestsUntilConnected`` sends every write as a multi {CheckOp(/controller_epoch,
the zkVersion its claim produced), SetData(/migration, the migration state, its zkVersion),
the write}, so a write after someone else bumped ``/controller_epoch`` fails with
ControllerMovedException.

What this module abstracts, as the model does: the controller quorum is the one KRaft
controller, the Raft leader of its process run (a restart is a new election, so its epoch -- the
``kraftControllerEpoch`` it claims with -- grows by one per run); the registrations of the ZK
brokers with it are the callable ``brokers_ready``; and a forwarded mutation's KRaft commit and
its dual write are one event (Kafka answers after the commit and dual-writes later): the event
is answered once the dual write is done, NOT_CONTROLLER when the controller holds no ZooKeeper
leadership or loses it on the write.
"""
from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace

from impl.protocol.errors import NONE, NOT_CONTROLLER, UNKNOWN_SERVER_ERROR
from impl.zk import CheckOp, Code, CreateMode, CreateOp, KeeperException, Op, SetDataOp, ZooKeeper
from impl.zk_controller import (CONTROLLER_EPOCH_PATH, DEFAULT_SESSION_TIMEOUT_MS,
                                ControllerMovedException, KafkaZkClient, MutationResult,
                                ZkMutation, ZkWrite)

MIGRATION_PATH = "/migration"                   # MigrationZNode.path
UNKNOWN_ZK_VERSION = -2                         # ZkMigrationLeadershipState.UNKNOWN_ZK_VERSION


@dataclass(frozen=True)
class ZkMigrationLeadershipState:
    """``ZkMigrationLeadershipState``: the KRaft controller's view of its ZooKeeper leadership
    and of ``/migration``.  ``zk_controller_epoch_zk_version`` is UNKNOWN_ZK_VERSION until a
    claim succeeds."""
    kraft_controller_id: int
    kraft_controller_epoch: int
    kraft_metadata_offset: int = -1
    kraft_metadata_epoch: int = -1
    last_updated_time_ms: int = -1
    migration_zk_version: int = -2
    zk_controller_epoch: int = -1
    zk_controller_epoch_zk_version: int = UNKNOWN_ZK_VERSION

    def with_zk_controller(self, epoch: int, zk_version: int) -> ZkMigrationLeadershipState:
        return replace(self, zk_controller_epoch=epoch, zk_controller_epoch_zk_version=zk_version)

    def with_unknown_zk_controller(self) -> ZkMigrationLeadershipState:
        return replace(self, zk_controller_epoch=-1,
                       zk_controller_epoch_zk_version=UNKNOWN_ZK_VERSION)


def encode_migration_state(state: ZkMigrationLeadershipState) -> bytes:
    """``MigrationZNode.encode``: version 0 and the KRaft side of the migration state."""
    return json.dumps({"version": 0, "kraft_controller_id": state.kraft_controller_id,
                       "kraft_controller_epoch": state.kraft_controller_epoch,
                       "kraft_metadata_offset": state.kraft_metadata_offset,
                       "kraft_metadata_epoch": state.kraft_metadata_epoch},
                      separators=(",", ":")).encode()


class ZkMigrationClient:
    """The KRaft controller's ``ZkMigrationClient`` over its own ``KafkaZkClient`` (session)."""

    def __init__(self, zk_client: KafkaZkClient) -> None:
        self.zk_client = zk_client

    def get_or_create_migration_recovery_state(self, state: ZkMigrationLeadershipState,
                                               now_ms: int) -> ZkMigrationLeadershipState:
        """``getOrCreateMigrationRecoveryState``: the top-level paths, the ACL paths, then
        ``/migration`` created with ``state`` if absent; the state carries its zkVersion."""
        client = self.zk_client
        client.create_top_level_paths(now_ms)
        got = client.get_data(MIGRATION_PATH, now_ms)
        if got is None:
            client.create_recursive(MIGRATION_PATH, now_ms, encode_migration_state(state),
                                    throw_if_path_exists=False)
            got = client.get_data(MIGRATION_PATH, now_ms)
        return replace(state, migration_zk_version=got[1].version)

    def claim_controller_leadership(self, state: ZkMigrationLeadershipState,
                                    now_ms: int) -> ZkMigrationLeadershipState:
        """``claimControllerLeadership`` (MG-5): the state with the ZK controller epoch and
        zkVersion on success, unknown on a lost race (FailedRegistrationResult).  A
        ``/controller`` with a KRaft epoch >= ours raises ControllerMovedException."""
        got = self.zk_client.try_register_kraft_controller_as_active(
            state.kraft_controller_id, state.kraft_controller_epoch, now_ms)
        if got is None:
            return state.with_unknown_zk_controller()
        return state.with_zk_controller(*got)

    def retry_migration_requests_until_connected(
            self, op: Op, state: ZkMigrationLeadershipState, now_ms: int,
            tag: object = None) -> tuple[int, Code]:
        """``KafkaZkClient.retryMigrationRequestsUntilConnected`` for one request (the last of
        its batch): the multi {CheckOp(/controller_epoch, the claim's zkVersion),
        SetData(/migration, the state, its zkVersion), op}.  A failed epoch check is
        ControllerMovedException; a failed ``/migration`` update means another KRaft controller
        writes ZooKeeper (RuntimeError, as Kafka's RuntimeException); the op's own failure comes
        back as its code.  Returns (the new ``/migration`` zkVersion, the op's code)."""
        v = state.zk_controller_epoch_zk_version
        if v < 0:
            raise ValueError(f"Expected a controller epoch zkVersion when making migration "
                             f"writes, not {v}.")
        ops = [CheckOp(CONTROLLER_EPOCH_PATH, v),
               SetDataOp(MIGRATION_PATH, encode_migration_state(state),
                         state.migration_zk_version),
               op]
        client = self.zk_client
        try:
            results = client._call(lambda s: client.zk.multi(s, ops, now_ms=now_ms, tag=tag),
                                   now_ms)
        except KeeperException as e:
            if e.results is None:
                raise
            check, migration, result = e.results
            if check.code == Code.BADVERSION:
                raise ControllerMovedException(
                    f"Controller epoch zkVersion check fails. Expected zkVersion = {v}") from None
            if check.code not in (Code.OK, Code.RUNTIMEINCONSISTENCY):
                raise KeeperException(check.code, CONTROLLER_EPOCH_PATH) from None
            if migration.code == Code.BADVERSION:
                raise RuntimeError(
                    f"Conditional update on KRaft Migration ZNode failed. Sent zkVersion = "
                    f"{state.migration_zk_version}. This indicates that another KRaft "
                    f"controller is making writes to ZooKeeper.") from None
            if migration.code not in (Code.OK, Code.RUNTIMEINCONSISTENCY):
                raise KeeperException(migration.code, MIGRATION_PATH) from None
            return state.migration_zk_version, result.code
        return results[1].stat.version, Code.OK

    def write_mutation(self, mutation: ZkMutation, state: ZkMigrationLeadershipState,
                       now_ms: int, tag: object = None) -> ZkMigrationLeadershipState:
        """The dual write of one mutation (``ZkConfigMigrationClient.writeConfigs`` /
        ``ZkAclMigrationClient.writeResourceAcls``): SetData, or Create when the znode is
        missing, each through ``retry_migration_requests_until_connected``; then the change
        notification, outside the multi."""
        version, code = self.retry_migration_requests_until_connected(
            SetDataOp(mutation.path, mutation.data), state, now_ms, tag)
        if code == Code.NONODE:
            version, code = self.retry_migration_requests_until_connected(
                CreateOp(mutation.path, mutation.data), state, now_ms, tag)
        if code != Code.OK:
            raise KeeperException(code, mutation.path)
        client = self.zk_client
        client._call(lambda s: client.zk.create(s, mutation.notification_prefix,
                                                mutation.notification_data,
                                                mode=CreateMode.PERSISTENT_SEQUENTIAL,
                                                now_ms=now_ms), now_ms)
        return replace(state, migration_zk_version=version,
                       kraft_metadata_offset=state.kraft_metadata_offset + 1,
                       kraft_metadata_epoch=state.kraft_controller_epoch,
                       last_updated_time_ms=now_ms)


class KRaftMigrationController:
    """One KRaft controller process of a migration: the Raft leader of its run, its
    ``KRaftMigrationDriver`` (WAIT_FOR_BROKERS -> BECOME_CONTROLLER -> DUAL_WRITE), and the
    queue of forwarded mutations its ``QuorumController`` accepted.

    ``zk_active``: it holds ZooKeeper leadership (its claim succeeded and no write has failed
    the epoch check since); ``epoch``/``epoch_zk_version`` the ``/controller_epoch`` its claim
    wrote (-1 otherwise) -- the same names as a ``ZkBroker``'s KafkaController."""

    def __init__(self, node_id: int, zk: ZooKeeper, *, brokers_ready: Callable[[], bool],
                 claims_before_brokers_ready: bool = False,
                 session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS, now_ms: int = 0,
                 start: bool = True) -> None:
        self.node_id = node_id
        self.zk = zk
        self.brokers_ready = brokers_ready
        self.claims_before_brokers_ready = claims_before_brokers_ready
        self.zk_client = KafkaZkClient(zk, session_timeout_ms=session_timeout_ms)
        self.migration_client = ZkMigrationClient(self.zk_client)
        self.alive = False
        self.incarnation = -1
        self.leader_epoch = 0           # its last run's Raft leader epoch (kraftControllerEpoch)
        self.state: ZkMigrationLeadershipState | None = None
        self.events: deque[ZkMutation] = deque()
        self.errors: list[str] = []     # what Kafka only logs
        if start:
            self.startup(now_ms)

    def startup(self, now_ms: int) -> None:
        """A process run: the single voter elects itself (a new leader epoch), the migration
        driver opens its ZooKeeper session and recovers ``/migration``; no ZooKeeper leadership
        yet (BECOME_CONTROLLER comes after WAIT_FOR_BROKERS, ``claim_leadership``)."""
        self.alive = True
        self.incarnation += 1
        self.leader_epoch += 1
        self.events = deque()
        self.zk_client.current_zookeeper_session_id = -1
        self.zk_client.connect(now_ms)
        initial = ZkMigrationLeadershipState(self.node_id, self.leader_epoch,
                                             last_updated_time_ms=now_ms)
        self.state = self.migration_client.get_or_create_migration_recovery_state(initial, now_ms)

    def crash(self) -> None:
        """The process dies: its leadership and its queue with it.  The persistent
        ``/controller`` it may have created stays."""
        self.alive = False
        self.events = deque()
        self.state = None

    @property
    def zk_active(self) -> bool:
        return (self.alive and self.state is not None
                and self.state.zk_controller_epoch_zk_version >= 0)

    @property
    def is_active(self) -> bool:
        """Acts as the controller ZooKeeper knows (the name a ZK broker's KafkaController
        gives it)."""
        return self.zk_active

    @property
    def epoch(self) -> int:
        return self.state.zk_controller_epoch if self.zk_active else -1

    @property
    def epoch_zk_version(self) -> int:
        return self.state.zk_controller_epoch_zk_version if self.zk_active else -1

    @property
    def claim_due(self) -> bool:
        """The driver is in BECOME_CONTROLLER: alive, no ZooKeeper leadership, and past
        WAIT_FOR_BROKERS (every ZK broker registered with it) unless the injected bug
        ``claims_before_brokers_ready`` skips that wait."""
        return (self.alive and not self.zk_active
                and (self.claims_before_brokers_ready or self.brokers_ready()))

    def claim_leadership(self, now_ms: int) -> bool | None:
        """``BecomeZkControllerEvent`` (model: controller_claims_zk_leadership): claim
        ZooKeeper leadership (MG-5).  True once claimed; False when the claim failed (a lost
        race: "Unable to claim leadership, will retry"; ControllerMovedException: a KRaft epoch
        >= ours holds ``/controller``), which is only logged.  None when no claim is due."""
        if not self.claim_due:
            return None
        try:
            state = self.migration_client.claim_controller_leadership(self.state, now_ms)
        except ControllerMovedException as e:
            self.errors.append(f"Had an exception in BecomeZkControllerEvent: {e}")
            return False
        self.state = state
        if not self.zk_active:
            self.errors.append("Unable to claim leadership, will retry until we learn of a "
                               "different KRaft leader")
            return False
        return True

    def accept_mutation(self, mutation: ZkMutation) -> None:
        """A forwarded mutation that passed ``ControllerApis`` (F-28..F-30) is queued."""
        self.events.append(mutation)

    def process_event(self, now_ms: int) -> MutationResult | None:
        """The next queued mutation (model: controller_processes_event): without ZooKeeper
        leadership NOT_CONTROLLER; else its dual write under the claimed epoch -- NONE, or
        NOT_CONTROLLER when the epoch check fails (ControllerMovedException: the leadership is
        gone), UNKNOWN_SERVER_ERROR for another KeeperException.  None when dead or idle."""
        if not self.alive or not self.events:
            return None
        mutation = self.events.popleft()
        if not self.zk_active:
            return MutationResult(mutation.tag, NOT_CONTROLLER,
                                  "The active controller holds no ZooKeeper leadership.")
        tag = ZkWrite(mutation.tag, self.node_id, self.state.zk_controller_epoch)
        try:
            self.state = self.migration_client.write_mutation(mutation, self.state, now_ms, tag)
        except ControllerMovedException as e:
            self.state = self.state.with_unknown_zk_controller()
            return MutationResult(mutation.tag, NOT_CONTROLLER, str(e))
        except KeeperException as e:
            return MutationResult(mutation.tag, UNKNOWN_SERVER_ERROR, str(e))
        return MutationResult(mutation.tag, NONE)


__all__ = ["MIGRATION_PATH", "UNKNOWN_ZK_VERSION", "ZkMigrationLeadershipState",
           "encode_migration_state", "ZkMigrationClient", "KRaftMigrationController"]
