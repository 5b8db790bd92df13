package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// This file is the property that a refused operation changes nothing (measured on ZooKeeper 3.8: every
// request the server answers with an error leaves the tree, the ACLs, the sessions and the ensemble's
// configuration as they were), and the rules for stale versions on every call that takes one.

// treeState is what a refused operation must leave alone, as a session reads it: every node under a path with
// its data, stat and ACL, and /zookeeper/config with its stat.
type treeState struct {
	nodes  []string // one line per node, in path order
	config string
}

// readTreeState reads the state under root through c (after a sync: c sees every write before the call).
func readTreeState(t *testing.T, c *aclSession, root string) treeState {
	t.Helper()
	mustSync(t, c, root)
	var st treeState
	var walk func(path string)
	walk = func(path string) {
		data, stat, err := c.Get(path)
		if err != nil {
			t.Fatalf("read the tree: Get(%q): %v", path, err)
		}
		acl, _, err := c.GetACL(path)
		if err != nil {
			t.Fatalf("read the tree: GetACL(%q): %v", path, err)
		}
		st.nodes = append(st.nodes, fmt.Sprintf("%s data=%q stat=%s acl=%s", path, data, formatStat(*stat), formatACL(acl)))
		children, _, err := c.Children(path)
		if err != nil {
			t.Fatalf("read the tree: Children(%q): %v", path, err)
		}
		slices.Sort(children)
		for _, child := range children {
			walk(path + "/" + child)
		}
	}
	walk(root)
	mustSync(t, c, "/zookeeper/config")
	data, stat, err := c.Get("/zookeeper/config")
	if err != nil {
		t.Fatalf("read the tree: Get(/zookeeper/config): %v", err)
	}
	st.config = fmt.Sprintf("%q %s", data, formatStat(*stat))
	return st
}

// diff describes how after differs from st ("" when it does not).
func (st treeState) diff(after treeState) string {
	var b strings.Builder
	if !slices.Equal(st.nodes, after.nodes) {
		fmt.Fprintf(&b, "the tree was\n\t%s\nand is\n\t%s\n", strings.Join(st.nodes, "\n\t"), strings.Join(after.nodes, "\n\t"))
	}
	if st.config != after.config {
		fmt.Fprintf(&b, "/zookeeper/config was %s and is %s\n", st.config, after.config)
	}
	return b.String()
}

