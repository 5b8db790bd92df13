package jute

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Opcodes of ZooKeeper 3.8's requests (ZooDefs.OpCode).
const (
	OpNotification         int32 = 0
	OpCreate               int32 = 1
	OpDelete               int32 = 2
	OpExists               int32 = 3
	OpGetData              int32 = 4
	OpSetData              int32 = 5
	OpGetACL               int32 = 6
	OpSetACL               int32 = 7
	OpGetChildren          int32 = 8
	OpSync                 int32 = 9
	OpPing                 int32 = 11
	OpGetChildren2         int32 = 12
	OpCheck                int32 = 13
	OpMulti                int32 = 14
	OpCreate2              int32 = 15
	OpReconfig             int32 = 16
	OpCheckWatches         int32 = 17
	OpRemoveWatches        int32 = 18
	OpCreateContainer      int32 = 19
	OpDeleteContainer      int32 = 20
	OpCreateTTL            int32 = 21
	OpMultiRead            int32 = 22
	OpAuth                 int32 = 100
	OpSetWatches           int32 = 101
	OpSASL                 int32 = 102
	OpGetEphemerals        int32 = 103
	OpGetAllChildrenNumber int32 = 104
	OpSetWatches2          int32 = 105
	OpAddWatch             int32 = 106
	OpWhoAmI               int32 = 107
	OpCreateSession        int32 = -10
	OpCloseSession         int32 = -11
	OpError                int32 = -1
)

// Special xids: the requests and replies that are not a client's numbered calls.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)

// ErrUnknownOpcode means a request's type is not one this package can decode; the header is still valid.
var ErrUnknownOpcode = errors.New("jute: unknown opcode")

// ConnectRequest opens or resumes a session: the first frame a client sends on a connection.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32 // milliseconds
	SessionID       int64 // 0: a new session
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool // the request carried the readOnly byte (3.4+ Java clients send it; go-zookeeper does not)
}

// Encode appends the request's body.
func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Long(r.LastZxidSeen)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// DecodeConnectRequest decodes a connect request frame's body.
func DecodeConnectRequest(body []byte) (ConnectRequest, error) {
	d := NewDecoder(body)
	var r ConnectRequest
	r.ProtocolVersion = d.Int()
	r.LastZxidSeen = d.Long()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	if d.Err() == nil && d.Remaining() > 0 {
		r.ReadOnly, r.HasReadOnly = d.Bool(), true
	}
	if err := d.Err(); err != nil {
		return ConnectRequest{}, fmt.Errorf("jute: connect request: %w", err)
	}
	return r, nil
}

// ConnectResponse answers a ConnectRequest. A server that refuses the session (expired, or a wrong
// password) answers with TimeOut 0, SessionID 0 and an empty password.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool // write the readOnly byte: a 3.8 server does when the request carried one
}

// Encode appends the response's body.
func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// DecodeConnectResponse decodes a connect response frame's body (the readOnly byte is optional).
func DecodeConnectResponse(body []byte) (ConnectResponse, error) {
	d := NewDecoder(body)
	var r ConnectResponse
	r.ProtocolVersion = d.Int()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	if d.Err() == nil && d.Remaining() > 0 {
		r.ReadOnly, r.HasReadOnly = d.Bool(), true
	}
	if err := d.Err(); err != nil {
		return ConnectResponse{}, fmt.Errorf("jute: connect response: %w", err)
	}
	return r, nil
}

// RequestHeader starts every request frame after the connect request.
type RequestHeader struct {
	Xid  int32
	Type int32
}

// ReplyHeader starts every reply frame: the request's xid (or a special one), the server's last zxid, and an
// error code (0 for success).
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  int32
}

// Encode appends the header.
func (h ReplyHeader) Encode(e *Encoder) {
	e.Int(h.Xid)
	e.Long(h.Zxid)
	e.Int(h.Err)
}

// DecodeReplyHeader decodes a reply header from d.
func DecodeReplyHeader(d *Decoder) ReplyHeader {
	return ReplyHeader{Xid: d.Int(), Zxid: d.Long(), Err: d.Int()}
}

// EncodeStat appends a znode's stat.
func EncodeStat(e *Encoder, s *zk.Stat) {
	e.Long(s.Czxid)
	e.Long(s.Mzxid)
	e.Long(s.Ctime)
	e.Long(s.Mtime)
	e.Int(s.Version)
	e.Int(s.Cversion)
	e.Int(s.Aversion)
	e.Long(s.EphemeralOwner)
	e.Int(s.DataLength)
	e.Int(s.NumChildren)
	e.Long(s.Pzxid)
}

