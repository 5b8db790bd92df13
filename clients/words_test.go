package clients

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/zkmodel/zkmodel/realzk"
)

// What kazoo_words.py prints of a standalone 3.8 server that allows every word (kazooWordsAll) and of one
// with 3.8's default whitelist, srvr alone (kazooWordsPlain).
const kazooWordsAll = "server_version: (3, 8, 0)\nruok: 'imok'\nisro: 'rw'\n" +
	"srvr starts: 'Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC'\n" +
	"srvr mode: ['Mode: standalone']\nstat lists my connection: True\n"
const kazooWordsPlain = "server_version failed: Unable to fetch useable server version after trying 4 times\n" +
	"ruok: 'ruok is not executed because it is not in the whitelist.\\n'\n" +
	"isro: 'isro is not executed because it is not in the whitelist.\\n'\n" +
	"srvr starts: 'Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC'\n" +
	"srvr mode: ['Mode: standalone']\nstat lists my connection: False\n"

// kazooWords runs kazoo_words.py on connect and returns what it printed.
func kazooWords(ctx context.Context, t *testing.T, connect string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, python, filepath.Join("python", "kazoo_words.py"), connect).Output()
	if err != nil {
		t.Errorf("kazoo_words.py on %s: %v\n%s", connect, err, out)
	}
	return string(out)
}

// TestKazooFourLetterWords: kazoo's server_version() and command() get the same from `zkmodel serve` (the
// built binary) as from a real ZooKeeper 3.8, with every word allowed and with 3.8's default whitelist
// (srvr alone: server_version fails, as it reads envi).
func TestKazooFourLetterWords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	all, stopAll := startServe(ctx, t, "-addr", "127.0.0.1:0", "-control", "127.0.0.1:0", "-4lw-whitelist", "*")
	defer stopAll()
	plain, stopPlain := startServe(ctx, t, "-addr", "127.0.0.1:0", "-control", "127.0.0.1:0")
	defer stopPlain()
	realPlain, err := realzk.Start(ctx, realzk.Config{Servers: 1, FourLetterWords: "srvr"})
	if err != nil {
		t.Fatal(err)
	}
	defer realPlain.Close()

	for _, tc := range []struct{ name, connect, want string }{
		{"real, every word", realTarget(t).connect, kazooWordsAll},
		{"zkmodel serve -4lw-whitelist '*'", all.Addr, kazooWordsAll},
		{"real, default whitelist", realPlain.ConnectString(), kazooWordsPlain},
		{"zkmodel serve", plain.Addr, kazooWordsPlain},
	} {
		if got := kazooWords(ctx, t, tc.connect); got != tc.want {
			t.Errorf("%s: kazoo_words.py printed\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
