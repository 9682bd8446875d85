package sources

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Dynamo frontend's queue and in-flight count are read per model (its
// model label), summed over series that differ in other labels, on the
// full parse and on the incremental one; a negative count is unknown with a
// warning; the frontend stays a router.
func TestDynamoFrontendQueue(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "other-engines", "volcano-sh-kthena-issue-913__dynamo-2026-04-frontend-and-component-router-mocker-backend_fragment.txt"))
	if err != nil {
		t.Fatal(err)
	}
	capture, _, _ := strings.Cut(string(b), "# ---- excerpt boundary")
	const m = "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"
	body := func(q1, q2, inflight string) []byte {
		return []byte(capture +
			"# TYPE dynamo_frontend_queued_requests gauge\n" +
			"dynamo_frontend_queued_requests{instance_id=\"a\",model=\"" + m + "\"} " + q1 + "\n" +
			"dynamo_frontend_queued_requests{instance_id=\"b\",model=\"" + m + "\"} " + q2 + "\n" +
			"# TYPE dynamo_frontend_inflight_requests gauge\n" +
			"dynamo_frontend_inflight_requests{model=\"" + m + "\"} " + inflight + "\n")
	}
	n := NewNormalizer()
	for _, c := range []struct {
		q1, q2, inflight string
		queued, infl     float64
		warn             bool
	}{
		{"4", "6", "12", 10, 12, false},
		{"5", "6", "20", 11, 20, false}, // the same lines, new values: the incremental path
		{"-1", "6", "20", 6, 20, true},
	} {
		snap, err := n.Normalize(body(c.q1, c.q2, c.inflight), "text/plain; version=0.0.4")
		if err != nil {
			t.Fatal(err)
		}
		if snap.Kind != KindRouter || len(snap.Router) != 1 || snap.Router[0].Model != m {
			t.Fatalf("kind %v, router %+v", snap.Kind, snap.Router)
		}
		v := snap.Router[0].Values
		if v[RQueued] != c.queued || v[RInflight] != c.infl || !math.IsNaN(v[RNone]) {
			t.Errorf("queue %s+%s, in flight %s: read %v", c.q1, c.q2, c.inflight, v)
		}
		if got := strings.Contains(strings.Join(snap.Warnings, "\n"), "router's queue is -1"); got != c.warn {
			t.Errorf("queue %s: warned %v: %q", c.q1, got, snap.Warnings)
		}
	}
	if n.incr == 0 {
		t.Error("no body was read incrementally")
	}
	// The capture alone (no queue served) is a router with no numbers.
	snap, err := NewNormalizer().Normalize([]byte(capture), "text/plain")
	if err != nil || snap.Kind != KindRouter || snap.Router != nil {
		t.Fatalf("capture alone: %v %+v", err, snap)
	}
}
