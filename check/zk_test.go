package check

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/model"
)

// TestWireClientsReceiveRepliesOfAnySize: RunZK's clients start each connection with a small receive buffer
// (receiveStart, not go-zookeeper's 1.5 MiB), and still receive replies of any size, as go-zookeeper's
// default does: a getData of 1,000,000 bytes and a getChildren of 1.8 MB (larger than go-zookeeper's own
// 1.5 MiB start), on the first connection and again after the connection dropped and the client
// reconnected, and small replies between them.
func TestWireClientsReceiveRepliesOfAnySize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := model.NewServer()
		defer srv.Close()
		conn, err := connectWire(srv, &ensembleHosts{srv: srv, hosts: srv.Hosts()})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		synctest.Wait()
		if st := conn.State(); st != zk.StateHasSession {
			t.Fatalf("no session after the handshake: state %s", st)
		}
		data := bytes.Repeat([]byte("d"), 1_000_000)
		if _, err := conn.Create("/big", data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create("/wide", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		var names []string
		for i := range 2 {
			name := fmt.Sprintf("%d-%s", i, strings.Repeat("n", 900_000))
			if _, err := conn.Create("/wide/"+name, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create child %d: %v", i, err)
			}
			names = append(names, name)
		}
		read := func(when string) {
			t.Helper()
			for range 2 { // a small reply after a large one, and a large one after a small one
				if ok, _, err := conn.Exists("/wide"); err != nil || !ok {
					t.Fatalf("%s: Exists(/wide) = %v, %v; want true", when, ok, err)
				}
				if got, _, err := conn.Get("/big"); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("%s: Get(/big): %d bytes, %v; want the 1,000,000 written", when, len(got), err)
				}
				got, _, err := conn.Children("/wide")
				slices.Sort(got)
				if err != nil || !slices.Equal(got, names) {
					t.Fatalf("%s: Children(/wide): %d names, %v; want the 2 of 900,002 bytes", when, len(got), err)
				}
			}
		}
		read("first connection")
		session := conn.SessionID()
		if err := srv.Do(model.Step{Kind: model.Disconnect, Client: srv.ClientOf(session)}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if st := conn.State(); st != zk.StateHasSession || conn.SessionID() != session {
			t.Fatalf("after the disconnection: state %s, session %#x; want session %#x resumed", st, conn.SessionID(), session)
		}
		read("after a reconnection")
	})
}

// TestWireClientsAllocateNoMegabytesPerConnection: what the receive buffer saves is still saved — a client,
// connected, disconnected and reconnected twice (three connections), allocates go-zookeeper's 1.5 MiB send
// buffer and little more, where go-zookeeper's default receive buffer alone would be 4.5 MiB. It fails if a
// go-zookeeper upgrade sizes the receive buffer otherwise (connectWire, smallReceives).
func TestWireClientsAllocateNoMegabytesPerConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := model.NewServer()
		defer srv.Close()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		conn, err := connectWire(srv, &ensembleHosts{srv: srv, hosts: srv.Hosts()})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		synctest.Wait()
		session := conn.SessionID()
		for i := range 2 {
			if err := srv.Do(model.Step{Kind: model.Disconnect, Client: srv.ClientOf(session)}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if st := conn.State(); st != zk.StateHasSession || conn.SessionID() != session {
				t.Fatalf("after disconnection %d: state %s, session %#x; want session %#x resumed", i+1, st, conn.SessionID(), session)
			}
		}
		runtime.ReadMemStats(&after)
		const sendBuffer, most = 1536 << 10, 1536<<10 + 1<<20
		if got := after.TotalAlloc - before.TotalAlloc; got < sendBuffer || got > most {
			t.Fatalf("a client and three connections allocated %d bytes; want go-zookeeper's send buffer (%d) and at most 1 MiB more", got, sendBuffer)
		}
	})
}
