package main

import (
	"flag"
	"fmt"

	"github.com/zkmodel/zkmodel/internal/jaas"
	"github.com/zkmodel/zkmodel/model"
)

// saslFlags are the SASL flags serve and the stand-in's daemon share: what a real server gets from
// -Djava.security.auth.login.config, -Dzookeeper.sasl.serverconfig, -Dzookeeper.superUser and an
// authProvider line naming SASLAuthenticationProvider.
type saslFlags struct {
	jaasFile  string
	section   string
	superUser string
	acls      bool
}

// register adds the flags to fs.
func (f *saslFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.jaasFile, "jaas", "", "JAAS login `file` whose server section's DigestLoginModule users (user_NAME=\"PASSWORD\") log in by SASL DIGEST-MD5, as -Djava.security.auth.login.config (empty: no SASL logins)")
	fs.StringVar(&f.section, "jaas-section", jaas.ServerSection, "the JAAS file's server `section`, as -Dzookeeper.sasl.serverconfig")
	fs.StringVar(&f.superUser, "sasl-superuser", "", "the SASL `user` whose login is super, as -Dzookeeper.superUser")
	fs.BoolVar(&f.acls, "sasl-acls", false, "accept and check sasl:USER ACLs, as authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
}

// option reads the JAAS file and returns the model's SASL option, or an error saying what is wrong with the
// file. Without -jaas, -sasl-superuser and -sasl-acls still apply (nobody can log in).
func (f *saslFlags) option() (model.Option, error) {
	cfg := model.SASLConfig{SuperUser: f.superUser, ACLs: f.acls}
	if f.jaasFile != "" {
		parsed, err := jaas.ReadFile(f.jaasFile)
		if err != nil {
			return nil, fmt.Errorf("-jaas %s: %w", f.jaasFile, err)
		}
		if cfg.Users, err = parsed.DigestUsers(f.section); err != nil {
			return nil, fmt.Errorf("-jaas %s: %w", f.jaasFile, err)
		}
	}
	return model.WithSASL(cfg), nil
}
