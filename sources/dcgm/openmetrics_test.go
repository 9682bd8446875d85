package dcgm

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/internal/omtext"
	"github.com/vtop-dev/vtop/sources"
)

// Every dcgm-exporter capture, served as classic text and as OpenMetrics
// 1.0 with a fixed Content-Type (a counter's samples then end in _total:
// DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS_total), reads into the same
// devices.
func TestCapturesOpenMetrics(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if len(files) == 0 {
		t.Fatal("no captures")
	}
	f, err := sources.NewFetcher(sources.HTTPConfig{Timeout: 10 * time.Second, MaxBody: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			classic, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			om := omtext.FromClassic(classic)
			var got [2]string
			for i, b := range []struct {
				body []byte
				ct   string
			}{{classic, "text/plain; version=0.0.4"}, {om, omtext.ContentType}} {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", b.ct)
					_, _ = w.Write(b.body)
				}))
				body, ct, err := f.Fetch(context.Background(), srv.URL+"/metrics", new(bytes.Buffer))
				srv.Close()
				if err != nil || ct != b.ct {
					t.Fatalf("fetch: %v (%s)", err, ct)
				}
				r := NewReader()
				r.Begin()
				skipped := r.ParseText(body, "exporter-host")
				devs, ev := r.End(time.Unix(0, 0))
				got[i] = fmt.Sprintf("skipped %d\n%+v\n%+v", skipped, devs, ev)
			}
			if got[0] != got[1] {
				t.Errorf("OpenMetrics reads differently:\n--- classic\n%s\n--- openmetrics\n%s", got[0], got[1])
			}
		})
	}
}
