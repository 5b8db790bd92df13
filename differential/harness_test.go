package differential

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/model"
)

// These tests check the harness itself, on the model alone: that it sees no difference where there is
// none, and that it reports the differences a broken implementation shows.

// runModelPair runs seq on the model and on other, under the same base path.
func runModelPair(t *testing.T, other Side, seq Sequence) (model, got *Transcript) {
	t.Helper()
	ctx := context.Background()
	model, err := Run(ctx, &ModelSide{}, "/harness/base", seq)
	if err != nil {
		t.Fatalf("model run: %v", err)
	}
	got, err = Run(ctx, other, "/harness/base", seq)
	if err != nil {
		t.Fatalf("%s run: %v", other.Name(), err)
	}
	return model, got
}

// TestModelAgreesWithItself runs every scenario twice on the model: the transcripts must be equal,
// or the harness would report differences that are its own noise.
func TestModelAgreesWithItself(t *testing.T) {
	for _, sc := range scenarios {
		a, b := runModelPair(t, &ModelSide{}, sc.seq)
		if d := Compare(a, b); d != "" {
			t.Errorf("%s: two model runs differ: %s\n%s", sc.name, d, SideBySide(a, b))
		}
		if len(a.Steps) != len(sc.seq.Ops) {
			t.Errorf("%s: %d steps for %d ops", sc.name, len(a.Steps), len(sc.seq.Ops))
		}
	}
}

// TestTimedModelAgreesWithItself is TestModelAgreesWithItself for the timed scenarios, on servers that let time
// pass.
func TestTimedModelAgreesWithItself(t *testing.T) {
	side := func() *ModelSide {
		return &ModelSide{Options: []model.Option{model.WithExtendedTypes(), model.WithContainerCheckInterval(timedCheckInterval)}, CheckInterval: timedCheckInterval}
	}
	for _, sc := range timedScenarios {
		ctx := context.Background()
		a, err := Run(ctx, side(), "/harness/base", sc.seq)
		if err != nil {
			t.Fatalf("%s: first run: %v", sc.name, err)
		}
		b, err := Run(ctx, side(), "/harness/base", sc.seq)
		if err != nil {
			t.Fatalf("%s: second run: %v", sc.name, err)
		}
		if d := Compare(a, b); d != "" || a.Reaped != b.Reaped || a.Reaped == 0 {
			t.Errorf("%s: two model runs differ (or reaped nothing: %d, %d): %s\n%s", sc.name, a.Reaped, b.Reaped, d, SideBySide(a, b))
		}
	}
}

// brokenSide is the model with one session behaviour changed by wrap.
type brokenSide struct {
	ModelSide
	wrap func(Session) Session
}

func (b *brokenSide) Name() string { return "broken" }

func (b *brokenSide) Connect(ctx context.Context, i int) (Session, <-chan zk.Event, error) {
	s, events, err := b.ModelSide.Connect(ctx, i)
	if err != nil {
		return nil, nil, err
	}
	return b.wrap(s), events, nil
}

// emptyToNil turns empty data into nil in Get, a mistake a fake can make.
type emptyToNil struct{ Session }

func (s emptyToNil) Get(path string) ([]byte, *zk.Stat, error) {
	data, st, err := s.Session.Get(path)
	if len(data) == 0 {
		data = nil
	}
	return data, st, err
}

// deafExistsW hands out ExistsW channels that never fire.
type deafExistsW struct{ Session }

func (s deafExistsW) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	ok, st, _, err := s.Session.ExistsW(path)
	return ok, st, make(chan zk.Event), err
}

