package conformance

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// ttlRules returns the rules about TTL nodes and containers that target's configuration allows: TTL nodes
// need extended types on the server (their refusal needs them off), and what the container manager deletes
// needs Advance and the server's check interval.
func ttlRules(target Target) []rule {
	rules := []rule{ttlClientRule}
	timed := target.Advance != nil && target.ContainerCheckInterval > 0
	if target.ExtendedTypes {
		rules = append(rules, ttlEnabledRules...)
		if timed {
			rules = append(rules, ttlTimedRules...)
		}
	} else {
		rules = append(rules, ttlDisabledRule)
	}
	if timed {
		rules = append(rules, containerRules...)
	}
	return rules
}

// advance lets d pass on the server's clock (Target.Advance).
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.target.Advance(h.t, d)
}

// passes returns the time n container-manager passes take. The rules wait four passes after a node becomes
// deletable: one pass deletes it, the others are margin for a real server's timer.
func (h *harness) passes(n int) time.Duration {
	return time.Duration(n) * h.target.ContainerCheckInterval
}

// errUnimplementedText and errMarshallingText are how go-zookeeper reports ZooKeeper's codes -6 and -5, for
// which it has no named errors.
const (
	errUnimplementedText = "unknown error: -6"
	errMarshallingText   = "unknown error: -5"
)

func expectErrText(t *testing.T, err error, want, what string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Fatalf("%s: got error %v, want %q", what, err, want)
	}
}

// expectPresent checks (after a Sync) that path exists and returns its stat.
func expectPresent(t *testing.T, c Conn, path, what string) zk.Stat {
	t.Helper()
	mustSync(t, c, path)
	ok, st, err := c.Exists(path)
	if err != nil || !ok {
		t.Fatalf("%s: Exists(%q) = %v, %v; want it present", what, path, ok, err)
	}
	return *st
}

// mark creates a marker node and returns its stat: its czxid is the zxid of the last transaction before the
// rule's next one, its ctime the server's clock now. A rule takes what it needs to know about a node that the
// server may delete at any moment (its container and TTL manager runs on its own timer) from a marker.
func mark(t *testing.T, c Conn, marker string) zk.Stat {
	t.Helper()
	mustCreate(t, c, marker, nil, zk.FlagPersistent)
	return mustStat(t, c, marker)
}

// expectZxidGap creates a marker node and checks that exactly gap zxids were spent since zxid (the marker's
// own included).
func expectZxidGap(t *testing.T, c Conn, marker string, zxid int64, gap int64, what string) {
	t.Helper()
	if got := mark(t, c, marker).Czxid; got != zxid+gap {
		t.Fatalf("%s: the next create got zxid %#x, %#x after %#x; want %d transactions", what, got, got-zxid, zxid, gap)
	}
}

var ttlClientRule = rule{"ttl/the client checks the modes of CreateTTL and CreateContainer before sending", func(t *testing.T, h *harness) {
	c := h.connect()
	for _, flags := range []int32{zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential, zk.FlagContainer} {
		_, err := c.CreateTTL(h.path("t"), nil, flags, openACL, time.Hour)
		expectErr(t, err, zk.ErrInvalidFlags, fmt.Sprintf("CreateTTL with flags %d", flags))
	}
	for _, flags := range []int32{zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential, zk.FlagTTL, zk.FlagPersistentSequentialWithTTL} {
		_, err := c.CreateContainer(h.path("t"), nil, flags, openACL)
		expectErr(t, err, zk.ErrInvalidFlags, fmt.Sprintf("CreateContainer with flags %d", flags))
	}
	_, err := c.CreateTTL(h.path("t"), nil, 7, openACL, time.Hour)
	expectErrText(t, err, "invalid flag value: [7]", "CreateTTL with flags 7")
	_, err = c.CreateContainer(h.path("t"), nil, -1, openACL)
	expectErrText(t, err, "invalid flag value: [-1]", "CreateContainer with flags -1")
	expectAbsent(t, c, h.path("t"))
}}

