package model_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// TestWireManualTransport drives a real *zk.Conn under WithManualTransport inside a synctest bubble: its
// request waits as an Apply step of its client, its reply as a Deliver step, and the call returns only once
// the reply is delivered; a LoseReply step drops the connection after the server applied the request, and
// go-zookeeper's reconnection to the same session waits for a Reconnect step.
//
// Run twice, the scenario must record the same history, byte for byte.
func TestWireManualTransport(t *testing.T) {
	first := manualScenario(t)
	if second := manualScenario(t); second != first {
		t.Fatalf("two runs recorded different histories:\n%s\n---\n%s", first, second)
	}
	for _, want := range []string{"send         create /a", "apply        create /a", "reply        create /a", "lose-reply   set /a", "reconnect    session", "send         connect session", "apply        close", "disconnect   client closed the connection"} {
		if !strings.Contains(first, want) {
			t.Errorf("no %q in the history:\n%s", want, first)
		}
	}
}

func manualScenario(t *testing.T) string {
	var history strings.Builder
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		srv := model.NewServer(model.WithManualTransport(), model.WithObserver(func(r model.Record) {
			mu.Lock()
			defer mu.Unlock()
			if r.Kind != "state" { // go-zookeeper's own states are not the server's
				fmt.Fprintln(&history, r)
			}
		}))
		conn, _, err := model.ConnectZK(srv, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		client := srv.ClientOf(conn.SessionID())
		if client == 0 {
			t.Fatal("no client for the wire session")
		}
		done := make(chan error, 1)
		go func() {
			_, err := conn.Create("/a", []byte("x"), 0, zk.WorldACL(zk.PermAll))
			done <- err
		}()
		synctest.Wait()
		apply := model.Step{Kind: model.Apply, Client: client}
		if steps := srv.Pending(); !slices.Contains(steps, apply) {
			t.Fatalf("pending steps %v, want %v for the create", steps, apply)
		}
		if err := srv.Do(apply); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Create returned (%v) before its reply was delivered", err)
		default:
		}
		deliver := model.Step{Kind: model.Deliver, Client: client}
		if err := srv.Do(deliver); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
		default:
			t.Fatal("Create has not returned after its reply was delivered")
		}

		// A reply lost with its connection: the write happened, the caller learns only that the connection
		// closed, and the client comes back on the same session.
		sid := conn.SessionID()
		go func() {
			_, err := conn.Set("/a", []byte("y"), -1)
			done <- err
		}()
		synctest.Wait()
		if err := srv.Do(apply); err != nil {
			t.Fatal(err)
		}
		if err := srv.Do(model.Step{Kind: model.LoseReply, Client: client}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := <-done; err != zk.ErrConnectionClosed {
			t.Fatalf("Set whose reply was lost: %v, want %v", err, zk.ErrConnectionClosed)
		}
		// go-zookeeper redials (after a second of virtual time); its connect request waits for a Reconnect step.
		reconnect := model.Step{Kind: model.Reconnect, Client: client}
		for !slices.Contains(srv.Pending(), reconnect) {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
		}
		if st := conn.State(); st == zk.StateHasSession {
			t.Fatalf("state %s before the Reconnect step", st)
		}
		if err := srv.Do(reconnect); err != nil {
			t.Fatal(err)
		}
		for conn.State() != zk.StateHasSession {
			time.Sleep(10 * time.Millisecond)
			synctest.Wait()
		}
		if conn.SessionID() != sid {
			t.Fatalf("session %#x after the lost reply, want %#x resumed", conn.SessionID(), sid)
		}
		go func() {
			data, _, err := conn.Get("/a")
			if err == nil && string(data) != "y" {
				err = errUnexpected(string(data))
			}
			done <- err
		}()
		synctest.Wait()
		for _, st := range []model.Step{apply, deliver} {
			if err := srv.Do(st); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if err := <-done; err != nil {
			t.Fatalf("Get after the lost reply: %v (the server applied the set)", err)
		}
		// Close's close-session request is a step too: a scheduler applies it and delivers its reply, and the
		// session ends. The client, given the reply, closes its end before the server's hang-up is delivered:
		// every step is explicit, so the history does not depend on which of the two closes comes first.
		closed := make(chan struct{})
		go func() {
			conn.Close()
			close(closed)
		}()
		synctest.Wait()
		for _, st := range []model.Step{apply, deliver} {
			if err := srv.Do(st); err != nil {
				t.Fatal(err)
			}
		}
		<-closed
		synctest.Wait()
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		if dump := srv.Dump(); strings.Contains(dump, fmt.Sprintf("session %#x ", sid)) {
			t.Fatalf("session %#x alive after Close let its close request through:\n%s", sid, dump)
		}
	})
	return history.String()
}

type errUnexpected string

func (e errUnexpected) Error() string { return "unexpected data " + string(e) }
