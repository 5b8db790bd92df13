"""Clients of kazoo's lock recipes (Lock, Election, Semaphore, ReadLock and
WriteLock) driven by clients_test.go.

Usage:

    python3 kazoo_lock.py contend CONNECT ID ITERATIONS ROOT
    python3 kazoo_lock.py hold CONNECT ID ROOT SESSION_TIMEOUT_SECONDS
    python3 kazoo_lock.py elect CONNECT ID ROOT
    python3 kazoo_lock.py lease CONNECT ID ITERATIONS ROOT LEASES CONTENDERS
    python3 kazoo_lock.py rw CONNECT ID read|write ITERATIONS ROOT READERS

contend: each iteration acquires the kazoo Lock at ROOT/lock, then inside
the critical section creates the ephemeral ROOT/holder (it must not exist:
someone else holding the lock would have created it), increments
ROOT/counter with a versioned set (a concurrent holder would make the
version stale), and prints one line:

    acquired id=ID iter=I node=LOCKNODE counter=C

where LOCKNODE is this contender's lock node and C the counter before the
increment. It then deletes ROOT/holder and releases the lock.

elect: joins the kazoo Election at ROOT/lock once; as leader it does what
one contend iteration does in its critical section and prints the same
line (iter=0, node is its election node), then leaves the election.

lease: each iteration takes one of the LEASES leases of the kazoo
Semaphore at ROOT/sem and, holding it, creates the ephemeral
ROOT/holders/ID. It then lists ROOT/holders until it sees LEASES holders,
or until every contender that has not finished (has no ROOT/done/ID) holds
a lease: waiting longer could wait for no one, and waiting this long makes
the first holders meet, so LEASES holders are seen at least once whatever
the timing. More than LEASES holders is an error. It prints one line:

    leased id=ID iter=I node=LEASENODE most=M

where LEASENODE is its lease node and M the most holders it saw, deletes
ROOT/holders/ID and releases the lease. After the last iteration it
creates ROOT/done/ID.

rw: each iteration takes the kazoo ReadLock or WriteLock at ROOT/rw. A
reader creates the ephemeral ROOT/inside/ID; ROOT/holder must not exist (a
writer inside); in its first iteration it lists ROOT/inside until it sees
all READERS readers in, or ROOT/seen exists, which the first reader to see
them all creates. No reader leaves its first iteration before that, so once
all are in they stay until one sees it: no timing decides it (and the test
starts the writers only once every reader's first lock node exists, so no
writer stands between them). It prints

    read id=ID iter=I node=LOCKNODE readers=M

with M the most readers it saw inside, and deletes ROOT/inside/ID. A
writer checks ROOT/inside is empty and runs contend's critical section
(its acquired line).

hold, for session-expiry scenarios, prints one a line:

    session 0x...                     once connected (its session id)
    acquired id=ID node=LOCKNODE      once it holds the Lock at ROOT/lock
    lost                              when kazoo reports the session LOST (expired); then it exits 0
    released                          after a "release" line on stdin; then it exits 0

Any failure prints "error ..." and exits 1.
"""

import sys
import threading
import time

from kazoo.exceptions import NodeExistsError
from kazoo.protocol.states import KazooState

import kazoo_session


def critical(client, ident, i, lock_node, root):
    """The critical section of contend and elect: ROOT/holder must not
    exist, ROOT/counter goes up by one with a versioned set; prints the
    acquired line for iteration i and lock (or election) node lock_node."""
    node = lock_node.rsplit("/", 1)[-1]
    client.create(root + "/holder", ("holder=" + ident).encode(), ephemeral=True)
    data, stat = client.get(root + "/counter")
    counter = int(data.decode())
    client.set(root + "/counter", str(counter + 1).encode(), version=stat.version)
    print("acquired id=%s iter=%d node=%s counter=%d" % (ident, i, node, counter), flush=True)
    client.delete(root + "/holder")


def contend(client, ident, iterations, root):
    lock = client.Lock(root + "/lock", ident)
    for i in range(int(iterations)):
        if not lock.acquire(timeout=30):
            print("error iteration %d: lock not acquired within 30s" % i, flush=True)
            return 1
        try:
            critical(client, ident, i, lock.node, root)
        finally:
            lock.release()
    return 0


def elect(client, ident, root):
    election = client.Election(root + "/lock", ident)
    election.run(lambda: critical(client, ident, 0, election.lock.node, root))
    return 0


