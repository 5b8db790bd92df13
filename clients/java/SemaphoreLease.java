import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

/**
 * One contender for Curator's InterProcessSemaphoreV2, run by clients_test.go.
 *
 * <p>Usage: java SemaphoreLease CONNECT ID ITERATIONS ROOT LEASES CONTENDERS
 *
 * <p>Each iteration takes one of the LEASES leases of the semaphore at
 * ROOT/sem and, holding it, creates the ephemeral ROOT/holders/ID. It then
 * lists ROOT/holders until it sees LEASES holders, or until every contender
 * that has not finished (has no ROOT/done/ID) holds a lease: waiting longer
 * could wait for no one, and waiting this long makes the first holders
 * meet, so LEASES holders are seen at least once whatever the timing. More
 * than LEASES holders is an error. It prints one line:
 *
 * <pre>leased id=ID iter=I node=LEASENODE most=M</pre>
 *
 * where LEASENODE is its lease node and M the most holders it saw, deletes
 * ROOT/holders/ID and returns the lease. After the last iteration it creates
 * ROOT/done/ID. Any failure prints "error ..." and exits 1.
 */
public final class SemaphoreLease {
    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: java SemaphoreLease CONNECT ID ITERATIONS ROOT LEASES CONTENDERS");
            System.exit(2);
        }
        String id = args[1];
        int iterations = Integer.parseInt(args[2]);
        String root = args[3];
        int leases = Integer.parseInt(args[4]);
        int contenders = Integer.parseInt(args[5]);
        CuratorFramework client = LockContend.connect(args[0]);
        try {
            InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, root + "/sem", leases);
            for (int i = 0; i < iterations; i++) {
                Lease lease = sem.acquire(60, TimeUnit.SECONDS);
                if (lease == null) {
                    throw new IllegalStateException("iteration " + i + ": no lease within 60s");
                }
                try {
                    client.create().withMode(CreateMode.EPHEMERAL).forPath(root + "/holders/" + id, id.getBytes(StandardCharsets.UTF_8));
                    int most = 0;
                    while (true) {
                        List<String> holders = client.getChildren().forPath(root + "/holders");
                        List<String> done = client.getChildren().forPath(root + "/done");
                        most = Math.max(most, holders.size());
                        if (holders.size() > leases) {
                            throw new IllegalStateException("iteration " + i + ": holders " + holders + " exceed " + leases + " leases");
                        }
                        if (holders.size() >= leases || contenders - done.size() == holders.size()) {
                            break;
                        }
                        Thread.sleep(20);
                    }
                    String node = lease.getNodeName();
                    System.out.println("leased id=" + id + " iter=" + i + " node=" + node.substring(node.lastIndexOf('/') + 1) + " most=" + most);
                    client.delete().forPath(root + "/holders/" + id);
                } finally {
                    sem.returnLease(lease);
                }
            }
            client.create().forPath(root + "/done/" + id);
        } catch (KeeperException e) {
            System.out.println("error " + e);
            System.exit(1);
        } finally {
            client.close();
        }
    }
}
