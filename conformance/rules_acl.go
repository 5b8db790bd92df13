package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// ACLConn is what the ACL rules need of a Conn beyond the Conn interface: go-zookeeper's AddAuth, GetACL and
// SetACL (*zk.Conn and *model.Conn have them). A target whose Conn lacks them fails the ACL rules.
type ACLConn interface {
	AddAuth(scheme string, auth []byte) error
	GetACL(path string) ([]zk.ACL, *zk.Stat, error)
	SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error)
}

// aclSession is a session with the ACL methods.
type aclSession struct {
	*session
	ACLConn
}

// Users the ACL rules authenticate as (digest scheme): user name and password.
var (
	aclOwner = [2]string{"owner", "owner-secret"}
	aclOther = [2]string{"other", "other-secret"}
)

// digestEntry is the ACL entry for user with perms, as zk.DigestACL computes it.
func digestEntry(perms int32, user [2]string) zk.ACL { return zk.DigestACL(perms, user[0], user[1])[0] }

// aclConnect opens a session and, unless user is empty, adds digest auth for it.
func (h *harness) aclConnect(user [2]string) *aclSession {
	h.t.Helper()
	s := h.connect()
	a, ok := s.Conn.(ACLConn)
	if !ok {
		h.t.Fatalf("the target's Conn (%T) has no AddAuth, GetACL and SetACL", s.Conn)
	}
	if user[0] != "" {
		if err := a.AddAuth("digest", []byte(user[0]+":"+user[1])); err != nil {
			h.t.Fatalf("AddAuth(digest, %s): %v", user[0], err)
		}
	}
	as := &aclSession{s, a}
	h.acl = append(h.acl, as)
	return as
}

// guarded creates path with acl plus ALL for owner, and opens it to the world again when the rule ends, so
// that the suite's clean-up (which has no auth) can list and delete it.
func (h *harness) guarded(owner *aclSession, path string, data []byte, acl ...zk.ACL) {
	h.t.Helper()
	full := append(slices.Clone(acl), digestEntry(zk.PermAll, aclOwner))
	if _, err := owner.Create(path, data, zk.FlagPersistent, full); err != nil {
		h.t.Fatalf("Create(%q) with ACL %v: %v", path, full, err)
	}
	// On an ensemble the rule's other sessions may sit on servers that have not applied the create yet:
	// ZooKeeper promises a session its own writes, and another's only after a sync.
	for _, other := range h.acl {
		if other != owner {
			mustSync(h.t, other, path)
		}
	}
	h.t.Cleanup(func() {
		if _, err := owner.SetACL(path, openACL, -1); err != nil && !isError(err, zk.ErrNoNode) {
			h.t.Errorf("clean-up: SetACL(%q, world:anyone): %v", path, err)
		}
	})
}

func worldEntry(perms int32) zk.ACL { return zk.ACL{Perms: perms, Scheme: "world", ID: "anyone"} }

// formatACL renders an ACL as scheme:id:perms entries.
func formatACL(acl []zk.ACL) string {
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = fmt.Sprintf("%s:%s:%d", a.Scheme, a.ID, a.Perms)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func expectACL(t *testing.T, c ACLConn, path string, want []zk.ACL) {
	t.Helper()
	got, _, err := c.GetACL(path)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("GetACL(%q) = %s, %v; want %s", path, formatACL(got), err, formatACL(want))
	}
}

