// Package digestmd5 is the DIGEST-MD5 SASL mechanism (RFC 2831) as ZooKeeper 3.8 uses it: the server side
// (challenge, verification of the client's digest-response, rspauth) with quality of protection "auth" only,
// and the client's response, for tests that log in over a raw connection.
//
// It is pure: the server's nonce and the client's cnonce are given to it, and it does no I/O.
package digestmd5

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Realm is the realm ZooKeeper's servers offer and its clients answer for DIGEST-MD5 (SecurityUtils'
// "zk-sasl-md5"), and Service the service its digest-uri names: a client's digest-uri is
// "zookeeper/zk-sasl-md5".
const (
	Realm   = "zk-sasl-md5"
	Service = "zookeeper"
)

// ErrFailed is wrapped by every error of a failed authentication: a malformed response, one that does not
// answer the challenge, an unknown user, a wrong password, a token after the exchange completed.
var ErrFailed = errors.New("digest-md5: authentication failed")

// PasswordFunc returns the password the server holds for user, or ok false when it has none.
type PasswordFunc func(user string) (password string, ok bool)

// Server is one connection's server side of an exchange. Its zero value is not usable; see NewServer.
type Server struct {
	nonce    string
	password PasswordFunc
	step     int // 0: the challenge is next; 1: the client's response is next; 2: done
	user     string
}

// NewServer returns the server side of an exchange whose challenge carries nonce and whose passwords come
// from password.
func NewServer(nonce string, password PasswordFunc) *Server {
	return &Server{nonce: nonce, password: password}
}

// Challenge is the text of the server's first token: what ZooKeeper 3.8 (Java's DIGEST-MD5 server) sends.
func Challenge(nonce string) []byte {
	return []byte(`realm="` + Realm + `",nonce="` + nonce + `",charset=utf-8,algorithm=md5-sess`)
}

// Evaluate takes the client's next token and returns the server's answer: the challenge for the first token
// (whatever it holds: Java's server ignores an initial response), rspauth for a correct digest-response, which
// completes the exchange. Any other token is an error wrapping ErrFailed, after which the exchange is over.
func (s *Server) Evaluate(token []byte) ([]byte, error) {
	switch s.step {
	case 0:
		s.step = 1
		return Challenge(s.nonce), nil
	case 1:
		s.step = 2
		rspauth, user, err := s.verify(token)
		if err != nil {
			return nil, err
		}
		s.user = user
		return rspauth, nil
	}
	return nil, fmt.Errorf("%w: the exchange is over", ErrFailed)
}

// Complete reports whether the client has authenticated.
func (s *Server) Complete() bool { return s.step == 2 && s.user != "" }

// User is the authenticated user name (the authorization id ZooKeeper records), once Complete.
func (s *Server) User() string { return s.user }

// verify checks a digest-response against the challenge and returns the rspauth token and the user.
func (s *Server) verify(token []byte) ([]byte, string, error) {
	d, err := parseDirectives(token)
	if err != nil {
		return nil, "", err
	}
	user, ok := d["username"]
	switch {
	case !ok:
		return nil, "", fmt.Errorf("%w: no username", ErrFailed)
	case d["realm"] != Realm:
		return nil, "", fmt.Errorf("%w: realm %q, want %q", ErrFailed, d["realm"], Realm)
	case d["nonce"] != s.nonce:
		return nil, "", fmt.Errorf("%w: the nonce is not the challenge's", ErrFailed)
	case d["cnonce"] == "":
		return nil, "", fmt.Errorf("%w: no cnonce", ErrFailed)
	case d["nc"] != "00000001":
		return nil, "", fmt.Errorf("%w: nonce count %q, want 00000001", ErrFailed, d["nc"])
	case d["qop"] != "" && d["qop"] != "auth":
		return nil, "", fmt.Errorf("%w: qop %q, want auth", ErrFailed, d["qop"])
	case d["digest-uri"] != Service+"/"+Realm:
		return nil, "", fmt.Errorf("%w: digest-uri %q, want %q", ErrFailed, d["digest-uri"], Service+"/"+Realm)
	case d["response"] == "":
		return nil, "", fmt.Errorf("%w: no response", ErrFailed)
	}
	password, ok := s.password(user)
	if !ok {
		return nil, "", fmt.Errorf("%w: no password for %q", ErrFailed, user)
	}
	p := params{user: user, password: password, nonce: s.nonce, cnonce: d["cnonce"], authzid: d["authzid"], uri: d["digest-uri"]}
	if d["response"] != p.digest("AUTHENTICATE") {
		return nil, "", fmt.Errorf("%w: wrong response for %q", ErrFailed, user)
	}
	return []byte("rspauth=" + p.digest("")), user, nil
}

