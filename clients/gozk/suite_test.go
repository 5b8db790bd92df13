package gozk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// This file runs go-zookeeper's own integration suite (its TestIntegration_* tests) against a directory
// holding a zkServer.sh: Debian's real ZooKeeper, or zkmodel's stand-in. The suite starts every server with
// `$ZOOKEEPER_BIN_PATH/zkServer.sh start-foreground zoo.cfg` and stops one by killing it.

// goZookeeperModule and goZookeeperVersion name the suite: the go-zookeeper release go.mod requires, whose
// harness suiteHarnessPatches is written for.
const (
	goZookeeperModule  = "github.com/go-zookeeper/zk"
	goZookeeperVersion = "v1.0.4"
)

// realZooKeeperBin is where Debian's zookeeper package puts zkServer.sh (make zookeeper installs it).
const realZooKeeperBin = "/usr/share/zookeeper/bin"

// sourcePatch replaces one piece of a suite file's text, which must occur exactly once.
type sourcePatch struct {
	file     string
	why      string
	old, new string
}

// suiteHarnessPatches are the only changes made to the suite, all in its harness's waitForStart. Upstream
// waits until FLWSrvr (the srvr four-letter word) parses every server's answer; its pattern wants a
// version like 3.8.0-<hex>, and Debian's 3.8.0 answers "3.8.0-${mvngit.commit.id}", so the wait always
// times out. A plain TCP dial does not do instead: ZooKeeper listens before it serves (a standalone server
// before it has loaded its database, a quorum member before the election), and closes a connection it
// cannot serve, so tests that start at once fail ("authentication failed: EOF", or a read that times out
// 100 s later). The replacement waits until every server answers a session handshake — what any client,
// and so the stand-in, needs — and then closes that session.
var suiteHarnessPatches = []sourcePatch{
	{
		file: "server_help_test.go",
		why:  "imports for the session-handshake wait",
		old:  "import (\n\t\"fmt\"\n\t\"io\"\n",
		new:  "import (\n\t\"encoding/binary\"\n\t\"fmt\"\n\t\"io\"\n\t\"net\"\n",
	},
	{
		file: "server_help_test.go",
		why:  "waitForStart's FLWSrvr health check",
		old: "\tfor i := 0; i < maxRetry; i++ {\n" +
			"\t\t_, ok := FLWSrvr(serverAddrs, time.Second)\n" +
			"\t\tif ok {\n" +
			"\t\t\treturn nil\n" +
			"\t\t}\n" +
			"\t\ttime.Sleep(interval)\n" +
			"\t}\n",
		new: "\tfor i := 0; i < maxRetry; i++ {\n" +
			"\t\tok := true\n" +
			"\t\tfor _, addr := range serverAddrs {\n" +
			"\t\t\tok = ok && zkmodelServes(addr, time.Second)\n" +
			"\t\t}\n" +
			"\t\tif ok {\n" +
			"\t\t\treturn nil\n" +
			"\t\t}\n" +
			"\t\ttime.Sleep(interval)\n" +
			"\t}\n",
	},
	{
		file: "server_help_test.go",
		why:  "the session-handshake wait (appended after waitForStart)",
		old:  "// waitForStop blocks until the cluster is down\n",
		new: `// zkmodelServes (added by zkmodel's dropin test) reports whether the server at addr answers a session
// handshake; a server that listens but does not serve yet closes the connection. It closes the session.
func zkmodelServes(addr string, timeout time.Duration) bool {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	request := make([]byte, 48) // length, protocolVersion, lastZxidSeen, timeOut, sessionId, passwd
	binary.BigEndian.PutUint32(request[0:], 44)
	binary.BigEndian.PutUint32(request[16:], 4000)
	binary.BigEndian.PutUint32(request[28:], 16)
	if _, err := conn.Write(request); err != nil {
		return false
	}
	var length [4]byte
	if _, err := io.ReadFull(conn, length[:]); err != nil {
		return false
	}
	n := binary.BigEndian.Uint32(length[:])
	if n < 16 || n > 1024 {
		return false
	}
	response := make([]byte, n) // protocolVersion, timeOut, sessionId, passwd
	if _, err := io.ReadFull(conn, response); err != nil || binary.BigEndian.Uint64(response[8:]) == 0 {
		return false
	}
	closeSession := []byte{0, 0, 0, 8, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xf5} // xid 1, opcode -11
	if _, err := conn.Write(closeSession); err == nil {
		io.ReadFull(conn, length[:])
	}
	return true
}

// waitForStop blocks until the cluster is down
`,
	},
}

