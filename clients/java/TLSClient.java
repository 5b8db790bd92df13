import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;

/**
 * ZooKeeper 3.8's Java client over TLS, run by standin_tls_java_test.go.
 *
 * <p>Usage: java -Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty
 * -Dzookeeper.ssl.keyStore.location=… (and the other zookeeper.ssl.* properties) TLSClient CONNECT PATH [DN …]
 *
 * <p>It waits up to 15 s for a session and prints "no session" without one. With one it creates PATH, reads it,
 * sets it, prints who the server says it is (whoAmI), creates PATH/x509-N with the ACL x509:DN (all permissions)
 * for each DN given and reads it back (its ACL and data, or the error), sets PATH's ACL to x509:DN of the
 * first DN and reads PATH again. Each step prints one line; a KeeperException
 * prints its code. Any other failure prints "error ..." and exits 1.
 */
public final class TLSClient {
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: java TLSClient CONNECT PATH [DN …]");
            System.exit(2);
        }
        String path = args[1];
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(args[0], 10000, event -> {
            if (event.getState() == KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        try {
            if (!connected.await(15, TimeUnit.SECONDS)) {
                System.out.println("no session");
                return;
            }
            System.out.println("session");
            zk.create(path, "over tls".getBytes(StandardCharsets.UTF_8), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            Stat st = new Stat();
            System.out.println("get " + new String(zk.getData(path, false, st), StandardCharsets.UTF_8) + " version " + st.getVersion());
            System.out.println("set version " + zk.setData(path, "again".getBytes(StandardCharsets.UTF_8), 0).getVersion());
            StringBuilder who = new StringBuilder("whoAmI");
            for (ClientInfo ci : zk.whoAmI()) {
                who.append(' ').append(ci.getAuthScheme()).append(':').append(ci.getUser());
            }
            System.out.println(who);
            for (int i = 2; i < args.length; i++) {
                String child = path + "/x509-" + (i - 1);
                List<ACL> acl = Collections.singletonList(new ACL(ZooDefs.Perms.ALL, new Id("x509", args[i])));
                try {
                    zk.create(child, "mine".getBytes(StandardCharsets.UTF_8), acl, CreateMode.PERSISTENT);
                } catch (KeeperException e) {
                    System.out.println("create x509:" + args[i] + ": " + e.code());
                    continue;
                }
                System.out.println("x509:" + args[i] + ": get " + read(zk, child) + ", getACL " + acl(zk, child));
            }
            if (args.length > 2) {
                zk.setACL(path, Collections.singletonList(new ACL(ZooDefs.Perms.ALL, new Id("x509", args[2]))), -1);
                System.out.println("after setACL x509:" + args[2] + ": get " + read(zk, path) + ", getACL " + acl(zk, path));
            }
        } catch (KeeperException e) {
            System.out.println("error " + e.code() + " " + e.getPath());
        } finally {
            zk.close();
        }
    }

    /** read returns PATH's data, or the error code reading it. */
    private static String read(ZooKeeper zk, String path) throws InterruptedException {
        try {
            return new String(zk.getData(path, false, null), StandardCharsets.UTF_8);
        } catch (KeeperException e) {
            return e.code().toString();
        }
    }

    /** acl returns PATH's ACL as scheme:id:perms entries, or the error code reading it. */
    private static String acl(ZooKeeper zk, String path) throws InterruptedException {
        try {
            StringBuilder b = new StringBuilder();
            for (ACL a : zk.getACL(path, null)) {
                b.append(b.length() == 0 ? "" : " ").append(a.getId().getScheme()).append(':').append(a.getId().getId()).append(':').append(a.getPerms());
            }
            return b.toString();
        } catch (KeeperException e) {
            return e.code().toString();
        }
    }
}
