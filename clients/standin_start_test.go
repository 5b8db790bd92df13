package clients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/realzk"
)

// startCase is one set of files a harness starts `zkServer.sh start-foreground zoo.cfg` from, and what
// Debian's ZooKeeper 3.8.0 did with them.
//
// In cfg, flags and files, {dir} is the case's own directory and {p0}…{p9} are free ports; the server's
// client port is {p0}.
type startCase struct {
	name  string
	cfg   []string          // the zoo.cfg lines
	flags string            // SERVER_JVMFLAGS
	files map[string]string // more files, by path under {dir}
	// probe, once the server serves, asks it what the case is about and says what it answered (saslProbe:
	// a SASL DIGEST-MD5 login as jaasuser, the user of server.jaas).
	probe func(ctx context.Context, t *testing.T, addr string) string
	// want is the outcome measured on real 3.8: "exit N", or "serves" and what srvr first says of the mode
	// ("Mode: standalone", or "not serving" for an ensemble's member alone), then the SASL outcome.
	want string
	// standIn is a part of the stand-in's message when it exits: it must say what is wrong.
	standIn string
	// made is a directory (under {dir}) whose existence once the server serves is part of the outcome.
	made string
	// busy: another process listens on the client port ({p0}, 127.0.0.1) meanwhile.
	busy bool
}

// The files the cases share.
const (
	saslProviderLine = "authProvider.1=" + saslAuthProvider
	serverJAASText   = "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_jaasuser=\"secret\";\n};\n"
	clientJAASText   = "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=\"jaasuser\"\n  password=\"secret\";\n};\n"
)

// zooCfgStart starts most cases' zoo.cfg.
var zooCfgStart = []string{"tickTime=500", "initLimit=10", "syncLimit=5", "admin.enableServer=false", "4lw.commands.whitelist=*", "dataDir={dir}/data"}

// zooCfg is zooCfgStart and more lines.
func zooCfg(more ...string) []string { return append(append([]string(nil), zooCfgStart...), more...) }

// The SASL outcomes measured on real 3.8 with rawzk: with the JAAS file's server section, the first token (an
// empty one) gets the DIGEST-MD5 challenge and jaasuser/secret logs in (whoAmI: ip and sasl:jaasuser); without
// it (an empty JAAS file, one with a Client section only, one without the section zookeeper.sasl.serverconfig
// names) the server has no SASL server: the first token gets a null token (zxid 0, no error, nothing changes)
// and the client's login fails for want of a challenge.
const (
	saslWorks = "; SASL: first token gets a challenge, jaasuser logs in [ip:127.0.0.1 sasl:jaasuser]"
	saslNone  = "; SASL: first token gets a null token, jaasuser's login fails [ip:127.0.0.1]"
)

