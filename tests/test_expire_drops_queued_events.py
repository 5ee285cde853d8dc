from model.step import Step
from properties.trace import Trace, replay


def test_zk_forward_zombie_expire_drops_queued_events_progress():
    """PROGRESS on zk-forward-zombie under expire-drops-queued-events: the last state owes an
    answer that no path without a fault gives."""
    steps = (
        # A1 (principal admin) sends CreateTopics to B2 on CLIENT
        Step('client_sends_request', (0,)),
        # B2's controller channel looks up the active controller
        Step('channel_discovers_controller', (1,)),
        # B2's controller channel sends the head of its queue to the controller it has cached
        Step('channel_sends_request', (1,)),
        # ZooKeeper expires B1's session (B1 keeps running and does not know yet)
        Step('zk_expires_session', (0,)),
        # B1 handles B2's EnvelopeRequest on INTERNAL carrying A1's CreateTopics v7
        Step('controller_handles_envelope', ((0, 1, 0, 1, 0, 7, 1, 1),)),
        # B1 learns that ZooKeeper expired its session and opens a new one
        Step('broker_handles_session_expiry', (0,)),
    )
    result = replay(Trace('zk-forward-zombie', 'expire-drops-queued-events', steps,
                          graph_check='PROGRESS', loop_start=None))
    assert result.reproduced, result.graph.detail
