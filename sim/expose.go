package sim

import (
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/vtop-dev/vtop/sources"
)

// Format is an exposition format of /metrics.
type Format uint8

const (
	FormatText        Format = iota // text 0.0.4: what curl gets, and every real dump
	FormatOpenMetrics               // OpenMetrics 1.0: what a Prometheus server (and vtop) asks for
)

// ContentType is the Content-Type prometheus_client sends with f.
func (f Format) ContentType() string {
	if f == FormatOpenMetrics {
		return "application/openmetrics-text; version=1.0.0; charset=utf-8"
	}
	return "text/plain; version=0.0.4; charset=utf-8"
}

// NegotiateFormat picks the format from an Accept header the way
// prometheus_client does: OpenMetrics when the client lists it at all.
func NegotiateFormat(accept string) Format {
	for _, part := range strings.Split(accept, ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.TrimSpace(mt) == "application/openmetrics-text" {
			return FormatOpenMetrics
		}
	}
	return FormatText
}

// famLayout is one family as a release exposes it, with every constant
// byte of its lines prepared once per (release, registry mode).
type famLayout struct {
	row          *sources.Metric
	index        int // position, to space _created timestamps like registration
	textHead     []byte
	createdHead  []byte // text format: the _created gauge family
	omHead       []byte
	sample       []byte // gauge name, or counter name_total
	created      []byte
	bucket       []byte
	count, sum   []byte
	les          [][]byte
	labelName    string
	labelVals    []string
	labelBefore  bool  // the extra label sorts before model_name
	labelSince   []int // FinishReasons indexes shown (V1: all of the release)
	lazyLabelled bool  // V0: a finish reason appears once it happened
	// scheduler: SGLang writes this family from its scheduler, with the
	// scheduler's labels; the others from its tokenizer manager, by model.
	scheduler bool
}

type layout struct {
	fams    []famLayout
	created bool // _created series (single-process registry)
}

type layoutKey struct {
	profile     string
	mp          bool
	maxModelLen int
	opts        exposeOpts
}

// exposeOpts are exporters that differ from vLLM's own.
type exposeOpts struct {
	trimmed      bool // no preemption counter
	finishReason bool // finish_reason for finished_reason
	helpV1       bool // V1's HELP texts whatever the generation
	specTokens   int  // speculative decoding's families, with this many positions
	lora         bool // --enable-lora: lora_requests_info, optional otherwise, is shown
	spec         bool // --speculative-config: the spec_decode families are shown
	nixl         bool // --kv-transfer-config with NixlConnector: the nixl_* counters are shown
}

var layouts sync.Map // layoutKey → *layout

// layoutFor builds (once) the families a release exposes, from
// sources.Metrics: the rows shown by default in that release, process
// collectors only with the single-process registry, flag-gated rows left out.
func layoutFor(p *Profile, mp bool, maxModelLen int, opts exposeOpts) *layout {
	key := layoutKey{p.Name, mp, maxModelLen, opts}
	if l, ok := layouts.Load(key); ok {
		return l.(*layout)
	}
	l := &layout{created: !mp}
	var procs, rest []*sources.Metric
	for i := range sources.Metrics {
		m := &sources.Metrics[i]
		switch {
		case m.Role == sources.RoleRouter, m.Role == sources.RoleHTTP, m.Optional && !(opts.lora && m.Role == sources.RoleLoraInfo) && !(opts.spec && isSpec(m)) && !(opts.nixl && isNixl(m)), m.Server != p.Server, !m.ShownIn(p.Gen, p.Version):
		case opts.trimmed && m.Role == sources.RoleCounter && sources.Counter(m.ID) == sources.CPreemptions:
		case m.Role == sources.RoleProc:
			if !mp {
				procs = append(procs, m)
			}
		default:
			rest = append(rest, m)
		}
	}
	// prometheus_client registers its process collector before vLLM's metrics.
	for _, m := range append(procs, rest...) {
		l.fams = append(l.fams, newFamLayout(m, len(l.fams), p, maxModelLen, opts))
	}
	actual, _ := layouts.LoadOrStore(key, l)
	return actual.(*layout)
}

