import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * One contender for Curator's InterProcessMutex, run by clients_test.go.
 *
 * <p>Usage: java LockContend CONNECT ID ITERATIONS ROOT
 *
 * <p>Each iteration acquires the mutex at ROOT/lock, then inside the critical
 * section creates the ephemeral ROOT/holder (it must not exist: someone else
 * holding the lock would have created it), increments ROOT/counter with a
 * versioned setData (a concurrent holder would make the version stale), and
 * prints one line:
 *
 * <pre>acquired id=ID iter=I node=LOCKNODE counter=C</pre>
 *
 * where LOCKNODE is the holder's lock node (the first participant) and C the
 * counter before the increment. It then deletes ROOT/holder and releases the
 * mutex. Any failure prints "error ..." and exits 1.
 */
public final class LockContend {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: java LockContend CONNECT ID ITERATIONS ROOT");
            System.exit(2);
        }
        String connect = args[0];
        String id = args[1];
        int iterations = Integer.parseInt(args[2]);
        String root = args[3];
        CuratorFramework client = CuratorFrameworkFactory.newClient(connect, 10000, 10000, new RetryNTimes(3, 200));
        client.start();
        try {
            if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected to " + connect + " within 20s");
            }
            InterProcessMutex mutex = new InterProcessMutex(client, root + "/lock");
            for (int i = 0; i < iterations; i++) {
                if (!mutex.acquire(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("iteration " + i + ": lock not acquired within 30s");
                }
                try {
                    List<String> participants = (List<String>) mutex.getParticipantNodes();
                    String node = participants.isEmpty() ? "none" : lastElement(participants.get(0));
                    client.create().withMode(CreateMode.EPHEMERAL).forPath(root + "/holder", ("holder=" + id).getBytes(StandardCharsets.UTF_8));
                    Stat stat = new Stat();
                    byte[] data = client.getData().storingStatIn(stat).forPath(root + "/counter");
                    int counter = Integer.parseInt(new String(data, StandardCharsets.UTF_8));
                    client.setData().withVersion(stat.getVersion()).forPath(root + "/counter", Integer.toString(counter + 1).getBytes(StandardCharsets.UTF_8));
                    System.out.println("acquired id=" + id + " iter=" + i + " node=" + node + " counter=" + counter);
                    client.delete().forPath(root + "/holder");
                } finally {
                    mutex.release();
                }
            }
        } catch (KeeperException e) {
            System.out.println("error " + e);
            System.exit(1);
        } finally {
            client.close();
        }
    }

    private static String lastElement(String path) {
        return path.substring(path.lastIndexOf('/') + 1);
    }
}
