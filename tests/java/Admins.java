import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions;
import org.apache.kafka.clients.admin.DescribeShareGroupsOptions;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.admin.ClassicGroupDescription;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The Admin client: one command per call the tests make, each answering plain JSON (lists of
 * [topic, partition, ...], maps by group or resource). A call that fails per item (a group, a
 * partition) answers {"error": {"type", "message"}} for that item; a call that fails as a whole
 * answers the command's error.
 */
final class Admins {
    private Admins() {
    }

    static <T> Object get(KafkaFuture<T> future, Function<T, Object> view) {
        try {
            return view.apply(future.get(60, TimeUnit.SECONDS));
        } catch (Exception e) {
            return Worker.map("error", Worker.error(e));
        }
    }

    static <K, T> Map<String, Object> each(Map<K, KafkaFuture<T>> futures, Function<K, String> key, Function<T, Object> view) {
        Map<String, Object> out = new TreeMap<>();
        futures.forEach((k, f) -> out.put(key.apply(k), get(f, view)));
        return out;
    }

    static String tp(TopicPartition tp) {
        return tp.topic() + ":" + tp.partition();
    }

    static TopicPartition tp(JsonNode pair) {
        return new TopicPartition(pair.get(0).asText(), pair.get(1).asInt());
    }

    static List<TopicPartition> tps(JsonNode list) {
        List<TopicPartition> out = new ArrayList<>();
        list.forEach(p -> out.add(tp(p)));
        return out;
    }

    static Object node(Node n) {
        return n == null ? null : Arrays.asList(n.id(), n.host(), n.port(), n.rack());
    }

    static Object assignment(Set<TopicPartition> tps) {
        return Consumers.partitions(tps);
    }

    static Object ops(Set<AclOperation> ops) {
        return ops == null ? null : ops.stream().map(Enum::name).sorted().collect(Collectors.toList());
    }

    static Object member(MemberDescription m) {
        return Worker.map("memberId", m.consumerId(), "instanceId", m.groupInstanceId().orElse(null),
                "rackId", m.rackId().orElse(null), "clientId", m.clientId(), "host", m.host(),
                "assignment", assignment(m.assignment().topicPartitions()),
                "targetAssignment", m.targetAssignment().map(a -> assignment(a.topicPartitions())).orElse(null),
                "memberEpoch", m.memberEpoch().orElse(null), "upgraded", m.upgraded().orElse(null));
    }

    static Object consumerGroup(ConsumerGroupDescription d) {
        return Worker.map("groupId", d.groupId(), "simple", d.isSimpleConsumerGroup(), "type", d.type().toString(),
                "state", d.groupState().toString(), "assignor", d.partitionAssignor(),
                "coordinator", node(d.coordinator()), "groupEpoch", d.groupEpoch().orElse(null),
                "targetAssignmentEpoch", d.targetAssignmentEpoch().orElse(null),
                "members", d.members().stream().map(Admins::member).collect(Collectors.toList()),
                "authorizedOperations", ops(d.authorizedOperations()));
    }

    static Object shareMember(ShareMemberDescription m) {
        return Worker.map("memberId", m.consumerId(), "rackId", m.rackId().orElse(null), "clientId", m.clientId(),
                "host", m.host(), "assignment", assignment(m.assignment().topicPartitions()), "memberEpoch", m.memberEpoch());
    }

    static Object shareGroup(ShareGroupDescription d) {
        return Worker.map("groupId", d.groupId(), "state", d.groupState().toString(), "coordinator", node(d.coordinator()),
                "groupEpoch", d.groupEpoch(), "targetAssignmentEpoch", d.targetAssignmentEpoch(),
                "members", d.members().stream().map(Admins::shareMember).collect(Collectors.toList()),
                "authorizedOperations", ops(d.authorizedOperations()));
    }

    static Object classicGroup(ClassicGroupDescription d) {
        return Worker.map("groupId", d.groupId(), "protocol", d.protocol(), "protocolData", d.protocolData(),
                "state", d.state().toString(), "coordinator", node(d.coordinator()),
                "members", d.members().stream().map(Admins::member).collect(Collectors.toList()));
    }

