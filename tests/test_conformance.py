"""Conformance: the reference implementation (impl/) against the model, step by step."""
from __future__ import annotations

import pytest

from model import next as model_next
from model.configs import CONFIGS, TINY
from model.state import BROKER_REGISTRATION_REQUEST
from model.step import Step
from properties.conformance import (Driver, check_steps, cluster_config, run_conformance,
                                    tick_ms, validate_impl_run)

SEED = 20261122


@pytest.mark.parametrize("config", TINY)
def test_tiny_configuration_conforms_over_the_ci_budget(config):
    """Zero divergences: Hypothesis picks model steps (faults included) and the
    implementation takes the same ones; observations and in-flight messages agree after
    every step."""
    r = run_conformance(config, seed=SEED, profile="ci")
    assert r.divergence is None, r.divergence_text()
    assert r.runs >= 60 and r.steps >= 400
    # the runs exercised the protocol, not just the first step
    assert len(r.actions) >= 6, r.actions


@pytest.mark.parametrize("config", TINY)
def test_free_running_implementation_is_a_model_behaviour(config):
    """Trace validation: the implementation runs in its own seeded simulator (faults
    included); every event it takes is a step the model can take, ending in the same
    observation."""
    total = 0
    for seed in range(12):
        steps, div = validate_impl_run(CONFIGS[config], seed, max_steps=80)
        assert div is None, div.describe()
        total += len(steps)
    assert total >= 60


def test_injected_implementation_bug_is_found_at_its_first_step():
    """A ZK controller that writes without the CheckOp on /controller_epoch (Z-2): the shrunk
    divergence ends with the zombie's write, which the model fences."""
    r = run_conformance("zk-forward-zombie", seed=SEED, profile="dev",
                        bugs=("skip-check-op",))
    div = r.divergence
    assert div is not None
    assert div.kind == "observation" and div.index == len(div.steps)
    assert div.steps[-1].action == "controller_processes_event"
    assert "writes" in div.model and div.model["writes"] != div.impl["writes"]
    assert len(div.steps) <= 9          # the explorer's shortest zombie write is 7 steps
    cfg = CONFIGS["zk-forward-zombie"]
    # the trace is a model trace, and without the bug the implementation agrees all along
    model_next.replay(cfg, Driver(cfg, 0).design, div.steps)
    assert check_steps(cfg, div.steps, seed=SEED) is None
    again = check_steps(cfg, div.steps, seed=SEED, bugs=("skip-check-op",))
    assert again is not None and again.index == div.index


def test_a_step_the_implementation_cannot_take_is_a_divergence():
    cfg = CONFIGS["zk-forward-zombie"]
    d = Driver(cfg, 0)
    assert d.start() is None
    # the model lets A1 send; then sending again is not enabled in the model itself
    assert d.apply(Step("client_sends_request", (0,))) is None
    with pytest.raises(ValueError):
        d.apply(Step("client_sends_request", (0,)))


def test_same_seed_same_implementation_run():
    cfg = CONFIGS["kraft-registration"]
    a = validate_impl_run(cfg, 7, max_steps=80)[0]
    b = validate_impl_run(cfg, 7, max_steps=80)[0]
    assert a == b and len(a) > 5


def test_nodes_are_configured_with_kafka_properties_and_timeouts():
    """Every node's server.properties passes the implementation's listener validation
    (L-0..L-27, at cluster start), and the tick scales Kafka's timeouts to the model's."""
    zk = cluster_config(CONFIGS["zk-forward-zombie"])
    props = zk.nodes[1].props()
    assert props["inter.broker.listener.name"] == "INTERNAL"
    assert props["zookeeper.metadata.migration.enable"] == "true"        # F-4
    assert zk.forward_retry_timeout_ms == 30_000 == 2 * tick_ms(CONFIGS["zk-forward-zombie"])
    kr = cluster_config(CONFIGS["kraft-registration"])
    assert kr.registration_retry_timeout_ms == 5_000
    assert kr.nodes[0].props()["process.roles"] == "controller"
    kf = cluster_config(CONFIGS["kraft-forward-leader-change"])
    assert kf.forward_retry_timeout_ms == 60_000                          # F-17
    with pytest.raises(ValueError, match="unknown implementation bug"):
        cluster_config(CONFIGS["zk-forward-zombie"], bugs=("no-such-bug",))


