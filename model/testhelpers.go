package model

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// TB is what the test helpers (NewTestServer, ConnectT, ConnectZKT) need of a test: *testing.T, *testing.B
// and *testing.F are ones (any testing.TB is), and so is any framework's test handle with these methods.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// NewTestServer is NewServer for a test: the server's wire front end (Listen, Dialer, ConnectZK) is closed
// when the test ends (t.Cleanup), after the clients the test's ConnectT and ConnectZKT calls opened.
//
//	func TestMyService(t *testing.T) {
//		srv := model.NewTestServer(t)
//		conn := model.ConnectZKT(t, srv, 10*time.Second)
//		// … conn is a *zk.Conn with a session on srv; both go away when the test ends
//	}
func NewTestServer(t TB, opts ...Option) *Server {
	t.Helper()
	srv := NewServer(opts...)
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("model: closing the test server: %v", err)
		}
	})
	return srv
}

// ConnectT is Server.Connect for a test: it fails the test if the client cannot connect, and closes the
// client when the test ends. The client's event channel is left to fill and drop, as go-zookeeper's does;
// use Server.Connect to read it.
func ConnectT(t TB, srv *Server, sessionTimeout time.Duration) *Conn {
	t.Helper()
	conn, _, err := srv.Connect(sessionTimeout)
	if err != nil {
		t.Fatalf("%v", err) // "model: Connect: …"
		return nil
	}
	t.Cleanup(conn.Close)
	return conn
}

// ConnectZKT is ConnectZK for a test: a real go-zookeeper client with a session on srv, in-process. It fails
// the test if no session is established, and closes the client when the test ends. opts are zk.Connect's
// options, as for ConnectZK (zk.WithEventCallback receives the session's events; the event channel is not
// returned: use ConnectZK for it).
func ConnectZKT(t TB, srv *Server, sessionTimeout time.Duration, opts ...func(*zk.Conn)) *zk.Conn {
	t.Helper()
	conn, _, err := ConnectZK(srv, sessionTimeout, opts...)
	if err != nil {
		t.Fatalf("%v", err) // "model: ConnectZK: …"
		return nil
	}
	t.Cleanup(conn.Close)
	return conn
}
