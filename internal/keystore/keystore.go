// Package keystore reads the key and trust stores that ZooKeeper 3.8 reads for TLS on its secure client port
// (ssl.keyStore.* and ssl.trustStore.*, X509Util): PKCS12, JKS and PEM files, the type given or else taken
// from the file name's extension (.p12 and .pfx PKCS12, .jks JKS, .pem PEM), as 3.8's KeyStoreFileType does.
// It turns them into a crypto/tls server configuration with 3.8's defaults: TLSv1.2, and client certificates
// required (ssl.clientAuth=need) and verified against the trust store.
package keystore

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Settings are a server's TLS settings, as zoo.cfg's ssl.* keys (or the zookeeper.ssl.* system properties)
// give them; empty strings are absent.
type Settings struct {
	KeyStore, KeyStorePassword, KeyStoreType       string // ssl.keyStore.location, .password, .type
	TrustStore, TrustStorePassword, TrustStoreType string // ssl.trustStore.location, .password, .type
	// ClientAuth is ssl.clientAuth: need (the default), want or none.
	ClientAuth string
	// Protocol is ssl.protocol (TLSv1.2 by default, as in 3.8.0); EnabledProtocols is ssl.enabledProtocols,
	// comma-separated (the protocol alone by default).
	Protocol, EnabledProtocols string
}

// storeType returns the store's type: typ if given (case-insensitive), else the one its extension names.
func storeType(typ, path string) (string, error) {
	if typ != "" {
		switch t := strings.ToUpper(typ); t {
		case "PKCS12", "JKS", "PEM":
			return t, nil
		}
		return "", fmt.Errorf("store type %q: want PKCS12, JKS or PEM", typ)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".p12", ".pfx":
		return "PKCS12", nil
	case ".jks":
		return "JKS", nil
	case ".pem":
		return "PEM", nil
	}
	return "", fmt.Errorf("%s: no store type given and none known for its extension (give ssl.*.type: PKCS12, JKS or PEM)", path)
}

// LoadKeyPair reads the server's private key and certificate chain from a key store.
func LoadKeyPair(path, password, typ string) (tls.Certificate, error) {
	t, err := storeType(typ, path)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("key store: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("key store: %w", err)
	}
	var cert tls.Certificate
	switch t {
	case "PEM":
		// 3.8 decrypts the key with the password when one is given, and reads it as it is otherwise (measured:
		// an unencrypted key with a password fails, and every TLS connection is closed).
		switch encrypted := bytes.Contains(data, []byte("ENCRYPTED PRIVATE KEY")); {
		case encrypted:
			return cert, fmt.Errorf("key store %s: an encrypted PEM private key, which zkmodel cannot decrypt: give it unencrypted without a password, or a PKCS12 or JKS key store", path)
		case password != "":
			return cert, fmt.Errorf("key store %s: a password for a PEM key store whose key is not encrypted: ZooKeeper 3.8 would try to decrypt the key with it and fail every TLS connection; leave ssl.keyStore.password out", path)
		}
		cert, err = tls.X509KeyPair(data, data)
	case "PKCS12":
		var key any
		var leaf *x509.Certificate
		var chain []*x509.Certificate
		key, leaf, chain, err = pkcs12.DecodeChain(data, password)
		if err == nil {
			cert = tls.Certificate{PrivateKey: key, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
			for _, c := range chain {
				cert.Certificate = append(cert.Certificate, c.Raw)
			}
		}
	case "JKS":
		cert, err = jksKeyPair(data, password)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("key store %s (%s): %w", path, t, err)
	}
	return cert, nil
}

// jksKeyPair reads the first private key entry of a JKS store, its key protected by the store's password (as
// ZooKeeper protects it).
func jksKeyPair(data []byte, password string) (tls.Certificate, error) {
	ks := jks.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return tls.Certificate{}, err
	}
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		entry, err := ks.GetPrivateKeyEntry(alias, []byte(password))
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("entry %q: %w", alias, err)
		}
		key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("entry %q: %w", alias, err)
		}
		cert := tls.Certificate{PrivateKey: key}
		for _, c := range entry.CertificateChain {
			cert.Certificate = append(cert.Certificate, c.Content)
		}
		if len(cert.Certificate) == 0 {
			return tls.Certificate{}, fmt.Errorf("entry %q has no certificate", alias)
		}
		return cert, nil
	}
	return tls.Certificate{}, errors.New("no private key entry")
}

// LoadTrust reads the certificates a trust store trusts.
func LoadTrust(path, password, typ string) (*x509.CertPool, error) {
	t, err := storeType(typ, path)
	if err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	pool := x509.NewCertPool()
	var certs []*x509.Certificate
	switch t {
	case "PEM":
		for rest := data; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type == "CERTIFICATE" {
				c, perr := x509.ParseCertificate(b.Bytes)
				if perr != nil {
					return nil, fmt.Errorf("trust store %s: %w", path, perr)
				}
				certs = append(certs, c)
			}
		}
	case "PKCS12":
		certs, err = pkcs12.DecodeTrustStore(data, password)
	case "JKS":
		ks := jks.New()
		if err = ks.Load(bytes.NewReader(data), []byte(password)); err == nil {
			for _, alias := range ks.Aliases() {
				if e, terr := ks.GetTrustedCertificateEntry(alias); terr == nil {
					c, perr := x509.ParseCertificate(e.Certificate.Content)
					if perr != nil {
						return nil, fmt.Errorf("trust store %s: entry %q: %w", path, alias, perr)
					}
					certs = append(certs, c)
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("trust store %s (%s): %w", path, t, err)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("trust store %s (%s): no certificate", path, t)
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// ServerConfig is the crypto/tls configuration of a secure client port with the settings.
func ServerConfig(s Settings) (*tls.Config, error) {
	if s.KeyStore == "" {
		return nil, errors.New("a secure client port needs a key store (ssl.keyStore.location)")
	}
	cert, err := LoadKeyPair(s.KeyStore, s.KeyStorePassword, s.KeyStoreType)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if s.TrustStore != "" {
		if cfg.ClientCAs, err = LoadTrust(s.TrustStore, s.TrustStorePassword, s.TrustStoreType); err != nil {
			return nil, err
		}
	}
	switch strings.ToLower(s.ClientAuth) {
	case "", "need":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "want":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "none":
		cfg.ClientAuth = tls.NoClientCert
	default:
		return nil, fmt.Errorf("ssl.clientAuth=%q: want need, want or none", s.ClientAuth)
	}
	protocols := s.EnabledProtocols
	if protocols == "" {
		protocols = s.Protocol
	}
	if protocols == "" {
		protocols = "TLSv1.2"
	}
	for _, p := range strings.Split(protocols, ",") {
		var v uint16
		switch strings.TrimSpace(p) {
		case "TLSv1.2":
			v = tls.VersionTLS12
		case "TLSv1.3":
			v = tls.VersionTLS13
		default:
			return nil, fmt.Errorf("ssl protocol %q: want TLSv1.2 or TLSv1.3", p)
		}
		if cfg.MinVersion == 0 || v < cfg.MinVersion {
			cfg.MinVersion = v
		}
		cfg.MaxVersion = max(cfg.MaxVersion, v)
	}
	return cfg, nil
}
