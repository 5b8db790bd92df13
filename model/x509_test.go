package model

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"
)

// TestX509ID: the identity of a subject is its relative names last to first, as X500Principal.getName writes
// them (the test PKI's client, "CN=client,OU=clients,O=zkmodel\, tests", was measured on 3.8; the escapes
// follow Java's RFC 2253 writer); a type without a keyword is its OID with the value's DER in hex.
func TestX509ID(t *testing.T) {
	for _, tc := range []struct {
		name pkix.Name
		want string
	}{
		{pkix.Name{CommonName: "client", OrganizationalUnit: []string{"clients"}, Organization: []string{"zkmodel, tests"}}, `CN=client,OU=clients,O=zkmodel\, tests`},
		{pkix.Name{CommonName: "client"}, "CN=client"},
		{pkix.Name{CommonName: " a=b+c#; ", Country: []string{"DE"}}, `CN=\ a\=b\+c\#\;\ ,C=DE`},
		{pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{2, 5, 4, 5}, Value: "42"}}}, "2.5.4.5=#13023432"},
		{pkix.Name{}, ""},
	} {
		der, err := asn1.Marshal(tc.name.ToRDNSequence())
		if err != nil {
			t.Fatal(err)
		}
		got, err := X509ID(&x509.Certificate{RawSubject: der})
		if err != nil || got != tc.want {
			t.Errorf("X509ID(%v) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := X509ID(&x509.Certificate{RawSubject: []byte{1, 2, 3}}); err == nil {
		t.Error("X509ID of a subject that does not parse: no error")
	}
}
