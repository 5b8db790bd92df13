package model

import (
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
)

// detail formats a Record's Detail: fmt.Sprintf(format, args...), byte for byte. A checker's run records
// every step, so the common formats — literal text with %s of strings, durations, errors and Stringers, %d
// of ints and %#x of non-negative int64s — are written here without fmt's reflection; any other verb, flag
// or argument is left to fmt.Sprintf.
func detail(format string, args []any) string {
	if format == "%s" && len(args) == 1 { // the most common: a request's or an event's own text
		if s, ok := stringOf(args[0]); ok {
			return s
		}
	}
	if s, ok := quickFormat(format, args); ok {
		return s
	}
	return fmt.Sprintf(format, args...)
}

// quickFormat formats what detail can without fmt; ok is false when it cannot.
func quickFormat(format string, args []any) (string, bool) {
	var buf [128]byte
	b, next := buf[:0], 0
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch != '%' {
			b = append(b, ch)
			continue
		}
		i++
		if i >= len(format) {
			return "", false
		}
		if format[i] == '%' {
			b = append(b, '%')
			continue
		}
		if next >= len(args) {
			return "", false
		}
		arg := args[next]
		next++
		var ok bool
		switch format[i] {
		case 's':
			b, ok = appendString(b, arg)
		case 'd':
			b, ok = appendInt(b, arg)
		case '#':
			if i+1 < len(format) && format[i+1] == 'x' {
				i++
				b, ok = appendHex(b, arg)
			}
		}
		if !ok {
			return "", false
		}
	}
	if next != len(args) {
		return "", false
	}
	return string(b), true
}

// appendString is %s of arg, for the arguments stringOf knows.
func appendString(b []byte, arg any) ([]byte, bool) {
	s, ok := stringOf(arg)
	return append(b, s...), ok
}

// stringOf is fmt's %s of arg, for the arguments it knows to format as fmt does: strings, durations, and
// errors and Stringers that are neither nil pointers nor Formatters.
func stringOf(arg any) (string, bool) {
	switch v := arg.(type) {
	case string:
		return v, true
	case opKind: // the common Stringers, without reflect's look at whether they are nil pointers
		return v.String(), true
	case zk.State:
		return v.String(), true
	case zk.EventType:
		return v.String(), true
	case time.Duration:
		return v.String(), true
	case fmt.Formatter:
		return "", false
	case error:
		if isNilPointer(v) {
			return "", false
		}
		return v.Error(), true
	case fmt.Stringer:
		if isNilPointer(v) {
			return "", false
		}
		return v.String(), true
	}
	return "", false
}

// isNilPointer reports whether x is a nil pointer, whose methods fmt calls under a recover.
func isNilPointer(x any) bool {
	v := reflect.ValueOf(x)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// appendInt is %d of an int or int64.
func appendInt(b []byte, arg any) ([]byte, bool) {
	switch v := arg.(type) {
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	}
	return b, false
}

// appendHex is %#x of a non-negative int64.
func appendHex(b []byte, arg any) ([]byte, bool) {
	v, ok := arg.(int64)
	if !ok || v < 0 {
		return b, false
	}
	return strconv.AppendInt(append(b, "0x"...), v, 16), true
}
