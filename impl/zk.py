"""An in-memory ZooKeeper ensemble, sans I/O: the part of ZooKeeper that Kafka's ZK mode relies on.

What Kafka's single-writer fencing needs from ZooKeeper (rules Z-1..Z-7 of
``docs/rules.md`` section 4), with ZooKeeper's own semantics (3.8, the version Kafka 3.x
ships):

- **Sessions** (``SessionTrackerImpl``): a client opens a session with a requested timeout,
  which the server clamps to ``[minSessionTimeout, maxSessionTimeout]`` (defaults 2 and 20
  ticks); every request and ping touches the session, whose deadline is rounded up to the next
  ``tickTime`` bucket (``ExpiryQueue``).  A session expires when the session tracker finds its
  deadline passed (``expire_sessions(now_ms)``, the tracker thread waking up) or when a fault
  injector says so (``expire_session``).  Expiry deletes the session's ephemeral znodes in one
  ``closeSession`` transaction and drops its watches; the client learns ``Expired`` only when it
  collects its events -- the late notice that makes a zombie controller possible (Z-3, Z-7).
- **Znodes**: persistent and ephemeral (owned by a session, no children allowed), optionally
  sequential (``%010d`` of the parent's ``cversion``), each with a ``Stat``: ``version`` is the
  zkVersion Kafka's CheckOps compare (0 at create, +1 per ``setData``), ``cversion`` counts child
  changes, ``czxid``/``mzxid``/``pzxid`` the transactions that created / modified / changed its
  children.
- **Operations**: ``create``, ``get_data``, ``exists``, ``get_children``, ``set_data`` and
  ``delete`` with an expected version (-1 matches any), and ``multi`` of ``CreateOp``,
  ``SetDataOp``, ``DeleteOp``, ``CheckOp``: all or nothing, one zxid; on failure the failing op
  carries its error code, the ops before it ``OK`` and the ops after it ``RUNTIMEINCONSISTENCY``
  (``PrepRequestProcessor``/``DataTree.processTxn``), and the whole call raises the failing op's
  ``KeeperException`` with those results attached (``ZooKeeper.multi``).
- **Watches**: one-shot, per session: ``get_data``/``exists`` leave a data watch (``exists`` on a
  missing path an existence watch, stored in the same table as in ZooKeeper's ``WatchManager``),
  ``get_children`` a child watch.  Triggers as in ``DataTree``: create -> ``NodeCreated`` on the
  path and ``NodeChildrenChanged`` on the parent; setData -> ``NodeDataChanged``; delete ->
  ``NodeDeleted`` on the path (data and child watchers, one event per session) and
  ``NodeChildrenChanged`` on the parent.  Events are queued per session and the client collects
  them (``poll_events``); nothing calls back into a client.

Errors are ZooKeeper's ``KeeperException.Code`` values.  Every committed transaction is kept in
``txn_log`` with an optional caller tag, so an observer can list the durable writes and who made
them without the ensemble knowing what a tag means.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Union
from collections.abc import Iterable


class Code(IntEnum):
    """``org.apache.zookeeper.KeeperException.Code``."""
    OK = 0
    SYSTEMERROR = -1
    RUNTIMEINCONSISTENCY = -2
    DATAINCONSISTENCY = -3
    CONNECTIONLOSS = -4
    MARSHALLINGERROR = -5
    UNIMPLEMENTED = -6
    OPERATIONTIMEOUT = -7
    BADARGUMENTS = -8
    UNKNOWNSESSION = -12
    APIERROR = -100
    NONODE = -101
    NOAUTH = -102
    BADVERSION = -103
    NOCHILDRENFOREPHEMERALS = -108
    NODEEXISTS = -110
    NOTEMPTY = -111
    SESSIONEXPIRED = -112
    INVALIDCALLBACK = -113
    INVALIDACL = -114
    AUTHFAILED = -115
    SESSIONMOVED = -118
    NOTREADONLY = -119


# KeeperException.getCodeMessage
_CODE_MESSAGES = {
    Code.OK: "ok", Code.SYSTEMERROR: "SystemError",
    Code.RUNTIMEINCONSISTENCY: "RuntimeInconsistency", Code.DATAINCONSISTENCY: "DataInconsistency",
    Code.CONNECTIONLOSS: "ConnectionLoss", Code.MARSHALLINGERROR: "MarshallingError",
    Code.UNIMPLEMENTED: "Unimplemented", Code.OPERATIONTIMEOUT: "OperationTimeout",
    Code.BADARGUMENTS: "BadArguments", Code.UNKNOWNSESSION: "Unknown session",
    Code.APIERROR: "APIError", Code.NONODE: "NoNode", Code.NOAUTH: "NoAuth",
    Code.BADVERSION: "BadVersion", Code.NOCHILDRENFOREPHEMERALS: "NoChildrenForEphemerals",
    Code.NODEEXISTS: "NodeExists", Code.NOTEMPTY: "Directory not empty",
    Code.SESSIONEXPIRED: "Session expired", Code.INVALIDCALLBACK: "Invalid callback",
    Code.INVALIDACL: "InvalidACL", Code.AUTHFAILED: "AuthFailed",
    Code.SESSIONMOVED: "Session moved", Code.NOTREADONLY: "Not a read-only call",
}


class KeeperException(Exception):
    """A failed ZooKeeper operation, message as ZooKeeper formats it
    (``KeeperErrorCode = NoNode for /controller``).  ``results`` is set for a failed ``multi``:
    one ``OpResult`` per op."""

    def __init__(self, code: Code, path: str | None = None,
                 results: list[OpResult] | None = None) -> None:
        self.code = Code(code)
        self.path = path
        self.results = results
        message = f"KeeperErrorCode = {_CODE_MESSAGES[self.code]}"
        super().__init__(message + (f" for {path}" if path else ""))


class EventType(IntEnum):
    """``Watcher.Event.EventType``."""
    NONE = -1
    NODE_CREATED = 1
    NODE_DELETED = 2
    NODE_DATA_CHANGED = 3
    NODE_CHILDREN_CHANGED = 4


class KeeperState(IntEnum):
    """``Watcher.Event.KeeperState`` (the ones a session goes through here)."""
    DISCONNECTED = 0
    SYNC_CONNECTED = 3
    EXPIRED = -112
    CLOSED = 7


class CreateMode(IntEnum):
    """``org.apache.zookeeper.CreateMode`` (flag values)."""
    PERSISTENT = 0
    EPHEMERAL = 1
    PERSISTENT_SEQUENTIAL = 2
    EPHEMERAL_SEQUENTIAL = 3

    @property
    def ephemeral(self) -> bool:
        return self in (CreateMode.EPHEMERAL, CreateMode.EPHEMERAL_SEQUENTIAL)

    @property
    def sequential(self) -> bool:
        return self in (CreateMode.PERSISTENT_SEQUENTIAL, CreateMode.EPHEMERAL_SEQUENTIAL)


MATCH_ANY_VERSION = -1          # an expected version of -1 matches any (ZooKeeper and Kafka)


@dataclass(frozen=True)
class Stat:
    """``org.apache.zookeeper.data.Stat``."""
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int            # the zkVersion: data changes
    cversion: int           # child changes
    aversion: int           # ACL changes (never changed here)
    ephemeral_owner: int    # owning session id, 0 for a persistent znode
    data_length: int
    num_children: int
    pzxid: int


@dataclass(frozen=True)
class WatchedEvent:
    """What a watcher receives: a znode event (state SyncConnected) or a session state change
    (type NONE, path None)."""
    type: EventType
    state: KeeperState
    path: str | None


# ---- multi ops (org.apache.zookeeper.Op) --------------------------------------------------


@dataclass(frozen=True)
class CreateOp:
    path: str
    data: bytes = b""
    mode: CreateMode = CreateMode.PERSISTENT


@dataclass(frozen=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = MATCH_ANY_VERSION


@dataclass(frozen=True)
class DeleteOp:
    path: str
    version: int = MATCH_ANY_VERSION


@dataclass(frozen=True)
class CheckOp:
    """``Op.check(path, version)``: fails the whole multi unless the znode exists with that
    version -- how Kafka fences a deposed controller (Z-2)."""
    path: str
    version: int


Op = Union[CreateOp, SetDataOp, DeleteOp, CheckOp]  # noqa: UP007 -- a runtime alias on 3.10


@dataclass(frozen=True)
class OpResult:
    """One op's result: ``op`` names the kind ("create", "setData", "delete", "check"); a
    failed multi gives every op ``code`` (``OpResult.ErrorResult``)."""
    op: str
    code: Code = Code.OK
    path: str | None = None     # CreateResult: the created path (with its sequence suffix)
    stat: Stat | None = None    # CreateResult / SetDataResult


@dataclass(frozen=True)
class Txn:
    """A committed transaction (one zxid): what it changed, for whom, with the caller's tag."""
    zxid: int
    time_ms: int
    session_id: int
    kind: str                   # create | setData | delete | multi | closeSession
    paths: tuple                # paths written, in order
    tag: object = None


