package model

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestEphemerals checks SEMANTICS.md §5.
func TestEphemerals(t *testing.T) {
	t.Run("an_ephemeral_cannot_have_children_and_a_refused_create_leaves_nothing", func(t *testing.T) {
		srv := NewServer()
		c, _ := connect(t, srv)
		mustCreate(t, c, "/e", nil, zk.FlagEphemeral)
		before := mustStat(t, c, "/e")
		for _, flags := range []int32{0, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential} {
			if _, err := c.Create("/e/kid", nil, flags, worldACL); err != zk.ErrNoChildrenForEphemerals {
				t.Fatalf("create flags=%d under an ephemeral: %v, want zk.ErrNoChildrenForEphemerals", flags, err)
			}
		}
		res, err := c.Multi(&zk.CreateRequest{Path: "/e/kid", Acl: worldACL})
		if err != zk.ErrNoChildrenForEphemerals || len(res) != 1 || res[0].Error != zk.ErrNoChildrenForEphemerals {
			t.Fatalf("multi create under an ephemeral: %+v, %v", res, err)
		}
		checkStat(t, "the ephemeral", mustStat(t, c, "/e"), before)
		if kids := sortedChildren(t, c, "/e"); len(kids) != 0 {
			t.Fatalf("children %v", kids)
		}
	})
	for _, end := range []string{"Close", "Expire"} {
		t.Run(end+"_removes_every_ephemeral_in_one_zxid_and_others_see_the_events", func(t *testing.T) {
			srv := NewServer()
			owner, _ := connect(t, srv)
			other, otherEvents := connect(t, srv)
			mustCreate(t, other, "/p1", nil, 0)
			mustCreate(t, other, "/p2", nil, 0)
			mustCreate(t, other, "/p1/keep", nil, 0)
			eph := []string{"/p1/a", "/p1/b", "/p2/c", "/p2/d"}
			for _, p := range eph {
				mustCreate(t, owner, p, nil, zk.FlagEphemeral)
			}
			var watches []<-chan zk.Event
			for _, p := range eph {
				watches = append(watches, setWatch(t, other, callExistsW, p))
			}
			p1Kids, p2Kids := setWatch(t, other, callChildrenW, "/p1"), setWatch(t, other, callChildrenW, "/p2")
			cv1, cv2 := mustStat(t, other, "/p1").Cversion, mustStat(t, other, "/p2").Cversion
			before := lastZxid(srv)
			if end == "Close" {
				owner.Close()
			} else {
				srv.Expire(owner.SessionID())
			}
			// Expiry spends one zxid; the expired client then reconnects at once and gets a new session, another.
			wantSpent := map[string]int64{"Close": 1, "Expire": 2}[end]
			if got := lastZxid(srv); got != before+wantSpent {
				t.Fatalf("%s spent %d zxids, want %d", end, got-before, wantSpent)
			}
			for i, p := range eph {
				if ok, _, _ := other.Exists(p); ok {
					t.Fatalf("%s still exists", p)
				}
				receiveOne(t, watches[i], wantWatchEvent(zk.EventNodeDeleted, p))
			}
			receiveOne(t, p1Kids, wantWatchEvent(zk.EventNodeChildrenChanged, "/p1"))
			receiveOne(t, p2Kids, wantWatchEvent(zk.EventNodeChildrenChanged, "/p2"))
			for p, cv := range map[string]int32{"/p1": cv1, "/p2": cv2} {
				st := mustStat(t, other, p)
				if st.Pzxid != before+1 || st.Cversion != cv+2 {
					t.Fatalf("%s pzxid=%d cversion=%d, want %d and %d", p, st.Pzxid, st.Cversion, before+1, cv+2)
				}
			}
			// One NodeDeleted per ephemeral and one NodeChildrenChanged per parent: 6 in all.
			if got := drain(otherEvents); len(got) != 6 {
				t.Fatalf("session channel got %d events %+v, want 6", len(got), got)
			}
			if kids := sortedChildren(t, other, "/p1"); !slices.Equal(kids, []string{"keep"}) {
				t.Fatalf("/p1 children %v, want [keep]", kids)
			}
		})
	}
	t.Run("a_failed_multi_that_replaced_anothers_ephemeral_gives_it_back_whole", func(t *testing.T) {
		srv := NewServer()
		owner, _ := connect(t, srv)
		thief, _ := connect(t, srv)
		witness, _ := connect(t, srv)
		mustCreate(t, owner, "/e", []byte("mine"), zk.FlagEphemeral)
		_, err := thief.Multi(
			&zk.DeleteRequest{Path: "/e", Version: -1},
			&zk.CreateRequest{Path: "/e", Acl: worldACL, Flags: zk.FlagEphemeral},
			&zk.CheckVersionRequest{Path: "/none", Version: -1},
		)
		if err != zk.ErrNoNode {
			t.Fatalf("Multi = %v", err)
		}
		thief.Close()
		if st := mustStat(t, witness, "/e"); st.EphemeralOwner != owner.SessionID() {
			t.Fatalf("/e owner %#x after the thief closed, want %#x (the rolled-back multi's owner must not keep it)", st.EphemeralOwner, owner.SessionID())
		}
		owner.Close()
		if ok, _, _ := witness.Exists("/e"); ok {
			t.Fatal("/e outlived its owner: the rollback did not give it back to its session")
		}
	})
	t.Run("an_ephemerals_owner_is_the_creating_session_even_inside_a_multi", func(t *testing.T) {
		srv := NewServer()
		c, _ := connect(t, srv)
		if _, err := c.Multi(&zk.CreateRequest{Path: "/m", Acl: worldACL, Flags: zk.FlagEphemeral}); err != nil {
			t.Fatal(err)
		}
		if got := mustStat(t, c, "/m").EphemeralOwner; got != c.SessionID() {
			t.Fatalf("owner %#x, want %#x", got, c.SessionID())
		}
		other, _ := connect(t, srv)
		c.Close()
		if ok, _, _ := other.Exists("/m"); ok {
			t.Fatal("an ephemeral created in a multi outlived its session")
		}
	})
}