def test_configurations_outside_the_models_version_abstraction_are_refused():
    """zk-small sends IncrementalAlterConfigs (versions 0-1 in Kafka), which the model's
    per-node api_max (CreateTopics's range) does not describe: refused with the reason."""
    with pytest.raises(ValueError, match="IncrementalAlterConfigs"):
        cluster_config(CONFIGS["zk-small"])
    with pytest.raises(ValueError, match="IncrementalAlterConfigs"):
        run_conformance("kraft-small", seed=1)
    # a migration whose nodes all parse the latest versions: IncrementalAlterConfigs and
    # CreateAcls at their latest project to the model's latest
    from properties.conformance import unsupported
    assert unsupported(CONFIGS["zk-migration"]) is None
    assert unsupported(CONFIGS["zk-migration-bounce"]) is None


# ---- KRaft broker registration and heartbeats (BR-*, BH-*, BL-*) ------------------------------

BROKER_CONFIG = "kraft-broker-registration"
LIFECYCLE_ACTIONS = ("broker_sends_registration", "broker_sends_heartbeat",
                     "controller_handles_broker_registration",
                     "controller_handles_broker_heartbeat", "broker_handles_lifecycle_response",
                     "controller_fences_stale_broker")


def test_broker_registration_conforms_over_the_ci_budget():
    """No divergence on kraft-broker-registration: the implementation's BrokerLifecycleManager
    and ClusterControlManager, on real BrokerRegistration / BrokerHeartbeat bytes, take every
    step the model takes and show the same registrations, lifecycle states and messages."""
    r = run_conformance(BROKER_CONFIG, seed=SEED, profile="ci")
    assert r.divergence is None, r.divergence_text()
    assert r.runs >= 60
    assert set(LIFECYCLE_ACTIONS) <= set(r.actions), r.actions


def _lifecycle_messages(cfg):
    """Builders of the model's lifecycle messages between C1 (node 0) and B2 (node 1)."""
    from model.state import (BROKER_HEARTBEAT_REQUEST, BROKER_HEARTBEAT_RESPONSE,
                             BROKER_REGISTRATION_REQUEST, BROKER_REGISTRATION_RESPONSE,
                             STATIC_ENDPOINTS, BrokerHeartbeatRequest, BrokerHeartbeatResponse,
                             BrokerRegistrationRequest, BrokerRegistrationResponse)
    c1, b2 = 0, 1
    listener = cfg.listener_index("CONTROLLER")
    principal = cfg.principal_names.index("broker")

    def registration(incarnation):
        # B2's listeners are configured in full: the same endpoints every run
        return tuple(BrokerRegistrationRequest(BROKER_REGISTRATION_REQUEST, b2, c1, listener, b2,
                                               incarnation, STATIC_ENDPOINTS, principal))

    def registered(incarnation, error, epoch):
        return tuple(BrokerRegistrationResponse(BROKER_REGISTRATION_RESPONSE, c1, b2, listener,
                                                incarnation, error, epoch))

    def heartbeat(incarnation, epoch, offset):
        return tuple(BrokerHeartbeatRequest(BROKER_HEARTBEAT_REQUEST, b2, c1, listener,
                                            incarnation, epoch, offset, principal))

    def heartbeat_answer(incarnation, error, is_fenced, registered_epoch):
        # registered_epoch: the model's ghost, left out of the comparison
        return tuple(BrokerHeartbeatResponse(BROKER_HEARTBEAT_RESPONSE, c1, b2, listener,
                                             incarnation, error, is_fenced, registered_epoch))
    return registration, registered, heartbeat, heartbeat_answer


