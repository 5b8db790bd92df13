package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
)

// RecipeEnv is a ZooKeeper deployment the recipe rules (RunRecipes) can open sessions on and inject faults
// into. Unlike Target, whose fault hooks are optional, every method is needed: each recipe is checked under
// expiry and disconnection.
type RecipeEnv interface {
	// Connect opens a new session, waits until it is established, and closes it when
	// the test ends. events carries that session's state events (zk.EventSession) and
	// is read by nobody else.
	Connect(t testing.TB) (conn recipe.Conn, events <-chan zk.Event)
	// Expire makes the server expire conn's session. It returns once the server has
	// expired it; the client may learn of it later, as with a real partition.
	Expire(t testing.TB, conn recipe.Conn)
	// Disconnect cuts conn off from the server without ending its session.
	Disconnect(t testing.TB, conn recipe.Conn)
	// Reconnect lets conn reach the server again after Disconnect.
	Reconnect(t testing.TB, conn recipe.Conn)
}

// RunRecipes checks the behaviour of recipe's lock, read-write lock, semaphore and election against env, each
// rule as a subtest named after it. It is Run's counterpart for the recipes rather than the server: the same
// rules hold on the in-memory model (recipe's tests) and on a real 3-server ensemble (realzk's tests). Each rule
// works under a fresh directory of its own (/conformance-recipes/<test name>-<random>), so a shared server
// will do.
func RunRecipes(t *testing.T, env RecipeEnv) {
	t.Run("HandoffIsExclusiveAndTokensIncrease", func(t *testing.T) { testHandoff(t, env) })
	t.Run("TokenIncreasesAcrossHolders", func(t *testing.T) { testTokenSequence(t, env) })
	t.Run("NonLockChildrenIgnored", func(t *testing.T) { testForeignChildren(t, env) })
	t.Run("CancelCleansUp", func(t *testing.T) { testCancel(t, env) })
	t.Run("LockTwiceIsAnError", func(t *testing.T) { testLockTwice(t, env) })
	t.Run("UnlockWhenNotHeld", func(t *testing.T) { testUnlockNotHeld(t, env) })
	t.Run("ExpiryWhileHoldingClosesLost", func(t *testing.T) { testExpiryWhileHolding(t, env) })
	t.Run("ExpiryWhileWaitingFailsLock", func(t *testing.T) { testExpiryWhileWaiting(t, env) })
	t.Run("DisconnectKeepsHoldByDefault", func(t *testing.T) { testDisconnectKeepsHold(t, env) })
	t.Run("SuspendOnDisconnectClosesLost", func(t *testing.T) { testSuspend(t, env) })
	t.Run("OneWatchEventPerRelease", func(t *testing.T) { RunOneEventPerRelease(t, env, 8) })
	t.Run("RWReadersShare", func(t *testing.T) { testReadersShare(t, env) })
	t.Run("RWArrivalOrder", func(t *testing.T) { testRWArrivalOrder(t, env) })
	t.Run("RWReaderCancelCleansUp", func(t *testing.T) { testReaderCancelCleansUp(t, env) })
	t.Run("SemaphoreLimitsHolders", func(t *testing.T) { testSemaphoreLimitsHolders(t, env) })
	t.Run("SemaphoreQueue", func(t *testing.T) { testSemaphoreQueue(t, env) })
	t.Run("SemaphoreCancelCleansUp", func(t *testing.T) { testSemaphoreCancelCleansUp(t, env) })
	t.Run("SemaphoreExpiry", func(t *testing.T) { testSemaphoreExpiry(t, env) })
	t.Run("SemaphoreBadInput", func(t *testing.T) { testSemaphoreBadInput(t, env) })
	t.Run("ElectionSuccession", func(t *testing.T) { testElectionSuccession(t, env) })
	t.Run("ElectionLeaderExpiry", func(t *testing.T) { testElectionLeaderExpiry(t, env) })
	t.Run("ElectionWithdraw", func(t *testing.T) { testElectionWithdraw(t, env) })
}

// recipeDir returns a fresh lock directory for one test, so tests can share an ensemble.
func recipeDir(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return "/conformance-recipes/" + name + "-" + hex.EncodeToString(b[:])
}

// hangGuard bounds every wait of the suite, so a bug fails a test instead of hanging
// it. It is no timing assertion: healthy runs finish far sooner.
const hangGuard = 60 * time.Second

