package conformance

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// Reconfig describes a target's dynamic reconfiguration, for the reconfig rules. Measured on a real 3.8
// ensemble of 3 servers (realzk), with and without reconfigEnabled=true. The rules reconfigure with servers
// the ensemble does not run (ids from 100 on, ports 40000 and up), which leaves its quorum as it was, and
// every rule restores the membership it found; one with the target's own members would start elections.
type Reconfig struct {
	// Enabled is reconfigEnabled=true: the rules that reconfigure run (they need Target.SuperUser). Without
	// it, the rule that every reconfig is refused runs instead.
	Enabled bool
	// Servers is the number of participants the target's configuration lists (at least 3).
	Servers int
	// Fresh tells that no reconfig has changed the configuration since the ensemble first started: with
	// reconfigEnabled, the rules then check the version it started with.
	Fresh bool
}

// ReconfigConn is what the reconfig rules need of a Conn beyond ACLConn: go-zookeeper's
// IncrementalReconfig and Reconfig (*zk.Conn has them).
type ReconfigConn interface {
	ACLConn
	IncrementalReconfig(joining, leaving []string, version int64) (*zk.Stat, error)
	Reconfig(members []string, version int64) (*zk.Stat, error)
}

// reconfigSession is a session that can reconfigure.
type reconfigSession struct {
	*aclSession
	ReconfigConn
}

// reconfigConnect opens a session with digest auth as user (none if empty) that can reconfigure.
func (h *harness) reconfigConnect(user [2]string) *reconfigSession {
	h.t.Helper()
	a := h.aclConnect(user)
	rc, ok := a.session.Conn.(ReconfigConn)
	if !ok {
		h.t.Fatalf("the target's Conn (%T) has no IncrementalReconfig and Reconfig", a.session.Conn)
	}
	return &reconfigSession{aclSession: a, ReconfigConn: rc}
}

// superReconfig is a reconfiguring session of the target's super user.
func (h *harness) superReconfig() *reconfigSession {
	user, password, _ := strings.Cut(h.target.SuperUser, ":")
	return h.reconfigConnect([2]string{user, password})
}

// configLine is a /zookeeper/config server line: server.N=host:quorumPort:electionPort:role, then
// ;clientHost:clientPort when the server's line gave a client address.
var configLine = regexp.MustCompile(`^server\.(\d+)=[^:;]+:\d+:\d+:(participant|observer)(;[^;]+:\d+)?$`)

// readConfig reads /zookeeper/config after a sync and checks its form: server lines, then version=<hex
// mzxid>. It returns the server lines and the stat.
func readConfig(t *testing.T, c Conn) ([]string, zk.Stat) {
	t.Helper()
	mustSync(t, c, "/zookeeper/config")
	data, st, err := c.Get("/zookeeper/config")
	if err != nil {
		t.Fatalf("Get(/zookeeper/config): %v", err)
	}
	lines := strings.Split(string(data), "\n")
	last := lines[len(lines)-1]
	if want := "version=" + strconv.FormatInt(st.Mzxid, 16); last != want {
		t.Fatalf("/zookeeper/config ends with %q, want %q (the version is its mzxid in hex, and no newline follows): %q", last, want, data)
	}
	servers := lines[:len(lines)-1]
	for _, l := range servers {
		if !configLine.MatchString(l) {
			t.Fatalf("/zookeeper/config line %q is not server.N=host:port:port:role[;host:port]: %q", l, data)
		}
	}
	if st.Version != -1 || st.Aversion < -1 || int(st.DataLength) != len(data) {
		t.Fatalf("/zookeeper/config stat %s: want version -1 and dataLength %d", formatStat(*st), len(data))
	}
	return servers, *st
}

// phantom is the config line of a server the target does not run: id 100+n, ports 40000+3n and up.
func phantom(n int, role, client string) string {
	line := fmt.Sprintf("server.%d=127.0.0.1:%d:%d", 100+n, 40000+3*n, 40001+3*n)
	if role != "" {
		line += ":" + role
	}
	if client != "" {
		line += ";" + client
	}
	return line
}

// expectConfig checks that /zookeeper/config lists want (in any order) and returns its stat.
func expectConfig(t *testing.T, c Conn, want []string, what string) zk.Stat {
	t.Helper()
	got, st := readConfig(t, c)
	if !sameSet(got, want) {
		t.Fatalf("%s: /zookeeper/config lists %q, want %q", what, got, want)
	}
	return st
}

