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
