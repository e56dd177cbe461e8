package odradek.jvmtests;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What scenarios share: the cluster address, a name prefix, one Admin, client configs and read/write helpers.
 * The system property odradek.client.config names a Kafka client properties file (security.protocol, trust
 * store, SASL login...) that every client of the run starts from: the secured runs' user.
 */
final class Env {
    static final Duration WAIT = Duration.ofSeconds(60);

    final String bootstrap;
    final String prefix;
    final Properties security = new Properties();
    private Admin admin;

    Env(String bootstrap, String prefix) throws IOException {
        this.bootstrap = bootstrap;
        this.prefix = prefix;
        String config = System.getProperty("odradek.client.config");
        if (config != null) {
            try (Reader in = Files.newBufferedReader(Path.of(config))) {
                security.load(in);
            }
        }
    }

    /** The run's security settings, its address and the given settings (which win). */
    Properties base(Map<String, String> overrides) {
        Properties p = new Properties();
        p.putAll(security);
        p.put("bootstrap.servers", bootstrap);
        p.putAll(overrides);
        return p;
    }

    String name(String suffix) {
        return prefix + "-" + suffix;
    }

    Admin admin() {
        if (admin == null) admin = Admin.create(adminProps());
        return admin;
    }

    void close() {
        if (admin != null) admin.close(Duration.ofSeconds(10));
    }

    Properties adminProps() {
        return base(Map.of("client.id", prefix + "-admin"));
    }

    Properties producerProps(Map<String, String> overrides) {
        Properties p = base(Map.of());
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("delivery.timeout.ms", "60000");
        // The 3.0+ default; under 2.8's acks=1 the high watermark trails the followers, and a read right after
        // the writes would see only part of them (so on Apache Kafka too).
        p.put("acks", "all");
        p.putAll(overrides);
        return p;
    }

    Properties consumerProps(Map<String, String> overrides) {
        Properties p = base(Map.of());
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.putAll(overrides);
        return p;
    }

    /** Creates a topic and waits until every partition has a leader. */
    String topic(String suffix, int partitions, int replication, Map<String, String> configs) throws Exception {
        String topic = name(suffix);
        admin().createTopics(List.of(new NewTopic(topic, partitions, (short) replication).configs(configs))).all().get();
        Check.eventually(() -> leadersKnown(topic, partitions), WAIT, "leaders of " + topic);
        return topic;
    }

    String topic(String suffix, int partitions) throws Exception {
        return topic(suffix, partitions, 3, Map.of());
    }

    private boolean leadersKnown(String topic, int partitions) {
        try {
            TopicDescription d = Compat.describeTopic(admin(), topic);
            return d.partitions().size() == partitions && d.partitions().stream().allMatch(p -> p.leader() != null);
        } catch (Exception e) {
            return false;
        }
    }

    static List<TopicPartition> partitions(String topic, int count) {
        return IntStream.range(0, count).mapToObj(p -> new TopicPartition(topic, p)).collect(Collectors.toList());
    }

    /** Sends count records (key k-i, value v-i..., header n=i), round-robin over partitions; all acknowledged. */
    List<RecordMetadata> produce(String topic, int partitions, int count, Map<String, String> overrides) throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(overrides))) {
            return send(producer, topic, partitions, 0, count);
        }
    }

    static List<RecordMetadata> send(KafkaProducer<String, String> producer, String topic, int partitions, int from, int count)
            throws InterruptedException, ExecutionException {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        for (int i = from; i < from + count; i++) {
            ProducerRecord<String, String> record = new ProducerRecord<>(topic, i % partitions, "k-" + i, value(i));
            record.headers().add("n", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
            futures.add(producer.send(record));
        }
        producer.flush();
        List<RecordMetadata> out = new ArrayList<>();
        for (Future<RecordMetadata> f : futures) out.add(f.get());
        return out;
    }

    static String value(int i) {
        return "v-" + i + "-" + "odradek ".repeat(i % 17);
    }

    /** Reads every partition of a topic from its start up to its end offset (the LSO under read_committed). */
    List<ConsumerRecord<String, String>> readAll(String topic, int partitions, String isolation) {
        Properties p = consumerProps(Map.of("isolation.level", isolation));
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = partitions(topic, partitions);
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            List<ConsumerRecord<String, String>> out = new ArrayList<>();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (tps.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                Check.that(System.nanoTime() < deadline, "timed out reading " + topic + " up to " + end);
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                records.forEach(out::add);
            }
            return out;
        }
    }

    /** The sum of a topic's end offsets (high watermarks). */
    long endOffsets(String topic, int partitions) {
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(Map.of()))) {
            return consumer.endOffsets(partitions(topic, partitions)).values().stream().mapToLong(Long::longValue).sum();
        }
    }

    /** Checks that records carry exactly values 0..count-1 with their keys and headers, once each. */
    static void checkRecords(Collection<ConsumerRecord<String, String>> records, int count) {
        Map<Integer, Integer> seen = new HashMap<>();
        for (ConsumerRecord<String, String> r : records) {
            Header n = r.headers().lastHeader("n");
            Check.that(n != null, "record at " + r.partition() + "/" + r.offset() + " lost its header");
            int i = Integer.parseInt(new String(n.value(), StandardCharsets.UTF_8));
            Check.equal("k-" + i, r.key(), "key of record " + i);
            Check.equal(value(i), r.value(), "value of record " + i);
            seen.merge(i, 1, Integer::sum);
        }
        Check.equal(count, seen.size(), "distinct records read");
        Check.equal(count, records.size(), "records read");
    }
}
