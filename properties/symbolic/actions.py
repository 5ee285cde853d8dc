"""The model's actions as Z3 formulas: one function per action of ``model/actions.py``, with
the same name, the same guards in the same order and the same effects.

Each function takes a symbolic state ``S`` (``properties.symbolic.state.Sym``), the
configuration, the design and the action's argument, and returns ``(enabled, S2)``: the
condition under which the model's action returns a state, and that state as terms over ``S``.
A message argument is a network slot index (the model's message is the one in that slot).
Where the model reads ``cfg`` through a node index held in the state (a message's destination,
a cached controller, the leader), the encoding splits on the index's possible values
(``_cases``), so the configuration lookups stay plain Python as in the model.

Rule IDs are the model's; read this file beside ``model/actions.py``.  The cross-check
(``properties.symbolic.crosscheck``) compares the two on every explored state.
"""
from __future__ import annotations

import z3

from model import kafka
from model.config import (BROKER, CONTROLLER, DESCRIBE, FIND_COORDINATOR, FORGED_ENVELOPE, KRAFT,
                          METADATA, ZK, Design, ModelConfig)
from model.actions import principal_index, target_listener
from model.state import (ENVELOPE_REQUEST, ENVELOPE_RESPONSE, FEATURE_LEVEL, FORWARD,
                         MUTATION_RECORD, NO_NODE, NO_TIME, NO_VERSIONS, REGISTER_CONTROLLER,
                         REGISTRATION, REGISTRATION_REQUEST, REGISTRATION_RESPONSE, REPLY_CLIENT,
                         REPLY_ENVELOPE, REPLY_REGISTRATION, STATIC_ENDPOINTS,
                         UNRESOLVED_ENDPOINTS)
from properties.symbolic.state import (FALSE, ITEM_FIELDS, TRUE, And, Eq, If, Not, Or, Sym, _f,
                                       ite)

# --------------------------------------------------------------------------------------------
# small helpers (model: _set_node, _respond, _waiting, advertised_version, metadata_version...)


def _cases(term, values, body, default=None):
    """Split on a term's value: ``body(v)`` for each Python value ``v`` (a ``(enabled, Sym)``
    pair); a value outside ``values`` is ``default`` (a pair) or disabled."""
    if isinstance(term, int):
        return body(term) if term in values else default
    out = default
    for v in reversed(values):
        en, st = body(v)
        hit = Eq(term, v)
        if out is None:
            out = (And(hit, en), st)
        else:
            out = (Or(And(hit, en), And(Not(hit), out[0])), ite(hit, st, out[1]))
    return out


def _table(term, values: list):
    """``values[term]`` for a symbolic index into a Python list (the last entry outside)."""
    if not values:              # no clients: nothing reads this on a reachable state
        return 0
    if isinstance(term, int):
        return values[term]
    out = values[-1]
    for k in range(len(values) - 2, -1, -1):
        out = If(Eq(term, k), values[k], out)
    return out


def _allows(cfg: ModelConfig, principal, operation: str):
    """``cfg.allows(principal_names[principal], operation)`` for a principal index."""
    return _table(principal, [cfg.allows(p, operation) for p in cfg.principal_names])


def _waiting(S: Sym, c):
    return And(S.client(c, "sent"), Eq(S.client(c, "responses.len"), 0))


def _respond(S: Sym, cfg: ModelConfig, c, code, envelope_error=0, endpoints=None,
             retried=False, when=True) -> Sym:
    """Client ``c`` receives a final response (``c`` may be a term)."""
    for j in range(len(cfg.clients)):
        hit = And(when, Eq(c, j)) if not isinstance(c, int) else (when if c == j else False)
        if _f(hit):
            continue
        fields = {"code": code, "envelope_error": envelope_error, "retried": retried}
        for x, lst in S.lay.endpoints:
            listed, token = (endpoints or {}).get((x, lst), (False, 0))
            fields[f"ep.{x}.{lst}"] = listed
            fields[f"ept.{x}.{lst}"] = If(listed, token, 0) if not _f(listed) else 0
        S = S.seq_append(f"c{j}.responses", fields, when=hit)
    return S


def _advertised_version(S: Sym, cfg: ModelConfig, d: Design, n: int):
    """F-35 (model: advertised_version)."""
    own = cfg.nodes[n].api_max
    if d.versions_not_intersected:
        return own
    known = S.node(n, "ctrl_versions")
    return If(Eq(known, NO_VERSIONS), own, If(known < own, known, own))


def _advertised_endpoints(cfg: ModelConfig, d: Design, n: int, incarnation):
    """The endpoints token process run ``incarnation`` of node ``n`` registers: resolved by
    that run, or as configured under the variant (EP-1..EP-5, KAFKA-15458; model:
    advertised_endpoints)."""
    if d.registers_unresolved_endpoints and cfg.endpoints_need_resolving(n):
        return UNRESOLVED_ENDPOINTS
    return incarnation if cfg.endpoints_per_run(n) else STATIC_ENDPOINTS


def _listener_endpoint(lst, endpoints):
    """The endpoints token of one listener (model: listener_endpoint)."""
    if lst.port == 0:
        return endpoints
    if lst.needs_resolving:
        return If(Eq(endpoints, UNRESOLVED_ENDPOINTS), UNRESOLVED_ENDPOINTS, STATIC_ENDPOINTS)
    return STATIC_ENDPOINTS


def _metadata_version(S: Sym, n=None):
    """metadata.version from the FeatureLevelRecords of the committed log, or of the prefix
    node ``n`` replayed (model: metadata_version)."""
    length = S.seq_len("q.log")
    upto = length if n is None else S.node(n, "replayed")
    level = kafka.MINIMUM_KRAFT_VERSION
    for k, used in S.seq_items("q.log"):
        level = If(And(used, k < upto, Eq(S[f"q.log.{k}.kind"], FEATURE_LEVEL)),
                   S[f"q.log.{k}.a"], level)
    return level


def _item(S: Sym, prefix: str) -> dict:
    return {f: S[f"{prefix}.{f}"] for f, _ in ITEM_FIELDS}


def _item_timeout(cfg: ModelConfig, d: Design, kind):
    """(has a timeout, the timeout) for an item kind (model: item_timeout)."""
    fwd = not d.forward_without_deadline
    reg = not d.registration_without_deadline
    return (If(Eq(kind, FORWARD), fwd, reg),
            If(Eq(kind, FORWARD), cfg.forward_timeout, cfg.registration_timeout))


def _expired_item(S: Sym, cfg: ModelConfig, d: Design, n: int):
    """(is some item due, is it the one in flight, the item): the in-flight item if now -
    sent >= its timeout (the network timeout, F-16), else the queue's head if now - created
    >= its timeout (the retry timeout, F-17, F-19) (model: expired_item)."""
    fly = _item(S, f"n{n}.ch.inflight")
    has, timeout = _item_timeout(cfg, d, fly["kind"])
    fly_due = And(S.node(n, "ch.inflight.present"), has, S["now"] - fly["sent"] >= timeout)
    head = _item(S, f"n{n}.ch.queue.0")
    has, timeout = _item_timeout(cfg, d, head["kind"])
    head_due = And(S.node(n, "ch.queue.len") > 0, has, S["now"] - head["created"] >= timeout)
    item = {f: If(fly_due, fly[f], head[f]) for f, _ in ITEM_FIELDS}
    return Or(fly_due, head_due), fly_due, item


def _has_target_listener(cfg: ModelConfig, p: int) -> bool:
    """Node ``p`` has the listener broker-to-controller traffic to it uses (model:
    target_listener, L-29, MG-2: a KRaft controller's controller listener, a ZK broker's
    inter-broker listener)."""
    from model.config import CONTROLLER_LISTENER, INTER_BROKER_LISTENER
    role = CONTROLLER_LISTENER if cfg.nodes[p].role == CONTROLLER else INTER_BROKER_LISTENER
    return cfg.node_listener(p, role) is not None


def _reply_dict(how, to, key, listener, hops=1) -> dict:
    return {"how": how, "to": to, "key": key, "listener": listener, "hops": hops}


def _msg(kind, src, dst, listener, key, a=0, b=0, sender_principal=0) -> dict:
    return {"kind": kind, "src": src, "dst": dst, "listener": listener, "key": key, "a": a,
            "b": b, "sender_principal": sender_principal}