def lease(client, ident, iterations, root, leases, contenders):
    leases, contenders = int(leases), int(contenders)
    sem = client.Semaphore(root + "/sem", ident, max_leases=leases)
    for i in range(int(iterations)):
        if not sem.acquire(timeout=60):
            print("error iteration %d: no lease within 60s" % i, flush=True)
            return 1
        try:
            client.create(root + "/holders/" + ident, ident.encode(), ephemeral=True)
            most = 0
            while True:
                holders = client.get_children(root + "/holders")
                done = client.get_children(root + "/done")
                most = max(most, len(holders))
                if len(holders) > leases:
                    print("error iteration %d: holders %s exceed %d leases" % (i, holders, leases), flush=True)
                    return 1
                if len(holders) >= leases or contenders - len(done) == len(holders):
                    break
                time.sleep(0.02)
            node = sem.create_path.rsplit("/", 1)[-1]
            print("leased id=%s iter=%d node=%s most=%d" % (ident, i, node, most), flush=True)
            client.delete(root + "/holders/" + ident)
        finally:
            sem.release()
    client.create(root + "/done/" + ident)
    return 0


def read_write(client, ident, mode, iterations, root, readers):
    reader, readers = mode == "read", int(readers)
    lock = (client.ReadLock if reader else client.WriteLock)(root + "/rw", ident)
    for i in range(int(iterations)):
        if not lock.acquire(timeout=60):
            print("error iteration %d: lock not acquired within 60s" % i, flush=True)
            return 1
        try:
            if not reader:
                inside = client.get_children(root + "/inside")
                if inside:
                    print("error iteration %d: writer with readers %s inside" % (i, inside), flush=True)
                    return 1
                critical(client, ident, i, lock.node, root)
                continue
            client.create(root + "/inside/" + ident, ephemeral=True)
            if client.exists(root + "/holder"):
                print("error iteration %d: reader with a writer inside" % i, flush=True)
                return 1
            most = len(client.get_children(root + "/inside"))
            while i == 0 and most < readers and not client.exists(root + "/seen"):
                time.sleep(0.02)
                most = max(most, len(client.get_children(root + "/inside")))
            if most == readers:
                try:
                    client.create(root + "/seen")
                except NodeExistsError:  # another reader saw them all first
                    pass
            print("read id=%s iter=%d node=%s readers=%d" % (ident, i, lock.node.rsplit("/", 1)[-1], most), flush=True)
            client.delete(root + "/inside/" + ident)
        finally:
            lock.release()
    return 0


def hold(client, ident, root, lost):
    release = threading.Event()

    def read_stdin():
        for line in sys.stdin:
            if line.strip() == "release":
                release.set()
                return

    print("session %#x" % client.client_id[0], flush=True)
    lock = client.Lock(root + "/lock", ident)
    if not lock.acquire(timeout=60):
        print("error: lock not acquired within 60s", flush=True)
        return 1
    print("acquired id=%s node=%s" % (ident, lock.node.rsplit("/", 1)[-1]), flush=True)
    threading.Thread(target=read_stdin, daemon=True).start()
    while not (lost.is_set() or release.is_set()):
        lost.wait(0.05)
    if lost.is_set():
        print("lost", flush=True)
        return 0
    lock.release()
    print("released", flush=True)
    return 0


def main(args):
    if len(args) == 5 and args[0] == "contend":
        connect, timeout = args[1], 10.0
    elif len(args) == 4 and args[0] == "elect":
        connect, timeout = args[1], 10.0
    elif len(args) == 7 and args[0] == "lease":
        connect, timeout = args[1], 10.0
    elif len(args) == 7 and args[0] == "rw":
        connect, timeout = args[1], 10.0
    elif len(args) == 5 and args[0] == "hold":
        connect, timeout = args[1], float(args[4])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    lost = threading.Event()

    def body(client):
        if args[0] == "contend":
            return contend(client, args[2], args[3], args[4])
        if args[0] == "elect":
            return elect(client, args[2], args[3])
        if args[0] == "lease":
            return lease(client, *args[2:])
        if args[0] == "rw":
            return read_write(client, *args[2:])
        return hold(client, args[2], args[3], lost)

    return kazoo_session.run(connect, timeout, body, lambda state: lost.set() if state == KazooState.LOST else None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
