// Package conformance is a suite of ZooKeeper 3.8 behaviours, measured on a real server (see
// SEMANTICS.md), that any ZooKeeper implementation reached through a go-zookeeper style client
// must reproduce. It is run like golang.org/x/net/nettest.TestConn: a test hands Run a Target
// that opens sessions on the implementation under test, and Run checks every rule as a subtest
// named after the rule.
//
// For example, with a hypothetical fake whose NewConn returns something with *zk.Conn's methods:
//
//	func TestFakeConforms(t *testing.T) {
//		conformance.Run(t, conformance.Target{
//			Connect: func(t *testing.T, timeout time.Duration) (conformance.Conn, <-chan zk.Event) {
//				c, events, err := fake.NewConn(timeout)
//				if err != nil {
//					t.Fatal(err)
//				}
//				return c, events
//			},
//		})
//	}
//
// The suite is safe on a shared server: every rule works under its own fresh base path
// (/conformance-<random>/<n>), cleans up after itself, never assumes the tree is empty, and
// compares zxids and times only relative to each other.
//
// Three more kinds of rule live here, each measured on ZooKeeper 3.8: RunRecipes checks package recipe's
// lock, read-write lock, semaphore and election against a RecipeEnv (recipes*.go), on the model and on a real
// ensemble; CheckFourLetterWord matches a four-letter word's answer against the answer Debian's ZooKeeper 3.8.0
// gave in the same mode (flw.go; the answers in flw/); RunWireRecordings replays sessions recorded on a real
// 3.8 server to a server under test and compares every frame it answers (wire.go; the recordings in wire/).
// Where a new fidelity test goes (here, in package differential, or in clients/) is in docs/fidelity.md.
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Conn is the subset of *zk.Conn the suite exercises (*zk.Conn and *model.Conn both satisfy it).
type Conn interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, flag int32, acl []zk.ACL) (string, error)
	CreateTTL(path string, data []byte, flag int32, acl []zk.ACL, ttl time.Duration) (string, error)
	Delete(path string, version int32) error
	Exists(path string) (bool, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Multi(ops ...any) ([]zk.MultiResponse, error)
	Sync(path string) (string, error)
	SessionID() int64
	State() zk.State
	Close()
}

// Target is the ZooKeeper under test.
type Target struct {
	// Connect opens a new session and returns once it is connected and has a session id, with
	// its session event channel. Connect must not consume events from that channel: the suite
	// checks that it starts with StateConnecting, StateConnected, StateHasSession. The suite
	// closes every Conn it opens (Close may be called more than once).
	Connect func(t *testing.T, sessionTimeout time.Duration) (Conn, <-chan zk.Event)
	// Expire makes the server expire c's session (as a session timeout would) and returns once
	// the server has done so. While Expire runs, c must not be able to reach the server; after it
	// returns c may reconnect and learn that its session has expired. Nil means the target
	// cannot expire sessions, and the expiry rules are not registered.
	Expire func(t *testing.T, c Conn)
	// Sever drops c's connection; the client then reconnects with the same session. Nil means
	// the target cannot sever connections, and the reconnection rules are not registered.
	Sever func(t *testing.T, c Conn)
	// ConnectWatch opens a session like Connect, on a client that can also send addWatch, removeWatches and
	// checkWatches (see WatchConn). Nil means the target has no such client, and the persistent-watch rules
	// are not registered.
	ConnectWatch func(t *testing.T, sessionTimeout time.Duration) (WatchConn, <-chan zk.Event)
	// SuperUser is "user:password" of the server's super user (ZooKeeper's
	// zookeeper.DigestAuthenticationProvider.superDigest, model.WithSuperDigest). Empty means the
	// target has none, and the super-user rules are not registered.
	SuperUser string
	// Ensemble stops and starts the target's servers. Nil means the target cannot, and the
	// ensemble rules (rules_ensemble.go) are not registered.
	Ensemble *Ensemble

	// ExtendedTypes tells that the server runs with zookeeper.extendedTypesEnabled=true, which allows TTL
	// nodes: the rules about TTL nodes are registered only then, the rule about their refusal only when it
	// is false.
	ExtendedTypes bool
	// ContainerCheckInterval is the server's znode.container.checkIntervalMs (a Java system property;
	// ZooKeeper's default is one minute). With Advance set, the rules about what the container manager
	// deletes are registered; they let several intervals pass.
	ContainerCheckInterval time.Duration
	// Advance lets d pass on the server's clock and returns once the server has done what fell due in that
	// time: a model moves its virtual clock, a real server is slept on. Nil means time cannot be made to
	// pass, and the rules that need it are not registered.
	Advance func(t *testing.T, d time.Duration)
	// Reconfig describes the target's dynamic reconfiguration: the reconfig rules (rules_reconfig.go) are
	// registered when it is set (with reconfigEnabled, only if SuperUser is set too). Nil means the target
	// is not a reconfigurable ensemble (a standalone server, or one whose configuration is unknown).
	Reconfig *Reconfig
	// SkipACL tells that the server runs with zookeeper.skipACL=yes (skipACL=yes in zoo.cfg): the rules that no
	// ACL is checked are registered, and only they are of any use (run them with Only: "skipacl/").
	SkipACL bool
	// SASL describes the target's SASL logins. Nil means it has none (no JAAS Server section, or no client
	// that logs in), and the SASL rules are not registered.
	SASL *SASL
	// Only, when non-empty, limits Run to the rules whose names start with one of these prefixes (for
	// example "ttl/"), so that a second server configured for some rules need not run them all.
	Only []string
}

