"""kazoo over TLS (use_ssl), run by standin_tls_test.go.

Usage: python3 kazoo_tls.py CONNECT CERTFILE KEYFILE CA

It connects to CONNECT (a secure client port) with use_ssl=True and the
client certificate, creates, reads and deletes a node, and then tries to
connect without a client certificate, printing one fact a line: what a real
ZooKeeper 3.8 and the stand-in must print alike. Any other failure prints
"error ..." and exits 1.
"""

import sys
import uuid

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError


def main(connect, certfile, keyfile, ca):
    client = KazooClient(hosts=connect, use_ssl=True, certfile=certfile, keyfile=keyfile, ca=ca, timeout=10)
    client.start(timeout=30)
    try:
        path = "/kazoo-tls-" + uuid.uuid4().hex
        client.create(path, b"over tls")
        data, stat = client.get(path)
        print("with a client certificate: create and get %r, version %d" % (data, stat.version))
        client.delete(path)
        print("exists after delete: %s" % (client.exists(path) is not None,))
    finally:
        client.stop()
        client.close()
    bare = KazooClient(hosts=connect, use_ssl=True, ca=ca, timeout=2, connection_retry={"max_tries": 0})
    try:
        bare.start(timeout=5)
        print("without a client certificate: connected")
    except KazooTimeoutError:
        print("without a client certificate: no session")
    finally:
        bare.stop()
        bare.close()


if __name__ == "__main__":
    try:
        main(*sys.argv[1:5])
    except Exception as e:  # one line the Go test can show
        print("error %s: %s" % (type(e).__name__, e))
        sys.exit(1)
