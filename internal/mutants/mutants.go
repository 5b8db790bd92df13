// Package mutants holds the deliberately broken locks the checker is shown to catch: a compact lock recipe,
// read-write lock, semaphore and election that are correct with no Bugs and broken in one classic way with
// each. They are fixtures for the checker's own tests (make check, make prove) and for the herd experiment,
// not locks to use; they live outside package check so that what imports them links neither package
// testing nor rapid.
package mutants

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
)

// Bugs is a set of deliberate bugs.
type Bugs uint32

const (
	WatchParent Bugs = 1 << iota
	IgnoreGone
	PlainCreate
	OrderByName
	LeaveOnCancel
	IgnoreLoss
	SessionToken

	// The read-write lock's bugs (newRWMutant):
	ReaderWaitsOnReader  // a reader waits behind its immediate predecessor, a reader too
	WriterIgnoresReaders // a writer waits behind earlier write nodes only
	ReaderAssumesHeld    // a reader whose watched write node goes holds without listing again
)

// KeepRecord keeps a persistent record of each Lock call beside its node ("_c_<id>-record", which no
// ordering reads), deleted by Unlock and left behind by a Lock that gives up: a node no session owns, which
// outlives the call that made it. (After the election's bugs: the bits below are all taken.)
const KeepRecord Bugs = 1 << 16

// NeverTold is a holder that is never told it lost: its Lost() never closes, though its token stays the
// own node's czxid, so that the fence still refuses it.
const NeverTold Bugs = 1 << 18

// Mutant is a compact lock recipe that is correct with no mutations, and broken in one known way with each.
// It is a fixture for the checker, not a lock to use.
type Mutant struct {
	conn recipe.Conn
	dir  string
	bugs Bugs
	// marker is in the own node's name after the id ("-lock-" for the mutex, "-__READ__" or "-__WRIT__"
	// for a side of the read-write lock); blockedBy, if set, says which earlier nodes keep it waiting (the
	// mutex: every earlier node).
	marker    string
	blockedBy func(name string) bool
	rand      io.Reader
	node      string
	token     int64
	lost      chan struct{}
	record    string // KeepRecord: the current Lock call's record, or ""
}

var errMutantLost = errors.New("mutant: lock node gone")

// NewMutex is the compact lock with the bugs, on dir, its node ids read from rand.
func NewMutex(conn recipe.Conn, dir string, bugs Bugs, rand io.Reader) *Mutant {
	return &Mutant{conn: conn, dir: dir, bugs: bugs, rand: rand, marker: "-lock-"}
}

const (
	readMarker  = "-__READ__"
	writeMarker = "-__WRIT__"
)

// NewRW is the compact read-write lock with the bugs: two locks on one directory, with Curator's node names,
// its write side and its read side. A reader waits behind the nearest earlier write node, a writer behind
// its immediate predecessor; each bug breaks one of the rules. Both sides read their node ids from rand.
func NewRW(conn recipe.Conn, dir string, bugs Bugs, rand io.Reader) (write, read *Mutant) {
	isWrite := func(name string) bool { return strings.Contains(name, writeMarker) }
	read = &Mutant{conn: conn, dir: dir, bugs: bugs, rand: rand, marker: readMarker, blockedBy: isWrite}
	write = &Mutant{conn: conn, dir: dir, bugs: bugs, rand: rand, marker: writeMarker, blockedBy: func(string) bool { return true }}
	if bugs&ReaderWaitsOnReader != 0 {
		read.blockedBy = write.blockedBy
	}
	if bugs&WriterIgnoresReaders != 0 {
		write.blockedBy = isWrite
	}
	write.bugs &^= ReaderAssumesHeld // a reader's bug
	return write, read
}

// predecessor returns the index in kids (sorted) of the nearest node before me that blocks it, or -1.
func (m *Mutant) predecessor(kids []string, me int) int {
	for i := me - 1; i >= 0; i-- {
		if m.blockedBy == nil || m.blockedBy(kids[i]) {
			return i
		}
	}
	return -1
}

func (m *Mutant) has(b Bugs) bool { return m.bugs&b != 0 }

// Lock acquires the lock (or fails, with the Bugs's bug).
func (m *Mutant) Lock(ctx context.Context) error {
	if m.has(KeepRecord) {
		m.keepRecord()
	}
	return m.lock(ctx) // the bug: a failed Lock leaves the record behind
}

// keepRecord creates the Lock call's persistent record, if it can.
func (m *Mutant) keepRecord() {
	var id [8]byte
	if _, err := io.ReadFull(m.rand, id[:]); err != nil {
		return
	}
	path, err := m.conn.Create(fmt.Sprintf("%s/_c_%x-record", m.dir, id), nil, 0, zk.WorldACL(zk.PermAll))
	if err == nil {
		m.record = path
	}
}

