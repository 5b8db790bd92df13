package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// impureImports are the packages the core may not use: goroutines' synchronisation, randomness, I/O and the
// outside world all stay at the edges (model/server.go, model/wire.go). Package net's parsers (ParseIP,
// JoinHostPort: reconfig.go) are pure; its dialing, listening and lookups are not (see TestCoreIsPure).
var impureImports = map[string]bool{
	"sync": true, "sync/atomic": true, "math/rand": true, "math/rand/v2": true, "crypto/rand": true,
	"os": true, "io": true, "net/http": true, "context": true, "runtime": true, "reflect": true, "unsafe": true,
}

// TestCoreIsPure reads the core's own source: no goroutine, no channel, no wall clock (time.Now, time.Since,
// timers), no network, no package that brings randomness, I/O or synchronisation. Map iteration is allowed (the code
// sorts what it returns; the scenarios and the checker's determinism tests catch an order that leaks).
func TestCoreIsPure(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); impureImports[p] {
				t.Errorf("%s imports %s", fset.Position(imp.Pos()), p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a goroutine", fset.Position(x.Pos()))
			case *ast.ChanType:
				t.Errorf("%s: a channel", fset.Position(x.Pos()))
			case *ast.SelectorExpr:
				pkg, ok := x.X.(*ast.Ident)
				if ok && pkg.Name == "net" {
					for _, prefix := range []string{"Dial", "Listen", "Lookup", "Resolve", "Interface", "FileConn", "Pipe"} {
						if strings.HasPrefix(x.Sel.Name, prefix) {
							t.Errorf("%s: net.%s, the network", fset.Position(x.Pos()), x.Sel.Name)
						}
					}
				}
				if ok && pkg.Name == "time" {
					switch x.Sel.Name {
					case "Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker":
						t.Errorf("%s: time.%s, the wall clock", fset.Position(x.Pos()), x.Sel.Name)
					}
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source file read")
	}
}
