"""Each design variant's flag has exactly the effect its description claims, on the action
it changes: from one concrete state, reached by the same steps under both designs, the one
step is taken under the shipped design and under the variant, and the difference is
asserted.  test_variants.py shows each variant is caught; this file shows what it breaks,
and that no flag is dead (every flag changes some successor in its home configuration)."""
from collections import deque

import pytest

from model import kafka
from model import next as model_next
from model.actions import advertised_version
from model.config import VARIANTS, Design
from model.configs import CONFIGS
from model.state import (BROKER_HEARTBEAT_REQUEST, BROKER_HEARTBEAT_RESPONSE,
                         BROKER_REGISTRATION_REQUEST, BROKER_REGISTRATION_RESPONSE,
                         CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE, ENVELOPE_REQUEST,
                         ENVELOPE_RESPONSE, FORWARD, MUTATION_RECORD, NO_NODE, NO_TIME,
                         REGISTER_BROKER,
                         REGISTER_CONTROLLER, REGISTRATION, REGISTRATION_REQUEST,
                         REGISTRATION_RESPONSE, REPLY_CLIENT, REPLY_ENVELOPE, STATIC_ENDPOINTS,
                         TOPIC_RECORD, UNRESOLVED_ENDPOINTS, EnvelopeRequest, EnvelopeResponse,
                         Event, ForwardItem, MutationRecord, RegistrationItem, Reply, Response,
                         Write)
from model.step import Step

CORRECT = Design()


def S(action, *args):
    return Step(action, tuple(args))


def deliver(action, kind, src, dst):
    """The step delivering the one message of ``kind`` from ``src`` to ``dst`` in flight."""
    def pick(s):
        (m,) = [m for m in s.network if (m.kind, m.src, m.dst) == (kind, src, dst)]
        return Step(action, (tuple(m),))
    return pick


def reach(cfg, design, steps):
    s = model_next.initial_state(cfg)
    for st in steps:
        st = st(s) if callable(st) else st
        t = model_next.step(s, cfg, design, st)
        assert t is not None, f"{st} is not enabled"
        s = t
    return s


def both(config, variant, prefix, action):
    """(state before, successor under the shipped design, successor under the variant): the
    prefix reaches the same state under both designs, so only ``action`` can differ."""
    cfg = CONFIGS[config]
    bad = VARIANTS[variant].design
    pre = reach(cfg, CORRECT, prefix)
    assert reach(cfg, bad, prefix) == pre, "the prefix already differs: not one action's effect"
    st = action(pre) if callable(action) else action
    return pre, model_next.step(pre, cfg, CORRECT, st), model_next.step(pre, cfg, bad, st)


def new_msgs(before, after):
    return sorted(after.network - before.network)


def lidx(config, name):
    return CONFIGS[config].listener_index(name)


def pidx(config, principal):
    return CONFIGS[config].principal_names.index(principal)


# ------------------------------------------------------------------------------------------
# zk-forward-zombie: B1 controller, B2 forwards A1's CreateTopics

ZK_FORWARD = [S("client_sends_request", 0), S("channel_discovers_controller", 1),
              S("channel_sends_request", 1)]
TO_B1 = deliver("controller_handles_envelope", ENVELOPE_REQUEST, 1, 0)


def effect_election_keeps_epoch():
    """B1's session expired and B2 is elected: shipped, /controller_epoch moves to 2 and
    ZooKeeper records B2 as its holder; the variant rewrites epoch 1 (the zkVersion still
    moves) and records B2 as the holder of epoch 1, which B1 still acts as controller of."""
    pre, good, bad = both("zk-forward-zombie", "election-keeps-epoch",
                          [S("zk_expires_session", 0)], S("broker_elects_controller", 1))
    assert pre.zk.epoch_holders == (NO_NODE, 0)
    assert (good.zk.epoch, good.zk.epoch_version, good.zk.epoch_holders) == (2, 2, (NO_NODE, 0, 1))
    assert (bad.zk.epoch, bad.zk.epoch_version, bad.zk.epoch_holders) == (1, 2, (NO_NODE, 1))
    assert good.nodes[1].zk_epoch == 2 and bad.nodes[1].zk_epoch == 1
    assert bad.nodes[0].zk_active and bad.nodes[0].zk_epoch == 1


def effect_brokers_write_zk_under_controller_epoch():
    """B2, not the controller, gets A1's CreateTopics: shipped, it queues it for forwarding;
    the variant writes ZooKeeper itself under a CheckOp on the current epoch, so its write
    carries epoch 1, whose holder ZooKeeper records as B1."""
    pre, good, bad = both("zk-forward-zombie", "brokers-write-zk-under-controller-epoch", [],
                          S("client_sends_request", 0))
    assert good.zk.writes == () and good.clients[0].forwarded
    assert bad.zk.writes == (Write(0, 1, 1, 1, False, False, False, zk_holder=0),)
    assert bad.clients[0].responses == (Response(kafka.NONE),)


def effect_zombie_writes_unfenced():
    """The deposed B1 runs its queued write after B2 won epoch 2: shipped, the CheckOp on
    the /controller_epoch zkVersion fails, nothing is written and B1 resigns answering
    NOT_CONTROLLER; the variant writes under the stale epoch and answers NONE."""
    pre, good, bad = both("zk-forward-zombie", "zombie-writes-unfenced",
                          ZK_FORWARD + [S("zk_expires_session", 0), TO_B1,
                                        S("broker_elects_controller", 1)],
                          S("controller_processes_event", 0))
    assert pre.nodes[0].zk_active and pre.nodes[0].zk_epoch_version == 1
    assert pre.zk.epoch_version == 2
    assert good.zk.writes == ()
    assert not good.nodes[0].zk_active and good.nodes[0].zk_epoch == -1
    internal = lidx("zk-forward-zombie", "INTERNAL")
    assert new_msgs(pre, good) == [
        EnvelopeResponse(ENVELOPE_RESPONSE, 0, 1, internal, 0, kafka.NOT_CONTROLLER, kafka.NONE)]
    assert bad.zk.writes == (Write(req=0, writer=0, writer_epoch=1, zk_epoch=2,
                                   via_envelope=True, privileged=True,
                                   sender_cluster_action=True, zk_holder=1),)
    assert bad.nodes[0].zk_active and bad.nodes[0].zk_epoch == 1
    assert new_msgs(pre, bad) == [
        EnvelopeResponse(ENVELOPE_RESPONSE, 0, 1, internal, 0, kafka.NONE, kafka.NONE)]