// rule is one behaviour of ZooKeeper, checked by run under a fresh base path.
type rule struct {
	name string
	run  func(t *testing.T, h *harness)
}

// Run checks every rule against target, each as a subtest named after the rule.
func Run(t *testing.T, target Target) {
	t.Helper()
	if target.Connect == nil {
		t.Fatal("conformance.Run: Target.Connect is nil; it must open a session on the ZooKeeper under test")
	}
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		t.Fatalf("conformance.Run: random base path: %v", err)
	}
	root := "/conformance-" + hex.EncodeToString(suffix[:])
	admin, adminEvents := target.Connect(t, 10*time.Second)
	adminLog := newEventLog(adminEvents)
	t.Cleanup(func() {
		admin.Close()
		adminLog.stopAfter(waitTimeout)
	})
	if _, err := admin.Create(root, nil, zk.FlagPersistent, openACL); err != nil {
		t.Fatalf("conformance.Run: create suite root %s: %v", root, err)
	}
	t.Cleanup(func() {
		if err := deleteTree(admin, root); err != nil {
			t.Errorf("conformance.Run: clean up %s: %v", root, err)
		}
	})

	var rules []rule
	rules = append(rules, sequenceRules...)
	rules = append(rules, statRules...)
	rules = append(rules, watchRules...)
	rules = append(rules, orderRules...)
	rules = append(rules, ephemeralRules...)
	rules = append(rules, multiRules...)
	rules = append(rules, errorRules...)
	rules = append(rules, sessionRules...)
	rules = append(rules, aclRules...)
	if target.SuperUser != "" {
		rules = append(rules, aclSuperRules...)
	}
	rules = append(rules, refusedRules...)
	if target.Sever != nil {
		rules = append(rules, severRules...)
		rules = append(rules, aclSeverRules...)
	}
	if target.Expire != nil {
		rules = append(rules, expireRules...)
	}
	if target.ConnectWatch != nil {
		rules = append(rules, persistentRules...)
		if target.Sever != nil {
			rules = append(rules, persistentSeverRules...)
		}
	}
	if target.Ensemble != nil {
		rules = append(rules, ensembleRules...)
	}
	rules = append(rules, ttlRules(target)...)
	if r := target.Reconfig; r != nil && r.Enabled && r.Fresh {
		rules = append(rules, reconfigFreshRules...)
	}
	switch r := target.Reconfig; {
	case r != nil && !r.Enabled:
		rules = append(rules, reconfigDisabledRules...)
	case r != nil && target.SuperUser != "":
		rules = append(rules, reconfigRules...)
	case r != nil:
		rules = append(rules, reconfigNoSuperRules...)
	}
	if target.SkipACL {
		rules = append(rules, skipACLRules...)
	}
	if target.SASL != nil {
		rules = append(rules, saslRules...)
		if r := target.Reconfig; r != nil && r.Enabled {
			rules = append(rules, saslReconfigRules...)
		}
	}
	if len(target.Only) > 0 {
		rules = slices.DeleteFunc(rules, func(r rule) bool {
			return !slices.ContainsFunc(target.Only, func(p string) bool { return strings.HasPrefix(r.name, p) })
		})
		if len(rules) == 0 {
			t.Fatalf("conformance.Run: no rule starts with any of Only=%q for this target's configuration", target.Only)
		}
	}
	for i, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			h := &harness{t: t, target: target, base: fmt.Sprintf("%s/%d", root, i), admin: admin}
			if _, err := admin.Create(h.base, nil, zk.FlagPersistent, openACL); err != nil {
				t.Fatalf("create base path %s: %v", h.base, err)
			}
			t.Cleanup(func() {
				if err := deleteTree(admin, h.base); err != nil {
					t.Errorf("clean up %s: %v", h.base, err)
				}
			})
			r.run(t, h)
		})
	}
}

