package differential

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/internal/rawzk"
	"github.com/zkmodel/zkmodel/model"
	"github.com/zkmodel/zkmodel/realzk"
)

// ModelSide runs sequences on the model: a fresh model.Server per sequence.
type ModelSide struct {
	// Options configure every server (e.g. model.WithSeed).
	Options []model.Option
	// CheckInterval is the container manager's check interval the Options give the servers, for Pass (which
	// fails when it is 0).
	CheckInterval time.Duration

	srv   *model.Server
	admin *model.Conn
	conns []*model.Conn
}

// Name returns "model".
func (m *ModelSide) Name() string { return "model" }

// Begin starts a fresh server and creates base (with its ancestors) from an admin session.
func (m *ModelSide) Begin(ctx context.Context, base string) (Session, error) {
	m.srv = model.NewServer(serverOptions(m.Options)...)
	m.conns = nil
	admin, _, err := m.srv.Connect(sessionTimeout)
	if err != nil {
		return nil, fmt.Errorf("connect the admin session: %w", err)
	}
	m.admin = admin
	if err := superAuth(admin); err != nil {
		return nil, err
	}
	if err := createAll(admin, base); err != nil {
		return nil, err
	}
	return admin, nil
}

// Connect opens a client on the sequence's server.
func (m *ModelSide) Connect(ctx context.Context, i int) (Session, <-chan zk.Event, error) {
	c, events, err := m.srv.Connect(sessionTimeout)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	m.conns = append(m.conns, c)
	return c, events, nil
}

// Settle does nothing: the model's default transport delivers every event before the call that fired
// it returns.
func (m *ModelSide) Settle(ctx context.Context, base string, live []Session) error { return nil }

// Sever drops session i's connection (model.Disconnect); the default transport reconnects at once.
func (m *ModelSide) Sever(ctx context.Context, i int) error {
	if i < 1 || i > len(m.conns) {
		return fmt.Errorf("no session %d (sessions are 1..%d)", i, len(m.conns))
	}
	return m.srv.Do(model.Step{Kind: model.Disconnect, Client: m.conns[i-1].ClientID()})
}

// Pass moves the server's virtual clock by passIntervals check intervals.
func (m *ModelSide) Pass(ctx context.Context, expiring, containers []string) error {
	return advance(m.srv, m.CheckInterval)
}

// advance moves srv's virtual clock by passIntervals check intervals.
func advance(srv *model.Server, interval time.Duration) error {
	if interval <= 0 {
		return errors.New("the side has no CheckInterval: configure it (and its servers' WithContainerCheckInterval) to let time pass")
	}
	srv.Advance(passIntervals * interval)
	return nil
}

// End closes the admin session; the server is dropped.
func (m *ModelSide) End(ctx context.Context, base string) error {
	m.admin.Close()
	return nil
}

// RealSide runs sequences on a real ensemble. Each sequence's session i connects through two
// realzk.Proxy instances of its own, both to server (i-1) mod n, so that sessions sit on different
// servers and can be severed. (Two, because go-zookeeper waits a second before it retries the
// address it was connected to when it has no other; with two it reconnects at once.)
type RealSide struct {
	// Addrs are the ensemble's client addresses.
	Addrs []string
	// Raw makes the sessions raw clients (internal/rawzk), which can send addWatch, removeWatches and
	// checkWatches, instead of go-zookeeper (the admin session stays go-zookeeper's).
	Raw bool
	// CheckInterval is the ensemble's znode.container.checkIntervalMs, for Pass (which fails when it is 0).
	CheckInterval time.Duration

	mu      sync.Mutex
	admin   *zk.Conn
	proxies [][]*realzk.Proxy // per session
}

// Name returns "real".
func (r *RealSide) Name() string { return "real" }

