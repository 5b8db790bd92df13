package realzk

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
)

// TestConformance runs the conformance suite on the 3-server ensemble, with
// the recipe suite's per-session proxies (suiteEnv): every session reaches
// every server through proxies of its own, so Sever cuts its connection
// alone and it reconnects at once to the next server (go-zookeeper waits
// 1 s only when it wraps around its address list), and Expire partitions it
// until the ensemble has expired its session. The ensemble rules kill and
// restart servers of the shared ensemble (Kill, Restart).
func TestConformance(t *testing.T) {
	env := newSuiteEnv(t)
	conformance.Run(t, conformance.Target{
		Connect: func(t *testing.T, sessionTimeout time.Duration) (conformance.Conn, <-chan zk.Event) {
			s := env.connectTimeout(t, sessionTimeout)
			return s.conn, s.events
		},
		Expire: func(t *testing.T, conn conformance.Conn) { env.Expire(t, conn) },
		Sever: func(t *testing.T, conn conformance.Conn) {
			if env.session(t, conn).sever() == 0 {
				t.Fatalf("sever %v: no connection open through its proxies", conn)
			}
		},
		SuperUser: superUserOf(env.ensemble),
		Ensemble: &conformance.Ensemble{
			Servers:  env.ensemble.Servers(),
			ServerOf: func(t *testing.T, conn conformance.Conn) int { return env.serverOf(t, conn) },
			Stop: func(t *testing.T, i int) {
				if err := env.ensemble.Kill(i); err != nil {
					t.Fatal(err)
				}
			},
			Start: func(t *testing.T, i int) {
				// Not testContext: the rule restarts servers from its cleanups too, when t's own
				// context is already done.
				ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
				defer cancel()
				if err := env.ensemble.Restart(ctx, i); err != nil {
					t.Fatal(err)
				}
			},
			Wait: func(t *testing.T, d time.Duration) { time.Sleep(d) },
		},
	})
}

// superUserOf is SharedSuperUser on the ensemble Shared started, and none on one named by ZK_SERVERS.
func superUserOf(e *Ensemble) string {
	if e.Harness() {
		return SharedSuperUser
	}
	return ""
}

// serverOf returns the server a session's client is connected to, through
// which of its proxies it is.
func (e *suiteEnv) serverOf(t *testing.T, conn conformance.Conn) int {
	t.Helper()
	s := e.session(t, conn)
	for _, p := range s.proxies {
		if p.Addr() == s.conn.Server() {
			if i := slices.Index(e.ensemble.Addrs(), p.Target()); i >= 0 {
				return i
			}
		}
	}
	t.Fatalf("session %#x is on %s, none of its proxies", s.conn.SessionID(), s.conn.Server())
	return -1
}