def test_hand_written_broker_lifecycle_trace_conforms():
    """B2 re-registers its running incarnation (BL-8) and keeps its epoch 1 (BR-5, 3.9), is
    answered after the commit, heartbeats and stays unfenced; B2 crashes, its session expires
    (BH-9) and C1 fences it (BH-10); B2 restarts as a new incarnation (BL-1), registers fenced
    with epoch 4, the offset of its record (BR-3), replays up to it and its heartbeat unfences it
    (BH-7): the model's trace, step by step, on the implementation."""
    cfg = CONFIGS[BROKER_CONFIG]
    registration, registered, heartbeat, heartbeat_answer = _lifecycle_messages(cfg)
    steps = (
        Step("broker_sends_registration", (1,)),
        Step("controller_handles_broker_registration", (registration(0),)),
        Step("controller_commits_records", ()),
        Step("broker_handles_lifecycle_response", (registered(0, 0, 1),)),
        Step("broker_sends_heartbeat", (1,)),
        Step("controller_handles_broker_heartbeat", (heartbeat(0, 1, 1),)),
        Step("broker_handles_lifecycle_response", (heartbeat_answer(0, 0, 0, 1),)),
        Step("node_crashes", (1,)),
        Step("clock_ticks", ()),
        Step("clock_ticks", ()),
        Step("controller_fences_stale_broker", (1,)),
        Step("controller_commits_records", ()),
        Step("node_restarts", (1,)),
        Step("broker_learns_controller", (1,)),
        Step("broker_sends_registration", (1,)),
        Step("controller_handles_broker_registration", (registration(1),)),
        Step("controller_commits_records", ()),
        Step("broker_handles_lifecycle_response", (registered(1, 0, 4),)),
        Step("node_replays_record", (1,)),
        Step("node_replays_record", (1,)),
        Step("node_replays_record", (1,)),
        Step("broker_sends_heartbeat", (1,)),
        Step("controller_handles_broker_heartbeat", (heartbeat(1, 4, 4),)),
        Step("controller_commits_records", ()),
        Step("broker_handles_lifecycle_response", (heartbeat_answer(1, 0, 0, 4),)),
    )
    from model.observe import observe
    states = model_next.replay(cfg, Driver(cfg, 0).design, steps)
    end = observe(states[-1], cfg)
    assert end.broker_registrations == ((1, 0, 1, -1), (1, 0, 1, -1), (1, 1, 4, -1))
    assert end.broker_lifecycles == ((True, 4),)
    for seed in (0, SEED):
        assert check_steps(cfg, steps, seed=seed) is None


def test_a_new_incarnation_within_the_old_session_is_a_duplicate_registration():
    """BR-4.4, BR-8: B2 crashes and restarts at once; its old incarnation's session is still
    valid, so the new incarnation is refused DUPLICATE_BROKER_REGISTRATION (101) with epoch -1
    (BR-1), and the broker keeps retrying with the same incarnation (BL-5)."""
    cfg = CONFIGS[BROKER_CONFIG]
    registration, registered, _, _ = _lifecycle_messages(cfg)
    steps = (
        Step("node_crashes", (1,)),
        Step("node_restarts", (1,)),
        Step("broker_learns_controller", (1,)),
        Step("broker_sends_registration", (1,)),
        Step("controller_handles_broker_registration", (registration(1),)),
        Step("broker_handles_lifecycle_response", (registered(1, 101, -1),)),
        Step("broker_sends_registration", (1,)),
    )
    model_next.replay(cfg, Driver(cfg, 0).design, steps)
    assert check_steps(cfg, steps, seed=SEED) is None


def test_broker_timeouts_are_the_models_ticks():
    """BH-1: broker.session.timeout.ms is session_timeout ticks (9000 ms, Kafka's default, for
    one tick) and broker.heartbeat.interval.ms one tick, in every node's server.properties."""
    cfg = CONFIGS[BROKER_CONFIG]
    tick = tick_ms(cfg)
    assert tick * cfg.session_timeout == 9_000
    cc = cluster_config(cfg)
    assert cc.broker_registration and cc.initially_registered_brokers == (1,)
    for node in cc.nodes:
        props = node.props()
        assert props["broker.session.timeout.ms"] == str(cfg.session_timeout * tick)
        assert props["broker.heartbeat.interval.ms"] == str(tick)
    other = cluster_config(CONFIGS["kraft-listeners"])
    assert "broker.session.timeout.ms" not in other.nodes[0].props()


