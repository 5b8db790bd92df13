"""kazoo with read_only=True on a read-only server, run by standin_readonly_test.go.

Usage: python3 kazoo_readonly.py CONNECT

CONNECT is the one server of three left running (read-only mode, no quorum).
It connects with read_only=True, reads, tries to write, then prints "waiting"
and reads a line from stdin while the Go test starts a second server. Then it
waits for a read-write session and writes. It prints one fact a line: what a
real ZooKeeper 3.8 and the stand-in must print alike. Any other failure prints
"error ..." and exits 1.
"""

import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NotReadOnlyCallError
from kazoo.protocol.states import KeeperState


def main(connect):
    rw = threading.Event()
    client = KazooClient(hosts=connect, read_only=True, timeout=10)

    def listener(state):
        if client.client_state == KeeperState.CONNECTED:
            rw.set()

    client.add_listener(listener)
    client.start(timeout=30)
    try:
        ro_session = client.client_id[0]
        print("connected: %s" % (client.client_state,))
        data, stat = client.get("/ro")
        print("get /ro: %r" % (data,))
        try:
            client.create("/ro/child", b"")
            print("create: done")
        except NotReadOnlyCallError:
            print("create: NotReadOnlyCallError")
        try:
            client.set("/ro", b"y")
            print("set: done")
        except NotReadOnlyCallError:
            print("set: NotReadOnlyCallError")
        print("waiting")
        sys.stdout.flush()
        sys.stdin.readline()
        if not rw.wait(60):
            print("no read-write session within 60 s: %s" % (client.client_state,))
            return
        deadline = time.time() + 30
        while True:
            try:
                client.create("/ro/child", b"")
                break
            except NotReadOnlyCallError:  # a request sent before the switch
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        print("read-write: %s, a new session: %s, create done" % (client.client_state, client.client_id[0] != ro_session))
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except Exception as e:  # one line the Go test can show
        print("error %s: %s" % (type(e).__name__, e))
        sys.exit(1)
