"""Each node's listeners, published in the shared data dir and read by the others."""

from kgroup.storage.node_listeners import NodeListeners, publish_listeners


def test_nodes_are_found_by_listener_name_and_a_restart_with_new_ports_is_seen(tmp_path):
    publish_listeners(tmp_path, 0, {"PLAINTEXT": ("PLAINTEXT", ("h0", 1)), "SECURE": ("SASL_SSL", ("h0", 2))})
    publish_listeners(tmp_path, 1, {"PLAINTEXT": ("PLAINTEXT", ("h1", 1))})
    peers = NodeListeners(tmp_path, [0, 1, 2])                     # node 2 never published
    assert peers.on("SECURE") == {0: ("h0", 2)}
    assert peers.on("PLAINTEXT") == {0: ("h0", 1), 1: ("h1", 1)}
    publish_listeners(tmp_path, 1, {"SECURE": ("SASL_SSL", ("h1", 12345))})
    assert peers.on("SECURE") == {0: ("h0", 2), 1: ("h1", 12345)}
    (tmp_path / "cluster" / "listeners" / "0.json").write_text("{not json")
    assert peers.on("SECURE") == {1: ("h1", 12345)}                # unreadable: as if unpublished