// TestClientPathValidation: go-zookeeper refuses malformed paths itself, with zk.ErrInvalidPath, for every call
// but Multi; nothing reaches the server (SEMANTICS.md §7).
func TestClientPathValidation(t *testing.T) {
	calls := map[string]func(c *Conn, p string) error{
		"Create":    func(c *Conn, p string) error { _, err := c.Create(p, nil, 0, worldACL); return err },
		"Delete":    func(c *Conn, p string) error { return c.Delete(p, -1) },
		"Exists":    func(c *Conn, p string) error { _, _, err := c.Exists(p); return err },
		"ExistsW":   func(c *Conn, p string) error { _, _, _, err := c.ExistsW(p); return err },
		"Get":       func(c *Conn, p string) error { _, _, err := c.Get(p); return err },
		"GetW":      func(c *Conn, p string) error { _, _, _, err := c.GetW(p); return err },
		"Set":       func(c *Conn, p string) error { _, err := c.Set(p, nil, -1); return err },
		"Children":  func(c *Conn, p string) error { _, _, err := c.Children(p); return err },
		"ChildrenW": func(c *Conn, p string) error { _, _, _, err := c.ChildrenW(p); return err },
		"Sync":      func(c *Conn, p string) error { _, err := c.Sync(p); return err },
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range calls {
			if !yield(n) {
				return
			}
		}
	})
	for _, bad := range []string{"", "x", "/a/", "/a//b", "/a/./b", "/a/../b", "/.", "/..", "/a/.", "/a\x00b", "/a\x01", "/a\u0085", "/a\uf000", "/a\ufff0"} {
		t.Run("rejects_"+strings.ReplaceAll(strings.ReplaceAll(bad, "/", "_"), "\x00", "NUL"), func(t *testing.T) {
			srv := NewServer()
			c, _ := connect(t, srv)
			before := srv.Dump()
			for _, name := range names {
				if err := calls[name](c, bad); !isErr(err, zk.ErrInvalidPath) {
					t.Errorf("%s(%q) = %v, want zk.ErrInvalidPath", name, bad, err)
				}
			}
			if after := srv.Dump(); after != before {
				t.Errorf("a refused call changed the server:\n%s\n---\n%s", before, after)
			}
		})
	}
	t.Run("accepts_dots_inside_names_and_non_ASCII", func(t *testing.T) {
		srv := NewServer()
		c, _ := connect(t, srv)
		for _, good := range []string{"/.a", "/a.", "/..a", "/é", "/a b"} {
			mustCreate(t, c, good, nil, 0)
		}
	})
	t.Run("a_sequential_create_may_end_in_a_slash", func(t *testing.T) {
		srv := NewServer()
		c, _ := connect(t, srv)
		mustCreate(t, c, "/base", nil, 0)
		for _, flags := range []int32{zk.FlagSequence, zk.FlagEphemeralSequential} {
			if got, err := c.Create("/base/", nil, flags, worldACL); err != nil || !strings.HasPrefix(got, "/base/00000000") {
				t.Fatalf("Create(/base/, flags=%d) = %q, %v", flags, got, err)
			}
		}
		if _, err := c.Create("/base/", nil, 0, worldACL); !isErr(err, zk.ErrInvalidPath) {
			t.Fatalf("plain Create(/base/) = %v, want zk.ErrInvalidPath", err)
		}
	})
}

