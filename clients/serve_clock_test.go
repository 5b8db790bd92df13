package clients

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/realzk"
)

// TestServeClockTTL: a TTL node of 1 ms, a second later, on a real ZooKeeper 3.8
// (zookeeper.extendedTypesEnabled=true) with the container manager's default interval (1 minute) and with
// znode.container.checkIntervalMs=100, and on `zkmodel serve -extended-types` with the same intervals:
// with -clock wall serve answers as the real server does (the node goes at the manager's next pass); with
// its default virtual clock the node stays until POST /advance moves the clock.
func TestServeClockTTL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*scenarioTimeout)
	t.Cleanup(cancel)
	// What the real server gives (measured; it runs first and is held to it too).
	const (
		defaultInterval = "a second later: exists\n"
		shortInterval   = "a second later: gone\n"
	)
	for _, tc := range []struct {
		name     string
		interval time.Duration // 0: the default
		want     string
	}{
		{"default interval", 0, defaultInterval},
		{"checkIntervalMs=100", 100 * time.Millisecond, shortInterval},
	} {
		t.Run(tc.name+"/real", func(t *testing.T) {
			props := map[string]string{"zookeeper.extendedTypesEnabled": "true"}
			if tc.interval > 0 {
				props["znode.container.checkIntervalMs"] = fmt.Sprint(tc.interval.Milliseconds())
			}
			e, err := realzk.Start(ctx, realzk.Config{Servers: 1, SystemProperties: props})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			if got := ttlScenario(t, e.Addrs()[0]); got != tc.want {
				t.Errorf("real printed %q, want %q", got, tc.want)
			}
		})
		for _, clock := range []string{"wall", "virtual"} {
			t.Run(tc.name+"/serve -clock "+clock, func(t *testing.T) {
				args := []string{"-addr", "127.0.0.1:0", "-control", "127.0.0.1:0", "-extended-types", "-clock", clock}
				if tc.interval > 0 {
					args = append(args, "-container-check-interval", tc.interval.String())
				}
				addrs, stop := startServe(ctx, t, args...)
				t.Cleanup(stop)
				want := tc.want
				if clock == "virtual" {
					want = defaultInterval // the clock stands still
				}
				if got := ttlScenario(t, addrs.Addr); got != want {
					t.Errorf("serve -clock %s printed %q, want %q", clock, got, want)
				}
			})
		}
	}
}

// ttlScenario creates a TTL node of 1 ms on addr and says whether it is there a second later.
func ttlScenario(t *testing.T, addr string) string {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.CreateTTL("/ttl", nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Millisecond); err != nil {
		t.Fatalf("create a TTL node on %s: %v", addr, err)
	}
	time.Sleep(time.Second)
	ok, _, err := conn.Exists("/ttl")
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		return "a second later: exists\n"
	}
	return "a second later: gone\n"
}
