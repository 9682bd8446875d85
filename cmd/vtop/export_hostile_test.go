package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/record"
	"github.com/vtop-dev/vtop/sources"
)

// TestExportDamaged: a recording damaged part-way is exported up to the
// damage, and the exit status says the export is incomplete (it was 0).
func TestExportDamaged(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "replay", "kv-thrashing.vtop"))
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 2; i < len(b)/2+64; i++ {
		b[i] ^= 0x5a
	}
	path := filepath.Join(t.TempDir(), "damaged.vtop")
	os.WriteFile(path, b, 0o600)
	code, out, errOut := runArgs(t, nil, "export", "--format", "openmetrics", path)
	if code != 1 || !strings.Contains(errOut, "the export stops there") || !strings.Contains(out, "vllm:") {
		t.Errorf("exit %d, stderr %q, %d bytes out", code, errOut, len(out))
	}
}

// TestSaneWriter: what export writes to a terminal has every control and
// format byte of a label value escaped, line by line, newlines kept.
func TestSaneWriter(t *testing.T) {
	var buf bytes.Buffer
	w := &saneWriter{w: &buf}
	w.Write([]byte("a{m=\"x\x1b]0;pwned\x07\"} 1\nb{m=\"\u202e"))
	w.Write([]byte("y\"} 2\nc 3"))
	w.Flush()
	want := `a{m="x\x1b]0;pwned\x07"} 1` + "\n" + `b{m="\u{202e}y"} 2` + "\nc 3"
	if buf.String() != want {
		t.Errorf("got %q\nwant %q", buf.String(), want)
	}
}

// TestE2EExportToTerminal: `vtop export` of a recording whose label values
// carry escape sequences, straight to a terminal, neither sets the
// window's title nor switches screens: the bytes are shown escaped.
func TestE2EExportToTerminal(t *testing.T) {
	bin := vtopBinary(t)
	tm := newTerm(t, 120, 30)
	path := filepath.Join(tm.dir, "hostile.vtop")
	tg, _ := sources.ParseTarget("127.0.0.1:9")
	w, err := record.Create(path, record.Header{Interval: record.Duration(time.Second)}, []sources.Target{tg}, 0)
	if err != nil {
		t.Fatal(err)
	}
	body := "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\x1b]2;PWNED\x07\x1b[?1049h\"} 1\n"
	w.Scrape(&sources.Scrape{Target: tg.Name, Time: time.Now(), Body: []byte(body), ContentType: "text/plain; version=0.0.4"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tm.typeLine("clear; " + bin + " export " + path + "; echo EXPORT-EXIT=$?")
	s := tm.waitFor(10*time.Second, "EXPORT-EXIT=0")
	if !strings.Contains(s, `\x1b]2;PWNED\x07`) {
		t.Errorf("the label is not shown escaped:\n%s", s)
	}
	if title := tm.format("#{pane_title}"); strings.Contains(title, "PWNED") {
		t.Errorf("the export set the title: %q", title)
	}
	if alt := tm.format("#{alternate_on}"); alt != "0" {
		t.Errorf("the export switched to the alternate screen")
	}
}