def effect_brokers_write_zk():
    """B2, not the controller, gets A1's CreateTopics: shipped, it queues it for forwarding;
    the variant writes ZooKeeper itself (no controller epoch) and answers NONE at once."""
    pre, good, bad = both("zk-forward-zombie", "brokers-write-zk", [],
                          S("client_sends_request", 0))
    assert good.zk.writes == () and good.clients[0].responses == ()
    assert good.clients[0].forwarded
    assert good.nodes[1].channel.queue == (ForwardItem(FORWARD, 0, 0, False),)
    assert bad.zk.writes == (Write(0, 1, -1, 1, False, False, False, zk_holder=0),)
    assert bad.clients[0].responses == (Response(kafka.NONE),)
    assert not bad.clients[0].forwarded and bad.nodes[1].channel.queue == ()


def effect_reforward_forwarded():
    """B1 resigned and knows B2 is the controller when B2's EnvelopeRequest arrives:
    shipped, it answers NOT_CONTROLLER; the variant forwards it again to B2, hop 2."""
    pre, good, bad = both("zk-forward-zombie", "reforward-forwarded",
                          ZK_FORWARD + [S("zk_expires_session", 0),
                                        S("broker_elects_controller", 1),
                                        S("broker_handles_session_expiry", 0)],
                          TO_B1)
    assert not pre.nodes[0].zk_active and pre.nodes[0].known_controller == 1
    internal = lidx("zk-forward-zombie", "INTERNAL")
    assert new_msgs(pre, good) == [
        EnvelopeResponse(ENVELOPE_RESPONSE, 0, 1, internal, 0, kafka.NOT_CONTROLLER, kafka.NONE)]
    assert new_msgs(pre, bad) == [
        EnvelopeRequest(ENVELOPE_REQUEST, 0, 1, internal, 0, 7, 2,
                        pidx("zk-forward-zombie", "broker"))]


def effect_not_controller_unanswered():
    """B1 resigned when B2's EnvelopeRequest arrives: shipped, it answers NOT_CONTROLLER (and
    B2 re-queues at once); the variant consumes the request and sends nothing, so B2's item
    stays in flight until its network timeout."""
    pre, good, bad = both("zk-forward-zombie", "not-controller-unanswered",
                          ZK_FORWARD + [S("zk_expires_session", 0),
                                        S("broker_elects_controller", 1),
                                        S("broker_handles_session_expiry", 0)],
                          TO_B1)
    assert not pre.nodes[0].zk_active
    internal = lidx("zk-forward-zombie", "INTERNAL")
    assert new_msgs(pre, good) == [
        EnvelopeResponse(ENVELOPE_RESPONSE, 0, 1, internal, 0, kafka.NOT_CONTROLLER, kafka.NONE)]
    assert new_msgs(pre, bad) == [] and len(bad.network) == len(pre.network) - 1
    assert bad.nodes[1].channel.inflight == pre.nodes[1].channel.inflight
    assert bad.clients == pre.clients and bad.nodes == pre.nodes


def effect_expire_drops_queued_events():
    """B1's session expired after it queued A1's forwarded write: shipped, the event stays and,
    once B1 has resigned, runs and answers NOT_CONTROLLER; the variant clears B1's queue when
    B1 handles the expiry (KAFKA-10193), so nobody will answer B2's envelope."""
    pre, good, bad = both("zk-forward-zombie", "expire-drops-queued-events",
                          ZK_FORWARD + [S("zk_expires_session", 0), TO_B1],
                          S("broker_handles_session_expiry", 0))
    assert len(pre.nodes[0].events) == 1
    assert len(good.nodes[0].events) == 1 and not good.nodes[0].zk_active
    assert bad.nodes[0].events == () and not bad.nodes[0].zk_active


# ------------------------------------------------------------------------------------------
# kraft-forward-leader-change: B1 forwards A1's CreateTopics; C1 leads, C2/C3 (v5) can take over

KRAFT_FORWARD = [S("client_sends_request", 0), S("channel_discovers_controller", 0),
                 S("channel_sends_request", 0)]
TO_C1 = deliver("controller_handles_envelope", ENVELOPE_REQUEST, 0, 1)


def effect_not_controller_inside_ok_envelope():
    """C1 lost the leadership to C2 when B1's envelope arrives: shipped, NOT_CONTROLLER is
    the envelope's own error and B1 re-queues and forgets C1; the variant wraps it in an
    envelope marked NONE, so B1 hands NOT_CONTROLLER to the client and keeps C1."""
    pre, good, bad = both("kraft-forward-leader-change", "not-controller-inside-ok-envelope",
                          KRAFT_FORWARD + [S("controller_becomes_leader", 2)], TO_C1)
    ctl = lidx("kraft-forward-leader-change", "CONTROLLER")
    assert new_msgs(pre, good) == [
        EnvelopeResponse(ENVELOPE_RESPONSE, 1, 0, ctl, 0, kafka.NOT_CONTROLLER, kafka.NONE)]
    assert new_msgs(pre, bad) == [
        EnvelopeResponse(ENVELOPE_RESPONSE, 1, 0, ctl, 0, kafka.NONE, kafka.NOT_CONTROLLER)]
    cfg, variant = CONFIGS["kraft-forward-leader-change"], VARIANTS[
        "not-controller-inside-ok-envelope"].design
    answer = deliver("broker_handles_envelope_response", ENVELOPE_RESPONSE, 1, 0)
    good = model_next.step(good, cfg, CORRECT, answer(good))
    bad = model_next.step(bad, cfg, variant, answer(bad))
    assert good.clients[0].responses == ()
    assert good.nodes[0].channel.cached == NO_NODE
    assert good.nodes[0].channel.queue[0].requeued
    assert bad.clients[0].responses == (Response(kafka.NOT_CONTROLLER),)
    assert bad.nodes[0].channel.cached == 1 and 1 in bad.nodes[0].not_controller_from


def effect_not_controller_wrapped_as_unknown():
    """C1 lost the leadership to C3 when B1's envelope arrives: shipped, NOT_CONTROLLER is the
    envelope's own error (B1 re-queues); the variant answers NONE with an inner
    UNKNOWN_SERVER_ERROR (KAFKA-14167), which B1 hands to the client."""
    pre, good, bad = both("kraft-forward-leader-change", "not-controller-wrapped-as-unknown",
                          KRAFT_FORWARD + [S("controller_becomes_leader", 3)], TO_C1)
    ctl = lidx("kraft-forward-leader-change", "CONTROLLER")
    assert new_msgs(pre, good) == [
        EnvelopeResponse(ENVELOPE_RESPONSE, 1, 0, ctl, 0, kafka.NOT_CONTROLLER, kafka.NONE)]
    assert new_msgs(pre, bad) == [
        EnvelopeResponse(ENVELOPE_RESPONSE, 1, 0, ctl, 0, kafka.NONE,
                         kafka.UNKNOWN_SERVER_ERROR)]


