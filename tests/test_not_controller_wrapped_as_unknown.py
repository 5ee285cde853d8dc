from model.step import Step
from properties.trace import Trace, replay


def test_kraft_forward_leader_change_not_controller_wrapped_as_unknown():
    """P7 on kraft-forward-leader-change under not-controller-wrapped-as-unknown."""
    steps = (
        # A1 (principal admin) sends CreateTopics to B1 on CLIENT
        Step('client_sends_request', (0,)),
        # B1's controller channel looks up the active controller
        Step('channel_discovers_controller', (0,)),
        # B1's controller channel sends the head of its queue to the controller it has cached
        Step('channel_sends_request', (0,)),
        # C3 becomes the active controller with a new leader epoch
        Step('controller_becomes_leader', (3,)),
        # C1 handles B1's EnvelopeRequest on CONTROLLER carrying A1's CreateTopics v7
        Step('controller_handles_envelope', ((0, 0, 1, 1, 0, 7, 1, 1),)),
        # B1 handles C1's EnvelopeResponse for A1's CreateTopics, which says NONE, the inner
        #   response carrying UNKNOWN_SERVER_ERROR
        Step('broker_handles_envelope_response', ((1, 1, 0, 1, 0, 0, -1, 0),)),
    )
    result = replay(Trace('kraft-forward-leader-change', 'not-controller-wrapped-as-unknown', steps,
                          'P7'))
    assert result.violation[0] == 'P7'
