package sources

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// part says which sample of a family a wire name is.
type part uint8

const (
	partValue part = iota
	partCreated
	partBucket
	partSum
	partCount
)

// wireName is what a sample name resolves to.
type wireName struct {
	fam  int // index into families
	part part
}

// family is one distinct family name of the table with every row that uses it.
type family struct {
	name   string
	kind   Kind
	role   Role
	id     uint8
	rank   uint8
	server Server
	rows   []int // indexes into Metrics
}

var (
	families []family
	byWire   map[string]wireName
	famIndex map[string]int
	// byTypeName maps the names TYPE lines give a family, in every
	// spelling (a counter with and without _total, a histogram's base
	// name), to it.
	byTypeName map[string]int
)

func init() {
	famIndex = map[string]int{}
	byWire = map[string]wireName{}
	for i, m := range Metrics {
		fi, ok := famIndex[m.Name]
		if !ok {
			fi = len(families)
			famIndex[m.Name] = fi
			families = append(families, family{name: m.Name, kind: m.Kind, role: m.Role, id: m.ID, rank: m.Rank, server: m.Server})
		}
		f := &families[fi]
		if f.kind != m.Kind || f.role != m.Role || f.id != m.ID || f.rank != m.Rank || f.server != m.Server {
			panic(fmt.Sprintf("schema: rows of %s disagree on kind/role/id/rank/server", m.Name))
		}
		f.rows = append(f.rows, i)
	}
	add := func(name string, fi int, p part) {
		if old, dup := byWire[name]; dup && old != (wireName{fi, p}) {
			panic("schema: wire name " + name + " maps to two families")
		}
		byWire[name] = wireName{fi, p}
	}
	byTypeName = map[string]int{}
	addFamily := func(name string, fi int) {
		byTypeName[name] = fi
		if families[fi].kind == KindCounter {
			byTypeName[name+"_total"] = fi
		}
		switch families[fi].kind {
		case KindGauge, KindInfo:
			add(name, fi, partValue)
		case KindCounter:
			// The wire name ends in _total whatever the code name (text and
			// OpenMetrics alike); simulators that drop _total are accepted too.
			add(name+"_total", fi, partValue)
			add(name, fi, partValue)
			add(name+"_created", fi, partCreated)
		case KindHistogram:
			add(name+"_bucket", fi, partBucket)
			add(name+"_sum", fi, partSum)
			add(name+"_count", fi, partCount)
			add(name+"_created", fi, partCreated)
		}
	}
	for fi, f := range families {
		addFamily(f.name, fi)
	}
	// The same families under each re-exporter's prefix. A router's names
	// mark a router by their own spelling only.
	for _, sp := range Spellings {
		for fi, f := range families {
			if rest, ok := strings.CutPrefix(f.name, sp.Table); ok && f.role != RoleRouter {
				addFamily(sp.Wire+rest, fi)
			}
		}
	}
}

// otherEngine returns the name of another serving engine whose metric prefix
// name carries, or "".
func otherEngine(name string) string {
	for _, o := range OtherEngines {
		if strings.HasPrefix(name, o.Prefix) {
			return o.Name
		}
	}
	return ""
}

// FamilyName returns the family name of a canonical signal's current (rank 0)
// name, for messages and rule annotations.
func FamilyName(r Role, id uint8) string {
	for _, f := range families {
		if f.role == r && f.id == id && f.rank == 0 {
			return f.name
		}
	}
	return ""
}

// FamilyNames returns every family name (all ranks) feeding a canonical
// signal, current name first.
func FamilyNames(r Role, id uint8) []string {
	var out []string
	for rank := uint8(0); rank < 4; rank++ {
		for _, f := range families {
			if f.role == r && f.id == id && f.rank == rank {
				out = append(out, f.name)
			}
		}
	}
	return out
}

// Exposes reports whether engine s has a family for a canonical signal: a
// signal it lacks is shown as "not exposed by <engine>", never as zero.
func Exposes(s Server, r Role, id uint8) bool {
	for i := range families {
		if f := &families[i]; f.server == s && f.role == r && f.id == id {
			return true
		}
	}
	return false
}

// declaresEngine reports whether a TYPE line's name is an engine family of
// the table in any spelling (a counter's or histogram's base name too):
// a body that declares them without samples is an engine's empty registry,
// not another program.
func declaresEngine(name []byte) bool {
	if bytes.HasPrefix(name, []byte(VLLMPrefix)) || bytes.HasPrefix(name, []byte(SGLangPrefix)) {
		return true // a family of theirs vtop does not read yet counts too
	}
	fi, ok := byTypeName[string(name)]
	if !ok {
		return false
	}
	r := families[fi].role
	return r != RoleProc && r != RoleHTTP && r != RoleRouter
}

// isRunningFamily reports whether name is vLLM's running gauge in any
// spelling, whose HELP text breaks a tie between generations.
func isRunningFamily(name []byte) bool {
	if !bytes.HasSuffix(name, runningSuffix) {
		return false // every spelling of it ends so: one map lookup per HELP line saved
	}
	w, ok := byWire[string(name)]
	f := &families[w.fam]
	return ok && f.server == ServerVLLM && f.role == RoleGauge && Gauge(f.id) == GRunning
}

var runningSuffix = []byte("num_requests_running")

// EnginePrefixes are the name prefixes of every engine family the table
// reads, in every spelling but the unprefixed one: what a query for
// engine series (--prometheus) matches.
func EnginePrefixes() []string {
	out := []string{VLLMPrefix, SGLangPrefix}
	for _, sp := range Spellings {
		if sp.Wire != "" && !slices.Contains(out, sp.Wire) {
			out = append(out, sp.Wire)
		}
	}
	return out
}

// RunningGauge reports whether name (a sample name in any spelling) is an
// engine's running-requests gauge, vLLM's or SGLang's: the one series every
// engine replica exposes, which a Prometheus reader keys replicas on.
func RunningGauge(name string) bool {
	w, ok := byWire[name]
	f := &families[w.fam]
	return ok && f.role == RoleGauge && Gauge(f.id) == GRunning
}

// RouterValueNames are the sample names of the router rows that carry a
// number per model (Dynamo's frontend: its queue, in-flight count and
// workers' batch cap): what a Prometheus reader asks for beside the
// engines' families, and keys a router's replica on, since a router has
// no running gauge.
func RouterValueNames() []string { return slices.Clone(routerValueNames()) }

var routerValueNames = sync.OnceValue(func() []string {
	var out []string
	for name, w := range byWire {
		if f := &families[w.fam]; f.role == RoleRouter && RouterValue(f.id) != RNone && w.part == partValue {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
})
