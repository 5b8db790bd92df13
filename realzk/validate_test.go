package realzk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/check"
	"github.com/zkmodel/zkmodel/recipe"
)

// The validation runs: K clients contend for one lock with the unchanged
// recipe on *zk.Conn against the 3-server ensemble while a scenario injects
// faults; every lock call, session loss and critical section on a fenced
// register goes into a check.History, whose safety properties (porcupine on
// the lock history and on the register) must hold. Besides: no client may be
// stuck in Lock once the faults have stopped, no lock node may be left once
// every client has finished, and Lost() must be closed for every holder
// whose session was expired. `make real` runs them verbosely.

const (
	// validateClients is K, the number of contending clients.
	validateClients = 5
	// validateWarmup is how long the clients contend before the faults.
	validateWarmup = time.Second
	// validateSettle is how long they go on after the faults.
	validateSettle = time.Second
	// validateDrain bounds how long a client may still wait in Lock once the
	// clients stop: past it, it counts as stuck. It is a hang guard, far above
	// what a healthy handoff of K clients takes.
	validateDrain = 20 * time.Second
	// validateShortSession is the session timeout of the scenarios that
	// expire sessions: the clients must survive nothing worse than a sever.
	validateShortSession = 2 * time.Second
	// validateLongSession is the session timeout of the scenarios that
	// expire nothing: a session must outlive a leader's election and the
	// failover (about 2 s, see doc.go), or a sever, even on a busy machine.
	validateLongSession = 8 * time.Second
)

func TestValidateNoFaults(t *testing.T) {
	runValidation(t, validation{name: "no faults", sessionTimeout: validateShortSession, inject: func(ctx context.Context, r *validationRun) error {
		return sleep(ctx, 2*time.Second)
	}})
}

func TestValidateLeaderKilled(t *testing.T) {
	runValidation(t, validation{name: "leader killed and restarted", sessionTimeout: validateLongSession, inject: injectLeaderKill})
}

func TestValidateHolderExpired(t *testing.T) {
	runValidation(t, validation{name: "holder's session expired", sessionTimeout: validateShortSession, proxied: true, inject: injectHolderExpiry})
}

func TestValidateWaiterExpired(t *testing.T) {
	runValidation(t, validation{name: "waiter's session expired", sessionTimeout: validateShortSession, proxied: true, inject: injectWaiterExpiry})
}

func TestValidateSeveredDuringCreate(t *testing.T) {
	runValidation(t, validation{name: "client severed during its create", sessionTimeout: validateLongSession, proxied: true, inject: injectSeverDuringCreate})
}

// validation is one scenario.
type validation struct {
	name           string
	sessionTimeout time.Duration
	proxied        bool // each client reaches the servers through proxies of its own
	// inject injects the scenario's faults while the clients contend and
	// returns once they are over.
	inject func(ctx context.Context, r *validationRun) error
}

// validationRun is the state of one scenario's run.
type validationRun struct {
	t        *testing.T
	ensemble validationServers
	observer *zk.Conn // a client outside the contention, for looking on
	dir      string   // the lock's path
	history  *check.History
	clients  []*validationClient

	stop  chan struct{}      // closed when the clients are to stop looping
	drain context.Context    // every Lock's context: ends validateDrain after stop
	pause chan *pausedHolder // the next client to read in its critical section pauses

	faults       atomic.Int64 // faults injected
	stuck        atomic.Int64 // Lock calls still waiting when drain ended
	armedSever   atomic.Pointer[severRequest]
	mu           sync.Mutex
	expiredHolds []expiredHold // holders whose session the run expired
	notes        []string      // what the faults did, for the figures
}

// validationClient is one contending client.
type validationClient struct {
	id      int // from 1, as check.History numbers clients
	conn    *zk.Conn
	session *proxiedSession // nil unless the run is proxied
	lock    *recipe.Lock
	creates atomic.Int64 // Create calls the lock made on conn

	inLock       atomic.Bool  // between Lock's call and its return
	expiries     atomic.Int64 // StateExpired events the client saw
	disconnects  atomic.Int64 // StateDisconnected events the client saw
	planned      atomic.Int64 // expiries the run injected into it
	lockResults  atomic.Pointer[chan lockResult]
	severed      atomic.Pointer[severRequest] // set by a severed create, for the Lock call it was in
	unexpected   []error                      // errors the run did not cause (read after the run)
	unexpectedMu sync.Mutex
}

