package sources

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// detectVersion infers the engine generation and the span of vLLM releases
// whose metric set fits the scrape. Capability is read from the scrape, never
// assumed from a version string (CATALOG.md §4.4); the range only tunes
// advice, such as which flags exist.
func (n *Normalizer) detectVersion(snap *Snapshot) VersionRange {
	if s := n.detectServer(); s != ServerVLLM {
		// Release spans and generations are vLLM's; another engine's
		// rows carry none.
		return VersionRange{Server: s}
	}
	r := VersionRange{Gen: n.detectGen()}
	var lo, hi Version
	narrow := func(min, max Version) {
		if !min.IsZero() && lo.Less(min) {
			lo = min
		}
		if !max.IsZero() && (hi.IsZero() || max.Less(hi)) {
			hi = max
		}
	}
	for fi, ok := range n.present {
		if !ok {
			continue
		}
		f := &families[fi]
		if f.role == RoleProc || f.role == RoleHTTP || f.role == RoleRouter || f.server != ServerVLLM {
			continue
		}
		var fmin, fmax Version
		unbounded := false
		first := true
		for _, ri := range f.rows {
			m := &Metrics[ri]
			if r.Gen != GenUnknown && m.Gen != GenUnknown && m.Gen != r.Gen {
				continue
			}
			if first || m.Since.Less(fmin) {
				fmin = m.Since
			}
			if m.Last.IsZero() {
				unbounded = true
			} else if fmax.Less(m.Last) {
				fmax = m.Last
			}
			first = false
		}
		if first {
			continue // only rows of the other generation: say nothing
		}
		if unbounded {
			fmax = Version{}
		}
		narrow(fmin, fmax)
	}
	if r.Gen == GenV1 {
		if n.engineSeen {
			narrow(V(0, 8, 3), Version{}) // engine label: PR #13923
		} else if n.presentAny {
			narrow(Version{}, V(0, 8, 2))
		}
		n.finishReasonBounds(snap, narrow)
		if completeV1(snap) {
			n.absenceBounds(narrow)
		}
	}
	n.bucketBounds(snap, r.Gen, narrow)
	if !hi.IsZero() && hi.Less(lo) {
		// Contradictory evidence (a fork, or hidden metrics re-enabled with
		// --show-hidden-metrics-for-version): keep what is certain, the floor.
		hi = Version{}
	}
	r.Min, r.Max = lo, hi
	return r
}

// detectServer is the engine with the most metric families present (vLLM
// on a tie): by family names, which a re-exporter keeps, never by one HELP
// text.
func (n *Normalizer) detectServer() Server {
	var count [NumServers]int
	for fi, ok := range n.present {
		if ok && families[fi].role != RoleProc && families[fi].role != RoleHTTP && families[fi].role != RoleRouter {
			count[families[fi].server]++
		}
	}
	best := ServerVLLM
	for s := range count {
		if count[s] > count[best] {
			best = Server(s)
		}
	}
	return best
}

// detectGen decides the engine generation from metric families only one
// generation defines (and V1's engine label); the running gauge's HELP
// text, which forks and exporters copy freely, only breaks a tie. A HELP
// text or a family set that contradicts the verdict becomes a warning on
// the endpoint.
func (n *Normalizer) detectGen() Gen {
	var v0, v1 []string
	for fi, ok := range n.present {
		if !ok {
			continue
		}
		f := &families[fi]
		if f.role == RoleProc || f.role == RoleHTTP || f.role == RoleRouter || f.role == RoleCacheInfo || f.role == RoleLoraInfo {
			continue
		}
		var gens [3]bool
		for _, ri := range f.rows {
			gens[Metrics[ri].Gen] = true
		}
		switch {
		case gens[GenUnknown] || gens[GenV0] == gens[GenV1]:
		case gens[GenV0]:
			v0 = append(v0, f.name)
		default:
			v1 = append(v1, f.name)
		}
	}
	isV1 := len(v1) > 0 || n.engineSeen
	isV0 := len(v0) > 0
	var g Gen
	switch {
	case isV1 && !isV0:
		g = GenV1
	case isV0 && !isV1:
		g = GenV0
	case isV0 && isV1:
		g = n.help
		why := "V1 only: " + firstNames(v1)
		if len(v1) == 0 {
			why = "the engine label (V1 only)"
		}
		n.warn(fmt.Sprintf("metric families of both engine generations (V0 only: %s; %s): generation read as %s", firstNames(v0), why, g))
		return g
	default:
		return n.help
	}
	if n.help != GenUnknown && n.help != g {
		n.warn(fmt.Sprintf("the HELP text of %s says %s, but %s families only %s defines are present: read as %s",
			FamilyName(RoleGauge, uint8(GRunning)), n.help, firstNames(append(v0, v1...)), g, g))
	}
	return g
}

