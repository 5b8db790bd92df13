package conformance

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
)

// runtimeInconsistencyText is how go-zookeeper reports ZooKeeper's error code -2
// (RuntimeInconsistency), which the server gives every op after the failing one in a failed
// multi; go-zookeeper has no sentinel for it.
const runtimeInconsistencyText = "unknown error: -2"

// multiRules: multi is atomic, ops see earlier ops, and results have a fixed shape.
var multiRules = []rule{
	{"multi/success returns one result per op with create paths and setData stats", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("a"), []byte("a"), zk.FlagPersistent)
		res, err := c.Multi(
			&zk.CreateRequest{Path: h.path("m"), Data: []byte("m"), Acl: openACL},
			&zk.CreateRequest{Path: h.path("s-"), Acl: openACL, Flags: zk.FlagSequence},
			&zk.SetDataRequest{Path: h.path("a"), Data: []byte("aa"), Version: 0},
			&zk.CheckVersionRequest{Path: h.path("a"), Version: 1},
			&zk.DeleteRequest{Path: h.path("m"), Version: 0},
		)
		if err != nil {
			t.Fatalf("Multi: %v", err)
		}
		if len(res) != 5 {
			t.Fatalf("Multi returned %d results, want 5", len(res))
		}
		wantStrings := []string{h.path("m"), h.path("s-" + sequenceSuffix(2)), "", "", ""}
		for i, r := range res {
			if r.Error != nil || r.String != wantStrings[i] || (r.Stat != nil) != (i == 2) {
				t.Fatalf("result %d = {Stat:%v String:%q Error:%v}, want {Stat:%v String:%q Error:nil}", i, r.Stat, r.String, r.Error, i == 2, wantStrings[i])
			}
		}
		if got := mustStat(t, c, h.path("a")); *res[2].Stat != got {
			t.Fatalf("setData result stat %s, want the node's stat %s", formatStat(*res[2].Stat), formatStat(got))
		}
		expectAbsent(t, c, h.path("m"))
	}},
	{"multi/ops see the effects of earlier ops", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("a"), []byte("old"), zk.FlagPersistent)
		old := mustStat(t, c, h.path("a"))
		_, err := c.Multi(
			&zk.CreateRequest{Path: h.path("p"), Acl: openACL},
			&zk.CreateRequest{Path: h.path("p/c"), Acl: openACL},
			&zk.SetDataRequest{Path: h.path("p/c"), Data: []byte("1"), Version: 0},
			&zk.CheckVersionRequest{Path: h.path("p/c"), Version: 1},
			&zk.DeleteRequest{Path: h.path("a"), Version: 0},
			&zk.CreateRequest{Path: h.path("a"), Data: []byte("new"), Acl: openACL},
		)
		if err != nil {
			t.Fatalf("Multi: %v", err)
		}
		data, st, err := c.Get(h.path("a"))
		if err != nil || string(data) != "new" || st.Czxid <= old.Czxid || st.Version != 0 {
			t.Fatalf("re-created node = %q %v %v; want data new, version 0 and a newer czxid than %#x", data, st, err, old.Czxid)
		}
		if data, st, err := c.Get(h.path("p/c")); err != nil || string(data) != "1" || st.Version != 1 {
			t.Fatalf("p/c = %q %v %v; want data 1 at version 1", data, st, err)
		}
	}},
	{"multi/a failed multi reports per-op errors and applies nothing", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("a"), []byte("a"), zk.FlagPersistent)
		baseBefore, aBefore := mustStat(t, c, h.base), mustStat(t, c, h.path("a"))
		res, err := c.Multi(
			&zk.CreateRequest{Path: h.path("m"), Acl: openACL},
			&zk.SetDataRequest{Path: h.path("a"), Data: []byte("zz"), Version: -1},
			&zk.DeleteRequest{Path: h.path("missing"), Version: -1},
			&zk.CheckVersionRequest{Path: h.path("a"), Version: 7},
			&zk.CreateRequest{Path: h.path("m2"), Acl: openACL},
		)
		expectErr(t, err, zk.ErrNoNode, "Multi with a delete of a missing node")
		if len(res) != 5 {
			t.Fatalf("failed Multi returned %d results, want one per op (5)", len(res))
		}
		for i, r := range res {
			if r.Stat != nil || r.String != "" {
				t.Fatalf("failed multi result %d = {Stat:%v String:%q}, want zero", i, r.Stat, r.String)
			}
			switch {
			case i < 2 && r.Error != nil:
				t.Fatalf("result %d (before the failing op) has error %v, want nil", i, r.Error)
			case i == 2 && !errors.Is(r.Error, zk.ErrNoNode):
				t.Fatalf("result 2 (the failing op) has error %v, want %v", r.Error, zk.ErrNoNode)
			case i > 2 && (r.Error == nil || r.Error.Error() != runtimeInconsistencyText):
				t.Fatalf("result %d (after the failing op) has error %v, want %q", i, r.Error, runtimeInconsistencyText)
			}
		}
		expectAbsent(t, c, h.path("m"))
		expectAbsent(t, c, h.path("m2"))
		if after := mustStat(t, c, h.path("a")); after != aBefore {
			t.Fatalf("node a after failed multi %s, want unchanged %s", formatStat(after), formatStat(aBefore))
		}
		if after := mustStat(t, c, h.base); after != baseBefore {
			t.Fatalf("base after failed multi %s, want unchanged %s", formatStat(after), formatStat(baseBefore))
		}
	}},
	{"multi/check ops compare versions", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("a"), nil, zk.FlagPersistent)
		mustSet(t, c, h.path("a"), []byte("v1"))
		cases := []struct {
			path    string
			version int32
			want    error
		}{
			{h.path("a"), 1, nil},
			{h.path("a"), -1, nil},
			{h.path("a"), 0, zk.ErrBadVersion},
			{h.path("a"), 2, zk.ErrBadVersion},
			{h.path("missing"), -1, zk.ErrNoNode},
			{h.path("missing"), 0, zk.ErrNoNode},
		}
		for _, tc := range cases {
			res, err := c.Multi(&zk.CheckVersionRequest{Path: tc.path, Version: tc.version})
			if !isError(err, tc.want) || len(res) != 1 || !isError(res[0].Error, tc.want) {
				t.Fatalf("check %s version %d = %v %v, want %v", tc.path, tc.version, res, err, tc.want)
			}
		}
	}},
	{"multi/an empty multi succeeds with no results", func(t *testing.T, h *harness) {
		c := h.connect()
		res, err := c.Multi()
		if err != nil || res == nil || len(res) != 0 {
			t.Fatalf("Multi() = %#v, %v; want an empty non-nil slice and nil", res, err)
		}
	}},
	{"multi/the server validates what the client does not", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("a"), nil, zk.FlagPersistent)
		cases := []struct {
			name string
			op   any
			want error
		}{
			{"relative path", &zk.CreateRequest{Path: "relative", Acl: openACL}, zk.ErrBadArguments},
			{"trailing slash with existing parent", &zk.CreateRequest{Path: h.path("a") + "/", Acl: openACL}, zk.ErrBadArguments},
			{"dot name with existing parent", &zk.CreateRequest{Path: h.path("."), Acl: openACL}, zk.ErrBadArguments},
			{"NUL in name", &zk.CreateRequest{Path: h.path("a\x00"), Acl: openACL}, zk.ErrBadArguments},
			{"trailing slash with missing parent", &zk.CreateRequest{Path: h.path("x") + "/", Acl: openACL}, zk.ErrNoNode},
			{"double slash", &zk.CreateRequest{Path: h.path("x") + "//y", Acl: openACL}, zk.ErrNoNode},
			{"dot component", &zk.CreateRequest{Path: h.path("./y"), Acl: openACL}, zk.ErrNoNode},
			{"setData with trailing slash", &zk.SetDataRequest{Path: h.path("a") + "/", Version: -1}, zk.ErrBadArguments},
			{"delete root", &zk.DeleteRequest{Path: "/", Version: -1}, zk.ErrBadArguments},
			{"nil ACL", &zk.CreateRequest{Path: h.path("b")}, zk.ErrInvalidACL},
			{"unknown create flags", &zk.CreateRequest{Path: h.path("b"), Acl: openACL, Flags: 99}, zk.ErrBadArguments},
		}
		for _, tc := range cases {
			res, err := c.Multi(tc.op)
			if !isError(err, tc.want) || len(res) != 1 || !isError(res[0].Error, tc.want) {
				t.Fatalf("%s: Multi = %v, %v; want %v", tc.name, res, err, tc.want)
			}
		}
		children, _, err := c.Children(h.base)
		if err != nil || len(children) != 1 {
			t.Fatalf("children after rejected multis = %v, %v; want only [a]", children, err)
		}
	}},
}
