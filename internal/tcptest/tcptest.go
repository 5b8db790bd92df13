// Package tcptest serves throwaway TCP handlers on loopback for tests: an echo server, a fake
// four-letter-word answerer.
package tcptest

import (
	"net"
	"testing"
)

// Serve listens on 127.0.0.1 at a free port, calls handle for every connection in a goroutine of its own
// and closes the connection when handle returns. The listener closes when t ends. It returns the address.
func Serve(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("tcptest: listen on 127.0.0.1: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l.Addr().String()
}
