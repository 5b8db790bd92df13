package recipe

import "testing"

// TestParseNode: the mutex's and the read-write lock's node names (go-zookeeper's, Curator's) parse, with
// their marker; names that only look like them do not.
func TestParseNode(t *testing.T) {
	for _, c := range []struct {
		name, id, marker string
		seq              int32
		ok               bool
	}{
		{"_c_0123abcd-lock-0000000007", "0123abcd", lockMarker, 7, true},
		{"_c_6f1c2a3e-5b4d-4c3b-9a2f-1e0d9c8b7a65-__READ__0000000012", "6f1c2a3e-5b4d-4c3b-9a2f-1e0d9c8b7a65", readMarker, 12, true},
		{"_c_abc-__WRIT__-2147483648", "abc", writeMarker, -2147483648, true},
		{"_c_abc-lock-x", "", "", 0, false},
		{"_c_-__READ__0000000001", "", "", 0, false},
		{"_c_XYZ-__WRIT__0000000001", "", "", 0, false},
		{"abc-__READ__0000000001", "", "", 0, false},
		{"_c_abc-__READ__", "", "", 0, false},
	} {
		id, marker, seq, ok := parseNode(c.name)
		if id != c.id || marker != c.marker || seq != c.seq || ok != c.ok {
			t.Errorf("parseNode(%q) = %q, %q, %d, %v; want %q, %q, %d, %v", c.name, id, marker, seq, ok, c.id, c.marker, c.seq, c.ok)
		}
	}
}
