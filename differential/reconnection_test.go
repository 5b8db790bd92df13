package differential

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/realzk"
)

// gate is a dialer that lets connections through only while open.
type gate struct{ open chan struct{} }

func (g *gate) dial(ctx context.Context, addr string) (net.Conn, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// TestReconnectionGap checks, on the model (through its listener) and on a real ZooKeeper, what setWatches2
// does with what changed while a session was disconnected: the standard watches fire for it, the persistent
// and recursive ones are set again without firing, and fire for what comes after.
func TestReconnectionGap(t *testing.T) {
	srv := model.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, addrs := range [][]string{{addr}, realzk.ForTestWith(t, realzk.Config{Servers: 1}).Addrs()} {
		got = append(got, reconnectionGap(t, addrs))
	}
	want := []string{
		"during the gap:",
		"NodeDataChanged ~/g/k", // the getData watch: the node changed meanwhile
		"NodeCreated ~/missing", // the exists watch: the node came meanwhile
		"after it:",
		"NodeDataChanged ~/g/k", // the recursive watch, set again
		"NodeDataChanged ~/p",   // the persistent watch, set again
		"NodeChildrenChanged ~/p",
	}
	for i, g := range got {
		if !slices.Equal(g, want) {
			t.Errorf("target %d (0 the model, 1 ZooKeeper) observed %q, want %q", i, g, want)
		}
	}
}

func reconnectionGap(t *testing.T, addrs []string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := fmt.Sprintf("/rawzk-gap-%d", time.Now().UnixNano())
	admin, _, err := rawzk.Connect(ctx, addrs, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, p := range []string{"", "/g", "/g/k", "/p"} {
		if _, err := admin.Create(ctx, base+p, nil, zk.FlagPersistent, openACL); err != nil {
			t.Fatal(err)
		}
	}
	g := &gate{open: make(chan struct{})}
	close(g.open)
	c, events, err := rawzk.Connect(ctx, addrs, 10*time.Second, g.dial)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, w := range []struct {
		path string
		mode int32
	}{{"/g", rawzk.ModePersistentRecursive}, {"/p", rawzk.ModePersistent}} {
		if _, err := c.AddWatch(ctx, base+w.path, w.mode); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := c.GetW(ctx, base+"/g/k"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.ExistsW(ctx, base+"/missing"); err != nil {
		t.Fatal(err)
	}
	g.open = make(chan struct{}) // closed: the next dial waits
	c.Sever()
	for _, w := range []func() error{
		func() error { _, err := admin.Set(ctx, base+"/g/k", []byte("1"), -1); return err },
		func() error { _, err := admin.Create(ctx, base+"/g/new", nil, zk.FlagPersistent, openACL); return err },
		func() error { _, err := admin.Set(ctx, base+"/p", []byte("1"), -1); return err },
		func() error { _, err := admin.Create(ctx, base+"/p/c", nil, zk.FlagPersistent, openACL); return err },
		func() error {
			_, err := admin.Create(ctx, base+"/missing", nil, zk.FlagPersistent, openACL)
			return err
		},
	} {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	close(g.open)
	out := []string{"during the gap:"}
	collect := func() {
		// Sync and a read: every notification before their replies has been read.
		if _, err := c.Sync(ctx, base); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Exists(ctx, base); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case ev := <-events:
				if ev.Type != zk.EventSession {
					out = append(out, ev.Type.String()[len("Event"):]+" ~"+ev.Path[len(base):])
				}
				continue
			default:
			}
			return
		}
	}
	collect()
	out = append(out, "after it:")
	for _, p := range []string{"/g/k", "/p"} {
		if _, err := admin.Set(ctx, base+p, []byte("2"), -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.Create(ctx, base+"/p/d", nil, zk.FlagPersistent, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync(ctx, base); err != nil { // c's server has applied the admin's writes
		t.Fatal(err)
	}
	collect()
	return out
}