// DecodeStat reads a znode's stat.
func DecodeStat(d *Decoder) zk.Stat {
	return zk.Stat{Czxid: d.Long(), Mzxid: d.Long(), Ctime: d.Long(), Mtime: d.Long(), Version: d.Int(),
		Cversion: d.Int(), Aversion: d.Int(), EphemeralOwner: d.Long(), DataLength: d.Int(), NumChildren: d.Int(), Pzxid: d.Long()}
}

// EncodeACLs appends a vector of ACLs; nil is encoded as null.
func EncodeACLs(e *Encoder, acl []zk.ACL) {
	if acl == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(acl)))
	for _, a := range acl {
		e.Int(a.Perms)
		e.String(a.Scheme)
		e.String(a.ID)
	}
}

// DecodeACLs reads a vector of ACLs; a null vector is nil.
func DecodeACLs(d *Decoder) []zk.ACL {
	n, ok := d.length(12)
	if !ok {
		return nil
	}
	out := make([]zk.ACL, 0, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		out = append(out, zk.ACL{Perms: d.Int(), Scheme: d.String(), ID: d.String()})
	}
	return out
}

// WatcherEvent is a watch notification's body (after a reply header with xid -1).
type WatcherEvent struct {
	Type  int32
	State int32
	Path  string
}

// Encode appends the event.
func (w WatcherEvent) Encode(e *Encoder) {
	e.Int(w.Type)
	e.Int(w.State)
	e.String(w.Path)
}

// DecodeWatcherEvent reads a watch notification's body.
func DecodeWatcherEvent(d *Decoder) WatcherEvent {
	return WatcherEvent{Type: d.Int(), State: d.Int(), Path: d.String()}
}

// Request is any decoded request: the header, then whichever fields its type carries.
type Request struct {
	Header RequestHeader

	Path    string   // every request about a node; getEphemerals' prefix
	Data    []byte   // create*, setData
	ACL     []zk.ACL // create*, setACL
	Flags   int32    // create*: the create mode
	TTL     int64    // createTTL
	Version int32    // delete, setData, setACL, check
	Watch   bool     // exists, getData, getChildren, getChildren2
	Mode    int32    // addWatch: 0 persistent, 1 persistent recursive; checkWatches/removeWatches: the watcher type (1 children, 2 data, 3 any)

	RelativeZxid                                                                 int64    // setWatches, setWatches2
	DataWatches, ExistWatches, ChildWatches, PersistentWatches, RecursiveWatches []string // setWatches (the last two: setWatches2)

	AuthType int32 // auth
	Scheme   string
	Auth     []byte

	Token []byte // sasl (GetSASLRequest): the client's SASL token; nil for a null buffer

	// reconfig: the joining and leaving servers (incremental), the whole new membership, each nil for a null
	// string; and the version the configuration must be at (-1: any).
	Joining, Leaving, NewMembers []byte
	CurConfigID                  int64

	Ops []Request // multi, multiRead: each op with Header.Type set to its type (Xid unused)
}

// EncodeRequest appends the request's frame body (header included, length prefix excluded).
func EncodeRequest(e *Encoder, r *Request) error {
	e.Int(r.Header.Xid)
	e.Int(r.Header.Type)
	return encodeBody(e, r)
}

func encodeBody(e *Encoder, r *Request) error {
	switch r.Header.Type {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL:
		e.String(r.Path)
		e.Buffer(r.Data)
		EncodeACLs(e, r.ACL)
		e.Int(r.Flags)
		if r.Header.Type == OpCreateTTL {
			e.Long(r.TTL)
		}
	case OpDelete, OpCheck:
		e.String(r.Path)
		e.Int(r.Version)
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		e.String(r.Path)
		e.Bool(r.Watch)
	case OpSetData:
		e.String(r.Path)
		e.Buffer(r.Data)
		e.Int(r.Version)
	case OpGetACL, OpSync, OpGetAllChildrenNumber, OpGetEphemerals:
		e.String(r.Path)
	case OpSetACL:
		e.String(r.Path)
		EncodeACLs(e, r.ACL)
		e.Int(r.Version)
	case OpCheckWatches, OpRemoveWatches, OpAddWatch:
		e.String(r.Path)
		e.Int(r.Mode)
	case OpSetWatches, OpSetWatches2:
		e.Long(r.RelativeZxid)
		e.Strings(r.DataWatches)
		e.Strings(r.ExistWatches)
		e.Strings(r.ChildWatches)
		if r.Header.Type == OpSetWatches2 {
			e.Strings(r.PersistentWatches)
			e.Strings(r.RecursiveWatches)
		}
	case OpAuth:
		e.Int(r.AuthType)
		e.String(r.Scheme)
		e.Buffer(r.Auth)
	case OpSASL:
		e.Buffer(r.Token)
	case OpReconfig:
		e.Buffer(r.Joining)
		e.Buffer(r.Leaving)
		e.Buffer(r.NewMembers)
		e.Long(r.CurConfigID)
	case OpMulti, OpMultiRead:
		for i := range r.Ops {
			op := &r.Ops[i]
			e.Int(op.Header.Type)
			e.Bool(false)
			e.Int(-1)
			if err := encodeBody(e, op); err != nil {
				return err
			}
		}
		e.Int(-1)
		e.Bool(true)
		e.Int(-1)
	case OpPing, OpCloseSession, OpWhoAmI:
	default:
		return fmt.Errorf("%w %d", ErrUnknownOpcode, r.Header.Type)
	}
	return nil
}

