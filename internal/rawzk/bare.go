package rawzk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zkmodel/zkmodel/jute"
)

// Bare is one connection with a single handshake and no reconnection, pings or watches: for what a Conn
// hides, such as a read-only session (the connect request's readOnly byte), a server's refusal of a
// connect request, or the raw error code of a reply.
type Bare struct {
	nc  net.Conn
	xid int32
}

// ErrConnectNotReadOnly is what DialBare returns when a read-only server answers the connect request with a
// reply header carrying NotReadOnly (-119) in place of a connect response, as ZooKeeper 3.8 does to a client
// asking for a read-only session without localSessionsEnabled.
var ErrConnectNotReadOnly = errors.New("rawzk: connect answered with a NotReadOnly (-119) reply header instead of a connect response")

// DialBare connects to addr and sends req (its readOnly byte included: set HasReadOnly). It returns the
// server's connect response; an error wrapping io.EOF when the server closes the connection without one, or
// ErrConnectNotReadOnly with the connection still open (the caller closes it).
func DialBare(ctx context.Context, addr string, req jute.ConnectRequest) (*Bare, jute.ConnectResponse, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, jute.ConnectResponse{}, fmt.Errorf("dial %s: %w", addr, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(deadline)
	}
	if req.Passwd == nil {
		req.Passwd = make([]byte, 16)
	}
	e := jute.NewEncoder(nil)
	req.Encode(e)
	if err := jute.WriteFrame(nc, e.Bytes()); err != nil {
		nc.Close()
		return nil, jute.ConnectResponse{}, fmt.Errorf("send connect request to %s: %w", addr, err)
	}
	frame, err := jute.ReadFrame(nc, jute.MaxBuffer)
	if err != nil {
		nc.Close()
		return nil, jute.ConnectResponse{}, fmt.Errorf("read connect response from %s: %w", addr, err)
	}
	if len(frame) == 16 { // xid, zxid, err: a reply header where the connect response should be
		if h := jute.DecodeReplyHeader(jute.NewDecoder(frame)); h.Err == -119 {
			return &Bare{nc: nc}, jute.ConnectResponse{}, ErrConnectNotReadOnly
		}
	}
	resp, err := jute.DecodeConnectResponse(frame)
	if err != nil {
		nc.Close()
		return nil, jute.ConnectResponse{}, fmt.Errorf("connect response from %s: %w (frame %x)", addr, err, frame)
	}
	return &Bare{nc: nc}, resp, nil
}

// Do sends one request (its xid is set) and returns its reply's error code, 0 for success, skipping
// notifications and other replies.
func (b *Bare) Do(r jute.Request) (int32, error) {
	h, _, err := b.Call(r)
	return h.Err, err
}

// Call sends one request (its xid is set) and returns its reply's header and body (the body only when the
// reply is no error), skipping notifications and other replies.
func (b *Bare) Call(r jute.Request) (jute.ReplyHeader, jute.Response, error) {
	b.xid++
	r.Header.Xid = b.xid
	e := jute.NewEncoder(nil)
	if err := jute.EncodeRequest(e, &r); err != nil {
		return jute.ReplyHeader{}, jute.Response{}, fmt.Errorf("encode request: %w", err)
	}
	if err := jute.WriteFrame(b.nc, e.Bytes()); err != nil {
		return jute.ReplyHeader{}, jute.Response{}, fmt.Errorf("send request: %w", err)
	}
	for {
		frame, err := jute.ReadFrame(b.nc, jute.MaxBuffer)
		if err != nil {
			return jute.ReplyHeader{}, jute.Response{}, fmt.Errorf("read reply: %w", err)
		}
		d := jute.NewDecoder(frame)
		h := jute.DecodeReplyHeader(d)
		if h.Xid != b.xid {
			continue
		}
		if h.Err != 0 {
			return h, jute.Response{}, nil
		}
		resp, err := jute.DecodeResponse(d, r.Header.Type)
		if err != nil {
			return h, resp, fmt.Errorf("decode reply: %w", err)
		}
		return h, resp, nil
	}
}

// LoginDigestMD5 logs the connection in by SASL DIGEST-MD5 as user with password (as Conn.LoginDigestMD5).
// A refused token is an error naming the reply's code.
func (b *Bare) LoginDigestMD5(user, password string) error {
	return loginDigestMD5(user, password, func(token []byte) ([]byte, error) {
		h, resp, err := b.Call(jute.Request{Header: jute.RequestHeader{Type: jute.OpSASL}, Token: token})
		if err == nil && h.Err != 0 {
			err = fmt.Errorf("code %d", h.Err)
		}
		return resp.Token, err
	})
}

// WaitClosed reads (and drops) what the server sends until it closes the connection or ctx's deadline passes,
// and reports whether it closed. The connection stays usable when it did not.
func (b *Bare) WaitClosed(ctx context.Context) bool {
	if deadline, ok := ctx.Deadline(); ok {
		_ = b.nc.SetReadDeadline(deadline)
		defer b.nc.SetReadDeadline(time.Time{})
	}
	for {
		if _, err := jute.ReadFrame(b.nc, jute.MaxBuffer); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

// Close closes the connection.
func (b *Bare) Close() error { return b.nc.Close() }