# ---- the ZK-to-KRaft migration (MG-1..MG-7) ---------------------------------------------------

# each migration variant's counterexample to P1's kraft-controller-sole-zk-writer, as the
# explorer finds it: B2 (node 1) writes ZooKeeper after C3 (node 2) claimed /controller
MIGRATION_VARIANT_TRACES = {
    "entity-config-check-passes-recreated-controller": (
        "zk-migration", (Step("client_sends_request", (0,)),
                         Step("controller_claims_zk_leadership", (2,)),
                         Step("broker_writes_entity_config", (1,)))),
    "entity-config-write-unchecked": (
        "zk-migration", (Step("controller_claims_zk_leadership", (2,)),
                         Step("client_sends_request", (0,)))),
    "claims-before-brokers-ready": (
        "zk-migration-bounce", (Step("controller_claims_zk_leadership", (2,)),
                                Step("client_sends_request", (0,)))),
}


@pytest.mark.parametrize("variant", sorted(MIGRATION_VARIANT_TRACES))
def test_the_injected_migration_bug_is_the_models_variant(variant):
    """The cluster with the bug named after a migration variant takes the variant's
    counterexample in lockstep with the variant's model, ending in the write that violates P1
    (kraft-controller-sole-zk-writer); the variant's model against the default implementation,
    and the default model against the bug, diverge."""
    from model.config import VARIANTS
    from properties.registry import kraft_controller_sole_zk_writer
    config, trace = MIGRATION_VARIANT_TRACES[variant]
    cfg, design = CONFIGS[config], VARIANTS[variant].design
    d = Driver(cfg, SEED, design, bugs=(variant,))
    assert d.start() is None
    for st in trace:
        div = d.apply(st)
        assert div is None, div.describe()
    assert not kraft_controller_sole_zk_writer(d.state, cfg, design)
    writes = [(w.client, w.writer, w.writer_epoch) for w in d.cluster.durable_writes()]
    assert writes == [("A1", 1, -1)]
    assert d.cluster.zkc.controller() == 2
    div = check_steps(cfg, trace, seed=SEED, design=design)
    assert div is not None and div.index <= len(trace)
    if variant != "claims-before-brokers-ready":
        # the default model does not take the claim first; the bug is seen on the same trace
        div = check_steps(cfg, trace, seed=SEED, bugs=(variant,))
        assert div is not None and div.kind == "observation"


def test_free_running_cluster_with_claims_before_brokers_ready_is_not_the_default_model():
    """The claim the injected bug lets the KRaft controller make while B2 is on the old IBP is
    a step the default model cannot take (WAIT_FOR_BROKERS), and one the variant can."""
    from model.config import VARIANTS
    variant = "claims-before-brokers-ready"
    cfg = CONFIGS["zk-migration-bounce"]
    caught = 0
    for seed in range(8):
        steps, div = validate_impl_run(cfg, seed, max_steps=40, bugs=(variant,))
        if div is not None:
            assert div.kind == "the model cannot take the implementation's step"
            assert div.step.action == "controller_claims_zk_leadership"
            caught += 1
        steps, div = validate_impl_run(cfg, seed, max_steps=40, bugs=(variant,),
                                       design=VARIANTS[variant].design)
        assert div is None, div.describe()
    assert caught >= 2


def test_migration_view_covers_pending_entity_config_writes():
    """The projection compares the migration's state besides the observation: B2's entity-
    config write between its read of /controller and its multi shows on both sides, and an
    implementation that loses it is a divergence of kind "migration"."""
    from properties.conformance import _compare, model_migration_view
    cfg = CONFIGS["zk-migration"]
    d = Driver(cfg, SEED)
    assert d.start() is None
    assert d.apply(Step("client_sends_request", (0,))) is None
    view = d.proj.migration(d.cluster)
    assert view == model_migration_view(d.state, cfg)
    assert view.config_writes == ((), ((0, 1),)) and view.legacy_ibp == (False, False)
    assert view.controllers == ((True, 1, 1), (False, -1, -1), (False, -1, -1))
    assert view.controller == 0 and view.controller_epoch == (1, 1)
    d.cluster.zkc.brokers[1].config_writes.clear()
    div = _compare(d.proj, d.cluster, d.state, 1, d.steps[-1], d.steps)
    assert div is not None and div.kind == "migration"
    assert div.model == {"config_writes": ((), ((0, 1),))}
    assert div.impl == {"config_writes": ((), ())}


