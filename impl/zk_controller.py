"""The ZK-mode controller: election, the event queue and single-writer fencing (rules Z-1..Z-7),
and the brokers' registration in ``/brokers/ids`` (ZB-1..ZB-10).

What ``KafkaController`` and ``KafkaZkClient`` do (``docs/rules.md`` section 4), on the
in-memory ensemble of ``impl/zk.py``, sans I/O:

- ``KafkaZkClient``: the znodes Kafka uses and how it writes them.  Election
  (``register_controller_and_increment_controller_epoch``, Z-1): read ``/controller_epoch``
  (create it with epoch 0 if absent), then one multi = create the ephemeral ``/controller``
  ``{"version":2,"brokerid":N,"timestamp":"ms","kraftControllerEpoch":-1}`` + set
  ``/controller_epoch`` to epoch+1 on the zkVersion just read.  Controller writes
  (``retry_requests_until_connected`` with an expected epoch zkVersion, Z-2): every request
  becomes a multi ``[CheckOp(/controller_epoch, v), op]``; a BADVERSION on the check is
  ``ControllerMovedException``.  Non-controller config writes (``set_or_create_entity_configs``,
  Z-5, MG-6): read ``/controller`` (none, or a KRaft controller's: ControllerMovedException), then
  a multi behind ``CheckOp(/controller, its dataVersion)``; ``/controller`` is never modified, so
  its dataVersion is 0 whoever holds it -- a ``/controller`` deleted and re-created since the read
  passes (MG-7), and a failed check is a plain KeeperException.
  ``read_entity_config_guard``/``write_entity_configs`` split the reads from the multi (two
  ZooKeeper requests) and also offer the fixed design, which reads the ``/controller_epoch``
  zkVersion first and checks it too.  KRaft takeover during migration
  (``try_register_kraft_controller_as_active``, Z-6, MG-5), ``/controller`` JSON version 2 with
  ``kraftControllerEpoch`` (-1 for a ZK controller, MG-4).
- ``ZkBroker``: one ZK-mode broker's ``KafkaController`` and the controller id in its metadata
  cache.  Each protocol step of the model (``model/actions.py``) is one method, so a simulator
  can interleave them: ``elect`` (broker_elects_controller), ``accept_mutation``
  (_controller_accepts_mutation, ZK branch), ``process_event`` (controller_processes_event),
  ``handle_session_expiry`` (broker_handles_session_expiry), ``learn_controller``
  (broker_learns_controller: a KRaft controller's UpdateMetadata sets the metadata cache only,
  MG-3), ``write_zk_directly`` (_broker_writes_zk), ``write_acls_directly`` (a legacy-IBP
  broker's CreateAcls), ``start_entity_config_write`` / ``finish_entity_config_write`` (MG-6:
  the reads in client_sends_request, the multi in broker_writes_entity_config).  A KRaft
  controller of a migration is ``impl.zk_migration.KRaftMigrationController``.  ZooKeeper's own
  fault, zk_expires_session, is ``ZooKeeper.expire_session``; ``ZkCluster`` offers all of them
  under the model's names.
- The zombie window (Z-3, Z-7, KAFKA-6082): ZooKeeper expires a controller's session, its
  ``/controller`` vanishes, but the controller keeps ``isActive`` until its event thread
  handles the expiry.  Meanwhile Kafka's ``ZooKeeperClient`` has already replaced the expired
  session by a new one (``reinitialize``, on its own thread), so a write the zombie makes goes
  through -- unless the CheckOp on the epoch zkVersion it won at election rejects it.
  ``check_epoch_zk_version=False`` removes that CheckOp: a deliberately injected bug.

- Broker registration (ZB-1..ZB-10): ``BrokerInfo`` and its JSON (``BrokerIdZNode.encode``,
  version 5 from IBP 2.7-IV0, ZB-3), ``create_broker_info`` (``KafkaServer.createBrokerInfo``,
  ZB-2), ``KafkaZkClient.register_broker`` (``checkedEphemeralCreate``: a multi of a null-data
  ephemeral create and a SetData at version 0, the broker epoch its czxid, ZB-4; NODEEXISTS
  handled by ``getAfterNodeExists``, ZB-5) and ``update_broker_info`` (SetData at any version,
  ZB-9).  ``ZkBroker`` holds ``KafkaController.brokerInfo``: it registers at start-up, queues
  ``RegisterBrokerAndReelect`` when it handles a session expiry and re-registers that
  BrokerInfo (ZB-6, ZB-7; ``send_registration`` then ``complete_registration``, the create on
  its way in between), and ``update_broker_info`` replaces it and rewrites the znode.

Every durable write carries a ``ZkWrite(request tag, writer broker id, writer's epoch)`` as the
tag of its ZooKeeper transaction; ``zk_writes(zk)`` lists them in commit order (the model's
observation ``writes``).
"""
from __future__ import annotations

import functools
import json
from collections import deque
from dataclasses import dataclass
from typing import NamedTuple
from collections.abc import Sequence

# the Errors.java codes this module answers with (docs/rules.md section 5)
from impl.kraft import LATEST_PRODUCTION_MV, METADATA_VERSION, MINIMUM_KRAFT_VERSION
from impl.protocol.errors import (NONE, NOT_CONTROLLER, STALE_CONTROLLER_EPOCH,
                                  UNKNOWN_SERVER_ERROR)
from impl.zk import (MATCH_ANY_VERSION, CheckOp, Code, CreateMode, CreateOp, DeleteOp,
                     EventType, KeeperException, KeeperState, Op, OpResult, SetDataOp, Stat,
                     WatchedEvent, ZooKeeper)

# kafka.zk.ZkData and KafkaController constants
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
INITIAL_CONTROLLER_EPOCH = 1                # KafkaController.InitialControllerEpoch
INITIAL_CONTROLLER_EPOCH_ZK_VERSION = 0     # KafkaController.InitialControllerEpochZkVersion
DEFAULT_SESSION_TIMEOUT_MS = 18000          # zookeeper.session.timeout.ms
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_PREFIX = "/config/changes/config_change_"
CONFIG_TYPES = ("topics", "clients", "users", "brokers", "ips")     # ConfigType.all
# ZkData.PersistentZkPaths, created by every broker at start-up (createTopLevelPaths)
PERSISTENT_ZK_PATHS = ("/consumers", "/brokers/ids", "/brokers/topics", CONFIG_CHANGES_PATH,
                       "/admin/delete_topics", "/brokers/seqid", "/isr_change_notification",
                       "/latest_producer_id_block", "/log_dir_event_notification") + tuple(
                           f"/config/{t}" for t in CONFIG_TYPES)
ACL_PATH = "/kafka-acl"                     # ZkAclStore for LITERAL patterns
ACL_CHANGES_PATH = "/kafka-acl-changes"     # LiteralAclChangeStore
ACL_CHANGE_PREFIX = "/kafka-acl-changes/acl_changes_"
ACL_RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")


def _json(obj) -> bytes:
    """Jackson's compact form, as Kafka's ``Json.encodeAsBytes`` writes it."""
    return json.dumps(obj, separators=(",", ":")).encode()


def encode_controller(broker_id: int, timestamp_ms: int,
                      kraft_controller_epoch: int = -1) -> bytes:
    """``ControllerZNode.encode`` (MG-4): always version 2, ``timestamp`` a string, and
    ``kraftControllerEpoch`` -1 when a ZK controller registers (its default), the KRaft
    controller's epoch when a KRaft controller claims ``/controller`` (MG-5)."""
    return _json({"version": 2, "brokerid": broker_id, "timestamp": str(timestamp_ms),
                  "kraftControllerEpoch": kraft_controller_epoch})


def encode_controller_epoch(epoch: int) -> bytes:
    """``ControllerEpochZNode.encode``: the epoch as decimal text."""
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    return int(data.decode())


class ControllerRegistration(NamedTuple):
    """``/controller`` as read (``ZKControllerRegistration``): ``kraft_epoch`` is the JSON's
    ``kraftControllerEpoch`` (None when the field is missing, -1 when a ZK controller wrote it),
    ``zk_version`` the znode's dataVersion -- 0 for every ``/controller`` ever created, since
    nobody rewrites it (MG-7)."""
    controller_id: int
    kraft_epoch: int | None
    zk_version: int

    @property
    def is_kraft(self) -> bool:
        """A KRaft controller holds ``/controller`` (``kraftEpoch.exists(_ > 0)``, MG-6)."""
        return self.kraft_epoch is not None and self.kraft_epoch > 0


def decode_controller(data: bytes, zk_version: int) -> ControllerRegistration:
    js = json.loads(data)
    kraft = js.get("kraftControllerEpoch")
    return ControllerRegistration(int(js["brokerid"]), None if kraft is None else int(kraft),
                                  zk_version)


class ControllerMovedException(Exception):
    """``org.apache.kafka.common.errors.ControllerMovedException``:
    ``Errors.forException`` gives STALE_CONTROLLER_EPOCH (11)."""
    error_code = STALE_CONTROLLER_EPOCH


class ZkWrite(NamedTuple):
    """Who made a durable write and under which controller epoch (-1: not as a controller)."""
    request_tag: object
    writer: int
    writer_epoch: int


def zk_writes(zk: ZooKeeper, start: int = 0) -> tuple:
    """The durable mutation writes in commit order, as ``(tag, writer, writer_epoch)``, among
    the transactions from index ``start`` of the log on."""
    return tuple(tuple(t.tag) for t in zk.txn_log[start:] if isinstance(t.tag, ZkWrite))


