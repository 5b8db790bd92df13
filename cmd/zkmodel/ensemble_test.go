package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// modesOf returns GET /servers' modes, comma-separated.
func modesOf(t *testing.T, control string) string {
	t.Helper()
	code, body := call(t, "GET", control+"/servers")
	if code != http.StatusOK {
		t.Fatalf("GET /servers: %d %s", code, body)
	}
	var list []serverInfo
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("GET /servers: %v in %q", err, body)
	}
	var modes []string
	for _, s := range list {
		modes = append(modes, s.Mode)
	}
	return strings.Join(modes, ",")
}

// TestServeEnsemble: -addr with three addresses serves one state on three ports; POST /stop closes a
// server's connections and port (the client fails over with its session), a majority stopped leaves none
// serving, POST /start brings a server back on its port and the session with it.
func TestServeEnsemble(t *testing.T) {
	s := serveInProcess(t, "-addr", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0")
	addrs := strings.Split(s.Addr, ",")
	if len(addrs) != 3 {
		t.Fatalf("startup addr %q: want three addresses", s.Addr)
	}
	if got := modesOf(t, s.Control); got != "follower,follower,leader" {
		t.Fatalf("modes %s", got)
	}
	conn, events, err := zk.Connect(addrs, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	waitState(t, events, zk.StateHasSession)
	sid := conn.SessionID()
	if _, err := conn.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	first := strings.Index(s.Addr, conn.Server()) // which server: by its place in the list
	on := strings.Count(s.Addr[:first], ",")
	if code, body := call(t, "POST", s.Control+"/stop?server="+strconv.Itoa(on)); code != http.StatusOK {
		t.Fatalf("POST /stop: %d %s", code, body)
	}
	waitState(t, events, zk.StateDisconnected)
	waitState(t, events, zk.StateHasSession)
	if conn.SessionID() != sid || conn.Server() == addrs[on] {
		t.Fatalf("after stopping server %d: session %#x on %s, want %#x on another server", on, conn.SessionID(), conn.Server(), sid)
	}
	if _, err := net.Dial("tcp", addrs[on]); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial the stopped server: %v, want connection refused", err)
	}
	if code, body := call(t, "POST", s.Control+"/stop?server="+strconv.Itoa(on)); code != http.StatusConflict || !strings.Contains(body, "stopped already") {
		t.Fatalf("stopping it again: %d %s, want 409 saying it is stopped", code, body)
	}
	other := (on + 1) % 3
	if code, body := call(t, "POST", s.Control+"/stop?server="+strconv.Itoa(other)); code != http.StatusOK {
		t.Fatalf("POST /stop: %d %s", code, body)
	}
	if got := modesOf(t, s.Control); !strings.Contains(got, "not serving") {
		t.Fatalf("modes with two stopped: %s, want the third not serving", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for conn.State() == zk.StateHasSession && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if code, body := call(t, "POST", s.Control+"/advance?by=1h"); code != http.StatusOK {
		t.Fatalf("POST /advance: %d %s", code, body)
	}
	if code, body := call(t, "POST", s.Control+"/start?server="+strconv.Itoa(on)); code != http.StatusOK {
		t.Fatalf("POST /start: %d %s", code, body)
	}
	waitState(t, events, zk.StateHasSession)
	if ok, _, err := conn.Exists("/eph"); err != nil || !ok || conn.SessionID() != sid {
		t.Fatalf("after the quorum came back: /eph exists=%v %v, session %#x; want the session %#x kept through an hour without a quorum", ok, err, conn.SessionID(), sid)
	}
	for _, bad := range []string{"/stop?server=3", "/start?server=x", "/start?server=" + strconv.Itoa(on)} {
		if code, body := call(t, "POST", s.Control+bad); code/100 != 4 {
			t.Errorf("POST %s: %d %s, want a 4xx", bad, code, body)
		}
	}
}

func TestServeEnsembleAddrErrors(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1:2181,127.0.0.1:2181", "given twice"},
		{"127.0.0.1:0,2182", `address 2, "2182": want host:port`},
	} {
		var stdout, stderr strings.Builder
		err := run(context.Background(), []string{"serve", "-addr", tc.addr}, &stdout, &stderr)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("-addr %s: %v, want a usage error containing %q", tc.addr, err, tc.want)
		}
	}
}