// applyPatches applies patches to the files under dir. A text that does not occur exactly once (another
// go-zookeeper version) is an error that says so, and then no file has been changed.
func applyPatches(dir string, patches []sourcePatch) error {
	contents := map[string]string{}
	for _, p := range patches {
		text, ok := contents[p.file]
		if !ok {
			b, err := os.ReadFile(filepath.Join(dir, p.file))
			if err != nil {
				return fmt.Errorf("patch go-zookeeper's suite (%s): %w", p.why, err)
			}
			text = string(b)
		}
		if n := strings.Count(text, p.old); n != 1 {
			return fmt.Errorf("patch go-zookeeper's suite: %s in %s: the text to replace occurs %d times, not once; "+
				"the patch is written for %s %s — is go.mod's version another? update suiteHarnessPatches for it",
				p.why, p.file, n, goZookeeperModule, goZookeeperVersion)
		}
		contents[p.file] = strings.Replace(text, p.old, p.new, 1)
	}
	for _, file := range slices.Sorted(maps.Keys(contents)) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(contents[file]), 0o644); err != nil {
			return fmt.Errorf("write patched %s: %w", file, err)
		}
	}
	return nil
}

// suiteZKVersion is what the suite learns of the server's version: Debian's ZooKeeper is 3.8.0, and the
// stand-in answers as 3.8. Without it the suite skips its two reconfig tests (requireMinimumZkVersion).
const suiteZKVersion = "ZK_VERSION=3.8.0"

// suiteEnv is the environment every go command of the suite runs in: the module has no dependencies, so
// no network is used (GOPROXY=off), whatever GOFLAGS or go.work the caller has.
func suiteEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GOFLAGS", "GOTOOLCHAIN", "GOWORK", "GOPROXY", "ZOOKEEPER_BIN_PATH", "JVMFLAGS", "ZK_VERSION", "TMPDIR":
			continue // ZK_VERSION is set below, to the version both sides are
		}
		env = append(env, kv)
	}
	return append(env, append([]string{"GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off", "GOPROXY=off", suiteZKVersion}, extra...)...)
}

// copySuite copies go-zookeeper's module from the module cache (read-only) into a fresh directory under
// parent, writable, and patches its harness. It returns the copy's directory.
func copySuite(ctx context.Context, parent string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", goZookeeperModule+"@"+goZookeeperVersion)
	cmd.Env = suiteEnv()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("find %s@%s in the module cache (go mod download; run `go mod download` once with network): %w\n%s",
			goZookeeperModule, goZookeeperVersion, err, exitStderr(err))
	}
	var module struct{ Dir, Error string }
	if err := json.Unmarshal(out, &module); err != nil || module.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s gave no directory (%s): %v", goZookeeperModule, goZookeeperVersion, module.Error, err)
	}
	dst := filepath.Join(parent, "zk")
	err = filepath.WalkDir(module.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(module.Dir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("copy %s into %s: %w", module.Dir, dst, err)
	}
	if err := applyPatches(dst, suiteHarnessPatches); err != nil {
		return "", err
	}
	return dst, nil
}

func exitStderr(err error) string {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return string(exitErr.Stderr)
	}
	return ""
}

// Outcomes of a test, as go test -json reports them; noResult is a test that started and never ended
// (the suite's process timed out or crashed).
const (
	outcomePass = "pass"
	outcomeFail = "fail"
	outcomeSkip = "skip"
	noResult    = "no result"
)

// testResult is what one test (top-level or subtest) did in one run.
type testResult struct {
	name    string
	outcome string
	elapsed time.Duration
	output  []string // the test's own output lines, in order
}

// suiteRun is one go test -json run of the suite.
type suiteRun struct {
	results  map[string]*testResult // by full name, subtests ("TestX/sub") included
	order    []string               // full names in the order they started
	unowned  []string               // output of no test: build errors, the package's summary, a timeout's panic
	wall     time.Duration
	exitErr  error // go test's exit status; non-nil also when a test failed
	jsonFile string
}

// topLevel lists the top-level tests in the order they started.
func (r *suiteRun) topLevel() []string {
	var names []string
	for _, name := range r.order {
		if !strings.Contains(name, "/") {
			names = append(names, name)
		}
	}
	return names
}

// subtests lists name's subtests in the order they started.
func (r *suiteRun) subtests(name string) []string {
	var names []string
	for _, n := range r.order {
		if strings.HasPrefix(n, name+"/") {
			names = append(names, n)
		}
	}
	return names
}

// outputTail is the last lines lines of what top-level test name and its subtests printed; the
// suite's tests print their servers' standard error there (prefixed [ZKERR]).
func (r *suiteRun) outputTail(name string, lines int) string {
	all := r.subtreeOutput(name)
	if len(all) == 0 {
		all = r.unowned
	}
	if len(all) > lines {
		all = append([]string{fmt.Sprintf("… (%d lines before)", len(all)-lines)}, all[len(all)-lines:]...)
	}
	return strings.Join(all, "\n")
}

