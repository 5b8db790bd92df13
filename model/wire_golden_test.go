package model_test

import (
	"net"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/model"
)

// TestWireGolden replays the sessions recorded on a real ZooKeeper 3.8 server (conformance/wire) to a fresh
// model each, over its wire front end: every frame the model answers must be the one the real server sent,
// after normalisation (conformance.RunWireRecordings).
func TestWireGolden(t *testing.T) {
	conformance.RunWireRecordings(t, func(t *testing.T) func() (net.Conn, error) {
		srv := model.NewServer()
		t.Cleanup(func() { srv.Close() })
		dial := srv.Dialer()
		return func() (net.Conn, error) { return dial("tcp", "127.0.0.1:2181", time.Second) }
	})
}
