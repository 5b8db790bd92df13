package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/zkmodel/zkmodel/check/shard"
)

// runMerge is `zkmodel merge FILE…`: it merges the reports that the parts of checker searches wrote
// (go test … -check.shard=i/n -check.report=FILE), one verdict per search, and prints them as a table. It
// fails when a search failed, so that a CI job that merges fails with it, and refuses reports that do not
// make whole searches (a part missing or given twice, parts of different searches).
func runMerge(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprintln(stdout, "usage: zkmodel merge REPORT.json…\n\nMerges the reports that the parts of a checker search wrote (go test … -check.shard=i/n\n-check.report=FILE) into the verdict one process would have reached, one row per search.")
		if len(args) == 0 {
			return fmt.Errorf("merge: name the reports to merge: %w", errUsage)
		}
		return nil
	}
	verdicts, err := shard.MergeFiles(args)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, shard.Table(verdicts))
	var failed []string
	for _, v := range verdicts {
		if v.Failed {
			failed = append(failed, fmt.Sprintf("%s (%s: %s)", v.Variant, v.Property, v.Verdict))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("merge: %d of %d searches failed: %s", len(failed), len(verdicts), strings.Join(failed, "; "))
	}
	return nil
}