# ---- internals ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _ZNode:
    data: bytes
    stat: Stat
    children: frozenset = frozenset()


# The two Stat updates of a write, by the constructor: ``dataclasses.replace`` looks every
# field up by name (0.9 of the 3.5 CPU-seconds that ZooKeeper writes took in a profile of one
# conformance run on zk-broker-registration).

def _children_changed(node: _ZNode, children: frozenset, zxid: int) -> _ZNode:
    """``node`` with ``children``: cversion bumped, pzxid the transaction's, numChildren."""
    st = node.stat
    return _ZNode(node.data, Stat(st.czxid, st.mzxid, st.ctime, st.mtime, st.version,
                                  st.cversion + 1, st.aversion, st.ephemeral_owner,
                                  st.data_length, len(children), zxid), children)


def _data_changed(node: _ZNode, data: bytes, zxid: int, now_ms: int) -> _ZNode:
    """``node`` with ``data``: mzxid and mtime the transaction's, version bumped."""
    st = node.stat
    return _ZNode(data, Stat(st.czxid, zxid, st.ctime, now_ms, st.version + 1, st.cversion,
                             st.aversion, st.ephemeral_owner, len(data), st.num_children,
                             st.pzxid), node.children)


@dataclass
class _Session:
    session_id: int
    timeout_ms: int
    expires_at: int
    alive: bool = True
    ephemerals: set = field(default_factory=set)


