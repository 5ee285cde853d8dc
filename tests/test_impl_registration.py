"""impl/registration.py: ControllerRegistrationManager (R-1 to R-11), against impl/kraft.py."""
from __future__ import annotations

import random
import uuid

import pytest

from impl.config import Endpoint
from impl.context import RequestContext
from impl.describe_cluster import describe_cluster_controllers
from impl.kraft import (MV_3_7_IV0, ClusterAuthorizer, QuorumController, RaftQuorum,
                        feature_level_record)
from impl.protocol import KafkaPrincipal
from impl.protocol.errors import NOT_CONTROLLER
from impl.registration import (ControllerRegistrationManager, ExponentialBackoff,
                               kafka_uuid_string, listener_info, random_incarnation_id,
                               registration_backoff)
from model.step import Step

LISTENERS = listener_info([Endpoint("CONTROLLER", "c2", 9093, "PLAINTEXT")])
CTX = RequestContext("CONTROLLER", "PLAINTEXT", KafkaPrincipal("User", "controller"))
AUTH = ClusterAuthorizer({"User:controller": {"CLUSTER_ACTION"}})


class FakeChannel:
    """Stands in for NodeToControllerChannelManager: keeps what was enqueued."""

    def __init__(self):
        self.queue = []

    def enqueue(self, request, now_ms):
        request.created_ms = now_ms
        self.queue.append(request)

    def pop(self):
        return self.queue.pop(0)


def deliver(request, controller):
    """The channel sends the request to ``controller``; returns its immediate reply (or None
    when the reply waits for the commit)."""
    return controller.controller_handles_registration(CTX, request.build(0), waiter=request)


def manager(seed=1, node_id=2, **kw):
    return ControllerRegistrationManager(node_id, random.Random(seed), LISTENERS, **kw)


def ready(mgr, quorum, channel, now=0):
    """Start the manager and feed it the node's replayed metadata."""
    mgr.start(channel)
    quorum.catch_up(mgr.node_id)
    mgr.on_metadata_update(quorum.image_delta(mgr.node_id), quorum.image(mgr.node_id))


# ---------------------------------------------------------------------------------- backoff

def test_backoff_sequence_is_kafkas_formula_for_a_seed():
    """R-7: ExponentialBackoff(100, 2, 120000, 0.02), jitter from the seeded source."""
    b = registration_backoff(random.Random(42))
    assert [b.backoff(i) for i in range(14)] == [
        100, 196, 396, 791, 1615, 3222, 6500, 12588, 25520, 50237, 101247, 120000, 117727,
        118554]


@pytest.mark.parametrize("seed", range(5))
def test_backoff_within_two_percent_and_capped(seed):
    b = registration_backoff(random.Random(seed))
    for attempts in range(40):
        value = b.backoff(attempts)
        term = min(100 * 2 ** attempts, 120000)
        assert term * 0.98 - 1 <= value <= term * 1.02
        assert value <= 120000


def test_backoff_without_jitter_and_constant():
    b = ExponentialBackoff(100, 2, 120000, 0.0, random.Random(0))
    assert [b.backoff(i) for i in (0, 1, 10, 11, 50)] == [100, 200, 102400, 120000, 120000]
    assert ExponentialBackoff(500, 2, 100, 0.02, random.Random(0)).backoff(9) == 100


# ---------------------------------------------------------------------------------- incarnation

def test_incarnation_id_is_seeded_random_uuid_per_process_start():
    a, b = manager(seed=3), manager(seed=3)
    assert a.incarnation_id == b.incarnation_id                # same seed, same draw
    assert manager(seed=4).incarnation_id != a.incarnation_id  # a restart draws again
    assert a.incarnation_id.version == 4
    assert not kafka_uuid_string(random_incarnation_id(random.Random(0))).startswith("-")
    assert len(kafka_uuid_string(uuid.UUID(int=5))) == 22


# ---------------------------------------------------------------------------------- sending

def test_send_conditions():
    """R-2/R-3: nothing before start; nothing below 3.7-IV0; one request, then none while
    pending."""
    quorum = RaftQuorum((1, 2), metadata_version=MV_3_7_IV0 - 1, leader_id=1)
    channel, mgr = FakeChannel(), manager()
    assert mgr.controller_sends_registration(0) is None           # nothing queued yet
    mgr.start(channel)
    assert mgr.controller_sends_registration(0) is False          # MV still the minimum
    mgr.on_metadata_update(quorum.catch_up(2), quorum.image(2))
    assert mgr.metadata_version == MV_3_7_IV0 - 1
    assert mgr.controller_sends_registration(0) is False and not channel.queue
    quorum.append(1, [feature_level_record("metadata.version", MV_3_7_IV0)])
    quorum.commit()
    mgr.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert mgr.controller_sends_registration(5) is True
    assert mgr.pending_rpc and len(channel.queue) == 1
    data = channel.queue[0].build(0)
    assert data["ControllerId"] == 2 and data["IncarnationId"] == mgr.incarnation_id
    assert data["Listeners"] == [{"Name": "CONTROLLER", "Host": "c2", "Port": 9093,
                                  "SecurityProtocol": 0}]
    mgr.send_requested = True
    assert mgr.controller_sends_registration(6) is None            # waits while pending
    assert len(channel.queue) == 1


