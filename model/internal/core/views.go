package core

import "slices"

// --- figures -----------------------------------------------------------------------------------------------

// Figures are the state's figures the four-letter words report.
type Figures struct {
	Nodes      int   // as ZooKeeper counts them: the root twice ("" and "/")
	DataSize   int64 // the sum of every node's path and data lengths (zk_approximate_data_size)
	Sessions   int
	Ephemerals int
	Zxid       int64
}

// figures returns the state's figures.
func (c *Core) figures() Figures {
	f := Figures{Nodes: len(c.nodes) + 1, Sessions: len(c.sessions), Zxid: c.zxid}
	for p, n := range c.nodes {
		f.DataSize += int64(len(p) + len(n.data))
	}
	for _, sess := range c.sessions {
		f.Ephemerals += len(sess.ephemeral)
	}
	return f
}

// dataWatchPaths returns the paths session sid has a data watch on (getData, exists, or a persistent one),
// sorted: the watches wchs, wchc and wchp list.
func (c *Core) dataWatchPaths(sid int64) []string {
	var out []string
	for p, sids := range c.watches[dataWatch] {
		if _, ok := sids[sid]; ok {
			out = append(out, p)
		}
	}
	for p, sids := range c.persist[dataWatch] {
		if _, ok := sids[sid]; ok && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// watchCount returns how many watches session sid has, data and child ones (zk_watch_count).
func (c *Core) watchCount(sid int64) int {
	n := 0
	for kind := range c.watches {
		for _, sids := range c.watches[kind] {
			if _, ok := sids[sid]; ok {
				n++
			}
		}
		for _, sids := range c.persist[kind] {
			if _, ok := sids[sid]; ok {
				n++
			}
		}
	}
	return n
}

// sessionEphemerals returns session sid's ephemeral nodes, sorted.
func (c *Core) sessionEphemerals(sid int64) []string {
	sess, ok := c.sessions[sid]
	if !ok {
		return nil
	}
	out := make([]string, 0, len(sess.ephemeral))
	for p := range sess.ephemeral {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
