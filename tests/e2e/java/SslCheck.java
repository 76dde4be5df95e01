// The Kafka Java client (kafka-clients) over TLS: an SSL or SASL_SSL listener.
// Usage: java SslCheck <client.properties> <bootstrap> <topic> <mode> <count>
// <client.properties> holds the security settings (security.protocol, ssl.truststore.*,
// ssl.keystore.*, sasl.*) and is added to every client. <mode> is
//   "round-trip": describeCluster prints "#node", id, host, port per node; the topic is created;
//       <count> records with keys, values, headers and explicit timestamps are produced with the
//       producer's defaults (idempotence on); they are read back with assign() + seekToBeginning()
//       and printed one tab-separated line each: offset, key, value, headers (k=v;...), timestamp.
//       The last record's value is large (600,000 bytes) and is printed as "<length>:<crc32 hex>".
//   "refused": the clients are expected to fail; "#refused", the client (admin, producer), the
//       exception's class name and message, or "#connected" and the client if it did not fail.
// Every wait is bounded (request, API and blocking timeouts, and the polling deadline).
import java.io.FileReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class SslCheck {
    static final long BASE_TS = 1_780_000_000_000L;
    static final int BIG = 600_000;

    public static void main(String[] args) throws Exception {
        Properties common = new Properties();
        try (Reader in = new FileReader(args[0], StandardCharsets.UTF_8)) {
            common.load(in);
        }
        common.put("bootstrap.servers", args[1]);
        common.put("request.timeout.ms", "10000");
        common.put("default.api.timeout.ms", "20000");
        String topic = args[2], mode = args[3];
        int count = Integer.parseInt(args[4]);
        if (mode.equals("round-trip")) {
            createTopic(common, topic);
            produce(common, topic, count);
            ClientCheck.printRecords(common, topic, count, SslCheck::shown);  // compiled with ClientCheck.java
        } else if (mode.equals("refused")) {
            refusedAdmin(common);
            refusedProducer(common, topic);
        } else {
            throw new IllegalArgumentException(mode);
        }
    }

    static void createTopic(Properties common, String topic) throws Exception {
        try (Admin admin = Admin.create(common)) {
            for (Node node : admin.describeCluster().nodes().get(20, TimeUnit.SECONDS))
                System.out.println("#node\t" + node.id() + "\t" + node.host() + "\t" + node.port());
            NewTopic newTopic = new NewTopic(topic, 1, (short) 1);
            admin.createTopics(Collections.singleton(newTopic)).all().get(20, TimeUnit.SECONDS);
        }
    }

    static void produce(Properties common, String topic, int count) throws Exception {
        Properties p = new Properties();
        p.putAll(common);
        p.put("max.block.ms", "20000");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < count; i++) {
                byte[] value = i == count - 1 ? big() : bytes("value-" + i);
                ProducerRecord<byte[], byte[]> r =
                        new ProducerRecord<>(topic, 0, BASE_TS + i, bytes("key-" + i), value);
                r.headers().add("n", bytes(Integer.toString(i))).add("tls", bytes("yes"));
                sent.add(producer.send(r));
            }
            producer.flush();
            for (Future<RecordMetadata> f : sent) f.get(30, TimeUnit.SECONDS);
        }
    }

    static void refusedAdmin(Properties common) throws Exception {
        Properties a = new Properties();
        a.putAll(common);
        a.put("default.api.timeout.ms", "10000");  // fails the call well before the get() below gives up
        try (Admin admin = Admin.create(a)) {
            admin.describeCluster().nodes().get(30, TimeUnit.SECONDS);
            System.out.println("#connected\tadmin");
        } catch (ExecutionException e) {
            report("admin", e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            report("admin", e);
        }
    }

    static void refusedProducer(Properties common, String topic) throws Exception {
        Properties p = new Properties();
        p.putAll(common);
        p.put("max.block.ms", "10000");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(topic, bytes("never"))).get(30, TimeUnit.SECONDS);
            System.out.println("#connected\tproducer");
        } catch (ExecutionException e) {
            report("producer", e.getCause());
        } catch (org.apache.kafka.common.KafkaException | java.util.concurrent.TimeoutException e) {
            report("producer", e);
        }
    }

    static void report(String client, Throwable error) {
        String message = String.valueOf(error.getMessage()).replace('\n', ' ').replace('\t', ' ');
        System.out.println("#refused\t" + client + "\t" + error.getClass().getSimpleName() + "\t" + message);
    }

    static byte[] big() {
        byte[] value = new byte[BIG];
        for (int i = 0; i < BIG; i++) value[i] = (byte) (i % 251);
        return value;
    }

    static String shown(byte[] value) {
        if (value == null || value.length < 1000) return str(value);
        CRC32 crc = new CRC32();
        crc.update(value);
        return value.length + ":" + String.format("%08x", crc.getValue());
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String str(byte[] b) {
        return b == null ? "<null>" : new String(b, StandardCharsets.UTF_8);
    }
}
