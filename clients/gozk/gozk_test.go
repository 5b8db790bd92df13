package gozk

import (
	"cmp"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	standInFlag = flag.String("gozk.standin", "", "directory of the zkServer.sh go-zookeeper's suite runs against as zkmodel; empty means "+
		"the stand-in, dropin/bin")
	tableFlag = flag.String("gozk.table", "", "write TestGoZookeeperSuite's table (Markdown) to this file; empty means a file in the test's "+
		"temporary directory")
	shardsFlag = flag.Int("gozk.shards", 3, "how many processes run go-zookeeper's suite at once on each side")
)

// standInBinDir is the directory of the stand-in's zkServer.sh: dropin/bin, found from this package's
// directory (go test runs a package's tests in its directory), unless -gozk.standin names another.
func standInBinDir() (string, error) {
	dir := cmp.Or(*standInFlag, filepath.Join("..", "..", "dropin", "bin"))
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("the stand-in's directory %q: %w", dir, err)
	}
	return abs, nil
}

// realServerEnv is what Debian's zkServer.sh gets besides the suite's own SERVER_JVMFLAGS: a logger
// (Debian's classpath has slf4j-api without a binding, so the servers print nothing; the java launcher
// takes the last -cp, which JVMFLAGS comes after zkServer.sh's), so that a real-side failure shows what
// its servers said. It changes no server behaviour.
func realServerEnv() []string {
	return []string{"JVMFLAGS=-Xmx512m -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar " +
		"-Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS"}
}

// suiteTest is one of go-zookeeper v1.0.4's 28 integration tests and what it does on real ZooKeeper 3.8.
type suiteTest struct {
	name string
	// onReal is its outcome on Debian's ZooKeeper 3.8.0: pass, every one of them (the two reconfig tests
	// skip unless ZK_VERSION is set, which suiteEnv does: requireMinimumZkVersion).
	onReal string
	// seconds is about how long it takes on real (measured on 2 loaded cores); only the shards use it,
	// to spread the slow tests.
	seconds float64
}

// goZookeeperSuite lists the suite's TestIntegration_* tests. The suite's timing-dependent ones: SlowServer
// (a proxy adds 2 s latency; a watch event must arrive within 1 s), ExpiringWatch (a 1 s session expires),
// MaxBufferSize, Children (10,000 children of 2,000-byte names: a 20 MB reply), NoQuorum and
// RecurringReAuthHang (kill servers, wait for reconnects).
var goZookeeperSuite = []suiteTest{
	{"TestIntegration_BasicCluster", outcomePass, 10},
	{"TestIntegration_ClientClusterFailover", outcomePass, 10},
	{"TestIntegration_NoQuorum", outcomePass, 25},
	{"TestIntegration_WaitForClose", outcomePass, 3},
	{"TestIntegration_BadSession", outcomePass, 6},
	{"TestIntegration_RecurringReAuthHang", outcomePass, 12},
	{"TestIntegration_DNSHostProviderCreate", outcomePass, 5},
	{"TestIntegration_DNSHostProviderReconnect", outcomePass, 6},
	{"TestIntegration_Lock", outcomePass, 2},
	{"TestIntegration_MultiLevelLock", outcomePass, 2},
	{"TestIntegration_StateChanges", outcomePass, 2},
	{"TestIntegration_Create", outcomePass, 2},
	{"TestIntegration_CreateTTL", outcomePass, 2},
	{"TestIntegration_CreateContainer", outcomePass, 2},
	{"TestIntegration_IncrementalReconfig", outcomePass, 32},
	{"TestIntegration_Reconfig", outcomePass, 15},
	{"TestIntegration_OpsAfterCloseDontDeadlock", outcomePass, 2},
	{"TestIntegration_Multi", outcomePass, 2},
	{"TestIntegration_IfAuthdataSurvivesReconnect", outcomePass, 5},
	{"TestIntegration_MultiFailures", outcomePass, 3},
	{"TestIntegration_GetSetACL", outcomePass, 3},
	{"TestIntegration_Auth", outcomePass, 3},
	{"TestIntegration_Children", outcomePass, 35},
	{"TestIntegration_ChildWatch", outcomePass, 3},
	{"TestIntegration_SetWatchers", outcomePass, 10},
	{"TestIntegration_ExpiringWatch", outcomePass, 3},
	{"TestIntegration_SlowServer", outcomePass, 9},
	{"TestIntegration_MaxBufferSize", outcomePass, 3},
}

// suiteTimeout bounds one go test process of the suite (the whole suite takes 2.5–4 minutes in one on 2 loaded cores).
const suiteTimeout = 6 * time.Minute

// outputTailLines is how much of a failed test's output (its servers' included) a failure shows.
const outputTailLines = 80

