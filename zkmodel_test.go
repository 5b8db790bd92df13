package zkmodel

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestVersionIsTheChangelogsLatest: Version is a semantic version, and CHANGELOG.md's first version heading
// names it — so that a release bumps both or the test fails.
func TestVersionIsTheChangelogsLatest(t *testing.T) {
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(Version) {
		t.Fatalf("Version %q is not vMAJOR.MINOR.PATCH", Version)
	}
	data, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## v") {
			if got := strings.TrimPrefix(line, "## "); got != Version {
				t.Fatalf("CHANGELOG.md's latest version is %s, Version is %s", got, Version)
			}
			return
		}
	}
	t.Fatal("CHANGELOG.md has no \"## vX.Y.Z\" heading")
}
