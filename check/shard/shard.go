// Package shard is how one search of the checker is spread over processes and machines, and put back
// together: a Part names the i-th of n disjoint parts of a search, a Report is what one part found, and Merge
// turns the parts' reports into the verdict one process would have reached on the whole search.
//
// It holds no scheduler of its own: an existing engine (a CI matrix, a Kubernetes Indexed Job, xargs -P)
// starts the parts, each as `go test … -check.shard=i/n -check.report=FILE`, and `zkmodel merge FILE…` reads
// their reports. The package depends on the standard library only, so that the zkmodel command can merge
// without linking the checker (and package testing) in.
//
// A sampling search (rapid's random strategy) numbers its runs 0, 1, 2, … from one seed; part i of n owns a
// contiguous range of them, and the whole search's verdict is that of its lowest failing run. An exhaustive
// search splits its tree of decisions at a fixed depth into subtrees numbered in the tree's order; part i of
// n owns the subtrees whose number is i modulo n, and the whole search's verdict is the first failure in the
// tree's order. Either way every part stops at its own first failure, which is all the merge needs: the parts
// below the lowest failure ran to the end.
package shard

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Part is the i-th of n disjoint parts of a search (Index counts from 0). The zero Part, or {0, 1}, is the
// whole search.
type Part struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Whole reports whether the part is the whole search.
func (p Part) Whole() bool { return p.Count <= 1 }

