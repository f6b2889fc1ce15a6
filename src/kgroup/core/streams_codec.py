"""Bytes of the streams-group records (streams_records.py) in the group-metadata log.

The layout is the consumer-group records' (record_codec.py): a key

    int16 version | int16 group_len | int16 member_len | group | member

(member empty for group-level records) and, unless it is a tombstone, the record's fields as
compact UTF-8 JSON. Key versions:

    26  group epoch        [epoch, [[name, topic id, partitions], ...], validated topology
                            epoch, [[config, value], ...]]
    27  topology           [epoch, [subtopology, ...]], a subtopology being [id, [source
                            topics], [regexes], [changelog topic info], [repartition sink
                            topics], [repartition source topic info], [[sources], [regexes],
                            [repartition sources]] copartition groups]; a topic info
                            [name, partitions, replication factor, [[config, value], ...]]
    28  member             [instance id, rack id, client id, client host, rebalance timeout,
                            topology epoch, process id, [host, port] or null, [[tag, value]]]
    29  target             [[[sub, p], ...] active, standby, warm-up]
    30  target epoch       epoch
    31  current            [epoch, previous epoch, state, [[sub, p, assigned at], ...] active,
                            [[sub, p]] standby, warm-up, pending active, pending standby,
                            pending warm-up]
"""

from __future__ import annotations

from . import compact_json as json
from struct import Struct

from kgroup.core.streams_records import (
    StreamsCurrentRecord,
    StreamsCurrentValue,
    StreamsGroupEpochRecord,
    StreamsMemberRecord,
    StreamsMemberState,
    StreamsMemberValue,
    StreamsTargetEpochRecord,
    StreamsTargetRecord,
    StreamsTopologyRecord,
    TaskTuple,
)
from kgroup.core.streams_topology import CopartitionGroup, StreamsTopology, Subtopology, StreamsTopicInfo

KEY_VERSIONS = {
    StreamsGroupEpochRecord: 26, StreamsTopologyRecord: 27, StreamsMemberRecord: 28,
    StreamsTargetRecord: 29, StreamsTargetEpochRecord: 30, StreamsCurrentRecord: 31,
}
BY_VERSION = {v: k for k, v in KEY_VERSIONS.items()}
_HEAD = Struct(">hhh")


def _info(t: StreamsTopicInfo) -> list:
    return [t.name, t.partitions, t.replication_factor, [list(kv) for kv in t.configs]]


def _value(record) -> object | None:
    kind = type(record)
    if kind is StreamsGroupEpochRecord:
        if record.epoch is None:
            return None
        return [record.epoch, [list(t) for t in record.subscribed], record.validated_topology_epoch,
                [list(kv) for kv in record.assignment_configs]]
    if kind is StreamsTargetEpochRecord:
        return record.epoch
    if kind is StreamsTopologyRecord:
        t = record.topology
        if t is None:
            return None
        return [t.epoch, [[s.subtopology_id, list(s.source_topics), list(s.source_topic_regex),
                           [_info(i) for i in s.state_changelog_topics], list(s.repartition_sink_topics),
                           [_info(i) for i in s.repartition_source_topics],
                           [[list(g.source_topics), list(g.source_topic_regex), list(g.repartition_source_topics)]
                            for g in s.copartition_groups]] for s in t.subtopologies]]
    if kind is StreamsTargetRecord:
        t = record.tasks
        return None if t is None else [[list(x) for x in t.active], [list(x) for x in t.standby],
                                       [list(x) for x in t.warmup]]
    v = record.value
    if v is None:
        return None
    if kind is StreamsMemberRecord:
        return [v.instance_id, v.rack_id, v.client_id, v.client_host, v.rebalance_timeout_ms, v.topology_epoch,
                v.process_id, list(v.user_endpoint) if v.user_endpoint is not None else None,
                [list(kv) for kv in v.client_tags]]
    return [v.member_epoch, v.previous_member_epoch, v.state.value, [list(x) for x in v.active],
            [list(x) for x in v.standby], [list(x) for x in v.warmup], [list(x) for x in v.pending_active],
            [list(x) for x in v.pending_standby], [list(x) for x in v.pending_warmup]]