// TestServerPathValidation: Multi sends paths unchecked; the server answers zk.ErrNoNode when the parent is
// missing (before it looks at the name) and zk.ErrBadArguments for a malformed name (SEMANTICS.md §6).
func TestServerPathValidation(t *testing.T) {
	cases := []struct {
		name string
		op   any
		want error
	}{
		{"relative_create_is_BadArguments", &zk.CreateRequest{Path: "nope", Acl: worldACL}, zk.ErrBadArguments},
		{"create_with_a_missing_parent_is_NoNode_before_validation_trailing_slash", &zk.CreateRequest{Path: "/base/x/", Acl: worldACL}, zk.ErrNoNode},
		{"create_with_a_missing_parent_is_NoNode_before_validation_dot", &zk.CreateRequest{Path: "/base/./y", Acl: worldACL}, zk.ErrNoNode},
		{"create_with_a_missing_parent_is_NoNode_before_validation_empty_segment", &zk.CreateRequest{Path: "/base/x//y", Acl: worldACL}, zk.ErrNoNode},
		{"create_of_a_trailing_slash_under_an_existing_parent_is_BadArguments", &zk.CreateRequest{Path: "/base/", Acl: worldACL}, zk.ErrBadArguments},
		{"create_of_a_dot_is_BadArguments", &zk.CreateRequest{Path: "/base/.", Acl: worldACL}, zk.ErrBadArguments},
		{"create_with_NUL_is_BadArguments", &zk.CreateRequest{Path: "/base/a\x00", Acl: worldACL}, zk.ErrBadArguments},
		{"setData_with_a_trailing_slash_is_BadArguments", &zk.SetDataRequest{Path: "/base/a/", Version: -1}, zk.ErrBadArguments},
		{"delete_of_the_root_is_BadArguments", &zk.DeleteRequest{Path: "/", Version: -1}, zk.ErrBadArguments},
		{"delete_of_zookeeper_is_BadArguments", &zk.DeleteRequest{Path: "/zookeeper", Version: -1}, zk.ErrBadArguments},
		{"check_of_a_relative_path_is_BadArguments", &zk.CheckVersionRequest{Path: "x", Version: -1}, zk.ErrBadArguments},
		{"create_with_a_nil_ACL_is_InvalidACL", &zk.CreateRequest{Path: "/base/n"}, zk.ErrInvalidACL},
		{"create_with_flags_99_is_BadArguments", &zk.CreateRequest{Path: "/base/n", Acl: worldACL, Flags: 99}, zk.ErrBadArguments},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer()
			c, _ := connect(t, srv)
			mustCreate(t, c, "/base", nil, 0)
			mustCreate(t, c, "/base/a", nil, 0)
			res, err := c.Multi(tc.op)
			if !isErr(err, tc.want) || len(res) != 1 || !isErr(res[0].Error, tc.want) {
				t.Fatalf("Multi = %+v, %v; want %v", res, err, tc.want)
			}
		})
	}
	t.Run("a_sequential_create_ending_in_a_slash_is_fine", func(t *testing.T) {
		srv := NewServer()
		c, _ := connect(t, srv)
		mustCreate(t, c, "/base", nil, 0)
		res, err := c.Multi(&zk.CreateRequest{Path: "/base/", Acl: worldACL, Flags: zk.FlagSequence})
		if err != nil || res[0].String != "/base/0000000000" {
			t.Fatalf("Multi = %+v, %v", res, err)
		}
	})
}

