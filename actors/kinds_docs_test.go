package actors

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDocs_ActortypeListsEveryKind pins docs/metrics.md's list of
// actortype values to the Kind constants, read from this package's source
// so that a kind added later fails here until it is documented.
func TestDocs_ActortypeListsEveryKind(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range pkgs["actors"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !regexp.MustCompile(`^Kind[A-Z]`).MatchString(vs.Names[0].Name) {
				return true
			}
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, _ := strconv.Unquote(lit.Value)
				kinds = append(kinds, v)
			}
			return true
		})
	}
	if len(kinds) < 5 || !slices.Contains(kinds, string(KindSession)) {
		t.Fatalf("found kinds %v: the source scan is broken", kinds)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "`actortype` — the hermesd actor kind:")
	sentence, _, _ := strings.Cut(after, "— and")
	if !ok {
		t.Fatal("docs/metrics.md no longer lists the actortype values")
	}
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(sentence, -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(kinds)
	slices.Sort(listed)
	if !slices.Equal(kinds, listed) {
		t.Fatalf("docs/metrics.md lists actortype %v; the code has %v", listed, kinds)
	}
}