// aclRules: which permission each operation needs, in which order the server checks, how it stores ACLs and
// what addAuth does (measured on ZooKeeper 3.8.0; SEMANTICS.md, section 10).
var aclRules = []rule{
	{"acl/each operation needs its permission on the node or, for create and delete, on the parent", func(t *testing.T, h *harness) {
		owner, anon := h.aclConnect(aclOwner), h.aclConnect([2]string{})
		perms := []struct {
			name string
			perm int32
		}{{"READ", zk.PermRead}, {"WRITE", zk.PermWrite}, {"CREATE", zk.PermCreate}, {"DELETE", zk.PermDelete}, {"ADMIN", zk.PermAdmin}}
		for _, p := range perms {
			n := h.path(strings.ToLower(p.name))
			h.guarded(owner, n, nil, worldEntry(p.perm))
			mustCreateACL(t, owner, n+"/kid")
			acl := []zk.ACL{worldEntry(p.perm), digestEntry(zk.PermAll, aclOwner)}
			need := func(perm int32) error {
				if perm&p.perm != 0 {
					return nil
				}
				return zk.ErrNoAuth
			}
			for _, a := range []attempt{
				{"Get", func() error { _, _, err := anon.Get(n); return err }, need(zk.PermRead)},
				{"Children", func() error { _, _, err := anon.Children(n); return err }, need(zk.PermRead)},
				{"Exists", func() error { _, _, err := anon.Exists(n); return err }, nil},
				{"Sync", func() error { _, err := anon.Sync(n); return err }, nil},
				{"GetACL", func() error { _, _, err := anon.GetACL(n); return err }, need(zk.PermRead | zk.PermAdmin)},
				{"Set", func() error { _, err := anon.Set(n, nil, -1); return err }, need(zk.PermWrite)},
				{"Create child", func() error { _, err := anon.Create(n+"/new", nil, 0, openACL); return err }, need(zk.PermCreate)},
				{"Delete child", func() error { return anon.Delete(n+"/kid", -1) }, need(zk.PermDelete)},
				{"SetACL", func() error { _, err := anon.SetACL(n, acl, -1); return err }, need(zk.PermAdmin)},
			} {
				a.name = fmt.Sprintf("%s on a node granting the world %s", a.name, p.name)
				a.check(t)
			}
		}
	}},
	{"acl/create checks the ACL, the parent's existence, CREATE on it, then the node's absence", func(t *testing.T, h *harness) {
		owner, anon := h.aclConnect(aclOwner), h.aclConnect([2]string{})
		p := h.path("p")
		h.guarded(owner, p, nil, worldEntry(zk.PermRead))
		mustCreateACL(t, owner, p+"/c")
		for _, a := range []attempt{
			{"Create with an empty ACL under an unwritable parent", func() error { _, err := anon.Create(p+"/c", nil, 0, nil); return err }, zk.ErrInvalidACL},
			{"Create with ACL auth (no auth added)", func() error { _, err := anon.Create(p+"/c", nil, 0, zk.AuthACL(zk.PermAll)); return err }, zk.ErrInvalidACL},
			{"Create under a missing parent below it", func() error { _, err := anon.Create(p+"/zz/c", nil, 0, openACL); return err }, zk.ErrNoNode},
			{"Create of an existing node without CREATE", func() error { _, err := anon.Create(p+"/c", nil, 0, openACL); return err }, zk.ErrNoAuth},
			{"Create of a new node without CREATE", func() error { _, err := anon.Create(p+"/d", nil, 0, openACL); return err }, zk.ErrNoAuth},
			{"Create of an existing node with CREATE", func() error { _, err := owner.Create(p+"/c", nil, 0, openACL); return err }, zk.ErrNodeExists},
		} {
			a.check(t)
		}
	}},
	{"acl/delete checks DELETE on the parent before the node's existence and version", func(t *testing.T, h *harness) {
		owner, anon := h.aclConnect(aclOwner), h.aclConnect([2]string{})
		p := h.path("p")
		h.guarded(owner, p, nil, worldEntry(zk.PermRead))
		mustCreateACL(t, owner, p+"/c")
		mustCreateACL(t, owner, p+"/c/g")
		for _, a := range []attempt{
			{"Delete of a missing node", func() error { return anon.Delete(p+"/missing", -1) }, zk.ErrNoAuth},
			{"Delete with a wrong version", func() error { return anon.Delete(p+"/c", 9) }, zk.ErrNoAuth},
			{"Delete of a node with children", func() error { return anon.Delete(p+"/c", -1) }, zk.ErrNoAuth},
			{"Delete of a missing node under a missing parent", func() error { return anon.Delete(p+"/zz/c", -1) }, zk.ErrNoNode},
			{"Delete of the guarded node itself (its parent is open)", func() error { return anon.Delete(p, -1) }, zk.ErrNotEmpty},
			{"Delete with DELETE, wrong version", func() error { return owner.Delete(p+"/c/g", 9) }, zk.ErrBadVersion},
		} {
			a.check(t)
		}
	}},
	{"acl/setData and check check the node's existence, the permission, then the version", func(t *testing.T, h *harness) {
		owner, anon := h.aclConnect(aclOwner), h.aclConnect([2]string{})
		p := h.path("p")
		h.guarded(owner, p, nil)
		for _, a := range []attempt{
			{"Set of a missing node", func() error { _, err := anon.Set(p+"/missing", nil, -1); return err }, zk.ErrNoNode},
			{"Set without WRITE, wrong version", func() error { _, err := anon.Set(p, nil, 7); return err }, zk.ErrNoAuth},
			{"Get without READ of a missing child", func() error { _, _, err := anon.Get(p + "/missing"); return err }, zk.ErrNoNode},
			{"check without READ, wrong version", func() error { _, err := anon.Multi(&zk.CheckVersionRequest{Path: p, Version: 3}); return err }, zk.ErrNoAuth},
			{"check without READ, right version", func() error { _, err := anon.Multi(&zk.CheckVersionRequest{Path: p, Version: 0}); return err }, zk.ErrNoAuth},
			{"check with READ, wrong version", func() error { _, err := owner.Multi(&zk.CheckVersionRequest{Path: p, Version: 3}); return err }, zk.ErrBadVersion},
		} {
			a.check(t)
		}
	}},
	{"acl/setACL checks the ACL, the node's existence, ADMIN, then the aversion, which it increments", func(t *testing.T, h *harness) {
		owner, anon := h.aclConnect(aclOwner), h.aclConnect([2]string{})
		p := h.path("p")
		h.guarded(owner, p, nil)
		for _, a := range []attempt{
			{"SetACL with an empty ACL", func() error { _, err := anon.SetACL(p, nil, 5); return err }, zk.ErrInvalidACL},
			{"SetACL of a missing node", func() error { _, err := anon.SetACL(p+"/missing", openACL, 5); return err }, zk.ErrNoNode},
			{"SetACL without ADMIN, wrong aversion", func() error { _, err := anon.SetACL(p, openACL, 5); return err }, zk.ErrNoAuth},
			{"SetACL with ADMIN, wrong aversion", func() error { _, err := owner.SetACL(p, openACL, 5); return err }, zk.ErrBadVersion},
		} {
			a.check(t)
		}
		acl := []zk.ACL{digestEntry(zk.PermAll, aclOwner), worldEntry(zk.PermRead)}
		st, err := owner.SetACL(p, acl, 0)
		if err != nil || st.Aversion != 1 || st.Version != 0 {
			t.Fatalf("SetACL(aversion 0) = %v, %v; want aversion 1, version 0", st, err)
		}
		expectErr(t, func() error { _, err := owner.SetACL(p, acl, 0); return err }(), zk.ErrBadVersion, "SetACL with the old aversion")
		_, got, err := owner.GetACL(p)
		if err != nil || got.Aversion != 1 {
			t.Fatalf("GetACL stat %v, %v; want aversion 1", got, err)
		}
		expectACL(t, owner, p, acl)
	}},
	{"acl/getACL needs READ or ADMIN and shows digest hashes only with ADMIN", func(t *testing.T, h *harness) {
		owner, anon := h.aclConnect(aclOwner), h.aclConnect([2]string{})
		r, a := h.path("r"), h.path("a")
		h.guarded(owner, r, nil, worldEntry(zk.PermRead))
		h.guarded(owner, a, nil, worldEntry(zk.PermAdmin))
		redacted := zk.ACL{Perms: zk.PermAll, Scheme: "digest", ID: aclOwner[0] + ":x"}
		expectACL(t, anon, r, []zk.ACL{worldEntry(zk.PermRead), redacted})
		expectACL(t, anon, a, []zk.ACL{worldEntry(zk.PermAdmin), digestEntry(zk.PermAll, aclOwner)})
		expectACL(t, owner, r, []zk.ACL{worldEntry(zk.PermRead), digestEntry(zk.PermAll, aclOwner)})
		_, err := anon.Create(h.path("none"), nil, 0, []zk.ACL{worldEntry(0)})
		expectErr(t, err, nil, "Create with world:anyone and no permissions")
		_, _, err = anon.GetACL(h.path("none"))
		expectErr(t, err, zk.ErrNoAuth, "GetACL of a node granting nothing")
		root, st, err := anon.GetACL("/zookeeper/config")
		if err != nil || !slices.Equal(root, []zk.ACL{worldEntry(zk.PermRead)}) || st.Aversion != -1 {
			t.Fatalf("GetACL(/zookeeper/config) = %s %v, %v; want [world:anyone:1] with aversion -1", formatACL(root), st, err)
		}
	}},
	{"acl/create and setACL validate ids and store the ACL without repeats", func(t *testing.T, h *harness) {
		c := h.aclConnect([2]string{})
		bad := []zk.ACL{
			{Perms: zk.PermAll, Scheme: "digest", ID: "nocolon"}, {Perms: zk.PermAll, Scheme: "digest", ID: "user:"},
			{Perms: zk.PermAll, Scheme: "digest", ID: "a:b:c"}, {Perms: zk.PermAll, Scheme: "world", ID: "someone"},
			{Perms: zk.PermAll, Scheme: "foo", ID: "bar"}, {Perms: zk.PermAll, Scheme: "super", ID: ""},
			{Perms: zk.PermAll, Scheme: "x509", ID: "CN=a"}, {Perms: zk.PermAll, Scheme: "sasl", ID: "a"},
			{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1/33"}, {Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0"},
			{Perms: zk.PermAll, Scheme: "ip", ID: "::1"}, {Perms: zk.PermAll, Scheme: "ip", ID: "256.0.0.1"},
			{Perms: zk.PermAll, Scheme: "ip", ID: "1.2.3.4/x"},
		}
		for _, a := range bad {
			_, err := c.Create(h.path("v"), nil, 0, []zk.ACL{worldEntry(zk.PermAll), a})
			expectErr(t, err, zk.ErrInvalidACL, fmt.Sprintf("Create with %s", formatACL([]zk.ACL{a})))
		}
		expectAbsent(t, c, h.path("v"))
		good := []zk.ACL{
			{Perms: zk.PermAll, Scheme: "digest", ID: ":hash"}, {Perms: zk.PermAll, Scheme: "ip", ID: "+1.02.3.4/-0"},
			{Perms: 99, Scheme: "world", ID: "anyone"}, {Perms: zk.PermRead, Scheme: "ip", ID: "10.0.0.0/8"},
		}
		in := append(slices.Clone(good), good[2], good[0])
		if _, err := c.Create(h.path("v"), nil, 0, in); err != nil {
			t.Fatalf("Create with %s: %v", formatACL(in), err)
		}
		expectACL(t, c, h.path("v"), good)
		_, err := c.SetACL(h.path("v"), []zk.ACL{worldEntry(zk.PermAll), bad[0]}, -1)
		expectErr(t, err, zk.ErrInvalidACL, "SetACL with digest:nocolon")
	}},
	{"acl/auth expands to every digest identity of the connection, in the server's order", func(t *testing.T, h *harness) {
		c := h.aclConnect([2]string{})
		for _, up := range []string{"alice:1", "bob:2", "carol:3", "alice:1"} {
			if err := c.AddAuth("digest", []byte(up)); err != nil {
				t.Fatalf("AddAuth(digest, %s): %v", up, err)
			}
		}
		if err := c.AddAuth("ip", []byte("ignored")); err != nil {
			t.Fatalf("AddAuth(ip): %v", err)
		}
		acl := []zk.ACL{{Perms: zk.PermRead | zk.PermAdmin, Scheme: "auth", ID: "whatever"}, worldEntry(zk.PermRead)}
		if _, err := c.Create(h.path("n"), nil, 0, acl); err != nil {
			t.Fatalf("Create with auth: %v", err)
		}
		var want []zk.ACL
		for _, u := range [][2]string{{"carol", "3"}, {"alice", "1"}, {"bob", "2"}} {
			want = append(want, digestEntry(zk.PermRead|zk.PermAdmin, u))
		}
		expectACL(t, c, h.path("n"), append(want, worldEntry(zk.PermRead)))
		if _, err := c.SetACL(h.path("n"), append(zk.AuthACL(zk.PermAll), worldEntry(zk.PermAll)), -1); err != nil {
			t.Fatalf("SetACL with auth: %v", err)
		}
	}},
	{"acl/digest auth grants the identity's permissions; a wrong password grants nothing", func(t *testing.T, h *harness) {
		owner, other, wrong := h.aclConnect(aclOwner), h.aclConnect(aclOther), h.aclConnect([2]string{aclOwner[0], "wrong"})
		p := h.path("p")
		h.guarded(owner, p, []byte("secret"), digestEntry(zk.PermRead, aclOther))
		if data, _, err := other.Get(p); err != nil || string(data) != "secret" {
			t.Fatalf("Get with READ by digest = %q, %v", data, err)
		}
		_, err := other.Set(p, nil, -1)
		expectErr(t, err, zk.ErrNoAuth, "Set with READ only")
		_, _, err = wrong.Get(p)
		expectErr(t, err, zk.ErrNoAuth, "Get with the owner's name and a wrong password")
		if _, err := owner.Set(p, []byte("new"), -1); err != nil {
			t.Fatalf("Set by the owner: %v", err)
		}
	}},
	{"acl/ip matches the client's address, with a /bits mask", func(t *testing.T, h *harness) {
		owner, anon := h.aclConnect(aclOwner), h.aclConnect([2]string{})
		loop, ten, exact := h.path("loop"), h.path("ten"), h.path("exact")
		h.guarded(owner, loop, nil, zk.ACL{Perms: zk.PermRead, Scheme: "ip", ID: "127.0.0.0/8"})
		h.guarded(owner, ten, nil, zk.ACL{Perms: zk.PermRead, Scheme: "ip", ID: "10.0.0.0/8"})
		h.guarded(owner, exact, nil, zk.ACL{Perms: zk.PermRead, Scheme: "ip", ID: "127.0.0.1"})
		for _, a := range []attempt{
			{"Get under ip:127.0.0.0/8 READ", func() error { _, _, err := anon.Get(loop); return err }, nil},
			{"Set under ip:127.0.0.0/8 READ", func() error { _, err := anon.Set(loop, nil, -1); return err }, zk.ErrNoAuth},
			{"Get under ip:10.0.0.0/8 READ", func() error { _, _, err := anon.Get(ten); return err }, zk.ErrNoAuth},
			{"Get under ip:127.0.0.1 READ", func() error { _, _, err := anon.Get(exact); return err }, nil},
		} {
			a.check(t)
		}
	}},
	{"acl/addAuth with an unknown scheme fails and the server closes the connection; the session survives", func(t *testing.T, h *harness) {
		c := h.aclConnect([2]string{})
		sid := c.SessionID()
		mark, _ := c.log.snapshot()
		expectErr(t, c.AddAuth("foo", []byte("bar")), zk.ErrAuthFailed, "AddAuth(foo)")
		i := c.waitSessionEvent(len(mark), zk.StateDisconnected)
		c.waitSessionEvent(i+1, zk.StateHasSession)
		if c.SessionID() != sid {
			t.Fatalf("session %#x after the auth failure, want %#x", c.SessionID(), sid)
		}
		mustCreate(t, c, h.path("after"), nil, zk.FlagPersistent)
		expectErr(t, c.AddAuth("", []byte("bar")), zk.ErrAuthFailed, "AddAuth with an empty scheme")
	}},
	{"acl/a multi op without permission fails the multi like any failing op", func(t *testing.T, h *harness) {
		owner, anon := h.aclConnect(aclOwner), h.aclConnect([2]string{})
		p := h.path("p")
		h.guarded(owner, p, nil, worldEntry(zk.PermRead))
		mustCreate(t, anon, h.path("open"), nil, zk.FlagPersistent)
		res, err := anon.Multi(
			&zk.SetDataRequest{Path: h.path("open"), Version: -1},
			&zk.SetDataRequest{Path: p, Version: -1},
			&zk.CreateRequest{Path: h.path("x"), Acl: openACL},
		)
		expectErr(t, err, zk.ErrNoAuth, "Multi with a set lacking WRITE")
		if len(res) != 3 || res[0].Error != nil || !isError(res[1].Error, zk.ErrNoAuth) || res[2].Error == nil || res[2].Error.Error() != runtimeInconsistencyText {
			t.Fatalf("results %v, want [nil, ErrNoAuth, %s]", res, runtimeInconsistencyText)
		}
		if st := mustStat(t, anon, h.path("open")); st.Version != 0 {
			t.Fatalf("the set before the failing op was applied: version %d", st.Version)
		}
		res, err = anon.Multi(&zk.CreateRequest{Path: h.path("y"), Acl: openACL}, &zk.CreateRequest{Path: h.path("z"), Acl: zk.AuthACL(zk.PermAll)})
		expectErr(t, err, zk.ErrInvalidACL, "Multi with a create of ACL auth and no auth")
		if len(res) != 2 || res[0].Error != nil || !isError(res[1].Error, zk.ErrInvalidACL) {
			t.Fatalf("results %v, want [nil, ErrInvalidACL]", res)
		}
		expectAbsent(t, anon, h.path("y"))
	}},
	{"acl/watch events reach only sessions that may read the node, and the watch is spent", func(t *testing.T, h *harness) {
		owner, anon := h.aclConnect(aclOwner), h.aclConnect([2]string{})
		p := h.path("p")
		h.guarded(owner, p, nil)
		data := setWatch(t, anon, existsWatch, p)
		created := setWatch(t, anon, existsWatch, h.path("q"))
		children := setWatch(t, anon, childrenWatch, h.base)
		mustSet(t, owner.session, p, []byte("1"))
		h.guarded(owner, h.path("q"), nil)
		expectWatchEvent(t, children, zk.EventNodeChildrenChanged, h.base, "ChildrenW of the open parent, on the create of an unreadable child")
		expectNoEvent(t, anon.session, data, "ExistsW on an unreadable node, on its setData")
		expectNoEvent(t, anon.session, created, "ExistsW on a missing node, on its create as unreadable")
		if _, err := owner.SetACL(p, openACL, -1); err != nil {
			t.Fatalf("SetACL(open): %v", err)
		}
		mustSet(t, owner.session, p, []byte("2"))
		expectNoEvent(t, anon.session, data, "ExistsW on a node made readable after its filtered event (the watch was spent)")
	}},
}