// startCases are the inputs a harness may give, odd ones included, each with what Debian's zkServer.sh
// start-foreground (ZooKeeper 3.8.0, its JVM's log going nowhere: Debian's SLF4J has no binding, so a refused
// configuration prints only "Using config: …" and exits) did with them, measured by hand first and then by
// TestStandInStartsAsReal itself.
var startCases = []startCase{
	// The harness: zoo.cfg names the SASL provider, the JAAS file is empty (it writes a Server section
	// only when a test asks for SASL). 3.8 starts: a JAAS file it can read without the server section means "no
	// SASL" (ServerCnxnFactory.configureSaslLogin), not an error.
	{name: "empty JAAS file", cfg: zooCfg("clientPort={p0}", saslProviderLine),
		flags: "-Djava.security.auth.login.config={dir}/empty.jaas", files: map[string]string{"empty.jaas": ""},
		probe: saslProbe, want: "serves, Mode: standalone" + saslNone},
	{name: "JAAS file without a Server section", cfg: zooCfg("clientPort={p0}", saslProviderLine),
		flags: "-Djava.security.auth.login.config={dir}/client.jaas", files: map[string]string{"client.jaas": clientJAASText},
		probe: saslProbe, want: "serves, Mode: standalone" + saslNone},
	{name: "JAAS file without the section zookeeper.sasl.serverconfig names", cfg: zooCfg("clientPort={p0}", saslProviderLine),
		flags: "-Djava.security.auth.login.config={dir}/server.jaas -Dzookeeper.sasl.serverconfig=Nope", files: map[string]string{"server.jaas": serverJAASText},
		probe: saslProbe, want: "serves, Mode: standalone" + saslNone},
	// Trailing spaces: QuorumPeerConfig trims every key and value (the script trims dataDir too).
	{name: "JAAS Server section, trailing spaces on values", cfg: append(zooCfg("clientPort={p0}   ", saslProviderLine+"  "), "dataDir={dir}/spaced  "),
		flags: "-Djava.security.auth.login.config={dir}/server.jaas", files: map[string]string{"server.jaas": serverJAASText},
		probe: saslProbe, want: "serves, Mode: standalone" + saslWorks},
	// A JAAS file that cannot be read or parsed: javax.security.auth.login.Configuration throws, 3.8 cannot
	// start its client port and exits 1 (not 2: the configuration itself was read).
	{name: "JAAS path that does not exist", cfg: zooCfg("clientPort={p0}", saslProviderLine),
		flags: "-Djava.security.auth.login.config={dir}/nosuch.jaas", want: "exit 1", standIn: "nosuch.jaas"},
	{name: "JAAS file that does not parse", cfg: zooCfg("clientPort={p0}", saslProviderLine),
		flags: "-Djava.security.auth.login.config={dir}/garbage.jaas", files: map[string]string{"garbage.jaas": "this is { not jaas\n"},
		want: "exit 1", standIn: "garbage.jaas"},
	// Keys QuorumPeerConfig does not know become system properties zookeeper.KEY; nothing refuses them.
	{name: "unknown zoo.cfg keys", cfg: zooCfg("clientPort={p0}", "fooBar=1", "no.such.key=x"), want: "serves, Mode: standalone"},
	// The script makes the dataDir (mkdir -p) before the JVM starts.
	{name: "dataDir that does not exist yet", cfg: append(zooCfg("clientPort={p0}"), "dataDir={dir}/not/yet/there"),
		made: "not/yet/there", want: "serves, Mode: standalone; not/yet/there made"},
	// java.util.Properties: the last line of a key wins.
	{name: "duplicate keys", cfg: zooCfg("clientPort={p1}", "clientPort={p0}"), want: "serves, Mode: standalone"},
	{name: "duplicate server.1 lines", cfg: zooCfg("server.1=127.0.0.1:{p2}:{p3};{p1}", "server.1=127.0.0.1:{p2}:{p3};{p0}"),
		files: map[string]string{"data/myid": "1\n"}, want: "serves, Mode: standalone"},
	// Every key QuorumPeerConfig does not know becomes the system property zookeeper.KEY, set after the JVM's
	// -D flags (so zoo.cfg's wins): superDigest, extendedTypesEnabled and the four-letter words can be given
	// either way.
	{name: "system properties as zoo.cfg keys", cfg: []string{"tickTime=500", "admin.enableServer=false", "dataDir={dir}/data", "clientPort={p0}",
		"extendedTypesEnabled=true", "DigestAuthenticationProvider.superDigest=" + superTest, "4lw.commands.whitelist=srvr,ruok"},
		flags: "-Dzookeeper.4lw.commands.whitelist=srvr", probe: propertiesProbe,
		want: "serves, Mode: standalone; TTL node: ok; super:test reads a:b's node: ok; ruok: \"imok\""},
	{name: "system properties as -D flags", cfg: []string{"tickTime=500", "admin.enableServer=false", "dataDir={dir}/data", "clientPort={p0}"},
		flags: "-Dzookeeper.extendedTypesEnabled=true -Dzookeeper.DigestAuthenticationProvider.superDigest=" + superTest + " -Dzookeeper.4lw.commands.whitelist=srvr,ruok",
		probe: propertiesProbe, want: "serves, Mode: standalone; TTL node: ok; super:test reads a:b's node: ok; ruok: \"imok\""},
	{name: "none of those properties", cfg: []string{"tickTime=500", "admin.enableServer=false", "dataDir={dir}/data", "clientPort={p0}"},
		probe: propertiesProbe, want: "serves, Mode: standalone; TTL node: unknown error: -6; super:test reads a:b's node: zk: not authenticated; ruok: \"ruok is not executed because it is not in the whitelist.\\n\""},
	// A client port another process listens on: 3.8 cannot bind it and exits 1.
	{name: "client port in use", cfg: zooCfg("clientPort={p0}"), busy: true, want: "exit 1", standIn: "address already in use"},
	// tickTime defaults to 3000.
	{name: "no tickTime", cfg: []string{"admin.enableServer=false", "dataDir={dir}/data", "clientPort={p0}"}, want: "serves, Mode: standalone"},
	{name: "no dataDir", cfg: []string{"tickTime=500", "clientPort={p0}"}, want: "exit 2", standIn: "dataDir is not set"},
	// One server.N line with standaloneEnabled (the default) is a standalone server; its myid, when the file
	// is there, picks the line whose ";port" is the client port.
	{name: "clientPort absent, one server line with its client port, myid", cfg: zooCfg("server.1=127.0.0.1:{p1}:{p2};{p0}"),
		files: map[string]string{"data/myid": "1\n"}, want: "serves, Mode: standalone"},
	// Without a myid file, a standalone server (one server line, standaloneEnabled) needs none.
	{name: "standalone server without myid", cfg: zooCfg("clientPort={p0}", "server.1=127.0.0.1:{p1}:{p2}"), want: "serves, Mode: standalone"},
	// clientPort and the server's own line may both give the client port, if they agree.
	{name: "clientPort and its server line's port agree", cfg: zooCfg("clientPort={p0}", "server.1=127.0.0.1:{p1}:{p2};{p0}"),
		files: map[string]string{"data/myid": "1\n"}, want: "serves, Mode: standalone"},
	{name: "clientPort and its server line's port differ", cfg: zooCfg("clientPort={p3}", "server.1=127.0.0.1:{p1}:{p2};{p0}"),
		files: map[string]string{"data/myid": "1\n"}, want: "exit 2", standIn: "is different from the client port of server.1's line"},
	// A standalone server reads myid when the file is there: a myid that is no number is refused.
	{name: "standalone server with a myid that is no number", cfg: zooCfg("clientPort={p0}"),
		files: map[string]string{"data/myid": "one\n"}, want: "exit 2", standIn: "myid"},
	// An ensemble's member alone (its peers never start): it listens and srvr says it does not serve.
	{name: "clientPort absent, ensemble's server lines with client ports", cfg: zooCfg("server.1=127.0.0.1:{p1}:{p2};{p0}",
		"server.2=127.0.0.1:{p3}:{p4};{p5}", "server.3=127.0.0.1:{p6}:{p7};{p8}"),
		files: map[string]string{"data/myid": "1\n"}, want: "serves, not serving"},
	{name: "ensemble member without myid", cfg: zooCfg("server.1=127.0.0.1:{p1}:{p2};{p0}",
		"server.2=127.0.0.1:{p3}:{p4};{p5}", "server.3=127.0.0.1:{p6}:{p7};{p8}"), want: "exit 2", standIn: "myid"},
	{name: "ensemble member without initLimit", cfg: []string{"tickTime=500", "syncLimit=5", "dataDir={dir}/data",
		"server.1=127.0.0.1:{p1}:{p2};{p0}", "server.2=127.0.0.1:{p3}:{p4};{p5}", "server.3=127.0.0.1:{p6}:{p7};{p8}"},
		files: map[string]string{"data/myid": "1\n"}, want: "exit 2", standIn: "initLimit is not set"},
	// Booleans are true or false, nothing else ("Invalid option yes for standaloneEnabled").
	{name: "standaloneEnabled=yes", cfg: zooCfg("clientPort={p0}", "standaloneEnabled=yes"), want: "exit 2", standIn: "standaloneEnabled"},
	{name: "localSessionsEnabled=yes", cfg: zooCfg("clientPort={p0}", "localSessionsEnabled=yes"), want: "exit 2", standIn: "localSessionsEnabled"},
	{name: "clientPortAddress without clientPort", cfg: zooCfg("clientPortAddress=127.0.0.1"), want: "exit 2", standIn: "clientPort is not set"},
}

