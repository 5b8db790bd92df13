package conformance

import (
	"slices"
	"strings"
	"testing"
)

// TestWireRecordings: the embedded recordings parse, each starting with a client frame on connection 1.
func TestWireRecordings(t *testing.T) {
	recs, err := WireRecordings()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rec := range recs {
		names = append(names, rec.Name)
		if rec.Steps[0].Conn != 1 || len(rec.Steps[0].Replies) == 0 {
			t.Errorf("%s begins with a client frame on connection %d with %d replies, want connection 1 and its connect response", rec.Name, rec.Steps[0].Conn, len(rec.Steps[0].Replies))
		}
	}
	if want := []string{"gozk-session.rec", "raw-session.rec", "raw-watches.rec"}; !slices.Equal(names, want) {
		t.Errorf("recordings %v, want %v", names, want)
	}
}

// TestParseWireRecording: client frames collect the server frames after them, on the connections named; a
// malformed line, a server frame first, or no client frame at all is an error naming the place.
func TestParseWireRecording(t *testing.T) {
	rec, err := parseWireRecording("x.rec", []byte("# a comment\n\nC 0a0b\nS 01\nS2 02\nC2 0c\nS2 03\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Steps) != 2 || rec.Steps[0].Conn != 1 || string(rec.Steps[0].Frame) != "\x0a\x0b" ||
		len(rec.Steps[0].Replies) != 2 || rec.Steps[0].Replies[1].Conn != 2 || string(rec.Steps[0].Replies[1].Frame) != "\x02" ||
		rec.Steps[1].Conn != 2 || len(rec.Steps[1].Replies) != 1 {
		t.Errorf("parsed %+v", rec)
	}
	for input, want := range map[string]string{
		"C 0g\n":      "x.rec:1: want `C<n> <hex>`",
		"X 00\n":      "x.rec:1: want `C<n> <hex>`",
		"C0 00\n":     "x.rec:1: want `C<n> <hex>`",
		"#\nS 00\n":   "x.rec:2: a server frame before the first client frame",
		"# nothing\n": "x.rec: no client frame",
	} {
		if _, err := parseWireRecording("x.rec", []byte(input)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseWireRecording(%q) = %v, want an error containing %q", input, err, want)
		}
	}
}