def test_port_zero_is_not_sent():
    """R-5: a port outside 1..65535 cannot be serialized, the controller does not register."""
    quorum = RaftQuorum((1, 2), leader_id=1)
    channel = FakeChannel()
    mgr = ControllerRegistrationManager(2, random.Random(1), listener_info(
        [Endpoint("CONTROLLER", "c2", 0, "PLAINTEXT")]))
    ready(mgr, quorum, channel)
    assert mgr.controller_sends_registration(0) is False
    assert not channel.queue and not mgr.pending_rpc and "port 0" in mgr.last_error
    bound = listener_info([Endpoint("CONTROLLER", None, 0, "SSL")], "host-2", {"CONTROLLER": 9094})
    assert bound == ({"Name": "CONTROLLER", "Host": "host-2", "Port": 9094,
                      "SecurityProtocol": 1},)


def test_success_waits_for_the_log_and_no_periodic_recheck():
    """R-6: success only counts; registered only once the record is replayed (R-8); and with
    no relevant delta nothing ever re-checks (R-9)."""
    quorum = RaftQuorum((1, 2), leader_id=1)
    ctrl = QuorumController(1, quorum, AUTH, random.Random(0))
    channel, mgr = FakeChannel(), manager()
    ready(mgr, quorum, channel)
    assert mgr.controller_sends_registration(0)
    request = channel.pop()
    assert deliver(request, ctrl) is None
    reply = ctrl.controller_commits_records().replies[0]
    request.on_response(0, reply.body, 10)
    assert not mgr.pending_rpc and mgr.successful_rpcs == 1
    assert not mgr.registered_in_log                        # not until the log shows it
    assert mgr.next_deadline_ms() is None and not mgr.check_due(10 ** 9)
    mgr.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert mgr.registered_in_log
    assert mgr.controller_sends_registration(20) is False   # the check runs and finds it done


def test_error_response_backs_off_and_retries():
    """R-6/R-7: an error clears pending_rpc and schedules the check after backoff(0)."""
    quorum = RaftQuorum((1, 2), leader_id=1)
    channel, mgr = FakeChannel(), manager(seed=9)
    ready(mgr, quorum, channel)
    mgr.controller_sends_registration(0)
    expected = registration_backoff(random.Random(9))
    random_incarnation_id(expected.rng)                      # the manager drew its id first
    first, second = expected.backoff(0), expected.backoff(1)
    channel.pop().on_response(0, {"ErrorCode": 31, "ErrorMessage": "x"}, 1000)
    assert not mgr.pending_rpc and mgr.failed_rpcs == 1
    assert mgr.next_deadline_ms() == 1000 + first and 98 <= first <= 102
    assert mgr.controller_sends_registration(1000 + first - 1) is None      # not due yet
    assert mgr.controller_sends_registration(1000 + first) is True
    channel.pop().on_response(0, {"ErrorCode": NOT_CONTROLLER, "ErrorMessage": None}, 2000)
    assert mgr.next_deadline_ms() == 2000 + second and 196 <= second <= 204
    mgr.controller_sends_registration(2000 + second)
    channel.pop().on_response(0, {"ErrorCode": 0, "ErrorMessage": None}, 3000)
    assert mgr.failed_rpcs == 0 and mgr.next_deadline_ms() is None


def test_timeout_clears_pending_and_backs_off():
    """R-6 onTimeout is the failure path; pendingRpc is cleared (the KAFKA-20247 fix)."""
    quorum = RaftQuorum((1, 2), leader_id=1)
    for stuck in (False, True):
        channel, mgr = FakeChannel(), manager(pending_stuck_on_timeout=stuck)
        ready(mgr, quorum, channel)
        mgr.controller_sends_registration(0)
        channel.pop().on_timeout(5000)
        assert mgr.pending_rpc is stuck and mgr.failed_rpcs == 1
        deadline = mgr.next_deadline_ms()
        if stuck:
            # KAFKA-20247: the timer fires, the check finds an RPC "pending" forever.
            assert mgr.controller_sends_registration(deadline) is None
        else:
            assert mgr.controller_sends_registration(deadline) is True


# ----------------------------------------------------------------------------------

def restart_scenario(**kw):
    """Controller 2 sends with incarnation I1 and crashes with the request on the wire; it
    restarts as I2 and registers; the active controller 1 handles I2's request, then the late
    one from I1 -- both committed, I1 last (last writer wins, R-18)."""
    quorum = RaftQuorum((1, 2), leader_id=1)
    ctrl = QuorumController(1, quorum, AUTH, random.Random(0))
    old_channel, old = FakeChannel(), manager(seed=1, **kw)
    ready(old, quorum, old_channel)
    old.controller_sends_registration(0)
    late = old_channel.pop()                               # I1's request, still in flight
    channel, new = FakeChannel(), manager(seed=2, **kw)    # the restarted process: I2
    new.start(channel)
    new.on_metadata_update(quorum.image_delta(2), quorum.image(2))
    assert new.controller_sends_registration(100)
    current = channel.pop()
    deliver(current, ctrl)
    deliver(late, ctrl)
    replies = ctrl.controller_commits_records().replies
    assert [r.waiter for r in replies] == [current, late]
    assert quorum.registrations()[2]["IncarnationId"] == old.incarnation_id
    return quorum, new, channel, current, replies[0]


def test_reregisters_after_late_record_of_old_incarnation():
    """R-8/R-10 (KIP-919 'If it is not, it will re-register'): the new incarnation replays its
    own record (registered), then the late one of the old incarnation (not registered), and
    sends again once its own RPC completed."""
    quorum, new, channel, current, reply = restart_scenario()
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert new.registered_in_log
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert not new.registered_in_log and new.send_requested
    assert new.controller_sends_registration(200) is None    # own RPC still pending: waits
    current.on_response(0, reply.body, 210)
    assert new.controller_sends_registration(220) is True     # re-registers
    again = channel.pop().build(0)
    assert again["IncarnationId"] == new.incarnation_id


