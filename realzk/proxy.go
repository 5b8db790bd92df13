package realzk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of one ZooKeeper server, for
// injecting network faults between one client and the ensemble. Point the
// client at Addr() alone (go-zookeeper shuffles its server list, so a single
// address pins it). Its methods are safe for concurrent use.
//
//   - Freeze stops forwarding bytes both ways but keeps every connection
//     open, like a partition: the server hears nothing from the client and
//     expires the session after its timeout. Bytes and closes that arrive
//     meanwhile are held and delivered, in order, on Unfreeze.
//   - Sever closes every current connection (the client sees connection
//     loss, reconnects through the proxy and resumes its session).
//
// With CountWire it also follows ZooKeeper's framing both ways and counts the
// clients' requests and the servers' watch notifications (WireCounts).
type Proxy struct {
	target   string
	listener net.Listener
	wire     *wireCounter // nil unless CountWire

	mu     sync.Mutex
	frozen bool
	thaw   chan struct{} // closed while not frozen
	links  map[*link]struct{}
	closed bool

	accepted    atomic.Int64
	clientBytes atomic.Int64
	serverBytes atomic.Int64

	stopContext func() bool // detaches Close from NewProxy's ctx
	wg          sync.WaitGroup
}

// link is one proxied connection: the client's and the server's ends.
type link struct {
	client net.Conn
	done   chan struct{} // closed when the link is torn down

	mu     sync.Mutex
	server net.Conn // nil until dialled
	closed bool
}

func (l *link) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	close(l.done)
	l.client.Close()
	if l.server != nil {
		l.server.Close()
	}
}

// setServer attaches the server end; it reports false (and closes server)
// when the link was closed meanwhile.
func (l *link) setServer(server net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		server.Close()
		return false
	}
	l.server = server
	return true
}

// ProxyStats counts what a proxy has seen.
type ProxyStats struct {
	Accepted    int64 // connections accepted from clients
	Open        int   // connections open now
	ClientBytes int64 // bytes read from clients (forwarded or held)
	ServerBytes int64 // bytes read from the server (forwarded or held)
}

// ProxyOption configures a Proxy.
type ProxyOption func(*Proxy)

// CountWire makes the proxy count what it forwards as ZooKeeper's protocol:
// connect requests, pings, auth and other requests from the clients, watch
// notifications (replies with xid -1) from the servers; classify, when not
// nil, sorts the notifications into classes. Proxy.WireCounts reads them.
func CountWire(classify NotificationClassifier) ProxyOption {
	return func(p *Proxy) { p.wire = &wireCounter{classify: classify} }
}

// NewProxy starts a proxy on 127.0.0.1:0 that forwards every connection to
// target (host:port). It runs until Close or until ctx ends.
func NewProxy(ctx context.Context, target string, opts ...ProxyOption) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("proxy target %q: want host:port: %w", target, err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy for %s: listen: %w", target, err)
	}
	thaw := make(chan struct{})
	close(thaw)
	p := &Proxy{target: target, listener: listener, thaw: thaw, links: map[*link]struct{}{}}
	for _, opt := range opts {
		opt(p)
	}
	p.wg.Add(1)
	go p.acceptLoop()
	p.mu.Lock() // Close, run by AfterFunc, must see stopContext set
	p.stopContext = context.AfterFunc(ctx, func() { p.Close() })
	p.mu.Unlock()
	return p, nil
}

// Addr returns the address clients connect to.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// Target returns the server address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return // closed
		}
		// Register the link before dialling the server, so that a Sever
		// from now on closes it.
		l := &link{client: client, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.close()
			return
		}
		p.links[l] = struct{}{}
		p.accepted.Add(1)
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(l)
	}
}

func (p *Proxy) serve(l *link) {
	defer p.wg.Done()
	defer func() {
		l.close()
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	// A refused dial (server down) closes the client's connection, which
	// the client sees as it would see the refusal.
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !l.setServer(server) {
		return
	}
	var fromClient, fromServer *frameScanner // nil unless counting
	if p.wire != nil {
		fromClient = &frameScanner{keep: requestHeadLen, frame: p.wire.clientFrame}
		fromServer = &frameScanner{keep: notificationHeadLen, frame: p.wire.serverFrame}
	}
	var pipes sync.WaitGroup
	pipes.Add(2)
	go func() { defer pipes.Done(); p.pipe(l, l.client, server, &p.clientBytes, fromClient) }()
	go func() { defer pipes.Done(); p.pipe(l, server, l.client, &p.serverBytes, fromServer) }()
	pipes.Wait()
}

// pipe copies src to dst, holding each chunk (and the final close) while the
// proxy is frozen, and feeds what it reads to frames when not nil. It returns
// when either end fails or the link is closed.
func (p *Proxy) pipe(l *link, src, dst net.Conn, counter *atomic.Int64, frames *frameScanner) {
	buf := make([]byte, 32*1024)
	for {
		n, readErr := src.Read(buf)
		counter.Add(int64(n))
		if frames != nil {
			frames.feed(buf[:n])
		}
		if !p.waitThaw(l) {
			return
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				l.close()
				return
			}
		}
		if readErr != nil {
			l.close()
			return
		}
	}
}

// waitThaw blocks while the proxy is frozen; it returns false when the link
// is closed meanwhile.
func (p *Proxy) waitThaw(l *link) bool {
	for {
		p.mu.Lock()
		thaw := p.thaw
		p.mu.Unlock()
		select {
		case <-l.done:
			return false
		case <-thaw:
			// A Freeze may have come between reading p.thaw and now; check.
			p.mu.Lock()
			frozen := p.frozen
			p.mu.Unlock()
			if !frozen {
				return true
			}
		}
	}
}

// Freeze stops forwarding in both directions on every connection, current
// and future, without closing any. Idempotent.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen = true
		p.thaw = make(chan struct{})
	}
}

// Unfreeze resumes forwarding; held bytes and closes are delivered.
// Idempotent.
func (p *Proxy) Unfreeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unfreezeLocked()
}

func (p *Proxy) unfreezeLocked() {
	if p.frozen {
		p.frozen = false
		close(p.thaw)
	}
}

// Frozen reports whether the proxy is frozen.
func (p *Proxy) Frozen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.frozen
}

// Sever closes every current connection, dropping bytes held by a freeze,
// and lifts the freeze: the proxy keeps accepting, so the client reconnects
// at once. It returns how many connections it closed.
func (p *Proxy) Sever() int {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
		delete(p.links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
	p.Unfreeze()
	return len(links)
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() ProxyStats {
	p.mu.Lock()
	open := len(p.links)
	p.mu.Unlock()
	return ProxyStats{
		Accepted:    p.accepted.Load(),
		Open:        open,
		ClientBytes: p.clientBytes.Load(),
		ServerBytes: p.serverBytes.Load(),
	}
}

// WireCounts returns what the proxy has counted of ZooKeeper's protocol since
// it started (zero without CountWire). Subtract an earlier value for a window.
func (p *Proxy) WireCounts() WireCounts {
	if p.wire == nil {
		return WireCounts{}
	}
	return p.wire.counts()
}

// Close stops accepting, closes every connection and waits for the proxy's
// goroutines to end. Idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	stopContext := p.stopContext
	p.mu.Unlock()
	stopContext()
	err := p.listener.Close()
	p.Sever()
	p.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close proxy for %s: %w", p.target, err)
	}
	return nil
}
