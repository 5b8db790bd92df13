package clients

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/internal/evqueue"
	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/realzk"
)

// standinSides are the two zkServer.sh scripts a stand-in test compares: Debian's real one first, then
// zkmodel's stand-in, each started from the same zoo.cfg lines and SERVER_JVMFLAGS.
var standinSides = []struct{ name, script string }{{"real zkServer.sh", realZkServer}, {"stand-in", ""}}

// standinConnect is a conformance Target.Connect: go-zookeeper to every server of s.
func standinConnect(s *standin) func(t *testing.T, timeout time.Duration) (conformance.Conn, <-chan zk.Event) {
	return func(t *testing.T, timeout time.Duration) (conformance.Conn, <-chan zk.Event) {
		t.Helper()
		rec := evqueue.NewSession()
		conn, events, err := zk.Connect(s.addrs, timeout, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}), rec.Option())
		if err != nil {
			t.Fatalf("connect to %v: %v", s.addrs, err)
		}
		events = rec.Follow(events)
		deadline := time.Now().Add(30 * time.Second)
		for conn.State() != zk.StateHasSession {
			if time.Now().After(deadline) {
				conn.Close()
				t.Fatalf("no session from %v after 30s (state %s)", s.addrs, conn.State())
			}
			time.Sleep(time.Millisecond)
		}
		return conn, events
	}
}

// TestStandInReconfigAuth: clusters of three started by Debian's zkServer.sh and by the stand-in from the same
// zoo.cfg files with reconfigEnabled=true, no superDigest and a SASL super user (-Dzookeeper.superUser) pass
// the same conformance rules: a fresh configuration's version 100000000, NoAuth for every reconfig but the
// SASL super user's, refused operations that change nothing; and with skipACL=yes in zoo.cfg (over
// -Dzookeeper.skipACL=no) anyone may do anything, reconfigure too.
func TestStandInReconfigAuth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*scenarioTimeout)
	t.Cleanup(cancel)
	super, user := [2]string{"boss", "boss-secret"}, [2]string{"other", "other-secret"}
	jaas, err := realzk.WriteJAAS(t.TempDir(), map[string]string{super[0]: super[1], user[0]: user[1]})
	if err != nil {
		t.Fatal(err)
	}
	saslFlags := "-Djava.security.auth.login.config=" + jaas + " -Dzookeeper.superUser=" + super[0]
	for _, side := range standinSides {
		t.Run(side.name, func(t *testing.T) {
			t.Run("sasl-super", func(t *testing.T) {
				s := startCluster(ctx, t, clusterConfig{script: side.script, servers: 3, jvmFlags: saslFlags, extra: []string{"reconfigEnabled=true"}})
				conformance.Run(t, conformance.Target{
					Connect:  standinConnect(s),
					Reconfig: &conformance.Reconfig{Enabled: true, Servers: 3, Fresh: true},
					SASL: &conformance.SASL{
						Connect: func(t *testing.T, name, password string) (conformance.Conn, <-chan zk.Event) {
							t.Helper()
							c, events, err := rawzk.ConnectDigestMD5(ctx, s.addrs, 10*time.Second, nil, name, password)
							if err != nil {
								t.Fatalf("connect the raw client to %s as SASL user %s: %v", strings.Join(s.addrs, ","), name, err)
							}
							return rawzk.ZK{C: c, Timeout: 20 * time.Second}, events
						},
						SuperUser: super, User: user,
					},
					Only: []string{"reconfig/", "sasl/", "refused/"},
				})
			})
			t.Run("skipacl", func(t *testing.T) {
				s := startCluster(ctx, t, clusterConfig{script: side.script, servers: 3, jvmFlags: "-Dzookeeper.skipACL=no",
					extra: []string{"reconfigEnabled=true", "skipACL=yes"}})
				conformance.Run(t, conformance.Target{
					Connect:  standinConnect(s),
					Reconfig: &conformance.Reconfig{Enabled: true, Servers: 3},
					SkipACL:  true,
					Only:     []string{"skipacl/"},
				})
			})
		})
	}
}