var ttlDisabledRule = rule{"ttl-disabled/without extended types a TTL create is UNIMPLEMENTED and spends a zxid", func(t *testing.T, h *harness) {
	c := h.connect()
	before := mark(t, c, h.path("m1")).Czxid
	for _, flags := range []int32{zk.FlagTTL, zk.FlagPersistentSequentialWithTTL} {
		_, err := c.CreateTTL(h.path("t"), nil, flags, openACL, time.Hour)
		expectErrText(t, err, errUnimplementedText, fmt.Sprintf("CreateTTL with flags %d", flags))
	}
	expectZxidGap(t, c, h.path("m2"), before, 3, "after two refused TTL creates")
	if children, _, err := c.Children(h.base); err != nil || len(children) != 2 {
		t.Fatalf("Children(base) = %v, %v; want only the two markers", children, err)
	}
}}

var ttlEnabledRules = []rule{
	{"ttl/createTTL makes persistent and sequential TTL nodes whose stat shows ephemeralOwner 0", func(t *testing.T, h *harness) {
		owner, observer := h.connect(), h.connect()
		next := mustStat(t, observer, h.base).Cversion
		if p, err := owner.CreateTTL(h.path("t"), []byte("x"), zk.FlagTTL, openACL, time.Hour); err != nil || p != h.path("t") {
			t.Fatalf("CreateTTL(t) = %q, %v", p, err)
		}
		want := h.path("s-") + sequenceSuffix(next+1)
		if p, err := owner.CreateTTL(h.path("s-"), nil, zk.FlagPersistentSequentialWithTTL, openACL, time.Hour); err != nil || p != want {
			t.Fatalf("CreateTTL(s-, sequential) = %q, %v; want %q", p, err, want)
		}
		// A TTL node may have children, ephemeral ones included.
		mustCreate(t, owner, h.path("t/e"), nil, zk.FlagEphemeral)
		owner.close()
		expectAbsent(t, observer, h.path("t/e"))
		st := expectPresent(t, observer, h.path("t"), "a TTL node after its creator's session closed")
		if st.EphemeralOwner != 0 || st.DataLength != 1 || st.Version != 0 || st.Ctime != st.Mtime || st.Czxid != st.Mzxid {
			t.Fatalf("TTL node's stat %s; want ephemeralOwner 0 and a fresh node's stat", formatStat(st))
		}
		if st := expectPresent(t, observer, want, "a sequential TTL node"); st.EphemeralOwner != 0 {
			t.Fatalf("sequential TTL node's stat %s; want ephemeralOwner 0", formatStat(st))
		}
	}},
	{"ttl/a TTL outside 1 ms to 2^40-1 ms is bad arguments and spends a zxid", func(t *testing.T, h *harness) {
		c := h.connect()
		before := mark(t, c, h.path("m1")).Czxid
		// go-zookeeper sends whole milliseconds: 500µs is 0.
		for _, ttl := range []time.Duration{0, -time.Second, 500 * time.Microsecond, (1 << 40) * time.Millisecond} {
			_, err := c.CreateTTL(h.path("t"), nil, zk.FlagTTL, openACL, ttl)
			expectErr(t, err, zk.ErrBadArguments, fmt.Sprintf("CreateTTL with TTL %v", ttl))
		}
		if _, err := c.CreateTTL(h.path("t"), nil, zk.FlagTTL, openACL, (1<<40-1)*time.Millisecond); err != nil {
			t.Fatalf("CreateTTL with the longest TTL: %v", err)
		}
		expectZxidGap(t, c, h.path("m2"), before, 6, "after four refused TTL creates and one made")
	}},
	{"ttl/a Multi with a TTL create mode cannot be decoded, even with extended types", func(t *testing.T, h *harness) {
		c := h.connect()
		for _, flags := range []int32{zk.FlagTTL, zk.FlagPersistentSequentialWithTTL} {
			res, err := c.Multi(&zk.CreateRequest{Path: h.path("a"), Flags: zk.FlagPersistent, Acl: openACL},
				&zk.CreateRequest{Path: h.path("t"), Flags: flags, Acl: openACL})
			expectErrText(t, err, errMarshallingText, fmt.Sprintf("Multi creating with flags %d", flags))
			if len(res) != 0 {
				t.Fatalf("Multi creating with flags %d: %d responses, want none", flags, len(res))
			}
		}
		expectAbsent(t, c, h.path("a"))
		expectAbsent(t, c, h.path("t"))
	}},
}

