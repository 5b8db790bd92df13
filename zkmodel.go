// Package zkmodel is the root of the zkmodel module, a deterministic, fault-injecting ZooKeeper 3.8 for tests
// and a model checker for ZooKeeper locks. The parts are packages of their own: model (the server, which
// go-zookeeper, Curator and kazoo reach over the wire), recipe (locks, semaphore, election), check (the
// checker), realzk, conformance and differential (the real thing, compared). This package holds only the
// module's version.
package zkmodel

// Version is the module's version, as tagged; CHANGELOG.md says what each version brought.
const Version = "v0.1.0"
