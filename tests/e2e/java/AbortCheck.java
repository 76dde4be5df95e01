// Ending a hanging transaction with the Kafka Java client (kafka-clients 4.3.0), as
// `kafka-transactions.sh abort --topic <topic> --partition 0 --start-offset <offset>` does.
// Usage: java AbortCheck <bootstrap> <topic> <start offset>
// The topic's partition 0 holds a transaction nobody will end (written by the test). describeProducers
// finds the producer whose open transaction starts at <start offset>: "#hanging" producer id, epoch,
// coordinator epoch, first offset; "#latest" read_committed and read_uncommitted offsets before.
// Then Admin.abortTransaction (WriteTxnMarkers to the partition leader): first with the producer's
// epoch - 1 ("#stale-epoch" and the exception's class), then with the spec the tool builds (the
// producer's epoch, its coordinator epoch or 0): "#abort ok"; then with coordinator epoch -1, below
// the one just written ("#stale-coordinator" and the exception's class). After: "#after" with the
// producer's epoch, coordinator epoch and open transaction; "#latest" again; and every record a
// read_committed consumer reads from the beginning ("rc" offset value), then its position.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class AbortCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        TopicPartition tp = new TopicPartition(args[1], 0);
        long startOffset = Long.parseLong(args[2]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("request.timeout.ms", "15000");
        props.put("default.api.timeout.ms", "30000");
        try (Admin admin = Admin.create(props)) {
            ProducerState hanging = null;
            for (ProducerState p : producers(admin, tp)) {
                if (p.currentTransactionStartOffset().orElse(-1) == startOffset) {
                    hanging = p;
                }
            }
            System.out.println("#hanging\t" + hanging.producerId() + "\t" + hanging.producerEpoch() + "\t"
                    + hanging.coordinatorEpoch() + "\t" + hanging.currentTransactionStartOffset());
            latest(admin, tp);
            short epoch = (short) hanging.producerEpoch();
            int coordinatorEpoch = hanging.coordinatorEpoch().orElse(0);
            System.out.println("#stale-epoch\t" + abort(admin, tp, hanging.producerId(), (short) (epoch - 1),
                    coordinatorEpoch));
            System.out.println("#abort\t" + abort(admin, tp, hanging.producerId(), epoch, coordinatorEpoch));
            System.out.println("#stale-coordinator\t" + abort(admin, tp, hanging.producerId(), epoch, -1));
            for (ProducerState p : producers(admin, tp)) {
                System.out.println("#after\t" + p.producerId() + "\t" + p.producerEpoch() + "\t"
                        + p.coordinatorEpoch() + "\t" + p.currentTransactionStartOffset());
            }
            latest(admin, tp);
        }
        readCommitted(bootstrap, tp);
    }

    static java.util.List<ProducerState> producers(Admin admin, TopicPartition tp) throws Exception {
        return admin.describeProducers(Collections.singleton(tp)).partitionResult(tp).get().activeProducers();
    }

    /** "ok", or the simple class name of the exception the abort failed with. */
    static String abort(Admin admin, TopicPartition tp, long producerId, short epoch, int coordinatorEpoch)
            throws InterruptedException {
        try {
            admin.abortTransaction(new AbortTransactionSpec(tp, producerId, epoch, coordinatorEpoch)).all().get();
            return "ok";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        }
    }

    static void latest(Admin admin, TopicPartition tp) throws Exception {
        StringBuilder line = new StringBuilder("#latest");
        for (IsolationLevel level : new IsolationLevel[] {IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED}) {
            var result = admin.listOffsets(Map.of(tp, OffsetSpec.latest()), new ListOffsetsOptions(level));
            line.append("\t").append(result.partitionResult(tp).get().offset());
        }
        System.out.println(line);
    }

    static void readCommitted(String bootstrap, TopicPartition tp) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("isolation.level", "read_committed");
        c.put("enable.auto.commit", "false");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(Collections.singleton(tp));
            consumer.seekToBeginning(Collections.singleton(tp));
            long end = consumer.endOffsets(Collections.singleton(tp)).get(tp);
            for (int i = 0; i < 100 && consumer.position(tp) < end; i++) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    System.out.println("rc\t" + r.offset() + "\t" + new String(r.value(), StandardCharsets.UTF_8));
                }
            }
            System.out.println("#position\t" + consumer.position(tp) + "\t" + end);
        }
    }
}
