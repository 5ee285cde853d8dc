"""BR-4.9: the supported features of a broker registration (processRegistrationFeature), with
KAFKA-17305's check of a finalized feature the registration omits."""
from impl.broker_registration import ClusterControlManager
from impl.cluster_config import NodeConfig
from impl.kraft import KRAFT_VERSION, METADATA_VERSION

MV = {"Name": METADATA_VERSION, "MinSupportedVersion": 1, "MaxSupportedVersion": 20}
KV = {"Name": KRAFT_VERSION, "MinSupportedVersion": 0, "MaxSupportedVersion": 1}
features = ClusterControlManager._features


def test_a_finalized_level_inside_every_listed_range_is_registered_with_those_features():
    assert features([MV, KV], {METADATA_VERSION: 15, KRAFT_VERSION: 1}) == [MV, KV]


def test_a_finalized_level_outside_a_listed_range_is_refused():
    assert features([MV], {METADATA_VERSION: 21}) is None
    assert features([dict(KV, MaxSupportedVersion=0), MV],
                    {METADATA_VERSION: 15, KRAFT_VERSION: 1}) is None


def test_an_omitted_metadata_version_is_taken_as_one_to_one():
    assert features([], {METADATA_VERSION: 1}) == [
        {"Name": METADATA_VERSION, "MinSupportedVersion": 1, "MaxSupportedVersion": 1}]
    assert features([], {METADATA_VERSION: 15}) is None


def test_an_omitted_kraft_version_supports_only_level_zero():
    """KAFKA-17305's fix: refused while kraft.version is finalized at 1, accepted at 0 (no
    FeatureLevel at all)."""
    assert features([MV], {METADATA_VERSION: 15, KRAFT_VERSION: 1}) is None
    assert features([MV], {METADATA_VERSION: 15}) == [MV]


def test_kafka_3_8_0_does_not_check_an_omitted_feature():
    assert features([MV], {METADATA_VERSION: 15, KRAFT_VERSION: 1}, ignore_omitted=True) == [MV]
    # a listed feature is still checked
    assert features([dict(KV, MaxSupportedVersion=0), MV],
                    {METADATA_VERSION: 15, KRAFT_VERSION: 1}, ignore_omitted=True) is None


def test_each_process_run_registers_its_own_softwares_features():
    old = (("metadata.version", 1, 20),)
    new = old + (("kraft.version", 0, 1),)
    node = NodeConfig(1, "B2", "broker", (), "broker", software=(old, new))
    assert node.features(0) == {"metadata.version": (1, 20)}
    assert node.features(1) == {"metadata.version": (1, 20), "kraft.version": (0, 1)}
    assert node.features(5) == node.features(1)                 # later runs keep the last
    assert NodeConfig(1, "B2", "broker", (), "broker").features(0) is None
