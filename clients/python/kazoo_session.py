"""Runs a body of kazoo calls on one session, for the test programs here."""

from kazoo.client import KazooClient


def run(connect, timeout, body, listener=None):
    """Starts a KazooClient on connect, returns body(client) as the exit
    status; any exception prints "error ..." and gives 1. The client is
    always stopped and closed (which closes its session)."""
    client = KazooClient(hosts=connect, timeout=timeout)
    if listener is not None:
        client.add_listener(listener)
    client.start(timeout=20)
    try:
        return body(client)
    except Exception as e:  # any failure is the test's to report
        print("error %r" % (e,), flush=True)
        return 1
    finally:
        client.stop()
        client.close()
