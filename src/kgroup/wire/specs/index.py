"""Which message versions kgroup builds from the specs here: (api_key, version) ->
{kind: (spec file, why)}; why is "missing" (kio 0.6.5 has no class) or "differs"
(kio's class disagrees with Kafka 4.4's spec on the wire).

Written by tools/kiogen.py (`make schema`); kgroup.wire.schemas reads it.
"""

API_NAMES = {
    18: "api_versions",
    28: "txn_offset_commit",
    42: "delete_groups",
    88: "streams_group_heartbeat",
    89: "streams_group_describe",
    93: "streams_group_topology_description_update",
    94: "unregister_controller",
}

SCHEMAS = {
    (18, 5): {
        "request": ("ApiVersionsRequest.json", "missing"),
        "response": ("ApiVersionsResponse.json", "missing"),
    },
    (28, 6): {
        "request": ("TxnOffsetCommitRequest.json", "missing"),
        "response": ("TxnOffsetCommitResponse.json", "missing"),
    },
    (42, 3): {
        "request": ("DeleteGroupsRequest.json", "missing"),
        "response": ("DeleteGroupsResponse.json", "missing"),
    },
    (88, 1): {
        "request": ("StreamsGroupHeartbeatRequest.json", "missing"),
        "response": ("StreamsGroupHeartbeatResponse.json", "missing"),
    },
    (89, 1): {
        "request": ("StreamsGroupDescribeRequest.json", "missing"),
        "response": ("StreamsGroupDescribeResponse.json", "missing"),
    },
    (93, 0): {
        "request": ("StreamsGroupTopologyDescriptionUpdateRequest.json", "missing"),
        "response": ("StreamsGroupTopologyDescriptionUpdateResponse.json", "missing"),
    },
    (94, 0): {
        "request": ("UnregisterControllerRequest.json", "missing"),
        "response": ("UnregisterControllerResponse.json", "missing"),
    },
}
