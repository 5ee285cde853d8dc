"""A simulated Kafka cluster: the reference implementation's servers wired to the
deterministic simulator's network (``impl/sim.py``).

Each node is a process with Kafka's parts:

- every node: its ``server.properties`` validated by ``impl.config`` (L-0..L-27), listeners
  bound to addresses (port 0: a fresh port per process run, EP-5), a principal it
  authenticates as; a KRaft node registers its advertised listeners as the run resolved them
  (EP-1);
- a broker: the metadata cache's controller, a ``ForwardingManager`` on a ``ControllerChannel``
  (F-1..F-21, table 1.6), DescribeCluster (D-2), and in ZK mode its ``KafkaController`` and the
  EnvelopeRequest receiving side (F-22..F-27) over a shared ZooKeeper (``impl/zk_controller``);
- a KRaft controller: a ``QuorumController`` over the shared ``RaftQuorum`` (``impl/kraft``),
  the receiving side (F-28..F-30), DescribeCluster (D-1), and its
  ``ControllerRegistrationManager`` (R-1..R-22) on its own ``ControllerChannel``;
- with KRaft broker registration: a broker's ``BrokerLifecycleManager`` (BL-1..BL-12) and a
  controller's ``ClusterControlManager`` (BR-1..BR-13, BH-1..BH-11), the leader's active;
- topics requests need (``impl/auto_topics``, AT-1..AT-5): a KRaft broker answers
  FindCoordinator and Metadata itself, its ``AutoTopicCreationManager`` asks the active
  controller for the topics its metadata image lacks, on the forwarding channel; the
  controller runs ``ControllerApis.handleCreateTopics`` with the create-topic policy;
- in a ZK-to-KRaft migration: a KRaft controller next to the ZK brokers
  (``impl/zk_migration``) that claims /controller once every broker runs the new IBP (MG-5),
  receives their EnvelopeRequests on its controller listener and dual-writes them to ZooKeeper;
  a broker forwards only with migration on and an IBP >= 3.4-IV0 (MG-1), IncrementalAlterConfigs
  only to a KRaft controller (F-6), and writes it itself otherwise, behind reads of /controller
  and a CheckOp (MG-6); an operator's second rolling bounce raises a broker's IBP;
- with ZooKeeper broker registration: each ZK broker's /brokers/ids/<id> (ZB-1..ZB-10), from
  ``KafkaServer.createBrokerInfo`` over its current (dynamically updated) advertised listeners,
  registered again after a session expiry, rewritten by an operator's listener update; a ZK
  broker's DescribeCluster answers from those znodes.

Bytes travel between nodes as ``Message``s: requests built by the channels (real
EnvelopeRequest / ControllerRegistrationRequest bytes; BrokerRegistration and BrokerHeartbeat
requests built from the lifecycle manager's bodies), responses built by the receivers.  An
admin client's request is handled on arrival (the client link is reliable; the faults are on the
inter-node network and in the processes).

``events()`` lists what can happen next, in a fixed order; ``apply(event)`` does it and says
whether it was enabled (an exception out of a step is a bug in the implementation and
propagates).  The event names are Kafka-worded steps (``channel_sends_request``,
``controller_handles_envelope``, ``node_crashes``...) so that one adapter can line them up with
another description of the same protocol; nothing here imports it.

``Cluster`` combines three layers, one module each:

- ``wiring``: the nodes started and bound to the network (``ClusterWiring``; ``Node``,
  ``Conn``, ``Acls``; the registration bugs a cluster can run with);
- ``steps``: what can happen next and what it does (``ClusterSteps``; ``STEPS``, ``FAULTS``);
- ``observation``: what an observer reads (``ClusterObservation``; ``ClientResult``,
  ``DurableWrite``, ``Registration``, ``BrokerRegistrationView``, ``MessageView``).
"""
from __future__ import annotations

from impl.cluster.observation import (AutoTopicState, BrokerRegistrationView, ClientResult,
                                      ClusterObservation, CreatedTopic, DurableWrite, MessageView,
                                      Registration, ZkBrokerRegistrationView)
from impl.cluster.steps import (CLIENT_MAX_VERSION, DENIED, FAULTS, MUTATION_ACL, STEPS,
                                ClusterSteps)
from impl.cluster.wiring import (ACTIVATION_LEAVES_SESSIONS_UNTRACKED,
                                 NOT_CONTROLLER_WRAPPED_AS_UNKNOWN,
                                 AUTO_CREATE_ERRORS_ONLY_LOGGED, AUTO_TOPIC_BUGS,
                                 BROKER_INFO_NOT_CACHED, BROKER_INFO_UPDATE_RACES_REGISTRATION,
                                 CLAIMS_BEFORE_BROKERS_READY,
                                 ENTITY_CONFIG_CHECK_PASSES_RECREATED_CONTROLLER,
                                 ENTITY_CONFIG_WRITE_UNCHECKED, INTERNAL_TOPICS_BYPASS_POLICY,
                                 KAFKA_REGISTRATION_NO_RECHECK,
                                 MIGRATION_BUGS, REGISTERS_UNRESOLVED_ENDPOINTS,
                                 REGISTRATION_IGNORES_OMITTED_FEATURES,
                                 REGISTRATION_BUGS, ZK_REGISTRATION_BUGS, Acls, ClusterWiring,
                                 Conn, Node)


class Cluster(ClusterSteps, ClusterObservation, ClusterWiring):
    """A simulated cluster of ``config``'s nodes, its random draws from ``Random(seed)``:
    ``ClusterWiring`` starts it, ``ClusterSteps`` runs it, ``ClusterObservation`` shows it."""


__all__ = [
    "Cluster", "STEPS", "FAULTS", "KAFKA_REGISTRATION_NO_RECHECK", "REGISTRATION_BUGS",
    "REGISTERS_UNRESOLVED_ENDPOINTS", "ZK_REGISTRATION_BUGS", "BROKER_INFO_NOT_CACHED",
    "BROKER_INFO_UPDATE_RACES_REGISTRATION", "MIGRATION_BUGS", "CLAIMS_BEFORE_BROKERS_READY",
    "ENTITY_CONFIG_WRITE_UNCHECKED", "ENTITY_CONFIG_CHECK_PASSES_RECREATED_CONTROLLER",
    "AUTO_TOPIC_BUGS", "INTERNAL_TOPICS_BYPASS_POLICY", "AUTO_CREATE_ERRORS_ONLY_LOGGED",
    "REGISTRATION_IGNORES_OMITTED_FEATURES", "ACTIVATION_LEAVES_SESSIONS_UNTRACKED",
    "NOT_CONTROLLER_WRAPPED_AS_UNKNOWN",
    "ClientResult", "DurableWrite", "Registration", "BrokerRegistrationView", "MessageView",
    "ZkBrokerRegistrationView", "CreatedTopic", "AutoTopicState",
    "Acls", "Conn", "Node", "MUTATION_ACL", "DENIED", "CLIENT_MAX_VERSION",
    "ClusterWiring", "ClusterSteps", "ClusterObservation",
]
