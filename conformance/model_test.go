package conformance_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/model"
)

// TestRunWithConnectOnly runs the suite the way the package example does, with a Target that can only open
// sessions (no Expire, no Sever), on the model. The full runs, fault rules included, are
// model.TestConformance and the real ensemble's realzk.TestConformance.
func TestRunWithConnectOnly(t *testing.T) {
	srv := model.NewServer()
	conformance.Run(t, conformance.Target{
		Connect: func(t *testing.T, sessionTimeout time.Duration) (conformance.Conn, <-chan zk.Event) {
			conn, events, err := srv.Connect(sessionTimeout)
			if err != nil {
				t.Fatalf("connect to the model: %v", err)
			}
			return conn, events
		},
	})
}