// lockResult is what one Lock call returned, for a fault that waits for it.
type lockResult struct {
	err     error
	creates int64 // Create calls during the Lock call
}

// pausedHolder is a holder stopped inside its critical section (after its
// read) until resume is closed; the fault injector learns who it is from
// holder and gets its Unlock's result on unlocked.
type pausedHolder struct {
	holder   chan *validationClient
	resume   chan struct{}
	unlocked chan error
	lost     <-chan struct{} // the hold's Lost(), set by the holder
	session  int64           // the hold's session, set by the holder
}

// expiredHold is a hold whose session the run expired.
type expiredHold struct {
	client int
	lost   <-chan struct{}
}

// severRequest asks the next client that creates a lock node to have its
// connections severed while the create is in flight.
type severRequest struct {
	dropRequest bool              // sever before the request leaves the proxy, instead of after the server answered
	done        chan severOutcome // the create's outcome
	result      chan lockResult   // the result of the Lock call that made the create
}

type severOutcome struct {
	client    *validationClient
	createErr error
}

// validationServers is what a validation run needs of the servers it runs on: the real ensemble
// (*Ensemble) or the model's emulated one (modelEnsemble, validate_model_test.go).
type validationServers interface {
	Addrs() []string
	Leader(ctx context.Context) (int, error)
	Kill(i int) error
	Restart(ctx context.Context, i int) error
	Heal(ctx context.Context) error
}

func runValidation(t *testing.T, v validation) { runValidationOn(t, Shared(t), v) }

// runValidationOn runs the scenario on the given servers.
func runValidationOn(t *testing.T, e validationServers, v validation) {
	ctx := testContext(t, 2*time.Minute)
	observer := quietClient(t, e.Addrs())
	r := &validationRun{
		t: t, ensemble: e, observer: observer,
		dir:     testPath(t, observer) + "/lock",
		history: check.NewHistory(),
		stop:    make(chan struct{}),
		pause:   make(chan *pausedHolder),
	}
	if _, err := observer.Create(r.dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", r.dir, err)
	}
	drain, endDrain := context.WithCancel(context.Background())
	defer endDrain()
	r.drain = drain
	for id := 1; id <= validateClients; id++ {
		r.clients = append(r.clients, r.newClient(t, id, v))
	}

	var loops sync.WaitGroup
	for _, c := range r.clients {
		loops.Go(func() { r.loop(c) })
	}
	injected := make(chan error, 1)
	go func() {
		if err := sleep(ctx, validateWarmup); err != nil {
			injected <- err
			return
		}
		injected <- v.inject(ctx, r)
	}()
	injectErr := <-injected
	if injectErr == nil {
		injectErr = sleep(ctx, validateSettle)
	}
	close(r.stop)
	drainTimer := time.AfterFunc(validateDrain, endDrain)
	loops.Wait()
	drainTimer.Stop()

	// Every client has finished: nothing holds or waits for the lock, so
	// every lock node left is an orphan. Then close the clients and look
	// again with a fresh client.
	orphans := lockChildren(t, observer, r.dir)
	var disconnects int64
	for _, c := range r.clients {
		disconnects += c.disconnects.Load()
	}
	for _, c := range r.clients {
		c.conn.Close()
	}
	fresh := quietClient(t, e.Addrs())
	orphansAfterClose := lockChildren(t, fresh, r.dir)

	property, verdict := r.history.Check()
	violations := 0
	if property != "" {
		violations = 1
	}
	counts := r.history.Counts()
	lostClosed := 0
	for _, hold := range r.expiredHolds {
		select {
		case <-hold.lost:
			lostClosed++
		default:
		}
	}
	t.Logf("validate %q: %d clients; operations: %d Lock (%d acquired, %d failed), %d Unlock ok, %d register writes (%d refused by the fence); "+
		"faults injected: %d%s; client disconnections: %d; violations: %d; stuck: %d; orphans: %d (after close: %d); expired holders: %d, Lost() closed: %d",
		v.name, len(r.clients), counts.Acquired+counts.Failed, counts.Acquired, counts.Failed, counts.Released, counts.Writes+counts.Refused, counts.Refused,
		r.faults.Load(), r.describeFaults(), disconnects, violations, r.stuck.Load(), len(orphans), len(orphansAfterClose), len(r.expiredHolds), lostClosed)

	if injectErr != nil {
		t.Errorf("%s: injecting the faults: %v", v.name, injectErr)
	}
	if property != "" {
		t.Errorf("%s: property %s violated: %s", v.name, property, verdict)
	}
	if n := r.stuck.Load(); n != 0 {
		t.Errorf("%s: %d clients still blocked in Lock %v after the clients stopped", v.name, n, validateDrain)
	}
	if len(orphans) != 0 || len(orphansAfterClose) != 0 {
		t.Errorf("%s: orphan lock nodes: %v once every client finished, %v after they closed", v.name, orphans, orphansAfterClose)
	}
	if lostClosed != len(r.expiredHolds) {
		t.Errorf("%s: Lost() closed for %d of the %d holders whose session expired", v.name, lostClosed, len(r.expiredHolds))
	}
	if counts.Acquired == 0 {
		t.Errorf("%s: no client ever acquired the lock", v.name)
	}
	for _, c := range r.clients {
		if got, want := c.expiries.Load(), c.planned.Load(); got != want {
			t.Errorf("%s: client %d saw %d session expiries, the run caused %d (a session timeout too short for the scenario?)", v.name, c.id, got, want)
		}
		for _, err := range c.unexpected {
			t.Errorf("%s: client %d: %v", v.name, c.id, err)
		}
	}
}

