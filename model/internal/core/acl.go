package core

import (
	"crypto/sha1"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/go-zookeeper/zk"
)

// This file is the core's access control, as ZooKeeper 3.8 does it (measured; see conformance/SEMANTICS.md,
// section 10): the identities a connection holds (its IP, the digests addAuth added, super), the ACL a create
// or setACL stores (fixupACL: validated, deduplicated, "auth" expanded), and the permission checks. Like the
// rest of the core it is pure: the identities are state of the session, reset by the server whenever the
// session gets a new connection.

// inProcessIP is the address the model's own clients (*Conn) and in-process wire clients (Dialer, ConnectZK)
// connect from, as far as the ip scheme is concerned: they are on this machine.
const inProcessIP = "127.0.0.1"

// sessionAuth is what a session's current connection has authenticated as. ZooKeeper keeps it per
// connection: a new connection starts with its IP alone, and clients such as go-zookeeper send their
// credentials again.
type sessionAuth struct {
	ip    string   // the connection's remote address, the "ip" scheme's identity
	ids   []authID // digest ids ("user:base64(sha1(user:password))") and sasl ids (the user), in the order added, without repeats
	super bool     // a digest is the server's super digest, or the SASL user its super user: every check passes
}

// authID is one identity a connection holds besides its IP: scheme "digest", "sasl" or "x509".
type authID struct{ scheme, id string }

// has reports whether the connection holds the identity.
func (a *sessionAuth) has(scheme, id string) bool {
	return slices.Contains(a.ids, authID{scheme, id})
}

// add adds the identity unless the connection holds it already.
func (a *sessionAuth) add(scheme, id string) {
	if !a.has(scheme, id) {
		a.ids = append(a.ids, authID{scheme, id})
	}
}

// addSASL records that session sid's connection has logged in as user by SASL: the identity sasl:user, and
// super when user is the server's SASL super user (zookeeper.superUser).
func (c *Core) addSASL(sid int64, user string) {
	s, ok := c.sessions[sid]
	if !ok {
		return
	}
	s.auth.add("sasl", user)
	if c.saslSuper != "" && user == c.saslSuper {
		s.auth.super = true
	}
}

// addX509 records that session sid's connection came with a client certificate whose subject is dn (as
// X500Principal.getName writes it): the identity x509:dn, which 3.8's X509AuthenticationProvider gives a TLS
// connection when its handshake completes.
func (c *Core) addX509(sid int64, dn string) {
	if s, ok := c.sessions[sid]; ok {
		s.auth.add("x509", dn)
	}
}

// resetAuth gives session sid a new connection from ip: the identities of the old one are gone.
func (c *Core) resetAuth(sid int64, ip string) {
	if s, ok := c.sessions[sid]; ok {
		s.auth = sessionAuth{ip: ip}
	}
}

// addAuth is an auth packet: scheme "digest" adds the identity user:base64(sha1(data)) (and super, when it is
// the server's super digest); "ip" adds the connection's address, which it always has; any other scheme is
// zk.ErrAuthFailed, after which the server closes the connection.
func (c *Core) addAuth(sid int64, scheme string, data []byte) error {
	s, ok := c.sessions[sid]
	if !ok {
		return zk.ErrSessionExpired
	}
	switch scheme {
	case "digest":
		id := digestID(data)
		if c.super != "" && id == c.super {
			s.auth.super = true
		}
		s.auth.add("digest", id)
		return nil
	case "ip":
		return nil
	}
	return zk.ErrAuthFailed
}

