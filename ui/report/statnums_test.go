package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vtop-dev/vtop/diagnose"
)

// Every reported row of diagnose.StatFields is written under its object
// and key with its own number, and a row the report does not hold reads
// null through Get.
func TestStatFieldsInJSON(t *testing.T) {
	s := diagnose.UnknownStats()
	for i := range diagnose.StatFields {
		*diagnose.StatFields[i].At(&s) = float64(1000 + i)
	}
	b, err := json.Marshal(Stats(s))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		// window_seconds is a number at the top: decode objects only.
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		doc = map[string]map[string]any{}
		for k, v := range raw {
			var m map[string]any
			if json.Unmarshal(v, &m) == nil {
				doc[k] = m
			}
		}
	}
	for i, fd := range diagnose.StatFields {
		if fd.Group == "" {
			continue
		}
		got, ok := doc[fd.Group][fd.JSON]
		if !ok || got != float64(1000+i) {
			t.Errorf("%s.%s = %v (present %v), want %d\n%s", fd.Group, fd.JSON, got, ok, 1000+i, b)
		}
	}
	if n := Stats(s).Queue.Nums.Get(diagnose.StatKVUsage); !isNull(n) {
		t.Errorf("the queue object's kv_usage: %v, want null", n)
	}
}

func isNull(n Num) bool { b, _ := n.MarshalJSON(); return string(b) == "null" }

// The objects keep the member order of the structs they replaced: numbers
// before the member their row names (prefix_caching, finish_reasons,
// accepted_by_position), the rest after.
func TestStatObjectsOrder(t *testing.T) {
	s := diagnose.UnknownStats()
	s.SpecAcceptRate, s.KVOffloadRate = 0.5, 2
	j := Stats(s)
	for _, c := range []struct {
		v    any
		want string
	}{
		{j.Cache, `{"kv_usage":null,"kv_usage_max_engine":null,"kv_capacity_tokens":null,"num_gpu_blocks":null,"block_size":null,"gpu_memory_utilization":null,"prefix_caching":null,"prefix_hit_ratio":null,"preemptions_per_s":null,"swapped":null,"cpu_kv_usage":null}`},
		{j.Queue, `{"running":null,"waiting":null,"waiting_capacity":null,"waiting_deferred":null}`},
		{j.Throughput, `{"prompt_tokens_per_s":null,"generation_tokens_per_s":null,"requests_per_s":null,"abort_share":null,"avg_prompt_tokens":null,"avg_generation_tokens":null,"mean_tokens_per_step":null,"finish_reasons":[]}`},
		{j.Speculative, `{"acceptance":0.5,"tokens_per_step":null,"drafts_per_step":null,"accepted_by_position":[]}`},
		{j.KVTransfer, `{"failed_transfers_per_s":null,"expired_requests_per_s":null,"offload_bytes_per_s":2}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("got  %s\nwant %s", b, c.want)
		}
	}
	if b, _ := json.MarshalIndent(j, "", "  "); !strings.Contains(string(b), "\"speculative\": {\n    \"acceptance\": 0.5,") {
		t.Errorf("indented:\n%s", b)
	}
}
