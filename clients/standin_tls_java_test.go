package clients

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkmodel/zkmodel/internal/tlstest"
	"github.com/zkmodel/zkmodel/realzk"
)

// nettyJars are what ZooKeeper 3.8's Netty client socket (and server factory) needs beside the jars
// zookeeper.jar's manifest names: Debian's zookeeper.jar leaves them out, so that neither zkCli.sh as shipped
// nor a JVM with zookeeper.jar alone can use TLS (measured: zkCli.sh gets NoClassDefFoundError
// io/netty/handler/codec/ByteToMessageDecoder, then io/netty/resolver/AddressResolverGroup, and every command
// ConnectionLoss).
var nettyJars = []string{"/usr/share/java/netty-codec.jar", "/usr/share/java/netty-resolver.jar"}

// clientDN is the test client certificate's subject as 3.8 names it (measured: whoAmI and the ACL that
// matches it).
const clientDN = `CN=client,OU=clients,O=zkmodel\, tests`

// x509DNs are the ACL ids TLSClient creates nodes with: the client's own, another, the client's with other
// case, a valid DN in RFC 1779 form, one that is no DN, and the empty DN.
var x509DNs = []string{clientDN, "CN=other", strings.ToLower(clientDN), "CN=client, O=x", "not a dn", ""}

// javaTLSTranscript is what TLSClient (java/TLSClient.java, with x509DNs) prints on a session whose x509
// identity is id ("" for none), as measured on 3.8.
func javaTLSTranscript(id string) string {
	who := "whoAmI ip:127.0.0.1"
	if id != "" {
		who = "whoAmI ip:127.0.0.1 x509:" + id // the order of 3.8's hash set, for this id
	}
	var b strings.Builder
	fmt.Fprintf(&b, "session\nget over tls version 0\nset version 1\n%s\n", who)
	for _, dn := range x509DNs {
		switch {
		case dn == "not a dn":
			fmt.Fprintf(&b, "create x509:%s: INVALIDACL\n", dn)
		case id != "" && dn == id:
			fmt.Fprintf(&b, "x509:%s: get mine, getACL x509:%s:31\n", dn, dn)
		default:
			fmt.Fprintf(&b, "x509:%s: get NOAUTH, getACL NOAUTH\n", dn)
		}
	}
	if id == clientDN {
		fmt.Fprintf(&b, "after setACL x509:%s: get again, getACL x509:%s:31\n", clientDN, clientDN)
	} else {
		fmt.Fprintf(&b, "after setACL x509:%s: get NOAUTH, getACL NOAUTH\n", clientDN)
	}
	return b.String()
}