// firstNames lists up to three family names, sorted, for a warning.
func firstNames(names []string) string {
	names = slices.Clone(names)
	slices.Sort(names)
	if len(names) > 3 {
		names = append(names[:3], "…")
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// finishReasonBounds: V1 pre-creates every finish reason it knows at 0, so the
// set of reasons pins the release span (error arrived in 0.14, repetition in 0.18).
func (n *Normalizer) finishReasonBounds(snap *Snapshot, narrow func(min, max Version)) {
	seen := map[string]bool{}
	for i := range snap.Subs {
		for _, lv := range snap.Subs[i].Labeled[LFinished] {
			seen[lv.Label] = true
		}
	}
	if !seen["stop"] || !seen["length"] || !seen[FinishAbort] {
		return
	}
	for _, fr := range FinishReasons {
		if seen[fr.Reason] {
			narrow(fr.Since, Version{})
		} else if !fr.Since.IsZero() {
			narrow(Version{}, prevRelease(fr.Since))
		}
	}
}

// bucketBounds matches histogram layouts against the layouts each release used.
func (n *Normalizer) bucketBounds(snap *Snapshot, g Gen, narrow func(min, max Version)) {
	done := map[Buckets]bool{}
	for i := range snap.Subs {
		for h := range snap.Subs[i].Hists {
			hist := &snap.Subs[i].Hists[h]
			if !hist.Present() {
				continue
			}
			b := histLayouts[h]
			if b == BNone || b == B125 || done[b] {
				continue
			}
			done[b] = true
			bounds := hist.Bounds
			if len(bounds) > 0 && math.IsInf(bounds[len(bounds)-1], 1) {
				bounds = bounds[:len(bounds)-1]
			}
			var lo, hi Version
			matched, unbounded := false, false
			for _, l := range bucketLayouts[b] {
				if (l.Gen != GenUnknown && l.Gen != g) || !slices.Equal(l.Bounds, bounds) {
					continue
				}
				if !matched || l.Since.Less(lo) {
					lo = l.Since
				}
				if l.Until.IsZero() {
					unbounded = true
				} else if hi.Less(l.Until) {
					hi = l.Until
				}
				matched = true
			}
			if matched {
				if unbounded {
					hi = Version{}
				}
				narrow(lo, hi)
			}
		}
	}
}

// histLayouts is each canonical histogram's layout family (its rank-0 row's),
// looked up once: a walk of the metric table per histogram per scrape was
// most of detectVersion's cost.
var histLayouts = func() (l [NumHists]Buckets) {
	for h := range l {
		l[h] = histBuckets(Hist(h))
	}
	return l
}()

// histBuckets returns the layout family of a canonical histogram.
func histBuckets(h Hist) Buckets {
	for _, m := range Metrics {
		if m.Role == RoleHist && Hist(m.ID) == h && m.Rank == 0 {
			return m.Bucket
		}
	}
	return BNone
}

// prevRelease returns a version just below v, for "before v" bounds.
func prevRelease(v Version) Version {
	switch {
	case v.Patch > 0:
		return Version{v.Major, v.Minor, v.Patch - 1}
	case v.Minor > 0:
		return Version{v.Major, v.Minor - 1, 99}
	}
	return Version{v.Major - 1, 99, 99}
}

// completeV1 reports whether a V1 scrape carries the core families, so that
// an absent family means "not in this release" rather than "cut off".
func completeV1(snap *Snapshot) bool {
	for i := range snap.Subs {
		s := &snap.Subs[i]
		if !math.IsNaN(s.Gauges[GRunning]) && s.Hists[HTTFT].Present() {
			return true
		}
	}
	return false
}

// absenceBounds: V1 registers every non-optional family at start-up, so a
// family that every release since X shows by default being absent means the
// release is older than X (inter_token_latency_seconds missing: before 0.10.2).
func (n *Normalizer) absenceBounds(narrow func(min, max Version)) {
	for fi, ok := range n.present {
		if ok {
			continue
		}
		f := &families[fi]
		if f.rank != 0 || f.role == RoleProc || f.role == RoleHTTP || f.role == RoleRouter {
			continue
		}
		for _, ri := range f.rows {
			m := &Metrics[ri]
			if m.Optional || m.Gen == GenV0 || !m.Shown.IsZero() || !m.Last.IsZero() || m.Since.IsZero() {
				continue
			}
			narrow(Version{}, prevRelease(m.Since))
		}
	}
}