// mustCreateACL creates path with the open ACL through c.
func mustCreateACL(t *testing.T, c *aclSession, path string) {
	t.Helper()
	mustCreate(t, c.session, path, nil, zk.FlagPersistent)
}

// aclSeverRules run when the target can sever connections.
var aclSeverRules = []rule{
	{"acl/auth is sent again after a dropped connection", func(t *testing.T, h *harness) {
		owner := h.aclConnect(aclOwner)
		p := h.path("p")
		h.guarded(owner, p, []byte("secret"))
		mark, _ := owner.log.snapshot()
		h.target.Sever(t, owner.Conn)
		i := owner.waitSessionEvent(len(mark), zk.StateDisconnected)
		owner.waitSessionEvent(i+1, zk.StateHasSession)
		if data, _, err := owner.Get(p); err != nil || string(data) != "secret" {
			t.Fatalf("Get after reconnecting = %q, %v; want the data (the auth resent)", data, err)
		}
	}},
}

// aclSuperRules run when the target names its super user (Target.SuperUser).
var aclSuperRules = []rule{
	{"acl/the super user passes every check", func(t *testing.T, h *harness) {
		owner := h.aclConnect(aclOwner)
		user, password, _ := strings.Cut(h.target.SuperUser, ":")
		super := h.aclConnect([2]string{user, password})
		p := h.path("p")
		h.guarded(owner, p, []byte("secret"), zk.ACL{Perms: zk.PermRead, Scheme: "ip", ID: "10.0.0.0/8"})
		if data, _, err := super.Get(p); err != nil || string(data) != "secret" {
			t.Fatalf("Get as super = %q, %v", data, err)
		}
		for _, a := range []attempt{
			{"Set as super", func() error { _, err := super.Set(p, nil, -1); return err }, nil},
			{"Create child as super", func() error { _, err := super.Create(p+"/c", nil, 0, zk.AuthACL(zk.PermAll)); return err }, nil},
			{"Delete child as super", func() error { return super.Delete(p+"/c", -1) }, nil},
		} {
			a.check(t)
		}
		// Super sees the hashes, and "auth" expands to its digest alone (not to a super identity).
		expectACL(t, super, p, []zk.ACL{{Perms: zk.PermRead, Scheme: "ip", ID: "10.0.0.0/8"}, digestEntry(zk.PermAll, aclOwner)})
		if _, err := super.Create(h.path("s"), nil, 0, zk.AuthACL(zk.PermAll)); err != nil {
			t.Fatalf("Create with auth as super: %v", err)
		}
		expectACL(t, super, h.path("s"), []zk.ACL{digestEntry(zk.PermAll, [2]string{user, password})})
	}},
}

