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

// expectZxidGap creates a marker node and checks that exactly gap zxids were spent since zxid (the marker's
// own included).
func expectZxidGap(t *testing.T, c Conn, marker string, zxid int64, gap int64, what string) {
	t.Helper()
	mustCreate(t, c, marker, nil, zk.FlagPersistent)
	if got := mustStat(t, c, marker).Czxid; got != zxid+gap {
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
	mustCreate(t, c, h.path("m1"), nil, zk.FlagPersistent)
	before := mustStat(t, c, h.path("m1")).Czxid
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
		mustCreate(t, c, h.path("m1"), nil, zk.FlagPersistent)
		before := mustStat(t, c, h.path("m1")).Czxid
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
		baseBefore := mustStat(t, observer, h.base)
		if _, err := owner.CreateTTL(h.path("t"), nil, zk.FlagTTL, openACL, time.Second); err != nil {
			t.Fatalf("CreateTTL: %v", err)
		}
		created := mustStat(t, observer, h.path("t"))
		data := setWatch(t, observer, getWatch, h.path("t"))
		children := setWatch(t, observer, childrenWatch, h.base)
		h.advance(250 * time.Millisecond)
		if st := expectPresent(t, observer, h.path("t"), "a quarter of its TTL later"); st != created {
			t.Fatalf("TTL node before its TTL passed: %s, want unchanged %s", formatStat(st), formatStat(created))
		}
		h.advance(time.Second + h.passes(4))
		expectWatchEvent(t, data, zk.EventNodeDeleted, h.path("t"), "GetW on the TTL node")
		expectWatchEvent(t, children, zk.EventNodeChildrenChanged, h.base, "ChildrenW on its parent")
		expectAbsent(t, observer, h.path("t"))
		after := mustStat(t, observer, h.base)
		if after.Pzxid != created.Czxid+1 || after.Cversion != baseBefore.Cversion+2 {
			t.Fatalf("parent after the deletion %s (before the create %s, TTL node's czxid %#x); want pzxid czxid+1, cversion +2",
				formatStat(after), formatStat(baseBefore), created.Czxid)
		}
		expectZxidGap(t, observer, h.path("m"), created.Czxid, 2, "after the TTL node's deletion")
	}},
	{"ttl/a TTL node with children stays past its TTL and goes once childless", func(t *testing.T, h *harness) {
		c := h.connect()
		ttl := h.passes(2)
		if _, err := c.CreateTTL(h.path("t"), nil, zk.FlagTTL, openACL, ttl); err != nil {
			t.Fatalf("CreateTTL: %v", err)
		}
		mustCreate(t, c, h.path("t/k"), nil, zk.FlagPersistent)
		h.advance(ttl + h.passes(4))
		expectPresent(t, c, h.path("t"), "a TTL node with a child, past its TTL")
		mustDelete(t, c, h.path("t/k"))
		// A child's create and delete move the parent's pzxid and cversion, not its mtime: no new TTL.
		h.advance(h.passes(4))
		expectAbsent(t, c, h.path("t"))
	}},
	{"ttl/setData restarts a TTL node's TTL", func(t *testing.T, h *harness) {
		c := h.connect()
		ttl := 800 * time.Millisecond
		if _, err := c.CreateTTL(h.path("t"), nil, zk.FlagTTL, openACL, ttl); err != nil {
			t.Fatalf("CreateTTL: %v", err)
		}
		h.advance(ttl * 5 / 8)
		mustSet(t, c, h.path("t"), []byte("again"))
		h.advance(ttl * 5 / 8)
		expectPresent(t, c, h.path("t"), "a TTL node past its TTL since create, set since")
		h.advance(ttl + h.passes(4))
		expectAbsent(t, c, h.path("t"))
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
		data := setWatch(t, observer, getWatch, h.path("c"))
		children := setWatch(t, observer, childrenWatch, h.base)
		mustDelete(t, c, h.path("c/k"))
		emptied := mustStat(t, observer, h.path("c")).Pzxid // the child's delete
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
		inner := setWatch(t, observer, getWatch, h.path("n1/n2"))
		outerChildren := setWatch(t, observer, childrenWatch, h.path("n1"))
		outer := setWatch(t, observer, existsWatch, h.path("n1"))
		mustDelete(t, c, h.path("n1/n2/k"))
		emptied := mustStat(t, observer, h.path("n1/n2")).Pzxid
		h.advance(h.passes(8))
		expectWatchEvent(t, inner, zk.EventNodeDeleted, h.path("n1/n2"), "GetW on the inner container")
		expectWatchEvent(t, outerChildren, zk.EventNodeChildrenChanged, h.path("n1"), "ChildrenW on the outer container")
		expectWatchEvent(t, outer, zk.EventNodeDeleted, h.path("n1"), "ExistsW on the outer container")
		expectAbsent(t, observer, h.path("n1"))
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