func newFamLayout(m *sources.Metric, index int, p *Profile, maxModelLen int, opts exposeOpts) famLayout {
	fl := famLayout{row: m, index: index, scheduler: p.Server == sources.ServerSGLang && sglangScheduler(m)}
	help := m.Help
	if opts.helpV1 {
		help = v1Help(m)
	}
	head := func(name, typ string) []byte {
		return []byte("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
	}
	switch m.Kind {
	case sources.KindCounter:
		fl.sample = []byte(m.Name + "_total")
		fl.created = []byte(m.Name + "_created")
		fl.textHead = head(m.Name+"_total", "counter")
		fl.createdHead = head(m.Name+"_created", "gauge")
		fl.omHead = head(m.Name, "counter")
	case sources.KindHistogram:
		fl.bucket = []byte(m.Name + "_bucket")
		fl.count = []byte(m.Name + "_count")
		fl.sum = []byte(m.Name + "_sum")
		fl.created = []byte(m.Name + "_created")
		fl.textHead = head(m.Name, "histogram")
		fl.createdHead = head(m.Name+"_created", "gauge")
		fl.omHead = fl.textHead
		for _, bnd := range sources.BucketBounds(m.Bucket, p.Version, maxModelLen) {
			fl.les = append(fl.les, appendPyFloat(nil, bnd))
		}
		fl.les = append(fl.les, []byte("+Inf"))
	default:
		fl.sample = []byte(m.Name)
		fl.textHead = head(m.Name, m.Kind.String())
		fl.omHead = fl.textHead
	}
	if m.Role == sources.RoleLabeled {
		fl.labelName = m.Label
		if opts.finishReason && m.Label == sources.LabelFinished {
			fl.labelName = sources.LabelFinishedAlt
		}
		fl.labelBefore = fl.labelName < sources.LabelModel
		switch sources.Labeled(m.ID) {
		case sources.LFinished:
			for i, fr := range sources.FinishReasons {
				if !p.Version.Less(fr.Since) {
					fl.labelVals = append(fl.labelVals, fr.Reason)
					fl.labelSince = append(fl.labelSince, i)
				}
			}
			fl.lazyLabelled = p.Gen == sources.GenV0
		case sources.LWaitingReason:
			fl.labelVals = sources.WaitReasons
		case sources.LPromptSource:
			fl.labelVals = sources.PromptSources
		case sources.LSleepState:
			fl.labelVals = sources.SleepStates
		case sources.LSpecAcceptedPos:
			for i := range opts.specTokens {
				fl.labelVals = append(fl.labelVals, strconv.Itoa(i))
			}
		}
	}
	return fl
}

// sglangScheduler: SGLang's SchedulerMetricsCollector writes its gauges,
// the queue-time histogram and the retraction and transfer counters; the
// TokenizerMetricsCollector the token counters and latency histograms.
func sglangScheduler(m *sources.Metric) bool {
	switch m.Role {
	case sources.RoleGauge:
		return true
	case sources.RoleHist:
		return sources.Hist(m.ID) == sources.HQueue
	case sources.RoleCounter:
		c := sources.Counter(m.ID)
		return c == sources.CPreemptions || c == sources.CKVTransferFailed
	}
	return false
}

// v1Help is the HELP text of m's V1 row (the same family as V1 names it),
// or m's own when V1 has none.
func v1Help(m *sources.Metric) string {
	for i := range sources.Metrics {
		v := &sources.Metrics[i]
		if v.Gen == sources.GenV1 && v.Role == m.Role && v.ID == m.ID && v.Name == m.Name {
			return v.Help
		}
	}
	return m.Help
}

// engineLabels are the label fragments of one engine's series, sorted as
// prometheus_client writes them: engine < finished_reason < le < model_name
// < reason < sleep_state < source.
type engineLabels struct {
	pre   []byte // `{engine="0",` or `{`
	model []byte // `model_name="…"`
	cache []byte // the whole cache_config_info sample line
	// sched is SGLang's scheduler label set (engine_type before the
	// model, the ranks after it, sorted as its multiprocess registry
	// writes them); nil for vLLM.
	sched *engineLabels
}

// of is the label set family fl is written with.
func (l *engineLabels) of(fl *famLayout) *engineLabels {
	if fl.scheduler && l.sched != nil {
		return l.sched
	}
	return l
}

func (r *Replica) buildLabels() []engineLabels {
	out := make([]engineLabels, len(r.engines))
	for e := range r.engines {
		l := &out[e]
		if r.profile.Server == sources.ServerSGLang {
			model := sources.LabelModel + `="` + escapeLabel(r.cfg.Model.Name) + `"`
			l.pre, l.model = []byte("{"), []byte(model)
			l.sched = &engineLabels{pre: []byte(`{engine_type="unified",`),
				model: []byte(model + `,moe_ep_rank="0",pp_rank="0",tp_rank="0"`)}
			continue
		}
		l.pre = []byte("{")
		if r.profile.engineLabel() {
			l.pre = []byte(`{` + sources.LabelEngine + `="` + strconv.Itoa(e) + `",`)
		}
		l.model = []byte(sources.LabelModel + `="` + escapeLabel(r.cfg.Model.Name) + `"`)
		l.cache = r.cacheConfigLine(e)
	}
	return out
}

// cacheConfigLine is vllm:cache_config_info as the release writes it: every
// CacheConfig field a label, sorted, Python's str() of each value.
func (r *Replica) cacheConfigLine(e int) []byte {
	c := &r.ecfg
	pyBool := func(b bool) string {
		if b {
			return "True"
		}
		return "False"
	}
	swap := r.cfg.SwapSpaceGiB
	if r.profile.Gen == sources.GenV1 {
		swap = 4 // V1 still carries the (unused) default swap space
	}
	vals := map[string]string{
		"block_size": strconv.Itoa(c.blockSize), "cache_dtype": "auto", "calculate_kv_scales": "False",
		"cpu_kvcache_space_bytes": "None", "cpu_offload_gb": "0.0", "enable_prefix_caching": pyBool(c.prefixCaching),
		"gpu_memory_utilization": string(appendPyRepr(nil, c.gpuMemUtil)), "is_attention_free": "False",
		"kv_cache_memory_bytes": "None", "kv_offloading_backend": "native", "kv_offloading_size": "None",
		"kv_sharing_fast_prefill": "False", "mamba_cache_dtype": "auto", "mamba_page_size_padded": "None",
		"mamba_ssm_cache_dtype": "auto", "num_cpu_blocks": "None", "num_gpu_blocks": strconv.Itoa(c.numGPUBlocks),
		"num_gpu_blocks_override": "None", "prefix_caching_hash_algo": "sha256", "sliding_window": "None",
		"swap_space":       string(appendPyRepr(nil, swap)),
		"swap_space_bytes": string(appendPyRepr(nil, swap*(1<<30))),
	}
	if r.profile.Gen == sources.GenV0 {
		// V0 0.6 wrote its fields with str() of ints and floats as given.
		vals["cpu_offload_gb"] = "0"
		vals["num_cpu_blocks"] = strconv.Itoa(c.numCPUBlocks)
		vals["swap_space_bytes"] = strconv.Itoa(int(swap * (1 << 30)))
	}
	if r.profile.Version.Less(sources.V(0, 11, 0)) {
		vals["prefix_caching_hash_algo"] = "builtin"
	}
	names := append([]string{}, r.profile.CacheLabels...)
	if r.profile.engineLabel() {
		names = append(names, sources.LabelEngine)
		vals[sources.LabelEngine] = strconv.Itoa(e)
	}
	sortStrings(names)
	var b strings.Builder
	b.WriteString(sources.FamilyName(sources.RoleCacheInfo, 0))
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n + `="` + escapeLabel(vals[n]) + `"`)
	}
	b.WriteString("} 1.0\n")
	return []byte(b.String())
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func getBuf() *[]byte  { return bufPool.Get().(*[]byte) }
func putBuf(b *[]byte) { bufPool.Put(b) }