var ttlTimedRules = []rule{
	{"ttl/a childless TTL node is deleted once its TTL has passed since mtime, with the watch events and one zxid", func(t *testing.T, h *harness) {
		owner, observer := h.connect(), h.connect()
		retryStalled(t, h, observer, time.Second, func(r *ttlTry) bool {
			node, ttl := r.path("t"), r.ttl
			baseBefore := mustStat(t, observer, h.base)
			if _, err := owner.CreateTTL(node, nil, zk.FlagTTL, openACL, ttl); err != nil {
				t.Fatalf("CreateTTL: %v", err)
			}
			mustSync(t, observer, node)
			_, created, data, err := observer.GetW(node)
			if errors.Is(err, zk.ErrNoNode) {
				return r.goneEarly(r.start, "a TTL node deleted before its first read")
			} else if err != nil {
				t.Fatalf("GetW(%q): %v", node, err)
			}
			children := setWatch(t, observer, childrenWatch, h.base)
			h.advance(ttl / 4)
			mustSync(t, observer, node)
			if ok, st, err := observer.Exists(node); err != nil {
				t.Fatalf("Exists(%q): %v", node, err)
			} else if !ok {
				return r.goneEarly(r.start, "a TTL node deleted a quarter of its TTL after its create")
			} else if *st != *created {
				t.Fatalf("TTL node before its TTL passed: %s, want unchanged %s", formatStat(*st), formatStat(*created))
			}
			h.advance(ttl + h.passes(4))
			expectWatchEvent(t, data, zk.EventNodeDeleted, node, "GetW on the TTL node")
			expectWatchEvent(t, children, zk.EventNodeChildrenChanged, h.base, "ChildrenW on its parent")
			expectAbsent(t, observer, node)
			after := mustStat(t, observer, h.base)
			if after.Pzxid != created.Czxid+1 || after.Cversion != baseBefore.Cversion+2 {
				t.Fatalf("parent after the deletion %s (before the create %s, TTL node's czxid %#x); want pzxid czxid+1, cversion +2",
					formatStat(after), formatStat(baseBefore), created.Czxid)
			}
			expectZxidGap(t, observer, r.path("after"), created.Czxid, 2, "after the TTL node's deletion")
			return true
		})
	}},
	{"ttl/a TTL node with children stays past its TTL and goes once childless", func(t *testing.T, h *harness) {
		c := h.connect()
		retryStalled(t, h, c, h.passes(2), func(r *ttlTry) bool {
			node, ttl := r.path("t"), r.ttl
			if _, err := c.CreateTTL(node, nil, zk.FlagTTL, openACL, ttl); err != nil {
				t.Fatalf("CreateTTL: %v", err)
			}
			if _, err := c.Create(node+"/k", nil, zk.FlagPersistent, openACL); errors.Is(err, zk.ErrNoNode) {
				// The manager deleted the childless node first: only once its TTL had passed.
				return r.goneEarly(r.start, "a TTL node deleted before its child was created")
			} else if err != nil {
				t.Fatalf("Create(%q): %v", node+"/k", err)
			}
			h.advance(ttl + h.passes(4))
			expectPresent(t, c, node, "a TTL node with a child, past its TTL")
			mustDelete(t, c, node+"/k")
			// A child's create and delete move the parent's pzxid and cversion, not its mtime: no new TTL.
			h.advance(h.passes(4))
			expectAbsent(t, c, node)
			return true
		})
	}},
	{"ttl/setData restarts a TTL node's TTL", func(t *testing.T, h *harness) {
		c := h.connect()
		retryStalled(t, h, c, 800*time.Millisecond, func(r *ttlTry) bool {
			node, ttl := r.path("t"), r.ttl
			if _, err := c.CreateTTL(node, nil, zk.FlagTTL, openACL, ttl); err != nil {
				t.Fatalf("CreateTTL: %v", err)
			}
			h.advance(ttl * 5 / 8)
			set, err := c.Set(node, []byte("again"), -1)
			if errors.Is(err, zk.ErrNoNode) {
				return r.goneEarly(r.start, "a TTL node deleted before its setData")
			} else if err != nil {
				t.Fatalf("Set(%q): %v", node, err)
			}
			if set.Mtime-set.Ctime > ttl.Milliseconds() {
				// The set came after the TTL had run out (a stalled client): the manager may have picked the
				// node already, and then deletes it all the same (seen once in twenty runs on 3.8).
				return false
			}
			h.advance(ttl * 5 / 8)
			// Its TTL since create has passed; since the set it has not, unless the rule stalled.
			mustSync(t, c, node)
			if ok, _, err := c.Exists(node); err != nil {
				t.Fatalf("Exists(%q): %v", node, err)
			} else if !ok {
				return r.goneEarly(set.Mtime, "a TTL node deleted before its TTL since its setData passed")
			}
			h.advance(ttl + h.passes(4))
			expectAbsent(t, c, node)
			return true
		})
	}},
	{"ttl/a container holding a TTL node goes after it", func(t *testing.T, h *harness) {
		c := h.connect()
		mustContainer(t, c, h.path("c"))
		if _, err := c.CreateTTL(h.path("c/t"), nil, zk.FlagTTL, openACL, h.passes(2)); err != nil {
			t.Fatalf("CreateTTL: %v", err)
		}
		h.advance(h.passes(2) + h.passes(8))
		expectAbsent(t, c, h.path("c/t"))
		expectAbsent(t, c, h.path("c"))
	}},
}

