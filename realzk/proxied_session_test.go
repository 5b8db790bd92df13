package realzk

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/internal/evqueue"
)

// proxiedSession is one go-zookeeper client that reaches every server of an
// ensemble through a proxy of its own, so a test can partition it (Freeze
// every proxy) or cut its connection (Sever) without touching the others,
// while it can still fail over from one server to another.
type proxiedSession struct {
	conn    *zk.Conn
	events  <-chan zk.Event
	proxies []*Proxy
}

// quietLogger drops go-zookeeper's log lines (reconnections are expected
// here and would flood the test log).
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// newProxiedSession puts one proxy in front of each server of e, connects a
// client through all of them and waits for its session. The client and the
// proxies close when the test ends. onEvent, when set, sees every event the
// client receives (zk.WithEventCallback).
func newProxiedSession(t testing.TB, e interface{ Addrs() []string }, sessionTimeout time.Duration, onEvent zk.EventCallback) *proxiedSession {
	t.Helper()
	s := &proxiedSession{}
	var addrs []string
	for _, target := range e.Addrs() {
		p, err := NewProxy(context.Background(), target)
		if err != nil {
			t.Fatalf("proxy for %s: %v", target, err)
		}
		t.Cleanup(func() { p.Close() })
		s.proxies = append(s.proxies, p)
		addrs = append(addrs, p.Addr())
	}
	// The session's events are recorded by the callback, losslessly (evqueue.Session), besides onEvent.
	rec := evqueue.NewSession()
	record := rec.Callback()
	conn, events, err := connectQuiet(addrs, sessionTimeout, func(ev zk.Event) {
		record(ev)
		if onEvent != nil {
			onEvent(ev)
		}
	})
	if err != nil {
		t.Fatalf("connect through proxies %v: %v", addrs, err)
	}
	t.Cleanup(conn.Close)
	s.conn, s.events = conn, rec.Follow(events)
	awaitConnState(t, conn, time.Minute, zk.StateHasSession)
	return s
}

// connectQuiet is zk.Connect without log lines, with onEvent (if set) as
// the event callback.
func connectQuiet(addrs []string, sessionTimeout time.Duration, onEvent zk.EventCallback) (*zk.Conn, <-chan zk.Event, error) {
	if onEvent == nil {
		return zk.Connect(addrs, sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	}
	return zk.Connect(addrs, sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}), zk.WithEventCallback(onEvent))
}

// freeze partitions the client: no byte passes either way on any server.
func (s *proxiedSession) freeze() {
	for _, p := range s.proxies {
		p.Freeze()
	}
}

// unfreeze ends the partition.
func (s *proxiedSession) unfreeze() {
	for _, p := range s.proxies {
		p.Unfreeze()
	}
}

// sever closes the client's connections (it reconnects at once). It severs
// only the proxies that carry a connection now: the client redials the next
// proxy at once, and severing that one too would cut it a second time.
func (s *proxiedSession) sever() int {
	var open []*Proxy
	for _, p := range s.proxies {
		if p.Stats().Open > 0 {
			open = append(open, p)
		}
	}
	n := 0
	for _, p := range open {
		n += p.Sever()
	}
	return n
}

// clientBytes is how many bytes the client has sent the servers so far.
func (s *proxiedSession) clientBytes() int64 {
	var n int64
	for _, p := range s.proxies {
		n += p.Stats().ClientBytes
	}
	return n
}

// serverBytes is how many bytes the servers have sent the client so far.
func (s *proxiedSession) serverBytes() int64 {
	var n int64
	for _, p := range s.proxies {
		n += p.Stats().ServerBytes
	}
	return n
}

// awaitConnState polls conn until its state is one of want, failing t
// after limit.
func awaitConnState(t testing.TB, conn *zk.Conn, limit time.Duration, want ...zk.State) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		state := conn.State()
		for _, w := range want {
			if state == w {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection state %v, want one of %v within %v", state, want, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// expireSession makes the ensemble expire s's current session: it creates
// an ephemeral marker node on that session, freezes the client, waits until
// observer no longer sees the marker (the servers have expired the session)
// and unfreezes it. It returns the expired session id. beforeFreeze, when
// set, runs just before the freeze (to record the loss in a history).
func expireSession(ctx context.Context, s *proxiedSession, observer *zk.Conn, beforeFreeze func(session int64)) (int64, error) {
	const markers = "/realzk-expiry-markers"
	if _, err := s.conn.Create(markers, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return 0, fmt.Errorf("create %s: %w", markers, err)
	}
	marker, err := s.conn.CreateProtectedEphemeralSequential(markers+"/m-", nil, zk.WorldACL(zk.PermAll))
	if err != nil {
		return 0, fmt.Errorf("create an ephemeral marker on the session to expire: %w", err)
	}
	// The observer's server may not have applied the marker's create yet, and
	// would then report it gone at once.
	if _, err := observer.Sync(marker); err != nil {
		return 0, fmt.Errorf("sync the observer with the marker %s: %w", marker, err)
	}
	session := s.conn.SessionID()
	if beforeFreeze != nil {
		beforeFreeze(session)
	}
	s.freeze()
	defer s.unfreeze()
	if err := awaitGone(ctx, observer, marker); err != nil {
		return session, fmt.Errorf("expire session %#x: %w", session, err)
	}
	return session, nil
}

// awaitGone waits until path does not exist, as observer sees it.
func awaitGone(ctx context.Context, observer *zk.Conn, path string) error {
	for {
		ok, _, watch, err := observer.ExistsW(path)
		if err != nil {
			return fmt.Errorf("watch %s: %w", path, err)
		}
		if !ok {
			return nil
		}
		select {
		case <-watch:
		case <-ctx.Done():
			return fmt.Errorf("%s still exists: %w", path, ctx.Err())
		}
	}
}
