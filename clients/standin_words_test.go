package clients

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkmodel/zkmodel/conformance"
	"github.com/zkmodel/zkmodel/realzk"
)

// notServing is what 3.8 answers most words without a quorum.
const notServing = "This ZooKeeper instance is not currently serving requests\n"

// TestStandInAnswersAsReal: Debian's zkServer.sh and the stand-in, started alike from standard zoo.cfg files
// (a 3-server ensemble and a standalone server, every four-letter word allowed or 3.8's default whitelist,
// a JAAS file in SERVER_JVMFLAGS and the SASL provider in zoo.cfg), answer every measured four-letter word
// as Debian's ZooKeeper 3.8.0 answered it (conformance/flw, but for the volatile figures): as leader,
// follower, standalone server, and the one server left of three; go-zookeeper's FLWRuok and kazoo's
// server_version() and command() get the same from both.
func TestStandInAnswersAsReal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	flags := "-Djava.security.auth.login.config=" + serverJAAS(t) + " -Dzookeeper.superUser=" + saslSuperUser
	sasl := "authProvider.1=" + saslAuthProvider
	for _, side := range []struct{ name, script string }{{"real", realZkServer}, {"stand-in", ""}} {
		t.Run(side.name, func(t *testing.T) {
			t.Parallel()
			cluster := func(servers int, defaultWhitelist bool) *standin {
				return startCluster(ctx, t, clusterConfig{script: side.script, servers: servers, jvmFlags: flags,
					defaultWhitelist: defaultWhitelist, extra: []string{sasl}})
			}
			// every asks addr each measured word and compares the answers with scenario's.
			every := func(addr, scenario string) {
				t.Helper()
				for _, word := range conformance.FourLetterWords {
					answer, err := realzk.FourLetter(ctx, addr, word)
					if err != nil {
						t.Fatalf("%s to %s (%s): %v", word, addr, scenario, err)
					}
					if err := conformance.CheckFourLetterWord(scenario, word, answer); err != nil {
						t.Error(err)
					}
				}
			}

			ensemble := cluster(3, false)
			defaults := cluster(3, true)
			standalone := cluster(1, false)
			plain := cluster(1, true)

			if oks := zk.FLWRuok(append(slices.Clone(ensemble.addrs), plain.addrs[0]), 10*time.Second); !slices.Equal(oks, []bool{true, true, true, false}) {
				t.Errorf("FLWRuok(3 servers allowing every word, 1 with the default whitelist) = %v", oks)
			}
			modes := map[string]int{}
			for _, addr := range ensemble.addrs {
				mode, err := realzk.ServerMode(ctx, addr)
				if err != nil {
					t.Fatal(err)
				}
				modes[mode]++
				every(addr, mode)
			}
			if modes["leader"] != 1 || modes["follower"] != 2 {
				t.Errorf("modes %v, want one leader and two followers", modes)
			}
			every(standalone.addrs[0], "standalone")
			every(plain.addrs[0], "default-whitelist")
			if got := kazooWords(ctx, t, standalone.addrs[0]); got != kazooWordsAll {
				t.Errorf("kazoo_words.py on the standalone server allowing every word printed\n%s\nwant\n%s", got, kazooWordsAll)
			}
			if got := kazooWords(ctx, t, plain.addrs[0]); got != kazooWordsPlain {
				t.Errorf("kazoo_words.py on the standalone server with the default whitelist printed\n%s\nwant\n%s", got, kazooWordsPlain)
			}

			// Two servers of three killed: the one left answers without a quorum.
			for _, c := range []*standin{ensemble, defaults} {
				for _, i := range []int{1, 2} {
					if err := c.stop(i); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, c := range []struct {
				cluster  *standin
				scenario string
			}{{ensemble, "noquorum"}, {defaults, "default-whitelist-noquorum"}} {
				if err := waitNotServing(ctx, c.cluster.addrs[0]); err != nil {
					t.Fatalf("%s: %v", c.scenario, err)
				}
				every(c.cluster.addrs[0], c.scenario)
			}
		})
	}
}

// waitNotServing returns once the server at addr answers srvr with notServing.
func waitNotServing(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last string
	for {
		answer, err := realzk.FourLetter(ctx, addr, "srvr")
		if err == nil && answer == notServing {
			return nil
		}
		last = strings.TrimSpace(answer)
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s still serves 60s after losing its quorum: srvr answered %q", addr, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