// ttlTry is one try of a rule that races the server's clock (retryStalled): its TTL, its own paths, and
// the server's clock when it began.
type ttlTry struct {
	t     *testing.T
	h     *harness
	c     Conn
	n     int
	ttl   time.Duration
	start int64
}

// path is the try's own path for name.
func (r *ttlTry) path(name string) string { return r.h.path(fmt.Sprintf("%s%d", name, r.n)) }

// goneEarly checks that a node the try found deleted was past its TTL, counted from since (a ctime or mtime,
// in the server's milliseconds), by the server's clock, and reports the try inconclusive.
func (r *ttlTry) goneEarly(since int64, what string) bool {
	r.t.Helper()
	deadline := since + r.ttl.Milliseconds()
	if now := mark(r.t, r.c, r.path("late")).Ctime; now < deadline {
		r.t.Fatalf("%s: the server's clock is %d ms, %d ms before the TTL ran out", what, now, deadline-now)
	}
	return false
}

// retryStalled runs a rule that races the server's clock with the TTL given, then twice and four times as
// long, until try reports that its checks were conclusive: a client that stalls (a loaded machine) may find a
// node already deleted for its TTL, which is correct but leaves nothing to check; try then checks that the
// TTL had passed (goneEarly) and reports false.
func retryStalled(t *testing.T, h *harness, c Conn, ttl time.Duration, try func(r *ttlTry) bool) {
	t.Helper()
	const tries = 3
	for n := range tries {
		r := &ttlTry{t: t, h: h, c: c, n: n, ttl: ttl}
		r.start = mark(t, c, r.path("m")).Ctime
		if try(r) {
			return
		}
		ttl *= 2
	}
	t.Fatalf("%d tries, with TTLs up to %v: each stalled past its TTL before its checks", tries, ttl/2)
}

// mustContainer creates a container node at path or fails the rule.
func mustContainer(t *testing.T, c Conn, path string) {
	t.Helper()
	if p, err := c.CreateContainer(path, nil, zk.FlagContainer, openACL); err != nil || p != path {
		t.Fatalf("CreateContainer(%q) = %q, %v", path, p, err)
	}
}

