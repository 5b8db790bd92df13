package conformance

import (
	"context"
	"errors"
	"testing"

	"github.com/zkmodel/zkmodel/recipe"
)

// notYet fails the test if the Lock whose result arrives on done has returned: it must
// still be waiting, because a conflicting hold is in place.
func notYet(t testing.TB, done <-chan error, who string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v) while a conflicting hold was in place", who, err)
	default:
	}
}

// testReadersShare: readers hold at once; a writer waits for every reader before it, and a
// reader behind a writer waits for the writer.
func testReadersShare(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	connA, _ := env.Connect(t)
	connB, _ := env.Connect(t)
	connW, _ := env.Connect(t)
	connD, _ := env.Connect(t)
	a := recipe.NewRWLock(connA, dir).ReadLock()
	b := recipe.NewRWLock(connB, dir).ReadLock()
	w := recipe.NewRWLock(connW, dir).WriteLock()
	d := recipe.NewRWLock(connD, dir).ReadLock()
	mustLock(t, a)
	mustLock(t, b) // returns while a holds: readers share
	wDone := lockAsync(guard(t), w)
	waitLockNodes(t, connA, dir, 3)
	notYet(t, wDone, "the writer's Lock")
	mustUnlock(t, a)
	notYet(t, wDone, "the writer's Lock (one reader left)")
	mustUnlock(t, b)
	if err := result(t, wDone); err != nil {
		t.Fatalf("writer Lock: %v", err)
	}
	dDone := lockAsync(guard(t), d)
	waitLockNodes(t, connA, dir, 2)
	notYet(t, dDone, "a reader's Lock behind the writer")
	mustUnlock(t, w)
	if err := result(t, dDone); err != nil {
		t.Fatalf("reader Lock after the writer: %v", err)
	}
	mustUnlock(t, d)
}

// testRWArrivalOrder: W1 holds; R1, W2, R2 queue in that order. W1's release lets R1 in
// but not W2 (R1 holds) nor R2 (W2 is before it); R1's lets W2 in; W2's lets R2 in.
func testRWArrivalOrder(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	conns := make([]recipe.Conn, 4)
	for i := range conns {
		conns[i], _ = env.Connect(t)
	}
	w1 := recipe.NewRWLock(conns[0], dir).WriteLock()
	r1 := recipe.NewRWLock(conns[1], dir).ReadLock()
	w2 := recipe.NewRWLock(conns[2], dir).WriteLock()
	r2 := recipe.NewRWLock(conns[3], dir).ReadLock()
	mustLock(t, w1)
	r1Done := lockAsync(guard(t), r1)
	waitLockNodes(t, conns[0], dir, 2)
	w2Done := lockAsync(guard(t), w2)
	waitLockNodes(t, conns[0], dir, 3)
	r2Done := lockAsync(guard(t), r2)
	waitLockNodes(t, conns[0], dir, 4)
	notYet(t, r1Done, "R1")
	mustUnlock(t, w1)
	if err := result(t, r1Done); err != nil {
		t.Fatalf("R1 Lock: %v", err)
	}
	notYet(t, w2Done, "W2 while R1 holds")
	notYet(t, r2Done, "R2 behind the waiting W2")
	mustUnlock(t, r1)
	if err := result(t, w2Done); err != nil {
		t.Fatalf("W2 Lock: %v", err)
	}
	notYet(t, r2Done, "R2 while W2 holds")
	if w2.Token() <= 0 {
		t.Fatalf("W2's token %d", w2.Token())
	}
	mustUnlock(t, w2)
	if err := result(t, r2Done); err != nil {
		t.Fatalf("R2 Lock: %v", err)
	}
	mustUnlock(t, r2)
	// Listed through R2's session, the last to delete: another session's server may not have applied it yet.
	if nodes := LockNodes(t, conns[3], dir); len(nodes) != 0 {
		t.Fatalf("lock nodes left: %v", nodes)
	}
}

// testReaderCancelCleansUp: a reader waiting behind a writer, cancelled, returns the
// context's error and leaves no node behind.
func testReaderCancelCleansUp(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	connW, _ := env.Connect(t)
	connR, _ := env.Connect(t)
	w := recipe.NewRWLock(connW, dir).WriteLock()
	r := recipe.NewRWLock(connR, dir).ReadLock()
	mustLock(t, w)
	ctx, cancel := context.WithCancel(guard(t))
	done := lockAsync(ctx, r)
	waitLockNodes(t, connW, dir, 2)
	cancel()
	if err := result(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled reader's Lock: %v, want context.Canceled", err)
	}
	// Listed through the reader's session, which deleted its node: the writer's server may lag behind.
	if nodes := LockNodes(t, connR, dir); len(nodes) != 1 || dir+"/"+nodes[0] != w.Path() {
		t.Fatalf("after the cancelled reader: nodes %v, want only the writer's %s", nodes, w.Path())
	}
	mustUnlock(t, w)
}
