package model

import (
	"context"
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
)

func TestCallsWithAContext(t *testing.T) {
	t.Run("a_context_done_already_sends_nothing", func(t *testing.T) {
		srv := NewServer(WithManualTransport())
		a, _ := connect(t, srv)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if p, err := a.CreateContext(ctx, "/n", nil, 0, worldACL); p != "" || !errors.Is(err, context.Canceled) {
			t.Fatalf("CreateContext = %q, %v, want context.Canceled", p, err)
		}
		if err := a.DeleteContext(ctx, "/n", -1); !errors.Is(err, context.Canceled) {
			t.Fatalf("DeleteContext = %v, want context.Canceled", err)
		}
		if kids, st, err := a.ChildrenContext(ctx, "/"); kids != nil || st != nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("ChildrenContext = %v, %v, %v, want nothing and context.Canceled", kids, st, err)
		}
		if ok, st, ch, err := a.ExistsWContext(ctx, "/"); ok || st != nil || ch != nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("ExistsWContext = %v, %v, %v, %v, want nothing and context.Canceled", ok, st, ch, err)
		}
		if d, st, err := a.GetContext(ctx, "/"); d != nil || st != nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("GetContext = %q, %v, %v, want nothing and context.Canceled", d, st, err)
		}
		checkSteps(t, "Pending", srv.Pending(), "[]")
	})
	t.Run("a_call_the_context_ends_returns_at_once_and_its_request_goes_on", func(t *testing.T) {
		srv := NewServer(WithManualTransport())
		a, _ := connect(t, srv)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := background(t, srv, a, func() outcome {
			p, err := a.CreateContext(ctx, "/n", nil, 0, worldACL)
			return outcome{path: p, err: err}
		})
		checkSteps(t, "Pending", srv.Pending(), "[apply c1]")
		cancel()
		if o := await(t, done); o.path != "" || !errors.Is(o.err, context.Canceled) {
			t.Fatalf("CreateContext = %q, %v, want context.Canceled", o.path, o.err)
		}
		do(t, srv, Apply, a)
		if !hasNode(srv, "/n") {
			t.Fatal("the abandoned create was not applied")
		}
		do(t, srv, Deliver, a) // its reply, which nobody waits for, must not block the server
		checkSteps(t, "Pending", srv.Pending(), "[]")
		// The client goes on as before: its next call waits for its steps, and returns their result.
		next := background(t, srv, a, func() outcome {
			kids, _, err := a.ChildrenContext(context.Background(), "/")
			return outcome{kids: kids, err: err}
		})
		do(t, srv, Apply, a)
		do(t, srv, Deliver, a)
		if o := await(t, next); o.err != nil || len(o.kids) != 2 { // n and zookeeper
			t.Fatalf("ChildrenContext after an abandoned call = %v, %v", o.kids, o.err)
		}
	})
	t.Run("without_an_end_the_calls_return_what_the_calls_without_a_context_return", func(t *testing.T) {
		srv := NewServer()
		a, _ := connect(t, srv)
		ctx := context.Background()
		if p, err := a.CreateContext(ctx, "/n", []byte("v"), 0, worldACL); p != "/n" || err != nil {
			t.Fatalf("CreateContext = %q, %v", p, err)
		}
		if _, err := a.CreateContext(ctx, "/n", nil, 0, worldACL); err != zk.ErrNodeExists {
			t.Fatalf("CreateContext of an existing node = %v, want zk.ErrNodeExists", err)
		}
		if d, st, err := a.GetContext(ctx, "/n"); string(d) != "v" || st == nil || err != nil {
			t.Fatalf("GetContext = %q, %v, %v", d, st, err)
		}
		if kids, _, err := a.ChildrenContext(ctx, "/"); err != nil || len(kids) != 2 { // n and zookeeper
			t.Fatalf("ChildrenContext = %v, %v", kids, err)
		}
		ok, _, ch, err := a.ExistsWContext(ctx, "/n")
		if !ok || ch == nil || err != nil {
			t.Fatalf("ExistsWContext = %v, %v, %v", ok, ch, err)
		}
		if err := a.DeleteContext(ctx, "/n", -1); err != nil {
			t.Fatalf("DeleteContext = %v", err)
		}
		if ev := <-ch; ev.Type != zk.EventNodeDeleted || ev.Path != "/n" {
			t.Fatalf("the ExistsWContext watch got %+v, want the deletion of /n", ev)
		}
		if _, _, err := a.GetContext(ctx, "/n"); err != zk.ErrNoNode {
			t.Fatalf("GetContext of a deleted node = %v, want zk.ErrNoNode", err)
		}
		if a.ContextCaller() != any(a) {
			t.Fatal("ContextCaller is not the Conn itself")
		}
	})
}