def effect_forward_without_deadline():
    """A1's request has been queued on B1's channel for the retry timeout: shipped, the
    channel drops it with REQUEST_TIMED_OUT and the clock waits for that; the variant never
    times it out and lets the clock run past the deadline."""
    cfg = CONFIGS["kraft-forward-leader-change"]
    variant = VARIANTS["forward-without-deadline"].design
    prefix = [S("client_sends_request", 0), S("clock_ticks"), S("clock_ticks")]
    pre, good, bad = both("kraft-forward-leader-change", "forward-without-deadline", prefix,
                          S("channel_times_out_request", 0))
    assert pre.now == cfg.forward_timeout and pre.nodes[0].channel.queue[0].created == 0
    assert good.clients[0].responses == (Response(kafka.REQUEST_TIMED_OUT),)
    assert good.nodes[0].channel.queue == ()
    assert bad is None
    assert model_next.step(pre, cfg, CORRECT, S("clock_ticks")) is None
    later = model_next.step(pre, cfg, variant, S("clock_ticks"))
    assert later.now == cfg.forward_timeout + 1
    assert later.nodes[0].channel.queue == pre.nodes[0].channel.queue


def effect_ack_before_commit():
    """C1 accepts B1's envelope: shipped, the record waits uncommitted with the reply
    attached and nothing is answered yet; the variant answers NONE at once and the record
    carries no reply.  In ZK mode the queued event is marked answered and NONE goes back
    before the write."""
    pre, good, bad = both("kraft-forward-leader-change", "ack-before-commit", KRAFT_FORWARD,
                          TO_C1)
    ctl = lidx("kraft-forward-leader-change", "CONTROLLER")
    record = MutationRecord(MUTATION_RECORD, 0, 0, 1, 1, True, True)
    assert good.quorum.uncommitted == ((record, Reply(REPLY_ENVELOPE, 0, 0, ctl, 1)),)
    assert new_msgs(pre, good) == []
    assert bad.quorum.uncommitted == ((record, ()),)
    assert new_msgs(pre, bad) == [
        EnvelopeResponse(ENVELOPE_RESPONSE, 1, 0, ctl, 0, kafka.NONE, kafka.NONE)]
    # ZK mode: the controller's event
    pre, good, bad = both("zk-forward-zombie", "ack-before-commit", ZK_FORWARD, TO_B1)
    internal = lidx("zk-forward-zombie", "INTERNAL")
    reply = Reply(REPLY_ENVELOPE, 1, 0, internal, 1)
    assert good.nodes[0].events == (Event(0, reply, True, True, True, False),)
    assert new_msgs(pre, good) == []
    assert bad.nodes[0].events == (Event(0, reply, True, True, True, True),)
    assert new_msgs(pre, bad) == [
        EnvelopeResponse(ENVELOPE_RESPONSE, 0, 1, internal, 0, kafka.NONE, kafka.NONE)]


def effect_versions_not_intersected():
    """B1 has connected to C2 (API max v5): shipped, it advertises min(v7, v5) = v5, so the
    next client uses v5; the variant advertises its own v7."""
    prefix = [S("controller_becomes_leader", 2), S("broker_learns_controller", 0)] + KRAFT_FORWARD
    pre, good, bad = both("kraft-forward-leader-change", "versions-not-intersected", prefix,
                          S("clock_ticks"))
    cfg = CONFIGS["kraft-forward-leader-change"]
    variant = VARIANTS["versions-not-intersected"].design
    assert pre.nodes[0].ctrl_versions == 5
    assert advertised_version(pre, cfg, CORRECT, 0) == 5
    assert advertised_version(pre, cfg, variant, 0) == 7
    # the action it changes: a client's request after that (kraft-small: U1 also uses B1)
    small = CONFIGS["kraft-small"]
    pre = reach(small, CORRECT, prefix)
    assert reach(small, variant, prefix) == pre
    good = model_next.step(pre, small, CORRECT, S("client_sends_request", 1))
    bad = model_next.step(pre, small, variant, S("client_sends_request", 1))
    assert good.clients[1].version == 5 and bad.clients[1].version == 7


# ------------------------------------------------------------------------------------------
# kraft-registration: C1 leads and is registered; C2 registers

REGISTER_C2 = [S("node_replays_record", 1), S("controller_sends_registration", 1),
               S("channel_discovers_controller", 1), S("channel_sends_request", 1),
               deliver("controller_handles_registration", REGISTRATION_REQUEST, 1, 0),
               S("controller_commits_records")]


def effect_registration_trusts_response():
    """C2 gets NONE for its registration: shipped, it only clears the pending RPC and waits
    for its RegisterControllerRecord, and believes it is registered once it replays it; the
    variant marks itself registered on the response and ignores the record."""
    answer = deliver("controller_handles_registration_response", REGISTRATION_RESPONSE, 0, 1)
    pre, good, bad = both("kraft-registration", "registration-trusts-response", REGISTER_C2,
                          answer)
    assert pre.nodes[1].replayed == 1 and pre.nodes[1].pending_rpc
    assert not good.nodes[1].registered_in_log and not good.nodes[1].pending_rpc
    assert bad.nodes[1].registered_in_log and not bad.nodes[1].pending_rpc
    # replaying its own record (offset 2, after C1's at offset 1)
    pre, good, bad = both("kraft-registration", "registration-trusts-response",
                          REGISTER_C2 + [S("node_replays_record", 1)],
                          S("node_replays_record", 1))
    rec = pre.quorum.log[pre.nodes[1].replayed]
    assert (rec.controller_id, rec.incarnation_id) == (1, 0)
    assert good.nodes[1].registered_in_log and good.nodes[1].send_requested
    assert not bad.nodes[1].registered_in_log and not bad.nodes[1].send_requested


def effect_registration_pending_stuck():
    """C2's queued registration times out: shipped, the manager clears the pending RPC,
    backs off and registers again at the retry; the variant keeps the RPC pending, so the
    retry never sends."""
    cfg = CONFIGS["kraft-registration"]
    variant = VARIANTS["registration-pending-stuck"].design
    prefix = [S("node_replays_record", 1), S("controller_sends_registration", 1),
              S("clock_ticks")]
    pre, good, bad = both("kraft-registration", "registration-pending-stuck", prefix,
                          S("channel_times_out_request", 1))
    assert pre.nodes[1].pending_rpc and pre.nodes[1].channel.queue
    assert not good.nodes[1].pending_rpc and good.nodes[1].retry_at == 2
    assert bad.nodes[1].pending_rpc and bad.nodes[1].retry_at == 2
    assert good.nodes[1].channel == bad.nodes[1].channel
    good = model_next.step(good, cfg, CORRECT, S("clock_ticks"))
    bad = model_next.step(bad, cfg, variant, S("clock_ticks"))
    retried = model_next.step(good, cfg, CORRECT, S("controller_sends_registration", 1))
    assert retried.nodes[1].channel.queue == (RegistrationItem(REGISTRATION, 0, 2, False),)
    assert model_next.step(bad, cfg, variant, S("controller_sends_registration", 1)) is None