@dataclass(frozen=True)
class ZkMutation:
    """A config or ACL change to be written to ZooKeeper for one client request: the entity
    znode and its content, plus the change notification that tells every broker to reload it
    (a sequential znode, ``/config/changes/config_change_`` or
    ``/kafka-acl-changes/acl_changes_``)."""
    tag: object
    path: str
    data: bytes
    notification_prefix: str
    notification_data: bytes


def config_mutation(tag: object, entity_type: str, entity_name: str,
                    configs: dict) -> ZkMutation:
    """IncrementalAlterConfigs/AlterConfigs of one entity (``AdminZkClient.changeConfigs``):
    ``/config/<type>/<name>`` = ``{"version":1,"config":{...}}`` (``ConfigEntityZNode``), the
    notification ``{"version":2,"entity_path":"<type>/<name>"}``."""
    if entity_type not in CONFIG_TYPES:
        raise ValueError(f"unknown config entity type {entity_type!r}")
    return ZkMutation(tag, f"/config/{entity_type}/{entity_name}",
                      _json({"version": 1, "config": dict(configs)}), CONFIG_CHANGE_PREFIX,
                      _json({"version": 2, "entity_path": f"{entity_type}/{entity_name}"}))


def acl_mutation(tag: object, resource_type: str, resource_name: str,
                 acls: Sequence[dict]) -> ZkMutation:
    """CreateAcls on one LITERAL resource: ``/kafka-acl/<Type>/<name>`` =
    ``{"version":1,"acls":[{"principal","permissionType","operation","host"}...]}``
    (``AclEntry``), the notification ``<Type>:<name>`` (``LiteralAclChangeStore``)."""
    if resource_type not in ACL_RESOURCE_TYPES:
        raise ValueError(f"unknown resource type {resource_type!r}")
    entries = [{"principal": a["principal"], "permissionType": a.get("permissionType", "Allow"),
                "operation": a["operation"], "host": a.get("host", "*")} for a in acls]
    return ZkMutation(tag, f"{ACL_PATH}/{resource_type}/{resource_name}",
                      _json({"version": 1, "acls": entries}), ACL_CHANGE_PREFIX,
                      f"{resource_type}:{resource_name}".encode())


def _entity(path: str) -> tuple[str, str]:
    """``/config/<type>/<name>`` -> (type, name), as ``setOrCreateEntityConfigs`` names it."""
    parts = path.split("/")
    return (parts[-2], parts[-1]) if len(parts) >= 4 else ("", path)


# How a broker's own entity-config write checks that the controller has not moved (MG-6, MG-7):
# what ``KafkaZkClient.setOrCreateEntityConfigs`` reads first and what its multi's CheckOps
# compare.
CHECK_CONTROLLER_DATA_VERSION = "controller-data-version"   # Kafka 3.8.0 (KAFKA-16539)
CHECK_CONTROLLER_EPOCH = "controller-epoch"                 # the fixed design
CHECK_SOME_CONTROLLER = "some-controller"                   # before KAFKA-16539 (as modelled)


@dataclass(frozen=True)
class EntityConfigGuard:
    """What ``setOrCreateEntityConfigs`` read before its write: ``/controller`` (a ZK
    controller's registration, with its dataVersion) and, in the fixed design, the
    ``/controller_epoch`` zkVersion read just before it (None: not read)."""
    check: str
    registration: ControllerRegistration
    controller_epoch_zk_version: int | None = None


@dataclass(frozen=True)
class PendingConfigWrite:
    """A broker's entity-config write between its reads and its multi (MG-6): the mutation,
    the guard read, and ``epoch_zk_version_at_read``, the ``/controller_epoch`` zkVersion when
    ``/controller`` was read -- the broker's own read in the fixed design; Kafka 3.8.0 reads no
    epoch, and there it is an observer's (a ghost for the projection, never checked)."""
    mutation: ZkMutation
    guard: EntityConfigGuard
    epoch_zk_version_at_read: int


# ---- /brokers/ids/<id>: the broker's registration (ZB-1..ZB-5) --------------------------------

BROKER_IDS_PATH = "/brokers/ids"            # BrokerIdsZNode.path
# MetadataVersion.LATEST_PRODUCTION: inter.broker.protocol.version's default
DEFAULT_INTER_BROKER_PROTOCOL_VERSION = "3.9-IV0"
NO_JMX_PORT = -1        # com.sun.management.jmxremote.port unset


def broker_id_path(broker_id: int) -> str:
    """``BrokerIdZNode.path``."""
    return f"{BROKER_IDS_PATH}/{broker_id}"


def _metadata_version_key(version: str) -> tuple:
    """An ``inter.broker.protocol.version`` ("2.7-IV0", "0.10.0-IV1", "3.7") as an ordering key
    of ``MetadataVersion``: the release, then the IV (a bare release is its latest IV)."""
    release, _, iv = version.strip().partition("-IV")
    parts = tuple(int(p) for p in release.split("."))
    return parts + (0,) * (3 - len(parts)), int(iv) if iv else 99


IBP_3_4_IV0 = "3.4-IV0"     # MetadataVersion.IBP_3_4_IV0: the first with API forwarding in ZK


def is_api_forwarding_enabled(migration_enabled: bool, inter_broker_protocol_version: str) -> bool:
    """F-4, MG-1: a ZK broker gets a ForwardingManager iff ``Kafka.enableApiForwarding``:
    ``zookeeper.metadata.migration.enable`` and ``inter.broker.protocol.version`` >= 3.4-IV0
    (``MetadataVersion.isApiForwardingEnabled``)."""
    return migration_enabled and (_metadata_version_key(inter_broker_protocol_version)
                                  >= _metadata_version_key(IBP_3_4_IV0))


@dataclass(frozen=True)
class EndPoint:
    """``kafka.cluster.EndPoint``: host None is the default interface (a blank host)."""
    host: str | None
    port: int
    listener_name: str
    security_protocol: str

    @property
    def connection_string(self) -> str:
        """``EndPoint.connectionString``: ``LISTENER://host:port`` (``Utils.formatAddress``
        brackets an IPv6 host), ``LISTENER://:port`` for a null host."""
        if self.host is None:
            hostport = f":{self.port}"
        elif ":" in self.host:
            hostport = f"[{self.host}]:{self.port}"
        else:
            hostport = f"{self.host}:{self.port}"
        return f"{self.listener_name}://{hostport}"


@dataclass(frozen=True)
class Broker:
    """``kafka.cluster.Broker``: ``features`` maps a supported feature to (min, max)."""
    id: int
    end_points: tuple                   # tuple[EndPoint], the advertised order
    rack: str | None = None
    features: tuple = ()                # ((name, (min_version, max_version)), ...)


@dataclass(frozen=True)
class BrokerInfo:
    """``kafka.zk.BrokerInfo``: what a broker registers in ``/brokers/ids/<id>``.  ``version``
    is the JSON version (``BrokerInfo.apply``: 5 from IBP 2.7-IV0, 4 from 0.10.0-IV1, else
    2)."""
    broker: Broker
    version: int
    jmx_port: int = NO_JMX_PORT

    @staticmethod
    def create(broker: Broker, inter_broker_protocol_version: str,
               jmx_port: int = NO_JMX_PORT) -> BrokerInfo:
        ibp = _metadata_version_key(inter_broker_protocol_version)
        if ibp >= _metadata_version_key("2.7-IV0"):
            version = 5
        elif ibp >= _metadata_version_key("0.10.0-IV1"):
            version = 4
        else:
            version = 2
        return BrokerInfo(broker, version, jmx_port)

    @property
    def path(self) -> str:
        return broker_id_path(self.broker.id)

    def to_json_bytes(self, timestamp_ms: int) -> bytes:
        return encode_broker_info(self, timestamp_ms)


def encode_broker_info(info: BrokerInfo, timestamp_ms: int) -> bytes:
    """``BrokerIdZNode.encode`` (ZB-3): ``version``, the top-level ``host``/``port`` of the
    first endpoint whose security protocol is PLAINTEXT (else null and -1, for old clients),
    ``endpoints`` as ``LISTENER://host:port``, ``jmx_port``, ``timestamp`` (ms at encode time,
    a string), ``rack`` (if set, from version 3), ``listener_security_protocol_map`` (from
    version 4), ``features`` {name: {min_version, max_version}} (from version 5)."""
    broker = info.broker
    plaintext = next((e for e in broker.end_points if e.security_protocol == "PLAINTEXT"),
                     EndPoint(None, -1, "", ""))
    js = {"version": info.version, "host": plaintext.host, "port": plaintext.port,
          "endpoints": [e.connection_string for e in broker.end_points],
          "jmx_port": info.jmx_port, "timestamp": str(timestamp_ms)}
    if broker.rack is not None and info.version >= 3:
        js["rack"] = broker.rack
    if info.version >= 4:
        js["listener_security_protocol_map"] = {e.listener_name: e.security_protocol
                                                for e in broker.end_points}
    if info.version >= 5:
        js["features"] = {name: {"min_version": lo, "max_version": hi}
                          for name, (lo, hi) in broker.features}
    return _json(js)


def _parse_endpoint(connection_string: str, protocols: dict) -> EndPoint:
    """``EndPoint.createEndPoint``: ``LISTENER://host:port``, ``LISTENER://[v6]:port``,
    ``LISTENER://:port`` (null host); the protocol from the map, else the listener's name."""
    name, sep, hostport = connection_string.partition("://")
    host, _, port = hostport.rpartition(":")
    if not sep or not port.lstrip("-").isdigit():
        raise ValueError(f"Unable to parse {connection_string} to a broker endpoint")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    name = name.upper()
    return EndPoint(host or None, int(port), name, protocols.get(name, name))


