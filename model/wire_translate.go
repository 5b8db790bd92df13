package model

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/model/internal/core"
)

// This file is the wire front end's translation between ZooKeeper's protocol and the core: a decoded jute
// request becomes the core's Request (coreRequest), the core's Result and errors become the reply ZooKeeper
// 3.8 sends (applyCore, errCode, multiResults, replyFrame), and wireText renders a request for traces. The
// connections are in wire.go, the requests the front end answers itself in wire_frontend.go.

func isMultiType(t int32) bool { return t == jute.OpMulti || t == jute.OpMultiRead }

// isWriteType reports whether a request type is a transaction, which spends a zxid even when it fails.
func isWriteType(t int32) bool {
	switch t {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL, jute.OpDelete, jute.OpSetData,
		jute.OpSetACL, jute.OpCheck, jute.OpMulti, jute.OpCloseSession, jute.OpReconfig:
		return true
	}
	return false
}

// coreRequest translates a wire request into the core's, or returns nil for the requests the front end answers
// itself (auth, sasl, whoAmI, setWatches, multiRead).
func coreRequest(r *jute.Request) *core.Request {
	switch r.Header.Type {
	case jute.OpCreate, jute.OpCreate2:
		// The opcode chooses the reply's form; the node's mode comes from the flags.
		return &core.Request{Op: core.OpCreate, Path: r.Path, Data: r.Data, Flags: r.Flags, ACL: r.ACL}
	case jute.OpCreateContainer:
		return &core.Request{Op: core.OpCreateContainer, Path: r.Path, Data: r.Data, Flags: r.Flags, ACL: r.ACL}
	case jute.OpCreateTTL:
		return &core.Request{Op: core.OpCreateTTL, Path: r.Path, Data: r.Data, Flags: r.Flags, ACL: r.ACL, TTL: r.TTL}
	case jute.OpDelete:
		return &core.Request{Op: core.OpDelete, Path: r.Path, Version: r.Version}
	case jute.OpExists:
		return &core.Request{Op: core.OpExists, Path: r.Path, Watch: r.Watch}
	case jute.OpGetData:
		return &core.Request{Op: core.OpGetData, Path: r.Path, Watch: r.Watch}
	case jute.OpSetData:
		return &core.Request{Op: core.OpSetData, Path: r.Path, Data: r.Data, Version: r.Version}
	case jute.OpGetChildren, jute.OpGetChildren2:
		return &core.Request{Op: core.OpGetChildren, Path: r.Path, Watch: r.Watch}
	case jute.OpSync:
		return &core.Request{Op: core.OpSync, Path: r.Path}
	case jute.OpGetACL:
		return &core.Request{Op: core.OpGetACL, Path: r.Path}
	case jute.OpSetACL:
		return &core.Request{Op: core.OpSetACL, Path: r.Path, ACL: r.ACL, Version: r.Version}
	case jute.OpCheck:
		return &core.Request{Op: core.OpCheck, Path: r.Path, Version: r.Version}
	case jute.OpGetAllChildrenNumber:
		return &core.Request{Op: core.OpAllChildrenNumber, Path: r.Path}
	case jute.OpGetEphemerals:
		return &core.Request{Op: core.OpGetEphemerals, Path: r.Path}
	case jute.OpCheckWatches:
		return &core.Request{Op: core.OpCheckWatches, Path: r.Path, Mode: r.Mode}
	case jute.OpRemoveWatches:
		return &core.Request{Op: core.OpRemoveWatches, Path: r.Path, Mode: r.Mode}
	case jute.OpAddWatch:
		return &core.Request{Op: core.OpAddWatch, Path: r.Path, Mode: r.Mode}
	case jute.OpPing:
		return &core.Request{Op: core.OpPing}
	case jute.OpCloseSession:
		return &core.Request{Op: core.OpCloseSession}
	case jute.OpReconfig:
		return &core.Request{Op: core.OpReconfig, Reconfig: &core.ReconfigRequest{Joining: r.Joining, Leaving: r.Leaving, NewMembers: r.NewMembers, FromConfig: r.CurConfigID}}
	case jute.OpMulti:
		ops := make([]core.Request, 0, len(r.Ops))
		for _, o := range r.Ops {
			switch o.Header.Type {
			case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer:
				// In a multi the node's mode comes from the flags whatever the opcode (measured: a
				// createContainer with flags 0 answers as a plain create).
				ops = append(ops, core.Request{Op: core.OpCreate, Path: o.Path, Data: o.Data, ACL: o.ACL, Flags: o.Flags})
			case jute.OpCreateTTL:
				ops = append(ops, core.Request{Op: core.OpCreateTTL, Path: o.Path, Data: o.Data, ACL: o.ACL, Flags: o.Flags, TTL: o.TTL})
			case jute.OpDelete:
				ops = append(ops, core.Request{Op: core.OpDelete, Path: o.Path, Version: o.Version})
			case jute.OpSetData:
				ops = append(ops, core.Request{Op: core.OpSetData, Path: o.Path, Data: o.Data, Version: o.Version})
			case jute.OpCheck:
				ops = append(ops, core.Request{Op: core.OpCheck, Path: o.Path, Version: o.Version})
			}
		}
		return &core.Request{Op: core.OpMulti, Ops: ops}
	}
	return nil
}