func (m *Mutant) lock(ctx context.Context) error {
	empty := false
	if m.has(LeadOnEmptyListing) {
		kids, _, err := m.conn.Children(m.dir)
		empty = err == nil && len(m.sorted(kids)) == 0
	}
	node, err := m.create(ctx)
	if err != nil {
		return err
	}
	if empty && m.take(node, nil) {
		return nil // the bug: another candidate may have looked, found it empty and created its node first
	}
	for {
		if err := ctx.Err(); err != nil {
			return m.giveUp(node, err)
		}
		var (
			kids   []string
			parent <-chan zk.Event
			stat   *zk.Stat
		)
		if m.has(WatchParent) {
			// The herd-prone classic: list with a watch on the parent, so every change wakes every waiter.
			kids, parent, err = m.childrenW()
		} else {
			kids, stat, err = m.conn.Children(m.dir)
		}
		if err != nil {
			if errors.Is(err, zk.ErrConnectionClosed) {
				continue // connection trouble: list again
			}
			return m.giveUp(node, err)
		}
		kids = m.sorted(kids)
		me := -1
		for i, k := range kids {
			if m.dir+"/"+k == node {
				me = i
			}
		}
		if me < 0 {
			return errMutantLost
		}
		pred := m.predecessor(kids, me)
		if pred > 0 && m.has(WatchLowest) {
			pred = 0 // the bug: every candidate watches the leader, and its end wakes them all
		}
		if pred < 0 {
			if m.take(node, stat) {
				return nil
			}
			continue
		}
		ch := parent
		if !m.has(WatchParent) {
			var ok bool
			ok, _, ch, err = m.conn.ExistsW(m.dir + "/" + kids[pred])
			if err == nil && !ok && !m.has(IgnoreGone) {
				continue
			}
		}
		if err != nil {
			continue
		}
		if err := ctx.Err(); err != nil { // a cancellation wins over an event that came with it
			return m.giveUp(node, err)
		}
		select {
		case <-ch:
			// The bug: the write node it waited behind is gone, so it must hold — but a writer that gave up
			// while waiting leaves its own predecessor holding.
			if m.has(ReaderAssumesHeld) {
				if _, stat, err := m.conn.Children(m.dir); err == nil && m.take(node, stat) {
					return nil // the listing's names go unread: only its pzxid, for the token
				}
			}
		case <-ctx.Done():
			return m.giveUp(node, ctx.Err())
		}
	}
}

// take makes the own node the hold, if it still exists. The token is the node's czxid — or, for a side of
// the read-write lock, the directory's pzxid in the listing that let it hold, as the recipe's: a reader's
// czxid may be below that of a writer it let go first.
func (m *Mutant) take(node string, listing *zk.Stat) bool {
	ok, st, own, err := m.conn.ExistsW(node)
	if err != nil || !ok {
		return false
	}
	m.node, m.token, m.lost = node, st.Czxid, make(chan struct{})
	if m.blockedBy != nil && listing != nil {
		m.token = listing.Pzxid
	}
	if m.has(SessionToken) {
		m.token = m.conn.SessionID() // the bug: a later holder may have an older session
	}
	m.followOwn(own)
	return true
}

// childrenW lists the lock's children and watches the parent.
func (m *Mutant) childrenW() ([]string, <-chan zk.Event, error) {
	cw, ok := m.conn.(interface {
		ChildrenW(string) ([]string, *zk.Stat, <-chan zk.Event, error)
	})
	if !ok {
		return nil, nil, fmt.Errorf("mutant: %T has no ChildrenW", m.conn)
	}
	kids, _, ch, err := cw.ChildrenW(m.dir)
	return kids, ch, err
}

