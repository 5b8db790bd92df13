package clients

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/realzk"
)

// The SASL setup of every SASL scenario, on the real server and on the model alike: a JAAS Server section
// with three DIGEST-MD5 users, boss the super user (zookeeper.superUser), the sasl ACL scheme on (authProvider.1
// naming SASLAuthenticationProvider, as the setup has it).
var saslUsers = map[string]string{"jaasuser": "secret", "other": "otherpw", "boss": "bosspw"}

const (
	saslSuperUser    = "boss"
	saslAuthProvider = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
)

// saslFiles is a directory for the package's JAAS files, removed by TestMain.
var saslFiles struct {
	once sync.Once
	dir  string
	err  error
}

// saslFile writes a JAAS file with one section (name) of a DigestLoginModule with the options, and returns its
// path.
func saslFile(t *testing.T, file, section string, options map[string]string) string {
	t.Helper()
	saslFiles.once.Do(func() { saslFiles.dir, saslFiles.err = os.MkdirTemp("", "clients-sasl-") })
	if saslFiles.err != nil {
		t.Fatal(saslFiles.err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s {\n  org.apache.zookeeper.server.auth.DigestLoginModule required", section)
	for _, k := range slices.Sorted(maps.Keys(options)) {
		fmt.Fprintf(&b, "\n  %s=%q", k, options[k])
	}
	b.WriteString(";\n};\n")
	path := filepath.Join(saslFiles.dir, file)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serverJAAS is the JAAS file of the servers: the Server section with saslUsers.
func serverJAAS(t *testing.T) string {
	t.Helper()
	options := map[string]string{}
	for u, p := range saslUsers {
		options["user_"+u] = p
	}
	return saslFile(t, "server.jaas", "Server", options)
}

// The real ZooKeeper with SASL: a standalone server for the package, started on first use, closed by TestMain.
var realSASL struct {
	once     sync.Once
	ensemble *realzk.Ensemble
	err      error
}

// realSASLTarget returns the package's real ZooKeeper with the SASL setup.
func realSASLTarget(t *testing.T) target {
	t.Helper()
	jaasFile := serverJAAS(t)
	realSASL.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), realzk.StartTimeout)
		defer cancel()
		realSASL.ensemble, realSASL.err = realzk.Start(ctx, realzk.Config{
			Servers: 1,
			SystemProperties: map[string]string{
				"java.security.auth.login.config": jaasFile,
				"zookeeper.superUser":             saslSuperUser,
			},
			ExtraConfig: map[string]string{"authProvider.1": saslAuthProvider},
		})
	})
	if realSASL.err != nil {
		t.Fatalf("real ZooKeeper with SASL: %v", realSASL.err)
	}
	return target{name: "real", connect: realSASL.ensemble.ConnectString()}
}

// modelSASLTarget starts a model server with the SASL setup (model.WithSASL), on loopback TCP.
func modelSASLTarget(t *testing.T) target {
	t.Helper()
	return modelTarget(t, model.WithSASL(model.SASLConfig{Users: saslUsers, SuperUser: saslSuperUser, ACLs: true}))
}

// saslServe starts `zkmodel serve` (the built binary) with the SASL setup given as its flags.
func saslServe(ctx context.Context, t *testing.T) (target, func()) {
	t.Helper()
	addrs, stop := startServe(ctx, t, "-addr", "127.0.0.1:0", "-control", "127.0.0.1:0",
		"-jaas", serverJAAS(t), "-sasl-superuser", saslSuperUser, "-sasl-acls")
	return target{name: "zkmodel serve -jaas", connect: addrs.Addr}, stop
}

// standinSASLTarget starts the zkServer.sh stand-in as a harness starts a secured ZooKeeper: the JAAS file
// and the super user in SERVER_JVMFLAGS, the SASL authentication provider in zoo.cfg.
func standinSASLTarget(ctx context.Context, t *testing.T) target {
	t.Helper()
	s := startStandin(ctx, t, 1, "-Djava.security.auth.login.config="+serverJAAS(t)+" -Dzookeeper.superUser="+saslSuperUser,
		"authProvider.1="+saslAuthProvider)
	return target{name: "zkServer.sh stand-in", connect: s.addrs[0]}
}

