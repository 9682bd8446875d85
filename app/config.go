// Package app runs vtop: the pipeline from the sources to the detector, the
// hub that hands its frames to the TUI and takes the TUI's requests, and
// the replay player and its loop. cmd/vtop parses the configuration, wires
// a run from this package and exits; nothing here reads flags or prints to
// the terminal.
package app

import (
	"time"

	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/discovery"
)

// Config is what one run's pipeline needs of the resolved configuration.
type Config struct {
	Targets     []sources.Target
	Once        bool // one report: Prometheus reads what one window needs
	Interval    time.Duration
	Window      time.Duration
	MaxSamples  int
	MaxParallel int
	HTTP        sources.HTTPConfig
	GPU         string // --gpu: auto, nvml, none
	Prom        PromConfig
	DCGM        []string         // dcgm-exporter URLs (direct mode)
	Discover    []discovery.Spec // dns+, dnssrv+ targets and --file-sd files
	Rules       detect.RulesConfig

	Record    string // --record FILE; "" records nothing
	RecordMax int64
	Version   string // this vtop's, written in a recording's header

	// GPUSource replaces NVML (the demo passes its simulated GPUs), and
	// ProcTrees, indexed like Targets, replace the /proc join (the demo's
	// replicas run in vtop's own process, with simulated PIDs).
	GPUSource sources.GPUSource
	ProcTrees []sources.ProcTree
}

// PromConfig says how to read a Prometheus-compatible server.
type PromConfig struct {
	URL      string // "" reads the targets directly
	Selector string
	Headers  map[string]string
	Backfill time.Duration
	At       time.Time // a --once report of the fleet as it was then
}
