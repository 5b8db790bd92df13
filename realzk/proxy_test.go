package realzk

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/zkmodel/zkmodel/internal/tcptest"
)

// echoServer accepts connections on 127.0.0.1 and echoes what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	return tcptest.Serve(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

// roundTrip writes msg to c and reads len(msg) bytes back, waiting at most
// limit.
func roundTrip(c net.Conn, msg string, limit time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	return readN(c, len(msg), limit)
}

func readN(c net.Conn, n int, limit time.Duration) (string, error) {
	if err := c.SetReadDeadline(time.Now().Add(limit)); err != nil {
		return "", err
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func TestProxyFreezeUnfreezeSever(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	p, err := NewProxy(ctx, echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "ping", 5*time.Second); err != nil || got != "ping" {
		t.Fatalf("through the proxy: %q, %v; want the echo", got, err)
	}

	p.Freeze()
	if !p.Frozen() {
		t.Fatalf("Frozen() = false after Freeze")
	}
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	// Nothing comes back while frozen (the connection stays open: the read
	// times out rather than failing).
	if got, err := readN(c, 4, 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read while frozen: %q, %v; want a timeout", got, err)
	}
	p.Unfreeze()
	if got, err := readN(c, 4, 5*time.Second); err != nil || got != "held" {
		t.Fatalf("after Unfreeze: %q, %v; want the held bytes echoed", got, err)
	}

	p.Freeze() // Sever also lifts a freeze
	if n := p.Sever(); n != 1 {
		t.Fatalf("Sever closed %d connections, want 1", n)
	}
	if _, err := readN(c, 1, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("read after Sever: %v, want EOF", err)
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("new connection after Sever: %v", err)
	}
	defer c2.Close()
	if got, err := roundTrip(c2, "again", 5*time.Second); err != nil || got != "again" {
		t.Fatalf("new connection after Sever: %q, %v; want the echo", got, err)
	}
	stats := p.Stats()
	if stats.Accepted != 2 || stats.Open != 1 || stats.ClientBytes != int64(len("pingheldagain")) || stats.ServerBytes != stats.ClientBytes {
		t.Errorf("Stats() = %+v, want 2 accepted, 1 open, 13 bytes each way", stats)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := readN(c2, 1, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Errorf("read after Close: %v, want EOF", err)
	}
	if c3, err := net.Dial("tcp", p.Addr()); err == nil {
		c3.Close()
		t.Errorf("proxy still accepts after Close")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestProxyClosesWithContextAndOnDeadTarget(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	dead := net.JoinHostPort("127.0.0.1", itoa(ports[0]))
	p, err := NewProxy(ctx, dead)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// A client of a proxy whose server is down sees its connection closed.
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := readN(c, 1, 10*time.Second); !errors.Is(err, io.EOF) {
		t.Errorf("read through a proxy to a dead server: %v, want EOF", err)
	}

	if _, err := NewProxy(ctx, "no-port"); err == nil {
		t.Errorf("NewProxy accepted a target without a port")
	}

	pctx, cancel := contextWithCancel(t)
	q, err := NewProxy(pctx, echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", q.Addr())
		if err != nil {
			break // closed by the context
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("proxy still accepts 10s after its context ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return ctx, cancel
}
