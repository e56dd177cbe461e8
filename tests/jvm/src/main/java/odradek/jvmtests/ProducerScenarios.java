package odradek.jvmtests;

import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;

/** The producer: acks, codecs, idempotence, transactions with consumer offsets, fencing of a zombie. */
final class ProducerScenarios {
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    private static final int RECORDS = 300;

    private ProducerScenarios() {}

    static Map<String, Scenario> all() {
        Map<String, Scenario> all = new LinkedHashMap<>();
        for (String acks : new String[] {"0", "1", "all"}) {
            all.put("acks-" + acks, env -> acks(env, acks));
        }
        for (String codec : CODECS) {
            all.put("codec-" + codec, env -> codec(env, codec));
        }
        all.put("idempotent-default", ProducerScenarios::idempotentDefault);
        all.put("transactional-offsets", ProducerScenarios::transactionalOffsets);
        all.put("fencing-zombie", ProducerScenarios::fencingZombie);
        return all;
    }

    /** acks 0 and 1 are not idempotent (idempotence needs acks=all; 3.x turns it on by default otherwise). */
    private static Map<String, Object> acks(Env env, String acks) throws Exception {
        String topic = env.topic("acks-" + acks, 3);
        List<RecordMetadata> sent = env.produce(topic, 3, RECORDS,
                Map.of("acks", acks, "enable.idempotence", "false", "linger.ms", "5"));
        if (!acks.equals("0")) {
            Check.that(sent.stream().allMatch(m -> m.offset() >= 0), "acknowledged offsets");
        }
        // acks=0: nothing says the appends are done; acks=1: the high watermark follows the followers' fetches.
        Check.eventually(() -> env.endOffsets(topic, 3) == RECORDS, Env.WAIT, RECORDS + " records below the high watermark");
        Env.checkRecords(env.readAll(topic, 3, "read_uncommitted"), RECORDS);
        return Map.of("topic", topic);
    }

    private static Map<String, Object> codec(Env env, String codec) throws Exception {
        String topic = env.topic("codec-" + codec, 3);
        env.produce(topic, 3, RECORDS, Map.of("compression.type", codec, "linger.ms", "20", "acks", "all"));
        Env.checkRecords(env.readAll(topic, 3, "read_uncommitted"), RECORDS);
        return Map.of("topic", topic, "partitions", 3);
    }

    /** Default settings: idempotent from 3.0 (KIP-679); 2.8 is told to be. The Python side checks the pids on disk. */
    private static Map<String, Object> idempotentDefault(Env env) throws Exception {
        boolean byDefault = !Compat.clientVersion().startsWith("2.");
        String topic = env.topic("idempotent", 3);
        env.produce(topic, 3, RECORDS, byDefault ? Map.of() : Map.of("enable.idempotence", "true"));
        Env.checkRecords(env.readAll(topic, 3, "read_uncommitted"), RECORDS);
        return Map.of("topic", topic, "partitions", 3, "idempotence", byDefault ? "default" : "configured");
    }

    /** Consume-transform-produce: copies a topic under transactions that also commit the group's offsets. */
    private static Map<String, Object> transactionalOffsets(Env env) throws Exception {
        String input = env.topic("txn-in", 3);
        String output = env.topic("txn-out", 3);
        String group = env.name("txn-group");
        env.produce(input, 3, RECORDS, Map.of());
        Map<String, String> txn = Map.of("transactional.id", env.name("txn-copier"));
        int copied = 0;
        int transactions = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(env.producerProps(txn));
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(env.consumerProps(
                     Map.of("group.id", group, "isolation.level", "read_committed")))) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            long deadline = System.nanoTime() + Env.WAIT.toNanos();
            while (copied < RECORDS) {
                Check.that(System.nanoTime() < deadline, "timed out copying; copied " + copied);
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    org.apache.kafka.clients.producer.ProducerRecord<String, String> out =
                            new org.apache.kafka.clients.producer.ProducerRecord<>(output, r.partition(), r.key(), r.value(), r.headers());
                    producer.send(out);
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
                copied += records.count();
                transactions++;
            }
        }
        Env.checkRecords(env.readAll(output, 3, "read_committed"), RECORDS);
        Map<TopicPartition, OffsetAndMetadata> committed =
                env.admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        Map<TopicPartition, Long> ends;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(env.consumerProps(Map.of()))) {
            ends = c.endOffsets(Env.partitions(input, 3));
        }
        Map<TopicPartition, Long> committedOffsets = committed.entrySet().stream()
                .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
        Check.equal(ends, committedOffsets, "the group's offsets committed in the transactions");
        return Map.of("topic", output, "transactions", transactions);
    }

    /**
     * A second producer with the same transactional.id fences the first: its open transaction is aborted and
     * its commit fails with ProducerFencedException; the new one's transaction is the only one visible.
     */
    private static Map<String, Object> fencingZombie(Env env) throws Exception {
        String topic = env.topic("fencing", 1);
        Map<String, String> txn = Map.of("transactional.id", env.name("fenced"));
        Throwable fenced;
        try (KafkaProducer<String, String> zombie = new KafkaProducer<>(env.producerProps(txn))) {
            zombie.initTransactions();
            zombie.beginTransaction();
            Env.send(zombie, topic, 1, 0, 10);
            try (KafkaProducer<String, String> successor = new KafkaProducer<>(env.producerProps(txn))) {
                successor.initTransactions();  // bumps the epoch and aborts the zombie's transaction
                fenced = Check.thrown(zombie::commitTransaction);
                successor.beginTransaction();
                Env.send(successor, topic, 1, 10, 10);
                successor.commitTransaction();
            }
            zombie.close(Duration.ZERO);
        }
        Check.that(fenced instanceof ProducerFencedException, "the zombie's commit threw " + fenced);
        List<ConsumerRecord<String, String>> visible = env.readAll(topic, 1, "read_committed");
        Set<String> keys = visible.stream().map(ConsumerRecord::key).collect(Collectors.toSet());
        Check.equal(10, visible.size(), "records visible under read_committed");
        Check.that(keys.contains("k-10") && !keys.contains("k-0"), "only the successor's records are visible: " + keys);
        return Map.of("topic", topic, "fenced_by", fenced.getClass().getSimpleName());
    }
}