func TestCompareReportsWrongResults(t *testing.T) {
	seq := Sequence{Sessions: 2, Ops: []Op{createNil(1, "a", 0), set(1, "a", -1, []byte{}), read(Get, 2, "a", false)}}
	model, broken := runModelPair(t, &brokenSide{wrap: func(s Session) Session { return emptyToNil{s} }}, seq)
	d := Compare(model, broken)
	if !strings.HasPrefix(d, "step 3 (s2 get ~/a): results differ") {
		t.Fatalf("Compare = %q, want a difference in step 3's results", d)
	}
	side := SideBySide(model, broken)
	if !strings.Contains(side, `! -> data="" `) || !strings.Contains(side, `| -> data=nil `) {
		t.Errorf("SideBySide does not mark the differing result line:\n%s", side)
	}
}

func TestCompareReportsMissingWatchEvents(t *testing.T) {
	seq := Sequence{Sessions: 2, Ops: []Op{read(Exists, 1, "a", true), create(2, "a", 0, "")}}
	model, broken := runModelPair(t, &brokenSide{wrap: func(s Session) Session { return deafExistsW{s} }}, seq)
	d := Compare(model, broken)
	if !strings.HasPrefix(d, "step 2 (s2 create ~/a flags=0 data=\"\"): events differ") || !strings.Contains(d, "s1 w1 EventNodeCreated ~/a") {
		t.Fatalf("Compare = %q, want step 2's events to differ by s1 w1 EventNodeCreated ~/a", d)
	}
}

// TestTimedZxidsByRank: a timed run's zxids are compared by rank, so that two runs whose servers spent
// different numbers of zxids between the same observations (a real container manager retrying a delete)
// render alike, and a run that saw them in another order does not.
func TestTimedZxidsByRank(t *testing.T) {
	render := func(zxids ...int64) *Transcript {
		r := &runner{baseline: 100, timed: true, owners: map[int64]string{}}
		tr := &Transcript{}
		for _, z := range zxids {
			tr.Steps = append(tr.Steps, Step{Result: "stat=" + r.stat(&zk.Stat{Czxid: 100, Mzxid: z, Pzxid: 7})})
		}
		tr.Final = []string{"~ " + r.stat(&zk.Stat{Czxid: zxids[len(zxids)-1]})}
		rankZxids(tr)
		return tr
	}
	model, real := render(101, 104, 105), render(101, 107, 111)
	if d := Compare(model, real); d != "" {
		t.Fatalf("runs that saw the same zxids in the same order differ: %s", d)
	}
	if got, want := model.Steps[1].Result, "stat={cz=B#0 mz=B#2 pz=<B ct=0 mt=0 v=0 cv=0 av=0 owner=0 len=0 nch=0}"; got != want {
		t.Errorf("step 2 = %s, want %s", got, want)
	}
	if got, want := model.Final[0], "~ {cz=B#3 mz=0 pz=0 ct=0 mt=0 v=0 cv=0 av=0 owner=0 len=0 nch=0}"; got != want {
		t.Errorf("final = %s, want %s", got, want)
	}
	if d := Compare(model, render(101, 105, 104)); d == "" {
		t.Error("runs that saw zxids in another order compare equal")
	}
	if d := Compare(model, render(101, 101, 105)); d == "" {
		t.Error("a run that saw one zxid twice compares equal to one that saw two")
	}
}

func TestNormalisation(t *testing.T) {
	r := &runner{base: "/d/1", baseline: 100, owners: map[int64]string{42: "s1"}}
	st := &zk.Stat{Czxid: 100, Mzxid: 103, Pzxid: 7, Ctime: 5, EphemeralOwner: 42, DataLength: 1}
	if got, want := r.stat(st), "{cz=B+0 mz=B+3 pz=<B ct=T mt=0 v=0 cv=0 av=0 owner=s1 len=1 nch=0}"; got != want {
		t.Errorf("stat = %s, want %s", got, want)
	}
	for p, want := range map[string]string{"/d/1": "~", "/d/1/a/b": "~/a/b", "/d/10": "/d/10", "/zookeeper": "/zookeeper"} {
		if got := r.path(p); got != want {
			t.Errorf("path(%q) = %q, want %q", p, got, want)
		}
	}
	wrapped := fmt.Errorf("model: create /x: %w", zk.ErrNodeExists)
	if got := errName(wrapped); got != "ErrNodeExists" {
		t.Errorf("errName(%v) = %s, want ErrNodeExists", wrapped, got)
	}
	if got := showChildren([]string{"b", "a"}); got != "[a b]" {
		t.Errorf("showChildren = %s, want [a b]", got)
	}
}

