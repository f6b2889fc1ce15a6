import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * The loop the assignor oracles share: one JSON case a line on stdin, one JSON answer a line
 * on stdout ({"error": "..."} when the case threw).
 */
final class OracleLoop {
    static final ObjectMapper JSON = new ObjectMapper();

    interface Answer {
        void fill(JsonNode c, ObjectNode out) throws Exception;
    }

    private OracleLoop() {
    }

    static void serve(Answer answer) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode out = JSON.createObjectNode();
            try {
                answer.fill(JSON.readTree(line), out);
            } catch (Exception e) {
                out.removeAll();
                out.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            System.out.println(JSON.writeValueAsString(out));
            System.out.flush();
        }
    }
}