// TestMulti checks SEMANTICS.md §6.
func TestMulti(t *testing.T) {
	setup := func(t *testing.T) (*Server, *Conn) {
		srv := NewServer()
		c, _ := connect(t, srv)
		mustCreate(t, c, "/base", nil, 0)
		mustCreate(t, c, "/base/a", []byte("a"), 0)
		return srv, c
	}
	t.Run("success_gives_one_response_per_op_in_order", func(t *testing.T) {
		srv, c := setup(t)
		res, err := c.Multi(
			&zk.CreateRequest{Path: "/base/s-", Acl: worldACL, Flags: zk.FlagSequence},
			&zk.SetDataRequest{Path: "/base/a", Data: []byte("b"), Version: 0},
			&zk.CheckVersionRequest{Path: "/base/a", Version: 1},
			&zk.DeleteRequest{Path: "/base/s-0000000001", Version: -1},
			&zk.CreateRequest{Path: "/base/c", Acl: worldACL},
		)
		if err != nil || len(res) != 5 {
			t.Fatalf("Multi = %+v, %v", res, err)
		}
		st := mustStat(t, c, "/base/a")
		if res[0] != (zk.MultiResponse{String: "/base/s-0000000001"}) || res[1].Stat == nil || *res[1].Stat != st || res[1].String != "" ||
			res[2] != (zk.MultiResponse{}) || res[3] != (zk.MultiResponse{}) || res[4] != (zk.MultiResponse{String: "/base/c"}) {
			t.Fatalf("responses %+v (set's stat %+v, Get's %+v)", res, res[1].Stat, st)
		}
		if st.Mzxid != lastZxid(srv) || mustStat(t, c, "/base/c").Czxid != lastZxid(srv) {
			t.Fatal("ops of one multi do not share its zxid")
		}
	})
	t.Run("ops_see_the_effects_of_earlier_ops", func(t *testing.T) {
		_, c := setup(t)
		czxid := mustStat(t, c, "/base/a").Czxid
		_, err := c.Multi(
			&zk.CreateRequest{Path: "/base/p", Acl: worldACL},
			&zk.CreateRequest{Path: "/base/p/k", Acl: worldACL},
			&zk.SetDataRequest{Path: "/base/p/k", Data: []byte("x"), Version: 0},
			&zk.CheckVersionRequest{Path: "/base/p/k", Version: 1},
			&zk.DeleteRequest{Path: "/base/a", Version: -1},
			&zk.CreateRequest{Path: "/base/a", Acl: worldACL},
		)
		if err != nil {
			t.Fatal(err)
		}
		if mustStat(t, c, "/base/a").Czxid == czxid {
			t.Fatal("a node deleted and created again in one multi kept its czxid")
		}
	})
	t.Run("failure_applies_nothing_and_reports_ok_then_the_error_then_unknown_error_-2", func(t *testing.T) {
		srv, c := setup(t)
		before := srv.Dump()
		res, err := c.Multi(
			&zk.CreateRequest{Path: "/base/s-", Acl: worldACL, Flags: zk.FlagSequence},
			&zk.SetDataRequest{Path: "/base/a", Data: []byte("changed"), Version: -1},
			&zk.DeleteRequest{Path: "/base/a", Version: 5},
			&zk.CreateRequest{Path: "/base/later", Acl: worldACL},
			&zk.CheckVersionRequest{Path: "/base/a", Version: -1},
		)
		if err != zk.ErrBadVersion || len(res) != 5 {
			t.Fatalf("Multi = %+v, %v; want zk.ErrBadVersion and 5 responses", res, err)
		}
		for i, r := range res {
			var want string
			switch {
			case i < 2:
				want = "<nil>"
			case i == 2:
				want = zk.ErrBadVersion.Error()
			default:
				want = "unknown error: -2"
			}
			if got := errString(r.Error); got != want && !(want == "<nil>" && r.Error == nil) {
				t.Errorf("response %d error %q, want %q", i, got, want)
			}
			if r.String != "" || r.Stat != nil {
				t.Errorf("response %d of a failed multi carries %q %+v", i, r.String, r.Stat)
			}
		}
		after := srv.Dump()
		if strings.Replace(before, "zxid "+itoa(lastZxid(srv)-1), "zxid "+itoa(lastZxid(srv)), 1) != after {
			t.Fatalf("a failed multi changed more than the zxid:\n%s\n---\n%s", before, after)
		}
		if got := mustCreate(t, c, "/base/s-", nil, zk.FlagSequence); got != "/base/s-0000000001" {
			t.Fatalf("after the failed multi the sequence gave %s, want /base/s-0000000001", got)
		}
	})
	t.Run("the_first_failing_op_is_reported", func(t *testing.T) {
		_, c := setup(t)
		_, err := c.Multi(&zk.CheckVersionRequest{Path: "/base/none", Version: -1}, &zk.CheckVersionRequest{Path: "/base/a", Version: 3})
		if err != zk.ErrNoNode {
			t.Fatalf("Multi = %v, want zk.ErrNoNode", err)
		}
	})
	t.Run("check_matches_version_-1_and_the_exact_version_only", func(t *testing.T) {
		_, c := setup(t)
		for v, want := range map[int32]error{-1: nil, 0: nil, 1: zk.ErrBadVersion} {
			if _, err := c.Multi(&zk.CheckVersionRequest{Path: "/base/a", Version: v}); err != want {
				t.Errorf("check version %d = %v, want %v", v, err, want)
			}
		}
	})
	t.Run("an_empty_multi_returns_an_empty_non_nil_slice", func(t *testing.T) {
		_, c := setup(t)
		res, err := c.Multi()
		if err != nil || res == nil || len(res) != 0 {
			t.Fatalf("Multi() = %#v, %v", res, err)
		}
	})
	t.Run("an_unknown_op_type_is_refused_by_the_client", func(t *testing.T) {
		srv, c := setup(t)
		before := lastZxid(srv)
		if _, err := c.Multi(&zk.CreateTTLRequest{Path: "/base/a"}); err == nil || !strings.Contains(err.Error(), "unknown operation type") {
			t.Fatalf("Multi(CreateTTLRequest) = %v", err)
		}
		if lastZxid(srv) != before {
			t.Fatal("a refused multi reached the server")
		}
	})
	t.Run("a_failed_multi_fires_no_watch", func(t *testing.T) {
		srv, c := setup(t)
		other, otherEvents := connect(t, srv)
		ch := setWatch(t, other, callGetW, "/base/a")
		kids := setWatch(t, other, callChildrenW, "/base")
		_, err := c.Multi(&zk.SetDataRequest{Path: "/base/a", Version: -1}, &zk.CreateRequest{Path: "/base/n", Acl: worldACL}, &zk.DeleteRequest{Path: "/none", Version: -1})
		if err != zk.ErrNoNode {
			t.Fatal(err)
		}
		receiveNothing(t, ch)
		receiveNothing(t, kids)
		if got := drain(otherEvents); len(got) != 0 {
			t.Fatalf("session channel got %+v", got)
		}
	})
	t.Run("a_successful_multi_fires_the_watches_of_every_op", func(t *testing.T) {
		srv, c := setup(t)
		other, _ := connect(t, srv)
		data := setWatch(t, other, callGetW, "/base/a")
		kids := setWatch(t, other, callChildrenW, "/base")
		if _, err := c.Multi(&zk.SetDataRequest{Path: "/base/a", Version: -1}, &zk.CreateRequest{Path: "/base/n", Acl: worldACL}); err != nil {
			t.Fatal(err)
		}
		receiveOne(t, data, wantWatchEvent(zk.EventNodeDataChanged, "/base/a"))
		receiveOne(t, kids, wantWatchEvent(zk.EventNodeChildrenChanged, "/base"))
	})
}