def test_a_zk_controller_deposed_by_the_claim_is_fenced_in_lockstep():
    """B1's session expires, B2 is elected (epoch 2), C3 claims /controller (epoch 3) while
    B2's session lives; B2's metadata cache learns C3 but its KafkaController still acts, so
    A1's IncrementalAlterConfigs is queued at B2, whose write fails the /controller_epoch
    CheckOp: NOT_CONTROLLER to A1, nothing written -- on both sides, step by step."""
    cfg = CONFIGS["zk-migration"]
    trace = (Step("zk_expires_session", (0,)), Step("broker_elects_controller", (1,)),
             Step("controller_claims_zk_leadership", (2,)), Step("broker_learns_controller", (1,)),
             Step("client_sends_request", (0,)), Step("controller_processes_event", (1,)))
    d = Driver(cfg, SEED)
    assert d.start() is None
    for st in trace:
        div = d.apply(st)
        assert div is None, div.describe()
    assert [r.error_code for r in d.cluster.client_results()["A1"]] == [41]
    view = d.proj.migration(d.cluster)
    assert view.controller == 2 and view.controller_epoch == (3, 3)
    assert view.controllers == ((True, 1, 1), (False, -1, -1), (True, 3, 3))   # B1: a zombie
    assert d.cluster.durable_writes() == []


# ---- topics requests need (AT-1..AT-5) -----------------------------------------------------------

def _auto_topic_trace(d: Driver, actions) -> None:
    """Apply ``actions`` to both sides in lockstep: a message action takes the one model
    message of its kinds in flight, a node action broker B2 (node 1)."""
    for name in actions:
        if isinstance(name, Step):
            st = name
        else:
            spec = model_next.ACTION_BY_NAME[name]
            if spec.arg == model_next.MSG_ARG:
                (m,) = [m for m in d.state.network if m.kind in spec.msg_kinds]
                st = Step(name, (tuple(m),))
            elif spec.arg == model_next.NODE_ARG:
                st = Step(name, (1,))
            else:
                st = Step(name, ())
        div = d.apply(st)
        assert div is None, div.describe()


# the variant's counterexample to P11, as the explorer shows it, and the clause it violates
AUTO_TOPIC_VARIANT_TRACES = {
    # F1 makes B2 ask C1 for __consumer_offsets, which C1's policy refuses; the variant creates it
    "internal-topics-bypass-policy": (
        "kraft-internal-topics-policy",
        (Step("client_sends_request", (0,)), "channel_discovers_controller",
         "channel_sends_request", "controller_handles_create_topics",
         "controller_commits_records"),
        "created_topics_pass_policy"),
    # M1's Metadata for 'orders', which C1's policy refuses: Kafka answers
    # UNKNOWN_TOPIC_OR_PARTITION at once and only logs C1's POLICY_VIOLATION
    "auto-create-errors-only-logged": (
        "kraft-internal-topics",
        (Step("client_sends_request", (2,)), "channel_discovers_controller",
         "channel_sends_request", "controller_handles_envelope",
         "broker_handles_envelope_response"),
        "auto_creation_refusal_reaches_client"),
}


