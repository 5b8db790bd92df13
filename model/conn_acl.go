package model

import (
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/model/internal/core"
)

// authCred is one addAuth a client made that the server accepted: go-zookeeper sends it again on every new
// connection, and so does Conn.
type authCred struct {
	scheme string
	auth   []byte
}

// AddAuth authenticates the connection, as go-zookeeper's AddAuth does: scheme "digest" with "user:password"
// adds the identity digest:user:base64(sha1(user:password)) (the super user's, when it is the server's super
// digest, see WithSuperDigest), "ip" succeeds and adds nothing the connection did not have. Any other scheme
// fails with zk.ErrAuthFailed and, as on ZooKeeper 3.8, the server closes the connection; the client
// reconnects with its session. Accepted credentials are sent again after every reconnection, so they hold
// for the rest of the client's life (a new session after an expiry included), as with go-zookeeper.
func (c *Conn) AddAuth(scheme string, auth []byte) error {
	res, _ := c.do(&core.Request{Op: core.OpAuth, Path: scheme, Data: auth})
	return res.Err
}

// GetACL returns a znode's ACL and stat. It needs READ or ADMIN on the znode (zk.ErrNoAuth otherwise); without
// ADMIN the hashes of digest entries read "x", as ZooKeeper 3.8 shows them.
func (c *Conn) GetACL(path string) ([]zk.ACL, *zk.Stat, error) {
	if err := core.ValidatePath(path, false); err != nil {
		return nil, nil, err
	}
	res, _ := c.do(&core.Request{Op: core.OpGetACL, Path: path})
	if res.Err == zk.ErrConnectionClosed {
		return nil, nil, res.Err
	}
	return res.ACL, &res.Stat, res.Err
}

// SetACL replaces a znode's ACL if its ACL version (Stat.Aversion) matches (-1 matches any), and returns the new
// stat. It needs ADMIN on the znode. The ACL is stored as ZooKeeper stores it: repeats dropped, "auth" entries
// expanded to the connection's digest identities; an ACL the server would refuse is zk.ErrInvalidACL.
func (c *Conn) SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	if err := core.ValidatePath(path, false); err != nil {
		return nil, err
	}
	res, _ := c.do(&core.Request{Op: core.OpSetACL, Path: path, ACL: acl, Version: version})
	if res.Err == zk.ErrConnectionClosed {
		return nil, res.Err
	}
	return &res.Stat, res.Err
}

// rememberAuth records an addAuth the server accepted, as go-zookeeper does when the reply arrives.
func (c *Conn) rememberAuth(r *core.Request, err error) {
	if r.Op == core.OpAuth && err == nil {
		c.creds = append(c.creds, authCred{scheme: r.Path, auth: slices.Clone(r.Data)})
	}
}

// resendAuth gives c's session its new connection's identities: its address, then the credentials c sends
// again before anything else, as go-zookeeper does after every connect.
func (s *Server) resendAuth(c *Conn) {
	s.core.ResetAuth(c.session, core.InProcessIP)
	for _, cr := range c.creds {
		// Accepted once, accepted again: the schemes do not change.
		_, _ = s.core.Apply(c.session, &core.Request{Op: core.OpAuth, Path: cr.scheme, Data: cr.auth})
	}
}

// WithSuperDigest configures the super user, as ZooKeeper's zookeeper.DigestAuthenticationProvider.superDigest
// does: digest is "user:base64(sha1(user:password))" (zk.DigestACL(zk.PermAll, user, password)[0].ID computes
// it), and a connection that adds digest auth with that user:password passes every ACL check. As on
// ZooKeeper, a string of another form is accepted and matches no one.
func WithSuperDigest(digest string) Option { return func(c *config) { c.superDigest = digest } }

// WithSkipACL turns every permission check off, as ZooKeeper's zookeeper.skipACL=yes does (skipACL=yes in
// zoo.cfg, or the Java system property): any session may read, write, delete, set ACLs and reconfigure
// (measured on 3.8: with reconfigEnabled an anonymous reconfig succeeds). ACLs are still validated and stored.
func WithSkipACL() Option { return func(c *config) { c.skipACL = true } }
