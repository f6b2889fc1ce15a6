"""kgroup as a test bed: brokers and clusters for tests, faults on demand, group state to
wait on — from Python here, from any language over the control API's HTTP.

    from kgroup.testing import Broker

    with Broker() as broker:
        ...  # broker.bootstrap for clients; broker.add_fault(...), broker.wait_for_group(...)

    with Cluster(nodes=3) as cluster:
        ...  # the same, and cluster.move_coordinator(...), cluster.kill_node(...), ...

With pytest, the plugin (installed with kgroup) gives the fixtures `kgroup_broker` and
`kgroup_cluster` (a fresh one per test) and `kgroup_broker_session` /
`kgroup_cluster_session` (one per test session). docs/testing.md has the whole story.

Importing this package imports neither pytest nor the broker: brokers run as processes.
"""

from kgroup.testing.broker import Broker
from kgroup.testing.cluster import Cluster
from kgroup.testing.control import ControlClient, ControlError, GroupWaitTimeout

__all__ = ["Broker", "Cluster", "ControlClient", "ControlError", "GroupWaitTimeout"]