// String writes the part as the -check.shard flag takes it: "i/n".
func (p Part) String() string {
	if p.Count <= 0 {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", p.Index, p.Count)
}

// ParsePart reads "i/n" (0 ≤ i < n), as -check.shard takes it. An empty string is the whole search.
func ParsePart(s string) (Part, error) {
	if strings.TrimSpace(s) == "" {
		return Part{0, 1}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || err1 != nil || err2 != nil {
		return Part{}, fmt.Errorf("shard %q: want i/n, the i-th of n parts counting from 0 (for example 0/4 … 3/4)", s)
	}
	if n < 1 || i < 0 || i >= n {
		return Part{}, fmt.Errorf("shard %q: want 0 ≤ i < n and n ≥ 1 (the parts of 4 are 0/4, 1/4, 2/4 and 3/4)", s)
	}
	return Part{i, n}, nil
}

// Range is the contiguous range [From, To) of the runs 0…total-1 that the part owns: the parts' ranges are
// disjoint, in order, differ in size by one at most, and together make the whole.
func (p Part) Range(total int) (from, to int) {
	if p.Whole() {
		return 0, total
	}
	return total * p.Index / p.Count, total * (p.Index + 1) / p.Count
}

// Owns reports whether the part owns the subtree numbered k of an exhaustive search.
func (p Part) Owns(k int) bool { return p.Whole() || k%p.Count == p.Index }

// The strategies a Report may come from.
const (
	Random     = "random"
	PCT        = "pct"       // sampling, as Random: numbered runs from a seed
	Portfolio  = "portfolio" // Random's and PCT's runs by turns: sampling too
	Exhaustive = "exhaustive"
)

// sampling reports whether a strategy's reports are of numbered runs from a seed (merged as Random's).
func sampling(strategy string) bool {
	return strategy == Random || strategy == PCT || strategy == Portfolio
}

// Failure is a failing run: where it is in the search, and what it broke.
type Failure struct {
	// Index is the run's number in a sampling search, or the subtree's in an exhaustive one.
	Index     int    `json:"index"`
	Property  string `json:"property"`
	Verdict   string `json:"verdict"`
	Trace     string `json:"trace,omitempty"`     // the (shrunk) failing run's trace file, as the part wrote it
	Decisions int    `json:"decisions,omitempty"` // decisions of that run before its fair drain
	// Runs is what finding and reducing it cost beyond the search itself: rapid's shrinking, or the
	// exhaustive search's iterative deepening to the shortest schedule.
	Runs int `json:"runs,omitempty"`
	// Schedules, Pruned and Points are, for an exhaustive search, the counts of the failing subtree up to and
	// including the failing schedule.
	Schedules int `json:"schedules,omitempty"`
	Pruned    int `json:"pruned,omitempty"`
	Points    int `json:"points,omitempty"`
}

// Subtree is what an exhaustive part found in one subtree it ran to the end without a failure.
type Subtree struct {
	Index     int  `json:"index"`
	Schedules int  `json:"schedules"`
	Pruned    int  `json:"pruned"`
	Points    int  `json:"points"`
	Shared    bool `json:"shared,omitempty"`
}

// Root is the search's counts above the split when it enters a subtree (see Report.Roots).
type Root struct {
	Points int `json:"points"`
	Pruned int `json:"pruned"`
}

// Report is what one part of a search found, written with -check.report. Every field that says which search
// it was (Variant to Depth) must be the same in all the parts merged.
type Report struct {
	Variant  string `json:"variant"`
	Strategy string `json:"strategy"` // Random, PCT, Portfolio or Exhaustive
	Part     Part   `json:"part"`
	// Search is the search's settings in one line (clients, rounds, steps, faults, …): parts of different
	// searches are not merged.
	Search string `json:"search"`

	// A sampling search's seed, its number of runs in all, and the range of them this part owns.
	Seed  uint64 `json:"seed,omitempty"`
	Total int    `json:"total,omitempty"`
	From  int    `json:"from"`
	To    int    `json:"to"`
	// Ran is how many of the part's runs, from its first, were run and judged without a failure (all of them
	// when Complete); a failing run comes after them.
	Ran      int            `json:"ran"`
	Complete bool           `json:"complete"` // every owned run or subtree was run (false: a failure or a time limit stopped it)
	Injected map[string]int `json:"injected,omitempty"`
	// PerRun are the faults injected per run of Ran (a sampling search), so that a merge counts the faults
	// of exactly the runs below the lowest failure.
	PerRun []map[string]int `json:"perRun,omitempty"`
	// SharedFirst is the first run of the part (an index of the whole search) that reached the primitive's
	// sharing (two readers, or every lease, at once), or -1.
	SharedFirst int `json:"sharedFirst"`
	// Reach names the property of all the runs together that the search judges (readers-share,
	// leases-share), or is empty; ReachVerdict is its violation's sentence, with %d for the number of runs.
	Reach        string `json:"reach,omitempty"`
	ReachVerdict string `json:"reachVerdict,omitempty"`

	// An exhaustive search: the depth of its split, the subtrees there are in all, the part's completed
	// subtrees in order, and the counts of the decision points above the split (the same in every part).
	SplitDepth int       `json:"splitDepth,omitempty"`
	Subtrees   int       `json:"subtrees,omitempty"`
	Done       []Subtree `json:"done,omitempty"`
	// Roots are, for each subtree in order, the counts of the search above the split up to and including
	// the subtree's root (decision points on its path, schedules pruned before it): what one process has
	// counted when it enters the subtree. PrefixPruned and PrefixPoints are those counts for the whole split.
	Roots        []Root `json:"roots,omitempty"`
	PrefixPruned int    `json:"prefixPruned,omitempty"`
	PrefixPoints int    `json:"prefixPoints,omitempty"`
	Depth        int    `json:"depth,omitempty"`

	Failure     *Failure `json:"failure,omitempty"`
	ElapsedSecs float64  `json:"elapsedSeconds"`
	Workers     int      `json:"workers"`
}

// Write writes the report as JSON to path.
func (r *Report) Write(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("shard report: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the shard report: %w", err)
	}
	return nil
}

// Read reads a report that Write wrote.
func Read(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading a shard report: %w", err)
	}
	var r Report
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: not a shard report (-check.report writes them): %w", path, err)
	}
	if r.Variant == "" || (!sampling(r.Strategy) && r.Strategy != Exhaustive) {
		return nil, fmt.Errorf("%s: not a shard report (-check.report writes them): no variant or strategy", path)
	}
	return &r, nil
}

