package promapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/dcgm"
)

// maxParallel is how many family queries one refresh has in flight.
const maxParallel = 4

// maxClasses bounds the distinct series texts a normalizing worker
// remembers across replicas: ~330 per model and vLLM release, at ~200
// bytes each.
const maxClasses = 1 << 15

// chunkSteps is how many steps one backfill range query covers: history is
// read and handed on in pieces, so memory stays bounded however long it is.
const chunkSteps = 120

// Source is a Prometheus server as a sources.Source: the backfill at open,
// then a refresh per scrape interval.
type Source struct {
	c     *Client
	fleet *fleet
	// With Client.federate: the requests' name groups and their answers,
	// split by target (the first holds the running gauge: every engine).
	groups [][]string
	feds   []*federation
	gpus   *dcgm.Reader
	// classes are the normalizing workers' shared series classes, one
	// per worker.
	classes []*sources.SeriesClasses
	gen     uint64
	failing bool      // the last refresh failed: its Problem is up
	grace   time.Time // until then no replica departs: the server just came back
	// fresh counts the replicas this refresh saw scraped since cut (the
	// horizon outside any grace); newestOld is the newest sample of those
	// older than that. Nothing fresh and something old: the server is
	// behind, grace or not.
	fresh     int
	newestOld time.Time
	cut       time.Time
	names     []labelPair // scratch for label sorting
	// boundText is the replica bound's Problem as last said.
	boundText string
}

// NewSource reads through an opened client.
func NewSource(c *Client) *Source {
	s := &Source{c: c, fleet: newFleet(c.help), gpus: dcgm.NewReader()}
	if c.federate {
		s.groups = c.fedGroups()
		s.feds = []*federation{newFederation(c.stamped(), s.fleet.header)}
		for range s.groups[1:] {
			s.feds = append(s.feds, newFederation(nil, nil))
		}
	}
	return s
}

