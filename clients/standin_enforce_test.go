package clients

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/realzk"
)

// TestStandInEnforceAuth: a standalone server that requires authentication (enforce.auth.enabled with
// enforce.auth.schemes, or sessionRequireClientSASLAuth) answers alike through Debian's zkServer.sh and the
// stand-in, started from the same zoo.cfg lines: a connection without an identity of a required scheme gets
// ZSESSIONCLOSEDREQUIRESASLAUTH (-124) for its requests (closeSession too) and keeps its session; one that
// logged in by a required scheme is served; a failed SASL login is -124 when sasl is required (AUTHFAILED
// when only digest is); and a required scheme no provider
// serves stops the server at start (exit status 2).
func TestStandInEnforceAuth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*scenarioTimeout)
	t.Cleanup(cancel)
	jaas, err := realzk.WriteJAAS(t.TempDir(), map[string]string{"u": "u-pw"})
	if err != nil {
		t.Fatal(err)
	}
	flags := "-Djava.security.auth.login.config=" + jaas
	saslProvider := "authProvider.1=" + saslAuthProvider
	// What Debian's zkServer.sh gives (measured; the real side runs first and is held to it too).
	const required = "anonymous: login <nil>, get unknown error: -124, the same session: true\n" +
		"digest u:u-pw: login <nil>, get unknown error: -124, the same session: true\n" +
		"SASL u: login <nil>, get <nil>, the same session: true\n" +
		"SASL u with a wrong password: login rawzk: SASL login as u: unknown error: -124\n" +
		"anonymous closeSession: unknown error: -124\n"
	for _, sc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"enforce.auth.schemes=sasl", []string{"enforce.auth.enabled=true", "enforce.auth.schemes=sasl", saslProvider}, required},
		{"sessionRequireClientSASLAuth", []string{"sessionRequireClientSASLAuth=true", "enforce.auth.enabled=false", saslProvider}, required},
		{"enforce.auth.schemes=digest", []string{"enforce.auth.enabled=true", "enforce.auth.schemes=digest"},
			"anonymous: login <nil>, get unknown error: -124, the same session: true\n" +
				"digest u:u-pw: login <nil>, get <nil>, the same session: true\n" +
				"SASL u: login <nil>, get unknown error: -124, the same session: true\n" +
				"SASL u with a wrong password: login rawzk: SASL login as u: zk: client authentication failed\n" +
				"anonymous closeSession: unknown error: -124\n"},
	} {
		for _, side := range standinSides {
			t.Run(sc.name+"/"+side.name, func(t *testing.T) {
				s := startCluster(ctx, t, clusterConfig{script: side.script, servers: 1, jvmFlags: flags, extra: sc.extra})
				if got := enforceScenario(ctx, t, s.addrs); got != sc.want {
					t.Errorf("%s printed\n%s\nwant\n%s", side.name, got, sc.want)
				}
			})
		}
	}
	// sasl required without the SASL provider: the server does not start.
	for _, side := range standinSides {
		t.Run("no provider/"+side.name, func(t *testing.T) {
			code := startForegroundExit(ctx, t, side.script, flags, "enforce.auth.enabled=true", "enforce.auth.schemes=sasl")
			if code != 2 {
				t.Errorf("%s: start-foreground with sasl required and no SASL authProvider exited %d, want 2", side.name, code)
			}
		})
	}
}

// enforceScenario tries each kind of connection on addrs and returns what it got, one line each.
func enforceScenario(ctx context.Context, t *testing.T, addrs []string) string {
	t.Helper()
	var out strings.Builder
	try := func(name string, login func(ctx context.Context, c *rawzk.Conn) error) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		c, _, err := rawzk.Connect(cctx, addrs, 10*time.Second, nil)
		if err != nil {
			t.Fatalf("connect to %v: %v", addrs, err)
		}
		defer c.Close(cctx)
		lerr := login(cctx, c)
		if lerr != nil { // the server closes the connection: what follows races the client's reconnection
			fmt.Fprintf(&out, "%s: login %v\n", name, lerr)
			return
		}
		sid := c.SessionID()
		_, _, err = c.Get(cctx, "/")
		fmt.Fprintf(&out, "%s: login %v, get %v, the same session: %v\n", name, lerr, err, c.SessionID() == sid)
	}
	try("anonymous", func(context.Context, *rawzk.Conn) error { return nil })
	try("digest u:u-pw", func(ctx context.Context, c *rawzk.Conn) error { return c.AddAuth(ctx, "digest", []byte("u:u-pw")) })
	try("SASL u", func(ctx context.Context, c *rawzk.Conn) error { return c.LoginDigestMD5(ctx, "u", "u-pw") })
	try("SASL u with a wrong password", func(ctx context.Context, c *rawzk.Conn) error { return c.LoginDigestMD5(ctx, "u", "wrong") })
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, _, err := rawzk.Connect(cctx, addrs, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("connect to %v: %v", addrs, err)
	}
	fmt.Fprintf(&out, "anonymous closeSession: %v\n", errors.Unwrap(c.Close(cctx)))
	return out.String()
}

// startForegroundExit runs `zkServer.sh start-foreground` on a standalone zoo.cfg with the extra lines and
// returns its exit status (it must exit by itself within the scenario timeout).
func startForegroundExit(ctx context.Context, t *testing.T, script, jvmFlags string, extra ...string) int {
	t.Helper()
	cfg := clusterConfig{script: script, servers: 1, jvmFlags: jvmFlags, extra: extra}
	s := writeCluster(ctx, t, cfg)
	cctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, s.script, "start-foreground", s.cfgs[0])
	cmd.Env = s.env
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s start-foreground: %v", filepath.Base(s.script), err)
	}
	return 0
}
