// A move of a partition between the log dirs of one broker (JBOD) as kafka-reassign-partitions.sh makes
// and verifies it, with the Java Admin (kafka-clients): alterReplicaLogDirs, then describeReplicaLogDirs
// until no future replica is left.
// Usage: java LogDirMove <bootstrap> <topic> <node> <target dir>
// Prints, tab-separated: "#before <current dir> <future dir>", "#alter <OK or exception class>",
// "#after <current dir> <future dir>" once the future dir is gone (at most 20 s), then
// "#elsewhere <OK or exception class>" for a path that is not one of log.dirs.
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.common.TopicPartitionReplica;

public class LogDirMove {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("default.api.timeout.ms", "20000");
        props.put("request.timeout.ms", "10000");
        TopicPartitionReplica replica = new TopicPartitionReplica(args[1], 0, Integer.parseInt(args[2]));
        try (Admin admin = Admin.create(props)) {
            print("#before", describe(admin, replica));
            System.out.println("#alter\t" + alter(admin, replica, args[3]));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            ReplicaLogDirInfo info = describe(admin, replica);
            while (info.getFutureReplicaLogDir() != null && System.nanoTime() < deadline) {
                Thread.sleep(50);
                info = describe(admin, replica);
            }
            print("#after", info);
            System.out.println("#elsewhere\t" + alter(admin, replica, "/not/a/log/dir"));
        }
    }

    static ReplicaLogDirInfo describe(Admin admin, TopicPartitionReplica replica) throws Exception {
        return admin.describeReplicaLogDirs(List.of(replica)).all().get(20, TimeUnit.SECONDS).get(replica);
    }

    static String alter(Admin admin, TopicPartitionReplica replica, String dir) throws Exception {
        try {
            admin.alterReplicaLogDirs(Map.of(replica, dir)).all().get(20, TimeUnit.SECONDS);
            return "OK";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        }
    }

    static void print(String tag, ReplicaLogDirInfo info) {
        System.out.println(tag + "\t" + info.getCurrentReplicaLogDir() + "\t" + info.getFutureReplicaLogDir());
    }
}
