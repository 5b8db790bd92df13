import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.zookeeper.KeeperException;

/**
 * One candidate for Curator's LeaderLatch, run by clients_test.go.
 *
 * <p>Usage: java LeaderElect CONNECT ID ROOT
 *
 * <p>It joins the election at ROOT/lock once and waits to lead. As leader it
 * runs LockContend's critical section: it creates the ephemeral ROOT/holder (it must not exist: another leader would
 * have created it), increments ROOT/counter with a versioned setData (a
 * concurrent leader would make the version stale), and prints one line, in
 * the format of LockContend:
 *
 * <pre>acquired id=ID iter=0 node=LATCHNODE counter=C</pre>
 *
 * where LATCHNODE is its latch node and C the counter before the increment.
 * It then deletes ROOT/holder and closes the latch, which hands leadership
 * to the next candidate. Any failure prints "error ..." and exits 1.
 */
public final class LeaderElect {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: java LeaderElect CONNECT ID ROOT");
            System.exit(2);
        }
        String connect = args[0];
        String id = args[1];
        String root = args[2];
        CuratorFramework client = LockContend.connect(connect);
        try {
            LeaderLatch latch = new LeaderLatch(client, root + "/lock", id);
            latch.start();
            try {
                if (!latch.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("not leader within 60s");
                }
                LockContend.critical(client, id, 0, latch.getOurPath(), root);
            } finally {
                latch.close();
            }
        } catch (KeeperException e) {
            System.out.println("error " + e);
            System.exit(1);
        } finally {
            client.close();
        }
    }
}
