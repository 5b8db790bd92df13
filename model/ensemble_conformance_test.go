package model_test

import (
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/model"
)

// ensembleHook is the conformance suite's control of the model's servers: StopServer and StartServer, the
// server a session is on (ServerOf), and the virtual clock for waits.
func ensembleHook(srv *model.Server) *conformance.Ensemble {
	return &conformance.Ensemble{
		Servers: srv.Members(),
		ServerOf: func(t *testing.T, c conformance.Conn) int {
			t.Helper()
			i, ok := srv.ServerOf(c.SessionID())
			if !ok {
				t.Fatalf("session %#x is not connected to a server of the model", c.SessionID())
			}
			return i
		},
		Stop: func(t *testing.T, i int) {
			t.Helper()
			if err := srv.StopServer(i); err != nil {
				t.Fatal(err)
			}
		},
		Start: func(t *testing.T, i int) {
			t.Helper()
			if err := srv.StartServer(i); err != nil {
				t.Fatal(err)
			}
		},
		Wait: func(t *testing.T, d time.Duration) { srv.Advance(d) },
	}
}