# --------------------------------------------------------------------------------------------
# replies and connections


def _send_reply(S: Sym, cfg: ModelConfig, src, reply: dict, env_err, inner_err, when=True) -> Sym:
    """Answer a request: to a client, or as an EnvelopeResponse / registration response; a
    reply to a dead node, or a registration reply to another incarnation than the one that
    asked, is lost (model: _send_reply).  A pending reply whose requester is gone (the model's
    ``()``) is the caller's ``when``."""
    how = reply["how"]
    to_client = And(when, Eq(how, REPLY_CLIENT))
    code = If(Not(Eq(env_err, 0)), env_err, inner_err) if not isinstance(env_err, int) else (
        env_err if env_err else inner_err)
    S2 = _respond(S, cfg, reply["to"], code, envelope_error=env_err, when=to_client)
    alive = S.node(reply["to"], "alive")
    env = And(when, Eq(how, REPLY_ENVELOPE), alive)
    reg = And(when, Eq(how, REPLY_REGISTRATION), alive,
              Eq(S.node(reply["to"], "incarnation"), reply["key"]))
    either = If(Not(Eq(env_err, 0)), env_err, inner_err) if not isinstance(env_err, int) else (
        env_err or inner_err)
    envelope = _msg(ENVELOPE_RESPONSE, src, reply["to"], reply["listener"], reply["key"],
                    env_err, inner_err)
    registration = _msg(REGISTRATION_RESPONSE, src, reply["to"], reply["listener"],
                        reply["to"], either, reply["key"])
    # env and reg exclude each other (two values of how): one add of the message env picks is
    # the model's two branches, with half the nested network terms of two conditional adds
    # (a commit answers a batch of replies; tests/test_symbolic.py checks the equivalence)
    if _f(reg):
        return S2.net_add(envelope, when=env)
    if _f(env):
        return S2.net_add(registration, when=reg)
    return S2.net_add({f: If(env, envelope[f], registration[f]) for f in envelope},
                      when=Or(env, reg))


def _reply_not_controller(S: Sym, cfg: ModelConfig, d: Design, src, reply: dict, when=True) -> Sym:
    """F-34 (model: _reply_not_controller)."""
    promote = And(Eq(reply["how"], REPLY_ENVELOPE), not d.not_controller_inside_ok_envelope)
    env_err = If(promote, kafka.NOT_CONTROLLER, kafka.NONE)
    inner = If(promote, kafka.NONE, kafka.NOT_CONTROLLER)
    return _send_reply(S, cfg, src, reply, env_err, inner, when=when)


def _requeue_front(S: Sym, n: int, when=True) -> Sym:
    """F-21.3/4: forget the controller and put the in-flight item back at the front
    (model: _requeue_front)."""
    inflight = S.node(n, "ch.inflight.present")
    item = _item(S, f"n{n}.ch.inflight")
    item["requeued"] = True
    item["sent"] = NO_TIME
    S2 = S.seq_push_front(f"n{n}.ch.queue", item, when=And(when, inflight))
    upd = {f"n{n}.ch.cached": If(when, NO_NODE, S.node(n, "ch.cached")),
           f"n{n}.ch.inflight.present": And(Not(when), inflight)}
    return S2.set(upd)


def _close_connection(S: Sym, cfg: ModelConfig, reply: dict) -> Sym:
    """F-23, F-24: the receiver closes the connection; the sender sees a disconnect (model:
    _close_connection).  ``reply['how']`` is a Python int here."""
    if reply["how"] == REPLY_CLIENT:
        return _respond(S, cfg, reply["to"], kafka.NETWORK_EXCEPTION)

    def body(n):
        match = And(S.node(n, "alive"), S.node(n, "ch.inflight.present"),
                    Eq(S.node(n, "ch.inflight.kind"), FORWARD),
                    Eq(S.node(n, "ch.inflight.key"), reply["key"]))
        return TRUE, _requeue_front(S, n, when=match)
    return _cases(reply["to"], list(range(len(cfg.nodes))), body, default=(TRUE, S))[1]


def _forget_replies(S: Sym, n: int, item: dict | None = None, when=True) -> Sym:
    """The pending answers (a ZK controller's queued events, the KRaft leader's uncommitted
    records) to node ``n`` on the connection of channel item ``item`` (or on any of its
    connections) lose their requester (model: _forget_replies with _replies_to)."""
    if item is not None:
        how = If(Eq(item["kind"], FORWARD), REPLY_ENVELOPE, REPLY_REGISTRATION)

    def gone(p):
        out = And(when, Not(Eq(S[p + "reply_how"], REPLY_CLIENT)), Eq(S[p + "reply_to"], n))
        if item is not None:
            out = And(out, Eq(S[p + "reply_how"], how), Eq(S[p + "reply_key"], item["key"]))
        return out
    prefixes = ([f"n{x}.events" for x in range(S.lay.n)] if not S.lay.kraft
                else ["q.uncommitted"])
    upd = {}
    for prefix in prefixes:
        for k, _ in S.seq_items(prefix):
            p = f"{prefix}.{k}."
            upd[p + "has_reply"] = And(S[p + "has_reply"], Not(gone(p)))
    return S.set(upd)


def _on_connection(m: dict, n, item: dict):
    """Is message ``m`` the request or the response of node n's item (model: _on_connection)?"""
    fwd = Or(And(Eq(m["kind"], ENVELOPE_REQUEST), Eq(m["src"], n), Eq(m["key"], item["key"])),
             And(Eq(m["kind"], ENVELOPE_RESPONSE), Eq(m["dst"], n), Eq(m["key"], item["key"])))
    reg = Or(And(Eq(m["kind"], REGISTRATION_REQUEST), Eq(m["src"], n), Eq(m["a"], item["key"])),
             And(Eq(m["kind"], REGISTRATION_RESPONSE), Eq(m["dst"], n), Eq(m["b"], item["key"])))
    return If(Eq(item["kind"], FORWARD), fwd, reg)


# --------------------------------------------------------------------------------------------
# what a controller does with a mutation it accepted


def _controller_accepts_mutation(S: Sym, cfg: ModelConfig, d: Design, r: int, req, reply: dict,
                                 via_envelope, privileged, sender_ca) -> Sym:
    if cfg.mode == ZK:
        acked = d.ack_before_commit
        if acked:
            S = _send_reply(S, cfg, r, reply, kafka.NONE, kafka.NONE)
        event = {"req": req, "via_envelope": via_envelope, "privileged": privileged,
                 "sender_cluster_action": sender_ca, "acked": acked, "has_reply": True}
        event.update({f"reply_{f}": x for f, x in reply.items()})
        return S.seq_append(f"n{r}.events", event)
    if cfg.create_topic_policy:
        # AT-5: the create-topic policy is not stated; it needs internal_topics (validate),
        # whose configurations are refused before any step is built (next.unencoded_actions)
        raise ValueError(f"{cfg.name}: the create-topic policy is not encoded "
                         f"(create_topic_policy_ignored={d.create_topic_policy_ignored})")
    leader = Eq(S["q.leader"], r)
    if d.not_controller_wrapped_as_unknown:
        # KAFKA-14167 (model: _controller_accepts_mutation)
        refused = _send_reply(S, cfg, r, reply, kafka.NONE, kafka.UNKNOWN_SERVER_ERROR)
    else:
        refused = _reply_not_controller(S, cfg, d, r, reply)
    record = {"kind": MUTATION_RECORD, "a": req, "b": 0, "epoch": S["q.epoch"], "writer": r,
              "via_envelope": via_envelope, "sender_cluster_action": sender_ca, "c": 0, "d": 0,
              "e": 0}
    if d.ack_before_commit:
        A = _send_reply(S, cfg, r, reply, kafka.NONE, kafka.NONE)
        pending = dict(record, has_reply=False, reply_how=0, reply_to=0, reply_key=0,
                       reply_listener=0, reply_hops=0)
    else:
        A = S
        pending = dict(record, has_reply=True, **{f"reply_{f}": x for f, x in reply.items()})
    accepted = A.seq_append("q.uncommitted", pending)
    return ite(leader, accepted, refused)


