package model_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/realzk"
)

// lockClient is what the mixed workload calls: *model.Conn and *zk.Conn both have it.
type lockClient interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Children(path string) ([]string, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Delete(path string, version int32) error
	Close()
}

// mixedWorkload is model/bench_test.go's BenchmarkMixedWorkload over any client: every client creates an
// ephemeral-sequential node, lists the children, watches its predecessor with ExistsW, then deletes its node,
// which fires the successor's watch. One op is one client call.
func mixedWorkload(b *testing.B, base string, conns []lockClient) {
	clients := len(conns)
	nodes := make([]string, clients)
	watches := make([]<-chan zk.Event, clients)
	b.ReportAllocs()
	b.ResetTimer()
	var err error
	for ops := 0; ops < b.N; ops += 4 * clients {
		for i, c := range conns {
			if nodes[i], err = c.Create(base+"/lock-", nil, zk.FlagEphemeralSequential, openACL); err != nil {
				b.Fatal(err)
			}
		}
		for _, c := range conns {
			if _, _, err := c.Children(base); err != nil {
				b.Fatal(err)
			}
		}
		for i, c := range conns {
			ok, _, ch, err := c.ExistsW(nodes[(i+clients-1)%clients])
			if err != nil || !ok {
				b.Fatalf("ExistsW: %v, %v", ok, err)
			}
			watches[i] = ch
		}
		for i, c := range conns {
			if err := c.Delete(nodes[i], -1); err != nil {
				b.Fatal(err)
			}
		}
		for _, ch := range watches {
			if ev := <-ch; ev.Type != zk.EventNodeDeleted {
				b.Fatalf("watch event %+v", ev)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

const benchClients = 8

// connectAll opens benchClients clients with open, drains their event channels, and closes them at the end.
func connectAll(b *testing.B, open func() (lockClient, <-chan zk.Event, error)) []lockClient {
	conns := make([]lockClient, benchClients)
	for i := range conns {
		c, events, err := open()
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for range events {
			}
		}()
		conns[i] = c
		b.Cleanup(c.Close)
	}
	return conns
}

func createBase(b *testing.B, c lockClient, base string) {
	if _, err := c.Create(base, nil, 0, openACL); err != nil {
		b.Fatalf("create %s: %v", base, err)
	}
}

// startStandalone starts a real standalone ZooKeeper 3.8 (Debian's zookeeper package) for b.
func startStandalone(b *testing.B) *realzk.Ensemble {
	ctx, cancel := context.WithTimeout(context.Background(), realzk.StartTimeout)
	defer cancel()
	e, err := realzk.Start(ctx, realzk.Config{Servers: 1})
	if err != nil {
		b.Fatalf("start a standalone ZooKeeper (make zookeeper installs it): %v", err)
	}
	b.Cleanup(func() { _ = e.Close() })
	return e
}

func dialZK(addr string) func() (lockClient, <-chan zk.Event, error) {
	return func() (lockClient, <-chan zk.Event, error) {
		c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
		if err != nil {
			return nil, nil, err
		}
		for c.State() != zk.StateHasSession {
			time.Sleep(time.Millisecond)
		}
		return c, events, nil
	}
}

// BenchmarkWireMixedWorkload runs the mixed workload, in one run, on the model through *model.Conn, on the
// model through the wire with real *zk.Conn clients (in-process and over loopback TCP), and on a real
// standalone ZooKeeper 3.8 on this machine.
//
//	go test -run '^$' -bench WireMixedWorkload -cpu 1 ./model
func BenchmarkWireMixedWorkload(b *testing.B) {
	b.Run("model-conn", func(b *testing.B) {
		srv := model.NewServer()
		conns := connectAll(b, func() (lockClient, <-chan zk.Event, error) { return srv.Connect(10 * time.Second) })
		createBase(b, conns[0], "/bench")
		mixedWorkload(b, "/bench", conns)
	})
	b.Run("model-wire-in-process", func(b *testing.B) {
		srv := model.NewServer()
		b.Cleanup(func() { _ = srv.Close() })
		conns := connectAll(b, func() (lockClient, <-chan zk.Event, error) { return model.ConnectZK(srv, 10*time.Second) })
		createBase(b, conns[0], "/bench")
		mixedWorkload(b, "/bench", conns)
	})
	b.Run("model-wire-tcp", func(b *testing.B) {
		srv := model.NewServer()
		b.Cleanup(func() { _ = srv.Close() })
		addr, err := srv.Listen("127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		conns := connectAll(b, dialZK(addr))
		createBase(b, conns[0], "/bench")
		mixedWorkload(b, "/bench", conns)
	})
	b.Run("real-standalone", func(b *testing.B) {
		e := startStandalone(b)
		conns := connectAll(b, dialZK(e.Addrs()[0]))
		base := fmt.Sprintf("/bench-%d", time.Now().UnixNano())
		createBase(b, conns[0], base)
		mixedWorkload(b, base, conns)
	})
}

// BenchmarkWireStartup measures the time from nothing to a first session on a fresh server: the model's
// NewServer, Listen and a go-zookeeper session over TCP, beside starting a real standalone ZooKeeper 3.8 and
// opening a session on it. Both are torn down inside the measurement.
func BenchmarkWireStartup(b *testing.B) {
	session := func(b *testing.B, addr string) {
		c, _, err := dialZK(addr)()
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	b.Run("model-listen", func(b *testing.B) {
		for b.Loop() {
			srv := model.NewServer()
			addr, err := srv.Listen("127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			session(b, addr)
			if err := srv.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("real-standalone", func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), realzk.StartTimeout)
			e, err := realzk.Start(ctx, realzk.Config{Servers: 1})
			cancel()
			if err != nil {
				b.Fatalf("start a standalone ZooKeeper (make zookeeper installs it): %v", err)
			}
			session(b, e.Addrs()[0])
			if err := e.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
