package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	front, a, b := serveBody(t, d.Frontend), serveBody(t, d.Worker), serveBody(t, d.Worker)
	_, out, errOut := runArgs(t, nil, "--once", "-o", "json", "-w", "1s", "-i", "200ms", front, a, b)
	checkDynamoPool(t, "scraped", out, errOut, d.Model, front)
	_, out, _ = runArgs(t, nil, "--once", "-w", "1s", "-i", "200ms", front, a, b)
	if want := d.Model + ": queued 37 · in flight 45 · max_num_seqs 256 each · the pool's queue; its 2 engines run 80"; !strings.Contains(out, want) {
		t.Errorf("the text report lacks %q:\n%s", want, out)
	}
}

// The same deployment read through a real Prometheus that scrapes it
// (--prometheus): the frontend's queue and cap are read with the workers'
// series and joined as the scraped path joins them (37 queued, 80
// running, 256 each), by the live refresh (through /federate and through
// the query API) and by the backfill.
func TestOnceDynamoThroughPrometheus(t *testing.T) {
	d, err := dynamofx.Build(filepath.Join("..", "..", "testdata"), "37", "45")
	if err != nil {
		t.Fatal(err)
	}
	front, a, b := serveBody(t, d.Frontend), serveBody(t, d.Worker), serveBody(t, d.Worker)
	srv := startPrometheus(t, nil, "scrape_configs:\n  - job_name: dynamo\n    static_configs:\n      - targets: ['"+front+"', '"+a+"', '"+b+"']\n")
	waitSeries(t, srv, 2)
	for i := 0; ; i++ {
		if v, ok := promValue(srv, "count(time() - timestamp(dynamo_frontend_queued_requests) < 10)"); ok && v == 1 {
			break
		}
		if i == 300 {
			t.Fatal("prometheus did not scrape the frontend in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A few scrapes of history: a refresh reads a second behind now, the
	// backfill a minute.
	time.Sleep(3 * time.Second)
	_, out, errOut := runArgs(t, envFor(t), "--once", "-o", "json", "--gpu", "none", "--prometheus", srv, "--backfill", "0")
	checkDynamoPool(t, "--prometheus (federate)", out, errOut, d.Model, front)
	// Without /federate (Thanos, Mimir): the query API's refresh.
	up, err := neturl.Parse(srv)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(up)
	noFed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/federate" {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(noFed.Close)
	_, out, errOut = runArgs(t, envFor(t), "--once", "-o", "json", "--gpu", "none", "--prometheus", noFed.URL, "--backfill", "0")
	checkDynamoPool(t, "--prometheus (query API)", out, errOut, d.Model, front)
	_, out, errOut = runArgs(t, envFor(t), "--once", "-o", "json", "--gpu", "none", "--prometheus", srv, "--backfill", "1m")
	checkDynamoPool(t, "--prometheus --backfill 1m", out, errOut, d.Model, front)
}

// serveBody serves body as a text exposition on loopback; it returns host:port.
func serveBody(t *testing.T, body []byte) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// checkDynamoPool checks a JSON report of the dynamofx deployment (queued
// 37 at the frontend front, 40 running on each of two workers, their cap
// 256): one pool whose queue is the frontend's and whose running is the
// workers', the frontend a router with its queue, the workers engines
// with the frontend's max_num_seqs.
func checkDynamoPool(t *testing.T, path, out, errOut, model, front string) {
	t.Helper()
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
		t.Fatalf("%s: %v (stderr %q)\n%s", path, err, errOut, out)
	}
	if len(r.Fleet.Models) != 1 {
		t.Fatalf("%s: pools %+v (stderr %q)\n%s", path, r.Fleet.Models, errOut, out)
	}
	pool := r.Fleet.Models[0]
	if pool.Model != model || pool.Router == nil || pool.Router.Queued != 37 || len(pool.Router.Endpoints) != 1 ||
		pool.Stats.Queue.Waiting != 37 || pool.Stats.Queue.Running != 80 {
		t.Errorf("%s: pool %+v", path, pool)
	}
	if q := r.Fleet.Stats.Queue; q.Waiting != 37 || q.Running != 80 {
		t.Errorf("%s: fleet queue %+v", path, q)
	}
	if len(r.Endpoints) != 3 {
		t.Errorf("%s: %d endpoints, not the frontend and two workers", path, len(r.Endpoints))
	}
	for _, e := range r.Endpoints {
		switch e.Name {
		case front:
			if e.Kind != "router" || len(e.RouterQueues) != 1 || e.RouterQueues[0].Queued != 37 {
				t.Errorf("%s: frontend %+v", path, e)
			}
		default:
			if e.Kind != "engine" || e.MaxNumSeqs == nil || *e.MaxNumSeqs != 256 {
				t.Errorf("%s: worker %s: kind %s, max_num_seqs %v", path, e.Name, e.Kind, e.MaxNumSeqs)
			}
		}
	}
}