def test_kafka_3_7_drops_the_check_while_pending():
    """The model's registration-no-recheck-after-success finding: Kafka (3.7.0-3.8.0, trunk)
    drops the check that found an RPC pending, and success re-checks nothing (R-9): the old
    incarnation stays."""
    quorum, new, channel, current, reply = restart_scenario(kafka_drops_check_while_pending=True)
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert not new.registered_in_log
    assert new.controller_sends_registration(200) is False    # ran, found pending, dropped
    current.on_response(0, reply.body, 210)
    assert not new.check_due(10 ** 9) and not channel.queue
    assert quorum.registrations()[2]["IncarnationId"] != new.incarnation_id


def test_unrelated_delta_queues_nothing():
    """R-8: only a features change or this id's registration queues the check."""
    quorum = RaftQuorum((1, 2, 3), leader_id=1)
    ctrl = QuorumController(1, quorum, AUTH, random.Random(0))
    channel, mgr = FakeChannel(), manager()
    ready(mgr, quorum, channel)
    mgr.controller_sends_registration(0)
    mgr.send_requested = False
    other = ControllerRegistrationManager(3, random.Random(5), LISTENERS).request_data()
    ctrl.controller_handles_registration(CTX, other)
    ctrl.controller_commits_records()
    mgr.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert not mgr.send_requested and not mgr.registered_in_log


def test_trusts_response_flaw():
    """The seeded flaw registration-trusts-response: success marks registered, the log is
    never consulted again."""
    quorum, new, channel, current, reply = restart_scenario(trusts_response=True)
    current.on_response(0, reply.body, 210)
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert new.registered_in_log
    assert new.controller_sends_registration(300) is False


# ---------------------------------------------------------------------------------- boundaries
# ExponentialBackoff (clients/.../common/utils/ExponentialBackoff.java) at its edges, with the
# random factor pinned: ``nextDouble(1 - jitter, 1 + jitter) = origin + r * (bound - origin)``.

class PinnedRandom(random.Random):
    """``random()`` always returns ``r`` and counts its calls (None: must not be called)."""

    def __init__(self, r: float | None):
        super().__init__(0)
        self.r, self.calls = r, 0

    def random(self):
        assert self.r is not None, "the backoff drew a random factor"
        self.calls += 1
        return self.r


ATTEMPTS = (0, 1, 10, 1000)
LARGEST_BELOW_ONE = 1 - 2 ** -53          # the largest value random() returns


def backoffs(initial, multiplier, maximum, jitter, r=None):
    b = ExponentialBackoff(initial, multiplier, maximum, jitter, PinnedRandom(r))
    return [b.backoff(a) for a in ATTEMPTS], b.rng.calls


def test_backoff_attempts_without_jitter():
    """100 * 2^attempts, capped at 120000 from attempt 11 on (1000 too); no random draw."""
    assert backoffs(100, 2, 120000, 0.0) == ([100, 200, 102400, 120000], 0)


def test_backoff_attempts_with_the_lowest_jitter_factor():
    assert backoffs(100, 2, 120000, 0.02, r=0.0) == ([98, 196, 100352, 117600], 4)


def test_backoff_jitter_factor_rounding_up_to_the_bound_is_nudged_below_it():
    """0.98 + r * 0.04 rounds to exactly 1.02 for the largest r: ``boundedNextDouble`` then
    returns ``Math.nextDown(1.02)``, so 100 -> 101 (not 102); the cap still applies."""
    assert backoffs(100, 2, 120000, 0.02, r=LARGEST_BELOW_ONE) == \
        ([101, 203, 104447, 120000], 4)


@pytest.mark.parametrize("initial, maximum, expected", [
    (100, 100, 100),          # max == initial: expMax = 0, always initial
    (500, 100, 100),          # max < initial: initial becomes max, a constant max
    (0, 0, 0),                # both 0: no log of 0
])
@pytest.mark.parametrize("jitter", [0.0, 0.02, 0.5])
def test_backoff_constant_when_max_is_not_above_initial(initial, maximum, expected, jitter):
    """``if (expMax == 0) return initialInterval``: no jitter, no random draw."""
    assert backoffs(initial, 2, maximum, jitter) == ([expected] * 4, 0)


def test_backoff_from_zero_stays_zero():
    assert backoffs(0, 2, 1000, 0.0) == ([0, 0, 0, 0], 0)
    assert backoffs(0, 2, 1000, 0.02, r=LARGEST_BELOW_ONE)[0] == [0, 0, 0, 0]


def test_backoff_multiplier_one_is_a_constant_not_an_error():
    """Java: log(10) / log(1) = Infinity, so exp = attempts and the term is initial; and
    log(1) / log(1) = NaN (initial 0, max 1), which is not 0 either: the term is 0."""
    assert backoffs(100, 1, 1000, 0.0) == ([100, 100, 100, 100], 0)
    assert backoffs(100, 1, 1000, 0.02, r=0.0) == ([98, 98, 98, 98], 4)
    assert backoffs(0, 1, 1, 0.02, r=0.0) == ([0, 0, 0, 0], 4)


def test_backoff_exponent_counts_from_an_initial_of_one():
    """``expMax = log(max / max(initial, 1)) / log(multiplier)``: from 1 ms the term is 2^9
    at attempt 9, below the 1000 ms cap."""
    b = ExponentialBackoff(1, 2, 1000, 0.0, PinnedRandom(None))
    assert [b.backoff(a) for a in (0, 1, 9)] == [1, 2, 512]


