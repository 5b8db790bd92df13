package model_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/realzk"
)

// TestConformance runs the conformance suite (the rules measured on a real ZooKeeper 3.8) against the
// model with its default transport: Expire is Server.Expire, Sever is a Disconnect step, after which the
// client reconnects at once; *model.Conn is also the client of the persistent-watch rules (ConnectWatch).
// The model is a 3-server ensemble with realzk's tickTime (100 ms), for the ensemble rules.
func TestConformance(t *testing.T) {
	srv := model.NewServer(model.WithEnsemble(3), model.WithTickTime(100*time.Millisecond), realzkSessionTimeouts, model.WithSuperDigest(conformanceSuperDigest))
	conformance.Run(t, conformance.Target{
		Connect: modelConnect(srv),
		Expire: func(t *testing.T, c conformance.Conn) {
			t.Helper()
			srv.Expire(c.SessionID())
		},
		Sever: func(t *testing.T, c conformance.Conn) {
			t.Helper()
			if err := srv.Do(model.Step{Kind: model.Disconnect, Client: modelConn(t, c).ClientID()}); err != nil {
				t.Fatalf("sever model client: %v", err)
			}
		},
		ConnectWatch: func(t *testing.T, sessionTimeout time.Duration) (conformance.WatchConn, <-chan zk.Event) {
			c, events := modelConnect(srv)(t, sessionTimeout)
			return modelConn(t, c), events
		},
		Ensemble:               ensembleHook(srv),
		SuperUser:              conformanceSuperUser,
		ContainerCheckInterval: model.DefaultContainerCheckInterval * time.Millisecond,
		Advance:                func(t *testing.T, d time.Duration) { srv.Advance(d) },
	})
}

// TestConformanceTTL runs the TTL rules on a model server with extended types enabled and a 100 ms container
// check interval, as realzk.TestConformanceTTL's server; the virtual clock makes the time pass.
func TestConformanceTTL(t *testing.T) {
	srv := model.NewServer(model.WithExtendedTypes(), model.WithContainerCheckInterval(100*time.Millisecond))
	conformance.Run(t, conformance.Target{
		Connect:                modelConnect(srv),
		ExtendedTypes:          true,
		ContainerCheckInterval: 100 * time.Millisecond,
		Advance:                func(t *testing.T, d time.Duration) { srv.Advance(d) },
		Only:                   []string{"ttl/"},
	})
}

// The super user of the model servers the conformance suite runs on.
const conformanceSuperUser = "super:conformance-super-secret"

var conformanceSuperDigest = zk.DigestACL(zk.PermAll, "super", "conformance-super-secret")[0].ID

// realzkSessionTimeouts gives the model servers the conformance suite runs on the session timeout bounds of
// realzk's ensembles (two ticks to 20 s), so that a rule's session gets the timeout it asks for on both: with
// a 100 ms tick the model's default maximum would be 2 s, and go-zookeeper gives up on a connection that sends
// nothing for two thirds of that (a 9 MB reply being built on a loaded machine was one).
var realzkSessionTimeouts = model.WithSessionTimeouts(0, realzk.DefaultMaxSessionTimeout)

// modelConn returns c as the model client it is, failing t otherwise.
func modelConn(t *testing.T, c conformance.Conn) *model.Conn {
	t.Helper()
	mc, ok := c.(*model.Conn)
	if !ok {
		t.Fatalf("connection %T was not opened by the model", c)
	}
	return mc
}

// modelConnect is a Target.Connect that opens sessions on srv with *model.Conn.
func modelConnect(srv *model.Server) func(*testing.T, time.Duration) (conformance.Conn, <-chan zk.Event) {
	return func(t *testing.T, sessionTimeout time.Duration) (conformance.Conn, <-chan zk.Event) {
		t.Helper()
		conn, events, err := srv.Connect(sessionTimeout)
		if err != nil {
			t.Fatalf("connect to the model: %v", err)
		}
		return conn, events
	}
}
