package model

import (
	"fmt"
	"strings"

	"github.com/zkmodel/zkmodel/jute"
	"github.com/zkmodel/zkmodel/model/internal/core"
)

// This file holds the requests the wire front end answers in a form of its own (coreRequest has no
// translation for them): addAuth (the connection's identities: zxid 0, and AUTHFAILED closes the connection),
// whoAmI (a view of those identities), setWatches and setWatches2 (a reconnecting client's watches),
// multiRead (reads through the core, one at a time) and, in sasl.go, sasl. What changes the core's state goes
// through its Apply all the same. The connections are in wire.go, the translation of the requests the core
// answers as they come in wire_translate.go.

// applyFrontEnd answers the requests the core has no part in. It reports the trace detail and whether the
// server closes the connection after the reply.
func (s *Server) applyFrontEnd(c *Conn, cl *call) (string, bool) {
	w, l := cl.wire, c.link
	r := &w.req
	switch w.op {
	case jute.OpAuth:
		if r.Scheme == "x509" && l.hasCert && s.cfg.x509 {
			// X509AuthenticationProvider adds the certificate's identity again, whatever the packet says.
			w.frame = replyFrame(w.xid, 0, 0, nil)
			return "ok x509", false
		}
		// ZooKeeper answers auth packets with the request's xid (clients send -4) and zxid 0; a scheme other
		// than digest and ip is AUTHFAILED, and the server closes the connection (the core keeps the
		// identities: the session's, until its next connection).
		if res, _ := s.core.Apply(c.session, &core.Request{Op: core.OpAuth, Path: r.Scheme, Data: r.Auth}); res.Err != nil {
			w.frame = replyFrame(w.xid, 0, errCode(res.Err), nil)
			return "error auth failed; closing", true
		}
		w.frame = replyFrame(w.xid, 0, 0, nil)
		if r.Scheme == "digest" {
			return "ok digest:" + core.DigestID(r.Auth), false
		}
		return "ok " + r.Scheme, false
	case jute.OpSASL:
		return s.applySASL(c, w)
	case jute.OpWhoAmI:
		// The connection's identities in the server's order (its hash set's); a digest one shows its user.
		clients := []jute.ClientInfo{{AuthScheme: "ip", User: remoteIP(l.nc)}}
		if ids, ok := s.core.Identities(c.session); ok {
			clients = clients[:0]
			for _, id := range ids {
				switch id.Scheme {
				case "ip":
					clients = append(clients, jute.ClientInfo{AuthScheme: "ip", User: remoteIP(l.nc)})
				case "digest":
					user, _, _ := strings.Cut(id.ID, ":")
					clients = append(clients, jute.ClientInfo{AuthScheme: "digest", User: user})
				default:
					clients = append(clients, jute.ClientInfo{AuthScheme: id.Scheme, User: id.ID})
				}
			}
		}
		w.frame = replyFrame(w.xid, s.core.Zxid(), 0, func(e *jute.Encoder) {
			jute.EncodeResponse(e, jute.OpWhoAmI, &jute.Response{Clients: clients})
		})
		return fmt.Sprintf("%v zxid=%d", clients, s.core.Zxid()), false
	case jute.OpSetWatches, jute.OpSetWatches2:
		if w.op == jute.OpSetWatches2 && (r.DataWatches == nil || r.ExistWatches == nil || r.ChildWatches == nil || r.PersistentWatches == nil || r.RecursiveWatches == nil) {
			w.frame = replyFrame(w.xid, s.core.Zxid(), -5, nil) // a null list: the server cannot read it
			return "error marshalling (a null watch list)", false
		}
		_, notes := s.core.Apply(c.session, &core.Request{Op: core.OpSetWatches, Watches: &core.WatchesRequest{RelativeZxid: r.RelativeZxid,
			Data: r.DataWatches, Exist: r.ExistWatches, Child: r.ChildWatches, Persistent: r.PersistentWatches, Recursive: r.RecursiveWatches}})
		for _, n := range notes {
			c.outbox = append(c.outbox, outItem{event: n.Event})
		}
		w.frame = replyFrame(w.xid, s.core.Zxid(), 0, nil)
		return fmt.Sprintf("ok, %d fired zxid=%d", len(notes), s.core.Zxid()), false
	case jute.OpMultiRead:
		results := make([]jute.OpResult, 0, len(r.Ops))
		for _, o := range r.Ops {
			op := core.OpGetData
			if o.Header.Type == jute.OpGetChildren {
				op = core.OpGetChildren
			}
			req := &core.Request{Op: op, Path: o.Path}
			res, _ := s.core.Apply(c.session, req)
			s.noteRead(c.servedBy(), req, res)
			switch {
			case res.Err != nil:
				results = append(results, jute.OpResult{Type: jute.OpError, Err: errCode(res.Err)})
			case op == core.OpGetData:
				results = append(results, jute.OpResult{Type: jute.OpGetData, Data: res.Data, Stat: res.Stat})
			default:
				results = append(results, jute.OpResult{Type: jute.OpGetChildren, Children: res.Children})
			}
		}
		w.frame = replyFrame(w.xid, s.core.Zxid(), 0, func(e *jute.Encoder) {
			jute.EncodeResponse(e, jute.OpMultiRead, &jute.Response{Results: results})
		})
		return fmt.Sprintf("%d results zxid=%d", len(results), s.core.Zxid()), false
	}
	// Not reached: receive sends every other type to the core. Answer as to an unknown opcode all the same.
	w.frame = replyFrame(w.xid, -1, -6, nil)
	return "error unimplemented; closing", true
}
