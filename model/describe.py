"""Human-readable text for steps and states, in Kafka's words (for traces and reports).

``describe_step(cfg, st)`` says what a step does from its arguments alone; given the state
before it (and after it), it also says what the step found and did: which controller a
channel discovered, which epoch an election won, whether a write passed its CheckOp.  A
reader of a counterexample needs those facts, and the arguments alone do not carry them.
``describe_trace`` replays a trace to give every step its states.

``describe_fields(cfg, design, state, names)`` renders parts of a state, one line per fact;
``FIELDS`` lists the parts.  ``properties.registry.RELEVANT_FIELDS`` says which parts matter
for each clause, so that a violation is reported with the facts it is about.

Text never shows a raw tuple or an action name: nodes, clients and listeners by their
configured names, errors by their ``Errors`` names, records and requests by Kafka's nouns.
"""
from __future__ import annotations

from model import kafka
from model.actions import (advertised_version, broker_registration, epoch_holder,
                           latest_registration, metadata_version, provider_controller)
from model.config import (DESCRIBE, FIND_COORDINATOR, FORGED_ENVELOPE, KRAFT, METADATA, MUTATION,
                          ZK, Design, ModelConfig)
from model.state import (BROKER_HEARTBEAT_REQUEST, BROKER_HEARTBEAT_RESPONSE,
                         BROKER_REGISTRATION_CHANGE, BROKER_REGISTRATION_REQUEST,
                         BROKER_REGISTRATION_RESPONSE, CREATE_TOPICS_REQUEST,
                         CREATE_TOPICS_RESPONSE, ENVELOPE_REQUEST, ENVELOPE_RESPONSE, FEATURE_LEVEL,
                         TOPIC_CREATION, TOPIC_RECORD, FENCED, FORWARD, MUTATION_RECORD, NO_NODE,
                         NO_TIME, NO_VERSIONS, REGISTER_BROKER, REGISTER_CONTROLLER, REGISTRATION,
                         REGISTRATION_REQUEST, REGISTRATION_RESPONSE, MSG_ARITY, Item, Msg,
                         STATIC_ENDPOINTS, UNRESOLVED_ENDPOINTS, Record, Response, State, message)
from model.step import Step

# The record a controller appends for each mutation (QuorumController's replay types).
_RECORD_OF_API = {kafka.CREATE_TOPICS: "TopicRecord",
                  kafka.INCREMENTAL_ALTER_CONFIGS: "ConfigRecord",
                  kafka.CREATE_ACLS: "AccessControlEntryRecord"}
_ENDPOINT_TYPES = {kafka.ENDPOINT_UNKNOWN: "UNKNOWN", kafka.ENDPOINT_BROKER: "broker",
                   kafka.ENDPOINT_CONTROLLER: "controller"}
_MV_NAMES = {kafka.MV_3_7_IV0: "3.7-IV0"}


# --------------------------------------------------------------------------------------------
# nouns


def node_name(cfg: ModelConfig, n: int) -> str:
    return cfg.nodes[n].name if 0 <= n < len(cfg.nodes) else "-"


def _client(cfg: ModelConfig, c: int) -> str:
    return cfg.clients[c].name if 0 <= c < len(cfg.clients) else f"client #{c}"


def _listener(cfg: ModelConfig, i: int) -> str:
    return cfg.listener_names[i] if 0 <= i < len(cfg.listener_names) else f"listener #{i}"


def _api(cfg: ModelConfig, c: int) -> str:
    api = cfg.clients[c].api if 0 <= c < len(cfg.clients) else None
    return kafka.API_NAMES.get(api, f"API key {api}")


def _request(cfg: ModelConfig, c: int, version: int | None = None) -> str:
    """'A1's CreateTopics v7'; for a Metadata request's auto-creation, the CreateTopics it
    makes."""
    v = f" v{version}" if version is not None else ""
    if 0 <= c < len(cfg.clients) and cfg.clients[c].kind == METADATA:
        return (f"the CreateTopics{v} of {_topic(cfg.clients[c].topic_name)} for "
                f"{_client(cfg, c)}'s Metadata")
    return f"{_client(cfg, c)}'s {_api(cfg, c)}{v}"


def _topic(name: str) -> str:
    return f"topic {name}"


def _err(code: int) -> str:
    return kafka.error_name(code)


def _mv(level: int) -> str:
    return _MV_NAMES.get(level, f"feature level {level}")


def _plural(k: int, word: str) -> str:
    return f"{k or 'no'} {word}{'' if k == 1 else 's'}"


def _join(items) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _endpoint_source(token: int, zk: bool = False) -> str:
    """How a registration's endpoints were resolved (model.state: STATIC_ENDPOINTS, ...); in
    ZK mode the token is the version of the broker's listeners configuration."""
    if token == STATIC_ENDPOINTS:
        return ""
    if token == UNRESOLVED_ENDPOINTS:
        return " unresolved (blank host or port 0)"
    return f" of listeners version {token}" if zk else f" of incarnation {token}"


def _unresolved(m: Msg) -> str:
    return (" with its listeners unresolved (blank host or port 0)"
            if m.endpoints == UNRESOLVED_ENDPOINTS else "")


def _endpoints(cfg: ModelConfig, endpoints) -> str:
    if not endpoints:
        return "no endpoints"
    zk = cfg.mode == ZK
    return _join(f"{node_name(cfg, n)}'s {_listener(cfg, lst)} endpoint{_endpoint_source(t, zk)}"
                 for n, lst, t in sorted(endpoints))


def describe_record(cfg: ModelConfig, rec: Record) -> str:
    if rec.kind == FEATURE_LEVEL:
        return f"a FeatureLevelRecord for metadata.version {_mv(rec.level)}"
    if rec.kind == REGISTER_CONTROLLER:
        return (f"a RegisterControllerRecord for {node_name(cfg, rec.controller_id)} with "
                f"incarnation_id {rec.incarnation_id}"
                + (f" and endpoints{_endpoint_source(rec.endpoints)}"
                   if rec.endpoints != STATIC_ENDPOINTS else ""))
    if rec.kind == REGISTER_BROKER:
        return (f"a RegisterBrokerRecord for {node_name(cfg, rec.broker_id)} with "
                f"incarnation_id {rec.incarnation_id}, broker epoch {rec.broker_epoch}, "
                + ("fenced" if rec.fenced == FENCED else "not fenced"))
    if rec.kind == BROKER_REGISTRATION_CHANGE:
        what = {FENCED: "fencing"}.get(rec.fenced, "unfencing" if rec.fenced else "not changing")
        return (f"a BrokerRegistrationChangeRecord {what} {node_name(cfg, rec.broker_id)}'s "
                f"registration of broker epoch {rec.broker_epoch}")
    if rec.kind == TOPIC_RECORD:
        return (f"a TopicRecord for {_topic(cfg.topic_names[rec.topic])}, created as "
                f"{cfg.principal_names[rec.principal]}")
    spec = cfg.clients[rec.client] if 0 <= rec.client < len(cfg.clients) else None
    kind = _RECORD_OF_API.get(spec.mutation_api if spec else None, "metadata record")
    return f"the {kind} of {_request(cfg, rec.client)}"


def describe_response(cfg: ModelConfig, c: int, r: Response) -> str:
    """What client ``c`` got: 'UNKNOWN_SERVER_ERROR, from the envelope error ...'."""
    text = _err(r.code)
    if cfg.clients[c].kind == DESCRIBE and r.code == kafka.NONE:
        text += f" listing {_endpoints(cfg, r.endpoints)}"
    if r.envelope_error:
        text += f", from the envelope error {_err(r.envelope_error)}"
    if r.retried:
        text += ", after a retry"
    return text


