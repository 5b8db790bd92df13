// HerdCurator is the herd experiment's Curator driver: N sessions in one JVM,
// each with Curator 5.4's InterProcessMutex on the path the harness names,
// looping acquire, release with zero hold time for the duration it names.
//
// Usage: java HerdCurator <connect string> <N> <session timeout ms>
//
// Protocol, one line each way (stdin commands, stdout answers):
//   (start)            -> "ready" once all N sessions are connected, or "error <text>" and exit 1
//   "run <path> <ms>"  -> "done <acquisitions> <releases> <errors> <handoffs>" where handoffs are the
//                         microseconds from each release to the next acquisition, comma-separated, or "-";
//                         preceded by "error <text>" for the first error, if any
//   "quit"             -> "bye", and exit 0
// Anything else gets "error unknown command: <line>".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class HerdCurator {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.out.println("error usage: HerdCurator <connect string> <N> <session timeout ms>");
            System.exit(2);
        }
        String connect = args[0];
        int n = Integer.parseInt(args[1]);
        int timeout = Integer.parseInt(args[2]);
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            CuratorFramework c = CuratorFrameworkFactory.builder().connectString(connect)
                    .sessionTimeoutMs(timeout).connectionTimeoutMs(30000)
                    .retryPolicy(new ExponentialBackoffRetry(10, 10)).build();
            c.start();
            clients.add(c);
        }
        for (CuratorFramework c : clients) {
            if (!c.blockUntilConnected(120, TimeUnit.SECONDS)) {
                System.out.println("error a session did not connect within 120 s");
                System.out.flush();
                System.exit(1);
            }
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split(" ");
            if (f.length == 1 && f[0].equals("quit")) {
                break;
            } else if (f.length == 3 && f[0].equals("run")) {
                run(clients, f[1], Long.parseLong(f[2]));
            } else {
                System.out.println("error unknown command: " + line);
            }
            System.out.flush();
        }
        for (CuratorFramework c : clients) {
            c.close();
        }
        System.out.println("bye");
        System.out.flush();
    }

    static void run(List<CuratorFramework> clients, String path, long millis) throws InterruptedException {
        final long deadline = System.nanoTime() + millis * 1_000_000L;
        final AtomicLong acquisitions = new AtomicLong(), releases = new AtomicLong(), errors = new AtomicLong();
        final AtomicReference<String> firstError = new AtomicReference<>();
        final Object mu = new Object();
        final long[] lastRelease = {0};
        final List<Long> handoffs = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (CuratorFramework c : clients) {
            Thread t = new Thread(() -> {
                InterProcessMutex m = new InterProcessMutex(c, path);
                try {
                    while (true) {
                        long left = deadline - System.nanoTime();
                        if (left <= 0 || !m.acquire(left, TimeUnit.NANOSECONDS)) {
                            return;
                        }
                        long now = System.nanoTime();
                        boolean inCell = now < deadline;
                        synchronized (mu) {
                            if (inCell && lastRelease[0] != 0) {
                                handoffs.add((now - lastRelease[0]) / 1000);
                            }
                            if (inCell) {
                                acquisitions.incrementAndGet();
                            }
                            lastRelease[0] = System.nanoTime();
                        }
                        m.release();
                        if (inCell) {
                            releases.incrementAndGet();
                        }
                    }
                } catch (Exception e) {
                    errors.incrementAndGet();
                    firstError.compareAndSet(null, e.toString().replace('\n', ' '));
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        if (firstError.get() != null) {
            System.out.println("error " + firstError.get());
        }
        StringBuilder b = new StringBuilder();
        for (Long h : handoffs) {
            if (b.length() > 0) {
                b.append(',');
            }
            b.append(h);
        }
        System.out.println("done " + acquisitions.get() + " " + releases.get() + " " + errors.get() + " " + (b.length() == 0 ? "-" : b));
    }
}
