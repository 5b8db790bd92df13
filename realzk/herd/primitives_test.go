package herd

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/realzk"
	"github.com/zkmodel/zkmodel/recipe"
)

// TestHerdPrimitivesSmall runs every cell beyond the mutex small (N=4, one
// round of 2 s cells: the read-write lock, the semaphore of 2 leases and the
// election, each in the recipe's implementation, Curator's and kazoo's) on
// the shared ensemble and checks what the cells are about: every cell ran and
// its contenders' requests were counted on the wire; the recipe keeps its
// promises — a read lock's release wakes at most the one writer behind it, a
// resignation wakes one candidate, a returned lease wakes at most the waiter
// in the admission mutex and the holder whose grant left a watch, and each
// pass through the admission mutex wakes one — and the proxies' counts agree
// with the Go clients' own; Curator's and kazoo's cells acquired, except
// kazoo's read-write lock, which may deadlock (see docs/herd.md).
func TestHerdPrimitivesSmall(t *testing.T) {
	e := realzk.Shared(t)
	ctx := testContext(t, 3*time.Minute)
	const n = 4
	res, err := Run(ctx, Experiment{Addrs: e.Addrs(), Duration: 2 * time.Second, Rounds: 1,
		Primitives: []Primitive{RWLock, Semaphore, Election}, PrimitiveClients: []int{n},
		Bystanders: 2, BystanderRate: 50, Path: "/TestHerdPrimitivesSmall"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("herd, N=%d:\n%s", n, FormatMarkdown(res))
	if want := 3 * len(Implementations); len(res.Cells) != want {
		t.Fatalf("got %d cells, want %d (every primitive in every implementation)", len(res.Cells), want)
	}
	for _, c := range res.Cells {
		name := fmt.Sprintf("%s %s", c.Primitive, c.Variant)
		if c.Err != "" {
			t.Errorf("%s: no data: %s", name, c.Err)
			continue
		}
		if c.Wire.Requests <= 0 || c.Wire.Connects != 0 {
			t.Errorf("%s: the proxies counted %d requests and %d connects; want some requests, and no new connection", name, c.Wire.Requests, c.Wire.Connects)
		}
		// kazoo 2.8's ReadLock waits behind the last write node, even one
		// created after its own, whose writer waits for it: the cell may
		// deadlock before anyone acquires (kazoo issue 649).
		if (c.Acquisitions == 0 || c.Releases == 0) && (c.Variant != Kazoo || c.Primitive != RWLock) {
			t.Errorf("%s: %d acquisitions, %d releases; want some of each", name, c.Acquisitions, c.Releases)
		}
		if c.Variant != Recipe {
			continue
		}
		// Edges: a notification of the cell before may reach a client after
		// this cell's first count, and one of this cell's releases before its
		// last; each client has at most one such.
		class := func(name string) int64 { return c.Wire.Classes[name] }
		switch c.Primitive {
		case RWLock:
			if reads := c.Releases - c.WriteReleases; class(wakeRead) > reads+n {
				t.Errorf("rwlock recipe: %d wake-ups on read nodes for %d read releases; want at most one each (the writer directly behind)", class(wakeRead), reads)
			}
			if c.WriteAcquisitions == 0 || c.WriteAcquisitions == c.Acquisitions {
				t.Errorf("rwlock recipe: %d of %d acquisitions wrote; want readers and a writer", c.WriteAcquisitions, c.Acquisitions)
			}
		case Semaphore:
			if class(wakeChildren) > 2*c.Releases+n {
				t.Errorf("semaphore recipe: %d wake-ups on the leases for %d releases; want at most two each (the waiter, and a grant's watch)", class(wakeChildren), c.Releases)
			}
			if class(wakeExclusive) > c.Acquisitions+n {
				t.Errorf("semaphore recipe: %d wake-ups on the admission mutex for %d acquisitions; want at most one each", class(wakeExclusive), c.Acquisitions)
			}
		case Election:
			if c.Wire.Notifications > c.Releases+n {
				t.Errorf("election recipe: %d wake-ups for %d resignations; want at most one each", c.Wire.Notifications, c.Releases)
			}
		}
		// The Go clients count for themselves, and were read just before and
		// just after the proxies: a request is counted by its client before
		// the proxy reads it, a notification by the proxy before its client
		// gets it. Slack: one of each per client at the cell's start (a
		// notification of the cell before) and at its end (one in flight).
		before, after := c.clientsBefore, c
		if got := c.Wire.Requests; got < before.requests-2*n || got > after.Requests+n {
			t.Errorf("%s: the proxies counted %d requests, the clients %d just before and %d just after", name, got, before.requests, after.Requests)
		}
		if got := c.Wire.Notifications; got < before.notifications-n || got > after.Notifications+2*n {
			t.Errorf("%s: the proxies counted %d notifications, the clients %d just before and %d just after", name, got, before.notifications, after.Notifications)
		}
	}
	checkHerdReport(t, res, false)
}

// TestProxyCountsWhatTheClientsCount: four go-zookeeper clients connect
// through counting proxies, each counting on its own connection too, and
// take the recipe's read-write lock, semaphore and leadership 15 times each;
// once all are done, and a sync and a read on each connection have flushed
// the notifications in flight, the proxies have counted exactly the requests
// the clients sent and the notifications they received.
func TestProxyCountsWhatTheClientsCount(t *testing.T) {
	e := realzk.Shared(t)
	ctx := testContext(t, 2*time.Minute)
	proxies, err := startHerdProxies(ctx, e.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer proxies.close()
	x, err := Experiment{Addrs: e.Addrs(), PrimitiveClients: []int{4}, Primitives: []Primitive{RWLock}, Duration: time.Second, Rounds: 1}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	clients, err := connectHerd(ctx, x, proxies.addrs(), 4)
	defer closeHerd(clients)
	if err != nil {
		t.Fatal(err)
	}
	const root = "/TestProxyCountsWhatTheClientsCount"
	defer deleteTreeQuietly(clients[0].conn, root)
	var requests, notifications atomic.Int64
	for _, c := range clients {
		c.requests.Store(&requests)
		c.sink.Store(&notifications)
	}
	before := proxies.counts()
	for _, p := range []Primitive{RWLock, Semaphore, Election} {
		spec := herdCellSpec{primitive: p, variant: Recipe, proxies: proxies}
		done := make(chan error, len(clients))
		for i, c := range clients {
			l, _, err := newHerdLocker(x, spec, c, i, root)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				for k := range 15 {
					if err := l.Lock(ctx); err != nil {
						done <- fmt.Errorf("%s, client %d, round %d: Lock: %w", p, i, k, err)
						return
					}
					if err := l.Unlock(ctx); err != nil {
						done <- fmt.Errorf("%s, client %d, round %d: Unlock: %w", p, i, k, err)
						return
					}
				}
				done <- nil
			}()
		}
		for range clients {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, c := range clients {
		if _, err := c.conn.Sync("/"); err != nil {
			t.Fatalf("client %d: sync: %v", i, err)
		}
		if _, _, err := c.conn.Exists("/"); err != nil {
			t.Fatalf("client %d: exists: %v", i, err)
		}
	}
	got := proxies.counts().Sub(before)
	if got.Requests != requests.Load() || got.Notifications != notifications.Load() {
		t.Errorf("the proxies counted %d requests and %d notifications, the clients %d and %d", got.Requests, got.Notifications, requests.Load(), notifications.Load())
	}
	if got.Requests < 3*4*15*2 || got.Notifications == 0 || got.Connects != 0 || got.Auths != 0 {
		t.Errorf("counted %+v: want at least two requests per acquisition, some notifications, no connect and no auth", got)
	}
	t.Logf("%d requests, %d notifications %v (pings %d)", got.Requests, got.Notifications, got.Classes, got.Pings)
}

// TestClassifyWake sorts the notifications the herd counts by what they
// wake: a reader, an exclusive waiter (a lock's, a latch's), a children
// watcher; anything else, and a path too long for the counting proxy to read
// (which it hands over as ""), in no class.
func TestClassifyWake(t *testing.T) {
	for _, c := range []struct {
		eventType zk.EventType
		path      string
		want      string
	}{
		{zk.EventNodeDeleted, "/l/_c_ab-__READ__0000000001", wakeRead},
		{zk.EventNodeDeleted, "/l/aa__rlock__0000000001", wakeRead},
		{zk.EventNodeDeleted, "/l/aa__lock__0000000002", wakeExclusive},
		{zk.EventNodeDeleted, "/l/_c_ab-lock-0000000003", wakeExclusive},
		{zk.EventNodeDeleted, "/l/_c_ab-__WRIT__0000000004", wakeExclusive},
		{zk.EventNodeDeleted, "/e/_c_ab-latch-0000000005", wakeExclusive},
		{zk.EventNodeChildrenChanged, "/s/leases", wakeChildren},
		{zk.EventNodeDataChanged, "/b/b0", ""},
		{zk.EventNodeDeleted, "/b/b0", ""},
		{zk.EventNodeDeleted, "", ""},
	} {
		if got := classifyWake(int32(c.eventType), c.path); got != c.want {
			t.Errorf("classifyWake(%v, %q) = %q, want %q", c.eventType, c.path, got, c.want)
		}
	}
}

// TestRecipeElectionOnTheWireOnce: one campaign and resignation of the
// recipe's election, uncontended, through a counting proxy: create, list,
// delete — three requests, no notification.
func TestRecipeElectionOnTheWireOnce(t *testing.T) {
	e := realzk.Shared(t)
	ctx := testContext(t, time.Minute)
	p, err := realzk.NewProxy(ctx, e.Addrs()[0], realzk.CountWire(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn, _, err := zk.Connect([]string{p.Addr()}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietZKLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := awaitSession(ctx, conn); err != nil {
		t.Fatal(err)
	}
	const root = "/TestRecipeElectionOnTheWireOnce"
	if err := createPath(conn, root); err != nil {
		t.Fatal(err)
	}
	defer deleteTreeQuietly(conn, root)
	before := p.WireCounts()
	el := recipe.NewElection(conn, root)
	if err := el.Campaign(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := el.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	got := p.WireCounts().Sub(before)
	if got.Requests != 4 || got.Notifications != 0 {
		t.Errorf("an uncontended campaign and resignation, then a sync: %d requests, %d notifications; want 4 (create, list, delete, sync) and none", got.Requests, got.Notifications)
	}
}
