package model_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// recv takes one event from ch, failing t after a second (the default transport has delivered it already).
func recv(t *testing.T, ch <-chan zk.Event, what string) (zk.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		return ev, ok
	case <-time.After(time.Second):
		t.Fatalf("%s: no event", what)
	}
	return zk.Event{}, false
}

// TestAddWatchChannelKeepsEveryEvent: a persistent watch's channel gets every event in order, beyond its
// buffer too, without the writes waiting for the reader; removing the watch ends the channel.
func TestAddWatchChannelKeepsEveryEvent(t *testing.T) {
	srv := model.NewServer()
	conn, _, _ := srv.Connect(10 * time.Second)
	defer conn.Close()
	if _, err := conn.Create("/r", nil, zk.FlagPersistent, openACL); err != nil {
		t.Fatal(err)
	}
	ch, err := conn.AddWatch("/r", true)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200 // more than the channel holds
	for i := range n {
		if _, err := conn.Create(fmt.Sprintf("/r/c%d", i), nil, zk.FlagPersistent, openACL); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.RemoveWatches("/r", model.WatcherAny); err != nil {
		t.Fatalf("RemoveWatches(/r, any): %v", err)
	}
	for i := range n {
		ev, ok := recv(t, ch, fmt.Sprintf("event %d", i))
		want := zk.Event{Type: zk.EventNodeCreated, State: zk.StateSyncConnected, Path: fmt.Sprintf("/r/c%d", i)}
		if !ok || ev != want {
			t.Fatalf("event %d: %+v (open %t), want %+v", i, ev, ok, want)
		}
	}
	if ev, ok := recv(t, ch, "the removal"); !ok || ev != (zk.Event{Type: zk.EventNotWatching, State: zk.StateSyncConnected, Path: "/r"}) {
		t.Fatalf("after the removal: %+v (open %t), want EventNotWatching for /r", ev, ok)
	}
	if _, ok := recv(t, ch, "the close"); ok {
		t.Fatal("the channel is still open after the removal")
	}
	if err := conn.CheckWatches("/r", model.WatcherAny); !errors.Is(err, model.ErrNoWatcher) {
		t.Fatalf("CheckWatches after the removal: %v, want ErrNoWatcher", err)
	}
}

// TestAddWatchPartialRemoval: removing one type of a persistent watch leaves its channel open, with the
// other half's events; removing a standard watch ends its channel.
func TestAddWatchPartialRemoval(t *testing.T) {
	srv := model.NewServer()
	conn, _, _ := srv.Connect(10 * time.Second)
	defer conn.Close()
	for _, p := range []string{"/p", "/d"} {
		if _, err := conn.Create(p, nil, zk.FlagPersistent, openACL); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := conn.AddWatch("/p", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.RemoveWatches("/p", model.WatcherData); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set("/p", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/p/c", nil, zk.FlagPersistent, openACL); err != nil {
		t.Fatal(err)
	}
	if ev, ok := recv(t, ch, "the child half"); !ok || ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/p" {
		t.Fatalf("got %+v (open %t), want NodeChildrenChanged /p only (the data half is gone)", ev, ok)
	}
	_, _, std, err := conn.GetW("/d")
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.RemoveWatches("/d", model.WatcherData); err != nil {
		t.Fatal(err)
	}
	if ev, ok := recv(t, std, "a removed GetW"); !ok || ev.Type != zk.EventNotWatching || ev.Err != nil {
		t.Fatalf("removed GetW channel got %+v (open %t), want EventNotWatching without error", ev, ok)
	}
	if _, ok := recv(t, std, "its close"); ok {
		t.Fatal("a removed GetW channel stays open")
	}
	if err := conn.RemoveWatches("/d", model.WatcherData); !errors.Is(err, model.ErrNoWatcher) {
		t.Fatalf("a second RemoveWatches: %v, want ErrNoWatcher", err)
	}
	if _, err := conn.AddWatch("relative", false); !errors.Is(err, zk.ErrInvalidPath) {
		t.Fatalf("AddWatch(relative): %v, want zk.ErrInvalidPath", err)
	}
}

// TestAddWatchEndsWithTheSession: Close and expiry end persistent watches as go-zookeeper ends standard
// ones, with EventNotWatching and the reason.
func TestAddWatchEndsWithTheSession(t *testing.T) {
	srv := model.NewServer()
	for _, end := range []struct {
		name string
		do   func(*model.Conn)
		err  error
	}{
		{"close", (*model.Conn).Close, zk.ErrClosing},
		{"expiry", func(c *model.Conn) { srv.Expire(c.SessionID()) }, zk.ErrSessionExpired},
	} {
		conn, _, _ := srv.Connect(10 * time.Second)
		ch, err := conn.AddWatch("/w-"+end.name, true)
		if err != nil {
			t.Fatal(err)
		}
		end.do(conn)
		ev, ok := recv(t, ch, end.name)
		if !ok || ev.Type != zk.EventNotWatching || !errors.Is(ev.Err, end.err) || ev.Path != "/w-"+end.name {
			t.Fatalf("%s: got %+v (open %t), want EventNotWatching with %v", end.name, ev, ok, end.err)
		}
		if _, ok := recv(t, ch, end.name+": close"); ok {
			t.Fatalf("%s: the channel stays open", end.name)
		}
		conn.Close()
	}
}

// TestPersistentWatchesDeterministic: the same calls give the same state, watches included, byte for byte.
func TestPersistentWatchesDeterministic(t *testing.T) {
	run := func() string {
		srv := model.NewServer(model.WithSeed(7))
		var conns []*model.Conn
		for range 3 {
			c, _, _ := srv.Connect(10 * time.Second)
			conns = append(conns, c)
		}
		for i, c := range conns {
			for j := range 4 {
				p := fmt.Sprintf("/n%d", (i+j)%3)
				if _, err := c.AddWatch(p, j%2 == 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		_ = conns[1].RemoveWatches("/n1", model.WatcherChildren)
		if _, _, _, err := conns[2].ExistsW("/n2"); err != nil {
			t.Fatal(err)
		}
		return srv.Dump()
	}
	first := run()
	if !strings.Contains(first, "watch data-persistent /n0") || !strings.Contains(first, "(recursive)") {
		t.Fatalf("the dump shows no persistent watches:\n%s", first)
	}
	for range 20 {
		if got := run(); got != first {
			t.Fatalf("two runs differ:\n%s\n----\n%s", first, got)
		}
	}
}
