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
        CuratorFramework client = connect(connect);
        try {
            InterProcessMutex mutex = new InterProcessMutex(client, root + "/lock");
            for (int i = 0; i < iterations; i++) {
                if (!mutex.acquire(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("iteration " + i + ": lock not acquired within 30s");
                }
                try {
                    List<String> participants = (List<String>) mutex.getParticipantNodes();
                    critical(client, id, i, participants.isEmpty() ? "none" : participants.get(0), root);
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

    /** Starts a Curator client on connect and waits (20s at most) for its session. */
    static CuratorFramework connect(String connect) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.newClient(connect, 10000, 10000, new RetryNTimes(3, 200));
        client.start();
        if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("not connected to " + connect + " within 20s");
        }
        return client;
    }

    /**
     * The critical section, also LeaderElect's: ROOT/holder must not exist,
     * ROOT/counter goes up by one with a versioned setData; prints the
     * acquired line for iteration iter and the lock (or latch) node at path.
     */
    static void critical(CuratorFramework client, String id, int iter, String path, String root) throws Exception {
        String node = path.substring(path.lastIndexOf('/') + 1);
        client.create().withMode(CreateMode.EPHEMERAL).forPath(root + "/holder", ("holder=" + id).getBytes(StandardCharsets.UTF_8));
        Stat stat = new Stat();
        byte[] data = client.getData().storingStatIn(stat).forPath(root + "/counter");
        int counter = Integer.parseInt(new String(data, StandardCharsets.UTF_8));
        client.setData().withVersion(stat.getVersion()).forPath(root + "/counter", Integer.toString(counter + 1).getBytes(StandardCharsets.UTF_8));
        System.out.println("acquired id=" + id + " iter=" + iter + " node=" + node + " counter=" + counter);
        client.delete().forPath(root + "/holder");
    }
}