def effect_registration_no_recheck_after_success():
    """C2 replayed its own RegisterControllerRecord (a delta touching its registration)
    while its RPC is still pending: shipped, the check waits for the RPC to complete; Kafka
    3.7.0-3.8.0 and trunk (the finding) runs it at once and drops it, sending nothing."""
    prefix = REGISTER_C2 + [S("node_replays_record", 1), S("node_replays_record", 1)]
    pre, good, bad = both("kraft-registration", "registration-no-recheck-after-success",
                          prefix, S("controller_sends_registration", 1))
    node = pre.nodes[1]
    assert node.pending_rpc and node.send_requested and node.registered_in_log
    assert good is None
    assert not bad.nodes[1].send_requested and bad.nodes[1].pending_rpc
    assert bad.nodes[1].channel == node.channel and bad.network == pre.network


def effect_registration_never_confirmed():
    """C2 replays its own RegisterControllerRecord: shipped, it believes it is registered
    and queues the send check (R-8); the variant ignores a record naming its own
    incarnation: nothing changes."""
    pre, good, bad = both("kraft-registration", "registration-never-confirmed",
                          REGISTER_C2 + [S("node_replays_record", 1)],
                          S("node_replays_record", 1))
    rec = pre.quorum.log[pre.nodes[1].replayed]
    assert (rec.controller_id, rec.incarnation_id) == (1, 0)
    assert good.nodes[1].registered_in_log and good.nodes[1].send_requested
    assert not bad.nodes[1].registered_in_log and not bad.nodes[1].send_requested
    assert bad.nodes[1].replayed == good.nodes[1].replayed == pre.nodes[1].replayed + 1


def effect_registration_bumps_same_incarnation():
    """C2's registration (incarnation 0) is committed but C1 crashes before answering; C2
    becomes the active controller and its channel resends the same request to itself:
    shipped, the record copies the request's incarnation (R-15); the variant records the next
    one, an incarnation C2 never ran."""
    prefix = REGISTER_C2 + [S("node_crashes", 0), S("controller_becomes_leader", 1),
                            S("channel_discovers_controller", 1), S("channel_sends_request", 1)]
    pre, good, bad = both("kraft-registration-leader-change",
                          "registration-bumps-same-incarnation", prefix,
                          deliver("controller_handles_registration", REGISTRATION_REQUEST, 1, 1))
    assert [(r.controller_id, r.incarnation_id) for r in pre.quorum.log
            if r.kind == REGISTER_CONTROLLER][-1] == (1, 0)
    assert pre.nodes[1].incarnation == 0
    assert [(r.controller_id, r.incarnation_id) for r, _ in good.quorum.uncommitted] == [(1, 0)]
    assert [(r.controller_id, r.incarnation_id) for r, _ in bad.quorum.uncommitted] == [(1, 1)]
    assert bad.network == good.network and bad.nodes == good.nodes


def effect_describe_controllers_from_voters():
    """D2 asks C1 for the controllers before C2 has registered: shipped, C1 answers from the
    registrations it has replayed (R-21), its own only; the variant answers from the static
    voters list, so C2 is listed too."""
    cfg = CONFIGS["kraft-listeners"]
    c = next(i for i, spec in enumerate(cfg.clients)
             if spec.endpoint_type == kafka.ENDPOINT_CONTROLLER
             and cfg.allows(spec.principal, kafka.ALTER_CLUSTER))
    pre, good, bad = both("kraft-listeners", "describe-controllers-from-voters", [],
                          S("client_sends_request", c))
    (g,), (b,) = good.clients[c].responses, bad.clients[c].responses
    assert g.code == b.code == kafka.NONE
    assert {node for node, _, _ in g.endpoints} < {node for node, _, _ in b.endpoints}
    assert {node for node, _, _ in b.endpoints} == set(cfg.controllers())


def effect_controller_describe_without_alter():
    """A principal without ALTER on CLUSTER asks a controller for the controllers: shipped,
    CLUSTER_AUTHORIZATION_FAILED (D-1.2); the variant answers it with the endpoints."""
    cfg = CONFIGS["kraft-listeners"]
    c = next(i for i, spec in enumerate(cfg.clients)
             if spec.endpoint_type == kafka.ENDPOINT_CONTROLLER
             and cfg.nodes[spec.node].role == "controller"
             and not cfg.allows(spec.principal, kafka.ALTER_CLUSTER))
    pre, good, bad = both("kraft-listeners", "controller-describe-without-alter", [],
                          S("client_sends_request", c))
    (g,), (b,) = good.clients[c].responses, bad.clients[c].responses
    assert g.code == kafka.CLUSTER_AUTHORIZATION_FAILED and not g.endpoints
    assert b.code == kafka.NONE and b.endpoints


def effect_registration_without_deadline():
    """C2's queued registration reaches its retry timeout with the leader gone: shipped, the
    channel drops it (R-6: the manager backs off); the variant has no retry timeout, so no
    timeout step is enabled and the clock cannot move past it either."""
    cfg = CONFIGS["kraft-registration-leader-loss"]
    variant = VARIANTS["registration-without-deadline"].design
    prefix = [S("node_replays_record", 1), S("controller_sends_registration", 1),
              S("node_crashes", 0), S("clock_ticks")]
    pre = reach(cfg, CORRECT, prefix)
    assert reach(cfg, variant, prefix) == pre
    assert pre.nodes[1].pending_rpc and pre.nodes[1].channel.queue
    good = model_next.step(pre, cfg, CORRECT, S("channel_times_out_request", 1))
    bad = model_next.step(pre, cfg, variant, S("channel_times_out_request", 1))
    assert good is not None and not good.nodes[1].pending_rpc and good.nodes[1].retry_at == 2
    assert bad is None


# ------------------------------------------------------------------------------------------
# ------------------------------------------------------------------------------------------
# zk-envelope-security: B1 controller; U1 (no ACLs) via B2; A1 via B3 (no CLUSTER_ACTION);
# F1 writes its own EnvelopeRequest on B1's CLIENT listener


def effect_envelope_any_listener():
    """F1's EnvelopeRequest arrives on B1's CLIENT listener: shipped, B1 closes the
    connection; the variant accepts it and queues the write, marked not privileged."""
    pre, good, bad = both("zk-envelope-security", "envelope-any-listener", [],
                          S("client_sends_request", 2))
    client = lidx("zk-envelope-security", "CLIENT")
    assert good.clients[2].responses == (Response(kafka.NETWORK_EXCEPTION),)
    assert good.nodes[0].events == ()
    assert bad.clients[2].responses == ()
    assert bad.nodes[0].events == (Event(2, Reply(REPLY_CLIENT, 2, 2, client), True, False, True,
                                         False),)


