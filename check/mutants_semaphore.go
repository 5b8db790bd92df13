package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
)

// This file is the semaphore's side of Variants: the product's recipe.NewSemaphore, and a compact semaphore
// with Curator's algorithm (an admission mutex on path/locks, leases under path/leases) that is correct with
// no mutations and broken in one known way with each.

// semaphoreLeases is the number of leases of the semaphore variants: Config.Leases' default.
const semaphoreLeases = 2

// The semaphore's bugs (newSemMutant).
const (
	waitOutsideMutex  mutation = 1 << (iota + 10) // a waiter leaves the admission mutex and watches the leases itself
	countBeforeCreate                             // counts the leases from a listing taken before its own create, outside the mutex
	watchLeasesExists                             // waits on an exists watch of the leases directory, which no lease's change fires
	countOwnTwice                                 // counts its own lease twice: off by one, never all the leases held
)

// SemaphoreRecipe is the Factory of the product's counting semaphore (recipe.NewSemaphore) with 2 leases,
// Config.Leases' default, and deterministic node ids, for Config.Primitive Semaphore: Lock acquires a lease,
// Unlock releases it. The connection must have ChildrenW and Get (recipe.WatchConn), as *model.Conn and
// *zk.Conn do; on any other it returns nil, which the checker refuses with a sentence.
func SemaphoreRecipe(conn recipe.Conn, path string) Locker {
	return semaphoreRecipe(semaphoreLeases)(conn, path)
}

// semaphoreRecipe is the recipe's semaphore of n leases.
func semaphoreRecipe(n int) Factory {
	return func(conn recipe.Conn, path string) Locker {
		wc, ok := conn.(recipe.WatchConn)
		if !ok {
			return nil
		}
		return NewSemaphoreLocker(recipe.NewSemaphore(wc, path, n, recipe.WithRandom(RandFor(conn))))
	}
}

// semaphoreVariants are the semaphore (recipe.NewSemaphore) and the mutants of the compact semaphore. Two
// leases for three clients show the leases shared; one lease is where waiting is explored: with two, a
// third contender seldom meets both holders still holding (each holder's critical section is a few steps,
// an acquisition through the admission mutex many more).
func semaphoreVariants() []Variant {
	v := func(name, bug, expect string, leases int, bugs mutation, faults Fault) Variant {
		return Variant{Name: name, Bug: bug, Expect: expect,
			Factory: func(conn recipe.Conn, path string) Locker { return newSemMutant(conn, path, leases, bugs) },
			Config:  Config{Name: name, Faults: faults, Primitive: Semaphore, Leases: leases}}
	}
	rec := func(name string, leases int) Variant {
		return Variant{Name: name, Factory: semaphoreRecipe(leases), Config: Config{Name: name, Faults: AllFaults, Primitive: Semaphore, Leases: leases}}
	}
	return []Variant{
		rec("semaphore", semaphoreLeases),
		rec("semaphore-1-lease", 1),
		overWire(rec("semaphore", semaphoreLeases)),
		v("semaphore-mutant-control", "", "", semaphoreLeases, 0, AllFaults),
		v("semaphore-mutant-control-1-lease", "", "", 1, 0, AllFaults),
		// Four clients: two waiters, for one change to wake.
		withClients(4, v("semaphore-mutant-a-waiters-watch-leases", "a waiter leaves the admission mutex and watches the leases directory itself, so every change wakes every waiter (and waiters holding every lease wait for each other)", "no-herd|liveness", 1, waitOutsideMutex, 0)),
		v("semaphore-mutant-b-count-before-create", "counts the leases from a listing taken before its own create, outside the admission mutex: a lease taken since is missed (a holder too many), one released since is counted (it waits for a change that never comes)", "safety|liveness", semaphoreLeases, countBeforeCreate, 0),
		v("semaphore-mutant-c-exists-watch", "waits for a release on an exists watch of the leases directory, which a lease's deletion never fires", "liveness", 1, watchLeasesExists, 0),
		v("semaphore-mutant-d-count-own-twice", "counts its own lease twice, so it never lets all the leases be held", "leases-share", semaphoreLeases, countOwnTwice, AllFaults),
	}
}

// semMutant is the compact semaphore: a fixture for the checker, not a semaphore to use.
type semMutant struct {
	conn  recipe.Conn
	n     int // leases
	dir   string
	bugs  mutation
	mutex *mutant // the admission mutex, on dir/locks
	lease *mutant // the own lease, under dir/leases: its node, token and loss signal
}

func newSemMutant(conn recipe.Conn, dir string, n int, bugs mutation) *semMutant {
	rand := RandFor(conn)
	return &semMutant{conn: conn, n: n, dir: dir, bugs: bugs,
		mutex: &mutant{conn: conn, dir: dir + "/locks", rand: rand, marker: "-lock-"},
		lease: &mutant{conn: conn, dir: dir + "/leases", rand: rand, marker: "-lease-"}}
}

func (s *semMutant) has(b mutation) bool { return s.bugs&b != 0 }

// Lock acquires a lease: the admission mutex, the own lease, the wait until at most n are held.
func (s *semMutant) Lock(ctx context.Context) error {
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
	if s.has(countBeforeCreate) {
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
		case s.has(countOwnTwice):
			held++
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
		if s.has(watchLeasesExists) {
			// The bug: an exists watch on the directory fires on its data or its deletion, not its children.
			if _, _, ch, err = s.conn.ExistsW(s.lease.dir); err != nil {
				continue
			}
		}
		if s.has(waitOutsideMutex) {
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
		if s.has(waitOutsideMutex) {
			session = s.conn.SessionID()
			if err := s.mutex.Lock(ctx); err != nil {
				return s.fail(node, err)
			}
		}
	}
}

// dirs creates dir/locks and dir/leases, persistent, if they are missing.
func (s *semMutant) dirs(ctx context.Context) error {
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
func (s *semMutant) leave() error {
	if s.mutex.node == "" {
		return nil
	}
	return s.mutex.Unlock(context.Background())
}

// fail deletes the own lease and leaves the mutex.
func (s *semMutant) fail(node string, cause error) error {
	return errors.Join(s.lease.giveUp(node, cause), s.leave())
}

// Unlock releases the lease.
func (s *semMutant) Unlock(ctx context.Context) error { return s.lease.Unlock(ctx) }

// Token is the leases directory's pzxid in the listing that granted the lease.
func (s *semMutant) Token() int64 { return s.lease.token }

// Lost is closed when the lease node goes.
func (s *semMutant) Lost() <-chan struct{} { return s.lease.Lost() }
