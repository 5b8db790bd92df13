package jute

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

var openACL = zk.WorldACL(zk.PermAll)

// TestRequestRoundTrip encodes one request of every type the package knows and decodes it back.
func TestRequestRoundTrip(t *testing.T) {
	h := func(xid, typ int32) RequestHeader { return RequestHeader{Xid: xid, Type: typ} }
	reqs := []Request{
		{Header: h(1, OpCreate), Path: "/a", Data: []byte("x"), ACL: openACL, Flags: 3},
		{Header: h(2, OpCreate2), Path: "/a", ACL: openACL},
		{Header: h(3, OpCreateContainer), Path: "/c", Data: []byte{}, ACL: openACL, Flags: 4},
		{Header: h(4, OpCreateTTL), Path: "/t", ACL: openACL, Flags: 5, TTL: 1000},
		{Header: h(5, OpDelete), Path: "/a", Version: -1},
		{Header: h(6, OpExists), Path: "/a", Watch: true},
		{Header: h(7, OpGetData), Path: "/a"},
		{Header: h(8, OpSetData), Path: "/a", Data: []byte("y"), Version: 3},
		{Header: h(9, OpGetACL), Path: "/a"},
		{Header: h(10, OpSetACL), Path: "/a", ACL: zk.DigestACL(zk.PermRead, "u", "p"), Version: 1},
		{Header: h(11, OpGetChildren), Path: "/", Watch: true},
		{Header: h(12, OpSync), Path: "/"},
		{Header: h(XidPing, OpPing)},
		{Header: h(13, OpGetChildren2), Path: "/"},
		{Header: h(14, OpCheck), Path: "/a", Version: 2},
		{Header: h(15, OpMulti), Ops: []Request{
			{Header: RequestHeader{Type: OpCreate}, Path: "/m", Data: []byte("d"), ACL: openACL},
			{Header: RequestHeader{Type: OpCheck}, Path: "/m", Version: 0},
			{Header: RequestHeader{Type: OpSetData}, Path: "/m", Data: []byte("e"), Version: 0},
			{Header: RequestHeader{Type: OpDelete}, Path: "/m", Version: -1},
		}},
		{Header: h(16, OpMultiRead), Ops: []Request{{Header: RequestHeader{Type: OpGetData}, Path: "/"}, {Header: RequestHeader{Type: OpGetChildren}, Path: "/"}}},
		{Header: h(17, OpCheckWatches), Path: "/a", Mode: 2},
		{Header: h(18, OpRemoveWatches), Path: "/a", Mode: 3},
		{Header: h(XidAuth, OpAuth), Scheme: "digest", Auth: []byte("u:p")},
		{Header: h(XidSetWatches, OpSetWatches), RelativeZxid: 7, DataWatches: []string{"/a"}, ExistWatches: []string{}, ChildWatches: []string{"/", "/b"}},
		{Header: h(XidSetWatches, OpSetWatches2), RelativeZxid: 7, DataWatches: []string{}, ExistWatches: []string{}, ChildWatches: []string{}, PersistentWatches: []string{"/p"}, RecursiveWatches: []string{}},
		{Header: h(19, OpGetEphemerals), Path: "/"},
		{Header: h(20, OpGetAllChildrenNumber), Path: "/"},
		{Header: h(21, OpAddWatch), Path: "/a", Mode: 1},
		{Header: h(22, OpWhoAmI)},
		{Header: h(23, OpCloseSession)},
		{Header: h(24, OpSASL), Token: []byte("realm=x")},
		{Header: h(25, OpSASL), Token: []byte{}},
		{Header: h(26, OpSASL)}, // a null token
	}
	for _, r := range reqs {
		e := NewEncoder(nil)
		if err := EncodeRequest(e, &r); err != nil {
			t.Fatalf("encode %+v: %v", r, err)
		}
		got, err := DecodeRequest(e.Bytes())
		if err != nil {
			t.Fatalf("decode type %d: %v", r.Header.Type, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("type %d: round trip\n got %+v\nwant %+v", r.Header.Type, got, r)
		}
	}
}

// TestResponseRoundTrip encodes a response of each shape and decodes it back.
func TestResponseRoundTrip(t *testing.T) {
	st := zk.Stat{Czxid: 1, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: 6, Aversion: 7, EphemeralOwner: 8, DataLength: 9, NumChildren: 10, Pzxid: 11}
	cases := []struct {
		op int32
		r  Response
	}{
		{OpCreate, Response{Path: "/a"}},
		{OpCreate2, Response{Path: "/a", Stat: st}},
		{OpExists, Response{Stat: st}},
		{OpGetData, Response{Data: []byte("x"), Stat: st}},
		{OpGetACL, Response{ACL: openACL, Stat: st}},
		{OpGetChildren2, Response{Children: []string{"a", "b"}, Stat: st}},
		{OpGetAllChildrenNumber, Response{Number: 42}},
		{OpSASL, Response{Token: []byte("rspauth=0")}},
		{OpSASL, Response{}}, // a null token, as a server without SASL sends
		{OpWhoAmI, Response{Clients: []ClientInfo{{"ip", "127.0.0.1"}, {"digest", "u"}}}},
		{OpMulti, Response{Results: []OpResult{{Type: OpCreate, Path: "/m"}, {Type: OpCreate2, Path: "/n", Stat: st}, {Type: OpSetData, Stat: st}, {Type: OpCheck}, {Type: OpDelete}, {Type: OpError, Err: -101}}}},
		{OpMultiRead, Response{Results: []OpResult{{Type: OpGetData, Data: []byte("d"), Stat: st}, {Type: OpGetChildren, Children: []string{"x"}}}}},
	}
	for _, c := range cases {
		e := NewEncoder(nil)
		EncodeResponse(e, c.op, &c.r)
		got, err := DecodeResponse(NewDecoder(e.Bytes()), c.op)
		if err != nil {
			t.Fatalf("decode response to %d: %v", c.op, err)
		}
		if !reflect.DeepEqual(got, c.r) {
			t.Errorf("response to %d: round trip\n got %+v\nwant %+v", c.op, got, c.r)
		}
	}
}

// TestDecodeRejectsBadInput checks that truncated input, bad lengths and unknown types are errors.
func TestDecodeRejectsBadInput(t *testing.T) {
	e := NewEncoder(nil)
	r := Request{Header: RequestHeader{Xid: 1, Type: OpCreate}, Path: "/abc", Data: []byte("data"), ACL: openACL}
	if err := EncodeRequest(e, &r); err != nil {
		t.Fatal(err)
	}
	full := e.Bytes()
	for n := range len(full) {
		if _, err := DecodeRequest(full[:n]); err == nil {
			t.Errorf("a create truncated to %d of %d bytes decoded without error", n, len(full))
		}
	}
	if _, err := DecodeRequest([]byte{0, 0, 0, 1, 0, 0, 0, 99}); !errors.Is(err, ErrUnknownOpcode) {
		t.Errorf("opcode 99: error %v, want ErrUnknownOpcode", err)
	}
	huge := []byte{0, 0, 0, 1, 0, 0, 0, 4, 0x7f, 0xff, 0xff, 0xff, 'x', 0}
	if _, err := DecodeRequest(huge); !errors.Is(err, ErrBadLength) {
		t.Errorf("a path of length 2^31-1 in 2 bytes: error %v, want ErrBadLength", err)
	}
	negative := []byte{0, 0, 0, 1, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xfe, 0}
	if _, err := DecodeRequest(negative); !errors.Is(err, ErrBadLength) {
		t.Errorf("a path of length -2: error %v, want ErrBadLength", err)
	}
	if _, err := DecodeConnectRequest([]byte{0, 0, 0}); err == nil {
		t.Error("a 3-byte connect request decoded without error")
	}
}

// TestReadFrame checks the framing: a frame up to the limit is read, a longer one is refused before its body
// is read, and an input that ends inside a frame is io.ErrUnexpectedEOF.
func TestReadFrame(t *testing.T) {
	body := bytes.Repeat([]byte{7}, 10)
	in := AppendFrame(nil, body)
	got, err := ReadFrame(bytes.NewReader(in), 10)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("ReadFrame = %x, %v; want the body", got, err)
	}
	if _, err := ReadFrame(bytes.NewReader(in), 9); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("a 10-byte frame with limit 9: error %v, want ErrFrameTooLarge", err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), 9); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("a negative length: error %v, want ErrFrameTooLarge", err)
	}
	if _, err := ReadFrame(bytes.NewReader(in[:8]), 10); err != io.ErrUnexpectedEOF {
		t.Errorf("a frame cut short: error %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := ReadFrame(bytes.NewReader(nil), 10); err != io.EOF {
		t.Errorf("no input: error %v, want io.EOF", err)
	}
}

