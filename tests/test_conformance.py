"""Conformance: the reference implementation (impl/) against the model, step by step."""
from __future__ import annotations

import pytest

from model import next as model_next
from model.configs import CONFIGS, TINY
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