def describe_msg(cfg: ModelConfig, m: Msg) -> str:
    """A message as a noun phrase: "B2's EnvelopeRequest to B1 on INTERNAL carrying A1's
    CreateTopics v7"."""
    src, dst = node_name(cfg, m.src), node_name(cfg, m.dst)
    if m.kind == ENVELOPE_REQUEST:
        hop = f", on forwarding hop {m.hops}" if m.hops > 1 else ""
        return (f"{src}'s EnvelopeRequest to {dst} on {_listener(cfg, m.listener)} carrying "
                f"{_request(cfg, m.client, m.version)}{hop}")
    if m.kind == ENVELOPE_RESPONSE:
        inner = (f", inner error {_err(m.inner_error)}"
                 if m.error == kafka.NONE and m.inner_error != kafka.NONE else "")
        return (f"{src}'s EnvelopeResponse to {dst} for {_request(cfg, m.client)} "
                f"(error {_err(m.error)}{inner})")
    if m.kind == REGISTRATION_REQUEST:
        return (f"{src}'s ControllerRegistrationRequest to {dst} on {_listener(cfg, m.listener)} "
                f"for incarnation_id {m.incarnation_id}{_unresolved(m)}")
    if m.kind == REGISTRATION_RESPONSE:
        return (f"{src}'s ControllerRegistrationResponse to {dst} for incarnation_id "
                f"{m.incarnation_id} (error {_err(m.error)})")
    if m.kind == BROKER_REGISTRATION_REQUEST:
        return (f"{src}'s BrokerRegistrationRequest to {dst} on {_listener(cfg, m.listener)} "
                f"for incarnation_id {m.incarnation_id}{_unresolved(m)}")
    if m.kind == BROKER_REGISTRATION_RESPONSE:
        epoch = f", broker epoch {m.broker_epoch}" if m.error == kafka.NONE else ""
        return (f"{src}'s BrokerRegistrationResponse to {dst} for incarnation_id "
                f"{m.incarnation_id} (error {_err(m.error)}{epoch})")
    if m.kind == BROKER_HEARTBEAT_REQUEST:
        return (f"{src}'s BrokerHeartbeatRequest to {dst} on {_listener(cfg, m.listener)} with "
                f"broker epoch {m.broker_epoch} at metadata offset {m.metadata_offset}")
    if m.kind == BROKER_HEARTBEAT_RESPONSE:
        fenced = "" if m.error != kafka.NONE else (", fenced" if m.is_fenced else ", not fenced")
        return f"{src}'s BrokerHeartbeatResponse to {dst} (error {_err(m.error)}{fenced})"
    if m.kind == CREATE_TOPICS_REQUEST:
        return (f"{src}'s own CreateTopicsRequest to {dst} on {_listener(cfg, m.listener)} for "
                f"{_topic(cfg.topic_names[m.topic])}")
    if m.kind == CREATE_TOPICS_RESPONSE:
        return (f"{src}'s CreateTopicsResponse to {dst} for {_topic(cfg.topic_names[m.topic])} "
                f"(error {_err(m.error)})")
    return f"an unknown message from {src} to {dst}"


def _item(cfg: ModelConfig, n: int, item: Item) -> str:
    if item.kind == FORWARD:
        return _request(cfg, item.client)
    if item.kind == TOPIC_CREATION:
        return (f"{node_name(cfg, n)}'s own CreateTopicsRequest for "
                f"{_topic(cfg.topic_names[item.topic])}")
    return (f"{node_name(cfg, n)}'s ControllerRegistrationRequest for incarnation_id "
            f"{item.incarnation_id}")


# --------------------------------------------------------------------------------------------
# who a node is in a state


def _role(cfg: ModelConfig, s: State | None, n: int) -> str:
    """'B1 (controller, epoch 1)': the node and the role that decides what it does."""
    name = node_name(cfg, n)
    if s is None:
        return name
    node = s.nodes[n]
    if not node.alive:
        return f"{name}, which is down,"
    if cfg.mode == ZK:
        if node.zk_active:
            expired = "; its ZooKeeper session has expired" if node.session_expired else ""
            return f"{name} (controller of epoch {node.zk_epoch}{expired})"
        return f"{name} (not the controller)"
    if s.quorum.leader == n:
        return f"{name} (active controller, epoch {s.quorum.epoch})"
    if cfg.nodes[n].role != "broker":
        return f"{name} (not the active controller)"
    return name


def _controller_truth(cfg: ModelConfig, s: State) -> str:
    if cfg.mode == ZK:
        if s.zk.controller == NO_NODE:
            return "no broker holds /controller"
        return f"{node_name(cfg, s.zk.controller)} holds /controller in epoch {s.zk.epoch}"
    if s.quorum.leader == NO_NODE:
        return "the quorum has no leader"
    return f"{node_name(cfg, s.quorum.leader)} leads epoch {s.quorum.epoch}"


# --------------------------------------------------------------------------------------------
# what a step changed: phrases from the states before and after it


def _effects(cfg: ModelConfig, b: State, a: State, skip=(), consumed: Msg | None = None) -> list:
    """What changed from ``b`` to ``a``, as clauses in a fixed order.  ``skip`` names the
    kinds of change the step's own sentence already says."""
    out = []
    if "zk" not in skip:
        for w in a.zk.writes[len(b.zk.writes):]:
            if w.writer_epoch < 0:
                why = (" (Kafka's routing leaves it to the broker)" if w.routed_locally
                       else "")
                out.append(f"{node_name(cfg, w.writer)}, not the controller, writes "
                           f"{_request(cfg, w.req)} to ZooKeeper itself{why}")
            elif not b.nodes[w.writer].zk_active:
                out.append(f"{node_name(cfg, w.writer)}, not the controller, writes "
                           f"{_request(cfg, w.req)} to ZooKeeper itself, checked against "
                           f"/controller_epoch epoch {w.writer_epoch}")
            else:
                out.append(f"{node_name(cfg, w.writer)} writes {_request(cfg, w.req)} to "
                           f"ZooKeeper as controller of epoch {w.writer_epoch}")
        if a.zk.epoch != b.zk.epoch:
            out.append(f"/controller_epoch becomes {a.zk.epoch} at zkVersion {a.zk.epoch_version}")
        if a.zk.controller != b.zk.controller:
            out.append("/controller goes away" if a.zk.controller == NO_NODE
                       else f"{node_name(cfg, a.zk.controller)} holds /controller")
    for n, (nb, na) in enumerate(zip(b.nodes, a.nodes, strict=True)):
        name = node_name(cfg, n)
        if not na.alive or not nb.alive:
            continue
        if "resign" not in skip and nb.zk_active and not na.zk_active:
            out.append(f"{name} resigns as controller")
        if "migration" not in skip:
            if na.config_writes[:len(nb.config_writes)] == nb.config_writes:
                for c, version in na.config_writes[len(nb.config_writes):]:
                    out.append(f"{name} reads /controller (a ZK controller's, /controller_epoch "
                               f"at zkVersion {version}) before it writes the entity config "
                               f"of {_request(cfg, c)} itself")
        new_events = na.events[len(nb.events):] if na.events[:len(nb.events)] == nb.events else ()
        if "events" not in skip:
            for ev in new_events:
                out.append(f"{name} queues the write of {_request(cfg, ev.req)} as a controller "
                           f"event"
                           + (" and answers NONE at once, before the write" if ev.acked else ""))
        if "channel" not in skip:
            out += _channel_effects(cfg, n, nb, na)
        if "registration" not in skip and cfg.nodes[n].role != "broker":
            out += _registration_effects(cfg, n, nb, na)
        k = na.known_controller
        if "cache" not in skip and k != nb.known_controller:
            out.append(f"{name}'s metadata cache names no controller" if k == NO_NODE
                       else f"{name}'s metadata cache now names {node_name(cfg, k)} as the "
                            f"controller")
        if "versions" not in skip and na.ctrl_versions != nb.ctrl_versions \
                and na.ctrl_versions not in (NO_VERSIONS, cfg.nodes[n].api_max) \
                and na.channel.cached != NO_NODE:
            out.append(f"ApiVersions tells {name} that {node_name(cfg, na.channel.cached)} "
                       f"supports the forwardable APIs up to v{na.ctrl_versions}")
    if "uncommitted" not in skip:
        qb, qa = b.quorum, a.quorum
        if qa.uncommitted[:len(qb.uncommitted)] == qb.uncommitted:
            for rec, reply in qa.uncommitted[len(qb.uncommitted):]:
                note = "" if reply else ", answering nobody when it commits"
                out.append(f"{node_name(cfg, rec.writer)} appends {describe_record(cfg, rec)}, "
                           f"not yet committed{note}")
        elif [r for r, _ in qa.uncommitted] == [r for r, _ in qb.uncommitted]:
            pass                # the same records, only whom they answer changed
        elif qb.uncommitted and len(qa.log) == len(qb.log):
            k = len(qb.uncommitted)
            out.append(f"{node_name(cfg, qb.leader)}'s uncommitted record is lost" if k == 1 else
                       f"{node_name(cfg, qb.leader)}'s {k} uncommitted records are lost")
    if "network" not in skip:
        for m in sorted(a.network - b.network):
            out.append(_sent(cfg, m))
        lost = sorted(b.network - a.network - ({consumed} if consumed else set()))
        if lost:
            out.append(_join(describe_msg(cfg, m) for m in lost)
                       + (" is" if len(lost) == 1 else " are") + " lost with the connection")
    if "responses" not in skip:
        for c, (cb, ca) in enumerate(zip(b.clients, a.clients, strict=True)):
            for r in ca.responses[len(cb.responses):]:
                out.append(f"{_client(cfg, c)} gets {describe_response(cfg, c, r)}")
    return out


