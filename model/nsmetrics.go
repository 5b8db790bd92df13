package model

import (
	"maps"
	"math"
	"slices"
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

// statOverheadBytes is what ZooKeeper adds to a read for the stat it returns: 6 longs and 5 ints.
const statOverheadBytes = 6*8 + 5*4

// nsSummary is one of those summaries: how many samples, their sum, least and greatest.
type nsSummary struct {
	cnt, sum, min, max int64
}

func (s *nsSummary) add(v int64) {
	if s.cnt == 0 || v < s.min {
		s.min = v
	}
	if s.cnt == 0 || v > s.max {
		s.max = v
	}
	s.cnt++
	s.sum += v
}

// lines formats the summary as mntr does, under the metric name (e.g. "a_write_per_namespace").
func (s nsSummary) lines(b *strings.Builder, name string) {
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

// nsCounts are the summaries of one kind (reads or writes), by namespace.
type nsCounts map[string]*nsSummary

func (m nsCounts) add(path string, bytes int) {
	ns := topNamespace(path)
	if ns == "" {
		return
	}
	s, ok := m[ns]
	if !ok {
		s = &nsSummary{}
		m[ns] = s
	}
	s.add(int64(bytes))
}

// wrote counts a write the tree applied: in a multi it waits until the multi commits (rollback drops it).
func (c *core) wrote(path string, bytes int) {
	if c.inMulti {
		c.pendingWrites = append(c.pendingWrites, pendingWrite{path, bytes})
		return
	}
	c.writes.add(path, bytes)
}

// pendingWrite is a write a running multi made, counted if the multi commits.
type pendingWrite struct {
	path  string
	bytes int
}

// commitWrites counts the writes of a multi that committed.
func (c *core) commitWrites() {
	for _, w := range c.pendingWrites {
		c.writes.add(w.path, w.bytes)
	}
	c.pendingWrites = c.pendingWrites[:0]
}

// noteRead counts a read that member served, if it succeeded.
func (s *Server) noteRead(member int, r *request, res result) {
	if res.err != nil || member < 0 || member >= len(s.ens.reads) {
		return
	}
	bytes := len(r.path) + statOverheadBytes
	switch r.op {
	case opGetData:
		bytes += len(res.data)
	case opGetChildren:
		for _, name := range res.children {
			bytes += len(name)
		}
	case opExists:
	default:
		return
	}
	if s.ens.reads[member] == nil {
		s.ens.reads[member] = nsCounts{}
	}
	s.ens.reads[member].add(r.path, bytes)
}

// namespaceLines formats a member's read summaries, then the writes, each by namespace; template holds the
// summaries a fresh server of that mode already lists (a fresh ensemble member lists the zookeeper namespace's
// writes, all zero).
func namespaceLines(b *strings.Builder, reads, writes nsCounts, template []string) {
	for _, kind := range []struct {
		name   string
		counts nsCounts
	}{{"read", reads}, {"write", writes}} {
		names := slices.Collect(maps.Keys(kind.counts))
		for _, line := range template {
			key, _, _ := strings.Cut(line, "\t")
			if ns, ok := strings.CutSuffix(strings.TrimPrefix(key, "zk_cnt_"), "_"+kind.name+"_per_namespace"); ok && strings.HasPrefix(key, "zk_cnt_") && !slices.Contains(names, ns) {
				names = append(names, ns)
			}
		}
		slices.Sort(names)
		for _, ns := range names {
			var sum nsSummary
			if s := kind.counts[ns]; s != nil {
				sum = *s
			}
			sum.lines(b, ns+"_"+kind.name+"_per_namespace")
		}
	}
}
