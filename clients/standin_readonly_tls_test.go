package clients

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestStandInReadOnlyTLS: a server of three with -Dreadonlymode.enabled=true (and local sessions), the only
// one started, each server with a secure client port of its own, serves TLS clients read-only — alike through
// Debian's zkServer.sh (its class path given Netty's codec jar in SERVER_JVMFLAGS) and the stand-in, from the
// same zoo.cfg files. The Java client over TLS (java/TLSClient.java) that allows read-only sessions gets one
// (ConnectedReadOnly) with its certificate's x509 identity, reads, and gets NotReadOnly for a create; one
// that does not allow read-only gets no session, nor does one without a client certificate.
func TestStandInReadOnlyTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*scenarioTimeout)
	t.Cleanup(cancel)
	p, withCert, withoutCert := javaTLSSetup(t)
	readOnly := func(flags []string) []string {
		return append(append([]string(nil), flags...), "-Dtlsclient.readonly=true")
	}
	// Measured on the real server; the stand-in is held to it.
	want := "with a certificate, read-only allowed: session ConnectedReadOnly, whoAmI ip:127.0.0.1 x509:" + clientDN +
		", get / 0 bytes, exists /ro false\ncreate /ro: NOTREADONLY\n" +
		"with a certificate, read-only not allowed: no session\n" +
		"without a certificate, read-only allowed: no session\n"
	for _, side := range standinSides {
		t.Run(side.name, func(t *testing.T) {
			var shared []string
			for _, l := range p.Stores(t, t.TempDir(), "PKCS12", 0) {
				if !strings.HasPrefix(l, "secureClientPort=") {
					shared = append(shared, l)
				}
			}
			ports := []int{freePort(t), freePort(t), freePort(t)}
			cp := strings.Join(append([]string{"/etc/zookeeper/conf", "/usr/share/java/zookeeper.jar"}, nettyJars[0]), ":")
			s := writeCluster(ctx, t, clusterConfig{script: side.script, servers: 3,
				jvmFlags:    "-cp " + cp + " -Dreadonlymode.enabled=true",
				extra:       append(shared, "localSessionsEnabled=true", "localSessionsUpgradingEnabled=true"),
				serverExtra: func(i int) []string { return []string{fmt.Sprintf("secureClientPort=%d", ports[i])} }})
			t.Cleanup(func() { _ = s.stop(0) })
			if err := s.launch(ctx, 0); err != nil {
				t.Fatal(err)
			}
			if isro := waitWord(ctx, t, s.addrs[0], "isro", "ro", 60*time.Second); isro != "ro" {
				t.Fatalf("the only server of three started: isro %q, want ro", isro)
			}
			secure := fmt.Sprintf("127.0.0.1:%d", ports[0])
			var got strings.Builder
			got.WriteString("with a certificate, read-only allowed: " + runTLSClient(ctx, t, secure, "/ro", readOnly(withCert)))
			got.WriteString("with a certificate, read-only not allowed: " + runTLSClient(ctx, t, secure, "/ro", withCert))
			got.WriteString("without a certificate, read-only allowed: " + runTLSClient(ctx, t, secure, "/ro", readOnly(withoutCert)))
			if got.String() != want {
				t.Errorf("%s:\n%s\nwant\n%s", side.name, got.String(), want)
			}
		})
	}
}
