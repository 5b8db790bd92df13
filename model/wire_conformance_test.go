package model_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/internal/evqueue"
	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/model"
)

// TestWireConformance runs the conformance suite through real go-zookeeper clients talking ZooKeeper's wire
// protocol to the model: in-process (ConnectZK, over net.Pipe) and over loopback TCP (Listen). Expire is
// Server.Expire; Sever drops the client's connection from the server's side, and go-zookeeper reconnects by
// itself, as it does with a real server.
func TestWireConformance(t *testing.T) {
	t.Run("in-process", func(t *testing.T) {
		srv := model.NewServer(model.WithEnsemble(3), model.WithTickTime(100*time.Millisecond), realzkSessionTimeouts, model.WithSuperDigest(conformanceSuperDigest))
		t.Cleanup(func() { _ = srv.Close() })
		target := wireTarget(srv, inProcess(srv))
		dial := srv.Dialer()
		target.ConnectWatch = rawTarget([]string{"model"}, func(_ context.Context, addr string) (net.Conn, error) {
			return dial("tcp", addr, 5*time.Second)
		})
		conformance.Run(t, target)
	})
	t.Run("tcp", func(t *testing.T) {
		srv := model.NewServer(model.WithTickTime(100*time.Millisecond), realzkSessionTimeouts, model.WithSuperDigest(conformanceSuperDigest))
		t.Cleanup(func() { _ = srv.Close() })
		addrs, err := srv.ListenEnsemble(3)
		if err != nil {
			t.Fatal(err)
		}
		target := wireTarget(srv, func(t *testing.T, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
			return dialTCP(t, addrs, timeout)
		})
		target.ConnectWatch = rawTarget(addrs, nil)
		conformance.Run(t, target)
	})
	t.Run("reconfig", func(t *testing.T) {
		// The reconfig rules, on an ensemble with reconfigEnabled (the others run on one without it).
		srv := model.NewServer(model.WithEnsemble(3), model.WithReconfig(), model.WithSuperDigest(conformanceSuperDigest))
		t.Cleanup(func() { _ = srv.Close() })
		target := wireTarget(srv, inProcess(srv))
		target.Reconfig.Enabled, target.Reconfig.Fresh, target.Only = true, true, []string{"reconfig/"}
		conformance.Run(t, target)
	})
	t.Run("skipacl", func(t *testing.T) {
		// The skipACL rules, on an ensemble with reconfigEnabled and skipACL (as realzk.TestConformanceSkipACL's).
		srv := model.NewServer(model.WithEnsemble(3), model.WithReconfig(), model.WithSkipACL())
		t.Cleanup(func() { _ = srv.Close() })
		target := wireTarget(srv, inProcess(srv))
		target.SuperUser, target.SkipACL = "", true
		target.Reconfig.Enabled, target.Only = true, []string{"skipacl/"}
		conformance.Run(t, target)
	})
	t.Run("reconfig-sasl", func(t *testing.T) {
		// The reconfig and SASL rules, on an ensemble with reconfigEnabled, SASL users and a SASL super user,
		// and no superDigest (as realzk.TestConformanceReconfigSASL's).
		srv := model.NewServer(model.WithEnsemble(3), model.WithReconfig(), model.WithSASL(model.SASLConfig{Users: saslConformanceUsers, SuperUser: saslConformanceSuper[0]}))
		t.Cleanup(func() { _ = srv.Close() })
		target := wireTarget(srv, inProcess(srv))
		target.SuperUser = ""
		target.Reconfig.Enabled, target.Reconfig.Fresh, target.Only = true, true, []string{"reconfig/", "sasl/", "refused/"}
		dial := srv.Dialer()
		target.SASL = &conformance.SASL{
			Connect: rawSASLConnect([]string{"model"}, func(_ context.Context, addr string) (net.Conn, error) {
				return dial("tcp", addr, 5*time.Second)
			}),
			SuperUser: saslConformanceSuper, User: saslConformanceUser,
		}
		conformance.Run(t, target)
	})
	t.Run("ttl", func(t *testing.T) {
		// The TTL rules, on a server with extended types and a 100 ms container check interval.
		srv := model.NewServer(model.WithExtendedTypes(), model.WithContainerCheckInterval(100*time.Millisecond))
		t.Cleanup(func() { _ = srv.Close() })
		target := wireTarget(srv, inProcess(srv))
		target.ExtendedTypes, target.ContainerCheckInterval, target.Only = true, 100*time.Millisecond, []string{"ttl/"}
		conformance.Run(t, target)
	})
}

