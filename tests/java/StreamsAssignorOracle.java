import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.streams.assignor.AssignmentConfigsImpl;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpecImpl;
import org.apache.kafka.coordinator.group.streams.assignor.MemberMetadataAndStateImpl;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Kafka 4.4's own streams task assignor (the group coordinator's StickyTaskAssignor), run on
 * inputs a test writes, so kgroup's port (kgroup.assignors.streams_sticky) can be compared
 * with it task for task.
 *
 * One JSON case a line on stdin:
 *   {"subtopologies": [{"id": "0", "tasks": 4, "stateful": true}, ...],
 *    "standbys": 1,
 *    "members": {"m0": {"process": "p0", "active": {"0": [0, 1]}, "standby": {...},
 *                       "warmup": {...}, "offsets": {"0": {"0": 10}}, "endOffsets": {...}}, ...}}
 * and one JSON line back per case: {"m0": {"active": {"0": [0, 1]}, "standby": {...}}, ...}
 * (or {"error": "..."}). The members are put in a HashMap, as the coordinator's are.
 */
public final class StreamsAssignorOracle {
    private static final ObjectMapper JSON = OracleLoop.JSON;

    private StreamsAssignorOracle() {
    }

    public static void main(String[] args) throws Exception {
        StickyTaskAssignor assignor = new StickyTaskAssignor();
        OracleLoop.serve((c, out) -> {
            GroupAssignment result = assignor.assign(groupSpec(c), describer(c.get("subtopologies")));
            for (Map.Entry<String, MemberAssignment> e : new TreeMap<>(result.members()).entrySet()) {
                ObjectNode m = out.putObject(e.getKey());
                m.set("active", JSON.valueToTree(sorted(e.getValue().activeTasks())));
                m.set("standby", JSON.valueToTree(sorted(e.getValue().standbyTasks())));
            }
        });
    }

    private static GroupSpecImpl groupSpec(JsonNode c) {
        Map<String, MemberMetadataAndStateImpl> members = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = c.get("members").properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode m = e.getValue();
            members.put(e.getKey(), new MemberMetadataAndStateImpl(
                    Optional.empty(), Optional.empty(), m.get("process").asText(), Map.of(),
                    tasks(m.get("active")), tasks(m.get("standby")), tasks(m.get("warmup")),
                    offsets(m.get("offsets")), offsets(m.get("endOffsets"))));
        }
        return new GroupSpecImpl(members, new AssignmentConfigsImpl(c.path("standbys").asInt(0), List.of()));
    }

    private static TopologyDescriber describer(JsonNode subtopologies) {
        Map<String, JsonNode> byId = new TreeMap<>();
        for (JsonNode s : subtopologies) {
            byId.put(s.get("id").asText(), s);
        }
        return new TopologyDescriber() {
            @Override
            public List<String> subtopologies() {
                return new ArrayList<>(byId.keySet());
            }

            @Override
            public int maxNumInputPartitions(String subtopologyId) {
                return byId.get(subtopologyId).get("tasks").asInt();
            }

            @Override
            public boolean isStateful(String subtopologyId) {
                return byId.get(subtopologyId).get("stateful").asBoolean();
            }
        };
    }

    private static Map<String, Set<Integer>> tasks(JsonNode node) {
        Map<String, Set<Integer>> out = new HashMap<>();
        if (node != null) {
            for (Iterator<Map.Entry<String, JsonNode>> it = node.properties().iterator(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                Set<Integer> partitions = new HashSet<>();
                e.getValue().forEach(p -> partitions.add(p.asInt()));
                out.put(e.getKey(), partitions);
            }
        }
        return out;
    }

    private static Map<String, Map<Integer, Long>> offsets(JsonNode node) {
        Map<String, Map<Integer, Long>> out = new HashMap<>();
        if (node != null) {
            for (Iterator<Map.Entry<String, JsonNode>> it = node.properties().iterator(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                Map<Integer, Long> partitions = new HashMap<>();
                e.getValue().properties().forEach(p -> partitions.put(Integer.parseInt(p.getKey()), p.getValue().asLong()));
                out.put(e.getKey(), partitions);
            }
        }
        return out;
    }

    private static Map<String, List<Integer>> sorted(Map<String, Set<Integer>> tasks) {
        Map<String, List<Integer>> out = new TreeMap<>();
        tasks.forEach((s, ps) -> {
            if (!ps.isEmpty()) {
                out.put(s, new ArrayList<>(new TreeSet<>(ps)));
            }
        });
        return out;
    }
}