@functools.lru_cache(maxsize=4096)
def decode_broker_info(broker_id: int, data: bytes) -> BrokerInfo:
    """``BrokerIdZNode.decode``: version 1 is one PLAINTEXT endpoint from host and port;
    later versions list ``endpoints`` with the protocol map's protocols.  Kept per (id,
    bytes): a pure function whose result is immutable, and observers decode every
    /brokers/ids znode at every step."""
    js = json.loads(data)
    version = int(js["version"])
    if version < 1:
        raise ValueError(f"Unsupported version of broker registration: {data.decode()}")
    if version == 1:
        end_points = (EndPoint(js["host"], int(js["port"]), "PLAINTEXT", "PLAINTEXT"),)
    else:
        protocols = {k.upper(): v for k, v in
                     (js.get("listener_security_protocol_map") or {}).items()}
        end_points = tuple(_parse_endpoint(e, protocols) for e in js["endpoints"])
    features = tuple(sorted((name, (int(r["min_version"]), int(r["max_version"])))
                            for name, r in (js.get("features") or {}).items()))
    return BrokerInfo(Broker(broker_id, end_points, js.get("rack"), features), version,
                      int(js["jmx_port"]))


def default_supported_features() -> tuple:
    """``BrokerFeatures.defaultSupportedFeatures``: metadata.version from the minimum KRaft
    level to the latest production one (no other production feature)."""
    return ((METADATA_VERSION, (MINIMUM_KRAFT_VERSION, LATEST_PRODUCTION_MV)),)


def _host_port(e) -> str:
    """Scala's ``s"${e.host}:${e.port}"``: a null host is the text ``null``."""
    return f"{'null' if e.host is None else e.host}:{e.port}"


def create_broker_info(zk_client: KafkaZkClient, broker_id: int, advertised, *, now_ms: int,
                       bound_ports: dict, canonical_host: str,
                       inter_broker_protocol_version: str =
                       DEFAULT_INTER_BROKER_PROTOCOL_VERSION,
                       rack: str | None = None, jmx_port: int = NO_JMX_PORT,
                       features: tuple | None = None) -> BrokerInfo:
    """``KafkaServer.createBrokerInfo`` (ZB-2) from ``advertised``, the broker's current
    ``effectiveAdvertisedListeners`` (``impl.config.Endpoint``s, dynamic updates included):

    1. no *other* registered broker may have one of its ``host:port`` strings as configured
       (port 0 and a blank host unresolved), else ValueError (Scala's ``require``);
    2. port 0 becomes the port the listener is bound to (``bound_ports``);
    3. a blank host becomes the canonical host name."""
    configured = [_host_port(e) for e in advertised]
    for other in zk_client.get_all_brokers_in_cluster(now_ms):
        if other.id == broker_id:
            continue
        common = [s for s in map(_host_port, other.end_points) if s in configured]
        if common:
            raise ValueError(f"requirement failed: Configured end points {','.join(common)} in "
                             f"advertised listeners are already registered by broker {other.id}")
    end_points = []
    for e in advertised:
        port = bound_ports.get(e.listener_name, e.port) if e.port == 0 else e.port
        host = e.host if (e.host or "").strip() else canonical_host
        end_points.append(EndPoint(host, port, e.listener_name, e.security_protocol))
    broker = Broker(broker_id, tuple(end_points), rack,
                    default_supported_features() if features is None else features)
    return BrokerInfo.create(broker, inter_broker_protocol_version, jmx_port)


# --------------------------------------------------------------------------------------------

# Kafka retries until connected, forever; a simulated fault injector that never reconnects
# would hang, so the in-memory client gives up (raising the last error) after this many tries.
_MAX_RETRIES = 8