// quietLogger discards go-zookeeper's log lines.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// connectReal opens a go-zookeeper client and waits until it has a session, without consuming the
// events (they are replayed on the returned channel).
func connectReal(ctx context.Context, addrs []string) (*zk.Conn, <-chan zk.Event, error) {
	conn, events, err := zk.Connect(addrs, sessionTimeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", strings.Join(addrs, ","), err)
	}
	return conn, events, nil
}

// connectRaw opens a raw client (for Persistent sequences) on addrs, through dial (nil: TCP).
func connectRaw(ctx context.Context, addrs []string, dial rawzk.DialFunc) (Session, <-chan zk.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, collectTimeout)
	defer cancel()
	c, events, err := rawzk.Connect(ctx, addrs, sessionTimeout, dial)
	if err != nil {
		return nil, nil, fmt.Errorf("connect a raw client to %s: %w", strings.Join(addrs, ","), err)
	}
	return rawzk.ZK{C: c, Timeout: collectTimeout}, events, nil
}

// Begin opens the admin session on first use, waits until no other session lives on the ensemble, and
// creates base with its ancestors.
func (r *RealSide) Begin(ctx context.Context, base string) (Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.admin == nil {
		conn, events, err := connectReal(ctx, r.Addrs)
		if err != nil {
			return nil, err
		}
		go func() {
			for range events { // nobody reads the admin's events
			}
		}()
		if err := superAuth(conn); err != nil {
			conn.Close()
			return nil, err
		}
		r.admin = conn
	}
	// Alone first, then the base: the sequence's zxids count from the base's czxid, so the end of a session
	// still closing (a hiccuped run's, say) must be committed before the base is made, not after.
	if err := waitAlone(ctx, r.Addrs, r.admin.SessionID()); err != nil {
		return nil, err
	}
	if err := createAll(r.admin, base); err != nil {
		return nil, err
	}
	return r.admin, nil
}

