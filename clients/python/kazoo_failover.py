"""A kazoo client on `zkmodel serve -addr A,B,C` (an emulated ensemble), run by serve_test.go.

Usage: python3 kazoo_failover.py CONNECT CONTROL_URL

It creates an ephemeral node, stops its own server with POST /stop (kazoo
is SUSPENDED, then CONNECTED to another server with the same session),
stops a second server (no majority: SUSPENDED, and no reconnection while
it lasts), moves the clock an hour, starts a server again (CONNECTED, the
same session, the ephemeral node still there). It prints what it saw, one
fact a line, and exits 0; any failure prints "error ..." and exits 1.
"""

import sys
import threading
import time

from kazoo.protocol.states import KazooState

import kazoo_session
from zkmodel_control import call, wait_for


def server_of(client, connect):
    host, port = client._connection._socket.getpeername()[:2]
    return connect.split(",").index("%s:%d" % (host, port))


def main(connect, control):
    suspended, connected, lost = threading.Event(), threading.Event(), threading.Event()

    def on_state(state):
        {KazooState.SUSPENDED: suspended, KazooState.CONNECTED: connected, KazooState.LOST: lost}[state].set()

    def body(client):
        wait_for(connected, "CONNECTED")
        client.create("/failover-eph", b"x", ephemeral=True)
        sid = client.client_id[0]
        first = server_of(client, connect)
        modes = [s["mode"] for s in call(control, "POST", "/stop?server=%d" % first)["servers"]]
        print("stopped its server: %s" % modes[first])
        wait_for(suspended, "SUSPENDED after /stop")
        wait_for(connected, "CONNECTED after /stop")
        now = server_of(client, connect)
        print("moved: other server %s, same session %s, ephemeral exists %s" % (now != first, client.client_id[0] == sid, client.exists("/failover-eph") is not None))
        second = next(i for i in range(3) if i not in (first, now))
        modes = [s["mode"] for s in call(control, "POST", "/stop?server=%d" % second)["servers"]]
        print("no majority: %s" % ",".join(modes))
        wait_for(suspended, "SUSPENDED without a majority")
        time.sleep(2)
        print("reconnected without a majority: %s" % connected.is_set())
        call(control, "POST", "/advance?by=1h")
        call(control, "POST", "/start?server=%d" % first)
        wait_for(connected, "CONNECTED once a majority is back")
        print("majority back: same session %s, ephemeral exists %s, lost %s" % (client.client_id[0] == sid, client.exists("/failover-eph") is not None, lost.is_set()))
        return 0

    return kazoo_session.run(connect, 10.0, body, on_state)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
