import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.CuratorEventType;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.data.ClientInfo;

/**
 * A SASL DIGEST-MD5 login of Curator 5.4 (ZooKeeper 3.8's client), run by sasl_test.go.
 *
 * <p>Usage: java -Djava.security.auth.login.config=JAAS SaslLogin CONNECT PATH
 *
 * <p>The JAAS file's Client section names the user and password the ZooKeeper
 * client logs in with. The program waits for the session's SASL outcome
 * (SaslAuthenticated or AuthFailed) and prints it; when authenticated, it
 * prints who the server says it is (whoAmI) and reads PATH, a node only that
 * user may read. Any failure prints "error ..." and exits 1.
 */
public final class SaslLogin {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: java SaslLogin CONNECT PATH");
            System.exit(2);
        }
        BlockingQueue<KeeperState> states = new LinkedBlockingQueue<>();
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 10000, new RetryNTimes(0, 200));
        client.getCuratorListenable().addListener((c, event) -> {
            if (event.getType() == CuratorEventType.WATCHED && event.getWatchedEvent().getPath() == null) {
                states.add(event.getWatchedEvent().getState());
            }
        });
        client.start();
        try {
            KeeperState outcome = null;
            while (outcome == null) {
                KeeperState s = states.poll(20, TimeUnit.SECONDS);
                if (s == null) {
                    throw new IllegalStateException("no SASL outcome within 20s");
                }
                if (s == KeeperState.SaslAuthenticated || s == KeeperState.AuthFailed) {
                    outcome = s;
                }
            }
            System.out.println("sasl " + outcome);
            if (outcome == KeeperState.SaslAuthenticated) {
                StringBuilder who = new StringBuilder("whoAmI");
                for (ClientInfo ci : client.getZookeeperClient().getZooKeeper().whoAmI()) {
                    who.append(' ').append(ci.getAuthScheme()).append(':').append(ci.getUser());
                }
                System.out.println(who);
                byte[] data = client.getData().forPath(args[1]);
                System.out.println("read " + new String(data, StandardCharsets.UTF_8));
            }
        } catch (Exception e) {
            System.out.println("error " + e);
            System.exit(1);
        } finally {
            client.close();
        }
    }
}
