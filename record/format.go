// Package record writes and reads vtop recordings: the raw scrape bodies,
// GPU samples and evaluation ticks of a run, so that a replay feeds the same
// parser and detector with the same inputs at the same times. The format is
// specified in docs/recording.md; this file holds its constants and header.
package record

import (
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Version is the format version this package writes and the newest it
// reads; it reads every older one. 2 added the header's prometheus object
// and a process tree's gpus: a format-1 reader would replay such a file
// with the GPUs of remote endpoints lost, so it refuses it instead. 3 added
// a process tree's memory limit, which memory_leak projects against: an
// older reader would replay a different projection. 4 packs a delta op's
// kind into its first varint (packedOps), a third fewer bytes to compress.
const Version = 4

// packedOps is the first version whose delta ops are packed.
const packedOps = 4

// magic opens every recording file; its last byte is the format version.
var magic = [8]byte{'V', 'T', 'O', 'P', 'R', 'E', 'C', Version}

// batchSpan bounds what a vtop killed with SIGKILL loses of a small
// fleet's recording (see batchBytes).
const batchSpan = 5 * time.Second

// Record types (the low 7 bits of a frame's type byte).
const (
	typeHeader   = 'H' // JSON Header
	typeScrape   = 'S' // one scrape of one target, as ingested
	typeGPU      = 'G' // one reading of the local GPUs (JSON, delta-encoded)
	typeProcs    = 'P' // a target's serving process tree (JSON)
	typeTarget   = 'A' // a target that arrived after the header (JSON Target)
	typeDeparted = 'D' // a target that is gone (uvarint index)
	typeTick     = 'T' // the detector evaluated at this time
	typeEnd      = 'E' // the writer closed this file (UTF-8 reason)
	typeBatch    = 'B' // records up to and including a tick: (type, uvarint length, payload)*
	typeRun      = 'R' // how the run went (JSON, the recorder's own; a --once run's elapsed time)

	flagZstd = 0x80 // the payload is one zstd frame
)

// Frame layout: u32 LE payload length, u32 LE CRC-32C (Castagnoli) of the
// type byte and the payload, the type byte, the payload.
const frameHead = 9

// Bounds a reader enforces, so a corrupt length cannot make it allocate
// without limit: a scrape body is capped at 16 MiB by the fetcher; a frame
// may hold a little more.
const (
	maxFrame   = 24 << 20
	maxDecoded = 24 << 20
	maxTargets = 100000
	maxBatch   = 4 << 20 // a batch is written early past this size
	// A batch is written at the first tick that makes it this large, or
	// batchSpan after the tick that wrote the last: a 50-replica fleet's
	// tick (~45 KiB) is a frame of its own, a small fleet's ticks share one.
	batchBytes = 32 << 10
)

// Header is the first frame of every file: who wrote it, what was polled
// and the configuration that decides findings. Config is opaque to this
// package (cmd/vtop puts the rules, thresholds and SLO profile there).
type Header struct {
	Format      int             `json:"format"`
	VtopVersion string          `json:"vtop_version"`
	Started     time.Time       `json:"started"`
	Part        int             `json:"part"` // 0 for the first file of a recording, +1 per rotation
	Interval    Duration        `json:"interval"`
	Window      Duration        `json:"window"`
	Targets     []Target        `json:"targets"`
	Config      json.RawMessage `json:"config,omitempty"`
	// Prometheus is the server a --prometheus run read the fleet from
	// (format 2); nil for a run that scraped its targets.
	Prometheus *Prometheus `json:"prometheus,omitempty"`
}

// Prometheus says what a run read from a Prometheus-compatible server:
// its URL (redacted), the selector, the backfill and the --at moment. The
// extra headers it sent (a tenant's X-Scope-OrgID) and its credentials
// are never written.
type Prometheus struct {
	URL      string    `json:"url"`
	Selector string    `json:"selector,omitempty"`
	Backfill Duration  `json:"backfill,omitempty"`
	At       time.Time `json:"at,omitzero"`
}

// Target is a polled endpoint as recorded: redacted URL, no credentials.
type Target struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	MaxNumSeqs int    `json:"max_num_seqs,omitempty"`
	Pod        string `json:"pod,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
}

// Source is the target as the pipeline takes it.
func (t Target) Source() sources.Target {
	return sources.Target{Name: t.Name, URL: t.URL, MaxNumSeqs: t.MaxNumSeqs, Pod: t.Pod, Namespace: t.Namespace}
}

// Duration is a time.Duration written as Go's duration text ("1s").
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Targets converts polled targets to their recorded form.
func Targets(ts []sources.Target) []Target {
	out := make([]Target, len(ts))
	for i, t := range ts {
		out[i] = Target{Name: Redact(t.Name), URL: Redact(t.URL), MaxNumSeqs: t.MaxNumSeqs, Pod: t.Pod, Namespace: t.Namespace}
	}
	return out
}

// Redact removes what could be a secret from a target string: user
// information, every query value and the fragment. A string that is not a
// URL with a query or credentials is returned as it is.
func Redact(s string) string {
	if !strings.ContainsAny(s, "?@#") {
		return s
	}
	in := s
	if !strings.Contains(in, "://") {
		in = "http://" + in
	}
	u, err := url.Parse(in)
	if err != nil {
		// Unparseable: keep only what precedes anything secret-shaped.
		if i := strings.IndexAny(s, "?@#"); i >= 0 {
			return s[:i] + "?REDACTED"
		}
		return s
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		u.RawQuery = q.Encode()
	}
	out := u.String()
	if !strings.Contains(s, "://") {
		out = strings.TrimPrefix(out, "http://")
	}
	return out
}
