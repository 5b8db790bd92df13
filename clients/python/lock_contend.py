"""One contender for kazoo's Lock, run by clients_test.go.

Usage: python3 lock_contend.py CONNECT ID ITERATIONS ROOT

Each iteration acquires the kazoo Lock at ROOT/lock, then inside the
critical section creates the ephemeral ROOT/holder (it must not exist:
someone else holding the lock would have created it), increments
ROOT/counter with a versioned set (a concurrent holder would make the
version stale), and prints one line:

    acquired id=ID iter=I node=LOCKNODE counter=C

where LOCKNODE is this contender's lock node and C the counter before the
increment. It then deletes ROOT/holder and releases the lock. Any failure
prints "error ..." and exits 1.
"""

import sys

from kazoo.client import KazooClient


def main():
    if len(sys.argv) != 5:
        print("usage: python3 lock_contend.py CONNECT ID ITERATIONS ROOT", file=sys.stderr)
        return 2
    connect, ident, iterations, root = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    client = KazooClient(hosts=connect, timeout=10.0)
    client.start(timeout=20)
    try:
        lock = client.Lock(root + "/lock", ident)
        for i in range(iterations):
            if not lock.acquire(timeout=30):
                print("error iteration %d: lock not acquired within 30s" % i)
                return 1
            try:
                node = lock.node.rsplit("/", 1)[-1]
                client.create(root + "/holder", ("holder=" + ident).encode(), ephemeral=True)
                data, stat = client.get(root + "/counter")
                counter = int(data.decode())
                client.set(root + "/counter", str(counter + 1).encode(), version=stat.version)
                print("acquired id=%s iter=%d node=%s counter=%d" % (ident, i, node, counter), flush=True)
                client.delete(root + "/holder")
            finally:
                lock.release()
    except Exception as e:  # any failure is the test's to report
        print("error %r" % (e,), flush=True)
        return 1
    finally:
        client.stop()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
