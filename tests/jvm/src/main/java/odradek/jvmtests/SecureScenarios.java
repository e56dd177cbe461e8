package odradek.jvmtests;

import static odradek.jvmtests.AdminScenarios.failure;

import java.time.Duration;
import java.util.Collection;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/**
 * The Java client as an ordinary user on a secured listener (SSL with a client certificate, or SASL_SSL with
 * SCRAM) of a cluster whose ACL authorizer is on. The Python side grants the user exactly what these need
 * (tests/jvm/test_java_secured.py): on topics, groups and transactional ids named with the prefix "alice-"
 * (PREFIXED) Create/Write/Read/Describe, Read, Write; Alter on the cluster. The producer and consumer scenarios
 * of the plain suite run as that user; the ones here check the security calls and that a call outside those
 * ACLs fails with the exception Apache Kafka's broker gives.
 */
final class SecureScenarios {
    private SecureScenarios() {}

    /** A topic that exists but on which the user has no ACL (the Python side creates it). */
    static final String DENIED_TOPIC = "denied-topic";

    static Map<String, Scenario> all() {
        Map<String, Scenario> all = new LinkedHashMap<>();
        all.putAll(ProducerScenarios.all());
        all.putAll(ConsumerScenarios.all());
        List<Map.Entry<String, Scenario>> secure = List.of(
                Map.entry("acls-create-describe-delete", SecureScenarios::acls),
                Map.entry("scram-credentials-as-user", SecureScenarios::scramCredentials),
                Map.entry("authorized-operations", SecureScenarios::authorizedOperations),
                Map.entry("denied-topic", SecureScenarios::deniedTopic),
                Map.entry("denied-group", SecureScenarios::deniedGroup),
                Map.entry("denied-transactional-id", SecureScenarios::deniedTransactionalId),
                Map.entry("denied-cluster", SecureScenarios::deniedCluster));
        secure.forEach(entry -> all.put(entry.getKey(), entry.getValue()));
        return all;
    }

    private static void expect(Class<? extends Throwable> wanted, Throwable thrown, String what) {
        Check.that(Check.causeOfClass(thrown, wanted) != null, what + ": expected " + wanted.getSimpleName() + ", got " + thrown);
    }

    private static boolean listed(Admin admin, AclBindingFilter filter, Collection<AclBinding> expected) {
        try {
            return new java.util.HashSet<>(admin.describeAcls(filter).values().get()).equals(new java.util.HashSet<>(expected));
        } catch (Exception e) {
            return false;
        }
    }

