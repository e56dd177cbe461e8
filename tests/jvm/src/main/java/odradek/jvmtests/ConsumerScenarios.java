package odradek.jvmtests;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/** The consumer: eager and cooperative groups, static membership, offsetsForTimes, seek, read_committed. */
final class ConsumerScenarios {
    private static final int RECORDS = 240;
    private static final int PARTITIONS = 6;

    private ConsumerScenarios() {}

    static Map<String, Scenario> all() {
        Map<String, Scenario> all = new LinkedHashMap<>();
        all.put("group-eager-range", env -> twoMemberGroup(env, "eager", "org.apache.kafka.clients.consumer.RangeAssignor"));
        all.put("group-cooperative-sticky", env -> twoMemberGroup(env, "cooperative",
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"));
        all.put("static-membership", ConsumerScenarios::staticMembership);
        all.put("offsets-for-times", ConsumerScenarios::offsetsForTimes);
        all.put("seek", ConsumerScenarios::seek);
        all.put("read-committed-aborted", ConsumerScenarios::readCommittedOverAbort);
        return all;
    }

    /** A member of a group polled by the scenario's thread, remembering its rebalance callbacks. */
    private static final class Member implements ConsumerRebalanceListener, AutoCloseable {
        final KafkaConsumer<String, String> consumer;
        final List<Set<TopicPartition>> revocations = new ArrayList<>();
        final List<ConsumerRecord<String, String>> records = new ArrayList<>();

        Member(Env env, Map<String, String> config, String topic) {
            consumer = new KafkaConsumer<>(env.consumerProps(config));
            consumer.subscribe(List.of(topic), this);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) revocations.add(new HashSet<>(partitions));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}

        void poll() {
            ConsumerRecords<String, String> polled = consumer.poll(Duration.ofMillis(100));
            polled.forEach(records::add);
            if (!polled.isEmpty()) consumer.commitSync();
        }

        Set<TopicPartition> assignment() {
            return consumer.assignment();
        }

        @Override
        public void close() {
            consumer.close(Duration.ofSeconds(10));
        }
    }

    /** Polls the members (one thread, in turn) until the condition holds. */
    private static void pollUntil(List<Member> members, BooleanSupplier done, String what) {
        long deadline = System.nanoTime() + Env.WAIT.toNanos();
        while (!done.getAsBoolean()) {
            Check.that(System.nanoTime() < deadline, "timed out waiting for " + what + "; assignments "
                    + members.stream().map(m -> m.assignment().toString()).collect(Collectors.joining(" ")));
            for (Member m : members) m.poll();
        }
    }

    private static boolean balanced(Member a, Member b) {
        Set<TopicPartition> union = new HashSet<>(a.assignment());
        union.addAll(b.assignment());
        return a.assignment().size() == PARTITIONS / 2 && b.assignment().size() == PARTITIONS / 2 && union.size() == PARTITIONS;
    }

    /**
     * One member takes every partition, a second joins: the partitions split 3/3. Eager: the first gives up all
     * six at the rebalance. Cooperative: it gives up only the three that move. Together they read every record.
     */
    private static Map<String, Object> twoMemberGroup(Env env, String name, String assignor) throws Exception {
        String topic = env.topic("group-" + name, PARTITIONS);
        env.produce(topic, PARTITIONS, RECORDS, Map.of());
        Map<String, String> config = Map.of("group.id", env.name("group-" + name),
                "partition.assignment.strategy", assignor);
        try (Member first = new Member(env, config, topic)) {
            pollUntil(List.of(first), () -> first.assignment().size() == PARTITIONS, "the first member's assignment");
            try (Member second = new Member(env, config, topic)) {
                List<Member> both = List.of(first, second);
                pollUntil(both, () -> balanced(first, second), "a 3/3 assignment");
                pollUntil(both, () -> first.records.size() + second.records.size() >= RECORDS, "every record");
                Check.that(!first.revocations.isEmpty(), "the first member had partitions revoked");
                int revoked = first.revocations.get(0).size();
                if (name.equals("eager")) {
                    Check.equal(PARTITIONS, revoked, "partitions the first member gave up (eager)");
                } else {
                    Check.equal(PARTITIONS / 2, revoked, "partitions the first member gave up (cooperative)");
                }
                Check.that(second.revocations.isEmpty(), "the second member lost nothing: " + second.revocations);
                Set<String> values = new HashSet<>();
                both.forEach(m -> m.records.forEach(r -> values.add(r.value())));
                Check.equal(RECORDS, values.size(), "distinct records read by the group");
                return Map.of("topic", topic, "first_revoked", revoked);
            }
        }
    }

    /**
     * Static members (KIP-345): one restarts under its group.instance.id and gets its partitions back without a
     * rebalance (the other member sees no revocation); the group shows the instance ids.
     */
    private static Map<String, Object> staticMembership(Env env) throws Exception {
        String topic = env.topic("static", PARTITIONS);
        String group = env.name("static-group");
        Map<String, String> base = Map.of("group.id", group, "session.timeout.ms", "30000",
                "partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor");
        Map<String, String> one = new java.util.HashMap<>(base);
        one.put("group.instance.id", env.name("instance-1"));
        Map<String, String> two = new java.util.HashMap<>(base);
        two.put("group.instance.id", env.name("instance-2"));
        try (Member stays = new Member(env, two, topic)) {
            Set<TopicPartition> before;
            try (Member restarting = new Member(env, one, topic)) {
                pollUntil(List.of(stays, restarting), () -> balanced(stays, restarting), "a 3/3 assignment");
                before = new HashSet<>(restarting.assignment());
            }
            int revocations = stays.revocations.size();
            // A static member's close sends no LeaveGroup: its partitions stay its own for session.timeout.ms.
            try (Member back = new Member(env, one, topic)) {
                pollUntil(List.of(stays, back), () -> !back.assignment().isEmpty(), "the restarted member's assignment");
                Check.equal(before, back.assignment(), "the restarted static member's partitions");
                Check.equal(revocations, stays.revocations.size(), "revocations of the other member");
                var description = env.admin().describeConsumerGroups(List.of(group)).all().get().get(group);
                Set<String> instances = description.members().stream()
                        .map(m -> m.groupInstanceId().orElse("")).collect(Collectors.toSet());
                Check.equal(Set.of(env.name("instance-1"), env.name("instance-2")), instances, "instance ids");
            }
            return Map.of("topic", topic, "group", group);
        }
    }

    /** Records stamped 1000 ms apart: offsetsForTimes finds the first at or after a time; past the last, none. */
    private static Map<String, Object> offsetsForTimes(Env env) throws Exception {
        String topic = env.topic("times", 1);
        long base = System.currentTimeMillis() - 3_600_000;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(env.producerProps(Map.of()))) {
            for (int i = 0; i < 20; i++) producer.send(new ProducerRecord<>(topic, 0, base + i * 1000L, "k-" + i, "v-" + i));
            producer.flush();
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(env.consumerProps(Map.of()))) {
            OffsetAndTimestamp at = consumer.offsetsForTimes(Map.of(tp, base + 5500)).get(tp);
            Check.that(at != null, "an offset for a time inside the log");
            Check.equal(6L, at.offset(), "offset for base+5500");
            Check.equal(base + 6000, at.timestamp(), "timestamp of that offset");
            OffsetAndTimestamp exact = consumer.offsetsForTimes(Map.of(tp, base)).get(tp);
            Check.equal(0L, exact.offset(), "offset for the first timestamp");
            Check.equal(null, consumer.offsetsForTimes(Map.of(tp, base + 60_000)).get(tp), "offset past the last");
            Check.equal(0L, consumer.beginningOffsets(List.of(tp)).get(tp), "beginning offset");
            Check.equal(20L, consumer.endOffsets(List.of(tp)).get(tp), "end offset");
        }
        return Map.of("topic", topic);
    }

