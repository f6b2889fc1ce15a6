import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Future;

/** KafkaProducer: plain, idempotent or transactional, by its configuration. Thread-safe, so
 *  its commands run on the command's own thread. */
final class Producers {
    private Producers() {
    }

    @SuppressWarnings("unchecked")
    static KafkaProducer<String, String> producer(JsonNode command) {
        return Worker.client(command, KafkaProducer.class);
    }

    static Object handle(String op, JsonNode command) throws Exception {
        switch (op) {
            case "producer.new": {
                String name = Worker.text(command, "name");
                KafkaProducer<String, String> p = new KafkaProducer<>(Worker.config(command.get("config")),
                        new StringSerializer(), new StringSerializer());
                if (Worker.CLIENTS.putIfAbsent(name, p) != null) {
                    p.close();
                    throw new IllegalArgumentException("a client named '" + name + "' exists");
                }
                return Worker.map("name", name);
            }
            case "producer.send": {
                KafkaProducer<String, String> p = producer(command);
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                for (JsonNode r : command.get("records")) {
                    sent.add(p.send(new ProducerRecord<>(r.get("topic").asText(),
                            r.hasNonNull("partition") ? r.get("partition").asInt() : null,
                            r.hasNonNull("timestamp") ? r.get("timestamp").asLong() : null,
                            r.hasNonNull("key") ? r.get("key").asText() : null,
                            r.hasNonNull("value") ? r.get("value").asText() : null)));
                }
                if (command.path("wait").asBoolean(true)) {
                    List<Object> out = new ArrayList<>();
                    for (Future<RecordMetadata> f : sent) {
                        RecordMetadata m = f.get();
                        out.add(Arrays.asList(m.topic(), m.partition(), m.offset(), m.timestamp()));
                    }
                    return out;
                }
                return sent.size();
            }
            case "producer.flush":
                producer(command).flush();
                return null;
            case "producer.initTransactions":
                producer(command).initTransactions();
                return null;
            case "producer.beginTransaction":
                producer(command).beginTransaction();
                return null;
            case "producer.commitTransaction":
                producer(command).commitTransaction();
                return null;
            case "producer.abortTransaction":
                producer(command).abortTransaction();
                return null;
            case "producer.sendOffsets": {
                // The group's metadata comes from the consumer whose offsets these are (KIP-447).
                Object actor = Worker.CLIENTS.get(Worker.text(command, "consumer"));
                if (!(actor instanceof Consumers.ConsumerActor)) {
                    throw new IllegalArgumentException("no consumer named " + command.get("consumer"));
                }
                ConsumerGroupMetadata metadata = ((Consumers.ConsumerActor) actor).post(c -> c.groupMetadata());
                producer(command).sendOffsetsToTransaction(Consumers.offsets(command.get("offsets")), metadata);
                return null;
            }
            case "producer.close": {
                KafkaProducer<String, String> p = producer(command);
                Worker.CLIENTS.remove(Worker.text(command, "name"));
                p.close(Duration.ofSeconds(command.path("timeoutS").asLong(30)));
                return null;
            }
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static void closeAll() {
        Worker.CLIENTS.forEach((name, client) -> {
            if (client instanceof KafkaProducer) {
                ((KafkaProducer<?, ?>) client).close(Duration.ofSeconds(5));
            }
        });
    }
}
