// End-to-end checks of KIP-848 groups with the Kafka Java client: online migration, static membership,
// regex subscription and the admin API on consumer groups.
// Usage: java ConsumerMigrationCheck <mode> <bootstrap> <topic> <group> [assignor]
//   upgrade  two classic consumers (assignor: cooperative or range) replaced one at a time by
//            group.protocol=consumer ones, then back; after each step records are produced to every
//            partition and all must be read once, no partition owned by two consumers at once
//            (rebalance-listener callbacks), and describeConsumerGroups shows the group and member types
//   static   a static consumer (group.instance.id) closed and restarted gets its partitions back
//            without the other member seeing a rebalance
//   regex    subscribe(SubscriptionPattern): a matching topic created later is picked up
//   admin    listGroups / listConsumerGroups with type filters, describeConsumerGroups,
//            deleteConsumerGroups, alterConsumerGroupOffsets, deleteConsumerGroupOffsets on a non-empty
//            and then an empty consumer group
// Prints one line per check, tab-separated: check <name> <ok|FAIL> <detail>; exits 0 when it ran through.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ConsumerMigrationCheck {
    static String bootstrap, topic, group;
    static Admin admin;
    static KafkaProducer<String, String> producer;
    static final Map<String, KafkaConsumer<byte[], byte[]>> fleet = new LinkedHashMap<>();
    static final Map<Integer, String> owner = new HashMap<>();  // partition -> consumer, from the callbacks
    static final Map<String, List<String>> callbacks = new HashMap<>();
    static final Map<String, Integer> readCount = new HashMap<>();  // "partition:offset" -> times read
    static final List<String> overlaps = new ArrayList<>();
    static final Map<KafkaConsumer<byte[], byte[]>, Map<TopicPartition, Long>> nextOffsets = new HashMap<>();
    static final Set<KafkaConsumer<byte[], byte[]>> pending = new HashSet<>();  // commits to retry
    static int produced = 0, failures = 0;

    static void check(String name, boolean ok, Object detail) {
        System.out.println("check\t" + name + "\t" + (ok ? "ok" : "FAIL") + "\t" + detail);
        if (!ok) failures++;
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        bootstrap = args[1]; topic = args[2]; group = args[3];
        Properties a = new Properties();
        a.put("bootstrap.servers", bootstrap);
        admin = Admin.create(a);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        producer = new KafkaProducer<>(p);
        try {
            if (mode.equals("upgrade")) upgrade(args[4]);
            else if (mode.equals("static")) staticMembers();
            else if (mode.equals("regex")) regex();
            else if (mode.equals("admin")) adminChecks();
        } finally {
            for (KafkaConsumer<byte[], byte[]> c : fleet.values()) c.close(Duration.ofSeconds(5));
            producer.close(Duration.ofSeconds(5));
            admin.close(Duration.ofSeconds(5));
        }
        System.out.println("done\t" + failures);
    }

    static KafkaConsumer<byte[], byte[]> start(String name, String protocol, String assignor, String instance,
                                               Object subscription) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("group.protocol", protocol);
        c.put("client.id", name);
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("fetch.max.wait.ms", "100");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        if (protocol.equals("classic")) {
            c.put("session.timeout.ms", "6000");
            c.put("heartbeat.interval.ms", "300");
            c.put("partition.assignment.strategy", assignor.equals("range")
                    ? RangeAssignor.class.getName() : CooperativeStickyAssignor.class.getName());
        }
        if (instance != null) c.put("group.instance.id", instance);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c);
        callbacks.put(name, new ArrayList<>());
        ConsumerRebalanceListener listener = new Listener(name, consumer);
        if (subscription instanceof SubscriptionPattern) consumer.subscribe((SubscriptionPattern) subscription, listener);
        else consumer.subscribe(Collections.singletonList(topic), listener);
        fleet.put(name, consumer);
        return consumer;
    }

    static class Listener implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        Listener(String name, KafkaConsumer<byte[], byte[]> consumer) { this.name = name; this.consumer = consumer; }
        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
            for (TopicPartition tp : parts) {
                if (!tp.topic().equals(topic)) continue;
                String held = owner.get(tp.partition());
                if (held != null && !held.equals(name))
                    overlaps.add(tp.partition() + " to " + name + " while owned by " + held);
                owner.put(tp.partition(), name);
            }
            note("assigned", parts);
        }
        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            if (!parts.isEmpty()) commit(consumer, parts);
            release("revoked", parts);
        }
        public void onPartitionsLost(Collection<TopicPartition> parts) { release("lost", parts); }
        void release(String what, Collection<TopicPartition> parts) {
            for (TopicPartition tp : parts) owner.remove(tp.partition(), name);
            note(what, parts);
        }
        void note(String what, Collection<TopicPartition> parts) {
            if (!parts.isEmpty()) callbacks.get(name).add(System.currentTimeMillis() + " " + what + " " + parts);
        }
    }

    static void stop(String name) {
        fleet.remove(name).close(Duration.ofSeconds(10));
    }

    /** Polls every consumer (committing what each read) until done() or the timeout. */
    static boolean pollUntil(java.util.function.BooleanSupplier done, long millis) {
        long deadline = System.currentTimeMillis() + millis;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) return false;
            for (KafkaConsumer<byte[], byte[]> c : fleet.values()) {
                ConsumerRecords<byte[], byte[]> records = c.poll(Duration.ofMillis(50));
                if (pending.remove(c) && records.isEmpty()) commit(c, null);
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    nextOffsets.computeIfAbsent(c, k -> new HashMap<>())
                            .put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
                    readCount.merge(r.topic() + ":" + r.partition() + ":" + r.offset(), 1, Integer::sum);
                }
                if (!records.isEmpty()) commit(c, null);
            }
        }
        return true;
    }

    /** commitSync of what the consumer read (or of its positions in the revoked partitions); a commit
     * refused by the client during a classic rebalance is made at the next poll or in the revoke callback. */
    static void commit(KafkaConsumer<byte[], byte[]> c, Collection<TopicPartition> revoked) {
        try {
            if (revoked == null) c.commitSync(Duration.ofSeconds(10));
            else {
                // the offsets after the records read, not position(): inside the callback the consumer
                // cannot look up a position it has not fetched yet
                Map<TopicPartition, OffsetAndMetadata> at = new HashMap<>();
                for (TopicPartition tp : revoked) {
                    Long next = nextOffsets.computeIfAbsent(c, k -> new HashMap<>()).get(tp);
                    if (next != null) at.put(tp, new OffsetAndMetadata(next));
                }
                if (!at.isEmpty()) c.commitSync(at, Duration.ofSeconds(10));
            }
        } catch (org.apache.kafka.common.errors.RebalanceInProgressException e) {
            pending.add(c);
        }
    }

    static Set<Integer> held() {
        Set<Integer> all = new TreeSet<>();
        for (KafkaConsumer<byte[], byte[]> c : fleet.values())
            for (TopicPartition tp : c.assignment()) all.add(tp.partition());
        return all;
    }

    static boolean split() {
        int total = 0;
        for (KafkaConsumer<byte[], byte[]> c : fleet.values()) {
            if (c.assignment().isEmpty()) return false;
            total += c.assignment().size();
        }
        return total == 4 && held().size() == 4;
    }

    static void produceAndRead(String step) throws Exception {
        for (int p = 0; p < 4; p++)
            for (int i = 0; i < 3; i++) producer.send(new ProducerRecord<>(topic, p, step + "-" + p, "v")).get();
        produced += 12;
        boolean all = pollUntil(() -> readCount.size() >= produced && split(), 25_000);
        pollUntil(() -> false, 300);
        int twice = 0;
        for (int n : readCount.values()) if (n > 1) twice++;
        check(step + ": every record read", all && readCount.size() == produced,
                readCount.size() + " of " + produced + " read, held " + held());
        check(step + ": no record read twice", twice == 0, twice + " read more than once");
        check(step + ": no partition owned twice", overlaps.isEmpty(), overlaps);
    }

    static ConsumerGroupDescription describe() throws Exception {
        return admin.describeConsumerGroups(List.of(group)).all().get().get(group);
    }

    /** The group type and {client id: upgraded} of the members, as describeConsumerGroups shows them. */
    static String kinds() throws Exception {
        ConsumerGroupDescription d = describe();
        Map<String, Object> members = new TreeMap<>();
        for (MemberDescription m : d.members()) members.put(m.clientId(), m.upgraded().map(u -> (Object) u).orElse("-"));
        return d.type() + " " + d.groupState() + " " + members;
    }

    static void expectKinds(String step, String wanted) throws Exception {
        String[] last = {""};
        long deadline = System.currentTimeMillis() + 15_000;
        while (System.currentTimeMillis() < deadline && !(last[0] = kinds()).equals(wanted)) pollUntil(() -> false, 200);
        check(step + ": described as " + wanted, last[0].equals(wanted), last[0]);
    }

    static void upgrade(String assignor) throws Exception {
        start("a-classic", "classic", assignor, null, null);
        start("b-classic", "classic", assignor, null, null);
        produceAndRead("classic");
        expectKinds("classic", "Classic Stable {a-classic=-, b-classic=-}");
        stop("a-classic");
        start("a-consumer", "consumer", assignor, null, null);
        produceAndRead("mixed");
        expectKinds("mixed", "Consumer Stable {a-consumer=true, b-classic=false}");
        stop("b-classic");
        start("b-consumer", "consumer", assignor, null, null);
        produceAndRead("upgraded");
        expectKinds("upgraded", "Consumer Stable {a-consumer=true, b-consumer=true}");
        stop("a-consumer");
        start("a-classic2", "classic", assignor, null, null);
        produceAndRead("mixed-back");
        expectKinds("mixed-back", "Consumer Stable {a-classic2=false, b-consumer=true}");
        stop("b-consumer");
        start("b-classic2", "classic", assignor, null, null);
        produceAndRead("downgraded");
        expectKinds("downgraded", "Classic Stable {a-classic2=-, b-classic2=-}");
    }

    static void staticMembers() throws Exception {
        start("s0", "consumer", "", "static-0", null);
        start("s1", "consumer", "", "static-1", null);
        produceAndRead("static");
        Set<TopicPartition> before = new HashSet<>(fleet.get("s0").assignment());
        int epoch1 = fleet.get("s1").groupMetadata().generationId();
        int groupEpoch = describe().groupEpoch().orElse(-1);
        int s1Callbacks = callbacks.get("s1").size();
        stop("s0");
        start("s0", "consumer", "", "static-0", null);
        produceAndRead("static-restarted");
        check("static: the restarted member gets its partitions back",
                fleet.get("s0").assignment().equals(before), before + " then " + fleet.get("s0").assignment());
        check("static: the other member saw no rebalance", callbacks.get("s1").size() == s1Callbacks
                && fleet.get("s1").groupMetadata().generationId() == epoch1, callbacks.get("s1"));
        check("static: the group epoch did not move", describe().groupEpoch().orElse(-1) == groupEpoch,
                groupEpoch + " then " + describe().groupEpoch());
    }

    static void regex() throws Exception {
        String first = topic + "-a", later = topic + "-b";
        admin.createTopics(List.of(new NewTopic(first, 1, (short) 1), new NewTopic("other-" + topic, 1, (short) 1)))
                .all().get();
        KafkaConsumer<byte[], byte[]> c = start("rx", "consumer", "", null, new SubscriptionPattern(topic + "-.*"));
        boolean got = pollUntil(() -> !c.assignment().isEmpty(), 20_000);
        check("regex: the matching topic is assigned", got && c.assignment().equals(Set.of(new TopicPartition(first, 0))),
                c.assignment());
        admin.createTopics(List.of(new NewTopic(later, 2, (short) 1))).all().get();
        producer.send(new ProducerRecord<>(later, 1, "k", "v")).get();
        Set<TopicPartition> wanted = Set.of(new TopicPartition(first, 0), new TopicPartition(later, 0),
                new TopicPartition(later, 1));
        long t0 = System.currentTimeMillis();
        boolean picked = pollUntil(() -> c.assignment().equals(wanted) && readCount.containsKey(later + ":1:0"), 30_000);
        check("regex: a topic created later is picked up", picked,
                c.assignment() + " after " + (System.currentTimeMillis() - t0) + " ms, read " + readCount.keySet());
        ConsumerGroupDescription d = describe();
        check("regex: described with the assignment", d.members().size() == 1
                && d.members().iterator().next().assignment().topicPartitions().equals(wanted), d);
    }

    static String error(Runnable r) {
        try { r.run(); return "none"; } catch (RuntimeException e) {
            Throwable cause = e.getCause() instanceof ExecutionException ? e.getCause().getCause() : e.getCause();
            return cause == null ? e.toString() : cause.getClass().getSimpleName();
        }
    }

    static void get(org.apache.kafka.common.KafkaFuture<?> f) {
        try { f.get(); } catch (Exception e) { throw new RuntimeException(e); }
    }

    static void adminChecks() throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, 4, (short) 1))).all().get();
        start("adm", "consumer", "", null, null);
        produced = 0;
        produceAndRead("admin");
        String types = "";
        for (GroupListing g : admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get())
            types += g.groupId() + ":" + g.type().orElse(null) + ":" + g.groupState().orElse(null) + " ";
        check("admin: listGroups(forConsumerGroups)", types.equals(group + ":Consumer:Stable "), types);
        int classic = admin.listGroups(new ListGroupsOptions().withTypes(Set.of(GroupType.CLASSIC))).all().get().size();
        check("admin: listGroups(withTypes CLASSIC) leaves it out", classic == 0, classic);
        @SuppressWarnings("deprecation")
        Collection<ConsumerGroupListing> old = admin.listConsumerGroups(
                new ListConsumerGroupsOptions().withTypes(Set.of(GroupType.CONSUMER))).all().get();
        check("admin: listConsumerGroups(withTypes CONSUMER)", old.size() == 1, old);
        ConsumerGroupDescription d = describe();
        MemberDescription m = d.members().iterator().next();
        check("admin: describeConsumerGroups", d.type() == GroupType.CONSUMER && d.groupState() == GroupState.STABLE
                && d.members().size() == 1 && m.upgraded().equals(Optional.of(true)) && m.memberEpoch().orElse(0) > 0
                && m.assignment().topicPartitions().size() == 4 && !d.isSimpleConsumerGroup()
                && "uniform".equals(d.partitionAssignor()), d);
        nonEmptyAdmin(new TopicPartition(topic, 0));
        stop("adm");
        emptyAdmin(new TopicPartition(topic, 0));
    }

    /** Kafka's errors for a group with a member: NON_EMPTY_GROUP, UNKNOWN_MEMBER_ID, GROUP_SUBSCRIBED_TO_TOPIC. */
    static void nonEmptyAdmin(TopicPartition tp0) {
        check("admin: deleteConsumerGroups on a non-empty group",
                error(() -> get(admin.deleteConsumerGroups(List.of(group)).all())).equals("GroupNotEmptyException"), "");
        String alter = error(() -> get(admin.alterConsumerGroupOffsets(group, Map.of(tp0, new OffsetAndMetadata(1))).all()));
        check("admin: alterConsumerGroupOffsets on a non-empty group", alter.equals("UnknownMemberIdException"), alter);
        String del = error(() -> get(admin.deleteConsumerGroupOffsets(group, Set.of(tp0)).all()));
        check("admin: deleteConsumerGroupOffsets of a subscribed topic", del.equals("GroupSubscribedToTopicException"), del);
    }

    static void emptyAdmin(TopicPartition tp0) throws Exception {
        check("admin: empty after the member left", describe().groupState() == GroupState.EMPTY, describe());
        String alter = error(() -> get(admin.alterConsumerGroupOffsets(group, Map.of(tp0, new OffsetAndMetadata(1))).all()));
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        check("admin: alterConsumerGroupOffsets on the empty group", alter.equals("none") && offsets.get(tp0).offset() == 1,
                alter + " " + offsets);
        String del = error(() -> get(admin.deleteConsumerGroupOffsets(group, Set.of(tp0)).all()));
        offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        check("admin: deleteConsumerGroupOffsets on the empty group", del.equals("none") && !offsets.containsKey(tp0)
                && offsets.size() == 3, del + " " + offsets);
        String gone = error(() -> get(admin.deleteConsumerGroups(List.of(group)).all()));
        check("admin: deleteConsumerGroups on the empty group", gone.equals("none"), gone);
        String after = error(() -> { try { describe(); } catch (Exception e) { throw new RuntimeException(e); } });
        check("admin: describeConsumerGroups after the delete", after.equals("GroupIdNotFoundException"), after);
        int left = admin.listGroups().all().get().size();
        check("admin: listGroups after the delete", left == 0, left);
    }
}
