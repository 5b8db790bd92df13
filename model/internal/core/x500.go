package core

import "strings"

// x500Keywords are the attribute keywords Java's X500Principal(String) accepts (its RFC 1779, RFC 2253 and
// extended keyword tables), upper-cased.
var x500Keywords = map[string]bool{
	"CN": true, "C": true, "L": true, "S": true, "ST": true, "O": true, "OU": true, "T": true, "IP": true,
	"STREET": true, "DC": true, "DNQUALIFIER": true, "DNQ": true, "SURNAME": true, "GIVENNAME": true,
	"INITIALS": true, "GENERATION": true, "EMAIL": true, "EMAILADDRESS": true, "UID": true, "SERIALNUMBER": true,
}

// validX500Name reports whether X509AuthenticationProvider.isValid accepts id in an ACL: whether Java's
// X500Principal parses it as a distinguished name (measured on 3.8: "CN=client", "CN=client, O=x" and "" are
// valid, "not a dn" is InvalidACL). Relative names are separated by ',' or ';', their attributes by '+'; each
// is a keyword or a dotted OID (optionally "OID."), '=', and a value: quoted, '#' and hex digits, or a string
// whose specials are escaped with '\'.
func validX500Name(id string) bool {
	if strings.TrimSpace(id) == "" {
		return true
	}
	for _, ava := range splitUnescaped(id, ",;+") {
		typ, value, ok := strings.Cut(ava, "=")
		if !ok || !validX500Type(strings.TrimSpace(typ)) || !validX500Value(strings.TrimSpace(value)) {
			return false
		}
	}
	return true
}

// splitUnescaped splits s at the separators that are neither escaped with '\' nor inside double quotes.
func splitUnescaped(s, seps string) []string {
	var parts []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && strings.IndexByte(seps, c) >= 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// validX500Type reports whether t is an attribute keyword or a dotted OID.
func validX500Type(t string) bool {
	if x500Keywords[strings.ToUpper(t)] {
		return true
	}
	if len(t) > 4 && strings.EqualFold(t[:4], "OID.") {
		t = t[4:]
	}
	arcs := strings.Split(t, ".")
	if len(arcs) < 2 {
		return false
	}
	for _, a := range arcs {
		if a == "" || strings.Trim(a, "0123456789") != "" {
			return false
		}
	}
	return true
}

// validX500Value reports whether v is a value Java's parser takes: a quoted string closed once, '#' and an
// even count of hex digits, or a string whose escapes are complete and whose specials are escaped.
func validX500Value(v string) bool {
	switch {
	case strings.HasPrefix(v, `"`):
		return len(v) >= 2 && strings.HasSuffix(v, `"`) && !strings.Contains(strings.ReplaceAll(v[1:len(v)-1], `\"`, ""), `"`)
	case strings.HasPrefix(v, "#"):
		hex := v[1:]
		return len(hex) > 0 && len(hex)%2 == 0 && strings.Trim(strings.ToLower(hex), "0123456789abcdef") == ""
	}
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			if i++; i == len(v) {
				return false
			}
		case '"', '<', '>', '=':
			return false
		}
	}
	return true
}
