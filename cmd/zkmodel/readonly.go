package main

import (
	"flag"

	"github.com/zkmodel/zkmodel/model"
)

// readOnlyFlags are ZooKeeper 3.8's read-only mode settings, as flags of `zkmodel serve` and of the stand-in's
// daemon: -readonly-mode (the system property readonlymode.enabled=true) and -local-sessions
// (localSessionsEnabled=true).
type readOnlyFlags struct {
	enabled       bool
	localSessions bool
}

func (f *readOnlyFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.enabled, "readonly-mode", false, "a server without a quorum serves read-only sessions, as readonlymode.enabled=true")
	fs.BoolVar(&f.localSessions, "local-sessions", false, "localSessionsEnabled=true: a read-only server gives read-only (local) sessions; without it, their connect requests get NotReadOnly")
}

// options are the model's options for the flags.
func (f *readOnlyFlags) options() []model.Option {
	var opts []model.Option
	if f.enabled {
		opts = append(opts, model.WithReadOnlyMode())
	}
	if f.localSessions {
		opts = append(opts, model.WithLocalSessions())
	}
	return opts
}