// appendExposition writes /metrics. Called with r.mu held; it only reads.
func (r *Replica) appendExposition(b []byte, f Format) []byte {
	om := f == FormatOpenMetrics
	lay := r.lay
	epoch := float64(r.fleet.epoch.UnixNano()) / 1e9
	for i := range lay.fams {
		fl := &lay.fams[i]
		m := fl.row
		if om {
			b = append(b, fl.omHead...)
		} else {
			b = append(b, fl.textHead...)
		}
		switch m.Role {
		case sources.RoleProc:
			b = append(b, fl.sample...)
			b = append(b, ' ')
			b = appendPyFloat(b, r.procValue(sources.Proc(m.ID), epoch))
			b = append(b, '\n')
			continue
		case sources.RoleCacheInfo:
			for e := range r.engines {
				b = append(b, r.labels[e].cache...)
			}
			continue
		case sources.RoleLoraInfo:
			b = append(b, fl.sample...)
			b = append(b, `{`+sources.LabelMaxLora+`="`...)
			b = strconv.AppendInt(b, int64(r.ecfg.maxLoras), 10)
			run, wait := r.loraLists()
			b = append(b, `",`+sources.LabelRunLora+`="`...)
			b = append(b, run...)
			b = append(b, `",`+sources.LabelWaitLora+`="`...)
			b = append(b, wait...)
			b = append(b, `"} `...)
			b = appendPyFloat(b, epoch+r.now.Seconds())
			b = append(b, '\n')
			continue
		}
		for e, eng := range r.engines {
			lbl := r.labels[e].of(fl)
			created := epoch + eng.startedAt.Seconds() + float64(fl.index)*31e-6
			switch m.Role {
			case sources.RoleGauge:
				b = appendSample(b, fl.sample, lbl, "", "", eng.gaugeValue(sources.Gauge(m.ID)))
			case sources.RoleCounter:
				b = appendSample(b, fl.sample, lbl, "", "", eng.counterValue(sources.Counter(m.ID)))
				if om && lay.created {
					b = appendSample(b, fl.created, lbl, "", "", created)
				}
			case sources.RoleHist:
				b = r.appendHist(b, fl, lbl, &eng.m.hists[m.ID], om && lay.created, created)
			case sources.RoleLabeled:
				for j, v := range fl.labelVals {
					val, seen := eng.labeledValue(sources.Labeled(m.ID), fl, j)
					if !seen {
						continue
					}
					b = appendSample(b, fl.sample, lbl, fl.labelName, v, val)
					if om && lay.created && m.Kind == sources.KindCounter {
						b = appendSample(b, fl.created, lbl, fl.labelName, v, created+float64(j)*7e-6)
					}
				}
			}
		}
		if om || !lay.created || fl.createdHead == nil {
			continue
		}
		// The text format writes creation times as a separate gauge family.
		b = append(b, fl.createdHead...)
		for e, eng := range r.engines {
			lbl := r.labels[e].of(fl)
			created := epoch + eng.startedAt.Seconds() + float64(fl.index)*31e-6
			if m.Role != sources.RoleLabeled {
				b = appendSample(b, fl.created, lbl, "", "", created)
				continue
			}
			for j, v := range fl.labelVals {
				if _, seen := eng.labeledValue(sources.Labeled(m.ID), fl, j); seen {
					b = appendSample(b, fl.created, lbl, fl.labelName, v, created+float64(j)*7e-6)
				}
			}
		}
	}
	b = r.appendHTTP(b, om)
	if om {
		b = append(b, "# EOF\n"...)
	}
	return b
}

