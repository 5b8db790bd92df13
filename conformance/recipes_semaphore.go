package conformance

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
)

// watchConn is conn as a recipe.WatchConn, which the semaphore and the election need.
func watchConn(t testing.TB, conn recipe.Conn) recipe.WatchConn {
	t.Helper()
	wc, ok := conn.(recipe.WatchConn)
	if !ok {
		t.Fatalf("the RecipeEnv's connection %T has no ChildrenW or Get: the semaphore and the election need a recipe.WatchConn", conn)
	}
	return wc
}

// semaphores opens n sessions and a semaphore of leases on dir in each.
func semaphores(t *testing.T, env RecipeEnv, dir string, leases, n int) ([]*recipe.Semaphore, []recipe.Conn) {
	t.Helper()
	sems, conns := make([]*recipe.Semaphore, n), make([]recipe.Conn, n)
	for i := range sems {
		conns[i], _ = env.Connect(t)
		sems[i] = recipe.NewSemaphore(watchConn(t, conns[i]), dir, leases)
	}
	return sems, conns
}

func mustAcquire(t testing.TB, s *recipe.Semaphore) {
	t.Helper()
	if err := s.Acquire(guard(t)); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
}

func mustRelease(t testing.TB, s *recipe.Semaphore) {
	t.Helper()
	if err := s.Release(guard(t)); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

func acquireAsync(ctx context.Context, s *recipe.Semaphore) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.Acquire(ctx) }()
	return done
}

// leaseName is Curator's InterProcessSemaphoreV2 lease name, with the recipe's 32-digit ids.
var leaseName = regexp.MustCompile(`^_c_[0-9a-f]{32}-lease-[0-9]{10}$`)

// testSemaphoreLimitsHolders: two leases, three sessions: two hold at once, the third waits
// for a release, tokens grow from grant to grant, and nothing is left behind.
func testSemaphoreLimitsHolders(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	s, conns := semaphores(t, env, dir, 2, 3)
	mustAcquire(t, s[0])
	mustAcquire(t, s[1]) // returns while s[0] holds: two leases
	for _, sem := range s[:2] {
		if name := sem.Path()[len(dir+"/leases/"):]; !leaseName.MatchString(name) {
			t.Fatalf("lease node %s, want a name matching %s", sem.Path(), leaseName)
		}
	}
	done := acquireAsync(guard(t), s[2])
	waitLockNodes(t, conns[0], dir+"/leases", 3) // the third lease exists, but is not granted
	notYet(t, done, "the third Acquire")
	mustRelease(t, s[0])
	if err := result(t, done); err != nil {
		t.Fatalf("the third Acquire after a release: %v", err)
	}
	if !(s[0].Token() == 0 && s[1].Token() > 0 && s[2].Token() > s[1].Token()) {
		t.Fatalf("tokens after the handover: %d (released), %d, %d; want 0 and increasing", s[0].Token(), s[1].Token(), s[2].Token())
	}
	mustRelease(t, s[1])
	mustRelease(t, s[2])
	if nodes := LockNodes(t, conns[2], dir+"/leases"); len(nodes) != 0 {
		t.Fatalf("leases left: %v", nodes)
	}
	if nodes := LockNodes(t, conns[2], dir+"/locks"); len(nodes) != 0 {
		t.Fatalf("admission mutex nodes left: %v", nodes)
	}
}

// testSemaphoreQueue: with one lease held, of the queued acquirers only the first has a
// lease node (it holds the admission mutex and waits on the lease list); the others wait in
// the mutex's queue, each behind its predecessor, so a release wakes one of them. Releases
// then grant the lease in arrival order.
func testSemaphoreQueue(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	const waiters = 3
	s, conns := semaphores(t, env, dir, 1, waiters+1)
	mustAcquire(t, s[0])
	done := make([]<-chan error, waiters+1)
	for i := 1; i <= waiters; i++ {
		done[i] = acquireAsync(guard(t), s[i])
		waitLockNodes(t, conns[0], dir+"/locks", i) // queue them in order
	}
	// The first waiter's lease appears once it holds the mutex; the others cannot add one.
	waitLockNodes(t, conns[0], dir+"/leases", 2)
	for i := 1; i <= waiters; i++ {
		for j := i; j <= waiters; j++ {
			notYet(t, done[j], fmt.Sprintf("waiter %d's Acquire", j))
		}
		mustRelease(t, s[i-1])
		if err := result(t, done[i]); err != nil {
			t.Fatalf("waiter %d's Acquire: %v", i, err)
		}
	}
	mustRelease(t, s[waiters])
}

