package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/internal/rawzk"
)

// serverJAAS is a JAAS file with a Server section of two DIGEST-MD5 users.
const serverJAAS = `Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_jaasuser="secret"
  user_boss="bosspw";
};
`

// TestZKServerSASL: the stand-in reads the JAAS file -Djava.security.auth.login.config names, the super user
// of -Dzookeeper.superUser and zoo.cfg's authProvider line, as a real server does: jaasuser logs in and owns a
// node with a sasl ACL, which an anonymous client may not read and the super user may.
func TestZKServerSASL(t *testing.T) {
	file := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(file, []byte(serverJAAS), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 1, "-Djava.security.auth.login.config="+file+" -Dzookeeper.superUser=boss",
		"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
	c.start(0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	login := func(user, password string) *rawzk.Conn {
		t.Helper()
		conn, _, err := rawzk.Connect(ctx, c.addrs(), 4*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		if user != "" {
			if err := conn.LoginDigestMD5(ctx, user, password); err != nil {
				t.Fatal(err)
			}
		}
		return conn
	}
	owner := login("jaasuser", "secret")
	if _, err := owner.Create(ctx, "/mine", []byte("m"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: "jaasuser"}}); err != nil {
		t.Fatalf("create with a sasl ACL: %v", err)
	}
	if _, _, err := login("", "").Get(ctx, "/mine"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("anonymous read: %v, want %v", err, zk.ErrNoAuth)
	}
	if b, _, err := login("boss", "bosspw").Get(ctx, "/mine"); err != nil || string(b) != "m" {
		t.Errorf("super read: %q, %v", b, err)
	}
	if err := login("", "").LoginDigestMD5(ctx, "jaasuser", "wrong"); !errors.Is(err, zk.ErrAuthFailed) {
		t.Errorf("wrong password: %v, want %v", err, zk.ErrAuthFailed)
	}
}

// TestZKServerBadJAAS: a JAAS file that does not parse, or is not there, stops the stand-in with exit status 1
// (as it stops ZooKeeper 3.8: TestStandInStartsAsReal in clients compares the two) and a message saying what is
// wrong, and starts nothing. (A file without the Server section is no error: the server runs without SASL.)
func TestZKServerBadJAAS(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, text, want string }{
		{"unterminated", "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_a=\"b;\n};\n", `jaas.conf:3: a quoted string is not closed`},
		{"missing", "", "jaas.conf: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, "jaas.conf")
			os.Remove(file)
			if tc.name != "missing" {
				if err := os.WriteFile(file, []byte(tc.text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c := newCluster(t, 1, "-Djava.security.auth.login.config="+file)
			out, code := c.run("start-foreground", c.cfgs[0])
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 1 and a message with %q:\n%s", code, tc.want, out)
			}
			if entries, _ := os.ReadDir(c.rundir); len(entries) > 0 {
				t.Fatalf("a refused configuration started something: %v in %s", entries, c.rundir)
			}
		})
	}
	if _, err := parseArgs([]string{"serve", "-jaas", filepath.Join(dir, "missing.conf")}, nil); err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "missing.conf") {
		t.Errorf("serve -jaas with a missing file: %v, want a usage error naming the file", err)
	}
}
