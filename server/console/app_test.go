package console

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAppFilesResolve: every file the shell names and every module a
// script imports is an embedded asset, so no page load asks for a file
// that answers 404 (or for another origin: every reference is under
// /console/assets/ or relative to a script there).
func TestAppFilesResolve(t *testing.T) {
	shell := shellBody(t)
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(shell, -1)
	if len(refs) < 3 {
		t.Fatalf("the shell names %d files; want the script, the style and the icon", len(refs))
	}
	for _, m := range refs {
		ref := m[1]
		if ref == "/console/" || ref == "#main" {
			continue
		}
		name, ok := strings.CutPrefix(ref, Prefix)
		if !ok {
			t.Errorf("the shell names %q, outside %s", ref, Prefix)
			continue
		}
		if _, err := fs.Stat(embedded, "app/"+name); err != nil {
			t.Errorf("the shell names %q: %v", ref, err)
		}
	}
	imports := regexp.MustCompile(`(?m)^import [^'"]*['"]([^'"]+)['"]`)
	scripts := 0
	err := fs.WalkDir(embedded, "app/assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".js" {
			return err
		}
		scripts++
		src, err := fs.ReadFile(embedded, p)
		if err != nil {
			return err
		}
		for _, m := range imports.FindAllStringSubmatch(string(src), -1) {
			if !strings.HasPrefix(m[1], "./") && !strings.HasPrefix(m[1], "../") {
				t.Errorf("%s imports %q, not a file of the app", p, m[1])
				continue
			}
			if _, err := fs.Stat(embedded, path.Join(path.Dir(p), m[1])); err != nil {
				t.Errorf("%s imports %q: %v", p, m[1], err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scripts < 10 {
		t.Fatalf("walked %d scripts; the app has more", scripts)
	}
}

// TestAppNeverParsesMarkup: the app builds its pages from elements and
// text nodes only. A sink that parses a string as HTML, or runs one as
// code, would turn a stored key or result into markup (the CSP stops
// inline script, not an injected <img> or <form>). The shell has no
// inline script, style or handler, which the CSP would refuse anyway.
func TestAppNeverParsesMarkup(t *testing.T) {
	sinks := regexp.MustCompile(`\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(|createContextualFragment|DOMParser|setTimeout\(['"]`)
	err := fs.WalkDir(embedded, "app/assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".js" {
			return err
		}
		src, err := fs.ReadFile(embedded, p)
		if err != nil {
			return err
		}
		if m := sinks.FindString(string(src)); m != "" {
			t.Errorf("%s uses %s", p, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	shell := shellBody(t)
	if all, withSrc := strings.Count(shell, "<script"), len(regexp.MustCompile(`<script [^>]*src="[^"]+"[^>]*></script>`).FindAllString(shell, -1)); all != withSrc {
		t.Errorf("the shell has %d script elements, %d of them loading a file", all, withSrc)
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]+</script>`), // inline script
		regexp.MustCompile(`<style`),
		regexp.MustCompile(`\sstyle=`),
		regexp.MustCompile(`\son[a-z]+=`),
	} {
		if m := bad.FindString(shell); m != "" {
			t.Errorf("the shell has %q", m)
		}
	}
}

// calledPath is the path a script passes to post or fetch as a literal
// ('...', "..." or `...`, up to its first quote or substitution).
var calledPath = regexp.MustCompile("(?:post|fetch)\\(['\"`]([^'\"`$]*)")

// TestConsoleReachesDedupdOnlyThroughTheAPI: the console adds no way
// around the API's handlers, limits and metrics. Its Go side imports
// nothing of dedupd but the build version (no store, no service), and in
// the app only api.js calls fetch, on the API's paths and the session
// route alone.
func TestConsoleReachesDedupdOnlyThroughTheAPI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") && p != "github.com/dedupd/dedupd/internal/version" {
				t.Errorf("%s imports %s: the console reaches dedupd through the HTTP API only", name, p)
			}
		}
	}
	fetches := 0
	err = fs.WalkDir(embedded, "app/assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".js" {
			return err
		}
		src, err := fs.ReadFile(embedded, p)
		if err != nil {
			return err
		}
		n := strings.Count(string(src), "fetch(")
		if n > 0 && p != "app/assets/api.js" {
			t.Errorf("%s calls fetch: only api.js talks to dedupd", p)
		}
		fetches += n
		for _, m := range calledPath.FindAllStringSubmatch(string(src), -1) {
			if m[1] != "/console/api/session" && !strings.HasPrefix(m[1], "/dedup.v1.") {
				t.Errorf("%s calls %q, not the API", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fetches != 1 {
		t.Errorf("the app calls fetch %d times; api.js's post is the one call", fetches)
	}
}