def effect_authorize_as_forwarder():
    """U1 (principal user, no ACLs) forwarded by B2: shipped, B1 authorizes the inner
    request as user and answers TOPIC_AUTHORIZATION_FAILED inside an OK envelope; the
    variant authorizes it as B2's principal broker and queues the write."""
    prefix = [S("client_sends_request", 0), S("channel_discovers_controller", 1),
              S("channel_sends_request", 1)]
    pre, good, bad = both("zk-envelope-security", "authorize-as-forwarder", prefix,
                          deliver("controller_handles_envelope", ENVELOPE_REQUEST, 1, 0))
    internal = lidx("zk-envelope-security", "INTERNAL")
    assert new_msgs(pre, good) == [
        EnvelopeResponse(ENVELOPE_RESPONSE, 0, 1, internal, 0, kafka.NONE,
                         kafka.TOPIC_AUTHORIZATION_FAILED)]
    assert good.nodes[0].events == ()
    assert new_msgs(pre, bad) == []
    assert bad.nodes[0].events == (Event(0, Reply(REPLY_ENVELOPE, 1, 0, internal, 1), True,
                                         True, True, False),)


def effect_leak_envelope_error():
    """B3's envelope for A1 failed with CLUSTER_AUTHORIZATION_FAILED (B3's principal lacks
    CLUSTER_ACTION): shipped, A1 gets UNKNOWN_SERVER_ERROR; the variant hands A1 the
    envelope's own error."""
    prefix = [S("client_sends_request", 1), S("channel_discovers_controller", 2),
              S("channel_sends_request", 2),
              deliver("controller_handles_envelope", ENVELOPE_REQUEST, 2, 0)]
    pre, good, bad = both("zk-envelope-security", "leak-envelope-error", prefix,
                          deliver("broker_handles_envelope_response", ENVELOPE_RESPONSE, 0, 2))
    err = kafka.CLUSTER_AUTHORIZATION_FAILED
    assert good.clients[1].responses == (Response(kafka.UNKNOWN_SERVER_ERROR, envelope_error=err),)
    assert bad.clients[1].responses == (Response(err, envelope_error=err),)


# ------------------------------------------------------------------------------------------
# kraft-listeners


def _describe_on_kraft_listeners(variant):
    """D1 asks B1, on CLIENT, for broker endpoints: the endpoints each design answers with, and
    the CLIENT and INTERNAL listener indices.  Shipped, only B1's CLIENT endpoint: B2 has no
    CLIENT listener and is left out (L-27)."""
    pre, good, bad = both("kraft-listeners", variant, [], S("client_sends_request", 0))
    client, internal = lidx("kraft-listeners", "CLIENT"), lidx("kraft-listeners", "INTERNAL")
    (g,), (b,) = good.clients[0].responses, bad.clients[0].responses
    assert g.code == b.code == kafka.NONE
    assert g.endpoints == {(0, client, STATIC_ENDPOINTS)}
    return b.endpoints, client, internal


def effect_metadata_all_listeners():
    """The variant lists every listener of every broker."""
    bad, client, internal = _describe_on_kraft_listeners("metadata-all-listeners")
    static = STATIC_ENDPOINTS
    assert bad == {(0, client, static), (0, internal, static), (1, internal, static)}


def effect_describe_falls_back_to_other_listener():
    """The variant lists B2 with its INTERNAL endpoint instead, and nothing else changes."""
    bad, client, internal = _describe_on_kraft_listeners("describe-falls-back-to-other-listener")
    assert bad == {(0, client, STATIC_ENDPOINTS), (1, internal, STATIC_ENDPOINTS)}


# ------------------------------------------------------------------------------------------
# kraft-broker-registration


def _reregistered(variant):
    """B2 (registered before the upgrade, broker epoch 1 at offset 1) re-registers its running
    incarnation; C1 handles the request."""
    return both("kraft-broker-registration", variant, [S("broker_sends_registration", 1)],
                deliver("controller_handles_broker_registration", BROKER_REGISTRATION_REQUEST,
                        1, 0))


def effect_broker_reregistration_bumps_epoch():
    """Shipped (3.9, KAFKA-16952): the re-registration of the registered incarnation keeps
    broker epoch 1 and the unfenced state; the variant (3.7, 3.8) gives it the next write
    offset, 2, still unfenced."""
    pre, good, bad = _reregistered("broker-reregistration-bumps-epoch")
    (rec_good, _), = good.quorum.uncommitted
    (rec_bad, _), = bad.quorum.uncommitted
    assert (rec_good.kind, rec_good.incarnation_id, rec_good.broker_epoch, rec_good.fenced) == \
        (REGISTER_BROKER, 0, 1, 0)
    assert (rec_bad.kind, rec_bad.incarnation_id, rec_bad.broker_epoch, rec_bad.fenced) == \
        (REGISTER_BROKER, 0, 2, 0)


def effect_heartbeat_checks_record_offset():
    """After the re-registration (epoch kept at 1, record at offset 2) is committed and
    answered, B2 heartbeats with broker epoch 1: shipped, C1 accepts it (no error, not
    fenced); the variant compares with the record's offset, 2, and answers
    STALE_BROKER_EPOCH."""
    prefix = [S("broker_sends_registration", 1),
              deliver("controller_handles_broker_registration", BROKER_REGISTRATION_REQUEST, 1, 0),
              S("controller_commits_records"),
              deliver("broker_handles_lifecycle_response", BROKER_REGISTRATION_RESPONSE, 0, 1),
              S("broker_sends_heartbeat", 1)]
    pre, good, bad = both("kraft-broker-registration", "heartbeat-checks-record-offset", prefix,
                          deliver("controller_handles_broker_heartbeat", BROKER_HEARTBEAT_REQUEST,
                                  1, 0))
    (g,), (b,) = new_msgs(pre, good), new_msgs(pre, bad)
    assert (g.kind, g.error, g.is_fenced) == (BROKER_HEARTBEAT_RESPONSE, kafka.NONE, 0)
    assert (b.kind, b.error, b.registered_epoch) == (BROKER_HEARTBEAT_RESPONSE,
                                                     kafka.STALE_BROKER_EPOCH, 1)
    assert pre.nodes[1].broker_epoch == 1


# ------------------------------------------------------------------------------------------
# kraft-controller-endpoints, kraft-broker-endpoints


def effect_registers_unresolved_endpoints():
    """C2 (CONTROLLER advertised with a blank host and port 0) sends its registration:
    shipped, with the endpoints its incarnation 0 resolved and bound; the variant sends them as
    configured, unresolved, and C1 copies them into the RegisterControllerRecord."""
    prefix = [S("node_replays_record", 1), S("controller_sends_registration", 1),
              S("channel_discovers_controller", 1)]
    pre, good, bad = both("kraft-controller-endpoints", "registers-unresolved-endpoints", prefix,
                          S("channel_sends_request", 1))
    (g,), (b,) = new_msgs(pre, good), new_msgs(pre, bad)
    assert (g.kind, g.incarnation_id, g.endpoints) == (REGISTRATION_REQUEST, 0, 0)
    assert (b.kind, b.incarnation_id, b.endpoints) == (REGISTRATION_REQUEST, 0,
                                                       UNRESOLVED_ENDPOINTS)
    cfg, bad_design = CONFIGS["kraft-controller-endpoints"], VARIANTS[
        "registers-unresolved-endpoints"].design
    after = model_next.step(bad, cfg, bad_design,
                            Step("controller_handles_registration", (tuple(b),)))
    (rec, _), = after.quorum.uncommitted
    assert (rec.kind, rec.controller_id, rec.endpoints) == (REGISTER_CONTROLLER, 1,
                                                            UNRESOLVED_ENDPOINTS)