// openACL is world:anyone with every permission.
var openACL = zk.WorldACL(zk.PermAll)

// waitTimeout bounds every wait for an event or a state; a rule that waits longer fails. It is generous:
// under CI load (every package at once on 2 cores, a JVM ensemble among them) a reconnection after an expiry
// once took over 5 s, and the bound only matters when a rule fails.
const waitTimeout = 15 * time.Second

// quietPeriod is how long "no event" checks wait after a Sync and a read have made sure every
// earlier notification on the connection has been delivered.
const quietPeriod = 30 * time.Millisecond

// deleteTree deletes path and everything below it, tolerating nodes that vanish meanwhile. It syncs
// first: on an ensemble, c's server may not yet have applied the latest creates of other sessions.
func deleteTree(c Conn, path string) error {
	if _, err := c.Sync(path); err != nil {
		return fmt.Errorf("sync %s before deleting it: %w", path, err)
	}
	return deleteSubtree(c, path)
}

// deleteSubtree is deleteTree without the Sync.
func deleteSubtree(c Conn, path string) error {
	children, _, err := c.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if errors.Is(err, zk.ErrNoAuth) {
		// A node the clean-up may not read (an ACL rule's): deleting it needs DELETE on its parent
		// only, which works if it is a leaf, and fails below, naming it, if it is not.
		children, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("list children of %s: %w", path, err)
	}
	for _, child := range children {
		if err := deleteSubtree(c, path+"/"+child); err != nil {
			return err
		}
	}
	if err := c.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	return nil
}

// harness is what a rule gets: its base path and a way to open sessions.
type harness struct {
	t      *testing.T
	target Target
	base   string
	admin  Conn
	acl    []*aclSession // the rule's ACL sessions (aclConnect), synced after guarded writes
}

// path returns the absolute path of name under the rule's base path.
func (h *harness) path(name string) string { return h.base + "/" + name }

// connect opens a session with a 10 s timeout.
func (h *harness) connect() *session { return h.connectTimeout(10 * time.Second) }

// connectTimeout opens a session asking for the given session timeout; the session is closed
// when the rule ends.
func (h *harness) connectTimeout(timeout time.Duration) *session {
	h.t.Helper()
	c, events := h.target.Connect(h.t, timeout)
	if c == nil || events == nil {
		h.t.Fatal("Target.Connect returned a nil Conn or event channel")
	}
	s := &session{Conn: c, t: h.t, log: newEventLog(events)}
	h.t.Cleanup(s.close)
	// Let the log catch up with the connect events, so that rules can mark a point in it.
	s.waitSessionEvent(0, zk.StateHasSession)
	return s
}

// session is an open Conn plus a log of everything its session event channel delivered.
type session struct {
	Conn
	t         *testing.T
	log       *eventLog
	closeOnce sync.Once
}

// close closes the Conn once and stops recording its events.
func (s *session) close() {
	s.closeOnce.Do(func() {
		s.Conn.Close()
		s.log.stopAfter(waitTimeout)
	})
}

// eventLog drains a session event channel into a slice so that rules can wait for and inspect
// session events without ever blocking the client.
type eventLog struct {
	mu      sync.Mutex
	events  []zk.Event
	closed  bool          // the channel was closed
	changed chan struct{} // closed and replaced whenever events or closed change
	stop    chan struct{}
	once    sync.Once
}