// propertiesProbe creates a TTL node (allowed by zookeeper.extendedTypesEnabled), a node only digest user a:b
// may read, which super:test (zookeeper.DigestAuthenticationProvider.superDigest) then reads, and asks ruok
// (allowed by zookeeper.4lw.commands.whitelist, or not).
func propertiesProbe(ctx context.Context, t *testing.T, addr string) string {
	t.Helper()
	c := probeSession(ctx, t, addr)
	defer c.Close(ctx)
	_, err := c.CreateTTL(ctx, "/ttl", nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Hour)
	out := "; TTL node: " + okOr(err)
	if _, err := c.Create(ctx, "/secret", []byte("s"), 0, zk.DigestACL(zk.PermAll, "a", "b")); err != nil {
		t.Fatalf("create /secret on %s: %v", addr, err)
	}
	super := probeSession(ctx, t, addr)
	defer super.Close(ctx)
	if err := super.AddAuth(ctx, "digest", []byte("super:test")); err != nil {
		t.Fatalf("addauth super:test on %s: %v", addr, err)
	}
	_, _, err = super.Get(ctx, "/secret")
	ruok, werr := realzk.FourLetter(ctx, addr, "ruok")
	if werr != nil {
		t.Fatalf("ruok to %s: %v", addr, werr)
	}
	return fmt.Sprintf("%s; super:test reads a:b's node: %s; ruok: %q", out, okOr(err), ruok)
}