// waitAlone returns once no session but admin's lives on the ensemble at addrs, as the servers' "dump" lists
// them. Zxids are the ensemble's, not a session's: a session another run left behind (a hiccup's, abandoned
// while disconnected) or another test's ends when it expires, and the closeSession its server then logs takes
// a zxid in the middle of whatever sequence runs at the time. Waiting here for every such session to be gone
// keeps every zxid a sequence sees its own. Servers that do not answer "dump" (not in their
// 4lw.commands.whitelist, or not serving) are not asked; an ensemble where none answers is not checked.
func waitAlone(ctx context.Context, addrs []string, admin int64) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, sessionTimeout+collectTimeout)
	defer cancel()
	var live map[int64]bool // the other sessions the last look that found any found
	for {
		others := map[int64]bool{}
		var errs []error // a server that did not answer may hold sessions: not alone yet
		for _, addr := range addrs {
			answer, err := realzk.FourLetter(ctx, addr, "dump")
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, id := range dumpedSessions(answer) {
				if id != admin {
					others[id] = true
				}
			}
		}
		if len(others) == 0 && len(errs) == 0 {
			return nil
		}
		if len(others) > 0 || len(errs) == 0 {
			live = others
		}
		select {
		case <-ctx.Done():
			if len(live) == 0 {
				return fmt.Errorf("wait until no other session lives on the ensemble: %w (%w)", errors.Join(errs...), ErrHiccup)
			}
			var ids []string
			for _, id := range slices.Sorted(maps.Keys(live)) {
				ids = append(ids, fmt.Sprintf("%#x", id))
			}
			return fmt.Errorf("sessions %s still live on the ensemble after %v: a sequence needs the ensemble to itself, since another session's end takes a zxid in the middle of it; close every session a test opens (zk.Conn.Close)",
				strings.Join(ids, ", "), time.Since(start).Round(time.Millisecond))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// dumpedSessions returns the session ids in the "SessionTracker dump" part of a server's answer to "dump": a
// leader lists them under their expiry times ("\t0x100…"), a follower under "Global Sessions" ("0x100…\t10000ms").
func dumpedSessions(answer string) []int64 {
	tracker, _, _ := strings.Cut(answer, "ephemeral nodes dump:")
	var ids []int64
	for _, line := range strings.Split(tracker, "\n") {
		field, _, _ := strings.Cut(strings.TrimSpace(line), "\t")
		if hex, ok := strings.CutPrefix(field, "0x"); ok {
			if id, err := strconv.ParseUint(hex, 16, 64); err == nil {
				ids = append(ids, int64(id))
			}
		}
	}
	return ids
}

// Connect opens session i through a new proxy.
func (r *RealSide) Connect(ctx context.Context, i int) (Session, <-chan zk.Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ps []*realzk.Proxy
	var addrs []string
	for range 2 {
		p, err := realzk.NewProxy(context.WithoutCancel(ctx), r.Addrs[(i-1)%len(r.Addrs)])
		if err != nil {
			return nil, nil, fmt.Errorf("proxy for session %d: %w", i, err)
		}
		ps = append(ps, p)
		addrs = append(addrs, p.Addr())
	}
	r.proxies = append(r.proxies, ps)
	if r.Raw {
		return connectRaw(ctx, addrs, nil)
	}
	conn, events, err := connectReal(ctx, addrs)
	if err != nil {
		return nil, nil, err
	}
	return conn, events, nil
}

// Settle makes each live session Sync and then read base: a session's server has then applied
// every earlier write, and go-zookeeper hands out a notification before it processes a later reply.
// Then it waits until the leader has applied them too (leaderApplied).
func (r *RealSide) Settle(ctx context.Context, base string, live []Session) error {
	for _, s := range live {
		if _, err := s.Sync(base); err != nil {
			return fmt.Errorf("sync %s: %w", base, err)
		}
		if _, _, err := s.Exists(base); err != nil {
			return fmt.Errorf("exists %s: %w", base, err)
		}
	}
	return leaderApplied(ctx, r.Addrs)
}

// leaderApplied returns once the leader among addrs has applied every transaction any of them has applied
// (as their "srvr" Zxid lines tell). When it does not within collectTimeout the error is ErrHiccup, with what
// the servers last said: a leader that stops applying is the ensemble's trouble, not the sequence's (seen
// twice in 10 loaded fresh-clone runs: a leader 15 s behind its followers by one transaction).
//
// A session's server replies once it has applied a write, and a follower may do so before the leader has.
// The leader prepares the next write against its own outstanding changes, and the change a setACL leaves
// there keeps the node's old ACL (PrepRequestProcessor duplicates the record and updates only its aversion,
// still so in ZooKeeper's master): a create or delete under the node, or a setData on it, sent at once by a
// session on a follower is checked against the old ACL until the leader applies the setACL itself. Seen in
// CI: setACL ~/a to world:anyone without create and delete, then create ~/a/y succeeded on the ensemble and
// was refused (NoAuth) by the model, which applies each write before the next as if the leader always had.
func leaderApplied(ctx context.Context, addrs []string) error {
	return leaderAppliedWithin(ctx, addrs, collectTimeout)
}

// leaderAppliedWithin is leaderApplied with its limit.
func leaderAppliedWithin(ctx context.Context, addrs []string, limit time.Duration) error {
	if len(addrs) < 2 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last string // the last answer from every server, for the error
	for {
		var leader, applied int64 = -1, 0
		var errs []error
		var said []string
		for _, addr := range addrs {
			st, err := realzk.ServerStatus(ctx, addr)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			said = append(said, fmt.Sprintf("%s %s at %#x", addr, st.Mode, st.Zxid))
			applied = max(applied, st.Zxid)
			if st.Mode == realzk.ModeLeader {
				leader = st.Zxid
			}
		}
		if len(errs) == 0 {
			if leader >= applied {
				return nil
			}
			last = strings.Join(said, ", ")
		}
		select {
		case <-ctx.Done():
			if last == "" {
				return fmt.Errorf("wait for the leader to apply every write: %w (%w)", errors.Join(errs...), ErrHiccup)
			}
			return fmt.Errorf("wait for the leader to apply every write: for %v the leader stayed behind (%s): %w", limit, last, ErrHiccup)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Ready waits until every server in Addrs serves clients again (leader, follower, observer or standalone, as
// "srvr" tells), for a run after a hiccup, and returns an error naming the servers that do not within twice
// collectTimeout.
func (r *RealSide) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*collectTimeout)
	defer cancel()
	for {
		var errs []error
		for _, addr := range r.Addrs {
			if _, err := realzk.ServerMode(ctx, addr); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("servers not serving: %w", errors.Join(errs...))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Sever closes session i's connections through its proxy.
func (r *RealSide) Sever(ctx context.Context, i int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i < 1 || i > len(r.proxies) {
		return fmt.Errorf("no session %d (sessions are 1..%d)", i, len(r.proxies))
	}
	// Sever only the proxy the client is connected through: severing the other one too could cut the
	// connection the client makes at once to it.
	var active []*realzk.Proxy
	for _, p := range r.proxies[i-1] {
		if p.Stats().Open > 0 {
			active = append(active, p)
		}
	}
	if len(active) == 0 {
		return fmt.Errorf("session %d has no open connection to sever", i)
	}
	for _, p := range active {
		p.Sever()
	}
	return nil
}

// Pass waits, polling with the admin session, until the server's container manager has nothing left to delete
// among expiring and containers, or a generous bound of check intervals has passed (see waitQuiet).
func (r *RealSide) Pass(ctx context.Context, expiring, containers []string) error {
	if r.CheckInterval <= 0 {
		return errors.New("the real side has no CheckInterval: set it to the ensemble's znode.container.checkIntervalMs to let time pass")
	}
	r.mu.Lock()
	admin := r.admin
	r.mu.Unlock()
	return waitQuiet(ctx, admin, expiring, containers, r.CheckInterval)
}

// End deletes base's tree and closes the sequence's proxies.
func (r *RealSide) End(ctx context.Context, base string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, ps := range r.proxies {
		for _, p := range ps {
			if err := p.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	r.proxies = nil
	if r.admin != nil {
		// Sync first: the admin's server may not have applied the sequence's last writes.
		if _, err := r.admin.Sync(base); err != nil {
			errs = append(errs, fmt.Errorf("sync %s: %w", base, err))
		}
		errs = append(errs, deleteAllPatiently(ctx, r.admin, base))
	}
	return errors.Join(errs...)
}

// Close deletes root (the parent of every base) and closes the admin session.
func (r *RealSide) Close(root string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.admin == nil {
		return nil
	}
	err := deleteAll(r.admin, root)
	r.admin.Close()
	r.admin = nil
	return err
}

// superAuth makes the admin session the super user (realzk.SharedSuperUser, whom the model sides' servers
// know too, see serverOptions): it reads the final tree and deletes it whatever ACLs the sequence set.
func superAuth(admin Session) error {
	a, ok := admin.(conformance.ACLConn)
	if !ok {
		return fmt.Errorf("the admin session (%T) cannot add auth", admin)
	}
	if err := a.AddAuth("digest", []byte(realzk.SharedSuperUser)); err != nil {
		return fmt.Errorf("add the super user's auth to the admin session: %w", err)
	}
	return nil
}

// serverOptions are a model side's options for every server: the super user of the real ensemble's, then
// the side's own.
func serverOptions(opts []model.Option) []model.Option {
	return append([]model.Option{model.WithSuperDigest(realzk.SuperDigest(realzk.SharedSuperUser))}, opts...)
}

// createAll creates p and its missing ancestors as empty persistent nodes.
func createAll(s Session, p string) error {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i := range parts {
		cur := "/" + strings.Join(parts[:i+1], "/")
		if _, err := s.Create(cur, nil, zk.FlagPersistent, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

// deleteAllPatiently is deleteAll that waits out ephemeral nodes of sessions whose close did not reach
// the server (go-zookeeper's Close gives up after a second when the ensemble stalls): they go when the
// session expires.
func deleteAllPatiently(ctx context.Context, s Session, p string) error {
	deadline := time.Now().Add(sessionTimeout + collectTimeout)
	for {
		err := deleteAll(s, p)
		if !errors.Is(err, zk.ErrNotEmpty) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deleteAll deletes p and everything below it; a missing p is not an error.
func deleteAll(s Session, p string) error {
	children, _, err := s.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("children of %s: %w", p, err)
	}
	slices.Sort(children)
	for _, c := range children {
		if err := deleteAll(s, p+"/"+c); err != nil {
			return err
		}
	}
	if err := s.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	return nil
}

// WireSide runs sequences on the model through ZooKeeper's wire protocol: every session is a real
// go-zookeeper *zk.Conn connected in-process (model.ConnectZK), on a fresh model.Server per sequence.
type WireSide struct {
	// Options configure every server (e.g. model.WithSeed).
	Options []model.Option
	// Raw makes the sessions raw clients (internal/rawzk) connected in-process (Server.Dialer), as
	// RealSide.Raw does.
	Raw bool
	// CheckInterval is as ModelSide's.
	CheckInterval time.Duration

	srv   *model.Server
	admin *zk.Conn
	conns []Session
}

// Name returns "wire".
func (w *WireSide) Name() string { return "wire" }

// Begin starts a fresh server and creates base (with its ancestors) from an admin session.
func (w *WireSide) Begin(ctx context.Context, base string) (Session, error) {
	w.srv = model.NewServer(serverOptions(w.Options)...)
	w.conns = nil
	admin, events, err := model.ConnectZK(w.srv, sessionTimeout)
	if err != nil {
		return nil, fmt.Errorf("connect the admin session: %w", err)
	}
	go func() {
		for range events { // nobody reads the admin's events
		}
	}()
	w.admin = admin
	if err := superAuth(admin); err != nil {
		return nil, err
	}
	if err := createAll(admin, base); err != nil {
		return nil, err
	}
	return admin, nil
}

// Connect opens a go-zookeeper client (or, with Raw, a raw one) on the sequence's server.
func (w *WireSide) Connect(ctx context.Context, i int) (Session, <-chan zk.Event, error) {
	if w.Raw {
		dial := w.srv.Dialer()
		c, events, err := connectRaw(ctx, []string{"model"}, func(_ context.Context, addr string) (net.Conn, error) {
			return dial("tcp", addr, sessionTimeout)
		})
		if err == nil {
			w.conns = append(w.conns, c)
		}
		return c, events, err
	}
	c, events, err := model.ConnectZK(w.srv, sessionTimeout)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	w.conns = append(w.conns, c)
	return c, events, nil
}

// Settle is the real side's: go-zookeeper hands out a notification before it processes a later reply,
// so a Sync and a read of base on each session have let every earlier event through.
func (w *WireSide) Settle(ctx context.Context, base string, live []Session) error {
	return (&RealSide{}).Settle(ctx, base, live)
}

// Sever drops session i's connection from the server's side; go-zookeeper reconnects by itself.
func (w *WireSide) Sever(ctx context.Context, i int) error {
	if i < 1 || i > len(w.conns) {
		return fmt.Errorf("no session %d (sessions are 1..%d)", i, len(w.conns))
	}
	return w.srv.Do(model.Step{Kind: model.Disconnect, Client: w.srv.ClientOf(w.conns[i-1].SessionID())})
}

// Pass moves the server's virtual clock by passIntervals check intervals.
func (w *WireSide) Pass(ctx context.Context, expiring, containers []string) error {
	return advance(w.srv, w.CheckInterval)
}

// End closes the sequence's clients and the server's wire front end.
func (w *WireSide) End(ctx context.Context, base string) error {
	for _, c := range w.conns {
		c.Close()
	}
	w.admin.Close()
	return w.srv.Close()
}
