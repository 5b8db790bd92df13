// Command zkmodel runs the deterministic in-memory ZooKeeper 3.8 of package
// model as a standalone server, so that clients in any language (Curator,
// kazoo, zkCli.sh, go-zookeeper, …) can use it over TCP, and a test in any
// language can drive its faults and its virtual clock over HTTP.
//
// Usage:
//
//	zkmodel serve [-addr 127.0.0.1:2181] [-control 127.0.0.1:0] [-seed 1] [-tick 2s] [-4lw-whitelist srvr]
//	zkmodel zkserver {start|start-foreground|stop|status|restart|print-cmd|version} [zoo.cfg]
//
// zkserver is ZooKeeper's server script on the model, which dropin/bin/zkServer.sh runs for harnesses that
// start ZooKeeper themselves (see package dropin); the rest of this comment is about serve.
//
// Each server answers ZooKeeper's four-letter words (srvr, ruok, mntr, cons,
// …) as ZooKeeper 3.8 does, with its own mode and the model's figures;
// -4lw-whitelist is 4lw.commands.whitelist: comma-separated words, or * for
// all (default srvr, 3.8's own default).
//
// `make serve` runs `go run ./cmd/zkmodel serve`. Once both ports listen it
// prints one JSON line on stdout, for a test to read:
//
//	{"addr":"127.0.0.1:2181","control":"http://127.0.0.1:40123","seed":1,"tick":"2s"}
//
// It runs until SIGINT or SIGTERM, then closes every connection and exits 0.
// Bad flags, a bad address or a port in use exit 2 with a message on stderr
// before anything listens.
//
// The control endpoint (plain HTTP on the -control address) answers:
//
//	GET  /sessions                  JSON list of live sessions: [{"id":"0x…","timeout_ms":4000,"ephemerals":1,"connections":1}]
//	POST /expire?session=0x…        expire the session now, as a session timeout would (ephemerals go, watches fire,
//	                                its connection is closed by the server); 404 if no such session
//	POST /drop?session=0x…          sever the session's TCP connections (a network fault: the client reconnects and
//	                                resumes the session); 404 if it has no connection
//	POST /advance?by=5s             move the virtual clock forward (a Go duration > 0); sessions without a connection
//	                                for longer than their timeout expire
//	GET  /dump                      the server's whole state as text (model.Server.Dump), one item per line
//
// Session ids are written in hex with 0x, as ZooKeeper prints them; /expire
// and /drop also take decimal. Successful POSTs answer {"ok":true,…} in JSON;
// errors answer 4xx with a one-line plain-text message saying what to fix (a
// route asked with the wrong method: 405 naming the method and parameters to
// use; an unknown path: 404 listing the routes).
//
// The server's answers depend only on -seed and what the clients and the
// control endpoint do, never on wall time: ctime/mtime come from the
// virtual clock, which only /advance moves. So a client that dies without
// closing its session keeps it, and its ephemeral nodes, until /expire ends
// it or /advance moves the clock past its timeout.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zkmodel/zkmodel/internal/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	restore := term.Foreground() // Ctrl-C reaches only zkmodel, which exits 0, and so do make and go run
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	restore()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "zkmodel:", err)
	var e exitError
	if errors.As(err, &e) {
		os.Exit(e.code)
	}
	if errors.Is(err, errUsage) {
		os.Exit(2)
	}
	os.Exit(1)
}
