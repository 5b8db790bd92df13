package differential

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"
)

// The digest users sequences authenticate as ("user:password"). Their digest identities are rendered by name
// in transcripts (see showACL).
var (
	userAlice = [2]string{"alice", "alice-secret"}
	userBob   = [2]string{"bob", "bob-secret"}
)

// aclPool are the ACLs creates and setACL send, by index (Op.ACL); index 0 is what every other create sends.
// They cover the ACL checks a fake gets wrong: digest identities, "auth" (ErrInvalidACL for a session that
// added none), a read-only node, the ip scheme (every side's clients connect from 127.0.0.1), a parent whose
// children cannot be created or deleted, digest hashes that getACL hides without ADMIN, and a node that
// grants nothing.
var aclPool = []struct {
	name string
	acl  []zk.ACL
}{
	{"open", zk.WorldACL(zk.PermAll)},
	{"alice", zk.DigestACL(zk.PermAll, userAlice[0], userAlice[1])},
	{"auth", zk.AuthACL(zk.PermAll)},
	{"world-read", zk.WorldACL(zk.PermRead)},
	{"ip", []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}}},
	{"no-create-delete", zk.WorldACL(zk.PermRead | zk.PermWrite | zk.PermAdmin)},
	{"alice+world-read", append(zk.DigestACL(zk.PermAll, userAlice[0], userAlice[1]), zk.WorldACL(zk.PermRead)...)},
	{"world-admin+bob-read", append(zk.WorldACL(zk.PermAdmin), zk.DigestACL(zk.PermRead, userBob[0], userBob[1])...)},
	{"auth-read+world-write", append(zk.AuthACL(zk.PermRead|zk.PermAdmin), zk.WorldACL(zk.PermWrite)...)},
	{"none", zk.WorldACL(0)},
}

// authPool are the credentials addAuth sends: the two users, one of them with a wrong password (accepted: it
// is an identity no ACL names), the ip scheme (accepted, adds nothing), and, drawn least, a scheme the server
// does not know, which fails with ErrAuthFailed and costs the session its connection.
var authPool = []struct{ scheme, auth string }{
	{"digest", userAlice[0] + ":" + userAlice[1]},
	{"digest", userBob[0] + ":" + userBob[1]},
	{"digest", userAlice[0] + ":" + userAlice[1]},
	{"digest", userBob[0] + ":" + userBob[1]},
	{"digest", userAlice[0] + ":wrong"},
	{"ip", "127.0.0.1"},
	{"foo", "bar"},
}

// knownDigests names the digest identities of the users, full and as getACL shows them without ADMIN.
var knownDigests = func() map[string]string {
	m := map[string]string{}
	for _, u := range [][2]string{userAlice, userBob} {
		m[zk.DigestACL(zk.PermAll, u[0], u[1])[0].ID] = u[0] + ":<hash>"
	}
	return m
}()

// showACL renders an ACL as scheme:id:perms entries, in the server's order, the users' digest hashes by name.
func showACL(acl []zk.ACL) string {
	if acl == nil {
		return "nil"
	}
	parts := make([]string, len(acl))
	for i, a := range acl {
		id := a.ID
		if a.Scheme == "digest" {
			if name, ok := knownDigests[id]; ok {
				id = name
			}
		}
		parts[i] = fmt.Sprintf("%s:%s:%d", a.Scheme, id, a.Perms)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// isOpen reports whether acl is world:anyone with every permission, which the final tree leaves unsaid.
func isOpen(acl []zk.ACL) bool {
	return len(acl) == 1 && acl[0] == zk.WorldACL(zk.PermAll)[0]
}

// drawACL draws a create's ACL index: the open ACL two times in three, so that most nodes stay usable.
func drawACL(t *rapid.T) int {
	if rapid.IntRange(0, 2).Draw(t, "acl-kind") > 0 {
		return 0
	}
	return rapid.IntRange(1, len(aclPool)-1).Draw(t, "acl")
}

// genACLOp fills in an AddAuth, GetACL or SetACL.
func genACLOp(t *rapid.T, op *Op) {
	switch op.Kind {
	case AddAuth:
		a := authPool[rapid.IntRange(0, len(authPool)-1).Draw(t, "auth")]
		op.Scheme, op.Data = a.scheme, []byte(a.auth)
	case GetACL:
		op.Path = readPath(t)
	case SetACL:
		op.Path = rapid.SampledFrom(nodePaths).Draw(t, "path")
		op.ACL = rapid.IntRange(0, len(aclPool)-1).Draw(t, "acl")
		op.Version = rapid.SampledFrom(versions).Draw(t, "version")
	}
}

// aclOf returns the ACL a create or setACL sends.
func aclOf(op Op) []zk.ACL {
	if op.NilACL {
		return nil
	}
	return aclPool[op.ACL].acl
}