func newEventLog(ch <-chan zk.Event) *eventLog {
	l := &eventLog{changed: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		for {
			select {
			case ev, ok := <-ch:
				l.mu.Lock()
				if ok {
					l.events = append(l.events, ev)
				} else {
					l.closed = true
				}
				close(l.changed)
				l.changed = make(chan struct{})
				l.mu.Unlock()
				if !ok {
					return
				}
			case <-l.stop:
				return
			}
		}
	}()
	return l
}

// stopAfter stops draining once the channel is closed or after d, whichever comes first.
func (l *eventLog) stopAfter(d time.Duration) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_ = l.waitClosed(ctx)
		l.once.Do(func() { close(l.stop) })
	}()
}

// snapshot returns the events so far and whether the channel was closed.
func (l *eventLog) snapshot() ([]zk.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events), l.closed
}

// waitFor returns the index and value of the first event at index >= from that matches.
func (l *eventLog) waitFor(ctx context.Context, from int, match func(zk.Event) bool) (int, zk.Event, error) {
	for {
		l.mu.Lock()
		for i := from; i < len(l.events); i++ {
			if match(l.events[i]) {
				ev := l.events[i]
				l.mu.Unlock()
				return i, ev, nil
			}
		}
		closed, changed := l.closed, l.changed
		l.mu.Unlock()
		if closed {
			return 0, zk.Event{}, errors.New("session event channel closed")
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, zk.Event{}, ctx.Err()
		}
	}
}

