package model

import (
	"bytes"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var statEpoch = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

func checkStat(t *testing.T, what string, got, want zk.Stat) {
	t.Helper()
	if got != want {
		t.Fatalf("%s stat\n got %+v\nwant %+v", what, got, want)
	}
}

// TestStats checks the stat of nodes after each kind of write (SEMANTICS.md §2). The clock starts at statEpoch
// and only Advance moves it, so ctime and mtime are exact.
func TestStats(t *testing.T) {
	ms := func(d time.Duration) int64 { return statEpoch.Add(d).UnixMilli() }
	cases := []struct {
		name string
		run  func(t *testing.T, srv *Server, c *Conn)
	}{
		{"a_fresh_node_has_czxid_mzxid_pzxid_equal_and_ctime_mtime_from_the_virtual_clock", func(t *testing.T, srv *Server, c *Conn) {
			srv.Advance(5 * time.Second)
			mustCreate(t, c, "/n", []byte("abc"), 0)
			z := lastZxid(srv)
			checkStat(t, "/n", mustStat(t, c, "/n"), zk.Stat{Czxid: z, Mzxid: z, Pzxid: z, Ctime: ms(5 * time.Second), Mtime: ms(5 * time.Second), DataLength: 3})
		}},
		{"creating_a_child_moves_the_parents_cversion_numChildren_and_pzxid_only", func(t *testing.T, srv *Server, c *Conn) {
			mustCreate(t, c, "/p", []byte("xy"), 0)
			before := mustStat(t, c, "/p")
			srv.Advance(time.Second)
			mustCreate(t, c, "/p/a", nil, 0)
			want := before
			want.Cversion, want.NumChildren, want.Pzxid = 1, 1, mustStat(t, c, "/p/a").Czxid
			checkStat(t, "parent", mustStat(t, c, "/p"), want)
		}},
		{"deleting_a_child_moves_the_reported_cversion_numChildren_and_pzxid_only", func(t *testing.T, srv *Server, c *Conn) {
			mustCreate(t, c, "/p", nil, 0)
			mustCreate(t, c, "/p/a", nil, 0)
			mustCreate(t, c, "/p/b", nil, 0)
			before := mustStat(t, c, "/p")
			srv.Advance(time.Second)
			if err := c.Delete("/p/a", -1); err != nil {
				t.Fatal(err)
			}
			want := before
			want.Cversion, want.NumChildren, want.Pzxid = 3, 1, lastZxid(srv)
			checkStat(t, "parent", mustStat(t, c, "/p"), want)
		}},
		{"the_reported_cversion_is_creates_plus_deletes", func(t *testing.T, srv *Server, c *Conn) {
			mustCreate(t, c, "/p", nil, 0)
			for _, step := range []struct {
				create      bool
				name        string
				cv, nchild  int32
				description string
			}{
				{true, "s-", 1, 1, "create seq"},
				{true, "a", 2, 2, "create plain"},
				{true, "s-", 3, 3, "create seq"},
				{false, "a", 4, 2, "delete plain"},
				{false, "s-0000000000", 5, 1, "delete seq"},
			} {
				if step.create {
					flags := int32(0)
					if step.name == "s-" {
						flags = zk.FlagSequence
					}
					mustCreate(t, c, "/p/"+step.name, nil, flags)
				} else if err := c.Delete("/p/"+step.name, -1); err != nil {
					t.Fatal(err)
				}
				st := mustStat(t, c, "/p")
				if st.Cversion != step.cv || st.NumChildren != step.nchild {
					t.Fatalf("after %s: cversion=%d numChildren=%d, want %d %d", step.description, st.Cversion, st.NumChildren, step.cv, step.nchild)
				}
			}
		}},
		{"grandchild_creates_and_deletes_leave_the_grandparent_alone", func(t *testing.T, srv *Server, c *Conn) {
			mustCreate(t, c, "/g", nil, 0)
			mustCreate(t, c, "/g/p", nil, 0)
			before := mustStat(t, c, "/g")
			mustCreate(t, c, "/g/p/x", nil, 0)
			if err := c.Delete("/g/p/x", -1); err != nil {
				t.Fatal(err)
			}
			checkStat(t, "grandparent", mustStat(t, c, "/g"), before)
		}},
		{"setData_moves_version_mzxid_mtime_and_dataLength_only", func(t *testing.T, srv *Server, c *Conn) {
			mustCreate(t, c, "/p", nil, 0)
			mustCreate(t, c, "/p/n", []byte("abc"), 0)
			mustCreate(t, c, "/p/n/kid", nil, 0)
			before, parentBefore := mustStat(t, c, "/p/n"), mustStat(t, c, "/p")
			srv.Advance(3 * time.Second)
			got, err := c.Set("/p/n", []byte("hello"), 0)
			if err != nil {
				t.Fatal(err)
			}
			want := before
			want.Version, want.Mzxid, want.Mtime, want.DataLength = 1, lastZxid(srv), ms(3*time.Second), 5
			checkStat(t, "Set's result", *got, want)
			checkStat(t, "Get after Set", mustStat(t, c, "/p/n"), want)
			checkStat(t, "parent", mustStat(t, c, "/p"), parentBefore)
		}},
		{"setting_the_same_bytes_again_still_moves_version_and_mzxid", func(t *testing.T, srv *Server, c *Conn) {
			mustCreate(t, c, "/n", []byte("same"), 0)
			var last zk.Stat
			for i := range 3 {
				st, err := c.Set("/n", []byte("same"), -1)
				if err != nil {
					t.Fatal(err)
				}
				if st.Version != int32(i+1) || st.Mzxid != lastZxid(srv) || st.Mzxid == last.Mzxid {
					t.Fatalf("Set %d: version=%d mzxid=%d (last %d, server %d)", i, st.Version, st.Mzxid, last.Mzxid, lastZxid(srv))
				}
				last = *st
			}
		}},
		{"Get_Exists_and_Children_report_the_same_stat", func(t *testing.T, srv *Server, c *Conn) {
			mustCreate(t, c, "/n", []byte("d"), 0)
			mustCreate(t, c, "/n/k", nil, 0)
			_, g, _ := c.Get("/n")
			_, e, _ := c.Exists("/n")
			_, ch, _ := c.Children("/n")
			_, gw, _, _ := c.GetW("/n")
			_, ew, _, _ := c.ExistsW("/n")
			_, cw, _, _ := c.ChildrenW("/n")
			for i, st := range []*zk.Stat{e, ch, gw, ew, cw} {
				checkStat(t, []string{"Exists", "Children", "GetW", "ExistsW", "ChildrenW"}[i], *st, *g)
			}
		}},
		{"an_ephemerals_owner_is_its_session_and_a_persistent_nodes_is_0", func(t *testing.T, srv *Server, c *Conn) {
			mustCreate(t, c, "/e", nil, zk.FlagEphemeral)
			mustCreate(t, c, "/s-", nil, zk.FlagEphemeralSequential)
			mustCreate(t, c, "/p", nil, zk.FlagSequence)
			for path, want := range map[string]int64{"/e": c.SessionID(), "/s-0000000001": c.SessionID(), "/p0000000002": 0} {
				if got := mustStat(t, c, path).EphemeralOwner; got != want {
					t.Errorf("%s ephemeralOwner=%#x, want %#x", path, got, want)
				}
			}
		}},
		{"nil_data_reads_back_nil_and_empty_data_reads_back_empty", func(t *testing.T, srv *Server, c *Conn) {
			mustCreate(t, c, "/n", nil, 0)
			if d, st, _ := c.Get("/n"); d != nil || st.DataLength != 0 {
				t.Fatalf("after Create(nil): data=%#v dataLength=%d, want nil and 0", d, st.DataLength)
			}
			if _, err := c.Set("/n", []byte{}, -1); err != nil {
				t.Fatal(err)
			}
			if d, st, _ := c.Get("/n"); d == nil || len(d) != 0 || st.DataLength != 0 {
				t.Fatalf("after Set([]byte{}): data=%#v dataLength=%d, want []byte{} and 0", d, st.DataLength)
			}
		}},
		{"data_is_copied_in_and_out", func(t *testing.T, srv *Server, c *Conn) {
			in := []byte("abc")
			mustCreate(t, c, "/n", in, 0)
			in[0] = 'X'
			out, _, _ := c.Get("/n")
			out[1] = 'Y'
			if again, _, _ := c.Get("/n"); !bytes.Equal(again, []byte("abc")) {
				t.Fatalf("stored data changed through a caller's slice: %q", again)
			}
		}},
		{"the_root_has_zero_stats_except_pzxid_and_the_children", func(t *testing.T, srv *Server, c *Conn) {
			mustCreate(t, c, "/a", nil, 0)
			z := lastZxid(srv)
			st := mustStat(t, c, "/")
			if st.Czxid != 0 || st.Mzxid != 0 || st.Ctime != 0 || st.Mtime != 0 || st.Version != 0 || st.Aversion != 0 || st.EphemeralOwner != 0 {
				t.Fatalf("root stat %+v, want zero czxid/mzxid/ctime/mtime/version/aversion/owner", st)
			}
			if st.Pzxid != z || st.NumChildren != 2 {
				t.Fatalf("root pzxid=%d numChildren=%d, want %d and 2", st.Pzxid, st.NumChildren, z)
			}
			if got := sortedChildren(t, c, "/"); len(got) != 2 || got[0] != "a" || got[1] != "zookeeper" {
				t.Fatalf("root children %v, want [a zookeeper]", got)
			}
			if _, err := c.Set("/", []byte("r"), -1); err != nil {
				t.Fatalf("Set(/): %v", err)
			}
		}},
		{"zookeeper_has_config_and_quota_and_cversion_-2", func(t *testing.T, srv *Server, c *Conn) {
			d, st, err := c.Get("/zookeeper")
			if err != nil || d == nil || len(d) != 0 {
				t.Fatalf("Get(/zookeeper) = %#v, %v; want empty non-nil data", d, err)
			}
			checkStat(t, "/zookeeper", *st, zk.Stat{Cversion: -2, NumChildren: 2})
			if got := sortedChildren(t, c, "/zookeeper"); len(got) != 2 || got[0] != "config" || got[1] != "quota" {
				t.Fatalf("/zookeeper children %v", got)
			}
			checkStat(t, "/zookeeper/config", mustStat(t, c, "/zookeeper/config"), zk.Stat{Aversion: -1})
			checkStat(t, "/zookeeper/quota", mustStat(t, c, "/zookeeper/quota"), zk.Stat{})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(WithStartTime(statEpoch))
			c, _ := connect(t, srv)
			tc.run(t, srv, c)
		})
	}
}

// TestZxids checks which calls spend a zxid (SEMANTICS.md §2 and §6): every write, failed or not, spends
// exactly one; reads, Sync and calls refused by the client spend none.
func TestZxids(t *testing.T) {
	cases := []struct {
		name  string
		spend int64
		call  func(c *Conn) error
	}{
		{"a_successful_create_spends_1", 1, func(c *Conn) error { _, err := c.Create("/new", nil, 0, worldACL); return err }},
		{"a_create_failing_with_NodeExists_spends_1", 1, func(c *Conn) error { return wantErr(c.Create("/n", nil, 0, worldACL))(zk.ErrNodeExists) }},
		{"a_create_failing_with_NoNode_spends_1", 1, func(c *Conn) error { return wantErr(c.Create("/x/y", nil, 0, worldACL))(zk.ErrNoNode) }},
		{"a_create_failing_with_InvalidACL_spends_1", 1, func(c *Conn) error { return wantErr(c.Create("/x", nil, 0, nil))(zk.ErrInvalidACL) }},
		{"a_create_under_an_ephemeral_spends_1", 1, func(c *Conn) error {
			return wantErr(c.Create("/eph/x", nil, 0, worldACL))(zk.ErrNoChildrenForEphemerals)
		}},
		{"a_create_of_the_root_spends_1", 1, func(c *Conn) error { return wantErr(c.Create("/", nil, 0, worldACL))(zk.ErrNodeExists) }},
		{"a_delete_failing_with_BadVersion_spends_1", 1, func(c *Conn) error { return wantErr("", c.Delete("/n", 7))(zk.ErrBadVersion) }},
		{"a_delete_failing_with_NotEmpty_spends_1", 1, func(c *Conn) error { return wantErr("", c.Delete("/full", -1))(zk.ErrNotEmpty) }},
		{"a_delete_of_the_root_spends_1", 1, func(c *Conn) error { return wantErr("", c.Delete("/", -1))(zk.ErrBadArguments) }},
		{"a_set_failing_with_NoNode_spends_1", 1, func(c *Conn) error { _, err := c.Set("/x", nil, -1); return wantErr("", err)(zk.ErrNoNode) }},
		{"a_successful_multi_spends_1_for_all_its_ops", 1, func(c *Conn) error {
			_, err := c.Multi(&zk.CreateRequest{Path: "/m1", Acl: worldACL}, &zk.CreateRequest{Path: "/m2", Acl: worldACL}, &zk.SetDataRequest{Path: "/n", Version: -1})
			return err
		}},
		{"a_failed_multi_spends_1", 1, func(c *Conn) error {
			_, err := c.Multi(&zk.CreateRequest{Path: "/m1", Acl: worldACL}, &zk.CheckVersionRequest{Path: "/n", Version: 9})
			return wantErr("", err)(zk.ErrBadVersion)
		}},
		{"a_check_only_multi_spends_1", 1, func(c *Conn) error { _, err := c.Multi(&zk.CheckVersionRequest{Path: "/n", Version: -1}); return err }},
		{"an_empty_multi_spends_1", 1, func(c *Conn) error { _, err := c.Multi(); return err }},
		{"reads_spend_nothing", 0, func(c *Conn) error {
			c.Get("/n")
			c.Exists("/missing")
			c.Children("/")
			c.GetW("/n")
			c.ExistsW("/missing")
			c.ChildrenW("/n")
			return nil
		}},
		{"Sync_spends_nothing", 0, func(c *Conn) error { _, err := c.Sync("/n"); return err }},
		{"a_call_the_client_refuses_spends_nothing", 0, func(c *Conn) error {
			_, err := c.Create("bad", nil, 0, worldACL)
			return wantErr("", err)(zk.ErrInvalidPath)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer()
			c, _ := connect(t, srv)
			mustCreate(t, c, "/n", nil, 0)
			mustCreate(t, c, "/full", nil, 0)
			mustCreate(t, c, "/full/kid", nil, 0)
			mustCreate(t, c, "/eph", nil, zk.FlagEphemeral)
			before := lastZxid(srv)
			if err := tc.call(c); err != nil {
				t.Fatal(err)
			}
			if got := lastZxid(srv) - before; got != tc.spend {
				t.Fatalf("spent %d zxids, want %d", got, tc.spend)
			}
		})
	}
	t.Run("creating_and_closing_a_session_spend_1_each", func(t *testing.T) {
		srv := NewServer()
		z0 := lastZxid(srv)
		c, _ := connect(t, srv)
		if got := lastZxid(srv) - z0; got != 1 {
			t.Fatalf("Connect spent %d zxids, want 1", got)
		}
		mustCreate(t, c, "/e1", nil, zk.FlagEphemeral)
		mustCreate(t, c, "/e2", nil, zk.FlagEphemeral)
		z1 := lastZxid(srv)
		c.Close()
		if got := lastZxid(srv) - z1; got != 1 {
			t.Fatalf("Close spent %d zxids, want 1 (its ephemerals go in the same transaction)", got)
		}
	})
	t.Run("a_write_replys_zxid_is_its_own_and_the_stat_says_so", func(t *testing.T) {
		srv := NewServer()
		c, _ := connect(t, srv)
		mustCreate(t, c, "/a", nil, 0)
		st1 := mustStat(t, c, "/a")
		c.Create("/a", nil, 0, worldACL) // fails, spends one
		mustCreate(t, c, "/b", nil, 0)
		if st2 := mustStat(t, c, "/b"); st2.Czxid != st1.Czxid+2 {
			t.Fatalf("czxids %d then %d around a failed create, want a gap of 2", st1.Czxid, st2.Czxid)
		}
	})
}

// wantErr turns "the call failed with exactly target" into a nil error, and anything else into a descriptive one.
func wantErr(_ string, err error) func(target error) error {
	return func(target error) error {
		if isErr(err, target) {
			return nil
		}
		return &unexpectedErr{got: err, want: target}
	}
}

type unexpectedErr struct{ got, want error }

func (e *unexpectedErr) Error() string {
	return "got error " + errString(e.got) + ", want " + errString(e.want)
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
