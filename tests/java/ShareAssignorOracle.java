import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.SimpleAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Kafka 4.4's own share-group assignor (the group coordinator's SimpleAssignor), run on inputs
 * a test writes, so kgroup's port (kgroup.assignors.share_simple) can be compared with it
 * partition for partition.
 *
 * One JSON case a line on stdin:
 *   {"homogeneous": true,
 *    "topics": {"<uuid>": {"name": "t0", "partitions": 4}, ...},
 *    "members": {"m0": {"subscribed": ["t0", ...], "assignment": {"<uuid>": [0, 1]}}, ...},
 *    "assignable": {"<uuid>": [0, 1], ...}}   (optional: the partitions that may be assigned)
 * and one JSON line back per case: {"m0": {"<uuid>": [0, 1]}, ...} (or {"error": "..."}).
 * As in the coordinator: members go into a HashMap in the order given, a member's
 * subscription is a HashSet of topic names resolved to ids in its iteration order (Kafka's
 * TopicIds), and a current assignment is a HashMap of HashSets built from the lists given.
 */
public final class ShareAssignorOracle {
    private static final ObjectMapper JSON = OracleLoop.JSON;

    private ShareAssignorOracle() {
    }

    public static void main(String[] args) throws Exception {
        SimpleAssignor assignor = new SimpleAssignor();
        OracleLoop.serve((c, out) -> {
            GroupAssignment result = assignor.assign(groupSpec(c), describer(c.get("topics")));
            for (Map.Entry<String, MemberAssignment> e : new TreeMap<>(result.members()).entrySet()) {
                ObjectNode m = out.putObject(e.getKey());
                for (Map.Entry<Uuid, Set<Integer>> t : e.getValue().partitions().entrySet()) {
                    m.set(t.getKey().toString(), JSON.valueToTree(new TreeSet<>(t.getValue())));
                }
            }
        });
    }

    private static GroupSpecImpl groupSpec(JsonNode c) {
        Map<String, Uuid> byName = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = c.get("topics").properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            byName.put(e.getValue().get("name").asText(), Uuid.fromString(e.getKey()));
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = c.get("members").properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode m = e.getValue();
            List<String> names = new ArrayList<>();
            m.get("subscribed").forEach(n -> names.add(n.asText()));
            Set<Uuid> ids = new LinkedHashSet<>();
            for (String name : new HashSet<>(names)) {
                Uuid id = byName.get(name);
                if (id != null) {
                    ids.add(id);
                }
            }
            Map<Uuid, Set<Integer>> assigned = new HashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> a = m.get("assignment").properties().iterator(); a.hasNext(); ) {
                Map.Entry<String, JsonNode> t = a.next();
                List<Integer> partitions = new ArrayList<>();
                t.getValue().forEach(p -> partitions.add(p.asInt()));
                assigned.put(Uuid.fromString(t.getKey()), new HashSet<>(partitions));
            }
            members.put(e.getKey(), new MemberSubscriptionAndAssignmentImpl(
                    Optional.empty(), Optional.empty(), ids, new Assignment(assigned)));
        }
        SubscriptionType type = c.get("homogeneous").asBoolean() ? SubscriptionType.HOMOGENEOUS
                : SubscriptionType.HETEROGENEOUS;
        return new GroupSpecImpl(members, type, Map.of(), assignable(c.get("assignable")));
    }

    /** The partitions that may be assigned (a share group's initialized ones), if given. */
    private static Optional<Map<Uuid, Set<Integer>>> assignable(JsonNode given) {
        if (given == null || given.isNull()) {
            return Optional.empty();
        }
        Map<Uuid, Set<Integer>> allowed = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = given.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            Set<Integer> partitions = new HashSet<>();
            e.getValue().forEach(p -> partitions.add(p.asInt()));
            allowed.put(Uuid.fromString(e.getKey()), partitions);
        }
        return Optional.of(allowed);
    }

    private static SubscribedTopicDescriber describer(JsonNode topics) {
        Map<Uuid, Integer> counts = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = topics.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            counts.put(Uuid.fromString(e.getKey()), e.getValue().get("partitions").asInt());
        }
        return new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                return counts.getOrDefault(topicId, -1);
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Set.of();
            }
        };
    }
}
