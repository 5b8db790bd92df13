package realzk

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// StartTimeout bounds how long the test helpers wait for an ensemble to
// start or heal.
const StartTimeout = 90 * time.Second

// logLinesOnFailure is how much of each server log a failed test prints.
const logLinesOnFailure = 40

// TB is what the test helpers need of a test: testing.TB has it. It is an interface of its own so that the
// package, which the herd command links, does not link package testing.
type TB interface {
	Helper()
	Name() string
	Cleanup(func())
	Failed() bool
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// ForTest starts an ensemble for test t (or attaches to ZK_SERVERS when set)
// and registers its teardown with t.Cleanup, which also prints the tail of
// every server log when t failed. It fails t with a message saying what to
// install or set when no ensemble can be had.
func ForTest(t TB) *Ensemble {
	t.Helper()
	return ForTestWith(t, Config{})
}

// ForTestWith is ForTest with a Config; ZK_SERVERS, when set, overrides
// cfg.Addrs.
func ForTestWith(t TB, cfg Config) *Ensemble {
	t.Helper()
	addrs, err := FromEnv()
	if err != nil {
		t.Fatalf("realzk: %v", err)
	}
	if addrs != nil {
		cfg.Addrs = addrs
	}
	return StartForTest(t, cfg)
}

// StartForTest starts the ensemble cfg describes for t, as ForTestWith does but without looking at ZK_SERVERS:
// for a test that needs a configuration of its own (a whitelist, system properties), which an ensemble named by
// ZK_SERVERS may not have.
func StartForTest(t TB, cfg Config) *Ensemble {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	e, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("realzk: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("realzk: test failed; server logs:\n%s", e.LogTails(logLinesOnFailure))
		}
		if err := e.Close(); err != nil {
			t.Errorf("realzk: %v", err)
		}
	})
	return e
}

// The ensemble Shared hands out: one per process.
var shared struct {
	mu       sync.Mutex
	ensemble *Ensemble
	err      error
}

// SharedSuperUser is "user:password" of the super user of the ensemble Shared starts (not of one named by
// ZK_SERVERS, whose super user, if any, the harness cannot know).
const SharedSuperUser = "super:realzk-super-secret"

// SuperDigestProperty is the Java system property that gives a ZooKeeper server its super user, as a digest
// (see SuperDigest).
const SuperDigestProperty = "zookeeper.DigestAuthenticationProvider.superDigest"

// SuperDigest returns the digest identity of userPassword ("user:password"):
// user:base64(sha1(user:password)), the value SuperDigestProperty wants.
func SuperDigest(userPassword string) string {
	user, password, _ := strings.Cut(userPassword, ":")
	return zk.DigestACL(zk.PermAll, user, password)[0].ID
}

// Shared returns the process-wide ensemble (3 servers, default Config but for
// the super user SharedSuperUser, or
// ZK_SERVERS when set), starting it on first use, so the tests of a package
// share one ensemble. Each call first heals it (restarts servers an earlier
// test killed and waits for a quorum), so a test may Kill servers and leave
// the repair to the next user. Tests on a shared ensemble must use their own
// znode paths (e.g. under "/"+t.Name()). Tear it down at the end of the test
// binary with RunTests or CloseShared; if the binary dies first, Pdeathsig
// and the next Start's SweepStale clean up.
func Shared(t TB) *Ensemble {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.err != nil {
		t.Fatalf("realzk: shared ensemble unavailable: %v", shared.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if shared.ensemble == nil {
		cfg := Config{SystemProperties: map[string]string{SuperDigestProperty: SuperDigest(SharedSuperUser)}}
		cfg.Addrs, shared.err = FromEnv()
		if shared.err == nil {
			shared.ensemble, shared.err = Start(ctx, cfg)
		}
		if shared.err != nil {
			t.Fatalf("realzk: start shared ensemble: %v", shared.err)
		}
	} else if err := shared.ensemble.Heal(ctx); err != nil {
		t.Fatalf("realzk: shared ensemble: %v\n%s", err, shared.ensemble.LogTails(logLinesOnFailure))
	}
	e := shared.ensemble
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("realzk: test failed; shared ensemble server logs:\n%s", e.LogTails(logLinesOnFailure))
			if dir := os.Getenv(EnvKeepLogs); dir != "" {
				dir = filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-"+time.Now().Format("150405.000"))
				if err := e.KeepLogs(dir); err != nil {
					t.Logf("realzk: %v", err)
				} else {
					t.Logf("realzk: the shared ensemble's whole server logs are in %s", dir)
				}
			}
		}
	})
	return e
}

// EnvKeepLogs names a directory: when a test that uses the shared ensemble fails, realzk copies the
// servers' whole logs into a directory of it named after the test (the ensemble's own directory is
// removed when the tests end).
const EnvKeepLogs = "REALZK_KEEP_LOGS"

// CloseShared tears down the ensemble Shared started, if any. Later calls to
// Shared start a new one.
func CloseShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	e := shared.ensemble
	shared.ensemble, shared.err = nil, nil
	if e == nil {
		return nil
	}
	return e.Close()
}

// RunTests runs m's tests, then closes the shared ensemble, and returns the
// exit code. Use it as a package's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(realzk.RunTests(m)) }
func RunTests(m interface{ Run() int }) int {
	code := m.Run()
	if err := CloseShared(); err != nil {
		fmt.Fprintf(os.Stderr, "realzk: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// WriteJAAS writes a JAAS file with a Server section of ZooKeeper's DigestLoginModule and the users (name to
// password) into dir, and returns its path: what -Djava.security.auth.login.config names for SASL logins.
func WriteJAAS(dir string, users map[string]string) (string, error) {
	var b strings.Builder
	b.WriteString("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required")
	for _, u := range slices.Sorted(maps.Keys(users)) {
		fmt.Fprintf(&b, "\n  user_%s=%q", u, users[u])
	}
	b.WriteString(";\n};\n")
	path := filepath.Join(dir, "jaas.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", fmt.Errorf("write the JAAS file: %w", err)
	}
	return path, nil
}
