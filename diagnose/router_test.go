package diagnose

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// dynamoFleet is a Dynamo deployment made of real expositions: the
// frontend is the kthena #913 capture's dynamo_frontend_* lines (its model
// label and value) with the queue and in-flight gauges Dynamo serves beside
// them, spelled as the capture spells its others; each worker is the
// v0.10.1 vLLM capture serving the frontend's model, with the xdu31
// worker's dynamo_component_* lines, running 40 with 3 waiting.
func dynamoFleet(t *testing.T, queued, inflight string) (front, worker []byte, model string) {
	t.Helper()
	read := func(dir, name string) string {
		b, err := os.ReadFile(filepath.Join("..", "testdata", dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	kthena := read("other-engines", "volcano-sh-kthena-issue-913__dynamo-2026-04-frontend-and-component-router-mocker-backend_fragment.txt")
	kthena, _, _ = strings.Cut(kthena, "# ---- excerpt boundary")
	model = regexp.MustCompile(`model="([^"]+)"`).FindStringSubmatch(kthena)[1]
	f := kthena +
		"# TYPE dynamo_frontend_queued_requests gauge\ndynamo_frontend_queued_requests{model=\"" + model + "\"} " + queued + "\n" +
		"# TYPE dynamo_frontend_inflight_requests gauge\ndynamo_frontend_inflight_requests{model=\"" + model + "\"} " + inflight + "\n"
	v := read("dumps", "armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt")
	v = strings.ReplaceAll(v, "Qwen/Qwen3-4B-Instruct-2507-FP8", model)
	v = regexp.MustCompile(`(?m)^(vllm:num_requests_running\{[^}]*\}) .*$`).ReplaceAllString(v, "$1 40.0")
	v = regexp.MustCompile(`(?m)^(vllm:num_requests_waiting\{[^}]*\}) .*$`).ReplaceAllString(v, "$1 3.0")
	if !strings.HasSuffix(v, "\n") {
		v += "\n"
	}
	for _, l := range strings.Split(read("other-engines", "xdu31-aicr-docs-conformance-cncf-evidence-ai-service-metrics.md__dynamo-2026-03-vllm-worker-dynamo_component-plus-vllm-passthrough_fragment.txt"), "\n") {
		if strings.HasPrefix(l, "dynamo_component_") {
			v += strings.ReplaceAll(l, "Qwen/Qwen3-0.6B", model) + "\n"
		}
	}
	return []byte(f), []byte(v), model
}

func ingestBody(t *testing.T, e *Engine, i int, body []byte, at time.Time) {
	t.Helper()
	snap, err := sources.NewNormalizer().Normalize(body, "text/plain; version=0.0.4")
	if err != nil {
		t.Fatal(err)
	}
	e.Ingest(i, sources.Scrape{Time: at, Duration: time.Millisecond, Data: snap})
}

// A Dynamo frontend and its workers read as one pool: its queue is the
// frontend's (37, which counts the workers' own waiting requests, so not
// 37 + 3 + 3), its running and capacity the workers' (40 + 40); the fleet's
// queue likewise. Without the frontend the pool's queue is the workers'.
func TestDynamoFrontendJoinsItsWorkers(t *testing.T) {
	front, worker, model := dynamoFleet(t, "37", "45")
	targets := []TargetInfo{{Name: "frontend"}, {Name: "worker-a"}, {Name: "worker-b"}}

	e := New(Config{Window: time.Minute, Interval: time.Second}, targets)
	for k := range 2 {
		at := t0.Add(time.Duration(k) * time.Second)
		ingestBody(t, e, 0, front, at)
		ingestBody(t, e, 1, worker, at)
		ingestBody(t, e, 2, worker, at)
	}
	fr := e.Frame(t0.Add(time.Second))
	fe := &fr.Endpoints[0]
	if fe.Kind != sources.KindRouter || len(fe.Router) != 1 || fe.Router[0].Model != model ||
		fe.Router[0].Values[sources.RQueued] != 37 || fe.Router[0].Values[sources.RInflight] != 45 {
		t.Fatalf("frontend: kind %v, router %+v", fe.Kind, fe.Router)
	}
	if len(fr.Fleet.Models) != 1 {
		t.Fatalf("pools %+v", fr.Fleet.Models)
	}
	mv := fr.Fleet.Models[0]
	if mv.Model != model || mv.Endpoints != 2 || len(mv.Routers) != 1 || mv.Routers[0] != "frontend" {
		t.Errorf("pool %q of %d endpoints behind %v", mv.Model, mv.Endpoints, mv.Routers)
	}
	approx(t, "pool waiting", mv.Stats.Waiting, 37)
	approx(t, "pool running", mv.Stats.Running, 80)
	approx(t, "pool router queued", mv.RouterQueued, 37)
	approx(t, "pool router in flight", mv.RouterInflight, 45)
	approx(t, "fleet waiting", fr.Fleet.Stats.Waiting, 37)
	approx(t, "fleet running", fr.Fleet.Stats.Running, 80)
	approx(t, "worker waiting", fr.Endpoints[1].Stats.Waiting, 3)
	approx(t, "frontend waiting", fe.Stats.Waiting, 37)
	if fr.Fleet.Up != 2 {
		t.Errorf("fleet up %d: the frontend is not an engine", fr.Fleet.Up)
	}

	// The same workers without their frontend: the workers' queue.
	alone := New(Config{Window: time.Minute, Interval: time.Second}, targets[1:])
	for k := range 2 {
		at := t0.Add(time.Duration(k) * time.Second)
		ingestBody(t, alone, 0, worker, at)
		ingestBody(t, alone, 1, worker, at)
	}
	fa := alone.Frame(t0.Add(time.Second))
	approx(t, "pool waiting without the frontend", fa.Fleet.Models[0].Stats.Waiting, 6)
	if r := fa.Fleet.Models[0].Routers; r != nil || !math.IsNaN(fa.Fleet.Models[0].RouterQueued) {
		t.Errorf("no frontend, yet routers %v queued %v", r, fa.Fleet.Models[0].RouterQueued)
	}
}

// A frontend for another model, or one that is down, joins no pool.
func TestDynamoFrontendOtherModel(t *testing.T) {
	front, worker, model := dynamoFleet(t, "37", "45")
	front = []byte(strings.ReplaceAll(string(front), model, "other/model"))
	e := New(Config{Window: time.Minute, Interval: time.Second}, []TargetInfo{{Name: "frontend"}, {Name: "worker-a"}})
	ingestBody(t, e, 0, front, t0)
	ingestBody(t, e, 1, worker, t0)
	fr := e.Frame(t0)
	if len(fr.Fleet.Models) != 1 || fr.Fleet.Models[0].Routers != nil {
		t.Fatalf("pools %+v", fr.Fleet.Models)
	}
	approx(t, "pool waiting", fr.Fleet.Models[0].Stats.Waiting, 3)
	// Down: its last queue is not joined.
	front, _, _ = dynamoFleet(t, "37", "45")
	e = New(Config{Window: time.Minute, Interval: time.Second}, []TargetInfo{{Name: "frontend"}, {Name: "worker-a"}})
	ingestBody(t, e, 0, front, t0)
	e.Ingest(0, sources.Scrape{Time: t0.Add(time.Second), Err: errors.New("connection refused")})
	ingestBody(t, e, 1, worker, t0.Add(time.Second))
	fr = e.Frame(t0.Add(time.Second))
	approx(t, "pool waiting, frontend down", fr.Fleet.Models[0].Stats.Waiting, 3)
}
