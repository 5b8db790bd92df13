package differential

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"

	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/realzk"
)

// TestMain shares one real ensemble across the package's tests, and one more for the timed sequences.
func TestMain(m *testing.M) {
	code := realzk.RunTests(m)
	if err := closeTimedEnsemble(); err != nil {
		fmt.Fprintf(os.Stderr, "differential: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// timedCheckInterval is the container check interval of the timed sequences' servers: short, so that letting
// time pass is short too.
const timedCheckInterval = 100 * time.Millisecond

// timedEnsemble is the 1-server ensemble the timed sequences run on, started on first use: TTL nodes need
// zookeeper.extendedTypesEnabled=true, and the container manager a short znode.container.checkIntervalMs,
// Java system properties (so never ZK_SERVERS' ensemble).
var timedEnsemble struct {
	sync.Mutex
	e   *realzk.Ensemble
	err error
}

func timedReal(t *testing.T) *realzk.Ensemble {
	t.Helper()
	timedEnsemble.Lock()
	defer timedEnsemble.Unlock()
	if timedEnsemble.e == nil && timedEnsemble.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), realzk.StartTimeout)
		defer cancel()
		timedEnsemble.e, timedEnsemble.err = realzk.Start(ctx, realzk.Config{Servers: 1, SystemProperties: map[string]string{
			"zookeeper.extendedTypesEnabled":  "true",
			"znode.container.checkIntervalMs": fmt.Sprint(timedCheckInterval.Milliseconds()),
			realzk.SuperDigestProperty:        realzk.SuperDigest(realzk.SharedSuperUser),
		}})
	}
	if timedEnsemble.err != nil {
		t.Fatalf("start the timed sequences' ensemble: %v", timedEnsemble.err)
	}
	return timedEnsemble.e
}

func closeTimedEnsemble() error {
	timedEnsemble.Lock()
	defer timedEnsemble.Unlock()
	if timedEnsemble.e == nil {
		return nil
	}
	err := timedEnsemble.e.Close()
	timedEnsemble.e = nil
	if err != nil {
		return fmt.Errorf("close the timed sequences' ensemble: %w", err)
	}
	return nil
}

// defaultChecks is how many sequences TestDifferential runs unless -rapid.checks (or RAPID_CHECKS)
// says otherwise: enough to matter, few enough for make test.
const defaultChecks = 200

// figures counts what a test compared.
type figures struct {
	sequences, ops, mismatches, wireMismatches, unsettled, hiccups atomic.Int64
	// persistent counts the sequences with raw clients; addWatch, removeWatches and checkWatches their ops
	// of those kinds, and persistentEvents what persistent watch channels received.
	persistent, addWatch, removeWatches, checkWatches, persistentEvents atomic.Int64
	// addAuth counts addAuth ops, authFailed those the real server refused (its connection closed);
	// getACL and setACL those ops, aclCreates the creates (multis' included) that sent an ACL other than
	// world:anyone; noAuth and invalidACL the real side's results that were ErrNoAuth or ErrInvalidACL.
	addAuth, authFailed, getACL, setACL, aclCreates, noAuth, invalidACL atomic.Int64
	// timed counts the timed sequences; createTTL their createTTL ops (tinyTTL those with a TTL that expires at
	// once), createContainer those ops, passes the ops that let time pass, reaped the nodes that went meanwhile
	// (the model's count), passEvents the watch events the passes fired (the real side's).
	timed, createTTL, tinyTTL, createContainer, passes, reaped, passEvents atomic.Int64

	mu      sync.Mutex
	reasons []string // why the real side's hiccups were re-run, in order
}

// hiccup counts a real-side run that hiccuped (ErrHiccup) and keeps its reason for the log.
func (f *figures) hiccup(err error) {
	f.hiccups.Add(1)
	f.mu.Lock()
	f.reasons = append(f.reasons, err.Error())
	f.mu.Unlock()
}

// countTimed adds up a compared timed sequence's figures.
func (f *figures) countTimed(seq Sequence, model, real *Transcript) {
	f.timed.Add(1)
	for _, op := range seq.Ops {
		switch op.Kind {
		case CreateTTL:
			f.createTTL.Add(1)
			if op.TTL == tinyTTL {
				f.tinyTTL.Add(1)
			}
		case CreateContainer:
			f.createContainer.Add(1)
		}
		if op.Pass || op.Kind == PassTime {
			f.passes.Add(1)
		}
	}
	f.reaped.Add(int64(model.Reaped))
	for _, st := range real.Steps {
		if st.Op.Pass || st.Op.Kind == PassTime {
			for _, ev := range st.Events {
				if !strings.Contains(ev, "EventSession") {
					f.passEvents.Add(1)
				}
			}
		}
	}
}

