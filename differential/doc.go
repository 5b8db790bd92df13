// Package differential checks that the model (package model) is faithful to a real ZooKeeper 3.8
// ensemble by running the same randomly generated operation sequences on both and comparing what
// the clients observe.
//
// A Sequence is a list of Ops over two or three sessions: creates with every flag value (the four
// create modes, containers, TTL modes and invalid values), deletes and sets with versions, reads
// with and without watches, multis that succeed or fail midway, syncs, session closes and
// connection losses, addAuth (digest users, a wrong password, the ip scheme, now and then a scheme the
// server refuses, which costs the session its connection), creates and setACL with ACLs other than
// world:anyone (digest, auth, read-only, ip, a parent without CREATE and DELETE, one granting nothing) and
// getACL. Gen generates them with pgregory.net/rapid, which also shrinks a failing
// sequence to a minimal one. With GenConfig.Persistent half the sequences also set persistent and
// recursive watches (addWatch) and remove and check watches (removeWatches, checkWatches); go-zookeeper
// v1.0.4 cannot send these, so such a sequence's sessions on the wire and real sides are the project's
// raw client (internal/rawzk, with go-zookeeper's return values), and its events are compared like
// the one-shot watches' (a persistent watch's channel is read until it closes).
//
// With GenConfig.Timed the sequences are timed ones (Sequence.Timed): they create TTL nodes (with a TTL far
// below one container check interval, or of an hour) and containers, and let time pass (PassTime ops, and
// every createTTL with the short TTL), which moves a model's virtual clock (Server.Advance) and waits on a
// real server, whose container manager runs on its wall clock, until it has deleted what it would delete.
// Their paths are laid out so that it deletes nothing at any other time (see timed.go), and they run on
// servers with extended types and a 100 ms check interval: TestDifferential runs a quarter as many of them as
// of the others, on a 1-server ensemble of their own.
//
// Run executes a sequence on one Side (ModelSide, WireSide or RealSide) and returns a Transcript: for every
// step the call's normalised results, the events the acting session had received when the call
// returned, and the events every session received by the time the step settled. Normalisation
// removes what legitimately differs: zxids become offsets from the czxid of the sequence's base
// node (B+3; in timed sequences their ranks, B#3, see rankZxids), times become 0 or T, session ids become s1, s2, s3, paths under the base become ~/…,
// children are sorted, digest hashes of the sequences' users are shown by name, and errors are named by the go-zookeeper sentinel they match (or by their
// message when none does). Compare reports the first difference between two transcripts, and
// SideBySide prints them in two columns.
//
// Every side's admin session, which reads the final tree (data, stat and any ACL other than world:anyone)
// and deletes it, is the super user (realzk.SharedSuperUser; the model sides' servers are given its digest),
// so that no ACL a sequence sets keeps a node from being read or cleaned up.
//
// WireSide is the model reached through ZooKeeper's wire protocol: its sessions are real
// go-zookeeper clients (model.ConnectZK). TestDifferential and TestScenarios run every sequence on
// the model, on the model through the wire, and on the real ensemble, and compare each model side
// with the real one (make fidelity reports the mismatches of both). TestWireBadInput sends the same
// raw bytes — garbage, oversized frames, wrong passwords, unknown opcodes — to a real server and to
// the model's listener and compares the answers. TestFourLetterWordsRealAndModel and
// TestNamespaceMetricsRealAndModel (flw_test.go) make the same requests on both and compare the
// four-letter words' answers: go-zookeeper's FLW functions, srvr's and mntr's keys, mntr's per-namespace
// figures. TestReconnectionGap (reconnection_test.go) severs a raw client's connection on both and compares
// what setWatches2 makes its watches report of the writes made while it was away.
//
// The real and wire sides make delivery deterministic before they collect events: after every step
// each live session does a Sync and a read, and go-zookeeper hands a watch notification to its
// channels before it processes a later reply.
//
// A real ensemble on a loaded machine sometimes misbehaves on its own: a server falls behind, drops its
// clients or takes a session back late. Run marks such a run ErrHiccup (a session disconnected or expired by
// no op of the sequence, or a wait that failed after a session lost its connection); TestDifferential then
// waits until every server serves again (RealSide.Ready) and runs the sequence again, up to three times, and
// logs each hiccup's reason beside its figures. The model sides are never run again: an error there fails.
package differential