// Verdict is the whole search's result, merged from its parts' reports.
type Verdict struct {
	Variant  string
	Strategy string
	Search   string
	Parts    int
	// Runs is what the whole search ran to reach its verdict, as one process would count it: the runs up to
	// and including the lowest failure (and what reducing it cost), or all of them.
	Runs int
	// Complete: every run (or subtree) below the verdict was run; false when a part stopped early without a
	// failure (a time limit), and the verdict then covers less than the search.
	Complete bool
	Failed   bool
	Property string
	Verdict  string
	Trace    string
	// Decisions of the failing run before its fair drain.
	Decisions int
	Injected  map[string]int
	// Exhaustive: the counts one process would report.
	Schedules, Pruned, Points int
	// Seconds is the parts' wall time added up (their CPU time, roughly); Longest the slowest part's.
	Seconds, Longest float64
}

// Merge merges the reports of every part of one search into its verdict. It refuses reports of different
// searches, a part given twice, and a missing part, saying which.
func Merge(reports []*Report) (*Verdict, error) {
	if len(reports) == 0 {
		return nil, errors.New("merge: no reports given")
	}
	first := reports[0]
	n := max(first.Part.Count, 1)
	byIndex := make([]*Report, n)
	for _, r := range reports {
		switch {
		case r.Variant != first.Variant:
			return nil, fmt.Errorf("merge: reports of two variants, %q and %q: merge the parts of one search at a time", first.Variant, r.Variant)
		case r.Strategy != first.Strategy:
			return nil, fmt.Errorf("merge: %s: reports of a %s and a %s search", r.Variant, first.Strategy, r.Strategy)
		case r.Search != first.Search || r.Seed != first.Seed || r.Total != first.Total || r.SplitDepth != first.SplitDepth || r.Subtrees != first.Subtrees || r.Depth != first.Depth:
			return nil, fmt.Errorf("merge: %s: parts of two different searches (%q seed %d, %d runs; and %q seed %d, %d runs): every part must run with the same settings and seed", r.Variant, first.Search, first.Seed, first.Total, r.Search, r.Seed, r.Total)
		case max(r.Part.Count, 1) != n:
			return nil, fmt.Errorf("merge: %s: parts of a search split in %d and in %d", r.Variant, n, max(r.Part.Count, 1))
		case r.Part.Index < 0 || r.Part.Index >= n:
			return nil, fmt.Errorf("merge: %s: part %s does not exist", r.Variant, r.Part)
		case byIndex[r.Part.Index] != nil:
			return nil, fmt.Errorf("merge: %s: part %s given twice", r.Variant, r.Part)
		}
		byIndex[r.Part.Index] = r
	}
	var missing []string
	for i, r := range byIndex {
		if r == nil {
			missing = append(missing, Part{i, n}.String())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: %s: parts %s are missing: merge every part of the search", first.Variant, strings.Join(missing, ", "))
	}
	v := &Verdict{Variant: first.Variant, Strategy: first.Strategy, Search: first.Search, Parts: n, Complete: true, Injected: map[string]int{}}
	for _, r := range byIndex {
		v.Seconds += r.ElapsedSecs
		v.Longest = max(v.Longest, r.ElapsedSecs)
	}
	if sampling(first.Strategy) {
		mergeRandom(v, byIndex)
	} else {
		mergeExhaustive(v, byIndex)
	}
	return v, nil
}

// lowestFailure is the failure with the lowest index among the reports, or nil.
func lowestFailure(reports []*Report) *Failure {
	var low *Failure
	for _, r := range reports {
		if f := r.Failure; f != nil && (low == nil || f.Index < low.Index) {
			low = f
		}
	}
	return low
}

func mergeRandom(v *Verdict, reports []*Report) {
	fail := lowestFailure(reports)
	limit := reports[0].Total // runs below the verdict
	if fail != nil {
		limit = fail.Index
	}
	shared := false
	for _, r := range reports {
		// The part's judged runs below the limit: it ran From…From+Ran-1 without a failure.
		upto := min(r.From+r.Ran, limit)
		if upto < min(r.To, limit) {
			v.Complete = false // a part stopped early, without a failure, below the verdict
		}
		for i := r.From; i < upto; i++ {
			for k, n := range r.PerRun[i-r.From] {
				v.Injected[k] += n
			}
		}
		if r.SharedFirst >= 0 && r.SharedFirst < limit {
			shared = true
		}
	}
	v.Runs = limit
	if fail != nil {
		v.Runs += 1 + fail.Runs
		setFailure(v, fail)
		return
	}
	if reach := reports[0].Reach; reach != "" && !shared && v.Complete {
		v.Failed, v.Property = true, reach
		v.Verdict = reachVerdict(reports[0], v.Runs)
	}
}

func mergeExhaustive(v *Verdict, reports []*Report) {
	fail := lowestFailure(reports)
	limit := reports[0].Subtrees
	if fail != nil {
		limit = fail.Index
	}
	v.Pruned, v.Points = reports[0].PrefixPruned, reports[0].PrefixPoints
	done := make([]*Subtree, reports[0].Subtrees)
	for _, r := range reports {
		for i := range r.Done {
			if s := &r.Done[i]; s.Index >= 0 && s.Index < len(done) {
				done[s.Index] = s
			}
		}
	}
	shared := false
	for k := 0; k < limit; k++ {
		s := done[k]
		if s == nil {
			v.Complete = false
			continue
		}
		v.Schedules += s.Schedules
		v.Pruned += s.Pruned
		v.Points += s.Points
		shared = shared || s.Shared
	}
	v.Runs = v.Schedules + v.Pruned
	if fail != nil {
		if fail.Index >= 0 && fail.Index < len(reports[0].Roots) {
			// One process stops inside the failing subtree: above the split it has counted up to its root.
			root := reports[0].Roots[fail.Index]
			v.Pruned += root.Pruned - reports[0].PrefixPruned
			v.Points += root.Points - reports[0].PrefixPoints
		}
		v.Schedules += fail.Schedules
		v.Pruned += fail.Pruned
		v.Points += fail.Points
		v.Runs = v.Schedules + v.Pruned + fail.Runs
		setFailure(v, fail)
		return
	}
	if reach := reports[0].Reach; reach != "" && !shared && v.Complete {
		v.Failed, v.Property = true, reach
		v.Verdict = reachVerdict(reports[0], v.Schedules)
	}
}

// reachVerdict is the sentence of a property of all the runs together that n runs did not reach.
func reachVerdict(r *Report, n int) string {
	if strings.Count(r.ReachVerdict, "%d") != 1 {
		return fmt.Sprintf("in %d runs the primitive's sharing (%s) was never reached", n, r.Reach)
	}
	return fmt.Sprintf(r.ReachVerdict, n)
}

func setFailure(v *Verdict, f *Failure) {
	v.Failed, v.Property, v.Verdict, v.Trace, v.Decisions = true, f.Property, f.Verdict, f.Trace, f.Decisions
}

// Table writes the verdicts as make check's table does, one row per search.
func Table(verdicts []*Verdict) string {
	sort.SliceStable(verdicts, func(i, j int) bool { return verdicts[i].Variant < verdicts[j].Variant })
	width := len("variant")
	for _, v := range verdicts {
		width = max(width, len(v.Variant))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s %-10s %-8s %-16s %13s %6s %10s %9s  %s\n", width, "variant", "strategy", "verdict", "property", "interleavings", "parts", "cpu secs", "decisions", "trace")
	for _, v := range verdicts {
		verdict, prop, decisions, trace := "pass", "-", "-", "-"
		if v.Failed {
			verdict, prop = "failed", v.Property
			decisions = strconv.Itoa(v.Decisions)
		}
		if !v.Complete && !v.Failed {
			verdict = "partial"
		}
		if v.Trace != "" {
			trace = v.Trace
		}
		fmt.Fprintf(&b, "%-*s %-10s %-8s %-16s %13d %6d %10.1f %9s  %s\n", width, v.Variant, v.Strategy, verdict, prop, v.Runs, v.Parts, v.Seconds, decisions, trace)
	}
	return b.String()
}

// MergeFiles reads the reports in paths, groups them by search (variant), and merges each group.
func MergeFiles(paths []string) ([]*Verdict, error) {
	groups := map[string][]*Report{}
	var order []string
	for _, p := range paths {
		r, err := Read(p)
		if err != nil {
			return nil, err
		}
		key := r.Variant + "\x00" + r.Strategy
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], r)
	}
	var out []*Verdict
	for _, k := range order {
		v, err := Merge(groups[k])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