    private static Map<String, Object> seek(Env env) throws Exception {
        String topic = env.topic("seek", 1);
        env.produce(topic, 1, 50, Map.of());
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(env.consumerProps(Map.of()))) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, 17);
            Check.equal(17L, firstOffset(consumer), "first offset after seek(17)");
            consumer.seekToEnd(List.of(tp));
            Check.equal(50L, consumer.position(tp), "position after seekToEnd");
            consumer.seekToBeginning(List.of(tp));
            Check.equal(0L, consumer.position(tp), "position after seekToBeginning");
            consumer.seek(tp, 42);
            ConsumerRecord<String, String> r = firstRecord(consumer);
            Check.equal(Env.value(42), r.value(), "value at offset 42");
        }
        return Map.of("topic", topic);
    }

    private static ConsumerRecord<String, String> firstRecord(KafkaConsumer<String, String> consumer) {
        long deadline = System.nanoTime() + Env.WAIT.toNanos();
        while (true) {
            Check.that(System.nanoTime() < deadline, "timed out polling");
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
            if (!records.isEmpty()) return records.iterator().next();
        }
    }

    private static long firstOffset(KafkaConsumer<String, String> consumer) {
        return firstRecord(consumer).offset();
    }

    /** Committed, aborted, committed: read_committed sees 20 records and skips the abort; read_uncommitted 30. */
    private static Map<String, Object> readCommittedOverAbort(Env env) throws Exception {
        String topic = env.topic("read-committed", 1);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                env.producerProps(Map.of("transactional.id", env.name("aborting"))))) {
            producer.initTransactions();
            for (int t = 0; t < 3; t++) {
                producer.beginTransaction();
                Env.send(producer, topic, 1, t * 10, 10);
                if (t == 1) producer.abortTransaction();
                else producer.commitTransaction();
            }
        }
        List<ConsumerRecord<String, String>> committed = env.readAll(topic, 1, "read_committed");
        Set<String> keys = committed.stream().map(ConsumerRecord::key).collect(Collectors.toSet());
        Check.equal(20, committed.size(), "records read under read_committed");
        Check.that(keys.contains("k-0") && keys.contains("k-29") && !keys.contains("k-15"), "committed keys " + keys);
        Check.equal(30, env.readAll(topic, 1, "read_uncommitted").size(), "records read under read_uncommitted");
        return Map.of("topic", topic);
    }
}