def _receive_envelope(S: Sym, cfg: ModelConfig, d: Design, r: int, req, version, hops, listener,
                      sender_principal, reply: dict) -> Sym:
    """The receiving side of an EnvelopeRequest, checks in Kafka's order (F-22..F-30)."""
    n_clients = len(cfg.clients)
    inner_principal = _table(req, [principal_index(cfg, c.claimed_principal
                                                   if c.kind == FORGED_ENVELOPE else c.principal)
                                   for c in cfg.clients])
    sender_ca = _allows(cfg, sender_principal, kafka.CLUSTER_ACTION)
    plst = cfg.privileged_listener(r)
    privileged = FALSE if plst is None else Eq(listener, cfg.listener_index(plst.name))
    # the checks in order: (condition, outcome); the first that holds decides
    checks = []
    if cfg.mode == ZK and cfg.nodes[r].role == BROKER:
        if not cfg.zk_forwarding or not cfg.nodes[r].principal_serde:
            return _close_connection(S, cfg, reply)                                   # F-23
        if not d.envelope_any_listener:
            checks.append((Not(privileged), _close_connection(S, cfg, reply)))         # F-24
        checks.append((Not(sender_ca),
                       _send_reply(S, cfg, r, reply, kafka.CLUSTER_AUTHORIZATION_FAILED, 0)))
        not_active = Not(S.node(r, "zk_active"))                                       # F-26
        refused = S if d.not_controller_unanswered else _send_reply(
            S, cfg, r, reply, kafka.NOT_CONTROLLER, kafka.NONE)
        if d.reforward_forwarded and reply["how"] == REPLY_ENVELOPE:
            p = S.node(r, "known_controller")

            def reforward(pv):
                if pv == r or not _has_target_listener(cfg, pv):
                    return TRUE, refused
                msg = _msg(ENVELOPE_REQUEST, r, pv, target_listener(cfg, pv), req, version,
                           hops + 1, principal_index(cfg, cfg.nodes[r].principal))
                return TRUE, ite(S.node(pv, "alive"), S.net_add(msg), refused)
            refused = _cases(p, list(range(len(cfg.nodes))), reforward, default=(TRUE, refused))[1]
        checks.append((not_active, refused))
    else:
        checks.append((Not(sender_ca),
                       _send_reply(S, cfg, r, reply, kafka.CLUSTER_AUTHORIZATION_FAILED, 0)))
        if not cfg.nodes[r].principal_serde:
            checks.append((TRUE, _send_reply(S, cfg, r, reply,
                                             kafka.PRINCIPAL_DESERIALIZATION_FAILURE, 0)))
    checks.append((version > cfg.nodes[r].api_max,                                     # F-29e
                   _send_reply(S, cfg, r, reply, kafka.UNSUPPORTED_VERSION, kafka.NONE)))
    # F-30: the inner request runs as the forwarded principal
    acting = sender_principal if d.authorize_as_forwarder else inner_principal
    # (a DescribeCluster client never reaches here: only mutations are forwarded)
    allowed = Or(*(And(Eq(req, c), _allows(cfg, acting, kafka.API_OPERATION[cfg.clients[c].api]))
                   for c in range(n_clients) if cfg.clients[c].api in kafka.API_OPERATION))
    denied_code = _table(req, [kafka.API_DENIED_ERROR.get(c.api, 0) for c in cfg.clients])
    checks.append((Not(allowed), _send_reply(S, cfg, r, reply, kafka.NONE, denied_code)))
    out = _controller_accepts_mutation(S, cfg, d, r, req, reply, True, privileged, sender_ca)
    for cond, outcome in reversed(checks):
        out = ite(cond, outcome, out)
    return out


def _node_handles_describe_cluster(S: Sym, cfg: ModelConfig, d: Design, c: int, n: int,
                                   listener: int) -> Sym:
    """DescribeCluster v1 on a broker (D-2) or a controller (D-1), then D-3."""
    spec = cfg.clients[c]
    is_controller = cfg.nodes[n].role == CONTROLLER
    if is_controller:
        if not cfg.allows(spec.principal, kafka.ALTER_CLUSTER) and \
                not d.controller_describe_without_alter:
            denied = _respond(S, cfg, c, kafka.CLUSTER_AUTHORIZATION_FAILED)            # D-1.2
        else:
            denied = None
        unsupported = _respond(S, cfg, c, kafka.UNSUPPORTED_VERSION)                   # D-1.1
    expected = kafka.ENDPOINT_CONTROLLER if is_controller else kafka.ENDPOINT_BROKER
    if spec.endpoint_type not in (kafka.ENDPOINT_BROKER, kafka.ENDPOINT_CONTROLLER):
        out = _respond(S, cfg, c, kafka.UNSUPPORTED_ENDPOINT_TYPE)                     # D-3.1
    elif spec.endpoint_type != expected:
        out = _respond(S, cfg, c, kafka.MISMATCHED_ENDPOINT_TYPE)                      # D-3.2
    else:
        name = cfg.listener_names[listener]
        member = {}             # node -> (listed, endpoints token)
        if is_controller and d.describe_controllers_from_voters:
            for x in cfg.controllers():                       # the static quorum voters
                member[x] = (TRUE, STATIC_ENDPOINTS)
        elif is_controller:
            # registrations in the log this controller has replayed, the last one of
            # each controller with the endpoints it carries ("c")
            upto = S.node(n, "replayed")
            for x in range(len(cfg.nodes)):
                found, token = FALSE, STATIC_ENDPOINTS
                for k, used in S.seq_items("q.log"):
                    hit = And(used, k < upto, Eq(S[f"q.log.{k}.kind"], REGISTER_CONTROLLER),
                              Eq(S[f"q.log.{k}.a"], x))
                    found, token = Or(found, hit), If(hit, S[f"q.log.{k}.c"], token)
                member[x] = (found, token)
        elif cfg.broker_registration:
            # The registered brokers that are not fenced (or, under
            # describe_lists_fenced_brokers, all of them) come from the log's broker
            # registrations, which this encoding does not state: such a configuration is
            # refused before any step is built (next.unencoded_actions).
            raise ValueError(f"{cfg.name}: brokers answer from broker registrations, which the "
                             f"encoding does not state (describe_lists_fenced_brokers="
                             f"{d.describe_lists_fenced_brokers})")
        else:
            for x in cfg.brokers():                                                    # L-27
                member[x] = (S.node(x, "alive"), STATIC_ENDPOINTS)
        endpoints = {}
        for x, (listed, token) in member.items():
            fallback = (d.describe_falls_back_to_other_listener
                        and all(lst.name != name for lst in cfg.nodes[x].listeners))
            for i, lst in enumerate(cfg.nodes[x].listeners):
                if lst.name == name or d.metadata_all_listeners or (fallback and i == 0):
                    endpoints[(x, cfg.listener_index(lst.name))] = (
                        listed, _listener_endpoint(lst, token))
        out = _respond(S, cfg, c, kafka.NONE, endpoints=endpoints)
    if is_controller:
        if denied is not None:
            out = denied
        out = ite(_metadata_version(S, n) < kafka.MV_3_7_IV0, unsupported, out)
    return out


# --------------------------------------------------------------------------------------------
# client steps


