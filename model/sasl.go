package model

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"maps"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/internal/digestmd5"
	"github.com/zkmodel/zkmodel/jute"
)

// This file is the server side of SASL (the sasl request, opcode 102) as ZooKeeper 3.8 answers it, measured on
// Debian's 3.8.0 with kazoo, Curator and raw tokens: the DIGEST-MD5 mechanism with the users of the JAAS
// Server section. The exchange is per connection and lives in the wire front end; what it ends with, the
// identity sasl:USER (and super for the super user), goes into the core's auth like an auth packet's.

// SASLConfig is the server's SASL setup, as a real server gets it from its JVM flags and zoo.cfg.
type SASLConfig struct {
	// Users are the DIGEST-MD5 users and their passwords: the user_NAME="PASSWORD" options of the JAAS file's
	// Server section (-Djava.security.auth.login.config). nil means the server has no Server section: it
	// answers every sasl request with an empty (null) token and nobody logs in, as a real one without JAAS.
	Users map[string]string
	// SuperUser is the user whose login makes the connection super, as -Dzookeeper.superUser=NAME does.
	SuperUser string
	// ACLs turns the sasl ACL scheme on, as authProvider.N=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
	// does: sasl:USER entries are accepted in ACLs (else InvalidACL), match the user logged in as USER (and one
	// logged in as "super"), and the auth scheme expands to the connection's sasl identities too.
	ACLs bool
}

// WithSASL configures SASL logins (DIGEST-MD5, realm zk-sasl-md5) and the sasl ACL scheme. What a client sees is
// what ZooKeeper 3.8 sends: the challenge answers any first token; a right response gets rspauth and the
// identity sasl:USER; a wrong password, a malformed response or a token after the login gets AUTHFAILED and the
// server closes the connection; a null token closes it unanswered. One quirk of 3.8 is kept: an unknown user
// is checked against the password of the last known user that tried to log in (on any connection), since
// ZooKeeper's callback handler remembers that name.
func WithSASL(cfg SASLConfig) Option {
	return func(c *config) {
		c.sasl = cfg
		if cfg.Users != nil {
			c.sasl.Users = maps.Clone(cfg.Users)
		}
	}
}

// saslState is the server-wide part of SASL: guarded by Server.mu.
type saslState struct {
	nonces   uint64 // challenges sent so far: each gets a nonce derived from the seed and this count
	lastUser string // the last user of Users that a login named (ZooKeeper's callback handler keeps it)
}

// applySASL answers a sasl request on c's connection. It reports the trace detail and whether the server
// closes the connection after the reply (or without one, when w.frame stays nil).
func (s *Server) applySASL(c *Conn, w *wireCall) (string, bool) {
	if w.undecodable || w.req.Token == nil {
		// ZooKeeper reads the token, and hands it to the mechanism, outside its SASL error handling: the
		// exception closes the connection without a reply.
		return "closing unanswered (no token)", true
	}
	if s.cfg.sasl.Users == nil {
		// No Server section: the connection has no SASL server, which ZooKeeper logs and answers with a null
		// token, changing nothing.
		w.frame = saslReply(w.xid, 0, nil)
		return "ok, null token (no JAAS Server section)", false
	}
	l := c.link
	if l.sasl == nil {
		l.sasl = digestmd5.NewServer(s.saslNonce(), s.saslPassword)
	}
	done := l.sasl.Complete()
	token, err := l.sasl.Evaluate(w.req.Token)
	if err != nil {
		if s.saslRequired() { // the login the server requires failed
			w.frame = saslReply(w.xid, errSessionClosedRequireSASLAuth, nil)
			return fmt.Sprintf("error session closed, requires SASL auth (%v); closing", err), true
		}
		w.frame = saslReply(w.xid, errCode(zk.ErrAuthFailed), nil)
		return fmt.Sprintf("error auth failed (%v); closing", err), true
	}
	if !done && l.sasl.Complete() {
		s.core.AddSASL(c.session, l.sasl.User())
		w.frame = saslReply(w.xid, 0, token)
		return "ok sasl:" + l.sasl.User(), false
	}
	w.frame = saslReply(w.xid, 0, token)
	return "challenge", false
}

// saslReply is a sasl request's reply: zxid 0, and the token (a null one for nil).
func saslReply(xid, code int32, token []byte) []byte {
	return replyFrame(xid, 0, code, func(e *jute.Encoder) {
		jute.EncodeResponse(e, jute.OpSASL, &jute.Response{Token: token})
	})
}

// saslNonce returns the next challenge's nonce: 30 bytes, as Java's server makes it, in base64 (40
// characters), derived from the server's seed so that runs repeat.
func (s *Server) saslNonce() string {
	s.saslState.nonces++
	var in [16]byte
	binary.BigEndian.PutUint64(in[:8], uint64(s.cfg.seed))
	binary.BigEndian.PutUint64(in[8:], s.saslState.nonces)
	sum := sha256.Sum256(in[:])
	return base64.StdEncoding.EncodeToString(sum[:30])
}

// saslPassword is the mechanism's password lookup, as ZooKeeper's SaslServerCallbackHandler does it: a known
// user's password, which also makes that user the remembered one; for an unknown user the remembered user's
// password, if any.
func (s *Server) saslPassword(user string) (string, bool) {
	if pw, ok := s.cfg.sasl.Users[user]; ok {
		s.saslState.lastUser = user
		return pw, true
	}
	if s.saslState.lastUser == "" {
		return "", false
	}
	return s.cfg.sasl.Users[s.saslState.lastUser], true
}
