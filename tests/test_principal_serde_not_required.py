from model.step import Step
from properties.trace import Trace, replay


def test_kraft_forwarder_without_serde_principal_serde_not_required():
    """P7 on kraft-forwarder-without-serde under principal-serde-not-required."""
    steps = (
        # A1 (principal admin) sends CreateTopics to B1 on CLIENT
        Step('client_sends_request', (0,)),
    )
    result = replay(Trace('kraft-forwarder-without-serde', 'principal-serde-not-required', steps,
                          'P7'))
    assert result.violation[0] == 'P7'
