package core

import "testing"

// TestValidX500Name: the ids measured on 3.8 (X509AuthenticationProvider.isValid through a create's ACL), and
// the forms of Java's X500Principal parser around them.
func TestValidX500Name(t *testing.T) {
	for id, want := range map[string]bool{
		// measured
		`CN=client,OU=clients,O=zkmodel\, tests`: true, "CN=other": true, "CN=client, O=x": true, "": true,
		`cn=client,ou=clients,o=zkmodel\, tests`: true, "not a dn": false,
		// the parser's forms, as read in its source (not measured)
		"CN=a+OU=b;O=c": true, "2.5.4.3=x": true, "OID.2.5.4.3=x": true, `CN="a, b"`: true, "CN=#0c0161": true,
		"FOO=x": false, "CN": false, "CN=#0c0": false, `CN="a`: false, `CN=a\`: false, "2.5=x": true, "2=x": false,
	} {
		if got := validX500Name(id); got != want {
			t.Errorf("validX500Name(%q) = %v, want %v", id, got, want)
		}
	}
}
