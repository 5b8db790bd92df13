"""kazoo Lock clients driven by clients_test.go.

Usage:

    python3 kazoo_lock.py contend CONNECT ID ITERATIONS ROOT
    python3 kazoo_lock.py hold CONNECT ID ROOT SESSION_TIMEOUT_SECONDS

contend: each iteration acquires the kazoo Lock at ROOT/lock, then inside
the critical section creates the ephemeral ROOT/holder (it must not exist:
someone else holding the lock would have created it), increments
ROOT/counter with a versioned set (a concurrent holder would make the
version stale), and prints one line:

    acquired id=ID iter=I node=LOCKNODE counter=C

where LOCKNODE is this contender's lock node and C the counter before the
increment. It then deletes ROOT/holder and releases the lock.

hold, for session-expiry scenarios, prints one a line:

    session 0x...                     once connected (its session id)
    acquired id=ID node=LOCKNODE      once it holds the Lock at ROOT/lock
    lost                              when kazoo reports the session LOST (expired); then it exits 0
    released                          after a "release" line on stdin; then it exits 0

Any failure prints "error ..." and exits 1.
"""

import sys
import threading

from kazoo.protocol.states import KazooState

import kazoo_session


def contend(client, ident, iterations, root):
    lock = client.Lock(root + "/lock", ident)
    for i in range(int(iterations)):
        if not lock.acquire(timeout=30):
            print("error iteration %d: lock not acquired within 30s" % i, flush=True)
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
    elif len(args) == 5 and args[0] == "hold":
        connect, timeout = args[1], float(args[4])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    lost = threading.Event()

    def body(client):
        if args[0] == "contend":
            return contend(client, args[2], args[3], args[4])
        return hold(client, args[2], args[3], lost)

    return kazoo_session.run(connect, timeout, body, lambda state: lost.set() if state == KazooState.LOST else None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
