package recipe_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/recipe"
)

// countingConn records the kind of every request a lock sends.
type countingConn struct {
	*model.Conn
	mu     sync.Mutex
	sent   []string
	exists chan string // the path of every ExistsW, as it is sent
}

func newCounting(c *model.Conn) *countingConn {
	return &countingConn{Conn: c, exists: make(chan string, 16)}
}

func (c *countingConn) note(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, kind)
}

func (c *countingConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.note("create")
	return c.Conn.Create(path, data, flags, acl)
}

func (c *countingConn) Children(path string) ([]string, *zk.Stat, error) {
	c.note("children")
	return c.Conn.Children(path)
}

func (c *countingConn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	c.note("exists")
	c.exists <- path
	return c.Conn.ExistsW(path)
}

func (c *countingConn) Delete(path string, version int32) error {
	c.note("delete")
	return c.Conn.Delete(path, version)
}

// take returns the requests sent since the last take.
func (c *countingConn) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	sent := c.sent
	c.sent = nil
	return sent
}

// TestRequestsPerAcquisition counts the requests of one acquisition and release on
// the model: 3 uncontended, 5 contended (the floor of a predecessor-watching lock that
// re-lists after the predecessor's deletion), and one exists more once Lost() is asked.
func TestRequestsPerAcquisition(t *testing.T) {
	srv := model.NewServer(model.WithSeed(7))
	env := &modelEnv{srv: srv}
	connect := func() *countingConn {
		conn, _ := env.Connect(t)
		return newCounting(conn.(*model.Conn))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const dir = "/requests"
	a, b := connect(), connect()
	la, lb := recipe.NewLock(a, dir), recipe.NewLock(b, dir)

	// Uncontended (the first acquisition creates the directory: not counted).
	if err := la.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	a.take()
	if err := la.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := a.take(), []string{"create", "children", "delete"}; !slices.Equal(got, want) {
		t.Errorf("uncontended acquisition and release sent %v, want %v", got, want)
	}

	// Contended: b queues behind a, waits for a's release, takes over.
	if err := la.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	held := la.Path()
	done := make(chan error, 1)
	go func() { done <- lb.Lock(ctx) }()
	select {
	case pred := <-b.exists:
		if pred != held {
			t.Fatalf("the waiter watches %s, want its predecessor %s", pred, held)
		}
	case <-ctx.Done():
		t.Fatal("the waiter never watched its predecessor")
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := lb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"create", "children", "exists", "children", "delete"}
	if got := b.take(); !slices.Equal(got, want) || len(got) > 5 {
		t.Errorf("contended acquisition and release sent %v, want %v", got, want)
	}

	// Lost() sets the own-node watch: one exists more, on the own node.
	if err := lb.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	b.take()
	own := lb.Path()
	lb.Lost()
	select {
	case path := <-b.exists:
		if path != own {
			t.Fatalf("Lost() watched %s, want the own node %s", path, own)
		}
	case <-ctx.Done():
		t.Fatal("Lost() set no watch")
	}
	lb.Lost() // the second call of the hold sets none
	if err := lb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := b.take(), []string{"exists", "delete"}; !slices.Equal(got, want) {
		t.Errorf("a hold that asked for Lost() twice sent %v after acquiring, want %v", got, want)
	}
}
