#!/usr/bin/env bash
# zkServer.sh — zkmodel's stand-in for ZooKeeper's server script, for harnesses that start ZooKeeper
# (go-zookeeper's integration suite: ZOOKEEPER_BIN_PATH=<this directory>). It takes the real script's commands
# (start-foreground, start, stop, status, restart, print-cmd, version) and runs each server of a zoo.cfg as a
# member of one emulated ensemble; see package dropin (dropin/doc.go) for how.
#
# The zkmodel binary: $ZKMODEL_BIN if set, else zkmodel on PATH, else one built from this repository into
# ${XDG_CACHE_HOME:-~/.cache}/zkmodel/ (rebuilt when a Go file of the repository is newer than it).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ZKMODEL_HOME=${ZKMODEL_HOME:-$(dirname "$here")}
bin=${ZKMODEL_BIN:-}
if [ -z "$bin" ] && command -v zkmodel >/dev/null 2>&1; then
	bin=$(command -v zkmodel)
fi
if [ -z "$bin" ]; then
	repo=$(cd "$here/../.." && pwd)
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/zkmodel
	bin=$cache/zkmodel
	mkdir -p "$cache"
	(
		flock 9 # one build at a time, when several servers start at once
		if [ ! -x "$bin" ] || [ -n "$(find "$repo" -name '*.go' -newer "$bin" -print -quit)" ]; then
			command -v go >/dev/null 2>&1 || { echo "zkServer.sh: no zkmodel binary and no go to build one: set ZKMODEL_BIN, or put zkmodel or go on PATH" >&2; exit 1; }
			(cd "$repo" && go build -o "$bin.tmp" ./cmd/zkmodel) && mv "$bin.tmp" "$bin"
		fi
	) 9>"$cache/build.lock"
fi
# exec: the harness's pid is the server's, so that killing it stops the server.
exec "$bin" zkserver "$@"