// TestKazooSASL: kazoo logs in by SASL DIGEST-MD5 (sasl_options) on a real ZooKeeper 3.8, on `zkmodel serve
// -jaas` and on the zkServer.sh stand-in given the JAAS file in SERVER_JVMFLAGS; a sasl ACL (and an auth one, which expands to the sasl identity) then admits that user alone, and
// the super user; a sasl id KerberosName refuses is InvalidACL; a wrong password fails the login: the server
// closes the connection, kazoo's session is lost and its calls are refused.
func TestKazooSASL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	const want = "logged in: True\n" +
		"own read: b'm'\n" +
		"own acl: [('sasl', 'jaasuser', 31)]\n" +
		"auth acl: [('sasl', 'jaasuser', 3)]\n" +
		"bad sasl id: InvalidACLError\n" +
		"anonymous read: NoAuthError\n" +
		"anonymous read of auth node: NoAuthError\n" +
		"other user read: NoAuthError\n" +
		"super read: b'm'\n" +
		"super write: 1\n" +
		"wrong password: session lost True\n" +
		"wrong password read: refused\n"
	serve, stop := saslServe(ctx, t)
	defer stop()
	for _, tg := range []target{realSASLTarget(t), serve, standinSASLTarget(ctx, t)} {
		out, err := exec.CommandContext(ctx, python, filepath.Join("python", "kazoo_sasl.py"), tg.connect,
			"jaasuser", saslUsers["jaasuser"], "other", saslUsers["other"], saslSuperUser, saslUsers[saslSuperUser]).Output()
		if err != nil {
			t.Errorf("%s: kazoo_sasl.py: %v\n%s", tg.name, err, out)
			continue
		}
		if string(out) != want {
			t.Errorf("%s: kazoo_sasl.py printed\n%s\nwant\n%s", tg.name, out, want)
		}
	}
}

// TestCuratorSASL: Curator (ZooKeeper 3.8's Java client) with a JAAS Client section logs in on the real server
// and on the model, is sasl:jaasuser to whoAmI and reads a node only that user may read; with a wrong
// password its session gets AuthFailed.
func TestCuratorSASL(t *testing.T) {
	cp := curatorClassPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	right := saslFile(t, "client-right.jaas", "Client", map[string]string{"username": "jaasuser", "password": saslUsers["jaasuser"]})
	wrong := saslFile(t, "client-wrong.jaas", "Client", map[string]string{"username": "jaasuser", "password": "not-" + saslUsers["jaasuser"]})
	sameOutcomeOn(t, []target{modelSASLTarget(t), realSASLTarget(t)}, func(t *testing.T, tg target) string {
		owner := saslConn(ctx, t, tg)
		if err := owner.LoginDigestMD5(ctx, "jaasuser", saslUsers["jaasuser"]); err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		_ = owner.Delete(ctx, "/sasl-java", -1)
		if _, err := owner.Create(ctx, "/sasl-java", []byte("hello"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: "jaasuser"}}); err != nil {
			t.Fatalf("%s: create /sasl-java: %v", tg.name, err)
		}
		var outcome strings.Builder
		for _, tc := range []struct{ jaas, want string }{
			{right, "sasl SaslAuthenticated\nwhoAmI ip:127.0.0.1 sasl:jaasuser\nread hello\n"},
			{wrong, "sasl AuthFailed\n"},
		} {
			args := append(slices.Clone(jvmFlags), "-Djava.security.auth.login.config="+tc.jaas, "-cp", cp, "SaslLogin", tg.connect, "/sasl-java")
			out, err := exec.CommandContext(ctx, java, args...).Output()
			if err != nil || string(out) != tc.want {
				t.Errorf("%s: SaslLogin with %s: %v, printed\n%s\nwant\n%s", tg.name, filepath.Base(tc.jaas), err, out, tc.want)
			}
			outcome.Write(out)
		}
		if err := owner.Delete(ctx, "/sasl-java", -1); err != nil {
			t.Errorf("%s: delete /sasl-java: %v", tg.name, err)
		}
		return outcome.String()
	})
}

// sameOutcomeOn runs scenario on each target and fails when the outcomes differ.
func sameOutcomeOn(t *testing.T, targets []target, scenario func(t *testing.T, tg target) string) {
	t.Helper()
	var want string
	for i, tg := range targets {
		got := scenario(t, tg)
		t.Logf("%s:\n%s", tg.name, got)
		if t.Failed() {
			return
		}
		if i > 0 && got != want {
			t.Errorf("outcome on %s differs from %s:\n--- %s\n%s--- %s\n%s", tg.name, targets[0].name, targets[0].name, want, tg.name, got)
		}
		want = got
	}
}

// saslConn opens a rawzk session on tg, closed when the test ends.
func saslConn(ctx context.Context, t *testing.T, tg target) *rawzk.Conn {
	t.Helper()
	c, _, err := rawzk.Connect(ctx, []string{tg.connect}, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("%s: connect: %v", tg.name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Close(ctx)
	})
	return c
}

