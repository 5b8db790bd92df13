package model

import (
	"slices"

	"github.com/zkmodel/zkmodel/jute"
)

// This file is ZooKeeper 3.8's enforced authentication (AuthenticationHelper), measured on Debian's 3.8.0 with
// enforce.auth.enabled=true and enforce.auth.schemes (sasl, digest, sasl,digest), and with
// sessionRequireClientSASLAuth=true (which is schemes "sasl", whatever enforce.auth.enabled says): a
// connection that holds no identity of a required scheme gets ZSESSIONCLOSEDREQUIRESASLAUTH (-124; zxid 0, as
// AuthenticationHelper writes it) for every request but auth and sasl, pings and closeSession included, and
// the server closes the connection; the session lives on (the client reconnects with it, and is refused
// again). A connection that logged in by SASL (sasl scheme) or added digest auth (digest scheme) is served as
// usual. With sasl required, a failed SASL login is answered -124 rather than AUTHFAILED.

// errSessionClosedRequireSASLAuth is ZooKeeper's SESSIONCLOSEDREQUIRESASLAUTH.
const errSessionClosedRequireSASLAuth = -124

// WithEnforceAuth makes the server require every connection to hold an identity of one of the schemes ("sasl",
// "digest", "ip") before it serves anything but auth and sasl requests, as enforce.auth.enabled=true with
// enforce.auth.schemes does (sessionRequireClientSASLAuth=true is WithEnforceAuth("sasl")). It applies to wire
// clients. No schemes turns it off.
func WithEnforceAuth(schemes ...string) Option {
	return func(c *config) { c.enforceAuth = slices.Clone(schemes) }
}

// refusesUnauthenticated reports whether the server refuses request op on c's connection for want of an
// identity of a required scheme. Caller holds s.mu.
func (s *Server) refusesUnauthenticated(c *Conn, op int32) bool {
	if len(s.cfg.enforceAuth) == 0 || op == jute.OpAuth || op == jute.OpSASL {
		return false
	}
	if _, ok := s.core.Session(c.session); !ok {
		return true
	}
	for _, scheme := range s.cfg.enforceAuth {
		switch {
		case scheme == "ip":
			return false // every connection has its address
		case s.core.Authenticated(c.session, scheme):
			return false
		}
	}
	return true
}

// saslRequired reports whether "sasl" is among the required schemes: a failed SASL login is then -124 (with
// enforce.auth.schemes=digest it is AUTHFAILED, as without enforcement).
func (s *Server) saslRequired() bool { return slices.Contains(s.cfg.enforceAuth, "sasl") }
