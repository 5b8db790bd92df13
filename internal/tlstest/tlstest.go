// Package tlstest makes TLS certificates and ZooKeeper key and trust stores for tests: a CA, a server
// certificate for 127.0.0.1 and a client certificate, written as PKCS12, PEM or JKS stores with the zoo.cfg
// lines of a secure client port that reads them.
package tlstest

import (
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
	"testing"
	"time"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// PKI is a test CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, both signed by
// the CA. The client's subject is O=zkmodel\, tests, OU=clients, CN=client (a comma in a value, three
// relative names: what the x509 scheme's identity has to get right).
type PKI struct {
	ca, server, client *x509.Certificate
	serverKey          *ecdsa.PrivateKey
	// Client is the client's certificate and key, for a tls.Config's Certificates; Pool holds the CA, for its
	// RootCAs.
	Client tls.Certificate
	Pool   *x509.CertPool
}

// NewPKI makes the certificates, valid for a day.
func NewPKI(t testing.TB) *PKI {
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
	client, clientKey := issue(&x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "client", OrganizationalUnit: []string{"clients"}, Organization: []string{"zkmodel, tests"}}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, caKey)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &PKI{ca: ca, server: server, client: client, serverKey: serverKey, Pool: pool,
		Client: tls.Certificate{Certificate: [][]byte{client.Raw, ca.Raw}, PrivateKey: clientKey}}
}

// Password is the password of the stores Stores writes (but a PEM key store's: it has none).
const Password = "store-secret"

// Stores writes the server's key store and the trust store (the CA) as typ (PKCS12, PEM or JKS) into dir and
// returns the zoo.cfg lines of a secure client port on port that use them.
func (p *PKI) Stores(t testing.TB, dir, typ string, port int) []string {
	t.Helper()
	password := Password
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

func storeJKS(t testing.TB, ks jks.KeyStore, password string) []byte {
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

// ClientFiles writes the client's certificate, its key and the CA as PEM files into dir, for clients that read
// files (kazoo's certfile, keyfile and ca), and returns their paths.
func (p *PKI) ClientFiles(t testing.TB, dir string) (cert, key, ca string) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(p.Client.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, ca = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key"), filepath.Join(dir, "ca.pem")
	for path, block := range map[string]*pem.Block{
		cert: {Type: "CERTIFICATE", Bytes: p.client.Raw},
		key:  {Type: "PRIVATE KEY", Bytes: keyDER},
		ca:   {Type: "CERTIFICATE", Bytes: p.ca.Raw},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key, ca
}

// ClientStores writes the client's key store (its certificate and key) and a trust store (the CA) as PKCS12
// files into dir, for the Java client's zookeeper.ssl.keyStore.* and zookeeper.ssl.trustStore.*, and returns
// their paths; both have the password Password.
func (p *PKI) ClientStores(t testing.TB, dir string) (keyStore, trustStore string) {
	t.Helper()
	ks, err := pkcs12.Modern.Encode(p.Client.PrivateKey, p.client, []*x509.Certificate{p.ca}, Password)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{p.ca}, Password)
	if err != nil {
		t.Fatal(err)
	}
	keyStore, trustStore = filepath.Join(dir, "client-keystore.p12"), filepath.Join(dir, "client-truststore.p12")
	for path, data := range map[string][]byte{keyStore: ks, trustStore: ts} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return keyStore, trustStore
}
