package conformance

import (
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
)

// SASL describes the target's SASL logins: DIGEST-MD5 users of its JAAS Server section, one of them the super
// user (-Dzookeeper.superUser).
type SASL struct {
	// Connect opens a session and logs its connection in by SASL DIGEST-MD5 as user with password, returning
	// once the login has succeeded, as Target.Connect does otherwise. The Conn must have ACLConn's methods,
	// and ReconfigConn's for the reconfig rules.
	Connect func(t *testing.T, user, password string) (Conn, <-chan zk.Event)
	// SuperUser is the super user's name and password: the user -Dzookeeper.superUser names.
	SuperUser [2]string
	// User is another user of the JAAS section, who is not super.
	User [2]string
}

// saslConnect opens a session logged in by SASL as user.
func (h *harness) saslConnect(user [2]string) *reconfigSession {
	h.t.Helper()
	c, events := h.target.SASL.Connect(h.t, user[0], user[1])
	if c == nil || events == nil {
		h.t.Fatal("SASL.Connect returned a nil Conn or event channel")
	}
	s := &session{Conn: c, t: h.t, log: newEventLog(events)}
	h.t.Cleanup(s.close)
	s.waitSessionEvent(0, zk.StateHasSession)
	a, ok := c.(ACLConn)
	if !ok {
		h.t.Fatalf("the SASL target's Conn (%T) has no AddAuth, GetACL and SetACL", c)
	}
	as := &aclSession{s, a}
	h.acl = append(h.acl, as)
	rs := &reconfigSession{aclSession: as}
	rs.ReconfigConn, _ = c.(ReconfigConn) // checked by the rules that reconfigure
	return rs
}

// saslRules run when the target has SASL logins (Target.SASL).
var saslRules = []rule{
	{"sasl/the SASL super user passes every ACL check; another SASL user only what the ACL grants it", func(t *testing.T, h *harness) {
		owner := h.aclConnect(aclOwner)
		super, user := h.saslConnect(h.target.SASL.SuperUser), h.saslConnect(h.target.SASL.User)
		g := h.path("g")
		h.guarded(owner, g, []byte("g")) // the owner's digest alone may do anything
		mustCreate(t, owner, g+"/k", nil, zk.FlagPersistent)
		// On an ensemble the SASL sessions may sit on servers that have not applied the owner's creates yet,
		// and the owner on one that has not applied the super user's writes: a session sees another's
		// writes only after a sync.
		mustSync(t, super, g+"/k")
		mustSync(t, user, g+"/k")
		for _, a := range []attempt{
			{"the SASL user's Get", func() error { _, _, err := user.Get(g); return err }, zk.ErrNoAuth},
			{"the SASL user's Set", func() error { _, err := user.Set(g, []byte("u"), -1); return err }, zk.ErrNoAuth},
			{"the SASL user's GetACL", func() error { _, _, err := user.GetACL(g); return err }, zk.ErrNoAuth},
			{"the SASL user's SetACL", func() error { _, err := user.SetACL(g, openACL, -1); return err }, zk.ErrNoAuth},
			{"the SASL super user's Get", func() error { _, _, err := super.Get(g); return err }, nil},
			{"the SASL super user's Set", func() error { _, err := super.Set(g, []byte("s"), -1); return err }, nil},
			{"the SASL super user's Children", func() error { _, _, err := super.Children(g); return err }, nil},
			{"the SASL super user's Create", func() error { _, err := super.Create(g+"/s", nil, 0, openACL); return err }, nil},
			{"the SASL super user's Delete", func() error { return super.Delete(g+"/k", -1) }, nil},
		} {
			a.check(t)
		}
		mustSync(t, owner, g)
		data, _, err := owner.Get(g)
		if err != nil || string(data) != "s" {
			t.Fatalf("Get(%q) by its owner = %q, %v; want the super user's data s", g, data, err)
		}
		want := []zk.ACL{worldEntry(zk.PermRead), digestEntry(zk.PermAll, aclOwner)}
		if _, err := super.SetACL(g, want, -1); err != nil {
			t.Fatalf("the SASL super user's SetACL: %v", err)
		}
		mustSync(t, owner, g)
		mustSync(t, user, g)
		acl, _, err := owner.GetACL(g)
		if err != nil || !slices.Equal(acl, want) {
			t.Fatalf("GetACL(%q) = %s, %v; want the super user's %s", g, formatACL(acl), err, formatACL(want))
		}
		if _, _, err := user.Get(g); err != nil {
			t.Fatalf("the SASL user's Get after the super user opened the node to the world for reading: %v", err)
		}
	}},
}

// saslReconfigRules run when the target has SASL logins and reconfigEnabled.
var saslReconfigRules = []rule{
	{"reconfig/the SASL super user may reconfigure, another SASL user may not", func(t *testing.T, h *harness) {
		super, user := h.saslConnect(h.target.SASL.SuperUser), h.saslConnect(h.target.SASL.User)
		if super.ReconfigConn == nil {
			t.Fatalf("the SASL target's Conn (%T) has no IncrementalReconfig and Reconfig", super.Conn)
		}
		before, st := readConfig(t, super)
		_, err := user.IncrementalReconfig(nil, nil, -1)
		expectErr(t, err, zk.ErrNoAuth, "the SASL user's IncrementalReconfig(nothing)")
		if after, st2 := readConfig(t, super); !slices.Equal(after, before) || st2 != st {
			t.Fatalf("the refused reconfig changed /zookeeper/config: %q %s, was %q %s", after, formatStat(st2), before, formatStat(st))
		}
		if _, err := super.IncrementalReconfig(nil, nil, st.Mzxid); err != nil {
			t.Fatalf("the SASL super user's IncrementalReconfig(nothing, from version %#x): %v", st.Mzxid, err)
		}
		if after, st2 := readConfig(t, super); !slices.Equal(after, before) || st2.Mzxid <= st.Mzxid {
			t.Fatalf("after the super user's empty reconfig /zookeeper/config is %q %s; want %q at a version after %#x", after, formatStat(st2), before, st.Mzxid)
		}
	}},
}
