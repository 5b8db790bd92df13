package main

import (
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/internal/tlstest"
)

// TestServeTLS: `zkmodel serve -secure-addr` serves go-zookeeper over TLS (its dialer option) from a PKCS12 key
// store, with 3.8's defaults (TLSv1.2, a client certificate required: clients.TestStandInTLS measures them on
// a real server), the client certificate's subject the x509 identity; POST /stop closes a server's TLS port with its plain one and /start opens both again; TLS
// flags without -secure-addr, or a bad key store, are a usage error.
func TestServeTLS(t *testing.T) {
	p := tlstest.NewPKI(t)
	settings := map[string]string{}
	for _, l := range p.Stores(t, t.TempDir(), "PKCS12", 1) {
		k, v, _ := strings.Cut(l, "=")
		settings[k] = v
	}
	tlsFlags := []string{"-keystore", settings["ssl.keyStore.location"], "-keystore-password", settings["ssl.keyStore.password"],
		"-truststore", settings["ssl.trustStore.location"], "-truststore-password", settings["ssl.trustStore.password"]}
	s := serveInProcess(t, append([]string{"-addr", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0", "-secure-addr", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0"}, tlsFlags...)...)
	secure := strings.Split(s.SecureAddr, ",")
	if len(secure) != 3 {
		t.Fatalf("startup secureAddr %q: want three addresses", s.SecureAddr)
	}
	withCert := &tls.Config{RootCAs: p.Pool, Certificates: []tls.Certificate{p.Client}}
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, withCert)
	}
	conn, events, err := zk.Connect(secure[:1], 4*time.Second, zk.WithDialer(dial), zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	waitState(t, events, zk.StateHasSession)
	if _, err := conn.Create("/tls", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create over TLS: %v", err)
	}
	// The client certificate's subject is the connection's x509 identity (clients.TestStandInTLSJava measures it).
	for dn, want := range map[string]error{`CN=client,OU=clients,O=zkmodel\, tests`: nil, "CN=other": zk.ErrNoAuth} {
		path := "/x509-" + strings.ToLower(dn[3:8])
		if _, err := conn.Create(path, nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: dn}}); err != nil {
			t.Fatalf("create %s with ACL x509:%s: %v", path, dn, err)
		}
		if _, _, err := conn.Get(path); err != want {
			t.Errorf("get %s (ACL x509:%s) over TLS with the client certificate: %v, want %v", path, dn, err, want)
		}
	}
	handshake := func(addr string, cfg *tls.Config) (uint16, error) {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte{0, 0, 0, 0}); err != nil {
			return 0, err
		}
		_, err = c.Read(make([]byte, 1))
		return c.ConnectionState().Version, err
	}
	if v, _ := handshake(secure[1], withCert); v != tls.VersionTLS12 {
		t.Fatalf("TLS version %s, want TLS 1.2", tls.VersionName(v))
	}
	if _, err := handshake(secure[1], &tls.Config{RootCAs: p.Pool}); err == nil {
		t.Fatal("a TLS client without a certificate was served")
	}
	if code, body := call(t, "POST", s.Control+"/stop?server=1"); code != http.StatusOK {
		t.Fatalf("POST /stop?server=1: %d %s", code, body)
	}
	if c, err := net.DialTimeout("tcp", secure[1], 2*time.Second); err == nil {
		c.Close()
		t.Fatalf("server 1's TLS port %s accepts after /stop", secure[1])
	}
	if code, body := call(t, "POST", s.Control+"/start?server=1"); code != http.StatusOK {
		t.Fatalf("POST /start?server=1: %d %s", code, body)
	}
	if v, err := handshake(secure[1], withCert); v != tls.VersionTLS12 {
		t.Fatalf("server 1's TLS port after /start: %v (version %s)", err, tls.VersionName(v))
	}
	for _, args := range [][]string{
		append([]string{"serve"}, tlsFlags...),
		{"serve", "-secure-addr", "127.0.0.1:0", "-keystore", "/nonexistent.p12"},
		{"serve", "-addr", "127.0.0.1:0,127.0.0.1:0", "-secure-addr", "127.0.0.1:0", "-keystore", settings["ssl.keyStore.location"]},
	} {
		if _, err := parseArgs(args, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "usage") {
			t.Errorf("parseArgs(%q): %v, want a usage error", args, err)
		}
	}
}
