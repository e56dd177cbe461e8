package odradek.jvmtests;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeTopicsResult;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;

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

    /** ConsumerGroupDescription.groupState() (4.0+, a GroupState) or state() (a ConsumerGroupState), as text. */
    static String groupState(ConsumerGroupDescription description) throws Exception {
        return String.valueOf(call(description, "groupState", "state")).toUpperCase().replace("_", "");
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