// sameSet reports whether a and b hold the same lines, in any order.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// restoreConfig puts the membership back when the rule ends, whatever it left.
func (h *harness) restoreConfig(t *testing.T, super *reconfigSession, lines []string) {
	t.Cleanup(func() {
		now, _ := readConfig(t, super)
		if !sameSet(now, lines) {
			if _, err := super.Reconfig(lines, -1); err != nil {
				t.Errorf("clean-up: restore the configuration %q: %v", lines, err)
			}
		}
	})
}

// reconfigDisabledRules run on a target without reconfigEnabled.
var reconfigDisabledRules = []rule{
	{"reconfig/the configuration node lists the ensemble's servers and its version", func(t *testing.T, h *harness) {
		servers, _ := readConfig(t, h.admin)
		if voters := countRole(servers, "participant"); voters != h.target.Reconfig.Servers {
			t.Fatalf("/zookeeper/config lists %d participants, want the target's %d: %q", voters, h.target.Reconfig.Servers, servers)
		}
	}},
	{"reconfig/without reconfigEnabled the configuration's version is 0", func(t *testing.T, h *harness) {
		if _, st := readConfig(t, h.admin); st.Mzxid != 0 {
			t.Fatalf("/zookeeper/config %s: want version 0 (and mzxid 0): only an ensemble with reconfigEnabled versions its configuration", formatStat(st))
		}
	}},
	{"reconfig/without reconfigEnabled every reconfig fails with ZRECONFIGDISABLED, before any other check", func(t *testing.T, h *harness) {
		anon := h.reconfigConnect([2]string{})
		before, st := readConfig(t, anon)
		sessions := []*reconfigSession{anon}
		if h.target.SuperUser != "" {
			sessions = append(sessions, h.superReconfig())
		}
		for _, s := range sessions {
			for _, a := range []attempt{
				{"IncrementalReconfig(leaving 1)", func() error { _, err := s.IncrementalReconfig(nil, []string{"1"}, -1); return err }, zk.ErrReconfigDisabled},
				{"IncrementalReconfig(garbage, from a wrong version)", func() error { _, err := s.IncrementalReconfig([]string{"garbage"}, nil, 12345); return err }, zk.ErrReconfigDisabled},
				{"Reconfig(garbage)", func() error { _, err := s.Reconfig([]string{"garbage"}, -1); return err }, zk.ErrReconfigDisabled},
			} {
				a.check(t)
			}
		}
		if after, st2 := readConfig(t, anon); !slices.Equal(after, before) || st2 != st {
			t.Fatalf("the refused reconfigs changed /zookeeper/config: %q %s, before %q %s", after, formatStat(st2), before, formatStat(st))
		}
	}},
}

func countRole(lines []string, role string) int {
	n := 0
	for _, l := range lines {
		if m := configLine.FindStringSubmatch(l); m != nil && m[2] == role {
			n++
		}
	}
	return n
}

// firstEpochZxid is the first zxid of a fresh ensemble's first leader (epoch 1, counter 0).
const firstEpochZxid = 1 << 32

// reconfigFreshRules run first on a target with reconfigEnabled that no reconfig has changed (Reconfig.Fresh).
var reconfigFreshRules = []rule{
	{"reconfig/a fresh ensemble's configuration has its first epoch's first zxid (0x100000000) as version", func(t *testing.T, h *harness) {
		if _, st := readConfig(t, h.admin); st.Mzxid != firstEpochZxid {
			t.Fatalf("/zookeeper/config %s: want version and mzxid %#x, the zxid the first leader's epoch starts at", formatStat(st), firstEpochZxid)
		}
		if st := mustStat(t, h.admin, h.base); st.Czxid <= firstEpochZxid {
			t.Fatalf("the rule's base node was created at %#x: want a zxid after the configuration's version %#x", st.Czxid, int64(firstEpochZxid))
		}
	}},
}

