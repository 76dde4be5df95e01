// End-to-end check with the Kafka Java client (kafka-clients from a PyPI wheel).
// Usage: java [-Dclient.props=<key=value lines>] ClientCheck <bootstrap> <topic> <codec> <count>
// (client.props adds client settings to every client, e.g. those of a SASL/PLAIN login).
// Creates the topic with AdminClient, produces <count> records with keys, values, headers and
// explicit timestamps (acks=all, the given compression), then reads them back with assign() and
// prints one tab-separated line per record: offset, key, value, headers (k=v;...), timestamp.
// Last, describeLogDirs: one line "#dir", node, log dir, partition, size per partition of the topic;
// describeAcls: "#acls" and the exception it fails with (the broker has no authorizer); and
// describeProducers: "#producer", id, epoch, last sequence, last timestamp per active producer;
// listPartitionReassignments: "#reassignments" and how many are in progress; electLeaders
// (preferred): "#elect" and the outcome for partition 0; a broker logger set to DEBUG as
// kafka-configs.sh --entity-type broker-loggers does: "#logger" and the level described after; the
// topic's retention.ms set as kafka-configs.sh --alter --entity-type topics does: "#topic-config",
// the value and source described after.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.function.Function;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ClientCheck {
    static final long BASE_TS = 1_780_000_000_000L;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], codec = args[2];
        int count = Integer.parseInt(args[3]);
        Properties common = clientProps(bootstrap);
        try (AdminClient admin = AdminClient.create(common)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        Properties p = new Properties();
        p.putAll(common);
        p.put("acks", "all");
        p.put("compression.type", codec);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < count; i++) {
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, 0, BASE_TS + i,
                        bytes("key-" + i), bytes("value-" + i + "-" + codec));
                r.headers().add("n", bytes(Integer.toString(i))).add("src", bytes("java"));
                sent.add(producer.send(r));
            }
            producer.flush();
            for (Future<RecordMetadata> f : sent) f.get();
        }
        printRecords(common, topic, count, ClientCheck::str);
        printLogDirs(common, topic);
        printAcls(common);
        printProducers(common, new TopicPartition(topic, 0));
        try (AdminClient admin = AdminClient.create(common)) {
            System.out.println("#reassignments\t" + admin.listPartitionReassignments().reassignments().get().size());
            TopicPartition tp = new TopicPartition(topic, 0);
            var elected = admin.electLeaders(ElectionType.PREFERRED, Collections.singleton(tp)).partitions().get();
            System.out.println("#elect\t" + elected.get(tp).map(e -> e.getClass().getSimpleName()).orElse("elected"));
            ConfigResource loggers = new ConfigResource(ConfigResource.Type.BROKER_LOGGER, "1");
            AlterConfigOp debug = new AlterConfigOp(new ConfigEntry("storage.log_manager", "DEBUG"),
                    AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(java.util.Map.of(loggers, List.of(debug))).all().get();
            var described = admin.describeConfigs(List.of(loggers)).all().get().get(loggers);
            System.out.println("#logger\t" + described.get("storage.log_manager").value() + "\t"
                    + described.get("storage.log_manager").source());
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            AlterConfigOp retention = new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"),
                    AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(java.util.Map.of(res, List.of(retention))).all().get();
            ConfigEntry set = admin.describeConfigs(List.of(res)).all().get().get(res).get("retention.ms");
            System.out.println("#topic-config\t" + set.value() + "\t" + set.source());
        }
    }

    static void printProducers(Properties common, TopicPartition tp) throws Exception {
        try (AdminClient admin = AdminClient.create(common)) {
            for (ProducerState s : admin.describeProducers(Collections.singleton(tp)).partitionResult(tp).get()
                    .activeProducers()) {
                System.out.println("#producer\t" + s.producerId() + "\t" + s.producerEpoch() + "\t"
                        + s.lastSequence() + "\t" + s.lastTimestamp());
            }
        }
    }

    static void printAcls(Properties common) throws Exception {
        try (AdminClient admin = AdminClient.create(common)) {
            admin.describeAcls(AclBindingFilter.ANY).values().get();
            System.out.println("#acls\tno error");
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause();
            System.out.println("#acls\t" + cause.getClass().getSimpleName() + "\t" + cause.getMessage());
        }
    }

    static void printLogDirs(Properties common, String topic) throws Exception {
        try (AdminClient admin = AdminClient.create(common)) {
            List<Integer> ids = new ArrayList<>();
            for (Node node : admin.describeCluster().nodes().get()) ids.add(node.id());
            var byNode = admin.describeLogDirs(ids).allDescriptions().get();
            for (var node : byNode.entrySet()) {
                for (var dir : node.getValue().entrySet()) {
                    LogDirDescription d = dir.getValue();
                    for (var replica : d.replicaInfos().entrySet()) {
                        if (!replica.getKey().topic().equals(topic)) continue;
                        ReplicaInfo info = replica.getValue();
                        System.out.println("#dir\t" + node.getKey() + "\t" + dir.getKey() + "\t"
                                + replica.getKey().partition() + "\t" + info.size() + "\t" + (d.error() == null));
                    }
                }
            }
        }
    }

    /** bootstrap.servers and the key=value lines of the client.props system property. */
    static Properties clientProps(String bootstrap) {
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        for (String line : System.getProperty("client.props", "").split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) common.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
        }
        return common;
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Reads {@code count} records of partition 0 from the start with {@code assign} and prints each as
     * offset, key, value (as {@code value} shows it), headers and timestamp, tab-separated (SslCheck too). */
    static void printRecords(Properties common, String topic, int count, Function<byte[], String> value) {
        Properties c = new Properties();
        c.putAll(common);
        c.put("enable.auto.commit", "false");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(Collections.singleton(tp));
            consumer.seekToBeginning(Collections.singleton(tp));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (seen < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    StringBuilder h = new StringBuilder();
                    for (Header header : r.headers()) {
                        if (h.length() > 0) h.append(';');
                        h.append(header.key()).append('=').append(str(header.value()));
                    }
                    System.out.println(r.offset() + "\t" + str(r.key()) + "\t" + value.apply(r.value()) + "\t" + h
                            + "\t" + r.timestamp());
                    seen++;
                }
            }
        }
    }

    static String str(byte[] b) {
        return b == null ? "<null>" : new String(b, StandardCharsets.UTF_8);
    }
}