// countACL adds up a compared sequence's ACL figures (what the real side answered).
func (f *figures) countACL(seq Sequence, real *Transcript) {
	for _, op := range seq.Ops {
		switch op.Kind {
		case AddAuth:
			f.addAuth.Add(1)
		case GetACL:
			f.getACL.Add(1)
		case SetACL:
			f.setACL.Add(1)
		case Create:
			if !op.NilACL && op.ACL != 0 {
				f.aclCreates.Add(1)
			}
		case Multi:
			for _, sub := range op.Ops {
				if sub.Kind == Create && !sub.NilACL && sub.ACL != 0 {
					f.aclCreates.Add(1)
				}
			}
		}
	}
	for _, st := range real.Steps {
		if st.Op.Kind == AddAuth && st.Result == authRefused {
			f.authFailed.Add(1)
		}
		f.noAuth.Add(int64(strings.Count(st.Result, "ErrNoAuth")))
		f.invalidACL.Add(int64(strings.Count(st.Result, "ErrInvalidACL")))
	}
}

func (f *figures) log(t *testing.T) {
	t.Logf("differential figures: %d sequences, %d ops compared, mismatching sequences (shrinking re-runs included): %d for the model, %d for the model through the wire; %d session-channel steps not compared (6+ events), %d real-side hiccups re-run",
		f.sequences.Load(), f.ops.Load(), f.mismatches.Load(), f.wireMismatches.Load(), f.unsettled.Load(), f.hiccups.Load())
	f.mu.Lock()
	for i, r := range f.reasons {
		t.Logf("real-side hiccup %d, re-run: %s", i+1, r)
	}
	f.mu.Unlock()
	if f.persistent.Load() > 0 {
		t.Logf("differential figures: %d sequences with raw clients: %d addWatch, %d removeWatches, %d checkWatches ops, %d events on persistent watch channels",
			f.persistent.Load(), f.addWatch.Load(), f.removeWatches.Load(), f.checkWatches.Load(), f.persistentEvents.Load())
	}
	if f.addAuth.Load()+f.getACL.Load()+f.setACL.Load()+f.aclCreates.Load() > 0 {
		t.Logf("differential figures: %d addAuth (%d refused: unknown scheme), %d getACL, %d setACL ops, %d creates with an ACL other than world:anyone, %d results ErrNoAuth, %d ErrInvalidACL",
			f.addAuth.Load(), f.authFailed.Load(), f.getACL.Load(), f.setACL.Load(), f.aclCreates.Load(), f.noAuth.Load(), f.invalidACL.Load())
	}
	if f.timed.Load() > 0 {
		t.Logf("differential figures: %d timed sequences: %d createTTL (%d with a TTL that expires at once), %d createContainer ops, %d times time passed, %d nodes deleted by the container manager, %d watch events it fired",
			f.timed.Load(), f.createTTL.Load(), f.tinyTTL.Load(), f.createContainer.Load(), f.passes.Load(), f.reaped.Load(), f.passEvents.Load())
	}
}

// pair runs sequences on the model and on the shared real ensemble, each under a fresh base path.
type pair struct {
	model *ModelSide
	wire  *WireSide
	real  *RealSide
	root  string
	next  atomic.Int64
	figs  figures
}

func newPair(t *testing.T) *pair {
	t.Helper()
	e := realzk.Shared(t)
	return startPair(t, &pair{model: &ModelSide{}, wire: &WireSide{}, real: &RealSide{Addrs: e.Addrs()}})
}

// newTimedPair is newPair for timed sequences: servers with extended types and a short container check
// interval (the model's, and timedReal's ensemble).
func newTimedPair(t *testing.T) *pair {
	t.Helper()
	e := timedReal(t)
	opts := []model.Option{model.WithExtendedTypes(), model.WithContainerCheckInterval(timedCheckInterval)}
	return startPair(t, &pair{
		model: &ModelSide{Options: opts, CheckInterval: timedCheckInterval},
		wire:  &WireSide{Options: opts, CheckInterval: timedCheckInterval},
		real:  &RealSide{Addrs: e.Addrs(), CheckInterval: timedCheckInterval},
	})
}

// startPair gives p its random root and deletes it when the test ends.
func startPair(t *testing.T, p *pair) *pair {
	t.Helper()
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		t.Fatalf("random root: %v", err)
	}
	p.root = "/differential-" + hex.EncodeToString(suffix[:])
	t.Cleanup(func() {
		if err := p.real.Close(p.root); err != nil {
			t.Errorf("clean up %s: %v", p.root, err)
		}
	})
	return p
}

// maxAttempts is how often a sequence runs on the real side when the ensemble hiccups (ErrHiccup).
const maxAttempts = 3

