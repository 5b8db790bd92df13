package model

import (
	"errors"
	"github.com/zkmodel/zkmodel/model/internal/core"
	"reflect"
	"slices"
	"time"
)

// ApplySettings gives the running server the settings a real server reads afresh when it is restarted: the
// options it is given replace the server's, and an option that is not given returns to its default — as a
// server started again without a JVM flag no longer has it. These options may be given: WithSuperDigest,
// WithSASL, WithSkipACL, WithReconfig, WithExtendedTypes, WithContainerCheckInterval, WithSessionTimeouts,
// WithReadOnlyMode, WithLocalSessions, WithLocalSessionsUpgrading, WithX509 and WithFourLetterWords. The tree, the
// sessions and the ensemble stay as they are; new logins, ACL checks,
// session negotiations and four-letter words follow the new settings (a connection keeps the identities it
// has: a real restart closes every connection, as StopServer does). Options that make the server what it is
// (WithSeed, WithTickTime, WithStartTime, WithManualTransport, WithObserver, WithEnsemble, WithMembers) are
// an error: they cannot change while it runs.
func (s *Server) ApplySettings(opts ...Option) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := config{seed: s.cfg.seed, tick: s.cfg.tick, start: s.cfg.start, manual: s.cfg.manual, observer: s.cfg.observer,
		members: s.cfg.members, memberList: s.cfg.memberList, check: DefaultContainerCheckInterval * time.Millisecond}
	for _, o := range opts {
		o(&next)
	}
	if next.seed != s.cfg.seed || next.tick != s.cfg.tick || !next.start.Equal(s.cfg.start) || next.manual != s.cfg.manual ||
		next.members != s.cfg.members || !slices.Equal(next.memberList, s.cfg.memberList) ||
		reflect.ValueOf(next.observer).Pointer() != reflect.ValueOf(s.cfg.observer).Pointer() {
		return errors.New("model: ApplySettings: the seed, tick time, start time, transport, observer and members are fixed when the server is made (NewServer); they cannot change while it runs")
	}
	if next.check <= 0 {
		return errors.New("model: ApplySettings: the container check interval must be positive")
	}
	if next.extended != s.cfg.extended || next.check != s.cfg.check {
		s.core.ConfigureReaper(next.extended, next.check.Milliseconds())
	}
	s.core.Configure(next.coreSettings())
	s.cfg = next
	s.saslState.lastUser = "" // the callback handler of the new JVM remembers nobody
	return nil
}

// coreSettings are the options the core's decisions depend on.
func (c *config) coreSettings() core.Settings {
	return core.Settings{SuperDigest: c.superDigest, SASLSuperUser: c.sasl.SuperUser, SASLACLs: c.sasl.ACLs,
		Reconfig: c.reconfig, SkipACL: c.skipACL, X509ACLs: c.x509}
}
