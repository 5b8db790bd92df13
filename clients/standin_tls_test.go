package clients

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/internal/evqueue"
	"github.com/zkmodel/zkmodel/internal/pyclients"
	"github.com/zkmodel/zkmodel/internal/tlstest"
	"github.com/zkmodel/zkmodel/realzk"
)

// tlsConnect is a conformance Target.Connect: go-zookeeper over TLS (its dialer option) to addr.
func tlsConnect(addr string, cfg *tls.Config) func(t *testing.T, timeout time.Duration) (conformance.Conn, <-chan zk.Event) {
	return func(t *testing.T, timeout time.Duration) (conformance.Conn, <-chan zk.Event) {
		t.Helper()
		dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, cfg)
		}
		rec := evqueue.NewSession()
		conn, events, err := zk.Connect([]string{addr}, timeout, zk.WithDialer(dial), zk.WithLogInfo(false), zk.WithLogger(quietLogger{}), rec.Option())
		if err != nil {
			t.Fatalf("connect over TLS to %s: %v", addr, err)
		}
		events = rec.Follow(events)
		deadline := time.Now().Add(60 * time.Second)
		for conn.State() != zk.StateHasSession {
			if time.Now().After(deadline) {
				conn.Close()
				t.Fatalf("no session over TLS from %s after 60s (state %s)", addr, conn.State())
			}
			time.Sleep(time.Millisecond)
		}
		return conn, events
	}
}

// tlsFacts returns what a TLS client sees of the secure port at addr: the protocol version with a client
// certificate, and whether a handshake without one fails.
func tlsFacts(t *testing.T, addr string, p *tlstest.PKI) string {
	t.Helper()
	handshake := func(cfg *tls.Config) (tls.ConnectionState, error) {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
		if err != nil {
			return tls.ConnectionState{}, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		// TLS 1.2 reports a refused client certificate in the handshake, 1.3 at the first read.
		if _, err := c.Write([]byte("ruok")); err != nil {
			return c.ConnectionState(), err
		}
		_, err = c.Read(make([]byte, 1))
		return c.ConnectionState(), err
	}
	var out strings.Builder
	st, err := handshake(&tls.Config{RootCAs: p.Pool, Certificates: []tls.Certificate{p.Client}})
	fmt.Fprintf(&out, "with a client certificate: handshake complete %v, %s\n", st.HandshakeComplete, tls.VersionName(st.Version))
	_ = err // ruok over TLS: the answer (or none) is not what this checks
	_, err = handshake(&tls.Config{RootCAs: p.Pool})
	fmt.Fprintf(&out, "without one: refused %v\n", err != nil)
	return out.String()
}

// x509Facts returns what go-zookeeper over TLS with the client certificate sees of the x509 scheme at addr:
// reading a node whose ACL is x509 with its own subject, and one with another subject.
func x509Facts(t *testing.T, addr string, cfg *tls.Config) string {
	t.Helper()
	conn, _ := tlsConnect(addr, cfg)(t, 10*time.Second)
	defer conn.Close()
	var out strings.Builder
	for _, dn := range []string{clientDN, "CN=other"} {
		path := "/x509-" + strings.ToLower(strings.Fields(strings.ReplaceAll(dn, "=", " "))[1])
		_, err := conn.Create(path, []byte("x"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: dn}})
		fmt.Fprintf(&out, "create x509:%s: %v", dn, err)
		_, _, err = conn.Get(path)
		fmt.Fprintf(&out, ", get: %v\n", err)
	}
	return out.String()
}

// TestStandInTLS: a standalone server with a secure client port (the Netty connection factory, key and trust
// stores in zoo.cfg, each of PKCS12, PEM and JKS, the type taken from the file's extension) serves go-zookeeper
// over TLS alike on a real ZooKeeper 3.8 (realzk, with Debian's netty-codec.jar, which its zookeeper.jar's
// class path leaves out) and on the stand-in started from the same zoo.cfg lines: TLSv1.2, a client
// certificate required, the refused-operation rules passing over TLS, and the certificate's subject the
// connection's x509 identity (an x509 ACL with it lets go-zookeeper read, one with another subject does not).
func TestStandInTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*scenarioTimeout)
	t.Cleanup(cancel)
	p := tlstest.NewPKI(t)
	clientTLS := &tls.Config{RootCAs: p.Pool, Certificates: []tls.Certificate{p.Client}}
	const want = "with a client certificate: handshake complete true, TLS 1.2\nwithout one: refused true\n"
	// The certificate's subject is the connection's x509 identity (measured on the real server).
	const wantX509 = "create x509:" + clientDN + ": <nil>, get: <nil>\ncreate x509:CN=other: <nil>, get: zk: not authenticated\n"
	certFile, keyFile, caFile := p.ClientFiles(t, t.TempDir())
	// What kazoo's use_ssl gets (measured on the real server; the stand-in is held to it).
	const wantKazoo = "with a client certificate: create and get b'over tls', version 0\nexists after delete: False\n" +
		"without a client certificate: no session\n"
	kazoo := func(t *testing.T, addr string) {
		t.Helper()
		out, err := pyclients.Command(ctx, filepath.Join("python", "kazoo_tls.py"), addr, certFile, keyFile, caFile).Output()
		if err != nil || string(out) != wantKazoo {
			t.Errorf("kazoo use_ssl on %s: %v\n%s\nwant\n%s", addr, err, out, wantKazoo)
		}
	}
	for _, typ := range []string{"PKCS12", "PEM", "JKS"} {
		t.Run(typ+"/real", func(t *testing.T) {
			port := freePort(t)
			lines := p.Stores(t, t.TempDir(), typ, port)
			extra := map[string]string{}
			for _, l := range lines {
				k, v, _ := strings.Cut(l, "=")
				extra[k] = v
			}
			e, err := realzk.Start(ctx, realzk.Config{Servers: 1, ExtraConfig: extra, ClassPath: append(realzk.DefaultClassPath, "/usr/share/java/netty-codec.jar")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			conformance.Run(t, conformance.Target{Connect: tlsConnect(addr, clientTLS), Only: []string{"refused/"}})
			if got := tlsFacts(t, addr, p); got != want {
				t.Errorf("real: %s, want %s", got, want)
			}
			if got := x509Facts(t, addr, clientTLS); got != wantX509 {
				t.Errorf("real: %s, want %s", got, wantX509)
			}
			if typ == "PKCS12" {
				kazoo(t, addr)
			}
		})
		t.Run(typ+"/stand-in", func(t *testing.T) {
			port := freePort(t)
			startCluster(ctx, t, clusterConfig{servers: 1, extra: p.Stores(t, t.TempDir(), typ, port)})
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			conformance.Run(t, conformance.Target{Connect: tlsConnect(addr, clientTLS), Only: []string{"refused/"}})
			if got := tlsFacts(t, addr, p); got != want {
				t.Errorf("stand-in: %s, want %s", got, want)
			}
			if got := x509Facts(t, addr, clientTLS); got != wantX509 {
				t.Errorf("stand-in: %s, want %s", got, wantX509)
			}
			if typ == "PKCS12" {
				kazoo(t, addr)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
