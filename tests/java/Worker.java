import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Kafka's Java clients for kgroup's tests, in one long-lived JVM per group of scenarios.
 *
 * The test sends one JSON command a line on stdin, {"id": N, "op": "...", ...arguments}, and
 * reads JSON lines on stdout: {"id": N, "ok": RESULT} or {"id": N, "error": {"type", "message"}}
 * for each command, and {"event": KIND, "name": CLIENT, ...} whenever a consumer it started does
 * something (records polled, partitions assigned or revoked, acknowledgements committed).
 * Clients are named by the test and live until it closes them: consumers and share consumers
 * each on a thread of their own that polls between the commands posted to it (Consumers.java),
 * producers and admin clients called from the command's thread (Producers.java, Admins.java).
 * Kafka's CLI tools run in this JVM too, one at a time, their output captured (Tools.java).
 * Commands run on a pool, so a slow one never holds up another client.
 */
public final class Worker {
    static final ObjectMapper JSON = new ObjectMapper();
    /** The real stdout: a tool run by Tools swaps System.out for a buffer while it runs. */
    private static final PrintStream OUT =
            new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    static final Map<String, Object> CLIENTS = new java.util.concurrent.ConcurrentHashMap<>();

    private Worker() {
    }

    static void emit(Map<String, Object> line) {
        String text;
        try {
            text = JSON.writeValueAsString(line);
        } catch (Exception e) {
            text = "{\"event\":\"unprintable\",\"message\":" + JSON.valueToTree(String.valueOf(e)) + "}";
        }
        synchronized (OUT) {
            OUT.println(text);
            OUT.flush();
        }
    }

    static void event(String kind, String name, Object... fields) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", kind);
        line.put("name", name);
        java.time.Instant now = java.time.Instant.now();
        line.put("ts", now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000);   // µs, for timelines across processes
        for (int i = 0; i + 1 < fields.length; i += 2) {
            line.put((String) fields[i], fields[i + 1]);
        }
        emit(line);
    }

    static Map<String, Object> map(Object... pairs) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            m.put((String) pairs[i], pairs[i + 1]);
        }
        return m;
    }

    /** The cause worth reporting: futures wrap the client's exception. */
    static Throwable unwrap(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    static Map<String, Object> error(Throwable t) {
        t = unwrap(t);
        return map("type", t.getClass().getSimpleName(), "message", String.valueOf(t.getMessage()));
    }

    /** The client configuration of a command: a JSON object of strings, numbers and booleans. */
    static Map<String, Object> config(JsonNode node) {
        Map<String, Object> config = new LinkedHashMap<>();
        if (node != null) {
            for (Map.Entry<String, JsonNode> e : node.properties()) {
                config.put(e.getKey(), e.getValue().isTextual() ? e.getValue().asText() : e.getValue().toString());
            }
        }
        return config;
    }

    static List<String> strings(JsonNode node) {
        List<String> out = new ArrayList<>();
        if (node != null) {
            node.forEach(n -> out.add(n.asText()));
        }
        return out;
    }

    static String text(JsonNode command, String field) {
        JsonNode n = command.get(field);
        if (n == null || n.isNull()) {
            throw new IllegalArgumentException("missing argument '" + field + "'");
        }
        return n.asText();
    }

    @SuppressWarnings("unchecked")
    static <T> T client(JsonNode command, Class<T> kind) {
        String name = text(command, "name");
        Object client = CLIENTS.get(name);
        if (!kind.isInstance(client)) {
            throw new IllegalArgumentException("no " + kind.getSimpleName() + " named '" + name + "'");
        }
        return (T) client;
    }

    static Object dispatch(String op, JsonNode command) throws Exception {
        String family = op.contains(".") ? op.substring(0, op.indexOf('.')) : op;
        switch (family) {
            case "consumer":
            case "share":
                return Consumers.handle(op, command);
            case "producer":
                return Producers.handle(op, command);
            case "admin":
                return Admins.handle(op, command);
            case "tool":
                return Tools.handle(op, command);
            case "ping":
                return "pong";
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    public static void main(String[] args) throws Exception {
        ExecutorService pool = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "command");
            t.setDaemon(true);
            return t;
        });
        Tools.install();
        emit(map("event", "ready"));
        BufferedReader in = new BufferedReader(new InputStreamReader(
                new java.io.FileInputStream(FileDescriptor.in), StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode command = JSON.readTree(line);
            long id = command.path("id").asLong();
            String op = command.path("op").asText();
            if (op.equals("exit")) {
                break;
            }
            pool.submit(() -> {
                try {
                    emit(map("id", id, "ok", dispatch(op, command)));
                } catch (Throwable t) {
                    emit(map("id", id, "error", error(t)));
                }
            });
        }
        Consumers.closeAll();
        Producers.closeAll();
        Admins.closeAll();
        emit(map("event", "exited"));
        OUT.flush();
        Runtime.getRuntime().halt(0);
    }
}
