package detect

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// A port that answers without vLLM metrics is its own state: the view
// says so, and the finding is "Not a vLLM endpoint" with advice about the
// port, not an outage with advice about GPU Xid errors.
func TestNotVLLMEndpoint(t *testing.T) {
	e := diagnose.New(diagnose.Config{}, []diagnose.TargetInfo{{Name: "127.0.0.1:9090"}})
	d, derr := NewDetector(chatCfg())
	if derr != nil {
		t.Fatal(derr)
	}
	err := fmt.Errorf("%w among 812 samples (is this the vLLM API server's port?)", sources.ErrNotVLLM)
	if !errors.Is(err, sources.ErrNotVLLM) {
		t.Fatal("the sentinel does not wrap")
	}
	var fr *diagnose.Frame
	for at := time.Duration(0); at <= 2*time.Minute; at += time.Second {
		e.Ingest(0, sources.Scrape{Target: "127.0.0.1:9090", Time: t0.Add(at), Err: err})
		fr = e.Frame(t0.Add(at))
		d.Evaluate(fr)
	}
	ev := fr.Endpoints[0]
	if !ev.NotVLLM || ev.State != diagnose.StateDown {
		t.Fatalf("view %+v", ev)
	}
	fd := findingOf(fr, "endpoint_down")
	if fd == nil || fd.Title != "Not a vLLM endpoint" || txt(fd.Action) == "" || strings.Contains(txt(fd.Action), "Xid") {
		t.Errorf("finding %+v", fd)
	}
	// A refused connection is an outage as before.
	e.Ingest(0, sources.Scrape{Target: "127.0.0.1:9090", Time: t0.Add(3 * time.Minute), Err: errors.New("connection refused")})
	if fr = e.Frame(t0.Add(3 * time.Minute)); fr.Endpoints[0].NotVLLM {
		t.Error("a refused connection marked not vLLM")
	}
}
