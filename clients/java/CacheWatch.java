import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;

/**
 * Curator 5.4's CuratorCache and persistent watches, run by clients_test.go.
 *
 * <p>Usage: java CacheWatch CONNECT ROOT
 *
 * <p>ROOT must exist and be empty. The program prints one line per thing it
 * observed, paths relative to ROOT:
 *
 * <ol>
 *   <li>a CuratorCache on ROOT (which sets a persistent recursive watch with
 *       addWatch, ZooKeeper 3.6+): its initial load, then, for each write the
 *       program makes below ROOT, the cache event it waits for;
 *   <li>a persistent recursive watch of its own on ROOT/w
 *       ({@code watchers().add().withMode(PERSISTENT_RECURSIVE)}): the events
 *       of writes below it, the event of removing it
 *       ({@code watchers().remove()}), then that it gets nothing more and that
 *       removing it again fails with NoWatcher;
 *   <li>a standard exists watch ({@code checkExists().usingWatcher}) removed
 *       with {@code watchers().remove().ofType(Data)}.
 * </ol>
 *
 * <p>After each part it waits 300 ms and prints any event it did not expect as
 * "extra ...". It ends with "done"; any failure prints "error ..." and exits 1.
 */
public final class CacheWatch {
    private static String root;

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: java CacheWatch CONNECT ROOT");
            System.exit(2);
        }
        root = args[1];
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 10000, new RetryNTimes(3, 200));
        client.start();
        try {
            if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected to " + args[0] + " within 20s");
            }
            cache(client);
            persistent(client);
            standard(client);
            System.out.println("done");
        } catch (Exception e) {
            System.out.println("error " + e);
            System.exit(1);
        } finally {
            client.close();
        }
    }

    private static void cache(CuratorFramework client) throws Exception {
        BlockingQueue<String> q = new LinkedBlockingQueue<>();
        CuratorCache cache = CuratorCache.build(client, root);
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forCreates(n -> q.add("cache created " + show(n)))
                .forChanges((o, n) -> q.add("cache changed " + show(o) + " -> " + show(n)))
                .forDeletes(o -> q.add("cache deleted " + show(o)))
                .forInitialized(() -> q.add("cache initialized"))
                .build());
        cache.start();
        String line;
        do {
            line = take(q, "the cache's initial load");
            System.out.println(line);
        } while (!line.equals("cache initialized"));
        step(q, "create a", () -> client.create().forPath(root + "/a", bytes("1")));
        step(q, "set a", () -> client.setData().forPath(root + "/a", bytes("2")));
        step(q, "create a/b", () -> client.create().forPath(root + "/a/b", bytes("3")));
        step(q, "create a/b/c", () -> client.create().forPath(root + "/a/b/c", bytes("4")));
        step(q, "delete a/b/c", () -> client.delete().forPath(root + "/a/b/c"));
        step(q, "delete a/b", () -> client.delete().forPath(root + "/a/b"));
        step(q, "delete a", () -> client.delete().forPath(root + "/a"));
        extras(q);
        cache.close();
    }

    private static void persistent(CuratorFramework client) throws Exception {
        BlockingQueue<String> q = new LinkedBlockingQueue<>();
        Watcher w = event -> q.add("watch " + event.getType() + " " + rel(event.getPath()));
        client.watchers().add().withMode(AddWatchMode.PERSISTENT_RECURSIVE).usingWatcher(w).forPath(root + "/w");
        step(q, "create w", () -> client.create().forPath(root + "/w", bytes("w")));
        step(q, "create w/x", () -> client.create().forPath(root + "/w/x", bytes("x")));
        step(q, "set w/x", () -> client.setData().forPath(root + "/w/x", bytes("y")));
        step(q, "set w", () -> client.setData().forPath(root + "/w", bytes("v")));
        step(q, "delete w/x", () -> client.delete().forPath(root + "/w/x"));
        extras(q);
        step(q, "remove the watch", () -> client.watchers().remove(w).forPath(root + "/w"));
        client.create().forPath(root + "/w/z", bytes("z"));
        extras(q);
        try {
            client.watchers().remove(w).forPath(root + "/w");
            System.out.println("remove again: no error");
        } catch (KeeperException.NoWatcherException e) {
            System.out.println("remove again: " + e.code());
        }
    }

    private static void standard(CuratorFramework client) throws Exception {
        BlockingQueue<String> q = new LinkedBlockingQueue<>();
        Watcher w = event -> q.add("exists watch " + event.getType() + " " + rel(event.getPath()));
        client.checkExists().usingWatcher(w).forPath(root + "/e");
        step(q, "remove the exists watch", () -> client.watchers().remove(w).ofType(Watcher.WatcherType.Data).forPath(root + "/e"));
        client.create().forPath(root + "/e", bytes("e"));
        extras(q);
    }

    /** A write the program makes. */
    private interface Write {
        Object run() throws Exception;
    }

    /** Makes the write, then prints the event it waits for. */
    private static void step(BlockingQueue<String> q, String what, Write write) throws Exception {
        write.run();
        System.out.println(take(q, what));
    }

    private static String take(BlockingQueue<String> q, String what) throws InterruptedException {
        String line = q.poll(10, TimeUnit.SECONDS);
        if (line == null) {
            throw new IllegalStateException("no event within 10s after " + what);
        }
        return line;
    }

    private static void extras(BlockingQueue<String> q) throws InterruptedException {
        Thread.sleep(300);
        for (String line; (line = q.poll()) != null; ) {
            System.out.println("extra " + line);
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String show(ChildData d) {
        return rel(d.getPath()) + "=" + new String(d.getData() == null ? new byte[0] : d.getData(), StandardCharsets.UTF_8)
                + " version=" + d.getStat().getVersion();
    }

    private static String rel(String path) {
        if (path == null) {
            return "(none)";
        }
        if (path.equals(root)) {
            return "~";
        }
        return path.startsWith(root + "/") ? "~/" + path.substring(root.length() + 1) : path;
    }
}