// superTest is super:test's digest, as go-zookeeper's harness gives it.
const superTest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="

// Measured but not in the table: a standalone zoo.cfg without any client port (no clientPort, or one server
// line with a ";port" and no myid file) makes 3.8 run on without a client port, serving nobody, until it is
// killed. The stand-in refuses such a file instead (exit 2, "clientPort is not set"): a harness gets
// connection refused from both, and from the stand-in a message saying why.

// TestStandInStartsAsReal: Debian's zkServer.sh and the stand-in, each started with start-foreground from the
// same files (zoo.cfg, myid, JAAS file, SERVER_JVMFLAGS) of every startCase, either both serve (srvr answers
// alike, and a SASL login fares alike) or both exit with the same status; when the stand-in exits, its
// message says what is wrong.
func TestStandInStartsAsReal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	zkmodelBin := buildZkmodel(ctx, t)
	for _, side := range []struct{ name, script string }{{"real", realZkServer}, {"stand-in", ""}} {
		t.Run(side.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range startCases {
				t.Run(tc.name, func(t *testing.T) {
					got, out := startOnce(ctx, t, side.script, zkmodelBin, tc)
					if got != tc.want {
						t.Errorf("%s\ngot  %s\nwant %s (measured on real 3.8.0)\noutput:\n%s", side.name, got, tc.want, out)
					}
					if side.script == "" && strings.HasPrefix(got, "exit") && !strings.Contains(out, tc.standIn) {
						t.Errorf("the stand-in's message does not name %q:\n%s", tc.standIn, out)
					}
				})
			}
		})
	}
}

