package check

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/recipe"
)

// zkMutex is a user's Locker around go-zookeeper's own lock, as a user writes it.
type zkMutex struct{ l *zk.Lock }

func (m *zkMutex) Lock(context.Context) error   { return m.l.Lock() }
func (m *zkMutex) Unlock(context.Context) error { return m.l.Unlock() }
func (m *zkMutex) Token() int64                 { return 0 }

// zkLockAdapter is the README's adapter of go-zookeeper's zk.Lock, with value methods.
type zkLockAdapter struct{ l *zk.Lock }

func (z zkLockAdapter) Lock(context.Context) error   { return z.l.Lock() }
func (z zkLockAdapter) Unlock(context.Context) error { return z.l.Unlock() }
func (z zkLockAdapter) Token() int64                 { return 0 }

// TestRunZKRefusesANilLockClearly: whatever nil a ZKFactory (or a Factory) returns — the nil interface, a
// typed nil, an adapter around a nil — the probe run says so in one sentence, on go-zookeeper's clients (whose
// goroutines, left running, used to abort the test binary with synctest's deadlock panic) and on the model's.
func TestRunZKRefusesANilLockClearly(t *testing.T) {
	cases := []struct {
		name string
		lock func(conn recipe.Conn) Locker
		want string
	}{
		{"nil", func(recipe.Conn) Locker { return nil }, "the Factory returned a nil Locker for client c1: it must return a lock on the given connection and path"},
		{"typed-nil", func(recipe.Conn) Locker { var m *zkMutex; return m }, "the Factory returned a nil *check.zkMutex (a typed nil in a Locker: its methods would dereference nil) for client c1"},
		{"nil-candidate", func(recipe.Conn) Locker { return NewElectionLocker(nil, nil) }, "the Factory returned a Locker of NewElectionLocker whose Candidate is nil for client c1"},
		{"typed-nil-leaser", func(recipe.Conn) Locker { var s *recipe.Semaphore; return NewSemaphoreLocker(s) }, "the Factory returned a Locker of NewSemaphoreLocker whose Leaser is a nil *recipe.Semaphore for client c1"},
		{"adapter-around-nil", func(recipe.Conn) Locker { return zkLockAdapter{} }, "the Factory returned a check.zkLockAdapter whose fields are all nil (l: a nil *zk.Lock; its methods would dereference nil) for client c1"},
		{"pointer-to-adapter-around-nil", func(recipe.Conn) Locker { return &zkMutex{} }, "the Factory returned a *check.zkMutex whose fields are all nil (l: a nil *zk.Lock; its methods would dereference nil) for client c1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Name: "nil-" + c.name}.withDefaults()
			wire := wireClients(func(conn *zk.Conn, _ string) Locker { return c.lock(conn) })
			model := modelClients(func(conn recipe.Conn, _ string) Locker { return c.lock(conn) })
			for _, kind := range []clients{wire, model} {
				err := probe(t, kind, cfg)
				if err == nil || !strings.HasPrefix(err.Error(), "check: "+cfg.Name+": "+c.want) {
					t.Errorf("%s clients: got %v, want %q", kind.name, err, c.want)
				}
			}
		})
	}
}

// TestRunZKWithANilLockFailsInOneSentence runs a user's test whose ZKFactory returns a nil lock, in a child
// process: the test fails with the sentence, and the binary does not panic.
func TestRunZKWithANilLockFailsInOneSentence(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNilZKLock$")
	cmd.Env = append(os.Environ(), "ZKMODEL_NIL_ZK_LOCK=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the user's test passed with a nil lock:\n%s", out)
	}
	want := "check: users-nil-lock: the Factory returned a nil *check.zkMutex (a typed nil in a Locker: its methods would dereference nil) for client c1: it must return a lock on the given connection and path"
	if !strings.Contains(string(out), want) || strings.Contains(string(out), "panic") {
		t.Fatalf("want the sentence %q and no panic, got:\n%s", want, out)
	}
}