def test_backoff_jitter_threshold_is_strictly_below_double_min_normal():
    """Below ``Double.MIN_NORMAL`` the factor is 1.0 without a draw; at it, Java asks for
    ``nextDouble(1.0, 1.0)`` (both ends round to 1.0) and ``RandomSupport.checkRange`` throws
    IllegalArgumentException before drawing."""
    min_normal = 2.2250738585072014e-308
    assert backoffs(100, 2, 120000, min_normal / 2) == ([100, 200, 102400, 120000], 0)
    b = ExponentialBackoff(100, 2, 120000, min_normal, PinnedRandom(None))
    with pytest.raises(ValueError, match="bound must be greater than origin"):
        b.backoff(1)
    assert backoffs(100, 2, 120000, 2 ** -20, r=0.5)[0] == [100, 200, 102400, 120000]
    # and at the other end: bound - origin overflows to Infinity
    with pytest.raises(ValueError, match="bound must be greater than origin"):
        ExponentialBackoff(100, 2, 120000, 1e308, PinnedRandom(None)).backoff(0)


# ---------------------------------------------------------------------------------- R-5 ports

def manager_with(endpoint_host, port, seed=1):
    quorum = RaftQuorum((1, 2), leader_id=1)
    channel = FakeChannel()
    mgr = ControllerRegistrationManager(2, random.Random(seed), [
        {"Name": "CONTROLLER", "Host": endpoint_host, "Port": port, "SecurityProtocol": 0}])
    ready(mgr, quorum, channel)
    return mgr, channel


@pytest.mark.parametrize("host, port, error", [
    ("c2", 1, None),
    ("c2", 65535, None),
    ("c2", 0, "Cannot serialize ephemeral port 0 in ListenerInfo."),
    ("c2", -1, "Cannot serialize negative port number -1 in ListenerInfo."),
    ("c2", 65536, "Cannot serialize invalid port number 65536 in ListenerInfo."),
    (None, 9093, "Cannot serialize null host in ListenerInfo."),
    (" \t", 9093, "Cannot serialize empty host in ListenerInfo."),
    (None, 0, "Cannot serialize ephemeral port 0 in ListenerInfo."),     # the port first
])
def test_R5_listener_info_serialization_boundaries(host, port, error):
    """``ListenerInfo.checkPortIsSerializable`` / ``checkHostIsSerializable``, verbatim."""
    mgr, channel = manager_with(host, port)
    sent = mgr.controller_sends_registration(0)
    if error is None:
        assert sent is True and len(channel.queue) == 1
        assert channel.queue[0].build(0)["Listeners"][0]["Port"] == port
        assert mgr.last_error is None
    else:
        assert sent is False and not channel.queue and not mgr.pending_rpc
        assert mgr.last_error == error and mgr.requests_sent == []


def test_listener_info_resolves_only_null_or_blank_hosts():
    """``withWildcardHostnamesResolved``: ``host == null || host.trim().isEmpty()``; an explicit
    wildcard address is registered as written; port 0 becomes the bound port."""
    endpoints = [Endpoint("A", None, 9093, "PLAINTEXT"), Endpoint("B", "", 9094, "SSL"),
                 Endpoint("C", "::", 9095, "PLAINTEXT"), Endpoint("D", "0.0.0.0", 0, "SSL")]
    info = listener_info(endpoints, "host-2", {"D": 9096})
    assert [(i["Name"], i["Host"], i["Port"]) for i in info] == [
        ("A", "host-2", 9093), ("B", "host-2", 9094), ("C", "::", 9095), ("D", "0.0.0.0", 9096)]
    # an unbound ephemeral port stays 0 (and R-5 then refuses it)
    assert listener_info([Endpoint("E", "h", 0, "PLAINTEXT")])[0]["Port"] == 0


# ---------------------------------------------------------------------------------- branches

def test_incarnation_id_is_drawn_again_when_it_would_start_with_a_dash():
    """``Uuid.randomUuid``: seed 82's first draw prints as "-8Gvi..."; the id is the next."""
    rng = random.Random(82)
    first = uuid.UUID(int=rng.getrandbits(128), version=4)
    second = uuid.UUID(int=rng.getrandbits(128), version=4)
    assert kafka_uuid_string(first).startswith("-")
    assert random_incarnation_id(random.Random(82)) == second
    assert not kafka_uuid_string(second).startswith("-")


def test_metadata_before_start_sends_nothing_then_start_sends():
    """R-3: the check can run before ``start`` (a metadata delta queues it): no channel, it
    only logs; ``start`` then sends."""
    quorum = RaftQuorum((1, 2), leader_id=1)
    mgr, channel = manager(), FakeChannel()
    quorum.catch_up(2)
    mgr.on_metadata_update(quorum.image_delta(2), quorum.image(2))
    assert mgr.send_requested
    assert mgr.controller_sends_registration(0) is False and not mgr.pending_rpc
    mgr.start(channel)
    assert mgr.controller_sends_registration(1) is True and len(channel.queue) == 1


def test_already_registered_returns_false_not_none():
    """The check ran (False: it only logged "already registered"), unlike not due (None)."""
    quorum, new, channel, current, reply = restart_scenario()
    current.on_response(0, reply.body, 210)
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert new.registered_in_log and new.send_requested
    assert new.controller_sends_registration(220) is False
    assert new.controller_sends_registration(230) is None        # nothing queued any more


