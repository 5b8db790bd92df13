package conformance

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// ephemeralRules: ephemeral nodes have no children and die with their session in one step.
var ephemeralRules = []rule{
	{"ephemeral/an ephemeral node cannot have children and nothing is left behind", func(t *testing.T, h *harness) {
		c := h.connect()
		mustCreate(t, c, h.path("e"), []byte("x"), zk.FlagEphemeral)
		before := mustStat(t, c, h.path("e"))
		for _, flags := range []int32{zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential} {
			_, err := c.Create(h.path("e/child"), nil, flags, openACL)
			expectErr(t, err, zk.ErrNoChildrenForEphemerals, "create under an ephemeral node")
		}
		if after := mustStat(t, c, h.path("e")); after != before {
			t.Fatalf("ephemeral node after failed child creates %s, want unchanged %s", formatStat(after), formatStat(before))
		}
		children, _, err := c.Children(h.path("e"))
		if err != nil || len(children) != 0 {
			t.Fatalf("Children of the ephemeral node = %v, %v; want none", children, err)
		}
	}},
	{"ephemeral/Close deletes all the session's ephemerals in one transaction", func(t *testing.T, h *harness) {
		owner, observer := h.connect(), h.connect()
		mustCreate(t, observer, h.path("d"), nil, zk.FlagPersistent)
		mustCreate(t, owner, h.path("e1"), nil, zk.FlagEphemeral)
		e2 := mustCreate(t, owner, h.path("e2-"), nil, zk.FlagEphemeralSequential)
		e3 := mustCreate(t, owner, h.path("d/e3"), nil, zk.FlagEphemeral)
		mustCreate(t, observer, h.path("kept"), nil, zk.FlagEphemeral)
		baseBefore, dBefore := mustStat(t, observer, h.base), mustStat(t, observer, h.path("d"))
		existsE1 := setWatch(t, observer, existsWatch, h.path("e1"))
		getE2 := setWatch(t, observer, getWatch, e2)
		childrenBase := setWatch(t, observer, childrenWatch, h.base)
		childrenD := setWatch(t, observer, childrenWatch, h.path("d"))
		before := mustSet(t, observer, h.path("d"), nil)
		owner.close()
		for _, p := range []string{h.path("e1"), e2, e3} {
			expectAbsent(t, observer, p)
		}
		expectWatchEvent(t, existsE1, zk.EventNodeDeleted, h.path("e1"), "ExistsW on e1")
		expectWatchEvent(t, getE2, zk.EventNodeDeleted, e2, "GetW on e2")
		expectWatchEvent(t, childrenBase, zk.EventNodeChildrenChanged, h.base, "ChildrenW on base")
		expectWatchEvent(t, childrenD, zk.EventNodeChildrenChanged, h.path("d"), "ChildrenW on d")
		baseAfter, dAfter := mustStat(t, observer, h.base), mustStat(t, observer, h.path("d"))
		if baseAfter.Pzxid != dAfter.Pzxid || baseAfter.Pzxid <= before.Mzxid {
			t.Fatalf("after Close, parents' pzxid are %#x and %#x (last write before Close %#x); want one transaction after it",
				baseAfter.Pzxid, dAfter.Pzxid, before.Mzxid)
		}
		if baseAfter.Cversion != baseBefore.Cversion+2 || baseAfter.NumChildren != baseBefore.NumChildren-2 ||
			dAfter.Cversion != dBefore.Cversion+1 || dAfter.NumChildren != dBefore.NumChildren-1 {
			t.Fatalf("after Close: base %s (before %s), d %s (before %s); want cversion +1 and numChildren -1 per deleted child",
				formatStat(baseAfter), formatStat(baseBefore), formatStat(dAfter), formatStat(dBefore))
		}
		if ok, _, err := observer.Exists(h.path("kept")); err != nil || !ok {
			t.Fatalf("another session's ephemeral: Exists = %v, %v; want it kept", ok, err)
		}
	}},
}
