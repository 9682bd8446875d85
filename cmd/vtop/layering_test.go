package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const mod = "github.com/vtop-dev/vtop"

// TestLayering enforces the one-way shape of STYLE.md:
// sources → diagnose → ui/themes → app → cmd. Lower layers never import higher
// ones, and only ui (and cmd) may import the terminal libraries.
func TestLayering(t *testing.T) {
	// deps: forbidden anywhere below the package; direct: forbidden as a
	// direct import (diagnose and ui get sources' plain values, and with them
	// a transitive net/http, but never do I/O themselves).
	rules := []struct {
		pkg    string
		direct bool
		forbid []string
	}{
		{mod + "/sources/...", false, []string{mod + "/diagnose", mod + "/ui", mod + "/themes", mod + "/app", mod + "/cmd", "github.com/charmbracelet/"}},
		// The simulator and the recording format are peers of the sources:
		// they may use sources, never what reads them.
		{mod + "/sim/...", false, []string{mod + "/diagnose", mod + "/ui", mod + "/themes", mod + "/app", mod + "/cmd", "github.com/charmbracelet/"}},
		{mod + "/record/...", false, []string{mod + "/diagnose", mod + "/ui", mod + "/themes", mod + "/app", mod + "/cmd", "github.com/charmbracelet/"}},
		{mod + "/diagnose/...", false, []string{mod + "/ui", mod + "/themes", mod + "/app", mod + "/cmd", "github.com/charmbracelet/"}},
		{mod + "/diagnose/...", true, []string{"net", "net/http", "os/exec", "os/signal"}},
		// Numbers are spelled in the ui only: the engine and the detector
		// hand over sentences whose numbers are still numbers (diagnose.Text),
		// and the format package imports only the diagnose types it spells.
		{mod + "/ui/format", true, []string{mod + "/sources", mod + "/diagnose/", mod + "/ui/", mod + "/app", mod + "/cmd", "github.com/charmbracelet/"}},
		{mod + "/diagnose/...", false, []string{mod + "/ui/format"}},
		{mod + "/sources/...", false, []string{mod + "/ui/format"}},
		// The port holder is a leaf the simulator and the tests share.
		{mod + "/internal/holdport", false, []string{mod + "/"}},
		{mod + "/themes/...", false, []string{mod + "/sources", mod + "/diagnose", mod + "/ui", mod + "/app", mod + "/cmd", "github.com/charmbracelet/"}},
		{mod + "/ui/...", false, []string{mod + "/app", mod + "/cmd"}},
		// The pipeline, its hub and the replay player run a program; cmd
		// only parses, wires and exits. They never draw: the TUI takes
		// their frames through ui.Hub (ui's plain types come with it).
		{mod + "/app/...", false, []string{mod + "/cmd"}},
		{mod + "/app/...", true, []string{"github.com/charmbracelet/bubbletea", "github.com/charmbracelet/lipgloss", "os/signal"}},
		{mod + "/ui/...", true, []string{"net", "net/http", "os/exec", "os/signal"}},
	}
	// The detector reads the engine's views; the engine never knows the
	// detector (diagnose/detect imports diagnose, never the reverse).
	out, err := exec.Command("go", "list", "-deps", mod+"/diagnose").CombinedOutput()
	if err != nil {
		t.Fatalf("go list diagnose: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, mod+"/diagnose/") {
			t.Errorf("%s depends on %s", mod+"/diagnose", dep)
		}
	}
	for _, r := range rules {
		args := []string{"list", "-deps", "-f", "{{.ImportPath}}", r.pkg}
		if r.direct {
			args = []string{"list", "-f", `{{join .Imports "\n"}}`, r.pkg}
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			if strings.Contains(string(out), "matched no packages") {
				continue
			}
			t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range r.forbid {
				hit := strings.HasPrefix(dep, f) && !strings.HasPrefix(dep, strings.TrimSuffix(r.pkg, "/..."))
				if r.direct {
					hit = dep == f
				}
				if hit {
					t.Errorf("%s depends on %s", r.pkg, dep)
				}
			}
		}
	}
}

// TestDiagnoseHasNoClock: diagnose and its detector take time as a
// parameter, so their results are reproducible; they never call time.Now
// or time.Since.
func TestDiagnoseHasNoClock(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "diagnose", "*.go"))
	detect, _ := filepath.Glob(filepath.Join("..", "..", "diagnose", "detect", "*.go"))
	if len(files) == 0 || len(detect) == 0 {
		t.Fatal("no diagnose or diagnose/detect sources found")
	}
	files = append(files, detect...)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && (sel.Sel.Name == "Now" || sel.Sel.Name == "Since" || sel.Sel.Name == "Until") {
				t.Errorf("%s: diagnose reads the clock (time.%s)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