// testSemaphoreCancelCleansUp: the waiter that holds the admission mutex is cancelled: it
// deletes its lease and leaves the mutex, and the next waiter takes its place.
func testSemaphoreCancelCleansUp(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	s, conns := semaphores(t, env, dir, 1, 3)
	mustAcquire(t, s[0])
	ctx, cancel := context.WithCancel(guard(t))
	cancelled := acquireAsync(ctx, s[1])
	waitLockNodes(t, conns[0], dir+"/leases", 2)
	next := acquireAsync(guard(t), s[2])
	waitLockNodes(t, conns[0], dir+"/locks", 2)
	cancel()
	if err := result(t, cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire: %v, want context.Canceled", err)
	}
	// The next waiter now holds the mutex and has a lease of its own, not yet granted.
	waitLockNodes(t, conns[2], dir+"/locks", 1)
	waitLockNodes(t, conns[2], dir+"/leases", 2)
	notYet(t, next, "the next waiter's Acquire")
	mustRelease(t, s[0])
	if err := result(t, next); err != nil {
		t.Fatalf("the next waiter's Acquire: %v", err)
	}
	mustRelease(t, s[2])
	if nodes := LockNodes(t, conns[2], dir+"/leases"); len(nodes) != 0 {
		t.Fatalf("leases left: %v", nodes)
	}
}

// testSemaphoreExpiry: a lease holder's session expires: Lost() closes, Release says the
// lease was lost, and the lease is free for another session.
func testSemaphoreExpiry(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	s, conns := semaphores(t, env, dir, 1, 2)
	mustAcquire(t, s[0])
	done := acquireAsync(guard(t), s[1])
	waitLockNodes(t, conns[1], dir+"/leases", 2)
	lost := s[0].Lost()
	env.Expire(t, conns[0])
	await(t, lost, "Lost() to close after the lease holder's session expired")
	if err := result(t, done); err != nil {
		t.Fatalf("the waiter's Acquire after the holder's expiry: %v", err)
	}
	if err := s[0].Release(guard(t)); !errors.Is(err, recipe.ErrLost) {
		t.Fatalf("Release after expiry: %v, want an error wrapping recipe.ErrLost", err)
	}
	mustRelease(t, s[1])
}

// testSemaphoreBadInput: no leases, a bad path, a release without a hold and a second
// Acquire fail with their errors and create nothing.
func testSemaphoreBadInput(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	conn, _ := env.Connect(t)
	wc := watchConn(t, conn)
	if err := recipe.NewSemaphore(wc, dir, 0).Acquire(guard(t)); !errors.Is(err, recipe.ErrBadLeases) {
		t.Fatalf("Acquire with 0 leases: %v, want recipe.ErrBadLeases", err)
	}
	if err := recipe.NewSemaphore(wc, "relative", 1).Acquire(guard(t)); !errors.Is(err, recipe.ErrBadPath) {
		t.Fatalf("Acquire on a relative path: %v, want recipe.ErrBadPath", err)
	}
	if _, _, err := wc.Get(dir); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("after the refused Acquires Get(%s) = %v, want zk.ErrNoNode: nothing created", dir, err)
	}
	s := recipe.NewSemaphore(wc, dir, 1)
	if err := s.Release(guard(t)); !errors.Is(err, recipe.ErrNotLocked) {
		t.Fatalf("Release without a lease: %v, want recipe.ErrNotLocked", err)
	}
	mustAcquire(t, s)
	if err := s.Acquire(guard(t)); !errors.Is(err, recipe.ErrLocked) {
		t.Fatalf("second Acquire on one Semaphore value: %v, want recipe.ErrLocked", err)
	}
	mustRelease(t, s)
}
