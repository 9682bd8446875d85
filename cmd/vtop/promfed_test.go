package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"reflect"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/promapi"
)

// oneRefresh opens cfg and runs one refresh (--once, no backfill); it
// returns the client and the refresh's scrapes by target.
func oneRefresh(t *testing.T, cfg promapi.Config) (*promapi.Client, map[string]sources.Scrape) {
	t.Helper()
	cfg.Once, cfg.Timeout = true, 15*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := promapi.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan sources.Batch, 4)
	if err := promapi.NewSource(c).Run(ctx, out); err != nil {
		t.Fatal(err)
	}
	close(out)
	got := map[string]sources.Scrape{}
	for b := range out {
		for _, s := range b.Scrapes {
			if s.Err != nil {
				t.Fatalf("%s: %v", s.Target, s.Err)
			}
			got[s.Target] = s
		}
	}
	return c, got
}

// A refresh through /federate (Prometheus, VictoriaMetrics) reads what a
// refresh through the query API reads (the path of Thanos and Mimir):
// the same replicas, stamped with the same sample time, every snapshot
// equal. The history ends a few seconds ago (more than the refresh's lag
// behind now), so both read its last scrape.
func TestFederateAgreesWithQueryAPI(t *testing.T) {
	span := 2 * time.Minute
	h := simHistory(t, agreementFleet(), time.Now().Add(-span-2*time.Second).Truncate(historyStep), span, historyStep)
	for _, server := range []struct {
		name  string
		start func(*testing.T, *history, string) string
	}{{"prometheus", startPrometheus}, {"victoria-metrics", startVictoria}} {
		t.Run(server.name, func(t *testing.T) {
			url := server.start(t, h, "")
			cfg := promapi.Config{URL: url, Interval: historyStep}
			fc, fed := oneRefresh(t, cfg)
			cfg.QueryOnly = true
			qc, api := oneRefresh(t, cfg)
			if !fc.Federates() || qc.Federates() {
				t.Fatalf("federates: %v and %v, want true and false", fc.Federates(), qc.Federates())
			}
			if n := len(agreementFleet().Replicas); len(api) != n || len(fed) != len(api) {
				t.Fatalf("%d replicas through /federate, %d through the API, want %d", len(fed), len(api), n)
			}
			for name, a := range api {
				f, ok := fed[name]
				if !ok {
					t.Errorf("%s: not read through /federate", name)
					continue
				}
				if !f.Time.Equal(a.Time) || !f.Time.Equal(h.end) {
					t.Errorf("%s: stamped %v through /federate, %v through the API, the last scrape was %v", name, f.Time, a.Time, h.end)
				}
				// VictoriaMetrics' query API writes 12 significant digits,
				// its /federate all of them.
				if d := approxDiff(reflect.ValueOf(*f.Data), reflect.ValueOf(*a.Data), "snapshot"); d != "" {
					t.Errorf("%s: %s", name, d)
				}
			}
			// The API server's responses come through both ways under
			// their own name: the refusing replica's 400s and 200s.
			codes := 0
			for _, a := range api {
				for _, hv := range a.Data.HTTP {
					if (hv.Label == "400" || hv.Label == "200") && hv.Value > 0 {
						codes++
					}
				}
			}
			if codes != 2 {
				t.Errorf("%d of the refusing replica's statuses (200, 400) read, want 2", codes)
			}
			q, by := fc.Stats()
			t.Logf("/federate: %d requests, %d bytes; API: see below", q, by)
			q, by = qc.Stats()
			t.Logf("API: %d requests, %d bytes", q, by)
		})
	}
}

// A server without /federate (Thanos Query, Mimir) is read through the
// query API, detected, not configured.
func TestNoFederateFallsBack(t *testing.T) {
	span := time.Minute
	h := simHistory(t, agreementFleet(), time.Now().Add(-span).Truncate(historyStep), span, historyStep)
	up, err := neturl.Parse(startPrometheus(t, h, ""))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(up)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/federate" {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, got := oneRefresh(t, promapi.Config{URL: srv.URL, Interval: historyStep})
	if c.Federates() || len(got) != len(agreementFleet().Replicas) {
		t.Errorf("federates %v, %d replicas read, want false and %d", c.Federates(), len(got), len(agreementFleet().Replicas))
	}
}

// approxDiff says where two values differ, floats compared to 1e-11
// relative (NaN equals NaN); "" when they agree.
func approxDiff(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Float64, reflect.Float32:
		x, y := a.Float(), b.Float()
		if x == y || (math.IsNaN(x) && math.IsNaN(y)) || math.Abs(x-y) <= 1e-11*math.Max(math.Abs(x), math.Abs(y)) {
			return ""
		}
		return fmt.Sprintf("%s: %v through /federate, %v through the API", path, x, y)
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path + ": nil on one side only"
			}
			return ""
		}
		return approxDiff(a.Elem(), b.Elem(), path)
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d items through /federate, %d through the API", path, a.Len(), b.Len())
		}
		for i := 0; i < a.Len(); i++ {
			if d := approxDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if d := approxDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return fmt.Sprintf("%s: %v through /federate, %v through the API", path, a.Interface(), b.Interface())
		}
	}
	return ""
}
