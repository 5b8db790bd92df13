package recipe_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/realzk"
	"github.com/zkmodel/zkmodel/recipe"
	"github.com/zkmodel/zkmodel/recipe/recipetest"
)

// TestLockOnRealZooKeeper runs the behavioural suite on a real standalone ZooKeeper
// 3.8 server (or the ensemble in ZK_SERVERS), each session behind its own proxy so
// the test can cut it off (disconnection) or keep it off until the server expires
// it (expiry).
func TestLockOnRealZooKeeper(t *testing.T) {
	ensemble := realzk.ForTestWith(t, realzk.Config{Servers: 1})
	recipetest.Run(t, &realEnv{server: ensemble.Addrs()[0], sessions: map[recipe.Conn]*realSession{}})
}

// sessionTimeout is long enough to survive a disconnection that lasts until
// go-zookeeper notices it (2/3 of the timeout), and short enough for quick expiry.
const sessionTimeout = 3 * time.Second

// realEnv implements recipetest.Env on a real server.
type realEnv struct {
	server   string
	mu       sync.Mutex
	sessions map[recipe.Conn]*realSession
}

type realSession struct {
	conn  *zk.Conn
	proxy *realzk.Proxy
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func (e *realEnv) Connect(t testing.TB) (recipe.Conn, <-chan zk.Event) {
	t.Helper()
	proxy, err := realzk.NewProxy(context.Background(), e.server)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	conn, events, err := zk.Connect([]string{proxy.Addr()}, sessionTimeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(conn.Close)
	waitState(t, conn, zk.StateHasSession)
	e.mu.Lock()
	e.sessions[conn] = &realSession{conn: conn, proxy: proxy}
	e.mu.Unlock()
	return conn, events
}

func (e *realEnv) session(t testing.TB, c recipe.Conn) *realSession {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.sessions[c]
	if !ok {
		t.Fatalf("connection %v was not made by this env", c)
	}
	return s
}

// Expire freezes the session's link until the server no longer lists the session
// (the "dump" four-letter word shows every live session), then thaws it: the client
// reconnects and learns it has expired.
func (e *realEnv) Expire(t testing.TB, c recipe.Conn) {
	t.Helper()
	s := e.session(t, c)
	id := fmt.Sprintf("0x%x", s.conn.SessionID())
	s.proxy.Freeze()
	defer s.proxy.Unfreeze()
	deadline := time.Now().Add(time.Minute)
	for {
		dump, err := realzk.FourLetter(context.Background(), e.server, "dump")
		if err == nil && !strings.Contains(dump, id) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s not expired after a minute (%v); dump:\n%s", id, err, dump)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Disconnect freezes the link and waits for the client to notice it.
func (e *realEnv) Disconnect(t testing.TB, c recipe.Conn) {
	t.Helper()
	s := e.session(t, c)
	s.proxy.Freeze()
	waitState(t, s.conn, zk.StateDisconnected, zk.StateConnecting, zk.StateConnected)
}

// Reconnect thaws the link and waits for the session to be re-established.
func (e *realEnv) Reconnect(t testing.TB, c recipe.Conn) {
	t.Helper()
	s := e.session(t, c)
	s.proxy.Unfreeze()
	waitState(t, s.conn, zk.StateHasSession)
}

func waitState(t testing.TB, conn *zk.Conn, want ...zk.State) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		state := conn.State()
		for _, w := range want {
			if state == w {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection state %v, want one of %v after a minute", state, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