// TestHelperNilZKLock stands for a user's test whose ZKFactory returns a nil lock; it runs only as the child
// process of TestRunZKWithANilLockFailsInOneSentence.
func TestHelperNilZKLock(t *testing.T) {
	if os.Getenv("ZKMODEL_NIL_ZK_LOCK") == "" {
		return
	}
	RunZK(t, func(*zk.Conn, string) Locker { var m *zkMutex; return m }, Config{Name: "users-nil-lock", Checks: 1, TraceDir: t.TempDir()})
}

// TestConfigsOutOfScaleAreRefusedClearly: a semaphore with a lease for every client, and more clients or
// rounds than a run can drain, are config errors that say what to do — not a leases-share failure after the
// exploration, nor a run that lasts until the test's timeout.
func TestConfigsOutOfScaleAreRefusedClearly(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Primitive: Semaphore, Leases: 5, Clients: 3}, "check: Config.Leases is 5 with 3 clients: with a lease for every client none ever waits, so the semaphore's admission is never tested; set Config.Leases to 2 or fewer, or Config.Clients to 6 or more"},
		{Config{Primitive: Semaphore, Leases: 3}, "check: Config.Leases is 3 with 3 clients:"},
		{Config{Primitive: Semaphore, Clients: 2}, "check: Config.Leases is 0 (the default, 2) with 2 clients:"},
		{Config{Primitive: Semaphore, Clients: 1, Leases: 1}, "set Config.Clients to 2 or more"},
		{Config{Clients: 100000}, "check: Config.Clients is 100000: at most 100 (a run's cost grows faster than its clients, and the bugs the checker finds show with 2 to 5); use 3 to 10"},
		{Config{Clients: 101}, "Config.Clients is 101: at most 100"},
		{Config{Rounds: 1000}, "check: Config.Clients × Config.Rounds is 3 × 1000 = 3000: at most 400 rounds in all"},
		{Config{Clients: 100, Rounds: 5}, "100 × 5 = 500"},
	}
	for _, c := range cases {
		if err := c.cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
	for _, ok := range []Config{{Primitive: Semaphore}, {Primitive: Semaphore, Leases: 1}, {Primitive: Semaphore, Leases: 4, Clients: 5}, {Clients: 100}, {Clients: 100, Rounds: 4}, {Rounds: 133}} {
		if err := ok.validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for _, v := range Variants() {
		if err := v.Config.validate(); err != nil {
			t.Errorf("variant %s: %v", v.Name, err)
		}
	}
}

// TestATraceCutAnywhereIsRefusedAsTruncated cuts a committed trace at every byte: each cut is refused as
// truncated (an empty file as empty, not "at line 0"), never parsed — so never replayed into a seeming
// divergence.
func TestATraceCutAnywhereIsRefusedAsTruncated(t *testing.T) {
	path := filepath.Join(corpusDir(), "mutant-c-plain-create-liveness.trace")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseTrace(path, string(data)); err != nil {
		t.Fatalf("the whole trace: %v", err)
	}
	for cut := 0; cut < len(data); cut++ {
		_, err := parseTrace(path, string(data[:cut]))
		want := "the trace is truncated: it ends inside its "
		prefix := string(data[:cut])
		lines := strings.Split(strings.TrimSuffix(prefix, "\n"), "\n")
		if strings.Contains(prefix, "\nfinal state:\n") && strings.HasPrefix(lines[len(lines)-1], "verdict: ") {
			want = `the trace ends with its closing verdict but without the line "end of trace" after it: it is truncated`
		}
		if cut == 0 {
			want = path + ": the file is empty, not a trace"
		}
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), ":0:") {
			t.Fatalf("cut after byte %d of %d (…%q): got %v, want an error containing %q", cut, len(data), data[max(cut-20, 0):cut], err, want)
		}
	}
}