def test_defaults_request_data_and_failure_bookkeeping():
    """ZkMigrationReady false (trunk hard-codes it); ``requests_sent`` records each request;
    by default onTimeout clears pendingRpc; each failure path says why in ``last_error``."""
    quorum = RaftQuorum((1, 2), leader_id=1)
    channel, mgr = FakeChannel(), manager()
    ready(mgr, quorum, channel)
    assert mgr.controller_sends_registration(0) is True
    request = channel.pop()
    assert request.build(0)["ZkMigrationReady"] is False
    assert mgr.requests_sent == [mgr.request_data()]
    request.on_timeout(5000)
    assert not mgr.pending_rpc and mgr.failed_rpcs == 1
    assert mgr.last_error == "the channel manager timed out before sending the request"
    assert mgr.controller_sends_registration(mgr.next_deadline_ms()) is True
    channel.pop().on_response(0, {"ErrorCode": 31, "ErrorMessage": "x"}, 6000)
    assert mgr.last_error == "registration failed with error 31" and mgr.failed_rpcs == 2
    assert len(mgr.requests_sent) == 2


@pytest.mark.parametrize("code, body", [(58, None), (35, None), (0, None)])
def test_transport_failures_back_off(code, body):
    """R-6: authentication error, version mismatch, or no body: the failure path."""
    quorum = RaftQuorum((1, 2), leader_id=1)
    channel, mgr = FakeChannel(), manager()
    ready(mgr, quorum, channel)
    mgr.controller_sends_registration(0)
    channel.pop().on_response(code, body, 100)
    assert not mgr.pending_rpc and mgr.failed_rpcs == 1 and mgr.successful_rpcs == 0
    assert 98 <= mgr.next_deadline_ms() - 100 <= 102


# ---------------------------------------------------------------------------------- the finding
# docs/findings/registration-no-recheck.md: the old incarnation's RegisterControllerRecord is
# replayed while the new incarnation's own ControllerRegistrationRequest is still pending.
# Kafka's logic (``kafka_drops_check_while_pending=True``; in the cluster, the bug
# ``registration-no-recheck-after-success``) drops the check and the success response only
# counts; the proposed fix (the default) keeps the check until the RPC completes.

MOVED = listener_info([Endpoint("CONTROLLER", "c2-new", 9193, "PLAINTEXT")])


def moved_restart_scenario(**kw):
    """``restart_scenario`` where the restarted process advertises another endpoint (a moved
    host and port), so that the stale registration is visible in DescribeCluster (R-21)."""
    quorum = RaftQuorum((1, 2), leader_id=1)
    ctrl = QuorumController(1, quorum, AUTH, random.Random(0))
    old_channel, old = FakeChannel(), manager(seed=1, **kw)
    ready(old, quorum, old_channel)
    assert old.controller_sends_registration(0)
    late = old_channel.pop()                                # I1's request, still in flight
    channel = FakeChannel()
    new = ControllerRegistrationManager(2, random.Random(2), MOVED, **kw)
    new.start(channel)
    new.on_metadata_update(quorum.image_delta(2), quorum.image(2))
    assert new.controller_sends_registration(100)
    current = channel.pop()
    deliver(current, ctrl)
    deliver(late, ctrl)                                     # handled after I2's: I1 last
    replies = ctrl.controller_commits_records().replies
    assert [r.waiter for r in replies] == [current, late]
    return quorum, ctrl, old, new, channel, current, replies[0]


def described(quorum, node_id=1):
    """What DescribeCluster on the CONTROLLER listener of ``node_id`` lists for controller 2
    (``describeClusterControllers`` over the registrations it replayed, R-21)."""
    quorum.catch_up(node_id)
    nodes = describe_cluster_controllers(quorum.image(node_id).controllers, "CONTROLLER")
    return [(n.host, n.port) for n in nodes if n.node_id == 2]


def register_round_trip(new, channel, quorum, ctrl, now):
    """The manager's queued send runs; the request is handled, committed and answered, and
    the node replays its record."""
    assert new.controller_sends_registration(now) is True
    request = channel.pop()
    assert request.build(0)["IncarnationId"] == new.incarnation_id
    assert deliver(request, ctrl) is None
    reply = ctrl.controller_commits_records().replies[0]
    request.on_response(0, reply.body, now + 10)
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))


def test_finding_kafka_logic_keeps_the_old_incarnation_until_a_feature_record():
    """Kafka's logic: the check that the old incarnation's record queues runs while the new
    incarnation's RPC is pending and is dropped; success only counts.  The log keeps the old
    incarnation (DescribeCluster lists its endpoint), the controller believes it is not
    registered and never sends again -- no timer, and a registration of another controller
    queues nothing -- until a later FeatureLevelRecord queues the check (R-8)."""
    quorum, ctrl, old, new, channel, current, reply = moved_restart_scenario(
        kafka_drops_check_while_pending=True)
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))   # its own record
    assert new.registered_in_log
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))   # the old one
    assert not new.registered_in_log and new.send_requested and new.pending_rpc
    assert new.controller_sends_registration(200) is False    # "waiting for the previous RPC"
    assert not new.send_requested                             # ... and the check is gone
    current.on_response(0, reply.body, 210)
    assert not new.pending_rpc and new.successful_rpcs == 1 and new.failed_rpcs == 0
    # stuck: the log names the dead incarnation, the live one knows and does nothing
    assert quorum.registrations()[2]["IncarnationId"] == old.incarnation_id
    assert not new.registered_in_log
    assert new.next_deadline_ms() is None and not new.check_due(10 ** 9)
    assert new.controller_sends_registration(10 ** 9) is None and not channel.queue
    assert described(quorum) == [("c2", 9093)]                # the old process's endpoint
    # another controller's registration is not a change to this id's: nothing queued
    ctrl.controller_handles_registration(
        CTX, ControllerRegistrationManager(3, random.Random(5), LISTENERS).request_data())
    ctrl.controller_commits_records()
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert not new.send_requested and not new.check_due(10 ** 9)
    # a feature change (here a metadata.version upgrade) is what queues the check again
    quorum.append(1, [feature_level_record("metadata.version", MV_3_7_IV0 + 1)])
    ctrl.controller_commits_records()
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert new.send_requested
    register_round_trip(new, channel, quorum, ctrl, 300)
    assert new.registered_in_log
    assert new.controller_sends_registration(400) is False    # the replay's check: done
    assert not new.check_due(10 ** 9)
    assert quorum.registrations()[2]["IncarnationId"] == new.incarnation_id
    assert described(quorum) == [("c2-new", 9193)]