// subtreeOutput is what top-level test name and its subtests printed, in order.
func (r *suiteRun) subtreeOutput(name string) []string {
	var all []string
	for _, n := range append([]string{name}, r.subtests(name)...) {
		if res := r.results[n]; res != nil {
			all = append(all, res.output...)
		}
	}
	return all
}

// testEvent is one line of go test -json (cmd/test2json's TestEvent).
type testEvent struct {
	Action  string
	Test    string
	Elapsed float64
	Output  string
}

// parseTestEvents reads go test -json output. A line that is not JSON is kept as unowned output.
func parseTestEvents(r io.Reader) (*suiteRun, error) {
	run := &suiteRun{results: map[string]*testResult{}}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		line := scanner.Bytes()
		var ev testEvent
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			run.unowned = append(run.unowned, string(line))
			continue
		}
		if ev.Test == "" {
			if ev.Output != "" {
				run.unowned = append(run.unowned, strings.TrimRight(ev.Output, "\n"))
			}
			continue
		}
		res := run.results[ev.Test]
		if res == nil {
			res = &testResult{name: ev.Test, outcome: noResult}
			run.results[ev.Test] = res
			run.order = append(run.order, ev.Test)
		}
		switch ev.Action {
		case "output":
			res.output = append(res.output, strings.TrimRight(ev.Output, "\n"))
		case outcomePass, outcomeFail, outcomeSkip:
			res.outcome = ev.Action
			res.elapsed = time.Duration(ev.Elapsed * float64(time.Second))
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("read go test -json output: %w", err)
	}
	return run, nil
}

// suiteSide is one place the suite runs against: a directory with a zkServer.sh, and the environment
// its servers need.
type suiteSide struct {
	name   string // "real" or "zkmodel"
	binDir string
	env    []string
}

// runSuite runs the suite's tests matching runPattern in suiteDir against side, in its own process group
// (killed as a whole when it ends, so that no server outlives it), and parses what it reports.
func runSuite(ctx context.Context, suiteDir, scratch string, side suiteSide, runPattern string, timeout time.Duration) (*suiteRun, error) {
	if _, err := os.Stat(filepath.Join(side.binDir, "zkServer.sh")); err != nil {
		return nil, fmt.Errorf("the %s side has no zkServer.sh: %w", side.name, err)
	}
	out, err := os.CreateTemp(scratch, "gozk-"+side.name+"-*.json")
	if err != nil {
		return nil, fmt.Errorf("create the %s run's output file: %w", side.name, err)
	}
	defer out.Close()
	// go test's own -timeout makes the suite's binary panic with every goroutine's stack; the context,
	// a little later, kills what is left.
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-json", "-count=1", "-vet=off", "-run", runPattern,
		"-timeout", timeout.String(), ".")
	cmd.Dir = suiteDir
	// TMPDIR: the suite's t.TempDir()s (its servers' data) go under ours, gone even if a run is killed.
	cmd.Env = suiteEnv(append([]string{"ZOOKEEPER_BIN_PATH=" + side.binDir, "TMPDIR=" + scratch}, side.env...)...)
	cmd.Stdout = out // a file, so that Wait does not wait for servers that still hold the output open
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start go test for the %s side: %w", side.name, err)
	}
	exitErr := cmd.Wait()
	wall := time.Since(start)
	// Servers a test left running (or every server, after a timeout) are in the group too.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return nil, fmt.Errorf("kill what the %s run left running: %w", side.name, err)
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("rewind the %s run's output: %w", side.name, err)
	}
	run, err := parseTestEvents(out)
	if err != nil {
		return nil, fmt.Errorf("the %s side: %w", side.name, err)
	}
	run.wall, run.exitErr, run.jsonFile = wall, exitErr, out.Name()
	if ctx.Err() != nil {
		return run, fmt.Errorf("the %s side's go test outlived its timeout (%v) and was killed; its output is in %s", side.name, timeout, out.Name())
	}
	return run, nil
}

// suiteRetries is how many times a top-level test that neither passed nor skipped runs again, alone, until
// it passes. A JVM restarted on two cores that another make test also loads can miss the suite's fixed
// waits (NoQuorum gives a restarted server 8 s to take its client back: real ZooKeeper missed it twice in a
// row in 2 of 10 loaded fresh-clone runs).
const suiteRetries = 2

// sideResult is the outcome of every top-level test on one side, after a failed test's retries.
type sideResult struct {
	side     suiteSide
	first    *suiteRun            // the run of the whole suite
	retry    map[string]*suiteRun // a top-level test's last run, alone, when the first did not pass or skip
	attempts map[string]int       // how many times a retried test ran again
	shards   []*suiteRun          // the runs first was merged from
}

// final is the run whose result counts for top-level test name: its retry if it had one.
func (s *sideResult) final(name string) *suiteRun {
	if r := s.retry[name]; r != nil {
		return r
	}
	return s.first
}

