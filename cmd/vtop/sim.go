package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/vtop-dev/vtop/sim"
)

func init() { subcommands["sim"] = runSim }

const simUsage = `vtop sim — serve a simulated vLLM fleet on loopback, for Prometheus, benchmarks
and vtop itself. Each replica is a vLLM engine model (scheduler, paged KV cache,
prefix cache, preemption) serving /metrics on its own port.

Usage:
  vtop sim [flags]

Replica i listens on PORT+i (PORT 0: an ephemeral port each). Scenarios are
given round-robin: with --scenario A --scenario B, replicas 0, 2, 4… get A and
1, 3, 5… get B. One --scenario value may join several with '+', each with an
optional start delay of simulated time: busy+kv-thrashing@2m.

Scenarios: %s
Generations (--version): %s

Examples:
  vtop sim                                    # one replica on 127.0.0.1:8000, like vLLM
  vtop sim --replicas 8 --scenario healthy --scenario kv-thrashing@1m
  vtop sim --listen 127.0.0.1:20000 --replicas 1000 --for 5m
  vtop sim --scenario kv-thrashing --warmup 2m   # open vtop on an incident already 2 minutes old
  vtop sim --replicas 4 --engine vllm --engine sglang   # a mixed fleet: SGLang's names, labels and buckets on 1 and 3

Flags:
`

func newSimFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("vtop sim", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.String("listen", "127.0.0.1:8000", "loopback address of replica 0 (HOST:PORT); replica i listens on PORT+i")
	fs.Int("replicas", 1, "number of replicas")
	fs.StringArray("scenario", nil, "NAME[@DELAY][+NAME[@DELAY]…] for the next replica, round-robin (repeatable)")
	fs.String("version", sim.DefaultProfile, "vLLM generation to impersonate: "+sim.ProfileNames())
	fs.StringArray("engine", nil, "vllm or sglang for the next replica, round-robin (repeatable): --engine vllm --engine sglang mixes them")
	fs.Uint64("seed", 1, "random seed of the traffic")
	fs.StringSlice("models", []string{sim.Models[0].Name}, "served model names, round-robin (presets: "+modelNames()+")")
	fs.Int("dp", 1, "data-parallel engines per replica (V1)")
	fs.Duration("for", 0, "stop after this long (0: until SIGINT/SIGTERM)")
	fs.String("dcgm-listen", "", "also serve the simulated GPUs as dcgm-exporter does, on this loopback HOST:PORT (node "+sim.DCGMNode+", pods named after the replicas in namespace "+sim.DCGMNamespace+")")
	fs.Duration("warmup", 0, "simulate this long before serving: the replicas start that far into their scenarios, with that history behind them")
	fs.BoolP("help", "h", false, "show this help")
	return fs
}

