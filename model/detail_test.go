package model

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/model/internal/core"
)

type nilStringer struct{ s string }

func (n *nilStringer) String() string { return n.s }

type hexFormatter int64

func (h hexFormatter) Format(f fmt.State, verb rune) { fmt.Fprintf(f, "formatted %d", int64(h)) }

// TestDetailFormatsAsSprintf: a Record's Detail is fmt.Sprintf's text, byte for byte, whether detail writes
// it itself or leaves it to fmt — the formats the server records with, and ones it must leave to fmt.
func TestDetailFormatsAsSprintf(t *testing.T) {
	var nilPtr *nilStringer
	for _, c := range []struct {
		format string
		args   []any
		quick  bool // detail writes it without fmt
	}{
		{"client closed", nil, true},
		{"%s", []any{"create /lock/n- flags=3"}, true},
		{"%s %s zxid=%d", []any{zk.EventNodeDeleted, "/lock/n-0000000001", int64(12)}, true},
		{"session %#x timeout=%s", []any{int64(0x1f56c9300000003), 10 * time.Second}, true},
		{"session %#x expired (zxid=%d)", []any{int64(0), int64(-4)}, true},
		{"server s%d stopped, %d connections closed", []any{1, 3}, true},
		{"%s -> %s", []any{&nilStringer{"get /a"}, "ok"}, true},
		{"server dropped the connection: %v (jute.maxbuffer is %d)", []any{errors.New("big"), 1048575}, false},
		{"%s", []any{errors.New("an error")}, true},
		{"100%% sure: %s", []any{"yes"}, true},
		{"%s", []any{nilPtr}, false},
		{"%#x", []any{int64(-5)}, false},
		{"%#x", []any{5}, false},
		{"%d", []any{int32(7)}, false},
		{"%s", []any{hexFormatter(3)}, false},
		{"%-6s|", []any{"ab"}, false},
		{"%s %s", []any{"one"}, false},
		{"%s", []any{"one", "two"}, false},
		{"trailing %", nil, false},
		{"%s", []any{[]byte("bytes")}, false},
	} {
		want := fmt.Sprintf(c.format, c.args...)
		if got := detail(c.format, c.args); got != want {
			t.Errorf("detail(%q, %v) = %q, want %q", c.format, c.args, got, want)
		}
		if _, quick := quickFormat(c.format, c.args); quick != c.quick {
			t.Errorf("quickFormat(%q, %v): written without fmt %v, want %v", c.format, c.args, quick, c.quick)
		}
	}
}

// TestDescribeResultFormatsAsFmt: the results a checker's run renders most (children, exists, setData) read
// as fmt's %v and %d made them.
func TestDescribeResultFormatsAsFmt(t *testing.T) {
	st := zk.Stat{Version: -1, Czxid: 0x1f56c93}
	for _, c := range []struct {
		op   core.Op
		res  core.Result
		want string
	}{
		{core.OpGetChildren, core.Result{Children: nil}, fmt.Sprintf("%v", []string(nil))},
		{core.OpGetChildren, core.Result{Children: []string{"n-0000000001", "a b", ""}}, fmt.Sprintf("%v", []string{"n-0000000001", "a b", ""})},
		{core.OpExists, core.Result{Stat: st}, fmt.Sprintf("true version=%d czxid=%d", st.Version, st.Czxid)},
		{core.OpSetData, core.Result{Stat: st}, fmt.Sprintf("version=%d czxid=%d", st.Version, st.Czxid)},
	} {
		if got := describeResult(&core.Request{Op: c.op, Path: "/a"}, c.res); got != c.want+" zxid=0" {
			t.Errorf("describeResult(%s) = %q, want %q", c.op, got, c.want+" zxid=0")
		}
	}
}