def validate_path(path: str) -> None:
    """``PathUtils.validatePath``: the client rejects a bad path before sending it (Java's
    IllegalArgumentException, here ValueError), with ZooKeeper's messages."""
    if not isinstance(path, str) or not path:
        raise ValueError("Path length must be > 0")
    if path[0] != "/":
        raise ValueError("Path must start with / character")
    if len(path) == 1:
        return
    if path[-1] == "/":
        raise ValueError("Path must not end with / character")
    for i, part in enumerate(path.split("/")[1:]):
        if part == "":
            raise ValueError(f"empty node name specified @{path.index('//') + 1}")
        if part in (".", ".."):
            raise ValueError(f"relative paths not allowed @{i}")
        if "\u0000" in part:
            raise ValueError(f"null character not allowed @{path.index(chr(0))}")


def _parent(path: str) -> str:
    i = path.rindex("/")
    return path[:i] if i > 0 else "/"


class ZooKeeper:
    """One in-memory ZooKeeper ensemble (a single logical server: Kafka never sees the quorum).

    Every request names the session it comes from and the current time ``now_ms``; nothing
    reads a clock.  Time-based expiry runs only when ``expire_sessions(now_ms)`` is called, as
    the session tracker's thread does when it wakes up."""

    def __init__(self, *, tick_time_ms: int = 2000, min_session_timeout_ms: int | None = None,
                 max_session_timeout_ms: int | None = None, server_id: int = 1,
                 start_ms: int = 0) -> None:
        if tick_time_ms <= 0:
            raise ValueError("tickTime must be positive")
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = (2 * tick_time_ms if min_session_timeout_ms is None
                                       else min_session_timeout_ms)
        self.max_session_timeout_ms = (20 * tick_time_ms if max_session_timeout_ms is None
                                       else max_session_timeout_ms)
        # SessionTrackerImpl.initializeNextSessionId: (time << 24) >>> 8 | (serverId << 56)
        self._next_session_id = ((((start_ms << 24) & (2 ** 64 - 1)) >> 8)
                                 | (server_id << 56)) or 1
        root = Stat(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        self._nodes: dict[str, _ZNode] = {"/": _ZNode(b"", root)}
        self._sessions: dict[int, _Session] = {}
        self._data_watches: dict[str, set] = {}
        self._child_watches: dict[str, set] = {}
        self._events: dict[int, list] = {}
        self._zxid = 0
        self.txn_log: list[Txn] = []

    # ---- sessions ------------------------------------------------------------------------

    def _round_to_next_interval(self, time_ms: int) -> int:
        """``ExpiryQueue.roundToNextInterval``: deadlines live in tickTime buckets."""
        return (time_ms // self.tick_time_ms + 1) * self.tick_time_ms

    def create_session(self, timeout_ms: int, now_ms: int) -> int:
        """A client connects and gets a new session; the timeout is the negotiated one
        (clamped to the server's bounds, ``ZooKeeperServer.processConnectRequest``)."""
        timeout = min(max(timeout_ms, self.min_session_timeout_ms), self.max_session_timeout_ms)
        sid = self._next_session_id
        self._next_session_id += 1
        self._sessions[sid] = _Session(sid, timeout, self._round_to_next_interval(now_ms + timeout))
        self._events[sid] = []
        return sid

    def session_timeout_ms(self, session_id: int) -> int:
        return self._sessions[session_id].timeout_ms

    def session_deadline_ms(self, session_id: int) -> int:
        return self._sessions[session_id].expires_at

    def is_session_alive(self, session_id: int) -> bool:
        s = self._sessions.get(session_id)
        return s is not None and s.alive

    def touch_session(self, session_id: int, now_ms: int) -> bool:
        """A request or ping from the client (``SessionTrackerImpl.touchSession``): pushes the
        deadline out.  False for an expired or unknown session."""
        s = self._sessions.get(session_id)
        if s is None or not s.alive:
            return False
        s.expires_at = max(s.expires_at, self._round_to_next_interval(now_ms + s.timeout_ms))
        return True

    def expire_sessions(self, now_ms: int) -> list[int]:
        """The session tracker wakes up at ``now_ms``: every session whose deadline has passed
        expires.  Returns their ids, in id order (deterministic)."""
        due = sorted(sid for sid, s in self._sessions.items() if s.alive and s.expires_at <= now_ms)
        for sid in due:
            self.expire_session(sid, now_ms)
        return due

    def expire_session(self, session_id: int, now_ms: int) -> None:
        """Expire a session now (fault injection, or the tracker): its watches go with its
        connection, its ephemerals are deleted in one ``closeSession`` transaction (their
        watchers are told), and its client will see ``Expired`` when it next collects events."""
        self._close(session_id, now_ms, KeeperState.EXPIRED)

    def close_session(self, session_id: int, now_ms: int) -> None:
        """A clean ``ZooKeeper.close()``: like expiry, but the client knows (state Closed)."""
        self._close(session_id, now_ms, KeeperState.CLOSED)

    def _close(self, session_id: int, now_ms: int, state: KeeperState) -> None:
        s = self._sessions.get(session_id)
        if s is None or not s.alive:
            return
        s.alive = False
        for table in (self._data_watches, self._child_watches):
            for watchers in table.values():
                watchers.discard(session_id)
        if s.ephemerals:
            # Deepest first is irrelevant (ephemerals have no children); sorted for determinism.
            paths = sorted(s.ephemerals)
            self._zxid += 1
            triggers = []
            for path in paths:
                triggers += self._apply_delete(path, self._zxid)
            s.ephemerals.clear()
            self.txn_log.append(Txn(self._zxid, now_ms, session_id, "closeSession", tuple(paths)))
            self._fire(triggers)
        self._events[session_id].append(WatchedEvent(EventType.NONE, state, None))

    def poll_events(self, session_id: int) -> list[WatchedEvent]:
        """Collect (and remove) the events queued for a session's client, oldest first."""
        events = self._events.get(session_id, [])
        self._events[session_id] = []
        return events

    def ephemerals(self, session_id: int) -> list[str]:
        return sorted(self._sessions[session_id].ephemerals)

    @property
    def last_zxid(self) -> int:
        return self._zxid

    def peek(self, path: str) -> tuple[bytes, Stat] | None:
        """An observer's read (what ``zkCli.sh get -s`` shows): no session, no watch, no
        effect on the ensemble."""
        node = self._nodes.get(path)
        return None if node is None else (node.data, node.stat)

    def paths(self) -> list[str]:
        """Every znode path, sorted (for observers and tests)."""
        return sorted(self._nodes)

    # ---- reads ---------------------------------------------------------------------------

    def _session(self, session_id: int, now_ms: int) -> None:
        if not self.touch_session(session_id, now_ms):
            raise KeeperException(Code.SESSIONEXPIRED)

    def get_data(self, session_id: int, path: str, *, watch: bool = False,
                 now_ms: int) -> tuple[bytes, Stat]:
        validate_path(path)
        self._session(session_id, now_ms)
        node = self._nodes.get(path)
        if node is None:
            raise KeeperException(Code.NONODE, path)    # no watch is left on a missing path
        if watch:
            self._data_watches.setdefault(path, set()).add(session_id)
        return node.data, node.stat

    def exists(self, session_id: int, path: str, *, watch: bool = False,
               now_ms: int) -> Stat | None:
        """The Stat, or None; with ``watch`` a watch is left either way (on a missing path it
        fires NodeCreated)."""
        validate_path(path)
        self._session(session_id, now_ms)
        if watch:
            self._data_watches.setdefault(path, set()).add(session_id)
        node = self._nodes.get(path)
        return None if node is None else node.stat

    def get_children(self, session_id: int, path: str, *, watch: bool = False,
                     now_ms: int) -> list[str]:
        validate_path(path)
        self._session(session_id, now_ms)
        node = self._nodes.get(path)
        if node is None:
            raise KeeperException(Code.NONODE, path)
        if watch:
            self._child_watches.setdefault(path, set()).add(session_id)
        return sorted(node.children)

    # ---- writes --------------------------------------------------------------------------

    def create(self, session_id: int, path: str, data: bytes = b"", *,
               mode: CreateMode = CreateMode.PERSISTENT, now_ms: int, tag: object = None) -> str:
        """Create a znode; returns its path (with the sequence suffix if sequential)."""
        return self.multi(session_id, [CreateOp(path, data, mode)], now_ms=now_ms, tag=tag,
                          _kind="create")[0].path

    def set_data(self, session_id: int, path: str, data: bytes,
                 version: int = MATCH_ANY_VERSION, *, now_ms: int, tag: object = None) -> Stat:
        return self.multi(session_id, [SetDataOp(path, data, version)], now_ms=now_ms, tag=tag,
                          _kind="setData")[0].stat

    def delete(self, session_id: int, path: str, version: int = MATCH_ANY_VERSION, *,
               now_ms: int, tag: object = None) -> None:
        self.multi(session_id, [DeleteOp(path, version)], now_ms=now_ms, tag=tag,
                   _kind="delete")

    def multi(self, session_id: int, ops: Iterable[Op], *, now_ms: int, tag: object = None,
              _kind: str = "multi") -> list[OpResult]:
        """Run ``ops`` atomically as one transaction (one zxid).  On the first failing op
        nothing is applied and ``KeeperException`` of that op's code is raised with
        ``results``: OK for the ops before it, its code, RUNTIMEINCONSISTENCY after it.
        A single create/setData/delete raises the plain exception (``results`` None)."""
        ops = list(ops)
        for op in ops:
            validate_path(op.path)
            if isinstance(op, CreateOp) and op.path == "/":
                raise ValueError("Path cannot be /")    # nothing can create the root
        self._session(session_id, now_ms)
        zxid = self._zxid + 1
        view: dict[str, _ZNode | None] = {}             # the pending changes (copy on write)
        results: list[OpResult] = []
        triggers: list[tuple] = []
        created_ephemeral: list[str] = []
        deleted: list[str] = []
        for i, op in enumerate(ops):
            try:
                result = self._prepare(op, view, zxid, now_ms, session_id, triggers,
                                       created_ephemeral, deleted)
            except KeeperException as e:
                if _kind != "multi":
                    raise
                failed = ([OpResult(_op_name(o), Code.OK) for o in ops[:i]]
                          + [OpResult(_op_name(op), e.code)]
                          + [OpResult(_op_name(o), Code.RUNTIMEINCONSISTENCY) for o in ops[i + 1:]])
                raise KeeperException(e.code, e.path, failed) from None
            results.append(result)
        # commit
        self._zxid = zxid
        for path, node in view.items():
            if node is None:
                self._nodes.pop(path, None)
            else:
                self._nodes[path] = node
        for path in deleted:
            for s in self._sessions.values():
                s.ephemerals.discard(path)
        for path in created_ephemeral:
            if path in self._nodes:
                self._sessions[session_id].ephemerals.add(path)
        written = tuple(r.path if r.path else op.path
                        for op, r in zip(ops, results) if not isinstance(op, CheckOp))
        self.txn_log.append(Txn(zxid, now_ms, session_id, _kind, written, tag))
        self._fire(triggers)
        return results

    def _prepare(self, op: Op, view: dict, zxid: int, now_ms: int, session_id: int,
                 triggers: list, created_ephemeral: list, deleted: list) -> OpResult:
        """PrepRequestProcessor: check one op against the pending view, record its changes."""
        def get(p: str) -> _ZNode | None:
            return view[p] if p in view else self._nodes.get(p)

        if isinstance(op, CheckOp):
            node = get(op.path)
            if node is None:
                raise KeeperException(Code.NONODE, op.path)
            if op.version != MATCH_ANY_VERSION and op.version != node.stat.version:
                raise KeeperException(Code.BADVERSION, op.path)
            return OpResult("check")
        if isinstance(op, CreateOp):
            parent_path = _parent(op.path)
            parent = get(parent_path)
            if parent is None:
                raise KeeperException(Code.NONODE, op.path)
            path = op.path
            if op.mode.sequential:
                path = f"{op.path}{parent.stat.cversion:010d}"
            if get(path) is not None:
                raise KeeperException(Code.NODEEXISTS, path)
            if parent.stat.ephemeral_owner != 0:
                raise KeeperException(Code.NOCHILDRENFOREPHEMERALS, path)
            owner = session_id if op.mode.ephemeral else 0
            stat = Stat(zxid, zxid, now_ms, now_ms, 0, 0, 0, owner, len(op.data), 0, zxid)
            view[path] = _ZNode(bytes(op.data), stat)
            children = parent.children | {path[len(parent_path.rstrip('/')) + 1:]}
            view[parent_path] = _children_changed(parent, children, zxid)
            if op.mode.ephemeral:
                created_ephemeral.append(path)
            triggers.append(("created", path))
            return OpResult("create", path=path, stat=stat)
        if isinstance(op, SetDataOp):
            node = get(op.path)
            if node is None:
                raise KeeperException(Code.NONODE, op.path)
            if op.version != MATCH_ANY_VERSION and op.version != node.stat.version:
                raise KeeperException(Code.BADVERSION, op.path)
            view[op.path] = changed = _data_changed(node, bytes(op.data), zxid, now_ms)
            triggers.append(("changed", op.path))
            return OpResult("setData", stat=changed.stat)
        if isinstance(op, DeleteOp):
            if op.path == "/":
                raise KeeperException(Code.BADARGUMENTS, op.path)
            node = get(op.path)
            if node is None:
                raise KeeperException(Code.NONODE, op.path)
            if op.version != MATCH_ANY_VERSION and op.version != node.stat.version:
                raise KeeperException(Code.BADVERSION, op.path)
            if node.children:
                raise KeeperException(Code.NOTEMPTY, op.path)
            self._stage_delete(op.path, view, get, zxid)
            deleted.append(op.path)
            triggers.append(("deleted", op.path))
            return OpResult("delete")
        raise TypeError(f"not a ZooKeeper op: {op!r}")

    def _stage_delete(self, path: str, view: dict, get, zxid: int) -> None:
        parent_path = _parent(path)
        parent = get(parent_path)
        view[path] = None
        children = parent.children - {path.rsplit("/", 1)[1]}
        view[parent_path] = _children_changed(parent, children, zxid)

    def _apply_delete(self, path: str, zxid: int) -> list:
        """Delete one znode outside a multi (session close); returns its watch triggers."""
        view: dict = {}
        self._stage_delete(path, view, lambda p: view[p] if p in view else self._nodes.get(p),
                           zxid)
        for p, node in view.items():
            if node is None:
                self._nodes.pop(p, None)
            else:
                self._nodes[p] = node
        return [("deleted", path)]

    # ---- watches -------------------------------------------------------------------------

    def _fire(self, triggers: list) -> None:
        """Deliver the one-shot watches a committed transaction triggered (``DataTree``)."""
        for what, path in triggers:
            if what == "created":
                self._trigger(self._data_watches, path, EventType.NODE_CREATED)
                self._trigger(self._child_watches, _parent(path), EventType.NODE_CHILDREN_CHANGED)
            elif what == "changed":
                self._trigger(self._data_watches, path, EventType.NODE_DATA_CHANGED)
            else:
                told = self._trigger(self._data_watches, path, EventType.NODE_DELETED)
                self._trigger(self._child_watches, path, EventType.NODE_DELETED, told)
                self._trigger(self._child_watches, _parent(path), EventType.NODE_CHILDREN_CHANGED)

    def _trigger(self, table: dict, path: str, event_type: EventType,
                 suppress: set = frozenset()) -> set:
        watchers = table.pop(path, set())
        for sid in sorted(watchers):
            if sid not in suppress and self.is_session_alive(sid):
                self._events[sid].append(WatchedEvent(event_type, KeeperState.SYNC_CONNECTED, path))
        return watchers


def _op_name(op: Op) -> str:
    return {CreateOp: "create", SetDataOp: "setData", DeleteOp: "delete",
            CheckOp: "check"}[type(op)]


__all__ = ["Code", "KeeperException", "EventType", "KeeperState", "CreateMode",
           "MATCH_ANY_VERSION", "Stat", "WatchedEvent", "CreateOp", "SetDataOp", "DeleteOp",
           "CheckOp", "Op", "OpResult", "Txn", "ZooKeeper", "validate_path"]
