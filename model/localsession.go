package model

import (
	"maps"
	"slices"

	"github.com/zkmodel/zkmodel/jute"
)

// This file is ZooKeeper 3.8's local sessions on an ensemble that has its quorum (localSessionsEnabled=true in
// zoo.cfg, with localSessionsUpgradingEnabled true or false; both default to false), measured on Debian's 3.8.0
// with a 3-server ensemble, the sessions made on a follower (clients.TestStandInLocalSessions):
//
//   - Every new session is a local session of the server it connects to: no transaction (no zxid), the
//     connect response as a global session's (readOnly byte false, the id's top byte the server's id). mntr
//     counts it in zk_local_sessions, not zk_global_sessions.
//   - It reads and writes as a global session (persistent creates, setData, sync: a zxid each as usual).
//   - An ephemeral create (create or create2 with an ephemeral flag, or a multi with one): with upgrading, the
//     server first makes the session global (a createSession transaction, one more zxid), the id unchanged,
//     then applies the request; the session then resumes on any server. Without upgrading, a create or create2
//     gets EphemeralOnLocalSession (-120) and spends a zxid; a multi gets a failed multi whose ephemeral create
//     fails with SessionExpired (-112), a zxid spent; nothing is created.
//   - Resumed on another server, a local session (upgrading or not) gets the expired-session response; it stays
//     alive on its own server, where it resumes.
//   - closeSession is answered 0 and spends no zxid; the connection closes; resuming gets expired.
//   - It expires after its timeout as a global session, spending no zxid.
//
// Also modelled, from ZooKeeper's source (not measured): a standalone server has no local sessions (its
// ServerConfig reads no localSessionsEnabled), a stopped server's local sessions are gone, and so are every
// server's when a leader election restarts them. Only sessions made over the wire (Dialer, ListenAndServe) are
// local; the model's own clients (Connect) keep global sessions.

// WithLocalSessionsUpgrading is ZooKeeper 3.8's localSessionsUpgradingEnabled=true: a local session
// (WithLocalSessions) that creates an ephemeral node is made global first rather than refused.
func WithLocalSessionsUpgrading() Option { return func(c *config) { c.localUpgrading = true } }

// localSessionsOn reports whether new read-write sessions are local: WithLocalSessions on an ensemble.
// Caller holds s.mu.
func (s *Server) localSessionsOn() bool { return s.cfg.localSessions && s.ens.size() > 1 }

// openedLocal records c's new session, a local session (core.CreateLocalSession), as one of member m.
// Caller holds s.mu.
func (s *Server) openedLocal(c *Conn, m int) {
	if s.localSess == nil {
		s.localSess = map[int64]int{}
	}
	s.localSess[c.session] = m
	s.record(c, "connect", "session %#x is a local session of server s%d", c.session, m)
}

// localElsewhere reports whether sid is a local session of a member other than m: resuming it on m gets the
// expired-session response. Caller holds s.mu.
func (s *Server) localElsewhere(sid int64, m int) bool {
	owner, ok := s.localSess[sid]
	return ok && owner != m
}

// localAnswers reports whether the server answers c's request itself because c's session is local: its
// closeSession, or an ephemeral create without upgrading. Caller holds s.mu.
func (s *Server) localAnswers(c *Conn, cl *call) bool {
	if _, ok := s.localSess[c.session]; !ok {
		return false
	}
	w := cl.wire
	switch w.op {
	case jute.OpCloseSession:
		return true
	case jute.OpCreate, jute.OpCreate2:
		return !s.cfg.localUpgrading && ephemeralFlags(w.req.Flags)
	}
	return false
}

// applyLocal answers a request localAnswers took: a closeSession ends the local session (no transaction); an
// ephemeral create gets EphemeralOnLocalSession, spending a zxid. It returns the record's detail and whether
// the server then closes the connection. Caller holds s.mu.
func (s *Server) applyLocal(c *Conn, cl *call) (string, bool) {
	w := cl.wire
	if w.op == jute.OpCloseSession {
		s.endLocalSession(c.session)
		w.frame = replyFrame(w.xid, s.core.Zxid(), 0, nil)
		return "ok (a local session)", true
	}
	s.core.SpendZxid() // the learner refuses it but forwards it: the leader's transaction fails (measured)
	w.frame = replyFrame(w.xid, s.core.Zxid(), errCodeEphemeralOnLocalSession, nil)
	return "error ephemeral on local session", false
}

// upgradeForEphemeral makes c's local session global before a request that creates an ephemeral node, with
// WithLocalSessionsUpgrading: a createSession transaction, the id unchanged. Caller holds s.mu.
func (s *Server) upgradeForEphemeral(c *Conn, cl *call) {
	if _, ok := s.localSess[c.session]; !ok || !s.cfg.localUpgrading || !createsEphemeral(&cl.wire.req) {
		return
	}
	if s.core.UpgradeSession(c.session) {
		delete(s.localSess, c.session)
		s.record(c, "upgrade", "local session %#x is made global (zxid=%d)", c.session, s.core.Zxid())
	}
}

// createsEphemeral reports whether r is a create or create2 with an ephemeral flag, or a multi with one, as
// 3.8's checkUpgradeSession reads it.
func createsEphemeral(r *jute.Request) bool {
	switch r.Header.Type {
	case jute.OpCreate, jute.OpCreate2:
		return ephemeralFlags(r.Flags)
	case jute.OpMulti:
		return slices.ContainsFunc(r.Ops, func(op jute.Request) bool {
			return (op.Header.Type == jute.OpCreate || op.Header.Type == jute.OpCreate2) && ephemeralFlags(op.Flags)
		})
	}
	return false
}

// ephemeralFlags reports whether a create's flags make an ephemeral node (EPHEMERAL, EPHEMERAL_SEQUENTIAL).
func ephemeralFlags(flags int32) bool { return flags == 1 || flags == 3 }

// errCodeEphemeralOnLocalSession is ZooKeeper's EPHEMERALONLOCALSESSION.
const errCodeEphemeralOnLocalSession = -120

// isLocalSession reports whether sid is a local session, read-write or read-only. Caller holds s.mu.
func (s *Server) isLocalSession(sid int64) bool {
	_, ok := s.localSess[sid]
	return ok || s.isReadOnlySession(sid)
}

// endLocalSession removes a read-write local session, which is no transaction. Caller holds s.mu.
func (s *Server) endLocalSession(sid int64) {
	s.core.CloseLocalSession(sid)
	delete(s.localSess, sid)
}

// endLocalSessions removes the read-write local sessions of the given members (nil: of every member), as a
// stop or a leader election does. Caller holds s.mu.
func (s *Server) endLocalSessions(members []int) {
	for _, sid := range slices.Sorted(maps.Keys(s.localSess)) {
		if members == nil || slices.Contains(members, s.localSess[sid]) {
			s.endLocalSession(sid)
			s.record(s.owner(sid), "expire", "local session %#x is gone with its server", sid)
		}
	}
}

// localSessionCount returns how many local sessions member m has (mntr's zk_local_sessions). Caller holds
// s.mu.
func (s *Server) localSessionCount(m int) int {
	n := 0
	for _, owner := range s.localSess {
		if owner == m {
			n++
		}
	}
	for _, owner := range s.roSessions {
		if owner == m {
			n++
		}
	}
	return n
}