// compare runs seq on the model, on the model through the wire and on the real ensemble, and returns the
// transcripts of the first model side that differs from the real one (the model's if neither does) and
// their first difference, which names the side.
func (p *pair) compare(ctx context.Context, seq Sequence) (model, real *Transcript, diff string, err error) {
	var wire *Transcript
	p.wire.Raw, p.real.Raw = seq.Persistent, seq.Persistent
	for attempt := 1; ; attempt++ {
		base := fmt.Sprintf("%s/%d", p.root, p.next.Add(1))
		if model, err = Run(ctx, p.model, base, seq); err != nil {
			return model, nil, "", err
		}
		if wire, err = Run(ctx, p.wire, base, seq); err != nil {
			return wire, nil, "", fmt.Errorf("wire side: %w", err)
		}
		real, err = Run(ctx, p.real, base, seq)
		if errors.Is(err, ErrHiccup) && attempt < maxAttempts {
			p.figs.hiccup(err)
			// The next attempt needs every server serving again (a follower that fell behind rejoins).
			if rerr := p.real.Ready(ctx); rerr != nil {
				return model, real, "", fmt.Errorf("%w; then the ensemble did not recover: %w", err, rerr)
			}
			continue
		}
		if err != nil {
			return model, real, "", err
		}
		break
	}
	p.figs.sequences.Add(1)
	p.figs.ops.Add(int64(len(seq.Ops)))
	if seq.Persistent {
		p.figs.persistent.Add(1)
		for _, op := range seq.Ops {
			switch op.Kind {
			case AddWatch:
				p.figs.addWatch.Add(1)
			case RemoveWatches:
				p.figs.removeWatches.Add(1)
			case CheckWatches:
				p.figs.checkWatches.Add(1)
			}
		}
		p.figs.persistentEvents.Add(int64(persistentEvents(real)))
	}
	p.figs.countACL(seq, real)
	if seq.Timed {
		p.figs.countTimed(seq, model, real)
	}
	p.figs.unsettled.Add(int64(model.Unsettled + wire.Unsettled + real.Unsettled))
	if diff = Compare(model, real); diff != "" {
		p.figs.mismatches.Add(1)
	}
	if wdiff := Compare(wire, real); wdiff != "" {
		p.figs.wireMismatches.Add(1)
		if diff == "" {
			return wire, real, "through the wire: " + wdiff, nil
		}
	}
	return model, real, diff, nil
}

