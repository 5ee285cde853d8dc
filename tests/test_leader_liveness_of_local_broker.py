from model.step import Step
from properties.trace import Trace, replay


def test_kraft_metadata_leaders_leader_liveness_of_local_broker():
    """P5 on kraft-metadata-leaders under leader-liveness-of-local-broker."""
    steps = (
        # B3 crashes
        Step('node_crashes', (2,)),
        # M1 (principal admin) sends Metadata for topic orders, allowing auto-creation, to B2 on
        #   CLIENT
        Step('client_sends_request', (0,)),
    )
    result = replay(Trace('kraft-metadata-leaders', 'leader-liveness-of-local-broker', steps,
                          'P5'))
    assert result.violation[0] == 'P5'
