package model_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/model"
)

// TestEnforceAuth: with sasl required (as realzk measured and clients.TestStandInEnforceAuth compares through
// zkServer.sh), a connection that has not logged in by SASL gets -124 for any request but auth and sasl, its
// connection closed and its session kept; a digest identity does not count unless digest is required; a
// failed SASL login is -124 too when sasl is required (AUTHFAILED otherwise).
func TestEnforceAuth(t *testing.T) {
	for _, tc := range []struct {
		schemes                   []string
		anonymous, digest, logged int32 // the code a Get gets
		badLogin                  string
	}{
		{[]string{"sasl"}, -124, -124, 0, "unknown error: -124"},
		{[]string{"digest"}, -124, 0, -124, "zk: client authentication failed"},
		{[]string{"sasl", "digest"}, -124, 0, 0, "unknown error: -124"},
	} {
		srv := model.NewServer(model.WithSASL(model.SASLConfig{Users: map[string]string{"u": "pw"}, ACLs: true}), model.WithEnforceAuth(tc.schemes...))
		dial := srv.Dialer()
		dialer := func(_ context.Context, addr string) (net.Conn, error) { return dial("tcp", addr, 5*time.Second) }
		get := func(login func(ctx context.Context, c *rawzk.Conn) error) (int32, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, _, err := rawzk.Connect(ctx, []string{"model"}, 10*time.Second, dialer)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			loginErr := ""
			if err := login(ctx, c); err != nil {
				loginErr = err.Error()
			}
			if loginErr != "" {
				return 0, loginErr // the server closes the connection: a Get now races the client's reconnection
			}
			sid := c.SessionID()
			_, _, err = c.Get(ctx, "/")
			if c.SessionID() != sid {
				t.Fatalf("%v: the session changed from %#x to %#x", tc.schemes, sid, c.SessionID())
			}
			switch {
			case err == nil:
				return 0, loginErr
			case err.Error() == "unknown error: -124":
				return -124, loginErr
			}
			t.Fatalf("%v: Get(/): %v", tc.schemes, err)
			return 0, ""
		}
		none := func(context.Context, *rawzk.Conn) error { return nil }
		digest := func(ctx context.Context, c *rawzk.Conn) error { return c.AddAuth(ctx, "digest", []byte("u:pw")) }
		sasl := func(ctx context.Context, c *rawzk.Conn) error { return c.LoginDigestMD5(ctx, "u", "pw") }
		bad := func(ctx context.Context, c *rawzk.Conn) error { return c.LoginDigestMD5(ctx, "u", "wrong") }
		if got, _ := get(none); got != tc.anonymous {
			t.Errorf("%v: anonymous Get: %d, want %d", tc.schemes, got, tc.anonymous)
		}
		if got, _ := get(digest); got != tc.digest {
			t.Errorf("%v: Get after digest auth: %d, want %d", tc.schemes, got, tc.digest)
		}
		if got, _ := get(sasl); got != tc.logged {
			t.Errorf("%v: Get after a SASL login: %d, want %d", tc.schemes, got, tc.logged)
		}
		if _, loginErr := get(bad); loginErr != "rawzk: SASL login as u: "+tc.badLogin {
			t.Errorf("%v: a SASL login with a wrong password: %q, want %q", tc.schemes, loginErr, tc.badLogin)
		}
		srv.Close()
	}
}
