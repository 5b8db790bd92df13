package model

import (
	"slices"

	"github.com/zkmodel/zkmodel/model/internal/core"
)

// EnsembleMember is one server of an ensemble's configuration, as a zoo.cfg's "server.N=" line gives it:
// server.ID=Host:QuorumPort:ElectionPort[:observer][;[ClientHost:]ClientPort]. The model listens on no
// quorum or election port; they only appear in /zookeeper/config. ClientHost and ClientPort are the line's
// client address; ClientHost "" means the line has none (the server's clientPort applies, and
// /zookeeper/config shows none); a client part of a port alone is ClientHost "0.0.0.0", as ZooKeeper reads
// it. It is the core's type (core.Member): the server hands the configuration to the core as it is.
type EnsembleMember = core.Member

// WithMembers makes the server an ensemble of these servers (as many members as there are, in this order:
// member i is members[i]), whose configuration /zookeeper/config shows. Without it an ensemble of n
// (WithEnsemble, ListenEnsemble) is server.1 to server.n on 127.0.0.1, quorum ports 2888 and up, election
// ports 3888 and up, without client addresses. Observers do not vote: a quorum is a majority of the
// participants.
func WithMembers(members ...EnsembleMember) Option {
	return func(c *config) {
		if len(members) > 0 {
			c.members = len(members)
			c.memberList = slices.Clone(members)
		}
	}
}

// WithReconfig enables dynamic reconfiguration, as reconfigEnabled=true in zoo.cfg does: without it a
// reconfig request fails with zk.ErrReconfigDisabled (ZooKeeper 3.8's default).
func WithReconfig() Option { return func(c *config) { c.reconfig = true } }

// defaultMembers is the configuration of an ensemble of n servers that WithMembers did not describe.
func defaultMembers(n int) []EnsembleMember {
	out := make([]EnsembleMember, n)
	for i := range out {
		out[i] = EnsembleMember{ID: int64(i + 1), Host: "127.0.0.1", QuorumPort: 2888 + i, ElectionPort: 3888 + i}
	}
	return out
}
