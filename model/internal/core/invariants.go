package core

import (
	"fmt"
	"maps"
	"slices"
)

// CheckInvariants verifies the state's structural invariants and returns the first one broken, or nil: every
// node's child count and listing agree with the nodes that exist, in the listing's order; every node is listed
// by its parent; an ephemeral node has no children and belongs to a live session that lists it; a session
// lists only ephemerals it owns; every watch belongs to a live session. Tests call it after every step.
func (c *Core) CheckInvariants() error {
	for _, path := range slices.Sorted(maps.Keys(c.nodes)) {
		n := c.nodes[path]
		if int(n.stat.NumChildren) != len(n.children) {
			return fmt.Errorf("%s: numChildren %d but %d children", path, n.stat.NumChildren, len(n.children))
		}
		for i, e := range n.children {
			kid := childPath(path, e.name)
			if _, ok := c.nodes[kid]; !ok {
				return fmt.Errorf("%s lists child %s, which does not exist", path, kid)
			}
			if i > 0 && !childLess(n.children[i-1], e) {
				return fmt.Errorf("%s: children out of order at %s", path, e.name)
			}
		}
		if path != "/" {
			p, ok := c.nodes[parentOf(path)]
			if !ok || !slices.ContainsFunc(p.children, func(e childEntry) bool { return e.name == baseName(path) }) {
				return fmt.Errorf("%s is not listed by its parent", path)
			}
		}
		if n.isEphemeral() {
			if len(n.children) > 0 {
				return fmt.Errorf("ephemeral %s has children", path)
			}
			s, ok := c.sessions[n.stat.EphemeralOwner]
			if !ok {
				return fmt.Errorf("ephemeral %s belongs to %#x, which is not a live session", path, n.stat.EphemeralOwner)
			}
			if _, ok := s.ephemeral[path]; !ok {
				return fmt.Errorf("ephemeral %s is missing from its session's list", path)
			}
		}
	}
	for _, id := range c.SessionIDs() {
		for _, p := range slices.Sorted(maps.Keys(c.sessions[id].ephemeral)) {
			if n, ok := c.nodes[p]; !ok || n.stat.EphemeralOwner != id {
				return fmt.Errorf("session %#x lists ephemeral %s, which it does not own", id, p)
			}
		}
	}
	for kind := range c.watches {
		for _, p := range slices.Sorted(maps.Keys(c.watches[kind])) {
			for _, id := range slices.Sorted(maps.Keys(c.watches[kind][p])) {
				if _, ok := c.sessions[id]; !ok {
					return fmt.Errorf("watch on %s held for %#x, which is not a live session", p, id)
				}
			}
		}
	}
	return nil
}

// Paths returns the path of every node, sorted.
func (c *Core) Paths() []string { return slices.Sorted(maps.Keys(c.nodes)) }