def test_finding_fix_reregisters_and_converges():
    """The proposed fix (the default): the check waits for the pending RPC and runs when it
    completes; the controller re-registers, and the log, its belief and DescribeCluster
    converge on the new incarnation with nothing left to do."""
    quorum, ctrl, old, new, channel, current, reply = moved_restart_scenario()
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert not new.registered_in_log and new.send_requested and new.pending_rpc
    assert new.controller_sends_registration(200) is None     # waits, stays queued
    assert new.send_requested
    current.on_response(0, reply.body, 210)
    assert new.check_due(220)
    register_round_trip(new, channel, quorum, ctrl, 220)
    assert new.registered_in_log and not new.pending_rpc
    assert quorum.registrations()[2]["IncarnationId"] == new.incarnation_id
    assert new.controller_sends_registration(300) is False    # the replay's check: done
    assert new.next_deadline_ms() is None and not new.check_due(10 ** 9)
    assert described(quorum) == [("c2-new", 9193)]
    assert len(new.requests_sent) == 2                        # one extra RPC, no more


@pytest.mark.parametrize("kafka", [True, False])
def test_finding_needs_the_replay_before_the_response(kafka):
    """The key condition: when the success response is handled before the old incarnation's
    record is replayed (the usual order in Kafka, where the response leaves the active
    controller as soon as the record commits), Kafka's logic re-registers too."""
    quorum, ctrl, old, new, channel, current, reply = moved_restart_scenario(
        kafka_drops_check_while_pending=kafka)
    current.on_response(0, reply.body, 150)
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    new.on_metadata_update(quorum.node_replays_record(2), quorum.image(2))
    assert not new.registered_in_log and not new.pending_rpc
    register_round_trip(new, channel, quorum, ctrl, 200)
    assert new.registered_in_log
    assert quorum.registrations()[2]["IncarnationId"] == new.incarnation_id


# The same scenario through the simulated cluster (impl/cluster/) in lockstep with the model
# (properties/conformance.py): the explorer's shortest trace, and the 17-step trace the
# stateful engine found in which C2 has replayed the whole committed log before it crashes,
# so it restarts caught up (Kafka's MetadataLoader publishes nothing until it has caught up
# with the high-water mark; the explorer's trace restarts C2 one record behind).
FINDING_TRACE = (
    Step('node_replays_record', (1,)),
    Step('controller_sends_registration', (1,)),
    Step('channel_discovers_controller', (1,)),
    Step('channel_sends_request', (1,)),
    Step('node_crashes', (1,)),
    Step('node_restarts', (1,)),
    Step('controller_sends_registration', (1,)),
    Step('channel_discovers_controller', (1,)),
    Step('channel_sends_request', (1,)),
    # (kind, src, dst, listener, controller_id, incarnation_id, endpoints, principal): C2's
    # listeners are configured in full, so both runs carry STATIC_ENDPOINTS (-1)
    Step('controller_handles_registration', ((2, 1, 0, 0, 1, 1, -1, 1),)),
    Step('controller_handles_registration', ((2, 1, 0, 0, 1, 0, -1, 1),)),
    Step('controller_commits_records', ()),
    Step('node_replays_record', (1,)),
    Step('node_replays_record', (1,)),
    Step('node_replays_record', (1,)),
    Step('controller_sends_registration', (1,)),               # Kafka: finds pendingRpc, drops
    Step('controller_handles_registration_response', ((3, 0, 1, 0, 1, 0, 1, 0),)),
)
CAUGHT_UP_TRACE = (FINDING_TRACE[:3] + (Step('node_replays_record', (1,)),) + FINDING_TRACE[3:12]
                   + FINDING_TRACE[13:])


def lockstep(kafka: bool):
    """The model (the variant, or the correct design) and the cluster (with Kafka's logic, or
    the fix) on kraft-registration, compared after every step."""
    from dataclasses import replace
    from impl.cluster import KAFKA_REGISTRATION_NO_RECHECK, Cluster
    from model.config import VARIANTS, Design
    from model.configs import CONFIGS
    from properties.conformance import Driver, cluster_config
    cfg = CONFIGS["kraft-registration"]
    design = VARIANTS[KAFKA_REGISTRATION_NO_RECHECK].design if kafka else Design()
    d = Driver(cfg, 0, design)
    if kafka:
        d.cluster = Cluster(replace(cluster_config(cfg),
                                    bugs=frozenset({KAFKA_REGISTRATION_NO_RECHECK})), seed=0)
    assert d.start() is None
    return d


def settle(d, limit=40):
    """Take enabled progress steps (no faults, no clock) in the model's order, in lockstep,
    until none is left; returns the steps taken."""
    from model import next as model_next
    taken = []
    for _ in range(limit):
        steps = [st for st, _ in model_next.successors(d.state, d.cfg, d.design)
                 if not model_next.is_fault(d.state, d.cfg, st) and st.action != "clock_ticks"]
        if not steps:
            return taken
        div = d.apply(steps[0])
        assert div is None, div.describe()
        taken.append(steps[0])
    raise AssertionError(f"no settled state after {limit} steps: {taken}")


