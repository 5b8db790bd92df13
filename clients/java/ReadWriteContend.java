import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

/**
 * One contender for Curator's InterProcessReadWriteLock, run by clients_test.go.
 *
 * <p>Usage: java ReadWriteContend CONNECT ID read|write ITERATIONS ROOT READERS
 *
 * <p>Each iteration takes the read or the write lock at ROOT/rw (its lock
 * node's data is ID, which is how it finds its node). A reader creates the
 * ephemeral ROOT/inside/ID; ROOT/holder must not exist (a writer inside);
 * in its first iteration it lists ROOT/inside until it sees all READERS
 * readers in, or ROOT/seen exists, which the first reader to see them all
 * creates. No reader leaves its first iteration before that, so once all
 * are in they stay until one sees it: no timing decides it (and the test
 * starts the writers only once every reader's first lock node exists, so
 * no writer stands between them). It prints
 *
 * <pre>read id=ID iter=I node=LOCKNODE readers=M</pre>
 *
 * with M the most readers it saw inside, and deletes ROOT/inside/ID. A
 * writer checks ROOT/inside is empty and runs LockContend's critical
 * section (its "acquired" line). Any failure prints "error ..." and exits 1.
 */
public final class ReadWriteContend {
    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: java ReadWriteContend CONNECT ID read|write ITERATIONS ROOT READERS");
            System.exit(2);
        }
        String id = args[1];
        boolean reader = args[2].equals("read");
        int iterations = Integer.parseInt(args[3]);
        String root = args[4];
        int readers = Integer.parseInt(args[5]);
        CuratorFramework client = LockContend.connect(args[0]);
        try {
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, root + "/rw", id.getBytes(StandardCharsets.UTF_8));
            InterProcessMutex lock = reader ? rw.readLock() : rw.writeLock();
            for (int i = 0; i < iterations; i++) {
                if (!lock.acquire(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("iteration " + i + ": lock not acquired within 60s");
                }
                try {
                    String node = ourNode(client, root + "/rw", id);
                    if (!reader) {
                        List<String> inside = client.getChildren().forPath(root + "/inside");
                        if (!inside.isEmpty()) {
                            throw new IllegalStateException("iteration " + i + ": writer with readers " + inside + " inside");
                        }
                        LockContend.critical(client, id, i, node, root);
                        continue;
                    }
                    client.create().withMode(CreateMode.EPHEMERAL).forPath(root + "/inside/" + id);
                    if (client.checkExists().forPath(root + "/holder") != null) {
                        throw new IllegalStateException("iteration " + i + ": reader with a writer inside");
                    }
                    int most = client.getChildren().forPath(root + "/inside").size();
                    while (i == 0 && most < readers && client.checkExists().forPath(root + "/seen") == null) {
                        Thread.sleep(20);
                        most = Math.max(most, client.getChildren().forPath(root + "/inside").size());
                    }
                    if (most == readers) {
                        try {
                            client.create().forPath(root + "/seen");
                        } catch (KeeperException.NodeExistsException e) {
                            // another reader saw them all first
                        }
                    }
                    System.out.println("read id=" + id + " iter=" + i + " node=" + node + " readers=" + most);
                    client.delete().forPath(root + "/inside/" + id);
                } finally {
                    lock.release();
                }
            }
        } catch (KeeperException e) {
            System.out.println("error " + e);
            System.exit(1);
        } finally {
            client.close();
        }
    }

    /** Returns the name of the child of dir whose data is id: the contender's lock node. */
    private static String ourNode(CuratorFramework client, String dir, String id) throws Exception {
        byte[] want = id.getBytes(StandardCharsets.UTF_8);
        for (String child : client.getChildren().forPath(dir)) {
            try {
                if (Arrays.equals(client.getData().forPath(dir + "/" + child), want)) {
                    return child;
                }
            } catch (KeeperException.NoNodeException e) {
                // another contender's node, gone since the listing
            }
        }
        throw new IllegalStateException("no lock node with data " + id + " in " + dir);
    }
}