// digestID is the identity the digest scheme gives user:password: the user, then the base64 SHA-1 of the whole
// string (the password may hold colons; a string without one is all user).
func digestID(auth []byte) string {
	user, _, _ := strings.Cut(string(auth), ":")
	sum := sha1.Sum(auth)
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// anyonePerms returns the permissions an ACL grants world:anyone: the checks' fast path.
func anyonePerms(acl []zk.ACL) int32 {
	var p int32
	for _, a := range acl {
		if a.Scheme == "world" && a.ID == "anyone" {
			p |= a.Perms
		}
	}
	return p
}

// allowed reports whether session sid may do what perm (one or more zk.Perm* bits: any of them suffices)
// needs on node n, as ZooKeeper's checkACL decides: an empty ACL allows everything; super is allowed
// everything; otherwise an entry granting one of the bits must be world:anyone or match one of the session's
// identities.
func (c *Core) allowed(sid int64, n *node, perm int32) bool {
	if n.anyone&perm != 0 || len(n.acl) == 0 || c.skipACL {
		return true
	}
	s, ok := c.sessions[sid]
	if !ok {
		return false
	}
	if s.auth.super {
		return true
	}
	for _, a := range n.acl {
		if a.Perms&perm == 0 {
			continue
		}
		switch a.Scheme {
		case "digest":
			if s.auth.has("digest", a.ID) {
				return true
			}
		case "sasl":
			// SASLAuthenticationProvider.matches: the user named, or a user named super (only when the
			// provider is configured: without it ZooKeeper knows no sasl scheme and no entry matches).
			if c.saslACL && (s.auth.has("sasl", a.ID) || s.auth.has("sasl", "super")) {
				return true
			}
		case "ip":
			if ipMatches(s.auth.ip, a.ID) {
				return true
			}
		case "x509":
			// X509AuthenticationProvider.matches: the subject DN, as the same string.
			if c.x509ACL && s.auth.has("x509", a.ID) {
				return true
			}
		}
	}
	return false
}

// fixupACL turns the ACL of a create or setACL into the one stored, as ZooKeeper 3.8 does: repeats are dropped
// (the first kept); world:anyone is kept; "auth" (whatever its id) becomes one entry per digest identity of the
// session, with its permissions (zk.ErrInvalidACL when the session has none); digest ids must be user:hash
// (Java's split on ':' giving two parts) and ip ids an IPv4 address with an optional /bits; any other scheme
// or id is zk.ErrInvalidACL, and so is an empty ACL.
func (c *Core) fixupACL(sid int64, acl []zk.ACL) ([]zk.ACL, error) {
	if len(acl) == 0 {
		return nil, zk.ErrInvalidACL
	}
	out := make([]zk.ACL, 0, len(acl))
	for i, a := range acl {
		switch {
		case slices.Contains(acl[:i], a):
			// a repeat: ZooKeeper drops it before anything else looks at it
		case a.Scheme == "world" && a.ID == "anyone":
			out = append(out, a)
		case a.Scheme == "auth":
			ids := c.authOrder(sid)
			if len(ids) == 0 {
				return nil, zk.ErrInvalidACL
			}
			for _, id := range ids {
				out = append(out, zk.ACL{Perms: a.Perms, Scheme: id.scheme, ID: id.id})
			}
		case a.Scheme == "digest" && len(javaSplit(a.ID, ':')) == 2:
			out = append(out, a)
		case a.Scheme == "sasl" && c.saslACL && validKerberosName(a.ID):
			out = append(out, a)
		case a.Scheme == "ip" && validIPACL(a.ID):
			out = append(out, a)
		case a.Scheme == "x509" && c.x509ACL && validX500Name(a.ID):
			out = append(out, a)
		default:
			return nil, zk.ErrInvalidACL
		}
	}
	return out, nil
}

// authOrder returns the identities ZooKeeper 3.8 expands "auth" to, in its order: those of a scheme whose
// provider authenticates (digest; sasl when its provider is configured; x509 on a server with a secure port), in the order of authInfoOrder.
func (c *Core) authOrder(sid int64) []authID {
	s, ok := c.sessions[sid]
	if !ok {
		return nil
	}
	var out []authID
	for _, id := range c.authInfoOrder(s) {
		if id.scheme == "digest" || (id.scheme == "sasl" && c.saslACL) || (id.scheme == "x509" && c.x509ACL) {
			out = append(out, id)
		}
	}
	return out
}

// authInfoOrder returns every identity of the session's connection, ip first among equals, in the order
// ZooKeeper 3.8 iterates them (for "auth" and whoAmI): its connection keeps them in a
// ConcurrentHashMap-backed set (super:"" among them, for super), so they come in the order of the map's
// buckets, then of insertion within a bucket. The table has 16 buckets and doubles when it reaches three
// quarters full; the reordering a doubling can make inside a bucket is not modelled (it needs more than 12
// identities on one connection).
func (c *Core) authInfoOrder(s *session) []authID {
	entries := 1 + len(s.auth.ids) // the ip identity
	if s.auth.super {
		entries++
	}
	buckets := 16
	for entries >= buckets-buckets/4 {
		buckets *= 2
	}
	ids := append([]authID{{"ip", s.auth.ip}}, s.auth.ids...)
	slices.SortStableFunc(ids, func(a, b authID) int {
		return chmBucket(a.scheme, a.id, buckets) - chmBucket(b.scheme, b.id, buckets)
	})
	return ids
}

// chmBucket is the bucket of ZooKeeper's Id{scheme, id} in a ConcurrentHashMap of n buckets: Id.hashCode, then
// the map's spread.
func chmBucket(scheme, id string, n int) int {
	h := int32(17)
	h = 37*h + javaHash(scheme)
	h = 37*h + javaHash(id)
	u := uint32(h)
	return int((u ^ u>>16) & 0x7fffffff & uint32(n-1))
}

// javaHash is Java's String.hashCode: over UTF-16 code units.
func javaHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaSplit is Java's String.split on one character: trailing empty strings are dropped (so "user:" is one
// part), and a string without the separator is one part.
func javaSplit(s string, sep byte) []string {
	parts := strings.Split(s, string(sep))
	for len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 1 && parts[0] == "" && strings.IndexByte(s, sep) >= 0 {
		return nil // only separators: Java returns an empty array
	}
	return parts
}

// validIPACL reports whether id is an ip ACL id ZooKeeper 3.8 accepts: a.b.c.d, optionally /bits with bits in
// [0, 32]; each number as Java's Integer.parseInt reads it (a sign is allowed). IPv6 is not accepted.
func validIPACL(id string) bool {
	_, _, ok := parseIPACL(id)
	return ok
}

func parseIPACL(id string) (addr [4]byte, bits int, ok bool) {
	a, b, hasBits := strings.Cut(id, "/")
	addr, ok = parseIPv4(a)
	if !ok {
		return addr, 0, false
	}
	bits = 32
	if hasBits {
		n, ok := javaParseInt(b)
		if !ok || n < 0 || n > 32 {
			return addr, 0, false
		}
		bits = n
	}
	return addr, bits, true
}

func parseIPv4(s string) ([4]byte, bool) {
	var b [4]byte
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return b, false
	}
	for i, p := range parts {
		n, ok := javaParseInt(p)
		if !ok || n < 0 || n > 255 {
			return b, false
		}
		b[i] = byte(n)
	}
	return b, true
}

