package realzk

import (
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/recipe"
)

// TestRecipeSuite runs the lock's recipe rules (conformance.RunRecipes) on
// the 3-server ensemble: every session reaches every server through proxies
// of its own, so the suite can partition it until the ensemble expires it,
// or disconnect it, while the other sessions carry on.
func TestRecipeSuite(t *testing.T) {
	conformance.RunRecipes(t, newSuiteEnv(t))
}

// suiteSessionTimeout outlasts a disconnection until go-zookeeper notices it
// (2/3 of the timeout) and its reconnection, and keeps expiry quick.
const suiteSessionTimeout = 3 * time.Second

// suiteEnv is conformance.RecipeEnv on a 3-server ensemble with per-session proxies.
type suiteEnv struct {
	ensemble *Ensemble
	observer *zk.Conn // sees expiries from outside

	mu       sync.Mutex
	sessions map[recipe.Conn]*proxiedSession
}

// newSuiteEnv returns a suiteEnv on the shared ensemble, with an observer
// session that is closed when t ends.
func newSuiteEnv(t testing.TB) *suiteEnv {
	t.Helper()
	e := Shared(t)
	observer, _ := connect(t, e.Addrs(), 10*time.Second)
	return &suiteEnv{ensemble: e, observer: observer, sessions: map[recipe.Conn]*proxiedSession{}}
}

// Connect opens a session through its own proxies.
func (e *suiteEnv) Connect(t testing.TB) (recipe.Conn, <-chan zk.Event) {
	t.Helper()
	s := e.connectTimeout(t, suiteSessionTimeout)
	return s.conn, s.events
}

// connectTimeout opens a session with the given timeout through its own
// proxies and registers it.
func (e *suiteEnv) connectTimeout(t testing.TB, sessionTimeout time.Duration) *proxiedSession {
	t.Helper()
	s := newProxiedSession(t, e.ensemble, sessionTimeout, nil)
	e.mu.Lock()
	e.sessions[s.conn] = s
	e.mu.Unlock()
	return s
}

func (e *suiteEnv) session(t testing.TB, conn recipe.Conn) *proxiedSession {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.sessions[conn]
	if !ok {
		t.Fatalf("connection %v was not made by this env", conn)
	}
	return s
}

// Expire partitions the session until the ensemble has expired it.
func (e *suiteEnv) Expire(t testing.TB, conn recipe.Conn) {
	t.Helper()
	if _, err := expireSession(testContext(t, time.Minute), e.session(t, conn), e.observer, nil); err != nil {
		t.Fatal(err)
	}
}

// Disconnect partitions the session until its client notices.
func (e *suiteEnv) Disconnect(t testing.TB, conn recipe.Conn) {
	t.Helper()
	s := e.session(t, conn)
	s.freeze()
	awaitConnState(t, s.conn, time.Minute, zk.StateDisconnected, zk.StateConnecting, zk.StateConnected)
}

// Reconnect ends the partition and waits until the session is back.
func (e *suiteEnv) Reconnect(t testing.TB, conn recipe.Conn) {
	t.Helper()
	s := e.session(t, conn)
	s.unfreeze()
	awaitConnState(t, s.conn, time.Minute, zk.StateHasSession)
}