def client_sends_request(S: Sym, cfg: ModelConfig, d: Design, c: int):
    spec = cfg.clients[c]
    n = spec.node
    listener = cfg.listener_index(spec.listener)
    enabled = Not(S.client(c, "sent"))
    version = _advertised_version(S, cfg, d, n)
    S = S.set({f"c{c}.sent": True, f"c{c}.version": version})
    dead = _respond(S, cfg, c, kafka.NETWORK_EXCEPTION)
    if spec.kind in (FIND_COORDINATOR, METADATA):
        # AT-1, AT-2: the topics a request needs are not stated; a configuration with such
        # clients (internal_topics) takes controller_handles_create_topics, which the encoding
        # lacks, and is refused before any step is built (next.unencoded_actions); so is the
        # partition leader lookup of L-28 (partition_leaders needs internal_topics).
        raise ValueError(f"{cfg.name}: client {spec.name} may make its broker create a topic, "
                         f"which the encoding does not state (auto_create_errors_only_logged="
                         f"{d.auto_create_errors_only_logged}, leader_liveness_of_local_broker="
                         f"{d.leader_liveness_of_local_broker})")
    if spec.kind == DESCRIBE:
        live = _node_handles_describe_cluster(S, cfg, d, c, n, listener)
    else:
        reply = _reply_dict(REPLY_CLIENT, c, c, listener)
        if spec.kind == FORGED_ENVELOPE:
            live = _receive_envelope(S, cfg, d, n, c, version, 1, listener,
                                     principal_index(cfg, spec.principal), reply)
        elif cfg.mode == ZK:
            forwards = _broker_forwards(S, cfg, n)
            if d.brokers_write_zk or d.brokers_write_zk_under_controller_epoch:
                other = _broker_writes_zk(S, cfg, d, n, c, routed_locally=Not(forwards))
            else:
                other = ite(forwards, _broker_forwards_request(S, cfg, d, n, c),       # F-3
                            _broker_writes_zk(S, cfg, d, n, c, routed_locally=True))   # F-5, Z-5
            if cfg.migration and spec.api == kafka.INCREMENTAL_ALTER_CONFIGS:
                # F-6: forwarded only to a KRaft controller; processed here otherwise
                if d.entity_config_write_unchecked:
                    here = _broker_writes_zk(S, cfg, d, n, c, routed_locally=True)     # T-11
                else:
                    here = _broker_reads_controller_znode(S, cfg, d, n, c)             # MG-6
                other = ite(Not(And(forwards, _kraft_controller_cached(S, cfg, n))), here, other)
            live = ite(S.node(n, "zk_active"),
                       _controller_handles_client_mutation(S, cfg, d, n, c, reply), other)
        elif cfg.nodes[n].role == BROKER:
            live = _broker_forwards_request(S, cfg, d, n, c)                           # F-2
        else:
            live = _controller_handles_client_mutation(S, cfg, d, n, c, reply)         # D-7
    return enabled, ite(S.node(n, "alive"), live, dead)


def _broker_forwards(S: Sym, cfg: ModelConfig, n: int):
    """F-4, MG-1: a ZK broker forwards iff forwarding is on and its IBP is at least 3.4-IV0
    (model: broker_forwards)."""
    return And(cfg.zk_forwarding, Not(S.node(n, "legacy_ibp")))


def _kraft_controller_cached(S: Sym, cfg: ModelConfig, n: int):
    """F-6, MG-3: node n's metadata cache names a KRaft controller (model:
    kraft_controller_cached)."""
    return _is_kraft_controller(cfg, S.node(n, "known_controller"))


def _broker_forwards_request(S: Sym, cfg: ModelConfig, d: Design, n: int, c: int) -> Sym:
    """F-11..F-14: wrap the request in an Envelope and queue it on the controller channel."""
    if d.principal_serde_not_required and not cfg.nodes[n].principal_serde:
        # KAFKA-13051, F-12: no serde, buildEnvelopeRequest throws (model: _broker_forwards_request)
        return _respond(S, cfg, c, kafka.UNKNOWN_SERVER_ERROR)
    item = {"kind": FORWARD, "key": c, "created": S["now"], "requeued": False, "hops": 1,
            "sent": NO_TIME}
    S = S.set({f"c{c}.forwarded": True, f"c{c}.sent_at": S["now"]})
    return S.seq_append(f"n{n}.ch.queue", item)


def _controller_handles_client_mutation(S: Sym, cfg: ModelConfig, d: Design, n: int, c: int,
                                        reply: dict) -> Sym:
    spec = cfg.clients[c]
    if not cfg.allows(spec.principal, kafka.API_OPERATION[spec.api]):
        return _respond(S, cfg, c, kafka.API_DENIED_ERROR[spec.api])
    return _controller_accepts_mutation(S, cfg, d, n, c, reply, False, False, False)


def _epoch_holder(S: Sym, epoch):
    """Zk.epoch_holders[epoch], NO_NODE past its end (model: model.actions.epoch_holder)."""
    out = z3.IntVal(NO_NODE)
    for k, used in reversed(S.seq_items("zk.holders")):
        out = If(And(used, Eq(epoch, k)), S[f"zk.holders.{k}.node"], out)
    return out


def _broker_writes_zk(S: Sym, cfg: ModelConfig, d: Design, n: int, c: int,
                      routed_locally=False) -> Sym:
    """Z-5: a non-controller ZK broker writes configs/ACLs itself (last writer wins);
    ``routed_locally`` (a term or a bool): Kafka's routing leaves the request to it."""
    spec = cfg.clients[c]
    if not cfg.allows(spec.principal, kafka.API_OPERATION[spec.api]):
        return _respond(S, cfg, c, kafka.API_DENIED_ERROR[spec.api])
    none = _respond(S, cfg, c, kafka.STALE_CONTROLLER_EPOCH)
    # brokers-write-zk-under-controller-epoch: a CheckOp on the epoch just read
    believed = S["zk.epoch"] if d.brokers_write_zk_under_controller_epoch else -1
    write = {"req": c, "writer": n, "writer_epoch": believed, "zk_epoch": S["zk.epoch"],
             "via_envelope": False, "privileged": False, "sender_cluster_action": False,
             "zk_holder": _epoch_holder(S, S["zk.epoch"]), "routed_locally": routed_locally}
    done = _respond(S.seq_append("zk.writes", write), cfg, c, kafka.NONE)
    return ite(Eq(S["zk.controller"], NO_NODE), none, done)


def _is_kraft_controller(cfg: ModelConfig, x):
    """``x != NO_NODE and cfg.nodes[x].role == CONTROLLER`` for a node index term."""
    return Or(*(Eq(x, p) for p in cfg.controllers()))


def _broker_reads_controller_znode(S: Sym, cfg: ModelConfig, d: Design, n: int, c: int) -> Sym:
    """MG-6, first half: read /controller before the entity-config write; none, or a KRaft
    controller's, fails with STALE_CONTROLLER_EPOCH; a ZK controller's is remembered with the
    /controller_epoch zkVersion for the multi's CheckOp (model: _broker_reads_controller_znode)."""
    spec = cfg.clients[c]
    if not cfg.allows(spec.principal, kafka.API_OPERATION[spec.api]):
        return _respond(S, cfg, c, kafka.API_DENIED_ERROR[spec.api])                  # F-7
    owner = S["zk.controller"]
    refused = _respond(S, cfg, c, kafka.STALE_CONTROLLER_EPOCH)
    read = S.seq_append(f"n{n}.cw", {"req": c, "version": S["zk.epoch_version"]})
    return ite(Or(Eq(owner, NO_NODE), _is_kraft_controller(cfg, owner)), refused, read)


# --------------------------------------------------------------------------------------------
# metadata cache and the controller channel


def broker_learns_controller(S: Sym, cfg: ModelConfig, d: Design, n: int):
    if cfg.nodes[n].role != BROKER:
        return FALSE, S
    truth = S["zk.controller"] if cfg.mode == ZK else S["q.leader"]
    enabled = And(S.node(n, "alive"), Not(S.node(n, "session_expired")),
                  Not(Eq(S.node(n, "known_controller"), truth)))
    return enabled, S.set_node(n, known_controller=truth)


def _provider_controller(S: Sym, cfg: ModelConfig, n: int):
    if cfg.mode == KRAFT and cfg.nodes[n].role == CONTROLLER:
        return S["q.leader"]
    return S.node(n, "known_controller")


def channel_discovers_controller(S: Sym, cfg: ModelConfig, d: Design, n: int):
    p = _provider_controller(S, cfg, n)
    enabled = And(S.node(n, "alive"), Eq(S.node(n, "ch.cached"), NO_NODE),
                  S.node(n, "ch.queue.len") > 0, Not(Eq(p, NO_NODE)))
    upd = {f"n{n}.ch.cached": p}
    for j in range(len(cfg.nodes)):
        upd[f"n{n}.ncf.{j}"] = And(S.node(n, f"ncf.{j}"), Not(Eq(p, j)))
    return enabled, S.set(upd)


