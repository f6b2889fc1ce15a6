import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Kafka Streams applications for kgroup's streams group tests (KIP-1071), run on kgroup and on
 * Apache Kafka 4.4 with group.protocol=streams.
 *
 * One JVM holds any number of app instances (each a KafkaStreams with its own state dir, so
 * each is a process of the streams group); a test that kill -9s an instance runs it in a JVM
 * of its own. Commands are JSON lines on stdin, answers and events JSON lines on stdout:
 *
 *   {"op": "start", "name": "a", "topology": "stateless"|"stateful"|"join"|"repartitioned",
 *    "input": "in", "output": "out", "config": {...StreamsConfig...}}
 *   {"op": "close", "name": "a"}             a graceful close (the member leaves the group)
 *   {"op": "describe", "bootstrap": "...", "group": "g"}   Admin#describeStreamsGroups
 *   {"op": "group-configs", "bootstrap": "...", "group": "g", "configs": {...}}  a group's configs
 *   {"op": "exit"}
 *
 * Events: {"event": "state", "name", "state"} on every KafkaStreams state change,
 * {"event": "tasks", "name", "active": ["0_1", ...], "standby": [...]} whenever an instance's
 * tasks change (polled every 50 ms), {"event": "error", "name", "message"} for an uncaught
 * exception. Every line has "ts" (µs since the epoch).
 *
 * The topologies: stateless (filter out empty values, upper-case the rest), stateful (count
 * the records per word of the value: selectKey then groupByKey, so a repartition topic and a
 * changelog-backed store "counts"), join (a KStream-KTable join of input and input+"-table":
 * the two must be copartitioned), repartitioned (the stateful one with a repartition topic of
 * a fixed partition count, config "partitions").
 */
public final class StreamsApp {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT =
            new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    private static final Map<String, KafkaStreams> APPS = new ConcurrentHashMap<>();
    private static final Map<String, String> LAST_TASKS = new ConcurrentHashMap<>();

    private StreamsApp() {
    }

    static void emit(Map<String, Object> line) {
        java.time.Instant now = java.time.Instant.now();
        line.put("ts", now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000);
        try {
            String text = JSON.writeValueAsString(line);
            synchronized (OUT) {
                OUT.println(text);
                OUT.flush();
            }
        } catch (Exception e) {
            e.printStackTrace();
        }
    }