// runTLSClient runs java/TLSClient against connect with the JVM flags and returns what it printed.
func runTLSClient(ctx context.Context, t *testing.T, connect, path string, flags []string) string {
	t.Helper()
	cp := curatorClassPath(t) + ":" + strings.Join(nettyJars, ":")
	args := append(append(slices.Clone(jvmFlags), flags...), "-cp", cp, "TLSClient", connect, path)
	cmd := exec.CommandContext(ctx, java, append(args, x509DNs...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("TLSClient on %s: %v\n%s%s", connect, err, out, stderr.String())
	}
	return string(out)
}

// tlsClientFlags are the Java client's TLS system properties: the Netty socket, the trust store, and the key
// store when keyStore is not "".
func tlsClientFlags(keyStore, trustStore string) []string {
	flags := []string{"-Dzookeeper.client.secure=true", "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"-Dzookeeper.ssl.trustStore.location=" + trustStore, "-Dzookeeper.ssl.trustStore.password=" + tlstest.Password}
	if keyStore != "" {
		flags = append(flags, "-Dzookeeper.ssl.keyStore.location="+keyStore, "-Dzookeeper.ssl.keyStore.password="+tlstest.Password)
	}
	return flags
}

// javaTLSSetup makes the test PKI and the Java client's stores, and returns the PKI and the client's JVM flags
// with its certificate and without one.
func javaTLSSetup(t *testing.T) (p *tlstest.PKI, withCert, withoutCert []string) {
	t.Helper()
	p = tlstest.NewPKI(t)
	keyStore, trustStore := p.ClientStores(t, t.TempDir())
	return p, tlsClientFlags(keyStore, trustStore), tlsClientFlags("", trustStore)
}

// zkCliTLSScript is what TestStandInTLSJava pipes into zkCli.sh over TLS.
const zkCliTLSScript = "create /tlscli x\nget /tlscli\nwhoami\ncreate /tlscli/other y x509:CN=other:cdrwa\nget /tlscli/other\n" +
	"create /tlscli/mine z auth::cdrwa\ngetAcl /tlscli/mine\nget /tlscli/mine\naddauth x509 CN=other\nwhoami\nls /tlscli\nquit\n"

// runZkCliTLS pipes zkCliTLSScript into Debian's zkCli.sh connected to addr over TLS (its class path given in
// CLIENT_JVMFLAGS: the script's own lacks the Netty jars) and returns its output without the lines that vary.
func runZkCliTLS(ctx context.Context, t *testing.T, addr string, flags []string) string {
	t.Helper()
	cp := strings.Join(append([]string{"/etc/zookeeper/conf", "/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-nop.jar"}, nettyJars...), ":")
	cmd := exec.CommandContext(ctx, zkCli, "-timeout", "3000", "-server", addr)
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS="+strings.Join(append(append(slices.Clone(jvmFlags), "-cp", cp), flags...), " "), "ZOO_LOG_DIR="+t.TempDir())
	cmd.Stdin = strings.NewReader(zkCliTLSScript)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("zkCli.sh over TLS on %s: %v\n%s", addr, err, out)
	}
	var keep, events []string
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		switch {
		case line == "", line == "WATCHER::", strings.HasPrefix(line, "Connecting to "), line == closedEvent:
		case eventLine.MatchString(line): // printed by the event thread, anywhere among the rest
			events = append(events, line)
		default:
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n") + "\nevents: " + strings.Join(events, "; ") + "\n"
}

// wantZkCliTLS is what zkCli.sh printed for zkCliTLSScript over TLS with the client certificate (measured; its
// getAcl writes a comma in an id as %2C).
const wantZkCliTLS = "Welcome to ZooKeeper!\nJLine support is disabled\n" +
	"Created /tlscli\nx\nAuth scheme: User\nip: 127.0.0.1\nx509: " + clientDN + "\nCreated /tlscli/other\n" +
	"Insufficient permission : /tlscli/other\nCreated /tlscli/mine\n'x509,'CN=client%2COU=clients%2CO=zkmodel\\%2C tests\n: cdrwa\nz\n" +
	"Auth scheme: User\nip: 127.0.0.1\nx509: " + clientDN + "\n[mine, other]\n" +
	"events: WatchedEvent state:SyncConnected type:None path:null\n"

// TestStandInTLSJava: ZooKeeper 3.8's Java client (java/TLSClient.java) and zkCli.sh over TLS, and the x509
// scheme client certificates give, with ssl.clientAuth need (the default), want and none — alike on a real 3.8
// and on the stand-in started from the same zoo.cfg lines. Measured on 3.8: a client certificate's subject
// (as X500Principal.getName writes it) is the connection's x509 identity from the handshake on, with need and
// want; with none the server asks for no certificate and there is none; without a client certificate, need
// refuses the handshake (no session) and want gives a session without the identity. x509:DN entries must be a
// DN (else InvalidACL), match the same string only (not another case), and count for the auth scheme; on the
// same server's plain port they are valid and match nobody; addauth x509 on a TLS connection leaves its
// identity as it was, and without a certificate (want) is AUTHFAILED (go-zookeeper). On a server without a secure port x509 ACLs are InvalidACL.
func TestStandInTLSJava(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*scenarioTimeout)
	t.Cleanup(cancel)
	p, withCert, withoutCert := javaTLSSetup(t)
	starts := []struct {
		name  string
		start func(t *testing.T, lines []string) (plain string)
	}{
		{"real", func(t *testing.T, lines []string) string {
			extra := map[string]string{}
			for _, l := range lines {
				k, v, _ := strings.Cut(l, "=")
				extra[k] = v
			}
			e, err := realzk.Start(ctx, realzk.Config{Servers: 1, ExtraConfig: extra, ClassPath: append(realzk.DefaultClassPath, nettyJars[0])})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return e.ConnectString()
		}},
		{"stand-in", func(t *testing.T, lines []string) string {
			return startCluster(ctx, t, clusterConfig{servers: 1, extra: lines}).addrs[0]
		}},
	}
	for _, clientAuth := range []string{"need", "want", "none"} {
		for _, side := range starts {
			t.Run(clientAuth+"/"+side.name, func(t *testing.T) {
				port := freePort(t)
				lines := p.Stores(t, t.TempDir(), "PKCS12", port)
				if clientAuth != "need" {
					lines = append(lines, "ssl.clientAuth="+clientAuth)
				}
				plain := side.start(t, lines)
				secure := fmt.Sprintf("127.0.0.1:%d", port)
				want := javaTLSTranscript(clientDN)
				if clientAuth == "none" {
					want = javaTLSTranscript("")
				}
				if got := runTLSClient(ctx, t, secure, "/with-cert", withCert); got != want {
					t.Errorf("TLSClient with a client certificate:\n%s\nwant\n%s", got, want)
				}
				want = javaTLSTranscript("")
				if clientAuth == "need" {
					want = "no session\n"
				}
				if got := runTLSClient(ctx, t, secure, "/without-cert", withoutCert); got != want {
					t.Errorf("TLSClient without a client certificate:\n%s\nwant\n%s", got, want)
				}
				if clientAuth == "want" {
					// An auth packet of scheme x509 on a TLS connection without a certificate.
					c, _ := tlsConnect(secure, &tls.Config{RootCAs: p.Pool})(t, 10*time.Second)
					conn := c.(*zk.Conn)
					err := conn.AddAuth("x509", []byte(clientDN))
					conn.Close()
					if !errors.Is(err, zk.ErrAuthFailed) {
						t.Errorf("addauth x509 without a client certificate: %v, want %v", err, zk.ErrAuthFailed)
					}
				}
				if clientAuth != "need" {
					return
				}
				if want, got := javaTLSTranscript(""), runTLSClient(ctx, t, plain, "/plain", nil); got != want {
					t.Errorf("TLSClient on the plain port:\n%s\nwant\n%s", got, want)
				}
				if got := runZkCliTLS(ctx, t, secure, withCert); got != wantZkCliTLS {
					t.Errorf("zkCli.sh over TLS:\n%s\nwant\n%s", got, wantZkCliTLS)
				}
			})
		}
	}
	// A server without a secure port knows no x509 scheme.
	sameOutcome(t, func(t *testing.T, tg target) string {
		ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
		defer cancel()
		if err := deleteTree(dialZK(t, tg), "/no-secure-port"); err != nil {
			t.Fatal(err)
		}
		return runTLSClient(ctx, t, tg.connect, "/no-secure-port", nil)
	})
}