func modelNames() string {
	var n []string
	for _, m := range sim.Models {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}

func runSim(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := newSimFlags()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if help, _ := fs.GetBool("help"); help || errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintf(stdout, simUsage, sim.ScenarioNames(), sim.ProfileNames())
		fmt.Fprint(stdout, fs.FlagUsages())
		return 0
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var cfg sim.FleetConfig
	var scfg sim.ServeConfig
	var seed uint64
	if err == nil {
		cfg, scfg, seed, err = simConfig(fs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vtop sim: %v\n", err)
		fmt.Fprintln(stderr, "Run 'vtop sim --help' for usage.")
		return 3
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if d, _ := fs.GetDuration("for"); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	fleet, err := sim.NewFleet(cfg, seed)
	if err != nil {
		fmt.Fprintf(stderr, "vtop sim: %v\n", err)
		return 3
	}
	// An incident already under way: the served fleet's clock starts
	// after the warm-up, its history timestamped in the past.
	if d, _ := fs.GetDuration("warmup"); d > 0 {
		fleet.Advance(d)
	} else if d < 0 {
		fmt.Fprintln(stderr, "vtop sim: --warmup must not be negative")
		return 3
	}
	srv, err := sim.Serve(fleet, scfg)
	if err != nil {
		fmt.Fprintf(stderr, "vtop sim: %v\n", err)
		return 3
	}
	fmt.Fprintf(stdout, "vtop sim: %d replica%s of %s, seed %d: %s\n",
		len(cfg.Replicas), plural(len(cfg.Replicas)), fleetEngines(fleet), seed, srv.Summary())
	if addr, _ := fs.GetString("dcgm-listen"); addr != "" {
		d, err := sim.ServeDCGM(fleet, addr)
		if err != nil {
			srv.Close()
			fmt.Fprintf(stderr, "vtop sim: %v\n", err)
			return 3
		}
		defer d.Close()
		fmt.Fprintf(stdout, "vtop sim: dcgm-exporter metrics of its GPUs: %s\n", d.URL)
	}
	start := time.Now()
	<-ctx.Done()
	srv.Close()
	fmt.Fprintf(stderr, "vtop sim: stopped after %s, %d scrapes served\n", time.Since(start).Round(time.Second), srv.Scrapes())
	return 0
}

// fleetEngines says what the replicas impersonate: "vLLM 0.20.2 (latest)",
// or both engines of a mixed fleet.
func fleetEngines(f *sim.Fleet) string {
	var out []string
	seen := map[string]bool{}
	for _, r := range f.Replicas() {
		p := r.Profile()
		s := fmt.Sprintf("%s %s (%s)", p.Server, p.Version, p.Name)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return strings.Join(out, " and ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// simConfig turns the flags into a fleet: scenarios and models round-robin.
func simConfig(fs *pflag.FlagSet) (sim.FleetConfig, sim.ServeConfig, uint64, error) {
	var cfg sim.FleetConfig
	listen, _ := fs.GetString("listen")
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return cfg, sim.ServeConfig{}, 0, fmt.Errorf("--listen %q: want HOST:PORT", listen)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return cfg, sim.ServeConfig{}, 0, fmt.Errorf("--listen %q: bad port", listen)
	}
	if _, err := sim.CheckLoopback(host); err != nil {
		return cfg, sim.ServeConfig{}, 0, err
	}
	n, _ := fs.GetInt("replicas")
	if n < 1 || n > 10000 {
		return cfg, sim.ServeConfig{}, 0, fmt.Errorf("--replicas must be 1..10000")
	}
	if port > 0 && port+n-1 > 65535 {
		return cfg, sim.ServeConfig{}, 0, fmt.Errorf("--listen port %d + %d replicas runs past 65535", port, n)
	}
	gen, _ := fs.GetString("version")
	if _, err := sim.LookupProfile(gen); err != nil {
		return cfg, sim.ServeConfig{}, 0, err
	}
	dp, _ := fs.GetInt("dp")
	if dp < 1 || dp > 64 {
		return cfg, sim.ServeConfig{}, 0, fmt.Errorf("--dp must be 1..64")
	}
	specs, _ := fs.GetStringArray("scenario")
	var scenarios [][]sim.ScenarioSpec
	for _, s := range specs {
		sc, err := sim.ParseScenarios(s)
		if err != nil {
			return cfg, sim.ServeConfig{}, 0, fmt.Errorf("--scenario: %v", err)
		}
		scenarios = append(scenarios, sc)
	}
	engines, _ := fs.GetStringArray("engine")
	for _, e := range engines {
		if e != "vllm" && e != "sglang" {
			return cfg, sim.ServeConfig{}, 0, fmt.Errorf("--engine %q: want vllm or sglang", e)
		}
		if e == "sglang" && dp > 1 {
			return cfg, sim.ServeConfig{}, 0, fmt.Errorf("--engine sglang: the SGLang simulation has one engine (no --dp)")
		}
	}
	models, _ := fs.GetStringSlice("models")
	if len(models) == 0 {
		models = []string{sim.Models[0].Name}
	}
	for i := range n {
		rc := sim.ReplicaConfig{Name: fmt.Sprintf("replica-%d", i), Profile: gen, DP: dp,
			Model: sim.LookupModel(strings.TrimSpace(models[i%len(models)]))}
		if len(scenarios) > 0 {
			rc.Scenarios = scenarios[i%len(scenarios)]
		}
		if len(engines) > 0 && engines[i%len(engines)] == "sglang" {
			rc.Profile = "sglang"
		}
		cfg.Replicas = append(cfg.Replicas, rc)
	}
	seed, _ := fs.GetUint64("seed")
	return cfg, sim.ServeConfig{Host: host, BasePort: port}, seed, nil
}