// persistentEvents counts the events a transcript's persistent watch channels (AddWatch's) received.
func persistentEvents(tr *Transcript) int {
	ids := map[string]bool{}
	for i, st := range tr.Steps {
		if st.Op.Kind == AddWatch && strings.Contains(st.Result, "watch=w") {
			ids[fmt.Sprintf(" w%d ", i+1)] = true
		}
	}
	n := 0
	count := func(lines []string) {
		for _, l := range lines {
			for id := range ids {
				if strings.Contains(l, id) && !strings.HasSuffix(l, " closed") {
					n++
				}
			}
		}
	}
	for _, st := range tr.Steps {
		count(st.AtReturn)
		count(st.Events)
	}
	count(tr.Closing)
	return n
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// TestDifferential runs random sequences on the model and on a real ensemble and fails, with both
// transcripts side by side, on the first (shrunk) sequence whose observations differ.
func TestDifferential(t *testing.T) {
	if _, env := os.LookupEnv("RAPID_CHECKS"); !env && !flagSet("rapid.checks") {
		if err := flag.Set("rapid.checks", fmt.Sprint(defaultChecks)); err != nil {
			t.Fatalf("set -rapid.checks: %v", err)
		}
	}
	t.Run("untimed", func(t *testing.T) {
		p := newPair(t)
		defer p.figs.log(t)
		p.check(t, Gen(GenConfig{MaxOps: 25, Sever: true, Persistent: true}))
	})
	// The timed sequences let time pass on a real server's wall clock: a quarter as many.
	checks := flag.Lookup("rapid.checks").Value.String()
	var n int
	if _, err := fmt.Sscan(checks, &n); err != nil {
		t.Fatalf("-rapid.checks=%s: %v", checks, err)
	}
	if err := flag.Set("rapid.checks", fmt.Sprint(max(1, n/timedShare))); err != nil {
		t.Fatalf("set -rapid.checks: %v", err)
	}
	defer func() { _ = flag.Set("rapid.checks", checks) }()
	t.Run("timed", func(t *testing.T) {
		p := newTimedPair(t)
		defer p.figs.log(t)
		p.check(t, Gen(GenConfig{MinOps: 10, MaxOps: 25, Sever: true, Timed: true}))
	})
}

// timedShare is how many times fewer timed sequences TestDifferential runs than untimed ones.
const timedShare = 4

// check runs rapid's checks of gen's sequences on p.
func (p *pair) check(t *testing.T, gen *rapid.Generator[Sequence]) {
	rapid.Check(t, func(rt *rapid.T) {
		seq := gen.Draw(rt, "sequence")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		model, real, diff, err := p.compare(ctx, seq)
		if err != nil {
			rt.Fatalf("run failed: %v", err)
		}
		if diff != "" {
			rt.Logf("base path %s (model) and %s (real)", model.Base, real.Base)
			rt.Fatalf("the model differs from ZooKeeper: %s\n\n%s", diff, SideBySide(model, real))
		}
	})
}

// Shorthands for hand-written scenarios.
func create(s int, path string, flags int32, data string) Op {
	return Op{Kind: Create, Session: s, Path: path, Flags: flags, Data: []byte(data)}
}
func createNil(s int, path string, flags int32) Op {
	return Op{Kind: Create, Session: s, Path: path, Flags: flags}
}
func del(s int, path string, version int32) Op {
	return Op{Kind: Delete, Session: s, Path: path, Version: version}
}
func set(s int, path string, version int32, data []byte) Op {
	return Op{Kind: Set, Session: s, Path: path, Version: version, Data: data}
}
func read(kind Kind, s int, path string, watch bool) Op {
	return Op{Kind: kind, Session: s, Path: path, Watch: watch}
}
func multi(s int, ops ...Op) Op { return Op{Kind: Multi, Session: s, Ops: ops} }
func closeSession(s int) Op     { return Op{Kind: Close, Session: s} }
func sever(s int) Op            { return Op{Kind: Sever, Session: s} }
func addWatch(s int, path string, recursive bool) Op {
	op := Op{Kind: AddWatch, Session: s, Path: path}
	if recursive {
		op.Mode = 1
	}
	return op
}
func watches(kind Kind, s int, path string, typ int32) Op {
	return Op{Kind: kind, Session: s, Path: path, Mode: typ}
}
func addAuth(s int, scheme, auth string) Op {
	return Op{Kind: AddAuth, Session: s, Scheme: scheme, Data: []byte(auth)}
}
func createACL(s int, path string, acl string) Op {
	return Op{Kind: Create, Session: s, Path: path, ACL: aclIndex(acl)}
}
func setACL(s int, path string, acl string, version int32) Op {
	return Op{Kind: SetACL, Session: s, Path: path, ACL: aclIndex(acl), Version: version}
}
func getACL(s int, path string) Op { return Op{Kind: GetACL, Session: s, Path: path} }

// aclIndex returns the index of the named ACL in aclPool.
func aclIndex(name string) int {
	for i, a := range aclPool {
		if a.name == name {
			return i
		}
	}
	panic("no ACL named " + name + " in aclPool")
}

// scenarios are hand-written sequences for the behaviours a fake is most likely to get wrong; each
// runs on both sides and must agree.
var scenarios = []struct {
	name string
	seq  Sequence
}{
	{"sequential-after-deletes-and-failed-creates", Sequence{Sessions: 2, Ops: []Op{
		create(1, "a", 0, ""), create(1, "a/s-", zk.FlagSequence, ""), create(1, "a/x", 0, ""),
		del(1, "a/x", -1), create(2, "a/s-0000000000", 0, ""), create(2, "missing/x", 0, ""),
		create(2, "a/s-", zk.FlagEphemeralSequential, "e"), create(1, "a/", zk.FlagSequence, ""),
		multi(1, create(0, "a/s-", zk.FlagSequence, ""), create(0, "a/s-", zk.FlagSequence, "")),
		multi(1, create(0, "a/s-", zk.FlagSequence, ""), Op{Kind: Check, Path: "nope"}),
		create(1, "a/t-", zk.FlagSequence, ""), read(Children, 1, "a", false),
	}}},
	{"create-under-ephemeral", Sequence{Sessions: 2, Ops: []Op{
		create(1, "b", zk.FlagEphemeral, "x"), create(2, "b/x", 0, ""), create(2, "b/x/t-", zk.FlagSequence, ""),
		multi(2, create(0, "b/y", 0, "")), create(1, "b/s-", zk.FlagEphemeralSequential, ""), read(Get, 2, "b", false),
	}}},
	{"stale-versions", Sequence{Sessions: 2, Ops: []Op{
		create(1, "a", 0, "1"), set(2, "a", 0, []byte("2")), del(1, "a", 0), set(1, "a", 0, []byte("3")),
		multi(1, Op{Kind: Check, Path: "a", Version: 0}), multi(1, Op{Kind: Check, Path: "a", Version: 1}),
		del(1, "missing", 5), del(2, "a", 1), read(Exists, 1, "a", false),
	}}},
	{"multi-failing-midway", Sequence{Sessions: 2, Ops: []Op{
		read(Children, 2, "", true), read(Exists, 2, "a", true),
		multi(1, create(0, "a", 0, "x"), create(0, "a/x", 0, ""), set(0, "a/x", 0, []byte("y")),
			Op{Kind: Check, Path: "nope", Version: -1}, create(0, "b", 0, "")),
		read(Exists, 1, "a", false),
		multi(1, create(0, "a", 0, "x"), del(0, "a", 0), create(0, "a", 0, "again"), set(0, "a", 0, nil)),
		read(Get, 1, "a", false), multi(1),
	}}},
	{"watch-set-twice-fans-out", Sequence{Sessions: 2, Ops: []Op{
		create(1, "a", 0, ""), read(Get, 1, "a", true), read(Get, 1, "a", true), read(Exists, 1, "a", true),
		read(Children, 1, "a", true), set(2, "a", -1, []byte("x")), create(2, "a/x", 0, ""), set(2, "a", -1, []byte("y")),
	}}},
	{"exists-watch-on-missing-then-create", Sequence{Sessions: 2, Ops: []Op{
		read(Exists, 1, "a", true), read(Get, 1, "a", true), read(Children, 1, "a", true),
		create(2, "a", 0, ""), del(2, "a", -1),
	}}},
	{"close-with-ephemerals-watched-by-other", Sequence{Sessions: 3, Ops: []Op{
		create(1, "b", zk.FlagEphemeral, ""), create(1, "s-", zk.FlagEphemeralSequential, ""), create(3, "a", 0, ""),
		create(1, "a/e", zk.FlagEphemeral, ""),
		read(Exists, 2, "b", true), read(Get, 2, "b", true), read(Children, 2, "", true), read(Children, 3, "a", true),
		read(Exists, 3, "s-0000000001", true), closeSession(1), read(Children, 2, "", false),
	}}},
	{"own-write-fires-own-watch", Sequence{Sessions: 2, Ops: []Op{
		create(1, "a", 0, ""), read(Get, 1, "a", true), read(Children, 1, "", true), set(1, "a", -1, []byte("x")),
		create(1, "b", 0, ""), read(Exists, 1, "c", true), create(1, "c", zk.FlagEphemeral, ""),
	}}},
	{"close-of-session-watching-its-own-ephemeral", Sequence{Sessions: 2, Ops: []Op{
		create(1, "b", zk.FlagEphemeral, ""), read(Exists, 1, "b", true), read(Children, 1, "", true),
		read(Get, 1, "b", true), read(Exists, 2, "b", true), closeSession(1),
	}}},
	{"data-nil-versus-empty", Sequence{Sessions: 2, Ops: []Op{
		createNil(1, "a", 0), read(Get, 1, "a", false), set(1, "a", -1, []byte{}), read(Get, 1, "a", false),
		create(1, "b", 0, ""), read(Get, 2, "b", false), set(1, "b", -1, nil), read(Get, 2, "b", false),
		multi(1, set(0, "a", -1, nil), Op{Kind: Create, Path: "c", Data: []byte{}}), read(Get, 2, "a", false), read(Get, 2, "c", false),
	}}},
	{"system-nodes", Sequence{Sessions: 2, Ops: []Op{
		read(Get, 1, "/zookeeper", false), read(Children, 1, "/zookeeper", true), read(Get, 1, "/zookeeper/quota", true),
		read(Exists, 2, "/zookeeper/quota", false), del(2, "/zookeeper", -1), del(2, "/zookeeper/quota", -1),
		Op{Kind: Sync, Session: 1, Path: "missing"},
	}}},
	{"delete-fires-data-and-child-watches-once", Sequence{Sessions: 2, Ops: []Op{
		create(1, "a", 0, ""), read(Get, 2, "a", true), read(Children, 2, "a", true), read(Exists, 2, "a", true),
		read(Children, 2, "", true), del(1, "a", -1), create(1, "a", 0, ""),
	}}},
	{"delete-the-base", Sequence{Sessions: 2, Ops: []Op{
		read(Exists, 2, "", true), read(Children, 2, "", true), del(1, "", -1), read(Exists, 1, "", false),
	}}},
	{"sever-keeps-watches", Sequence{Sessions: 2, Ops: []Op{
		create(1, "b", 0, ""), read(Exists, 1, "a", true), read(Get, 1, "b", true), read(Children, 1, "", true),
		create(1, "e", zk.FlagEphemeral, ""), sever(1), read(Exists, 2, "e", false), create(2, "a", 0, ""), set(2, "b", -1, nil),
	}}},
	{"calls-after-close", Sequence{Sessions: 2, Ops: []Op{
		read(Exists, 1, "a", true), closeSession(1), read(Get, 1, "a", false), read(Exists, 1, "a", true),
		create(1, "a", 0, ""), multi(1, create(0, "a", 0, "")), set(1, "a", -1, nil), del(1, "a", -1),
		read(Children, 1, "", true), Op{Kind: Sync, Session: 1, Path: ""}, closeSession(1),
	}}},
	{"containers", Sequence{Sessions: 2, Ops: []Op{
		create(1, "a/y", zk.FlagContainer, ""), create(1, "a", zk.FlagContainer, ""), create(1, "a/y", zk.FlagContainer, "c"),
		read(Get, 2, "a/y", false), create(2, "a/x", zk.FlagEphemeral, ""), read(Get, 2, "a", false),
	}}},
	{"multi-creating-a-container", Sequence{Sessions: 2, Ops: []Op{
		read(Children, 2, "", true),
		multi(1, create(0, "a", 0, "x"), create(0, "a/y", zk.FlagContainer, ""), create(0, "b", 0, "")),
		multi(1, create(0, "s-0000000001", zk.FlagContainer, ""), Op{Kind: Check, Path: "nope"}),
		multi(1, create(0, "s-0000000001", zk.FlagContainer, "")),
		read(Get, 1, "a/y", false),
	}}},
	{"multi-create-with-ttl-flag", Sequence{Sessions: 2, Ops: []Op{
		create(2, "z", 0, ""),
		multi(1, Op{Kind: Create, Path: "a", Flags: zk.FlagTTL}),
		create(2, "y", 0, ""),
		multi(1, Op{Kind: Create, Path: "b", Flags: zk.FlagPersistentSequentialWithTTL}),
		create(2, "x", 0, ""),
		multi(1, Op{Kind: Create, Path: "c", Flags: 7}),
		create(2, "w", 0, ""),
		multi(1, Op{Kind: Create, Path: "d", Flags: -1}),
		create(2, "v", 0, ""),
		multi(1, Op{Kind: Check, Path: "z", Version: 0}, Op{Kind: Create, Path: "e", Flags: zk.FlagTTL}, Op{Kind: Check, Path: "nope", Version: 0}),
		create(2, "u", 0, ""),
		multi(1, Op{Kind: Check, Path: "nope", Version: 0}, Op{Kind: Create, Path: "f", Flags: zk.FlagPersistentSequentialWithTTL}),
		create(2, "t", 0, ""),
	}}},
	{"acls-and-auth", Sequence{Sessions: 3, Ops: []Op{
		addAuth(1, "digest", "alice:alice-secret"), createACL(1, "a", "alice"), read(Get, 2, "a", false), getACL(2, "a"),
		getACL(1, "a"), createACL(1, "b", "alice+world-read"), getACL(2, "b"), read(Get, 2, "b", true), set(1, "b", -1, []byte("x")),
		createACL(2, "c", "world-admin+bob-read"), getACL(3, "c"), read(Get, 3, "c", false), addAuth(3, "digest", "bob:bob-secret"),
		read(Get, 3, "c", false), setACL(3, "c", "open", 1), setACL(3, "c", "auth", 0), getACL(3, "c"), setACL(3, "c", "open", 0),
		createACL(2, "p", "no-create-delete"), create(2, "p/x", 0, ""), del(2, "p", -1), createACL(2, "d", "auth"),
		createACL(3, "d", "auth-read+world-write"), getACL(1, "d"), set(1, "d", -1, []byte("w")), read(Get, 1, "d", false),
		createACL(1, "i", "ip"), read(Get, 2, "i", false), createACL(1, "n", "none"), getACL(1, "n"), del(2, "n", -1),
		createACL(1, "n", "none"),
	}}},
	{"acl-filtered-watches-and-auth-across-reconnects", Sequence{Sessions: 2, Ops: []Op{
		addAuth(1, "digest", "alice:alice-secret"), createACL(1, "a", "alice"), read(Exists, 2, "a", true), read(Children, 2, "", true),
		set(1, "a", -1, []byte("1")), read(Exists, 2, "b", true), createACL(1, "b", "alice"), sever(1), read(Get, 1, "a", false),
		addAuth(2, "foo", "bar"), read(Get, 2, "a", false), addAuth(1, "digest", "alice:wrong"), read(Get, 1, "a", false),
		addAuth(2, "ip", "127.0.0.1"), createACL(1, "a/x", "alice"), setACL(1, "a", "no-create-delete", -1),
		create(1, "a/y", 0, ""), del(1, "a/x", -1),
	}}},
	{"persistent-watches-beside-standard-ones", Sequence{Sessions: 2, Persistent: true, Ops: []Op{
		create(1, "a", 0, ""), addWatch(1, "a", true), read(Get, 1, "a", true), read(Get, 1, "a/x", true),
		create(2, "a/x", 0, ""), set(2, "a/x", -1, []byte("1")), set(2, "a", -1, []byte("1")), set(2, "a", -1, []byte("2")),
		del(2, "a/x", -1), addWatch(2, "a", false), read(Children, 2, "a", true), create(1, "a/y", 0, ""),
		create(1, "a/z", 0, ""), watches(CheckWatches, 2, "a", 1), watches(CheckWatches, 1, "a", 2),
		watches(RemoveWatches, 2, "a", 2), set(1, "a", -1, nil), watches(RemoveWatches, 2, "a", 2),
		addWatch(1, "b", false), create(2, "b", zk.FlagEphemeral, ""), closeSession(2),
	}}},
	{"persistent-watches-across-a-sever", Sequence{Sessions: 2, Persistent: true, Ops: []Op{
		addWatch(1, "a", true), addWatch(1, "b", false), create(2, "a", 0, ""), sever(1), create(2, "a/x", 0, ""),
		create(2, "b", 0, ""), create(2, "b/x", 0, ""), watches(CheckWatches, 1, "a", 3), watches(RemoveWatches, 1, "a", 3),
		set(2, "a/x", -1, nil), watches(CheckWatches, 1, "a", 4), watches(RemoveWatches, 1, "b", 0),
	}}},
}

func createContainer(s int, path string) Op {
	return Op{Kind: CreateContainer, Session: s, Path: path, Flags: zk.FlagContainer}
}
func createTTL(s int, path string, flags int32, ttl time.Duration) Op {
	return Op{Kind: CreateTTL, Session: s, Path: path, Flags: flags, TTL: ttl, Pass: ttl == tinyTTL}
}
func passTime(s int) Op { return Op{Kind: PassTime, Session: s} }

// timedScenarios are hand-written timed sequences (Sequence.Timed), run on the timed sequences' servers.
var timedScenarios = []struct {
	name string
	seq  Sequence
}{
	{"containers-and-ttl-nodes-go-while-time-passes", Sequence{Sessions: 2, Timed: true, Ops: []Op{
		createContainer(1, "c"), createContainer(1, "c/d"), read(Get, 2, "c", true), read(Exists, 2, "c/d", true),
		read(Children, 2, "c", true), read(Children, 2, "", true), createTTL(1, "c/d/t", zk.FlagTTL, tinyTTL),
		read(Exists, 2, "c", false), createTTL(1, "t", zk.FlagTTL, hugeTTL), createTTL(1, "s-", zk.FlagPersistentSequentialWithTTL, hugeTTL),
		read(Get, 2, "t", true), passTime(2), read(Exists, 1, "t", false), set(1, "t", -1, []byte("x")),
		createTTL(1, "c/t", zk.FlagTTL, 0), createContainer(1, "c"), passTime(1), read(Exists, 1, "c", true),
		createTTL(2, "c/s-", zk.FlagPersistentSequentialWithTTL, tinyTTL), createTTL(2, "c/t", zk.FlagTTL, hugeTTL),
		passTime(1), del(2, "t", -1),
	}}},
	{"a-plain-create-with-the-container-mode-makes-a-persistent-node", Sequence{Sessions: 2, Timed: true, Ops: []Op{
		create(1, "c", zk.FlagContainer, ""), create(1, "c/p", 0, ""), read(Exists, 2, "c", true), passTime(1),
		multi(1, del(0, "c/p", -1)), passTime(2), read(Children, 1, "", false),
		multi(1, create(0, "a", 0, ""), create(0, "c/d", zk.FlagContainer, "")), createTTL(2, "c/d/t", zk.FlagTTL, tinyTTL),
		read(Exists, 2, "c/d", false), create(1, "t", zk.FlagTTL, ""),
	}}},
}

// TestTimedScenarios runs the hand-written timed scenarios on the model and on a real ensemble with extended
// types and a short container check interval.
func TestTimedScenarios(t *testing.T) {
	runScenarios(t, newTimedPair(t), timedScenarios)
}

// TestScenarios runs the hand-written scenarios on the model and on a real ensemble.
func TestScenarios(t *testing.T) {
	runScenarios(t, newPair(t), scenarios)
}

func runScenarios(t *testing.T, p *pair, scenarios []struct {
	name string
	seq  Sequence
}) {
	defer p.figs.log(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			model, real, diff, err := p.compare(ctx, sc.seq)
			if err != nil {
				t.Fatalf("run failed: %v", err)
			}
			if diff != "" {
				t.Logf("%s", time.Since(start))
				t.Fatalf("the model differs from ZooKeeper: %s\n\n%s", diff, SideBySide(model, real))
			}
			if testing.Verbose() {
				t.Logf("\n%s", SideBySide(model, real))
			}
		})
	}
}

