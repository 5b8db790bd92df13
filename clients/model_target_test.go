package clients

import (
	"testing"

	"github.com/zkmodel/zkmodel/model"
)

// modelTarget starts a fresh model server for t (with opts), listening on
// loopback TCP through its wire front end.
func modelTarget(t *testing.T, opts ...model.Option) target {
	t.Helper()
	srv := model.NewServer(opts...)
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
