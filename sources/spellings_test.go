package sources

import (
	"bytes"
	"testing"

	"github.com/vtop-dev/vtop/internal/nandiff"
)

// Every real capture re-exported under each prefix alias of the table
// (Ray Serve LLM's ray_vllm:, vLLM-Omni's vllm_omni:, NVIDIA NIM's
// unprefixed names at /v1/metrics) reads exactly as vLLM's own names do:
// the aliases are rows, and no sample is lost or read as another signal.
func TestSpellingsReadAsVLLM(t *testing.T) {
	for _, name := range dumpNames(t) {
		body := published(t, name)
		want, err := NewNormalizer().Normalize(body, "text/plain; version=0.0.4")
		if err != nil {
			continue // refused as not vLLM whatever the prefix
		}
		for _, sp := range Spellings {
			if sp.Table != VLLMPrefix {
				continue
			}
			t.Run(name+"/"+sp.By, func(t *testing.T) {
				re := bytes.ReplaceAll(body, []byte(VLLMPrefix), []byte(sp.Wire))
				got, err := NewNormalizer().Normalize(re, "text/plain; version=0.0.4")
				if err != nil {
					t.Fatalf("%s: %v", sp.By, err)
				}
				if d := nandiff.Diff(want, got); d != "" {
					t.Errorf("%s reads differently: %s", sp.By, d)
				}
			})
		}
	}
}

// SGLang's sglang_ spelling (builds of late 2025 and 2026, the SMG router)
// reads as its sglang: names do.
func TestSGLangUnderscoreSpelling(t *testing.T) {
	body := publishedIn(t, "other-engines", "sglang-docs-production_metrics__sglang-0.3-era_full.txt")
	want, err := NewNormalizer().Normalize(body, "text/plain; version=0.0.4")
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewNormalizer().Normalize(bytes.ReplaceAll(body, []byte(SGLangPrefix), []byte("sglang_")), "text/plain; version=0.0.4")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version.Server != ServerSGLang {
		t.Fatalf("sglang_ read as %s", got.Version)
	}
	if d := nandiff.Diff(want, got); d != "" {
		t.Errorf("sglang_ reads differently: %s", d)
	}
}