def _sent(cfg: ModelConfig, m: Msg) -> str:
    src, dst = node_name(cfg, m.src), node_name(cfg, m.dst)
    if m.kind == ENVELOPE_RESPONSE:
        return (f"{src} answers {dst}'s EnvelopeRequest for {_request(cfg, m.client)} with "
                f"{_answer(m.error, m.inner_error)}")
    if m.kind == REGISTRATION_RESPONSE:
        return (f"{src} answers {dst}'s ControllerRegistrationRequest for incarnation_id "
                f"{m.incarnation_id} with {_err(m.error)}")
    if m.kind == ENVELOPE_REQUEST:
        return (f"{src} forwards {_request(cfg, m.client, m.version)} to {dst} in an "
                f"EnvelopeRequest on {_listener(cfg, m.listener)}, hop {m.hops}")
    if m.kind == BROKER_REGISTRATION_RESPONSE:
        epoch = f", broker epoch {m.broker_epoch}" if m.error == kafka.NONE else ""
        return (f"{src} answers {dst}'s BrokerRegistrationRequest for incarnation_id "
                f"{m.incarnation_id} with {_err(m.error)}{epoch}")
    if m.kind == BROKER_HEARTBEAT_RESPONSE:
        fenced = "" if m.error != kafka.NONE else (", fenced" if m.is_fenced else ", not fenced")
        return f"{src} answers {dst}'s BrokerHeartbeatRequest with {_err(m.error)}{fenced}"
    if m.kind in (BROKER_REGISTRATION_REQUEST, BROKER_HEARTBEAT_REQUEST):
        return f"{src} sends {describe_msg(cfg, m)[len(src) + 3:]}"
    if m.kind == CREATE_TOPICS_REQUEST:
        return (f"{src} sends {dst} a CreateTopicsRequest for {_topic(cfg.topic_names[m.topic])} "
                f"as itself, without an Envelope, on {_listener(cfg, m.listener)}")
    if m.kind == CREATE_TOPICS_RESPONSE:
        return (f"{src} answers {dst}'s CreateTopicsRequest for "
                f"{_topic(cfg.topic_names[m.topic])} with {_err(m.error)}")
    return (f"{src} sends a ControllerRegistrationRequest for incarnation_id {m.incarnation_id} "
            f"to {dst} on {_listener(cfg, m.listener)}{_unresolved(m)}")


def _channel_effects(cfg: ModelConfig, n: int, nb, na) -> list:
    name = node_name(cfg, n)
    cb, ca = nb.channel, na.channel
    out = []
    if cb.inflight and not ca.inflight and ca.queue[:1] and ca.queue[0].requeued \
            and ca.queue[0][:2] == cb.inflight[:2]:     # the same kind and request
        who = f" and forgets {node_name(cfg, cb.cached)}" if cb.cached != NO_NODE else ""
        out.append(f"{name} puts {_item(cfg, n, cb.inflight)} back at the front of its "
                   f"controller channel{who}")
        return out
    if ca.cached != cb.cached:
        out.append(f"{name}'s controller channel forgets {node_name(cfg, cb.cached)}"
                   if ca.cached == NO_NODE else
                   f"{name}'s controller channel now talks to {node_name(cfg, ca.cached)}")
    if ca.queue[:len(cb.queue)] == cb.queue:
        for item in ca.queue[len(cb.queue):]:
            out.append(f"{name} queues {_item(cfg, n, item)} on its controller channel")
    return out


def _registration_effects(cfg: ModelConfig, n: int, nb, na) -> list:
    name = node_name(cfg, n)
    out, mgr = [], []
    if na.registered_in_log != nb.registered_in_log:
        out.append(f"{name} now believes incarnation {na.incarnation} is registered"
                   if na.registered_in_log else f"{name} no longer believes it is registered")
    if na.pending_rpc != nb.pending_rpc:
        mgr.append("marks a registration RPC pending" if na.pending_rpc
                   else "clears its pending registration RPC")
    if na.send_requested and not nb.send_requested:
        mgr.append("queues a registration check")
    if na.retry_at != nb.retry_at and na.retry_at != NO_TIME:
        mgr.append(f"backs off until t={na.retry_at}")
    if mgr:
        out.append(f"{name}'s ControllerRegistrationManager {_join(mgr)}")
    return out


def _with(main: str, effects: list) -> str:
    """The step's own clause, then what it caused."""
    return main + (": " + "; ".join(effects) if effects else "")


def _answer(code: int, inner: int) -> str:
    """An EnvelopeResponse's errors: the top-level one, and the inner one when it matters."""
    if code != kafka.NONE or inner == kafka.NONE:
        return _err(code)
    return f"NONE, the inner response carrying {_err(inner)}"


# --------------------------------------------------------------------------------------------
# one function per action: (cfg, argument, before, after) -> sentence


def _client_sends_request(cfg, c, b, a):
    spec = cfg.clients[c]
    node = node_name(cfg, spec.node)
    version = a.clients[c].version if a is not None else None
    api = _api(cfg, c)
    if spec.kind == FORGED_ENVELOPE:
        v = f" v{version}" if version is not None else ""
        what = (f"its own EnvelopeRequest claiming to be {spec.claimed_principal}, carrying "
                f"{api}{v},")
    elif spec.kind == DESCRIBE:
        what = f"DescribeCluster for {_ENDPOINT_TYPES.get(spec.endpoint_type, 'UNKNOWN')} endpoints"
    elif spec.kind == FIND_COORDINATOR:
        what = "FindCoordinator for its group"
    elif spec.kind == METADATA:
        what = f"Metadata for {_topic(spec.topic_name)}, allowing auto-creation,"
    else:
        what = api + (f" v{version}" if version is not None else "")
    main = f"{spec.name} (principal {spec.principal}) sends {what} to {node} on {spec.listener}"
    if b is None or a is None:
        return main
    effects = []
    if not b.nodes[spec.node].alive:
        return f"{main}: {node} is down, so the connection fails with NETWORK_EXCEPTION"
    if a.clients[c].forwarded and not b.clients[c].forwarded:
        what = ("the topic is missing: it queues the CreateTopics on its controller channel, to "
                "send in an EnvelopeRequest with the client's principal" if spec.kind == METADATA
                else "it queues it on its controller channel, to forward in an EnvelopeRequest")
        effects.append(f"{node} is not the controller: {what}" if spec.kind != METADATA
                       else f"{node}: {what}")
        effects += _effects(cfg, b, a, skip=("channel",))
        return _with(main, effects)
    return _with(main, _effects(cfg, b, a))


