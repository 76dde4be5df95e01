import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

/** Locks a file as Kafka's FileLock does (FileChannel.tryLock): prints "held" and keeps it until stdin closes, or
 *  prints "busy" when another process holds it. */
public class DirLockCheck {
    public static void main(String[] args) throws Exception {
        FileChannel channel = FileChannel.open(Paths.get(args[0]), StandardOpenOption.CREATE,
                StandardOpenOption.READ, StandardOpenOption.WRITE);
        FileLock lock = channel.tryLock();
        System.out.println(lock == null ? "busy" : "held");
        System.out.flush();
        if (lock != null) {
            while (System.in.read() >= 0) { }
            lock.release();
        }
        channel.close();
    }
}
