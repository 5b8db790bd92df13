package differential

import (
	"fmt"
	"slices"
	"strings"
)

// Compare returns a description of the first difference between two transcripts of one sequence,
// or "" when they agree.
func Compare(a, b *Transcript) string {
	if d := diffLines("session events of connecting", a.Connect, b.Connect); d != "" {
		return d
	}
	for i := 0; i < max(len(a.Steps), len(b.Steps)); i++ {
		if i >= len(a.Steps) || i >= len(b.Steps) {
			return fmt.Sprintf("step %d: only one side has it (%s: %d steps, %s: %d steps)", i+1, a.Side, len(a.Steps), b.Side, len(b.Steps))
		}
		sa, sb := a.Steps[i], b.Steps[i]
		if sa.Result != sb.Result {
			return fmt.Sprintf("step %d (%s): results differ:\n  %s: %s\n  %s: %s", i+1, sa.Op, a.Side, sa.Result, b.Side, sb.Result)
		}
		if d := diffLines(fmt.Sprintf("step %d (%s): events received before the call returned", i+1, sa.Op), sa.AtReturn, sb.AtReturn); d != "" {
			return d
		}
		if d := diffLines(fmt.Sprintf("step %d (%s): events", i+1, sa.Op), sa.Events, sb.Events); d != "" {
			return d
		}
	}
	if d := diffLines("final tree", a.Final, b.Final); d != "" {
		return d
	}
	return diffLines("events of closing the sessions at the end", a.Closing, b.Closing)
}

func diffLines(what string, a, b []string) string {
	if slices.Equal(a, b) {
		return ""
	}
	return fmt.Sprintf("%s differ:\n  %v\n  %v", what, a, b)
}

// SideBySide renders two transcripts of one sequence in two columns, marking with "!" the lines
// that differ. It leaves out the base paths, so that the same sequence renders the same way on every
// run (rapid compares a shrunk failure's message with the original's).
func SideBySide(a, b *Transcript) string {
	var left, right []string
	var marks []bool
	add := func(l, r []string) {
		for i := 0; i < max(len(l), len(r)); i++ {
			var x, y string
			if i < len(l) {
				x = l[i]
			}
			if i < len(r) {
				y = r[i]
			}
			left, right, marks = append(left, x), append(right, y), append(marks, x != y)
		}
	}
	header := func(s string) {
		left, right, marks = append(left, s), append(right, s), append(marks, false)
	}
	header("== connect")
	add(a.Connect, b.Connect)
	for i := 0; i < max(len(a.Steps), len(b.Steps)); i++ {
		var sa, sb Step
		if i < len(a.Steps) {
			sa = a.Steps[i]
		}
		if i < len(b.Steps) {
			sb = b.Steps[i]
		}
		op := sa.Op
		if i >= len(a.Steps) {
			op = sb.Op
		}
		header(fmt.Sprintf("== %d: %s", i+1, op))
		add([]string{"-> " + sa.Result}, []string{"-> " + sb.Result})
		add(prefix("   at return: ", sa.AtReturn), prefix("   at return: ", sb.AtReturn))
		add(prefix("   ", sa.Events), prefix("   ", sb.Events))
		add(prefix("   (not compared) ", sa.Uncompared), prefix("   (not compared) ", sb.Uncompared))
	}
	header("== final tree")
	add(a.Final, b.Final)
	header("== closing")
	add(a.Closing, b.Closing)

	width := len(a.Side)
	for i, l := range left {
		if !strings.HasPrefix(l, "==") || marks[i] {
			width = max(width, len(l))
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "  %-*s | %s\n", width, a.Side, b.Side)
	for i := range left {
		if !marks[i] && strings.HasPrefix(left[i], "==") {
			fmt.Fprintf(&out, "  %s\n", left[i])
			continue
		}
		mark := " "
		if marks[i] {
			mark = "!"
		}
		fmt.Fprintf(&out, "%s %-*s | %s\n", mark, width, left[i], right[i])
	}
	return out.String()
}

func prefix(p string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = p + l
	}
	return out
}
