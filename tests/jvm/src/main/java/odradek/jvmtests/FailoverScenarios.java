package odradek.jvmtests;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Scenarios the Python side disturbs while they run: they write "##progress N" (records acknowledged) to
 * stderr, and the test kills and restarts brokers at given counts.
 */
final class FailoverScenarios {
    static final int RECORDS = 4000;

    private FailoverScenarios() {}

    static Map<String, Scenario> all() {
        Map<String, Scenario> all = new LinkedHashMap<>();
        all.put("idempotent-through-leader-kill", FailoverScenarios::idempotentThroughLeaderKill);
        return all;
    }

    /**
     * An idempotent producer (acks=all, retries) writes 4000 records at a steady pace while the test SIGKILLs
     * the leader of partition 0 and restarts it: every send succeeds and every record is in the log once.
     */
    private static Map<String, Object> idempotentThroughLeaderKill(Env env) throws Exception {
        String topic = env.topic("failover", 3, 3, Map.of("min.insync.replicas", "2"));
        System.err.println("##topic " + topic);
        AtomicInteger acked = new AtomicInteger();
        AtomicReference<Exception> failed = new AtomicReference<>();
        Map<String, String> config = Map.of("enable.idempotence", "true", "acks", "all", "linger.ms", "5",
                "delivery.timeout.ms", "120000", "request.timeout.ms", "10000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(env.producerProps(config))) {
            for (int i = 0; i < RECORDS; i++) {
                ProducerRecord<String, String> record = new ProducerRecord<>(topic, i % 3, "k-" + i, Env.value(i));
                record.headers().add("n", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                producer.send(record, (metadata, error) -> {
                    if (error != null) {
                        failed.compareAndSet(null, error);
                    } else if (acked.incrementAndGet() % 200 == 0) {
                        System.err.println("##progress " + acked.get());
                    }
                });
                if (i % 20 == 19) Thread.sleep(10);  // ~2000 records a second: the kill lands mid-stream
            }
            producer.flush();
        }
        Check.that(failed.get() == null, "a send failed: " + failed.get());
        Check.equal(RECORDS, acked.get(), "records acknowledged");
        Env.checkRecords(env.readAll(topic, 3, "read_uncommitted"), RECORDS);
        return Map.of("topic", topic, "partitions", 3);
    }
}
