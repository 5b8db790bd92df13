// Package realzk runs real ZooKeeper for tests: it starts a ZooKeeper 3.8
// ensemble from Debian's zookeeper package on 127.0.0.1, injects server and
// network faults into it, and tears it all down again.
//
// # Ensembles
//
// Start brings up N servers (default 3), each a JVM running QuorumPeerMain
// from /usr/share/java/zookeeper.jar with its own data directory, myid,
// zoo.cfg and log file under one temporary directory (realzk-*), on client,
// quorum and election ports picked free at start. It returns once every
// server answers the "srvr" four-letter word with a mode and one leads:
//
//	e, err := realzk.Start(ctx, realzk.Config{})
//	defer e.Close()
//	conn, _, err := zk.Connect(e.Addrs(), time.Second)
//
// The servers run with tickTime 100 ms, so the session timeouts they accept
// run from 200 ms (2 ticks) to 20 s (Config.MinSessionTimeout and
// MaxSessionTimeout; a client asking for more or less gets the bound).
// Sessions expire in buckets of one tick, so a session of timeout T whose
// client falls silent expires between T and T+100 ms later. Other settings:
// maxClientCnxns=0 (no per-client connection cap), 4lw.commands.whitelist=*
// (every four-letter word, see FourLetter; Config.FourLetterWords narrows it), admin.enableServer=false,
// forceSync=no (a SIGKILL loses nothing the kernel already has), -Xmx512m
// (Config.HeapMB).
//
// Faults: Kill(i) SIGKILLs server i's JVM; Restart(ctx, i) starts it again on
// its data and waits until it has rejoined; Leader(ctx) says which server
// leads; WaitQuorum(ctx) waits for a quorum; Heal(ctx) restarts every killed
// server. Logs(i), LogPath(i) and LogTails(n) show the server logs.
//
// # Teardown
//
// Close SIGKILLs every JVM the ensemble started and removes its directory;
// it is idempotent. When the Go process dies without calling Close (a
// killed test binary), nothing keeps running: every JVM is its own process
// group leader and is started with Linux's parent-death signal (SIGKILL),
// from one goroutine locked to its OS thread for the life of the process
// (Linux sends that signal when the forking thread exits, and Go may end
// threads). The directory, which records its owner's pid and start time,
// is removed by the next Start (SweepStale), which also kills any JVM still
// carrying the dead owner's -Drealzk.dir marker.
//
// # In tests
//
// ForTest(t) starts an ensemble for one test and closes it in t.Cleanup,
// printing the server logs when the test failed; it fails the test with
// what to install when Java or ZooKeeper is missing. Shared(t) hands every
// test of a binary one ensemble (start-up costs about 1.5 s), healing what
// an earlier test killed; close it at the end with
//
//	func TestMain(m *testing.M) { os.Exit(realzk.RunTests(m)) }
//
// Tests on a shared ensemble use their own znode paths.
//
// The package's own tests are of three kinds (docs/fidelity.md says where a new test goes). The harness
// itself: ensembles, proxies, teardown, the wire counter, four-letter parsing, and what go-zookeeper does
// (below). The real side of conformance's rules: conformance_test.go runs conformance.Run and
// recipe_suite_test.go conformance.RunRecipes on real ensembles; the rules live in package conformance, the
// model's side in model's and recipe's tests. And experiments that compare nothing with the model: the
// recipe under real faults (validate_test.go, `make real`, and validate_model_test.go, which runs the
// scenarios that expire no session on the model's emulated ensemble with the same checks), and what the model
// deliberately does not do, measured (unmodelled_test.go).
//
// # ZK_SERVERS
//
// With ZK_SERVERS=host:port,… set, ForTest, ForTestWith and Shared attach to
// that running ensemble instead of starting one (Start does so when
// Config.Addrs is set; FromEnv parses the variable). Every address must
// accept connections, or the error names the unreachable ones. Kill and
// Restart of an attached ensemble fail with ErrNotHarness; Leader, Mode and
// WaitQuorum work when the servers answer "srvr".
//
// # Fault-injection proxy
//
// NewProxy(ctx, addr) puts a TCP proxy on 127.0.0.1 in front of one server;
// connect one client through it, with that one address (go-zookeeper
// shuffles a list, so one address pins the client):
//
//	p, _ := realzk.NewProxy(ctx, e.Addrs()[0])
//	conn, events, _ := zk.Connect([]string{p.Addr()}, time.Second)
//
// Sever() closes every connection through it (and lifts a freeze):
// connection loss. Freeze() stops the bytes both ways but keeps the
// connections open: a partition, in which the server expires the session
// after its timeout; Unfreeze() ends it, delivering what was held. Stats()
// counts connections and bytes, so a test can tell when a request is in
// flight. With the option CountWire, the proxy also follows ZooKeeper's
// framing both ways and counts, in WireCounts, the clients' connect
// requests, pings, auth and other requests, and the servers' watch
// notifications (replies with xid -1), sorted into classes by a function of
// their event type and path: the same count for a Go, Java or Python client.
//
// # The herd experiment
//
// Package realzk/herd (cmd/herd, make herd) measures what a lock's waiters
// cost everyone else on an ensemble started here, through counting proxies
// (CountWire) and mntr (FourLetter).
//
// # What go-zookeeper v1.0.4 does
//
// Measured on this harness and pinned by session_test.go and
// failover_test.go. A client with one address that loses its connection waits 1 s before
// redialling (its host list wraps around: "retryStart"), and requests it
// queued meanwhile fail with zk.ErrNoServer.
//
// Sever, session kept: a request in flight fails with zk.ErrConnectionClosed
// (its effect on the server is unknown); events StateDisconnected,
// StateConnecting, (1 s) StateConnected, StateHasSession with the same
// session id; ephemeral nodes and watches survive (go-zookeeper re-sets
// its watches).
//
// Freeze past the session timeout: after 2/3 of the negotiated timeout the
// client's read times out: StateDisconnected (requests in flight fail with
// zk.ErrConnectionClosed), StateConnecting, and 1 s later StateConnected
// through the frozen proxy, where its session request waits. The server
// expires the session between T and T+1 tick after the freeze. On
// Unfreeze the server answers "expired": StateExpired, one EventNotWatching
// (State StateDisconnected, Err zk.ErrSessionExpired) per watched path on
// the event channel (ExistsW and GetW of one existing node share one), the
// same event on every ExistsW, GetW and ChildrenW channel (then closed),
// StateDisconnected, StateConnecting, (1 s) StateConnected, StateHasSession
// with a new session id. Requests queued while disconnected fail with
// zk.ErrNoServer and never run. Ending the freeze with Sever instead adds
// one round (StateDisconnected, StateConnecting, StateConnected) before
// StateExpired. The session event channel holds 6 events and go-zookeeper
// drops events when it is full: drain it.
//
// Leader kill, client on the leader with all three addresses: the client
// sees StateDisconnected and hops to the followers, which are still
// electing and drop it (StateConnecting, StateConnected, StateDisconnected,
// twice), waits 1 s per round of its list, and resumes the same session on
// a follower about 2 s after the kill (election itself takes 0.2–0.4 s);
// its writes meanwhile fail with zk.ErrNoServer.
package realzk