def channel_sends_request(S: Sym, cfg: ModelConfig, d: Design, n: int):
    due, _, _ = _expired_item(S, cfg, d, n)
    base = And(S.node(n, "alive"), Not(S.node(n, "ch.inflight.present")),
               S.node(n, "ch.queue.len") > 0, Not(Eq(S.node(n, "ch.cached"), NO_NODE)), Not(due))
    item = _item(S, f"n{n}.ch.queue.0")
    item["sent"] = S["now"]                     # the network timeout counts from here (F-16)
    me = principal_index(cfg, cfg.nodes[n].principal)

    def to(p):
        if not _has_target_listener(cfg, p):    # never cached: not a controller
            return FALSE, S
        forget = S.set_node(n, **{"ch.cached": NO_NODE})
        room = S.net_size() < cfg.max_in_flight
        listener = target_listener(cfg, p)
        fwd = Eq(item["kind"], FORWARD)
        msg = {"kind": If(fwd, ENVELOPE_REQUEST, REGISTRATION_REQUEST), "src": n, "dst": p,
               "listener": listener, "key": If(fwd, item["key"], n),
               "a": If(fwd, S.client(item["key"], "version"), item["key"]),
               "b": If(fwd, item["hops"], _advertised_endpoints(cfg, d, n, item["key"])),
               "sender_principal": me}
        versions = If(fwd, cfg.nodes[p].api_max, S.node(n, "ctrl_versions"))
        sent = S.seq_pop_front(f"n{n}.ch.queue")
        sent = sent.set({f"n{n}.ch.cached": p, f"n{n}.ch.inflight.present": True,
                         f"n{n}.ctrl_versions": versions,
                         **{f"n{n}.ch.inflight.{f}": x for f, x in item.items()}})
        sent = sent.net_add(msg)
        alive = S.node(p, "alive")
        return Or(Not(alive), room), ite(alive, sent, forget)
    en, S2 = _cases(S.node(n, "ch.cached"), list(range(len(cfg.nodes))), to)
    return And(base, en), S2


def channel_times_out_request(S: Sym, cfg: ModelConfig, d: Design, n: int):
    due, is_inflight, item = _expired_item(S, cfg, d, n)
    enabled = And(S.node(n, "alive"), due)
    # the in-flight item: its connection closes and its messages are gone
    closed = S.net_remove_where(lambda m: _on_connection(m, n, item))
    closed = closed.set({f"n{n}.ch.cached": NO_NODE, f"n{n}.ch.inflight.present": False})
    S2 = ite(is_inflight, closed, S.seq_pop_front(f"n{n}.ch.queue"))
    # ... and so is the answer the controller may still send on it
    S2 = _forget_replies(S2, n, item, when=is_inflight)
    if cfg.registration:        # only a registering controller queues REGISTRATION items
        reg = Eq(item["kind"], REGISTRATION)
        S2 = S2.set({f"n{n}.pending_rpc": If(reg, d.registration_pending_stuck,
                                             S2.node(n, "pending_rpc")),
                     f"n{n}.retry_at": If(reg, S["now"] + 1, S2.node(n, "retry_at"))})
    answer = And(Eq(item["kind"], FORWARD), _waiting(S2, item["key"]))
    S2 = _respond(S2, cfg, item["key"], kafka.REQUEST_TIMED_OUT, retried=item["requeued"],
                  when=answer)
    return enabled, S2


def broker_handles_envelope_response(S: Sym, cfg: ModelConfig, d: Design, j: int):
    m = S.msg(j)
    base = And(S[f"net.{j}.present"], Eq(m["kind"], ENVELOPE_RESPONSE))

    def at(n):
        en = And(S.node(n, "alive"), S.node(n, "ch.inflight.present"),
                 Eq(S.node(n, "ch.inflight.kind"), FORWARD),
                 Eq(S.node(n, "ch.inflight.key"), m["key"]), Eq(S.node(n, "ch.cached"), m["src"]))
        S1 = S.net_remove_slot(j)
        requeued = S.node(n, "ch.inflight.requeued")
        # NOT_CONTROLLER: re-queue at the front and forget the controller
        back = _requeue_front(S1, n)
        back = back.set({f"n{n}.ncf.{x}": Or(S.node(n, f"ncf.{x}"), Eq(m["src"], x))
                         for x in range(len(cfg.nodes))})
        told = Eq(m["b"], kafka.NOT_CONTROLLER)
        done = S1.set({f"n{n}.ch.inflight.present": False,
                       **{f"n{n}.ncf.{x}": Or(S.node(n, f"ncf.{x}"), And(told, Eq(m["src"], x)))
                          for x in range(len(cfg.nodes))}})
        code = If(Eq(m["a"], kafka.NONE), m["b"],
                  If(Eq(m["a"], kafka.UNSUPPORTED_VERSION), kafka.NETWORK_EXCEPTION,
                     m["a"] if d.leak_envelope_error else kafka.UNKNOWN_SERVER_ERROR))
        env_err = If(Eq(m["a"], kafka.NONE), 0, m["a"])
        done = _respond(done, cfg, m["key"], code, envelope_error=env_err, retried=requeued,
                        when=_waiting(done, m["key"]))
        return en, ite(Eq(m["a"], kafka.NOT_CONTROLLER), back, done)
    en, S2 = _cases(m["dst"], list(range(len(cfg.nodes))), at)
    return And(base, en), S2


def _response_matches(S: Sym, m: dict, n: int):
    """model: _response_matches, for the message's destination ``n``."""
    inflight = S.node(n, "ch.inflight.present")
    base = And(S.node(n, "alive"), inflight, Eq(S.node(n, "ch.cached"), m["src"]))
    env = And(Eq(S.node(n, "ch.inflight.kind"), FORWARD),
              Eq(S.node(n, "ch.inflight.key"), m["key"]))
    reg = And(Eq(S.node(n, "ch.inflight.kind"), REGISTRATION),
              Eq(S.node(n, "ch.inflight.key"), m["b"]), Eq(m["b"], S.node(n, "incarnation")))
    return And(base, If(Eq(m["kind"], ENVELOPE_RESPONSE), env, reg))


def node_discards_stale_response(S: Sym, cfg: ModelConfig, d: Design, j: int):
    m = S.msg(j)
    base = And(S[f"net.{j}.present"],
               Or(Eq(m["kind"], ENVELOPE_RESPONSE), Eq(m["kind"], REGISTRATION_RESPONSE)))
    en, S2 = _cases(m["dst"], list(range(len(cfg.nodes))),
                    lambda n: (Not(_response_matches(S, m, n)), S.net_remove_slot(j)))
    return And(base, en), S2


# --------------------------------------------------------------------------------------------
# controllers


def controller_handles_envelope(S: Sym, cfg: ModelConfig, d: Design, j: int):
    m = S.msg(j)
    base = And(S[f"net.{j}.present"], Eq(m["kind"], ENVELOPE_REQUEST))
    S1 = S.net_remove_slot(j)
    reply = _reply_dict(REPLY_ENVELOPE, m["src"], m["key"], m["listener"], m["b"])

    def at(r):
        return S.node(r, "alive"), _receive_envelope(S1, cfg, d, r, m["key"], m["a"], m["b"],
                                                     m["listener"], m["sender_principal"], reply)
    en, S2 = _cases(m["dst"], list(range(len(cfg.nodes))), at)
    return And(base, en), S2


def controller_processes_event(S: Sym, cfg: ModelConfig, d: Design, n: int):
    if cfg.mode != ZK:
        return FALSE, S
    enabled = And(S.node(n, "alive"), S.node(n, "events.len") > 0)
    p = f"n{n}.events.0."
    reply = {f: S[p + "reply_" + f] for f in ("how", "to", "key", "listener", "hops")}
    acked = S[p + "acked"]
    answer = And(Not(acked), S[p + "has_reply"])
    S1 = S.seq_pop_front(f"n{n}.events")
    # not the active controller (any more): NOT_CONTROLLER
    inactive = _reply_not_controller(S1, cfg, d, n, reply, when=answer)
    # the multi with CheckOp on the /controller_epoch zkVersion (Z-2)
    write = {"req": S[p + "req"], "writer": n, "writer_epoch": S.node(n, "zk_epoch"),
             "zk_epoch": S["zk.epoch"], "via_envelope": S[p + "via_envelope"],
             "privileged": S[p + "privileged"],
             "sender_cluster_action": S[p + "sender_cluster_action"],
             "zk_holder": _epoch_holder(S, S["zk.epoch"])}
    wrote = S1.seq_append("zk.writes", write)
    wrote = _send_reply(wrote, cfg, n, reply, kafka.NONE, kafka.NONE, when=answer)
    # BADVERSION: ControllerMovedException, resign, NOT_CONTROLLER (Z-3)
    moved = S1.set_node(n, zk_active=False, zk_epoch=-1, zk_epoch_version=-1)
    moved = _reply_not_controller(moved, cfg, d, n, reply, when=answer)
    fenced_ok = TRUE if d.zombie_writes_unfenced else Eq(S.node(n, "zk_epoch_version"),
                                                         S["zk.epoch_version"])
    out = ite(Not(S.node(n, "zk_active")), inactive, ite(fenced_ok, wrote, moved))
    return enabled, out


