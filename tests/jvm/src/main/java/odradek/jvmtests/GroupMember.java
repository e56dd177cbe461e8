package odradek.jvmtests;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.TopicPartition;

/**
 * One Java member of a consumer group that other client families share (tests/jvm/test_java_mixed_group.py):
 *   java -cp ... odradek.jvmtests.GroupMember BOOTSTRAP TOPIC GROUP ASSIGNOR CLIENT_ID
 * ASSIGNOR is a protocol name ("range", "roundrobin", "cooperative-sticky"). It polls until its stdin closes,
 * then closes the consumer (leaving the group). On stdout, JSON lines: {"assigned": [partitions]} whenever its
 * assignment changes, {"records": [[partition, offset, value]...]} for each batch it read, written before
 * the batch's offsets are committed (commitSync after every batch, so a rebalance hands on no record twice),
 * and {"closed": true} at the end. Security settings come from odradek.client.config, as for Main.
 */
public final class GroupMember {
    private GroupMember() {}

    private static final Map<String, String> ASSIGNORS = Map.of(
            "range", "org.apache.kafka.clients.consumer.RangeAssignor",
            "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");

    public static void main(String[] args) throws IOException {
        if (args.length != 5) {
            System.err.println("usage: GroupMember BOOTSTRAP TOPIC GROUP ASSIGNOR CLIENT_ID");
            System.exit(2);
        }
        String topic = args[1];
        Env env = new Env(args[0], args[4]);
        AtomicBoolean stop = new AtomicBoolean();
        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { /* until the test closes our stdin */ }
            } catch (IOException ignored) {
                // a closed pipe means stop too
            }
            stop.set(true);
        });
        watcher.setDaemon(true);
        watcher.start();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(env.consumerProps(Map.of(
                "group.id", args[2], "client.id", args[4], "partition.assignment.strategy", ASSIGNORS.get(args[3]),
                "session.timeout.ms", "10000", "heartbeat.interval.ms", "1000")))) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                // What was read of a partition leaving us is committed before it goes (the usual listener).
                @Override public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
                    for (TopicPartition tp : partitions) positions.put(tp, new OffsetAndMetadata(consumer.position(tp)));
                    consumer.commitSync(positions);
                }

                @Override public void onPartitionsAssigned(Collection<TopicPartition> partitions) { }
            });
            TreeSet<Integer> shown = null;
            while (!stop.get()) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                if (!records.isEmpty()) {
                    List<Object> batch = new ArrayList<>();
                    for (ConsumerRecord<String, String> r : records) batch.add(List.of(r.partition(), r.offset(), r.value()));
                    print(Map.of("records", batch));
                    try {
                        consumer.commitSync();
                    } catch (RebalanceInProgressException e) {
                        // cooperative (3.x+): a rebalance is under way; the next poll completes it, and the
                        // next commit (or the revocation above) carries these offsets
                        print(Map.of("commit_deferred", e.toString()));
                    }
                }
                TreeSet<Integer> assigned = new TreeSet<>();
                consumer.assignment().forEach(tp -> assigned.add(tp.partition()));
                if (!assigned.equals(shown)) {
                    shown = assigned;
                    print(Map.of("assigned", new ArrayList<>(assigned)));
                }
            }
        }
        print(Map.of("closed", true));
        System.exit(0);
    }

    private static void print(Map<String, Object> line) {
        System.out.println(Json.write(line));
        System.out.flush();
    }
}
