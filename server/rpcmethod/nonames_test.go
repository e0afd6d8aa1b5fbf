package rpcmethod

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// notRPCs are the trees whose names are store operations, not RPCs (the
// store's decorators name spans and metric labels after its methods):
// what they name is no call's classification.
var notRPCs = []string{"server/store/", "server/metrics/store"}

// TestNoMethodNameRules: outside this package, no Go code under server/,
// cmd/ or internal/ decides anything from an RPC's name: no method's,
// service's or full name written out (to compare, switch or list), no
// prefix, suffix or substring test with a piece of one (Batch,
// /dedup.v1.AdminService/), no list of such pieces (Lookup, List, Get).
// Facts about an RPC come from the table.
func TestNoMethodNameRules(t *testing.T) {
	names := map[string]bool{}
	for _, m := range All() {
		names[m.Op], names[m.Service], names[m.FullName] = true, true, true
		names[string(m.Desc.Parent().FullName())] = true
	}
	piece := func(s string) bool {
		if !strings.ContainsFunc(s, unicode.IsLetter) {
			return false // "/", the separator every parser of a full name cuts at
		}
		for _, m := range All() {
			if strings.Contains(m.FullName, s) {
				return true
			}
		}
		return false
	}
	found := 0
	for _, root := range []string{"server", "cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join("..", "..", root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel := filepath.ToSlash(strings.TrimPrefix(path, filepath.Join("..", "..")+string(filepath.Separator)))
			if d.IsDir() && rel == "server/rpcmethod" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".pb.go") {
				return nil
			}
			for _, skip := range notRPCs {
				if strings.HasPrefix(rel, skip) {
					return nil
				}
			}
			found++
			for _, bad := range nameRules(t, path, names, piece) {
				t.Errorf("%s: %s", rel, bad)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < 100 {
		t.Fatalf("looked at %d files: the walk missed the tree", found)
	}
}

// nameRules lists the places in one file that test a string against an
// RPC's name or a piece of one.
func nameRules(t *testing.T, path string, names map[string]bool, piece func(string) bool) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	literal := func(e ast.Expr) (string, bool) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(lit.Value)
		return s, err == nil
	}
	var bad []string
	report := func(n ast.Node, what string) {
		bad = append(bad, fset.Position(n.Pos()).String()+": "+what)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			s, ok := literal(n)
			switch {
			case !ok:
			case strings.HasPrefix(s, "/dedup."):
				report(n, "a full method name written out: "+s)
			case names[s]:
				report(n, "an RPC's name written out: "+s)
			}
		case *ast.CompositeLit:
			for _, e := range n.Elts {
				if s, ok := literal(e); ok && !names[s] && affix(s) {
					report(e, "a list holding a piece of an RPC's name: "+s)
				}
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if pkg, isIdent := selX(sel); !ok || !isIdent || pkg != "strings" {
				return true
			}
			for _, arg := range n.Args {
				if s, ok := literal(arg); ok && piece(s) {
					report(n, "strings."+sel.Sel.Name+" with a piece of an RPC's name: "+s)
				}
			}
		}
		return true
	})
	return bad
}

// affix reports a word of three letters or more that begins or ends the
// name of some RPC ("Get", "List", "Batch").
func affix(s string) bool {
	if len(s) < 3 || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) {
		return false
	}
	for _, m := range All() {
		if strings.HasPrefix(m.Op, s) || strings.HasSuffix(m.Op, s) {
			return true
		}
	}
	return false
}

func selX(sel *ast.SelectorExpr) (string, bool) {
	if sel == nil {
		return "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}
