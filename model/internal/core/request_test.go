package core

import (
	"fmt"
	"math"
	"testing"
)

// TestRequestStringFormatsAsFmt: the requests a checker's run renders most (create, setData, delete, check)
// read as fmt's %d and %q made them, whatever the data's bytes.
func TestRequestStringFormatsAsFmt(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("worker"), []byte("a\"b\\c\n\x00\xff\u00e9")} {
		for _, r := range []*Request{
			{Op: OpCreate, Path: "/lock/n-", Flags: 3, Data: data},
			{Op: OpCreateContainer, Path: "/c", Flags: -1, Data: data},
			{Op: OpSetData, Path: "/a", Version: -1, Data: data},
			{Op: OpDelete, Path: "/a", Version: 7},
			{Op: OpCheck, Path: "/a", Version: -1},
		} {
			want := r.Op.String() + " " + r.Path
			switch r.Op {
			case OpCreate, OpCreateContainer:
				want += fmt.Sprintf(" flags=%d data=%q", r.Flags, r.Data)
			case OpSetData:
				want += fmt.Sprintf(" version=%d data=%q", r.Version, r.Data)
			default:
				want += fmt.Sprintf(" version=%d", r.Version)
			}
			if got := r.String(); got != want {
				t.Errorf("request.String() = %q, want %q", got, want)
			}
		}
	}
}

// TestWithSequence: sequence suffixes are formatted exactly as fmt's %010d formats them.
func TestWithSequence(t *testing.T) {
	for _, n := range []int32{0, 1, 9, 10, 42, 999999999, 1000000000, 1234567890, math.MaxInt32, -1, -5, -123456789, -999999999, -1000000000, math.MinInt32} {
		if got, want := withSequence("/p/s-", n), "/p/s-"+fmt.Sprintf("%010d", n); got != want {
			t.Errorf("withSequence(%d) = %q, want %q", n, got, want)
		}
	}
}
