// ACLs with the Java client (kafka-clients): what kafka-acls.sh does, and a producer and a consumer under them.
// Usage: java [-Dclient.props=<key=value lines>] AclCheck <bootstrap> <command>...
// client.props adds settings (e.g. a SASL login) to every client. Each command is one argument, its words
// separated by spaces, run in order; each prints one line per result, or "error <exception>: <message>":
//   "allow <principal> <operation> <TOPIC|GROUP|CLUSTER|TRANSACTIONAL_ID> <name> [PREFIXED]"  createAcls
//   "deny ..."  the same with DENY;
//   "list"  describeAcls for everything: one line per binding, sorted;
//   "remove <TOPIC|GROUP|...> <name>"  deleteAcls of every binding of that LITERAL resource: "removed N";
//   "produce <topic> <count>"  a default producer (idempotent) sends count records: "produced N";
//   "consume <topic> <group> <count>"  a subscribed consumer polls up to 20 s: "consumed N";
//   "topics"  listTopics: the names, sorted.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class AclCheck {
    static String bootstrap;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        for (int i = 1; i < args.length; i++) {
            try {
                run(args[i].split(" "));
            } catch (ExecutionException e) {
                report(e.getCause());
            } catch (Exception e) {
                report(e);
            }
        }
    }

    static void report(Throwable e) {
        System.out.println("error " + e.getClass().getSimpleName() + ": " + e.getMessage());
    }

    static Properties props() throws Exception {
        Properties p = new Properties();
        p.load(new java.io.StringReader(System.getProperty("client.props", "")));
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static void run(String[] w) throws Exception {
        switch (w[0]) {
            case "allow", "deny" -> change(w);
            case "list" -> list();
            case "remove" -> remove(w);
            case "produce" -> produce(w[1], Integer.parseInt(w[2]));
            case "consume" -> consume(w[1], w[2], Integer.parseInt(w[3]));
            case "topics" -> {
                try (Admin admin = Admin.create(props())) {
                    List<String> names = new ArrayList<>(admin.listTopics().names().get(30, TimeUnit.SECONDS));
                    Collections.sort(names);
                    System.out.println("topics " + names);
                }
            }
            default -> throw new IllegalArgumentException("unknown command " + w[0]);
        }
    }

    static void change(String[] w) throws Exception {
        PatternType pattern = w.length > 5 ? PatternType.valueOf(w[5]) : PatternType.LITERAL;
        AclPermissionType permission = w[0].equals("allow") ? AclPermissionType.ALLOW : AclPermissionType.DENY;
        AclBinding binding = new AclBinding(new ResourcePattern(ResourceType.valueOf(w[3]), w[4], pattern),
            new AccessControlEntry(w[1], "*", AclOperation.valueOf(w[2]), permission));
        try (Admin admin = Admin.create(props())) {
            admin.createAcls(List.of(binding)).all().get(30, TimeUnit.SECONDS);
            System.out.println("added");
        }
    }

    static void list() throws Exception {
        try (Admin admin = Admin.create(props())) {
            List<String> lines = new ArrayList<>();
            for (AclBinding b : admin.describeAcls(AclBindingFilter.ANY).values().get(30, TimeUnit.SECONDS)) {
                lines.add(b.toString());
            }
            Collections.sort(lines);
            lines.forEach(System.out::println);
            System.out.println("listed " + lines.size());
        }
    }

    static void remove(String[] w) throws Exception {
        AclBindingFilter filter = new AclBindingFilter(
            new ResourcePatternFilter(ResourceType.valueOf(w[1]), w[2], PatternType.LITERAL),
            AccessControlEntryFilter.ANY);
        try (Admin admin = Admin.create(props())) {
            System.out.println("removed " + admin.deleteAcls(List.of(filter)).all().get(30, TimeUnit.SECONDS).size());
        }
    }

    static void produce(String topic, int count) throws Exception {
        Properties p = props();
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "15000");
        p.put("delivery.timeout.ms", "15000");
        p.put("request.timeout.ms", "10000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get(20, TimeUnit.SECONDS);
            }
            System.out.println("produced " + count);
        }
    }

    static void consume(String topic, String group, int count) throws Exception {
        Properties p = props();
        p.put("group.id", group);
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            int got = 0;
            long deadline = System.currentTimeMillis() + 20_000;
            while (got < count && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                got += records.count();
            }
            consumer.commitSync(Duration.ofSeconds(10));
            System.out.println("consumed " + got);
        }
    }
}