// Response is the client's digest-response to challenge for user and password, with cnonce as its client
// nonce, as Java's and pure-sasl's clients write it.
func Response(challenge []byte, user, password, cnonce string) ([]byte, error) {
	d, err := parseDirectives(challenge)
	if err != nil {
		return nil, err
	}
	if d["nonce"] == "" {
		return nil, fmt.Errorf("%w: a challenge without a nonce", ErrFailed)
	}
	p := params{user: user, password: password, nonce: d["nonce"], cnonce: cnonce, uri: Service + "/" + Realm}
	return []byte(fmt.Sprintf(`charset=utf-8,username=%s,realm="%s",nonce="%s",nc=00000001,cnonce="%s",digest-uri="%s",maxbuf=65536,response=%s,qop=auth`,
		quote(user), Realm, p.nonce, cnonce, p.uri, p.digest("AUTHENTICATE"))), nil
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// params are what the response digest is computed from.
type params struct {
	user, password, nonce, cnonce, authzid, uri string
}

// digest is RFC 2831's response value (method "AUTHENTICATE") or rspauth's (method ""), for qop auth and
// algorithm md5-sess.
func (p params) digest(method string) string {
	inner := md5.Sum(latin1OrUTF8(p.user + ":" + Realm + ":" + p.password))
	a1 := string(inner[:]) + ":" + p.nonce + ":" + p.cnonce
	if p.authzid != "" {
		a1 += ":" + p.authzid
	}
	a2 := method + ":" + p.uri
	return hexMD5(hexMD5(a1) + ":" + p.nonce + ":00000001:" + p.cnonce + ":auth:" + hexMD5(a2))
}

func hexMD5(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// latin1OrUTF8 encodes s as RFC 2831 has it for charset=utf-8: in ISO 8859-1 when every character is one
// of it, else in UTF-8.
func latin1OrUTF8(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff || r == utf8.RuneError {
			return []byte(s)
		}
		out = append(out, byte(r))
	}
	return out
}

// parseDirectives reads RFC 2831's comma-separated name=value list, values tokens or quoted strings with
// backslash escapes. A repeated directive, an unterminated string or a directive without '=' is an error
// wrapping ErrFailed.
func parseDirectives(b []byte) (map[string]string, error) {
	s := string(b)
	out := map[string]string{}
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n' || s[i] == ',') {
			i++
		}
	}
	for skip(); i < len(s); skip() {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, fmt.Errorf("%w: directive %q without a value", ErrFailed, s[i:])
		}
		name := strings.ToLower(strings.TrimSpace(s[i : i+eq]))
		i += eq + 1
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		var value strings.Builder
		if i < len(s) && s[i] == '"' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				i++
				if c == '\\' && i < len(s) {
					value.WriteByte(s[i])
					i++
					continue
				}
				if c == '"' {
					closed = true
					break
				}
				value.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("%w: directive %q: unterminated quoted string", ErrFailed, name)
			}
		} else {
			end := strings.IndexByte(s[i:], ',')
			if end < 0 {
				end = len(s) - i
			}
			value.WriteString(strings.TrimSpace(s[i : i+end]))
			i += end
		}
		if name == "" {
			return nil, fmt.Errorf("%w: a directive without a name", ErrFailed)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%w: directive %q twice", ErrFailed, name)
		}
		out[name] = value.String()
	}
	return out, nil
}