// recordedFrames returns the frames of the sessions recorded on a real server (conformance/wire), the
// client's and the server's.
func recordedFrames(t testing.TB) (client, server [][]byte) {
	paths, err := filepath.Glob("../conformance/wire/*.rec")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recordings in conformance/wire (%v)", err)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			dir, h, ok := strings.Cut(sc.Text(), " ")
			b, err := hex.DecodeString(h)
			if !ok || err != nil {
				continue
			}
			if dir == "C" {
				client = append(client, b)
			} else {
				server = append(server, b)
			}
		}
		f.Close()
	}
	return client, server
}

// TestRecordedRequestsDecode decodes every request a real client sent in the recordings and re-encodes it:
// the bytes must come back the same (so the decoder reads what real clients write, all of it).
func TestRecordedRequestsDecode(t *testing.T) {
	client, _ := recordedFrames(t)
	if _, err := DecodeConnectRequest(client[0]); err != nil {
		t.Fatalf("recorded connect request: %v", err)
	}
	decoded := 0
	for _, frame := range client {
		r, err := DecodeRequest(frame)
		if err != nil {
			continue // connect requests, and the deliberately malformed frames of the raw session
		}
		e := NewEncoder(nil)
		if err := EncodeRequest(e, &r); err != nil {
			t.Fatalf("re-encode %+v: %v", r, err)
		}
		if !bytes.Equal(e.Bytes(), frame) {
			t.Errorf("request type %d: re-encoded\n %x\nrecorded\n %x", r.Header.Type, e.Bytes(), frame)
		}
		decoded++
	}
	if decoded < 40 {
		t.Fatalf("only %d recorded requests decoded", decoded)
	}
}

// FuzzDecode feeds arbitrary bytes to every decoder: none may panic, and a request that decodes must encode
// back to bytes that decode to the same request.
func FuzzDecode(f *testing.F) {
	client, server := recordedFrames(f)
	for _, b := range append(client, server...) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeConnectRequest(b)
		_, _ = DecodeConnectResponse(b)
		d := NewDecoder(b)
		DecodeReplyHeader(d)
		DecodeWatcherEvent(d)
		for _, op := range []int32{OpCreate2, OpGetData, OpGetACL, OpGetChildren2, OpWhoAmI, OpMulti, OpMultiRead} {
			_, _ = DecodeResponse(NewDecoder(b), op)
		}
		_, _ = ReadFrame(bytes.NewReader(b), MaxBuffer)
		r, err := DecodeRequest(b)
		if err != nil {
			return
		}
		e := NewEncoder(nil)
		if err := EncodeRequest(e, &r); err != nil {
			t.Fatalf("a decoded request does not encode: %v", err)
		}
		again, err := DecodeRequest(e.Bytes())
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("decode(encode(r)) = %+v, %v; want %+v", again, err, r)
		}
	})
}
