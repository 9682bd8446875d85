package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every field the JSON report prints is in docs/json-report.md: the
// reports of the recordings in testdata/replay (findings, GPUs, engines,
// restarts, verdicts) are walked key by key, and a key the document does
// not name, as "key" or `key`, fails.
func TestJSONReportDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "json-report.md"))
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := filepath.Glob(filepath.Join("testdata", "replay", "*.vtop"))
	if len(recs) == 0 {
		t.Fatal("no recordings in testdata/replay")
	}
	keys := map[string]string{} // key → where it was seen first
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if _, ok := keys[k]; !ok {
					keys[k] = path + "." + k
				}
				walk(path+"."+k, val)
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		}
	}
	for _, rec := range recs {
		_, out, errOut := runArgs(t, nil, "replay", "--once", "-o", "json", rec)
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%s: %v (stderr %q)", rec, err, errOut)
		}
		walk("", v)
	}
	var missing []string
	for k, at := range keys {
		if !documented(string(doc), k) {
			missing = append(missing, at)
		}
	}
	slices.Sort(missing)
	if len(keys) < 50 {
		t.Errorf("only %d keys seen: the reports prove little", len(keys))
	}
	if len(missing) > 0 {
		t.Errorf("docs/json-report.md does not name %d fields the report prints:\n%s", len(missing), strings.Join(missing, "\n"))
	}
}

// documented: the doc names key in code: delimited on the left by ` " . {
// , or ", " and on the right by ` " . , } [ : or a space.
func documented(doc, key string) bool {
	for i := 0; ; {
		j := strings.Index(doc[i:], key)
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len(key)
		i = at + 1
		if at == 0 || end >= len(doc) {
			continue
		}
		left := doc[at-1]
		okLeft := strings.IndexByte("`\".{,", left) >= 0 || left == ' ' && at >= 2 && doc[at-2] == ','
		if okLeft && strings.IndexByte("`\".,}[: ", doc[end]) >= 0 {
			return true
		}
	}
}
