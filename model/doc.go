// Package model is a deterministic, in-memory ZooKeeper 3.8 server with clients that behave like
// go-zookeeper's *zk.Conn, for testing code that uses ZooKeeper.
//
// # Use it in a plain test
//
//	srv := model.NewServer()
//	conn, events, _ := srv.Connect(10 * time.Second) // conn has *zk.Conn's methods
//	path, err := conn.Create("/app", nil, 0, zk.WorldACL(zk.PermAll))
//
// With the default transport every call executes at once and every watch event reaches its channel before
// the call that fired it returns, so the model is a drop-in for unit tests. Server.Expire ends a session,
// Server.Advance moves the virtual clock, and Server.Dump renders the whole state.
//
// # Faithful, and checked to be
//
// What a client observes is what it would observe on a ZooKeeper 3.8 ensemble through go-zookeeper v1.0.4;
// package conformance runs the same rules on both. Among them:
//
//   - Sequential names are the parent's count of child creates so far, as %010d: deletes and failed creates
//     do not advance it, every prefix under one parent shares it, and it wraps like a Java int. The reported
//     cversion is creates plus deletes.
//   - Every write spends a zxid, failed ones included; creating and closing a session each spend one.
//   - exists leaves a watch on a missing node; getData and getChildren do not. A session gets one
//     notification per watched path and kind however often it set the watch, and go-zookeeper fans it out to
//     every channel. Delete fires NodeDeleted on the node's data and child watches (once per session) and
//     NodeChildrenChanged on the parent's. Watch events also go to the session event channel.
//   - Persistent and recursive watches (ZooKeeper 3.6+'s addWatch; Conn.AddWatch, RemoveWatches and
//     CheckWatches, which go-zookeeper v1.0.4 lacks) stay after they fire; a recursive one gets every
//     NodeCreated, NodeDataChanged and NodeDeleted below its node and never NodeChildrenChanged. A session
//     has one watch per path in each of the server's two tables (data, child), so a standard watch set
//     later takes a persistent one's place in its table, and removeWatches of one type removes half of a
//     persistent watch.
//   - A transaction's notifications reach every session before its reply does, and a session receives
//     everything in commit order.
//   - Children come back in an order fixed by the server's seed, not sorted: code must treat them as a set.
//   - Closing or expiring a session removes its ephemeral nodes in one transaction.
//   - Bad input fails as it does for real, with go-zookeeper's error values: client-side path validation
//     (zk.ErrInvalidPath), server-side validation in multi (zk.ErrBadArguments), empty ACLs
//     (zk.ErrInvalidACL), requests over jute.maxbuffer (the server drops the connection; the caller gets
//     zk.ErrConnectionClosed), requests over go-zookeeper's buffer (zk.ErrShortBuffer), calls on a closed
//     client (zk.ErrConnectionClosed).
//
// # Sessions and connections
//
// A client's connection can drop (Server.Do with Disconnect, LoseRequest or LoseReply): calls in flight fail
// with zk.ErrConnectionClosed, whether or not the server executed them, the event channel gets
// StateDisconnected, and the session's timer starts. On reconnection the session resumes and the client's
// watches are set again the way ZooKeeper's SetWatches does it (a watch whose node changed meanwhile fires at
// once). If the session expired meanwhile, the client sees what go-zookeeper shows: StateExpired,
// EventNotWatching with zk.ErrSessionExpired on every watch, StateDisconnected, and then a new session on the
// same Conn. A connected client pings, so only disconnected sessions expire when the clock moves.
//
// # Controlled transport
//
// With WithManualTransport nothing happens by itself: every request, reply, watch event and reconnection is
// a step that a scheduler takes with Server.Do, choosing from Server.Pending (progress) and Server.Faults.
// Calls block until the scheduler has applied the request and delivered the reply. Requests a client's
// goroutines issue at the same moment join its queue when the scheduler next looks, in an order fixed by their
// text, so that the same steps always give the same history. Package check builds its exploration on this;
// WithObserver records every step for traces.
//
// # Pure core
//
// The server's state lives in a pure core (package model/internal/core): no goroutines, no clock, no global
// randomness, and no map order leaking into any result, so the same calls and steps give byte-identical
// histories. It has one door, Apply(session, request) returning the result and the watch events, beside the
// session lifecycle, the clock and read-only views; the transport (server.go), the wire front end (wire.go)
// and the client handle (conn.go) translate into its own request type and are thin layers around it.
//
// # Real clients, on the wire
//
// The server also speaks ZooKeeper 3.8's wire protocol (package jute has the encoding), so that code written
// against a concrete *zk.Conn, or Java and Python clients, run on the model unchanged: ConnectZK returns a real
// go-zookeeper client connected in-process, Server.Dialer is a zk.Dialer for zk.WithDialer, and Server.Listen
// serves any client on loopback TCP until Server.Close. A wire client is one of the server's clients like a
// *Conn (ClientOf names it from its session), so it shares the state, the watches, Expire and Advance, the
// observer's records and, with WithManualTransport, the steps: its requests wait to be applied (Apply), its
// replies and notifications to be delivered (Deliver), its connect requests after the first to be answered
// (Reconnect), and the faults drop its connection as they drop a *Conn's. What goes over the wire — replies, error codes,
// zxids, notification order, refused resumes, bad input — is what a real 3.8 server sends, checked by golden
// tests that replay sessions recorded on one (conformance/wire) and by tests that send the same raw bytes to
// both. The client's own behaviour (reconnecting, re-sending watches, pinging) is the real client's.
//
// With WithSASL the wire front end also answers SASL logins (DIGEST-MD5, as 3.8 does with a JAAS Server
// section): the exchange is per connection, outside the core, and its outcome, the identity sasl:USER (super
// for the super user), joins the core's auth as an auth packet's does.
//
// # An emulated ensemble
//
// WithEnsemble(n) (or ListenEnsemble(n) on a standalone server) serves the one state as n servers: Hosts
// gives an in-process address per server for zk.Connect with Dialer, ListenEnsemble a loopback port per
// server, and StopServer(i) and StartServer(i) (the steps "stop si" and "start si", a fault and a progress
// step) stop and start server i. What clients see is what a real 3.8 ensemble shows (measured with
// realzk.Kill on 3 servers, tickTime 100 ms):
//
//   - A stopped server's connections close (the client reads EOF) and its port refuses connections; its
//     clients reconnect to another server with the same session, ephemerals and watches. Clients of other
//     servers see nothing, unless the stopped one led.
//   - Stopping the leader while a majority runs is an election: every server closes its client
//     connections, and the new leader (the highest-numbered running server, as every server has the same
//     zxid) restarts every session's expiry deadline.
//   - With a majority stopped no server serves: each closes its connections, answers a connect request by
//     closing the connection unanswered (go-zookeeper logs "authentication failed: EOF"), Mode says
//     "not serving" (srvr: "This ZooKeeper instance is not currently serving requests"), and no session
//     expires however long it lasts; when a majority is back, every session gets its full timeout from then.
//
// With the manual transport a stop drops the server side at once, and each client learns of it in a
// Deliver step of its own. Elections take no time (on the real ensemble a client is served again about
// 1 s after a leader's kill and 0.7 to 0.9 s after the quorum's return, and meanwhile cycles through
// refused connections). All servers share one state, so no server lags: a real follower behind a client's
// last zxid refuses it ("client has seen zxid … our last zxid is …"), which cannot happen here.
//
// # Not modelled
//
// SASL mechanisms other than DIGEST-MD5 (Kerberos/GSSAPI; see WithSASL), x509's super user (WithX509), the container manager's znode.container.maxNeverUsedIntervalMs and
// maxPerMinute (a pass deletes all its candidates at one instant, in path order), quotas, a reconfig that
// moves a running server's ports (dynamic reconfiguration itself is modelled: WithReconfig, reconfig.go),
// local sessions of the model's own clients (Connect: only sessions made over the wire are local with
// WithLocalSessions, localsession.go), and the replication between servers of an ensemble (the
// emulated ensemble's servers share one state that never lags; Sync returns at once). Read-only mode is
// modelled: WithReadOnlyMode, readonly.go.
package model