def controller_commits_records(S: Sym, cfg: ModelConfig, d: Design):
    if cfg.mode != KRAFT:
        return FALSE, S
    leader = S["q.leader"]

    def by(r):
        en = And(S.node(r, "alive"), S["q.uncommitted.len"] > 0)
        # every uncommitted record appended in order (flat: record i lands at len + i)
        S2 = S.seq_extend("q.log", "q.uncommitted", {f: f for f in (
            "kind", "a", "b", "epoch", "writer", "via_envelope", "sender_cluster_action", "c",
            "d", "e")})
        S2 = S2.seq_clear("q.uncommitted")
        # the active controller applied these records when it generated them; its
        # publishers (its registration manager, R-8) see them as committed now
        caught_up = Eq(S.node(r, "replayed"), S["q.log.len"])
        S2 = S2.set_node(r, replayed=If(caught_up, S2["q.log.len"], S.node(r, "replayed")))
        for k, used in S.seq_items("q.uncommitted"):
            p = f"q.uncommitted.{k}."
            S2 = _publish_record(S2, cfg, d, r, S[p + "kind"], S[p + "a"], S[p + "b"],
                                 when=And(caught_up, used))
        for k, used in S.seq_items("q.uncommitted"):
            p = f"q.uncommitted.{k}."
            reply = {f: S[p + "reply_" + f] for f in ("how", "to", "key", "listener", "hops")}
            S2 = _send_reply(S2, cfg, r, reply, kafka.NONE, kafka.NONE,
                             when=And(used, S[p + "has_reply"]))
        return en, S2
    return _cases(leader, list(range(len(cfg.nodes))), by)


def controller_sends_registration(S: Sym, cfg: ModelConfig, d: Design, c: int):
    if not cfg.registration or cfg.nodes[c].role != CONTROLLER:
        return FALSE, S
    retry_at = S.node(c, "retry_at")
    due = And(Not(Eq(retry_at, NO_TIME)), S["now"] >= retry_at)
    pending = S.node(c, "pending_rpc")
    enabled = And(S.node(c, "alive"), Or(S.node(c, "send_requested"), due))
    if not d.registration_no_recheck_after_success:
        enabled = And(enabled, Not(pending))
    S1 = S.set_node(c, send_requested=False, retry_at=NO_TIME)
    idle = Or(S.node(c, "registered_in_log"), pending,
              _metadata_version(S, c) < kafka.MV_3_7_IV0)
    item = {"kind": REGISTRATION, "key": S.node(c, "incarnation"), "created": S["now"],
            "requeued": False, "hops": 1, "sent": NO_TIME}
    sent = S1.set_node(c, pending_rpc=True).seq_append(f"n{c}.ch.queue", item)
    return enabled, ite(idle, S1, sent)


def _latest_registration(S: Sym, c, upto=None, seqs=("q.log",)):
    """(found, incarnation) of the last RegisterControllerRecord for ``c`` in the log (or its
    first ``upto`` records), then in the other sequences of ``seqs`` (``q.uncommitted``: the
    records the active controller appended, R-18)."""
    found, inc = FALSE, z3.IntVal(0)
    for seq in seqs:
        for k, used in S.seq_items(seq):
            hit = And(used, Eq(S[f"{seq}.{k}.kind"], REGISTER_CONTROLLER),
                      Eq(S[f"{seq}.{k}.a"], c))
            if upto is not None and seq == "q.log":
                hit = And(hit, k < upto)
            found = Or(found, hit)
            inc = If(hit, S[f"{seq}.{k}.b"], inc)
    return found, inc


def controller_handles_registration(S: Sym, cfg: ModelConfig, d: Design, j: int):
    if cfg.mode != KRAFT:       # registrations exist in KRaft mode only
        return FALSE, S
    m = S.msg(j)
    base = And(S[f"net.{j}.present"], Eq(m["kind"], REGISTRATION_REQUEST))
    S1 = S.net_remove_slot(j)
    reply = _reply_dict(REPLY_REGISTRATION, m["src"], m["a"], m["listener"])

    incarnation = m["a"]
    if d.registration_bumps_same_incarnation:
        found, current = _latest_registration(S1, m["src"], seqs=("q.log", "q.uncommitted"))
        incarnation = If(And(found, Eq(current, m["a"])), m["a"] + 1, m["a"])

    def at(r):
        denied = _send_reply(S1, cfg, r, reply, kafka.NONE, kafka.CLUSTER_AUTHORIZATION_FAILED)
        not_leader = _send_reply(S1, cfg, r, reply, kafka.NONE, kafka.NOT_CONTROLLER)
        old_mv = _send_reply(S1, cfg, r, reply, kafka.NONE, kafka.UNSUPPORTED_VERSION)
        unserializable = _send_reply(S1, cfg, r, reply, kafka.NONE, kafka.UNKNOWN_SERVER_ERROR)
        pending = {"kind": REGISTER_CONTROLLER, "a": m["src"], "b": incarnation,
                   "epoch": S["q.epoch"],
                   "writer": r, "via_envelope": False, "sender_cluster_action": True,
                   "c": m["b"], "d": 0, "e": 0, "has_reply": True,
                   **{f"reply_{f}": x for f, x in reply.items()}}
        appended = S1.seq_append("q.uncommitted", pending)
        # unresolved endpoints cannot be serialized, unless copied unchecked (the
        # registers-unresolved-endpoints variant, before KAFKA-15458)
        out = appended if d.registers_unresolved_endpoints else ite(
            Eq(m["b"], UNRESOLVED_ENDPOINTS), unserializable, appended)
        out = ite(_metadata_version(S) < kafka.MV_3_7_IV0, old_mv, out)
        out = ite(Not(Eq(S["q.leader"], r)), not_leader, out)
        out = ite(Not(_allows(cfg, m["sender_principal"], kafka.CLUSTER_ACTION)), denied, out)
        return S.node(r, "alive"), out
    en, S2 = _cases(m["dst"], list(range(len(cfg.nodes))), at)
    return And(base, en), S2


def controller_handles_registration_response(S: Sym, cfg: ModelConfig, d: Design, j: int):
    if cfg.mode != KRAFT:       # registrations exist in KRaft mode only
        return FALSE, S
    m = S.msg(j)
    base = And(S[f"net.{j}.present"], Eq(m["kind"], REGISTRATION_RESPONSE))
    S1 = S.net_remove_slot(j)

    def at(c):
        back = _requeue_front(S1, c)
        back = back.set({f"n{c}.ncf.{x}": Or(S.node(c, f"ncf.{x}"), Eq(m["src"], x))
                         for x in range(len(cfg.nodes))})
        done = S1.set_node(c, **{"ch.inflight.present": False, "pending_rpc": False})
        failed = Not(Eq(m["a"], kafka.NONE))
        done = done.set_node(c, retry_at=If(failed, S["now"] + 1, S.node(c, "retry_at")))
        if d.registration_trusts_response:
            done = done.set_node(c, registered_in_log=Or(Not(failed),
                                                         S.node(c, "registered_in_log")))
        return _response_matches(S, m, c), ite(Eq(m["a"], kafka.NOT_CONTROLLER), back, done)
    en, S2 = _cases(m["dst"], list(range(len(cfg.nodes))), at)
    return And(base, en), S2


def node_replays_record(S: Sym, cfg: ModelConfig, d: Design, n: int):
    if cfg.mode != KRAFT:
        return FALSE, S
    at = S.node(n, "replayed")
    enabled = And(S.node(n, "alive"), at < S["q.log.len"])
    S2 = S.set_node(n, replayed=at + 1)
    return enabled, _publish_record(S2, cfg, d, n, S.seq_get("q.log", at, "kind"),
                                    S.seq_get("q.log", at, "a"), S.seq_get("q.log", at, "b"))


