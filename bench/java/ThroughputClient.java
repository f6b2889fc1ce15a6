// The Java client side of bench/broker_throughput.py: Kafka 4.4's own producer and consumer
// (kafka-clients from the reference jars), driven over stdin/stdout so several processes start
// together:
//
//   java -cp 'reference/lib/*:build/bench-java' ThroughputClient produce BOOTSTRAP TOPIC N BYTES ACKS
//   java -cp ... ThroughputClient consume BOOTSTRAP TOPIC PARTITIONS(comma-separated) N
//
// Each prints "ready" once it has the topic's metadata, waits for a line on stdin, runs, and
// prints "done START_MS END_MS COUNT" (wall-clock epoch milliseconds): a producer from its first
// send() to the last acknowledgement, a consumer from assign() to reading N records (or every
// record of its partitions up to their end offsets, when N is 0).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ThroughputClient {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        if (args[0].equals("produce")) {
            produce(args[1], args[2], Long.parseLong(args[3]), Integer.parseInt(args[4]), args[5], in);
        } else {
            consume(args[1], args[2], args[3], Long.parseLong(args[4]), in);
        }
    }

    static void produce(String bootstrap, String topic, long n, int size, String acks, BufferedReader in)
            throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", acks);
        p.put("linger.ms", "5");
        p.put("batch.size", "1048576");
        p.put("buffer.memory", "268435456");
        p.put("compression.type", "none");
        p.put("enable.idempotence", "false");
        p.put("max.request.size", "10485760");
        byte[] value = new byte[size];
        java.util.Arrays.fill(value, (byte) 'v');
        AtomicLong failed = new AtomicLong();
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.partitionsFor(topic);
            System.out.println("ready");
            System.out.flush();
            in.readLine();
            long t0 = System.currentTimeMillis();
            for (long i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, value), (md, e) -> {
                    if (e != null) failed.incrementAndGet();
                });
            }
            producer.flush();
            long t1 = System.currentTimeMillis();
            if (failed.get() > 0) {
                System.out.println("error " + failed.get() + " sends failed");
            } else {
                System.out.println("done " + t0 + " " + t1 + " " + n);
            }
            System.out.flush();
        }
    }

    static void consume(String bootstrap, String topic, String parts, long n, BufferedReader in) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("enable.auto.commit", "false");
        p.put("fetch.max.bytes", "52428800");
        p.put("max.partition.fetch.bytes", "10485760");
        p.put("max.poll.records", "100000");
        p.put("receive.buffer.bytes", "1048576");
        List<TopicPartition> tps = new ArrayList<>();
        for (String s : parts.split(",")) tps.add(new TopicPartition(topic, Integer.parseInt(s)));
        try (KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps);
            long want = n;
            if (want == 0) for (long e : ends.values()) want += e;
            System.out.println("ready");
            System.out.flush();
            in.readLine();
            long t0 = System.currentTimeMillis();
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long got = 0;
            long bytes = 0;
            while (got < want) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                for (var r : records) bytes += r.value().length;   // touch every record
                got += records.count();
                if (System.currentTimeMillis() - t0 > 300_000) {
                    System.out.println("error consumed only " + got + " of " + want);
                    return;
                }
            }
            long t1 = System.currentTimeMillis();
            System.out.println("done " + t0 + " " + t1 + " " + got);
            System.out.flush();
        }
    }
}