@pytest.mark.parametrize("variant", sorted(AUTO_TOPIC_VARIANT_TRACES))
def test_the_injected_auto_topic_bug_is_the_models_variant(variant):
    """The cluster with the bug named after an auto-topic variant takes the variant's
    counterexample to P11 in lockstep with the variant's model, ending in the state the clause
    refuses (a topic the policy refuses created; a refused Metadata answered
    UNKNOWN_TOPIC_OR_PARTITION); the default model against the bug, and the variant's model
    against the default implementation, diverge on the same trace."""
    from model.config import VARIANTS
    from properties import registry
    config, actions, clause = AUTO_TOPIC_VARIANT_TRACES[variant]
    cfg, design = CONFIGS[config], VARIANTS[variant].design
    d = Driver(cfg, SEED, design, bugs=(variant,))
    assert d.start() is None
    _auto_topic_trace(d, actions)
    assert not getattr(registry, clause)(d.state, cfg, design)
    if variant == "internal-topics-bypass-policy":
        assert [(t.name, t.principal) for t in d.cluster.created_topics()] == \
            [("__consumer_offsets", "broker")]
    else:
        assert [r.error_code for r in d.cluster.client_results()["M1"]] == [3]
        assert d.cluster.durable_writes() == []
    assert check_steps(cfg, d.steps, seed=SEED, design=design, bugs=(variant,)) is None
    wrong = check_steps(cfg, d.steps, seed=SEED, bugs=(variant,))
    assert wrong is not None and wrong.index <= len(d.steps)
    wrong = check_steps(cfg, d.steps, seed=SEED, design=design)
    assert wrong is not None and wrong.index <= len(d.steps)


def test_auto_topic_bugs_diverge_from_the_correct_model_under_hypothesis():
    """Each bug is found by ``run_conformance`` against the correct model within the ci budget,
    and the variant's design runs with it without a divergence."""
    from model.config import VARIANTS
    for variant in sorted(AUTO_TOPIC_VARIANT_TRACES):
        config = AUTO_TOPIC_VARIANT_TRACES[variant][0]
        r = run_conformance(config, seed=SEED, profile="ci", bugs=(variant,))
        assert r.divergence is not None, variant
        assert len(r.divergence.steps) <= 6
        r = run_conformance(config, seed=SEED, profile="ci", examples=20, bugs=(variant,),
                            design=VARIANTS[variant].design)
        assert r.divergence is None, r.divergence_text()


