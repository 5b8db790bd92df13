package model

import (
	"math"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestSequenceSuffix checks how sequential names are numbered (SEMANTICS.md §1): each case prepares the
// parent /p, then creates /p/s- sequentially and expects the name in want.
func TestSequenceSuffix(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, srv *Server, c *Conn)
		want  string
	}{
		{
			name:  "first_child_is_numbered_0_as_%010d",
			setup: func(t *testing.T, srv *Server, c *Conn) {},
			want:  "/p/s-0000000000",
		},
		{
			name: "plain_creates_advance_the_counter",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				mustCreate(t, c, "/p/a", nil, 0)
				mustCreate(t, c, "/p/b", nil, zk.FlagEphemeral)
			},
			want: "/p/s-0000000002",
		},
		{
			name: "deletes_do_not_advance_the_counter",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				mustCreate(t, c, "/p/a", nil, 0)
				if err := c.Delete("/p/a", -1); err != nil {
					t.Fatal(err)
				}
			},
			want: "/p/s-0000000001",
		},
		{
			name: "failed_creates_do_not_advance_the_counter",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				mustCreate(t, c, "/p/a", nil, 0)
				mustCreate(t, c, "/p/e", nil, zk.FlagEphemeral)
				if _, err := c.Create("/p/a", nil, 0, worldACL); err != zk.ErrNodeExists {
					t.Fatalf("create existing: %v", err)
				}
				if _, err := c.Create("/p/missing/x", nil, 0, worldACL); err != zk.ErrNoNode {
					t.Fatalf("create under missing intermediate: %v", err)
				}
				if _, err := c.Create("/p/e/x", nil, 0, worldACL); err != zk.ErrNoChildrenForEphemerals {
					t.Fatalf("create under ephemeral: %v", err)
				}
				if _, err := c.Create("/p/z", nil, 0, nil); err != zk.ErrInvalidACL {
					t.Fatalf("create with no ACL: %v", err)
				}
			},
			want: "/p/s-0000000002",
		},
		{
			name: "setData_on_the_parent_does_not_advance_the_counter",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				if _, err := c.Set("/p", []byte("x"), -1); err != nil {
					t.Fatal(err)
				}
			},
			want: "/p/s-0000000000",
		},
		{
			name: "grandchild_creates_do_not_advance_the_counter",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				mustCreate(t, c, "/p/a", nil, 0)
				mustCreate(t, c, "/p/a/x", nil, 0)
				mustCreate(t, c, "/p/a/y", nil, zk.FlagSequence)
			},
			want: "/p/s-0000000001",
		},
		{
			name: "all_prefixes_share_one_counter",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				if got := mustCreate(t, c, "/p/other-", nil, zk.FlagSequence); got != "/p/other-0000000000" {
					t.Fatalf("other- got %s", got)
				}
				if got := mustCreate(t, c, "/p/", nil, zk.FlagSequence); got != "/p/0000000001" {
					t.Fatalf("empty prefix got %s", got)
				}
			},
			want: "/p/s-0000000002",
		},
		{
			name: "ephemeral_sequential_uses_the_same_counter",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				if got := mustCreate(t, c, "/p/e-", nil, zk.FlagEphemeralSequential); got != "/p/e-0000000000" {
					t.Fatalf("e- got %s", got)
				}
			},
			want: "/p/s-0000000001",
		},
		{
			name: "each_create_in_a_successful_multi_advances_the_counter",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				res, err := c.Multi(
					&zk.CreateRequest{Path: "/p/m1", Acl: worldACL},
					&zk.CreateRequest{Path: "/p/m2-", Acl: worldACL, Flags: zk.FlagSequence},
					&zk.CreateRequest{Path: "/p/m2-", Acl: worldACL, Flags: zk.FlagSequence},
				)
				if err != nil {
					t.Fatal(err)
				}
				if res[1].String != "/p/m2-0000000001" || res[2].String != "/p/m2-0000000002" {
					t.Fatalf("multi names %q %q", res[1].String, res[2].String)
				}
			},
			want: "/p/s-0000000003",
		},
		{
			name: "a_failed_multi_rolls_the_counter_back",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				_, err := c.Multi(
					&zk.CreateRequest{Path: "/p/m-", Acl: worldACL, Flags: zk.FlagSequence},
					&zk.CreateRequest{Path: "/p/m-", Acl: worldACL, Flags: zk.FlagSequence},
					&zk.DeleteRequest{Path: "/p/missing", Version: -1},
				)
				if err != zk.ErrNoNode {
					t.Fatalf("multi: %v", err)
				}
			},
			want: "/p/s-0000000000",
		},
		{
			name: "the_counter_is_the_parents_not_the_servers",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				mustCreate(t, c, "/q", nil, 0)
				mustCreate(t, c, "/q/a", nil, zk.FlagSequence)
				mustCreate(t, c, "/q/b", nil, 0)
			},
			want: "/p/s-0000000000",
		},
		{
			name: "a_recreated_parent_starts_again_at_0",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				mustCreate(t, c, "/p/a", nil, 0)
				for _, p := range []string{"/p/a", "/p"} {
					if err := c.Delete(p, -1); err != nil {
						t.Fatal(err)
					}
				}
				mustCreate(t, c, "/p", nil, 0)
			},
			want: "/p/s-0000000000",
		},
		{
			name: "SetSequence_sets_the_next_number",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				if err := srv.SetSequence("/p", 41); err != nil {
					t.Fatal(err)
				}
			},
			want: "/p/s-0000000041",
		},
		{
			name: "the_counter_wraps_like_a_Java_int_to_-2147483648",
			setup: func(t *testing.T, srv *Server, c *Conn) {
				if err := srv.SetSequence("/p", math.MaxInt32); err != nil {
					t.Fatal(err)
				}
				if got := mustCreate(t, c, "/p/s-", nil, zk.FlagSequence); got != "/p/s-2147483647" {
					t.Fatalf("at MaxInt32 got %s", got)
				}
			},
			want: "/p/s--2147483648",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer()
			c, _ := connect(t, srv)
			mustCreate(t, c, "/p", nil, 0)
			tc.setup(t, srv, c)
			if got := mustCreate(t, c, "/p/s-", nil, zk.FlagSequence); got != tc.want {
				t.Fatalf("sequential create got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestSequenceCollision: a plain node that already has the next sequential name makes every sequential
// create with that prefix fail with ErrNodeExists without moving the counter; another prefix gets the number.
func TestSequenceCollision(t *testing.T) {
	srv := NewServer()
	c, _ := connect(t, srv)
	mustCreate(t, c, "/p", nil, 0)
	mustCreate(t, c, "/p/c-0000000001", nil, 0) // takes number 0, so the counter is 1
	for range 3 {
		if _, err := c.Create("/p/c-", nil, zk.FlagSequence, worldACL); err != zk.ErrNodeExists {
			t.Fatalf("sequential create onto an existing name: %v, want zk.ErrNodeExists", err)
		}
	}
	if got := mustCreate(t, c, "/p/e-", nil, zk.FlagEphemeralSequential); got != "/p/e-0000000001" {
		t.Fatalf("other prefix got %s, want /p/e-0000000001", got)
	}
}

// TestSetSequenceErrors: SetSequence refuses invalid and missing paths with errors that say so.
func TestSetSequenceErrors(t *testing.T) {
	srv := NewServer()
	if err := srv.SetSequence("nope", 1); !isErr(err, zk.ErrInvalidPath) {
		t.Errorf("SetSequence(relative): %v, want zk.ErrInvalidPath", err)
	}
	if err := srv.SetSequence("/missing", 1); !isErr(err, zk.ErrNoNode) {
		t.Errorf("SetSequence(missing): %v, want zk.ErrNoNode", err)
	}
}
