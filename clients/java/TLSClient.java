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
 * <p>It waits up to 15 s for a session and prints "no session" without one. With -Dtlsclient.readonly=true it
 * allows a read-only session (canBeReadOnly) and prints the session's state, whoAmI, what it reads of / and
 * whether PATH exists, then what creating PATH gets, and stops. Otherwise, with a session, it creates PATH, reads it,
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
        boolean readOnly = Boolean.getBoolean("tlsclient.readonly");
        CountDownLatch connected = new CountDownLatch(1);
        KeeperState[] state = new KeeperState[1];
        ZooKeeper zk = new ZooKeeper(args[0], 10000, event -> {
            if (event.getState() == KeeperState.SyncConnected || event.getState() == KeeperState.ConnectedReadOnly) {
                state[0] = event.getState();
                connected.countDown();
            }
        }, readOnly);
        try {
            if (!connected.await(15, TimeUnit.SECONDS)) {
                System.out.println("no session");
                return;
            }
            if (readOnly) {
                System.out.println("session " + state[0] + ", whoAmI " + whoAmI(zk) + ", get / " + read(zk, "/").length()
                    + " bytes, exists " + path + " " + (zk.exists(path, false) != null));
                try {
                    zk.create(path, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                    System.out.println("create " + path + ": OK");
                } catch (KeeperException e) {
                    System.out.println("create " + path + ": " + e.code());
                }
                return;
            }
            System.out.println("session");
            zk.create(path, "over tls".getBytes(StandardCharsets.UTF_8), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            Stat st = new Stat();
            System.out.println("get " + new String(zk.getData(path, false, st), StandardCharsets.UTF_8) + " version " + st.getVersion());
            System.out.println("set version " + zk.setData(path, "again".getBytes(StandardCharsets.UTF_8), 0).getVersion());
            System.out.println("whoAmI " + whoAmI(zk));
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

    /** whoAmI returns the server's whoAmI answer as scheme:user words. */
    private static String whoAmI(ZooKeeper zk) throws InterruptedException, KeeperException {
        StringBuilder who = new StringBuilder();
        for (ClientInfo ci : zk.whoAmI()) {
            who.append(who.length() == 0 ? "" : " ").append(ci.getAuthScheme()).append(':').append(ci.getUser());
        }
        return who.toString();
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
