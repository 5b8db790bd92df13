package core

import (
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestAuthOrder checks the order "auth" expands to against what ZooKeeper 3.8 returned for the same users
// (measured: addAuth u1, u2, u1 gave u2, u1; alice, bob, carol, dave, eve gave carol, eve, alice, bob, dave).
func TestAuthOrder(t *testing.T) {
	for _, tc := range []struct{ add, want string }{
		{"u1:p1 u2:p2 u1:p1", "u2 u1"},
		{"alice:1 bob:2 carol:3 dave:4 eve:5", "carol eve alice bob dave"},
	} {
		c := New(1, 0)
		sid := c.createSession(0)
		for _, up := range strings.Fields(tc.add) {
			if err := c.addAuth(sid, "digest", []byte(up)); err != nil {
				t.Fatal(err)
			}
		}
		var users []string
		for _, id := range c.authOrder(sid) {
			user, _, _ := strings.Cut(id.id, ":")
			users = append(users, user)
		}
		if got := strings.Join(users, " "); got != tc.want {
			t.Errorf("auth after %s expands to %s, want %s", tc.add, got, tc.want)
		}
	}
}

// TestAuthInfoOrderSASL checks the order of a connection's identities (whoAmI's, the auth scheme's) with a
// sasl one against what ZooKeeper 3.8's whoAmI listed for a connection from 127.0.0.1 (measured: jaasuser
// after the ip identity, nosuch before it), and that "auth" expands to the sasl identity when the sasl
// scheme is on and not when it is off.
func TestAuthInfoOrderSASL(t *testing.T) {
	for _, tc := range []struct{ user, want string }{
		{"jaasuser", "ip:127.0.0.1 sasl:jaasuser"},
		{"nosuch", "sasl:nosuch ip:127.0.0.1"},
	} {
		for _, on := range []bool{false, true} {
			c := New(1, 0)
			c.saslACL = on
			sid := c.createSession(0)
			c.resetAuth(sid, "127.0.0.1")
			c.addSASL(sid, tc.user)
			var got []string
			for _, id := range c.authInfoOrder(c.sessions[sid]) {
				got = append(got, id.scheme+":"+id.id)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("identities after a sasl login as %s: %v, want %s", tc.user, got, tc.want)
			}
			acl, err := c.fixupACL(sid, []zk.ACL{{Perms: zk.PermRead, Scheme: "auth"}})
			switch {
			case on && (err != nil || len(acl) != 1 || acl[0] != zk.ACL{Perms: zk.PermRead, Scheme: "sasl", ID: tc.user}):
				t.Errorf("sasl scheme on: auth ACL of sasl:%s is %v, %v; want [{1 sasl %s}]", tc.user, acl, err, tc.user)
			case !on && err != zk.ErrInvalidACL:
				t.Errorf("sasl scheme off: auth ACL of sasl:%s is %v, %v; want zk.ErrInvalidACL", tc.user, acl, err)
			}
		}
	}
}

// TestFixupACLValidation checks the ids ZooKeeper 3.8 accepted and refused (measured).
func TestFixupACLValidation(t *testing.T) {
	ok := map[string]bool{
		"digest:nocolon": false, "digest:user:": false, "digest::hash": true, "digest:a:b:c": false, "digest:": false,
		"world:someone": false, "foo:bar": false, "super:": false, "x509:CN=a": false, "sasl:a": false,
		"ip:127.0.0.0/8": true, "ip:127.0.0.1": true, "ip:127.0.0.1/33": false, "ip:127.0.0": false, "ip:::1": false,
		"ip:256.0.0.1": false, "ip:1.2.3.4/x": false, "ip:+1.02.3.4/-0": true, "world:anyone": true,
	}
	c := New(1, 0)
	sid := c.createSession(0)
	for id, want := range ok {
		scheme, rest, _ := strings.Cut(id, ":")
		_, err := c.fixupACL(sid, []zk.ACL{{Perms: zk.PermAll, Scheme: scheme, ID: rest}})
		if got := err == nil; got != want {
			t.Errorf("fixupACL(%s) error %v, want accepted=%t", id, err, want)
		}
	}
	c.saslACL = true // SASLAuthenticationProvider configured (measured with kazoo)
	for id, want := range map[string]bool{"jaasuser": true, "a@b@c": false} {
		_, err := c.fixupACL(sid, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: id}})
		if got := err == nil; got != want {
			t.Errorf("sasl scheme on: fixupACL(sasl:%s) error %v, want accepted=%t", id, err, want)
		}
	}
}

func TestIPMatches(t *testing.T) {
	for _, tc := range []struct {
		ip, expr string
		want     bool
	}{
		{"127.0.0.1", "127.0.0.0/8", true}, {"127.0.0.1", "10.0.0.0/8", false}, {"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.1", "0.0.0.0/0", true}, {"127.0.0.1", "127.0.0.2", false}, {"127.0.0.1", "127.0.0.3/31", false},
		{"127.0.0.1", "127.0.0.0/31", true}, {"::1", "127.0.0.1", false},
	} {
		if got := ipMatches(tc.ip, tc.expr); got != tc.want {
			t.Errorf("ipMatches(%s, %s) = %t, want %t", tc.ip, tc.expr, got, tc.want)
		}
	}
}

// TestAuthInfoOrderSuper checks a super user's identities (whoAmI's) against what ZooKeeper 3.8's whoAmI
// listed for a connection from 127.0.0.1 (measured through rawzk on Debian's 3.8: the digest super user
// boss, -Dzookeeper.DigestAuthenticationProvider.superDigest, and the x509 super user CN=localhost,
// -Dzookeeper.X509AuthenticationProvider.superUser, in TestStandInTLS): super:"" or super:SUBJECT among the
// others, where its hash puts it; a certificate of another subject is not super.
func TestAuthInfoOrderSuper(t *testing.T) {
	c := New(1, 0)
	c.super = zk.DigestACL(zk.PermAll, "boss", "pw")[0].ID
	c.x509ACL, c.x509Super = true, "CN=localhost"
	identities := func(sid int64) string {
		var got []string
		for _, id := range c.authInfoOrder(c.sessions[sid]) {
			got = append(got, id.scheme+":"+id.id)
		}
		return strings.Join(got, " ")
	}
	digest := c.createSession(0)
	c.resetAuth(digest, "127.0.0.1")
	if err := c.addAuth(digest, "digest", []byte("boss:pw")); err != nil {
		t.Fatal(err)
	}
	if got, want := identities(digest), "super: ip:127.0.0.1 digest:"+c.super; got != want || !c.Authenticated(digest, "super") {
		t.Errorf("the digest super user: %s (super %v), want %s", got, c.Authenticated(digest, "super"), want)
	}
	for _, tc := range []struct {
		dn, want string
		super    bool
	}{
		{"CN=localhost", "super:CN=localhost x509:CN=localhost ip:127.0.0.1", true},
		{`CN=client,OU=clients,O=zkmodel\, tests`, `ip:127.0.0.1 x509:CN=client,OU=clients,O=zkmodel\, tests`, false},
	} {
		sid := c.createSession(0)
		c.resetAuth(sid, "127.0.0.1")
		c.addX509(sid, tc.dn)
		if got := identities(sid); got != tc.want || c.Authenticated(sid, "super") != tc.super {
			t.Errorf("certificate %s: %s (super %v), want %s (super %v)", tc.dn, got, c.Authenticated(sid, "super"), tc.want, tc.super)
		}
	}
}
