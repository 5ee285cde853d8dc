"""Every tiny configuration under the correct design: no violation, every witness reached,
reachable-state counts pinned with and without symmetry (done-when item 2)."""
import pytest
from tiers import slow_unless

from model.configs import CONFIGS, TINY
from properties.explore import explore
from properties.kafka_spec import KafkaSpec
from properties.registry import WITNESSES

# (distinct states without symmetry, with symmetry)
PINNED = {
    "zk-forward-zombie": (2690, 2690),
    "kraft-forward-leader-change": (5744, 3030),
    "kraft-registration": (36447, 36447),
    "kraft-listeners": (13832, 13832),
    "zk-envelope-security": (1626, 1626),
    "kraft-registration-leader-loss": (252, 252),
    "zk-controller-crash": (2315, 2315),
    "kraft-misconfigured": (18360, 18360),
    "kraft-registration-leader-change": (2679, 2679),
    "kraft-broker-registration": (30390, 30390),
    "kraft-controller-endpoints": (10941, 10941),
    "kraft-broker-endpoints": (23975, 23975),
    "zk-broker-registration": (152, 152),
    "zk-migration": (671, 671),
    "zk-migration-bounce": (452, 452),
    "kraft-internal-topics": (3870, 3870),
    "kraft-internal-topics-policy": (788, 788),
    "kraft-broker-features": (3044, 3044),
    "kraft-broker-failover": (90317, 90317),
    "kraft-broker-features-v0": (860, 860),
    "kraft-forwarder-without-serde": (122, 122),
    "kraft-metadata-leaders": (15868, 15868),
}


def test_every_tiny_configuration_is_pinned():
    assert set(PINNED) == set(TINY)


@pytest.mark.parametrize("name", TINY)
def test_correct_design_holds_and_reaches_every_witness(name):
    """One exploration per tiny configuration answers for the safety properties, the
    witnesses, the pinned count and the whole-graph checks (SETTLE, DEADLOCK, PROGRESS:
    tests/test_settle.py and tests/test_progress.py show each one can fail)."""
    result = explore(KafkaSpec.named(name))
    assert result.complete
    assert result.violation is None, result.trace
    assert result.witnesses_missing == ()
    assert set(result.witnesses_reached) == set(CONFIGS[name].witnesses)
    assert result.distinct == PINNED[name][0]
    assert result.graph_checked
    assert result.graph_violation is None, (result.graph_violation, result.graph_trace)
    assert 0 < result.graph_bytes < 100 * result.generated


# Symmetry reduction changes nothing where a configuration declares no interchangeable nodes:
# the default run keeps the one configuration that declares them and one that declares none.
SYMMETRY_DEFAULT = {"kraft-forward-leader-change", "zk-envelope-security"}


@pytest.mark.parametrize("name", slow_unless(TINY, SYMMETRY_DEFAULT))
def test_symmetry_count_is_pinned_and_no_larger(name):
    result = explore(KafkaSpec.named(name), symmetry=True)
    assert result.complete and result.violation is None
    assert result.witnesses_missing == ()
    assert result.distinct == PINNED[name][1]
    assert PINNED[name][1] <= PINNED[name][0]


def test_symmetry_reduces_where_nodes_are_interchangeable():
    plain, sym = PINNED["kraft-forward-leader-change"]
    assert sym < plain


def test_every_configuration_names_known_witnesses():
    for cfg in CONFIGS.values():
        assert set(cfg.witnesses) <= set(WITNESSES), cfg.name
    used = {w for name in TINY for w in CONFIGS[name].witnesses}
    assert len(used) >= 8
    assert used == set(WITNESSES), set(WITNESSES) - used
