package model

import (
	"maps"
	"slices"
	"strings"

	"github.com/zkmodel/zkmodel/model/internal/core"
)

// noteRead counts a read that member served, if it succeeded.
func (s *Server) noteRead(member int, r *core.Request, res core.Result) {
	if res.Err != nil || member < 0 || member >= len(s.ens.reads) {
		return
	}
	bytes := len(r.Path) + core.StatOverheadBytes
	switch r.Op {
	case core.OpGetData:
		bytes += len(res.Data)
	case core.OpGetChildren:
		for _, name := range res.Children {
			bytes += len(name)
		}
	case core.OpExists:
	default:
		return
	}
	if s.ens.reads[member] == nil {
		s.ens.reads[member] = core.NamespaceCounts{}
	}
	s.ens.reads[member].Add(r.Path, bytes)
}

// namespaceLines formats a member's read summaries, then the writes, each by namespace; template holds the
// summaries a fresh server of that mode already lists (a fresh ensemble member lists the zookeeper namespace's
// writes, all zero).
func namespaceLines(b *strings.Builder, reads, writes core.NamespaceCounts, template []string) {
	for _, kind := range []struct {
		name   string
		counts core.NamespaceCounts
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
			var sum core.NamespaceSummary
			if s := kind.counts[ns]; s != nil {
				sum = *s
			}
			sum.Lines(b, ns+"_"+kind.name+"_per_namespace")
		}
	}
}
