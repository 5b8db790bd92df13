// Package pyclients runs Python programs with Debian's python3 and its kazoo
// (python3-kazoo): the clients tests' kazoo programs and the herd
// experiment's kazoo driver share it.
package pyclients

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Python is Debian's python3, which has python3-kazoo; not a pyenv one that
// may come first on PATH.
const Python = "/usr/bin/python3"

// InstallHint says how to get what is missing.
const InstallHint = "install Debian's python3-kazoo and python3-pure-sasl (make clientdeps)"

// Check reports whether Python imports every module (e.g. "kazoo.recipe.lock"),
// and if not, which one is missing and what to install.
func Check(ctx context.Context, modules ...string) error {
	for _, m := range modules {
		if out, err := exec.CommandContext(ctx, Python, "-c", "import "+m).CombinedOutput(); err != nil {
			return fmt.Errorf("%s cannot import %s: %w: %s; %s", Python, m, err, strings.TrimSpace(string(out)), InstallHint)
		}
	}
	return nil
}

// Command returns Python running script with args.
func Command(ctx context.Context, script string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, Python, append([]string{script}, args...)...)
}
