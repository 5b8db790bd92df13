package clients

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/internal/evqueue"
	"github.com/zkmodel/zkmodel/realzk"
)

// tlsPKI is a test CA, a server certificate for 127.0.0.1 and a client certificate, both signed by the CA.
type tlsPKI struct {
	ca, server, client *x509.Certificate
	serverKey          *ecdsa.PrivateKey
	clientPair         tls.Certificate
	pool               *x509.CertPool
}

func newTLSPKI(t *testing.T) *tlsPKI {
	t.Helper()
	issue := func(tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c, key
	}
	now := time.Now()
	ca, caKey := issue(&x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zkmodel test CA"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil, nil)
	server, serverKey := issue(&x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}, ca, caKey)
	client, clientKey := issue(&x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "client"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, caKey)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &tlsPKI{ca: ca, server: server, client: client, serverKey: serverKey, pool: pool,
		clientPair: tls.Certificate{Certificate: [][]byte{client.Raw, ca.Raw}, PrivateKey: clientKey}}
}

// stores writes the server's key store and the trust store (the CA) as typ (PKCS12, PEM or JKS) into dir and
// returns the zoo.cfg lines of a secure client port on port that use them, with password "store-secret".
func (p *tlsPKI) stores(t *testing.T, dir, typ string, port int) []string {
	t.Helper()
	const password = "store-secret"
	keyDER, err := x509.MarshalPKCS8PrivateKey(p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	var keyStore, trustStore []byte
	ext := map[string]string{"PKCS12": ".p12", "PEM": ".pem", "JKS": ".jks"}[typ]
	switch typ {
	case "PEM":
		keyStore = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
		for _, c := range []*x509.Certificate{p.server, p.ca} {
			keyStore = append(keyStore, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
		}
		trustStore = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.ca.Raw})
	case "PKCS12":
		if keyStore, err = pkcs12.Modern.Encode(p.serverKey, p.server, []*x509.Certificate{p.ca}, password); err != nil {
			t.Fatal(err)
		}
		if trustStore, err = pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{p.ca}, password); err != nil {
			t.Fatal(err)
		}
	case "JKS":
		now := time.Now()
		ks := jks.New()
		if err := ks.SetPrivateKeyEntry("server", jks.PrivateKeyEntry{CreationTime: now, PrivateKey: keyDER,
			CertificateChain: []jks.Certificate{{Type: "X509", Content: p.server.Raw}, {Type: "X509", Content: p.ca.Raw}}}, []byte(password)); err != nil {
			t.Fatal(err)
		}
		keyStore = storeJKS(t, ks, password)
		ts := jks.New()
		if err := ts.SetTrustedCertificateEntry("ca", jks.TrustedCertificateEntry{CreationTime: now, Certificate: jks.Certificate{Type: "X509", Content: p.ca.Raw}}); err != nil {
			t.Fatal(err)
		}
		trustStore = storeJKS(t, ts, password)
	}
	ksPath, tsPath := filepath.Join(dir, "keystore"+ext), filepath.Join(dir, "truststore"+ext)
	for path, data := range map[string][]byte{ksPath: keyStore, tsPath: trustStore} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// No ssl.*.type: 3.8 takes the type from the extension, as the stand-in does. A PEM key store has no
	// password: 3.8 decrypts the key with it when one is given (measured: an unencrypted key with a password
	// fails, "Failed to create KeyManager ... overrun", and every TLS connection is closed).
	lines := []string{fmt.Sprintf("secureClientPort=%d", port), "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"ssl.keyStore.location=" + ksPath, "ssl.trustStore.location=" + tsPath}
	if typ != "PEM" {
		lines = append(lines, "ssl.keyStore.password="+password, "ssl.trustStore.password="+password)
	}
	return lines
}

func storeJKS(t *testing.T, ks jks.KeyStore, password string) []byte {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "jks")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ks.Store(f, []byte(password)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

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
func tlsFacts(t *testing.T, addr string, p *tlsPKI) string {
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
	st, err := handshake(&tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{p.clientPair}})
	fmt.Fprintf(&out, "with a client certificate: handshake complete %v, %s\n", st.HandshakeComplete, tls.VersionName(st.Version))
	_ = err // ruok over TLS: the answer (or none) is not what this checks
	_, err = handshake(&tls.Config{RootCAs: p.pool})
	fmt.Fprintf(&out, "without one: refused %v\n", err != nil)
	return out.String()
}

// TestStandInTLS: a standalone server with a secure client port (the Netty connection factory, key and trust
// stores in zoo.cfg, each of PKCS12, PEM and JKS, the type taken from the file's extension) serves go-zookeeper
// over TLS alike on a real ZooKeeper 3.8 (realzk, with Debian's netty-codec.jar, which its zookeeper.jar's
// class path leaves out) and on the stand-in started from the same zoo.cfg lines: TLSv1.2, a client
// certificate required, the refused-operation rules passing over TLS.
func TestStandInTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*scenarioTimeout)
	t.Cleanup(cancel)
	p := newTLSPKI(t)
	clientTLS := &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{p.clientPair}}
	const want = "with a client certificate: handshake complete true, TLS 1.2\nwithout one: refused true\n"
	for _, typ := range []string{"PKCS12", "PEM", "JKS"} {
		t.Run(typ+"/real", func(t *testing.T) {
			port := freePort(t)
			lines := p.stores(t, t.TempDir(), typ, port)
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
		})
		t.Run(typ+"/stand-in", func(t *testing.T) {
			port := freePort(t)
			startCluster(ctx, t, clusterConfig{servers: 1, extra: p.stores(t, t.TempDir(), typ, port)})
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			conformance.Run(t, conformance.Target{Connect: tlsConnect(addr, clientTLS), Only: []string{"refused/"}})
			if got := tlsFacts(t, addr, p); got != want {
				t.Errorf("stand-in: %s, want %s", got, want)
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