def effect_describe_lists_fenced_brokers():
    """B2 registers, fenced until it has caught up, and replays its own RegisterBrokerRecord;
    D1 asks B2 for the brokers: shipped, none is listed (B2's registration is fenced, L-27);
    the variant lists the endpoint B2's incarnation 0 bound."""
    prefix = [S("broker_sends_registration", 1),
              deliver("controller_handles_broker_registration", BROKER_REGISTRATION_REQUEST,
                      1, 0),
              S("controller_commits_records"), S("node_replays_record", 1)]
    pre, good, bad = both("kraft-broker-endpoints", "describe-lists-fenced-brokers", prefix,
                          S("client_sends_request", 0))
    client = lidx("kraft-broker-endpoints", "CLIENT")
    assert good.clients[0].responses == (Response(kafka.NONE, endpoints=frozenset()),)
    assert bad.clients[0].responses == (Response(kafka.NONE, endpoints=frozenset(
        {(1, client, 0)})),)


# ------------------------------------------------------------------------------------------
# zk-broker-registration


def effect_broker_info_not_cached():
    """An operator updates B2's advertised listeners while /brokers/ids/B2 is there: both
    designs rewrite the znode with version 1; shipped (since KAFKA-6573) KafkaController's
    BrokerInfo follows, the variant keeps the startup one (version 0) for the next
    re-registration."""
    pre, good, bad = both("zk-broker-registration", "broker-info-not-cached", [],
                          S("operator_updates_listeners", 1))
    assert good.zk.broker_ids[1] == bad.zk.broker_ids[1] == 1
    assert (good.nodes[1].listeners_version, good.nodes[1].broker_info) == (1, 1)
    assert (bad.nodes[1].listeners_version, bad.nodes[1].broker_info) == (1, 0)


def effect_broker_info_update_races_registration():
    """B2's session expired and its RegisterBrokerAndReelect has sent the create with
    version 0: shipped-by-the-model, the listener update waits for it (serialized); the variant
    (Kafka's config thread) runs now, its SetData finds no znode, and the create then lands
    with version 0."""
    prefix = [S("zk_expires_session", 1), S("broker_handles_session_expiry", 1),
              S("broker_sends_zk_registration", 1)]
    pre, good, bad = both("zk-broker-registration", "broker-info-update-races-registration",
                          prefix, S("operator_updates_listeners", 1))
    assert pre.nodes[1].zk_registering == 0 and pre.zk.broker_ids[1] == -1
    assert good is None
    assert bad.nodes[1].broker_info == 1 and bad.zk.broker_ids[1] == -1
    cfg = CONFIGS["zk-broker-registration"]
    after = model_next.step(bad, cfg, VARIANTS["broker-info-update-races-registration"].design,
                            S("zk_creates_broker_znode", 1))
    assert after.zk.broker_ids[1] == 0 and after.nodes[1].listeners_version == 1


def effect_claims_before_brokers_ready():
    """B2 still runs the old IBP: under the shipped design the KRaft controller C3 waits
    (WAIT_FOR_BROKERS); the variant claims /controller now, with the next epoch."""
    pre, good, bad = both("zk-migration-bounce", "claims-before-brokers-ready", [],
                          S("controller_claims_zk_leadership", 2))
    assert pre.nodes[1].legacy_ibp and pre.zk.controller == 0
    assert good is None
    assert bad.zk.controller == 2 and bad.zk.epoch == pre.zk.epoch + 1
    assert bad.nodes[2].zk_active and bad.zk.epoch_holders[bad.zk.epoch] == 2


def effect_entity_config_write_unchecked():
    """A1's IncrementalAlterConfigs reaches B2, whose cache still names B1, after C3 claimed
    /controller: the shipped broker reads /controller, finds the KRaft controller and refuses
    with STALE_CONTROLLER_EPOCH (MG-6); the variant writes the config at once."""
    pre, good, bad = both("zk-migration", "entity-config-write-unchecked",
                          [S("controller_claims_zk_leadership", 2)], S("client_sends_request", 0))
    assert pre.nodes[1].known_controller == 0 and pre.zk.controller == 2
    assert good.clients[0].responses == (Response(kafka.STALE_CONTROLLER_EPOCH),)
    assert good.zk.writes == ()
    assert bad.clients[0].responses == (Response(kafka.NONE),)
    (w,) = bad.zk.writes
    assert (w.writer, w.zk_holder, w.routed_locally) == (1, 2, True)


def effect_entity_config_check_passes_recreated_controller():
    """B2 read B1's /controller, then C3 re-created it: the shipped (fixed) check fails and
    the client gets STALE_CONTROLLER_EPOCH; Kafka 3.8.0's dataVersion check passes and the
    write lands under C3's epoch."""
    pre, good, bad = both("zk-migration", "entity-config-check-passes-recreated-controller",
                          [S("client_sends_request", 0), S("controller_claims_zk_leadership", 2)],
                          S("broker_writes_entity_config", 1))
    assert pre.nodes[1].config_writes == ((0, 1),) and pre.zk.epoch_version == 2
    assert good.zk.writes == () and good.nodes[1].config_writes == ()
    assert good.clients[0].responses == (Response(kafka.STALE_CONTROLLER_EPOCH),)
    (w,) = bad.zk.writes
    assert (w.writer, w.zk_holder) == (1, 2)
    assert bad.clients[0].responses == (Response(kafka.NONE),)


def effect_internal_topics_bypass_policy():
    """B2's own CreateTopics of __consumer_offsets (for F1's FindCoordinator) reaches C1, whose
    policy refuses that topic: the shipped controller answers POLICY_VIOLATION and appends
    nothing; the variant appends the TopicRecord as if the policy did not apply."""
    pre, good, bad = both("kraft-internal-topics-policy", "internal-topics-bypass-policy",
                          [S("client_sends_request", 0), S("channel_discovers_controller", 1),
                           S("channel_sends_request", 1)],
                          deliver("controller_handles_create_topics", CREATE_TOPICS_REQUEST, 1, 0))
    assert pre.clients[0].responses == (Response(kafka.COORDINATOR_NOT_AVAILABLE),)
    assert good.quorum.uncommitted == ()
    (m,) = new_msgs(pre, good)
    assert (m.kind, m.dst, m.error) == (CREATE_TOPICS_RESPONSE, 1, kafka.POLICY_VIOLATION)
    ((rec, _),) = bad.quorum.uncommitted
    assert rec.kind == TOPIC_RECORD
    assert CONFIGS["kraft-internal-topics-policy"].topic_names[rec.topic] == kafka.CONSUMER_OFFSETS


