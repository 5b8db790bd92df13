package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkmodel/zkmodel/check/shard"
)

// TestMergePrintsOneVerdictAndFailsWithTheSearch: zkmodel merge prints a row per search and exits non-zero
// when a search failed; with no files it is a usage error.
func TestMergePrintsOneVerdictAndFailsWithTheSearch(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := 0; i < 2; i++ {
		p := shard.Part{Index: i, Count: 2}
		from, to := p.Range(10)
		r := &shard.Report{Variant: "mine", Strategy: shard.Random, Part: p, Search: "s", Seed: 3, Total: 10, From: from, To: to, Ran: to - from, Complete: true, SharedFirst: -1}
		for k := from; k < to; k++ {
			r.PerRun = append(r.PerRun, nil)
		}
		if i == 1 {
			r.Ran, r.PerRun, r.Complete = 2, r.PerRun[:2], false
			r.Failure = &shard.Failure{Index: 7, Property: "liveness", Verdict: "c2 blocked", Trace: "/tmp/x.trace", Decisions: 4}
		}
		f := filepath.Join(dir, r.Part.String()[:1]+".json")
		if err := r.Write(f); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var out bytes.Buffer
	err := run(t.Context(), append([]string{"merge"}, files...), &out, &out)
	if err == nil || !strings.Contains(err.Error(), "liveness") {
		t.Fatalf("merge of a failed search: %v, want an error naming liveness", err)
	}
	if !strings.Contains(out.String(), "mine") || !strings.Contains(out.String(), "/tmp/x.trace") {
		t.Fatalf("merge printed:\n%s", out.String())
	}
	if err := run(t.Context(), []string{"merge"}, &out, &out); !errors.Is(err, errUsage) {
		t.Fatalf("merge with no files: %v, want a usage error", err)
	}
}
