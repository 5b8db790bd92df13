"""SASL DIGEST-MD5 logins through kazoo, run by sasl_test.go.

Usage: python3 kazoo_sasl.py CONNECT USER PASSWORD OTHER OTHERPASSWORD SUPER SUPERPASSWORD

The server's JAAS Server section must list USER, OTHER and SUPER with these
passwords, SUPER must be its zookeeper.superUser, and the sasl ACL scheme must
be on (authProvider.1=...SASLAuthenticationProvider). The program logs in as
USER, makes nodes under /sasl only USER may use (a sasl ACL, and one made with
the auth scheme), then reads them anonymously, as OTHER, as SUPER, and tries
USER with a wrong password, printing one fact a line: what a real ZooKeeper
3.8 and the model must print alike. Any unexpected failure prints
"error ..." and exits 1.
"""

import sys
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import AuthFailedError, ConnectionClosedError, KazooException, NoNodeError
from kazoo.security import make_acl


def client(connect, user=None, password=None):
    """A started KazooClient, logged in by SASL when user is given."""
    options = None
    if user is not None:
        options = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
    c = KazooClient(hosts=connect, timeout=10, sasl_options=options)
    c.start(timeout=20)
    return c


def attempt(what, call):
    """Prints what call returned, or the name of the exception it raised."""
    try:
        print("%s: %r" % (what, call()), flush=True)
    except KazooException as e:
        print("%s: %s" % (what, type(e).__name__), flush=True)


def acls(c, path):
    return [(a.id.scheme, a.id.id, a.perms) for a in c.get_acls(path)[0]]


def delete_tree(c, path):
    try:
        c.delete(path, recursive=True)
    except NoNodeError:
        pass


def main(connect, user, password, other, other_password, superuser, super_password):
    opened = []
    try:
        su = client(connect, superuser, super_password)
        opened.append(su)
        delete_tree(su, "/sasl")
        su.create("/sasl", b"")

        mine = client(connect, user, password)
        opened.append(mine)
        print("logged in: %s" % (mine.connected,), flush=True)
        mine.create("/sasl/mine", b"m", acl=[make_acl("sasl", user, all=True)])
        mine.create("/sasl/auth", b"a", acl=[make_acl("auth", "", read=True, write=True)])
        attempt("own read", lambda: mine.get("/sasl/mine")[0])
        attempt("own acl", lambda: acls(mine, "/sasl/mine"))
        attempt("auth acl", lambda: acls(mine, "/sasl/auth"))
        attempt("bad sasl id", lambda: mine.create("/sasl/bad", b"", acl=[make_acl("sasl", "a@b@c", all=True)]))

        anonymous = client(connect)
        opened.append(anonymous)
        attempt("anonymous read", lambda: anonymous.get("/sasl/mine")[0])
        attempt("anonymous read of auth node", lambda: anonymous.get("/sasl/auth")[0])

        someone = client(connect, other, other_password)
        opened.append(someone)
        attempt("other user read", lambda: someone.get("/sasl/mine")[0])

        attempt("super read", lambda: su.get("/sasl/mine")[0])
        attempt("super write", lambda: su.set("/sasl/mine", b"s").version)

        # kazoo reports the connection before it logs in, so start() may return or time out depending on how
        # fast the refusal comes: wait for the session's end instead, which AUTH_FAILED is.
        wrong = KazooClient(hosts=connect, timeout=10, sasl_options={
            "mechanism": "DIGEST-MD5", "username": user, "password": password + "-wrong"})
        opened.append(wrong)
        lost = threading.Event()
        wrong.add_listener(lambda state: lost.set() if state == KazooState.LOST else None)
        wrong.start_async()
        print("wrong password: session lost %s" % (lost.wait(20),), flush=True)
        try:  # AuthFailedError, or ConnectionClosedError once kazoo has stopped its connection thread
            wrong.get("/sasl")
            print("wrong password read: ok", flush=True)
        except (AuthFailedError, ConnectionClosedError):
            print("wrong password read: refused", flush=True)

        delete_tree(su, "/sasl")
        return 0
    except Exception as e:  # any failure is the test's to report
        print("error %r" % (e,), flush=True)
        return 1
    finally:
        for c in opened:
            c.stop()
            c.close()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
