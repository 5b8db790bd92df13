// Package jute is ZooKeeper's wire encoding (Apache Jute's binary archive) and its framing, as a ZooKeeper
// 3.8 server reads and writes them: the records of zookeeper.jute a server needs, their encoders and
// decoders, and the 4-byte length-prefixed frames they travel in.
//
// Everything here is pure: encoders append to byte slices, decoders read from byte slices and report
// truncated or malformed input as errors (they never panic, and never allocate more than the input could
// hold). The only I/O is ReadFrame and WriteFrame, on an io.Reader and an io.Writer.
package jute

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxBuffer is jute.maxbuffer's default (0xfffff bytes): the longest frame a ZooKeeper server accepts.
const MaxBuffer = 0xfffff

// ErrTruncated means the input ended inside a value.
var ErrTruncated = errors.New("jute: input ends inside a value")

// ErrBadLength means a length prefix is negative (other than -1, null) or longer than what is left.
var ErrBadLength = errors.New("jute: bad length prefix")

// ErrFrameTooLarge means a frame's length prefix is over the limit a reader was given (or negative).
var ErrFrameTooLarge = errors.New("jute: frame length over the limit")

// Encoder appends jute values to a byte slice.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an encoder that appends to buf (which may be nil).
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf} }

// Bytes returns everything encoded so far.
func (e *Encoder) Bytes() []byte { return e.buf }

// Int appends a 32-bit big-endian integer.
func (e *Encoder) Int(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }

// Long appends a 64-bit big-endian integer.
func (e *Encoder) Long(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// Bool appends a boolean as one byte.
func (e *Encoder) Bool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// Buffer appends a length-prefixed byte string; nil is encoded as length -1, as Java's null.
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// String appends a length-prefixed UTF-8 string.
func (e *Encoder) String(s string) {
	e.Int(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// Strings appends a vector of strings; nil is encoded as count -1, as Java's null.
func (e *Encoder) Strings(v []string) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

// Decoder reads jute values from a byte slice. The first error sticks: later reads return zero values, and
// Err reports it.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a decoder reading buf.
func NewDecoder(buf []byte) *Decoder { return &Decoder{buf: buf} }

// Err returns the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Remaining returns how many bytes are left unread.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Rest returns the unread bytes and consumes them.
func (d *Decoder) Rest() []byte {
	b := d.buf[d.off:]
	d.off = len(d.buf)
	return b
}

func (d *Decoder) fail(err error) {
	if d.err == nil {
		d.err = fmt.Errorf("at byte %d: %w", d.off, err)
	}
}

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.buf)-d.off {
		d.fail(ErrTruncated)
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

// Int reads a 32-bit big-endian integer.
func (d *Decoder) Int() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Long reads a 64-bit big-endian integer.
func (d *Decoder) Long() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// Bool reads a one-byte boolean (any non-zero byte is true, as Java's readBoolean has it).
func (d *Decoder) Bool() bool {
	b := d.take(1)
	return b != nil && b[0] != 0
}

// length reads a length prefix: -1 is null (reported as ok=false without error); any other negative value,
// or one longer than the bytes left at minSize bytes per item, is an error.
func (d *Decoder) length(minSize int) (n int, ok bool) {
	v := d.Int()
	if d.err != nil {
		return 0, false
	}
	if v == -1 {
		return 0, false
	}
	if v < 0 || int64(v)*int64(minSize) > int64(d.Remaining()) {
		d.off -= 4
		d.fail(fmt.Errorf("%w: %d", ErrBadLength, v))
		return 0, false
	}
	return int(v), true
}

// Buffer reads a length-prefixed byte string; a null buffer (length -1) is nil. The result is a copy.
func (d *Decoder) Buffer() []byte {
	n, ok := d.length(1)
	if !ok {
		return nil
	}
	return append([]byte{}, d.take(n)...)
}

// String reads a length-prefixed string; a null string reads as "".
func (d *Decoder) String() string {
	n, ok := d.length(1)
	if !ok {
		return ""
	}
	return string(d.take(n))
}

// Strings reads a vector of strings; a null vector is nil.
func (d *Decoder) Strings() []string {
	n, ok := d.length(4)
	if !ok {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.String())
	}
	return out
}

// ReadFrame reads one length-prefixed frame from r and returns its body. A length over limit, or a negative
// one, is ErrFrameTooLarge (nothing more is read); an input that ends inside the frame is io.ErrUnexpectedEOF,
// and one that ends before it is io.EOF.
func ReadFrame(r io.Reader, limit int) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(head[:]))
	if n < 0 || int64(n) > int64(limit) {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrFrameTooLarge, n, limit)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// AppendFrame appends body to buf with its 4-byte big-endian length prefix.
func AppendFrame(buf, body []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(body)))
	return append(buf, body...)
}

// WriteFrame writes body to w as one length-prefixed frame.
func WriteFrame(w io.Writer, body []byte) error {
	_, err := w.Write(AppendFrame(make([]byte, 0, 4+len(body)), body))
	return err
}
