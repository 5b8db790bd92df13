package core

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// This file is the core's door: everything the server (model/server.go and the wire front end) may do to the
// core, and every view it may take of it. Nothing outside this package reads the core's fields. The door
// changes state in three ways only: Apply (a client's request, setWatches and addAuth included), the session
// lifecycle (CreateSession, CloseSession, Heard, DropWatches, and the identities a new connection or a SASL
// login gives it: ResetAuth, AddSASL), and time (SetNow, PassedTo, Reap). Everything else here is read-only and returns copies.

// InProcessIP is the address the model's own clients (*Conn) and in-process wire clients (Dialer, ConnectZK)
// connect from, as far as the ip scheme is concerned: they are on this machine.
const InProcessIP = inProcessIP

// Packet limits, in bytes of a request's header and body as jute encodes them (Request.WireSize).
const (
	// MaxPacket is the server's jute.maxbuffer default: it drops the connection of a client that sends a
	// longer request, and executes nothing of it.
	MaxPacket = maxPacket
	// ClientBuffer is what fits in go-zookeeper's 1.5 MiB encode buffer; a longer request fails in the client
	// with zk.ErrShortBuffer and is not sent.
	ClientBuffer = clientBuffer
)

// Errors the core returns that go-zookeeper has no named error for; the wire front end maps them to their
// codes.
var (
	// ErrMarshalling is ZooKeeper's code -5: the server could not decode the request.
	ErrMarshalling = errMarshalling
	// ErrUnimplemented is ZooKeeper's code -6: a request type the server does not know, or a TTL create on a
	// server without extended types.
	ErrUnimplemented = errUnimplemented
	// ErrNoWatcher is ZooKeeper's code -121: checkWatches or removeWatches of a watch the session does not have.
	ErrNoWatcher = errNoWatcher
	// ErrRuntimeInconsistency is ZooKeeper's code -2: a failed multi's operations after the failing one.
	ErrRuntimeInconsistency = errRuntimeInconsistency
	// ErrNewConfigNoQuorum is ZooKeeper's code -13: too few of a reconfig's new participants run.
	ErrNewConfigNoQuorum = errNewConfigNoQuorum
)

// Settings are the server options the core's decisions depend on and that may change while it runs
// (Server.ApplySettings).
type Settings struct {
	SuperDigest   string // the super digest (user:base64 hash) that addAuth makes super; "" for none
	SASLSuperUser string // the SASL user that logging in makes super (zookeeper.superUser); "" for none
	SASLACLs      bool   // the sasl ACL scheme is on (SASLAuthenticationProvider configured)
	Reconfig      bool   // reconfigEnabled
	SkipACL       bool   // zookeeper.skipACL=yes: no ACL check
	X509ACLs      bool   // the x509 ACL scheme is on (the server has a secure client port)
}

// Configure applies the settings.
func (c *Core) Configure(s Settings) {
	c.super = s.SuperDigest
	c.saslSuper, c.saslACL = s.SASLSuperUser, s.SASLACLs
	c.reconfigOn = s.Reconfig
	c.skipACL = s.SkipACL
	c.x509ACL = s.X509ACLs
}

// ConfigureReaper sets the container manager's options: whether TTL nodes are allowed (extended types) and
// the milliseconds between its passes. It restarts the passes' schedule.
func (c *Core) ConfigureReaper(extended bool, interval int64) { c.configureReaper(extended, interval) }

// SetMembers gives the core an ensemble's configuration as it starts (see setMembers).
func (c *Core) SetMembers(members []Member) { c.setMembers(members) }

// --- changes ------------------------------------------------------------------------------------------------

// Apply executes one request for session sid and returns the reply and the watch events it fires, in the
// order the server sends them. A session that does not exist gets zk.ErrSessionExpired and changes nothing.
func (c *Core) Apply(sid int64, r *Request) (Result, []Notification) { return c.apply(sid, r) }

// CreateSession opens a session with the negotiated timeout and returns its id; it spends a zxid.
func (c *Core) CreateSession(timeout time.Duration) int64 { return c.createSession(timeout) }

// CreateLocalSession opens a local session, as a read-only server does for its clients: as CreateSession,
// but it is no transaction and spends no zxid.
func (c *Core) CreateLocalSession(timeout time.Duration) int64 {
	id := c.createSession(timeout)
	c.zxid--
	c.sessions[id].local = true
	return id
}

