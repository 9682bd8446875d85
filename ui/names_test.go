package ui

import (
	"slices"
	"testing"
)

func TestShortNames(t *testing.T) {
	for _, c := range []struct {
		names        []string
		want         []string
		prefix, suff string
	}{
		{[]string{"vllm-prod-llama-7f9c-0.vllm.svc.cluster.local:8000", "vllm-prod-llama-7f9c-1.vllm.svc.cluster.local:8000"},
			[]string{"7f9c-0", "7f9c-1"}, "vllm-prod-llama-", ".vllm.svc.cluster.local:8000"},
		{[]string{"vllm-llama-a.prod.example.com:8000", "vllm-qwen-b.prod.example.com:8000"}, []string{"llama-a", "qwen-b"}, "vllm-", ".prod.example.com:8000"},
		{[]string{"127.0.0.1:33269", "127.0.0.1:33270"}, []string{":33269", ":33270"}, "127.0.0.1", ""},
		{[]string{"gpu-node-1:8000", "gpu-node-2:8000"}, []string{"node-1", "node-2"}, "gpu-", ":8000"},
		{[]string{"replica-1", "replica-2"}, []string{"replica-1", "replica-2"}, "", ""}, // nothing worth dropping
		{[]string{"a-10", "a-11"}, []string{"a-10", "a-11"}, "", ""},
		{[]string{"only-one:8000"}, []string{"only-one:8000"}, "", ""},
		{[]string{"host-a:8000", "host-a:8000"}, []string{"host-a:8000", "host-a:8000"}, "", ""}, // not unique
	} {
		got, p, s := shortNames(c.names)
		if !slices.Equal(got, c.want) || p != c.prefix || s != c.suff {
			t.Errorf("shortNames(%q) = %q, %q, %q; want %q, %q, %q", c.names, got, p, s, c.want, c.prefix, c.suff)
		}
	}
}