// DecodeRequest decodes a request frame's body (after the connect request). For a type it does not know it
// returns the request with its header and an error wrapping ErrUnknownOpcode; for a malformed body, the header
// (if it could be read) and an error.
func DecodeRequest(frame []byte) (Request, error) {
	d := NewDecoder(frame)
	var r Request
	r.Header = RequestHeader{Xid: d.Int(), Type: d.Int()}
	if err := d.Err(); err != nil {
		return Request{}, fmt.Errorf("jute: request header: %w", err)
	}
	if err := decodeBody(d, &r, 0); err != nil {
		return r, err
	}
	if err := d.Err(); err != nil {
		return r, fmt.Errorf("jute: request type %d: %w", r.Header.Type, err)
	}
	return r, nil
}

// multiOps is the set of types that may appear inside a multi (or, for reads, a multiRead).
func multiOp(outer, t int32) bool {
	if outer == OpMultiRead {
		return t == OpGetChildren || t == OpGetData
	}
	switch t {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData, OpCheck:
		return true
	}
	return false
}

func decodeBody(d *Decoder, r *Request, depth int) error {
	switch r.Header.Type {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL:
		r.Path = d.String()
		r.Data = d.Buffer()
		r.ACL = DecodeACLs(d)
		r.Flags = d.Int()
		if r.Header.Type == OpCreateTTL {
			r.TTL = d.Long()
		}
	case OpDelete, OpCheck:
		r.Path = d.String()
		r.Version = d.Int()
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		r.Path = d.String()
		r.Watch = d.Bool()
	case OpSetData:
		r.Path = d.String()
		r.Data = d.Buffer()
		r.Version = d.Int()
	case OpGetACL, OpSync, OpGetAllChildrenNumber, OpGetEphemerals:
		r.Path = d.String()
	case OpSetACL:
		r.Path = d.String()
		r.ACL = DecodeACLs(d)
		r.Version = d.Int()
	case OpCheckWatches, OpRemoveWatches, OpAddWatch:
		r.Path = d.String()
		r.Mode = d.Int()
	case OpSetWatches, OpSetWatches2:
		r.RelativeZxid = d.Long()
		r.DataWatches = d.Strings()
		r.ExistWatches = d.Strings()
		r.ChildWatches = d.Strings()
		if r.Header.Type == OpSetWatches2 {
			r.PersistentWatches = d.Strings()
			r.RecursiveWatches = d.Strings()
		}
	case OpAuth:
		r.AuthType = d.Int()
		r.Scheme = d.String()
		r.Auth = d.Buffer()
	case OpSASL:
		r.Token = d.Buffer()
	case OpReconfig:
		r.Joining, r.Leaving, r.NewMembers = d.Buffer(), d.Buffer(), d.Buffer()
		r.CurConfigID = d.Long()
	case OpMulti, OpMultiRead:
		if depth > 0 {
			return fmt.Errorf("jute: a multi inside a multi")
		}
		for d.Err() == nil {
			t, done := d.Int(), d.Bool()
			d.Int() // the header's err field, -1 in requests
			if d.Err() != nil || done {
				break
			}
			if !multiOp(r.Header.Type, t) {
				return fmt.Errorf("jute: type %d inside a request of type %d: %w", t, r.Header.Type, ErrUnknownOpcode)
			}
			op := Request{Header: RequestHeader{Type: t}}
			if err := decodeBody(d, &op, depth+1); err != nil {
				return err
			}
			r.Ops = append(r.Ops, op)
		}
	case OpPing, OpCloseSession, OpWhoAmI:
	default:
		return fmt.Errorf("%w %d", ErrUnknownOpcode, r.Header.Type)
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("jute: request type %d: %w", r.Header.Type, err)
	}
	return nil
}

// ClientInfo is one identity whoAmI reports.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// OpResult is one operation's outcome in a multi or multiRead reply.
type OpResult struct {
	Type     int32 // the op's type, or OpError
	Err      int32 // OpError: the code (0 for an op that did not fail in a failed multi)
	Path     string
	Stat     zk.Stat
	Data     []byte
	Children []string
}

