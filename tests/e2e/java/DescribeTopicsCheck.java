// The Java Admin's describeTopics by name (kafka-clients 4.3.0), which kafka-topics.sh --describe calls and
// which sends DescribeTopicPartitions (KIP-966) to a broker that offers it, paging with its cursor.
// Usage: java [-Dclient.props=<key=value lines>] DescribeTopicsCheck <bootstrap> [create <topic>:<partitions> ...]
//     describe <limit> <ops> <topic> ...
// client.props adds settings (e.g. a SASL login) to the Admin client.
// "create" makes the topics (replication factor 1); "describe" asks for the topics with
// DescribeTopicsOptions.partitionSizeLimitPerResponse(<limit>) (0: the option's default) and
// includeAuthorizedOperations(<ops>), then prints one line per topic, in name order:
//   <topic>\tinternal=<bool> id=<set|zero> ops=<sorted operations or null>
//       <partition>:<leader>/<replicas>/<isr>/<elr>/<lastKnownElr> ...
// or <topic>\t<exception class>.
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;

public class DescribeTopicsCheck {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.load(new java.io.StringReader(System.getProperty("client.props", "")));
        props.put("bootstrap.servers", args[0]);
        props.put("default.api.timeout.ms", "30000");
        props.put("request.timeout.ms", "15000");
        try (Admin admin = Admin.create(props)) {
            int i = 1;
            List<NewTopic> creates = new ArrayList<>();
            if (args[i].equals("create")) {
                for (i = i + 1; !args[i].equals("describe"); i++) {
                    String[] spec = args[i].split(":");
                    creates.add(new NewTopic(spec[0], Integer.parseInt(spec[1]), (short) 1));
                }
                admin.createTopics(creates).all().get(30, TimeUnit.SECONDS);
            }
            int limit = Integer.parseInt(args[i + 1]);
            DescribeTopicsOptions options = new DescribeTopicsOptions()
                .includeAuthorizedOperations(Boolean.parseBoolean(args[i + 2]));
            if (limit > 0) {
                options.partitionSizeLimitPerResponse(limit);
            }
            List<String> names = List.of(args).subList(i + 3, args.length);
            Map<String, KafkaFuture<TopicDescription>> futures = admin.describeTopics(names, options).topicNameValues();
            for (Map.Entry<String, KafkaFuture<TopicDescription>> e : new TreeMap<>(futures).entrySet()) {
                System.out.println(e.getKey() + "\t" + describe(e.getValue()));
            }
        }
    }

    static String describe(KafkaFuture<TopicDescription> future) throws Exception {
        TopicDescription d;
        try {
            d = future.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        }
        String ops = d.authorizedOperations() == null ? "null"
            : new TreeSet<>(d.authorizedOperations().stream().map(Enum::name).collect(Collectors.toList())).toString();
        StringBuilder out = new StringBuilder("internal=" + d.isInternal() + " id="
            + (d.topicId() == null || d.topicId().equals(Uuid.ZERO_UUID) ? "zero" : "set") + " ops=" + ops);
        for (TopicPartitionInfo p : d.partitions()) {
            out.append(' ').append(p.partition()).append(':').append(p.leader() == null ? "none" : p.leader().id())
                .append('/').append(ids(p.replicas())).append('/').append(ids(p.isr()))
                .append('/').append(ids(p.elr())).append('/').append(ids(p.lastKnownElr()));
        }
        return out.toString();
    }

    static String ids(List<Node> nodes) {
        return nodes.stream().map(n -> String.valueOf(n.id())).collect(Collectors.joining(",", "[", "]"));
    }
}