def effect_auto_create_errors_only_logged():
    """M1's Metadata for 'orders' reaches B2, which lacks the topic: both designs queue the
    CreateTopics for C1 in an Envelope; the shipped broker waits for C1's answer, Kafka 3.8.0
    answers UNKNOWN_TOPIC_OR_PARTITION at once."""
    pre, good, bad = both("kraft-internal-topics", "auto-create-errors-only-logged", [],
                          S("client_sends_request", 2))
    for after in (good, bad):
        (item,) = after.nodes[1].channel.queue
        assert (item.kind, item.client) == (FORWARD, 2)
    assert good.clients[2].responses == ()
    assert bad.clients[2].responses == (Response(kafka.UNKNOWN_TOPIC_OR_PARTITION),)


def effect_registration_ignores_omitted_features():
    """B2's first process run registers with software that omits kraft.version, finalized at
    1: the shipped controller refuses it with UNSUPPORTED_VERSION (KAFKA-17305's fix); the
    variant, Kafka 3.8.0's check of the listed features only, appends its registration."""
    pre, good, bad = both("kraft-broker-features", "registration-ignores-omitted-features",
                          [S("broker_sends_registration", 1)],
                          deliver("controller_handles_broker_registration",
                                  BROKER_REGISTRATION_REQUEST, 1, 0))
    assert pre.nodes[1].incarnation == 0
    assert good.quorum.uncommitted == ()
    (m,) = new_msgs(pre, good)
    assert (m.kind, m.error) == (BROKER_REGISTRATION_RESPONSE, kafka.UNSUPPORTED_VERSION)
    ((rec, _),) = bad.quorum.uncommitted
    assert (rec.kind, rec.broker_id, rec.incarnation_id) == (REGISTER_BROKER, 1, 0)
    assert new_msgs(pre, bad) == []


def effect_activation_leaves_sessions_untracked():
    """C2 becomes the active controller while B3's registration is committed: the shipped
    controller starts B3's session at the current time (BR-13), so its fence timer can later
    fence a B3 that never heartbeats; the variant (KAFKA-18138) leaves B3 with no contact time,
    which the fence timer skips."""
    pre, good, bad = both("kraft-broker-failover", "activation-leaves-sessions-untracked",
                          [S("clock_ticks")], S("controller_becomes_leader", 1))
    assert any(r.kind == REGISTER_BROKER and r.broker_id == 2 for r in pre.quorum.log)
    assert (pre.now, pre.nodes[2].hb_contact) == (1, 0)     # C1's session for B3, from time 0
    assert good.quorum.leader == bad.quorum.leader == 1
    assert good.nodes[2].hb_contact == 1                     # C2's fresh session
    assert bad.nodes[2].hb_contact == NO_TIME


def effect_registration_raises_zero_min_version():
    """B2's software supports kraft.version 0..1 and C1 has it finalized at 0: the shipped
    controller appends B2's registration; the variant reads the range as starting at 1 and
    refuses it with UNSUPPORTED_VERSION (KAFKA-17492)."""
    pre, good, bad = both("kraft-broker-features-v0", "registration-raises-zero-min-version",
                          [S("broker_sends_registration", 1)],
                          deliver("controller_handles_broker_registration",
                                  BROKER_REGISTRATION_REQUEST, 1, 0))
    ((rec, _),) = good.quorum.uncommitted
    assert (rec.kind, rec.broker_id) == (REGISTER_BROKER, 1)
    assert new_msgs(pre, good) == []
    assert bad.quorum.uncommitted == ()
    (m,) = new_msgs(pre, bad)
    assert (m.kind, m.error) == (BROKER_REGISTRATION_RESPONSE, kafka.UNSUPPORTED_VERSION)


def effect_unfence_waits_for_committed_offset():
    """B2 re-registers (its record at offset 2), its session runs out and C1 fences it (offset
    3, committed); B2, having replayed its own record, heartbeats with metadata offset 2: the
    shipped controller unfences it (BH-7: caught up to its registration); the variant waits
    for the last committed offset, 3, and leaves it fenced."""
    prefix = [S("broker_sends_registration", 1),
              deliver("controller_handles_broker_registration", BROKER_REGISTRATION_REQUEST, 1, 0),
              S("clock_ticks"), S("clock_ticks"), S("controller_fences_stale_broker", 1),
              S("controller_commits_records"),
              deliver("broker_handles_lifecycle_response", BROKER_REGISTRATION_RESPONSE, 0, 1),
              S("node_replays_record", 1), S("broker_sends_heartbeat", 1)]
    pre, good, bad = both("kraft-broker-registration", "unfence-waits-for-committed-offset",
                          prefix, deliver("controller_handles_broker_heartbeat",
                                          BROKER_HEARTBEAT_REQUEST, 1, 0))
    (hb,) = [m for m in pre.network if m.kind == BROKER_HEARTBEAT_REQUEST]
    assert (hb.metadata_offset, len(pre.quorum.log)) == (2, 4)
    ((rec, _),) = good.quorum.uncommitted
    assert (rec.broker_id, rec.fenced) == (1, -1)           # UNFENCED
    assert bad.quorum.uncommitted == ()
    (b,) = new_msgs(pre, bad)
    assert (b.kind, b.error, b.is_fenced) == (BROKER_HEARTBEAT_RESPONSE, kafka.NONE, 1)


def effect_create_topic_policy_ignored():
    """M1's auto-creation of 'orders' reaches C1 in B2's Envelope: shipped, the policy refuses
    it (POLICY_VIOLATION inside an envelope marked NONE); the variant appends its record."""
    pre, good, bad = both("kraft-internal-topics", "create-topic-policy-ignored",
                          [S("client_sends_request", 2), S("channel_discovers_controller", 1),
                           S("channel_sends_request", 1)],
                          deliver("controller_handles_envelope", ENVELOPE_REQUEST, 1, 0))
    assert good.quorum.uncommitted == ()
    (m,) = new_msgs(pre, good)
    assert (m.kind, m.dst, m.error, m.inner_error) == (ENVELOPE_RESPONSE, 1, kafka.NONE,
                                                       kafka.POLICY_VIOLATION)
    ((rec, _),) = bad.quorum.uncommitted
    assert (rec.kind, rec.client) == (MUTATION_RECORD, 2)


