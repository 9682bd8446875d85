package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/vtop-dev/vtop/diagnose"
)

// sourcesFrame is a fleet whose sources fail: a dcgm-exporter refuses,
// a file_sd file does not parse (its last targets kept), and discovery
// found more targets than its bound.
func sourcesFrame() *diagnose.Frame {
	fr := sixFrame()
	fr.Failing = []diagnose.Outage{
		{Source: "dcgm-exporter 127.0.0.1:9400", Err: "connect: connection refused", Since: t0.Add(-42 * time.Second)},
		{Source: "file_sd /etc/vtop/targets.json", Err: "yaml: line 3: did not find expected key (its last 6 targets kept)", Since: t0.Add(-9 * time.Second)},
	}
	fr.Problems = []string{
		"dcgm-exporter 127.0.0.1:9400: connect: connection refused",
		"discovery: 12000 targets found, more than the limit of 10000: the first 10000 are polled (narrow the discovery rules)",
		"file_sd /etc/vtop/targets.json: yaml: line 3: did not find expected key (its last 6 targets kept)",
	}
	return fr
}

// A failing dcgm-exporter and a failing file_sd rule are named in the
// header as failing, with their age and error; the findings pane opens
// with every problem the sources report.
func TestGoldenSourcesFailing(t *testing.T) {
	eachSize(t, func(w, h int) *Model {
		m := newTestModel(sourcesFrame(), w, h, Options{})
		checkEveryRowUsed(t, m)
		return m
	})
}

func TestSourcesInHeaderAndPane(t *testing.T) {
	m := newTestModel(sourcesFrame(), 200, 60, Options{})
	lines := strings.Split(ansi.Strip(m.View()), "\n")
	if want := "✖ dcgm-exporter 127.0.0.1:9400 failing 42s (+1): connect: connection refused"; !strings.Contains(lines[0], want) {
		t.Errorf("header %q lacks %q", lines[0], want)
	}
	pane := ansi.Strip(strings.Join(m.find.View(), "\n"))
	for _, want := range []string{
		"✖ dcgm-exporter 127.0.0.1:9400 failing 42s: connect: connection refused",
		"✖ file_sd /etc/vtop/targets.json failing 9s: yaml: line 3",
		"▲ discovery: 12000 targets found",
	} {
		if !strings.Contains(pane, want) {
			t.Errorf("findings pane lacks %q:\n%s", want, pane)
		}
	}
	if strings.Count(pane, "connection refused") != 1 {
		t.Errorf("a failing source is listed twice:\n%s", pane)
	}
	// A failing Prometheus (it feeds every endpoint) comes first.
	fr := sourcesFrame()
	fr.Outages = []diagnose.Outage{{Source: "Prometheus 127.0.0.1:9090", Err: "timeout", Since: t0.Add(-20 * time.Second)}}
	m = newTestModel(fr, 200, 60, Options{})
	if h := ansi.Strip(strings.Split(m.View(), "\n")[0]); !strings.Contains(h, "✖ Prometheus 127.0.0.1:9090 failing 20s (+2): timeout") {
		t.Errorf("header %q", h)
	}
	// Many problems take at most maxSourceLines, the last counting the rest.
	for i := 0; i < 5; i++ {
		fr.Problems = append(fr.Problems, "file_sd /x"+itoa(i)+".json: no such file")
	}
	m = newTestModel(fr, 200, 60, Options{})
	pane = ansi.Strip(strings.Join(m.find.View(), "\n"))
	if !strings.Contains(pane, "+7 more source problems") {
		t.Errorf("no count of the problems left out:\n%s", pane)
	}
}
