package main

import (
	"flag"

	"github.com/zkmodel/zkmodel/model"
)

// readOnlyFlags are ZooKeeper 3.8's read-only mode settings, as flags of `zkmodel serve` and of the stand-in's
// daemon: -readonly-mode (the system property readonlymode.enabled=true) and -local-sessions
// (localSessionsEnabled=true), with -local-sessions-upgrading (localSessionsUpgradingEnabled=true).
type readOnlyFlags struct {
	enabled        bool
	localSessions  bool
	localUpgrading bool
}

func (f *readOnlyFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.enabled, "readonly-mode", false, "a server without a quorum serves read-only sessions, as readonlymode.enabled=true")
	fs.BoolVar(&f.localSessions, "local-sessions", false, "localSessionsEnabled=true: an ensemble's sessions are local to their server, and a read-only server gives read-only (local) sessions; without it, their connect requests get NotReadOnly")
	fs.BoolVar(&f.localUpgrading, "local-sessions-upgrading", false, "localSessionsUpgradingEnabled=true: a local session that creates an ephemeral node is made global; without it, the create gets EphemeralOnLocalSession (-120)")
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
	if f.localUpgrading {
		opts = append(opts, model.WithLocalSessionsUpgrading())
	}
	return opts
}
