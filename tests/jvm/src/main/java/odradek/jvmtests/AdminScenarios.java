package odradek.jvmtests;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

/** The AdminClient calls Odradek's ApiVersions make possible (ACLs only as "no authorizer" for now). */
final class AdminScenarios {
    private AdminScenarios() {}

    static Map<String, Scenario> all() {
        Map<String, Scenario> all = new LinkedHashMap<>();
        all.put("topics-create-partitions-delete", AdminScenarios::topics);
        all.put("configs", AdminScenarios::configs);
        all.put("list-offsets", AdminScenarios::listOffsets);
        all.put("delete-records", AdminScenarios::deleteRecords);
        all.put("describe-cluster", AdminScenarios::describeCluster);
        all.put("describe-log-dirs", AdminScenarios::describeLogDirs);
        all.put("describe-producers", AdminScenarios::describeProducers);
        all.put("consumer-groups", AdminScenarios::consumerGroups);
        all.put("acls-without-authorizer", AdminScenarios::aclsWithoutAuthorizer);
        all.put("scram-credentials", AdminScenarios::scramCredentials);
        all.put("client-quotas", AdminScenarios::clientQuotas);
        all.put("reassign-and-elect-leaders", AdminScenarios::reassignAndElect);
        return all;
    }

    static Throwable failure(org.apache.kafka.common.KafkaFuture<?> future) throws InterruptedException {
        try {
            future.get();
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("expected the call to fail");
    }

    private static Map<String, Object> topics(Env env) throws Exception {
        Admin admin = env.admin();
        String topic = env.topic("admin-topic", 2, 3, Map.of("cleanup.policy", "compact"));
        String validated = env.name("validate-only");
        admin.createTopics(List.of(new NewTopic(validated, 1, (short) 1)), new CreateTopicsOptions().validateOnly(true)).all().get();
        Check.that(!admin.listTopics().names().get().contains(validated), "validateOnly created nothing");
        Throwable exists = failure(admin.createTopics(List.of(new NewTopic(topic, 2, (short) 3))).all());
        Check.that(exists instanceof TopicExistsException, "creating it again: " + exists);
        String assigned = env.name("assigned");
        admin.createTopics(List.of(new NewTopic(assigned, Map.of(0, List.of(2, 0), 1, List.of(1, 2))))).all().get();
        Check.eventually(() -> leaders(env, assigned) == 2, Env.WAIT, "leaders of " + assigned);
        TopicDescription d = Compat.describeTopic(admin, assigned);
        Check.equal(List.of(2, 0), ids(d.partitions().get(0).replicas()), "replicas of partition 0");
        Check.equal(2, d.partitions().get(0).leader().id(), "leader of partition 0 (the first replica)");

        admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all().get();
        Check.eventually(() -> leaders(env, topic) == 5, Env.WAIT, "five partitions with leaders");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(env.producerProps(Map.of()))) {
            producer.send(new ProducerRecord<>(topic, 4, "k", "on a new partition")).get();
        }
        admin.deleteTopics(List.of(topic, assigned)).all().get();
        Check.eventually(() -> {
            try {
                Set<String> names = admin.listTopics().names().get();
                return !names.contains(topic) && !names.contains(assigned);
            } catch (Exception e) {
                return false;
            }
        }, Env.WAIT, "the topics to go");
        return Map.of("topic", topic);
    }

    private static int leaders(Env env, String topic) {
        try {
            return (int) Compat.describeTopic(env.admin(), topic).partitions().stream().filter(p -> p.leader() != null).count();
        } catch (Exception e) {
            return -1;
        }
    }

    private static List<Integer> ids(List<Node> nodes) {
        return nodes.stream().map(Node::id).collect(Collectors.toList());
    }

