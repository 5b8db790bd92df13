package realzk

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// orderedHosts is a zk.HostProvider that tries its servers in its own
// order (zk.Connect shuffles the list it passes to Init), so a test can
// choose the first server a client connects to while keeping the others to
// fail over to.
type orderedHosts struct {
	mu      sync.Mutex
	servers []string // in the order to try
	next    int      // index Next returns
	tried   int      // servers tried since the last Connected
}

func (h *orderedHosts) Init(servers []string) error {
	if !sameSet(servers, h.servers) {
		return fmt.Errorf("orderedHosts: zk.Connect got %v, the provider has %v", servers, h.servers)
	}
	return nil
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func (h *orderedHosts) Len() int { return len(h.servers) }

func (h *orderedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	server := h.servers[h.next]
	h.next = (h.next + 1) % len(h.servers)
	h.tried++
	// Like go-zookeeper's own provider: retryStart once every server has
	// been tried without success.
	return server, h.tried > len(h.servers)
}

func (h *orderedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tried = 1
}

// TestLeaderKillClientView kills the leader under a client connected to it
// (with every server in its list) and checks that the client fails over to
// another server and keeps its session. It logs what the client saw and
// how long until requests succeeded again (BenchmarkLeaderFailover
// measures that time).
func TestLeaderKillClientView(t *testing.T) {
	e := Shared(t)
	ctx := testContext(t, 60*time.Second)
	observer, _ := connect(t, e.Addrs(), 4*time.Second)
	base := testPath(t, observer)
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addrs := append([]string{e.Addrs()[leader]}, append(e.Addrs()[:leader:leader], e.Addrs()[leader+1:]...)...)
	conn, events, err := zk.Connect(addrs, 4*time.Second, zk.WithHostProvider(&orderedHosts{servers: addrs}), zk.WithLogInfo(false), zk.WithLogger(testLogger{t}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	log := recordEvents(events)
	log.waitFor(t, 0, "session", 20*time.Second, isState(zk.StateHasSession))
	if conn.Server() != e.Addrs()[leader] {
		t.Fatalf("client on %s, want the leader %s", conn.Server(), e.Addrs()[leader])
	}
	sid := conn.SessionID()
	if _, err := conn.Create(base+"/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	mark := log.mark()
	killed := time.Now()
	if err := e.Kill(leader); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		defer cancel()
		if err := e.Heal(ctx); err != nil {
			t.Errorf("heal after leader kill: %v", err)
		}
	})
	errCounts := map[string]int{}
	var firstSuccess time.Duration
	for i := 0; ; i++ {
		_, err := conn.Create(fmt.Sprintf("%s/n%d", base, i), nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil {
			firstSuccess = time.Since(killed)
			break
		}
		errCounts[err.Error()]++
		if ctx.Err() != nil {
			t.Fatalf("no write succeeded after the leader kill; errors: %v", errCounts)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := log.since(mark)
	t.Logf("leader %d killed; first write succeeded after %v on %s; failed writes: %v; events:\n%s",
		leader, firstSuccess.Round(time.Millisecond), conn.Server(), errCounts, formatEvents(got))
	if conn.SessionID() != sid {
		t.Errorf("session changed from %x to %x across the leader kill; want it kept", sid, conn.SessionID())
	}
	if conn.Server() == e.Addrs()[leader] {
		t.Errorf("client still on the killed leader %s", conn.Server())
	}
	states := sessionStates(got)
	if len(states) == 0 || states[0] != zk.StateDisconnected || states[len(states)-1] != zk.StateHasSession {
		t.Errorf("session events after the leader kill: %v; want StateDisconnected first and StateHasSession last", states)
	}
	if ok, _, err := observer.Exists(base + "/eph"); err != nil || !ok {
		t.Errorf("the client's ephemeral node after failover: exists=%v, %v; want kept", ok, err)
	}
}