func (m *Mutant) create(ctx context.Context) (string, error) {
	var id [8]byte
	if _, err := io.ReadFull(m.rand, id[:]); err != nil {
		return "", err
	}
	prefix := fmt.Sprintf("_c_%x%s", id, m.marker)
	if m.has(PlainCreate) {
		prefix = "lock-"
	}
	for i := 0; i < 100; i++ {
		if ctx.Err() != nil {
			return "", ctx.Err() // nothing created yet, or the lookup below found nothing
		}
		node, err := m.conn.Create(m.dir+"/"+prefix, nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
		if err == nil {
			return node, nil
		}
		if !errors.Is(err, zk.ErrConnectionClosed) {
			return "", err
		}
		if m.has(PlainCreate) {
			continue // the bug: the first create may have happened
		}
		// Did the lost create happen? Look for our id before creating again, cancelled or not: a node
		// found is returned, and Lock deletes it if the context is done.
		var kids []string
		for j := 0; j < 100; j++ {
			if kids, _, err = m.conn.Children(m.dir); !errors.Is(err, zk.ErrConnectionClosed) {
				break
			}
		}
		if err != nil {
			return "", fmt.Errorf("mutant: looking for a lost create: %w", err)
		}
		for _, k := range kids {
			if strings.HasPrefix(k, prefix) {
				return m.dir + "/" + k, nil
			}
		}
	}
	return "", errors.New("mutant: create kept failing")
}

func (m *Mutant) giveUp(node string, cause error) error {
	if !m.has(LeaveOnCancel) {
		for i := 0; i < 10; i++ {
			err := m.conn.Delete(node, -1)
			if err == nil || errors.Is(err, zk.ErrNoNode) {
				break
			}
		}
	}
	return fmt.Errorf("mutant: gave up: %w", cause)
}

// sorted orders lock nodes by sequence number (or, with OrderByName, by name).
func (m *Mutant) sorted(kids []string) []string {
	var locks []string
	for _, k := range kids {
		if _, ok := seqOf(k); ok {
			locks = append(locks, k)
		}
	}
	sort.Slice(locks, func(i, j int) bool {
		if m.has(OrderByName) {
			return locks[i] < locks[j]
		}
		a, _ := seqOf(locks[i])
		b, _ := seqOf(locks[j])
		return a < b
	})
	return locks
}

// seqOf reads the sequence number after a node's marker ("lock-", or the read-write lock's).
func seqOf(name string) (int64, bool) {
	for _, marker := range []string{"lock-", readMarker, writeMarker, latchMarker} {
		if i := strings.LastIndex(name, marker); i >= 0 {
			n, err := strconv.ParseInt(name[i+len(marker):], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// followOwn closes lost when the own node goes (deleted, or the session ended) — unless the holder ignores it.
func (m *Mutant) followOwn(own <-chan zk.Event) {
	if m.has(IgnoreLoss) || m.has(NeverTold) {
		return
	}
	lost, node := m.lost, m.node
	go func() {
		// The first wait is on the watch Lock set: asking again could arrive after the node's deletion
		// by Unlock and leave a watch on a path that never returns.
		for failures, ch := 0, own; ; ch = nil {
			if ch == nil {
				ok, _, w, err := m.conn.ExistsW(node)
				if err != nil {
					if failures++; failures < 100 && errors.Is(err, zk.ErrConnectionClosed) {
						continue
					}
					close(lost)
					return
				}
				if !ok {
					close(lost)
					return
				}
				ch = w
			}
			ev := <-ch
			if ev.Type == zk.EventNodeDataChanged {
				continue
			}
			if ev.Type != zk.EventNodeDeleted && ev.Err == nil {
				continue
			}
			close(lost)
			return
		}
	}()
}

// Lost is closed when the holder loses its node (never, with IgnoreLoss).
func (m *Mutant) Lost() <-chan struct{} {
	if m.lost == nil {
		return nil
	}
	return m.lost
}

// Token is the own node's czxid (0, "no token", with IgnoreLoss; the session id, with SessionToken).
func (m *Mutant) Token() int64 {
	if m.has(IgnoreLoss) {
		return 0
	}
	return m.token
}

// Unlock deletes the own node (and, with KeepRecord, the Lock call's record first).
func (m *Mutant) Unlock(ctx context.Context) error {
	if m.record != "" {
		if err := m.conn.Delete(m.record, -1); err == nil || errors.Is(err, zk.ErrNoNode) {
			m.record = ""
		}
	}
	node := m.node
	if node == "" {
		return errors.New("mutant: not locked")
	}
	m.node = ""
	var err error
	for i := 0; i < 10 && ctx.Err() == nil; i++ {
		err = m.conn.Delete(node, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if !errors.Is(err, zk.ErrConnectionClosed) {
			return err
		}
	}
	return fmt.Errorf("mutant: unlock: %w", err)
}

// The election's bugs (the compact lock's, as an election).
const (
	LeadOnEmptyListing Bugs = 1 << (iota + 14) // leads when the directory was empty before its create, unconfirmed
	WatchLowest                                // a candidate watches the lowest node, the leader, not its predecessor
)

// latchMarker is in an election node's name after the id, as in Curator's LeaderLatch and the recipe's.
const latchMarker = "-latch-"

// NewElection is the compact lock with the bugs as an election: its nodes named as LeaderLatch's. Lock
// campaigns until it leads, Unlock resigns.
func NewElection(conn recipe.Conn, dir string, bugs Bugs, rand io.Reader) *Mutant {
	m := NewMutex(conn, dir, bugs, rand)
	m.marker = latchMarker
	return m
}
