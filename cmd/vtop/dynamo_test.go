package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vtop-dev/vtop/internal/dynamofx"
)

// vtop --once over a Dynamo frontend and two workers served on loopback
// (internal/dynamofx: real captures) reports one pool whose queue is the
// frontend's 37 and whose running is the workers' 80, the workers' batch
// cap the frontend's max_num_seqs, and the frontend as a router with its
// queue; the text report says it too.
func TestOnceDynamoDeployment(t *testing.T) {
	d, err := dynamofx.Build(filepath.Join("..", "..", "testdata"), "37", "45")
	if err != nil {
		t.Fatal(err)
	}
	serve := func(body []byte) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			w.Write(body)
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	front, a, b := serve(d.Frontend), serve(d.Worker), serve(d.Worker)
	_, out, errOut := runArgs(t, nil, "--once", "-o", "json", "-w", "1s", "-i", "200ms", front, a, b)
	var r struct {
		Fleet struct {
			Stats struct {
				Queue struct{ Waiting, Running float64 } `json:"queue"`
			} `json:"stats"`
			Models []struct {
				Model  string `json:"model"`
				Router *struct {
					Endpoints []string `json:"endpoints"`
					Queued    float64  `json:"queued"`
				} `json:"router"`
				Stats struct {
					Queue struct{ Waiting, Running float64 } `json:"queue"`
				} `json:"stats"`
			} `json:"models"`
		} `json:"fleet"`
		Endpoints []struct {
			Name         string `json:"name"`
			Kind         string `json:"kind"`
			MaxNumSeqs   *int   `json:"max_num_seqs"`
			RouterQueues []struct {
				Model  string  `json:"model"`
				Queued float64 `json:"queued"`
			} `json:"router_queues"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v (stderr %q)\n%s", err, errOut, out)
	}
	if len(r.Fleet.Models) != 1 {
		t.Fatalf("pools %+v", r.Fleet.Models)
	}
	pool := r.Fleet.Models[0]
	if pool.Model != d.Model || pool.Router == nil || pool.Router.Queued != 37 || len(pool.Router.Endpoints) != 1 ||
		pool.Stats.Queue.Waiting != 37 || pool.Stats.Queue.Running != 80 {
		t.Errorf("pool %+v", pool)
	}
	if q := r.Fleet.Stats.Queue; q.Waiting != 37 || q.Running != 80 {
		t.Errorf("fleet queue %+v", q)
	}
	for _, e := range r.Endpoints {
		switch e.Name {
		case front:
			if e.Kind != "router" || len(e.RouterQueues) != 1 || e.RouterQueues[0].Queued != 37 {
				t.Errorf("frontend %+v", e)
			}
		default:
			if e.Kind != "engine" || e.MaxNumSeqs == nil || *e.MaxNumSeqs != 256 {
				t.Errorf("worker %s: kind %s, max_num_seqs %v", e.Name, e.Kind, e.MaxNumSeqs)
			}
		}
	}
	_, out, _ = runArgs(t, nil, "--once", "-w", "1s", "-i", "200ms", front, a, b)
	if want := d.Model + ": queued 37 · in flight 45 · max_num_seqs 256 each · the pool's queue; its 2 engines run 80"; !strings.Contains(out, want) {
		t.Errorf("the text report lacks %q:\n%s", want, out)
	}
}
