// go/types' answer for call sites: which declaration each called name means.
//
//	GO111MODULE=off GOPATH=DIR go run go_callees.go ROOT SITES.tsv > LABELS.tsv
//
// ROOT is a package tree under DIR/src (GOPATH mode: its imports are found there and in GOROOT).
// Every package folder under ROOT is parsed (test files aside) and type-checked with the source
// importer. SITES.tsv: one `path<TAB>line<TAB>col<TAB>name` a line (line 1-based, col 0-based, in
// bytes). For each, the identifier there is looked up in the checker's Uses: "internal<TAB>path<TAB>line"
// when it is a function, method or type declared under ROOT, "external" when it is declared
// outside ROOT (the standard library, a dependency, a builtin), "unknown" when the checker has no
// object there or it is a variable or field holding a function.
package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

type key struct {
	path      string
	line, col int
}

func main() {
	root, _ := filepath.Abs(os.Args[1])
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "source", nil)
	uses := map[key]types.Object{}
	dirs := map[string]bool{}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			dirs[filepath.Dir(p)] = true
		}
		return nil
	})
	for dir := range dirs {
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			continue
		}
		for name, pkg := range pkgs {
			if name == "main" && len(pkgs) > 1 {
				continue
			}
			var files []*ast.File
			for _, f := range pkg.Files {
				files = append(files, f)
			}
			info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
			conf := types.Config{Importer: imp, Error: func(error) {}}
			conf.Check(name, fset, files, info)
			for id, obj := range info.Uses {
				pos := fset.Position(id.Pos())
				rel, _ := filepath.Rel(root, pos.Filename)
				uses[key{filepath.ToSlash(rel), pos.Line, pos.Column - 1}] = obj
			}
		}
	}
	sites, err := os.Open(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	in := bufio.NewScanner(sites)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		f := strings.Split(in.Text(), "\t")
		if len(f) < 4 {
			continue
		}
		line, _ := strconv.Atoi(f[1])
		col, _ := strconv.Atoi(f[2])
		fmt.Fprintln(out, label(fset, root, uses[key{f[0], line, col}]))
	}
}

func label(fset *token.FileSet, root string, obj types.Object) string {
	switch obj.(type) {
	case nil:
		return "unknown"
	case *types.Builtin:
		return "external"
	case *types.Func, *types.TypeName:
	default:
		return "unknown"
	}
	if !obj.Pos().IsValid() {
		return "external"
	}
	pos := fset.Position(obj.Pos())
	rel, err := filepath.Rel(root, pos.Filename)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "external"
	}
	return fmt.Sprintf("internal\t%s\t%d", filepath.ToSlash(rel), pos.Line)
}