// waitClosed waits until the channel has been closed.
func (l *eventLog) waitClosed(ctx context.Context) error {
	for {
		l.mu.Lock()
		closed, changed := l.closed, l.changed
		l.mu.Unlock()
		if closed {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitSessionEvent waits for a session event (Type EventSession) in the given state at or
// after index from, and returns its index.
func (s *session) waitSessionEvent(from int, state zk.State) int {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	i, _, err := s.log.waitFor(ctx, from, func(ev zk.Event) bool {
		return ev.Type == zk.EventSession && ev.State == state
	})
	if err != nil {
		events, _ := s.log.snapshot()
		s.t.Fatalf("no session event %v on the session channel (from index %d): %v; events so far: %s",
			state, from, err, formatEvents(events))
	}
	return i
}

// waitState polls State() until it equals want.
func (s *session) waitState(want zk.State) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for s.State() != want {
		select {
		case <-ctx.Done():
			s.t.Fatalf("State() is %v, want %v within %v", s.State(), want, waitTimeout)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// quiesce makes sure every notification the server sent this session before now has been
// delivered: Sync then a read (replies and notifications share one ordered connection), then a
// short grace period.
func (s *session) quiesce() {
	s.t.Helper()
	if _, err := s.Sync("/"); err != nil {
		s.t.Fatalf("Sync(/): %v", err)
	}
	if _, _, err := s.Exists("/"); err != nil {
		s.t.Fatalf("Exists(/): %v", err)
	}
	time.Sleep(quietPeriod)
}

func formatEvents(events []zk.Event) string {
	parts := make([]string, len(events))
	for i, ev := range events {
		parts[i] = formatEvent(ev)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func formatEvent(ev zk.Event) string {
	return fmt.Sprintf("{Type:%v State:%v Path:%q Err:%v Server:%q}", ev.Type, ev.State, ev.Path, ev.Err, ev.Server)
}

// waitEvent receives one event from a watch channel, failing the rule after waitTimeout.
func waitEvent(t *testing.T, ch <-chan zk.Event, what string) zk.Event {
	t.Helper()
	if ch == nil {
		t.Fatalf("%s: watch channel is nil", what)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("%s: watch channel closed without an event", what)
		}
		return ev
	case <-ctx.Done():
		t.Fatalf("%s: no watch event within %v", what, waitTimeout)
	}
	return zk.Event{}
}

// expectWatchEvent waits for an event on ch and checks it is a node event of the given type
// and path with go-zookeeper's exact field values.
func expectWatchEvent(t *testing.T, ch <-chan zk.Event, typ zk.EventType, path, what string) {
	t.Helper()
	got := waitEvent(t, ch, what)
	want := zk.Event{Type: typ, State: zk.StateSyncConnected, Path: path}
	if !sameEvent(got, want) {
		t.Fatalf("%s: got event %s, want %s", what, formatEvent(got), formatEvent(want))
	}
}

func sameEvent(a, b zk.Event) bool {
	return a.Type == b.Type && a.State == b.State && a.Path == b.Path && errors.Is(a.Err, b.Err) &&
		(a.Err == nil) == (b.Err == nil) && a.Server == b.Server
}

// expectNoEvent checks that nothing arrived on ch after s has quiesced.
func expectNoEvent(t *testing.T, s *session, ch <-chan zk.Event, what string) {
	t.Helper()
	if ch == nil {
		t.Fatalf("%s: watch channel is nil", what)
	}
	s.quiesce()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("%s: unexpected watch event %s", what, formatEvent(ev))
		}
		t.Fatalf("%s: watch channel closed unexpectedly", what)
	default:
	}
}

// expectClosedAfterEvent checks that a fired watch channel is closed (one-shot).
func expectClosedAfterEvent(t *testing.T, ch <-chan zk.Event, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("%s: second event %s on a one-shot watch channel", what, formatEvent(ev))
		}
	case <-ctx.Done():
		t.Fatalf("%s: watch channel not closed after its event", what)
	}
}

// mustCreate creates path or fails the rule.
func mustCreate(t *testing.T, c Conn, path string, data []byte, flags int32) string {
	t.Helper()
	got, err := c.Create(path, data, flags, openACL)
	if err != nil {
		t.Fatalf("Create(%q, flags=%d): %v", path, flags, err)
	}
	return got
}

// mustSync syncs c with the leader for path, so that c's next read sees every write that had
// completed anywhere before (on an ensemble, c's server may lag behind another session's).
func mustSync(t *testing.T, c Conn, path string) {
	t.Helper()
	if _, err := c.Sync(path); err != nil {
		t.Fatalf("Sync(%q): %v", path, err)
	}
}

// mustStat returns the stat of path from Get after a Sync, failing the rule if it does not exist.
func mustStat(t *testing.T, c Conn, path string) zk.Stat {
	t.Helper()
	mustSync(t, c, path)
	_, stat, err := c.Get(path)
	if err != nil {
		t.Fatalf("Get(%q): %v", path, err)
	}
	return *stat
}

// mustSet sets path's data with version -1 and returns the new stat.
func mustSet(t *testing.T, c Conn, path string, data []byte) zk.Stat {
	t.Helper()
	stat, err := c.Set(path, data, -1)
	if err != nil {
		t.Fatalf("Set(%q): %v", path, err)
	}
	return *stat
}

// mustDelete deletes path (any version) or fails the rule.
func mustDelete(t *testing.T, c Conn, path string) {
	t.Helper()
	if err := c.Delete(path, -1); err != nil {
		t.Fatalf("Delete(%q): %v", path, err)
	}
}

// expectErr checks that err is (or wraps) want.
func expectErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

// attempt is one request a rule makes and the error it must get (nil: it must succeed).
type attempt struct {
	name string
	do   func() error
	want error
}

// check runs the attempt and fails the rule unless it got the wanted error (errors.Is; rule
// "errors/errors are go-zookeeper's own values, not wrapped" checks identity separately).
func (a attempt) check(t *testing.T) {
	t.Helper()
	if err := a.do(); !isError(err, a.want) {
		t.Fatalf("%s: got error %v, want %v", a.name, err, a.want)
	}
}

// isError reports whether err is want: both nil, or errors.Is(err, want).
func isError(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

// expectAbsent checks (after a Sync) that path does not exist.
func expectAbsent(t *testing.T, c Conn, path string) {
	t.Helper()
	mustSync(t, c, path)
	ok, _, err := c.Exists(path)
	if err != nil {
		t.Fatalf("Exists(%q): %v", path, err)
	}
	if ok {
		t.Fatalf("%s exists, want it absent", path)
	}
}

// formatStat renders a stat for failure messages.
func formatStat(s zk.Stat) string {
	return fmt.Sprintf("{czxid=%#x mzxid=%#x pzxid=%#x ctime=%d mtime=%d version=%d cversion=%d aversion=%d ephemeralOwner=%#x dataLength=%d numChildren=%d}",
		s.Czxid, s.Mzxid, s.Pzxid, s.Ctime, s.Mtime, s.Version, s.Cversion, s.Aversion, s.EphemeralOwner, s.DataLength, s.NumChildren)
}

// sequenceSuffix formats n as ZooKeeper does when it names a sequential node.
func sequenceSuffix(n int32) string { return fmt.Sprintf("%010d", n) }