// outcome is top-level test name's final outcome on this side.
func (s *sideResult) outcome(name string) string {
	if res := s.final(name).results[name]; res != nil {
		return res.outcome
	}
	return "not run"
}

// mergeRuns joins the runs of disjoint shards of the suite into one.
func mergeRuns(runs []*suiteRun) *suiteRun {
	merged := &suiteRun{results: map[string]*testResult{}}
	var errs []error
	for _, r := range runs {
		for _, name := range r.order {
			merged.results[name] = r.results[name]
			merged.order = append(merged.order, name)
		}
		merged.unowned = append(merged.unowned, r.unowned...)
		merged.wall = max(merged.wall, r.wall)
		if r.exitErr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.jsonFile, r.exitErr))
		}
	}
	merged.exitErr = errors.Join(errs...)
	return merged
}

// shardPatterns splits names into n -run patterns of about equal length in tests, round robin in the
// given order (the slow tests are spread out by the order they are listed in).
func shardPatterns(names []string, n int) []string {
	shards := make([][]string, n)
	for i, name := range names {
		shards[i%n] = append(shards[i%n], name)
	}
	var patterns []string
	for _, shard := range shards {
		if len(shard) > 0 {
			patterns = append(patterns, exactTestPattern(shard...))
		}
	}
	return patterns
}

// exactTestPattern is a -run pattern that matches exactly the top-level tests names (and their subtests).
func exactTestPattern(names ...string) string {
	return "^(" + strings.Join(names, "|") + ")$"
}

// runSide runs the suite's tests names against side in shards concurrent processes, then runs each
// top-level test that neither passed nor skipped again, alone, up to suiteRetries times until it passes.
func runSide(ctx context.Context, suiteDir, scratch string, side suiteSide, names []string, shards int, timeout time.Duration) (*sideResult, error) {
	patterns := shardPatterns(names, shards)
	runs := make([]*suiteRun, len(patterns))
	errs := make([]error, len(patterns))
	var wg sync.WaitGroup
	for i, pattern := range patterns {
		wg.Go(func() { runs[i], errs[i] = runSuite(ctx, suiteDir, scratch, side, pattern, timeout) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	result := &sideResult{side: side, first: mergeRuns(runs), retry: map[string]*suiteRun{}, attempts: map[string]int{}, shards: runs}
	for _, name := range names {
		for result.attempts[name] < suiteRetries {
			if o := result.outcome(name); o == outcomePass || o == outcomeSkip {
				break
			}
			run, err := runSuite(ctx, suiteDir, scratch, side, exactTestPattern(name), timeout)
			if err != nil {
				return nil, fmt.Errorf("retry %s: %w", name, err)
			}
			result.retry[name] = run
			result.attempts[name]++
		}
	}
	return result, nil
}

// outcomeCell is what the table shows for top-level or subtest name on a side: the outcome, and for a
// retried top-level test what the first run did.
func (s *sideResult) outcomeCell(name string) (cell string, seconds string) {
	top, _, _ := strings.Cut(name, "/")
	run := s.final(top)
	res := run.results[name]
	if res == nil {
		return "not run", ""
	}
	cell = res.outcome
	if s.retry[top] != nil && name == top {
		first := s.first.results[name]
		firstOutcome := noResult
		if first != nil {
			firstOutcome = first.outcome
		}
		cell = fmt.Sprintf("%s, retried ×%d: %s", firstOutcome, s.attempts[top], res.outcome)
	}
	return cell, fmt.Sprintf("%.1f", res.elapsed.Seconds())
}

// comparisonTable is the Markdown table of every test (subtests indented under theirs) on both sides.
func comparisonTable(names []string, realSide, fakeSide *sideResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| test | %s | %s | %s s | %s s |\n|---|---|---|---:|---:|\n", realSide.side.name, fakeSide.side.name, realSide.side.name, fakeSide.side.name)
	for _, top := range names {
		rows := []string{top}
		seen := map[string]bool{top: true}
		for _, side := range []*sideResult{realSide, fakeSide} {
			for _, sub := range side.final(top).subtests(top) {
				if !seen[sub] {
					seen[sub] = true
					rows = append(rows, sub)
				}
			}
		}
		for _, name := range rows {
			realCell, realSeconds := realSide.outcomeCell(name)
			fakeCell, fakeSeconds := fakeSide.outcomeCell(name)
			label := name
			if name != top {
				label = "&nbsp;&nbsp;" + strings.TrimPrefix(name, top)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", label, realCell, fakeCell, realSeconds, fakeSeconds)
		}
	}
	fmt.Fprintf(&b, "\nwall time: %s %.0f s, %s %.0f s (whole suite, before retries)\n",
		realSide.side.name, realSide.first.wall.Seconds(), fakeSide.side.name, fakeSide.first.wall.Seconds())
	return b.String()
}
