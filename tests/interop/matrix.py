"""The client matrix: every client × feature, a test that shows it working with kgroup or the
reason the client lacks the feature. docs/clients.md is generated from it (docs.py);
test_docs.py fails when the doc is stale or a test named here does not exist.

A test is named `path::function`, with `[param]` for one case of a parametrized test.
"""

from __future__ import annotations

from dataclasses import dataclass

FEATURES = (
    "classic groups", "consumer protocol", "static members", "cooperative", "offsets", "share groups",
    "transactions", "idempotence", "SASL SCRAM", "SASL PLAIN", "TLS", "admin",
)
CLIENTS = (
    "kafka-python 3.0", "aiokafka 0.14", "confluent-kafka 2.16", "kgroup client", "kafkajs 2.2",
    "@platformatic/kafka 1.35", "Java clients 4.4", "franz-go 1.22", "sarama 1.61", "kcat 1.7",
)


@dataclass(frozen=True)
class Cell:
    tests: tuple[str, ...] = ()
    reason: str = ""          # without tests: why the client lacks it; with tests: what is pending
    needs: str = ""           # the issue kgroup needs before this client can use the feature


def T(*tests: str, reason: str = "") -> Cell:
    return Cell(tuple(tests), reason)


def lacks(reason: str) -> Cell:
    return Cell((), reason)


def needs(issue: str, reason: str) -> Cell:
    return Cell((), reason, issue)


def node_ids() -> list[str]:
    """Every test the matrix names, once."""
    return sorted({t for cells in CELLS.values() for cell in cells.values() for t in cell.tests})


