package promapi

import (
	"testing"

	"github.com/prometheus/common/model"
)

// A replica read through Prometheus names its pod and namespace (from
// its series' labels) to the pipeline: the user's $POD and $NAMESPACE.
func TestReplicaTargetPod(t *testing.T) {
	f := newFleet(nil)
	r, _ := f.get(model.Metric{"namespace": "llm", "pod": "vllm-0", "instance": "10.0.0.1:8000", "job": "vllm"})
	if tg := r.target(); tg.Name != "llm/vllm-0" || tg.Pod != "vllm-0" || tg.Namespace != "llm" || tg.Host != "10.0.0.1" {
		t.Errorf("target %+v", tg)
	}
	r, _ = f.get(model.Metric{"instance": "10.0.0.2:8000", "job": "vllm"})
	if tg := r.target(); tg.Pod != "" || tg.Namespace != "" {
		t.Errorf("no pod label, but %+v", tg)
	}
}
