// Package core is the model's pure core: the data tree, sessions and server-side watches of one ZooKeeper 3.8
// server, and the transactions that change them, ACLs, TTL nodes and containers, and the ensemble's dynamic
// configuration included. It has no goroutines, no locks, no clock and no randomness of its own: time comes in
// as an argument (SetNow), randomness only from the seed it was built with (New), and every result that has
// an order (children aside, which follow the seed on purpose) is sorted. Given the same calls it returns the
// same results, byte for byte.
//
// The core has one door (door.go), in the shape of go.etcd.io/raft's RawNode: Apply executes a client's
// request (the core's own Request, which the server translates from go-zookeeper's calls and from the wire)
// and returns its Result and the watch Notifications it fires; a few more calls carry a session's lifecycle
// and the clock; everything else is a read-only view (Dump, Figures, Session, Stat, …) for the server's dump,
// four-letter words and metrics. Nothing outside the package reads its fields. The scenario tests drive it
// through that door alone: testdata/*.txt hold commands and what the core answers (core_test.go describes the
// format; go test -rewrite writes the answers).
package core