// newClient connects client id, directly to every server or through
// proxies of its own.
func (r *validationRun) newClient(t *testing.T, id int, v validation) *validationClient {
	c := &validationClient{id: id}
	onEvent := func(ev zk.Event) {
		switch {
		case ev.Type != zk.EventSession:
		case ev.State == zk.StateExpired:
			c.expiries.Add(1)
		case ev.State == zk.StateDisconnected:
			c.disconnects.Add(1)
		}
	}
	if v.proxied {
		c.session = newProxiedSession(t, r.ensemble, v.sessionTimeout, onEvent)
		c.conn = c.session.conn
	} else {
		conn, _, err := connectQuiet(r.ensemble.Addrs(), v.sessionTimeout, onEvent)
		if err != nil {
			t.Fatalf("connect client %d: %v", id, err)
		}
		t.Cleanup(conn.Close)
		awaitConnState(t, conn, time.Minute, zk.StateHasSession)
		c.conn = conn
	}
	c.lock = recipe.NewLock(&validationConn{Conn: c.conn, client: c, run: r}, r.dir)
	return c
}

// validationConn is a client's connection as its lock sees it: it counts
// creates and severs the connection during one when the run asks for it.
type validationConn struct {
	*zk.Conn
	client *validationClient
	run    *validationRun
}