@pytest.mark.parametrize("trace", [FINDING_TRACE, CAUGHT_UP_TRACE], ids=["shortest", "caught-up"])
def test_finding_through_the_cluster_with_kafka_logic(trace):
    """Kafka's logic in the cluster takes the variant's counterexample step for step with no
    divergence, and ends stuck: C2's registration in the committed log is its dead first
    incarnation's, C2 knows it is not registered, and no step but the clock's is left."""
    from model import next as model_next
    d = lockstep(kafka=True)
    for st in trace:
        div = d.apply(st)
        assert div is None, div.describe()
    cluster, c2 = d.cluster, 1
    first, current = cluster.incarnations(c2)
    assert [r.incarnation_id for r in cluster.registrations() if r.controller_id == c2][-1] \
        == first != current
    assert not cluster.registered(c2) and not cluster.nodes[c2].registration.pending_rpc
    assert not cluster.nodes[c2].registration.check_due(10 ** 9)
    assert settle(d) == []
    assert model_next.quiescent(d.state, d.cfg, d.design,
                                model_next.successors(d.state, d.cfg, d.design))


@pytest.mark.parametrize("trace", [FINDING_TRACE, CAUGHT_UP_TRACE], ids=["shortest", "caught-up"])
def test_finding_through_the_cluster_with_the_fix(trace):
    """The fix in the cluster, in lockstep with the model's correct design: at the check the
    Kafka logic drops, it is not enabled (it waits); after the success response it runs, C2
    re-registers, and the log and C2's belief converge on its current incarnation."""
    from model import next as model_next
    d = lockstep(kafka=False)
    drop = len(trace) - 2
    for st in trace[:drop]:
        div = d.apply(st)
        assert div is None, div.describe()
    assert model_next.step(d.state, d.cfg, d.design, trace[drop]) is None     # waits
    div = d.apply(trace[-1])                                  # the success response
    assert div is None, div.describe()
    taken = settle(d)
    assert [st.action for st in taken][:3] == ["controller_sends_registration",
                                               "channel_sends_request",
                                               "controller_handles_registration"]
    cluster, c2 = d.cluster, 1
    current = cluster.incarnations(c2)[-1]
    assert [r.incarnation_id for r in cluster.registrations() if r.controller_id == c2][-1] \
        == current
    assert cluster.registered(c2) and not cluster.nodes[c2].registration.check_due(10 ** 9)


# ---------------------------------------------------------------------------------- endpoints
# A two-controller cluster built from server.properties (no model): C1 leads and is registered
# on CONTROLLER://c1:9093; C2 advertises CONTROLLER://:0, a blank host and an ephemeral port,
# which each of its process runs resolves at start-up (EP-1..EP-5); D1 and D2 ask C1 for the
# controllers (D-1).

def endpoints_cluster(bugs=()):
    from impl.cluster import Cluster
    from impl.cluster_config import (DESCRIBE, KRAFT_MODE, ClientConfig, ClusterConfig,
                                     NodeConfig)
    from impl.protocol.api_keys import DESCRIBE_CLUSTER

    def controller(i, name, listeners):
        return NodeConfig(i, name, "controller", (
            ("process.roles", "controller"), ("node.id", str(i)),
            ("controller.quorum.voters", "0@c1:9093,1@c2:9193"),
            ("controller.listener.names", "CONTROLLER"), ("listeners", listeners),
            ("listener.security.protocol.map", "CONTROLLER:PLAINTEXT")), "controller")
    nodes = (controller(0, "C1", "CONTROLLER://c1:9093"), controller(1, "C2", "CONTROLLER://:0"))
    clients = tuple(ClientConfig(name, "admin", DESCRIBE, 0, "CONTROLLER", DESCRIBE_CLUSTER,
                                 endpoint_type=2) for name in ("D1", "D2"))
    acls = frozenset({("controller", "CLUSTER_ACTION", "CLUSTER"),
                      ("admin", "ALTER", "CLUSTER")})
    return Cluster(ClusterConfig("controller-endpoints", KRAFT_MODE, nodes, clients, acls,
                                 registration=True, initial_controller=0,
                                 initially_registered=(0,), bugs=frozenset(bugs)), seed=0)


def register_c2(cluster):
    """C2 replays what is committed, sends its ControllerRegistrationRequest (real bytes) to
    C1, which appends and commits the record; the request as decoded from its bytes."""
    from impl.protocol.api_keys import CONTROLLER_REGISTRATION
    from impl.sim import Event
    while cluster.apply(Event("node_replays_record", (1,))):
        pass
    for name in ("controller_sends_registration", "channel_discovers_controller",
                 "channel_sends_request"):
        assert cluster.apply(Event(name, (1,))), name
    (m,) = [m for m in cluster.network.in_flight() if m.api_key == CONTROLLER_REGISTRATION]
    view = cluster.view(m)
    assert cluster.apply(Event("controller_handles_registration", (m.id,)))
    assert cluster.apply(Event("controller_commits_records", ()))
    return view


def restart(cluster, node):
    from impl.sim import Event
    assert cluster.apply(Event("node_crashes", (node,)))
    assert cluster.apply(Event("node_restarts", (node,)))


