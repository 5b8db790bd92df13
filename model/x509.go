package model

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// WithX509 gives the server what a secure client port gives ZooKeeper 3.8 (its Netty connection factory
// registers X509AuthenticationProvider): the x509 ACL scheme. An entry x509:DN is accepted when DN is a
// distinguished name Java parses (else InvalidACL) and matches a connection whose client certificate has that
// subject, as X500Principal.getName writes it (X509ID); the auth scheme expands to it; whoAmI lists it; an auth
// packet of scheme x509 succeeds on such a connection (its identity stays as it was) and is AUTHFAILED on any
// other. A TLS connection's certificate reaches the server through WriteTLSPeer. Measured on 3.8 with
// ssl.clientAuth need (the default), want and none: a client certificate gives the identity x509:SUBJECT at
// once; with none the server asks for no certificate, and a connection has no x509 identity; on a plain port
// x509 ACLs are valid but match nobody; a server without a secure port refuses them (InvalidACL).
func WithX509() Option { return func(c *config) { c.x509 = true } }

// tlsPeerMagic starts the record WriteTLSPeer writes: no connect request starts so (read as a frame's length
// it is over 5 MB, past any server's limit) and no four-letter word (they are letters).
const tlsPeerMagic = "\x00TLS"

// WriteTLSPeer tells the server, at the start of a connection to one of its Listen addresses, what the TLS
// connection it carries came with: a gateway that ends TLS in front of the server (zkmodel serve, the
// stand-in) writes it before the client's first byte. state is the client connection's, its handshake
// complete; the subject of its first peer certificate, if any, is the connection's x509 identity (WithX509).
func WriteTLSPeer(w io.Writer, state tls.ConnectionState) error {
	rec := []byte(tlsPeerMagic)
	var id string
	if len(state.PeerCertificates) > 0 {
		var err error
		if id, err = X509ID(state.PeerCertificates[0]); err != nil {
			return fmt.Errorf("model: the TLS client's certificate: %w", err)
		}
		rec = append(rec, 1)
	} else {
		rec = append(rec, 0)
	}
	rec = binary.BigEndian.AppendUint16(rec, uint16(len(id)))
	rec = append(rec, id...)
	if len(id) > 0xffff {
		return errors.New("model: the TLS client's certificate subject is longer than 64 KiB")
	}
	if _, err := w.Write(rec); err != nil {
		return fmt.Errorf("model: write the TLS client's identity: %w", err)
	}
	return nil
}

// readTLSPeer reads the rest of WriteTLSPeer's record (its magic read): whether a certificate came, and its id.
func readTLSPeer(r io.Reader) (string, bool, error) {
	var head [3]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return "", false, err
	}
	id := make([]byte, binary.BigEndian.Uint16(head[1:]))
	if _, err := io.ReadFull(r, id); err != nil {
		return "", false, err
	}
	return string(id), head[0] == 1, nil
}

// rfc2253Keywords are the attribute types X500Principal.getName (RFC 2253 form) writes by name; any other is
// written as its OID with the value's DER encoding in hex.
var rfc2253Keywords = map[string]string{
	"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
	"2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}

// attribute is one attribute of a relative name in a certificate's subject, its value as encoded.
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// relativeNameSET is one relative name of a subject: encoding/asn1 reads a slice type named …SET as a SET.
type relativeNameSET []attribute

// X509ID returns the identity ZooKeeper 3.8's X509AuthenticationProvider gives a client certificate: its
// subject as Java's X500Principal.getName() writes it (RFC 2253: the relative names last to first, joined by
// ',', the attributes of one by '+'; known types by name, others as OID=#hex of the value's DER encoding;
// ',', '=', '+', '<', '>', '#', ';', '"' and '\' escaped with '\', and so are a leading and trailing spaces).
func X509ID(cert *x509.Certificate) (string, error) {
	var rdns []relativeNameSET
	if rest, err := asn1.Unmarshal(cert.RawSubject, &rdns); err != nil || len(rest) > 0 {
		return "", fmt.Errorf("parse the subject: %v", err)
	}
	names := make([]string, 0, len(rdns))
	for i := len(rdns) - 1; i >= 0; i-- {
		avas := make([]string, 0, len(rdns[i]))
		for _, a := range rdns[i] {
			key, known := rfc2253Keywords[a.Type.String()]
			if known && isDirectoryString(a.Value.Tag) && utf8.Valid(a.Value.Bytes) {
				avas = append(avas, key+"="+escapeRFC2253(string(a.Value.Bytes)))
			} else {
				avas = append(avas, a.Type.String()+"=#"+hex.EncodeToString(a.Value.FullBytes))
			}
		}
		names = append(names, strings.Join(avas, "+"))
	}
	return strings.Join(names, ","), nil
}

// isDirectoryString reports whether an attribute value's tag is one Java writes as a string.
func isDirectoryString(tag int) bool {
	switch tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String:
		return true
	}
	return false
}

// escapeRFC2253 escapes a value as X500Principal.getName does.
func escapeRFC2253(v string) string {
	var b strings.Builder
	for _, r := range v {
		if strings.ContainsRune(`,=+<>#;"\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	out := b.String()
	if strings.HasPrefix(out, " ") {
		out = `\` + out
	}
	if trimmed := strings.TrimRight(out, " "); len(trimmed) < len(out) && !strings.HasSuffix(trimmed, `\`) {
		out = trimmed + strings.Repeat(`\ `, len(out)-len(trimmed))
	}
	return out
}
