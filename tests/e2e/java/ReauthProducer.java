// A producer that keeps sending for a while, to see a client re-authenticate (KIP-368).
// Usage: java [-Dclient.props=<key=value lines>] ReauthProducer <bootstrap> <topic> <seconds>
// Creates the topic, then sends one record every 250 ms and waits for each acknowledgement, for
// <seconds> counted from the first acknowledgement (a slow JVM start or topic creation must not eat
// into the time the test needs for its re-authentications); prints "#sent <n>". Any failure (a
// closed session included) ends it with an exception.
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Properties;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ReauthProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        long seconds = Integer.parseInt(args[2]), until = Long.MAX_VALUE;
        Properties p = ClientCheck.clientProps(bootstrap);  // compiled with ClientCheck.java
        try (AdminClient admin = AdminClient.create(p)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("delivery.timeout.ms", "10000");
        p.put("request.timeout.ms", "5000");
        int sent = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            while (System.currentTimeMillis() < until) {
                byte[] value = ("v" + sent).getBytes(StandardCharsets.UTF_8);
                producer.send(new ProducerRecord<>(topic, value)).get();
                if (sent++ == 0) {
                    until = System.currentTimeMillis() + 1000L * seconds;
                }
                Thread.sleep(250);
            }
        }
        System.out.println("#sent " + sent);
    }
}
