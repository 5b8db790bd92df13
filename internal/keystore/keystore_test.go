package keystore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// TestStores: a PKCS12 and a PEM key store read into the same key pair, the type from the extension; bad input
// (a wrong password, an unknown extension, a PEM key store with a password, a missing file) is a clear error.
func TestStores(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "s"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	dir := t.TempDir()
	p12, err := pkcs12.Modern.Encode(key, cert, nil, "pw")
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	pemData := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	files := map[string][]byte{"ks.p12": p12, "ks.pem": pemData, "ks.bin": p12}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ file, password string }{{"ks.p12", "pw"}, {"ks.pem", ""}, {"ks.bin", "pw"}} {
		typ := ""
		if tc.file == "ks.bin" {
			typ = "pkcs12"
		}
		got, err := LoadKeyPair(filepath.Join(dir, tc.file), tc.password, typ)
		if err != nil || len(got.Certificate) != 1 || string(got.Certificate[0]) != string(der) {
			t.Fatalf("LoadKeyPair(%s): %v, %d certificates", tc.file, err, len(got.Certificate))
		}
	}
	for _, tc := range []struct{ file, password, typ, want string }{
		{"ks.p12", "wrong", "", "PKCS12"},
		{"ks.bin", "pw", "", "no store type given"},
		{"ks.pem", "pw", "", "leave ssl.keyStore.password out"},
		{"missing.p12", "pw", "", "no such file"},
		{"ks.p12", "pw", "BCFKS", "want PKCS12, JKS or PEM"},
	} {
		if _, err := LoadKeyPair(filepath.Join(dir, tc.file), tc.password, tc.typ); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadKeyPair(%s, %q, %q): %v, want an error saying %q", tc.file, tc.password, tc.typ, err, tc.want)
		}
	}
	cfg, err := ServerConfig(Settings{KeyStore: filepath.Join(dir, "ks.p12"), KeyStorePassword: "pw"})
	if err != nil || cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.MinVersion != tls.VersionTLS12 || cfg.MaxVersion != tls.VersionTLS12 {
		t.Fatalf("ServerConfig with 3.8's defaults: %+v, %v; want client certificates required and TLSv1.2", cfg, err)
	}
}