class KafkaZkClient:
    """``ZooKeeperClient`` + ``KafkaZkClient`` of one broker process: its session and the
    reads and writes Kafka makes.

    Session handling as ``ZooKeeperClient``: when a request finds the session expired, the
    client opens a new session and retries the request on it (``reinitialize`` then
    ``retryRequestsUntilConnected``); the expiry stays *unhandled* (``expiry_unhandled``)
    until the owner -- the controller's event thread -- processes it.  Watch events the
    session receives are collected into ``inbox``."""

    def __init__(self, zk: ZooKeeper, *,
                 session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS) -> None:
        self.zk = zk
        self.session_timeout_ms = session_timeout_ms
        self.session_id: int | None = None
        self.inbox: list[WatchedEvent] = []
        self._expiry_unhandled = False
        self._last_sent_ms = 0
        # the session that made this client's last checked ephemeral create (KAFKA-7165)
        self.current_zookeeper_session_id = -1

    # ---- session -------------------------------------------------------------------------

    def connect(self, now_ms: int) -> int:
        """A new ``ZooKeeper`` handle with a fresh session (process start)."""
        self.session_id = self.zk.create_session(self.session_timeout_ms, now_ms)
        self.inbox = []
        self._expiry_unhandled = False
        self._last_sent_ms = now_ms
        return self.session_id

    def reinitialize(self, now_ms: int) -> int:
        """``ZooKeeperClient.reinitialize`` after ``Expired``: keep what the old session was
        told (its ``Expired`` notice), open a new session.  The owner still has to handle the
        expiry (``beforeInitializingSession`` only queued it)."""
        self.collect_events()
        self._expiry_unhandled = True
        self.session_id = self.zk.create_session(self.session_timeout_ms, now_ms)
        self._last_sent_ms = now_ms
        return self.session_id

    def collect_events(self) -> list[WatchedEvent]:
        """Move the session's queued events into ``inbox``; an ``Expired`` state marks the
        expiry unhandled.  Returns the inbox."""
        if self.session_id is not None:
            for event in self.zk.poll_events(self.session_id):
                if event.type == EventType.NONE and event.state == KeeperState.EXPIRED:
                    self._expiry_unhandled = True
                self.inbox.append(event)
        return self.inbox

    @property
    def expiry_unhandled(self) -> bool:
        """ZooKeeper expired this process's session and its owner has not handled it yet."""
        self.collect_events()
        return self._expiry_unhandled

    def expiry_handled(self, now_ms: int) -> None:
        """The owner handled the expiry: make sure a live session exists
        (``afterInitializingSession``)."""
        self.collect_events()
        if not self.zk.is_session_alive(self.session_id):
            self.session_id = self.zk.create_session(self.session_timeout_ms, now_ms)
            self._last_sent_ms = now_ms
        self.inbox = [e for e in self.inbox if e.type != EventType.NONE]
        self._expiry_unhandled = False

    def maybe_ping(self, now_ms: int) -> bool:
        """The client pings when idle for a third of the session timeout (half its read
        timeout of 2/3 timeout, ``ClientCnxn.SendThread``).  True if it pinged."""
        if now_ms - self._last_sent_ms < self.zk.session_timeout_ms(self.session_id) // 3:
            return False
        self._last_sent_ms = now_ms
        return self.zk.touch_session(self.session_id, now_ms)

    def _call(self, fn, now_ms: int):
        """Run ``fn(session_id)`` as ``retryRequestsUntilConnected`` does: CONNECTIONLOSS is
        retried (the request may or may not have been applied -- callers such as Z-1 must
        recognise their own earlier write); SESSIONEXPIRED re-initializes the session and
        retries on the new one."""
        self._last_sent_ms = now_ms
        for _ in range(_MAX_RETRIES):
            try:
                return fn(self.session_id)
            except KeeperException as e:
                if e.code == Code.SESSIONEXPIRED:
                    self.reinitialize(now_ms)
                elif e.code != Code.CONNECTIONLOSS:
                    raise
        return fn(self.session_id)

    # ---- plain reads and writes ------------------------------------------------------------

    def get_data(self, path: str, now_ms: int, watch: bool = False) -> tuple[bytes, Stat] | None:
        try:
            return self._call(lambda s: self.zk.get_data(s, path, watch=watch, now_ms=now_ms),
                              now_ms)
        except KeeperException as e:
            if e.code == Code.NONODE:
                return None
            raise

    def exists(self, path: str, now_ms: int, watch: bool = False) -> Stat | None:
        return self._call(lambda s: self.zk.exists(s, path, watch=watch, now_ms=now_ms), now_ms)

    def create_recursive(self, path: str, now_ms: int, data: bytes = b"",
                         throw_if_path_exists: bool = True, tag: object = None) -> None:
        """``createRecursive``: create the parents as needed (``tag``: the leaf's create)."""
        try:
            self._call(lambda s: self.zk.create(s, path, data, now_ms=now_ms, tag=tag), now_ms)
            return
        except KeeperException as e:
            if e.code == Code.NODEEXISTS:
                if throw_if_path_exists:
                    raise
                return
            if e.code != Code.NONODE:
                raise
        parent = path.rsplit("/", 1)[0]
        self.create_recursive(parent, now_ms, b"", throw_if_path_exists=False)
        self.create_recursive(path, now_ms, data, throw_if_path_exists, tag)

    def create_top_level_paths(self, now_ms: int) -> None:
        """``createTopLevelPaths`` at broker start-up, and the ACL store paths
        (``createAclPaths``, done by ``AclAuthorizer.configure``)."""
        for path in PERSISTENT_ZK_PATHS:
            self.create_recursive(path, now_ms, throw_if_path_exists=False)
        for t in ACL_RESOURCE_TYPES:
            self.create_recursive(f"{ACL_PATH}/{t}", now_ms, throw_if_path_exists=False)
        self.create_recursive(ACL_CHANGES_PATH, now_ms, throw_if_path_exists=False)

    # ---- /brokers/ids (ZB-1..ZB-5, ZB-9) ----------------------------------------------------

    def get_children(self, path: str, now_ms: int, watch: bool = False) -> list[str]:
        try:
            return self._call(lambda s: self.zk.get_children(s, path, watch=watch,
                                                             now_ms=now_ms), now_ms)
        except KeeperException as e:
            if e.code == Code.NONODE:
                return []
            raise

    def get_all_brokers_in_cluster(self, now_ms: int) -> list[Broker]:
        """``getAllBrokersInCluster``: every ``/brokers/ids/<id>`` decoded, in id order; one
        that went away meanwhile is left out."""
        out = []
        for broker_id in sorted(int(c) for c in self.get_children(BROKER_IDS_PATH, now_ms)):
            got = self.get_data(broker_id_path(broker_id), now_ms)
            if got is not None:
                out.append(decode_broker_info(broker_id, got[0]).broker)
        return out

    def register_broker(self, broker_info: BrokerInfo, now_ms: int) -> int:
        """``registerBroker`` (ZB-4): the checked ephemeral create of ``/brokers/ids/<id>``
        with the BrokerInfo's JSON; returns the broker epoch, the znode's czxid."""
        return self.checked_ephemeral_create(broker_info.path, broker_info.to_json_bytes(now_ms),
                                             now_ms).czxid

    def checked_ephemeral_create(self, path: str, data: bytes, now_ms: int) -> Stat:
        """``CheckedEphemeral.create`` (ZB-4): one multi {Create(path, null data, EPHEMERAL),
        SetData(path, data, version 0)}; OK returns the SetData's Stat (dataVersion 1, the
        create's czxid).  NODEEXISTS goes to ``getAfterNodeExists`` (ZB-5); another error is
        raised.  Then the session that created it is remembered (KAFKA-7165's workaround)."""
        # ZooKeeper keeps a null create's data as an empty node; the SetData fills it
        ops = [CreateOp(path, b"", CreateMode.EPHEMERAL), SetDataOp(path, data, 0)]
        try:
            results = self._call(lambda s: self.zk.multi(s, ops, now_ms=now_ms), now_ms)
            stat = results[1].stat
        except KeeperException as e:
            if e.code != Code.NODEEXISTS:
                raise KeeperException(e.code, path) from None
            stat = self._get_after_node_exists(path, data, now_ms)
        self.current_zookeeper_session_id = self.session_id
        return stat

    def _get_after_node_exists(self, path: str, data: bytes, now_ms: int) -> Stat:
        """``getAfterNodeExists`` (ZB-5): the znode's owner is the session that created our
        previous one and we are on another session -> delete it and create again (a new
        czxid); owned by another session -> NODEEXISTS; by the current session -> its Stat,
        the data not rewritten; gone meanwhile -> create again."""
        got = self.get_data(path, now_ms)
        if got is None:
            return self.checked_ephemeral_create(path, data, now_ms)
        owner = got[1].ephemeral_owner
        if owner == self.current_zookeeper_session_id and \
                self.session_id != self.current_zookeeper_session_id:
            try:
                self._call(lambda s: self.zk.delete(s, path, MATCH_ANY_VERSION, now_ms=now_ms),
                           now_ms)
            except KeeperException as e:
                if e.code != Code.NONODE:
                    raise KeeperException(e.code, path) from None
            return self.checked_ephemeral_create(path, data, now_ms)
        if owner != self.session_id:
            raise KeeperException(Code.NODEEXISTS, path)
        return got[1]

    def update_broker_info(self, broker_info: BrokerInfo, now_ms: int) -> Stat:
        """``updateBrokerInfo`` (ZB-9): SetData of ``/brokers/ids/<id>`` with the new JSON at
        any version; a non-OK result (NONODE when the znode is gone) is raised as
        ``KeeperException``.  The czxid, the broker epoch, stays."""
        path = broker_info.path
        data = broker_info.to_json_bytes(now_ms)
        try:
            return self._call(lambda s: self.zk.set_data(s, path, data, MATCH_ANY_VERSION,
                                                         now_ms=now_ms), now_ms)
        except KeeperException as e:
            raise KeeperException(e.code, path) from None

    # ---- controller znodes ---------------------------------------------------------------

    def get_controller_registration(self, now_ms: int,
                                    watch: bool = False) -> ControllerRegistration | None:
        """Read ``/controller``; with ``watch`` an existence/data watch is left either way
        (``registerZNodeChangeHandlerAndCheckExistence``)."""
        if watch and self.exists(CONTROLLER_PATH, now_ms, watch=True) is None:
            return None
        got = self.get_data(CONTROLLER_PATH, now_ms)
        return None if got is None else decode_controller(got[0], got[1].version)

    def get_controller_id(self, now_ms: int, watch: bool = False) -> int | None:
        reg = self.get_controller_registration(now_ms, watch)
        return None if reg is None else reg.controller_id

    def get_controller_epoch(self, now_ms: int) -> tuple[int, Stat] | None:
        got = self.get_data(CONTROLLER_EPOCH_PATH, now_ms)
        return None if got is None else (decode_controller_epoch(got[0]), got[1])

    def register_controller_and_increment_controller_epoch(
            self, controller_id: int, now_ms: int) -> tuple[int, int]:
        """Z-1 (``registerControllerAndIncrementControllerEpoch``): returns the new
        ``(epoch, epochZkVersion)`` or raises ``ControllerMovedException``."""
        # maybeCreateControllerEpochZNode: epoch InitialControllerEpoch - 1 if absent
        try:
            self._call(lambda s: self.zk.create(
                s, CONTROLLER_EPOCH_PATH, encode_controller_epoch(INITIAL_CONTROLLER_EPOCH - 1),
                now_ms=now_ms), now_ms)
        except KeeperException as e:
            if e.code != Code.NODEEXISTS:
                raise
        cur_epoch, cur_stat = self.get_controller_epoch(now_ms)
        new_epoch = cur_epoch + 1
        ops = [CreateOp(CONTROLLER_PATH, encode_controller(controller_id, now_ms),
                        CreateMode.EPHEMERAL),
               SetDataOp(CONTROLLER_EPOCH_PATH, encode_controller_epoch(new_epoch),
                         cur_stat.version)]
        try:
            results = self._call(lambda s: self.zk.multi(s, ops, now_ms=now_ms), now_ms)
            return new_epoch, results[1].stat.version
        except KeeperException as e:
            if e.code not in (Code.NODEEXISTS, Code.BADVERSION):
                raise
        # Our own earlier attempt may have gone through (a retry after a connection loss):
        # success iff /controller holds us and the epoch is the one we meant to write.
        reg = self.get_controller_registration(now_ms)
        got = self.get_controller_epoch(now_ms)
        if reg is not None and reg.controller_id == controller_id and got and got[0] == new_epoch:
            return new_epoch, got[1].version
        raise ControllerMovedException(
            "Controller moved to another broker. Aborting controller startup procedure")

    def retry_request_until_connected(self, op: Op, expected_controller_epoch_zk_version: int,
                                      now_ms: int, tag: object = None) -> OpResult:
        """Z-2 (``retryRequestsUntilConnected(requests, expectedControllerEpochZkVersion)``):
        MatchAnyVersion (-1) sends ``op`` as is; a version >= 0 wraps it in a multi after
        ``CheckOp(/controller_epoch, version)``, and a failed check is
        ``ControllerMovedException``.  The op's own failure comes back as its result code."""
        v = expected_controller_epoch_zk_version
        if v < MATCH_ANY_VERSION:
            raise ValueError(f"Expected controller epoch zkVersion {v} should be non-negative "
                             f"or equal to {MATCH_ANY_VERSION}")
        ops = [op] if v == MATCH_ANY_VERSION else [CheckOp(CONTROLLER_EPOCH_PATH, v), op]
        try:
            results = self._call(lambda s: self.zk.multi(s, ops, now_ms=now_ms, tag=tag), now_ms)
        except KeeperException as e:
            if e.results is None or len(ops) == 1:
                return OpResult(e.results[0].op if e.results else "?", e.code)
            check, result = e.results
            if check.code == Code.BADVERSION:
                raise ControllerMovedException(
                    f"Controller epoch zkVersion check fails. Expected zkVersion = {v}") from None
            if check.code != Code.OK:
                raise KeeperException(check.code, CONTROLLER_EPOCH_PATH) from None
            return result
        return results[-1]

    def write_entity(self, mutation: ZkMutation, expected_controller_epoch_zk_version: int,
                     now_ms: int, tag: object = None) -> None:
        """A controller write of a mutation (Z-2): set the entity znode, or create it if
        absent, then create its change notification -- each request behind the CheckOp.
        Raises ``ControllerMovedException`` (fenced) or ``KeeperException``."""
        v = expected_controller_epoch_zk_version
        result = self.retry_request_until_connected(SetDataOp(mutation.path, mutation.data), v,
                                                    now_ms, tag)
        if result.code == Code.NONODE:
            result = self.retry_request_until_connected(CreateOp(mutation.path, mutation.data),
                                                        v, now_ms, tag)
        if result.code != Code.OK:
            raise KeeperException(result.code, mutation.path)
        result = self.retry_request_until_connected(
            CreateOp(mutation.notification_prefix, mutation.notification_data,
                     CreateMode.PERSISTENT_SEQUENTIAL), v, now_ms)
        if result.code != Code.OK:
            raise KeeperException(result.code, mutation.notification_prefix)

    def read_entity_config_guard(self, mutation: ZkMutation, now_ms: int,
                                 check: str = CHECK_CONTROLLER_DATA_VERSION) -> EntityConfigGuard:
        """The reads ``setOrCreateEntityConfigs`` makes before its write (MG-6, Z-5), as
        ``check`` says:

        - CHECK_CONTROLLER_DATA_VERSION (Kafka 3.8.0, KAFKA-16539): read ``/controller``; none
          -> ControllerMovedException "Cannot set entity configs for <type> <name> when there
          is no controller."; a KRaft controller's (``kraftControllerEpoch`` > 0) ->
          ControllerMovedException "... directly when there is a KRaft controller."; else its
          dataVersion is what the multi will check (0 for every ``/controller``, MG-7);
        - CHECK_CONTROLLER_EPOCH (the fixed design, docs/findings/entity-config-check-aba.md):
          read ``/controller_epoch`` (its zkVersion) first, then ``/controller`` as above; the
          multi checks both, so a claim or an election after the reads fails it;
        - CHECK_SOME_CONTROLLER (before KAFKA-16539 as the model's variant
          entity-config-write-unchecked states it): only "some ``/controller`` exists"; no
          KRaft refusal, and the write carries no CheckOp."""
        entity_type, entity_name = _entity(mutation.path)
        epoch_zk_version = None
        if check == CHECK_CONTROLLER_EPOCH:
            got = self.get_controller_epoch(now_ms)
            epoch_zk_version = None if got is None else got[1].version
        reg = self.get_controller_registration(now_ms)
        if reg is None or (check == CHECK_CONTROLLER_EPOCH and epoch_zk_version is None):
            # "This case is mainly here to make tests less flaky (by virtue of retries)."
            raise ControllerMovedException(
                f"Cannot set entity configs for {entity_type} {entity_name} when there is no "
                f"controller.")
        if reg.is_kraft and check != CHECK_SOME_CONTROLLER:
            raise ControllerMovedException(
                f"Cannot set entity configs for {entity_type} {entity_name} directly when there "
                f"is a KRaft controller.")
        return EntityConfigGuard(check, reg, epoch_zk_version)

    def write_entity_configs(self, mutation: ZkMutation, guard: EntityConfigGuard, now_ms: int,
                             tag: object = None) -> None:
        """The write of ``setOrCreateEntityConfigs`` after ``read_entity_config_guard``, then
        ``createConfigChangeNotification`` (unguarded).

        Kafka 3.8.0 (CHECK_CONTROLLER_DATA_VERSION): ``set`` is the multi {CheckOp(/controller,
        dataVersion read), SetData(config, any version)}, unwrapped by
        ``unwrapResponseWithControllerEpochCheck``, which turns a failed check into
        ControllerMovedException only for ``/controller_epoch`` (MG-7a): the multi's result
        code (its first failing op's) comes back as the SetData's.  NONODE -- the config znode
        is missing, *or* ``/controller`` is gone -- goes to ``createOrSet``: a plain
        ``createRecursive`` (no check at all), and on NODEEXISTS ``set`` again, whose error is
        thrown (``maybeThrow``): a KeeperException (BadVersion, NoNode).

        The fixed design (CHECK_CONTROLLER_EPOCH): every write, the create too, is a multi
        {CheckOp(/controller_epoch, zkVersion read), CheckOp(/controller, dataVersion read),
        op}; a failed check is ControllerMovedException.

        CHECK_SOME_CONTROLLER: a plain SetData (create if missing), nothing checked."""
        entity_type, entity_name = _entity(mutation.path)
        reg = guard.registration
        if guard.check == CHECK_CONTROLLER_EPOCH:
            checks = [CheckOp(CONTROLLER_EPOCH_PATH, guard.controller_epoch_zk_version),
                      CheckOp(CONTROLLER_PATH, reg.zk_version)]
        elif guard.check == CHECK_CONTROLLER_DATA_VERSION:
            checks = [CheckOp(CONTROLLER_PATH, reg.zk_version)]
        else:
            checks = []

        def run(op: Op) -> Code:
            try:
                self._call(lambda s: self.zk.multi(s, checks + [op], now_ms=now_ms, tag=tag),
                           now_ms)
                return Code.OK
            except KeeperException as e:
                if e.results is None:
                    raise
                if guard.check == CHECK_CONTROLLER_EPOCH and any(
                        r.code not in (Code.OK, Code.RUNTIMEINCONSISTENCY)
                        for r in e.results[:len(checks)]):
                    raise ControllerMovedException(
                        f"Controller moved while setting entity configs for {entity_type} "
                        f"{entity_name}") from None
                return e.code

        code = run(SetDataOp(mutation.path, mutation.data))
        if code == Code.NONODE:
            # createOrSet
            if guard.check == CHECK_CONTROLLER_EPOCH:
                code = run(CreateOp(mutation.path, mutation.data))
            else:
                try:
                    self.create_recursive(mutation.path, now_ms, mutation.data, tag=tag)
                    code = Code.OK
                except KeeperException as e:
                    if e.code != Code.NODEEXISTS:
                        raise
                    code = Code.NODEEXISTS
            if code == Code.NODEEXISTS:
                code = run(SetDataOp(mutation.path, mutation.data))
        if code != Code.OK:
            raise KeeperException(code, mutation.path)
        self._call(lambda s: self.zk.create(s, mutation.notification_prefix,
                                            mutation.notification_data,
                                            mode=CreateMode.PERSISTENT_SEQUENTIAL,
                                            now_ms=now_ms), now_ms)

    def set_or_create_entity_configs(self, mutation: ZkMutation, now_ms: int,
                                     tag: object = None,
                                     registration: ControllerRegistration | None = None) -> None:
        """Z-5, MG-6 (``setOrCreateEntityConfigs`` of Kafka 3.8.0, the write path of a broker
        that is not the controller) in one go: the reads, then the multi behind
        ``CheckOp(/controller, its dataVersion)``.  ``registration`` is the ``/controller`` read
        earlier (read now if not given)."""
        guard = (self.read_entity_config_guard(mutation, now_ms) if registration is None
                 else EntityConfigGuard(CHECK_CONTROLLER_DATA_VERSION, registration, None))
        self.write_entity_configs(mutation, guard, now_ms, tag)

    def write_acls(self, mutation: ZkMutation, now_ms: int, tag: object = None) -> None:
        """``AclAuthorizer``'s own write of a resource's ACLs (``updateResourceAcls``:
        ``createAclsForResourceIfNotExists``, else ``conditionalSetAclsForResource`` at the
        version it read), then the change notification.  Its ``KafkaZkClient`` is built with
        ``enableEntityConfigControllerCheck = false``, and ACL writes never look at
        ``/controller`` (MG-7: "ACL and topic writes by brokers are not fenced at all")."""
        got = self.get_data(mutation.path, now_ms)
        if got is None:
            self._call(lambda s: self.zk.create(s, mutation.path, mutation.data, now_ms=now_ms,
                                                tag=tag), now_ms)
        else:
            version = got[1].version
            self._call(lambda s: self.zk.set_data(s, mutation.path, mutation.data, version,
                                                  now_ms=now_ms, tag=tag), now_ms)
        self._call(lambda s: self.zk.create(s, mutation.notification_prefix,
                                            mutation.notification_data,
                                            mode=CreateMode.PERSISTENT_SEQUENTIAL,
                                            now_ms=now_ms), now_ms)

    def delete_controller(self, expected_controller_epoch_zk_version: int, now_ms: int) -> None:
        """``deleteController`` (``triggerControllerMove``, Z-3): delete ``/controller``
        behind the epoch CheckOp."""
        result = self.retry_request_until_connected(DeleteOp(CONTROLLER_PATH),
                                                    expected_controller_epoch_zk_version, now_ms)
        if result.code not in (Code.OK, Code.NONODE):
            raise KeeperException(result.code, CONTROLLER_PATH)

    def try_register_kraft_controller_as_active(self, kraft_controller_id: int,
                                                kraft_controller_epoch: int,
                                                now_ms: int) -> tuple[int, int] | None:
        """Z-6 (``tryRegisterKRaftControllerAsActiveController``, migration): refuse if
        ``/controller`` holds a KRaft epoch >= ours; else one multi = CAS ``/controller_epoch``
        + delete the old ``/controller`` at its zkVersion + create a *persistent*
        ``/controller``.  ``(epoch, epochZkVersion)``, or None if the multi lost a race."""
        reg = self.get_controller_registration(now_ms)
        if (reg is not None and reg.kraft_epoch is not None
                and reg.kraft_epoch >= kraft_controller_epoch):
            raise ControllerMovedException(
                f"Cannot register KRaft controller {kraft_controller_id} with epoch "
                f"{kraft_controller_epoch} as the current controller register in ZK has the same "
                f"or newer epoch {reg.kraft_epoch}.")
        cur = self.get_controller_epoch(now_ms)
        if cur is None:
            raise RuntimeError(f"Cannot register KRaft controller {kraft_controller_id} as the "
                               f"active controller since there is no ZK controller epoch present.")
        new_epoch = cur[0] + 1
        ops: list[Op] = [SetDataOp(CONTROLLER_EPOCH_PATH, encode_controller_epoch(new_epoch),
                                   cur[1].version)]
        if reg is not None:
            ops.append(DeleteOp(CONTROLLER_PATH, reg.zk_version))
        ops.append(CreateOp(CONTROLLER_PATH, encode_controller(
            kraft_controller_id, now_ms, kraft_controller_epoch), CreateMode.PERSISTENT))
        try:
            results = self._call(lambda s: self.zk.multi(s, ops, now_ms=now_ms), now_ms)
        except KeeperException as e:
            if e.code in (Code.BADVERSION, Code.NONODE, Code.NODEEXISTS):
                return None
            raise
        return new_epoch, results[0].stat.version


# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PendingRegistration:
    """A ``registerBroker`` on its way to ZooKeeper: the BrokerInfo read and its JSON."""
    info: BrokerInfo
    data: bytes


@dataclass(frozen=True)
class MutationResult:
    """The answer to a request whose mutation the controller processed: NONE (0),
    NOT_CONTROLLER (41) or UNKNOWN_SERVER_ERROR (-1), for the waiting request ``tag``."""
    tag: object
    error_code: int
    message: str = ""


class ZkBroker:
    """One ZK-mode broker: its ``KafkaController`` (election, event queue, resignation) and
    the controller id in its metadata cache (``known_controller``, what
    ``MetadataCacheControllerNodeProvider`` reads, F-15).

    ``is_active`` is ``KafkaController.isActive`` (the receiving side's F-3/F-26 checks read
    it).  ``epoch``/``epoch_zk_version`` are the controller epoch and the ``/controller_epoch``
    zkVersion won at election (-1 when not the controller).

    A broker started with a BrokerInfo registers in ``/brokers/ids`` (ZB-1..ZB-10):
    ``broker_info`` is ``KafkaController.brokerInfo`` (what it registers, again after every
    session expiry, ZB-7), ``broker_epoch`` its ``_brokerEpoch`` (the znode's czxid, ZB-4).
    ``RegisterBrokerAndReelect``'s registration is two steps: ``send_registration`` (the event
    runs: ``registerBroker`` reads ``brokerInfo`` and sends the create) and
    ``complete_registration`` (ZooKeeper applies it, ZB-5 on NODEEXISTS).  Two switches keep
    Kafka's flaws: ``broker_info_not_cached`` (before KAFKA-6573 a listener update wrote
    ZooKeeper without updating ``brokerInfo``) and ``broker_info_update_races_registration``
    (Kafka's config thread updates while a registration is on its way, ZB-10); by default an
    update waits for the registration in flight."""

    def __init__(self, broker_id: int, zk: ZooKeeper, *, check_epoch_zk_version: bool = True,
                 session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS, now_ms: int = 0,
                 start: bool = True, broker_info_not_cached: bool = False,
                 broker_info_update_races_registration: bool = False,
                 entity_config_check: str = CHECK_CONTROLLER_EPOCH) -> None:
        if entity_config_check not in (CHECK_CONTROLLER_EPOCH, CHECK_CONTROLLER_DATA_VERSION,
                                       CHECK_SOME_CONTROLLER):
            raise ValueError(f"unknown entity-config check {entity_config_check!r}")
        self.broker_id = broker_id
        self.zk = zk
        self.check_epoch_zk_version = check_epoch_zk_version
        self.entity_config_check = entity_config_check
        self.broker_info_not_cached = broker_info_not_cached
        self.broker_info_update_races_registration = broker_info_update_races_registration
        self.zk_client = KafkaZkClient(zk, session_timeout_ms=session_timeout_ms)
        self.alive = False
        self.incarnation = -1
        self.errors: list[str] = []             # what Kafka only logs (ZB-8, ZB-9)
        self._reset()
        if start:
            self.startup(now_ms)

    def _reset(self) -> None:
        self.active_controller_id = -1          # KafkaController.activeControllerId
        self.epoch = -1
        self.epoch_zk_version = -1
        self.known_controller = -1              # metadata cache
        # the metadata cache's controller is a KRaftCachedControllerId (MG-3: learned from the
        # KRaft controller's UpdateMetadataRequest), not a ZkCachedControllerId
        self.known_controller_kraft = False
        # entity-config writes between their reads and their multi (MG-6), oldest first
        self.config_writes: deque[PendingConfigWrite] = deque()
        self.events: deque[ZkMutation] = deque()    # ControllerEventManager's queue
        self.latest_controller_epoch = INITIAL_CONTROLLER_EPOCH - 1   # ReplicaManager (Z-4)
        self.broker_info: BrokerInfo | None = None   # KafkaController.brokerInfo
        self.broker_epoch = -1                  # KafkaController._brokerEpoch (czxid, ZB-4)
        self.register_pending = False           # RegisterBrokerAndReelect queued
        self.registering: PendingRegistration | None = None     # its create on its way

    # ---- lifecycle -----------------------------------------------------------------------

    def startup(self, now_ms: int, create_broker_info=None, register_now: bool = True) -> None:
        """A process run starts: a new ZooKeeper session, the top-level paths, the watch on
        ``/controller``.  It does not elect yet and its metadata cache knows no controller
        until it learns one (``learn_controller``).

        ``create_broker_info(zk_client, now_ms)`` is ``KafkaServer.createBrokerInfo`` (ZB-2):
        with it the broker registers (ZB-1), at once (``register_now``: ``registerBroker`` in
        ``KafkaServer.startup``, a NodeExists propagates and the start-up fails) or as a queued
        registration (``send_registration``)."""
        self._reset()
        self.alive = True
        self.incarnation += 1
        self.zk_client.current_zookeeper_session_id = -1    # a new process's KafkaZkClient
        self.zk_client.connect(now_ms)
        self.zk_client.create_top_level_paths(now_ms)
        if create_broker_info is not None:
            self.broker_info = create_broker_info(self.zk_client, now_ms)
            if register_now:
                self.broker_epoch = self.zk_client.register_broker(self.broker_info, now_ms)
            else:
                self.register_pending = True
        self._watch_controller(now_ms)

    def crash(self) -> None:
        """The process dies.  Its ZooKeeper session lives on until ZooKeeper expires it."""
        self.alive = False
        self._reset()

    @property
    def is_active(self) -> bool:
        return self.alive and self.active_controller_id == self.broker_id

    @property
    def session_id(self) -> int | None:
        return self.zk_client.session_id

    @property
    def session_expired(self) -> bool:
        """ZooKeeper expired the session and this broker has not handled it yet (the model's
        ``session_expired``: a controller in this state is a zombie)."""
        return self.zk_client.expiry_unhandled

    def _watch_controller(self, now_ms: int) -> int:
        """The ``ControllerChangeHandler`` runs: the ``/controller`` events so far are dealt
        with, and ``/controller`` is read again leaving a new one-shot watch.  -1: none."""
        self.zk_client.inbox = [e for e in self.zk_client.collect_events()
                                if e.path != CONTROLLER_PATH]
        current = self.zk_client.get_controller_id(now_ms, watch=True)
        return -1 if current is None else current

    def pending_controller_events(self) -> list[WatchedEvent]:
        """Watch events on ``/controller`` not yet acted upon (the late news)."""
        return [e for e in self.zk_client.collect_events() if e.path == CONTROLLER_PATH]

    # ---- Z-1 election --------------------------------------------------------------------

    def elect(self, now_ms: int) -> bool | None:
        """``KafkaController.elect`` (model: broker_elects_controller).  None when it does not
        try: dead, expiry unhandled, already active, or a ``/controller`` exists (Kafka then
        just records ``activeControllerId`` and returns).  True once elected; False if the
        multi lost (ControllerMovedException -> maybeResign)."""
        if not self.alive or self.session_expired or self.is_active:
            return None
        current = self.zk_client.get_controller_id(now_ms)
        if current is not None:
            return None
        try:
            epoch, zk_version = self.zk_client.register_controller_and_increment_controller_epoch(
                self.broker_id, now_ms)
        except ControllerMovedException:
            self.maybe_resign(now_ms)
            return False
        self.active_controller_id = self.broker_id
        self.epoch, self.epoch_zk_version = epoch, zk_version
        self.known_controller = self.broker_id      # its own UpdateMetadata reaches it first
        self.known_controller_kraft = False
        self.latest_controller_epoch = max(self.latest_controller_epoch, epoch)
        self._watch_controller(now_ms)      # its own NodeCreated: nothing to do
        return True

    # ---- Z-2/Z-3 the event queue ---------------------------------------------------------

    def accept_mutation(self, mutation: ZkMutation) -> None:
        """The controller queues the mutation as an event; it is written when the event runs
        (model: _controller_accepts_mutation, ZK branch).  The caller has made the F-3/F-26
        checks; nothing is answered yet."""
        self.events.append(mutation)

    def process_event(self, now_ms: int) -> MutationResult | None:
        """Run the next queued event (model: controller_processes_event).  Not active ->
        NOT_CONTROLLER.  Active -> write behind ``CheckOp(/controller_epoch,
        epoch_zk_version)`` (Z-2); BADVERSION -> ControllerMovedException -> ``maybe_resign``
        and NOT_CONTROLLER (Z-3).  None when dead or the queue is empty."""
        if not self.alive or not self.events:
            return None
        mutation = self.events.popleft()
        if not self.is_active:
            return MutationResult(mutation.tag, NOT_CONTROLLER,
                                  "This is not the correct controller for this cluster.")
        expected = self.epoch_zk_version if self.check_epoch_zk_version else MATCH_ANY_VERSION
        try:
            self.zk_client.write_entity(mutation, expected, now_ms,
                                        tag=ZkWrite(mutation.tag, self.broker_id, self.epoch))
        except ControllerMovedException as e:
            self.maybe_resign(now_ms)
            return MutationResult(mutation.tag, NOT_CONTROLLER, str(e))
        except KeeperException as e:
            return MutationResult(mutation.tag, UNKNOWN_SERVER_ERROR, str(e))
        return MutationResult(mutation.tag, NONE)

    def maybe_resign(self, now_ms: int) -> None:
        """``maybeResign`` (Z-3): re-read ``/controller`` (leaving the watch); resign if this
        broker was active and no longer is."""
        was_active = self.is_active
        self.active_controller_id = self._watch_controller(now_ms)
        if was_active and not self.is_active:
            self.on_controller_resignation()

    def on_controller_resignation(self) -> None:
        """``onControllerResignation``: forget the controller context (epoch included)."""
        if self.active_controller_id == self.broker_id:
            self.active_controller_id = -1
        self.epoch = -1
        self.epoch_zk_version = -1

    def trigger_controller_move(self, now_ms: int) -> None:
        """``triggerControllerMove`` (Z-3): resign and delete ``/controller`` behind the epoch
        CheckOp, so another broker can win."""
        if not self.is_active:
            return
        expected = self.epoch_zk_version
        self.on_controller_resignation()
        try:
            self.zk_client.delete_controller(expected, now_ms)
        except ControllerMovedException:
            pass

    # ---- session expiry and the metadata cache -------------------------------------------

    def handle_session_expiry(self, now_ms: int) -> bool | None:
        """The broker handles its session's expiry (model: broker_handles_session_expiry):
        ``Expire`` -> ``activeControllerId = -1`` and ``onControllerResignation``; then
        ``RegisterBrokerAndReelect`` on a live session: the watch on ``/controller`` again and
        the controller it names.  (The re-election is its own step, ``elect``.)
        None when there is no unhandled expiry."""
        if not self.alive or not self.session_expired:
            return None
        self.active_controller_id = -1
        self.on_controller_resignation()
        self.zk_client.expiry_handled(now_ms)
        self.known_controller = self._watch_controller(now_ms)
        self.active_controller_id = self.known_controller
        reg = self.zk_client.get_controller_registration(now_ms)
        self.known_controller_kraft = reg is not None and reg.is_kraft
        if self.broker_info is not None:
            # ZB-6: the new session queues RegisterBrokerAndReelect; Expire cleared the queue,
            # so a registration of the old session still on its way is gone
            self.registering = None
            self.register_pending = True
        return True

    # ---- ZB-1..ZB-10 registration in /brokers/ids ----------------------------------------

    def send_registration(self, now_ms: int) -> bool | None:
        """``processRegisterBrokerAndReelect`` starts (model: broker_sends_zk_registration,
        ZB-7): ``registerBroker(brokerInfo)`` reads the BrokerInfo this controller holds and
        sends the checked ephemeral create with its JSON (ZB-3, ZB-4).  None when no
        registration is queued, one is on its way, or the broker is dead or its expiry
        unhandled."""
        if (not self.alive or self.session_expired or not self.register_pending
                or self.registering is not None):
            return None
        self.register_pending = False
        info = self.broker_info
        self.registering = PendingRegistration(info, info.to_json_bytes(now_ms))
        return True

    def complete_registration(self, now_ms: int) -> int | None:
        """ZooKeeper applies the registration on its way (model: zk_creates_broker_znode):
        ``checkedEphemeralCreate`` (ZB-4, ZB-5); the broker epoch becomes the znode's czxid
        (a new one per session, ZB-7).  An exception is only logged (``KafkaController.process``,
        ZB-8): -1, the epoch unchanged.  None when nothing is on its way."""
        if not self.alive or self.registering is None:
            return None
        pending, self.registering = self.registering, None
        try:
            stat = self.zk_client.checked_ephemeral_create(pending.info.path, pending.data,
                                                           now_ms)
        except KeeperException as e:
            self.errors.append(f"Error processing event RegisterBrokerAndReelect: {e}")
            return -1
        self.broker_epoch = stat.czxid
        return self.broker_epoch

    @property
    def broker_info_update_waits(self) -> bool:
        """A listener update waits while a registration is on its way to ZooKeeper (the two
        serialized); Kafka's config thread does not wait (ZB-10)."""
        return self.registering is not None and not self.broker_info_update_races_registration

    def update_broker_info(self, broker_info: BrokerInfo, now_ms: int) -> bool | None:
        """``KafkaController.updateBrokerInfo`` (ZB-9), called by the dynamic listener update
        with ``KafkaServer.createBrokerInfo``: set ``brokerInfo`` (not under
        ``broker_info_not_cached``: the update went straight to ``KafkaZkClient``), then
        ``updateBrokerInfo``'s SetData at any version.  Its KeeperException (NONODE while the
        znode is gone) ends up in the config update's error log: False.  None when it waits
        (``broker_info_update_waits``) or the broker is dead."""
        if not self.alive or self.broker_info_update_waits:
            return None
        if not self.broker_info_not_cached:
            self.broker_info = broker_info
        try:
            self.zk_client.update_broker_info(broker_info, now_ms)
        except KeeperException as e:
            self.errors.append(f"Failed to update broker configuration: {e}")
            return False
        return True

    def learn_controller(self, now_ms: int) -> int | None:
        """The metadata cache catches up with ``/controller`` (model:
        broker_learns_controller): the watch fired (or the broker just started); re-read with a
        new watch.  Returns the controller id now cached (-1: none), or None when there is
        nothing new to learn (or it cannot: dead, expiry unhandled)."""
        if not self.alive or self.session_expired:
            return None
        reg = self.zk_client.get_controller_registration(now_ms)
        current = -1 if reg is None else reg.controller_id
        if current == self.known_controller:
            return None
        if reg is not None and reg.is_kraft:
            # MG-3: the KRaft controller's UpdateMetadataRequest (isKRaftController) makes the
            # metadata cache hold KRaftCachedControllerId.  This broker's KafkaController is
            # not involved: the watch event the claim fired on /controller (Reelect) waits in
            # its queue, so a ZK controller the claim deposed stays active until its next
            # event, whose write fails the /controller_epoch CheckOp (Z-2, Z-3; MG-5).
            self.known_controller = current
            self.known_controller_kraft = True
            return current
        self.known_controller = self._watch_controller(now_ms)
        self.known_controller_kraft = False
        # KafkaController's ControllerChange event: maybeResign on the same read.
        was_active = self.is_active
        self.active_controller_id = self.known_controller
        if was_active and not self.is_active:
            self.on_controller_resignation()
        return self.known_controller

    # ---- Z-5 the non-controller's own writes ---------------------------------------------

    def write_zk_directly(self, mutation: ZkMutation, now_ms: int) -> int:
        """A broker without forwarding writes a config/ACL change itself (F-5, Z-5; model:
        _broker_writes_zk): NONE (0), or STALE_CONTROLLER_EPOCH (11) when no ``/controller``
        exists (ControllerMovedException).  Recorded with writer epoch -1."""
        try:
            self.zk_client.set_or_create_entity_configs(
                mutation, now_ms, tag=ZkWrite(mutation.tag, self.broker_id, -1))
        except ControllerMovedException:
            return STALE_CONTROLLER_EPOCH
        except KeeperException:
            return UNKNOWN_SERVER_ERROR
        return NONE

    # ---- MG-6 the broker's own entity-config write (F-6) -----------------------------------

    def start_entity_config_write(self, mutation: ZkMutation, now_ms: int) -> int | None:
        """A request handler processes IncrementalAlterConfigs itself (F-6: the metadata cache
        names no KRaft controller, or this broker does not forward) and
        ``setOrCreateEntityConfigs`` makes its reads (MG-6; model: the read half of
        client_sends_request): STALE_CONTROLLER_EPOCH (11) when there is no ``/controller`` or
        a KRaft controller's (ControllerMovedException); None when the multi is still to be
        sent (``finish_entity_config_write``)."""
        try:
            guard = self.zk_client.read_entity_config_guard(mutation, now_ms,
                                                            self.entity_config_check)
        except ControllerMovedException:
            return STALE_CONTROLLER_EPOCH
        seen = guard.controller_epoch_zk_version
        if seen is None:
            got = self.zk.peek(CONTROLLER_EPOCH_PATH)       # an observer's read: a ghost
            seen = -1 if got is None else got[1].version
        self.config_writes.append(PendingConfigWrite(mutation, guard, seen))
        return None

    def finish_entity_config_write(self, now_ms: int) -> tuple | None:
        """The oldest pending write's multi reaches ZooKeeper (model:
        broker_writes_entity_config): ``(request tag, error code)`` -- NONE once written,
        STALE_CONTROLLER_EPOCH (11) for ControllerMovedException, UNKNOWN_SERVER_ERROR (-1)
        for a KeeperException (MG-7a).  None when none is pending or the broker is dead."""
        if not self.alive or not self.config_writes:
            return None
        pending = self.config_writes.popleft()
        return pending.mutation.tag, self._write_entity_config(pending.mutation, pending.guard,
                                                               now_ms)

    def write_entity_config_unchecked(self, mutation: ZkMutation, now_ms: int) -> int:
        """The write before KAFKA-16539 as the model's variant entity-config-write-unchecked
        states it: at once, guarded only by some ``/controller`` existing (Z-5) -- no KRaft
        refusal, no CheckOp."""
        try:
            guard = self.zk_client.read_entity_config_guard(mutation, now_ms,
                                                            CHECK_SOME_CONTROLLER)
        except ControllerMovedException:
            return STALE_CONTROLLER_EPOCH
        return self._write_entity_config(mutation, guard, now_ms)

    def _write_entity_config(self, mutation: ZkMutation, guard: EntityConfigGuard,
                             now_ms: int) -> int:
        try:
            self.zk_client.write_entity_configs(mutation, guard, now_ms,
                                                tag=ZkWrite(mutation.tag, self.broker_id, -1))
        except ControllerMovedException:
            return STALE_CONTROLLER_EPOCH
        except KeeperException:
            return UNKNOWN_SERVER_ERROR
        return NONE

    def write_acls_directly(self, mutation: ZkMutation, now_ms: int) -> int:
        """CreateAcls on a broker that does not forward (an IBP below 3.4-IV0, F-4, MG-1):
        ``AclAuthorizer`` writes the resource's ACLs itself, whoever holds ``/controller``
        (MG-7).  NONE, or UNKNOWN_SERVER_ERROR (-1) for a KeeperException
        (``ApiError.fromThrowable``).  Recorded with writer epoch -1."""
        try:
            self.zk_client.write_acls(mutation, now_ms,
                                      tag=ZkWrite(mutation.tag, self.broker_id, -1))
        except KeeperException:
            return UNKNOWN_SERVER_ERROR
        return NONE

    # ---- Z-4 receivers fence stale controllers -------------------------------------------

    def fence_controller_request(self, controller_epoch: int) -> int:
        """LeaderAndIsr / StopReplica / UpdateMetadata from a controller: an epoch older than
        the newest seen is STALE_CONTROLLER_EPOCH (11) for the whole request; otherwise NONE
        and the epoch becomes the newest seen (``ReplicaManager.controllerEpoch``)."""
        if controller_epoch < self.latest_controller_epoch:
            return STALE_CONTROLLER_EPOCH
        self.latest_controller_epoch = controller_epoch
        return NONE