// Run backfills, then refreshes until ctx ends. With Config.Once it stops
// after the backfill, or after one refresh when there is none.
func (s *Source) Run(ctx context.Context, out chan<- sources.Batch) error {
	c := s.c
	now := c.cfg.Clock()
	read := 0
	if c.cfg.Backfill > 0 {
		// A chunk that cannot be read leaves a gap, said as a Problem:
		// the live refresh starts regardless.
		read = s.backfill(ctx, out, now.Add(-c.cfg.Backfill), now)
		if ctx.Err() != nil {
			return nil
		}
	}
	if c.cfg.Once && read > 0 {
		return nil // --once reports on the history; with none, one refresh
	}
	tick := time.NewTicker(c.interval)
	defer tick.Stop()
	refresh := s.refresh
	if c.federate {
		refresh = s.refreshFederated
	}
	for {
		b, err := refresh(ctx, c.cfg.Clock())
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if len(s.fleet.byKey) == 0 && c.cfg.Once {
				return err // no replica to carry the error: the run's error
			}
			if c.cfg.Log != nil {
				c.cfg.Log.Warn("prometheus refresh", "err", err)
			}
			// The server is down or slow: that is the server failing, not
			// every replica. They are unseen (stale, their last values),
			// and the server's error is said as its own.
			b = sources.Batch{Now: c.cfg.Clock()}
			s.failing = true
			b.Problems = append(b.Problems, sources.Problem{Key: s.outageKey(), Text: sources.Sanitize(err.Error(), 200), Feeds: true})
		} else if s.failing {
			s.failing = false
			b.Problems = append(b.Problems, sources.Problem{Key: s.outageKey()})
		}
		if !sources.Send(ctx, out, b) || c.cfg.Once {
			return nil // --once without history: one refresh
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// lag is how far behind now a refresh reads, so a scrape being committed
// is not read half-way.
const lag = time.Second

// refresh reads the newest sample of every series with one instant query
// per family, all replicas at once, and rebuilds each replica's scrape.
// Each scrape is stamped with the time of the replica's newest sample, so
// rates and data age come from the server's clock; a replica whose series
// are gone has departed.
func (s *Source) refresh(ctx context.Context, now time.Time) (sources.Batch, error) {
	c := s.c
	ts := now.Add(-lag)
	b := sources.Batch{Now: now}
	// The replicas and their newest scrape times, in one small query.
	v, err := c.query(ctx, s.stampQuery(), ts)
	if err != nil {
		return b, err
	}
	s.gen++
	stamps := map[*replica]time.Time{}
	// A server that writes no staleness markers (VictoriaMetrics for a
	// target gone from its file_sd) keeps answering with the last sample:
	// a replica with no new scrape for a few intervals has departed.
	gone := s.horizon(ts)
	dropped := 0
	for _, smp := range v.(model.Vector) {
		// A stamp in the future is taken as now (see federation.sample).
		at := time.UnixMilli(int64(float64(smp.Value) * 1000))
		if at.After(ts) {
			at = ts
		}
		if !s.within(at, gone) {
			continue
		}
		if s.fleet.byKey[keyOf(smp.Metric)] == nil && len(s.fleet.byKey) >= c.maxReplicas() {
			dropped++
			continue
		}
		r, added := s.fleet.get(smp.Metric)
		if added {
			b.Arrived = append(b.Arrived, r.target())
		}
		r.seen = s.gen
		stamps[r] = at
	}
	if err := s.departed(ctx, &b, ts, gone); err != nil {
		return b, err
	}
	s.bounded(&b, dropped)
	vecs, err := queryAll(c.families, func(f family) (model.Value, error) { return c.query(ctx, c.selectFamily(f), ts) })
	if err != nil {
		return b, err
	}
	for r := range stamps {
		s.fleet.begin(r)
	}
	for _, v := range vecs {
		for _, smp := range v.(model.Vector) {
			r := s.fleet.byKey[keyOf(smp.Metric)]
			if _, ok := stamps[r]; !ok {
				continue // arrived after the stamps query: next time
			}
			r.buf = appendSample(r.buf, smp.Metric, float64(smp.Value), &s.names)
		}
	}
	var todo []normJob
	for r, t := range stamps {
		if !t.After(r.last) {
			continue // no new scrape since the last refresh
		}
		r.last = t
		todo = append(todo, normJob{r: r, buf: r.buf, at: t})
	}
	b.Scrapes = s.normalizeAll(todo, b.Scrapes)
	if err := s.readGPUs(ctx, &b, ts); err != nil {
		return b, err
	}
	return b, nil
}

// bounded says, when a refresh left replicas out (past maxReplicas), and
// clears it when it no longer does: checked on every refresh, not only at
// open, so a fleet that grows past the bound is caught.
func (s *Source) bounded(b *sources.Batch, dropped int) {
	text := ""
	if dropped > 0 {
		text = fmt.Sprintf("more than %d replicas (the series limit of %d at about %d each): the rest (%d series) are left out; narrow --selector",
			s.c.maxReplicas(), s.c.cfg.MaxSeries, seriesPerReplica, dropped)
	}
	if text != s.boundText {
		s.boundText = text
		b.Problems = append(b.Problems, sources.Problem{Key: "prometheus " + s.c.name, Text: text})
	}
}

// maxReplicas is the bound on replicas a refresh keeps: the series limit
// at the series one vLLM exposes.
func (c *Client) maxReplicas() int { return max(c.cfg.MaxSeries/seriesPerReplica, 1) }

// readGPUs reads dcgm-exporter's series, one query per metric, and joins
// the devices to the replicas by pod, else by host.
func (s *Source) readGPUs(ctx context.Context, b *sources.Batch, ts time.Time) error {
	c := s.c
	if len(c.dcgm) == 0 {
		b.GPU = &sources.GPUSnapshot{Time: b.Now, Unavailable: "no dcgm-exporter series (DCGM_FI_*) in " + c.name}
		return nil
	}
	vecs := make([]model.Value, len(c.dcgm))
	var err error
	for i, n := range c.dcgm {
		if vecs[i], err = c.query(ctx, `{__name__="`+n+`"}`, ts); err != nil {
			return err
		}
	}
	s.gpus.Begin()
	for i, v := range vecs {
		for _, smp := range v.(model.Vector) {
			s.addGPU(c.dcgm[i], smp.Metric, float64(smp.Value))
		}
	}
	s.endGPUs(b)
	return nil
}

// addGPU feeds one dcgm-exporter sample to the reader.
func (s *Source) addGPU(name string, m model.Metric, v float64) {
	host := string(m["instance"])
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	s.gpus.Add(name, func(l string) string { return string(m[model.LabelName(l)]) }, v, host)
}

// endGPUs turns the samples fed since Begin into b's GPU snapshot and
// joins the devices to the replicas by pod, else by host.
func (s *Source) endGPUs(b *sources.Batch) {
	c := s.c
	devs, events := s.gpus.End(b.Now)
	var reps []*replica
	var holders []dcgm.Holder
	for _, r := range s.fleet.byKey {
		reps = append(reps, r)
		holders = append(holders, dcgm.Holder{Namespace: r.ns, Pod: r.pod, Host: r.host})
	}
	fl := dcgm.Fleet{Devices: devs, Events: events}
	snap, held := fl.Snapshot(b.Now, "dcgm-exporter via "+c.name, holders)
	if note := s.gpus.Refused(); note != "" {
		snap.Notes = append(snap.Notes, "dcgm-exporter: "+note) // devices past the bound, values out of range
	}
	b.GPU = &snap
	for i, r := range reps {
		t := sources.ProcTree{GPUs: held[i]}
		if len(held[i]) == 0 {
			t.Note = "no dcgm-exporter GPU carries its pod, or its host serves several replicas"
		}
		b.Procs = append(b.Procs, sources.TargetProcs{Target: r.name, Tree: t})
	}
}

// stampQuery asks, per replica, for the time of its newest scrape: the
// timestamp of the running gauge every engine exposes, or of a router's
// numbers. Each router name has a term of its own: timestamp() drops the
// name, and a frontend's queue and cap of one model would be one label set.
func (s *Source) stampQuery() string {
	c := s.c
	run := c.running()
	q := "max by (" + idBy + ") (timestamp(" + c.match(run) + "))"
	for _, n := range c.stamped()[len(run):] {
		q += " or max by (" + idBy + ") (timestamp(" + c.match([]string{n}) + "))"
	}
	return q
}

// departed takes out of the fleet the replicas this refresh did not see,
// and keeps, failing, those Prometheus still scrapes: a replica without
// vLLM series whose up is fresh is down or restarting, not gone (a crash
// loop read as leaving and joining again, never as down or restarting).
// A server that scrapes nothing (no replica fresh, no target's up fresh,
// yet old samples answered) is behind, not its fleet gone: that is its
// error, and nobody departs. It is what a Prometheus just continued
// after a stop answers until its scrape loops run again (the replicas
// left and joined again), and what a server whose clock lags this host's
// answers.
func (s *Source) departed(ctx context.Context, b *sources.Batch, ts, gone time.Time) error {
	var tried map[string]time.Time
	asked := false
	if s.fresh == 0 && !s.newestOld.IsZero() {
		// Checked whether or not anyone is missing: in the grace after an
		// outage nobody is, and the server may still be behind.
		tried, asked = s.stillScraped(ctx, ts, s.cut), true
		if len(tried) == 0 {
			return &behindError{newest: s.newestOld, at: ts}
		}
	}
	var missing []*replica
	for _, r := range s.fleet.byKey {
		if r.seen != s.gen {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if !asked || !gone.Equal(s.cut) {
		tried = s.stillScraped(ctx, ts, gone)
	}
	slices.SortFunc(missing, func(a, b *replica) int { return strings.Compare(a.key, b.key) })
	for _, r := range missing {
		if at, ok := tried[r.key]; ok {
			r.seen = s.gen
			b.Scrapes = append(b.Scrapes, sources.Scrape{Target: r.name, Time: at, Err: errScrapeFails})
			continue
		}
		b.Departed = append(b.Departed, r.name)
		s.fleet.drop(r)
	}
	return nil
}

// behindError is a server whose newest sample of every replica is older
// than the horizon while it answers: it is not scraping.
type behindError struct{ newest, at time.Time }

func (e *behindError) Error() string {
	return fmt.Sprintf("answers, but its newest sample is %s old (%s): it is not scraping (stopped, overloaded or just restarted), or its clock lags this host's",
		e.at.Sub(e.newest).Round(time.Second), e.newest.UTC().Format(time.TimeOnly))
}

// within says whether a replica's newest sample at is inside the
// horizon gone, and notes for departed whether it is fresh or the newest
// of the old.
func (s *Source) within(at, gone time.Time) bool {
	if at.Before(s.cut) {
		if at.After(s.newestOld) {
			s.newestOld = at
		}
	} else {
		s.fresh++
	}
	return !at.Before(gone)
}

// errScrapeFails is a replica's error while Prometheus still scrapes it
// but holds no vLLM series from it.
var errScrapeFails = errors.New("still scraped by Prometheus, which reads no vLLM metrics from it (up is fresh, its series stale): the server is down or restarting")

// stillScraped is, by replica key, the newest scrape attempt Prometheus
// made of each target it still scrapes (up fresher than gone). An error
// reads as none: the replicas then leave, as before up was read.
func (s *Source) stillScraped(ctx context.Context, ts, gone time.Time) map[string]time.Time {
	v, err := s.c.query(ctx, s.upQuery(), ts)
	if err != nil {
		return nil
	}
	out := map[string]time.Time{}
	for _, smp := range v.(model.Vector) {
		at := time.UnixMilli(int64(float64(smp.Value) * 1000))
		if at.After(ts) {
			at = ts
		}
		if !at.Before(gone) {
			out[keyOf(smp.Metric)] = at
		}
	}
	return out
}

// upQuery asks, per target, for the time of its newest scrape attempt:
// Prometheus writes up (0 when the scrape failed) while the target is in
// its configuration, so a replica that restarts keeps it and one that
// left the fleet does not.
func (s *Source) upQuery() string {
	return "max by (" + idBy + ") (timestamp(" + s.c.match([]string{"up"}) + "))"
}

// queryAll runs one query per family, a few at a time, and returns the
// results in family order.
func queryAll[T any](fams []family, q func(family) (T, error)) ([]T, error) {
	res := make([]T, len(fams))
	errs := make([]error, len(fams))
	sem := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
	for i, f := range fams {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res[i], errs[i] = q(f)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// backfill reads [from, to] with range queries, a chunk at a time, and
// sends a batch per step: the pipeline evaluates the rules over history
// as if it had been watching. Only the newest Config.FullRes, and the
// Config.Warm scrapes before it, are read at the scrape step (the
// window, the rules' holds and the baselines judging them need every
// scrape);
// older history feeds the slow readers (the leak fit's 20 s points, the
// half-hour sparklines' 10 s ones, findings' ages) and is read at
// coarseStep: a fraction of the points to fetch and normalize.
func (s *Source) backfill(ctx context.Context, out chan<- sources.Batch, from, to time.Time) (read int) {
	c := s.c
	var ranges []v1.Range
	split := to.Add(-c.cfg.FullRes - time.Duration(c.cfg.Warm)*c.interval).Truncate(c.interval)
	if coarse := c.coarseStep(); c.cfg.FullRes > 0 && split.Sub(from) > coarse {
		ranges = chunks(from, split.Add(-coarse), coarse)
		from = split
	}
	ranges = append(ranges, chunks(from, to, c.interval)...)
	// The next chunk is fetched while this one is rebuilt and evaluated:
	// the server's time and vtop's overlap.
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan fetched, 1)
	go func() {
		defer close(next)
		for _, r := range ranges {
			var f fetched
			for attempt := 0; ; attempt++ {
				f = s.fetchChunk(fctx, r)
				if f.err == nil || fctx.Err() != nil || attempt == retryAttempts-1 {
					break
				}
				wait, again := retryWait(f.err, attempt)
				if !again {
					break
				}
				if c.cfg.Log != nil {
					c.cfg.Log.Warn("prometheus backfill: retrying a chunk", "err", f.err, "wait", wait)
				}
				select {
				case <-time.After(wait):
				case <-fctx.Done():
				}
			}
			select {
			case next <- f:
			case <-fctx.Done():
				return
			}
		}
	}()
	var gaps int
	var gapFrom, gapTo time.Time
	for f := range next {
		if f.err != nil {
			if ctx.Err() != nil {
				return read
			}
			if gaps == 0 {
				gapFrom = f.r.Start
			}
			gaps++
			gapTo = f.r.End
			text := fmt.Sprintf("history from %s to %s not read (%d of %d pieces failed after %d tries; the gap stays): %s",
				gapFrom.UTC().Format(time.TimeOnly), gapTo.UTC().Format(time.TimeOnly), gaps, len(ranges), retryAttempts,
				sources.Sanitize(strings.TrimPrefix(f.err.Error(), "prometheus "+c.name+": "), 200))
			if c.cfg.Log != nil {
				c.cfg.Log.Warn("prometheus backfill: a gap", "from", f.r.Start, "to", f.r.End, "err", f.err)
			}
			b := sources.Batch{Now: f.r.End, Problems: []sources.Problem{{Key: "prometheus " + c.name + " backfill", Text: text}}}
			if !sources.Send(ctx, out, b) {
				return read
			}
			continue
		}
		read++
		if !s.sendChunk(ctx, out, f) {
			return read
		}
	}
	return read
}

// fetchChunk asks the server for one chunk of history.
func (s *Source) fetchChunk(ctx context.Context, r v1.Range) fetched {
	c := s.c
	f := fetched{r: r}
	// A range query answers every step with the newest sample at or
	// before it: the stamps say which steps saw a new scrape, and when.
	if f.stamps, f.err = c.queryRange(ctx, s.stampQuery(), r); f.err == nil {
		f.ups, f.err = c.queryRange(ctx, s.upQuery(), r)
	}
	if f.err == nil {
		f.parts, f.err = queryAll(c.families, func(fm family) (*rangePart, error) { return c.queryRangeText(ctx, c.selectFamily(fm), r) })
	}
	// dcgm-exporter's GPUs, one range query per metric, so the GPU rules
	// and panel have their history too.
	for _, n := range c.dcgm {
		if f.err != nil {
			break
		}
		var m model.Matrix
		m, f.err = c.queryRange(ctx, `{__name__="`+n+`"}`, r)
		f.gpus = append(f.gpus, m)
	}
	return f
}

// coarseStep is the step of old history: four scrapes, at most a minute,
// and never as long as the engine's stale mark (five scrapes).
func (c *Client) coarseStep() time.Duration {
	return max(c.interval, min(4*c.interval, time.Minute))
}

// chunks cuts [from, to] at step into ranges of chunkSteps steps: history
// is read and handed on in pieces, so memory stays bounded however long.
func chunks(from, to time.Time, step time.Duration) []v1.Range {
	var out []v1.Range
	for start := from.Truncate(step); !start.After(to); start = start.Add(chunkSteps * step) {
		end := start.Add((chunkSteps - 1) * step)
		if end.After(to) {
			end = to
		}
		out = append(out, v1.Range{Start: start, End: end, Step: step})
	}
	return out
}

// fetched is one chunk of history as the server answered it.
type fetched struct {
	r      v1.Range
	stamps model.Matrix
	ups    model.Matrix   // per replica, the time of its newest scrape attempt
	parts  []*rangePart   // one per family
	gpus   []model.Matrix // one per Client.dcgm name
	err    error
}

// sendChunk rebuilds a chunk's steps and sends a batch per step; false
// when ctx ended.
func (s *Source) sendChunk(ctx context.Context, out chan<- sources.Batch, f fetched) bool {
	c := s.c
	start, end, step := f.r.Start, f.r.End, f.r.Step
	steps := int(end.Sub(start)/step) + 1
	here := s.presence(f, steps)
	stamps := map[*replica][]model.SamplePair{}
	// A replica arrives at the first step that finds it in the fleet.
	arriveAt := map[int][]sources.Target{}
	arrival := func(rp *replica, key string) {
		k := slices.Index(here[key], true)
		arriveAt[k] = append(arriveAt[k], rp.target())
	}
	for _, ss := range f.stamps {
		key := keyOf(ss.Metric)
		if s.fleet.byKey[key] == nil && !slices.Contains(here[key], true) {
			continue // gone before this chunk: its last samples only
		}
		rp, added := s.fleet.get(ss.Metric)
		if added {
			arrival(rp, key)
		}
		stamps[rp] = ss.Values
	}
	// Each replica's series: which answer, which series in it.
	series := map[*replica][]seriesRef{}
	var order []*replica
	for _, p := range f.parts {
		for i := range p.series {
			key := p.series[i].key
			rp := s.fleet.byKey[key]
			if rp == nil {
				if !slices.Contains(here[key], true) {
					continue // not in the fleet during this chunk
				}
				var added bool
				if rp, added = s.fleet.get(metricOfKey(key)); added {
					arrival(rp, key)
				}
			}
			if _, ok := series[rp]; !ok {
				order = append(order, rp)
			}
			series[rp] = append(series[rp], seriesRef{p, i})
		}
	}
	// A replica's exposition keeps its lines from step to step: it is
	// written once a chunk with each value in a slot as wide as the
	// series' widest, and a step writes only its values into the slots,
	// padded with spaces (which the text format reads past). Copying
	// every line start at every step was a fifth of the backfill's CPU.
	bodies := map[*replica]*slotted{}
	for _, rp := range order {
		bodies[rp] = s.slotted(series[rp])
	}
	// A member departs at the first step after the last that finds it in
	// the fleet (any step, for one the chunk does not find at all) at which
	// the server still scraped something: history that stops for every
	// target at once (the server's own gap, or the end of what it holds)
	// is not the fleet leaving. One back after a gap within the chunk has
	// not left.
	alive := make([]bool, steps)
	for _, p := range here {
		for i, ok := range p {
			alive[i] = alive[i] || ok
		}
	}
	departAt := map[int][]*replica{}
	for key, rp := range s.fleet.byKey {
		last := lastIndex(here[key])
		if j := slices.Index(alive[last+1:], true); j >= 0 {
			departAt[last+1+j] = append(departAt[last+1+j], rp)
		}
	}
	k := 0
	for t := start; !t.After(end); t, k = t.Add(step), k+1 {
		b := sources.Batch{Now: t, Arrived: arriveAt[k]}
		slices.SortFunc(departAt[k], func(a, b *replica) int { return strings.Compare(a.key, b.key) })
		for _, rp := range departAt[k] {
			b.Departed = append(b.Departed, rp.name)
			s.fleet.drop(rp)
		}
		tm := model.TimeFromUnixNano(t.UnixNano())
		var todo []normJob
		for _, rp := range order {
			if s.fleet.byKey[rp.key] != rp {
				continue // departed
			}
			st := stamps[rp]
			for len(st) > 0 && st[0].Timestamp < tm {
				st = st[1:]
			}
			stamps[rp] = st
			if len(st) == 0 || st[0].Timestamp != tm {
				continue // not scraped by then, or gone
			}
			at := time.UnixMilli(int64(float64(st[0].Value) * 1000))
			if !at.After(rp.last) {
				continue // no new scrape since the last step
			}
			buf, n := bodies[rp].fill(k), len(series[rp])
			if buf == nil {
				// A series without a point at this step: its line is left out.
				s.fleet.begin(rp)
				n = 0
				for _, r := range series[rp] {
					if v := r.p.value(r.i, k); v != nil {
						rp.buf = append(append(append(rp.buf, r.p.lineOf(r.i)...), v...), '\n')
						n++
					}
				}
				buf = rp.buf
			}
			if n == 0 {
				continue // no series, or none with a point at this step
			}
			rp.last = at
			todo = append(todo, normJob{r: rp, buf: buf, at: at})
		}
		b.Scrapes = s.normalizeAll(todo, b.Scrapes)
		if len(f.gpus) > 0 {
			s.gpus.Begin()
			for i, m := range f.gpus {
				for j := range m {
					pts := m[j].Values
					for len(pts) > 0 && pts[0].Timestamp < tm {
						pts = pts[1:]
					}
					m[j].Values = pts
					if len(pts) > 0 && pts[0].Timestamp == tm {
						s.addGPU(c.dcgm[i], m[j].Metric, float64(pts[0].Value))
					}
				}
			}
			s.endGPUs(&b)
		}
		if !sources.Send(ctx, out, b) {
			return false
		}
	}
	return true
}

// presence says, per replica (its key) and step of a chunk, whether the
// replica was in the fleet then. A server without staleness markers
// answers a range query with a gone target's last sample for minutes, so
// the age of the newest one tells: Prometheus writes up at every scrape
// of a configured target, failed or not (a replica restarting stays), so
// up an interval and a half old means it left (half an interval, at
// least a second, for a scrape still in flight at the history's last
// step); without up, the running gauge a few intervals old does, as
// refresh judges it.
func (s *Source) presence(f fetched, steps int) map[string][]bool {
	iv := s.c.interval
	here := map[string][]bool{}
	fresh(here, f.ups, f.r, steps, iv+max(iv/2, time.Second))
	stamps := map[string][]bool{}
	fresh(stamps, f.stamps, f.r, steps, max(3*iv, 5*time.Second))
	for key, p := range stamps {
		if _, ok := here[key]; !ok {
			here[key] = p // no up: the server does not write it
		}
	}
	return here
}

// fresh marks, per key and step, whether the newest sample (m's values
// are its time) is at most quiet old.
func fresh(into map[string][]bool, m model.Matrix, r v1.Range, steps int, quiet time.Duration) {
	for _, ss := range m {
		key := keyOf(ss.Metric)
		p := into[key]
		if p == nil {
			p = make([]bool, steps)
			into[key] = p
		}
		for _, pt := range ss.Values {
			at := pt.Timestamp.Time()
			k := int((at.Sub(r.Start) + r.Step/2) / r.Step)
			if k < 0 || k >= steps {
				continue
			}
			newest := time.UnixMilli(int64(float64(pt.Value) * 1000))
			p[k] = p[k] || !newest.Before(at.Add(-quiet))
		}
	}
}

// lastIndex is the index of the last true in p, -1 when none.
func lastIndex(p []bool) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] {
			return i
		}
	}
	return -1
}

// horizon is the oldest newest-sample time a replica may have and still be
// in the fleet. Just after the server failed, none departs: a server that
// was frozen (SIGSTOP, a long GC) answers with samples as old as the
// freeze until its next scrapes land, and its replicas have not gone.
func (s *Source) horizon(ts time.Time) time.Time {
	quiet := max(3*s.c.interval, 5*time.Second)
	s.fresh, s.newestOld, s.cut = 0, time.Time{}, ts.Add(-quiet)
	if s.failing {
		// From when the server answers again, not from ts: a query sent
		// while it was stopped is answered only when it continues.
		s.grace = s.c.cfg.Clock().Add(-lag + quiet)
	}
	if ts.Before(s.grace) {
		return time.Time{}
	}
	return ts.Add(-quiet)
}

// outageKey names the server when it fails: the header's line.
func (s *Source) outageKey() string { return "Prometheus " + s.c.name }
