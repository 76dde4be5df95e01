// Transactions (KIP-98) with the Kafka Java client (kafka-clients 4.3.0) against the broker.
// Usage: java TxnCheck <bootstrap> <topic>
// Creates the topic (one partition), then with a transactional producer (transactional.id
// "<topic>-txn"): commits 3 records, aborts 2, commits 2 more together with the offset 42
// (metadata "txn-meta") of the group "<topic>-group" through sendOffsetsToTransaction, with the
// metadata of a consumer that never joined (generation -1, no member id: a "simple" group).
// A second producer with the same transactional.id then fences the first: its initTransactions
// aborts the first's open transaction (one record), and the first's commit must fail: "#fenced"
// and the exception's class. The second producer commits one record, leaves one open while the
// admin client lists the latest offset read_committed and read_uncommitted ("#open", LSO, high
// watermark), then aborts it. Last: "#group" partition, offset, metadata of the group; "#latest"
// with both isolation levels; each record read with assign() by a read_committed ("rc") and a
// read_uncommitted ("ru") consumer, one tab-separated line each: offset, key, value, headers
// (k=v;...), timestamp; and "#position" with each consumer's position and end offset once it has
// read up to that end offset.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnCheck {
    static final long BASE_TS = 1_790_000_000_000L;
    static String bootstrap, topic;
    static TopicPartition tp;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        topic = args[1];
        tp = new TopicPartition(topic, 0);
        try (AdminClient admin = AdminClient.create(common())) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        KafkaProducer<byte[], byte[]> first = producer();
        first.initTransactions();
        send(first, "committed", 0, 3);
        first.commitTransaction();
        send(first, "aborted", 0, 2);
        first.abortTransaction();
        send(first, "committed", 3, 2);
        Map<TopicPartition, OffsetAndMetadata> offsets = Map.of(tp, new OffsetAndMetadata(42, "txn-meta"));
        first.sendOffsetsToTransaction(offsets, groupMetadata());
        first.commitTransaction();

        send(first, "fenced", 0, 1);
        KafkaProducer<byte[], byte[]> second = producer();
        second.initTransactions();
        try {
            first.commitTransaction();
            System.out.println("#fenced\tcommitted");
        } catch (Exception e) {
            System.out.println("#fenced\t" + e.getClass().getSimpleName());
        }
        first.close(Duration.ofSeconds(5));
        send(second, "second", 0, 1);
        second.commitTransaction();
        send(second, "open", 0, 1);
        System.out.println("#open\t" + latest(IsolationLevel.READ_COMMITTED) + "\t"
                + latest(IsolationLevel.READ_UNCOMMITTED));
        describeOpen();
        second.abortTransaction();
        second.close(Duration.ofSeconds(5));

        try (AdminClient admin = AdminClient.create(common())) {
            var group = admin.listConsumerGroupOffsets(topic + "-group").partitionsToOffsetAndMetadata().get();
            for (var e : group.entrySet()) {
                System.out.println("#group\t" + e.getKey() + "\t" + e.getValue().offset() + "\t"
                        + e.getValue().metadata());
            }
        }
        System.out.println("#latest\t" + latest(IsolationLevel.READ_COMMITTED) + "\t"
                + latest(IsolationLevel.READ_UNCOMMITTED));
        read("read_committed", "rc");
        read("read_uncommitted", "ru");
    }

    /** What kafka-transactions.sh list / describe / describe-producers read while a transaction is open. */
    static void describeOpen() throws Exception {
        String id = topic + "-txn";
        try (AdminClient admin = AdminClient.create(common())) {
            for (var listing : admin.listTransactions().all().get()) {
                if (listing.transactionalId().equals(id)) {
                    System.out.println("#list\t" + listing.state());
                }
            }
            var d = admin.describeTransactions(Collections.singleton(id)).all().get().get(id);
            System.out.println("#describe\t" + d.state() + "\t" + d.coordinatorId() + "\t"
                    + d.transactionTimeoutMs() + "\t" + d.topicPartitions());
            var p = admin.describeProducers(Collections.singleton(tp)).partitionResult(tp).get();
            for (var state : p.activeProducers()) {
                System.out.println("#producer\t" + state.currentTransactionStartOffset());
            }
        }
    }

    static Properties common() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static KafkaProducer<byte[], byte[]> producer() {
        Properties p = common();
        p.put("transactional.id", topic + "-txn");
        p.put("transaction.timeout.ms", "30000");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    /** Begins a transaction and sends {@code n} records "<tag>-<first + i>", waiting for each ack. */
    static void send(KafkaProducer<byte[], byte[]> producer, String tag, int first, int n) throws Exception {
        producer.beginTransaction();
        for (int i = first; i < first + n; i++) {
            ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, 0, BASE_TS + i,
                    bytes("key-" + tag + "-" + i), bytes("value-" + tag + "-" + i));
            r.headers().add("tag", bytes(tag)).add("i", bytes(Integer.toString(i)));
            producer.send(r).get();
        }
    }

    /** The metadata of a consumer of the group that never joined it: generation -1, no member id. */
    static ConsumerGroupMetadata groupMetadata() {
        Properties c = common();
        c.put("group.id", topic + "-group");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            return consumer.groupMetadata();
        }
    }

    static long latest(IsolationLevel level) throws Exception {
        try (AdminClient admin = AdminClient.create(common())) {
            return admin.listOffsets(Map.of(tp, OffsetSpec.latest()), new ListOffsetsOptions(level))
                    .partitionResult(tp).get().offset();
        }
    }

    static void read(String isolation, String prefix) {
        Properties c = common();
        c.put("isolation.level", isolation);
        c.put("enable.auto.commit", "false");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(Collections.singleton(tp));
            consumer.seekToBeginning(Collections.singleton(tp));
            long end = consumer.endOffsets(Collections.singleton(tp)).get(tp);
            long deadline = System.currentTimeMillis() + 30_000;
            while (consumer.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    StringBuilder h = new StringBuilder();
                    for (Header header : r.headers()) {
                        if (h.length() > 0) h.append(';');
                        h.append(header.key()).append('=').append(new String(header.value(), StandardCharsets.UTF_8));
                    }
                    System.out.println(prefix + "\t" + r.offset() + "\t" + str(r.key()) + "\t" + str(r.value()) + "\t"
                            + h + "\t" + r.timestamp());
                }
            }
            System.out.println("#position\t" + prefix + "\t" + consumer.position(tp) + "\t" + end);
        }
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String str(byte[] b) {
        return b == null ? "<null>" : new String(b, StandardCharsets.UTF_8);
    }
}
