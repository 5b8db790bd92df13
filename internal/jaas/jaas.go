// Package jaas reads Java's JAAS login configuration files (the file -Djava.security.auth.login.config
// names) as far as ZooKeeper's DIGEST-MD5 logins use them: the users of a server section's DigestLoginModule.
package jaas

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// DigestLoginModule is the login module class of ZooKeeper's DIGEST-MD5 sections.
const DigestLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"

// ServerSection is the section ZooKeeper's server reads (zookeeper.sasl.serverconfig's default).
const ServerSection = "Server"

// Module is one login module entry of a section.
type Module struct {
	Class   string
	Flag    string            // required, requisite, sufficient or optional
	Options map[string]string // key=value pairs, quotes removed
}

// Config is a parsed file: its sections by name, each with its modules in order.
type Config map[string][]Module

// Parse reads JAAS configuration text: sections `Name { Class Flag key=value ...; ... };`, with // and
// /* */ comments. name is used in errors.
func Parse(name string, text string) (Config, error) {
	p := &parser{name: name, src: text, line: 1}
	cfg := Config{}
	for {
		tok, err := p.next()
		if err != nil {
			return nil, err
		}
		if tok == "" {
			return cfg, nil
		}
		if tok == "{" || tok == "}" || tok == ";" || tok == "=" {
			return nil, p.errorf("expected a section name, found %q", tok)
		}
		section := tok
		if _, dup := cfg[section]; dup {
			return nil, p.errorf("section %q appears twice", section)
		}
		if err := p.expect("{"); err != nil {
			return nil, err
		}
		var modules []Module
		for {
			tok, err := p.next()
			if err != nil {
				return nil, err
			}
			if tok == "}" {
				break
			}
			if tok == "" || tok == "{" || tok == ";" || tok == "=" {
				return nil, p.errorf("section %q: expected a login module class or '}', found %s", section, quoteTok(tok))
			}
			m := Module{Class: tok, Options: map[string]string{}}
			if m.Flag, err = p.next(); err != nil {
				return nil, err
			}
			if !slices.Contains([]string{"required", "requisite", "sufficient", "optional"}, strings.ToLower(m.Flag)) {
				return nil, p.errorf("section %q, module %s: control flag %s, want required, requisite, sufficient or optional", section, m.Class, quoteTok(m.Flag))
			}
			for {
				key, err := p.next()
				if err != nil {
					return nil, err
				}
				if key == ";" {
					break
				}
				if key == "" || key == "{" || key == "}" || key == "=" {
					return nil, p.errorf("section %q, module %s: expected key=value or ';' ending the module, found %s", section, m.Class, quoteTok(key))
				}
				if err := p.expect("="); err != nil {
					return nil, err
				}
				value, err := p.next()
				if err != nil {
					return nil, err
				}
				if !p.quoted && (value == "" || value == "{" || value == "}" || value == ";" || value == "=") {
					return nil, p.errorf("section %q, module %s: option %s has no value", section, m.Class, key)
				}
				m.Options[key] = value
			}
			modules = append(modules, m)
		}
		if err := p.expect(";"); err != nil {
			return nil, err
		}
		cfg[section] = modules
	}
}

// ReadFile parses the file at path.
func ReadFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("jaas: %w", err)
	}
	return Parse(path, string(b))
}

// DigestUsers returns the users (name to password) of the section's DigestLoginModule entries, from their
// user_NAME="PASSWORD" options. A missing section, or one without a DigestLoginModule, is an error saying so.
func (c Config) DigestUsers(section string) (map[string]string, error) {
	modules, ok := c[section]
	if !ok {
		names := make([]string, 0, len(c))
		for n := range c {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("jaas: no section named %q (the file has %v): ZooKeeper's server logs its users in from a %q section", section, names, section)
	}
	users := map[string]string{}
	found := false
	for _, m := range modules {
		if m.Class != DigestLoginModule {
			continue
		}
		found = true
		for k, v := range m.Options {
			if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
				users[name] = v
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("jaas: section %q has no %s (only DIGEST-MD5 logins are modelled)", section, DigestLoginModule)
	}
	return users, nil
}

// parser is a tokenizer for JAAS text: words, quoted strings and the punctuation { } ; =.
type parser struct {
	name   string
	src    string
	pos    int
	line   int
	quoted bool // the last token was a quoted string
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("jaas: %s:%d: %s", p.name, p.line, fmt.Sprintf(format, args...))
}

func quoteTok(tok string) string {
	if tok == "" {
		return "the end of the file"
	}
	return fmt.Sprintf("%q", tok)
}

func (p *parser) expect(want string) error {
	tok, err := p.next()
	if err != nil {
		return err
	}
	if tok != want || p.quoted {
		return p.errorf("expected %q, found %s", want, quoteTok(tok))
	}
	return nil
}

// next returns the next token, "" at the end of the text.
func (p *parser) next() (string, error) {
	p.quoted = false
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case strings.HasPrefix(p.src[p.pos:], "//"):
			end := strings.IndexByte(p.src[p.pos:], '\n')
			if end < 0 {
				p.pos = len(p.src)
			} else {
				p.pos += end
			}
		case strings.HasPrefix(p.src[p.pos:], "/*"):
			end := strings.Index(p.src[p.pos+2:], "*/")
			if end < 0 {
				return "", p.errorf("a /* comment is not closed")
			}
			p.line += strings.Count(p.src[p.pos:p.pos+2+end], "\n")
			p.pos += 2 + end + 2
		case c == '{' || c == '}' || c == ';' || c == '=':
			p.pos++
			return string(c), nil
		case c == '"':
			var b strings.Builder
			start := p.line
			for p.pos++; p.pos < len(p.src); p.pos++ {
				c := p.src[p.pos]
				if c == '\\' && p.pos+1 < len(p.src) {
					p.pos++
					b.WriteByte(p.src[p.pos])
					continue
				}
				if c == '"' {
					p.pos++
					p.quoted = true
					return b.String(), nil
				}
				if c == '\n' {
					p.line++
				}
				b.WriteByte(c)
			}
			p.line = start
			return "", p.errorf("a quoted string is not closed")
		default:
			start := p.pos
			for p.pos < len(p.src) && !strings.ContainsRune(" \t\r\n{};=\"", rune(p.src[p.pos])) && !strings.HasPrefix(p.src[p.pos:], "//") && !strings.HasPrefix(p.src[p.pos:], "/*") {
				p.pos++
			}
			return p.src[start:p.pos], nil
		}
	}
	return "", nil
}
