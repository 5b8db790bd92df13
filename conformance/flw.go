package conformance

// This file is the four-letter words' rule: a server answers each word as Debian's ZooKeeper 3.8.0 answered it
// in the same mode (flw/<scenario>/<word>.txt, measured; the format rules are in flw/README.md), the golden
// text literally but for the volatile figures it marks. The model's test asks the model, clients' asks Debian's
// zkServer.sh and the stand-in, and a user's fake can be asked the same.

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// measuredAnswers holds the answers measured on Debian's ZooKeeper 3.8.0: flw/<scenario>/<word>.txt.
//
//go:embed flw/*/*.txt
var measuredAnswers embed.FS

// FourLetterWords are the four-letter words whose answers were measured, one file each per scenario.
var FourLetterWords = []string{"srvr", "stat", "ruok", "envi", "conf", "cons", "crst", "srst", "dump", "wchs", "wchc", "wchp", "mntr", "isro", "dirs"}

// FourLetterScenarios are the servers the answers were measured on, each fresh: a standalone server
// ("standalone"), the leader and a follower of a 3-server ensemble ("leader", "follower") and the one server
// left of three ("noquorum"), all allowing every word; and with 3.8's default whitelist a standalone server
// ("default-whitelist") and the one left of three ("default-whitelist-noquorum").
var FourLetterScenarios = []string{"standalone", "leader", "follower", "noquorum", "default-whitelist", "default-whitelist-noquorum"}

// marks are the volatile figures a golden answer marks, and what each stands for.
var marks = map[string]string{"{{int}}": `-?\d+`, "{{float}}": `[0-9.]+`, "{{hex}}": `0x[0-9a-f]+`, "{{text}}": `[^\n]*`,
	"{{empty sets}}": emptySets}

// emptySet is one of dump's empty expiry buckets ("0 expire at <date>:"), which a server lists for
// connections and sessions gone or moved in the last seconds; {{empty sets}} stands for any number of them.
const (
	emptySet  = `0 expire at [^\n]*:\n`
	emptySets = `(?:` + emptySet + `)*`
)

// fourLetterPattern turns a golden answer into a regular expression that matches the whole answer: the text
// literally, with {{int}}, {{float}}, {{hex}} and {{text}} (anything up to the line's end) standing for
// the figures they mark, and {{empty sets}} for dump's empty expiry buckets, whole lines. An unknown or
// unterminated mark is an error.
func fourLetterPattern(golden string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`\A`)
	rest := golden
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("golden answer: %q opens a mark it does not close", rest[i:min(len(rest), i+20)])
		}
		mark := rest[i : i+j+2]
		re, ok := marks[mark]
		if !ok {
			return nil, fmt.Errorf("golden answer: unknown mark %s (known: {{int}}, {{float}}, {{hex}}, {{text}}, {{empty sets}})", mark)
		}
		b.WriteString(regexp.QuoteMeta(rest[:i]))
		b.WriteString(re)
		rest = rest[i+j+2:]
	}
	b.WriteString(regexp.QuoteMeta(rest))
	b.WriteString(`\z`)
	return regexp.Compile(b.String())
}

// CheckFourLetterWord reports whether answer is what Debian's ZooKeeper 3.8.0 answered to word (one of
// FourLetterWords) as the server of scenario (one of FourLetterScenarios), but for the volatile figures, and
// says how it differs when it is not. An unknown word or scenario is an error.
func CheckFourLetterWord(scenario, word, answer string) error {
	return checkFourLetterWord(measuredAnswers, scenario, word, answer)
}

// checkFourLetterWord is CheckFourLetterWord with the golden answers in answers (flw/<scenario>/<word>.txt).
func checkFourLetterWord(answers fs.FS, scenario, word, answer string) error {
	name := path.Join("flw", scenario, word+".txt")
	golden, err := fs.ReadFile(answers, name)
	if err != nil {
		return fmt.Errorf("the golden answer of %s %s: %w", scenario, word, err)
	}
	re, err := fourLetterPattern(string(golden))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !re.MatchString(answer) {
		return fmt.Errorf("%s %s: the answer differs from conformance/%s%s", scenario, word, name, firstDifference(string(golden), answer))
	}
	return nil
}

// firstDifference describes the first line where answer leaves golden (marks stand for one line's figures,
// and {{empty sets}} for whole lines, so lines can be compared one by one), or the whole answer when no line
// does.
func firstDifference(golden, answer string) string {
	want, got := strings.SplitAfter(golden, "\n"), strings.SplitAfter(answer, "\n")
	empty := regexp.MustCompile(`\A` + emptySet + `\z`)
	j := 0
	for i := 0; i < len(want) || j < len(got); i, j = i+1, j+1 {
		w := ""
		if i < len(want) {
			w = want[i]
		}
		if rest, ok := strings.CutPrefix(w, "{{empty sets}}"); ok {
			for j < len(got) && empty.MatchString(got[j]) {
				j++
			}
			w = rest
		}
		switch {
		case i >= len(want):
			return fmt.Sprintf(" at line %d: got %q, want nothing more", j+1, got[j])
		case j >= len(got):
			return fmt.Sprintf(" at line %d: got nothing more, want %q", j+1, w)
		}
		if re, err := fourLetterPattern(w); err == nil && !re.MatchString(got[j]) {
			return fmt.Sprintf(" at line %d: got %q, want %q", j+1, got[j], w)
		}
	}
	return fmt.Sprintf(": got %q, want %q", answer, golden)
}
