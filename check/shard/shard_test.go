package shard

import (
	"path/filepath"
	"strings"
	"testing"
)

// parts makes the reports of a sampling search of total runs in n parts, in which the runs in fails fail
// (each part stops at its first), every run injecting one "expire".
func parts(total, n int, fails ...int) []*Report {
	var out []*Report
	for i := 0; i < n; i++ {
		p := Part{i, n}
		from, to := p.Range(total)
		r := &Report{Variant: "v", Strategy: Random, Part: p, Search: "s", Seed: 1, Total: total, From: from, To: to, SharedFirst: -1}
		for k := from; k < to; k++ {
			failed := false
			for _, f := range fails {
				failed = failed || f == k
			}
			if failed {
				r.Failure = &Failure{Index: k, Property: "safety", Verdict: "two holders", Runs: 5, Decisions: 3}
				break
			}
			r.Ran++
			r.PerRun = append(r.PerRun, map[string]int{"expire": 1})
		}
		r.Complete = r.Failure == nil
		out = append(out, r)
	}
	return out
}

func TestMergeTakesTheLowestFailure(t *testing.T) {
	v, err := Merge(parts(100, 4, 80, 30, 31))
	if err != nil {
		t.Fatal(err)
	}
	// One process stops at run 30: 30 runs passed, the failing one, and 5 to shrink it.
	if !v.Failed || v.Runs != 36 || v.Injected["expire"] != 30 || !v.Complete {
		t.Fatalf("merged: failed %v, %d runs, %d expiries, complete %v; want the failure at run 30 after 36 runs, 30 expiries", v.Failed, v.Runs, v.Injected["expire"], v.Complete)
	}
	pass, err := Merge(parts(100, 3))
	if err != nil {
		t.Fatal(err)
	}
	if pass.Failed || pass.Runs != 100 || pass.Injected["expire"] != 100 {
		t.Fatalf("a passing search merged to failed %v, %d runs, %d expiries", pass.Failed, pass.Runs, pass.Injected["expire"])
	}
}

func TestMergeSaysAnUnfinishedPartMakesItPartial(t *testing.T) {
	rs := parts(100, 2)
	rs[0].Ran, rs[0].PerRun, rs[0].Complete = 10, rs[0].PerRun[:10], false // a time limit stopped it
	v, err := Merge(rs)
	if err != nil {
		t.Fatal(err)
	}
	if v.Complete || v.Failed {
		t.Fatalf("merged a search with an unfinished part as complete %v, failed %v", v.Complete, v.Failed)
	}
	if !strings.Contains(Table([]*Verdict{v}), "partial") {
		t.Errorf("the table does not say partial:\n%s", Table([]*Verdict{v}))
	}
}

func TestMergeRefusesWhatIsNotOneSearch(t *testing.T) {
	other := parts(100, 2)
	other[1].Seed = 2
	for name, rs := range map[string][]*Report{
		"different seeds": other,
		"a missing part":  parts(100, 3)[:2],
		"no reports":      nil,
	} {
		if _, err := Merge(rs); err == nil {
			t.Errorf("%s: merged", name)
		}
	}
}

func TestReadRefusesWhatIsNotAReport(t *testing.T) {
	dir := t.TempDir()
	good := parts(10, 1)[0]
	path := filepath.Join(dir, "r.json")
	if err := good.Write(path); err != nil {
		t.Fatal(err)
	}
	if r, err := Read(path); err != nil || r.Total != 10 {
		t.Fatalf("Read of a written report: %v, %+v", err, r)
	}
	for _, bad := range []string{filepath.Join(dir, "missing.json"), filepath.Join(dir, "..")} {
		if _, err := Read(bad); err == nil {
			t.Errorf("Read(%s) succeeded", bad)
		}
	}
}
