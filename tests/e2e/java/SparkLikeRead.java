// How Spark's Kafka source reads a topic, done with the Kafka Java client (kafka-clients from a PyPI wheel).
// Usage: java SparkLikeRead <bootstrap> <topic> <timestamp>
// First drops the records below offset 5 of partition 0 (AdminClient.deleteRecords), then, as Spark's
// offset reader and executors do: describeTopics for the partitions, listOffsets earliest / latest /
// forTimestamp(<timestamp>) / maxTimestamp per partition, then a consumer with auto.offset.reset=none
// and small polls that assigns every partition, seeks to its earliest offset and reads up to its latest.
// Last, a seek below partition 0's start must fail with OffsetOutOfRangeException (Spark's
// failOnDataLoss check). Prints tab-separated lines: "partitions", "offsets", "record" and "lost".
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class SparkLikeRead {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        long timestamp = Long.parseLong(args[2]);
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        List<TopicPartition> parts;
        Map<TopicPartition, Long> earliest, latest;
        try (AdminClient admin = AdminClient.create(common)) {
            TopicPartition first = new TopicPartition(topic, 0);
            admin.deleteRecords(Map.of(first, RecordsToDelete.beforeOffset(5))).all().get();
            parts = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().stream()
                    .map(p -> new TopicPartition(topic, p.partition())).collect(Collectors.toList());
            System.out.println("partitions\t" + parts.size());
            earliest = offsets(admin, parts, OffsetSpec.earliest(), "earliest");
            latest = offsets(admin, parts, OffsetSpec.latest(), "latest");
            offsets(admin, parts, OffsetSpec.forTimestamp(timestamp), "for-timestamp");
            offsets(admin, parts, OffsetSpec.maxTimestamp(), "max-timestamp");
        }
        Properties c = new Properties();
        c.putAll(common);
        c.put("group.id", "spark-kafka-source-check-executor");
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "none");
        c.put("max.poll.records", "7");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(parts);
            for (TopicPartition tp : parts) consumer.seek(tp, earliest.get(tp));
            long deadline = System.currentTimeMillis() + 30_000;
            while (!caughtUp(consumer, parts, latest) && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    System.out.println("record\t" + r.partition() + "\t" + r.offset() + "\t" + str(r.key()) + "\t"
                            + str(r.value()) + "\t" + r.timestamp());
                }
            }
            TopicPartition first = parts.get(0);
            consumer.assign(Collections.singleton(first));
            consumer.seek(first, 0);
            try {
                consumer.poll(Duration.ofSeconds(10));
                System.out.println("lost\tnot detected");
            } catch (OffsetOutOfRangeException e) {
                System.out.println("lost\t" + e.offsetOutOfRangePartitions());
            }
        }
    }

    static Map<TopicPartition, Long> offsets(AdminClient admin, List<TopicPartition> parts, OffsetSpec spec,
            String label) throws Exception {
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (TopicPartition tp : parts) request.put(tp, spec);
        Map<TopicPartition, ListOffsetsResultInfo> got = admin.listOffsets(request).all().get();
        Map<TopicPartition, Long> result = new HashMap<>();
        for (TopicPartition tp : parts) {
            ListOffsetsResultInfo info = got.get(tp);
            System.out.println("offsets\t" + label + "\t" + tp.partition() + "\t" + info.offset() + "\t"
                    + info.timestamp());
            result.put(tp, info.offset());
        }
        return result;
    }

    static boolean caughtUp(KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> parts,
            Map<TopicPartition, Long> latest) {
        for (TopicPartition tp : parts) {
            if (consumer.position(tp) < latest.get(tp)) return false;
        }
        return true;
    }

    static String str(byte[] b) {
        return b == null ? "<null>" : new String(b, StandardCharsets.UTF_8);
    }
}