I = "tests/integration/"
X = "tests/interop/"
SEC = I + "test_security.py::"
CELLS: dict[str, dict[str, Cell]] = {
    "kafka-python 3.0": {
        "classic groups": T(I + "test_classic_groups.py::test_group_of_three_consumes_everything_once_and_commits[kafka-python]"),
        "consumer protocol": lacks("kafka-python has no KIP-848 consumer (JoinGroup/SyncGroup only)"),
        "static members": T(I + "test_membership.py::test_static_member_restart_keeps_its_partitions_without_a_rebalance"),
        "cooperative": T(I + "test_membership.py::test_cooperative_sticky_revokes_only_what_moves[kafka-python]"),
        "offsets": T(I + "test_classic_groups.py::test_group_of_three_consumes_everything_once_and_commits[kafka-python]"),
        "share groups": lacks("kafka-python has no share consumer (KIP-932)"),
        "transactions": T(I + "test_transactions.py::test_kip98_a_transactional_producer_commits_and_aborts_and_readers_see_only_what_committed[kafka-python]"),
        "idempotence": T(I + "test_idempotence.py::test_kip98_a_retry_after_a_lost_answer_is_stored_once[kafka-python]"),
        "SASL SCRAM": T(SEC + "test_consume_in_a_group_over_sasl_plaintext_scram_sha_512[kafka-python]"),
        "SASL PLAIN": T(SEC + "test_consume_in_a_group_over_sasl_ssl[kafka-python-PLAIN]"),
        "TLS": T(SEC + "test_consume_in_a_group_over_ssl_with_a_client_certificate[kafka-python]"),
        "admin": T(I + "test_admin_apis.py::test_metadata_for_all_topics_answers_every_client",
                   I + "test_admin_apis.py::test_topic_configs_are_altered_checked_and_kept"),
    },
    "aiokafka 0.14": {
        "classic groups": T(I + "test_classic_groups.py::test_group_of_three_consumes_everything_once_and_commits[aiokafka]"),
        "consumer protocol": lacks("aiokafka has no KIP-848 consumer"),
        "static members": T(X + "test_aiokafka_and_kcat.py::test_aiokafka_static_member"),
        "cooperative": lacks("aiokafka's assignors are eager only (no incremental cooperative rebalancing)"),
        "offsets": T(I + "test_classic_groups.py::test_group_of_three_consumes_everything_once_and_commits[aiokafka]"),
        "share groups": lacks("aiokafka has no share consumer (KIP-932)"),
        "transactions": T(I + "test_transactions.py::test_kip98_a_transactional_producer_commits_and_aborts_and_readers_see_only_what_committed[aiokafka]"),
        "idempotence": T(X + "test_aiokafka_and_kcat.py::test_aiokafka_idempotent_producer"),
        "SASL SCRAM": T(SEC + "test_consume_in_a_group_over_sasl_plaintext_scram_sha_512[aiokafka]"),
        "SASL PLAIN": T(SEC + "test_consume_in_a_group_over_sasl_ssl[aiokafka-PLAIN]"),
        "TLS": T(SEC + "test_consume_in_a_group_over_ssl_with_a_client_certificate[aiokafka]"),
        "admin": T(X + "test_aiokafka_and_kcat.py::test_aiokafka_admin_client"),
    },
    "confluent-kafka 2.16": {
        "classic groups": T(I + "test_classic_groups.py::test_group_of_three_consumes_everything_once_and_commits[confluent-kafka]"),
        "consumer protocol": T(I + "test_consumer_protocol.py::test_fourth_member_takes_only_what_moves_and_no_partition_has_two_owners",
                               X + "test_mixed_groups.py::test_java_confluent_and_kgroup_consumers_share_a_consumer_protocol_group"),
        "static members": T(I + "test_cli_group_tools.py::test_describe_members_state_offsets_and_json_of_a_live_group",
                            I + "test_exactly_once_crashes.py::test_kip447_consume_transform_produce_survives_20_kill_9_of_its_processes"),
        "cooperative": T(I + "test_membership.py::test_cooperative_sticky_revokes_only_what_moves[confluent-kafka]"),
        "offsets": T(I + "test_classic_groups.py::test_group_of_three_consumes_everything_once_and_commits[confluent-kafka]"),
        "share groups": T(I + "test_share_groups.py::test_kip932_three_members_on_two_partitions_take_every_record_once",
                          X + "test_mixed_groups.py::test_java_confluent_and_kgroup_share_consumers_each_record_once"),
        "transactions": T(I + "test_transactions.py::test_kip98_a_transactional_producer_commits_and_aborts_and_readers_see_only_what_committed[confluent-kafka]"),
        "idempotence": T(I + "test_idempotence.py::test_kip98_a_retry_after_a_lost_answer_is_stored_once[confluent-kafka]"),
        "SASL SCRAM": T(SEC + "test_consume_in_a_group_over_sasl_plaintext_scram_sha_512[confluent-kafka]"),
        "SASL PLAIN": T(SEC + "test_consume_in_a_group_over_sasl_ssl[confluent-kafka-PLAIN]"),
        "TLS": T(SEC + "test_consume_in_a_group_over_ssl_with_a_client_certificate[confluent-kafka]"),
        "admin": T(I + "test_admin_apis.py::test_describe_cluster", SEC + "test_confluent_admin_alters_and_describes_scram_credentials"),
    },
    "kgroup client": {
        "classic groups": T(I + "test_our_client.py::test_group_commit_seek_pause_and_close_leaves"),
        "consumer protocol": T(I + "test_our_consumer_protocol.py::test_third_member_takes_only_what_moves",
                               X + "test_mixed_groups.py::test_java_confluent_and_kgroup_consumers_share_a_consumer_protocol_group"),
        "static members": T(I + "test_our_client.py::test_static_member_close_does_not_leave",
                            I + "test_our_consumer_protocol.py::test_static_member_close_keeps_its_membership_and_commit_with_epoch"),
        "cooperative": T(I + "test_our_client.py::test_group_commit_seek_pause_and_close_leaves"),
        "offsets": T(I + "test_our_client.py::test_group_commit_seek_pause_and_close_leaves"),
        "share groups": T(I + "test_share_groups.py::test_kip932_three_members_on_two_partitions_take_every_record_once",
                          X + "test_mixed_groups.py::test_java_confluent_and_kgroup_share_consumers_each_record_once"),
        "transactions": T(I + "test_transactions.py::test_kip98_a_transactional_producer_commits_and_aborts_and_readers_see_only_what_committed[kgroup]"),
        "idempotence": T(I + "test_idempotence.py::test_kip98_a_retry_after_a_lost_answer_is_stored_once[kgroup]"),
        "SASL SCRAM": T(SEC + "test_our_consumer_over_every_listener"),
        "SASL PLAIN": T(SEC + "test_our_consumer_over_every_listener"),
        "TLS": T(SEC + "test_our_consumer_over_every_listener"),
        "admin": T(I + "test_cli_group_tools.py::test_describe_members_state_offsets_and_json_of_a_live_group",
                   SEC + "test_cli_acls_and_users_with_command_config"),
    },
    "kafkajs 2.2": {
        "classic groups": T(X + "test_node_groups.py::test_kafkajs_group_and_producers[plain]"),
        "consumer protocol": lacks("kafkajs has no KIP-848 consumer"),
        "static members": lacks("kafkajs has no group.instance.id (KIP-345)"),
        "cooperative": lacks("kafkajs's assignors are eager only"),
        "offsets": T(X + "test_node_groups.py::test_kafkajs_group_and_producers[plain]"),
        "share groups": lacks("kafkajs has no share consumer (KIP-932)"),
        "transactions": T(X + "test_node_groups.py::test_kafkajs_group_and_producers[transactional]"),
        "idempotence": T(X + "test_node_groups.py::test_kafkajs_group_and_producers[idempotent]"),
        "SASL SCRAM": T(X + "test_security_clients.py::test_node_clients_over_sasl[kafkajs-scram]"),
        "SASL PLAIN": T(X + "test_security_clients.py::test_node_clients_over_sasl[kafkajs-plain]"),
        "TLS": T(X + "test_security_clients.py::test_node_clients_over_sasl[kafkajs-plain]",
                 reason="over SASL_SSL (PLAIN inside TLS); a client certificate is not tested"),
        "admin": T(I + "test_node_clients.py::test_kafkajs_admin"),
    },
    "@platformatic/kafka 1.35": {
        "classic groups": T(X + "test_node_groups.py::test_platformatic_group_and_producers[classic-plain]"),
        "consumer protocol": T(X + "test_node_groups.py::test_platformatic_group_and_producers[consumer-idempotent]"),
        "static members": T(X + "test_node_groups.py::test_platformatic_static_member"),
        "cooperative": lacks("@platformatic/kafka's classic assignors are eager only (its consumer-protocol groups "
                             "are incremental: see that column)"),
        "offsets": T(X + "test_node_groups.py::test_platformatic_group_and_producers[classic-plain]"),
        "share groups": lacks("@platformatic/kafka has no share consumer (KIP-932)"),
        "transactions": T(X + "test_node_groups.py::test_platformatic_group_and_producers[classic-transactional]"),
        "idempotence": T(X + "test_node_groups.py::test_platformatic_group_and_producers[consumer-idempotent]"),
        "SASL SCRAM": T(X + "test_security_clients.py::test_node_clients_over_sasl[platformatic-scram]"),
        "SASL PLAIN": T(X + "test_security_clients.py::test_node_clients_over_sasl[platformatic-plain]"),
        "TLS": T(X + "test_security_clients.py::test_node_clients_over_sasl[platformatic-plain]",
                 reason="over SASL_SSL (PLAIN inside TLS); a client certificate is not tested"),
        "admin": T(I + "test_node_clients.py::test_platformatic_kafka_admin"),
    },
    "Java clients 4.4": {
        "classic groups": T(X + "test_java_clients.py::test_java_classic_range_consumers_split_a_topic_and_commit"),
        "consumer protocol": T(X + "test_java_clients.py::test_java_consumer_protocol_server_assignors_and_rack_ids",
                               X + "test_java_clients.py::test_java_consumer_protocol_regex_subscription_picks_up_new_topics",
                               X + "test_mixed_groups.py::test_java_confluent_and_kgroup_consumers_share_a_consumer_protocol_group"),
        "static members": T(X + "test_java_clients.py::test_java_classic_static_member_comes_back_without_a_rebalance",
                            X + "test_java_clients.py::test_java_consumer_protocol_static_member_rejoins_with_its_partitions"),
        "cooperative": T(X + "test_java_clients.py::test_java_cooperative_sticky_revokes_only_what_moves"),
        "offsets": T(X + "test_java_admin.py::test_java_admin_answers_as_kafka",
                     X + "test_kafka_tools.py::test_kafka_consumer_groups"),
        "share groups": T(X + "test_java_clients.py::test_java_share_consumers_implicit_mode_each_record_once",
                          X + "test_java_clients.py::test_java_share_consumer_explicit_accept_release_reject",
                          X + "test_mixed_groups.py::test_java_confluent_and_kgroup_share_consumers_each_record_once",
                          reason="AcknowledgeType.RENEW needs #29 (ShareAcknowledge v2): "
                                 "test_java_share_consumer_renews_its_lock is a strict xfail until then"),
        "transactions": T(X + "test_java_clients.py::test_java_transactional_consume_transform_produce",
                          X + "test_java_clients.py::test_java_producer_fenced_by_a_newer_instance",
                          X + "test_java_clients.py::test_java_transactional_producer_uses_transactions_v2"),
        "idempotence": T(X + "test_java_clients.py::test_java_idempotent_producer"),
        "SASL SCRAM": T(X + "test_security_clients.py::test_java_clients_over_secured_listeners[scram]"),
        "SASL PLAIN": T(X + "test_security_clients.py::test_java_clients_over_secured_listeners[plain]"),
        "TLS": T(X + "test_security_clients.py::test_java_clients_over_secured_listeners[tls]"),
        "admin": T(X + "test_java_admin.py::test_java_admin_answers_as_kafka",
                   X + "test_security_clients.py::test_java_admin_acls_and_scram_users"),
    },
    "franz-go 1.22": {
        "classic groups": T(X + "test_go_clients.py::test_franz_classic_cooperative_sticky_group"),
        "consumer protocol": T(X + "test_go_clients.py::test_franz_consumer_protocol_group"),
        "static members": T(X + "test_go_clients.py::test_franz_static_member_comes_back_to_its_partitions"),
        "cooperative": T(X + "test_go_clients.py::test_franz_classic_cooperative_sticky_group"),
        "offsets": T(X + "test_go_clients.py::test_kadm_admin_calls"),
        "share groups": T(X + "test_go_clients.py::test_franz_share_consumers"),
        "transactions": T(X + "test_go_clients.py::test_franz_transactions_and_idempotence"),
        "idempotence": T(X + "test_go_clients.py::test_franz_transactions_and_idempotence"),
        "SASL SCRAM": T(X + "test_security_clients.py::test_go_clients_over_secured_listeners[franz-scram]"),
        "SASL PLAIN": T(X + "test_security_clients.py::test_go_clients_over_secured_listeners[franz-plain]"),
        "TLS": T(X + "test_security_clients.py::test_go_clients_over_secured_listeners[franz-tls]"),
        "admin": T(X + "test_go_clients.py::test_kadm_admin_calls"),
    },
    "sarama 1.61": {
        "classic groups": T(X + "test_go_clients.py::test_sarama_consumer_group[range]"),
        "consumer protocol": lacks("sarama has no KIP-848 consumer"),
        "static members": T(X + "test_go_clients.py::test_sarama_static_member"),
        "cooperative": T(X + "test_go_clients.py::test_sarama_cooperative_sticky_revokes_only_what_moves"),
        "offsets": T(X + "test_go_clients.py::test_sarama_offsets"),
        "share groups": lacks("sarama has no share consumer (KIP-932)"),
        "transactions": T(X + "test_go_clients.py::test_sarama_producers"),
        "idempotence": T(X + "test_go_clients.py::test_sarama_producers"),
        "SASL SCRAM": T(X + "test_security_clients.py::test_go_clients_over_secured_listeners[sarama-scram]"),
        "SASL PLAIN": T(X + "test_security_clients.py::test_go_clients_over_secured_listeners[sarama-plain]"),
        "TLS": T(X + "test_security_clients.py::test_go_clients_over_secured_listeners[sarama-tls]"),
        "admin": T(X + "test_go_clients.py::test_sarama_offsets"),
    },
    "kcat 1.7": {
        "classic groups": T(X + "test_aiokafka_and_kcat.py::test_kcat_in_a_group_commits[range]"),
        "consumer protocol": lacks("kcat 1.7 is built on librdkafka 2.0, older than its KIP-848 consumer"),
        "static members": T(X + "test_aiokafka_and_kcat.py::test_kcat_in_a_group_commits[range]"),
        "cooperative": T(X + "test_aiokafka_and_kcat.py::test_kcat_in_a_group_commits[cooperative-sticky]"),
        "offsets": T(X + "test_aiokafka_and_kcat.py::test_kcat_in_a_group_commits[range]",
                     X + "test_aiokafka_and_kcat.py::test_kcat_lists_metadata_and_queries_offsets_by_time"),
        "share groups": lacks("kcat has no share consumer"),
        "transactions": T(X + "test_aiokafka_and_kcat.py::test_kcat_produces_idempotently_and_in_a_transaction"),
        "idempotence": T(X + "test_aiokafka_and_kcat.py::test_kcat_produces_idempotently_and_in_a_transaction"),
        "SASL SCRAM": T(X + "test_security_clients.py::test_kcat_over_secured_listeners[scram]"),
        "SASL PLAIN": T(X + "test_security_clients.py::test_kcat_over_secured_listeners[plain]"),
        "TLS": T(X + "test_security_clients.py::test_kcat_over_secured_listeners[tls]"),
        "admin": T(X + "test_aiokafka_and_kcat.py::test_kcat_lists_metadata_and_queries_offsets_by_time",
                   reason="kcat lists metadata (-L) and queries offsets (-Q); it has no other admin operation"),
    },
}
