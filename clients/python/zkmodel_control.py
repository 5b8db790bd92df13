"""A kazoo client that drives `zkmodel serve`'s control endpoint, run by clients_test.go.

Usage: python3 zkmodel_control.py CONNECT CONTROL_URL

It creates an ephemeral node, finds its own session in GET /sessions,
severs its own connection with POST /drop (kazoo reconnects to the same
session), moves the clock with POST /advance, then expires its own session
with POST /expire (kazoo reports LOST and opens a new session, and the
ephemeral node is gone). It prints what it saw, one fact a line, and exits
0; any failure prints "error ..." and exits 1.
"""

import json
import sys
import threading
import urllib.request

from kazoo.protocol.states import KazooState

import kazoo_session


def call(control, method, path):
    req = urllib.request.Request(control + path, method=method)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def wait_for(event, what):
    if not event.wait(20):
        raise RuntimeError("no %s within 20s" % what)
    event.clear()


def main(connect, control):
    suspended, connected, lost = threading.Event(), threading.Event(), threading.Event()

    def on_state(state):
        {KazooState.SUSPENDED: suspended, KazooState.CONNECTED: connected, KazooState.LOST: lost}[state].set()

    def body(client):
        wait_for(connected, "CONNECTED")
        client.create("/ctl-eph", b"x", ephemeral=True)
        sid = "%#x" % client.client_id[0]
        mine = [s for s in call(control, "GET", "/sessions") if s["id"] == sid]
        print("sessions lists mine: %s ephemerals=%d connections=%d" % (len(mine) == 1, mine[0]["ephemerals"], mine[0]["connections"]))

        print("drop: dropped=%d" % call(control, "POST", "/drop?session=" + sid)["dropped"])
        wait_for(suspended, "SUSPENDED after /drop")
        wait_for(connected, "CONNECTED after /drop")
        print("after drop: same session %s, ephemeral exists %s" % ("%#x" % client.client_id[0] == sid, client.exists("/ctl-eph") is not None))

        print("advance: now=%s" % call(control, "POST", "/advance?by=3s")["now"])

        print("expire: %s" % (call(control, "POST", "/expire?session=" + sid)["expired"] == sid))
        wait_for(lost, "LOST after /expire")
        wait_for(connected, "CONNECTED with a new session")
        print("after expire: new session %s, ephemeral exists %s" % ("%#x" % client.client_id[0] != sid, client.exists("/ctl-eph") is not None))
        try:
            call(control, "POST", "/expire?session=" + sid)
        except urllib.error.HTTPError as e:
            print("expire again: %d %s" % (e.code, e.read().decode().strip()))
        return 0

    return kazoo_session.run(connect, 10.0, body, on_state)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
