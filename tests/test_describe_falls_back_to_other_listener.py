from model.step import Step
from properties.trace import Trace, replay


def test_kraft_listeners_describe_falls_back_to_other_listener():
    """P5 on kraft-listeners under describe-falls-back-to-other-listener."""
    steps = (
        # D1 (principal admin) sends DescribeCluster for broker endpoints to B1 on CLIENT
        Step('client_sends_request', (0,)),
    )
    result = replay(Trace('kraft-listeners', 'describe-falls-back-to-other-listener', steps,
                          'P5'))
    assert result.violation[0] == 'P5'