// appendHTTP writes http_requests_total as prometheus-fastapi-instrumentator
// does in vLLM's API server (0.8.3+, the single-process registry only):
// the completions handler's responses by status class (or code, with
// HTTPStatusCodes), 2xx for every request the engines finished other than
// by an abort, 4xx (400) for the requests the API server rejected (a
// prompt over --max-model-len, a bad parameter); a label set appears with
// its first request, as the instrumentator creates it.
func (r *Replica) appendHTTP(b []byte, om bool) []byte {
	if r.profile.Server != sources.ServerVLLM || r.profile.Version.Less(sources.V(0, 8, 3)) || !r.lay.created {
		return b
	}
	ok := 0.0
	for _, e := range r.engines {
		for i, v := range e.m.finished {
			if i != finishAbort {
				ok += v
			}
		}
	}
	if ok == 0 && r.rejected == 0 {
		return b
	}
	name := sources.FamilyName(sources.RoleHTTP, 0)
	help := "Total number of requests by method, status and handler.\n"
	if om {
		b = append(b, "# HELP "+name+" "+help+"# TYPE "+name+" counter\n"...)
	} else {
		b = append(b, "# HELP "+name+"_total "+help+"# TYPE "+name+"_total counter\n"...)
	}
	okStatus, badStatus := "2xx", "4xx"
	if r.cfg.HTTPStatusCodes {
		okStatus, badStatus = "200", "400"
	}
	for _, c := range []struct {
		status string
		n      float64
	}{{okStatus, ok}, {badStatus, r.rejected}} {
		if c.n == 0 {
			continue
		}
		b = append(b, name+`_total{handler="/v1/chat/completions",method="POST",status="`+c.status+`"} `...)
		b = appendPyFloat(b, c.n)
		b = append(b, '\n')
	}
	return b
}

