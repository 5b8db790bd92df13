package recipe_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/recipe"
)

// The recipe runs unchanged on the model.
var _ recipe.Conn = (*model.Conn)(nil)

// TestLockOnModel runs the behavioural suite on the model with its default
// transport, where every call executes at once.
func TestLockOnModel(t *testing.T) {
	conformance.RunRecipes(t, &modelEnv{srv: model.NewServer(model.WithSeed(1))})
}

// TestNoHerdOnModel checks with many waiters that each release wakes one waiter only.
func TestNoHerdOnModel(t *testing.T) {
	conformance.RunOneEventPerRelease(t, &modelEnv{srv: model.NewServer(model.WithSeed(2))}, 50)
}

// modelEnv implements conformance.RecipeEnv on a model server.
type modelEnv struct{ srv *model.Server }

func (e *modelEnv) Connect(t testing.TB) (recipe.Conn, <-chan zk.Event) {
	conn, events, err := e.srv.Connect(10 * time.Second)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(conn.Close)
	return conn, events
}

func (e *modelEnv) Expire(t testing.TB, c recipe.Conn) { e.srv.Expire(c.SessionID()) }

// Disconnect drops the connection; the default transport reconnects at once.
func (e *modelEnv) Disconnect(t testing.TB, c recipe.Conn) {
	if err := e.srv.Do(model.Step{Kind: model.Disconnect, Client: c.(*model.Conn).ClientID()}); err != nil {
		t.Fatal(err)
	}
}

func (e *modelEnv) Reconnect(t testing.TB, c recipe.Conn) {}

// --- controlled transport -----------------------------------------------------------------------------------

// spyConn reports every call a lock makes before passing it on, so a test can steer
// the transport around a particular call.
type spyConn struct {
	*model.Conn
	mu    sync.Mutex
	calls []string // "create <path>", "exists <path>", "exists <path> = true"
	seen  chan string
	gate  func(call string) // runs before a call is passed on, and may hold it back
}

func newSpy(c *model.Conn) *spyConn { return &spyConn{Conn: c, seen: make(chan string, 100)} }

func (s *spyConn) note(call string) {
	s.mu.Lock()
	s.calls = append(s.calls, call)
	gate := s.gate
	s.mu.Unlock()
	s.seen <- call
	if gate != nil {
		gate(call)
	}
}

func (s *spyConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	s.note("create " + path)
	return s.Conn.Create(path, data, flags, acl)
}

func (s *spyConn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	s.note("exists " + path)
	ok, stat, ch, err := s.Conn.ExistsW(path)
	s.mu.Lock()
	s.calls = append(s.calls, fmt.Sprintf("exists %s = %t", path, ok))
	s.mu.Unlock()
	return ok, stat, ch, err
}

func (s *spyConn) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// waitCall waits until the lock makes a call whose description starts with prefix.
func (s *spyConn) waitCall(t *testing.T, prefix string) string {
	t.Helper()
	for {
		select {
		case call := <-s.seen:
			if strings.HasPrefix(call, prefix) {
				return call
			}
		case <-time.After(time.Minute):
			t.Fatalf("no call %q within a minute; calls: %v", prefix, s.log())
		}
	}
}