// challengeText is the form of the server's DIGEST-MD5 challenge (the nonce is random on a real server).
var challengeText = regexp.MustCompile(`^realm="zk-sasl-md5",nonce="[A-Za-z0-9+/]{40}",charset=utf-8,algorithm=md5-sess$`)

// TestSASLTokens sends SASL tokens over the raw wire to the real server and the model and compares what comes
// back: the challenge answers any first token (zxid 0); a malformed response, a token after the login and a
// wrong password are AUTHFAILED and the server closes the connection (the session lives on, without the
// identity); a null token closes the connection unanswered. ZooKeeper's quirk is there too: a user the JAAS
// section lacks is checked against the password of the last listed user a login named (on any connection).
// The super user reads everything, and whoAmI lists super (an empty user) among its identities. Meanwhile another client's session sees nothing of it.
func TestSASLTokens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	const want = `first token "garbage": challenge zxid=0
then "garbage": zk: client authentication failed
then after reconnecting: read ok, same session true, identities [ip:127.0.0.1]
null first token: zk: connection closed
null token after the challenge: zk: connection closed
token after the login: zk: client authentication failed
jaasuser/secret: <nil> [ip:127.0.0.1 sasl:jaasuser]
nosuch/secret (jaasuser named last): <nil> [sasl:nosuch ip:127.0.0.1]
nosuch/otherpw (jaasuser named last): zk: client authentication failed
other/wrong: zk: client authentication failed
nosuch/otherpw (other named last): <nil> [sasl:nosuch ip:127.0.0.1]
the super user's whoAmI: [super: sasl:boss ip:127.0.0.1] <nil>
read of jaasuser's node: jaasuser <nil>, other zk: not authenticated, anonymous zk: not authenticated, boss <nil>
bystander: same session true, read ok
`
	sameOutcomeOn(t, []target{modelSASLTarget(t), realSASLTarget(t)}, func(t *testing.T, tg target) string {
		var out strings.Builder
		bystander := saslConn(ctx, t, tg)
		sid := bystander.SessionID()
		_ = bystander.Delete(ctx, "/sasl-raw", -1)
		if _, err := bystander.Create(ctx, "/sasl-raw", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("%s: create /sasl-raw: %v", tg.name, err)
		}

		c := saslConn(ctx, t, tg)
		csid := c.SessionID()
		tok, zxid, err := c.SASL(ctx, []byte("garbage"))
		if err != nil || !challengeText.Match(tok) {
			t.Errorf("%s: first token: %q, %v; want a challenge matching %s", tg.name, tok, err, challengeText)
		}
		fmt.Fprintf(&out, "first token %q: challenge zxid=%d\n", "garbage", zxid)
		_, _, err = c.SASL(ctx, []byte("garbage"))
		fmt.Fprintf(&out, "then %q: %v\n", "garbage", err)
		// The server closes the connection after the reply: a request sent meanwhile may be lost with it.
		_, _, rerr := c.Get(ctx, "/sasl-raw")
		for errors.Is(rerr, zk.ErrConnectionClosed) && ctx.Err() == nil {
			_, _, rerr = c.Get(ctx, "/sasl-raw")
		}
		ids, _ := c.WhoAmI(ctx)
		fmt.Fprintf(&out, "then after reconnecting: read %s, same session %t, identities %v\n", okOr(rerr), c.SessionID() == csid, ids)

		_, _, err = saslConn(ctx, t, tg).SASL(ctx, nil)
		fmt.Fprintf(&out, "null first token: %v\n", err)
		c = saslConn(ctx, t, tg)
		if _, _, err := c.SASL(ctx, []byte{}); err != nil {
			t.Fatalf("%s: empty first token: %v", tg.name, err)
		}
		_, _, err = c.SASL(ctx, nil)
		fmt.Fprintf(&out, "null token after the challenge: %v\n", err)

		c = saslConn(ctx, t, tg)
		if err := c.LoginDigestMD5(ctx, "jaasuser", saslUsers["jaasuser"]); err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		_, _, err = c.SASL(ctx, []byte{})
		fmt.Fprintf(&out, "token after the login: %v\n", err)

		login := func(what, user, password string) *rawzk.Conn {
			c := saslConn(ctx, t, tg)
			err := c.LoginDigestMD5(ctx, user, password)
			var ids []string
			if err == nil {
				ids, _ = c.WhoAmI(ctx)
			}
			fmt.Fprintf(&out, "%s: %v", what, errors.Unwrap(err))
			if err == nil {
				fmt.Fprintf(&out, " %v", ids)
			}
			out.WriteString("\n")
			return c
		}
		owner := login("jaasuser/secret", "jaasuser", saslUsers["jaasuser"])
		login("nosuch/secret (jaasuser named last)", "nosuch", saslUsers["jaasuser"])
		login("nosuch/otherpw (jaasuser named last)", "nosuch", saslUsers["other"])
		login("other/wrong", "other", "wrong")
		login("nosuch/otherpw (other named last)", "nosuch", saslUsers["other"])

		if _, err := owner.Create(ctx, "/sasl-raw/mine", nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: "jaasuser"}}); err != nil {
			t.Fatalf("%s: create /sasl-raw/mine: %v", tg.name, err)
		}
		other := saslConn(ctx, t, tg)
		if err := other.LoginDigestMD5(ctx, "other", saslUsers["other"]); err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		boss := saslConn(ctx, t, tg)
		if err := boss.LoginDigestMD5(ctx, saslSuperUser, saslUsers[saslSuperUser]); err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		read := func(c *rawzk.Conn) error { _, _, err := c.Get(ctx, "/sasl-raw/mine"); return err }
		bossIDs, err := boss.WhoAmI(ctx)
		fmt.Fprintf(&out, "the super user's whoAmI: %v %v\n", bossIDs, err)
		fmt.Fprintf(&out, "read of jaasuser's node: jaasuser %v, other %v, anonymous %v, boss %v\n", read(owner), read(other), read(saslConn(ctx, t, tg)), read(boss))
		if err := boss.Delete(ctx, "/sasl-raw/mine", -1); err != nil {
			t.Errorf("%s: super deletes /sasl-raw/mine: %v", tg.name, err)
		}

		_, _, err = bystander.Get(ctx, "/sasl-raw")
		fmt.Fprintf(&out, "bystander: same session %t, read %s\n", bystander.SessionID() == sid, okOr(err))
		if err := bystander.Delete(ctx, "/sasl-raw", -1); err != nil {
			t.Errorf("%s: delete /sasl-raw: %v", tg.name, err)
		}
		if got := out.String(); got != want {
			t.Errorf("%s: got\n%s\nwant\n%s", tg.name, got, want)
		}
		return out.String()
	})
}

