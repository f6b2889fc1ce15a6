import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * KafkaConsumer and KafkaShareConsumer as actors: each on a thread of its own that polls in a
 * loop (neither client may be used from two threads) and runs the commands posted to it
 * between polls. What a consumer sees becomes an event: "records" ([topic, partition, offset,
 * key, value], plus delivery count and acknowledgement for a share consumer), "assigned",
 * "revoked" and "lost" (from its rebalance listener), "acks" (a share consumer's commit
 * callback), "transformed" (a consume-transform-produce transaction committed), "failed"
 * (poll threw; the consumer stops) and "closed".
 */
final class Consumers {
    private Consumers() {
    }

    /** One client on its own thread: `loop` polls; `post` runs a function of the client there. */
    abstract static class Actor<C> implements Runnable {
        final String name;
        final JsonNode command;
        final long pollMs;
        final LinkedBlockingQueue<Runnable> tasks = new LinkedBlockingQueue<>();
        final CompletableFuture<Object> started = new CompletableFuture<>();
        volatile boolean running = true;
        volatile boolean polling = true;
        C client;

        Actor(String name, JsonNode command) {
            this.name = name;
            this.command = command;
            this.pollMs = command.path("pollMs").asLong(100);
        }

        abstract C create();

        abstract void pollOnce();

        abstract void close(JsonNode how);

        <R> R post(Function<C, R> work) throws Exception {
            CompletableFuture<R> done = new CompletableFuture<>();
            tasks.add(() -> {
                try {
                    done.complete(work.apply(client));
                } catch (Throwable t) {
                    done.completeExceptionally(t);
                }
            });
            return done.get(command.path("callTimeoutMs").asLong(60_000), TimeUnit.MILLISECONDS);
        }

        @Override
        public void run() {
            try {
                client = create();
                started.complete(Worker.map("name", name));
            } catch (Throwable t) {
                started.completeExceptionally(t);
                return;
            }
            try {
                while (running) {
                    Runnable task;
                    while ((task = tasks.poll()) != null) {
                        task.run();
                    }
                    if (!running) {
                        break;
                    }
                    if (polling) {
                        pollOnce();
                    } else {
                        Runnable next = tasks.poll(pollMs, TimeUnit.MILLISECONDS);
                        if (next != null) {
                            next.run();
                        }
                    }
                }
            } catch (Throwable t) {
                Worker.event("failed", name, "error", Worker.error(t));
                try {
                    close(null);
                } catch (Throwable ignored) {
                    // closing after a failure is best effort; the failure is what the test sees
                }
            } finally {
                Worker.CLIENTS.remove(name, this);
                Runnable task;
                while ((task = tasks.poll()) != null) {
                    task.run();
                }
            }
        }

        void start() throws Exception {
            if (Worker.CLIENTS.putIfAbsent(name, this) != null) {
                throw new IllegalArgumentException("a client named '" + name + "' exists");
            }
            Thread thread = new Thread(this, "actor-" + name);
            thread.setDaemon(true);
            thread.start();
            try {
                started.get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                Worker.CLIENTS.remove(name, this);
                throw e;
            }
        }

        Object stop(JsonNode how) throws Exception {
            return post(c -> {
                close(how);
                running = false;
                Worker.event("closed", name);
                return Worker.map("closed", name);
            });
        }
    }

    static List<Object> partitions(Collection<TopicPartition> tps) {
        List<Object> out = new ArrayList<>();
        tps.stream()
                .sorted((a, b) -> a.topic().equals(b.topic()) ? Integer.compare(a.partition(), b.partition())
                        : a.topic().compareTo(b.topic()))
                .forEach(tp -> out.add(List.of(tp.topic(), tp.partition())));
        return out;
    }

    static Set<TopicPartition> topicPartitions(JsonNode list) {
        Set<TopicPartition> out = new HashSet<>();
        list.forEach(p -> out.add(new TopicPartition(p.get(0).asText(), p.get(1).asInt())));
        return out;
    }

