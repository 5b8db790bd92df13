package model_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/model"
)

// TestConformance runs the conformance suite (the rules measured on a real ZooKeeper 3.8) against the
// model with its default transport: Expire is Server.Expire, Sever is a Disconnect step, after which the
// client reconnects at once; *model.Conn is also the client of the persistent-watch rules (ConnectWatch).
func TestConformance(t *testing.T) {
	srv := model.NewServer()
	connect := func(t *testing.T, sessionTimeout time.Duration) (*model.Conn, <-chan zk.Event) {
		t.Helper()
		conn, events, err := srv.Connect(sessionTimeout)
		if err != nil {
			t.Fatalf("connect to the model: %v", err)
		}
		return conn, events
	}
	conformance.Run(t, conformance.Target{
		Connect: func(t *testing.T, sessionTimeout time.Duration) (conformance.Conn, <-chan zk.Event) {
			return connect(t, sessionTimeout)
		},
		Expire: func(t *testing.T, c conformance.Conn) {
			t.Helper()
			srv.Expire(c.SessionID())
		},
		Sever: func(t *testing.T, c conformance.Conn) {
			t.Helper()
			if err := srv.Do(model.Step{Kind: model.Disconnect, Client: modelConn(t, c).ClientID()}); err != nil {
				t.Fatalf("sever model client: %v", err)
			}
		},
		ConnectWatch: func(t *testing.T, sessionTimeout time.Duration) (conformance.WatchConn, <-chan zk.Event) {
			return connect(t, sessionTimeout)
		},
	})
}

// modelConn returns c as the model client it is, failing t otherwise.
func modelConn(t *testing.T, c conformance.Conn) *model.Conn {
	t.Helper()
	mc, ok := c.(*model.Conn)
	if !ok {
		t.Fatalf("connection %T was not opened by the model", c)
	}
	return mc
}
