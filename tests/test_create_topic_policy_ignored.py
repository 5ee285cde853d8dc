from model.step import Step
from properties.trace import Trace, replay


def test_kraft_internal_topics_create_topic_policy_ignored():
    """P11 on kraft-internal-topics under create-topic-policy-ignored."""
    steps = (
        # M1 (principal admin) sends Metadata for topic orders, allowing auto-creation, to B2 on
        #   CLIENT
        Step('client_sends_request', (2,)),
        # B2's controller channel looks up the active controller
        Step('channel_discovers_controller', (1,)),
        # B2's controller channel sends the head of its queue to the controller it has cached
        Step('channel_sends_request', (1,)),
        # C1 handles B2's EnvelopeRequest on CONTROLLER carrying the CreateTopics v7 of topic orders
        #   for M1's Metadata
        Step('controller_handles_envelope', ((0, 1, 0, 1, 2, 7, 1, 1),)),
    )
    result = replay(Trace('kraft-internal-topics', 'create-topic-policy-ignored', steps,
                          'P11'))
    assert result.violation[0] == 'P11'