    /** The user, holding Alter on the cluster, grants another user ACLs, lists them and takes them back. */
    private static Map<String, Object> acls(Env env) throws Exception {
        Admin admin = env.admin();
        String bob = "User:" + env.name("bob");
        ResourcePattern topic = new ResourcePattern(ResourceType.TOPIC, env.name("shared"), PatternType.LITERAL);
        ResourcePattern group = new ResourcePattern(ResourceType.GROUP, env.name("bobs-"), PatternType.PREFIXED);
        List<AclBinding> bindings = List.of(
                new AclBinding(topic, new AccessControlEntry(bob, "*", AclOperation.READ, AclPermissionType.ALLOW)),
                new AclBinding(topic, new AccessControlEntry(bob, "10.0.0.1", AclOperation.WRITE, AclPermissionType.DENY)),
                new AclBinding(group, new AccessControlEntry(bob, "*", AclOperation.READ, AclPermissionType.ALLOW)));
        admin.createAcls(bindings).all().get();
        AclBindingFilter byBob = new AclBindingFilter(ResourcePatternFilter.ANY,
                new AccessControlEntryFilter(bob, null, AclOperation.ANY, AclPermissionType.ANY));
        // Each broker learns of new ACLs from ZooKeeper, as Kafka's do: the one asked may not know yet.
        Check.eventually(() -> listed(admin, byBob, bindings), Env.WAIT, "the three ACLs listed by principal");
        AclBindingFilter topicOnly = new AclBindingFilter(topic.toFilter(), AccessControlEntryFilter.ANY);
        Check.eventually(() -> listed(admin, topicOnly, bindings.subList(0, 2)), Env.WAIT, "the topic's two ACLs");
        // deleteAcls looks for matching ACLs among those the broker asked knows of (Kafka's AclAuthorizer): one that
        // has not heard of all three yet deletes what it knows, and a later call the rest.
        Set<AclBinding> deleted = new java.util.HashSet<>();
        Check.eventually(() -> {
            try {
                deleted.addAll(admin.deleteAcls(List.of(byBob)).all().get());
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            return deleted.equals(new java.util.HashSet<>(bindings));
        }, Env.WAIT, "deleteAcls to have removed the three ACLs");
        Check.eventually(() -> listed(admin, byBob, List.of()), Env.WAIT, "no ACL of the principal left");
        return Map.of("principal", bob, "deleted", deleted.size());
    }

    /**
     * KIP-554 as an ordinary user with Alter (which implies Describe) on the cluster: credentials for a new user
     * are set and described; over SASL_SSL that user then logs in (once the brokers have them from ZooKeeper)
     * and a wrong password is refused; the credentials are deleted.
     */
    private static Map<String, Object> scramCredentials(Env env) throws Exception {
        Admin admin = env.admin();
        String carol = env.name("carol");
        admin.alterUserScramCredentials(List.of(
                new UserScramCredentialUpsertion(carol, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), "carol-secret"),
                new UserScramCredentialUpsertion(carol, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), "carol-secret")))
                .all().get();
        UserScramCredentialsDescription described = admin.describeUserScramCredentials(List.of(carol)).description(carol).get();
        Set<String> infos = new TreeSet<>();
        described.credentialInfos().forEach(i -> infos.add(i.mechanism() + "/" + i.iterations()));
        Check.equal(Set.of("SCRAM_SHA_256/4096", "SCRAM_SHA_512/8192"), infos, "carol's credentials");
        boolean sasl = "SASL_SSL".equals(env.security.getProperty("security.protocol"));
        if (sasl) {
            Check.eventually(() -> logsIn(env, carol, "carol-secret"), Env.WAIT, "carol to log in over SASL_SSL");
            try (Admin wrong = Admin.create(login(env, carol, "not-carols"))) {
                Throwable refused = failure(wrong.describeCluster().clusterId());
                expect(SaslAuthenticationException.class, refused, "a wrong password");
            }
        }
        admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion(carol, ScramMechanism.SCRAM_SHA_256),
                new UserScramCredentialDeletion(carol, ScramMechanism.SCRAM_SHA_512))).all().get();
        Check.that(!admin.describeUserScramCredentials().users().get().contains(carol), "carol's credentials deleted");
        return Map.of("user", carol, "logged_in", sasl);
    }

    private static Properties login(Env env, String user, String password) {
        String mechanism = "SCRAM-SHA-512";
        Properties p = env.base(Map.of("client.id", env.name("login"), "sasl.mechanism", mechanism,
                "default.api.timeout.ms", "15000", "request.timeout.ms", "10000",
                "sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                        + user + "\" password=\"" + password + "\";"));
        return p;
    }

    private static boolean logsIn(Env env, String user, String password) {
        try (Admin as = Admin.create(login(env, user, password))) {
            as.describeCluster().clusterId().get();
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    /** describeCluster, describeTopics and describeConsumerGroups with the user's authorized operations. */
    private static Map<String, Object> authorizedOperations(Env env) throws Exception {
        Admin admin = env.admin();
        Set<AclOperation> cluster = admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true))
                .authorizedOperations().get();
        // Alter implies Describe (Kafka's AclAuthorizer); nothing else on the cluster is granted.
        Check.equal(EnumSet.of(AclOperation.ALTER, AclOperation.DESCRIBE), cluster == null ? null : EnumSet.copyOf(cluster),
                "the cluster's authorized operations");
        String topic = env.topic("ops", 1);
        // Each broker learns of a new topic from the controller, as Kafka's do: the one asked may not know it yet.
        AtomicReference<Set<AclOperation>> described = new AtomicReference<>();
        Check.eventually(() -> {
            try {
                described.set(Compat.topicFuture(admin.describeTopics(List.of(topic),
                        new DescribeTopicsOptions().includeAuthorizedOperations(true)), topic).get().authorizedOperations());
                return true;
            } catch (Exception e) {
                if (Check.causeOfClass(e, UnknownTopicOrPartitionException.class) != null) return false;
                throw new IllegalStateException(e);
            }
        }, Env.WAIT, "the new topic described with its authorized operations");
        Set<AclOperation> onTopic = described.get();
        Check.equal(EnumSet.of(AclOperation.CREATE, AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE),
                onTopic == null ? null : EnumSet.copyOf(onTopic), "the topic's authorized operations");
        String group = env.name("ops-group");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(env.consumerProps(Map.of("group.id", group)))) {
            consumer.subscribe(List.of(topic));
            Check.eventually(() -> !consumer.poll(Duration.ofMillis(100)).isEmpty() || !consumer.assignment().isEmpty(),
                    Env.WAIT, "the consumer's assignment");
            Set<AclOperation> onGroup = admin.describeConsumerGroups(List.of(group),
                    new DescribeConsumerGroupsOptions().includeAuthorizedOperations(true)).describedGroups().get(group).get()
                    .authorizedOperations();
            Check.equal(EnumSet.of(AclOperation.READ, AclOperation.DESCRIBE), onGroup == null ? null : EnumSet.copyOf(onGroup),
                    "the group's authorized operations");
        }
        return Map.of("cluster", cluster.toString(), "topic", onTopic.toString());
    }

    /** A topic without the user's ACLs: produce, consume, describe, create and delete are refused. */
    private static Map<String, Object> deniedTopic(Env env) throws Exception {
        Properties quick = env.producerProps(Map.of("max.block.ms", "10000"));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(quick)) {
            Throwable sent = Check.thrown(() -> {
                try {
                    producer.send(new ProducerRecord<>(DENIED_TOPIC, "k", "v")).get();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            expect(TopicAuthorizationException.class, sent, "producing to " + DENIED_TOPIC);
        }
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(env.consumerProps(Map.of()))) {
            consumer.assign(List.of(new TopicPartition(DENIED_TOPIC, 0)));
            Throwable polled = Check.thrown(() -> {
                long deadline = System.nanoTime() + Env.WAIT.toNanos();
                while (System.nanoTime() < deadline) consumer.poll(Duration.ofMillis(200));
            });
            expect(TopicAuthorizationException.class, polled, "consuming " + DENIED_TOPIC);
        }
        Admin admin = env.admin();
        expect(TopicAuthorizationException.class, failure(Compat.topicFuture(admin.describeTopics(List.of(DENIED_TOPIC)), DENIED_TOPIC)),
                "describing " + DENIED_TOPIC);
        expect(TopicAuthorizationException.class, failure(admin.createTopics(List.of(new NewTopic("denied-new", 1, (short) 1))).all()),
                "creating a topic outside the prefix");
        String own = env.topic("not-deletable", 1);
        expect(TopicAuthorizationException.class, failure(admin.deleteTopics(List.of(own)).all()),
                "deleting a topic without Delete");
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, own);
        expect(TopicAuthorizationException.class, failure(admin.incrementalAlterConfigs(Map.of(resource,
                List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "1000"), AlterConfigOp.OpType.SET)))).all()),
                "altering a topic's configs without AlterConfigs");
        return Map.of("topic", DENIED_TOPIC);
    }

    /** A group outside the user's ACLs: joining it and reading its offsets are refused. */
    private static Map<String, Object> deniedGroup(Env env) throws Exception {
        String topic = env.topic("denied-group-input", 1);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(env.consumerProps(Map.of("group.id", "denied-group")))) {
            consumer.subscribe(List.of(topic));
            Throwable polled = Check.thrown(() -> {
                long deadline = System.nanoTime() + Env.WAIT.toNanos();
                while (System.nanoTime() < deadline) consumer.poll(Duration.ofMillis(200));
            });
            expect(GroupAuthorizationException.class, polled, "joining denied-group");
        }
        expect(GroupAuthorizationException.class,
                failure(env.admin().listConsumerGroupOffsets("denied-group").partitionsToOffsetAndMetadata()),
                "reading denied-group's offsets");
        return Map.of("group", "denied-group");
    }

    /** A transactional id outside the user's ACLs: initTransactions is refused. */
    private static Map<String, Object> deniedTransactionalId(Env env) throws Exception {
        Properties p = env.producerProps(Map.of("transactional.id", "denied-txn", "max.block.ms", "30000"));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            expect(TransactionalIdAuthorizationException.class, Check.thrown(producer::initTransactions),
                    "initTransactions with denied-txn");
        }
        return Map.of("transactional_id", "denied-txn");
    }

    /** Cluster calls beyond Alter/Describe: broker configs and client quotas are refused. */
    private static Map<String, Object> deniedCluster(Env env) throws Exception {
        Admin admin = env.admin();
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "0");
        expect(ClusterAuthorizationException.class, failure(admin.describeConfigs(List.of(broker)).all()),
                "describing broker 0's configs without DescribeConfigs");
        expect(ClusterAuthorizationException.class, failure(admin.incrementalAlterConfigs(Map.of(broker,
                List.of(new AlterConfigOp(new ConfigEntry("log.cleaner.threads", "2"), AlterConfigOp.OpType.SET)))).all()),
                "altering broker 0's configs without AlterConfigs");
        expect(ClusterAuthorizationException.class, failure(admin.describeClientQuotas(ClientQuotaFilter.all()).entities()),
                "describing client quotas without DescribeConfigs");
        return Map.of();
    }
}
