package clients

import (
	"testing"

	"github.com/zkmodel/zkmodel/model"
)

// modelTarget starts a fresh model server for t, listening on loopback
// TCP through its wire front end.
func modelTarget(t *testing.T) target {
	t.Helper()
	srv := model.NewServer()
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("model: close: %v", err)
		}
	})
	return target{name: "model", connect: addr, model: srv}
}
