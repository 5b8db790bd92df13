package conformance

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// sequenceRules: the sequential suffix is the parent's count of successful child creates
// (ZooKeeper's internal cversion), printed with %010d.
var sequenceRules = []rule{
	{"sequence/suffix is a ten-digit zero-padded counter appended to the path", func(t *testing.T, h *harness) {
		c := h.connect()
		for i := int32(0); i < 3; i++ {
			got := mustCreate(t, c, h.path("s-"), nil, zk.FlagSequence)
			if want := h.path("s-" + sequenceSuffix(i)); got != want {
				t.Fatalf("create #%d of %q returned %q, want %q", i, h.path("s-"), got, want)
			}
		}
	}},
	{"sequence/a trailing slash names the node by the counter alone", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("p"), nil, zk.FlagPersistent)
		got := mustCreate(t, c, h.path("p")+"/", nil, zk.FlagSequence)
		if want := h.path("p/" + sequenceSuffix(0)); got != want {
			t.Fatalf("sequential create of %q returned %q, want %q", h.path("p")+"/", got, want)
		}
	}},
	{"sequence/every successful child create advances the counter, sequential or not", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("plain-a"), nil, zk.FlagPersistent)
		mustCreate(t, c, h.path("eph-b"), nil, zk.FlagEphemeral)
		got := mustCreate(t, c, h.path("s-"), nil, zk.FlagSequence)
		if want := h.path("s-" + sequenceSuffix(2)); got != want {
			t.Fatalf("after two non-sequential creates, sequential create returned %q, want %q", got, want)
		}
	}},
	{"sequence/deletes bump the reported cversion but not the counter", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("s-"), nil, zk.FlagSequence) // counter 0 -> 1
		mustCreate(t, c, h.path("plain"), nil, zk.FlagPersistent)
		mustCreate(t, c, h.path("s-"), nil, zk.FlagSequence) // counter 2 -> 3
		mustDelete(t, c, h.path("plain"))
		if st := mustStat(t, c, h.base); st.Cversion != 4 || st.NumChildren != 2 {
			t.Fatalf("after 3 creates and 1 delete the parent has cversion=%d numChildren=%d, want 4 and 2", st.Cversion, st.NumChildren)
		}
		got := mustCreate(t, c, h.path("s-"), nil, zk.FlagSequence)
		if want := h.path("s-" + sequenceSuffix(3)); got != want {
			t.Fatalf("sequential create after a delete returned %q, want %q (3 creates so far; deletes do not count)", got, want)
		}
		if st := mustStat(t, c, h.base); st.Cversion != 5 {
			t.Fatalf("reported cversion %d after 4 creates and 1 delete, want 5", st.Cversion)
		}
	}},
	{"sequence/failed writes and parent setData do not advance the counter", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("x"), nil, zk.FlagPersistent)  // counter 1
		mustCreate(t, c, h.path("eph"), nil, zk.FlagEphemeral) // counter 2
		failures := []attempt{
			{"create existing child", func() error { _, err := c.Create(h.path("x"), nil, 0, openACL); return err }, zk.ErrNodeExists},
			{"create under missing child", func() error { _, err := c.Create(h.path("missing/y"), nil, 0, openACL); return err }, zk.ErrNoNode},
			{"create under ephemeral child", func() error { _, err := c.Create(h.path("eph/y"), nil, 0, openACL); return err }, zk.ErrNoChildrenForEphemerals},
			{"create with nil ACL", func() error { _, err := c.Create(h.path("noacl"), nil, 0, nil); return err }, zk.ErrInvalidACL},
			{"delete missing child", func() error { return c.Delete(h.path("missing"), -1) }, zk.ErrNoNode},
			{"failed multi with a create", func() error {
				_, err := c.Multi(&zk.CreateRequest{Path: h.path("m-"), Acl: openACL, Flags: zk.FlagSequence},
					&zk.CheckVersionRequest{Path: h.path("x"), Version: 42})
				return err
			}, zk.ErrBadVersion},
			{"setData on the parent", func() error { _, err := c.Set(h.base, []byte("d"), -1); return err }, nil},
		}
		for _, f := range failures {
			f.check(t)
		}
		got := mustCreate(t, c, h.path("s-"), nil, zk.FlagSequence)
		if want := h.path("s-" + sequenceSuffix(2)); got != want {
			t.Fatalf("after 2 creates and %d failed or non-child writes, sequential create returned %q, want %q", len(failures), got, want)
		}
	}},
	{"sequence/each create in a successful multi advances the counter", func(t *testing.T, h *harness) {
		c := h.connect()
		res, err := c.Multi(
			&zk.CreateRequest{Path: h.path("plain"), Acl: openACL},
			&zk.CreateRequest{Path: h.path("m-"), Acl: openACL, Flags: zk.FlagSequence},
			&zk.CreateRequest{Path: h.path("m-"), Acl: openACL, Flags: zk.FlagSequence},
		)
		if err != nil {
			t.Fatalf("Multi: %v", err)
		}
		for i, want := range []string{h.path("plain"), h.path("m-" + sequenceSuffix(1)), h.path("m-" + sequenceSuffix(2))} {
			if res[i].String != want {
				t.Fatalf("multi op %d created %q, want %q", i, res[i].String, want)
			}
		}
	}},
	{"sequence/all prefixes under one parent share one counter", func(t *testing.T, h *harness) {
		c := h.connect()
		names := []string{"a-", "b-", "a-", "", "c-"}
		for i, prefix := range names {
			got := mustCreate(t, c, h.path(prefix), nil, zk.FlagSequence)
			if want := h.path(prefix + sequenceSuffix(int32(i))); got != want {
				t.Fatalf("sequential create #%d of prefix %q returned %q, want %q", i, prefix, got, want)
			}
		}
	}},
	{"sequence/ephemeral sequential nodes use the same counter", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("s-"), nil, zk.FlagSequence)
		got := mustCreate(t, c, h.path("e-"), nil, zk.FlagEphemeralSequential)
		if want := h.path("e-" + sequenceSuffix(1)); got != want {
			t.Fatalf("ephemeral sequential create returned %q, want %q", got, want)
		}
		st := mustStat(t, c, got)
		if st.EphemeralOwner != c.SessionID() {
			t.Fatalf("ephemeral sequential node owner %#x, want session %#x", st.EphemeralOwner, c.SessionID())
		}
	}},
	{"sequence/a name collision fails with NodeExists and leaves the counter stuck", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("c-"+sequenceSuffix(1)), nil, zk.FlagPersistent) // counter 0 -> 1
		for i := 0; i < 2; i++ {
			_, err := c.Create(h.path("c-"), nil, zk.FlagSequence, openACL)
			expectErr(t, err, zk.ErrNodeExists, "sequential create whose name is taken")
		}
		got := mustCreate(t, c, h.path("d-"), nil, zk.FlagSequence)
		if want := h.path("d-" + sequenceSuffix(1)); got != want {
			t.Fatalf("sequential create with another prefix returned %q, want %q", got, want)
		}
	}},
}
