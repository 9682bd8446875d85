package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// hostileNames are the payloads a crafted recording or config file uses:
// the terminal title (OSC 0), the clipboard (OSC 52), a screen clear, a
// bidi override, a C1 CSI and an invalid byte.
var hostileNames = []string{
	"chat\x1b]0;pwned\x07",
	"chat\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07",
	"chat\x1b[2J\x1b[H",
	"chat\u202egnp.exe",
	"chat\u009b31m",
}

// walkStrings calls f with every string v holds: struct fields, slices,
// maps (keys too), pointers and interfaces (a decoded JSON document).
func walkStrings(v reflect.Value, f func(string)) {
	switch v.Kind() {
	case reflect.String:
		f(v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), f)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				walkStrings(v.Field(i), f)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := 0; i < v.Len(); i++ {
			walkStrings(v.Index(i), f)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			walkStrings(it.Key(), f)
			walkStrings(it.Value(), f)
		}
	}
}

// assertSafeStrings fails when any string in v would reach a terminal
// with a control, format or invalid byte in it.
func assertSafeStrings(t *testing.T, what string, v any) {
	t.Helper()
	n := 0
	walkStrings(reflect.ValueOf(v), func(s string) {
		n++
		if sources.Sanitize(s, 0) != s {
			t.Errorf("%s: unsanitized string %q", what, s)
		}
	})
	if n == 0 {
		t.Errorf("%s: no string walked", what)
	}
}

// TestReplayHostileRecording: a recording whose header carries SLO
// profile names and descriptions with escape sequences (a crafted file)
// is replayed without one byte of them reaching the output: the text
// report, and every string field of the JSON report.
func TestReplayHostileRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hostile.vtop")
	rcs := []sim.ReplicaConfig{{Name: "r0", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}}}
	simRunRules(t, path, rcs, 45, nil, func(rc *detect.RulesConfig) {
		for _, n := range hostileNames {
			rc.Profiles = append(rc.Profiles, diagnose.SLO{Name: n, Desc: n, TTFT: time.Millisecond, ITL: time.Microsecond, E2E: time.Millisecond})
		}
		rc.SLO = rc.Profiles[len(rc.Profiles)-len(hostileNames)]
	}, func(*diagnose.Frame) {})
	code, text, errOut := runArgs(t, nil, "replay", "--once", path)
	if errOut != "" || !strings.Contains(text, `chat\x1b]0;pwned\x07`) {
		t.Fatalf("replay: exit %d, stderr %q: the profile's name is not in the findings, the test proves little\n%s", code, errOut, text)
	}
	assertPrintable(t, strings.ReplaceAll(text, "\t", " "))
	for _, slo := range hostileNames[1:] {
		// The profile is asked for by its name as shown.
		code, js, errOut := runArgs(t, nil, "replay", "--once", "-o", "json", "--slo", sources.Sanitize(slo, 0), path)
		if errOut != "" {
			t.Fatalf("replay --slo %q: exit %d, stderr %q", slo, code, errOut)
		}
		assertPrintable(t, js)
		var doc any
		if err := json.Unmarshal([]byte(js), &doc); err != nil {
			t.Fatal(err)
		}
		assertSafeStrings(t, "the JSON report", doc)
	}
}

// TestConfigHostileNames: the profile names, descriptions, pools and rule
// names of a config file are sanitized as it is read: every string of
// the rules' configuration and of the targets is safe to print.
func TestConfigHostileNames(t *testing.T) {
	var b strings.Builder
	b.WriteString("targets:\n")
	for i, n := range hostileNames {
		b.WriteString("  - {url: \"127.0.0.1:" + string(rune('1'+i)) + "0\", pool: " + strconvQuote(n) + "}\n")
	}
	b.WriteString("slo_profiles:\n")
	for _, n := range hostileNames {
		b.WriteString("  " + strconvQuote(n) + ": {desc: " + strconvQuote(n) + ", ttft: 1s, itl: 50ms, e2e: 10s}\n")
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	fc, err := loadFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(fc.SLOProfiles) != len(hostileNames) || len(fc.Targets) != len(hostileNames) {
		t.Fatalf("read %d profiles, %d targets", len(fc.SLOProfiles), len(fc.Targets))
	}
	rc, err := rulesConfig(fc, "chat")
	if err != nil {
		t.Fatal(err)
	}
	assertSafeStrings(t, "the rules' configuration", rc)
	assertSafeStrings(t, "the config file's targets", fc.Targets)
}

// strconvQuote is a YAML double-quoted scalar of s, every rune outside
// printable ASCII written as a \u escape (YAML refuses them raw).
func strconvQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20 || r >= 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String() + `"`
}
