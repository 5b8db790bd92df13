package model_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// recordingTB is a test handle that records what the helpers ask of it, so that a test can end "its" test.
type recordingTB struct {
	cleanups []func()
	errors   []string
	fatal    string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recordingTB) Cleanup(f func())                  { r.cleanups = append(r.cleanups, f) }

// end runs the cleanups as the testing package does: last registered first.
func (r *recordingTB) end() {
	for _, f := range slices.Backward(r.cleanups) {
		f()
	}
}

// TestTestHelpersCleanUpWhenTheTestEnds: what NewTestServer, ConnectT and ConnectZKT open is open during the
// test and closed when it ends — the clients (their sessions' ephemeral nodes go) before the server's wire.
func TestTestHelpersCleanUpWhenTheTestEnds(t *testing.T) {
	tb := &recordingTB{}
	srv := model.NewTestServer(tb)
	native := model.ConnectT(tb, srv, 10*time.Second)
	wire := model.ConnectZKT(tb, srv, 10*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := native.Create("/native", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.Create("/wire", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if len(tb.cleanups) != 3 || tb.fatal != "" {
		t.Fatalf("%d cleanups, fatal %q: want 3, none", len(tb.cleanups), tb.fatal)
	}
	tb.end()
	if len(tb.errors) > 0 {
		t.Fatalf("the cleanups failed the test: %q", tb.errors)
	}
	if dump := srv.Dump(); strings.Contains(dump, "node /native ") || strings.Contains(dump, "node /wire ") {
		t.Fatalf("the clients' ephemeral nodes outlived the test:\n%s", dump)
	}
	if _, err := native.Create("/after", nil, 0, acl); !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("the model client after the test: %v, want zk.ErrConnectionClosed", err)
	}
	if _, _, err := model.ConnectZK(srv, 10*time.Second); err == nil || !strings.Contains(err.Error(), "the server is closed") {
		t.Fatalf("ConnectZK after the test: %v, want the server closed", err)
	}
}

// TestConnectZKTFailsTheTestClearly: a client that cannot connect fails the test with ConnectZK's sentence,
// and registers nothing to clean up.
func TestConnectZKTFailsTheTestClearly(t *testing.T) {
	srv := model.NewServer()
	srv.Close()
	tb := &recordingTB{}
	if conn := model.ConnectZKT(tb, srv, 10*time.Second); conn != nil || tb.fatal != "model: ConnectZK: the server is closed (Server.Close)" || len(tb.cleanups) != 0 {
		t.Fatalf("conn %v, fatal %q, %d cleanups", conn, tb.fatal, len(tb.cleanups))
	}
}

// ExampleConnectZK connects go-zookeeper's own client to the model in-process (no sockets) and uses it as it
// would use a real ensemble.
func ExampleConnectZK() {
	srv := model.NewServer()
	defer srv.Close()
	conn, _, err := model.ConnectZK(srv, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()

	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create("/config", []byte("v1"), 0, acl); err != nil {
		fmt.Println(err)
		return
	}
	data, stat, err := conn.Get("/config")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s at version %d\n", data, stat.Version)
	_, err = conn.Create("/config", nil, 0, acl)
	fmt.Println("again:", err)
	// Output:
	// v1 at version 0
	// again: zk: node already exists
}

// ExampleNewTestServer is a test's set-up in two lines: a server and a go-zookeeper client on it, both
// closed when the test ends. In a test, t is the test's *testing.T.
func ExampleNewTestServer() {
	var t *testing.T // your test's: func TestMyService(t *testing.T)
	srv := model.NewTestServer(t)
	conn := model.ConnectZKT(t, srv, 10*time.Second)
	if _, err := conn.Create("/service", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}