// TestGoZookeeperSuite runs go-zookeeper's own integration suite (v1.0.4, copied from the module cache,
// its start-up wait patched: see suiteHarnessPatches) on Debian's ZooKeeper 3.8 and on the stand-in
// (bin/zkServer.sh), and asserts that real ZooKeeper does what goZookeeperSuite says and that every test
// that passes on real passes on the stand-in. It logs both sides in one table.
//
// A top-level test that fails (on either side) runs again, alone, up to suiteRetries times, and its last
// outcome counts; the first failure is logged. The suite's clusters take random ports in 10000–16000 (collisions between
// concurrent clusters are possible) and its waits are fixed (1 s for a watch event, for a session), which
// a JVM on two loaded cores can miss; a test that fails every time is a failure. The real servers get the
// JVM flags realzk's own use for a quick start-up (serial GC, the client compiler only).
func TestGoZookeeperSuite(t *testing.T) {
	standIn, err := standInBinDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(standIn, "zkServer.sh")); err != nil {
		t.Fatalf("the stand-in's zkServer.sh is missing (%v): it lives in dropin/bin; or pass -gozk.standin=DIR", err)
	}
	if _, err := os.Stat(filepath.Join(realZooKeeperBin, "zkServer.sh")); err != nil {
		t.Fatalf("Debian's ZooKeeper is missing (%v): run make zookeeper", err)
	}
	if *shardsFlag < 1 {
		t.Fatalf("-gozk.shards=%d: give at least 1", *shardsFlag)
	}
	suiteDir, err := copySuite(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(goZookeeperSuite))
	bySeconds := slices.Clone(goZookeeperSuite)
	slices.SortStableFunc(bySeconds, func(a, b suiteTest) int { return cmp.Compare(b.seconds, a.seconds) })
	for i, test := range bySeconds {
		names[i] = test.name
	}

	sides := []suiteSide{
		{name: "real", binDir: realZooKeeperBin, env: realServerEnv()},
		{name: "zkmodel", binDir: standIn},
	}
	results := make([]*sideResult, len(sides))
	errs := make([]error, len(sides))
	scratch := t.TempDir()
	var wg sync.WaitGroup
	for i, side := range sides {
		wg.Go(func() {
			results[i], errs[i] = runSide(t.Context(), suiteDir, scratch, side, names, *shardsFlag, suiteTimeout)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	realSide, fakeSide := results[0], results[1]

	for _, side := range results {
		for _, name := range side.first.topLevel() {
			if !slices.Contains(names, name) {
				t.Errorf("%s side: go-zookeeper's suite ran %s, which goZookeeperSuite does not list: is it not %s? update the list",
					side.side.name, name, goZookeeperVersion)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(side.retry)) {
			first := side.first.results[name]
			tail := side.first.outputTail(name, outputTailLines)
			var hint string
			if strings.Contains(strings.Join(side.first.subtreeOutput(name), "\n"), "Address already in use") {
				hint = " (a port was taken: the suite's random ports collided with another cluster's)"
			}
			t.Logf("%s side: %s did %s at first%s, %s when run again alone (%d times); the first run's output:\n%s",
				side.side.name, name, outcomeOf(first), hint, side.outcome(name), side.attempts[name], tail)
		}
	}
	ordered := make([]string, len(goZookeeperSuite))
	for i, test := range goZookeeperSuite {
		ordered[i] = test.name
		if got := realSide.outcome(test.name); got != test.onReal {
			t.Errorf("real ZooKeeper: %s did %s (retried %d times), want %s — a failure on the real side, not the stand-in's; "+
				"its output (its servers' as [ZKERR]) ends:\n%s", test.name, got, realSide.attempts[test.name], test.onReal, realSide.final(test.name).outputTail(test.name, outputTailLines))
		}
		if realSide.outcome(test.name) == outcomePass {
			if got := fakeSide.outcome(test.name); got != outcomePass {
				t.Errorf("stand-in: %s did %s (retried %d times), and passes on real ZooKeeper; its output (its servers' as [ZKERR]) ends:\n%s",
					test.name, got, fakeSide.attempts[test.name], fakeSide.final(test.name).outputTail(test.name, outputTailLines))
			}
		}
	}

	table := comparisonTable(ordered, realSide, fakeSide)
	path := *tableFlag
	if path == "" {
		path = filepath.Join(t.TempDir(), "gozk.md")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("make the table's directory: %v", err)
	}
	heading := fmt.Sprintf("# go-zookeeper %s's integration suite: real ZooKeeper 3.8 and zkmodel's stand-in\n\n", goZookeeperVersion)
	if err := os.WriteFile(path, []byte(heading+table), 0o644); err != nil {
		t.Fatalf("write the table: %v", err)
	}
	t.Logf("go-zookeeper %s's integration suite (table in %s):\n%s", goZookeeperVersion, path, strings.TrimRight(table, "\n"))
}

// outcomeOf is res's outcome, or noResult for a test that never started.
func outcomeOf(res *testResult) string {
	if res == nil {
		return noResult
	}
	return res.outcome
}
