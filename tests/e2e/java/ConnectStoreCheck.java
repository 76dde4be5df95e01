import java.util.Map;
import java.util.HashMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.util.Callback;
import org.apache.kafka.connect.util.KafkaBasedLog;
import org.apache.kafka.connect.util.TopicAdmin;

/**
 * Kafka Connect's storage of offsets, configs and status (KafkaBasedLog from connect-runtime 4.3.0)
 * on a compacted topic it creates itself: writes {@code count} values over ten keys, every 97th a
 * delete (null value), reads the topic back to its end and prints the state it rebuilt, sorted:
 * {@code STATE {key=value, ...}}. With a count of 0 it only reads, as a restarted worker does. A write
 * the broker refuses fails the run (exit 1), as it fails a worker's offset flush.
 *
 * Usage: ConnectStoreCheck BOOTSTRAP TOPIC COUNT
 */
public class ConnectStoreCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int count = Integer.parseInt(args[2]);
        Map<String, Object> producer = new HashMap<>(Map.of("bootstrap.servers", bootstrap,
                "key.serializer", StringSerializer.class.getName(), "value.serializer", StringSerializer.class.getName()));
        Map<String, Object> consumer = new HashMap<>(Map.of("bootstrap.servers", bootstrap,
                "key.deserializer", StringDeserializer.class.getName(),
                "value.deserializer", StringDeserializer.class.getName()));
        NewTopic spec = TopicAdmin.defineTopic(topic).compacted().partitions(1).replicationFactor((short) 1).build();
        Map<String, String> state = new ConcurrentHashMap<>();
        Callback<ConsumerRecord<String, String>> apply = (error, record) -> {
            if (record.value() == null) state.remove(record.key()); else state.put(record.key(), record.value());
        };
        try (TopicAdmin admin = new TopicAdmin(Map.of("bootstrap.servers", bootstrap))) {
            KafkaBasedLog<String, String> log = new KafkaBasedLog<>(topic, producer, consumer, () -> admin, apply,
                    Time.SYSTEM, a -> a.createTopicsWithRetry(spec, 30_000, 500, Time.SYSTEM));
            AtomicReference<Exception> failed = new AtomicReference<>();
            log.start();
            for (int i = 0; i < count; i++)
                log.send("key-" + (i % 10), i % 97 == 96 ? null : "value-" + i,
                        (metadata, error) -> failed.compareAndSet(null, error));
            log.flush();
            if (failed.get() != null) {
                System.out.println("FAILED " + failed.get());
                System.exit(1);
            }
            log.readToEnd().get(30, TimeUnit.SECONDS);
            System.out.println("STATE " + new TreeMap<>(state));
            log.stop();
        }
    }
}
