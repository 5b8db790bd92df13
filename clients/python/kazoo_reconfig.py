"""Dynamic reconfiguration through kazoo, run by reconfig_test.go.

Usage: python3 kazoo_reconfig.py CONNECT SUPERUSER

On an ensemble of three servers with reconfigEnabled=true, whose super user
is SUPERUSER (user:password), it reads /zookeeper/config, then reconfigures
with client.reconfig: without super auth, with malformed servers, from a
wrong version, joining a server the ensemble does not run and leaving it
again, and with the whole membership. It prints one fact a line, none with a
port or a version in it: what a real ZooKeeper 3.8 and the model must print
alike. Any other failure prints "error ..." and exits 1.
"""

import sys

import kazoo_session

JOINING = "server.101=127.0.0.1:40003:40004;40100"


def servers(data):
    """The server lines of a configuration, without its version line."""
    return [l for l in data.decode().split("\n") if l.startswith("server.")]


def attempt(what, call):
    try:
        call()
        print("%s: ok" % what)
    except Exception as e:  # the server's refusal, as kazoo raises it
        print("%s: %s" % (what, type(e).__name__))


def main(connect, superuser):
    def anonymous(client):
        attempt("reconfig without super auth", lambda: client.reconfig(joining=JOINING, leaving=None, new_members=None))
        attempt("malformed joining without super auth", lambda: client.reconfig(joining="garbage", leaving=None, new_members=None))
        return 0

    def body(client):
        client.add_auth("digest", superuser)
        data, stat = client.get("/zookeeper/config")
        before = servers(data)
        print("servers: %d, all participants: %s" % (len(before), all(l.split(";")[0].endswith(":participant") for l in before)))
        print("version is the mzxid: %s" % (data.decode().split("\n")[-1] == "version=%x" % stat.mzxid,))
        attempt("joining garbage", lambda: client.reconfig(joining="garbage", leaving=None, new_members=None))
        attempt("leaving x", lambda: client.reconfig(joining=None, leaving="x", new_members=None))
        attempt("from a wrong version", lambda: client.reconfig(joining=JOINING, leaving=None, new_members=None, from_config=stat.mzxid + 1))
        attempt("leaving all but one", lambda: client.reconfig(joining=None, leaving="1,2", new_members=None))
        data, rstat = client.reconfig(joining=JOINING, leaving=None, new_members=None, from_config=stat.mzxid)
        _, nstat = client.get("/zookeeper/config")
        print("joined: %r, the reply's stat is the node's: %s, version -1: %s" % (
            servers(data)[-1].split(";")[1], rstat == nstat, nstat.version == -1))
        data, _ = client.reconfig(joining=None, leaving="101", new_members=None)
        print("left: back as before: %s" % (servers(data) == before,))
        data, _ = client.reconfig(joining=None, leaving=None, new_members=",".join(before))
        print("whole: the same servers: %s" % (servers(data) == before,))
        attempt("whole garbage", lambda: client.reconfig(joining=None, leaving=None, new_members="garbage"))
        return 0

    status = kazoo_session.run(connect, 10, anonymous)
    return status or kazoo_session.run(connect, 10, body)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
