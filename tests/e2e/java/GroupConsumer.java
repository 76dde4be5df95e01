// End-to-end check of the classic consumer-group protocol with the Kafka Java client.
// Usage: java GroupConsumer <bootstrap> <topic> <group> <count> <metadata> [<assignor>]
// Subscribes to <topic> as a member of <group> (enable.auto.commit=false; partition.assignment.strategy
// the <assignor> class of org.apache.kafka.clients.consumer if given, else the client's default) or, with
// <assignor> "assign", assigns itself all partitions and commits into <group> without joining it (a
// "simple" group: what Flink's KafkaSource does, committing its checkpointed offsets), polls
// until <count> records have been read (or 40 s passed) and calls commitSync() after every non-empty
// poll. Then commits the final positions once more with <metadata> attached and prints, tab-separated:
//   record <partition> <offset> <key> <value>      one line per record, in poll order
//   member <generation id> <member id>             the group membership the client saw
//   assignment <p,p,...>                           the partitions assigned to this member
//   committed <partition> <offset> <metadata>      Consumer.committed() for every partition
// and, while the member is still in the group, what kafka-consumer-groups.sh --list / --describe read
// through the Admin client (the pre-4.0 calls, which both client versions have):
//   listed <group> <state> <simple>                listConsumerGroups() for <group>
//   described <state> <protocol> <simple> <members> <a member's partitions>   describeConsumerGroups(),
//                                                  one line per member (one with "-" if there is none)
// With <count> "-1" it is a long-lived member driven through stdin (see stream()), the client settings
// overlaid with the -Dclient.props key=value lines (group.instance.id, session.timeout.ms, ...).
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collection;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class GroupConsumer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], metadata = args[4];
        int count = Integer.parseInt(args[3]);
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("client.id", "java-" + group);
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("session.timeout.ms", "6000");
        c.put("heartbeat.interval.ms", "500");
        c.put("max.poll.interval.ms", "20000");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        boolean assign = args.length > 5 && args[5].equals("assign");
        if (args.length > 5 && !assign) {
            c.put("partition.assignment.strategy", "org.apache.kafka.clients.consumer." + args[5]);
        }
        if (count < 0) {
            for (String line : System.getProperty("client.props", "").split("\n")) {
                int eq = line.indexOf('=');
                if (eq > 0) c.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
            }
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
                new Stream(consumer).run(topic, metadata);
            }
            return;
        }
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            if (assign) {
                List<TopicPartition> mine = new java.util.ArrayList<>();
                for (PartitionInfo info : consumer.partitionsFor(topic)) {
                    mine.add(new TopicPartition(topic, info.partition()));
                }
                consumer.assign(mine);
            } else {
                consumer.subscribe(Collections.singletonList(topic));
            }
            int seen = 0;
            long deadline = System.currentTimeMillis() + 40_000;
            while (seen < count && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    System.out.println("record\t" + r.partition() + "\t" + r.offset() + "\t" + str(r.key()) + "\t"
                            + str(r.value()));
                    seen++;
                }
                consumer.commitSync(Duration.ofSeconds(15));
            }
            Map<TopicPartition, OffsetAndMetadata> last = new HashMap<>();
            for (TopicPartition tp : consumer.assignment()) {
                last.put(tp, new OffsetAndMetadata(consumer.position(tp), metadata));
            }
            consumer.commitSync(last, Duration.ofSeconds(15));
            ConsumerGroupMetadata member = consumer.groupMetadata();
            System.out.println("member\t" + member.generationId() + "\t" + member.memberId());
            TreeSet<Integer> assigned = new TreeSet<>();
            for (TopicPartition tp : consumer.assignment()) assigned.add(tp.partition());
            StringBuilder a = new StringBuilder();
            for (int p : assigned) a.append(a.length() > 0 ? "," : "").append(p);
            System.out.println("assignment\t" + a);
            TreeSet<Integer> partitions = new TreeSet<>();
            for (PartitionInfo info : consumer.partitionsFor(topic)) partitions.add(info.partition());
            Set<TopicPartition> all = new java.util.HashSet<>();
            for (int p : partitions) all.add(new TopicPartition(topic, p));
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(all, Duration.ofSeconds(15));
            for (int p : partitions) {
                OffsetAndMetadata om = committed.get(new TopicPartition(topic, p));
                String value = om == null ? "-1\t<none>" : om.offset() + "\t" + om.metadata();
                System.out.println("committed\t" + p + "\t" + value);
            }
            printGroup(bootstrap, group);
        }
    }

    @SuppressWarnings("deprecation")  // state(): groupState() from 4.0 on, which 3.x lacks
    static void printGroup(String bootstrap, String group) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", (Object) bootstrap))) {
            for (ConsumerGroupListing g : admin.listConsumerGroups().all().get()) {
                if (g.groupId().equals(group)) {
                    System.out.println("listed\t" + g.groupId() + "\t" + g.state().get() + "\t"
                            + g.isSimpleConsumerGroup());
                }
            }
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            String head = "described\t" + d.state() + "\t" + d.partitionAssignor() + "\t" + d.isSimpleConsumerGroup()
                    + "\t" + d.members().size() + "\t";
            for (MemberDescription m : d.members()) {
                TreeSet<Integer> mine = new TreeSet<>();
                for (TopicPartition tp : m.assignment().topicPartitions()) mine.add(tp.partition());
                System.out.println(head + mine);
            }
            if (d.members().isEmpty()) System.out.println(head + "-");
        }
    }

    /** A member that runs until stdin says "stop" (then commits its positions with the metadata, prints its
     * member and assignment lines and closes: a dynamic member leaves the group) or ends (then it exits
     * without closing, as if crashed). It prints, as they happen:
     *   assigned <generation> <p,p,...> / revoked <p,...> / lost <p,...>   the rebalance listener's calls
     *   record <partition> <offset> <key> <value>    a record only once its offset is committed
     * Offsets are committed after every poll; a commit refused because a rebalance is in progress is
     * retried after the next poll, or in onPartitionsRevoked; records of lost partitions are dropped
     * unprinted (their next owner reads them). So the printed records of all members, each printed once,
     * are what the group has committed. */
    static final class Stream implements ConsumerRebalanceListener {
        final KafkaConsumer<byte[], byte[]> consumer;
        final List<ConsumerRecord<byte[], byte[]>> pending = new ArrayList<>();
        volatile String command = null;

        Stream(KafkaConsumer<byte[], byte[]> consumer) {
            this.consumer = consumer;
        }

        void run(String topic, String metadata) throws Exception {
            Thread reader = new Thread(() -> {
                try {
                    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                    String line = in.readLine();
                    command = line == null ? "eof" : line.trim();
                } catch (Exception e) {
                    command = "eof";
                }
            });
            reader.setDaemon(true);
            reader.start();
            consumer.subscribe(Collections.singletonList(topic), this);
            while (command == null) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) pending.add(r);
                try {
                    commitPending(null);
                } catch (RebalanceInProgressException e) {
                    System.out.println("retry\t" + e.getClass().getSimpleName());
                }
            }
            if (command.equals("eof")) Runtime.getRuntime().halt(0);
            Map<TopicPartition, OffsetAndMetadata> last = new HashMap<>();
            for (TopicPartition tp : consumer.assignment()) {
                last.put(tp, new OffsetAndMetadata(consumer.position(tp), metadata));
            }
            consumer.commitSync(last, Duration.ofSeconds(15));
            System.out.println("member\t" + consumer.groupMetadata().generationId() + "\t"
                    + consumer.groupMetadata().memberId());
            System.out.println("assignment\t" + partitions(consumer.assignment()));
        }

        /** Commits the pending records (of {@code only}'s partitions if given) and prints them. */
        void commitPending(Collection<TopicPartition> only) {
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            List<ConsumerRecord<byte[], byte[]>> done = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> r : pending) {
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                if (only != null && !only.contains(tp)) continue;
                offsets.put(tp, new OffsetAndMetadata(r.offset() + 1));
                done.add(r);
            }
            if (done.isEmpty()) return;
            consumer.commitSync(offsets, Duration.ofSeconds(15));
            pending.removeAll(done);
            for (ConsumerRecord<byte[], byte[]> r : done) {
                System.out.println("record\t" + r.partition() + "\t" + r.offset() + "\t" + str(r.key()) + "\t"
                        + str(r.value()));
            }
            System.out.flush();
        }

        void drop(Collection<TopicPartition> gone) {
            pending.removeIf(r -> gone.contains(new TopicPartition(r.topic(), r.partition())));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
            System.out.println("revoked\t" + partitions(revoked));
            try {
                commitPending(revoked);
            } catch (RuntimeException e) {
                System.out.println("revoke-commit-failed\t" + e.getClass().getSimpleName());
            }
            drop(revoked);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> lost) {
            System.out.println("lost\t" + partitions(lost));
            drop(lost);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
            System.out.println("assigned\t" + consumer.groupMetadata().generationId() + "\t" + partitions(assigned));
            System.out.flush();
        }
    }

    static String partitions(Collection<TopicPartition> tps) {
        TreeSet<Integer> sorted = new TreeSet<>();
        for (TopicPartition tp : tps) sorted.add(tp.partition());
        StringBuilder a = new StringBuilder();
        for (int p : sorted) a.append(a.length() > 0 ? "," : "").append(p);
        return a.toString();
    }

    static String str(byte[] b) {
        return b == null ? "<null>" : new String(b, StandardCharsets.UTF_8);
    }
}