func guard(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// await fails the test if ch does not close within the hang guard.
func await(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(hangGuard):
		t.Fatalf("%s did not happen within %v", what, hangGuard)
	}
}

// eventually polls cond until it holds, failing the test after the hang guard.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, hangGuard)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// LockNodes lists the lock nodes (names starting "_c_") under dir, sorted by name.
func LockNodes(t testing.TB, conn recipe.Conn, dir string) []string {
	t.Helper()
	names, _, err := conn.Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	} else if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	var nodes []string
	for _, n := range names {
		if strings.HasPrefix(n, "_c_") {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	return nodes
}

func waitLockNodes(t testing.TB, conn recipe.Conn, dir string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d lock nodes under %s", n, dir), func() bool { return len(LockNodes(t, conn, dir)) == n })
}

func mustLock(t testing.TB, l *recipe.Lock) {
	t.Helper()
	if err := l.Lock(guard(t)); err != nil {
		t.Fatalf("Lock: %v", err)
	}
}

func mustUnlock(t testing.TB, l *recipe.Lock) {
	t.Helper()
	if err := l.Unlock(guard(t)); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// lockAsync starts Lock in a goroutine and returns the channel its result arrives on.
func lockAsync(ctx context.Context, l *recipe.Lock) <-chan error {
	done := make(chan error, 1)
	go func() { done <- l.Lock(ctx) }()
	return done
}

func result(t testing.TB, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(hangGuard):
		t.Fatalf("Lock did not return within %v", hangGuard)
		return nil
	}
}

// testHandoff runs several sessions that each take the lock a few times, and checks
// that no two hold it at once and that tokens strictly increase in holding order.
func testHandoff(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	const sessions, rounds = 4, 5
	var (
		holders atomic.Int32
		mu      sync.Mutex
		tokens  []int64
		wg      sync.WaitGroup
	)
	for range sessions {
		conn, _ := env.Connect(t)
		l := recipe.NewLock(conn, dir)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := l.Lock(guard(t)); err != nil {
					t.Errorf("Lock: %v", err)
					return
				}
				if n := holders.Add(1); n != 1 {
					t.Errorf("%d holders at once", n)
				}
				mu.Lock()
				tokens = append(tokens, l.Token())
				mu.Unlock()
				holders.Add(-1)
				if err := l.Unlock(guard(t)); err != nil {
					t.Errorf("Unlock: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(tokens) != sessions*rounds {
		t.Fatalf("got %d acquisitions, want %d", len(tokens), sessions*rounds)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("token %d of acquisition %d is not above %d of the one before: %v", tokens[i], i, tokens[i-1], tokens)
		}
	}
}

// testTokenSequence checks the token of a waiter that takes over is above its
// predecessor's, and that Token, Path and Lost describe only a current hold.
func testTokenSequence(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	connA, _ := env.Connect(t)
	connB, _ := env.Connect(t)
	a, b := recipe.NewLock(connA, dir), recipe.NewLock(connB, dir)
	if a.Token() != 0 || a.Path() != "" {
		t.Fatalf("before Lock: Token %d, Path %q; want 0 and \"\"", a.Token(), a.Path())
	}
	await(t, a.Lost(), "Lost() of an unheld lock to be closed")
	mustLock(t, a)
	if !strings.HasPrefix(a.Path(), dir+"/_c_") || a.Token() <= 0 {
		t.Fatalf("held: Path %q, Token %d; want a node under %s and a positive token", a.Path(), a.Token(), dir)
	}
	done := lockAsync(guard(t), b)
	waitLockNodes(t, connA, dir, 2)
	tokenA := a.Token()
	mustUnlock(t, a)
	if err := result(t, done); err != nil {
		t.Fatalf("waiter Lock: %v", err)
	}
	if b.Token() <= tokenA {
		t.Fatalf("waiter token %d is not above holder token %d", b.Token(), tokenA)
	}
	mustUnlock(t, b)
	mustLock(t, a)
	if a.Token() <= tokenA {
		t.Fatalf("second token %d of the same Lock is not above its first %d", a.Token(), tokenA)
	}
	mustUnlock(t, a)
}

// testForeignChildren puts children that are not lock nodes in the directory, some
// with names that look almost like lock nodes, and checks the lock ignores them.
func testForeignChildren(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	conn, _ := env.Connect(t)
	l := recipe.NewLock(conn, dir)
	mustLock(t, l) // creates the directory
	mustUnlock(t, l)
	for _, name := range []string{"config", "lock-0000000000", "_c_XYZ-lock-0000000001", "_c_abc-lock-x", "_c_abc-lock-99999999999", "_c_-lock-0000000002"} {
		if _, err := conn.Create(dir+"/"+name, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	mustLock(t, l)
	mustUnlock(t, l)
}

// testCancel cancels a waiter and checks that its node is gone when Lock returns, so
// that the next waiter does not wait behind a ghost.
func testCancel(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	connA, _ := env.Connect(t)
	connB, _ := env.Connect(t)
	connC, _ := env.Connect(t)
	a, b, c := recipe.NewLock(connA, dir), recipe.NewLock(connB, dir), recipe.NewLock(connC, dir)
	mustLock(t, a)

	ctx, cancel := context.WithCancel(context.Background())
	done := lockAsync(ctx, b)
	waitLockNodes(t, connA, dir, 2)
	cancel()
	err := result(t, done)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock returned %v, want an error wrapping context.Canceled", err)
	}
	// Listed through the cancelled client's own session: ZooKeeper promises a session its own writes, not
	// another session's at once (connA's server may not have applied B's delete yet).
	if nodes := LockNodes(t, connB, dir); len(nodes) != 1 || dir+"/"+nodes[0] != a.Path() {
		t.Fatalf("after cancel the lock nodes are %v, want only the holder's %s", nodes, a.Path())
	}

	ctx, cancelTimeout := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelTimeout()
	if err := c.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with a timeout returned %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if nodes := LockNodes(t, connC, dir); len(nodes) != 1 {
		t.Fatalf("after timeout the lock nodes are %v, want only the holder's", nodes)
	}
	mustUnlock(t, a)
	mustLock(t, b) // would block forever behind a leaked node
	mustUnlock(t, b)
}

// testLockTwice checks that a second Lock on a held Lock value fails at once.
func testLockTwice(t *testing.T, env RecipeEnv) {
	conn, _ := env.Connect(t)
	l := recipe.NewLock(conn, recipeDir(t))
	mustLock(t, l)
	if err := l.Lock(guard(t)); !errors.Is(err, recipe.ErrLocked) {
		t.Fatalf("second Lock returned %v, want recipe.ErrLocked", err)
	}
	mustUnlock(t, l)
	mustLock(t, l)
	mustUnlock(t, l)
}

// testUnlockNotHeld checks Unlock without a hold, and twice, fails with ErrNotLocked.
func testUnlockNotHeld(t *testing.T, env RecipeEnv) {
	conn, _ := env.Connect(t)
	l := recipe.NewLock(conn, recipeDir(t))
	if err := l.Unlock(guard(t)); !errors.Is(err, recipe.ErrNotLocked) {
		t.Fatalf("Unlock before Lock returned %v, want recipe.ErrNotLocked", err)
	}
	mustLock(t, l)
	mustUnlock(t, l)
	if err := l.Unlock(guard(t)); !errors.Is(err, recipe.ErrNotLocked) {
		t.Fatalf("second Unlock returned %v, want recipe.ErrNotLocked", err)
	}
	if bad := recipe.NewLock(conn, "no-slash"); !errors.Is(bad.Lock(guard(t)), recipe.ErrBadPath) {
		t.Fatal("Lock on a relative path did not fail with recipe.ErrBadPath")
	}
}

// testExpiryWhileHolding expires the holder's session: Lost() closes, Unlock says the
// lock was lost, and another session can take the lock.
func testExpiryWhileHolding(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	connA, _ := env.Connect(t)
	connB, _ := env.Connect(t)
	a, b := recipe.NewLock(connA, dir), recipe.NewLock(connB, dir)
	mustLock(t, a)
	lost := a.Lost()
	select {
	case <-lost:
		t.Fatal("Lost() closed before anything happened")
	default:
	}
	env.Expire(t, connA)
	await(t, lost, "Lost() to close after session expiry")
	if err := a.Unlock(guard(t)); !errors.Is(err, recipe.ErrLost) {
		t.Fatalf("Unlock after expiry returned %v, want an error wrapping recipe.ErrLost", err)
	}
	mustLock(t, b)
	mustUnlock(t, b)
	mustLock(t, a) // the Lock value is usable again, on the connection's new session
	mustUnlock(t, a)
}

// testExpiryWhileWaiting expires a waiter's session: its Lock fails with ErrLost and
// the holder keeps the lock.
func testExpiryWhileWaiting(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	connA, _ := env.Connect(t)
	connB, _ := env.Connect(t)
	a, b := recipe.NewLock(connA, dir), recipe.NewLock(connB, dir)
	mustLock(t, a)
	done := lockAsync(guard(t), b)
	waitLockNodes(t, connA, dir, 2)
	env.Expire(t, connB)
	if err := result(t, done); !errors.Is(err, recipe.ErrLost) {
		t.Fatalf("Lock of an expired waiter returned %v, want an error wrapping recipe.ErrLost", err)
	}
	select {
	case <-a.Lost():
		t.Fatal("the holder's Lost() closed when a waiter expired")
	default:
	}
	waitLockNodes(t, connA, dir, 1)
	mustUnlock(t, a)
}

// testDisconnectKeepsHold: without the suspend option a short disconnection that the
// session survives leaves the hold intact.
func testDisconnectKeepsHold(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	conn, _ := env.Connect(t)
	l := recipe.NewLock(conn, dir)
	mustLock(t, l)
	env.Disconnect(t, conn)
	env.Reconnect(t, conn)
	if nodes := LockNodes(t, conn, dir); len(nodes) != 1 { // a round trip after reconnecting
		t.Fatalf("lock nodes after reconnect: %v, want the holder's only", nodes)
	}
	select {
	case <-l.Lost():
		t.Fatal("Lost() closed on a disconnection without the suspend option")
	default:
	}
	mustUnlock(t, l)
}

// testSuspend: with WithSuspendOnDisconnect, Lost() closes on disconnection; after
// reconnecting with the session intact, Unlock succeeds.
func testSuspend(t *testing.T, env RecipeEnv) {
	dir := recipeDir(t)
	conn, events := env.Connect(t)
	l := recipe.NewLock(conn, dir, recipe.WithSuspendOnDisconnect(events))
	mustLock(t, l)
	env.Disconnect(t, conn)
	await(t, l.Lost(), "Lost() to close on disconnection with WithSuspendOnDisconnect")
	env.Reconnect(t, conn)
	mustUnlock(t, l)
}

// RunOneEventPerRelease queues waiters behind a holder and checks that each release
// delivers exactly one watch event to the waiters: no herd. RunRecipes runs it with 8 waiters.
func RunOneEventPerRelease(t *testing.T, env RecipeEnv, waiters int) {
	dir := recipeDir(t)
	holderConn, _ := env.Connect(t)
	holder := recipe.NewLock(holderConn, dir)
	mustLock(t, holder)

	var events atomic.Int64
	locks := make([]*recipe.Lock, waiters)
	results := make([]<-chan error, waiters)
	for i := range waiters {
		conn, _ := env.Connect(t)
		locks[i] = recipe.NewLock(&countingConn{Conn: conn, Events: &events}, dir)
		results[i] = lockAsync(guard(t), locks[i])
		waitLockNodes(t, holderConn, dir, i+2) // queue them in order
	}
	prev := holder
	for i := range waiters {
		mustUnlock(t, prev)
		if err := result(t, results[i]); err != nil {
			t.Fatalf("waiter %d: %v", i, err)
		}
		if got := events.Load(); got != int64(i+1) {
			t.Fatalf("after %d releases the waiters got %d watch events, want %d", i+1, got, i+1)
		}
		prev = locks[i]
	}
	mustUnlock(t, prev)
}

// countingConn counts the watch events delivered on a connection's watches on nodes
// other than those it created itself (its own lock node's watch fires on its release).
type countingConn struct {
	recipe.Conn
	Events *atomic.Int64

	mu      sync.Mutex
	created map[string]bool
}

// Create records the created path and passes the call on.
func (c *countingConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	p, err := c.Conn.Create(path, data, flags, acl)
	if err == nil {
		c.mu.Lock()
		if c.created == nil {
			c.created = map[string]bool{}
		}
		c.created[p] = true
		c.mu.Unlock()
	}
	return p, err
}

// ExistsW passes the call on and counts the events its watch delivers.
func (c *countingConn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	ok, stat, ch, err := c.Conn.ExistsW(path)
	if err != nil {
		return ok, stat, ch, err
	}
	c.mu.Lock()
	own := c.created[path]
	c.mu.Unlock()
	if own {
		return ok, stat, ch, err
	}
	counted := make(chan zk.Event, 1)
	go func() {
		defer close(counted)
		for ev := range ch {
			c.Events.Add(1)
			counted <- ev
		}
	}()
	return ok, stat, counted, err
}
