package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// errorRules: which error each bad request gets, and where it is detected.
var errorRules = []rule{
	{"errors/the server rejects bad writes with these errors", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("full"), nil, zk.FlagPersistent)
		mustCreate(t, c, h.path("full/c"), nil, zk.FlagPersistent)
		mustCreate(t, c, h.path("x"), nil, zk.FlagPersistent)
		cases := []attempt{
			{"delete a non-empty node", func() error { return c.Delete(h.path("full"), -1) }, zk.ErrNotEmpty},
			{"delete with a wrong version", func() error { return c.Delete(h.path("x"), 3) }, zk.ErrBadVersion},
			{"set with a wrong version", func() error { _, err := c.Set(h.path("x"), nil, 3); return err }, zk.ErrBadVersion},
			{"delete a missing node with a version", func() error { return c.Delete(h.path("missing"), 3) }, zk.ErrNoNode},
			{"set a missing node with a version", func() error { _, err := c.Set(h.path("missing"), nil, 3); return err }, zk.ErrNoNode},
			{"create under a missing parent", func() error { _, err := c.Create(h.path("missing/x"), nil, 0, openACL); return err }, zk.ErrNoNode},
			{"create an existing node", func() error { _, err := c.Create(h.path("x"), nil, 0, openACL); return err }, zk.ErrNodeExists},
			{"create the root", func() error { _, err := c.Create("/", nil, 0, openACL); return err }, zk.ErrNodeExists},
			{"delete the root", func() error { return c.Delete("/", -1) }, zk.ErrBadArguments},
			{"delete /zookeeper", func() error { return c.Delete("/zookeeper", -1) }, zk.ErrBadArguments},
			{"create with a nil ACL", func() error { _, err := c.Create(h.path("y"), nil, 0, nil); return err }, zk.ErrInvalidACL},
			{"create with an empty ACL", func() error { _, err := c.Create(h.path("y"), nil, 0, []zk.ACL{}); return err }, zk.ErrInvalidACL},
		}
		for _, tc := range cases {
			tc.check(t)
		}
		expectAbsent(t, c, h.path("y"))
		if ok, _, _ := c.Exists(h.path("full/c")); !ok {
			t.Fatal("full/c vanished after a rejected delete of its parent")
		}
	}},
	{"errors/errors are go-zookeeper's own values, not wrapped", func(t *testing.T, h *harness) {
		// Code written against go-zookeeper compares with ==, as go-zookeeper itself does.
		c := h.connect()
		mustCreate(t, c, h.path("x"), nil, zk.FlagPersistent)
		mustCreate(t, c, h.path("x/c"), nil, zk.FlagPersistent)
		mustCreate(t, c, h.path("e"), nil, zk.FlagEphemeral)
		multiErr := func(op any) error {
			res, err := c.Multi(op)
			if len(res) != 1 || res[0].Error != err {
				return fmt.Errorf("multi result %v differs from Multi's error %v", res, err)
			}
			return err
		}
		cases := []struct {
			name string
			err  error
			want error
		}{
			{"Get of a missing node", func() error { _, _, err := c.Get(h.path("missing")); return err }(), zk.ErrNoNode},
			{"Create of an existing node", func() error { _, err := c.Create(h.path("x"), nil, 0, openACL); return err }(), zk.ErrNodeExists},
			{"Set with a wrong version", func() error { _, err := c.Set(h.path("x"), nil, 9); return err }(), zk.ErrBadVersion},
			{"Delete of a non-empty node", c.Delete(h.path("x"), -1), zk.ErrNotEmpty},
			{"Create under an ephemeral", func() error { _, err := c.Create(h.path("e/c"), nil, 0, openACL); return err }(), zk.ErrNoChildrenForEphemerals},
			{"Create with no ACL", func() error { _, err := c.Create(h.path("y"), nil, 0, nil); return err }(), zk.ErrInvalidACL},
			{"Delete of the root", c.Delete("/", -1), zk.ErrBadArguments},
			{"Create of an empty path", func() error { _, err := c.Create("", nil, 0, openACL); return err }(), zk.ErrInvalidPath},
			{"Get of a relative path", func() error { _, _, err := c.Get("relative"); return err }(), zk.ErrInvalidPath},
			{"multi with a relative path", multiErr(&zk.CreateRequest{Path: "relative", Acl: openACL}), zk.ErrBadArguments},
			{"multi check of a missing node", multiErr(&zk.CheckVersionRequest{Path: h.path("missing"), Version: -1}), zk.ErrNoNode},
		}
		for _, tc := range cases {
			if tc.err != tc.want {
				t.Errorf("%s: got %#v (%q), want go-zookeeper's sentinel %q itself, unwrapped", tc.name, tc.err, tc.err, tc.want)
			}
		}
		c.close()
		if _, _, err := c.Get(h.path("x")); err != zk.ErrConnectionClosed {
			t.Errorf("Get on a closed Conn: got %#v (%q), want go-zookeeper's sentinel %q itself, unwrapped", err, err, zk.ErrConnectionClosed)
		}
	}},
	{"errors/version -1 matches any version and an exact version matches", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("x"), nil, zk.FlagPersistent)
		for i := 0; i < 3; i++ {
			mustSet(t, c, h.path("x"), []byte{byte(i)})
		}
		st, err := c.Set(h.path("x"), []byte("exact"), 3)
		if err != nil || st.Version != 4 {
			t.Fatalf("Set with the current version 3 = %v, %v; want version 4", st, err)
		}
		if err := c.Delete(h.path("x"), 4); err != nil {
			t.Fatalf("Delete with the current version 4: %v", err)
		}
		mustCreate(t, c, h.path("y"), nil, zk.FlagPersistent)
		mustSet(t, c, h.path("y"), []byte("1"))
		if err := c.Delete(h.path("y"), -1); err != nil {
			t.Fatalf("Delete with version -1: %v", err)
		}
	}},
	{"errors/the zookeeper subtree accepts creates", func(t *testing.T, h *harness) {
		c := h.connect()
		p := "/zookeeper/" + strings.ReplaceAll(h.base[1:], "/", "-")
		mustCreate(t, c, p, []byte("d"), zk.FlagEphemeral)
		mustDelete(t, c, p)
	}},
	{"errors/the client rejects invalid paths with ErrInvalidPath", func(t *testing.T, h *harness) {
		c := h.connect()
		invalid := []string{"", "relative", h.base + "/", h.base + "//x", h.path("./x"), h.path("../x"),
			h.path("."), h.path(".."), "/.", "/..", h.path("a\x00b"), h.path("a\x01"), h.path("a\u007f")}
		for _, p := range invalid {
			if _, err := c.Create(p, nil, zk.FlagPersistent, openACL); !errors.Is(err, zk.ErrInvalidPath) {
				t.Fatalf("Create(%q) = %v, want %v", p, err, zk.ErrInvalidPath)
			}
			if _, _, err := c.Get(p); !errors.Is(err, zk.ErrInvalidPath) {
				t.Fatalf("Get(%q) = %v, want %v", p, err, zk.ErrInvalidPath)
			}
			if err := c.Delete(p, -1); !errors.Is(err, zk.ErrInvalidPath) {
				t.Fatalf("Delete(%q) = %v, want %v", p, err, zk.ErrInvalidPath)
			}
			if _, _, _, err := c.ExistsW(p); !errors.Is(err, zk.ErrInvalidPath) {
				t.Fatalf("ExistsW(%q) = %v, want %v", p, err, zk.ErrInvalidPath)
			}
		}
		for _, name := range []string{".a", "a.", "..a", "é", "a b"} {
			mustCreate(t, c, h.path(name), nil, zk.FlagPersistent)
		}
		got := mustCreate(t, c, h.base+"/", nil, zk.FlagSequence)
		if want := h.base + "/" + sequenceSuffix(5); got != want {
			t.Fatalf("sequential create of %q = %q, want %q (a trailing slash is valid for sequential creates)", h.base+"/", got, want)
		}
	}},
	{"errors/the client rejects unknown and TTL create flags", func(t *testing.T, h *harness) {
		c := h.connect()
		for _, flags := range []int32{zk.FlagTTL, zk.FlagPersistentSequentialWithTTL} {
			_, err := c.Create(h.path("ttl"), nil, flags, openACL)
			expectErr(t, err, zk.ErrInvalidFlags, fmt.Sprintf("Create with TTL flags %d", flags))
		}
		for _, flags := range []int32{7, 8, -1} {
			_, err := c.Create(h.path("bad"), nil, flags, openACL)
			if err == nil || err.Error() != fmt.Sprintf("invalid flag value: [%d]", flags) {
				t.Fatalf("Create with flags %d = %v, want the client's %q", flags, err, fmt.Sprintf("invalid flag value: [%d]", flags))
			}
		}
		expectAbsent(t, c, h.path("ttl"))
		expectAbsent(t, c, h.path("bad"))
	}},
	{"errors/a request over 1 MiB drops the connection and the session survives", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("e"), nil, zk.FlagEphemeral)
		sid := c.SessionID()
		for _, size := range []int{1 << 20, 1<<20 + 1} {
			mark, _ := c.log.snapshot()
			_, err := c.Create(h.path("big"), bytes.Repeat([]byte("x"), size), zk.FlagPersistent, openACL)
			// go-zookeeper reports ErrConnectionClosed, or the write error itself when the
			// server closed the socket while the request was still being written.
			var writeErr *net.OpError
			if !errors.Is(err, zk.ErrConnectionClosed) && !errors.As(err, &writeErr) {
				t.Fatalf("Create with %d bytes of data = %v, want %v or a write error", size, err, zk.ErrConnectionClosed)
			}
			i := c.waitSessionEvent(len(mark), zk.StateDisconnected)
			c.waitSessionEvent(i+1, zk.StateHasSession)
			c.waitState(zk.StateHasSession)
			if c.SessionID() != sid {
				t.Fatalf("session id %#x after the dropped connection, want the same session %#x", c.SessionID(), sid)
			}
			expectAbsent(t, c, h.path("big"))
			if ok, _, err := c.Exists(h.path("e")); err != nil || !ok {
				t.Fatalf("the session's ephemeral after the dropped connection: Exists = %v, %v; want it kept", ok, err)
			}
		}
		almost := bytes.Repeat([]byte("y"), 1<<20-1024)
		mustCreate(t, c, h.path("almost"), almost, zk.FlagPersistent)
		if data, _, err := c.Get(h.path("almost")); err != nil || !bytes.Equal(data, almost) {
			t.Fatalf("Get of %d bytes = %d bytes, %v", len(almost), len(data), err)
		}
	}},
	{"errors/a getChildren reply larger than 8 MiB is sent whole", func(t *testing.T, h *harness) {
		// Nine children with names of a million bytes: each create is under jute.maxbuffer (the limit is the
		// request's, and a name is in its path), the list is 9 MB. go-zookeeper reads a reply of any length
		// (zk.WithMaxBufferSize unset); ZooKeeper 3.8 sends it, as it sends one of 20 MB (measured).
		c := h.connect()
		parent := h.path("wide")
		mustCreate(t, c, parent, nil, zk.FlagPersistent)
		const children, nameLen = 9, 1_000_000
		want := make([]string, children)
		for i := range want {
			want[i] = fmt.Sprintf("%d-%s", i, strings.Repeat("n", nameLen-2))
			mustCreate(t, c, parent+"/"+want[i], nil, zk.FlagPersistent)
		}
		mark, _ := c.log.snapshot()
		got, stat, err := c.Children(parent)
		if err != nil {
			t.Fatalf("Children of %d children with %d-byte names = %v, want them all", children, nameLen, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) || stat.NumChildren != children {
			t.Fatalf("Children = %d names (the stat says %d), not the %d created", len(got), stat.NumChildren, children)
		}
		if events, _ := c.log.snapshot(); len(events) != len(mark) {
			t.Fatalf("session events %s while reading the reply; want none (the connection kept)", formatEvents(events[len(mark):]))
		}
		for _, name := range want { // here rather than in the clean-up, to keep the suite's later lists short
			if err := c.Delete(parent+"/"+name, -1); err != nil {
				t.Fatalf("delete child %.8s…: %v", name, err)
			}
		}
	}},
	{"errors/data over the client's 1.5 MiB buffer fails with ErrShortBuffer and keeps the connection", func(t *testing.T, h *harness) {
		c := h.connect()
		mark, _ := c.log.snapshot()
		_, err := c.Create(h.path("huge"), make([]byte, 2<<20), zk.FlagPersistent, openACL)
		expectErr(t, err, zk.ErrShortBuffer, "Create with 2 MiB of data")
		c.quiesce()
		if events, _ := c.log.snapshot(); len(events) != len(mark) {
			t.Fatalf("session events %s after a client-side ErrShortBuffer; want none", formatEvents(events[len(mark):]))
		}
		expectAbsent(t, c, h.path("huge"))
	}},
	{"errors/calls on a closed Conn return ErrConnectionClosed", func(t *testing.T, h *harness) {
		c := h.connect()
		sid := c.SessionID()
		c.close()
		p := h.path("x")
		calls := map[string]func() error{
			"Create":    func() error { _, err := c.Create(p, nil, 0, openACL); return err },
			"Delete":    func() error { return c.Delete(p, -1) },
			"Exists":    func() error { _, _, err := c.Exists(p); return err },
			"ExistsW":   func() error { _, _, _, err := c.ExistsW(p); return err },
			"Get":       func() error { _, _, err := c.Get(p); return err },
			"GetW":      func() error { _, _, _, err := c.GetW(p); return err },
			"Set":       func() error { _, err := c.Set(p, nil, -1); return err },
			"Children":  func() error { _, _, err := c.Children(p); return err },
			"ChildrenW": func() error { _, _, _, err := c.ChildrenW(p); return err },
			"Multi":     func() error { _, err := c.Multi(&zk.CheckVersionRequest{Path: p, Version: -1}); return err },
			"Sync":      func() error { _, err := c.Sync(p); return err },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, zk.ErrConnectionClosed) {
				t.Fatalf("%s on a closed Conn = %v, want %v", name, err, zk.ErrConnectionClosed)
			}
		}
		// go-zookeeper's Close returns when the server has answered; its state turns
		// StateDisconnected a moment later.
		c.waitState(zk.StateDisconnected)
		if c.SessionID() != sid {
			t.Fatalf("closed Conn: SessionID %#x, want the old id %#x", c.SessionID(), sid)
		}
		c.Conn.Close() // a second Close is a no-op
	}},
	{"errors/Sync returns the path it was given, existing or not", func(t *testing.T, h *harness) {
		c := h.connect()
		for _, p := range []string{"/", h.base, h.path("missing/deeper")} {
			got, err := c.Sync(p)
			if err != nil || got != p {
				t.Fatalf("Sync(%q) = %q, %v; want %q, nil", p, got, err, p)
			}
		}
	}},
}