// UpgradeSession makes local session sid global, as 3.8 does (localSessionsUpgradingEnabled=true) before a
// local session's first ephemeral create: a createSession transaction, the id unchanged. It reports false,
// and changes nothing, when sid is no local session.
func (c *Core) UpgradeSession(sid int64) bool {
	s, ok := c.sessions[sid]
	if !ok || !s.local {
		return false
	}
	s.local = false
	c.zxid++
	return true
}

// CloseLocalSession ends a local session: as CloseSession, but it is no transaction and spends no zxid.
func (c *Core) CloseLocalSession(sid int64) ([]Notification, bool) {
	notes, ok := c.closeSession(sid)
	if ok {
		c.zxid--
	}
	return notes, ok
}

// CloseSession ends a session (close or expiry) in one transaction and returns the watch events its
// ephemerals' deletes fire; it reports false when the session was already gone.
func (c *Core) CloseSession(sid int64) ([]Notification, bool) { return c.closeSession(sid) }

// DropWatches forgets every watch of session sid, as the server does when its connection closes.
func (c *Core) DropWatches(sid int64) { c.dropWatches(sid) }

// Heard records that the server heard from session sid now, with timeout as its (possibly renegotiated)
// timeout. It reports false when there is no such session.
func (c *Core) Heard(sid int64, timeout time.Duration) bool {
	s, ok := c.sessions[sid]
	if ok {
		s.timeout, s.lastHeard = timeout, c.now
	}
	return ok
}

// ResetAuth gives session sid's new connection its identities afresh: the address ip alone.
func (c *Core) ResetAuth(sid int64, ip string) { c.resetAuth(sid, ip) }

// AddSASL records a SASL login as user on session sid's connection.
func (c *Core) AddSASL(sid int64, user string) { c.addSASL(sid, user) }

// AddX509 records that session sid's connection came with a client certificate of subject dn (the x509
// scheme's identity).
func (c *Core) AddX509(sid int64, dn string) { c.addX509(sid, dn) }

// SpendZxid counts a transaction that failed before the core saw it: a write the server could not decode.
func (c *Core) SpendZxid() { c.zxid++ }

// SetNow sets the virtual clock, in milliseconds since the Unix epoch.
func (c *Core) SetNow(ms int64) { c.now = ms }

// PassedTo tells the container manager that the clock has passed now without a pass running.
func (c *Core) PassedTo(now int64) { c.passedTo(now) }

// NextReap returns when the container manager's next pass with something to delete runs, if one does.
func (c *Core) NextReap() (int64, bool) { return c.nextReap() }

// Reap runs a pass of the container manager: the paths it deleted, in order (one transaction each), and the
// watch events the deletes fire.
func (c *Core) Reap() ([]string, []Notification) { return c.reap() }

// SetSequence sets the counter the next sequential child of path is numbered from (the parent's cversion),
// for tests of the int32 wrap-around. It fails with zk.ErrNoNode when path does not exist.
func (c *Core) SetSequence(path string, next int32) error {
	n, ok := c.nodes[path]
	if !ok {
		return zk.ErrNoNode
	}
	n.stat.Cversion = next
	return nil
}

// --- views ----------------------------------------------------------------------------------------------------

// Now returns the virtual clock, in milliseconds since the Unix epoch.
func (c *Core) Now() int64 { return c.now }

// Zxid returns the last zxid the core committed.
func (c *Core) Zxid() int64 { return c.zxid }

// ReaperActive reports whether there are containers or TTL nodes the container manager watches.
func (c *Core) ReaperActive() bool { return c.reaper.active() }

// SessionInfo is a view of one session.
type SessionInfo struct {
	ID         int64
	Timeout    time.Duration // negotiated
	LastHeard  int64         // virtual milliseconds
	Ephemerals int           // how many ephemeral nodes it owns
}

// Session returns a view of session sid, and whether it exists.
func (c *Core) Session(sid int64) (SessionInfo, bool) {
	s, ok := c.sessions[sid]
	if !ok {
		return SessionInfo{}, false
	}
	return SessionInfo{ID: s.id, Timeout: s.timeout, LastHeard: s.lastHeard, Ephemerals: len(s.ephemeral)}, true
}

// SessionIDs returns the ids of the live sessions, sorted.
func (c *Core) SessionIDs() []int64 { return slices.Sorted(maps.Keys(c.sessions)) }

// Stat returns the stat of the node at path as clients see it, and whether the node exists.
func (c *Core) Stat(path string) (zk.Stat, bool) {
	n, ok := c.nodes[path]
	if !ok {
		return zk.Stat{}, false
	}
	return n.view(), true
}

