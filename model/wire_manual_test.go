package model_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// TestWireManualTransport drives a real *zk.Conn under WithManualTransport inside a synctest bubble: its
// request waits as an Apply step of its client, its reply as a Deliver step, and the call returns only once
// the reply is delivered; a LoseReply step drops the connection after the server applied the request, and
// go-zookeeper reconnects to the same session by itself.
func TestWireManualTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := model.NewServer(model.WithManualTransport())
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
		for conn.State() != zk.StateHasSession {
			time.Sleep(100 * time.Millisecond) // virtual time: go-zookeeper waits before it redials
			// A resumed session re-sends its watches (none here) and pings: take whatever is pending.
			for _, st := range srv.Pending() {
				_ = srv.Do(st)
			}
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
		// Close's close-session request is a step too: a scheduler lets it through, and the session ends.
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				for _, st := range srv.Pending() {
					_ = srv.Do(st)
				}
			}
		}()
		conn.Close()
		close(stop)
		<-stopped
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		if dump := srv.Dump(); strings.Contains(dump, fmt.Sprintf("session %#x ", sid)) {
			t.Fatalf("session %#x alive after Close let its close request through:\n%s", sid, dump)
		}
	})
}

type errUnexpected string

func (e errUnexpected) Error() string { return "unexpected data " + string(e) }
