package model_test

import (
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/model"
)

var fuzzServer struct {
	once    sync.Once
	srv     *model.Server
	healthy *zk.Conn
	err     error
}

// FuzzWireStream sends a session's connect request and then arbitrary bytes to the model's wire front end:
// whatever they are, the server must not panic or hang, and a well-behaved client on the same server must
// still be served. Seeded with the recorded sessions' client frames (conformance/wire) and a SASL exchange
// (the server has SASL users).
//
//	go test -run '^$' -fuzz FuzzWireStream -fuzztime 30s ./model
func FuzzWireStream(f *testing.F) {
	recs, err := conformance.WireRecordings()
	if err != nil {
		f.Fatal(err)
	}
	for _, rec := range recs {
		var stream []byte
		for _, st := range rec.Steps[1:] {
			if st.Conn == 1 {
				stream = jute.AppendFrame(stream, st.Frame)
			}
		}
		f.Add(stream)
	}
	var sasl []byte // a SASL exchange: the first token, a malformed response, then a null token
	for i, token := range [][]byte{{}, []byte(`username="u",realm="zk-sasl-md5",nonce="x"`), nil} {
		e := jute.NewEncoder(nil)
		if err := jute.EncodeRequest(e, &jute.Request{Header: jute.RequestHeader{Xid: int32(i + 1), Type: jute.OpSASL}, Token: token}); err != nil {
			f.Fatal(err)
		}
		sasl = jute.AppendFrame(sasl, e.Bytes())
	}
	f.Add(sasl)
	f.Fuzz(func(t *testing.T, stream []byte) {
		fuzzServer.once.Do(func() {
			fuzzServer.srv = model.NewServer(model.WithSASL(model.SASLConfig{Users: map[string]string{"u": "p"}, SuperUser: "u", ACLs: true}))
			fuzzServer.healthy, _, fuzzServer.err = model.ConnectZK(fuzzServer.srv, 30*time.Second)
		})
		if fuzzServer.err != nil {
			t.Fatal(fuzzServer.err)
		}
		nc, err := fuzzServer.srv.Dialer()("tcp", "127.0.0.1:2181", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		done := make(chan error, 1)
		go func() {
			if err := jute.WriteFrame(nc, newSessionRequest()); err == nil {
				_, _ = nc.Write(stream) // the server may close the connection midway: that is its answer
			}
			nc.Close()
			_, _, err := fuzzServer.healthy.Exists("/")
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("a well-behaved client after the stream: Exists(/) = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the stream or the well-behaved client's Exists(/) after it hung for 10s")
		}
	})
}
