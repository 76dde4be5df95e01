// End-to-end check of KIP-848's consumer protocol (group.protocol=consumer) with the Kafka Java client.
// Usage: java ConsumerProtocolCheck <bootstrap> <topic> <group> <count>
// Two consumers of <group> subscribe to <topic> and are polled in turn until both hold partitions,
// <count> records were read between them and no commit is owed; each calls commitSync() after every
// non-empty poll. A commit refused with CommitFailedException is owed: it is made again after the next
// poll, as an application would (the coordinator refuses, as Kafka does, a commit naming a partition
// that moved to the other consumer before the commit reached it; the other consumer reads that
// partition again from its last committed offset). Prints, tab-separated:
//   record <consumer> <partition> <offset> <key>   one line per record, in poll order
//   commitfailed <consumer> <moved|kept> <message> a refused commit: "moved" when a partition it named
//                                                  has left the consumer by the time of the refusal,
//                                                  "kept" when it still holds them all
//   member <consumer> <member epoch> <member id>   groupMetadata() of each consumer
//   assignment <consumer> <p,p,...>                the partitions each holds
//   committed <partition> <offset>                 committed() as consumer 0 sees it
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ConsumerProtocolCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int count = Integer.parseInt(args[3]);
        List<KafkaConsumer<byte[], byte[]>> consumers = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Properties c = new Properties();
            c.put("bootstrap.servers", bootstrap);
            c.put("group.id", group);
            c.put("group.protocol", "consumer");
            c.put("client.id", "java-848-" + i);
            c.put("enable.auto.commit", "false");
            c.put("auto.offset.reset", "earliest");
            c.put("key.deserializer", ByteArrayDeserializer.class.getName());
            c.put("value.deserializer", ByteArrayDeserializer.class.getName());
            KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c);
            consumer.subscribe(Collections.singletonList(topic));
            consumers.add(consumer);
        }
        int seen = 0;
        boolean[] owed = new boolean[2];
        long deadline = System.currentTimeMillis() + 40_000;
        while ((seen < count || consumers.get(0).assignment().isEmpty() || consumers.get(1).assignment().isEmpty()
                || owed[0] || owed[1]) && System.currentTimeMillis() < deadline) {
            for (int i = 0; i < 2; i++) {
                KafkaConsumer<byte[], byte[]> consumer = consumers.get(i);
                int got = 0;
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    System.out.println("record\t" + i + "\t" + r.partition() + "\t" + r.offset() + "\t"
                            + new String(r.key(), StandardCharsets.UTF_8));
                    got++;
                }
                if (got > 0 || owed[i]) owed[i] = !commit(consumer, i);
                seen += got;
            }
        }
        for (int i = 0; i < 2; i++) {
            KafkaConsumer<byte[], byte[]> consumer = consumers.get(i);
            System.out.println("member\t" + i + "\t" + consumer.groupMetadata().generationId() + "\t"
                    + consumer.groupMetadata().memberId());
            TreeSet<Integer> held = new TreeSet<>();
            for (TopicPartition tp : consumer.assignment()) held.add(tp.partition());
            StringBuilder a = new StringBuilder();
            for (int p : held) a.append(a.length() > 0 ? "," : "").append(p);
            System.out.println("assignment\t" + i + "\t" + a);
        }
        Set<TopicPartition> all = new HashSet<>();
        for (int p = 0; p < 4; p++) all.add(new TopicPartition(topic, p));
        Map<TopicPartition, OffsetAndMetadata> committed = consumers.get(0).committed(all, Duration.ofSeconds(15));
        for (int p = 0; p < 4; p++) {
            OffsetAndMetadata om = committed.get(new TopicPartition(topic, p));
            System.out.println("committed\t" + p + "\t" + (om == null ? -1 : om.offset()));
        }
        for (KafkaConsumer<byte[], byte[]> consumer : consumers) consumer.close(Duration.ofSeconds(10));
    }

    // commitSync() of what the consumer read; false (and a "commitfailed" line) when it was refused
    static boolean commit(KafkaConsumer<byte[], byte[]> consumer, int i) {
        Set<TopicPartition> named = new HashSet<>(consumer.assignment());
        try {
            consumer.commitSync(Duration.ofSeconds(15));
            return true;
        } catch (CommitFailedException e) {
            String how = consumer.assignment().containsAll(named) ? "kept" : "moved";
            System.out.println("commitfailed\t" + i + "\t" + how + "\t" + e.getMessage());
            return false;
        }
    }
}