func appendSample(b, name []byte, l *engineLabels, extra, val string, v float64) []byte {
	b = append(b, name...)
	b = append(b, l.pre...)
	if extra != "" && extra < sources.LabelModel {
		b = appendLabel(b, extra, val)
		b = append(b, ',')
	}
	b = append(b, l.model...)
	if extra != "" && extra > sources.LabelModel {
		b = append(b, ',')
		b = appendLabel(b, extra, val)
	}
	b = append(b, "} "...)
	b = appendPyFloat(b, v)
	return append(b, '\n')
}

func appendLabel(b []byte, name, val string) []byte {
	b = append(b, name...)
	b = append(b, `="`...)
	b = append(b, val...)
	return append(b, '"')
}

func (r *Replica) appendHist(b []byte, fl *famLayout, l *engineLabels, h *hist, created bool, ts float64) []byte {
	cum := 0.0
	for i, le := range fl.les {
		if i < len(h.counts) {
			cum += h.counts[i]
		}
		b = append(b, fl.bucket...)
		b = append(b, l.pre...)
		b = append(b, sources.LabelLe+`="`...)
		b = append(b, le...)
		b = append(b, `",`...)
		b = append(b, l.model...)
		b = append(b, "} "...)
		b = appendPyFloat(b, cum)
		b = append(b, '\n')
	}
	b = appendSample(b, fl.count, l, "", "", h.count)
	b = appendSample(b, fl.sum, l, "", "", h.sum)
	if created {
		b = appendSample(b, fl.created, l, "", "", ts)
	}
	return b
}

func (r *Replica) procValue(p sources.Proc, epoch float64) float64 {
	switch p {
	case sources.PRSS:
		return r.rss()
	case sources.PVirtual:
		return vmsBase + r.rss() - rssBase
	case sources.PStartTime:
		return math.Round((epoch+r.procStart.Seconds())*100) / 100
	case sources.PCPUSeconds:
		return r.cpuSeconds()
	case sources.POpenFDs:
		return r.openFDs()
	case sources.PMaxFDs:
		return 1048576
	}
	return 0
}

