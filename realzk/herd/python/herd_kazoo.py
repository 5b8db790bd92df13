"""The herd experiment's kazoo driver: N sessions in one Python process, each
with kazoo's counterpart of the primitive the harness names, on the path it
names, looping acquire, release with zero hold time for the duration it names.

Usage: python3 herd_kazoo.py <connect string> <N> <session timeout ms>

It speaks the protocol of java/HerdCurator.java, one line each way:

    (start)                               -> "ready" once all N sessions are connected,
                                             or "error <text>" and exit 1
    "run <primitive> <path> <ms> <param>" -> "done <acquisitions> <releases> <write acquisitions>
                                             <write releases> <errors> -", preceded by
                                             "error <text>" for the first error, if any
    "quit"                                -> "bye", and exit 0

The primitives, and what an acquisition is:

    rwlock     ReadLock/WriteLock: session i takes the WriteLock when i % param == 0
    semaphore  Semaphore with param leases: a lease
    election   Election: a leadership (its run returns at once, which resigns);
               candidates still waiting at the deadline are cancelled

Acquisitions count those made before the deadline, releases the releases of
those. Handoffs are not timed ("-").
"""

import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

PRIMITIVES = ("rwlock", "semaphore", "election")


class Counts:
    def __init__(self):
        self.mu = threading.Lock()
        self.acquisitions = self.releases = 0
        self.write_acquisitions = self.write_releases = 0
        self.errors = 0
        self.first_error = None

    def add(self, field, n=1):
        with self.mu:
            setattr(self, field, getattr(self, field) + n)

    def error(self, e):
        with self.mu:
            self.errors += 1
            if self.first_error is None:
                self.first_error = repr(e).replace("\n", " ")


def contend(client, primitive, path, index, param, deadline, counts, candidates):
    """One session's loop until the deadline."""
    writes = primitive == "rwlock" and index % param == 0
    ident = "contender-%d" % index
    if primitive == "election":
        election = client.Election(path, ident)
        candidates.append(election)
        while time.monotonic() < deadline:
            led = []

            def lead():
                led.append(time.monotonic() < deadline)
                if led[0]:
                    counts.add("acquisitions")

            election.run(lead)  # returns when cancelled, or after leading
            if led and led[0]:
                counts.add("releases")
        return
    if primitive == "rwlock":
        lock = (client.WriteLock if writes else client.ReadLock)(path, ident)
    else:
        lock = client.Semaphore(path, ident, max_leases=param)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            if not lock.acquire(timeout=left):
                return
        except LockTimeout:
            return
        in_cell = time.monotonic() < deadline
        if in_cell:
            counts.add("acquisitions")
            if writes:
                counts.add("write_acquisitions")
        lock.release()
        if in_cell:
            counts.add("releases")
            if writes:
                counts.add("write_releases")


def run(clients, primitive, path, millis, param):
    deadline = time.monotonic() + millis / 1000.0
    counts = Counts()
    candidates = []

    def body(client, index):
        try:
            contend(client, primitive, path, index, param, deadline, counts, candidates)
        except Exception as e:  # the harness reports it
            counts.error(e)

    threads = [threading.Thread(target=body, args=(c, i)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    if primitive == "election":
        # An Election waits without a timeout: cancel the candidates still
        # waiting once the cell is over.
        left = deadline - time.monotonic()
        if left > 0:
            time.sleep(left)
        while any(t.is_alive() for t in threads):
            for e in list(candidates):
                e.cancel()
            for t in threads:
                t.join(0.05)
    for t in threads:
        t.join()
    if counts.first_error is not None:
        print("error " + counts.first_error)
    print("done %d %d %d %d %d -" % (counts.acquisitions, counts.releases, counts.write_acquisitions,
                                     counts.write_releases, counts.errors), flush=True)


def main(args):
    if len(args) != 3:
        print("error usage: herd_kazoo.py <connect string> <N> <session timeout ms>", flush=True)
        return 2
    connect, n, timeout = args[0], int(args[1]), int(args[2]) / 1000.0
    clients = [KazooClient(hosts=connect, timeout=timeout) for _ in range(n)]
    started = [c.start_async() for c in clients]
    for c, ev in zip(clients, started):
        ev.wait(120)
        if not c.connected:
            print("error a session did not connect within 120 s", flush=True)
            return 1
    print("ready", flush=True)
    for line in sys.stdin:
        f = line.split()
        if f == ["quit"]:
            break
        if len(f) == 5 and f[0] == "run" and f[1] in PRIMITIVES:
            run(clients, f[1], f[2], int(f[3]), int(f[4]))
        else:
            print("error unknown command: " + line.strip(), flush=True)
    for c in clients:
        c.stop()
        c.close()
    print("bye", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