// TestWaitAlone: a real side's sequence waits for the sessions other runs left on the ensemble to end (their
// end would take a zxid in the middle of it), and names them when they do not.
func TestWaitAlone(t *testing.T) {
	e := realzk.Shared(t)
	// Earlier tests' sessions may still be ending: start from an ensemble with none.
	if err := waitAlone(context.Background(), e.Addrs(), 0); err != nil {
		t.Fatal(err)
	}
	other, _, err := connectReal(context.Background(), e.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Sync("/"); err != nil { // the session exists once a request of it is answered
		t.Fatal(err)
	}
	// Long enough for one dump of every server on a loaded machine: a look that got no answer proves nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err = waitAlone(ctx, e.Addrs(), 0)
	if want := fmt.Sprintf("sessions %#x still live", other.SessionID()); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("waitAlone with a session open = %v, want an error naming it (%q)", err, want)
	}
	if err := waitAlone(context.Background(), e.Addrs(), other.SessionID()); err != nil {
		t.Fatalf("waitAlone sparing the open session's id = %v", err)
	}
	other.Close()
	if err := waitAlone(context.Background(), e.Addrs(), 0); err != nil {
		t.Fatalf("waitAlone after the session closed = %v", err)
	}
}

// TestBeginCreatesTheBaseWhenAlone: a session that ends while Begin waits for the ensemble to be alone (a
// hiccuped run's, whose close was late) ends before the base is made. A sequence's zxids count from the
// base's czxid: a closeSession committed after it took a zxid in the middle of the sequence (seen once in a
// loaded fresh-clone run: every real zxid one above the model's from the first write on).
func TestBeginCreatesTheBaseWhenAlone(t *testing.T) {
	e := realzk.Shared(t)
	ctx := context.Background()
	if err := waitAlone(ctx, e.Addrs(), 0); err != nil {
		t.Fatal(err)
	}
	other, _, err := connectReal(ctx, e.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Sync("/"); err != nil { // the session exists once a request of it is answered
		t.Fatal(err)
	}
	side := &RealSide{Addrs: e.Addrs()}
	const root = "/TestBeginCreatesTheBaseWhenAlone"
	defer side.Close(root)
	base := root + "/base"
	late := time.AfterFunc(500*time.Millisecond, other.Close) // while Begin waits: it looks every 100 ms
	defer late.Stop()
	admin, err := side.Begin(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer side.End(ctx, base)
	_, st, err := admin.Exists(base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Create(base+"/probe", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, probe, err := admin.Exists(base + "/probe")
	if err != nil {
		t.Fatal(err)
	}
	if probe.Czxid != st.Czxid+1 {
		t.Errorf("the base's czxid is %#x, the next write's %#x: something else took a zxid after the base was made", st.Czxid, probe.Czxid)
	}
}

// BenchmarkCreateAfterSetACL measures how often a real ensemble admits a create under a node whose setACL,
// just applied by the session's follower, took the create permission away: once without waiting, and once
// after leaderApplied (what RealSide.Settle does after every step). Run it on a loaded machine (the window
// is the leader's lag): go test -run '^$' -bench CreateAfterSetACL ./differential
func BenchmarkCreateAfterSetACL(b *testing.B) {
	e := realzk.Shared(b)
	var follower string
	for _, addr := range e.Addrs() {
		if mode, _ := realzk.ServerMode(context.Background(), addr); mode == realzk.ModeFollower {
			follower = addr
		}
	}
	if follower == "" {
		b.Fatalf("no follower among %v", e.Addrs())
	}
	conn, _, err := connectReal(context.Background(), []string{follower})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(conn.Close)
	for _, wait := range []bool{false, true} {
		b.Run(fmt.Sprintf("leaderApplied=%v", wait), func(b *testing.B) {
			admitted := 0
			for i := range b.N {
				p := fmt.Sprintf("/create-after-setacl-%v-%d-%d", wait, b.N, i)
				if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					b.Fatal(err)
				}
				if _, err := conn.SetACL(p, zk.WorldACL(zk.PermRead|zk.PermWrite|zk.PermAdmin), -1); err != nil {
					b.Fatal(err)
				}
				if wait {
					if err := leaderApplied(context.Background(), e.Addrs()); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := conn.Create(p+"/y", nil, 0, zk.WorldACL(zk.PermAll)); err == nil {
					admitted++
				}
				if _, err := conn.SetACL(p, zk.WorldACL(zk.PermAll), -1); err != nil {
					b.Fatal(err)
				}
				// The same window the other way round: the delete of p/y would be checked against
				// the ACL without delete.
				if err := leaderApplied(context.Background(), e.Addrs()); err != nil {
					b.Fatal(err)
				}
				if err := deleteAll(conn, p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(admitted)/float64(b.N), "admitted/op")
		})
	}
}