def _publish_record(S: Sym, cfg: ModelConfig, d: Design, n: int, kind, a, b, when=True) -> Sym:
    """What node ``n``'s registration manager does with a record it replays (R-8), if
    ``when`` (model: _publish_record)."""
    if not (cfg.registration and cfg.nodes[n].role == CONTROLLER):
        return S
    mine = And(when, Eq(kind, REGISTER_CONTROLLER), Eq(a, n), not d.registration_trusts_response)
    if d.registration_never_confirmed:         # a record naming its own incarnation: ignored
        mine = And(mine, Not(Eq(b, S.node(n, "incarnation"))))
    feature = And(when, Eq(kind, FEATURE_LEVEL))
    return S.set_node(
        n,
        registered_in_log=If(mine, Eq(b, S.node(n, "incarnation")),
                             S.node(n, "registered_in_log")),
        send_requested=Or(mine, And(Not(mine), feature), S.node(n, "send_requested")))


# --------------------------------------------------------------------------------------------
# elections, sessions, crashes, restarts, time


def broker_handles_session_expiry(S: Sym, cfg: ModelConfig, d: Design, n: int):
    if cfg.mode != ZK:
        return FALSE, S
    enabled = And(S.node(n, "alive"), S.node(n, "session_expired"))
    S2 = S.set_node(n, session_expired=False, zk_active=False, zk_epoch=-1,
                    zk_epoch_version=-1, known_controller=S["zk.controller"])
    if d.expire_drops_queued_events:
        S2 = S2.set({f"n{n}.events.len": 0})         # KAFKA-10193: the queue is cleared
    return enabled, S2


def broker_elects_controller(S: Sym, cfg: ModelConfig, d: Design, n: int):
    if cfg.mode != ZK or cfg.nodes[n].role != BROKER:
        return FALSE, S
    enabled = And(S.node(n, "alive"), Not(S.node(n, "session_expired")),
                  Not(S.node(n, "zk_active")), Eq(S["zk.controller"], NO_NODE),
                  S["elections_left"] > 0)
    # election-keeps-epoch: /controller_epoch rewritten with the epoch it holds
    epoch = S["zk.epoch"] if d.election_keeps_epoch else S["zk.epoch"] + 1
    version = S["zk.epoch_version"] + 1
    S2 = S.set({"zk.controller": n, "zk.epoch": epoch, "zk.epoch_version": version,
                "elections_left": S["elections_left"] - 1})
    S2 = _set_epoch_holder(S2, epoch, n)
    return enabled, S2.set_node(n, zk_active=True, zk_epoch=epoch, zk_epoch_version=version,
                                known_controller=n)


def _set_epoch_holder(S: Sym, epoch, n: int) -> Sym:
    """Zk.epoch_holders[epoch] = n, extending the sequence by one slot when ``epoch`` is its
    length (model: holders[:epoch] + (n,) + holders[epoch + 1:]); an epoch past the end
    does not fit."""
    cap = S.lay.cap.holders
    length = S["zk.holders.len"]
    upd = {"zk.holders.len": If(epoch == length, length + 1, length)}
    for k in range(cap):
        key = f"zk.holders.{k}.node"
        upd[key] = If(epoch == k, n, S[key])
    return S.set(upd).requiring(And(epoch >= 0, epoch <= length, epoch < cap))


def controller_becomes_leader(S: Sym, cfg: ModelConfig, d: Design, c: int):
    if cfg.mode != KRAFT or cfg.nodes[c].role != CONTROLLER:
        return FALSE, S
    old = S["q.leader"]
    enabled = And(S.node(c, "alive"), Not(Eq(old, c)), S["elections_left"] > 0)
    S2 = S.set({"q.leader": c, "q.epoch": S["q.epoch"] + 1, "q.uncommitted.len": 0,
                "elections_left": S["elections_left"] - 1})
    tell = And(Not(Eq(old, NO_NODE)), S.node(old, "alive"))
    for k, used in S.seq_items("q.uncommitted"):
        p = f"q.uncommitted.{k}."
        reply = {f: S[p + "reply_" + f] for f in ("how", "to", "key", "listener", "hops")}
        when = And(tell, used, S[p + "has_reply"])
        if d.not_controller_wrapped_as_unknown:
            # KAFKA-14167: a pending mutation's answer is an inner UNKNOWN_SERVER_ERROR
            mutation = Eq(S[p + "kind"], MUTATION_RECORD)
            S2 = _send_reply(S2, cfg, old, reply, kafka.NONE, kafka.UNKNOWN_SERVER_ERROR,
                             when=And(when, mutation))
            when = And(when, Not(mutation))
        S2 = _reply_not_controller(S2, cfg, d, old, reply, when=when)
    return enabled, _activate_heartbeat_manager(S2, cfg, d)


def _activate_heartbeat_manager(S: Sym, cfg: ModelConfig, d: Design):
    """BR-13 (``model.actions._activate_heartbeat_manager``): the new active controller's
    broker sessions are broker-registration state, which this encoding does not state (the
    layout holds them constant): a configuration that runs broker registration is refused
    before any step is built (next.unencoded_actions), so this never answers for one."""
    if cfg.broker_registration:
        raise ValueError(f"{cfg.name}: an active controller's broker sessions are not encoded "
                         f"(activation_leaves_sessions_untracked="
                         f"{d.activation_leaves_sessions_untracked})")
    return S


# --------------------------------------------------------------------------------------------
# ZK-to-KRaft migration (MG-1..MG-7)


def broker_writes_entity_config(S: Sym, cfg: ModelConfig, d: Design, n: int):
    """MG-6, second half: the multi {CheckOp(/controller, the version read), SetData}; under
    entity-config-check-passes-recreated-controller (MG-7) any /controller passes."""
    if f"n{n}.cw.len" not in S.lay.sorts:       # not a broker of a migration: never queued
        return FALSE, S
    enabled = And(S.node(n, "alive"), S.node(n, "cw.len") > 0)
    c, version = S[f"n{n}.cw.0.req"], S[f"n{n}.cw.0.version"]
    S1 = S.seq_pop_front(f"n{n}.cw")
    zk_has = Not(Eq(S["zk.controller"], NO_NODE))
    if d.entity_config_check_passes_recreated_controller:
        passes = zk_has
        code = kafka.UNKNOWN_SERVER_ERROR       # a KeeperException from the multi (MG-7a)
    else:
        passes = And(zk_has, Eq(S["zk.epoch_version"], version))
        code = kafka.STALE_CONTROLLER_EPOCH
    failed = _respond(S1, cfg, c, code, when=_waiting(S1, c))
    write = {"req": c, "writer": n, "writer_epoch": -1, "zk_epoch": S["zk.epoch"],
             "via_envelope": False, "privileged": False, "sender_cluster_action": False,
             "zk_holder": _epoch_holder(S, S["zk.epoch"]), "routed_locally": True}
    wrote = S1.seq_append("zk.writes", write)
    wrote = _respond(wrote, cfg, c, kafka.NONE, when=_waiting(wrote, c))
    return enabled, ite(passes, wrote, failed)


def controller_claims_zk_leadership(S: Sym, cfg: ModelConfig, d: Design, c: int):
    """MG-5: the KRaft controller claims /controller and bumps /controller_epoch in one multi,
    once no broker runs the old IBP (MG-1; claims-before-brokers-ready: at once)."""
    if not cfg.migration or cfg.nodes[c].role != CONTROLLER:
        return FALSE, S
    enabled = And(S.node(c, "alive"), Not(S.node(c, "zk_active")))
    if not d.claims_before_brokers_ready:
        enabled = And(enabled, *(Not(S.node(x, "legacy_ibp")) for x in range(len(cfg.nodes))))
    epoch = S["zk.epoch"] + 1
    version = S["zk.epoch_version"] + 1
    S2 = S.set({"zk.controller": c, "zk.epoch": epoch, "zk.epoch_version": version})
    S2 = _set_epoch_holder(S2, epoch, c)
    return enabled, S2.set_node(c, zk_active=True, zk_epoch=epoch, zk_epoch_version=version,
                                known_controller=c)


