package gozk

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSuitePatchRefusesAnotherSource: a harness whose text is not what suiteHarnessPatches expects (another
// go-zookeeper version) gets a clear error, and no file is changed — not even by the patches that matched.
func TestSuitePatchRefusesAnotherSource(t *testing.T) {
	dir := t.TempDir()
	// The imports match; waitForStart does not (as if upstream had changed its health check).
	source := "package zk\n\nimport (\n\t\"fmt\"\n\t\"io\"\n)\n\nfunc (tc *TestCluster) waitForStart() error { return nil }\n"
	path := filepath.Join(dir, "server_help_test.go")
	if err := os.WriteFile(path, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	err := applyPatches(dir, suiteHarnessPatches)
	if err == nil {
		t.Fatal("applyPatches accepted a harness without waitForStart's FLWSrvr check")
	}
	for _, want := range []string{"waitForStart's FLWSrvr health check", "occurs 0 times", goZookeeperVersion} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != source {
		t.Errorf("the file changed after a refused patch (err %v):\n%s", err, b)
	}
}

// TestSuitePatchAppliesToTheModule: the patches apply to go-zookeeper's harness as go.mod requires it.
func TestSuitePatchAppliesToTheModule(t *testing.T) {
	dir, err := copySuite(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "server_help_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "FLWSrvr") || !strings.Contains(string(b), "zkmodelServes(addr, time.Second)") {
		t.Errorf("the copy's waitForStart still uses FLWSrvr, or does not wait for a session handshake:\n%s", b)
	}
}

// TestParseTestEvents: go test -json events become per-test outcomes with subtests, elapsed time and
// output; a test that started and never ended has no result; what belongs to no test is kept.
func TestParseTestEvents(t *testing.T) {
	events := `{"Action":"start","Package":"zk"}
{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"run","Test":"TestA/sub"}
{"Action":"output","Test":"TestA/sub","Output":"    a_test.go:3: [ZKERR] server said\n"}
{"Action":"fail","Test":"TestA/sub","Elapsed":0.5}
{"Action":"fail","Test":"TestA","Elapsed":1.25}
{"Action":"run","Test":"TestB"}
{"Action":"skip","Test":"TestB","Elapsed":0}
{"Action":"run","Test":"TestC"}
{"Action":"output","Test":"TestC","Output":"panic: test timed out after 1s\n"}
not json: a build error
{"Action":"output","Package":"zk","Output":"FAIL\tzk\t1.3s\n"}
{"Action":"fail","Package":"zk","Elapsed":1.3}
`
	run, err := parseTestEvents(strings.NewReader(events))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(run.topLevel(), ","); got != "TestA,TestB,TestC" {
		t.Errorf("top-level tests %s, want TestA,TestB,TestC", got)
	}
	if got := strings.Join(run.subtests("TestA"), ","); got != "TestA/sub" {
		t.Errorf("TestA's subtests %s, want TestA/sub", got)
	}
	for name, want := range map[string]string{"TestA": outcomeFail, "TestA/sub": outcomeFail, "TestB": outcomeSkip, "TestC": noResult} {
		if got := run.results[name].outcome; got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if got := run.results["TestA"].elapsed; got != 1250*time.Millisecond {
		t.Errorf("TestA took %v, want 1.25s", got)
	}
	if got := run.outputTail("TestA", 1); got != "… (1 lines before)\n    a_test.go:3: [ZKERR] server said" {
		t.Errorf("TestA's output tail:\n%s", got)
	}
	if got := strings.Join(run.unowned, "|"); got != "not json: a build error|FAIL\tzk\t1.3s" {
		t.Errorf("output of no test: %q", got)
	}
	if got := run.outputTail("TestB", 5); got != strings.Join(run.unowned, "\n") {
		t.Errorf("a test that printed nothing shows the output of no test, got:\n%s", got)
	}
}

// TestShardPatterns: the shards together run every test once, and each pattern matches its tests exactly.
func TestShardPatterns(t *testing.T) {
	got := shardPatterns([]string{"TestA", "TestB", "TestC"}, 2)
	want := []string{"^(TestA|TestC)$", "^(TestB)$"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("shardPatterns: %q, want %q", got, want)
	}
	if got := shardPatterns([]string{"TestA"}, 3); len(got) != 1 {
		t.Errorf("one test in three shards gives %q, want one pattern", got)
	}
}
