package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// configLines returns /zookeeper/config's server lines and its version line.
func configLines(t *testing.T, conn *zk.Conn) ([]string, string) {
	t.Helper()
	data, _, err := conn.Get("/zookeeper/config")
	if err != nil {
		t.Fatalf("Get(/zookeeper/config): %v", err)
	}
	lines := strings.Split(string(data), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// TestServeReconfig: with several addresses, /zookeeper/config lists each server with its client address;
// -reconfig lets the super user reconfigure (a joining server the ensemble does not run counts as stopped),
// and without it every reconfig fails with ZRECONFIGDISABLED, as on ZooKeeper 3.8.
func TestServeReconfig(t *testing.T) {
	digest := zk.DigestACL(zk.PermAll, "super", "secret")[0].ID
	for _, enabled := range []bool{true, false} {
		t.Run(fmt.Sprintf("reconfig=%v", enabled), func(t *testing.T) {
			args := []string{"-addr", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0", "-super-digest", digest}
			if enabled {
				args = append(args, "-reconfig")
			}
			s := serveInProcess(t, args...)
			addrs := strings.Split(s.Addr, ",")
			conn, events, err := zk.Connect(addrs, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(conn.Close)
			waitState(t, events, zk.StateHasSession)
			servers, version := configLines(t, conn)
			var want []string
			for i, a := range addrs {
				want = append(want, fmt.Sprintf("server.%d=127.0.0.1:%d:%d:participant;%s", i+1, 2888+i, 3888+i, a))
			}
			// As on a fresh 3.8 ensemble: version 0 without reconfigEnabled, the first epoch's first zxid with it.
			wantVersion := "version=0"
			if enabled {
				wantVersion = "version=100000000"
			}
			if strings.Join(servers, "\n") != strings.Join(want, "\n") || version != wantVersion {
				t.Fatalf("/zookeeper/config: %q %q, want %q and %s", servers, version, want, wantVersion)
			}
			if err := conn.AddAuth("digest", []byte("super:secret")); err != nil {
				t.Fatal(err)
			}
			_, err = conn.IncrementalReconfig([]string{"server.4=127.0.0.1:2891:3891;40004"}, nil, -1)
			if !enabled {
				if !errors.Is(err, zk.ErrReconfigDisabled) {
					t.Fatalf("IncrementalReconfig without -reconfig: %v, want %v", err, zk.ErrReconfigDisabled)
				}
				return
			}
			if err != nil {
				t.Fatalf("IncrementalReconfig(join server.4): %v", err)
			}
			if servers, _ := configLines(t, conn); len(servers) != 4 || servers[3] != "server.4=127.0.0.1:2891:3891:participant;0.0.0.0:40004" {
				t.Fatalf("after joining server.4: %q", servers)
			}
			if got := modesOf(t, s.Control); got != "follower,follower,leader" {
				t.Fatalf("modes after joining server.4: %s, want the three servers' unchanged", got)
			}
			if _, err := conn.IncrementalReconfig(nil, []string{"4"}, -1); err != nil {
				t.Fatalf("IncrementalReconfig(leave 4): %v", err)
			}
			if got, _ := configLines(t, conn); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("after server.4 left: %q, want %q", got, want)
			}
		})
	}
}

// TestZKServerReconfig: a cluster started through zkServer.sh from zoo.cfg files with reconfigEnabled=true
// (as go-zookeeper's harness writes them) shows its server.N lines in /zookeeper/config and takes the super
// user's reconfig, as a real one does.
func TestZKServerReconfig(t *testing.T) {
	c := newCluster(t, 3, "-Dzookeeper.DigestAuthenticationProvider.superDigest="+standinSuperDigest)
	for i := range 3 {
		c.start(i)
	}
	conn, _ := zkClient(t, c.addrs())
	servers, version := configLines(t, conn)
	if len(servers) != 3 || version != "version=100000000" || !strings.HasPrefix(servers[0], "server.1=127.0.0.1:") || !strings.HasSuffix(servers[0], ":participant") {
		t.Fatalf("/zookeeper/config: %q %q, want the zoo.cfg's three server lines as participants and version=100000000 (a fresh ensemble's with reconfigEnabled)", servers, version)
	}
	if _, err := conn.IncrementalReconfig(nil, []string{"3"}, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("IncrementalReconfig without super auth: %v, want %v", err, zk.ErrNoAuth)
	}
	if err := conn.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Reconfig(servers[1:], -1); err != nil && !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("Reconfig(server.2 and server.3): %v", err)
	}
	// Server 3 led, and still does; without server 1 two of two participants run.
	if got, _ := configLines(t, conn); strings.Join(got, "\n") != strings.Join(servers[1:], "\n") {
		t.Fatalf("after the whole reconfig: %q, want %q", got, servers[1:])
	}
	if _, err := conn.Reconfig(servers, -1); err != nil {
		t.Fatalf("Reconfig(all three again): %v", err)
	}
}

// TestServeReconfigAuth: `zkmodel serve -reconfig` without -super-digest refuses every reconfig with NoAuth, a
// session that added digest auth as super:secret included, and changes nothing; with -skip-acl anyone may
// reconfigure — as on ZooKeeper 3.8 (realzk.TestConformanceReconfigSASL and TestConformanceSkipACL measure it).
func TestServeReconfigAuth(t *testing.T) {
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skip-acl=%v", skip), func(t *testing.T) {
			args := []string{"-addr", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0", "-reconfig"}
			if skip {
				args = append(args, "-skip-acl")
			}
			s := serveInProcess(t, args...)
			conn, events, err := zk.Connect(strings.Split(s.Addr, ","), 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(conn.Close)
			waitState(t, events, zk.StateHasSession)
			before, version := configLines(t, conn)
			_, err = conn.IncrementalReconfig(nil, []string{"3"}, -1)
			if skip {
				if err != nil {
					t.Fatalf("anonymous IncrementalReconfig(leave 3) with -skip-acl: %v", err)
				}
				if after, _ := configLines(t, conn); len(after) != 2 {
					t.Fatalf("after server.3 left: %q", after)
				}
				return
			}
			if !errors.Is(err, zk.ErrNoAuth) {
				t.Fatalf("anonymous IncrementalReconfig(leave 3) without a super user: %v, want %v", err, zk.ErrNoAuth)
			}
			if err := conn.AddAuth("digest", []byte("super:secret")); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.IncrementalReconfig(nil, []string{"3"}, -1); !errors.Is(err, zk.ErrNoAuth) {
				t.Fatalf("IncrementalReconfig(leave 3) as digest super:secret without -super-digest: %v, want %v", err, zk.ErrNoAuth)
			}
			if after, v := configLines(t, conn); strings.Join(after, "\n") != strings.Join(before, "\n") || v != version {
				t.Fatalf("the refused reconfigs changed /zookeeper/config: %q %s, was %q %s", after, v, before, version)
			}
		})
	}
}
