package model

import (
	"slices"
	"time"

	"github.com/zkmodel/zkmodel/model/internal/core"
)

// This file is the servers' connection expiry queue, as dump shows it. A ZooKeeper 3.8 server (its NIO
// connection factory) keeps every client connection in an expiry queue of 10-second buckets: a connection is
// put in the bucket of the next multiple of 10 s after now plus its timeout — 10 s (sessionlessCnxnTimeout)
// until it has a session, the session's timeout after — when it is accepted and each time a packet of it is
// read. A bucket stays, empty or not, until its time passes; dump lists them all ("Connections Sets
// (buckets)/(connections)", then "<n> expire at <date>:" and the bucket's connections), so connections closed
// in the last seconds leave empty buckets behind. Measured on Debian's 3.8.0 (tickTime 2000: buckets 10 s
// apart whatever the tick; a word asked twice 12 s apart lists "0 expire at" the first one's bucket).

// Sessions are in an expiry queue of their own on the leader (or the standalone server), of tick-wide
// buckets, which dump lists alike: "Session Sets (buckets)/(sessions)", the empty buckets a session left
// when it was heard from included (measured: a kazoo session with a 10 s timeout on tickTime 2000 leaves one
// every ping, three listed at once).

// cnxnExpiryInterval is the queue's bucket width and a connection's timeout until it has a session, in
// virtual milliseconds (zookeeper.nio.sessionlessCnxnTimeout's default).
const cnxnExpiryInterval = 10_000

// cnxnBucket returns the bucket a connection touched at now with the given timeout (milliseconds) falls in:
// the next multiple of the interval after now+timeout, as ZooKeeper's ExpiryQueue rounds.
func cnxnBucket(now, timeout int64) int64 {
	return ((now+timeout)/cnxnExpiryInterval + 1) * cnxnExpiryInterval
}

// touchLink puts l in the bucket for now: at its accept and for each frame read. Caller holds s.mu.
func (s *Server) touchLink(l *wireLink) {
	timeout := int64(cnxnExpiryInterval)
	if c := l.slot; c != nil && c.link == l && c.session != 0 {
		if sess, ok := s.core.Session(c.session); ok {
			timeout = sess.Timeout.Milliseconds()
		}
	}
	at := cnxnBucket(s.core.Now(), timeout)
	if at == l.expiry {
		return
	}
	l.expiry = at
	if s.wire.buckets == nil {
		s.wire.buckets = map[int]map[int64]bool{}
	}
	s.wire.buckets[l.member] = addBucket(s.wire.buckets[l.member], at, s.core.Now())
}

// cnxnSets returns member's buckets that have not passed yet, in time order, with those of conns (each
// connection's bucket) added: dump's "Connections Sets". Caller holds s.mu.
func (s *Server) cnxnSets(member int, conns []int64) []int64 {
	return liveBuckets(s.wire.buckets[member], s.core.Now(), conns)
}

// heard records that the server heard from sess now, leaving its old expiry bucket behind. Caller holds s.mu.
func (s *Server) heard(sid int64) {
	if sess, ok := s.core.Session(sid); ok {
		s.heardWithTimeout(sess, sess.Timeout)
	}
}

// heardWithTimeout is heard for a session that reconnected with a new timeout. Caller holds s.mu.
func (s *Server) heardWithTimeout(sess core.SessionInfo, timeout time.Duration) {
	old := s.sessionDeadline(sess)
	s.core.Heard(sess.ID, timeout)
	sess.Timeout, sess.LastHeard = timeout, s.core.Now()
	if s.sessionDeadline(sess) != old {
		s.sessionSets = addBucket(s.sessionSets, old, s.core.Now())
	}
}

// addBucket adds at to set (made when nil) and drops the buckets that have passed at now, so that a set
// holds no more buckets than a timeout spans however long the server runs. It returns the set.
func addBucket(set map[int64]bool, at, now int64) map[int64]bool {
	if set == nil {
		set = map[int64]bool{}
	}
	for t := range set {
		if t <= now {
			delete(set, t)
		}
	}
	set[at] = true
	return set
}

// sessionSetTimes returns the session expiry buckets that have not passed, those of sessions (each
// session's deadline) included, in time order. Caller holds s.mu.
func (s *Server) sessionSetTimes(deadlines []int64) []int64 {
	return liveBuckets(s.sessionSets, s.core.Now(), deadlines)
}

// liveBuckets returns the buckets of set that have not passed at now (the expirer has taken the others),
// with current added, in time order, each once.
func liveBuckets(set map[int64]bool, now int64, current []int64) []int64 {
	var times []int64
	for at := range set {
		if at > now {
			times = append(times, at)
		}
	}
	for _, at := range current {
		if !slices.Contains(times, at) {
			times = append(times, at)
		}
	}
	slices.Sort(times)
	return times
}