func itoa(n int64) string {
	var b []byte
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestErrors checks SEMANTICS.md §7: which error each failing call returns. The errors are go-zookeeper's own
// values, so code may compare them with ==.
func TestErrors(t *testing.T) {
	cases := []struct {
		name string
		call func(c *Conn) error
		want error
	}{
		{"delete_of_a_non_empty_node_is_NotEmpty", func(c *Conn) error { return c.Delete("/n", -1) }, zk.ErrNotEmpty},
		{"delete_with_a_wrong_version_is_BadVersion", func(c *Conn) error { return c.Delete("/n/k", 3) }, zk.ErrBadVersion},
		{"set_with_a_wrong_version_is_BadVersion", func(c *Conn) error { _, err := c.Set("/n", nil, 3); return err }, zk.ErrBadVersion},
		{"delete_of_a_missing_node_is_NoNode_whatever_the_version", func(c *Conn) error { return c.Delete("/none", 3) }, zk.ErrNoNode},
		{"set_of_a_missing_node_is_NoNode_whatever_the_version", func(c *Conn) error { _, err := c.Set("/none", nil, 3); return err }, zk.ErrNoNode},
		{"create_under_a_missing_parent_is_NoNode", func(c *Conn) error { _, err := c.Create("/none/x", nil, 0, worldACL); return err }, zk.ErrNoNode},
		{"create_of_an_existing_node_is_NodeExists", func(c *Conn) error { _, err := c.Create("/n", nil, 0, worldACL); return err }, zk.ErrNodeExists},
		{"create_of_the_root_is_NodeExists", func(c *Conn) error { _, err := c.Create("/", nil, 0, worldACL); return err }, zk.ErrNodeExists},
		{"create_with_a_nil_ACL_is_InvalidACL", func(c *Conn) error { _, err := c.Create("/x", nil, 0, nil); return err }, zk.ErrInvalidACL},
		{"create_with_an_empty_ACL_is_InvalidACL", func(c *Conn) error { _, err := c.Create("/x", nil, 0, []zk.ACL{}); return err }, zk.ErrInvalidACL},
		{"delete_of_the_root_is_BadArguments", func(c *Conn) error { return c.Delete("/", -1) }, zk.ErrBadArguments},
		{"delete_of_zookeeper_is_BadArguments", func(c *Conn) error { return c.Delete("/zookeeper", -1) }, zk.ErrBadArguments},
		{"delete_with_version_-1_matches_any_version", func(c *Conn) error { c.Set("/n/k", nil, -1); return c.Delete("/n/k", -1) }, nil},
		{"delete_with_the_exact_version_succeeds", func(c *Conn) error { c.Set("/n/k", nil, -1); return c.Delete("/n/k", 1) }, nil},
		{"create_under_zookeeper_succeeds", func(c *Conn) error { _, err := c.Create("/zookeeper/x", nil, 0, worldACL); return err }, nil},
		{"set_of_zookeeper_and_its_quota_succeeds", func(c *Conn) error {
			if _, err := c.Set("/zookeeper", nil, -1); err != nil {
				return err
			}
			_, err := c.Set("/zookeeper/quota", nil, -1)
			return err
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer()
			c, _ := connect(t, srv)
			mustCreate(t, c, "/n", nil, 0)
			mustCreate(t, c, "/n/k", nil, 0)
			err := tc.call(c)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			}
			if !isErr(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tc.want != zk.ErrBadArguments && err != tc.want {
				t.Fatalf("got %#v, want go-zookeeper's value %v itself (code compares with ==)", err, tc.want)
			}
		})
	}
}

// TestCreateFlags: go-zookeeper parses create flags itself; the model's Create does what it does.
func TestCreateFlags(t *testing.T) {
	cases := []struct {
		flags   int32
		wantErr string // "" for success
		isFlags bool   // the error wraps zk.ErrInvalidFlags
	}{
		{zk.FlagPersistent, "", false},
		{zk.FlagEphemeral, "", false},
		{zk.FlagSequence, "", false},
		{zk.FlagEphemeralSequential, "", false},
		{zk.FlagContainer, "", false},
		{zk.FlagTTL, "Create with TTL flag disallowed: zk: invalid flags specified", true},
		{zk.FlagPersistentSequentialWithTTL, "Create with TTL flag disallowed: zk: invalid flags specified", true},
		{7, "invalid flag value: [7]", false},
		{8, "invalid flag value: [8]", false},
		{-1, "invalid flag value: [-1]", false},
	}
	for _, tc := range cases {
		name := "flags_" + strings.ReplaceAll(itoa(int64(max(tc.flags, 0))), "-", "minus")
		if tc.flags < 0 {
			name = "flags_minus_1"
		}
		if tc.wantErr == "" {
			name += "_are_sent_and_succeed"
		} else {
			name += "_are_refused_by_the_client"
		}
		t.Run(name, func(t *testing.T) {
			srv := NewServer()
			c, _ := connect(t, srv)
			before := lastZxid(srv)
			got, err := c.Create("/n", nil, tc.flags, worldACL)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if ok, _, _ := c.Exists(got); !ok {
					t.Fatal("node not created")
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if errors.Is(err, zk.ErrInvalidFlags) != tc.isFlags {
				t.Fatalf("errors.Is(err, zk.ErrInvalidFlags) = %t, want %t", !tc.isFlags, tc.isFlags)
			}
			if lastZxid(srv) != before {
				t.Fatal("a create the client refused reached the server")
			}
		})
	}
}

// TestOversizedRequests checks the two size limits (SEMANTICS.md §7).
func TestOversizedRequests(t *testing.T) {
	const path = "/0123456789012345678901234567890123" // 35 bytes, as measured
	if len(path) != 35 {
		t.Fatal("path must be 35 bytes")
	}
	cases := []struct {
		name string
		size int
		want error // nil: accepted
	}{
		{"the_largest_create_ZooKeeper_accepted_succeeds", 1048493, nil},
		{"one_byte_more_is_over_jute_maxbuffer_and_the_connection_drops", 1048494, zk.ErrConnectionClosed},
		{"exactly_1MiB_drops_the_connection", 1 << 20, zk.ErrConnectionClosed},
		{"2MiB_is_over_the_client_buffer_and_fails_with_ShortBuffer", 2 << 20, zk.ErrShortBuffer},
	}
	for _, tc := range cases {
		t.Run("create_"+tc.name, func(t *testing.T) {
			srv := NewServer()
			c, events := connect(t, srv)
			sid := c.SessionID()
			before := lastZxid(srv)
			_, err := c.Create(path, make([]byte, tc.size), 0, worldACL)
			if err != tc.want {
				t.Fatalf("Create with %d bytes: %v, want %v", tc.size, err, tc.want)
			}
			ok, _, _ := c.Exists(path)
			if ok != (tc.want == nil) {
				t.Fatalf("node exists=%t after %v", ok, err)
			}
			var wantStates []zk.State
			if tc.want == zk.ErrConnectionClosed {
				wantStates = []zk.State{zk.StateDisconnected, zk.StateConnecting, zk.StateConnected, zk.StateHasSession}
				if lastZxid(srv) != before {
					t.Fatal("a request the server refused spent a zxid")
				}
			}
			var gotStates []zk.State
			for _, ev := range drain(events) {
				gotStates = append(gotStates, ev.State)
			}
			if !slices.Equal(gotStates, wantStates) {
				t.Fatalf("session states %v, want %v", gotStates, wantStates)
			}
			if c.SessionID() != sid || c.State() != zk.StateHasSession {
				t.Fatalf("after: session %#x state %v, want the same session %#x and StateHasSession", c.SessionID(), c.State(), sid)
			}
		})
	}
	t.Run("set_and_multi_over_jute_maxbuffer_drop_the_connection_and_apply_nothing", func(t *testing.T) {
		srv := NewServer()
		c, _ := connect(t, srv)
		mustCreate(t, c, "/n", []byte("old"), 0)
		if _, err := c.Set("/n", make([]byte, 1<<20), -1); err != zk.ErrConnectionClosed {
			t.Fatalf("Set: %v", err)
		}
		if _, err := c.Multi(&zk.CreateRequest{Path: "/m", Acl: worldACL}, &zk.SetDataRequest{Path: "/n", Data: make([]byte, 1<<20), Version: -1}); err != zk.ErrConnectionClosed {
			t.Fatalf("Multi: %v", err)
		}
		if d, _, _ := c.Get("/n"); !bytes.Equal(d, []byte("old")) {
			t.Fatalf("data %q", d)
		}
		if ok, _, _ := c.Exists("/m"); ok {
			t.Fatal("part of an oversized multi was applied")
		}
	})
}

// TestClosedConn: after Close every call returns zk.ErrConnectionClosed with go-zookeeper's shapes, nothing
// reaches the server, the session id stays readable, and Close again is a no-op (SEMANTICS.md §7).
func TestClosedConn(t *testing.T) {
	srv := NewServer()
	c, events := connect(t, srv)
	mustCreate(t, c, "/n", nil, 0)
	sid := c.SessionID()
	c.Close()
	before := srv.Dump()
	if _, err := c.Create("/x", nil, 0, worldACL); err != zk.ErrConnectionClosed {
		t.Errorf("Create: %v", err)
	}
	if err := c.Delete("/n", -1); err != zk.ErrConnectionClosed {
		t.Errorf("Delete: %v", err)
	}
	if ok, st, err := c.Exists("/n"); ok || st != nil || err != zk.ErrConnectionClosed {
		t.Errorf("Exists: %v %v %v", ok, st, err)
	}
	if ok, st, ch, err := c.ExistsW("/n"); ok || st != nil || ch != nil || err != zk.ErrConnectionClosed {
		t.Errorf("ExistsW: %v %v %v %v", ok, st, ch, err)
	}
	if d, st, err := c.Get("/n"); d != nil || st != nil || err != zk.ErrConnectionClosed {
		t.Errorf("Get: %v %v %v", d, st, err)
	}
	if d, st, ch, err := c.GetW("/n"); d != nil || st != nil || ch != nil || err != zk.ErrConnectionClosed {
		t.Errorf("GetW: %v %v %v %v", d, st, ch, err)
	}
	if st, err := c.Set("/n", nil, -1); st != nil || err != zk.ErrConnectionClosed {
		t.Errorf("Set: %v %v", st, err)
	}
	if k, st, err := c.Children("/n"); k != nil || st != nil || err != zk.ErrConnectionClosed {
		t.Errorf("Children: %v %v %v", k, st, err)
	}
	if k, st, ch, err := c.ChildrenW("/n"); k != nil || st != nil || ch != nil || err != zk.ErrConnectionClosed {
		t.Errorf("ChildrenW: %v %v %v %v", k, st, ch, err)
	}
	if res, err := c.Multi(&zk.CheckVersionRequest{Path: "/n", Version: -1}); res != nil || err != zk.ErrConnectionClosed {
		t.Errorf("Multi: %v %v", res, err)
	}
	if p, err := c.Sync("/n"); p != "" || err != zk.ErrConnectionClosed {
		t.Errorf("Sync: %q %v", p, err)
	}
	if after := srv.Dump(); after != before {
		t.Errorf("calls on a closed client changed the server:\n%s\n---\n%s", before, after)
	}
	if c.State() != zk.StateDisconnected || c.SessionID() != sid {
		t.Errorf("state %v session %#x, want StateDisconnected and %#x", c.State(), c.SessionID(), sid)
	}
	got := drain(events)
	if len(got) != 1 || got[0] != (zk.Event{Type: zk.EventSession, State: zk.StateDisconnected, Server: "model"}) {
		t.Errorf("session channel got %+v, want one StateDisconnected then closed", got)
	}
	if _, ok := <-events; ok {
		t.Error("session channel not closed")
	}
	c.Close()
	if after := srv.Dump(); after != before {
		t.Error("a second Close changed the server")
	}
}

// TestSync: Sync returns its path, even for a missing node, and changes nothing.
func TestSync(t *testing.T) {
	srv := NewServer()
	c, _ := connect(t, srv)
	for _, p := range []string{"/", "/missing", "/zookeeper"} {
		before := srv.Dump()
		if got, err := c.Sync(p); got != p || err != nil {
			t.Errorf("Sync(%q) = %q, %v", p, got, err)
		}
		if srv.Dump() != before {
			t.Errorf("Sync(%q) changed the server", p)
		}
	}
}