var containerRules = []rule{
	{"container/a container's stat shows ephemeralOwner 0, and one never used stays", func(t *testing.T, h *harness) {
		c := h.connect()
		mustContainer(t, c, h.path("c"))
		st := mustStat(t, c, h.path("c"))
		if st.EphemeralOwner != 0 || st.Cversion != 0 || st.NumChildren != 0 {
			t.Fatalf("container's stat %s; want ephemeralOwner 0 and no children ever", formatStat(st))
		}
		h.advance(h.passes(4))
		if after := expectPresent(t, c, h.path("c"), "a never-used container after four passes"); after != st {
			t.Fatalf("never-used container %s, want unchanged %s", formatStat(after), formatStat(st))
		}
	}},
	{"container/an emptied container is deleted at a later pass, with the watch events and one zxid", func(t *testing.T, h *harness) {
		c, observer := h.connect(), h.connect()
		mustContainer(t, c, h.path("c"))
		mustCreate(t, c, h.path("c/k"), nil, zk.FlagPersistent)
		h.advance(h.passes(4))
		expectPresent(t, observer, h.path("c"), "a container with a child after four passes")
		// The emptied container may go at any moment (a real server's manager runs on its own timer): what
		// the rule checks comes from a marker made before, not from the container's stat.
		emptied := mark(t, c, h.path("m0")).Czxid + 1 // the child's delete
		data := setWatch(t, observer, getWatch, h.path("c"))
		children := setWatch(t, observer, childrenWatch, h.base)
		mustDelete(t, c, h.path("c/k"))
		h.advance(h.passes(4))
		expectWatchEvent(t, data, zk.EventNodeDeleted, h.path("c"), "GetW on the container")
		expectWatchEvent(t, children, zk.EventNodeChildrenChanged, h.base, "ChildrenW on its parent")
		expectAbsent(t, observer, h.path("c"))
		if got := mustStat(t, observer, h.base).Pzxid; got != emptied+1 {
			t.Fatalf("parent's pzxid after the container's deletion %#x, want %#x (the child's delete %#x, plus one)", got, emptied+1, emptied)
		}
		expectZxidGap(t, observer, h.path("m"), emptied, 2, "after the container's deletion")
	}},
	{"container/a plain create with the container mode makes a persistent node, which stays when emptied", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("p"), nil, zk.FlagContainer)
		mustCreate(t, c, h.path("p/k"), nil, zk.FlagPersistent)
		mustDelete(t, c, h.path("p/k"))
		h.advance(h.passes(4))
		expectPresent(t, c, h.path("p"), "a node of a plain create with the container mode, emptied, after four passes")
	}},
	{"container/a container emptied by its ephemeral child's session ending is deleted", func(t *testing.T, h *harness) {
		c, owner := h.connect(), h.connect()
		mustContainer(t, c, h.path("c"))
		mustCreate(t, owner, h.path("c/e"), nil, zk.FlagEphemeral)
		owner.close()
		expectAbsent(t, c, h.path("c/e"))
		h.advance(h.passes(4))
		expectAbsent(t, c, h.path("c"))
	}},
	{"container/nested emptied containers go, the inner one first", func(t *testing.T, h *harness) {
		c, observer := h.connect(), h.connect()
		mustContainer(t, c, h.path("n1"))
		mustContainer(t, c, h.path("n1/n2"))
		mustCreate(t, c, h.path("n1/n2/k"), nil, zk.FlagPersistent)
		emptied := mark(t, c, h.path("m0")).Czxid + 1 // the child's delete; n2 may go at once after it
		inner := setWatch(t, observer, getWatch, h.path("n1/n2"))
		outerChildren := setWatch(t, observer, childrenWatch, h.path("n1"))
		outer := setWatch(t, observer, existsWatch, h.path("n1"))
		mustDelete(t, c, h.path("n1/n2/k"))
		h.advance(h.passes(8))
		expectWatchEvent(t, inner, zk.EventNodeDeleted, h.path("n1/n2"), "GetW on the inner container")
		expectWatchEvent(t, outerChildren, zk.EventNodeChildrenChanged, h.path("n1"), "ChildrenW on the outer container")
		expectWatchEvent(t, outer, zk.EventNodeDeleted, h.path("n1"), "ExistsW on the outer container")
		expectAbsent(t, observer, h.path("n1"))
		// The outer container went last: its deletion is the base's last child change.
		if got := mustStat(t, observer, h.base).Pzxid; got != emptied+2 {
			t.Fatalf("base's pzxid after both deletions %#x, want %#x (the child's delete %#x, the inner container's, the outer's)", got, emptied+2, emptied)
		}
		expectZxidGap(t, observer, h.path("m"), emptied, 3, "after both containers' deletions")
	}},
	{"container/a Multi can create a container; go-zookeeper returns zk.ErrAPIError though it was applied", func(t *testing.T, h *harness) {
		c := h.connect()
		res, err := c.Multi(&zk.CreateRequest{Path: h.path("a"), Flags: zk.FlagPersistent, Acl: openACL},
			&zk.CreateRequest{Path: h.path("c"), Flags: zk.FlagContainer, Acl: openACL},
			&zk.CreateRequest{Path: h.path("b"), Flags: zk.FlagPersistent, Acl: openACL})
		if !errors.Is(err, zk.ErrAPIError) || len(res) != 1 || res[0].String != h.path("a") || res[0].Error != nil {
			t.Fatalf("Multi(create a, container c, create b) = %+v, %v; want the first response and zk.ErrAPIError", res, err)
		}
		for _, p := range []string{"a", "b", "c"} {
			expectPresent(t, c, h.path(p), "a node the multi created")
		}
		mustCreate(t, c, h.path("c/k"), nil, zk.FlagPersistent)
		mustDelete(t, c, h.path("c/k"))
		h.advance(h.passes(4))
		expectAbsent(t, c, h.path("c"))
	}},
}