// Identity is one identity a session's connection holds.
type Identity struct{ Scheme, ID string }

// Identities returns every identity of session sid's connection in the order ZooKeeper 3.8 lists them
// (whoAmI), and whether the session exists.
func (c *Core) Identities(sid int64) ([]Identity, bool) {
	s, ok := c.sessions[sid]
	if !ok {
		return nil, false
	}
	ids := c.authInfoOrder(s)
	out := make([]Identity, len(ids))
	for i, id := range ids {
		out[i] = Identity{id.scheme, id.id}
	}
	return out, true
}

// Authenticated reports whether session sid's connection holds an identity of the scheme ("super" for the
// super user); false for a session that does not exist.
func (c *Core) Authenticated(sid int64, scheme string) bool {
	s, ok := c.sessions[sid]
	if !ok {
		return false
	}
	if scheme == "super" {
		return s.auth.super
	}
	return slices.ContainsFunc(s.auth.ids, func(id authID) bool { return id.scheme == scheme })
}

// Dump renders the whole state, sorted, one line per node, session and watch.
func (c *Core) Dump(b *strings.Builder) { c.dump(b) }

// Figures returns the state's figures the four-letter words report.
func (c *Core) Figures() Figures { return c.figures() }

// DataWatchPaths returns the paths session sid has a data watch on, sorted.
func (c *Core) DataWatchPaths(sid int64) []string { return c.dataWatchPaths(sid) }

// WatchCount returns how many watches session sid has, data and child ones.
func (c *Core) WatchCount(sid int64) int { return c.watchCount(sid) }

// SessionEphemerals returns session sid's ephemeral nodes, sorted.
func (c *Core) SessionEphemerals(sid int64) []string { return c.sessionEphemerals(sid) }

// Writes returns a copy of the bytes written per top-level namespace (mntr's per-namespace write figures).
func (c *Core) Writes() NamespaceCounts {
	out := make(NamespaceCounts, len(c.writes))
	for ns, s := range c.writes {
		cp := *s
		out[ns] = &cp
	}
	return out
}

// HasConfig reports whether the core has an ensemble's configuration (a standalone server has none).
func (c *Core) HasConfig() bool { return c.config != nil }

// ConfigMember returns the member with this server id in the configuration, and whether there is one.
func (c *Core) ConfigMember(id int64) (Member, bool) {
	if c.config == nil {
		return Member{}, false
	}
	q, ok := c.config.find(id)
	if !ok {
		return Member{}, false
	}
	return q.member(), true
}

// ConfigMembers returns the configuration's servers, in its order (none for a standalone server).
func (c *Core) ConfigMembers() []Member {
	if c.config == nil {
		return nil
	}
	out := make([]Member, len(c.config.servers))
	for i, q := range c.config.servers {
		out[i] = q.member()
	}
	return out
}

// Voters returns the ids of the configuration's participants (none for a standalone server).
func (c *Core) Voters() []int64 {
	if c.config == nil {
		return nil
	}
	return c.config.voters()
}

// ConfigText returns the configuration as /zookeeper/config and the conf word show it ("" for a standalone
// server).
func (c *Core) ConfigText() string {
	if c.config == nil {
		return ""
	}
	return c.config.text()
}

// member is the server as a Member.
func (q quorumServer) member() Member {
	return Member{ID: q.id, Host: q.host, QuorumPort: q.quorumPort, ElectionPort: q.electionPort, Observer: q.observer,
		ClientHost: q.clientHost, ClientPort: q.clientPort}
}

// WireSize returns the length of the request's packet as jute encodes it (header included, length prefix
// excluded).
func (r *Request) WireSize() int { return r.wireSize() }

// ValidatePath applies ZooKeeper's path rules; see validatePath.
func ValidatePath(path string, sequential bool) error { return validatePath(path, sequential) }

// PathProblem returns which of ZooKeeper's path rules the path breaks, or "".
func PathProblem(path string, sequential bool) string { return pathProblem(path, sequential) }

// Mix64 is SplitMix64's finaliser: a cheap, well-distributed hash of a 64-bit value (session passwords).
func Mix64(x uint64) uint64 { return mix64(x) }

// DigestID returns the digest identity (user:base64(sha1(user:password))) of an addAuth packet's data.
func DigestID(auth []byte) string { return digestID(auth) }

// ParentOf returns the parent of an absolute path ("/" for a top-level node).
func ParentOf(path string) string { return parentOf(path) }

// BaseName returns the last segment of an absolute path.
func BaseName(path string) string { return baseName(path) }