def _broker_learns_controller(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return f"{name}'s metadata cache catches up with who the controller is"
    if cfg.mode == ZK:
        z = b.zk
        if z.controller == NO_NODE:
            return f"{name}'s watch on /controller fires: no broker holds /controller"
        return (f"{name}'s watch on /controller fires: {node_name(cfg, z.controller)} is the "
                f"controller, epoch {z.epoch}")
    q = b.quorum
    if q.leader == NO_NODE:
        return f"{name}'s metadata cache learns that the quorum has no leader"
    return (f"{name}'s metadata cache learns that {node_name(cfg, q.leader)} is the active "
            f"controller, epoch {q.epoch}")


def _channel_discovers_controller(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return f"{name}'s controller channel looks up the active controller"
    p = provider_controller(b, cfg, n)
    source = ("its Raft client" if cfg.mode == KRAFT and cfg.nodes[n].role != "broker"
              else "its metadata cache")
    text = f"{name}'s controller channel learns from {source} that {node_name(cfg, p)} is the " \
           f"active controller"
    if cfg.mode == ZK:
        if b.zk.controller == p:
            return f"{text} (epoch {b.zk.epoch})"
        return f"{text}, which is stale: {_controller_truth(cfg, b)}"
    if b.quorum.leader == p:
        return f"{text} (epoch {b.quorum.epoch})"
    return f"{text}, which is stale: {_controller_truth(cfg, b)}"


def _channel_sends_request(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return (f"{name}'s controller channel sends the head of its queue to the controller it "
                f"has cached")
    ch = b.nodes[n].channel
    item, p = ch.queue[0], ch.cached
    pname = node_name(cfg, p)
    if not b.nodes[p].alive:
        return (f"{name}'s controller channel cannot connect to {pname}, which is down, and "
                f"forgets it")
    verb = "resends" if item.requeued else "sends"
    listener = a and next((m.listener for m in a.network - b.network), None)
    on = f" on {_listener(cfg, listener)}" if listener is not None else ""
    if item.kind == FORWARD:
        main = (f"{name} {verb} {_request(cfg, item.client, b.clients[item.client].version)} "
                f"to {pname} in an EnvelopeRequest{on}")
    elif item.kind == TOPIC_CREATION:
        main = (f"{name} {verb} its own CreateTopicsRequest for "
                f"{_topic(cfg.topic_names[item.topic])} to {pname}{on}, as itself")
    else:
        main = (f"{name} {verb} a ControllerRegistrationRequest for incarnation_id "
                f"{item.incarnation_id} to {pname}{on}")
    if a is None:
        return main
    return _with(main, _effects(cfg, b, a, skip=("network", "channel")))


def _timed_out_item(cfg, n, b, a):
    """(item, closed): which item the timeout removed, and whether it was in flight."""
    ch = b.nodes[n].channel
    if a is not None:
        cha = a.nodes[n].channel
        closed = bool(ch.inflight) and not cha.inflight and len(cha.queue) == len(ch.queue)
        return (ch.inflight, True) if closed else (ch.queue[0], False)
    from model.actions import expired_item      # the shipped design's timeouts
    item = expired_item(b, cfg, Design(), n)
    if item is None:
        item = ch.inflight or ch.queue[0]
    return item, item is ch.inflight


def _channel_times_out_request(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return f"{name}'s controller channel gives up on a request past its timeout"
    item, closed = _timed_out_item(cfg, n, b, a)
    what = _item(cfg, n, item)
    if item.kind in (FORWARD, TOPIC_CREATION):
        timeout = f"its retry timeout of {_plural(cfg.forward_timeout, 'tick')}"
    else:
        timeout = f"the registration timeout of {_plural(cfg.registration_timeout, 'tick')}"
    if closed:
        to = node_name(cfg, b.nodes[n].channel.cached)
        main = (f"{name}'s controller channel times out {what}, in flight to {to} since "
                f"t={item.sent}, after the network timeout and closes the connection")
    else:
        main = (f"{name}'s controller channel drops {what}, queued since t={item.created}, at "
                f"{timeout}")
    if a is None:
        return main
    effects = _effects(cfg, b, a, skip=("channel", "registration"))
    if item.kind == REGISTRATION:
        pending = ("keeps its registration RPC pending" if a.nodes[n].pending_rpc
                   else "clears its pending registration RPC")
        effects.insert(0, f"{name}'s ControllerRegistrationManager {pending} and backs off "
                          f"until t={a.nodes[n].retry_at}")
    return _with(main, effects)


def _reason_closed(cfg, m: Msg, b: State) -> str:
    r = m.dst
    if cfg.mode == ZK and (not cfg.zk_forwarding or not cfg.nodes[r].principal_serde):
        return f"{node_name(cfg, r)} does not accept forwarding and closes the connection"
    return (f"{node_name(cfg, r)} closes the connection: it accepts an EnvelopeRequest only on "
            f"its privileged listener")


def _controller_handles_envelope(cfg, msg, b, a):
    m = message(msg)
    src = node_name(cfg, m.src)
    hop = f", hop {m.hops}" if m.hops > 1 else ""
    main = (f"{_role(cfg, b, m.dst)} handles {src}'s EnvelopeRequest on "
            f"{_listener(cfg, m.listener)} carrying {_request(cfg, m.client, m.version)}{hop}")
    if b is None or a is None:
        return main
    effects = _effects(cfg, b, a, consumed=m)
    nb, na = b.nodes[m.src], a.nodes[m.src]
    answered = any(x.kind == ENVELOPE_RESPONSE for x in a.network - b.network)
    if not answered and nb.channel.inflight and not na.channel.inflight and not effects[1:] \
            and a.zk.writes == b.zk.writes and a.nodes[m.dst].events == b.nodes[m.dst].events:
        effects.insert(0, _reason_closed(cfg, m, b))
    sender = cfg.principal_names[m.sender_principal]
    for x in a.network - b.network:
        if x.kind == ENVELOPE_RESPONSE and x.error == kafka.CLUSTER_AUTHORIZATION_FAILED:
            effects.append(f"{src}'s principal {sender} lacks CLUSTER_ACTION")
    return _with(main, effects)


def _broker_handles_envelope_response(cfg, msg, b, a):
    m = message(msg)
    dst, src = node_name(cfg, m.dst), node_name(cfg, m.src)
    main = (f"{dst} handles {src}'s EnvelopeResponse for {_request(cfg, m.client)}, which says "
            f"{_answer(m.error, m.inner_error)}")
    if b is None or a is None:
        return main
    effects = _effects(cfg, b, a, consumed=m)
    if not effects and m.error != kafka.NOT_CONTROLLER:
        effects.append(f"{_client(cfg, m.client)} already has its answer")
    return _with(main, effects)


def _controller_handles_create_topics(cfg, msg, b, a):
    m = message(msg)
    main = (f"{_role(cfg, b, m.dst)} handles {node_name(cfg, m.src)}'s own CreateTopicsRequest "
            f"for {_topic(cfg.topic_names[m.topic])}")
    if b is None or a is None:
        return main
    return _with(main, _effects(cfg, b, a, consumed=m))


def _broker_handles_create_topics_response(cfg, msg, b, a):
    m = message(msg)
    dst, src = node_name(cfg, m.dst), node_name(cfg, m.src)
    main = (f"{dst} handles {src}'s CreateTopicsResponse for "
            f"{_topic(cfg.topic_names[m.topic])}, which says {_err(m.error)}")
    if b is None or a is None:
        return main
    effects = _effects(cfg, b, a, consumed=m)
    if m.error != kafka.NOT_CONTROLLER:
        effects.insert(0, f"the topic is no longer in flight on {dst}, and the answer is only "
                          f"logged")
    return _with(main, effects)


def _controller_sends_registration(cfg, c, b, a):
    name = node_name(cfg, c)
    main = f"{name}'s ControllerRegistrationManager runs its registration check"
    if b is None:
        return main
    node = b.nodes[c]
    why = (" as its backoff timer is due" if not node.send_requested else "")
    main += why
    if node.registered_in_log:
        return f"{main}: incarnation {node.incarnation} is registered, nothing to send"
    if node.pending_rpc:
        return f"{main}: it finds a registration RPC pending and drops the check"
    if metadata_version(b, c) < kafka.MV_3_7_IV0:
        return (f"{main}: its replayed metadata.version {_mv(metadata_version(b, c))} is below "
                f"{_mv(kafka.MV_3_7_IV0)}, nothing to send")
    return (f"{main}: it queues a ControllerRegistrationRequest for incarnation_id "
            f"{node.incarnation} on its controller channel")


def _controller_handles_registration(cfg, msg, b, a):
    m = message(msg)
    main = (f"{_role(cfg, b, m.dst)} handles {node_name(cfg, m.src)}'s "
            f"ControllerRegistrationRequest on {_listener(cfg, m.listener)} for incarnation_id "
            f"{m.incarnation_id}")
    if b is None or a is None:
        return main
    return _with(main, _effects(cfg, b, a, consumed=m))


def _controller_handles_registration_response(cfg, msg, b, a):
    m = message(msg)
    main = (f"{node_name(cfg, m.dst)} handles {node_name(cfg, m.src)}'s "
            f"ControllerRegistrationResponse for incarnation_id {m.incarnation_id}, which says "
            f"{_err(m.error)}")
    if b is None or a is None:
        return main
    effects = _effects(cfg, b, a, consumed=m)
    if m.error == kafka.NONE and not a.nodes[m.dst].registered_in_log:
        effects.append("it waits for its RegisterControllerRecord in the log")
    return _with(main, effects)


def _node_discards_stale_response(cfg, msg, b, a):
    m = message(msg)
    dst = node_name(cfg, m.dst)
    main = f"{dst} discards {describe_msg(cfg, m)}"
    if b is None:
        return main
    node = b.nodes[m.dst]
    if not node.alive:
        return f"{dst} is down: {describe_msg(cfg, m)} is lost"
    if m.kind == REGISTRATION_RESPONSE and m.incarnation_id != node.incarnation:
        return (f"{main}: it answers incarnation_id {m.incarnation_id}, but {dst} now runs "
                f"incarnation {node.incarnation}")
    return f"{main}: nobody waits for it, its connection is gone"


def _controller_processes_event(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return f"{name} runs the next event of its controller event queue"
    node, zk = b.nodes[n], b.zk
    ev = node.events[0]
    main = (f"{_role(cfg, b, n)} runs its next controller event, the write of "
            f"{_request(cfg, ev.req)}")
    if a is None:
        return main
    skip = ("zk", "resign")
    if not node.zk_active:
        why = f"{name} has resigned, so it writes nothing"
    elif len(a.zk.writes) > len(zk.writes):
        if node.zk_epoch_version == zk.epoch_version:
            why = (f"the CheckOp on /controller_epoch zkVersion {zk.epoch_version} passes and the "
                   f"write lands in ZooKeeper")
        else:
            why = (f"the write lands in ZooKeeper without the CheckOp, although /controller_epoch "
                   f"has moved to epoch {zk.epoch}, zkVersion {zk.epoch_version}, and {name} "
                   f"holds zkVersion {node.zk_epoch_version}")
    else:
        why = (f"the CheckOp on /controller_epoch zkVersion {node.zk_epoch_version} fails with "
               f"BADVERSION, /controller_epoch being at zkVersion {zk.epoch_version}: "
               f"ControllerMovedException, {name} resigns")
    effects = _effects(cfg, b, a, skip=skip)
    if ev.acked:
        effects.append("it answered already")
    return _with(main, [why] + effects)


def _controller_commits_records(cfg, _, b, a):
    if b is None:
        return "The active controller commits its uncommitted records to the metadata log"
    q = b.quorum
    recs = [describe_record(cfg, rec) for rec, _ in q.uncommitted]
    main = (f"{_role(cfg, b, q.leader)} commits {_join(recs)} to the metadata log at offset "
            f"{len(q.log)}")
    if a is None:
        return main
    return _with(main, _effects(cfg, b, a, skip=("uncommitted",)))


def _node_replays_record(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return f"{name} replays the next committed metadata-log record"
    off = b.nodes[n].replayed
    main = f"{name} replays metadata-log offset {off}, {describe_record(cfg, b.quorum.log[off])}"
    if a is None:
        return main
    return _with(main, _effects(cfg, b, a))


def _broker_handles_session_expiry(cfg, n, b, a):
    name = node_name(cfg, n)
    main = f"{name} learns that ZooKeeper expired its session and opens a new one"
    if b is None:
        return main
    node = b.nodes[n]
    if node.zk_active:
        main += f", resigning as controller of epoch {node.zk_epoch}"
    if cfg.zk_broker_registration:
        main += "; the new session queues RegisterBrokerAndReelect"
    return f"{main}; {_controller_truth(cfg, b)}"


def _listeners(version: int) -> str:
    return ("the listeners it started with" if version == 0
            else f"listeners version {version} (after {_plural(version, 'dynamic update')})")


def _broker_sends_zk_registration(cfg, n, b, a):
    name = node_name(cfg, n)
    main = (f"{name}'s KafkaController runs RegisterBrokerAndReelect: it sends ZooKeeper the "
            f"create of its ephemeral /brokers/ids/{name}")
    if b is None:
        return main
    return f"{main} with its cached BrokerInfo, {_listeners(b.nodes[n].broker_info)}"


def _zk_creates_broker_znode(cfg, n, b, a):
    name = node_name(cfg, n)
    main = f"ZooKeeper applies {name}'s create of /brokers/ids/{name}"
    if b is None:
        return main
    if b.zk.broker_ids[n] != NO_VERSIONS:
        return f"{main}: the znode is there already and is returned as it is"
    return f"{main}, with {_listeners(b.nodes[n].zk_registering)}"


def _operator_updates_listeners(cfg, n, b, a):
    name = node_name(cfg, n)
    main = f"An operator updates {name}'s advertised listeners"
    if b is None or a is None:
        return main
    version = a.nodes[n].listeners_version
    main += f" (listeners version {version})"
    if a.nodes[n].broker_info != version:
        main += (f"; {name}'s KafkaController keeps the BrokerInfo of version "
                 f"{a.nodes[n].broker_info}")
    if b.zk.broker_ids[n] == NO_VERSIONS:
        return main + f"; the SetData finds no /brokers/ids/{name} (NONODE, logged)"
    return main + f"; /brokers/ids/{name} is rewritten with them"


def _broker_writes_entity_config(cfg, n, b, a):
    name = node_name(cfg, n)
    main = (f"{name} sends ZooKeeper its entity-config multi: CheckOp(/controller) and "
            f"SetData")
    if b is None or a is None:
        return main
    c, version = b.nodes[n].config_writes[0]
    main = (f"{name} sends ZooKeeper the multi writing the entity config of "
            f"{_request(cfg, c)}, with a CheckOp on the /controller it read "
            f"(/controller_epoch then at zkVersion {version})")
    zk = b.zk
    if len(a.zk.writes) == len(zk.writes):
        why = ("/controller is gone: the multi fails" if zk.controller == NO_NODE else
               f"/controller was re-created since (by {node_name(cfg, zk.controller)}, "
               f"/controller_epoch zkVersion {zk.epoch_version}): the CheckOp fails")
    elif zk.epoch_version != version:
        why = (f"/controller was deleted and re-created by {node_name(cfg, zk.controller)} "
               f"since, with dataVersion 0 again, so the CheckOp passes and the write lands")
    else:
        why = "the CheckOp passes and the write lands"
    return _with(main, [why] + _effects(cfg, b, a, skip=("zk", "migration")))


def _controller_claims_zk_leadership(cfg, c, b, a):
    name = node_name(cfg, c)
    main = (f"{name}, the KRaft controller, claims ZooKeeper leadership: one multi bumps "
            f"/controller_epoch, deletes /controller and creates it persistent with its id and "
            f"KRaft epoch")
    if b is None or a is None:
        return main
    old = b.zk.controller
    was = "" if old == NO_NODE else f" (it named {node_name(cfg, old)})"
    return (f"{name}, the KRaft controller, claims ZooKeeper leadership: /controller_epoch "
            f"becomes epoch {a.zk.epoch} at zkVersion {a.zk.epoch_version}, and /controller is "
            f"deleted{was} and created persistent naming {name}")


def _operator_bumps_ibp(cfg, n, b, a):
    name = node_name(cfg, n)
    return (f"An operator bounces {name} with inter.broker.protocol.version 3.4-IV0 or later "
            f"and migration on: from now on it forwards")


def _broker_elects_controller(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return (f"{name} wins the controller election: it creates /controller and bumps "
                f"/controller_epoch")
    z = a.zk if a is not None else b.zk
    if a is None:
        return (f"{name} wins the controller election: it creates /controller and moves "
                f"/controller_epoch to epoch {z.epoch + 1}, zkVersion {z.epoch_version + 1}")
    kept = " (the epoch it already held)" if z.epoch == b.zk.epoch else ""
    return (f"{name} wins the controller election: it creates /controller and sets "
            f"/controller_epoch to epoch {z.epoch}{kept}, zkVersion {z.epoch_version}")


def _controller_becomes_leader(cfg, c, b, a):
    name = node_name(cfg, c)
    if b is None:
        return f"{name} becomes the active controller with a new leader epoch"
    q = b.quorum
    old = ("" if q.leader == NO_NODE else
           f", taking over from {node_name(cfg, q.leader)}"
           + ("" if b.nodes[q.leader].alive else ", which is down"))
    main = f"{name} becomes the active controller in epoch {q.epoch + 1}{old}"
    if a is None:
        return main
    return _with(main, _effects(cfg, b, a))


def _clock_ticks(cfg, _, b, a):
    if b is None:
        return "Time passes by one tick"
    waits = []
    for n, node in enumerate(b.nodes):
        if not node.alive:
            continue
        ch = node.channel
        items = ((ch.inflight,) if ch.inflight else ()) + ch.queue
        if items:
            held = [f"{_item(cfg, n, i)}, in flight since t={i.sent}" for i in items[:1]
                    if ch.inflight]
            held += [f"{_item(cfg, n, i)}, queued since t={i.created}" for i in ch.queue]
            waits.append(f"{node_name(cfg, n)}'s controller channel holds {_join(held)}")
        if node.retry_at != NO_TIME and node.retry_at > b.now:
            waits.append(f"{node_name(cfg, n)} waits to retry its registration at "
                         f"t={node.retry_at}")
        if node.lifecycle_registered and node.heartbeat_at >= b.now:
            waits.append(f"{node_name(cfg, n)} waits for its next heartbeat")
    sessions = [node_name(cfg, n) for n, node in enumerate(b.nodes) if node.hb_contact != NO_TIME]
    if sessions and b.quorum.leader != NO_NODE:
        waits.append(f"{node_name(cfg, b.quorum.leader)}'s fence timer watches the session"
                     f"{'s' if len(sessions) > 1 else ''} of {_join(sessions)}")
    return f"Time passes from t={b.now} to t={b.now + 1} while {_join(waits)}"


def _zk_expires_session(cfg, n, b, a):
    name = node_name(cfg, n)
    main = f"ZooKeeper expires {name}'s session ({name} keeps running and does not know yet)"
    if b is not None and b.zk.controller == n:
        main += f"; the ephemeral /controller {name} held goes away"
    if b is not None and cfg.zk_broker_registration and b.zk.broker_ids[n] != NO_VERSIONS:
        main += f"; so does its ephemeral /brokers/ids/{name}"
    return main


def _network_drops_message(cfg, msg, b, a):
    m = message(msg)
    main = f"The network loses {describe_msg(cfg, m)}, and the connection breaks"
    if b is None or a is None:
        return main
    return _with(main, _effects(cfg, b, a, consumed=m))


def _node_crashes(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return f"{name} crashes"
    node = b.nodes[n]
    inc = f", incarnation {node.incarnation}," if cfg.registration else ""
    main = f"{name}{inc} crashes"
    if a is None:
        return main
    # the dead node's own state is gone: say only what the others see
    return _with(main, _effects(cfg, b, a, skip=("registration",)))


def _node_restarts(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return f"{name} restarts as a new process with a fresh incarnation"
    node = b.nodes[n]
    main = f"{name} restarts as incarnation {node.incarnation + 1}"
    if cfg.mode == KRAFT:
        main += (f" with the {_plural(node.replayed, 'metadata-log record')} it had replayed"
                 if node.replayed else " with an empty metadata log")
    if cfg.registration and cfg.nodes[n].role != "broker":
        main += "; its ControllerRegistrationManager queues its start-up registration check"
    if cfg.zk_broker_registration:
        main += f"; it will register {_listeners(node.listeners_version)} in /brokers/ids"
    return main


def _broker_sends_registration(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return f"{name}'s BrokerLifecycleManager sends a BrokerRegistrationRequest"
    node = b.nodes[n]
    why = (" again, to re-register its running incarnation" if node.broker_epoch != -1 else "")
    main = (f"{name}'s BrokerLifecycleManager sends a BrokerRegistrationRequest for "
            f"incarnation_id {node.incarnation}{why} to {node_name(cfg, node.known_controller)}")
    return main


def _broker_sends_heartbeat(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return f"{name}'s BrokerLifecycleManager sends a BrokerHeartbeatRequest"
    node = b.nodes[n]
    return (f"{name} heartbeats to {node_name(cfg, node.known_controller)} with broker epoch "
            f"{node.broker_epoch}, having replayed {_plural(node.replayed, 'metadata record')}")


def _controller_handles_broker_registration(cfg, msg, b, a):
    m = message(msg)
    main = (f"{_role(cfg, b, m.dst)} handles {node_name(cfg, m.src)}'s "
            f"BrokerRegistrationRequest for incarnation_id {m.incarnation_id}")
    if b is None or a is None:
        return main
    return _with(main, _effects(cfg, b, a, consumed=m))


def _controller_handles_broker_heartbeat(cfg, msg, b, a):
    m = message(msg)
    main = (f"{_role(cfg, b, m.dst)} handles {node_name(cfg, m.src)}'s heartbeat with broker "
            f"epoch {m.broker_epoch} at metadata offset {m.metadata_offset}")
    if b is None or a is None:
        return main
    return _with(main, _effects(cfg, b, a, consumed=m))


def _broker_handles_lifecycle_response(cfg, msg, b, a):
    m = message(msg)
    main = f"{node_name(cfg, m.dst)} handles {describe_msg(cfg, m)}"
    if b is None or a is None:
        return main
    node = a.nodes[m.dst]
    if m.kind == BROKER_REGISTRATION_RESPONSE and m.error == kafka.NONE:
        return f"{main}: it is registered with broker epoch {node.broker_epoch}"
    if m.kind == BROKER_REGISTRATION_RESPONSE:
        return f"{main}: it will retry the registration with the same incarnation"
    if m.error != kafka.NONE:
        return f"{main}: it backs off and will heartbeat again with the same broker epoch"
    return main


def _controller_fences_stale_broker(cfg, n, b, a):
    name = node_name(cfg, n)
    if b is None:
        return f"The active controller fences {name}, whose session expired"
    contact = b.nodes[n].hb_contact
    main = (f"{_role(cfg, b, b.quorum.leader)} fences {name}: its last contact was at "
            f"t={contact}, more than {_plural(cfg.session_timeout, 'tick')} ago")
    if a is None:
        return main
    return _with(main, _effects(cfg, b, a))


_STEPS = {
    "client_sends_request": _client_sends_request,
    "broker_learns_controller": _broker_learns_controller,
    "channel_discovers_controller": _channel_discovers_controller,
    "channel_sends_request": _channel_sends_request,
    "channel_times_out_request": _channel_times_out_request,
    "controller_handles_envelope": _controller_handles_envelope,
    "broker_handles_envelope_response": _broker_handles_envelope_response,
    "controller_handles_create_topics": _controller_handles_create_topics,
    "broker_handles_create_topics_response": _broker_handles_create_topics_response,
    "controller_sends_registration": _controller_sends_registration,
    "controller_handles_registration": _controller_handles_registration,
    "controller_handles_registration_response": _controller_handles_registration_response,
    "broker_sends_registration": _broker_sends_registration,
    "broker_sends_heartbeat": _broker_sends_heartbeat,
    "controller_handles_broker_registration": _controller_handles_broker_registration,
    "controller_handles_broker_heartbeat": _controller_handles_broker_heartbeat,
    "broker_handles_lifecycle_response": _broker_handles_lifecycle_response,
    "controller_fences_stale_broker": _controller_fences_stale_broker,
    "node_discards_stale_response": _node_discards_stale_response,
    "controller_processes_event": _controller_processes_event,
    "controller_commits_records": _controller_commits_records,
    "node_replays_record": _node_replays_record,
    "broker_handles_session_expiry": _broker_handles_session_expiry,
    "broker_sends_zk_registration": _broker_sends_zk_registration,
    "zk_creates_broker_znode": _zk_creates_broker_znode,
    "broker_elects_controller": _broker_elects_controller,
    "controller_becomes_leader": _controller_becomes_leader,
    "clock_ticks": _clock_ticks,
    "zk_expires_session": _zk_expires_session,
    "network_drops_message": _network_drops_message,
    "node_crashes": _node_crashes,
    "node_restarts": _node_restarts,
    "operator_updates_listeners": _operator_updates_listeners,
    "broker_writes_entity_config": _broker_writes_entity_config,
    "controller_claims_zk_leadership": _controller_claims_zk_leadership,
    "operator_bumps_ibp": _operator_bumps_ibp,
}


def describe_step(cfg: ModelConfig, st: Step, before: State | None = None,
                  after: State | None = None) -> str:
    """One sentence, actor first, e.g. "B1 (controller of epoch 1) handles B2's
    EnvelopeRequest on INTERNAL carrying A1's CreateTopics v7".  With ``before`` (the state
    the step starts from) it also says what the step found, e.g. which controller a channel
    discovers; with ``after`` as well, what it did, e.g. which answer went back."""
    fn = _STEPS.get(st.action)
    args = tuple(st.args)
    if fn is None or len(args) > 1:
        return f"an unknown step {st}"
    arg = args[0] if args else None
    if isinstance(arg, tuple) and len(arg) != MSG_ARITY:
        return f"a malformed step {st}"
    try:
        return fn(cfg, arg, before, after)
    except (IndexError, TypeError, KeyError):
        # a state that does not match the step (it is not enabled there): the arguments
        # alone still say what it would do
        return fn(cfg, arg, None, None)


def describe_trace(cfg: ModelConfig, design: Design, steps) -> list:
    """``describe_step`` for every step of a trace, with the states around it: the trace is
    replayed from the initial state.  From a step that is not enabled on, the steps are
    described by their arguments alone."""
    from model.next import initial_state, step as next_step
    out, s = [], initial_state(cfg)
    for st in steps:
        t = None
        if s is not None:
            try:
                t = next_step(s, cfg, design, st)
            except ValueError:
                t = None
        out.append(describe_step(cfg, st, s, t) if t is not None else describe_step(cfg, st))
        s = t
    return out


# --------------------------------------------------------------------------------------------
# parts of a state, for reports of a violation: name -> (cfg, design, state) -> lines


def _field_clock(cfg, d, s):
    timeouts = []
    if cfg.clients:
        timeouts.append(f"the forwarding retry timeout is {_plural(cfg.forward_timeout, 'tick')}")
    if cfg.registration:
        timeouts.append(f"the registration timeout is {_plural(cfg.registration_timeout, 'tick')}")
    return [f"the clock is at t={s.now}, the time bound being t={cfg.max_time}"
            + ("; " + "; ".join(timeouts) if timeouts else "")]


def _field_active_controller(cfg, d, s):
    if cfg.mode == ZK:
        z = s.zk
        owner = ("no broker holds /controller" if z.controller == NO_NODE
                 else f"{node_name(cfg, z.controller)} holds /controller")
        return [f"{owner}; /controller_epoch is epoch {z.epoch} at zkVersion {z.epoch_version}"]
    q = s.quorum
    lead = ("the quorum has no leader" if q.leader == NO_NODE else
            f"{node_name(cfg, q.leader)} is the active controller in epoch {q.epoch}"
            + ("" if s.nodes[q.leader].alive else ", and is down"))
    return [f"{lead}; the metadata log has {_plural(len(q.log), 'committed record')} and "
            f"{_plural(len(q.uncommitted), 'uncommitted record')}"]


def _field_zk_controllers(cfg, d, s):
    out = []
    for n, node in enumerate(s.nodes):
        if node.alive and node.zk_active:
            expired = (", although ZooKeeper has expired its session" if node.session_expired
                       else "")
            out.append(f"{node_name(cfg, n)} acts as controller of epoch {node.zk_epoch}, holding "
                       f"/controller_epoch zkVersion {node.zk_epoch_version} from its election"
                       f"{expired}")
    return out or ["no broker acts as controller"]


def _epoch_holder_name(cfg, s, epoch):
    n = epoch_holder(s.zk, epoch)
    return "nobody" if n == NO_NODE else node_name(cfg, n)


def _field_zk_writes(cfg, d, s):
    out = []
    for i, w in enumerate(s.zk.writes, 1):
        holder = _epoch_holder_name(cfg, s, w.zk_epoch)
        if w.writer_epoch < 0 and w.routed_locally:
            who = (f"by {node_name(cfg, w.writer)} itself, as Kafka's routing leaves it to the "
                   f"broker,")
        elif w.writer_epoch < 0:
            who = f"by {node_name(cfg, w.writer)}, which is not a controller,"
        elif holder != node_name(cfg, w.writer) and w.writer_epoch == w.zk_epoch:
            who = (f"by {node_name(cfg, w.writer)} with a CheckOp on epoch {w.writer_epoch}'s "
                   f"zkVersion")
        else:
            who = f"by {node_name(cfg, w.writer)} as controller of epoch {w.writer_epoch}"
        stale = ("" if w.writer_epoch == w.zk_epoch or w.routed_locally
                 else ": not the current epoch")
        if holder != node_name(cfg, w.writer):
            stale += f"; ZooKeeper records {holder} as the winner of epoch {w.zk_epoch}"
        out.append(f"ZooKeeper write {i}: {_request(cfg, w.req)}, written {who} while "
                   f"/controller_epoch was epoch {w.zk_epoch}{stale}")
    return out or ["ZooKeeper holds no config or ACL write"]


def _field_zk_epoch_holders(cfg, d, s):
    return [f"ZooKeeper records {_epoch_holder_name(cfg, s, e)} as the winner of epoch {e} "
            f"(the multi-op that set /controller_epoch to {e})"
            for e in range(1, len(s.zk.epoch_holders))] or ["no epoch was won yet"]


def _field_metadata_log(cfg, d, s):
    q = s.quorum
    out = [f"offset {i}: {describe_record(cfg, rec)}, appended by {node_name(cfg, rec.writer)} "
           f"in epoch {rec.epoch}" for i, rec in enumerate(q.log)]
    out += [f"uncommitted: {describe_record(cfg, rec)}, appended by {node_name(cfg, rec.writer)} "
            f"in epoch {rec.epoch}" for rec, _ in q.uncommitted]
    return out or ["the metadata log is empty"]


def _field_metadata_caches(cfg, d, s):
    out = []
    for n, node in enumerate(s.nodes):
        if node.alive and cfg.nodes[n].role == "broker":
            k = node.known_controller
            out.append(f"{node_name(cfg, n)}'s metadata cache names "
                       + ("no controller" if k == NO_NODE
                          else f"{node_name(cfg, k)} as the controller"))
    return out


def _field_envelopes(cfg, d, s):
    msgs = sorted(m for m in s.network if m.kind == ENVELOPE_REQUEST)
    return [f"in flight: {describe_msg(cfg, m)}" + ("" if m.hops > 1 else ", hop 1")
            for m in msgs] or \
        ["no EnvelopeRequest is in flight"]


def _field_network(cfg, d, s):
    return [f"in flight: {describe_msg(cfg, m)}" for m in sorted(s.network)] or \
        ["no message is in flight"]


def _field_controller_channels(cfg, d, s):
    out = []
    for n, node in enumerate(s.nodes):
        ch = node.channel
        name = node_name(cfg, n)
        if not node.alive:
            continue
        if not (ch.queue or ch.inflight or ch.cached != NO_NODE):
            continue
        parts = [f"{name}'s controller channel "
                 + ("has no controller cached" if ch.cached == NO_NODE
                    else f"talks to {node_name(cfg, ch.cached)}")]
        if ch.inflight:
            parts.append(f"in flight since t={ch.inflight.sent}: {_item(cfg, n, ch.inflight)}")
        for item in ch.queue:
            again = ", put back after a failed attempt" if item.requeued else ""
            parts.append(f"queued since t={item.created}: {_item(cfg, n, item)}{again}")
        told = sorted(node.not_controller_from)
        if told:
            parts.append(f"{_join(node_name(cfg, p) for p in told)} answered NOT_CONTROLLER "
                         f"since it was discovered")
        out.append("; ".join(parts))
    return out or ["no controller channel holds a request"]


def _field_broker_registrations(cfg, d, s):
    out = []
    q = s.quorum
    view = q.log + tuple(rec for rec, _ in q.uncommitted)
    for b in cfg.brokers():
        name = node_name(cfg, b)
        for where, recs in (("committed log", q.log), ("active controller", view)):
            reg = broker_registration(recs, b)
            if reg is None:
                out.append(f"the {where} has no RegisterBrokerRecord for {name}")
                continue
            out.append(f"the {where}'s registration of {name}: incarnation_id "
                       f"{reg.record.incarnation_id}, broker epoch {reg.record.broker_epoch}, "
                       f"record at offset {reg.offset}, "
                       + ("fenced" if reg.fenced else "not fenced"))
        contact = s.nodes[b].hb_contact
        out.append(f"the active controller tracks no session for {name}" if contact == NO_TIME
                   else f"the active controller last heard from {name} at t={contact}")
    return out


def _field_zk_broker_registrations(cfg, d, s):
    if not cfg.zk_broker_registration:
        return ["ZooKeeper broker registration is not modelled in this configuration"]
    out = []
    for b in cfg.brokers():
        name, node = node_name(cfg, b), s.nodes[b]
        version = s.zk.broker_ids[b]
        znode = (f"no /brokers/ids/{name}" if version == NO_VERSIONS
                 else f"/brokers/ids/{name} carries {_listeners(version)}")
        text = (f"{znode}; {name} runs with {_listeners(node.listeners_version)}, its "
                f"KafkaController's BrokerInfo holds version {node.broker_info}")
        if node.zk_register_pending:
            text += ", RegisterBrokerAndReelect queued"
        if node.zk_registering != NO_VERSIONS:
            text += f", a create with version {node.zk_registering} on its way to ZooKeeper"
        out.append(text if node.alive else f"{znode}; {name} is down")
    return out


def _field_broker_lifecycles(cfg, d, s):
    out = []
    for b in cfg.brokers():
        node = s.nodes[b]
        name = node_name(cfg, b)
        if not node.alive:
            out.append(f"{name} is down, its last incarnation being {node.incarnation}")
            continue
        state = (f"registered with broker epoch {node.broker_epoch}" if node.lifecycle_registered
                 else "not registered" + (f" (it holds broker epoch {node.broker_epoch})"
                                          if node.broker_epoch != -1 else ""))
        wait = ("" if node.lifecycle_to == NO_NODE else
                f", waiting for an answer from {node_name(cfg, node.lifecycle_to)}")
        out.append(f"{name} runs incarnation {node.incarnation}, {state}{wait}")
    return out


def _field_registrations(cfg, d, s):
    out = []
    log = s.quorum.log
    for c in cfg.controllers():
        node = s.nodes[c]
        name = node_name(cfg, c)
        latest = latest_registration(log, c)
        seen = latest_registration(log, c, node.replayed)
        in_log = (f"the committed log has no RegisterControllerRecord for {name}"
                  if latest is None else
                  f"the committed log's last RegisterControllerRecord for {name} carries "
                  f"incarnation_id {latest}")
        if not node.alive:
            out.append(f"{name} is down, its last incarnation being {node.incarnation}; {in_log}")
            continue
        out.append(f"{name} runs incarnation {node.incarnation}; {in_log}")
        upto = ("all" if node.replayed == len(log) else f"{node.replayed} of the") + \
            f" {_plural(len(log), 'committed record')}"
        out.append(f"{name} has replayed {upto}: "
                   + ("no RegisterControllerRecord for it among them" if seen is None else
                      f"the last RegisterControllerRecord for it among them carries "
                      f"incarnation_id {seen}"))
        mgr = [("believes it is registered" if node.registered_in_log
                else "does not believe it is registered"),
               ("has a registration RPC pending" if node.pending_rpc else "has no RPC pending")]
        if node.send_requested:
            mgr.append("has a registration check queued")
        if node.retry_at != NO_TIME:
            mgr.append(f"retries at t={node.retry_at}")
        out.append(f"{name}'s ControllerRegistrationManager {_join(mgr)}")
    return out


def _field_applied_mutations(cfg, d, s):
    out = []
    if cfg.mode == ZK:
        applied = [(w.req, f"written to ZooKeeper by {node_name(cfg, w.writer)}", w.via_envelope,
                    w.privileged, w.sender_cluster_action) for w in s.zk.writes]
    else:
        applied = [(r.client, f"committed at offset {i} by {node_name(cfg, r.writer)}",
                    r.via_envelope, True, r.sender_cluster_action)
                   for i, r in enumerate(s.quorum.log) if r.kind == MUTATION_RECORD]
    for req, where, via, privileged, sender_ok in applied:
        spec = cfg.clients[req]
        op = kafka.API_OPERATION.get(spec.api, "?")
        allowed = "may" if cfg.allows(spec.principal, op) else "may not"
        how = "sent directly, not in an envelope"
        if via:
            how = ("from an EnvelopeRequest whose sender "
                   + ("has" if sender_ok else "lacks") + " CLUSTER_ACTION")
            if cfg.mode == ZK:
                how += (", on the privileged listener" if privileged
                        else ", on a listener that is not privileged")
        claimed = (f", claiming to be {spec.claimed_principal}," if spec.kind == FORGED_ENVELOPE
                   else "")
        out.append(f"{_request(cfg, req)} to {node_name(cfg, spec.node)} on {spec.listener} is "
                   f"{where}, {how}; {spec.name}'s principal {spec.principal}{claimed} {allowed} "
                   f"{op}")
    return out or ["no mutation has been applied"]


def _field_client_responses(cfg, d, s):
    out = []
    for c, spec in enumerate(cfg.clients):
        cl = s.clients[c]
        if not cl.sent:
            continue
        head = (f"{spec.name} (principal {spec.principal}) sent {_api(cfg, c)}"
                + (f" v{cl.version}" if spec.kind != DESCRIBE else "")
                + f" to {node_name(cfg, spec.node)} on {spec.listener}")
        if cl.forwarded:
            head += f", forwarded from t={cl.sent_at}"
        if not cl.responses:
            head += "; it still waits for an answer"
        elif len(cl.responses) == 1:
            head += f"; it got {describe_response(cfg, c, cl.responses[0])}"
        else:
            head += (f"; it got {_plural(len(cl.responses), 'response')}: "
                     + ", then ".join(describe_response(cfg, c, r) for r in cl.responses))
        out.append(head)
    return out or ["no client has sent its request"]


def _field_describe_responses(cfg, d, s):
    out = []
    for c, spec in enumerate(cfg.clients):
        if spec.kind != DESCRIBE:
            continue
        for r in s.clients[c].responses:
            want = _ENDPOINT_TYPES.get(spec.endpoint_type, "UNKNOWN")
            text = (f"{spec.name} asked {node_name(cfg, spec.node)} on {spec.listener} for {want} "
                    f"endpoints and got {describe_response(cfg, c, r)}")
            wrong = sorted((n, lst, t) for n, lst, t in r.endpoints
                           if _listener(cfg, lst) != spec.listener
                           or (cfg.nodes[n].role == "controller")
                           != (spec.endpoint_type == kafka.ENDPOINT_CONTROLLER))
            if wrong:
                text += (f"; {_endpoints(cfg, wrong)} "
                         + ("is not one of the" if len(wrong) == 1 else "are not")
                         + f" {want} endpoints on {spec.listener}")
            out.append(text)
    return out or ["no DescribeCluster response"]


def _field_acknowledged(cfg, d, s):
    out = []
    for c, spec in enumerate(cfg.clients):
        if spec.kind != MUTATION or not any(r.code == kafka.NONE for r in s.clients[c].responses):
            continue
        head = f"{_request(cfg, c)} to {node_name(cfg, spec.node)} was acknowledged with NONE"
        if cfg.mode == ZK:
            writes = [w for w in s.zk.writes if w.req == c]
            if writes:
                out.append(f"{head}; ZooKeeper holds it, written by "
                           f"{node_name(cfg, writes[0].writer)}")
            else:
                queued = [node_name(cfg, n) for n, node in enumerate(s.nodes)
                          if any(ev.req == c for ev in node.events)]
                out.append(f"{head}; ZooKeeper has no write for it"
                           + (f", {_join(queued)} still holds it as a controller event"
                              if queued else ""))
            continue
        idx = next((i for i, r in enumerate(s.quorum.log)
                    if r.kind == MUTATION_RECORD and r.client == c), None)
        if idx is None:
            pending = any(r.kind == MUTATION_RECORD and r.client == c
                          for r, _ in s.quorum.uncommitted)
            out.append(f"{head}; the committed metadata log has no record of it"
                       + (f", {node_name(cfg, s.quorum.leader)} holds it uncommitted"
                          if pending else ""))
            continue
        seen = [f"{node_name(cfg, b)} has replayed {_plural(s.nodes[b].replayed, 'record')}"
                + ("" if s.nodes[b].replayed > idx else ", not yet this one")
                for b in cfg.brokers() if s.nodes[b].alive]
        out.append(f"{head}; it is committed at offset {idx}"
                   + ("; " + "; ".join(seen) if seen else ""))
    return out or ["no mutation was acknowledged with NONE"]


def _field_advertised_versions(cfg, d, s):
    out = []
    for b in cfg.brokers():
        node = s.nodes[b]
        if not node.alive:
            continue
        name = node_name(cfg, b)
        text = (f"{name} advertises the forwardable APIs up to "
                f"v{advertised_version(s, cfg, d, b)}, its own maximum being "
                f"v{cfg.nodes[b].api_max}")
        if node.ctrl_versions == NO_VERSIONS:
            text += "; it has not learned a controller's versions yet"
        else:
            to = node.channel.cached
            who = f"{node_name(cfg, to)}, the controller it last connected to," if to != NO_NODE \
                else "the controller it last connected to"
            text += f"; {who} supports them up to v{node.ctrl_versions}"
        out.append(text)
    return out


def _field_partition_leaders(cfg: ModelConfig, d: Design, s: State) -> list:
    """Each topic that exists from the start: its partition's leader, whether the leader is up,
    and the listeners it has (L-28)."""
    out = []
    for topic, leader in cfg.partition_leaders:
        names = ", ".join(lst.name for lst in cfg.nodes[leader].listeners)
        up = "up" if s.nodes[leader].alive else "down"
        out.append(f"topic {topic}: its partition is led by {node_name(cfg, leader)}, which is "
                   f"{up} and has the listeners {names}")
    return out


FIELDS = {
    "clock": _field_clock,
    "active-controller": _field_active_controller,
    "zk-controllers": _field_zk_controllers,
    "zk-writes": _field_zk_writes,
    "zk-epoch-holders": _field_zk_epoch_holders,
    "metadata-log": _field_metadata_log,
    "metadata-caches": _field_metadata_caches,
    "envelopes-in-flight": _field_envelopes,
    "network": _field_network,
    "controller-channels": _field_controller_channels,
    "registrations": _field_registrations,
    "broker-registrations": _field_broker_registrations,
    "broker-lifecycles": _field_broker_lifecycles,
    "zk-broker-registrations": _field_zk_broker_registrations,
    "applied-mutations": _field_applied_mutations,
    "client-responses": _field_client_responses,
    "describe-responses": _field_describe_responses,
    "acknowledged-mutations": _field_acknowledged,
    "advertised-versions": _field_advertised_versions,
    "partition-leaders": _field_partition_leaders,
}


def describe_fields(cfg: ModelConfig, design: Design, state: State, names) -> list:
    """The lines of the named parts of ``state`` (``FIELDS``), in the order given."""
    out = []
    for name in names:
        try:
            render = FIELDS[name]
        except KeyError:
            raise KeyError(f"unknown state field {name!r}; fields: {', '.join(FIELDS)}") from None
        out += render(cfg, design, state)
    return out