// stuckSettle is the model whose Settle fails, as a real server's does when it does not take a session back.
type stuckSettle struct{ ModelSide }

func (s *stuckSettle) Name() string { return "stuck" }

func (s *stuckSettle) Settle(ctx context.Context, base string, live []Session) error {
	return errors.New("rawzk: waiting for a connection: context deadline exceeded")
}

// TestHiccupsAreTheSidesTrouble checks which failures of a side Run marks as ErrHiccup (to be run again on the
// real side) and which it does not: a failed wait after a session lost its connection is one, a failed wait
// on connections that never went is a failure to report.
func TestHiccupsAreTheSidesTrouble(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		seq    Sequence
		hiccup bool
	}{
		{"settle fails after a sever", Sequence{Sessions: 2, Ops: []Op{{Kind: Sever, Session: 2}}}, true},
		{"settle fails with every connection up", Sequence{Sessions: 2, Ops: []Op{createNil(1, "a", 0)}}, false},
	} {
		_, err := Run(ctx, &stuckSettle{}, "/harness/base", tc.seq)
		if err == nil {
			t.Fatalf("%s: Run succeeded on a side whose Settle fails", tc.name)
		}
		if got := errors.Is(err, ErrHiccup); got != tc.hiccup {
			t.Errorf("%s: errors.Is(%v, ErrHiccup) = %v, want %v", tc.name, err, got, tc.hiccup)
		}
		if !strings.Contains(err.Error(), "waiting for a connection") {
			t.Errorf("%s: %v does not say what failed", tc.name, err)
		}
	}
}

// TestDumpedSessions reads the session ids out of answers to "dump" as ZooKeeper 3.8's leader and follower
// gave them (tickTime 100 ms, two sessions).
func TestDumpedSessions(t *testing.T) {
	leader := "SessionTracker dump:\nSession Sets (3)/(2):\n0 expire at Sat Dec 05 16:10:53 UTC 2026:\n" +
		"1 expire at Sat Dec 05 16:10:53 UTC 2026:\n\t0x100011d8cb10000\n1 expire at Sat Dec 05 16:10:57 UTC 2026:\n" +
		"\t0x100011d8cb10001\nephemeral nodes dump:\nSessions with Ephemerals (1):\n0x100011d8cb10007:\n\t/e\n" +
		"Connections dump:\nConnections Sets (2)/(1):\n0 expire at Sat Dec 05 16:10:56 UTC 2026:\n" +
		"1 expire at Sat Dec 05 16:11:06 UTC 2026:\n\tip: /127.0.0.1:36338 sessionId: 0x0\n"
	follower := "SessionTracker dump:\nGlobal Sessions(2):\n0x100011d8cb10000\t10000ms\n0x100011d8cb10001\t10000ms\n" +
		"ephemeral nodes dump:\nSessions with Ephemerals (0):\nConnections dump:\nConnections Sets (2)/(2):\n"
	want := []int64{0x100011d8cb10000, 0x100011d8cb10001}
	for name, answer := range map[string]string{"leader": leader, "follower": follower} {
		if got := dumpedSessions(answer); !slices.Equal(got, want) {
			t.Errorf("%s: dumpedSessions = %#x, want %#x", name, got, want)
		}
	}
	if got := dumpedSessions("dump is not executed because it is not in the whitelist.\n"); len(got) != 0 {
		t.Errorf("dumpedSessions of a refusal = %#x, want none", got)
	}
}