// wireText renders a wire request for traces: the core's text where the core executes it.
func wireText(r *jute.Request, cr *core.Request) string {
	if cr != nil {
		return cr.String()
	}
	switch r.Header.Type {
	case jute.OpAuth:
		return fmt.Sprintf("addAuth %s", r.Scheme)
	case jute.OpWhoAmI:
		return "whoAmI"
	case jute.OpSASL:
		if r.Token == nil {
			return "sasl null token"
		}
		return fmt.Sprintf("sasl %d-byte token", len(r.Token))
	case jute.OpSetWatches, jute.OpSetWatches2:
		return fmt.Sprintf("setWatches zxid=%d data=%v exist=%v child=%v persistent=%v recursive=%v", r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches, r.PersistentWatches, r.RecursiveWatches)
	case jute.OpMultiRead:
		var b strings.Builder
		b.WriteString("multiRead")
		for i, o := range r.Ops {
			if i > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " %d %s", o.Header.Type, o.Path)
		}
		return b.String()
	}
	return fmt.Sprintf("opcode %d", r.Header.Type)
}

// errCode is the ZooKeeper error code of an error the core returns.
func errCode(err error) int32 {
	switch err {
	case nil:
		return 0
	case core.ErrRuntimeInconsistency:
		return -2
	case core.ErrMarshalling:
		return -5
	case core.ErrUnimplemented:
		return -6
	case zk.ErrBadArguments:
		return -8
	case zk.ErrAPIError:
		return -100
	case zk.ErrNoNode:
		return -101
	case zk.ErrNoAuth:
		return -102
	case zk.ErrBadVersion:
		return -103
	case zk.ErrNoChildrenForEphemerals:
		return -108
	case zk.ErrNodeExists:
		return -110
	case zk.ErrNotEmpty:
		return -111
	case zk.ErrSessionExpired:
		return -112
	case zk.ErrInvalidACL:
		return -114
	case zk.ErrAuthFailed:
		return -115
	case core.ErrNoWatcher:
		return -121
	case core.ErrNewConfigNoQuorum:
		return -13
	case zk.ErrReconfigDisabled:
		return -123
	}
	return -1 // a system error: not one the core returns
}

// reply builds a reply frame: the header, then body's bytes.
func replyFrame(xid int32, zxid int64, code int32, body func(e *jute.Encoder)) []byte {
	e := jute.NewEncoder(make([]byte, 4, 64))
	jute.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}.Encode(e)
	if body != nil {
		body(e)
	}
	b := e.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func (s *Server) applyCore(c *Conn, cl *call) string {
	w := cl.wire
	if cl.req.Op == core.OpReconfig {
		cl.req.Reconfig.Running = s.ens.runningIDs()
	}
	res, notes := s.core.Apply(c.session, cl.req)
	s.noteRead(c.servedBy(), cl.req, res)
	// The server sends the notifications a transaction fires before its reply, to every session.
	s.route(notes)
	detail := ""
	if s.cfg.observer != nil { // only a recorder reads it: a server without one spends nothing on the text
		detail = describeResult(cl.req, res)
	}
	switch {
	case res.NoReply:
		// ZooKeeper 3.8 sends nothing back for a successful check outside a multi (measured): the caller waits.
		return detail + " (no reply)"
	case w.op == jute.OpMulti:
		if res.Err == core.ErrMarshalling && len(res.Multi) == 0 {
			w.frame = replyFrame(w.xid, res.Zxid, -5, nil)
			return detail
		}
		w.frame = replyFrame(w.xid, res.Zxid, 0, func(e *jute.Encoder) {
			jute.EncodeResponse(e, jute.OpMulti, &jute.Response{Results: s.multiResults(&w.req, res)})
		})
		return detail
	case res.Err != nil:
		w.frame = replyFrame(w.xid, res.Zxid, errCode(res.Err), nil)
		return detail
	}
	resp := jute.Response{Path: res.Path, Stat: res.Stat, Data: res.Data, Children: res.Children, ACL: res.ACL, Number: res.Number}
	switch w.op {
	case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		resp.Stat, _ = s.core.Stat(res.Path) // the node was just created
	case jute.OpPing:
		w.xid = jute.XidPing
	}
	w.frame = replyFrame(w.xid, res.Zxid, 0, func(e *jute.Encoder) { jute.EncodeResponse(e, w.op, &resp) })
	return detail
}

// multiResults turns the core's multi outcome into the results ZooKeeper 3.8 sends (measured): a create whose
// flags make a container or a TTL node answers as create2 (path and stat), whatever its opcode; any other
// create (create2 included) with the path alone; a failed multi answers every op as an error (0 for the ones before the failure, -2 after it).
func (s *Server) multiResults(r *jute.Request, res core.Result) []jute.OpResult {
	out := make([]jute.OpResult, len(res.Multi))
	failed := res.Err != nil
	for i, m := range res.Multi {
		op := r.Ops[i]
		if failed {
			out[i] = jute.OpResult{Type: jute.OpError, Err: errCode(m.Error)}
			continue
		}
		switch op.Header.Type {
		case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
			if op.Flags != zk.FlagContainer && op.Flags != zk.FlagTTL && op.Flags != zk.FlagPersistentSequentialWithTTL {
				out[i] = jute.OpResult{Type: jute.OpCreate, Path: m.String}
				break
			}
			out[i] = jute.OpResult{Type: jute.OpCreate2, Path: m.String}
			if st, ok := s.core.Stat(m.String); ok {
				out[i].Stat = st
			}
		case jute.OpSetData:
			out[i] = jute.OpResult{Type: jute.OpSetData}
			if m.Stat != nil {
				out[i].Stat = *m.Stat
			}
		default:
			out[i] = jute.OpResult{Type: op.Header.Type}
		}
	}
	return out
}
