package ui

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/ui/report"
)

// dynamoFrame is a Dynamo frontend (the kthena #913 capture's lines with
// its queue, 37, and in-flight count, 45) in front of two workers (the
// v0.10.1 capture serving its model, 40 running and 3 waiting each).
func dynamoFrame(t *testing.T) (*diagnose.Frame, string) {
	t.Helper()
	read := func(dir, name string) string {
		b, err := os.ReadFile(filepath.Join("..", "testdata", dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	front, _, _ := strings.Cut(read("other-engines", "volcano-sh-kthena-issue-913__dynamo-2026-04-frontend-and-component-router-mocker-backend_fragment.txt"), "# ---- excerpt boundary")
	model := regexp.MustCompile(`model="([^"]+)"`).FindStringSubmatch(front)[1]
	front += "# TYPE dynamo_frontend_queued_requests gauge\ndynamo_frontend_queued_requests{model=\"" + model + "\"} 37\n" +
		"# TYPE dynamo_frontend_inflight_requests gauge\ndynamo_frontend_inflight_requests{model=\"" + model + "\"} 45\n"
	w := strings.ReplaceAll(read("dumps", "armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt"), "Qwen/Qwen3-4B-Instruct-2507-FP8", model)
	w = regexp.MustCompile(`(?m)^(vllm:num_requests_running\{[^}]*\}) .*$`).ReplaceAllString(w, "$1 40.0")
	w = regexp.MustCompile(`(?m)^(vllm:num_requests_waiting\{[^}]*\}) .*$`).ReplaceAllString(w, "$1 3.0")
	e := diagnose.New(diagnose.Config{Window: time.Minute, Interval: time.Second},
		[]diagnose.TargetInfo{{Name: "frontend"}, {Name: "worker-a"}, {Name: "worker-b"}})
	for k := range 2 {
		for i, body := range []string{front, w, w} {
			snap, err := sources.NewNormalizer().Normalize([]byte(body), "text/plain")
			if err != nil {
				t.Fatal(err)
			}
			e.Ingest(i, sources.Scrape{Time: t0.Add(time.Duration(k) * time.Second), Duration: time.Millisecond, Data: snap})
		}
	}
	return e.Frame(t0.Add(time.Second)), model
}

// The frontend's view, the text report and the JSON say what it holds
// and that it is the queue of its workers' pool.
func TestDynamoFrontendShown(t *testing.T) {
	fr, model := dynamoFrame(t)
	want := model + ": queued 37 · in flight 45 · the pool's queue; its 2 engines run 80"
	m := newTestModel(fr, 200, 60, Options{})
	selectEndpoint(t, m, "frontend")
	press(m, "enter")
	if v := ansi.Strip(m.View()); !strings.Contains(v, want) {
		t.Errorf("the frontend's view lacks %q:\n%s", want, v)
	}
	// Its row in the fleet table: nothing running of its own, 37 waiting.
	m = newTestModel(fr, 200, 60, Options{})
	if v := ansi.Strip(m.View()); !regexp.MustCompile(`frontend .* --/37 `).MatchString(v) {
		t.Errorf("the frontend's row lacks --/37:\n%s", v)
	}
	var text bytes.Buffer
	if err := report.WriteTextRun(&text, fr, report.OK, report.Run{Window: fr.Window, Elapsed: fr.Window}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), want) {
		t.Errorf("the text report lacks %q:\n%s", want, text.String())
	}
	var doc struct {
		Fleet struct {
			Models []struct {
				Model  string `json:"model"`
				Router *struct {
					Endpoints        []string `json:"endpoints"`
					Queued, Inflight float64
				} `json:"router"`
				Stats struct {
					Queue struct{ Waiting, Running float64 } `json:"queue"`
				} `json:"stats"`
			} `json:"models"`
		} `json:"fleet"`
		Endpoints []struct {
			Name         string `json:"name"`
			RouterQueues []struct {
				Model            string
				Queued, Inflight float64
			} `json:"router_queues"`
		} `json:"endpoints"`
	}
	var js bytes.Buffer
	if err := report.WriteJSON(&js, report.BuildJSONRun(fr, "test", report.OK, report.Run{})); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	pool := doc.Fleet.Models[0]
	if pool.Model != model || pool.Router == nil || pool.Router.Queued != 37 || pool.Router.Inflight != 45 ||
		len(pool.Router.Endpoints) != 1 || pool.Stats.Queue.Waiting != 37 || pool.Stats.Queue.Running != 80 {
		t.Errorf("pool %+v", pool)
	}
	if q := doc.Endpoints[0].RouterQueues; len(q) != 1 || q[0].Model != model || q[0].Queued != 37 || q[0].Inflight != 45 {
		t.Errorf("frontend's router_queues %+v", q)
	}
	if q := doc.Endpoints[1].RouterQueues; q != nil {
		t.Errorf("a worker has router_queues %+v", q)
	}
}