    static Object configs(org.apache.kafka.clients.admin.Config config) {
        Map<String, Object> out = new TreeMap<>();
        for (ConfigEntry e : config.entries()) {
            out.put(e.name(), Arrays.asList(e.value(), e.source().toString(), e.isReadOnly(), e.isSensitive()));
        }
        return out;
    }

    static ConfigResource resource(JsonNode r) {
        return new ConfigResource(ConfigResource.Type.valueOf(r.get(0).asText()), r.get(1).asText());
    }

    static ResourcePatternFilter patternFilter(JsonNode f) {
        return new ResourcePatternFilter(ResourceType.fromString(f.get(0).asText()),
                f.get(1).isNull() ? null : f.get(1).asText(), PatternType.fromString(f.get(2).asText()));
    }

    static AclBindingFilter aclFilter(JsonNode f) {
        return new AclBindingFilter(patternFilter(f), new AccessControlEntryFilter(
                f.get(3).isNull() ? null : f.get(3).asText(), f.get(4).isNull() ? null : f.get(4).asText(),
                AclOperation.fromString(f.get(5).asText()), AclPermissionType.fromString(f.get(6).asText())));
    }

    static AclBinding acl(JsonNode a) {
        return new AclBinding(new ResourcePattern(ResourceType.fromString(a.get(0).asText()), a.get(1).asText(),
                PatternType.fromString(a.get(2).asText())), new AccessControlEntry(a.get(3).asText(), a.get(4).asText(),
                AclOperation.fromString(a.get(5).asText()), AclPermissionType.fromString(a.get(6).asText())));
    }

    static Object acl(AclBinding b) {
        return Arrays.asList(b.pattern().resourceType().toString(), b.pattern().name(), b.pattern().patternType().toString(),
                b.entry().principal(), b.entry().host(), b.entry().operation().toString(), b.entry().permissionType().toString());
    }

