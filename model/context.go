package model

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// The calls of a Conn with a context: each is its call without one (Create, Children, …), except that it
// returns ctx's error when ctx is done before the reply arrives — at once, sending nothing, when ctx is done
// already. A call that ctx ends is abandoned, not withdrawn: the request goes on as sent (the server may
// still apply it), and its reply, when it comes, is dropped — the same as a goroutine making the call
// without a context while the caller waits for the first of its result and ctx.Done(), which is what a
// caller of *zk.Conn must do, and what the recipes do on such a Conn (package recipe); with these they need
// no goroutine per call.

// ContextCaller returns c, the Conn whose calls with a context these are. A caller handed a value that may be
// c or a wrapper embedding c (whose promoted calls with a context would bypass the wrapper's own methods)
// uses them only when the value's ContextCaller is the value itself, as package recipe does.
func (c *Conn) ContextCaller() any { return c }

// CreateContext is Create, ended by ctx (see above).
func (c *Conn) CreateContext(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return c.create(ctx, path, data, flags, acl)
}

// DeleteContext is Delete, ended by ctx (see above).
func (c *Conn) DeleteContext(ctx context.Context, path string, version int32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.delete(ctx, path, version)
}

// ExistsWContext is ExistsW, ended by ctx (see above). An abandoned call leaves the watch its reply sets on
// the server, as the abandoned call without a context would; nothing receives its events.
func (c *Conn) ExistsWContext(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, nil, err
	}
	return c.existsW(ctx, path)
}

// GetContext is Get, ended by ctx (see above).
func (c *Conn) GetContext(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return c.get(ctx, path)
}

// ChildrenContext is Children, ended by ctx (see above).
func (c *Conn) ChildrenContext(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return c.children(ctx, path)
}
