"""The Kafka cluster helper's configs (pure: no JVM): one dedicated controller that is the
only quorum voter, brokers that know it and replicate internal topics 3 ways."""

from pathlib import Path

from kgroup.testing.reference_cluster import CONTROLLER_ID, cluster_configs


def test_roles_quorum_and_replication():
    configs = cluster_configs("127.0.0.1", 9000, [9001, 9002, 9003], Path("/d"), {"x.y": 1},
                              node_timeout_ms=3000)
    assert sorted(configs) == [CONTROLLER_ID, 1, 2, 3]
    controller = configs[CONTROLLER_ID]
    assert controller["process.roles"] == "controller"
    assert controller["listeners"] == "CONTROLLER://127.0.0.1:9000"
    assert "advertised.listeners" not in controller and "x.y" not in controller
    assert controller["broker.session.timeout.ms"] == 3000
    for node_id, port in ((1, 9001), (2, 9002), (3, 9003)):
        broker = configs[node_id]
        assert broker["process.roles"] == "broker" and broker["node.id"] == node_id
        assert broker["controller.quorum.voters"] == f"{CONTROLLER_ID}@127.0.0.1:9000"
        assert broker["controller.listener.names"] == "CONTROLLER"
        assert broker["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{port}"
        assert broker["offsets.topic.replication.factor"] == 3
        assert broker["min.insync.replicas"] == 2
        assert broker["log.dirs"] == f"/d/node-{node_id}"
        assert broker["x.y"] == 1
        assert broker["broker.session.timeout.ms"] == broker["replica.lag.time.max.ms"] == 3000
    assert len({c["log.dirs"] for c in configs.values()}) == 4
