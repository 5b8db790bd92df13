package jaas

import (
	"maps"
	"strings"
	"testing"
)

// TestDigestUsers reads a server section as ZooKeeper's documentation writes it, with comments and a second
// section, and gets its users.
func TestDigestUsers(t *testing.T) {
	const text = `// the server's users
Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_super="adminsecret" /* the super user */
       user_jaasuser="pa ss\"word";
};
Client {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="jaasuser"
       password="x";
};
`
	cfg, err := Parse("jaas.conf", text)
	if err != nil {
		t.Fatal(err)
	}
	users, err := cfg.DigestUsers(ServerSection)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"super": "adminsecret", "jaasuser": `pa ss"word`}; !maps.Equal(users, want) {
		t.Errorf("users %v, want %v", users, want)
	}
	if users, err := cfg.DigestUsers("Client"); err != nil || len(users) != 0 {
		t.Errorf("Client section's users: %v, %v; want none", users, err)
	}
}

// TestMalformed: each malformed file is an error naming the file, the line and what is wrong.
func TestMalformed(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b" };`, `jaas.conf:1: section "Server", module org.apache.zookeeper.server.auth.DigestLoginModule: expected key=value or ';' ending the module, found "}"`},
		{`Server { org.apache.zookeeper.server.auth.DigestLoginModule needed user_a="b"; };`, `control flag "needed"`},
		{"Server {\n org.apache.zookeeper.server.auth.DigestLoginModule required\n user_a=\"b;\n};", `jaas.conf:3: a quoted string is not closed`},
		{`Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a=; };`, `option user_a has no value`},
		{`Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b"; }`, `expected ";", found the end of the file`},
		{`Server { X required; }; Server { X required; };`, `section "Server" appears twice`},
		{`/* open`, `a /* comment is not closed`},
	} {
		_, err := Parse("jaas.conf", tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v, want an error containing %q", tc.text, err, tc.want)
		}
	}
	cfg, err := Parse("jaas.conf", `Client { com.sun.security.auth.module.Krb5LoginModule required; };`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.DigestUsers(ServerSection); err == nil || !strings.Contains(err.Error(), `no section named "Server" (the file has [Client])`) {
		t.Errorf("a file without a Server section: %v", err)
	}
	cfg, _ = Parse("jaas.conf", `Server { com.sun.security.auth.module.Krb5LoginModule required; };`)
	if _, err := cfg.DigestUsers(ServerSection); err == nil || !strings.Contains(err.Error(), "has no "+DigestLoginModule) {
		t.Errorf("a Server section without DigestLoginModule: %v", err)
	}
}