# who refuses what (AT-1, AT-2, AT-5, F-28): (principal of the clients, principal of B2, client,
# the answer the client gets once the trace is done)
REFUSALS = {
    "no DESCRIBE on the group": ("user", "broker", 0, 30, ("client_sends_request",)),
    "no DESCRIBE on the topic": ("user", "broker", 2, 29, ("client_sends_request",)),
    "no CREATE on the topic": ("reader", "broker", 2, 29, ("client_sends_request",)),
    "broker without CLUSTER_ACTION": (
        "admin", "broker-b3", 2, -1,
        ("client_sends_request", "channel_discovers_controller", "channel_sends_request",
         "controller_handles_envelope", "broker_handles_envelope_response")),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refused_requests_conform(case):
    """The refusals the tiny configurations' principals never meet, in lockstep on a variant of
    kraft-internal-topics: GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED for DESCRIBE
    and for CREATE, and an Envelope refused by C1 (F-28: UNKNOWN_SERVER_ERROR with the
    envelope's CLUSTER_AUTHORIZATION_FAILED); and a ci run of the variant conforms."""
    from dataclasses import replace
    from model import kafka
    principal, broker, client, code, actions = REFUSALS[case]
    base = CONFIGS["kraft-internal-topics"]
    acls = base.acls | {("reader", kafka.DESCRIBE_GROUP), ("reader", kafka.DESCRIBE_TOPIC)}
    cfg = replace(base, name=f"kraft-internal-topics-{principal}-{broker}", acls=acls,
                  clients=tuple(replace(c, principal=principal) for c in base.clients),
                  nodes=(base.nodes[0], replace(base.nodes[1], principal=broker)))
    d = Driver(cfg, SEED)
    assert d.start() is None
    _auto_topic_trace(d, (Step(actions[0], (client,)),) + actions[1:])
    name = cfg.clients[client].name
    assert [r.error_code for r in d.cluster.client_results()[name]] == [code]
    assert [r.code for r in d.state.clients[client].responses] == [code]
    r = run_conformance(cfg, seed=SEED, profile="ci", examples=20)
    assert r.divergence is None, r.divergence_text()


def test_the_auto_topic_view_compares_in_flight_topics_and_created_topics():
    """Conformance compares an ``AutoTopicView`` on kraft-internal-topics: B2's in-flight topics
    and own CreateTopicsRequests after F1's FindCoordinator agree; an implementation that lost
    the in-flight mark, or created the topic as another principal, is a divergence of kind
    "auto-topics"."""
    from properties.conformance import _compare, model_auto_topic_view
    cfg = CONFIGS["kraft-internal-topics"]
    d = Driver(cfg, SEED)
    assert d.start() is None
    _auto_topic_trace(d, (Step("client_sends_request", (0,)),))
    view = d.proj.auto_topics(d.cluster)
    offsets = cfg.topic_index("__consumer_offsets")
    assert view == model_auto_topic_view(d.state, cfg)
    assert view.inflight == ((offsets,),) and view.requests == (((offsets, False),),)
    d.cluster.nodes[1].auto_topics.inflight_topics.clear()
    div = _compare(d.proj, d.cluster, d.state, 1, d.steps[-1], d.steps)
    assert div is not None and div.kind == "auto-topics"
    assert div.model == {"inflight": ((offsets,),)} and div.impl == {"inflight": ((),)}
    d = Driver(cfg, SEED)
    _auto_topic_trace(d, (Step("client_sends_request", (0,)), "channel_discovers_controller",
                          "channel_sends_request", "controller_handles_create_topics",
                          "controller_commits_records"))
    broker = cfg.principal_names.index("broker")
    assert d.proj.auto_topics(d.cluster).topics == ((offsets, 0, 1, broker),)
    (topic_id,) = d.cluster._created_as
    d.cluster._created_as[topic_id] = "admin"
    div = _compare(d.proj, d.cluster, d.state, 5, d.steps[-1], d.steps)
    assert div is not None and div.kind == "auto-topics" and "topics" in div.model


def test_the_feature_check_bug_is_the_models_variant():
    """kraft-broker-features: B2's first process run omits kraft.version, finalized at 1.  The
    default implementation refuses its registration with UNSUPPORTED_VERSION as the model does
    (BR-4.9 with KAFKA-17305's check); with the bug registration-ignores-omitted-features
    (3.8.0) it registers in lockstep with the variant's model; each side against the other
    design diverges on the same steps."""
    from model.config import VARIANTS
    cfg = CONFIGS["kraft-broker-features"]
    design = VARIANTS["registration-ignores-omitted-features"].design
    steps = [Step("broker_sends_registration", (1,))]
    s = model_next.step(model_next.initial_state(cfg), cfg, design, steps[0])
    (m,) = [m for m in s.network if m.kind == BROKER_REGISTRATION_REQUEST]
    steps.append(Step("controller_handles_broker_registration", (tuple(m),)))
    assert check_steps(cfg, steps, seed=SEED) is None           # refused on both sides
    wrong = check_steps(cfg, steps, seed=SEED, bugs=("registration-ignores-omitted-features",))
    assert wrong is not None and wrong.index == 2
    wrong = check_steps(cfg, steps, seed=SEED, design=design)
    assert wrong is not None and wrong.index == 2
    steps.append(Step("controller_commits_records", ()))       # the variant's record commits
    assert check_steps(cfg, steps, seed=SEED, design=design,
                       bugs=("registration-ignores-omitted-features",)) is None


def test_the_feature_check_bug_diverges_under_hypothesis():
    r = run_conformance("kraft-broker-features", seed=SEED, profile="ci",
                        bugs=("registration-ignores-omitted-features",))
    assert r.divergence is not None
    assert len(r.divergence.steps) <= 4


def test_the_session_activation_bug_is_the_models_variant():
    """kraft-broker-failover: C2 becomes the active controller and B3 crashes.  The default
    implementation starts B3's session at activation (BR-13), so time runs on to its fence as
    in the model; with the bug activation-leaves-sessions-untracked (Kafka before KAFKA-18138's
    fix) nothing tracks a session, the fence timer waits for nothing and the clock cannot tick
    there: the implementation diverges from the shipped model at that tick, and runs in lockstep
    with the variant's model along the variant's counterexample."""
    from model.config import VARIANTS
    cfg = CONFIGS["kraft-broker-failover"]
    bug = ("activation-leaves-sessions-untracked",)
    failover = [Step("controller_becomes_leader", (1,)), Step("node_crashes", (2,))]
    fenced = failover + [Step("clock_ticks", ()), Step("clock_ticks", ()),
                         Step("controller_fences_stale_broker", (2,))]
    assert check_steps(cfg, fenced, seed=SEED) is None
    wrong = check_steps(cfg, fenced, seed=SEED, bugs=bug)
    assert wrong is not None and wrong.index == 3 and wrong.step == Step("clock_ticks", ())
    design = VARIANTS["activation-leaves-sessions-untracked"].design
    replays = [Step("node_replays_record", (1,))] * 2 + [Step("node_replays_record", (0,))] * 2
    assert check_steps(cfg, failover + replays, seed=SEED, design=design, bugs=bug) is None


def test_the_session_activation_bug_diverges_under_hypothesis():
    from model.config import VARIANTS
    bug = ("activation-leaves-sessions-untracked",)
    r = run_conformance("kraft-broker-failover", seed=SEED, profile="ci", bugs=bug)
    assert r.divergence is not None
    assert r.divergence.step == Step("clock_ticks", ())
    # against the variant's model the bug runs in lockstep
    r = run_conformance("kraft-broker-failover", seed=SEED, profile="ci", bugs=bug,
                        design=VARIANTS["activation-leaves-sessions-untracked"].design)
    assert r.divergence is None and r.steps > 500


def test_the_wrapped_not_controller_bug_is_the_models_variant():
    """kraft-forward-leader-change: with the bug not-controller-wrapped-as-unknown (Kafka before
    KAFKA-14167's fix) a controller that lost the leadership answers a client's write with
    UNKNOWN_SERVER_ERROR; it diverges from the shipped model at a leader change and runs in
    lockstep with the model's variant under Hypothesis."""
    from model.config import VARIANTS
    bug = ("not-controller-wrapped-as-unknown",)
    r = run_conformance("kraft-forward-leader-change", seed=SEED, profile="ci", bugs=bug)
    assert r.divergence is not None
    assert r.divergence.step.action == "controller_becomes_leader"
    r = run_conformance("kraft-forward-leader-change", seed=SEED, profile="ci", bugs=bug,
                        design=VARIANTS["not-controller-wrapped-as-unknown"].design)
    assert r.divergence is None and r.steps > 500


def test_what_observers_keep_equals_what_they_would_decode_afresh():
    """``message_views`` keeps a message's view while it is in flight (it is decoded once), a
    ZK cluster's ``writes`` scans only the new transactions, and /brokers/ids znodes are
    decoded once per content: at every step of seeded lockstep runs on every tiny
    configuration each equals what decoding everything afresh gives."""
    import random

    from impl.zk_controller import broker_id_path, decode_broker_info, zk_writes
    compared, carried, zk_steps, znodes = {}, 0, 0, 0
    for config in TINY:
        cfg = CONFIGS[config]
        rng = random.Random(7)
        compared[config] = 0
        for _ in range(12):
            d = Driver(cfg, rng.getrandbits(32))
            assert d.start() is None
            before: set = set()
            for _ in range(40):
                kept = d.cluster.message_views()
                fresh = [d.cluster.view(m) for m in d.cluster.network.in_flight()]
                assert kept == fresh, (config, kept, fresh)
                zkc = None if d.cluster.kraft else d.cluster.zkc
                if zkc is not None:
                    assert zkc.writes() == zk_writes(zkc.zk)
                    registered = zkc.registered_brokers()
                    for b, (info, _) in registered.items():
                        data = zkc.zk.peek(broker_id_path(b))[0]
                        assert info == decode_broker_info.__wrapped__(b, data)
                    zk_steps += 1
                    znodes += len(registered)
                compared[config] += len(kept)
                carried += sum(v.id in before for v in kept)
                before = {v.id for v in kept}
                succ = model_next.successors(d.state, cfg, d.design)
                if not succ:
                    break
                assert d.apply(succ[rng.randrange(len(succ))][0]) is None
    # messages were in flight on most configurations, and many stayed in flight across steps
    # (their kept view was compared)
    assert sum(n > 0 for n in compared.values()) >= len(TINY) // 2, compared
    assert carried >= 50, carried
    assert zk_steps >= 100 and znodes > 0, (zk_steps, znodes)