def effect_principal_serde_not_required():
    """A1 sends CreateTopics to B1, whose principal builder is not a KafkaPrincipalSerde:
    shipped (the configuration check of KAFKA-13051 guarantees a serde), B1 queues it on its
    controller channel to forward; the variant fails buildEnvelopeRequest (F-12) and A1 gets
    UNKNOWN_SERVER_ERROR at once."""
    pre, good, bad = both("kraft-forwarder-without-serde", "principal-serde-not-required", [],
                          S("client_sends_request", 0))
    assert good.clients[0].responses == () and len(good.nodes[0].channel.queue) == 1
    assert bad.clients[0].responses == (Response(kafka.UNKNOWN_SERVER_ERROR),)
    assert bad.nodes[0].channel.queue == ()


def effect_leader_liveness_of_local_broker():
    """B3, which leads 'orders' and has CLIENT, crashes; M1 asks B2 on CLIENT for 'orders':
    shipped, the leader is down, LEADER_NOT_AVAILABLE (L-28); the variant looks at B2's own
    liveness and says LISTENER_NOT_FOUND.  With B3 up both list B3's CLIENT endpoint."""
    up, good_up, bad_up = both("kraft-metadata-leaders", "leader-liveness-of-local-broker", [],
                               S("client_sends_request", 0))
    assert good_up.clients[0].responses == bad_up.clients[0].responses
    assert good_up.clients[0].responses[0].endpoints
    pre, good, bad = both("kraft-metadata-leaders", "leader-liveness-of-local-broker",
                          [S("node_crashes", 2)], S("client_sends_request", 0))
    assert good.clients[0].responses == (Response(kafka.LEADER_NOT_AVAILABLE),)
    assert bad.clients[0].responses == (Response(kafka.LISTENER_NOT_FOUND),)


EFFECTS = {
    "zombie-writes-unfenced": effect_zombie_writes_unfenced,
    "brokers-write-zk": effect_brokers_write_zk,
    "reforward-forwarded": effect_reforward_forwarded,
    "not-controller-inside-ok-envelope": effect_not_controller_inside_ok_envelope,
    "forward-without-deadline": effect_forward_without_deadline,
    "registration-trusts-response": effect_registration_trusts_response,
    "registration-pending-stuck": effect_registration_pending_stuck,
    "envelope-any-listener": effect_envelope_any_listener,
    "authorize-as-forwarder": effect_authorize_as_forwarder,
    "metadata-all-listeners": effect_metadata_all_listeners,
    "ack-before-commit": effect_ack_before_commit,
    "leak-envelope-error": effect_leak_envelope_error,
    "versions-not-intersected": effect_versions_not_intersected,
    "registration-no-recheck-after-success": effect_registration_no_recheck_after_success,
    "registration-without-deadline": effect_registration_without_deadline,
    "election-keeps-epoch": effect_election_keeps_epoch,
    "brokers-write-zk-under-controller-epoch": effect_brokers_write_zk_under_controller_epoch,
    "registration-never-confirmed": effect_registration_never_confirmed,
    "describe-controllers-from-voters": effect_describe_controllers_from_voters,
    "controller-describe-without-alter": effect_controller_describe_without_alter,
    "not-controller-unanswered": effect_not_controller_unanswered,
    "not-controller-wrapped-as-unknown": effect_not_controller_wrapped_as_unknown,
    "expire-drops-queued-events": effect_expire_drops_queued_events,
    "create-topic-policy-ignored": effect_create_topic_policy_ignored,
    "registration-bumps-same-incarnation": effect_registration_bumps_same_incarnation,
    "broker-reregistration-bumps-epoch": effect_broker_reregistration_bumps_epoch,
    "heartbeat-checks-record-offset": effect_heartbeat_checks_record_offset,
    "registers-unresolved-endpoints": effect_registers_unresolved_endpoints,
    "describe-lists-fenced-brokers": effect_describe_lists_fenced_brokers,
    "broker-info-not-cached": effect_broker_info_not_cached,
    "broker-info-update-races-registration": effect_broker_info_update_races_registration,
    "claims-before-brokers-ready": effect_claims_before_brokers_ready,
    "entity-config-write-unchecked": effect_entity_config_write_unchecked,
    "entity-config-check-passes-recreated-controller":
        effect_entity_config_check_passes_recreated_controller,
    "internal-topics-bypass-policy": effect_internal_topics_bypass_policy,
    "auto-create-errors-only-logged": effect_auto_create_errors_only_logged,
    "registration-ignores-omitted-features": effect_registration_ignores_omitted_features,
    "activation-leaves-sessions-untracked": effect_activation_leaves_sessions_untracked,
    "registration-raises-zero-min-version": effect_registration_raises_zero_min_version,
    "unfence-waits-for-committed-offset": effect_unfence_waits_for_committed_offset,
    "principal-serde-not-required": effect_principal_serde_not_required,
    "describe-falls-back-to-other-listener": effect_describe_falls_back_to_other_listener,
    "leader-liveness-of-local-broker": effect_leader_liveness_of_local_broker,
}


def test_every_variant_has_an_effect_test():
    assert set(EFFECTS) == set(VARIANTS)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_variant_effect(name):
    EFFECTS[name]()


def first_difference(cfg, design, limit=20000):
    """A state reachable under the shipped design whose successors differ under ``design``,
    breadth-first, or None when none among the first ``limit`` states."""
    s0 = model_next.initial_state(cfg)
    seen, queue = {s0}, deque([s0])
    while queue and len(seen) < limit:
        s = queue.popleft()
        succ = model_next.successors(s, cfg, CORRECT)
        if succ != model_next.successors(s, cfg, design):
            return s
        for _, t in succ:
            if t not in seen:
                seen.add(t)
                queue.append(t)
    return None


# kraft-forward-leader-change has one client, and B1 learns a controller's versions only
# by forwarding that client's request: no later request reads the advertised versions, so
# every transition is the same under the flag (all 5744 states).  The explorer still
# reports P8 there only because the clause evaluates advertised_version with the variant's
# own design.  The flag does act where a second client uses B1 (kraft-small, below).
_HOME_DOES_NOT_EXERCISE = {
    "versions-not-intersected": "its home configuration has no request after B1 learns the "
                                "controller's versions; P8 reads the flag directly",
}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=_HOME_DOES_NOT_EXERCISE[n]))
    if n in _HOME_DOES_NOT_EXERCISE else n for n in VARIANTS])
def test_variant_is_not_dead(name):
    """Some state reachable in the variant's home configuration under the shipped design
    has different successors under the variant: the flag changes the Next relation."""
    v = VARIANTS[name]
    cfg = CONFIGS[v.config]
    assert first_difference(cfg, v.design) is not None, (
        f"{name}: no reachable state of {cfg.name} has other successors under "
        f"{', '.join(v.flags)}")


def test_versions_not_intersected_acts_with_a_second_client():
    """The flag is not dead in itself: with U1 also sending through B1 (kraft-small), some
    state's successors differ -- U1's request goes out at v7 instead of v5."""
    s = first_difference(CONFIGS["kraft-small"], VARIANTS["versions-not-intersected"].design)
    assert s is not None and s.nodes[0].ctrl_versions == 5