// skipACLRules run on a target with zookeeper.skipACL=yes (Target.SkipACL).
var skipACLRules = []rule{
	{"skipacl/with skipACL=yes no ACL is checked: anyone reads, writes, creates, deletes and sets ACLs; ACLs are still validated", func(t *testing.T, h *harness) {
		owner, anon := h.aclConnect(aclOwner), h.aclConnect([2]string{})
		g := h.path("g")
		h.guarded(owner, g, []byte("g")) // the owner's digest alone
		badACL := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "no-colon"}}
		for _, a := range []attempt{
			{"anonymous Get", func() error { _, _, err := anon.Get(g); return err }, nil},
			{"anonymous GetACL", func() error { _, _, err := anon.GetACL(g); return err }, nil},
			{"anonymous Set", func() error { _, err := anon.Set(g, []byte("a"), -1); return err }, nil},
			{"anonymous Create of a child", func() error { _, err := anon.Create(g+"/c", nil, 0, openACL); return err }, nil},
			{"anonymous Children", func() error { _, _, err := anon.Children(g); return err }, nil},
			{"anonymous Delete of the child", func() error { return anon.Delete(g+"/c", -1) }, nil},
			{"anonymous SetACL with a malformed ACL", func() error { _, err := anon.SetACL(g, badACL, -1); return err }, zk.ErrInvalidACL},
			{"anonymous SetACL", func() error { _, err := anon.SetACL(g, []zk.ACL{digestEntry(zk.PermRead, aclOther)}, -1); return err }, nil},
			{"anonymous Set after the ACL names another user's READ alone", func() error { _, err := anon.Set(g, []byte("b"), -1); return err }, nil},
		} {
			a.check(t)
		}
		if data, _, err := owner.Get(g); err != nil || string(data) != "b" {
			t.Fatalf("Get(%q) = %q, %v; want the anonymous session's data b", g, data, err)
		}
	}},
	{"skipacl/with skipACL=yes and reconfigEnabled anyone may reconfigure", func(t *testing.T, h *harness) {
		if r := h.target.Reconfig; r == nil || !r.Enabled {
			t.Fatal("the rule needs a target with reconfigEnabled (Target.Reconfig.Enabled)")
		}
		anon := h.reconfigConnect([2]string{})
		before, st := readConfig(t, anon)
		if _, err := anon.IncrementalReconfig(nil, nil, st.Mzxid); err != nil {
			t.Fatalf("anonymous IncrementalReconfig(nothing, from version %#x): %v", st.Mzxid, err)
		}
		if after, st2 := readConfig(t, anon); !slices.Equal(after, before) || st2.Mzxid <= st.Mzxid {
			t.Fatalf("after an empty reconfig /zookeeper/config is %q %s; want %q at a version after %#x", after, formatStat(st2), before, st.Mzxid)
		}
	}},
}