    static Object handle(String op, JsonNode c) throws Exception {
        if (op.equals("admin.new")) {
            String name = Worker.text(c, "name");
            Admin admin = Admin.create(Worker.config(c.get("config")));
            if (Worker.CLIENTS.putIfAbsent(name, admin) != null) {
                admin.close();
                throw new IllegalArgumentException("a client named '" + name + "' exists");
            }
            return Worker.map("name", name);
        }
        Admin a = Worker.client(c, Admin.class);
        switch (op) {
            case "admin.close":
                Worker.CLIENTS.remove(Worker.text(c, "name"));
                a.close(Duration.ofSeconds(10));
                return null;
            case "admin.createTopics": {
                List<NewTopic> topics = new ArrayList<>();
                for (JsonNode t : c.get("topics")) {
                    NewTopic nt = new NewTopic(t.get("name").asText(), java.util.Optional.of(t.path("partitions").asInt(1)),
                            java.util.Optional.empty());
                    Map<String, String> configs = new HashMap<>();
                    Worker.config(t.get("configs")).forEach((k, v) -> configs.put(k, String.valueOf(v)));
                    topics.add(nt.configs(configs));
                }
                return each(a.createTopics(topics).values(), k -> k, v -> null);
            }
            case "admin.deleteTopics":
                return each(a.deleteTopics(Worker.strings(c.get("topics"))).topicNameValues(), k -> k, v -> null);
            case "admin.listTopics":
                return get(a.listTopics(new ListTopicsOptions().listInternal(c.path("internal").asBoolean(false))).names(),
                        names -> new ArrayList<>(new TreeSet<>(names)));
            case "admin.describeTopics":
                return each(a.describeTopics(Worker.strings(c.get("topics"))).topicNameValues(), k -> k,
                        (TopicDescription d) -> Worker.map("internal", d.isInternal(), "topicId", d.topicId().toString(),
                                "partitions", d.partitions().stream().map((TopicPartitionInfo p) -> Arrays.asList(p.partition(),
                                        p.leader() == null ? null : p.leader().id(), p.replicas().size(), p.isr().size()))
                                        .collect(Collectors.toList())));
            case "admin.createPartitions":
                return each(a.createPartitions(Map.of(Worker.text(c, "topic"), NewPartitions.increaseTo(c.get("count").asInt())))
                        .values(), k -> k, v -> null);
            case "admin.listGroups": {
                ListGroupsOptions options = new ListGroupsOptions();
                if (c.hasNonNull("types")) {
                    options.withTypes(Worker.strings(c.get("types")).stream().map(GroupType::parse).collect(Collectors.toSet()));
                }
                if (c.hasNonNull("states")) {
                    options.inGroupStates(Worker.strings(c.get("states")).stream().map(GroupState::parse).collect(Collectors.toSet()));
                }
                return get(a.listGroups(options).all(), all -> all.stream()
                        .map(g -> Arrays.asList(g.groupId(), g.type().map(Object::toString).orElse(null),
                                g.groupState().map(Object::toString).orElse(null), g.protocol()))
                        .sorted((x, y) -> ((String) x.get(0)).compareTo((String) y.get(0)))
                        .collect(Collectors.toList()));
            }
            case "admin.describeConsumerGroups":
                return each(a.describeConsumerGroups(Worker.strings(c.get("groups")), new DescribeConsumerGroupsOptions()
                                .includeAuthorizedOperations(c.path("authorizedOperations").asBoolean(false))).describedGroups(),
                        k -> k, Admins::consumerGroup);
            case "admin.describeShareGroups":
                return each(a.describeShareGroups(Worker.strings(c.get("groups")), new DescribeShareGroupsOptions()
                                .includeAuthorizedOperations(c.path("authorizedOperations").asBoolean(false))).describedGroups(),
                        k -> k, Admins::shareGroup);
            case "admin.describeClassicGroups":
                return each(a.describeClassicGroups(Worker.strings(c.get("groups"))).describedGroups(), k -> k,
                        Admins::classicGroup);
            case "admin.deleteConsumerGroups":
                return each(a.deleteConsumerGroups(Worker.strings(c.get("groups"))).deletedGroups(), k -> k, v -> null);
            case "admin.deleteShareGroups":
                return each(a.deleteShareGroups(Worker.strings(c.get("groups"))).deletedGroups(), k -> k, v -> null);
            case "admin.listConsumerGroupOffsets": {
                ListConsumerGroupOffsetsSpec spec = new ListConsumerGroupOffsetsSpec();
                if (c.hasNonNull("partitions")) {
                    spec.topicPartitions(tps(c.get("partitions")));
                }
                String group = Worker.text(c, "group");
                return get(a.listConsumerGroupOffsets(Map.of(group, spec)).partitionsToOffsetAndMetadata(group), m -> {
                    Map<String, Object> out = new TreeMap<>();
                    m.forEach((tp, o) -> out.put(tp(tp), o == null ? null : Arrays.asList(o.offset(), o.metadata(),
                            o.leaderEpoch().orElse(null))));
                    return out;
                });
            }
            case "admin.alterConsumerGroupOffsets": {
                Map<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> offsets = Consumers.offsets(c.get("offsets"));
                var result = a.alterConsumerGroupOffsets(Worker.text(c, "group"), offsets);
                Map<String, Object> out = new TreeMap<>();
                for (TopicPartition tp : offsets.keySet()) {
                    out.put(tp(tp), get(result.partitionResult(tp), v -> "ok"));
                }
                out.put("all", get(result.all(), v -> "ok"));
                return out;
            }
            case "admin.deleteConsumerGroupOffsets": {
                Set<TopicPartition> partitions = new java.util.HashSet<>(tps(c.get("partitions")));
                var result = a.deleteConsumerGroupOffsets(Worker.text(c, "group"), partitions);
                Map<String, Object> out = new TreeMap<>();
                for (TopicPartition tp : partitions) {
                    out.put(tp(tp), get(result.partitionResult(tp), v -> "ok"));
                }
                out.put("all", get(result.all(), v -> "ok"));
                return out;
            }
            case "admin.removeMembersFromConsumerGroup":
                return get(a.removeMembersFromConsumerGroup(Worker.text(c, "group"), new RemoveMembersFromConsumerGroupOptions()).all(),
                        v -> "ok");
            case "admin.listShareGroupOffsets": {
                String group = Worker.text(c, "group");
                return get(a.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(group), m -> {
                    Map<String, Object> out = new TreeMap<>();
                    m.forEach((tp, o) -> out.put(tp(tp), o == null ? null : Arrays.asList(o.startOffset(), o.lag().orElse(null),
                            o.leaderEpoch().orElse(null))));
                    return out;
                });
            }
            case "admin.alterShareGroupOffsets": {
                Map<TopicPartition, Long> offsets = new HashMap<>();
                c.get("offsets").forEach(p -> offsets.put(tp(p), p.get(2).asLong()));
                return get(a.alterShareGroupOffsets(Worker.text(c, "group"), offsets).all(), v -> "ok");
            }
            case "admin.deleteShareGroupOffsets":
                return get(a.deleteShareGroupOffsets(Worker.text(c, "group"), new java.util.HashSet<>(Worker.strings(c.get("topics")))).all(),
                        v -> "ok");
            case "admin.describeConfigs": {
                List<ConfigResource> resources = new ArrayList<>();
                c.get("resources").forEach(r -> resources.add(resource(r)));
                return each(a.describeConfigs(resources).values(), r -> r.type() + ":" + r.name(), Admins::configs);
            }
            case "admin.incrementalAlterConfigs": {
                Map<ConfigResource, Collection<AlterConfigOp>> changes = new LinkedHashMap<>();
                for (JsonNode r : c.get("resources")) {
                    List<AlterConfigOp> ops = new ArrayList<>();
                    r.get(2).forEach(o -> ops.add(new AlterConfigOp(new ConfigEntry(o.get(1).asText(),
                            o.size() > 2 && !o.get(2).isNull() ? o.get(2).asText() : null),
                            AlterConfigOp.OpType.valueOf(o.get(0).asText()))));
                    changes.put(resource(r), ops);
                }
                return each(a.incrementalAlterConfigs(changes).values(), r -> r.type() + ":" + r.name(), v -> "ok");
            }
            case "admin.createAcls": {
                List<AclBinding> acls = new ArrayList<>();
                c.get("acls").forEach(x -> acls.add(acl(x)));
                return get(a.createAcls(acls).all(), v -> "ok");
            }
            case "admin.describeAcls":
                return get(a.describeAcls(aclFilter(c.get("filter"))).values(), acls -> acls.stream().map(Admins::acl)
                        .sorted((x, y) -> x.toString().compareTo(y.toString())).collect(Collectors.toList()));
            case "admin.deleteAcls": {
                List<AclBindingFilter> filters = new ArrayList<>();
                c.get("filters").forEach(x -> filters.add(aclFilter(x)));
                return get(a.deleteAcls(filters).all(), acls -> acls.stream().map(Admins::acl)
                        .sorted((x, y) -> x.toString().compareTo(y.toString())).collect(Collectors.toList()));
            }
            case "admin.describeUserScramCredentials":
                return get(a.describeUserScramCredentials(c.hasNonNull("users") ? Worker.strings(c.get("users")) : null).all(),
                        m -> {
                            Map<String, Object> out = new TreeMap<>();
                            m.forEach((user, d) -> out.put(user, d.credentialInfos().stream()
                                    .map(i -> Arrays.asList(i.mechanism().mechanismName(), i.iterations()))
                                    .sorted((x, y) -> x.toString().compareTo(y.toString())).collect(Collectors.toList())));
                            return out;
                        });
            case "admin.alterUserScramCredentials": {
                List<UserScramCredentialAlteration> changes = new ArrayList<>();
                for (JsonNode u : c.path("upserts")) {
                    changes.add(new UserScramCredentialUpsertion(u.get(0).asText(), new ScramCredentialInfo(
                            ScramMechanism.fromMechanismName(u.get(1).asText()), u.get(2).asInt()), u.get(3).asText()));
                }
                for (JsonNode d : c.path("deletions")) {
                    changes.add(new UserScramCredentialDeletion(d.get(0).asText(), ScramMechanism.fromMechanismName(d.get(1).asText())));
                }
                return each(a.alterUserScramCredentials(changes).values(), k -> k, v -> "ok");
            }
            case "admin.describeCluster": {
                DescribeClusterResult r = a.describeCluster();
                return Worker.map("clusterId", get(r.clusterId(), v -> v), "controller", get(r.controller(), Admins::node),
                        "nodes", get(r.nodes(), ns -> ns.stream().map(Admins::node).collect(Collectors.toList())));
            }
            case "admin.describeFeatures":
                return get(a.describeFeatures().featureMetadata(), (FeatureMetadata m) -> {
                    Map<String, Object> finalized = new TreeMap<>();
                    m.finalizedFeatures().forEach((k, v) -> finalized.put(k, List.of(v.minVersionLevel(), v.maxVersionLevel())));
                    Map<String, Object> supported = new TreeMap<>();
                    m.supportedFeatures().forEach((k, v) -> supported.put(k, List.of(v.minVersion(), v.maxVersion())));
                    return Worker.map("finalized", finalized, "supported", supported);
                });
            case "admin.deleteRecords": {
                Map<TopicPartition, RecordsToDelete> del = new HashMap<>();
                c.get("offsets").forEach(p -> del.put(tp(p), RecordsToDelete.beforeOffset(p.get(2).asLong())));
                return each(a.deleteRecords(del).lowWatermarks(), Admins::tp, d -> d.lowWatermark());
            }
            case "admin.listOffsets": {
                JsonNode s = c.get("spec");
                OffsetSpec spec = s.isNumber() ? OffsetSpec.forTimestamp(s.asLong())
                        : s.asText().equals("earliest") ? OffsetSpec.earliest()
                        : s.asText().equals("maxTimestamp") ? OffsetSpec.maxTimestamp() : OffsetSpec.latest();
                Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
                tps(c.get("partitions")).forEach(tp -> ask.put(tp, spec));
                ListOffsetsOptions options = new ListOffsetsOptions(c.path("readCommitted").asBoolean(false)
                        ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED);
                var result = a.listOffsets(ask, options);
                Map<String, Object> out = new TreeMap<>();
                for (TopicPartition tp : ask.keySet()) {
                    out.put(tp(tp), get(result.partitionResult(tp), i -> Arrays.asList(i.offset(), i.timestamp())));
                }
                return out;
            }
            case "admin.describeProducers": {
                List<TopicPartition> partitions = tps(c.get("partitions"));
                var result = a.describeProducers(partitions);
                Map<String, Object> out = new TreeMap<>();
                for (TopicPartition tp : partitions) {
                    out.put(tp(tp), get(result.partitionResult(tp), s -> s.activeProducers().stream()
                            .map(p -> Arrays.asList(p.producerId(), p.producerEpoch(), p.lastSequence(),
                                    p.currentTransactionStartOffset().isPresent() ? p.currentTransactionStartOffset().getAsLong() : null))
                            .collect(Collectors.toList())));
                }
                return out;
            }
            case "admin.describeTransactions": {
                List<String> ids = Worker.strings(c.get("ids"));
                var result = a.describeTransactions(ids);
                Map<String, Object> out = new TreeMap<>();
                for (String id : ids) {
                    out.put(id, get(result.description(id), (TransactionDescription d) -> Worker.map("state", d.state().toString(),
                            "producerId", d.producerId(), "producerEpoch", d.producerEpoch(), "timeoutMs", d.transactionTimeoutMs(),
                            "partitions", Consumers.partitions(d.topicPartitions()))));
                }
                return out;
            }
            case "admin.listTransactions":
                return get(a.listTransactions(new ListTransactionsOptions()).all(), all -> all.stream()
                        .map(t -> Arrays.asList(t.transactionalId(), t.producerId(), t.state().toString()))
                        .sorted((x, y) -> x.toString().compareTo(y.toString())).collect(Collectors.toList()));
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static void closeAll() {
        Worker.CLIENTS.forEach((name, client) -> {
            if (client instanceof Admin) {
                ((Admin) client).close(Duration.ofSeconds(5));
            }
        });
    }
}