func okOr(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// TestSASLWithoutJAAS: a server without a JAAS Server section (the real one of the other scenarios, and the
// model by default) answers a sasl token with a null token and changes nothing; a null token, or a sasl
// request without its token, closes the connection unanswered, as it does on a server with SASL.
func TestSASLWithoutJAAS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	const want = "token: null=true zxid=0 err=<nil>, identities [ip:127.0.0.1]\n" +
		"null token: zk: connection closed\n" +
		"sasl request without a token: EOF\n" +
		"with SASL, sasl request without a token: EOF\n"
	bodyless := func(tg target) string {
		nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", tg.connect)
		if err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		frame := func(body func(e *jute.Encoder)) []byte {
			e := jute.NewEncoder(make([]byte, 4))
			body(e)
			b := e.Bytes()
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			return b
		}
		connect := jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}
		nc.Write(frame(connect.Encode))
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			t.Fatalf("%s: connect response: %v", tg.name, err)
		}
		if _, err := io.CopyN(io.Discard, nc, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
			t.Fatalf("%s: connect response: %v", tg.name, err)
		}
		nc.Write(frame(func(e *jute.Encoder) { e.Int(1); e.Int(jute.OpSASL) }))
		_, err = io.ReadFull(nc, size[:])
		return fmt.Sprint(err)
	}
	sameOutcomeOn(t, targets(t), func(t *testing.T, tg target) string {
		var out strings.Builder
		c := saslConn(ctx, t, tg)
		tok, zxid, err := c.SASL(ctx, []byte("garbage"))
		ids, _ := c.WhoAmI(ctx)
		fmt.Fprintf(&out, "token: null=%t zxid=%d err=%v, identities %v\n", tok == nil, zxid, err, ids)
		_, _, err = saslConn(ctx, t, tg).SASL(ctx, nil)
		fmt.Fprintf(&out, "null token: %v\n", err)
		fmt.Fprintf(&out, "sasl request without a token: %s\n", bodyless(tg))
		with := modelSASLTarget(t)
		if tg.model == nil {
			with = realSASLTarget(t)
		}
		fmt.Fprintf(&out, "with SASL, sasl request without a token: %s\n", bodyless(with))
		if out.String() != want {
			t.Errorf("%s: got\n%s\nwant\n%s", tg.name, out.String(), want)
		}
		return out.String()
	})
}