func (e *engine) gaugeValue(g sources.Gauge) float64 {
	switch g {
	case sources.GRunning:
		return float64(len(e.running))
	case sources.GWaiting:
		return float64(e.waiting.len())
	case sources.GSwapped:
		return float64(len(e.swapped))
	case sources.GKVUsage:
		return e.kv.usage()
	case sources.GCPUKVUsage:
		if e.cfg.numCPUBlocks == 0 {
			return 0
		}
		return float64(e.cpuUsed) / float64(e.cfg.numCPUBlocks)
	case sources.GPrefixHitRateGPU:
		if !e.cfg.prefixCaching {
			return -1
		}
		if e.kv.queries == 0 {
			return 0
		}
		return e.kv.hits / e.kv.queries
	case sources.GPrefixHitRateCPU:
		if !e.cfg.prefixCaching {
			return -1
		}
		return 0
	case sources.GAvgPromptTput:
		return e.avgPrompt
	case sources.GAvgGenTput:
		return e.avgGen
	case sources.GKVTokensMax:
		return float64(e.cfg.numGPUBlocks * e.cfg.blockSize)
	}
	return 0
}

func (e *engine) counterValue(c sources.Counter) float64 {
	switch c {
	case sources.CSpecDrafts, sources.CSpecDraftTokens, sources.CSpecAccepted:
		return math.Floor(e.m.counters[c]) // whole tokens, as vLLM counts them
	case sources.CPrefixQueries:
		return e.kv.queries
	case sources.CPrefixHits:
		return e.kv.hits
	}
	return e.m.counters[c]
}

// labeledValue returns the j-th label value's number, and whether the
// series exists (V0 creates a finish reason's series when it first occurs).
func (e *engine) labeledValue(l sources.Labeled, fl *famLayout, j int) (float64, bool) {
	switch l {
	case sources.LFinished:
		v := e.m.finished[fl.labelSince[j]]
		return v, !fl.lazyLabelled || v > 0
	case sources.LWaitingReason:
		// deferred: a LoRA adapter waiting for a slot, or a P/D request
		// waiting for its KV read to land; capacity: the rest.
		deferred := 0
		for i := e.waiting.head; i < len(e.waiting.items); i++ {
			if q := e.waiting.items[i]; !e.loraFits(q) || q.remote && q.xferAt != 0 {
				deferred++
			}
		}
		if sources.WaitReasons[j] == sources.WaitDeferred {
			return float64(deferred), true
		}
		return float64(e.waiting.len() - deferred), true
	case sources.LPromptSource:
		return e.m.promptBy[j], true
	case sources.LSleepState:
		// awake = 1 unless put to sleep (POST /sleep, level 1: weights
		// offloaded).
		if e.asleep {
			return float64(j), j <= 1
		}
		if j == 0 {
			return 1, true
		}
		return 0, true
	case sources.LSpecAcceptedPos:
		if j < len(e.m.specPos) {
			return math.Floor(e.m.specPos[j]), true
		}
		return 0, true
	}
	return 0, true
}

// loraLists are lora_requests_info's running and waiting adapters,
// comma-separated in adapter order, as vLLM joins them.
func (r *Replica) loraLists() (run, wait string) {
	if r.ecfg.maxLoras <= 0 {
		return "", ""
	}
	rs, ws := map[int]bool{}, map[int]bool{}
	for _, e := range r.engines {
		e.loraAdapters(rs, ws)
	}
	join := func(set map[int]bool) string {
		var names []string
		for a := 1; a <= 64; a++ {
			if set[a] {
				names = append(names, "adapter-"+strconv.Itoa(a))
			}
		}
		return strings.Join(names, ",")
	}
	return join(rs), join(ws)
}

// isSpec: a speculative-decoding counter (or its accepted-by-position
// family), shown only with a speculative config.
// isNixl: NixlConnector's transfer counters.
func isNixl(m *sources.Metric) bool {
	if m.Role != sources.RoleCounter || m.Server != sources.ServerVLLM {
		return false
	}
	c := sources.Counter(m.ID)
	return c == sources.CKVTransferFailed || c == sources.CKVExpired
}

func isSpec(m *sources.Metric) bool {
	if m.Role == sources.RoleLabeled {
		return sources.Labeled(m.ID) == sources.LSpecAcceptedPos
	}
	if m.Role != sources.RoleCounter {
		return false
	}
	switch sources.Counter(m.ID) {
	case sources.CSpecDrafts, sources.CSpecDraftTokens, sources.CSpecAccepted:
		return true
	}
	return false
}
