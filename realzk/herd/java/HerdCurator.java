// HerdCurator is the herd experiment's Curator driver: N sessions in one JVM,
// each with Curator 5.4's counterpart of the primitive the harness names, on
// the path it names, looping acquire, release with zero hold time for the
// duration it names.
//
// Usage: java HerdCurator <connect string> <N> <session timeout ms>
//
// Protocol, one line each way (stdin commands, stdout answers); herd_kazoo.py
// speaks the same:
//   (start)                                  -> "ready" once all N sessions are connected, or "error <text>" and exit 1
//   "run <primitive> <path> <ms> <param>"    -> "done <acquisitions> <releases> <write acquisitions> <write releases> <errors> <handoffs>"
//                                               where handoffs are the microseconds from each release to the next
//                                               acquisition, comma-separated, or "-" (measured for the mutex only);
//                                               preceded by "error <text>" for the first error, if any
//   "quit"                                   -> "bye", and exit 0
// Anything else gets "error unknown command: <line>".
//
// The primitives, and what an acquisition is:
//   mutex      InterProcessMutex: a hold
//   rwlock     InterProcessReadWriteLock: session i takes the write lock when i % param == 0, else the read lock
//   semaphore  InterProcessSemaphoreV2 with param leases: a lease
//   election   LeaderLatch: a leadership; the leader closes its latch (resigns) and starts a new one
// Acquisitions count those made before the deadline, releases the releases of those.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
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
            } else if (f.length == 5 && f[0].equals("run") && known(f[1])) {
                run(clients, f[1], f[2], Long.parseLong(f[3]), Integer.parseInt(f[4]));
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

    static boolean known(String primitive) {
        return primitive.equals("mutex") || primitive.equals("rwlock") || primitive.equals("semaphore") || primitive.equals("election");
    }

    /** One session's side of a primitive: acquire within a time, release what it acquired. */
    interface Contender {
        boolean acquire(long nanos) throws Exception;

        void release() throws Exception;
    }

    /** A mutex, or either side of the read-write lock. */
    static Contender mutex(InterProcessMutex m) {
        return new Contender() {
            public boolean acquire(long nanos) throws Exception {
                return m.acquire(nanos, TimeUnit.NANOSECONDS);
            }

            public void release() throws Exception {
                m.release();
            }
        };
    }

    static Contender semaphore(CuratorFramework c, String path, int leases) {
        InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(c, path, leases);
        Lease[] held = {null};
        return new Contender() {
            public boolean acquire(long nanos) throws Exception {
                held[0] = sem.acquire(nanos, TimeUnit.NANOSECONDS);
                return held[0] != null;
            }

            public void release() throws Exception {
                sem.returnLease(held[0]);
                held[0] = null;
            }
        };
    }

    /** A candidate: a LeaderLatch per candidacy, since a closed latch cannot start again. */
    static Contender election(CuratorFramework c, String path, String id) {
        LeaderLatch[] latch = {null};
        return new Contender() {
            public boolean acquire(long nanos) throws Exception {
                latch[0] = new LeaderLatch(c, path, id);
                latch[0].start();
                if (latch[0].await(nanos, TimeUnit.NANOSECONDS)) {
                    return true;
                }
                latch[0].close();
                return false;
            }

            public void release() throws Exception {
                latch[0].close();
            }
        };
    }

    static void run(List<CuratorFramework> clients, String primitive, String path, long millis, int param) throws InterruptedException {
        final long deadline = System.nanoTime() + millis * 1_000_000L;
        final AtomicLong acquisitions = new AtomicLong(), releases = new AtomicLong(), errors = new AtomicLong();
        final AtomicLong writeAcquisitions = new AtomicLong(), writeReleases = new AtomicLong();
        final AtomicReference<String> firstError = new AtomicReference<>();
        final Object mu = new Object();
        final long[] lastRelease = {0};
        final List<Long> handoffs = new ArrayList<>();
        final boolean timeHandoffs = primitive.equals("mutex");
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < clients.size(); i++) {
            final CuratorFramework c = clients.get(i);
            final int index = i;
            Thread t = new Thread(() -> {
                boolean writes = primitive.equals("rwlock") && index % param == 0;
                try {
                    Contender k;
                    switch (primitive) {
                        case "rwlock":
                            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, path);
                            k = mutex(writes ? rw.writeLock() : rw.readLock());
                            break;
                        case "semaphore":
                            k = semaphore(c, path, param);
                            break;
                        case "election":
                            k = election(c, path, "candidate-" + index);
                            break;
                        default:
                            k = mutex(new InterProcessMutex(c, path));
                    }
                    while (true) {
                        long left = deadline - System.nanoTime();
                        if (left <= 0 || !k.acquire(left)) {
                            return;
                        }
                        long now = System.nanoTime();
                        boolean inCell = now < deadline;
                        synchronized (mu) {
                            if (timeHandoffs && inCell && lastRelease[0] != 0) {
                                handoffs.add((now - lastRelease[0]) / 1000);
                            }
                            lastRelease[0] = System.nanoTime();
                        }
                        if (inCell) {
                            acquisitions.incrementAndGet();
                            if (writes) {
                                writeAcquisitions.incrementAndGet();
                            }
                        }
                        k.release();
                        if (inCell) {
                            releases.incrementAndGet();
                            if (writes) {
                                writeReleases.incrementAndGet();
                            }
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
        System.out.println("done " + acquisitions.get() + " " + releases.get() + " " + writeAcquisitions.get() + " "
                + writeReleases.get() + " " + errors.get() + " " + (b.length() == 0 ? "-" : b));
    }
}