// reconfigNoSuperRules run on a target with reconfigEnabled and no super user (no superDigest).
var reconfigNoSuperRules = []rule{
	reconfigDisabledRules[0],
	{"reconfig/without a super user nobody may reconfigure: NoAuth, for a digest named super too, and nothing changes", func(t *testing.T, h *harness) {
		anon, named := h.reconfigConnect([2]string{}), h.reconfigConnect([2]string{"super", "test"})
		before, st := readConfig(t, anon)
		for _, s := range []*reconfigSession{anon, named} {
			for _, a := range []attempt{
				{"IncrementalReconfig(nothing)", func() error { _, err := s.IncrementalReconfig(nil, nil, -1); return err }, zk.ErrNoAuth},
				{"IncrementalReconfig(leaving 1)", func() error { _, err := s.IncrementalReconfig(nil, []string{"1"}, -1); return err }, zk.ErrNoAuth},
				{"Reconfig(the same servers)", func() error { _, err := s.Reconfig(before, st.Mzxid); return err }, zk.ErrNoAuth},
				{"SetACL(/zookeeper/config)", func() error { _, err := s.SetACL("/zookeeper/config", openACL, -1); return err }, zk.ErrNoAuth},
			} {
				a.check(t)
			}
		}
		if after, st2 := readConfig(t, anon); !slices.Equal(after, before) || st2 != st {
			t.Fatalf("the refused reconfigs changed /zookeeper/config: %q %s, was %q %s", after, formatStat(st2), before, formatStat(st))
		}
	}},
}