// javaParseInt reads a decimal int as Java's Integer.parseInt does: an optional sign, then digits.
func javaParseInt(s string) (int, bool) {
	d := strings.TrimPrefix(strings.TrimPrefix(s, "+"), "-")
	if d == "" || len(s)-len(d) > 1 || strings.Trim(d, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return int(n), err == nil
}

// ipMatches reports whether the connection address ip matches the ip ACL id expr (a.b.c.d or a.b.c.d/bits).
func ipMatches(ip, expr string) bool {
	want, bits, ok := parseIPACL(expr)
	if !ok {
		return false
	}
	got, ok := parseIPv4(ip)
	if !ok {
		return false
	}
	for i := 0; i < 4; i++ {
		m := byte(0xff)
		switch {
		case bits >= 8*(i+1):
		case bits <= 8*i:
			m = 0
		default:
			m = byte(0xff << (8 - (bits - 8*i)))
		}
		if got[i]&m != want[i]&m {
			return false
		}
	}
	return true
}

// validKerberosName reports whether SASLAuthenticationProvider accepts id in an ACL: Hadoop's KerberosName
// parses it (name, name/host, name@REALM or name/host@REALM, no part empty), or it has no '@' at all.
func validKerberosName(id string) bool {
	if !strings.Contains(id, "@") {
		return true
	}
	rest, realm, _ := strings.Cut(id, "@")
	name, host, hasHost := strings.Cut(rest, "/")
	return name != "" && realm != "" && !strings.ContainsAny(realm, "/@") && (!hasHost || (host != "" && !strings.Contains(host, "/")))
}

// redactACL is what getACL shows a session without ADMIN on the node: digest ids with the hash replaced by x.
func redactACL(acl []zk.ACL) []zk.ACL {
	out := slices.Clone(acl)
	for i, a := range out {
		if user, _, ok := strings.Cut(a.ID, ":"); ok && a.Scheme == "digest" {
			out[i].ID = user + ":x"
		}
	}
	return out
}