// Create passes the call on; when a sever is armed it severs the client's
// connections as soon as the server answers, so the reply is likely lost.
func (c *validationConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.client.creates.Add(1)
	var req *severRequest
	if flags&zk.FlagSequence != 0 && c.client.session != nil {
		req = c.run.armedSever.Swap(nil)
	}
	if req == nil {
		return c.Conn.Create(path, data, flags, acl)
	}
	// To lose the reply, freeze the client's links as soon as the request
	// has reached a proxy: the proxy has usually passed it on by then, and
	// it holds the reply. To lose the request, freeze them before it is
	// sent. Sever once the reply is held (or after a while, when the freeze
	// holds the request), which drops what the freeze held.
	session := c.client.session
	sent, answered := session.clientBytes(), session.serverBytes()
	if req.dropRequest {
		session.freeze()
	}
	severed := make(chan struct{})
	go func() {
		defer close(severed)
		defer session.unfreeze() // sever lifts the freeze only where it cuts a connection
		defer session.sever()
		deadline := time.Now().Add(5 * time.Second)
		for session.clientBytes() == sent && time.Now().Before(deadline) {
			time.Sleep(20 * time.Microsecond)
		}
		if req.dropRequest {
			return // the request is held
		}
		session.freeze()
		deadline = time.Now().Add(time.Second)
		for session.serverBytes() == answered && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
	}()
	c.client.severed.Store(req)
	node, err := c.Conn.Create(path, data, flags, acl)
	<-severed
	req.done <- severOutcome{client: c.client, createErr: err}
	return node, err
}

// loop is one client's workload: lock, read the fenced register with the
// token, write it back incremented unless the hold was lost, unlock; until
// the run stops.
func (r *validationRun) loop(c *validationClient) {
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		createsBefore := c.creates.Load()
		c.inLock.Store(true)
		r.history.LockCalled(c.id)
		err := c.lock.Lock(r.drain)
		var token, session int64
		if err == nil {
			token, session = c.lock.Token(), c.conn.SessionID()
		}
		r.history.LockReturned(c.id, token, session, err)
		c.inLock.Store(false)
		result := lockResult{err: err, creates: c.creates.Load() - createsBefore}
		if ch := c.lockResults.Swap(nil); ch != nil {
			*ch <- result
		}
		if req := c.severed.Swap(nil); req != nil {
			req.result <- result
		}
		if err != nil {
			if r.drain.Err() != nil {
				r.stuck.Add(1)
				return
			}
			if !errors.Is(err, recipe.ErrLost) {
				c.unexpectedError(fmt.Errorf("Lock: %w", err))
			}
			continue
		}
		lost := c.lock.Lost()
		value, admitted := r.history.Read(c.id, token)
		var paused *pausedHolder
		select {
		case paused = <-r.pause:
			paused.lost, paused.session = lost, session
			paused.holder <- c
			<-paused.resume
		default:
		}
		if !admitted || isClosedChan(lost) {
			r.history.Abort(c.id)
		} else {
			r.history.Write(c.id, token, value+1)
		}
		err = r.unlock(c)
		if paused != nil {
			paused.unlocked <- err
		} else if err != nil {
			c.unexpectedError(fmt.Errorf("Unlock: %w", err))
		}
	}
}

// unlock releases c's hold, retrying an Unlock that failed for want of the
// ensemble (the hold stays until an Unlock succeeds or reports the loss).
// It returns the last Unlock's error.
func (r *validationRun) unlock(c *validationClient) error {
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), validateDrain)
		r.history.UnlockCalled(c.id)
		err := c.lock.Unlock(ctx)
		cancel()
		r.history.UnlockReturned(c.id, err)
		if err == nil || errors.Is(err, recipe.ErrLost) || attempt == 3 {
			return err
		}
	}
}

func (c *validationClient) unexpectedError(err error) {
	c.unexpectedMu.Lock()
	defer c.unexpectedMu.Unlock()
	c.unexpected = append(c.unexpected, err)
}

// pauseHolder stops the next client to enter its critical section and
// returns it, paused until p.resume is closed.
func (r *validationRun) pauseHolder(ctx context.Context) (*pausedHolder, *validationClient, error) {
	p := &pausedHolder{holder: make(chan *validationClient, 1), resume: make(chan struct{}), unlocked: make(chan error, 1)}
	select {
	case r.pause <- p:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("no client entered its critical section: %w", ctx.Err())
	}
	return p, <-p.holder, nil
}

// expire expires c's current session (see expireSession), recording the
// loss in the history when the partition starts.
func (r *validationRun) expire(ctx context.Context, c *validationClient) error {
	c.planned.Add(1)
	_, err := expireSession(ctx, c.session, r.observer, func(session int64) {
		r.history.SessionLost(session)
		r.faults.Add(1)
	})
	return err
}