    static Map<TopicPartition, OffsetAndMetadata> offsets(JsonNode list) {
        Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
        list.forEach(p -> out.put(new TopicPartition(p.get(0).asText(), p.get(1).asInt()),
                new OffsetAndMetadata(p.get(2).asLong(), p.size() > 3 ? p.get(3).asText() : "")));
        return out;
    }

    static Map<String, Object> groupMetadata(ConsumerGroupMetadata m) {
        return Worker.map("groupId", m.groupId(), "generationId", m.generationId(), "memberId", m.memberId(),
                "groupInstanceId", m.groupInstanceId().orElse(null));
    }

    /** A KafkaConsumer (classic or consumer protocol, by its group.protocol). */
    static final class ConsumerActor extends Actor<KafkaConsumer<String, String>> {
        private final boolean commitEachPoll;
        private KafkaProducer<String, String> transformer;
        private String output;

        ConsumerActor(String name, JsonNode command) {
            super(name, command);
            commitEachPoll = command.path("commit").asText("none").equals("sync");
        }

        @Override
        KafkaConsumer<String, String> create() {
            KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Worker.config(command.get("config")),
                    new StringDeserializer(), new StringDeserializer());
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    if (!tps.isEmpty()) {
                        Worker.event("revoked", name, "partitions", partitions(tps));
                    }
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    Worker.event("assigned", name, "partitions", partitions(tps),
                            "generation", consumer.groupMetadata().generationId());
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> tps) {
                    Worker.event("lost", name, "partitions", partitions(tps));
                }
            };
            if (command.hasNonNull("regex")) {
                // A broker-side regex (KIP-848): the coordinator resolves it, new topics included.
                consumer.subscribe(new org.apache.kafka.clients.consumer.SubscriptionPattern(
                        command.get("regex").asText()), listener);
            } else if (command.hasNonNull("pattern")) {
                // A java.util.regex.Pattern: resolved by the client from its metadata.
                consumer.subscribe(Pattern.compile(command.get("pattern").asText()), listener);
            } else if (command.hasNonNull("assign")) {
                consumer.assign(topicPartitions(command.get("assign")));
            } else {
                consumer.subscribe(Worker.strings(command.get("topics")), listener);
            }
            JsonNode transform = command.get("transform");
            if (transform != null) {
                output = transform.get("output").asText();
                transformer = new KafkaProducer<>(Worker.config(transform.get("config")),
                        new StringSerializer(), new StringSerializer());
                transformer.initTransactions();
            }
            return consumer;
        }

        @Override
        void pollOnce() {
            ConsumerRecords<String, String> records = client.poll(Duration.ofMillis(pollMs));
            if (records.isEmpty()) {
                return;
            }
            List<Object> out = new ArrayList<>();
            for (ConsumerRecord<String, String> r : records) {
                out.add(java.util.Arrays.asList(r.topic(), r.partition(), r.offset(), r.key(), r.value()));
            }
            Worker.event("records", name, "records", out, "generation", client.groupMetadata().generationId());
            if (transformer != null) {
                transform(records);
            } else if (commitEachPoll) {
                client.commitSync();
            }
        }

        /** One transaction per poll: the upper-cased records and the input's offsets (KIP-447). */
        private void transform(ConsumerRecords<String, String> records) {
            Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
            for (TopicPartition tp : records.partitions()) {
                List<ConsumerRecord<String, String>> part = records.records(tp);
                next.put(tp, new OffsetAndMetadata(part.get(part.size() - 1).offset() + 1));
            }
            try {
                transformer.beginTransaction();
                for (ConsumerRecord<String, String> r : records) {
                    transformer.send(new ProducerRecord<>(output, r.key(), r.value() == null ? null : r.value().toUpperCase()));
                }
                transformer.sendOffsetsToTransaction(next, client.groupMetadata());
                transformer.commitTransaction();
                Worker.event("transformed", name, "count", records.count(), "offsets", offsetList(next));
            } catch (ProducerFencedException e) {
                throw e;
            } catch (KafkaException e) {
                transformer.abortTransaction();
                Worker.event("aborted", name, "error", Worker.error(e));
                Map<TopicPartition, OffsetAndMetadata> committed = client.committed(client.assignment());
                for (TopicPartition tp : client.assignment()) {
                    OffsetAndMetadata at = committed.get(tp);
                    if (at != null) {
                        client.seek(tp, at.offset());
                    } else {
                        client.seekToBeginning(List.of(tp));
                    }
                }
            }
        }

        @Override
        void close(JsonNode how) {
            boolean leave = how == null || how.path("leave").asBoolean(true);
            client.close(CloseOptions.groupMembershipOperation(leave
                    ? CloseOptions.GroupMembershipOperation.DEFAULT
                    : CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP).withTimeout(Duration.ofSeconds(30)));
            if (transformer != null) {
                transformer.close(Duration.ofSeconds(10));
            }
        }

        Object call(String method, JsonNode command) throws Exception {
            return post(c -> {
                switch (method) {
                    case "assignment":
                        return partitions(c.assignment());
                    case "subscription":
                        return new ArrayList<>(new java.util.TreeSet<>(c.subscription()));
                    case "groupMetadata":
                        return groupMetadata(c.groupMetadata());
                    case "commitSync":
                        if (command.hasNonNull("offsets")) {
                            c.commitSync(offsets(command.get("offsets")));
                        } else {
                            c.commitSync();
                        }
                        return null;
                    case "committed": {
                        Map<TopicPartition, OffsetAndMetadata> got = c.committed(
                                command.hasNonNull("partitions") ? topicPartitions(command.get("partitions")) : c.assignment());
                        List<Object> out = new ArrayList<>();
                        got.forEach((tp, o) -> out.add(java.util.Arrays.asList(tp.topic(), tp.partition(),
                                o == null ? null : o.offset())));
                        return out;
                    }
                    case "position": {
                        List<Object> out = new ArrayList<>();
                        for (TopicPartition tp : c.assignment()) {
                            out.add(List.of(tp.topic(), tp.partition(), c.position(tp)));
                        }
                        return out;
                    }
                    case "seekToBeginning":
                        c.seekToBeginning(c.assignment());
                        return null;
                    case "enforceRebalance":
                        c.enforceRebalance();
                        return null;
                    default:
                        throw new IllegalArgumentException("unknown consumer method " + method);
                }
            });
        }
    }

    /** A KafkaShareConsumer; in explicit mode it acknowledges each record by the plan it was given. */
    static final class ShareActor extends Actor<KafkaShareConsumer<String, String>> {
        private final boolean explicit;
        private final Set<String> release = new HashSet<>();
        private final Set<String> reject = new HashSet<>();
        private final Set<String> renew = new HashSet<>();
        private final int releaseTimes;
        private final String commit;
        /** topic:partition:offset of the records renewed once; they come back in a later poll. */
        private final Set<String> renewed = new HashSet<>();

        ShareActor(String name, JsonNode command) {
            super(name, command);
            explicit = "explicit".equals(Worker.config(command.get("config")).get("share.acknowledgement.mode"));
            JsonNode plan = command.path("plan");
            release.addAll(Worker.strings(plan.get("release")));
            reject.addAll(Worker.strings(plan.get("reject")));
            renew.addAll(Worker.strings(plan.get("renew")));
            releaseTimes = plan.path("releaseTimes").asInt(1);
            commit = command.path("commit").asText("none");
        }

        @Override
        KafkaShareConsumer<String, String> create() {
            KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(Worker.config(command.get("config")),
                    new StringDeserializer(), new StringDeserializer());
            consumer.setAcknowledgementCommitCallback((offsets, exception) -> {
                Map<String, Object> byPartition = new java.util.TreeMap<>();
                offsets.forEach((tip, set) -> byPartition.put(tip.topic() + ":" + tip.partition(),
                        new ArrayList<>(new java.util.TreeSet<>(set))));
                Worker.event("acks", name, "offsets", byPartition,
                        "error", exception == null ? null : Worker.error(exception));
            });
            consumer.subscribe(Worker.strings(command.get("topics")));
            return consumer;
        }

        private AcknowledgeType decide(ConsumerRecord<String, String> r) {
            int delivery = r.deliveryCount().map(Short::intValue).orElse(1);
            if (reject.contains(r.value())) {
                return AcknowledgeType.REJECT;
            }
            if (release.contains(r.value()) && delivery <= releaseTimes) {
                return AcknowledgeType.RELEASE;
            }
            if (renew.contains(r.value()) && renewed.add(r.topic() + ":" + r.partition() + ":" + r.offset())) {
                return AcknowledgeType.RENEW;
            }
            return AcknowledgeType.ACCEPT;
        }

        @Override
        void pollOnce() {
            ConsumerRecords<String, String> records = client.poll(Duration.ofMillis(pollMs));
            if (records.isEmpty()) {
                if ("sync".equals(commit) && explicit) {
                    client.commitSync();
                }
                return;
            }
            List<Object> out = new ArrayList<>();
            for (ConsumerRecord<String, String> r : records) {
                String ack = null;
                if (explicit) {
                    AcknowledgeType type = decide(r);
                    // RENEW (KIP-1222) keeps the record acquired; the client hands it back in a
                    // later poll, when the plan accepts it.
                    client.acknowledge(r, type);
                    ack = type.name();
                }
                out.add(java.util.Arrays.asList(r.topic(), r.partition(), r.offset(), r.key(), r.value(),
                        r.deliveryCount().map(Short::intValue).orElse(null), ack));
            }
            Worker.event("records", name, "records", out);
            if ("sync".equals(commit)) {
                Map<TopicIdPartition, Optional<KafkaException>> result = client.commitSync();
                Map<String, Object> errors = new java.util.TreeMap<>();
                result.forEach((tip, e) -> errors.put(tip.topic() + ":" + tip.partition(),
                        e.map(Worker::error).orElse(null)));
                Worker.event("committed", name, "results", errors);
            } else if ("async".equals(commit)) {
                client.commitAsync();
            }
        }

        @Override
        void close(JsonNode how) {
            client.close(Duration.ofSeconds(30));
        }

        Object call(String method, JsonNode command) throws Exception {
            return post(c -> {
                switch (method) {
                    case "acquisitionLockTimeoutMs":
                        return c.acquisitionLockTimeoutMs().orElse(null);
                    case "subscription":
                        return new ArrayList<>(new java.util.TreeSet<>(c.subscription()));
                    case "commitSync":
                        c.commitSync();
                        return null;
                    default:
                        throw new IllegalArgumentException("unknown share consumer method " + method);
                }
            });
        }
    }

    static Object offsetList(Map<TopicPartition, OffsetAndMetadata> offsets) {
        List<Object> out = new ArrayList<>();
        offsets.forEach((tp, o) -> out.add(List.of(tp.topic(), tp.partition(), o.offset())));
        return out;
    }

    static Object handle(String op, JsonNode command) throws Exception {
        String name = Worker.text(command, "name");
        switch (op) {
            case "consumer.start": {
                ConsumerActor actor = new ConsumerActor(name, command);
                actor.start();
                return actor.started.get();
            }
            case "share.start": {
                ShareActor actor = new ShareActor(name, command);
                actor.start();
                return actor.started.get();
            }
            case "consumer.hold":
            case "share.hold":
                // Stop polling (a member that stalls: its session goes on, its poll interval runs out).
                Worker.client(command, Actor.class).polling = false;
                return null;
            case "consumer.resume":
            case "share.resume":
                Worker.client(command, Actor.class).polling = true;
                return null;
            case "consumer.call":
                return Worker.client(command, ConsumerActor.class).call(Worker.text(command, "method"), command);
            case "share.call":
                return Worker.client(command, ShareActor.class).call(Worker.text(command, "method"), command);
            case "consumer.close":
            case "share.close":
                return Worker.client(command, Actor.class).stop(command);
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static void closeAll() {
        for (Object client : Worker.CLIENTS.values()) {
            if (client instanceof Actor) {
                try {
                    ((Actor<?>) client).stop(null);
                } catch (Exception ignored) {
                    // the worker is exiting; a client that cannot close is abandoned
                }
            }
        }
    }
}