    private static Map<String, Object> configs(Env env) throws Exception {
        Admin admin = env.admin();
        String topic = env.topic("configs", 1);
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("max.message.bytes", "200000"), AlterConfigOp.OpType.SET)))).all().get();
        Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
        ConfigEntry retention = config.get("retention.ms");
        Check.equal("3600000", retention.value(), "retention.ms");
        Check.equal(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, retention.source(), "source of retention.ms");
        Check.equal(ConfigEntry.ConfigSource.DEFAULT_CONFIG, config.get("segment.bytes").source(), "source of segment.bytes");
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE)))).all().get();
        config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
        Check.equal("604800000", config.get("retention.ms").value(), "retention.ms after DELETE");
        Check.equal("200000", config.get("max.message.bytes").value(), "max.message.bytes kept");

        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "1");
        Config brokerConfig = admin.describeConfigs(List.of(broker)).all().get().get(broker);
        Check.equal("1", brokerConfig.get("broker.id").value(), "broker.id of broker 1");
        admin.incrementalAlterConfigs(Map.of(broker, List.of(
                new AlterConfigOp(new ConfigEntry("log.cleaner.backoff.ms", "16000"), AlterConfigOp.OpType.SET)))).all().get();
        // The broker applies its dynamic configs when ZooKeeper tells it of the change: a moment later.
        Check.eventually(() -> "16000".equals(brokerConfig(admin, broker, "log.cleaner.backoff.ms").value()), Env.WAIT,
                "the dynamic broker config");
        Check.equal(ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG, brokerConfig(admin, broker, "log.cleaner.backoff.ms").source(),
                "its source");
        admin.incrementalAlterConfigs(Map.of(broker, List.of(
                new AlterConfigOp(new ConfigEntry("log.cleaner.backoff.ms", ""), AlterConfigOp.OpType.DELETE)))).all().get();
        Throwable invalid = failure(admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET)))).all());
        Check.that(invalid instanceof org.apache.kafka.common.errors.InvalidConfigurationException,
                "an unknown topic config: " + invalid);
        return Map.of("topic", topic);
    }

    private static ConfigEntry brokerConfig(Admin admin, ConfigResource broker, String name) {
        try {
            return admin.describeConfigs(List.of(broker)).all().get().get(broker).get(name);
        } catch (InterruptedException | ExecutionException e) {
            throw new AssertionError("describeConfigs of broker " + broker.name() + ": " + e);
        }
    }

    private static Map<String, Object> listOffsets(Env env) throws Exception {
        String topic = env.topic("list-offsets", 1);
        long base = System.currentTimeMillis() - 600_000;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(env.producerProps(Map.of()))) {
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(topic, 0, base + i * 100L, "k", "v" + i));
            producer.flush();
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        Admin admin = env.admin();
        ListOffsetsResultInfo earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get().get(tp);
        ListOffsetsResultInfo latest = admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all().get().get(tp);
        ListOffsetsResultInfo at = admin.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(base + 450))).all().get().get(tp);
        Check.equal(0L, earliest.offset(), "earliest");
        Check.equal(10L, latest.offset(), "latest");
        Check.equal(5L, at.offset(), "offset for base+450");
        Check.equal(base + 500, at.timestamp(), "its timestamp");
        Check.that(at.leaderEpoch().isPresent(), "a leader epoch with the offset");
        return Map.of("topic", topic);
    }

    private static Map<String, Object> deleteRecords(Env env) throws Exception {
        String topic = env.topic("delete-records", 1);
        env.produce(topic, 1, 50, Map.of());
        TopicPartition tp = new TopicPartition(topic, 0);
        long low = env.admin().deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(20))).lowWatermarks().get(tp).get().lowWatermark();
        Check.equal(20L, low, "low watermark");
        Check.equal(20L, env.admin().listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get().get(tp).offset(), "earliest");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(env.consumerProps(Map.of()))) {
            Check.equal(20L, consumer.beginningOffsets(List.of(tp)).get(tp), "the consumer's beginning offset");
        }
        return Map.of("topic", topic);
    }

    private static Map<String, Object> describeCluster(Env env) throws Exception {
        DescribeClusterResult cluster = env.admin().describeCluster();
        Collection<Node> nodes = cluster.nodes().get();
        Check.equal(Set.of(0, 1, 2), nodes.stream().map(Node::id).collect(Collectors.toSet()), "broker ids");
        Node controller = cluster.controller().get();
        Check.that(controller != null && controller.id() >= 0, "a controller: " + controller);
        String id = cluster.clusterId().get();
        Check.that(id != null && !id.isEmpty(), "a cluster id");
        return Map.of("cluster_id", id, "controller", controller.id());
    }

    private static Map<String, Object> describeLogDirs(Env env) throws Exception {
        String topic = env.topic("log-dirs", 1);
        env.produce(topic, 1, 20, Map.of());
        Map<Integer, Map<String, LogDirDescription>> dirs = env.admin().describeLogDirs(List.of(0, 1, 2)).allDescriptions().get();
        Check.equal(Set.of(0, 1, 2), dirs.keySet(), "brokers answering");
        TopicPartition tp = new TopicPartition(topic, 0);
        int replicas = 0;
        for (Map<String, LogDirDescription> byPath : dirs.values()) {
            for (LogDirDescription dir : byPath.values()) {
                Check.that(dir.error() == null, "log dir error " + dir.error());
                var info = dir.replicaInfos().get(tp);
                if (info != null) {
                    replicas++;
                    Check.that(info.size() > 0, "size of a replica with records");
                }
            }
        }
        Check.equal(3, replicas, "replicas of the partition in log dirs");
        return Map.of("topic", topic);
    }

    /**
     * An idempotent producer's 10 records (sequences 0-9), then a transaction left open at offset 10: the
     * partition has two active producers, one with an open transaction starting there. (3.0+ clients only.)
     */
    private static Map<String, Object> describeProducers(Env env) throws Exception {
        String topic = env.topic("producers", 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        env.produce(topic, 1, 10, Map.of("enable.idempotence", "true", "acks", "all"));
        List<Map<String, Long>> producers;
        try (KafkaProducer<String, String> open = new KafkaProducer<>(
                env.producerProps(Map.of("transactional.id", env.name("open-txn"))))) {
            open.initTransactions();
            open.beginTransaction();
            Env.send(open, topic, 1, 10, 3);
            var described = Compat.describeProducers(env.admin(), List.of(tp));
            if (described == null) return Map.of("unsupported", true);
            producers = described.get(tp);
            open.abortTransaction();
        }
        Check.equal(2, producers.size(), "active producers " + producers);
        Map<Long, Long> lastSequences = producers.stream()
                .collect(Collectors.toMap(p -> p.get("txn_start_offset"), p -> p.get("last_sequence")));
        Check.equal(Map.of(-1L, 9L, 10L, 2L), lastSequences, "last sequence by open transaction's first offset");
        return Map.of("topic", topic);
    }

    private static Map<String, Object> consumerGroups(Env env) throws Exception {
        Admin admin = env.admin();
        String topic = env.topic("groups", 2);
        String group = env.name("admin-group");
        env.produce(topic, 2, 20, Map.of());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(env.consumerProps(Map.of("group.id", group)))) {
            consumer.commitSync(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(7, "meta"),
                    new TopicPartition(topic, 1), new OffsetAndMetadata(3)));
        }
        Set<String> groups = admin.listConsumerGroups().all().get().stream().map(g -> g.groupId()).collect(Collectors.toSet());
        Check.that(groups.contains(group), "listConsumerGroups has the group: " + groups);
        var description = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
        Check.equal("EMPTY", Compat.groupState(description), "the group's state");
        Check.that(description.members().isEmpty(), "no members");
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        Check.equal(7L, offsets.get(new TopicPartition(topic, 0)).offset(), "committed offset of partition 0");
        Check.equal("meta", offsets.get(new TopicPartition(topic, 0)).metadata(), "its metadata");
        admin.deleteConsumerGroupOffsets(group, Set.of(new TopicPartition(topic, 0))).all().get();
        offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        Check.equal(Set.of(new TopicPartition(topic, 1)), offsets.keySet(), "offsets left after deleteConsumerGroupOffsets");
        admin.deleteConsumerGroups(List.of(group)).all().get();
        groups = admin.listConsumerGroups().all().get().stream().map(g -> g.groupId()).collect(Collectors.toSet());
        Check.that(!groups.contains(group), "the deleted group is gone");
        // Kafka 2.8 describes a group it does not know as Dead; newer clients may turn that into GroupIdNotFound.
        String deleted;
        try {
            deleted = Compat.groupState(admin.describeConsumerGroups(List.of(group)).all().get().get(group));
        } catch (ExecutionException e) {
            deleted = e.getCause().getClass().getSimpleName();
        }
        Check.that(Set.of("DEAD", "GroupIdNotFoundException").contains(deleted), "describing the deleted group: " + deleted);
        return Map.of("group", group, "describe_deleted", deleted);
    }

    private static Map<String, Object> aclsWithoutAuthorizer(Env env) throws Exception {
        Throwable disabled = failure(env.admin().describeAcls(AclBindingFilter.ANY).values());
        Check.that(disabled instanceof SecurityDisabledException, "describeAcls without an authorizer: " + disabled);
        return Map.of();
    }

    private static Map<String, Object> scramCredentials(Env env) throws Exception {
        Admin admin = env.admin();
        String user = env.name("alice");
        List<UserScramCredentialAlteration> upserts = List.of(
                new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "secret"),
                new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "secret"));
        admin.alterUserScramCredentials(upserts).all().get();
        UserScramCredentialsDescription d = admin.describeUserScramCredentials(List.of(user)).description(user).get();
        Set<String> infos = d.credentialInfos().stream().map(i -> i.mechanism() + "/" + i.iterations()).collect(Collectors.toSet());
        Check.equal(Set.of("SCRAM_SHA_256/8192", "SCRAM_SHA_512/4096"), infos, "credentials described");
        Check.that(admin.describeUserScramCredentials().users().get().contains(user), "all users include the user");
        admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256),
                new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512))).all().get();
        Throwable gone = failure(admin.describeUserScramCredentials(List.of(user)).description(user));
        Check.that(gone instanceof ResourceNotFoundException, "describing a deleted user: " + gone);
        return Map.of("user", user);
    }

    private static Map<String, Object> clientQuotas(Env env) throws Exception {
        Admin admin = env.admin();
        String user = env.name("quota-user");
        ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, user, ClientQuotaEntity.CLIENT_ID, "app"));
        admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0),
                new ClientQuotaAlteration.Op("request_percentage", 50.0))))).all().get();
        ClientQuotaFilter filter = ClientQuotaFilter.containsOnly(List.of(
                ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, user),
                ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, "app")));
        Map<ClientQuotaEntity, Map<String, Double>> quotas = admin.describeClientQuotas(filter).entities().get();
        Check.equal(Map.of(entity, Map.of("producer_byte_rate", 1048576.0, "request_percentage", 50.0)), quotas, "quotas");
        admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                new ClientQuotaAlteration.Op("producer_byte_rate", null),
                new ClientQuotaAlteration.Op("request_percentage", null))))).all().get();
        Check.equal(Map.of(), admin.describeClientQuotas(filter).entities().get(), "quotas after removal");
        return Map.of("user", user);
    }

    /**
     * Moves a partition to replicas [2, 1] (its preferred leader 2), waits until listPartitionReassignments is
     * empty, then a preferred election makes 2 the leader; a second election is not needed.
     */
    private static Map<String, Object> reassignAndElect(Env env) throws Exception {
        Admin admin = env.admin();
        String topic = env.name("reassign");
        admin.createTopics(List.of(new NewTopic(topic, Map.of(0, List.of(0, 1))))).all().get();
        Check.eventually(() -> leaders(env, topic) == 1, Env.WAIT, "a leader of " + topic);
        env.produce(topic, 1, 30, Map.of());
        TopicPartition tp = new TopicPartition(topic, 0);
        admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(List.of(2, 1))))).all().get();
        Check.eventually(() -> {
            try {
                return admin.listPartitionReassignments(Set.of(tp)).reassignments().get().isEmpty();
            } catch (Exception e) {
                return false;
            }
        }, Env.WAIT, "the reassignment to finish");
        Check.eventually(() -> replicas(env, topic).equals(List.of(2, 1)), Env.WAIT, "replicas [2, 1]");
        Check.eventually(() -> {
            try {
                var result = admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get().get(tp);
                return result.isEmpty() || result.get() instanceof ElectionNotNeededException;
            } catch (Exception e) {
                return false;
            }
        }, Env.WAIT, "a preferred election to succeed");
        TopicPartitionInfo info = Compat.describeTopic(admin, topic).partitions().get(0);
        Check.equal(2, info.leader().id(), "the preferred leader after the election");
        var again = admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get().get(tp);
        Check.that(again.isPresent() && again.get() instanceof ElectionNotNeededException, "a second election: " + again);
        Env.checkRecords(env.readAll(topic, 1, "read_uncommitted"), 30);
        return Map.of("topic", topic);
    }

    private static List<Integer> replicas(Env env, String topic) {
        try {
            return ids(Compat.describeTopic(env.admin(), topic).partitions().get(0).replicas());
        } catch (Exception e) {
            return List.of();
        }
    }
}
