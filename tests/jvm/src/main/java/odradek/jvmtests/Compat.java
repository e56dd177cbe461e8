package odradek.jvmtests;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeTopicsResult;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * Calls whose name changed between the 2.8 API the programs compile against and 4.x (which removed the old
 * names): looked up by reflection, the newer name first.
 */
final class Compat {
    private Compat() {}

    /** The kafka-clients version on the class path (AppInfoParser moved in 4.x; the jar's resource did not). */
    static String clientVersion() throws IOException {
        Properties p = new Properties();
        try (InputStream in = Admin.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            p.load(in);
        }
        return p.getProperty("version");
    }

    /** DescribeTopicsResult.allTopicNames() (3.1+) or all() (removed in 4.0). */
    @SuppressWarnings("unchecked")
    static TopicDescription describeTopic(Admin admin, String topic) throws Exception {
        DescribeTopicsResult result = admin.describeTopics(List.of(topic));
        KafkaFuture<Map<String, TopicDescription>> all =
                (KafkaFuture<Map<String, TopicDescription>>) call(result, "allTopicNames", "all");
        return all.get().get(topic);
    }

    /** One topic's future of DescribeTopicsResult.topicNameValues() (3.1+) or values() (removed in 4.0). */
    @SuppressWarnings("unchecked")
    static KafkaFuture<TopicDescription> topicFuture(DescribeTopicsResult result, String topic) throws Exception {
        return ((Map<String, KafkaFuture<TopicDescription>>) call(result, "topicNameValues", "values")).get(topic);
    }

    /** ConsumerGroupDescription.groupState() (4.0+, a GroupState) or state() (a ConsumerGroupState), as text. */
    static String groupState(ConsumerGroupDescription description) throws Exception {
        return String.valueOf(call(description, "groupState", "state")).toUpperCase().replace("_", "");
    }

    /**
     * Admin.describeProducers (3.0+, KIP-664): per partition, its active producers as maps of producer_id,
     * epoch, last_sequence and txn_start_offset (-1: none open); null when the client has no such call.
     */
    @SuppressWarnings("unchecked")
    static Map<TopicPartition, List<Map<String, Long>>> describeProducers(Admin admin, Collection<TopicPartition> partitions)
            throws Exception {
        Method describe;
        try {
            describe = Admin.class.getMethod("describeProducers", Collection.class);
        } catch (NoSuchMethodException e) {
            return null;
        }
        KafkaFuture<Map<TopicPartition, Object>> all =
                (KafkaFuture<Map<TopicPartition, Object>>) call(describe.invoke(admin, partitions), "all");
        Map<TopicPartition, List<Map<String, Long>>> out = new LinkedHashMap<>();
        for (Map.Entry<TopicPartition, Object> entry : all.get().entrySet()) {
            List<Map<String, Long>> producers = new ArrayList<>();
            for (Object state : (List<Object>) call(entry.getValue(), "activeProducers")) {
                Object txnStart = call(state, "currentTransactionStartOffset");  // an OptionalLong
                producers.add(Map.of(
                        "producer_id", ((Number) call(state, "producerId")).longValue(),
                        "epoch", ((Number) call(state, "producerEpoch")).longValue(),
                        "last_sequence", ((Number) call(state, "lastSequence")).longValue(),
                        "txn_start_offset", ((java.util.OptionalLong) txnStart).orElse(-1)));
            }
            out.put(entry.getKey(), producers);
        }
        return out;
    }

    private static Object call(Object target, String... names) throws Exception {
        for (String name : names) {
            Method method;
            try {
                method = target.getClass().getMethod(name);
            } catch (NoSuchMethodException e) {
                continue;
            }
            method.setAccessible(true);
            return method.invoke(target);
        }
        throw new NoSuchMethodException(target.getClass().getName() + " has none of " + List.of(names));
    }
}