// Response is any reply body; which fields are written depends on the request type.
type Response struct {
	Path     string
	Stat     zk.Stat
	Data     []byte
	Children []string
	ACL      []zk.ACL
	Number   int32
	Clients  []ClientInfo
	Results  []OpResult
	Token    []byte // sasl (SetSASLResponse): the server's SASL token; nil for a null buffer
}

// EncodeResponse appends the body of a successful reply to a request of type op (nothing for the types whose
// replies are a header alone). A failed request's reply is a header alone, except multi's.
func EncodeResponse(e *Encoder, op int32, r *Response) {
	switch op {
	case OpCreate, OpSync:
		e.String(r.Path)
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		e.String(r.Path)
		EncodeStat(e, &r.Stat)
	case OpExists, OpSetData, OpSetACL:
		EncodeStat(e, &r.Stat)
	case OpGetData, OpReconfig: // a reconfig answers with the new configuration, as getData of it would
		e.Buffer(r.Data)
		EncodeStat(e, &r.Stat)
	case OpGetACL:
		EncodeACLs(e, r.ACL)
		EncodeStat(e, &r.Stat)
	case OpGetChildren, OpGetEphemerals:
		e.Strings(r.Children)
	case OpGetChildren2:
		e.Strings(r.Children)
		EncodeStat(e, &r.Stat)
	case OpGetAllChildrenNumber, OpAddWatch:
		e.Int(r.Number) // addWatch: an ErrorResponse with code 0
	case OpSASL:
		e.Buffer(r.Token)
	case OpWhoAmI:
		e.Int(int32(len(r.Clients)))
		for _, c := range r.Clients {
			e.String(c.AuthScheme)
			e.String(c.User)
		}
	case OpMulti, OpMultiRead:
		for i := range r.Results {
			res := &r.Results[i]
			e.Int(res.Type)
			e.Bool(false)
			if res.Type == OpError {
				e.Int(res.Err)
			} else {
				e.Int(0)
			}
			switch res.Type {
			case OpCreate:
				e.String(res.Path)
			case OpCreate2, OpCreateContainer, OpCreateTTL:
				e.String(res.Path)
				EncodeStat(e, &res.Stat)
			case OpSetData:
				EncodeStat(e, &res.Stat)
			case OpGetData:
				e.Buffer(res.Data)
				EncodeStat(e, &res.Stat)
			case OpGetChildren:
				e.Strings(res.Children)
			case OpError:
				e.Int(res.Err)
			}
		}
		e.Int(-1)
		e.Bool(true)
		e.Int(-1)
	}
}

// DecodeResponse reads the body of a successful reply to a request of type op.
func DecodeResponse(d *Decoder, op int32) (Response, error) {
	var r Response
	switch op {
	case OpCreate, OpSync:
		r.Path = d.String()
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		r.Path = d.String()
		r.Stat = DecodeStat(d)
	case OpExists, OpSetData, OpSetACL:
		r.Stat = DecodeStat(d)
	case OpGetData, OpReconfig:
		r.Data = d.Buffer()
		r.Stat = DecodeStat(d)
	case OpGetACL:
		r.ACL = DecodeACLs(d)
		r.Stat = DecodeStat(d)
	case OpGetChildren, OpGetEphemerals:
		r.Children = d.Strings()
	case OpGetChildren2:
		r.Children = d.Strings()
		r.Stat = DecodeStat(d)
	case OpGetAllChildrenNumber, OpAddWatch:
		r.Number = d.Int()
	case OpSASL:
		r.Token = d.Buffer()
	case OpWhoAmI:
		if n, ok := d.length(8); ok {
			for i := 0; i < n && d.Err() == nil; i++ {
				r.Clients = append(r.Clients, ClientInfo{AuthScheme: d.String(), User: d.String()})
			}
		}
	case OpMulti, OpMultiRead:
		for d.Err() == nil {
			t, done, _ := d.Int(), d.Bool(), d.Int()
			if d.Err() != nil || done {
				break
			}
			res := OpResult{Type: t}
			switch t {
			case OpCreate:
				res.Path = d.String()
			case OpCreate2, OpCreateContainer, OpCreateTTL:
				res.Path = d.String()
				res.Stat = DecodeStat(d)
			case OpSetData:
				res.Stat = DecodeStat(d)
			case OpGetData:
				res.Data = d.Buffer()
				res.Stat = DecodeStat(d)
			case OpGetChildren:
				res.Children = d.Strings()
			case OpError:
				res.Err = d.Int()
			case OpDelete, OpCheck:
			default:
				return r, fmt.Errorf("jute: multi result of type %d: %w", t, ErrUnknownOpcode)
			}
			r.Results = append(r.Results, res)
		}
	}
	if err := d.Err(); err != nil {
		return r, fmt.Errorf("jute: response to type %d: %w", op, err)
	}
	return r, nil
}
