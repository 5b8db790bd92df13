package realzk

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/internal/evqueue"
	"github.com/zkmodel/zkmodel/internal/rawzk"
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
		SuperUser: superUserOf(env.ensemble),
		Reconfig:  reconfigOf(env.ensemble),
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

// reconfigOf is the shared ensemble's configuration for the reconfig rules: its servers, reconfigEnabled off
// (ZooKeeper's default); none for one named by ZK_SERVERS, whose configuration the harness cannot know.
func reconfigOf(e *Ensemble) *conformance.Reconfig {
	if e.Harness() {
		return &conformance.Reconfig{Servers: e.Servers()}
	}
	return nil
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

// ttlCheckInterval is the container check interval of TestConformanceTTL's server: short, so that the rules'
// waits (a few intervals each) stay short.
const ttlCheckInterval = 100 * time.Millisecond

// TestConformanceTTL runs the TTL and container rules on a 1-server ensemble of its own (never ZK_SERVERS:
// it needs zookeeper.extendedTypesEnabled=true and a short znode.container.checkIntervalMs, both Java system
// properties). Advance sleeps: the server's container manager runs on its wall clock.
func TestConformanceTTL(t *testing.T) {
	e := StartForTest(t, Config{Servers: 1, SystemProperties: map[string]string{
		"zookeeper.extendedTypesEnabled":  "true",
		"znode.container.checkIntervalMs": strconv.FormatInt(ttlCheckInterval.Milliseconds(), 10),
	}})
	conformance.Run(t, conformance.Target{
		Connect:                directConnect(e),
		ExtendedTypes:          true,
		ContainerCheckInterval: ttlCheckInterval,
		Advance:                func(t *testing.T, d time.Duration) { time.Sleep(d) },
		Only:                   []string{"ttl/", "container/"},
	})
}

// directConnect is Target.Connect for a go-zookeeper client that reaches e's servers directly (no proxies).
func directConnect(e *Ensemble) func(t *testing.T, sessionTimeout time.Duration) (conformance.Conn, <-chan zk.Event) {
	return func(t *testing.T, sessionTimeout time.Duration) (conformance.Conn, <-chan zk.Event) {
		t.Helper()
		rec := evqueue.NewSession()
		conn, events, err := zk.Connect(e.Addrs(), sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(testLogger{t}), rec.Option())
		if err != nil {
			t.Fatalf("connect to %v: %v", e.Addrs(), err)
		}
		events = rec.Follow(events)
		// Wait for the session without reading events: the suite checks them.
		deadline := time.Now().Add(20 * time.Second)
		for conn.State() != zk.StateHasSession {
			if time.Now().After(deadline) {
				conn.Close()
				t.Fatalf("no session from %v after 20s (state %s)", e.Addrs(), conn.State())
			}
			time.Sleep(time.Millisecond)
		}
		return conn, events
	}
}

// TestConformanceReconfig runs the reconfig rules on a 3-server ensemble of its own with reconfigEnabled=true
// and the super user SharedSuperUser (never ZK_SERVERS: the rules change its membership, with servers it
// does not run, and put it back).
func TestConformanceReconfig(t *testing.T) {
	e := StartForTest(t, Config{ExtraConfig: map[string]string{"reconfigEnabled": "true"},
		SystemProperties: map[string]string{SuperDigestProperty: SuperDigest(SharedSuperUser)}})
	conformance.Run(t, conformance.Target{
		Connect:   directConnect(e),
		SuperUser: SharedSuperUser,
		Reconfig:  &conformance.Reconfig{Enabled: true, Servers: e.Servers(), Fresh: true},
		Only:      []string{"reconfig/"},
	})
}

// TestConformanceSkipACL runs the skipACL rules on a 3-server ensemble of its own with reconfigEnabled=true and
// skipACL=yes in zoo.cfg, as model.TestWireConformance/skipacl's.
func TestConformanceSkipACL(t *testing.T) {
	e := StartForTest(t, Config{ExtraConfig: map[string]string{"reconfigEnabled": "true", "skipACL": "yes"}})
	conformance.Run(t, conformance.Target{
		Connect:  directConnect(e),
		Reconfig: &conformance.Reconfig{Enabled: true, Servers: e.Servers()},
		SkipACL:  true,
		Only:     []string{"skipacl/"},
	})
}

// TestConformanceReconfigSASL runs the reconfig, SASL and refused-operation rules on a 3-server ensemble of its
// own with reconfigEnabled=true, no superDigest, and SASL users of which one is the super user
// (-Dzookeeper.superUser), as model.TestWireConformance/reconfig-sasl's: only that user may reconfigure.
func TestConformanceReconfigSASL(t *testing.T) {
	super, user := [2]string{"boss", "boss-secret"}, [2]string{"other", "other-secret"}
	jaas, err := WriteJAAS(t.TempDir(), map[string]string{super[0]: super[1], user[0]: user[1]})
	if err != nil {
		t.Fatal(err)
	}
	e := StartForTest(t, Config{ExtraConfig: map[string]string{"reconfigEnabled": "true"},
		SystemProperties: map[string]string{"java.security.auth.login.config": jaas, "zookeeper.superUser": super[0]}})
	conformance.Run(t, conformance.Target{
		Connect:  directConnect(e),
		Reconfig: &conformance.Reconfig{Enabled: true, Servers: e.Servers(), Fresh: true},
		SASL: &conformance.SASL{
			Connect: func(t *testing.T, name, password string) (conformance.Conn, <-chan zk.Event) {
				t.Helper()
				c, events, err := rawzk.ConnectDigestMD5(testContext(t, 20*time.Second), e.Addrs(), 10*time.Second, nil, name, password)
				if err != nil {
					t.Fatalf("connect the raw client as SASL user %s: %v", name, err)
				}
				return rawzk.ZK{C: c, Timeout: 20 * time.Second}, events
			},
			SuperUser: super, User: user,
		},
		Only: []string{"reconfig/", "sasl/", "refused/"},
	})
}
