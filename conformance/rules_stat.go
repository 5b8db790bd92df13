package conformance

import (
	"bytes"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
)

// statRules: how each kind of write changes the stat of the node and of its parent.
var statRules = []rule{
	{"stat/a fresh node has czxid == mzxid == pzxid, ctime == mtime and zero versions", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("n"), []byte("abc"), zk.FlagPersistent)
		st := mustStat(t, c, h.path("n"))
		if st.Mzxid != st.Czxid || st.Pzxid != st.Czxid || st.Czxid == 0 {
			t.Fatalf("fresh node %s: want czxid == mzxid == pzxid != 0", formatStat(st))
		}
		if st.Ctime != st.Mtime || st.Ctime == 0 {
			t.Fatalf("fresh node %s: want ctime == mtime != 0", formatStat(st))
		}
		want := zk.Stat{Czxid: st.Czxid, Mzxid: st.Czxid, Pzxid: st.Czxid, Ctime: st.Ctime, Mtime: st.Ctime, DataLength: 3}
		if st != want {
			t.Fatalf("fresh node %s, want %s", formatStat(st), formatStat(want))
		}
		parent := mustStat(t, c, h.base)
		if st.Czxid <= parent.Czxid || st.Ctime < parent.Ctime {
			t.Fatalf("child created after its parent has czxid %#x ctime %d, parent czxid %#x ctime %d", st.Czxid, st.Ctime, parent.Czxid, parent.Ctime)
		}
	}},
	{"stat/creating a child bumps the parent's cversion, numChildren and pzxid only", func(t *testing.T, h *harness) {
		c := h.connect()
		before := mustStat(t, c, h.base)
		mustCreate(t, c, h.path("c"), nil, zk.FlagPersistent)
		child := mustStat(t, c, h.path("c"))
		after := mustStat(t, c, h.base)
		want := before
		want.Cversion++
		want.NumChildren++
		want.Pzxid = child.Czxid
		if after != want {
			t.Fatalf("parent after child create %s, want %s (pzxid = child's czxid)", formatStat(after), formatStat(want))
		}
	}},
	{"stat/deleting a child bumps the parent's cversion and pzxid, not mzxid", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("c"), nil, zk.FlagPersistent)
		before := mustStat(t, c, h.base)
		mustDelete(t, c, h.path("c"))
		after := mustStat(t, c, h.base)
		marker := mustCreate(t, c, h.path("marker"), nil, zk.FlagPersistent)
		markerStat := mustStat(t, c, marker)
		if after.Pzxid <= before.Pzxid || after.Pzxid >= markerStat.Czxid {
			t.Fatalf("parent pzxid after delete %#x: want the delete's zxid, after %#x and before the next write %#x", after.Pzxid, before.Pzxid, markerStat.Czxid)
		}
		want := before
		want.Cversion++
		want.NumChildren--
		want.Pzxid = after.Pzxid
		if after != want {
			t.Fatalf("parent after child delete %s, want %s", formatStat(after), formatStat(want))
		}
	}},
	{"stat/grandchild create and delete leave the grandparent unchanged", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("c"), nil, zk.FlagPersistent)
		before := mustStat(t, c, h.base)
		mustCreate(t, c, h.path("c/g"), nil, zk.FlagPersistent)
		if mid := mustStat(t, c, h.base); mid != before {
			t.Fatalf("grandparent after grandchild create %s, want unchanged %s", formatStat(mid), formatStat(before))
		}
		mustDelete(t, c, h.path("c/g"))
		if after := mustStat(t, c, h.base); after != before {
			t.Fatalf("grandparent after grandchild delete %s, want unchanged %s", formatStat(after), formatStat(before))
		}
	}},
	{"stat/setData bumps version, mzxid, mtime and dataLength only, even for identical data", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("n"), []byte("abc"), zk.FlagPersistent)
		parentBefore := mustStat(t, c, h.base)
		prev := mustStat(t, c, h.path("n"))
		for i, data := range [][]byte{[]byte("defg"), []byte("defg"), nil} {
			got := mustSet(t, c, h.path("n"), data)
			if got.Mzxid <= prev.Mzxid || got.Mtime < prev.Mtime {
				t.Fatalf("set #%d: mzxid %#x mtime %d, want mzxid > %#x and mtime >= %d", i, got.Mzxid, got.Mtime, prev.Mzxid, prev.Mtime)
			}
			want := prev
			want.Version++
			want.Mzxid = got.Mzxid
			want.Mtime = got.Mtime
			want.DataLength = int32(len(data))
			if got != want {
				t.Fatalf("set #%d returned %s, want %s", i, formatStat(got), formatStat(want))
			}
			prev = got
		}
		if parentAfter := mustStat(t, c, h.base); parentAfter != parentBefore {
			t.Fatalf("parent after child setData %s, want unchanged %s", formatStat(parentAfter), formatStat(parentBefore))
		}
	}},
	{"stat/Set returns the stat that reads then return", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("n"), nil, zk.FlagPersistent)
		mustCreate(t, c, h.path("n/child"), nil, zk.FlagPersistent)
		set := mustSet(t, c, h.path("n"), []byte("value"))
		data, got, err := c.Get(h.path("n"))
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if *got != set || string(data) != "value" {
			t.Fatalf("Get returned %q %s, Set returned %s", data, formatStat(*got), formatStat(set))
		}
		ok, existsStat, err := c.Exists(h.path("n"))
		if err != nil || !ok || *existsStat != set {
			t.Fatalf("Exists returned %v %v %v, want true and %s", ok, existsStat, err, formatStat(set))
		}
		children, childrenStat, err := c.Children(h.path("n"))
		if err != nil || !slices.Equal(children, []string{"child"}) || *childrenStat != set {
			t.Fatalf("Children returned %v %v %v, want [child] and %s", children, childrenStat, err, formatStat(set))
		}
	}},
	{"stat/ephemeralOwner is the creating session's id", func(t *testing.T, h *harness) {
		c := h.connect()
		other := h.connect()
		mustCreate(t, c, h.path("e"), nil, zk.FlagEphemeral)
		mustCreate(t, c, h.path("p"), nil, zk.FlagPersistent)
		if st := mustStat(t, other, h.path("e")); st.EphemeralOwner != c.SessionID() || c.SessionID() == 0 {
			t.Fatalf("ephemeral node owner %#x, want creator's session id %#x", st.EphemeralOwner, c.SessionID())
		}
		if st := mustStat(t, other, h.path("p")); st.EphemeralOwner != 0 {
			t.Fatalf("persistent node owner %#x, want 0", st.EphemeralOwner)
		}
	}},
	{"stat/nil data reads back as nil and empty data as empty", func(t *testing.T, h *harness) {
		c := h.connect()
		cases := []struct {
			name  string
			write func(path string) error
			want  []byte
		}{
			{"create nil", func(p string) error { _, err := c.Create(p, nil, 0, openACL); return err }, nil},
			{"create empty", func(p string) error { _, err := c.Create(p, []byte{}, 0, openACL); return err }, []byte{}},
			{"set nil", func(p string) error {
				mustCreate(t, c, p, []byte("x"), 0)
				_, err := c.Set(p, nil, -1)
				return err
			}, nil},
			{"set empty", func(p string) error {
				mustCreate(t, c, p, []byte("x"), 0)
				_, err := c.Set(p, []byte{}, -1)
				return err
			}, []byte{}},
		}
		for i, tc := range cases {
			p := h.path("n" + sequenceSuffix(int32(i)))
			if err := tc.write(p); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			data, st, err := c.Get(p)
			if err != nil {
				t.Fatalf("%s: Get: %v", tc.name, err)
			}
			if (data == nil) != (tc.want == nil) || !bytes.Equal(data, tc.want) || st.DataLength != 0 {
				t.Fatalf("%s: Get returned %#v with dataLength %d, want %#v and 0", tc.name, data, st.DataLength, tc.want)
			}
		}
	}},
	{"stat/every write consumes a zxid, failed ones too, and reads consume none", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("x"), nil, zk.FlagPersistent)
		mustCreate(t, c, h.path("full"), nil, zk.FlagPersistent)
		mustCreate(t, c, h.path("full/c"), nil, zk.FlagPersistent)
		mustCreate(t, c, h.path("eph"), nil, zk.FlagEphemeral)
		failing := []attempt{
			{"create existing", func() error { _, err := c.Create(h.path("x"), nil, 0, openACL); return err }, zk.ErrNodeExists},
			{"create under missing parent", func() error { _, err := c.Create(h.path("no/x"), nil, 0, openACL); return err }, zk.ErrNoNode},
			{"create under ephemeral", func() error { _, err := c.Create(h.path("eph/x"), nil, 0, openACL); return err }, zk.ErrNoChildrenForEphemerals},
			{"create with nil ACL", func() error { _, err := c.Create(h.path("y"), nil, 0, nil); return err }, zk.ErrInvalidACL},
			{"set bad version", func() error { _, err := c.Set(h.path("x"), nil, 42); return err }, zk.ErrBadVersion},
			{"set missing", func() error { _, err := c.Set(h.path("no"), nil, -1); return err }, zk.ErrNoNode},
			{"delete non-empty", func() error { return c.Delete(h.path("full"), -1) }, zk.ErrNotEmpty},
			{"delete root", func() error { return c.Delete("/", -1) }, zk.ErrBadArguments},
			{"failed multi", func() error {
				_, err := c.Multi(&zk.CheckVersionRequest{Path: h.path("x"), Version: 42})
				return err
			}, zk.ErrBadVersion},
			{"empty multi", func() error { _, err := c.Multi(); return err }, nil},
		}
		for _, f := range failing {
			before := mustSet(t, c, h.path("x"), nil)
			f.check(t)
			after := mustSet(t, c, h.path("x"), nil)
			if after.Mzxid < before.Mzxid+2 {
				t.Fatalf("%s: the writes around it got zxids %#x and %#x; want a gap of at least one zxid for it", f.name, before.Mzxid, after.Mzxid)
			}
		}
	}},
	{"stat/all ops of a successful multi share one zxid", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("x"), nil, zk.FlagPersistent)
		_, err := c.Multi(
			&zk.CreateRequest{Path: h.path("a"), Acl: openACL},
			&zk.SetDataRequest{Path: h.path("x"), Data: []byte("v"), Version: -1},
			&zk.CreateRequest{Path: h.path("b"), Acl: openACL},
		)
		if err != nil {
			t.Fatalf("Multi: %v", err)
		}
		a, x, b, parent := mustStat(t, c, h.path("a")), mustStat(t, c, h.path("x")), mustStat(t, c, h.path("b")), mustStat(t, c, h.base)
		if a.Czxid != x.Mzxid || b.Czxid != a.Czxid || parent.Pzxid != a.Czxid {
			t.Fatalf("multi ops got zxids a.czxid=%#x x.mzxid=%#x b.czxid=%#x parent.pzxid=%#x; want all equal", a.Czxid, x.Mzxid, b.Czxid, parent.Pzxid)
		}
	}},
	{"stat/the root has zero czxid, mzxid and ctime and lists zookeeper", func(t *testing.T, h *harness) {
		c := h.connect()
		children, st, err := c.Children("/")
		if err != nil {
			t.Fatalf("Children(/): %v", err)
		}
		if st.Czxid != 0 || st.Ctime != 0 || st.EphemeralOwner != 0 {
			t.Fatalf("root stat %s: want czxid=0 ctime=0 ephemeralOwner=0", formatStat(*st))
		}
		if !slices.Contains(children, "zookeeper") || int(st.NumChildren) != len(children) {
			t.Fatalf("root children %v with numChildren %d: want them to include zookeeper and match the count", children, st.NumChildren)
		}
		if _, err := c.Create("/", nil, 0, openACL); err == nil {
			t.Fatal("Create(/) succeeded")
		} else {
			expectErr(t, err, zk.ErrNodeExists, "Create(/)")
		}
	}},
	{"stat/zookeeper exists with empty data and children config and quota", func(t *testing.T, h *harness) {
		c := h.connect()
		data, st, err := c.Get("/zookeeper")
		if err != nil {
			t.Fatalf("Get(/zookeeper): %v", err)
		}
		if len(data) != 0 || st.Czxid != 0 || st.Ctime != 0 || st.EphemeralOwner != 0 {
			t.Fatalf("/zookeeper holds %q with stat %s; want empty data and czxid=ctime=0", data, formatStat(*st))
		}
		children, _, err := c.Children("/zookeeper")
		if err != nil {
			t.Fatalf("Children(/zookeeper): %v", err)
		}
		slices.Sort(children)
		if !slices.Equal(children, []string{"config", "quota"}) {
			t.Fatalf("/zookeeper children %v, want [config quota]", children)
		}
	}},
}
