// Package dynamofx builds a Dynamo deployment's expositions from real
// captures, for the tests of the packages that read one (sources, diagnose,
// ui, cmd/vtop): the frontend is the kthena #913 capture's dynamo_frontend_*
// lines (its model label and value) with the queue and in-flight gauges
// Dynamo serves beside them, spelled as the capture spells its others; a
// worker is the v0.10.1 vLLM capture serving the frontend's model with the
// xdu31 Dynamo worker's dynamo_component_* lines, running 40 with 3 waiting.
package dynamofx

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Captures the fixture is built from, under the repository's testdata.
const (
	FrontendCapture = "other-engines/volcano-sh-kthena-issue-913__dynamo-2026-04-frontend-and-component-router-mocker-backend_fragment.txt"
	WorkerCapture   = "other-engines/xdu31-aicr-docs-conformance-cncf-evidence-ai-service-metrics.md__dynamo-2026-03-vllm-worker-dynamo_component-plus-vllm-passthrough_fragment.txt"
	VLLMCapture     = "dumps/armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt"
)

// Deployment is one frontend's and one worker's exposition.
type Deployment struct {
	Frontend, Worker []byte
	Model            string // the model the frontend labels its series with
}

var (
	modelLabel = regexp.MustCompile(`model="([^"]+)"`)
	running    = regexp.MustCompile(`(?m)^(vllm:num_requests_running\{[^}]*\}) .*$`)
	waiting    = regexp.MustCompile(`(?m)^(vllm:num_requests_waiting\{[^}]*\}) .*$`)
)

// Build reads the captures under testdata (the repository's testdata
// folder) and gives a frontend holding queued and inflight requests of its
// model (numbers as the exposition writes them).
func Build(testdata, queued, inflight string) (Deployment, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(testdata, name))
		return string(b), err
	}
	front, err := read(FrontendCapture)
	if err != nil {
		return Deployment{}, err
	}
	front, _, _ = strings.Cut(front, "# ---- excerpt boundary")
	m := modelLabel.FindStringSubmatch(front)
	if m == nil {
		return Deployment{}, fmt.Errorf("%s: no model label", FrontendCapture)
	}
	d := Deployment{Model: m[1]}
	d.Frontend = []byte(front +
		"# TYPE dynamo_frontend_queued_requests gauge\ndynamo_frontend_queued_requests{model=\"" + d.Model + "\"} " + queued + "\n" +
		"# TYPE dynamo_frontend_inflight_requests gauge\ndynamo_frontend_inflight_requests{model=\"" + d.Model + "\"} " + inflight + "\n")
	v, err := read(VLLMCapture)
	if err != nil {
		return Deployment{}, err
	}
	v = strings.ReplaceAll(v, "Qwen/Qwen3-4B-Instruct-2507-FP8", d.Model)
	v = running.ReplaceAllString(v, "$1 40.0")
	v = waiting.ReplaceAllString(v, "$1 3.0")
	if !strings.HasSuffix(v, "\n") {
		v += "\n"
	}
	w, err := read(WorkerCapture)
	if err != nil {
		return Deployment{}, err
	}
	for _, l := range strings.Split(w, "\n") {
		if strings.HasPrefix(l, "dynamo_component_") {
			v += strings.ReplaceAll(l, "Qwen/Qwen3-0.6B", d.Model) + "\n"
		}
	}
	d.Worker = []byte(v)
	return d, nil
}