def encode(record) -> bytes:
    """One log payload: key, then the JSON value (nothing for a tombstone). Raises
    ValueError / TypeError / struct.error for what cannot be written (the caller wraps them)."""
    group = record.group_id.encode()
    member = getattr(record, "member_id", "").encode()
    if len(group) > 0x7FFF or len(member) > 0x7FFF:
        raise ValueError("group or member id too long for a key")
    key = _HEAD.pack(KEY_VERSIONS[type(record)], len(group), len(member)) + group + member
    value = _value(record)
    return key if value is None else key + json.dumps(value)


def _tasks(raw) -> tuple:
    return tuple(sorted((str(s), int(p)) for s, p in raw))


def _active(raw) -> tuple:
    return tuple(sorted((str(s), int(p), int(e)) for s, p, e in raw))


def _topic_info(raw) -> StreamsTopicInfo:
    name, partitions, rf, configs = raw
    return StreamsTopicInfo(str(name), int(partitions), int(rf), tuple((str(k), str(v)) for k, v in configs))


def _topology(raw) -> StreamsTopology:
    epoch, subs = raw
    return StreamsTopology(int(epoch), tuple(
        Subtopology(str(sid), tuple(map(str, sources)), tuple(map(str, regex)),
                    tuple(_topic_info(i) for i in changelogs), tuple(map(str, sinks)),
                    tuple(_topic_info(i) for i in repartition),
                    tuple(CopartitionGroup(tuple(map(int, a)), tuple(map(int, b)), tuple(map(int, c)))
                          for a, b, c in groups))
        for sid, sources, regex, changelogs, sinks, repartition, groups in subs))


def decode(payload: bytes, version: int, glen: int, mlen: int):
    """The record of a payload whose key version is one of KEY_VERSIONS. Raises ValueError,
    TypeError, KeyError or UnicodeDecodeError when malformed (the caller wraps them)."""
    end = _HEAD.size + glen + mlen
    if glen < 0 or mlen < 0 or end > len(payload):
        raise ValueError("streams-group record key runs past the payload")
    group = payload[_HEAD.size:_HEAD.size + glen].decode()
    member = payload[_HEAD.size + glen:end].decode()
    raw = None if end == len(payload) else json.loads(payload[end:])
    kind = BY_VERSION[version]
    if kind is StreamsGroupEpochRecord:
        if raw is None:
            return StreamsGroupEpochRecord(group, None)
        epoch, subscribed, validated, configs = raw
        return StreamsGroupEpochRecord(group, int(epoch), tuple((str(n), str(i), int(c)) for n, i, c in subscribed),
                                       int(validated), tuple((str(k), str(v)) for k, v in configs))
    if kind is StreamsTargetEpochRecord:
        return StreamsTargetEpochRecord(group, None if raw is None else int(raw))
    if kind is StreamsTopologyRecord:
        return StreamsTopologyRecord(group, None if raw is None else _topology(raw))
    if kind is StreamsTargetRecord:
        return StreamsTargetRecord(group, member, None if raw is None else TaskTuple(
            _tasks(raw[0]), _tasks(raw[1]), _tasks(raw[2])))
    if kind is StreamsMemberRecord:
        if raw is None:
            return StreamsMemberRecord(group, member, None)
        iid, rack, cid, host, rto, topo, process, endpoint, tags = raw
        return StreamsMemberRecord(group, member, StreamsMemberValue(
            iid, rack, str(cid), str(host), int(rto), int(topo), str(process),
            None if endpoint is None else (str(endpoint[0]), int(endpoint[1])),
            tuple((str(k), str(v)) for k, v in tags)))
    if raw is None:
        return StreamsCurrentRecord(group, member, None)
    epoch, previous, state, active, standby, warmup, p_active, p_standby, p_warmup = raw
    return StreamsCurrentRecord(group, member, StreamsCurrentValue(
        int(epoch), int(previous), StreamsMemberState(state), _active(active), _tasks(standby), _tasks(warmup),
        _active(p_active), _tasks(p_standby), _tasks(p_warmup)))
