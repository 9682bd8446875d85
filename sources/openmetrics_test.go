package sources

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/internal/nandiff"
	"github.com/vtop-dev/vtop/internal/omtext"
)

// serveFixed answers every GET with body and a fixed Content-Type, whatever
// Accept asks: what vLLM's Rust frontend does with OpenMetrics.
func serveFixed(t *testing.T, body []byte, ct string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// TestDumpsOpenMetrics: every real capture, served as classic text and as
// OpenMetrics 1.0 (`# TYPE x counter` with `x_total` samples, `_created`
// folded into its family, `# EOF`) with a fixed Content-Type, gives the
// same snapshot: no counter, creation time or histogram is lost.
func TestDumpsOpenMetrics(t *testing.T) {
	f := testFetcher(t, 10*time.Second)
	for _, name := range dumpNames(t) {
		t.Run(name, func(t *testing.T) {
			classic := published(t, name)
			om := omtext.FromClassic(classic)
			var snaps [2]*Snapshot
			var errs [2]string
			for i, srv := range []string{serveFixed(t, classic, "text/plain; version=0.0.4; charset=utf-8"), serveFixed(t, om, omtext.ContentType)} {
				body, ct, err := f.Fetch(context.Background(), srv, new(bytes.Buffer))
				if err != nil {
					t.Fatal(err)
				}
				if i == 1 && ct != omtext.ContentType {
					t.Fatalf("served %q", ct)
				}
				if snaps[i], err = NewNormalizer().Normalize(body, ct); err != nil {
					errs[i] = err.Error()
				}
			}
			if errs[0] != errs[1] {
				t.Fatalf("classic text: %q, OpenMetrics: %q\n%s", errs[0], errs[1], om)
			}
			if errs[0] != "" {
				return // the same refusal both ways (not vLLM)
			}
			if d := nandiff.Diff(snaps[0], snaps[1]); d != "" {
				t.Errorf("OpenMetrics snapshot differs from classic text's: %s\n--- classic\n%s--- openmetrics\n%s", d, canon(snaps[0]), canon(snaps[1]))
			}
		})
	}
}