// dialTCP connects go-zookeeper to addr and waits (bounded) for its session.
func dialTCP(t *testing.T, addrs []string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	addr := strings.Join(addrs, ",")
	rec := evqueue.NewSession()
	conn, events, err := zk.Connect(addrs, timeout, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}), rec.Option())
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	events = rec.Follow(events)
	deadline := time.Now().Add(10 * time.Second)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			conn.Close()
			t.Fatalf("no session from %s after 10s (state %s)", addr, conn.State())
		}
		time.Sleep(time.Millisecond)
	}
	return conn, events
}

// rawTarget is Target.ConnectWatch for the project's raw wire client (the persistent-watch rules).
func rawTarget(addrs []string, dial rawzk.DialFunc) func(*testing.T, time.Duration) (conformance.WatchConn, <-chan zk.Event) {
	return func(t *testing.T, timeout time.Duration) (conformance.WatchConn, <-chan zk.Event) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, events, err := rawzk.Connect(ctx, addrs, timeout, dial)
		if err != nil {
			t.Fatalf("connect the raw client to the model: %v", err)
		}
		return rawzk.ZK{C: c, Timeout: 10 * time.Second}, events
	}
}

// The SASL users of the reconfig-sasl target: the super user (zookeeper.superUser) and another.
var (
	saslConformanceSuper = [2]string{"boss", "boss-secret"}
	saslConformanceUser  = [2]string{"other", "other-secret"}
	saslConformanceUsers = map[string]string{saslConformanceSuper[0]: saslConformanceSuper[1], saslConformanceUser[0]: saslConformanceUser[1]}
)

// rawSASLConnect is a conformance.SASL Connect: the raw client, logged in by SASL DIGEST-MD5.
func rawSASLConnect(addrs []string, dial rawzk.DialFunc) func(t *testing.T, user, password string) (conformance.Conn, <-chan zk.Event) {
	return func(t *testing.T, user, password string) (conformance.Conn, <-chan zk.Event) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, events, err := rawzk.ConnectDigestMD5(ctx, addrs, 10*time.Second, dial, user, password)
		if err != nil {
			t.Fatalf("connect the raw client to the model as SASL user %s: %v", user, err)
		}
		return rawzk.ZK{C: c, Timeout: 10 * time.Second}, events
	}
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func wireTarget(srv *model.Server, connect func(*testing.T, time.Duration) (*zk.Conn, <-chan zk.Event)) conformance.Target {
	return conformance.Target{
		Connect: func(t *testing.T, timeout time.Duration) (conformance.Conn, <-chan zk.Event) {
			t.Helper()
			return connect(t, timeout)
		},
		Expire: func(t *testing.T, c conformance.Conn) {
			t.Helper()
			srv.Expire(c.SessionID())
		},
		Sever: func(t *testing.T, c conformance.Conn) {
			t.Helper()
			if err := srv.Do(model.Step{Kind: model.Disconnect, Client: srv.ClientOf(c.SessionID())}); err != nil {
				t.Fatalf("sever the wire client of session %#x: %v", c.SessionID(), err)
			}
		},
		Ensemble:               ensembleHook(srv),
		SuperUser:              conformanceSuperUser,
		Reconfig:               &conformance.Reconfig{Servers: srv.Members()},
		ContainerCheckInterval: model.DefaultContainerCheckInterval * time.Millisecond,
		Advance:                func(t *testing.T, d time.Duration) { srv.Advance(d) },
	}
}

// inProcess connects go-zookeeper to srv through the in-process wire (ConnectZK), with lossless session events.
func inProcess(srv *model.Server) func(t *testing.T, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	return func(t *testing.T, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
		rec := evqueue.NewSession()
		conn, events, err := model.ConnectZK(srv, timeout, rec.Option())
		if err != nil {
			t.Fatalf("connect to the model: %v", err)
		}
		return conn, rec.Follow(events)
	}
}