// refusedRules are the rules of refused operations and stale versions.
var refusedRules = []rule{
	{"refused/every refused operation leaves the tree, the ACLs, the sessions and the configuration as they were", func(t *testing.T, h *harness) {
		owner, other, anon := h.aclConnect(aclOwner), h.aclConnect(aclOther), h.aclConnect([2]string{})
		p, e, g, s := h.path("p"), h.path("e"), h.path("g"), h.path("s")
		mustCreate(t, owner, p, []byte("p"), zk.FlagPersistent)
		mustCreate(t, owner, p+"/c", []byte("c"), zk.FlagPersistent)
		mustCreate(t, owner, e, []byte("e"), zk.FlagEphemeral)
		mustCreate(t, owner, s, nil, zk.FlagPersistent)
		mustCreate(t, owner, s+"/q-", nil, zk.FlagSequence)
		h.guarded(owner, g, []byte("g"), worldEntry(zk.PermRead))
		mustCreate(t, owner, g+"/k", []byte("k"), zk.FlagPersistent)
		before := readTreeState(t, owner, h.base)
		ids := map[*aclSession]int64{owner: owner.SessionID(), other: other.SessionID(), anon: anon.SessionID()}

		badACL := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "no-colon"}}
		stale := func(path string) int32 { return mustStat(t, owner, path).Version + 1 }
		for _, a := range []attempt{
			{"Create of an existing node", func() error { _, err := anon.Create(p, nil, 0, openACL); return err }, zk.ErrNodeExists},
			{"Create under a missing parent", func() error { _, err := anon.Create(h.path("missing/x"), nil, 0, openACL); return err }, zk.ErrNoNode},
			{"Create under an ephemeral", func() error { _, err := anon.Create(e+"/x", nil, 0, openACL); return err }, zk.ErrNoChildrenForEphemerals},
			{"Create without CREATE on the parent", func() error { _, err := anon.Create(g+"/x", nil, 0, openACL); return err }, zk.ErrNoAuth},
			{"Create with a malformed digest ACL", func() error { _, err := anon.Create(p+"/y", nil, 0, badACL); return err }, zk.ErrInvalidACL},
			{"Create with an empty ACL", func() error { _, err := anon.Create(p+"/y", nil, 0, []zk.ACL{}); return err }, zk.ErrInvalidACL},
			{"sequential Create with a malformed ACL (the parent's counter stays)", func() error {
				_, err := anon.Create(s+"/q-", nil, zk.FlagSequence, badACL)
				return err
			}, zk.ErrInvalidACL},
			{"Set with a stale version", func() error { _, err := anon.Set(p, []byte("x"), stale(p)); return err }, zk.ErrBadVersion},
			{"Set of a missing node", func() error { _, err := anon.Set(h.path("missing"), []byte("x"), -1); return err }, zk.ErrNoNode},
			{"Set without WRITE", func() error { _, err := anon.Set(g, []byte("x"), -1); return err }, zk.ErrNoAuth},
			{"another digest user's Set without WRITE", func() error { _, err := other.Set(g, []byte("x"), -1); return err }, zk.ErrNoAuth},
			{"Set of /zookeeper/config", func() error { _, err := anon.Set("/zookeeper/config", []byte("x"), -1); return err }, zk.ErrNoAuth},
			{"Delete of a node with children", func() error { return anon.Delete(p, -1) }, zk.ErrNotEmpty},
			{"Delete with a stale version", func() error { return anon.Delete(p+"/c", stale(p+"/c")) }, zk.ErrBadVersion},
			{"Delete without DELETE on the parent", func() error { return anon.Delete(g+"/k", -1) }, zk.ErrNoAuth},
			{"Delete of a missing node", func() error { return anon.Delete(h.path("missing"), -1) }, zk.ErrNoNode},
			{"SetACL with a stale ACL version", func() error { _, err := anon.SetACL(p, openACL, 3); return err }, zk.ErrBadVersion},
			{"SetACL without ADMIN", func() error { _, err := anon.SetACL(g, openACL, -1); return err }, zk.ErrNoAuth},
			{"SetACL with a malformed ACL", func() error { _, err := anon.SetACL(p, badACL, -1); return err }, zk.ErrInvalidACL},
			{"SetACL of a missing node", func() error { _, err := anon.SetACL(h.path("missing"), openACL, -1); return err }, zk.ErrNoNode},
			{"Multi whose set has a stale version, after a create", func() error {
				_, err := anon.Multi(&zk.CreateRequest{Path: p + "/m1", Acl: openACL}, &zk.SetDataRequest{Path: p, Data: []byte("x"), Version: stale(p)})
				return err
			}, zk.ErrBadVersion},
			{"Multi whose check has a stale version, after a create and a set", func() error {
				_, err := anon.Multi(&zk.CreateRequest{Path: p + "/m2", Acl: openACL}, &zk.SetDataRequest{Path: p, Data: []byte("y"), Version: -1},
					&zk.CheckVersionRequest{Path: p + "/c", Version: stale(p + "/c")})
				return err
			}, zk.ErrBadVersion},
			{"Multi whose delete has a stale version, after a set", func() error {
				_, err := anon.Multi(&zk.SetDataRequest{Path: p, Data: []byte("z"), Version: -1}, &zk.DeleteRequest{Path: p + "/c", Version: stale(p + "/c")})
				return err
			}, zk.ErrBadVersion},
			{"Multi creating a node twice", func() error {
				_, err := anon.Multi(&zk.CreateRequest{Path: p + "/m3", Acl: openACL}, &zk.CreateRequest{Path: p + "/m3", Acl: openACL})
				return err
			}, zk.ErrNodeExists},
			{"Multi with a sequential create, then a create under a missing parent (the counter stays)", func() error {
				_, err := anon.Multi(&zk.CreateRequest{Path: s + "/q-", Acl: openACL, Flags: zk.FlagSequence},
					&zk.CreateRequest{Path: h.path("missing/x"), Acl: openACL})
				return err
			}, zk.ErrNoNode},
			{"Multi deleting an ephemeral, then a set without WRITE", func() error {
				_, err := anon.Multi(&zk.DeleteRequest{Path: e, Version: -1}, &zk.SetDataRequest{Path: g, Data: []byte("x"), Version: -1})
				return err
			}, zk.ErrNoAuth},
		} {
			a.check(t)
			if d := before.diff(readTreeState(t, owner, h.base)); d != "" {
				t.Fatalf("%s was refused, as it should be, but changed the state:\n%s", a.name, d)
			}
			for s, id := range ids {
				if s.SessionID() != id || s.State() != zk.StateHasSession {
					t.Fatalf("after %s: a session is %#x in state %v, want %#x with its session", a.name, s.SessionID(), s.State(), id)
				}
			}
		}
	}},
	{"refused/every versioned call refuses a stale version with BadVersion; -1 and the current version pass", func(t *testing.T, h *harness) {
		c := h.aclConnect([2]string{})
		n := h.path("n")
		mustCreate(t, c, n, []byte("a"), zk.FlagPersistent)
		mustCreate(t, c, n+"/leaf", nil, zk.FlagPersistent)
		// Every version at 1: both a later and an earlier one are stale.
		mustSet(t, c, n, []byte("b"))
		mustSet(t, c, n+"/leaf", []byte("b"))
		if _, err := c.SetACL(n, openACL, -1); err != nil {
			t.Fatalf("SetACL(%q): %v", n, err)
		}
		st, leaf := mustStat(t, c, n), mustStat(t, c, n+"/leaf")
		if st.Version != 1 || st.Aversion != 1 || leaf.Version != 1 {
			t.Fatalf("after one Set and one SetACL: %s, leaf %s; want version and aversion 1", formatStat(st), formatStat(leaf))
		}
		for _, v := range []int32{2, 0, -2} {
			for _, a := range []attempt{
				{fmt.Sprintf("Set(version %d of 1)", v), func() error { _, err := c.Set(n, []byte("x"), v); return err }, zk.ErrBadVersion},
				{fmt.Sprintf("SetACL(ACL version %d of 1)", v), func() error { _, err := c.SetACL(n, openACL, v); return err }, zk.ErrBadVersion},
				{fmt.Sprintf("Multi(check version %d of 1)", v), func() error {
					_, err := c.Multi(&zk.CheckVersionRequest{Path: n, Version: v})
					return err
				}, zk.ErrBadVersion},
				{fmt.Sprintf("Delete(version %d of 1)", v), func() error { return c.Delete(n+"/leaf", v) }, zk.ErrBadVersion},
			} {
				a.check(t)
			}
		}
		if got, gotLeaf := mustStat(t, c, n), mustStat(t, c, n+"/leaf"); got != st || gotLeaf != leaf {
			t.Fatalf("the refused calls changed the stats to %s and %s, were %s and %s", formatStat(got), formatStat(gotLeaf), formatStat(st), formatStat(leaf))
		}
		for _, v := range []int32{-1, 1} {
			if _, err := c.Multi(&zk.CheckVersionRequest{Path: n, Version: v}); err != nil {
				t.Fatalf("Multi(check version %d): %v", v, err)
			}
		}
		acl, err := c.SetACL(n, openACL, -1)
		if err != nil {
			t.Fatalf("SetACL(ACL version -1): %v", err)
		}
		if _, err := c.SetACL(n, openACL, acl.Aversion); err != nil {
			t.Fatalf("SetACL(the current ACL version %d): %v", acl.Aversion, err)
		}
		next, err := c.Set(n, []byte("c"), -1)
		if err != nil {
			t.Fatalf("Set(version -1): %v", err)
		}
		if _, err := c.Set(n, []byte("d"), next.Version); err != nil {
			t.Fatalf("Set(the current version %d): %v", next.Version, err)
		}
		if err := c.Delete(n+"/leaf", 1); err != nil {
			t.Fatalf("Delete(the current version 1): %v", err)
		}
	}},
}