# --------------------------------------------------------------------------------------------


class ZkCluster:
    """A ZooKeeper ensemble and brokers ``0..n-1``, with the model's step names.

    Each method is one step of ``model/actions.py`` and returns None when the model's guard
    would not enable it.  ``bootstrap`` reproduces the model's initial ZK state: broker
    ``initial_controller`` elected with epoch 1 at ``/controller_epoch`` zkVersion 1, and every
    broker's metadata cache knowing it."""

    def __init__(self, brokers: int, *, initial_controller: int | None = 0,
                 check_epoch_zk_version: bool = True,
                 session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
                 tick_time_ms: int = 2000, now_ms: int = 0, create_broker_info=None,
                 broker_info_not_cached: bool = False,
                 broker_info_update_races_registration: bool = False,
                 entity_config_check: str = CHECK_CONTROLLER_EPOCH,
                 kraft_controllers: Sequence[int] = (), brokers_ready=None,
                 claims_before_brokers_ready: bool = False) -> None:
        """``create_broker_info(n, zk_client, now_ms)``: broker ``n``'s
        ``KafkaServer.createBrokerInfo``; with it every broker registers at start-up (ZB-1).

        ZK-to-KRaft migration (MG-1..MG-7): the node ids in ``kraft_controllers`` are KRaft
        controllers (``impl.zk_migration.KRaftMigrationController``, in
        ``kraft_controllers[id]``; ``brokers[id]`` is None), started after the ZK controller's
        election.  ``brokers_ready()``: their migration driver's WAIT_FOR_BROKERS test (every
        ZK broker registered with the KRaft controller), skipped with
        ``claims_before_brokers_ready``.  ``entity_config_check``: how the brokers' own
        entity-config writes check the controller (MG-6, ``CHECK_*``)."""
        self.zk = ZooKeeper(tick_time_ms=tick_time_ms, start_ms=now_ms)
        self._writes_seen: tuple = (0, ())     # (transactions scanned, their ZkWrites)
        self.create_broker_info = create_broker_info
        kraft = frozenset(kraft_controllers)
        self.brokers = [None if i in kraft else
                        ZkBroker(i, self.zk, check_epoch_zk_version=check_epoch_zk_version,
                                 session_timeout_ms=session_timeout_ms, now_ms=now_ms,
                                 start=False, broker_info_not_cached=broker_info_not_cached,
                                 broker_info_update_races_registration=(
                                     broker_info_update_races_registration),
                                 entity_config_check=entity_config_check)
                        for i in range(brokers)]
        for b in self.zk_brokers():
            b.startup(now_ms, self._broker_info_of(b.broker_id))
        if initial_controller is not None:
            if self.brokers[initial_controller].elect(now_ms) is not True:
                raise RuntimeError("initial election failed")
            for b in self.zk_brokers():
                b.learn_controller(now_ms)
        self.kraft_controllers = {}
        if kraft:
            from impl.zk_migration import KRaftMigrationController
            self.kraft_controllers = {
                c: KRaftMigrationController(
                    c, self.zk, brokers_ready=brokers_ready or (lambda: True),
                    claims_before_brokers_ready=claims_before_brokers_ready,
                    session_timeout_ms=session_timeout_ms, now_ms=now_ms)
                for c in sorted(kraft)}

    def zk_brokers(self) -> list:
        """The ZK brokers (the KRaft controllers of a migration left out)."""
        return [b for b in self.brokers if b is not None]

    def process(self, n: int):
        """Node ``n``'s ZooKeeper-side process: its ``ZkBroker`` or, in a migration, its
        ``KRaftMigrationController``."""
        return self.kraft_controllers[n] if n in self.kraft_controllers else self.brokers[n]

    # ---- observation ---------------------------------------------------------------------

    def controller(self) -> int:
        """Who holds ``/controller`` now (-1: nobody), as an observer sees it."""
        got = self.zk.peek(CONTROLLER_PATH)
        return -1 if got is None else decode_controller(got[0], got[1].version).controller_id

    def controller_epoch(self) -> tuple[int, int]:
        """``/controller_epoch`` as ``(epoch, zkVersion)``; ``(0, 0)`` before any election
        (the model's initial ``Zk``)."""
        got = self.zk.peek(CONTROLLER_EPOCH_PATH)
        return (0, 0) if got is None else (decode_controller_epoch(got[0]), got[1].version)

    def writes(self) -> tuple:
        """``zk_writes`` of the store, scanning only the transactions committed since the last
        call (the transaction log only grows)."""
        n, out = self._writes_seen
        if n != len(self.zk.txn_log):
            out += zk_writes(self.zk, n)
            self._writes_seen = (len(self.zk.txn_log), out)
        return out

    def registered_brokers(self) -> dict:
        """``/brokers/ids`` as an observer reads it: broker id -> (BrokerInfo, Stat)."""
        out = {}
        prefix = BROKER_IDS_PATH + "/"
        for path in self.zk.paths():
            if path.startswith(prefix):
                data, stat = self.zk.peek(path)
                broker_id = int(path[len(prefix):])
                out[broker_id] = (decode_broker_info(broker_id, data), stat)
        return out

    def _broker_info_of(self, n: int):
        if self.create_broker_info is None:
            return None
        return lambda zk_client, now_ms: self.create_broker_info(n, zk_client, now_ms)

    # ---- the model's steps ---------------------------------------------------------------

    def broker_elects_controller(self, n: int, now_ms: int) -> bool | None:
        return self.brokers[n].elect(now_ms)

    def controller_accepts_mutation(self, n: int, mutation: ZkMutation) -> None:
        self.process(n).accept_mutation(mutation)

    def controller_processes_event(self, n: int, now_ms: int) -> MutationResult | None:
        return self.process(n).process_event(now_ms)

    def zk_expires_session(self, n: int, now_ms: int) -> bool | None:
        """ZooKeeper expires broker ``n``'s session (dead or alive).  None if an expiry of
        it is already unhandled (the model expires a session once until it is handled), or
        ``n`` is a KRaft controller (its ``/controller`` is persistent, and the model does not
        expire its session)."""
        b = self.brokers[n]
        if b is None or b.session_expired or not self.zk.is_session_alive(b.session_id):
            return None
        self.zk.expire_session(b.session_id, now_ms)
        return True

    def broker_handles_session_expiry(self, n: int, now_ms: int) -> bool | None:
        return self.brokers[n].handle_session_expiry(now_ms)

    def broker_learns_controller(self, n: int, now_ms: int) -> int | None:
        return self.brokers[n].learn_controller(now_ms)

    def broker_writes_zk(self, n: int, mutation: ZkMutation, now_ms: int) -> int:
        return self.brokers[n].write_zk_directly(mutation, now_ms)

    def node_crashes(self, n: int) -> None:
        self.process(n).crash()

    def node_restarts(self, n: int, now_ms: int) -> None:
        """A new process: its registration is queued (the model's start-up registration is a
        step of its own)."""
        if n in self.kraft_controllers:
            self.kraft_controllers[n].startup(now_ms)
            return
        self.brokers[n].startup(now_ms, self._broker_info_of(n), register_now=False)

    def controller_claims_zk_leadership(self, c: int, now_ms: int) -> bool | None:
        return self.kraft_controllers[c].claim_leadership(now_ms)

    def broker_writes_entity_config(self, n: int, now_ms: int) -> tuple | None:
        return self.brokers[n].finish_entity_config_write(now_ms)

    def broker_sends_zk_registration(self, n: int, now_ms: int) -> bool | None:
        return self.brokers[n].send_registration(now_ms)

    def zk_creates_broker_znode(self, n: int, now_ms: int) -> int | None:
        return self.brokers[n].complete_registration(now_ms)

    def operator_updates_listeners(self, n: int, broker_info: BrokerInfo,
                                   now_ms: int) -> bool | None:
        return self.brokers[n].update_broker_info(broker_info, now_ms)


__all__ = ["CONTROLLER_PATH", "CONTROLLER_EPOCH_PATH", "INITIAL_CONTROLLER_EPOCH",
           "DEFAULT_SESSION_TIMEOUT_MS", "ControllerMovedException",
           "ControllerRegistration", "ZkWrite", "ZkMutation", "config_mutation", "acl_mutation",
           "zk_writes", "encode_controller", "decode_controller", "encode_controller_epoch",
           "decode_controller_epoch", "KafkaZkClient", "MutationResult", "ZkBroker", "ZkCluster",
           "BROKER_IDS_PATH", "broker_id_path", "EndPoint", "Broker", "BrokerInfo",
           "encode_broker_info", "decode_broker_info", "create_broker_info",
           "default_supported_features", "PendingRegistration", "EntityConfigGuard",
           "PendingConfigWrite", "CHECK_CONTROLLER_DATA_VERSION", "CHECK_CONTROLLER_EPOCH",
           "CHECK_SOME_CONTROLLER", "IBP_3_4_IV0", "is_api_forwarding_enabled"]