def test_each_process_run_resolves_port_zero_and_a_blank_host_and_registers_them():
    """EP-1, EP-3..EP-5: a blank host becomes the node's canonical host name and port 0 the
    port this process run bound, once, at start-up; a restart binds a fresh port and registers
    that.  The request's Listeners (decoded from its bytes) are copied into the
    RegisterControllerRecord's EndPoints (R-14).  C1, configured in full, keeps its port."""
    from impl.cluster.wiring import EPHEMERAL_PORT_BASE, canonical_host_name
    cluster = endpoints_cluster()
    c2 = cluster.nodes[1]
    host = canonical_host_name("C2")
    first = c2.registration.listeners[0]
    assert (first["Host"], first["Port"]) == (host, c2.bound_ports[0]["CONTROLLER"])
    assert first["Port"] >= EPHEMERAL_PORT_BASE
    assert cluster.nodes[0].registration.listeners[0]["Port"] == 9093
    assert [(r.controller_id, r.endpoints) for r in cluster.registrations()] == [
        (0, (("CONTROLLER", "c1", 9093),))]
    view = register_c2(cluster)
    assert view.listeners == (("CONTROLLER", host, first["Port"]),)
    restart(cluster, 1)
    second = c2.registration.listeners[0]
    assert (second["Host"], second["Port"]) == (host, c2.bound_ports[1]["CONTROLLER"])
    assert second["Port"] != first["Port"]
    view = register_c2(cluster)
    assert view.incarnation_id == cluster.incarnations(1)[1]
    assert view.listeners == (("CONTROLLER", host, second["Port"]),)
    regs = [r for r in cluster.registrations() if r.controller_id == 1]
    assert [r.endpoints for r in regs] == [(("CONTROLLER", host, first["Port"]),),
                                           (("CONTROLLER", host, second["Port"]),)]
    assert [cluster.ephemeral_port_run(1, p["Port"]) for p in (first, second)] == [0, 1]
    assert cluster.ephemeral_port_run(0, 9093) is None


def test_controller_describe_cluster_lists_the_latest_registrations_endpoint():
    """R-21, D-1.3: C1 answers from the registrations it has replayed, the last one of each
    controller (R-18), at the host and port that record carries: after C2's restart and
    re-registration, its new run's port, not the old one's."""
    from impl.sim import Event
    cluster = endpoints_cluster()
    c2 = cluster.nodes[1]
    register_c2(cluster)
    old = c2.registration.listeners[0]["Port"]
    assert cluster.apply(Event("client_sends_request", ("D1",)))
    restart(cluster, 1)
    register_c2(cluster)
    new = c2.registration.listeners[0]["Port"]
    assert cluster.apply(Event("client_sends_request", ("D2",)))
    results = cluster.client_results()
    host = cluster.canonical_host(1)
    (d1,), (d2,) = results["D1"], results["D2"]
    assert d1.error_code == d2.error_code == 0
    assert d1.endpoints == {(0, "CONTROLLER", "c1", 9093), (1, "CONTROLLER", host, old)}
    assert d2.endpoints == {(0, "CONTROLLER", "c1", 9093), (1, "CONTROLLER", host, new)}


def test_a_port_zero_or_blank_host_controller_registration_is_refused_unless_unchecked():
    """R-14, EP-4 (``ListenerInfo.toControllerRegistrationRecord``): an endpoint with port 0
    or a blank host is UNKNOWN_SERVER_ERROR (-1), nothing appended; before KAFKA-15458 the
    controller copied it as it came (``check_controller_endpoints`` False)."""
    from impl.protocol.errors import UNKNOWN_SERVER_ERROR
    for listener in ({"Name": "CONTROLLER", "Host": "c2", "Port": 0, "SecurityProtocol": 0},
                     {"Name": "CONTROLLER", "Host": " ", "Port": 9093, "SecurityProtocol": 0}):
        body = dict(manager().request_data(), Listeners=[listener])
        quorum = RaftQuorum((1, 2), leader_id=1)
        reply = QuorumController(1, quorum, AUTH, random.Random(0)
                                 ).controller_handles_registration(CTX, body)
        assert reply.error_code == UNKNOWN_SERVER_ERROR and not quorum.uncommitted
        unchecked = QuorumController(1, quorum, AUTH, random.Random(0),
                                     check_controller_endpoints=False)
        assert unchecked.controller_handles_registration(CTX, body) is None
        quorum.commit()
        assert quorum.registrations()[2]["EndPoints"] == [listener]


def test_registers_unresolved_endpoints_switch_sends_and_records_them_as_configured():
    """The registers-unresolved-endpoints design (KAFKA-15458, EP-6): C2 sends CONTROLLER as
    configured, a blank host and port 0, without R-5's check; C1 copies it unchecked, and
    DescribeCluster hands it to clients."""
    from impl.cluster.wiring import REGISTERS_UNRESOLVED_ENDPOINTS
    from impl.sim import Event
    cluster = endpoints_cluster(bugs=(REGISTERS_UNRESOLVED_ENDPOINTS,))
    view = register_c2(cluster)
    assert view.listeners == (("CONTROLLER", "", 0),)
    assert [r.endpoints for r in cluster.registrations() if r.controller_id == 1] == [
        (("CONTROLLER", "", 0),)]
    # registered before the run, C1 had resolved its own (EP-1)
    assert cluster.registrations()[0].endpoints == (("CONTROLLER", "c1", 9093),)
    assert cluster.apply(Event("client_sends_request", ("D1",)))
    (d1,) = cluster.client_results()["D1"]
    assert (1, "CONTROLLER", "", 0) in d1.endpoints
    # without the switch the same cluster resolves them
    assert register_c2(endpoints_cluster()).listeners[0][1:] != ("", 0)
