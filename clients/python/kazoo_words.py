"""Four-letter words through kazoo, run by words_test.go.

Usage: python3 kazoo_words.py CONNECT

With a session on CONNECT it asks the server kazoo is connected to for its
version (server_version(), which reads envi) and sends ruok, isro, srvr and
stat with command(), printing one fact a line: what a real ZooKeeper 3.8
and the model must print alike. A server whose whitelist lacks a word
answers so, and server_version() then fails: both are printed too. Any
other failure prints "error ..." and exits 1.
"""

import sys

import kazoo_session


def main(connect):
    def body(client):
        try:
            print("server_version: %r" % (client.server_version(),))
        except Exception as e:  # a server that does not answer envi
            print("server_version failed: %s" % (e,))
        print("ruok: %r" % client.command(b"ruok"))
        print("isro: %r" % client.command(b"isro"))
        srvr = client.command(b"srvr")
        print("srvr starts: %r" % srvr.split("\n")[0])
        print("srvr mode: %r" % [l for l in srvr.split("\n") if l.startswith("Mode:")])
        stat = client.command(b"stat")
        print("stat lists my connection: %s" % (stat.count("](queued=") >= 2,))
        return 0

    return kazoo_session.run(connect, 10, body)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
