package realzk

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/internal/rawzk"
)

// TestConformance runs the conformance suite on the 3-server ensemble, with
// the recipe suite's per-session proxies (suiteEnv): every session reaches
// every server through proxies of its own, so Sever cuts its connection
// alone and it reconnects at once to the next server (go-zookeeper waits
// 1 s only when it wraps around its address list), and Expire partitions it
// until the ensemble has expired its session.
func TestConformance(t *testing.T) {
	env := newSuiteEnv(t)
	conformance.Run(t, conformance.Target{
		Connect: func(t *testing.T, sessionTimeout time.Duration) (conformance.Conn, <-chan zk.Event) {
			s := env.connectTimeout(t, sessionTimeout)
			return s.conn, s.events
		},
		Expire: func(t *testing.T, conn conformance.Conn) { env.Expire(t, conn) },
		Sever: func(t *testing.T, conn conformance.Conn) {
			if raw, ok := conn.(rawzk.ZK); ok {
				raw.C.Sever() // a raw client (ConnectWatch) reaches the servers directly and drops its connection itself
				return
			}
			if env.session(t, conn).sever() == 0 {
				t.Fatalf("sever %v: no connection open through its proxies", conn)
			}
		},
		// The raw client, for addWatch, removeWatches and checkWatches: go-zookeeper v1.0.4 sends none of them.
		ConnectWatch: func(t *testing.T, sessionTimeout time.Duration) (conformance.WatchConn, <-chan zk.Event) {
			t.Helper()
			c, events, err := rawzk.Connect(testContext(t, 20*time.Second), env.ensemble.Addrs(), sessionTimeout, nil)
			if err != nil {
				t.Fatalf("connect the raw client: %v", err)
			}
			return rawzk.ZK{C: c, Timeout: 20 * time.Second}, events
		},
	})
}