def operator_bumps_ibp(S: Sym, cfg: ModelConfig, d: Design, n: int):
    """The second rolling bounce: a broker on the old IBP comes back on 3.4-IV0 or later
    (MG-1), with nothing in flight."""
    if f"n{n}.legacy_ibp" not in S.lay.sorts:   # never on the old IBP: never enabled
        return FALSE, S
    enabled = And(S.node(n, "alive"), S.node(n, "legacy_ibp"), Not(S.node(n, "zk_active")),
                  Eq(S.node(n, "cw.len"), 0), Eq(S.node(n, "ch.queue.len"), 0),
                  Not(S.node(n, "ch.inflight.present")))
    return enabled, S.set_node(n, legacy_ibp=False)


def _wants_tick(S: Sym, cfg: ModelConfig):
    out = []
    for n in range(len(cfg.nodes)):
        retry_at = S.node(n, "retry_at")
        out.append(And(S.node(n, "alive"),
                       Or(S.node(n, "ch.queue.len") > 0, S.node(n, "ch.inflight.present"),
                          And(Not(Eq(retry_at, NO_TIME)), retry_at > S["now"]))))
    return Or(*out)


def time_pending(S: Sym, cfg: ModelConfig, d: Design):
    """Something waits for a point in time (model: time_pending)."""
    out = []
    for n in range(len(cfg.nodes)):
        items = [And(S.node(n, "ch.inflight.present"),
                     _item_timeout(cfg, d, S.node(n, "ch.inflight.kind"))[0])]
        for k, used in S.seq_items(f"n{n}.ch.queue"):
            items.append(And(used, _item_timeout(cfg, d, S[f"n{n}.ch.queue.{k}.kind"])[0]))
        retry_at = S.node(n, "retry_at")
        out.append(And(S.node(n, "alive"),
                       Or(*items, And(Not(Eq(retry_at, NO_TIME)), retry_at > S["now"]))))
    return Or(*out)


def clock_ticks(S: Sym, cfg: ModelConfig, d: Design):
    due = [And(S.node(n, "alive"), _expired_item(S, cfg, d, n)[0]) for n in range(len(cfg.nodes))]
    enabled = And(S["now"] < cfg.max_time, _wants_tick(S, cfg), Not(Or(*due)))
    return enabled, S.set({"now": S["now"] + 1})


def zk_expires_session(S: Sym, cfg: ModelConfig, d: Design, n: int):
    if cfg.mode != ZK or cfg.nodes[n].role != BROKER:
        return FALSE, S
    enabled = And(Not(S.node(n, "session_expired")), S["expiries_left"] > 0)
    S2 = S.set({"zk.controller": If(Eq(S["zk.controller"], n), NO_NODE, S["zk.controller"]),
                "expiries_left": S["expiries_left"] - 1})
    return enabled, S2.set_node(n, session_expired=True)


def network_drops_message(S: Sym, cfg: ModelConfig, d: Design, j: int):
    m = S.msg(j)
    enabled = And(S[f"net.{j}.present"], S["drops_left"] > 0)
    S1 = S.net_remove_slot(j).set({"drops_left": S["drops_left"] - 1})
    request = Or(Eq(m["kind"], ENVELOPE_REQUEST), Eq(m["kind"], REGISTRATION_REQUEST))
    owner = If(request, m["src"], m["dst"])

    def at(o):
        item = _item(S, f"n{o}.ch.inflight")
        hit = And(S.node(o, "alive"), S.node(o, "ch.inflight.present"), _on_connection(m, o, item))
        return TRUE, _requeue_front(S1, o, when=hit)
    en, S2 = _cases(owner, list(range(len(cfg.nodes))), at)
    return And(enabled, en), S2


_NODE_DEFAULTS = {"alive": True, "incarnation": 0, "session_expired": False, "zk_active": False,
                  "zk_epoch": -1, "zk_epoch_version": -1, "known_controller": NO_NODE,
                  "ctrl_versions": NO_VERSIONS, "replayed": 0, "send_requested": False,
                  "pending_rpc": False, "registered_in_log": False, "retry_at": NO_TIME,
                  "ch.cached": NO_NODE, "ch.queue.len": 0, "ch.inflight.present": False,
                  "events.len": 0, "legacy_ibp": False, "cw.len": 0}


def _reset_node(S: Sym, cfg: ModelConfig, n: int, **keep) -> Sym:
    """Node ``n`` becomes ``Node(**keep)``: every other field takes its default."""
    upd = {}
    for f, x in _NODE_DEFAULTS.items():
        key = f"n{n}.{f}"
        val = keep.get(f, x)
        if key in S.lay.sorts:
            upd[key] = val
    for j in range(len(cfg.nodes)):
        upd[f"n{n}.ncf.{j}"] = False
    return S.set(upd)


def node_crashes(S: Sym, cfg: ModelConfig, d: Design, n: int):
    enabled = And(S.node(n, "alive"), S["crashes_left"] > 0)
    keep = {"alive": False, "incarnation": S.node(n, "incarnation"),
            "legacy_ibp": S.node(n, "legacy_ibp")}
    if f"n{n}.session_expired" in S.lay.sorts:
        keep["session_expired"] = S.node(n, "session_expired")
    if f"n{n}.replayed" in S.lay.sorts:
        keep["replayed"] = S.node(n, "replayed")
    S2 = _reset_node(S, cfg, n, **keep)
    S2 = S2.set({"crashes_left": S["crashes_left"] - 1})
    S2 = S2.net_remove_where(lambda m: Or(Eq(m["dst"], n), And(
        Eq(m["src"], n),
        Or(Eq(m["kind"], ENVELOPE_RESPONSE), Eq(m["kind"], REGISTRATION_RESPONSE)))))
    S2 = _forget_replies(S2, n)         # its connections close with it
    for p in range(len(cfg.nodes)):
        if p == n:
            continue
        hit = And(S.node(p, "alive"), Eq(S.node(p, "ch.cached"), n),
                  S.node(p, "ch.inflight.present"))
        S2 = _requeue_front(S2, p, when=hit)
    for c, spec in enumerate(cfg.clients):
        if spec.node == n:
            S2 = _respond(S2, cfg, c, kafka.NETWORK_EXCEPTION, when=_waiting(S2, c))
    if cfg.mode == KRAFT:
        drop = And(Eq(S["q.leader"], n), S["q.uncommitted.len"] > 0)
        S2 = S2.set({"q.uncommitted.len": If(drop, 0, S["q.uncommitted.len"])})
    return enabled, S2


def node_restarts(S: Sym, cfg: ModelConfig, d: Design, n: int):
    enabled = And(Not(S.node(n, "alive")), S["restarts_left"] > 0)
    if cfg.mode == ZK:
        enabled = And(enabled, Not(And(Eq(S["zk.controller"], n),
                                       Not(S.node(n, "session_expired")))))
    keep = {"alive": True, "incarnation": S.node(n, "incarnation") + 1,
            "legacy_ibp": S.node(n, "legacy_ibp")}
    if f"n{n}.replayed" in S.lay.sorts:
        keep["replayed"] = S.node(n, "replayed")
        keep["send_requested"] = cfg.registration and cfg.nodes[n].role == CONTROLLER
    S2 = _reset_node(S, cfg, n, **keep)
    if cfg.mode == KRAFT:
        # the leader comes back as the active controller (no election for it)
        S2 = _activate_heartbeat_manager(S2, cfg, d)
    return enabled, S2.set({"restarts_left": S["restarts_left"] - 1})


# The encodings by the model's action names (checked against model.next.ACTION_NAMES).
ENCODINGS = {fn.__name__: fn for fn in (
    client_sends_request, broker_learns_controller, channel_discovers_controller,
    channel_sends_request, channel_times_out_request, controller_handles_envelope,
    broker_handles_envelope_response, controller_sends_registration,
    controller_handles_registration, controller_handles_registration_response,
    node_discards_stale_response, controller_processes_event, controller_commits_records,
    node_replays_record, broker_handles_session_expiry, broker_writes_entity_config,
    controller_claims_zk_leadership, operator_bumps_ibp, broker_elects_controller,
    controller_becomes_leader, clock_ticks, zk_expires_session, network_drops_message,
    node_crashes, node_restarts)}