// waitPending waits until a step of kind for c is pending (a call the spy saw may not have reached the
// model yet).
func waitPending(t *testing.T, srv *model.Server, kind model.StepKind, c *model.Conn) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for _, st := range srv.Pending() {
			if st.Kind == kind && st.Client == c.ClientID() {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %v step for client %d within a minute; pending %v", kind, c.ClientID(), srv.Pending())
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// step takes one step, failing the test if it cannot be taken.
func step(t *testing.T, srv *model.Server, kind model.StepKind, c *model.Conn) {
	t.Helper()
	if err := srv.Do(model.Step{Kind: kind, Client: c.ClientID()}); err != nil {
		t.Fatal(err)
	}
}

// stepUntil takes progress steps of the given clients until done is closed. A client
// may be between calls, so an empty Pending is waited out, not taken as the end.
func stepUntil[T any](t *testing.T, srv *model.Server, done <-chan T, clients ...*model.Conn) T {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case v := <-done:
			return v
		default:
		}
		took := false
		for _, st := range srv.Pending() {
			for _, c := range clients {
				if st.Client == c.ClientID() && !took {
					if err := srv.Do(st); err != nil {
						t.Fatal(err)
					}
					took = true
				}
			}
		}
		if !took {
			if time.Now().After(deadline) {
				t.Fatalf("not done after a minute of steps; pending %v", srv.Pending())
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// async runs f in a goroutine and returns the channel its error arrives on.
func async(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

func manualServer(t *testing.T, clients int) (*model.Server, []*model.Conn) {
	srv := model.NewServer(model.WithSeed(1), model.WithManualTransport())
	var conns []*model.Conn
	for range clients {
		c, _, err := srv.Connect(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return srv, conns
}

// mustCreate creates a persistent node, taking c's steps.
func mustCreate(t *testing.T, srv *model.Server, c *model.Conn, path string) {
	t.Helper()
	create := func() error { _, err := c.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); return err }
	if err := stepUntil(t, srv, async(create), c); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

func lockNodes(t *testing.T, srv *model.Server, c *model.Conn, dir string) []string {
	t.Helper()
	done := make(chan []string, 1)
	go func() { done <- conformance.LockNodes(t, c, dir) }()
	return stepUntil(t, srv, done, c)
}

// TestRaceClosedWhenPredecessorGoesBeforeWatch deletes the predecessor after the
// waiter listed the children but before its exists call reaches the server: the
// exists call says the node is gone, the waiter lists again and takes the lock,
// instead of waiting for an event that will never come.
func TestRaceClosedWhenPredecessorGoesBeforeWatch(t *testing.T) {
	srv, conns := manualServer(t, 2)
	connA, spyB := conns[0], newSpy(conns[1])
	dir := "/race"
	a, b := recipe.NewLock(connA, dir), recipe.NewLock(spyB, dir)
	if err := stepUntil(t, srv, async(func() error { return a.Lock(context.Background()) }), connA); err != nil {
		t.Fatal(err)
	}
	// Hold back B's exists call on A's node until A has released.
	predCall := "exists " + a.Path()
	reached, release := make(chan string, 1), make(chan struct{})
	spyB.gate = func(call string) {
		if call == predCall {
			reached <- call
			<-release
		}
	}
	bDone := async(func() error { return b.Lock(context.Background()) })
	stepUntil(t, srv, reached, spyB.Conn) // B created its node, listed, and picked A
	if err := stepUntil(t, srv, async(func() error { return a.Unlock(context.Background()) }), connA); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := stepUntil(t, srv, bDone, spyB.Conn); err != nil {
		t.Fatalf("B's Lock: %v", err)
	}
	log := strings.Join(spyB.log(), "\n")
	if !strings.Contains(log, predCall+" = false") {
		t.Fatalf("B never saw its predecessor gone at the exists call; calls:\n%s", log)
	}
	if b.Path() == "" || b.Token() <= 0 {
		t.Fatalf("B holds no lock: Path %q Token %d", b.Path(), b.Token())
	}
}

// TestLostCreateReply loses the create's reply (executed) or request (not executed):
// either way the lock ends up with exactly one node, its own, and is acquired.
func TestLostCreateReply(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   model.StepKind
		creates int // lock node creates the recipe should send
	}{
		{"reply lost after the server created the node", model.LoseReply, 1},
		{"request lost before the server saw it", model.LoseRequest, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, conns := manualServer(t, 1)
			spy := newSpy(conns[0])
			dir := "/lost-create"
			mustCreate(t, srv, spy.Conn, dir)
			l := recipe.NewLock(spy, dir)
			done := async(func() error { return l.Lock(context.Background()) })
			nodePrefix := "create " + dir + "/_c_"
			spy.waitCall(t, nodePrefix)
			// The spy sees the call before the model does: wait until the request is there to apply or lose.
			waitPending(t, srv, model.Apply, spy.Conn)
			if tc.fault == model.LoseReply {
				step(t, srv, model.Apply, spy.Conn)
			}
			step(t, srv, tc.fault, spy.Conn)
			if err := stepUntil(t, srv, done, spy.Conn); err != nil {
				t.Fatalf("Lock: %v", err)
			}
			nodes := lockNodes(t, srv, spy.Conn, dir)
			if len(nodes) != 1 || dir+"/"+nodes[0] != l.Path() {
				t.Fatalf("lock nodes %v, want only the lock's own %s", nodes, l.Path())
			}
			creates := 0
			for _, c := range spy.log() {
				if strings.HasPrefix(c, nodePrefix) {
					creates++
				}
			}
			if creates != tc.creates {
				t.Fatalf("%d lock node creates, want %d; calls: %v", creates, tc.creates, spy.log())
			}
		})
	}
}

// TestCancelWhileCreateInFlight cancels Lock after the server created the node but
// before the reply arrived: cleanup waits for the create's outcome and deletes the node.
func TestCancelWhileCreateInFlight(t *testing.T) {
	srv, conns := manualServer(t, 1)
	spy := newSpy(conns[0])
	dir := "/cancel"
	mustCreate(t, srv, spy.Conn, dir)
	l := recipe.NewLock(spy, dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := async(func() error { return l.Lock(ctx) })
	spy.waitCall(t, "create "+dir+"/_c_")
	waitPending(t, srv, model.Apply, spy.Conn)
	step(t, srv, model.Apply, spy.Conn) // the node exists; its reply is not delivered
	if !strings.Contains(srv.Dump(), "_c_") {
		t.Fatalf("the create was not applied:\n%s", srv.Dump())
	}
	cancel()
	err := stepUntil(t, srv, done, spy.Conn)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock returned %v, want an error wrapping context.Canceled", err)
	}
	if nodes := lockNodes(t, srv, spy.Conn, dir); len(nodes) != 0 {
		t.Fatalf("lock nodes %v left after a cancelled Lock, want none", nodes)
	}
}

// TestSequenceWrap queues holders across the int32 wrap of sequence numbers
// (2147483647 is followed by -2147483648) and checks they are served in creation
// order, each waiter watching the node created just before its own.
func TestSequenceWrap(t *testing.T) {
	srv := model.NewServer(model.WithSeed(3))
	env := &modelEnv{srv: srv}
	dir := "/wrap"
	setup, _ := env.Connect(t)
	if _, err := setup.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetSequence(dir, 2147483646); err != nil {
		t.Fatal(err)
	}
	wantSuffixes := []string{"2147483646", "2147483647", "-2147483648", "-2147483647"}
	locks := make([]*recipe.Lock, len(wantSuffixes))
	spies := make([]*spyConn, len(wantSuffixes))
	results := make([]<-chan error, len(wantSuffixes))
	var nodes []string
	for i := range wantSuffixes {
		conn, _ := env.Connect(t)
		spies[i] = newSpy(conn.(*model.Conn))
		locks[i] = recipe.NewLock(spies[i], dir)
		results[i] = async(func() error { return locks[i].Lock(context.Background()) })
		if i == 0 {
			if err := <-results[0]; err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, locks[0].Path())
			continue
		}
		// The waiter is queued once it watches its predecessor, which must be the node before it.
		pred := spies[i].waitCall(t, "exists ")
		if pred != "exists "+nodes[i-1] {
			t.Fatalf("waiter %d watches %s, want its predecessor %s", i, pred, nodes[i-1])
		}
		created := conformance.LockNodes(t, setup, dir)
		for _, n := range created {
			if strings.HasSuffix(n, "-lock-"+wantSuffixes[i]) {
				nodes = append(nodes, dir+"/"+n)
			}
		}
		if len(nodes) != i+1 {
			t.Fatalf("no node with sequence %s among %v", wantSuffixes[i], created)
		}
	}
	if !strings.HasSuffix(locks[0].Path(), "-lock-"+wantSuffixes[0]) {
		t.Fatalf("first node %s, want sequence %s", locks[0].Path(), wantSuffixes[0])
	}
	for i := 1; i < len(locks); i++ {
		if err := locks[i-1].Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-results[i]; err != nil {
			t.Fatalf("waiter %d: %v", i, err)
		}
		if locks[i].Path() != nodes[i] || locks[i].Token() <= 0 {
			t.Fatalf("waiter %d holds %s, want %s", i, locks[i].Path(), nodes[i])
		}
	}
}

// TestCancelBeforeCreateSent cancels Lock while its create call is on its way to the
// connection (held back here): cleanup must wait for the create's outcome before it
// lists, or it would list first and miss the node the create then makes.
func TestCancelBeforeCreateSent(t *testing.T) {
	srv, conns := manualServer(t, 1)
	spy := newSpy(conns[0])
	dir := "/cancel-early"
	mustCreate(t, srv, spy.Conn, dir)
	reached, release := make(chan struct{}, 1), make(chan struct{})
	spy.gate = func(call string) {
		if strings.HasPrefix(call, "create "+dir+"/_c_") {
			reached <- struct{}{}
			<-release
		}
	}
	l := recipe.NewLock(spy, dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := async(func() error { return l.Lock(ctx) })
	<-reached
	cancel()
	// A cleanup that does not wait lists now; give it the chance before the create goes.
	for deadline := time.Now().Add(100 * time.Millisecond); len(srv.Pending()) == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := stepUntil(t, srv, done, spy.Conn); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock returned %v, want an error wrapping context.Canceled", err)
	}
	if nodes := lockNodes(t, srv, spy.Conn, dir); len(nodes) != 0 {
		t.Fatalf("lock nodes %v left after a cancelled Lock, want none", nodes)
	}
}

// TestStrayNodeWithOwnIDDeleted plants a node carrying the id the lock will draw (a
// seeded id source makes it known) ahead of the lock's own: the lock deletes it as
// the leftover of a lost create instead of queueing behind it.
func TestStrayNodeWithOwnIDDeleted(t *testing.T) {
	env := &modelEnv{srv: model.NewServer(model.WithSeed(4))}
	conn, _ := env.Connect(t)
	id := strings.Repeat("ab", 16)
	dir := "/stray"
	for _, p := range []string{dir, dir + "/_c_" + id + "-lock-0000000000"} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	l := recipe.NewLock(conn, dir, recipe.WithRandom(strings.NewReader(strings.Repeat("\xab", 16))))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := l.Lock(ctx); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if nodes := conformance.LockNodes(t, conn, dir); len(nodes) != 1 || dir+"/"+nodes[0] != l.Path() {
		t.Fatalf("lock nodes %v, want only the lock's own %s", nodes, l.Path())
	}
}

// writeFailConn fails the first lock-node create and the first delete with the error go-zookeeper returns
// when the connection breaks under the request it is writing (the *net.OpError itself, not
// ErrConnectionClosed), after passing them to the server or not.
type writeFailConn struct {
	recipe.Conn
	applied                 bool // the server got the request before the connection broke
	failedCreate, failedDel bool
}

var errBrokenPipe = &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}

func (c *writeFailConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if c.failedCreate || !strings.Contains(path, "/_c_") {
		return c.Conn.Create(path, data, flags, acl)
	}
	c.failedCreate = true
	if c.applied {
		if _, err := c.Conn.Create(path, data, flags, acl); err != nil {
			return "", err
		}
	}
	return "", errBrokenPipe
}

func (c *writeFailConn) Delete(path string, version int32) error {
	if c.failedDel {
		return c.Conn.Delete(path, version)
	}
	c.failedDel = true
	if c.applied {
		if err := c.Conn.Delete(path, version); err != nil {
			return err
		}
	}
	return errBrokenPipe
}

// TestWriteErrorIsALostReply: a request whose write failed (seen on a loaded machine as "write: broken
// pipe" when a server was killed) may or may not have reached the server, like one whose reply was lost:
// Lock finds or creates its node and holds, Unlock deletes it, each exactly once.
func TestWriteErrorIsALostReply(t *testing.T) {
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprintf("applied=%t", applied), func(t *testing.T) {
			srv := model.NewServer()
			mc, _, err := srv.Connect(10 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			conn := &writeFailConn{Conn: mc, applied: applied}
			dir := "/write-error"
			if _, err := mc.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			l := recipe.NewLock(conn, dir)
			if err := l.Lock(context.Background()); err != nil {
				t.Fatalf("Lock after a failed write: %v", err)
			}
			if kids, _, err := mc.Children(dir); err != nil || len(kids) != 1 || dir+"/"+kids[0] != l.Path() {
				t.Fatalf("lock nodes %v (%v), want only the lock's own %s", kids, err, l.Path())
			}
			if err := l.Unlock(context.Background()); err != nil {
				t.Fatalf("Unlock after a failed write: %v", err)
			}
			if kids, _, err := mc.Children(dir); err != nil || len(kids) != 0 {
				t.Fatalf("lock nodes after Unlock: %v (%v), want none", kids, err)
			}
			if !conn.failedCreate || !conn.failedDel {
				t.Fatalf("the conn failed create %t, delete %t: the test did not inject both", conn.failedCreate, conn.failedDel)
			}
		})
	}
}
