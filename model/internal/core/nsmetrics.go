package core

import (
	"math"
	"strconv"
	"strings"
)

// ZooKeeper 3.8 keeps, per top-level namespace (the first component of a path: "a" for /a/b/c), a summary of
// the bytes its writes and its reads moved, and mntr lists them as zk_{avg,min,max,cnt,sum}_<ns>_write_per_namespace
// and …_read_per_namespace. Measured on Debian's 3.8.0:
//   - a write is counted by every server that applies it: a create (path and data lengths), a setData (path
//     and new data), a delete (the path), in a multi only when the multi commits, the deletes of a closing
//     session's ephemerals and of the TTL and container managers too; a failed write counts nothing;
//   - a read is counted by the server that serves it, and only when it succeeds: getData (path, data and
//     the 68 bytes of a stat), exists (path and stat), getChildren (path, the children's names, and stat);
//     getACL, sync and reads of "/" count nothing.
//
// The model counts writes once for the whole ensemble (a real server that restarts counts again what it
// replays from its log; the model does not) and reads per member, from the member's last start.

// StatOverheadBytes is what ZooKeeper adds to a read for the stat it returns: 6 longs and 5 ints.
const StatOverheadBytes = 6*8 + 5*4

// NamespaceSummary is one of those summaries: how many samples, their sum, least and greatest.
type NamespaceSummary struct {
	cnt, sum, min, max int64
}

func (s *NamespaceSummary) add(v int64) {
	if s.cnt == 0 || v < s.min {
		s.min = v
	}
	if s.cnt == 0 || v > s.max {
		s.max = v
	}
	s.cnt++
	s.sum += v
}

// Lines formats the summary as mntr does, under the metric name (e.g. "a_write_per_namespace").
func (s NamespaceSummary) Lines(b *strings.Builder, name string) {
	avg := 0.0
	if s.cnt > 0 {
		avg = math.Round(float64(s.sum)/float64(s.cnt)*1e4) / 1e4 // 3.8 rounds the average to 4 places
	}
	for _, kv := range [][2]string{
		{"avg", javaDouble(avg)},
		{"min", strconv.FormatInt(s.min, 10)},
		{"max", strconv.FormatInt(s.max, 10)},
		{"cnt", strconv.FormatInt(s.cnt, 10)},
		{"sum", strconv.FormatInt(s.sum, 10)},
	} {
		b.WriteString("zk_" + kv[0] + "_" + name + "\t" + kv[1] + "\n")
	}
}

// javaDouble formats x as Java's Double.toString does for the values mntr prints: the shortest decimal that
// reads back as x, with at least one digit after the point, and computerised scientific notation ("1.0E7")
// from 10⁷ up.
func javaDouble(x float64) string {
	if x >= 1e7 {
		mant, exp, _ := strings.Cut(strconv.FormatFloat(x, 'E', -1, 64), "E")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		e, _ := strconv.Atoi(exp)
		return mant + "E" + strconv.Itoa(e)
	}
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// topNamespace is the first component of path ("" for "/", which no summary counts).
func topNamespace(path string) string {
	ns, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return ns
}

// NamespaceCounts are the summaries of one kind (reads or writes), by namespace.
type NamespaceCounts map[string]*NamespaceSummary

func (m NamespaceCounts) Add(path string, bytes int) {
	ns := topNamespace(path)
	if ns == "" {
		return
	}
	s, ok := m[ns]
	if !ok {
		s = &NamespaceSummary{}
		m[ns] = s
	}
	s.add(int64(bytes))
}

// wrote counts a write the tree applied: in a multi it waits until the multi commits (rollback drops it).
func (c *Core) wrote(path string, bytes int) {
	if c.inMulti {
		c.pendingWrites = append(c.pendingWrites, pendingWrite{path, bytes})
		return
	}
	c.writes.Add(path, bytes)
}

// pendingWrite is a write a running multi made, counted if the multi commits.
type pendingWrite struct {
	path  string
	bytes int
}

// commitWrites counts the writes of a multi that committed.
func (c *Core) commitWrites() {
	for _, w := range c.pendingWrites {
		c.writes.Add(w.path, w.bytes)
	}
	c.pendingWrites = c.pendingWrites[:0]
}