// reconfigRules run on a target with reconfigEnabled and a super user.
var reconfigRules = []rule{
	reconfigDisabledRules[0],
	{"reconfig/an incremental reconfig adds and removes servers; the reply and the node carry the new configuration, its watchers get NodeDataChanged", func(t *testing.T, h *harness) {
		super, watcher := h.superReconfig(), h.connect()
		before, st0 := readConfig(t, super)
		h.restoreConfig(t, super, before)
		_, _, watch, err := watcher.GetW("/zookeeper/config")
		if err != nil {
			t.Fatalf("GetW(/zookeeper/config): %v", err)
		}
		// A client part of a port alone reads as 0.0.0.0; observers say so; a joining participant that does
		// not run still joins while a majority of the participants does.
		st, err := super.IncrementalReconfig([]string{phantom(1, "", "40100"), phantom(2, "observer", "127.0.0.1:40101")}, nil, -1)
		if err != nil {
			t.Fatalf("IncrementalReconfig(join server.101 and the observer server.102): %v", err)
		}
		want := append(slices.Clone(before), phantom(1, "participant", "0.0.0.0:40100"), phantom(2, "observer", "127.0.0.1:40101"))
		got := expectConfig(t, super, want, "after joining 101 and 102")
		if *st != got || got.Mzxid <= st0.Mzxid {
			t.Fatalf("the reply's stat %s, the node's %s (before %s): want the node's, with a later mzxid", formatStat(*st), formatStat(got), formatStat(st0))
		}
		expectWatchEvent(t, watch, zk.EventNodeDataChanged, "/zookeeper/config", "GetW(/zookeeper/config) before the reconfig")
		// Leaving ids are trimmed; an id the configuration does not have changes nothing but the version.
		if _, err := super.IncrementalReconfig(nil, []string{" 101", "102 ", "199"}, got.Mzxid); err != nil {
			t.Fatalf("IncrementalReconfig(leaving 101, 102, 199 from version %#x): %v", got.Mzxid, err)
		}
		expectConfig(t, super, before, "after leaving 101, 102 and 199")
		// An empty incremental reconfig makes a new version of the same membership.
		_, mid := readConfig(t, super)
		if _, err := super.IncrementalReconfig(nil, nil, -1); err != nil {
			t.Fatalf("IncrementalReconfig(nothing): %v", err)
		}
		if end := expectConfig(t, super, before, "after an empty reconfig"); end.Mzxid <= mid.Mzxid {
			t.Fatalf("an empty reconfig left the version at %#x, want one after %#x", end.Mzxid, mid.Mzxid)
		}
	}},
	{"reconfig/a whole reconfig replaces the membership", func(t *testing.T, h *harness) {
		super := h.superReconfig()
		before, _ := readConfig(t, super)
		h.restoreConfig(t, super, before)
		// Lines as go-zookeeper's own suite writes them, each ending in a newline; a client address is optional.
		members := []string{phantom(3, "", "") + "\n"}
		for _, l := range before {
			members = append(members, l+"\n")
		}
		if _, err := super.Reconfig(members, -1); err != nil {
			t.Fatalf("Reconfig(the servers and server.103): %v", err)
		}
		expectConfig(t, super, append(slices.Clone(before), phantom(3, "participant", "")), "after a whole reconfig adding server.103")
		if _, err := super.Reconfig(before, -1); err != nil {
			t.Fatalf("Reconfig(the servers as before): %v", err)
		}
		expectConfig(t, super, before, "after a whole reconfig back")
	}},
	{"reconfig/fromConfig must be the current version: BadVersion otherwise", func(t *testing.T, h *harness) {
		super := h.superReconfig()
		before, st := readConfig(t, super)
		h.restoreConfig(t, super, before)
		_, err := super.IncrementalReconfig([]string{phantom(4, "", "40110")}, nil, st.Mzxid+1)
		expectErr(t, err, zk.ErrBadVersion, "IncrementalReconfig from a version after the current one")
		_, err = super.Reconfig(before, st.Mzxid-1)
		expectErr(t, err, zk.ErrBadVersion, "Reconfig from a version before the current one")
		expectConfig(t, super, before, "after the refused reconfigs")
		if _, err := super.IncrementalReconfig(nil, nil, st.Mzxid); err != nil {
			t.Fatalf("IncrementalReconfig from the current version %#x: %v", st.Mzxid, err)
		}
	}},
	{"reconfig/malformed servers are BadArguments, an id or port Java cannot parse a marshalling error, and change nothing", func(t *testing.T, h *harness) {
		super := h.superReconfig()
		before, st := readConfig(t, super)
		h.restoreConfig(t, super, before)
		inc := func(joining, leaving []string) func() error {
			return func() error { _, err := super.IncrementalReconfig(joining, leaving, -1); return err }
		}
		whole := func(members ...string) func() error {
			return func() error { _, err := super.Reconfig(members, -1); return err }
		}
		marshalling := codeError(-5)
		for _, a := range []attempt{
			{"joining without '='", inc([]string{"garbage"}, nil), zk.ErrBadArguments},
			{"joining with two ports", inc([]string{"server.104=127.0.0.1:40112"}, nil), zk.ErrBadArguments},
			{"joining without a client port", inc([]string{phantom(4, "", "")}, nil), zk.ErrBadArguments},
			{"joining with a port that is not a number", inc([]string{"server.104=127.0.0.1:x:40113;40114"}, nil), zk.ErrBadArguments},
			{"joining with equal quorum and election ports", inc([]string{"server.104=127.0.0.1:40112:40112;40114"}, nil), zk.ErrBadArguments},
			{"joining with an unknown role", inc([]string{phantom(4, "witness", "40114")}, nil), zk.ErrBadArguments},
			{"joining with an id that is not a number", inc([]string{"server.x=127.0.0.1:40112:40113;40114"}, nil), marshalling},
			{"joining with a port out of range", inc([]string{"server.104=127.0.0.1:40112:70000;40114"}, nil), marshalling},
			{"leaving an id that is not a number", inc(nil, []string{"x"}), marshalling},
			{"leaving all participants but one", inc(nil, firstIDs(t, before, len(before)-1)), zk.ErrBadArguments},
			{"a whole configuration of garbage", whole("garbage"), zk.ErrBadArguments},
			{"an empty whole configuration", whole(), zk.ErrBadArguments},
			{"a whole configuration of one participant", whole(before[0]), zk.ErrBadArguments},
		} {
			checkCode(t, a)
		}
		if after, st2 := readConfig(t, super); !slices.Equal(after, before) || st2 != st {
			t.Fatalf("the refused reconfigs changed /zookeeper/config: %q %s, before %q %s", after, formatStat(st2), before, formatStat(st))
		}
	}},
	{"reconfig/the new configuration needs a running majority of its participants: NewConfigNoQuorum otherwise", func(t *testing.T, h *harness) {
		super := h.superReconfig()
		before, st := readConfig(t, super)
		h.restoreConfig(t, super, before)
		// The target's participants minus all but one, plus as many servers it does not run: no majority runs.
		n := len(before)
		var joining []string
		for i := range n {
			joining = append(joining, phantom(5+i, "", strconv.Itoa(40120+i)))
		}
		_, err := super.IncrementalReconfig(joining, firstIDs(t, before, n-1), -1)
		expectCode(t, err, -13, "IncrementalReconfig leaving a minority running (NEWCONFIGNOQUORUM)")
		if after, st2 := readConfig(t, super); !slices.Equal(after, before) || st2 != st {
			t.Fatalf("the refused reconfig changed /zookeeper/config: %q %s", after, formatStat(st2))
		}
	}},
	{"reconfig/reconfig needs WRITE on /zookeeper/config, checked after everything else", func(t *testing.T, h *harness) {
		super, anon := h.superReconfig(), h.reconfigConnect([2]string{})
		other := h.reconfigConnect(aclOther)
		before, st := readConfig(t, super)
		for _, a := range []attempt{
			{"anonymous IncrementalReconfig(nothing)", func() error { _, err := anon.IncrementalReconfig(nil, nil, -1); return err }, zk.ErrNoAuth},
			{"anonymous IncrementalReconfig(garbage)", func() error { _, err := anon.IncrementalReconfig([]string{"garbage"}, nil, -1); return err }, zk.ErrBadArguments},
			{"anonymous IncrementalReconfig from a wrong version", func() error { _, err := anon.IncrementalReconfig(nil, nil, st.Mzxid+1); return err }, zk.ErrBadVersion},
			{"digest user's IncrementalReconfig(nothing)", func() error { _, err := other.IncrementalReconfig(nil, nil, -1); return err }, zk.ErrNoAuth},
			{"digest user's SetACL(/zookeeper/config)", func() error { _, err := other.SetACL("/zookeeper/config", openACL, -1); return err }, zk.ErrNoAuth},
		} {
			a.check(t)
		}
		if after, st2 := readConfig(t, super); !slices.Equal(after, before) || st2 != st {
			t.Fatalf("the refused reconfigs changed /zookeeper/config: %q %s", after, formatStat(st2))
		}
		acl, _, err := super.GetACL("/zookeeper/config")
		if err != nil {
			t.Fatalf("GetACL(/zookeeper/config): %v", err)
		}
		t.Cleanup(func() {
			if _, err := super.SetACL("/zookeeper/config", acl, -1); err != nil {
				t.Errorf("clean-up: SetACL(/zookeeper/config, %s): %v", formatACL(acl), err)
			}
		})
		if _, err := super.SetACL("/zookeeper/config", append(zk.WorldACL(zk.PermRead), digestEntry(zk.PermWrite, aclOther)), -1); err != nil {
			t.Fatalf("SetACL(/zookeeper/config, world read and %s write): %v", aclOther[0], err)
		}
		if _, err := other.IncrementalReconfig(nil, nil, -1); err != nil {
			t.Fatalf("IncrementalReconfig by %s, who may now write /zookeeper/config: %v", aclOther[0], err)
		}
		_, err = anon.IncrementalReconfig(nil, nil, -1)
		expectErr(t, err, zk.ErrNoAuth, "anonymous IncrementalReconfig after the ACL change")
	}},
	{"reconfig/a reconfig spends a zxid, a refused one too", func(t *testing.T, h *harness) {
		super := h.superReconfig()
		z0 := mustSet(t, super, h.base, []byte("a")).Mzxid
		_, err := super.IncrementalReconfig([]string{"garbage"}, nil, -1)
		expectErr(t, err, zk.ErrBadArguments, "IncrementalReconfig(garbage)")
		if _, err := super.IncrementalReconfig(nil, nil, -1); err != nil {
			t.Fatalf("IncrementalReconfig(nothing): %v", err)
		}
		_, st := readConfig(t, super)
		z1 := mustSet(t, super, h.base, []byte("b")).Mzxid
		if st.Mzxid != z0+2 || z1 != z0+3 {
			t.Fatalf("set at %#x, a refused and an empty reconfig, set at %#x; the configuration's version %#x: want %#x and %#x",
				z0, z1, st.Mzxid, z0+3, z0+2)
		}
	}},
}

// codeError is a ZooKeeper error code go-zookeeper has no named error for, as an attempt's want.
type codeError int32

func (c codeError) Error() string { return fmt.Sprintf("unknown error: %v", zk.ErrCode(c)) }

// checkCode is attempt.check, for a want that may be a codeError.
func checkCode(t *testing.T, a attempt) {
	t.Helper()
	if code, ok := a.want.(codeError); ok {
		expectCode(t, a.do(), int32(code), a.name)
		return
	}
	a.check(t)
}

// firstIDs returns the ids of the first n of the configuration's server lines.
func firstIDs(t *testing.T, lines []string, n int) []string {
	t.Helper()
	var ids []string
	for _, l := range lines[:n] {
		m := configLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not a server line: %q", l)
		}
		ids = append(ids, m[1])
	}
	return ids
}