func (r *validationRun) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

func (r *validationRun) describeFaults() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.notes) == 0 {
		return ""
	}
	return " (" + strings.Join(r.notes, "; ") + ")"
}

// injectLeaderKill kills the leader mid-run and restarts it.
func injectLeaderKill(ctx context.Context, r *validationRun) error {
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		defer cancel()
		if err := r.ensemble.Heal(ctx); err != nil {
			r.t.Errorf("heal after the leader kill: %v", err)
		}
	})
	leader, err := r.ensemble.Leader(ctx)
	if err != nil {
		return err
	}
	acquired := r.history.Counts().Acquired
	if err := r.ensemble.Kill(leader); err != nil {
		return err
	}
	r.faults.Add(1)
	killed := time.Now()
	if err := sleep(ctx, time.Second); err != nil {
		return err
	}
	if err := r.ensemble.Restart(ctx, leader); err != nil {
		return err
	}
	r.faults.Add(1)
	r.note("server %d killed as leader, restarted %v later; %d acquisitions before the kill", leader, time.Since(killed).Round(100*time.Millisecond), acquired)
	return nil
}

// injectHolderExpiry pauses a holder in its critical section and expires
// its session, twice: the first holder resumes as soon as the partition
// ends (it has likely not heard of the expiry yet, so it writes with its
// stale token and the fence must refuse it), the second once its Lost() has
// closed (so it skips the write).
func injectHolderExpiry(ctx context.Context, r *validationRun) error {
	for round := range 2 {
		p, holder, err := r.pauseHolder(ctx)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.expiredHolds = append(r.expiredHolds, expiredHold{client: holder.id, lost: p.lost})
		r.mu.Unlock()
		if err := r.expire(ctx, holder); err != nil {
			close(p.resume)
			return err
		}
		waitedForLost := round == 1
		if waitedForLost {
			select {
			case <-p.lost:
			case <-ctx.Done():
				close(p.resume)
				return fmt.Errorf("Lost() of the expired holder %d did not close: %w", holder.id, ctx.Err())
			}
		}
		close(p.resume)
		var unlockErr error
		select {
		case unlockErr = <-p.unlocked:
		case <-ctx.Done():
			return fmt.Errorf("the expired holder %d did not unlock: %w", holder.id, ctx.Err())
		}
		// Once Lost() has closed, Unlock must report the loss. Resumed at
		// once, the holder may still be reconnecting: a delete whose reply
		// is lost and whose retry finds the node gone counts as released.
		if waitedForLost && !errors.Is(unlockErr, recipe.ErrLost) {
			return fmt.Errorf("Unlock of the expired holder %d after Lost() closed returned %v, want an error wrapping recipe.ErrLost", holder.id, unlockErr)
		}
		unlocked := "nil"
		if errors.Is(unlockErr, recipe.ErrLost) {
			unlocked = "ErrLost"
		} else if unlockErr != nil {
			unlocked = unlockErr.Error()
		}
		r.note("holder %d (session %#x) expired in its critical section, resumed %s, Unlock returned %s", holder.id, p.session,
			map[bool]string{false: "at once", true: "after Lost() closed"}[waitedForLost], unlocked)
		if err := sleep(ctx, 300*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// injectWaiterExpiry pauses a holder, so the others queue behind it,
// expires the session of one of the waiters, checks that its Lock fails with
// ErrLost, and lets the holder go on.
func injectWaiterExpiry(ctx context.Context, r *validationRun) error {
	p, holder, err := r.pauseHolder(ctx)
	if err != nil {
		return err
	}
	defer close(p.resume)
	waiter, err := r.findWaiter(ctx, holder)
	if err != nil {
		return err
	}
	results := make(chan lockResult, 1)
	waiter.lockResults.Store(&results)
	if err := r.expire(ctx, waiter); err != nil {
		return err
	}
	var result lockResult
	select {
	case result = <-results:
	case <-ctx.Done():
		return fmt.Errorf("the expired waiter %d is still in Lock: %w", waiter.id, ctx.Err())
	}
	if !errors.Is(result.err, recipe.ErrLost) {
		return fmt.Errorf("Lock of the expired waiter %d returned %v, want an error wrapping recipe.ErrLost", waiter.id, result.err)
	}
	r.note("waiter %d expired while the holder %d was paused; its Lock failed with ErrLost", waiter.id, holder.id)
	return nil
}

// findWaiter waits until a client other than holder waits in Lock with its
// node queued under the lock, and returns it.
func (r *validationRun) findWaiter(ctx context.Context, holder *validationClient) (*validationClient, error) {
	for {
		owners := map[int64]bool{}
		for _, name := range lockChildrenOrErr(r.observer, r.dir) {
			if ok, stat, err := r.observer.Exists(r.dir + "/" + name); err == nil && ok {
				owners[stat.EphemeralOwner] = true
			}
		}
		for _, c := range r.clients {
			if c != holder && c.inLock.Load() && owners[c.conn.SessionID()] {
				return c, nil
			}
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return nil, fmt.Errorf("no client queued behind the paused holder: %w", err)
		}
	}
}

// injectSeverDuringCreate severs, four times, the connections of the next
// client to create its lock node: twice once the server has answered the
// create, twice before the request left the proxy. It checks that the Lock
// call goes on, and notes whether the create failed and whether the lock
// then adopted a node or created one again.
func injectSeverDuringCreate(ctx context.Context, r *validationRun) error {
	var lostReplies, adopted, recreated, delivered int
	for round := range 4 {
		req := &severRequest{dropRequest: round%2 == 1, done: make(chan severOutcome, 1), result: make(chan lockResult, 1)}
		r.armedSever.Store(req)
		var outcome severOutcome
		select {
		case outcome = <-req.done:
		case <-ctx.Done():
			return fmt.Errorf("no client created a lock node: %w", ctx.Err())
		}
		r.faults.Add(1)
		c := outcome.client
		var result lockResult
		select {
		case result = <-req.result:
		case <-ctx.Done():
			return fmt.Errorf("client %d, severed during its create, is still in Lock: %w", c.id, ctx.Err())
		}
		if result.err != nil {
			return fmt.Errorf("Lock of client %d, severed during its create, failed: %w", c.id, result.err)
		}
		switch {
		case outcome.createErr == nil:
			delivered++
		case errors.Is(outcome.createErr, zk.ErrConnectionClosed):
			lostReplies++
			if result.creates == 1 {
				adopted++
			} else {
				recreated++
			}
		default:
			return fmt.Errorf("create of client %d, severed, returned %v, want success or zk.ErrConnectionClosed", c.id, outcome.createErr)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	if lostReplies == 0 {
		return fmt.Errorf("no create failed with the connection in 4 severs (delivered: %d): the scenario did not happen", delivered)
	}
	r.note("creates failed with the connection: %d (the lock then adopted its node: %d, created one again: %d), replies delivered before the sever: %d", lostReplies, adopted, recreated, delivered)
	return nil
}

// quietClient connects a client that logs nothing to addrs, waits for its
// session and closes it when the test ends.
func quietClient(t testing.TB, addrs []string) *zk.Conn {
	t.Helper()
	conn, _, err := connectQuiet(addrs, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("connect to %v: %v", addrs, err)
	}
	t.Cleanup(conn.Close)
	awaitConnState(t, conn, time.Minute, zk.StateHasSession)
	return conn
}

// lockChildren lists the lock nodes under dir after a sync, failing t on an
// error other than a missing dir.
func lockChildren(t testing.TB, conn *zk.Conn, dir string) []string {
	t.Helper()
	if _, err := conn.Sync(dir); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("sync %s: %v", dir, err)
	}
	names, _, err := conn.Children(dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("list %s: %v", dir, err)
	}
	slices.Sort(names)
	return names
}

// lockChildrenOrErr lists dir, or nothing on an error.
func lockChildrenOrErr(conn *zk.Conn, dir string) []string {
	names, _, _ := conn.Children(dir)
	return names
}

func isClosedChan(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
