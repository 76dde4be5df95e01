// A sweep over the methods of the Java Admin client (kafka-clients 4.3.0) that users and Kafka's
// CLI tools call, against one broker. Usage: java AdminSweep <bootstrap>
// Works on a topic "sweep" (2 partitions, then 3), a topic "sweep-byid", a consumer group
// "sweep-group" (a classic-protocol consumer joins it and commits, is removed, closes) and a
// transactional id "sweep-txn". Each call runs on its own, bounded by a 15 s timeout, and prints
//   #call <name> OK <short summary>       or       #call <name> <ExceptionClass> <message>
// tab-separated, in the order made. Summaries are deterministic (sorted, no ids, sizes or times),
// so a test can compare them with what a single-node Kafka broker answers.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class AdminSweep {
    static final String TOPIC = "sweep", BYID = "sweep-byid", GROUP = "sweep-group", TXN = "sweep-txn";
    static final long BASE_TS = 1_780_000_000_000L;
    static final TopicPartition TP0 = new TopicPartition(TOPIC, 0), TP1 = new TopicPartition(TOPIC, 1);

    interface Body {
        String run() throws Exception;
    }

    static void call(String name, Body body) {
        String outcome;
        try {
            outcome = "OK\t" + body.run();
        } catch (Throwable t) {
            Throwable e = t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
            outcome = e.getClass().getSimpleName() + "\t" + e.getMessage();
        }
        outcome = outcome.replaceAll("[\\t\\r\\n]+", " ").replaceFirst(" ", "\t");
        System.out.println("#call\t" + name + "\t" + (outcome.length() > 400 ? outcome.substring(0, 400) : outcome));
        System.out.flush();
    }

    static <T> T get(KafkaFuture<T> future) throws Exception {
        return future.get(15, TimeUnit.SECONDS);
    }

    static String sorted(Collection<?> items) {
        if (items == null) return "null";
        return items.stream().map(String::valueOf).sorted().collect(Collectors.joining(","));
    }

    public static void main(String[] args) throws Exception {
        Properties common = new Properties();
        common.put("bootstrap.servers", args[0]);
        common.put("request.timeout.ms", "10000");
        common.put("default.api.timeout.ms", "15000");
        try (Admin admin = Admin.create(common)) {
            int node = get(admin.describeCluster().nodes()).iterator().next().id();
            Uuid[] byId = new Uuid[1];
            cluster(admin);
            topics(admin, byId);
            configs(admin, node);
            produce(common);
            offsets(admin, node);
            groups(admin, common);
            transactionsAndAcls(admin, node);
            quotasAndCredentials(admin);
            replicasAndRest(admin, node);
            deletes(admin, byId[0]);
        }
    }

    static void cluster(Admin admin) {
        call("describeCluster", () -> {
            DescribeClusterResult r = admin.describeCluster();
            return "nodes=" + get(r.nodes()).size() + " controller=" + get(r.controller()).id()
                    + " clusterId=" + (get(r.clusterId()) != null) + " ops=" + get(r.authorizedOperations());
        });
        call("describeCluster.authorizedOperations", () -> "ops=" + sorted(get(admin.describeCluster(
                new DescribeClusterOptions().includeAuthorizedOperations(true)).authorizedOperations())));
        call("describeFeatures", () -> {
            FeatureMetadata f = get(admin.describeFeatures().featureMetadata());
            return "metadata.version finalized=" + f.finalizedFeatures().containsKey("metadata.version")
                    + " supported=" + f.supportedFeatures().containsKey("metadata.version")
                    + " epoch=" + f.finalizedFeaturesEpoch().isPresent();
        });
    }

    static void topics(Admin admin, Uuid[] byId) {
        call("createTopics.validateOnly", () -> {
            get(admin.createTopics(List.of(new NewTopic("sweep-validate", 4, (short) 1)),
                    new CreateTopicsOptions().validateOnly(true)).all());
            return "validated";
        });
        call("createTopics", () -> {
            NewTopic t = new NewTopic(TOPIC, 2, (short) 1).configs(Map.of("retention.ms", "3600000"));
            CreateTopicsResult r = admin.createTopics(List.of(t, new NewTopic(BYID, 1, (short) 1)));
            get(r.all());
            byId[0] = get(r.topicId(BYID));
            return "partitions=" + get(r.numPartitions(TOPIC)) + " rf=" + get(r.replicationFactor(TOPIC))
                    + " topicId=" + (byId[0] != null && !Uuid.ZERO_UUID.equals(byId[0]))
                    + " retention.ms=" + get(r.config(TOPIC)).get("retention.ms").value();
        });
        call("createTopics.exists", () -> "" + get(admin.createTopics(
                List.of(new NewTopic(TOPIC, 1, (short) 1))).all()));
        call("createTopics.replicationFactor3", () -> "" + get(admin.createTopics(
                List.of(new NewTopic("sweep-rf3", 1, (short) 3))).all()));
        call("listTopics", () -> sorted(get(admin.listTopics().names())));
        call("describeTopics.byName", () -> describeTopic(
                get(admin.describeTopics(List.of(TOPIC)).allTopicNames()).get(TOPIC)));
        call("describeTopics.byId", () -> describeTopic(get(admin.describeTopics(
                TopicCollection.ofTopicIds(List.of(byId[0]))).allTopicIds()).get(byId[0])));
        call("describeTopics.authorizedOperations", () -> "ops=" + sorted(get(admin.describeTopics(List.of(TOPIC),
                new DescribeTopicsOptions().includeAuthorizedOperations(true)).allTopicNames())
                .get(TOPIC).authorizedOperations()));
        call("describeTopics.unknownId", () -> "" + get(admin.describeTopics(
                TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).allTopicIds()));
        call("describeTopics.unknown", () -> "" + get(admin.describeTopics(List.of("sweep-missing")).allTopicNames()));
        call("createPartitions", () -> {
            get(admin.createPartitions(Map.of(TOPIC, NewPartitions.increaseTo(3))).all());
            return "partitions=" + get(admin.describeTopics(List.of(TOPIC)).allTopicNames()).get(TOPIC)
                    .partitions().size();
        });
        call("createPartitions.decrease", () -> "" + get(admin.createPartitions(
                Map.of(TOPIC, NewPartitions.increaseTo(2))).all()));
    }

    static String describeTopic(TopicDescription d) {
        StringBuilder s = new StringBuilder(d.name() + " internal=" + d.isInternal());
        d.partitions().forEach(p -> s.append(" p").append(p.partition()).append(":leader=").append(p.leader().id())
                .append(",replicas=").append(p.replicas().size()).append(",isr=").append(p.isr().size()));
        return s.toString();
    }

    static String config(Admin admin, ConfigResource res, String key) throws Exception {
        ConfigEntry e = get(admin.describeConfigs(List.of(res)).all()).get(res).get(key);
        if (e == null) return key + "=<absent>";
        return key + "=" + e.value() + "/" + e.source() + (e.isReadOnly() ? "/ro" : "");
    }

    static AlterConfigOp op(String key, String value, AlterConfigOp.OpType type) {
        return new AlterConfigOp(new ConfigEntry(key, value), type);
    }

    static String alter(Admin admin, ConfigResource res, AlterConfigOp... ops) throws Exception {
        return "" + get(admin.incrementalAlterConfigs(Map.of(res, List.of(ops))).all());
    }

    static void configs(Admin admin, int node) {
        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(node));
        ConfigResource logger = new ConfigResource(ConfigResource.Type.BROKER_LOGGER, String.valueOf(node));
        call("describeConfigs.topic", () -> config(admin, topic, "retention.ms") + " "
                + config(admin, topic, "cleanup.policy"));
        call("describeConfigs.topic.synonymsAndDocs", () -> {
            ConfigEntry e = get(admin.describeConfigs(List.of(topic), new DescribeConfigsOptions()
                    .includeSynonyms(true).includeDocumentation(true)).all()).get(topic).get("segment.bytes");
            return "segment.bytes source=" + e.source() + " synonyms=" + e.synonyms().stream()
                    .map(x -> x.name() + ":" + x.source()).collect(Collectors.toList())
                    + " documented=" + (e.documentation() != null) + " type=" + e.type();
        });
        call("describeConfigs.broker", () -> config(admin, broker, "num.partitions") + " "
                + config(admin, broker, "log.segment.bytes"));
        call("describeConfigs.brokerLogger", () -> "loggers="
                + !get(admin.describeConfigs(List.of(logger)).all()).get(logger).entries().isEmpty());
        call("describeConfigs.unknownTopic", () -> "" + get(admin.describeConfigs(
                List.of(new ConfigResource(ConfigResource.Type.TOPIC, "sweep-missing"))).all()));
        call("incrementalAlterConfigs.topic", () -> {
            alter(admin, topic, op("retention.ms", "7200000", AlterConfigOp.OpType.SET),
                    op("cleanup.policy", "compact", AlterConfigOp.OpType.APPEND));
            return config(admin, topic, "retention.ms") + " " + config(admin, topic, "cleanup.policy");
        });
        call("incrementalAlterConfigs.topic.invalidValue",
                () -> alter(admin, topic, op("retention.ms", "soon", AlterConfigOp.OpType.SET)));
        call("incrementalAlterConfigs.broker.readOnlyKey",
                () -> alter(admin, broker, op("node.id", "7", AlterConfigOp.OpType.SET)));
        call("incrementalAlterConfigs.broker.dynamicKey", () -> {
            alter(admin, broker, op("log.cleaner.threads", "2", AlterConfigOp.OpType.SET));
            return config(admin, broker, "log.cleaner.threads");
        });
        ConfigResource clusterDefault = new ConfigResource(ConfigResource.Type.BROKER, "");
        call("incrementalAlterConfigs.clusterDefault", () -> {
            alter(admin, clusterDefault, op("log.segment.bytes", "8388608", AlterConfigOp.OpType.SET));
            return config(admin, clusterDefault, "log.segment.bytes") + " " + config(admin, broker, "log.segment.bytes")
                    + " " + config(admin, topic, "segment.bytes");
        });
        call("incrementalAlterConfigs.brokerLogger", () -> {
            alter(admin, logger, op("root", "INFO", AlterConfigOp.OpType.SET));
            return config(admin, logger, "root");
        });
    }

    // Ten records with keys (the topic is now compact,delete) into partitions 0 and 1, timestamps BASE_TS + i.
    static void produce(Properties common) throws Exception {
        Properties p = new Properties();
        p.putAll(common);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        List<Future<?>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 10; i++) {
                for (int part = 0; part < 2; part++) {
                    byte[] b = {(byte) i};
                    sent.add(producer.send(new ProducerRecord<>(TOPIC, part, BASE_TS + i, b, b)));
                }
            }
            producer.flush();
            for (Future<?> f : sent) f.get(15, TimeUnit.SECONDS);
        }
    }

    static void offsets(Admin admin, int node) {
        call("deleteRecords", () -> "lowWatermark=" + get(admin.deleteRecords(
                Map.of(TP0, RecordsToDelete.beforeOffset(2))).lowWatermarks().get(TP0)).lowWatermark());
        call("deleteRecords.beyondHighWatermark", () -> "" + get(admin.deleteRecords(
                Map.of(TP1, RecordsToDelete.beforeOffset(100))).all()));
        ListOffsetsOptions uncommitted = new ListOffsetsOptions();
        listOffsets(admin, "earliest", OffsetSpec.earliest(), uncommitted);
        listOffsets(admin, "latest", OffsetSpec.latest(), uncommitted);
        listOffsets(admin, "latest.readCommitted", OffsetSpec.latest(),
                new ListOffsetsOptions(IsolationLevel.READ_COMMITTED));
        listOffsets(admin, "maxTimestamp", OffsetSpec.maxTimestamp(), uncommitted);
        listOffsets(admin, "forTimestamp", OffsetSpec.forTimestamp(BASE_TS + 5), uncommitted);
        listOffsets(admin, "forTimestamp.future", OffsetSpec.forTimestamp(BASE_TS + 99), uncommitted);
        listOffsets(admin, "earliestLocal", OffsetSpec.earliestLocal(), uncommitted);
        listOffsets(admin, "latestTiered", OffsetSpec.latestTiered(), uncommitted);
        listOffsets(admin, "earliestPendingUpload", OffsetSpec.earliestPendingUpload(), uncommitted);
        call("describeLogDirs", () -> {
            Map<String, LogDirDescription> dirs = get(admin.describeLogDirs(List.of(node)).allDescriptions()).get(node);
            return "dirs=" + dirs.size() + " partitions=" + sorted(dirs.values().stream()
                    .flatMap(d -> d.replicaInfos().keySet().stream()).filter(tp -> tp.topic().equals(TOPIC))
                    .collect(Collectors.toList()));
        });
        TopicPartitionReplica replica = new TopicPartitionReplica(TOPIC, 0, node);
        String[] dir = new String[1];
        call("describeReplicaLogDirs", () -> {
            var info = get(admin.describeReplicaLogDirs(List.of(replica)).all()).get(replica);
            dir[0] = info.getCurrentReplicaLogDir();
            return "dir=" + (dir[0] != null) + " future=" + info.getFutureReplicaLogDir();
        });
        call("alterReplicaLogDirs.sameDir", () -> "" + get(admin.alterReplicaLogDirs(
                Map.of(replica, String.valueOf(dir[0]))).all()));
        call("describeProducers", () -> "producers=" + get(admin.describeProducers(List.of(TP0)).all()).get(TP0)
                .activeProducers().size());
    }

    static void listOffsets(Admin admin, String name, OffsetSpec spec, ListOffsetsOptions options) {
        call("listOffsets." + name, () -> {
            Map<TopicPartition, ListOffsetsResultInfo> r = get(admin.listOffsets(
                    Map.of(TP0, spec, TP1, spec), options).all());
            return "p0=" + r.get(TP0).offset() + "@" + r.get(TP0).timestamp()
                    + " p1=" + r.get(TP1).offset() + "@" + r.get(TP1).timestamp();
        });
    }

    static KafkaConsumer<byte[], byte[]> joinGroup(Properties common) {
        Properties c = new Properties();
        c.putAll(common);
        c.put("group.id", GROUP);
        c.put("group.protocol", "classic");
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c);
        consumer.subscribe(List.of(TOPIC));
        long deadline = System.currentTimeMillis() + 30_000;
        while (consumer.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
            consumer.poll(Duration.ofMillis(200));
        }
        consumer.commitSync(Map.of(TP0, new OffsetAndMetadata(5, "m"), TP1, new OffsetAndMetadata(4)),
                Duration.ofSeconds(15));
        System.out.println("#member\t" + sorted(consumer.assignment()));
        return consumer;
    }

    static void groups(Admin admin, Properties common) {
        KafkaConsumer<byte[], byte[]> consumer = joinGroup(common);
        groupCalls(admin, "active");
        call("describeConsumerGroups.authorizedOperations", () -> "ops=" + sorted(get(admin.describeConsumerGroups(
                List.of(GROUP), new DescribeConsumerGroupsOptions().includeAuthorizedOperations(true)).all())
                .get(GROUP).authorizedOperations()));
        call("describeConfigs.group", () -> config(admin, new ConfigResource(ConfigResource.Type.GROUP, GROUP),
                "consumer.session.timeout.ms"));
        call("alterConsumerGroupOffsets.active", () -> "" + get(admin.alterConsumerGroupOffsets(GROUP,
                Map.of(TP0, new OffsetAndMetadata(3))).all()));
        call("deleteConsumerGroupOffsets.active", () -> "" + get(admin.deleteConsumerGroupOffsets(GROUP,
                Set.of(TP0)).all()));
        call("deleteConsumerGroups.active", () -> "" + get(admin.deleteConsumerGroups(List.of(GROUP)).all()));
        call("listTopics.listInternal", () -> sorted(get(admin.listTopics(
                new ListTopicsOptions().listInternal(true)).names())));
        call("removeMembersFromConsumerGroup", () -> {
            get(admin.removeMembersFromConsumerGroup(GROUP, new RemoveMembersFromConsumerGroupOptions()).all());
            return "members=" + get(admin.describeConsumerGroups(List.of(GROUP)).all()).get(GROUP).members().size();
        });
        consumer.close();
        groupCalls(admin, "empty");
        call("alterConsumerGroupOffsets", () -> {
            get(admin.alterConsumerGroupOffsets(GROUP, Map.of(TP0, new OffsetAndMetadata(3))).all());
            return committed(admin);
        });
        call("deleteConsumerGroupOffsets", () -> {
            get(admin.deleteConsumerGroupOffsets(GROUP, Set.of(TP1)).all());
            return committed(admin);
        });
        call("deleteConsumerGroups", () -> "" + get(admin.deleteConsumerGroups(List.of(GROUP)).all()));
        call("describeConsumerGroups.deleted", () -> describeGroup(admin));
        call("listConsumerGroupOffsets.deleted", () -> committed(admin));
    }

    static String committed(Admin admin) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> m = get(admin.listConsumerGroupOffsets(GROUP)
                .partitionsToOffsetAndMetadata());
        return new TreeMap<>(m.entrySet().stream().collect(Collectors.toMap(e -> e.getKey().toString(), e ->
                e.getValue() == null ? "null" : e.getValue().offset() + "/" + e.getValue().metadata()))).toString();
    }

    static String describeGroup(Admin admin) throws Exception {
        ConsumerGroupDescription d = get(admin.describeConsumerGroups(List.of(GROUP)).all()).get(GROUP);
        return "state=" + d.groupState() + " type=" + d.type() + " members=" + d.members().size()
                + " assignor=" + d.partitionAssignor() + " simple=" + d.isSimpleConsumerGroup()
                + " assigned=" + sorted(d.members().stream().flatMap(m -> m.assignment().topicPartitions().stream())
                .collect(Collectors.toList()));
    }

    @SuppressWarnings("removal")
    static void groupCalls(Admin admin, String when) {
        call("listConsumerGroups." + when, () -> get(admin.listConsumerGroups().all()).stream()
                .filter(g -> g.groupId().equals(GROUP)).map(g -> g.groupId() + " state=" + g.groupState()
                        + " type=" + g.type() + " simple=" + g.isSimpleConsumerGroup())
                .collect(Collectors.joining(";")));
        call("listGroups." + when, () -> get(admin.listGroups().all()).stream()
                .filter(g -> g.groupId().equals(GROUP)).map(g -> g.groupId() + " type=" + g.type()
                        + " protocol=" + g.protocol() + " state=" + g.groupState())
                .collect(Collectors.joining(";")));
        call("listGroups.classicConsumer." + when, () -> sorted(get(admin.listGroups(ListGroupsOptions
                .forConsumerGroups().withTypes(Set.of(GroupType.CLASSIC))).all()).stream()
                .map(GroupListing::groupId).collect(Collectors.toList())));
        call("describeConsumerGroups." + when, () -> describeGroup(admin));
        call("describeClassicGroups." + when, () -> {
            ClassicGroupDescription d = get(admin.describeClassicGroups(List.of(GROUP)).all()).get(GROUP);
            return "state=" + d.state() + " protocol=" + d.protocol() + " members=" + d.members().size();
        });
        call("listConsumerGroupOffsets." + when, () -> committed(admin));
    }

    static void transactionsAndAcls(Admin admin, int node) {
        call("describeTransactions.unknown", () -> "" + get(admin.describeTransactions(List.of(TXN)).all()));
        call("fenceProducers", () -> "" + get(admin.fenceProducers(List.of(TXN)).all()));
        call("describeTransactions", () -> {
            TransactionDescription d = get(admin.describeTransactions(List.of(TXN)).all()).get(TXN);
            return "state=" + d.state() + " coordinator=" + (d.coordinatorId() == node)
                    + " partitions=" + d.topicPartitions().size();
        });
        call("listTransactions", () -> sorted(get(admin.listTransactions().all()).stream()
                .map(t -> t.transactionalId() + ":" + t.state()).collect(Collectors.toList())));
        AclBinding acl = new AclBinding(new ResourcePattern(ResourceType.TOPIC, TOPIC, PatternType.LITERAL),
                new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        call("describeAcls", () -> "" + get(admin.describeAcls(AclBindingFilter.ANY).values()));
        call("createAcls", () -> "" + get(admin.createAcls(List.of(acl)).all()));
        call("deleteAcls", () -> "" + get(admin.deleteAcls(List.of(AclBindingFilter.ANY)).all()));
    }

    static void quotasAndCredentials(Admin admin) {
        ClientQuotaEntity user = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, "sweep-user"));
        call("describeClientQuotas", () -> "" + get(admin.describeClientQuotas(ClientQuotaFilter.all()).entities()));
        call("alterClientQuotas", () -> {
            get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(user,
                    List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1024.0))))).all());
            return "" + get(admin.describeClientQuotas(ClientQuotaFilter.all()).entities());
        });
        call("describeUserScramCredentials", () -> "" + get(admin.describeUserScramCredentials().all()).keySet());
        call("alterUserScramCredentials", () -> {
            get(admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("sweep-user",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "sweep-secret"))).all());
            return "" + get(admin.describeUserScramCredentials().all()).get("sweep-user").credentialInfos();
        });
    }

    static void replicasAndRest(Admin admin, int node) {
        call("electLeaders.preferred", () -> elect(admin, ElectionType.PREFERRED));
        call("electLeaders.unclean", () -> elect(admin, ElectionType.UNCLEAN));
        call("listPartitionReassignments", () -> "" + get(admin.listPartitionReassignments().reassignments()));
        call("alterPartitionReassignments.sameReplica", () -> "" + get(admin.alterPartitionReassignments(
                Map.of(TP0, Optional.of(new NewPartitionReassignment(List.of(node))))).all()));
        call("alterPartitionReassignments.cancelNone", () -> "" + get(admin.alterPartitionReassignments(
                Map.of(TP0, Optional.empty())).all()));
        call("describeMetadataQuorum", () -> quorum(get(admin.describeMetadataQuorum().quorumInfo()), node));
        call("describeDelegationToken", () -> "" + get(admin.describeDelegationToken().delegationTokens()));
        call("createDelegationToken", () -> "" + get(admin.createDelegationToken().delegationToken()));
        call("renewDelegationToken", () -> "" + get(admin.renewDelegationToken(new byte[] {1, 2}).expiryTimestamp()));
        call("expireDelegationToken", () -> "" + get(admin.expireDelegationToken(new byte[] {1, 2}).expiryTimestamp()));
        call("listConfigResources", () -> sorted(get(admin.listConfigResources().all()).stream()
                .filter(r -> !r.name().startsWith("__")).collect(Collectors.toList())));
        call("listConfigResources.clientMetrics", () -> "" + get(admin.listConfigResources(
                Set.of(ConfigResource.Type.CLIENT_METRICS), new ListConfigResourcesOptions()).all()));
        call("describeShareGroups", () -> "state=" + get(admin.describeShareGroups(List.of("sweep-share")).all())
                .get("sweep-share").groupState());
        call("listShareGroupOffsets", () -> "" + get(admin.listShareGroupOffsets(
                Map.of("sweep-share", new ListShareGroupOffsetsSpec())).all()));
        call("describeStreamsGroups", () -> "state=" + get(admin.describeStreamsGroups(List.of("sweep-streams"))
                .all()).get("sweep-streams").groupState());
    }

    // A one-node quorum: this node leads it and is its only voter, caught up to the high watermark now; no
    // observers; an epoch from 1; v2's nodes list this node alone, with its controller endpoints.
    static String quorum(QuorumInfo q, int node) {
        QuorumInfo.ReplicaState voter = q.voters().get(0);
        long caughtUp = voter.lastCaughtUpTimestamp().orElse(0L);
        boolean atHighWatermark = voter.logEndOffset() == q.highWatermark() && q.highWatermark() >= 1;
        return "leader=" + (q.leaderId() == node) + " voters=" + q.voters().size()
                + " voterIsLeader=" + (voter.replicaId() == node) + " observers=" + q.observers().size()
                + " epoch>=1=" + (q.leaderEpoch() >= 1) + " voterAtHighWatermark=" + atHighWatermark
                + " caughtUpNow=" + (Math.abs(System.currentTimeMillis() - caughtUp) < 60_000)
                + " nodes=" + q.nodes().values().stream().map(n -> n.nodeId() + "=" + n.endpoints().stream()
                        .map(e -> e.listener() + "://" + e.host() + ":" + e.port()).collect(Collectors.toList()))
                        .collect(Collectors.toList());
    }

    static String elect(Admin admin, ElectionType type) throws Exception {
        Map<TopicPartition, Optional<Throwable>> r = get(admin.electLeaders(type, Set.of(TP0)).partitions());
        return "p0=" + r.get(TP0).map(e -> e.getClass().getSimpleName()).orElse("elected");
    }

    static void deletes(Admin admin, Uuid byId) {
        call("deleteTopics.byName", () -> "" + get(admin.deleteTopics(List.of(TOPIC)).all()));
        call("deleteTopics.byId", () -> "" + get(admin.deleteTopics(TopicCollection.ofTopicIds(List.of(byId))).all()));
        call("deleteTopics.unknown", () -> "" + get(admin.deleteTopics(List.of("sweep-missing")).all()));
        call("deleteTopics.unknownId", () -> "" + get(admin.deleteTopics(
                TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).all()));
        call("listTopics.afterDelete", () -> sorted(get(admin.listTopics().names())));
    }
}