// startOnce writes tc's files into a directory of t's, runs script (realZkServer, or "" for the stand-in run
// by zkmodelBin) start-foreground on them, and returns the outcome, in startCase.want's form, and the
// script's output. The process is killed before it returns.
func startOnce(ctx context.Context, t *testing.T, script, zkmodelBin string, tc startCase) (string, string) {
	t.Helper()
	dir := t.TempDir()
	oldnew := []string{"{dir}", dir}
	var held []net.Listener // until all are chosen, so that none repeats
	for i := range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		oldnew = append(oldnew, "{p"+strconv.Itoa(i)+"}", strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	for i, l := range held {
		if i > 0 || !tc.busy {
			l.Close()
		}
	}
	if tc.busy {
		defer held[0].Close()
	}
	fill := strings.NewReplacer(oldnew...).Replace
	addr := "127.0.0.1:" + oldnew[3] // {p0}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range tc.files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(fill(text)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(fill(strings.Join(tc.cfg, "\n"))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SERVER_JVMFLAGS="+fill(tc.flags))
	if script == "" {
		var err error
		if script, err = filepath.Abs(filepath.Join("..", "dropin", "bin", "zkServer.sh")); err != nil {
			t.Fatal(err)
		}
		env = append(env, "ZKMODEL_BIN="+zkmodelBin, "ZKMODEL_RUNDIR="+filepath.Join(dir, "run"))
	} else {
		env = append(env, "JVMFLAGS="+realServerJVMFlags, "ZOO_LOG_DIR="+filepath.Join(dir, "logs"))
	}
	outFile, err := os.Create(filepath.Join(dir, "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	output := func() string { b, _ := os.ReadFile(outFile.Name()); return string(b) }
	cmd := exec.Command(script, "start-foreground", cfg)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, outFile, outFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill() // gone already when it exited
		<-exited
	}()

	ctx, cancel := context.WithTimeout(ctx, 90*time.Second) // a real server's JVM on loaded cores
	defer cancel()
	exit := func(err error) string {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Sprintf("exit %d", ee.ExitCode())
		}
		return fmt.Sprintf("exit %v", err)
	}
	// Serving once srvr answers; for a standalone server, once it has a mode (3.8 answers "not currently
	// serving" for a moment at start).
	var got string
	for got == "" {
		answer, err := realzk.FourLetter(ctx, addr, "srvr")
		switch {
		case err == nil && strings.Contains(answer, "Mode: "):
			mode, _, _ := strings.Cut(answer[strings.Index(answer, "Mode: "):], "\n")
			got = "serves, " + mode
		case err == nil && answer == notServing && !strings.Contains(tc.want, "Mode: "):
			got = "serves, not serving"
		}
		if got != "" {
			break
		}
		select {
		case err := <-exited:
			exited <- err // for the deferred wait
			return exit(err), output()
		case <-ctx.Done():
			t.Fatalf("neither serves on %s nor exits after 90s:\n%s", addr, output())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if tc.made != "" {
		if st, err := os.Stat(filepath.Join(dir, tc.made)); err == nil && st.IsDir() {
			got += "; " + tc.made + " made"
		} else {
			got += fmt.Sprintf("; %s: %v", tc.made, err)
		}
	}
	if tc.probe != nil {
		got += tc.probe(ctx, t, addr)
	}
	return got, output()
}

// probeSession opens a rawzk session on addr; the probe closes it before it returns (the server is killed
// then).
func probeSession(ctx context.Context, t *testing.T, addr string) *rawzk.Conn {
	t.Helper()
	c, _, err := rawzk.Connect(ctx, []string{addr}, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	return c
}

// saslProbe sends an empty first SASL token on one session and logs jaasuser in on another, and says what
// happened as the startCase.want constants do.
func saslProbe(ctx context.Context, t *testing.T, addr string) string {
	t.Helper()
	session := func() *rawzk.Conn { return probeSession(ctx, t, addr) }
	c := session()
	defer c.Close(ctx)
	first := "a challenge"
	tok, _, err := c.SASL(ctx, []byte{})
	switch {
	case err != nil:
		first = err.Error()
	case tok == nil:
		first = "a null token"
	case !challengeText.Match(tok):
		first = fmt.Sprintf("%q", tok)
	}
	c = session()
	defer c.Close(ctx)
	login := "jaasuser logs in"
	if err := c.LoginDigestMD5(ctx, "jaasuser", "secret"); err != nil {
		login = "jaasuser's login fails"
	}
	ids, err := c.WhoAmI(ctx)
	if err != nil {
		t.Fatalf("whoAmI on %s: %v", addr, err)
	}
	return fmt.Sprintf("; SASL: first token gets %s, %s %v", first, login, ids)
}