    static Map<String, Object> map(Object... pairs) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            m.put((String) pairs[i], pairs[i + 1]);
        }
        return m;
    }

    static Topology topology(String kind, String input, String output, JsonNode options) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> in = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()));
        switch (kind) {
            case "stateless":
                in.filter((k, v) -> v != null && !v.isEmpty())
                  .mapValues(v -> v.toUpperCase())
                  .to(output, Produced.with(Serdes.String(), Serdes.String()));
                break;
            case "stateful":
            case "repartitioned": {
                KStream<String, String> keyed = in.selectKey((k, v) -> v.split(" ")[0]);
                if (kind.equals("repartitioned")) {
                    keyed = keyed.repartition(Repartitioned.<String, String>as("by-word")
                            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())
                            .withNumberOfPartitions(options.path("partitions").asInt(3)));
                }
                keyed.groupByKey(Grouped.with("by-word", Serdes.String(), Serdes.String()))
                     .count(Materialized.as("counts"))
                     .toStream()
                     .to(output, Produced.with(Serdes.String(), Serdes.Long()));
                break;
            }
            case "join": {
                var table = builder.table(input + "-table", Consumed.with(Serdes.String(), Serdes.String()));
                in.join(table, (v, t) -> v + "|" + t).to(output, Produced.with(Serdes.String(), Serdes.String()));
                break;
            }
            default:
                throw new IllegalArgumentException("no topology " + kind);
        }
        return builder.build();
    }

    static void start(JsonNode cmd) {
        String name = cmd.get("name").asText();
        Properties props = new Properties();
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        for (Iterator<Map.Entry<String, JsonNode>> it = cmd.get("config").properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            props.put(e.getKey(), e.getValue().asText());
        }
        Topology topology = topology(cmd.get("topology").asText(), cmd.get("input").asText(),
                cmd.get("output").asText(), cmd.path("options"));
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.setStateListener((to, from) -> emit(map("event", "state", "name", name, "state", to.name(),
                "from", from.name())));
        streams.setUncaughtExceptionHandler(e -> {
            emit(map("event", "error", "name", name, "message", String.valueOf(e)));
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        APPS.put(name, streams);
        streams.start();
    }

    static void watchTasks() {
        while (true) {
            for (Map.Entry<String, KafkaStreams> e : APPS.entrySet()) {
                try {
                    TreeSet<String> active = new TreeSet<>();
                    TreeSet<String> standby = new TreeSet<>();
                    for (ThreadMetadata thread : e.getValue().metadataForLocalThreads()) {
                        for (TaskMetadata task : thread.activeTasks()) {
                            active.add(task.taskId().toString());
                        }
                        for (TaskMetadata task : thread.standbyTasks()) {
                            standby.add(task.taskId().toString());
                        }
                    }
                    String key = active + "/" + standby;
                    if (!key.equals(LAST_TASKS.get(e.getKey()))) {
                        LAST_TASKS.put(e.getKey(), key);
                        emit(map("event", "tasks", "name", e.getKey(), "active", new ArrayList<>(active),
                                "standby", new ArrayList<>(standby)));
                    }
                } catch (Exception ignored) {
                    // An instance shutting down has no metadata to read.
                }
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException ie) {
                return;
            }
        }
    }

    static Object describe(JsonNode cmd) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", cmd.get("bootstrap").asText());
        try (Admin admin = Admin.create(props)) {
            String group = cmd.get("group").asText();
            StreamsGroupDescription d = admin.describeStreamsGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
            List<Object> members = new ArrayList<>();
            for (StreamsGroupMemberDescription m : d.members()) {
                members.add(map("memberId", m.memberId(), "processId", m.processId(), "memberEpoch", m.memberEpoch(),
                        "topologyEpoch", m.topologyEpoch(), "clientId", m.clientId(),
                        "assignment", assignment(m.assignment()), "targetAssignment", assignment(m.targetAssignment())));
            }
            List<Object> subtopologies = new ArrayList<>();
            for (StreamsGroupSubtopologyDescription s : d.subtopologies()) {
                subtopologies.add(map("id", s.subtopologyId(), "sourceTopics", s.sourceTopics(),
                        "repartitionSinkTopics", s.repartitionSinkTopics(),
                        "stateChangelogTopics", s.stateChangelogTopics().keySet(),
                        "repartitionSourceTopics", s.repartitionSourceTopics().keySet()));
            }
            return map("groupId", d.groupId(), "state", d.groupState().toString(), "groupEpoch", d.groupEpoch(),
                    "targetAssignmentEpoch", d.targetAssignmentEpoch(), "topologyEpoch", d.topologyEpoch(),
                    "members", members, "subtopologies", subtopologies);
        }
    }

    /** Admin#incrementalAlterConfigs of a GROUP resource: {"configs": {"streams.x": "v", ...}}. */
    static Object alterGroupConfigs(JsonNode cmd) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", cmd.get("bootstrap").asText());
        try (Admin admin = Admin.create(props)) {
            var resource = new org.apache.kafka.common.config.ConfigResource(
                    org.apache.kafka.common.config.ConfigResource.Type.GROUP, cmd.get("group").asText());
            List<org.apache.kafka.clients.admin.AlterConfigOp> ops = new ArrayList<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = cmd.get("configs").properties().iterator(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                ops.add(new org.apache.kafka.clients.admin.AlterConfigOp(
                        new org.apache.kafka.clients.admin.ConfigEntry(e.getKey(), e.getValue().asText()),
                        org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET));
            }
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get(30, TimeUnit.SECONDS);
            return true;
        }
    }

    static Object assignment(StreamsGroupMemberAssignment a) {
        return map("active", tasks(a.activeTasks()), "standby", tasks(a.standbyTasks()), "warmup", tasks(a.warmupTasks()));
    }

    static List<String> tasks(List<StreamsGroupMemberAssignment.TaskIds> ids) {
        List<String> out = new ArrayList<>();
        for (StreamsGroupMemberAssignment.TaskIds t : ids) {
            for (Integer p : t.partitions()) {
                out.add(t.subtopologyId() + "_" + p);
            }
        }
        java.util.Collections.sort(out);
        return out;
    }

    public static void main(String[] args) throws Exception {
        Thread watcher = new Thread(StreamsApp::watchTasks, "tasks-watcher");
        watcher.setDaemon(true);
        watcher.start();
        emit(map("event", "ready"));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode cmd = JSON.readTree(line);
            String op = cmd.get("op").asText();
            Map<String, Object> reply = map("id", cmd.path("id").asInt());
            try {
                switch (op) {
                    case "start":
                        start(cmd);
                        reply.put("ok", true);
                        break;
                    case "close": {
                        KafkaStreams streams = APPS.remove(cmd.get("name").asText());
                        if (streams != null) {
                            streams.close(java.time.Duration.ofSeconds(30));
                        }
                        reply.put("ok", true);
                        break;
                    }
                    case "describe":
                        reply.put("ok", describe(cmd));
                        break;
                    case "group-configs":
                        reply.put("ok", alterGroupConfigs(cmd));
                        break;
                    case "exit":
                        for (KafkaStreams streams : APPS.values()) {
                            streams.close(java.time.Duration.ofSeconds(10));
                        }
                        reply.put("ok", true);
                        emit(reply);
                        System.exit(0);
                        return;
                    default:
                        throw new IllegalArgumentException("unknown op " + op);
                }
            } catch (Exception e) {
                Throwable t = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e;
                reply.put("error", map("type", t.getClass().getSimpleName(), "message", String.valueOf(t.getMessage())));
            }
            emit(reply);
        }
        System.exit(0);
    }
}
