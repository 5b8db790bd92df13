package mutants

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
)

// The semaphore's bugs (NewSemaphore).
const (
	WaitOutsideMutex  Bugs = 1 << (iota + 10) // a waiter leaves the admission mutex and watches the leases itself
	CountBeforeCreate                         // counts the leases from a listing taken before its own create, outside the mutex
	WatchLeasesExists                         // waits on an exists watch of the leases directory, which no lease's change fires
	CountOwnTwice                             // counts its own lease twice: off by one, never all the leases held
)

// SkipOwnLease counts the leases without its own: off by one the other way, a holder too many (leases+1 at
// once), which only a run where leases+1 clients hold at once can show.
const SkipOwnLease Bugs = 1 << 17

// Semaphore is the compact semaphore: a fixture for the checker, not a semaphore to use.
type Semaphore struct {
	conn  recipe.Conn
	n     int // leases
	dir   string
	bugs  Bugs
	mutex *Mutant // the admission mutex, on dir/locks
	lease *Mutant // the own lease, under dir/leases: its node, token and loss signal
}

// NewSemaphore is the compact semaphore of n leases with the bugs, with Curator's algorithm (an admission
// mutex on dir/locks, leases under dir/leases), its node ids read from rand. Lock acquires a lease, Unlock
// releases it.
func NewSemaphore(conn recipe.Conn, dir string, n int, bugs Bugs, rand io.Reader) *Semaphore {
	return &Semaphore{conn: conn, n: n, dir: dir, bugs: bugs,
		mutex: &Mutant{conn: conn, dir: dir + "/locks", rand: rand, marker: "-lock-"},
		lease: &Mutant{conn: conn, dir: dir + "/leases", rand: rand, marker: "-lease-"}}
}

func (s *Semaphore) has(b Bugs) bool { return s.bugs&b != 0 }

// Lock acquires a lease: the admission mutex, the own lease, the wait until at most n are held.
func (s *Semaphore) Lock(ctx context.Context) error {
	cw, ok := s.conn.(interface {
		ChildrenW(string) ([]string, *zk.Stat, <-chan zk.Event, error)
	})
	if !ok {
		return fmt.Errorf("mutant: %T has no ChildrenW", s.conn)
	}
	if err := s.dirs(ctx); err != nil {
		return err
	}
	before := -1
	if s.has(CountBeforeCreate) {
		kids, _, err := s.conn.Children(s.lease.dir)
		if err != nil {
			return fmt.Errorf("mutant: list leases: %w", err)
		}
		before = leaseCount(kids)
	}
	session := s.conn.SessionID() // the mutex's: a waiter gives up when it changes (see recipe.Semaphore)
	if err := s.mutex.Lock(ctx); err != nil {
		return err
	}
	node, err := s.lease.create(ctx)
	if err != nil {
		return errors.Join(err, s.leave())
	}
	for {
		if err := ctx.Err(); err != nil {
			return s.fail(node, err)
		}
		if s.conn.SessionID() != session {
			return s.fail(node, errMutantLost) // the mutex's session ended: another acquirer may be in
		}
		kids, stat, ch, err := cw.ChildrenW(s.lease.dir)
		if errors.Is(err, zk.ErrConnectionClosed) {
			continue
		} else if err != nil {
			return s.fail(node, err)
		}
		if !slices.Contains(kids, node[len(s.lease.dir)+1:]) {
			return s.fail(node, errMutantLost)
		}
		held := leaseCount(kids)
		switch {
		case before >= 0:
			held = before + 1 // the bug: the leases created since that listing are not counted
			before = -1       // (after a wait it counts afresh)
		case s.has(CountOwnTwice):
			held++
		case s.has(SkipOwnLease):
			held--
		}
		if held <= s.n {
			if !s.lease.take(node, nil) {
				continue
			}
			s.lease.token = stat.Pzxid
			err := s.leave()
			if err == nil && s.conn.SessionID() != session {
				err = errMutantLost // the session ended while it left the mutex: the lease went with it
			}
			if err != nil {
				s.lease.node = ""
				return s.fail(node, err)
			}
			return nil
		}
		if s.has(WatchLeasesExists) {
			// The bug: an exists watch on the directory fires on its data or its deletion, not its children.
			if _, _, ch, err = s.conn.ExistsW(s.lease.dir); err != nil {
				continue
			}
		}
		if s.has(WaitOutsideMutex) {
			if err := s.leave(); err != nil {
				return s.fail(node, err)
			}
		}
		// A cancellation wins over an event that came with it (while leave's delete was in flight, say):
		// select picks at random among ready cases, and the choice must not depend on that.
		if err := ctx.Err(); err != nil {
			return s.fail(node, err)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return s.fail(node, ctx.Err())
		}
		if s.has(WaitOutsideMutex) {
			session = s.conn.SessionID()
			if err := s.mutex.Lock(ctx); err != nil {
				return s.fail(node, err)
			}
		}
	}
}

// dirs creates dir/locks and dir/leases, persistent, if they are missing.
func (s *Semaphore) dirs(ctx context.Context) error {
	for _, d := range []string{s.mutex.dir, s.lease.dir} {
		for i := 0; ; i++ {
			_, err := s.conn.Create(d, nil, 0, zk.WorldACL(zk.PermAll))
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				break
			}
			if !errors.Is(err, zk.ErrConnectionClosed) || i >= 100 || ctx.Err() != nil {
				return fmt.Errorf("mutant: create %s: %w", d, errors.Join(err, ctx.Err()))
			}
		}
	}
	return nil
}

func leaseCount(kids []string) int {
	n := 0
	for _, k := range kids {
		if strings.Contains(k, "-lease-") {
			n++
		}
	}
	return n
}

// leave releases the admission mutex, if it is held.
func (s *Semaphore) leave() error {
	if s.mutex.node == "" {
		return nil
	}
	return s.mutex.Unlock(context.Background())
}

// fail deletes the own lease and leaves the mutex.
func (s *Semaphore) fail(node string, cause error) error {
	return errors.Join(s.lease.giveUp(node, cause), s.leave())
}

// Unlock releases the lease.
func (s *Semaphore) Unlock(ctx context.Context) error { return s.lease.Unlock(ctx) }

// Token is the leases directory's pzxid in the listing that granted the lease.
func (s *Semaphore) Token() int64 { return s.lease.token }

// Lost is closed when the lease node goes.
func (s *Semaphore) Lost() <-chan struct{} { return s.lease.Lost() }
