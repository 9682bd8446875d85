package ui

// Every region of the screen is computed here, from these constants, the
// terminal size and how many things there are to show (GPUs, findings,
// engines). Nothing else decides a size.
const (
	minWidth  = 80 // below this, one "terminal too small" line
	minHeight = 24

	headerLines = 1
	footerLines = 1
	titleLines  = 1 // the endpoint view's identity line

	labelWidth = 11 // row labels: "Throughput"

	// The four rows: two or three metrics to a line (compact, for 80×24),
	// or one metric per line with its own sparkline, up to maxSparkH lines
	// tall when the terminal is (roomy).
	compactRowLines = 12
	roomyBaseLines  = 5  // roomy lines without a sparkline (one says which p95 is approximate)
	roomySparks     = 16 // roomy metrics with a sparkline
	maxSparkH       = 2
	// roomy needs this many lines left below the rows in the stacked layout
	roomyMinBelow = 12

	// From this width the endpoint view puts the GPU and findings panels
	// beside the four rows instead of below them.
	wideMinWidth  = 150
	wideMinHeight = 30
	wideLeftPct   = 58
	columnSep     = " │ "

	// The fleet view shows the full GPU panel from this height, a one-line
	// GPU summary below it.
	fleetGPUMinHeight = 40
	fleetGPUMaxLines  = 9
	fleetHeadLines    = 2 // the fleet summary line and the column header
	fleetMinRows      = 3 // table rows kept before panels grow

	panelMinLines = 2 // a panel's title and one line
)

// counts are the content sizes the layout depends on.
type counts struct {
	gpus        int      // devices in the snapshot
	gpuNone     bool     // no GPU data: the panel is one line
	gpuProcs    bool     // some GPU has processes (a line each when roomy)
	gpuEvents   int      // XID events listed (at most maxGPUEvents)
	findDetail  int      // lines the findings pane can use: every finding with its evidence
	findAll     int      // lines the findings pane wants: every finding in full
	findLeast   int      // and at least: the top finding whole, "N more"
	findLens    [][3]int // each finding's lines by form (findingsWant)
	findHead    int      // the pane's title and its sources' lines
	subs        int      // engines (endpoint) or models (fleet aggregate)
	endpointGPU bool
	rows        int  // fleet table rows (endpoints and shown engines)
	nameLen     int  // longest endpoint name
	modelLen    int  // longest model name in the table
	engineCol   bool // an endpoint is not vLLM: the table names each one's engine
	features    int  // the endpoint's feature lines (speculative decoding, LoRA, KV transfer, sleep)
	focus       pane // a focused panel gets the room it wants first
}

// size is a panel's width and height.
type size struct{ w, h int }

// layout is the result of one resize (or a change in counts).
type layout struct {
	w, h     int
	tooSmall bool
	body     int // lines between header and footer

	// fleet view
	fleetRows int
	fleetGPU  size
	fleetFind size
	cols      []column

	// endpoint view
	wide, roomy bool
	sparkH      int // sparkline height in the roomy rows
	left, right int // column widths when wide
	rows        size
	subs        size // engines or models table under the rows
	gpu         size
	feat        size // the endpoint's features: above the GPUs
	find        size
}

func plan(w, h int, c counts) layout {
	l := layout{w: w, h: h}
	if w < minWidth || h < minHeight {
		l.tooSmall = true
		return l
	}
	l.body = h - headerLines - footerLines
	l.planFleet(c)
	l.planEndpoint(c)
	return l
}

func (l *layout) planFleet(c counts) {
	l.cols = fleetColumns(l.w, c.nameLen, c.modelLen, c.engineCol)
	avail := l.body - fleetHeadLines
	tall := l.h >= fleetGPUMinHeight
	findAll, findLeast := max(panelMinLines, c.findAll), max(panelMinLines, c.findLeast)
	gpu := 1
	// The findings keep the top finding whole, and a third of the room
	// when they have more to say; focused, two thirds.
	find := min(findAll, max(findLeast, avail/3))
	switch c.focus {
	case paneFindings:
		find = min(findAll, max(findLeast, avail*2/3))
	case paneGPU:
		if !c.gpuNone {
			gpu = min(1+c.gpus+c.gpuEvents, max(panelMinLines, avail*2/3))
		}
	}
	find = max(1, min(find, avail-gpu-1))
	rows := max(1, min(max(1, c.rows), avail-gpu-find))
	free := avail - rows - gpu - find
	// What the table does not need goes to the findings first, every one
	// with its evidence; what they cannot fill (a finding's next form
	// longer than the rows left) to the GPU panel; what is still left
	// stays blank at the bottom, below everything, with nothing hidden.
	find += min(free, max(0, c.findDetail-find))
	free = avail - rows - gpu - find
	used := findFill(c, find)
	free += find - used
	find = used
	if !c.gpuNone && c.gpus > 0 && free > 0 {
		gpu += max(0, min(free, gpuWant(c, tall)-gpu))
	}
	l.fleetGPU = size{l.w, gpu}
	l.fleetFind = size{l.w, find}
	l.fleetRows = rows
}

// findFill is how many of h lines the findings pane fills: all of them
// while findings hide (the next one's first lines, "N more"), else its
// title, its sources and every finding in the form chooseForms gives it.
func findFill(c counts, h int) int {
	if len(c.findLens) == 0 {
		return min(h, c.findHead+1) // "no findings"
	}
	_, _, used, ok := chooseForms(c.findLens, h-c.findHead)
	if !ok {
		return h
	}
	return min(h, c.findHead+used)
}

func gpuWant(c counts, roomy bool) int {
	if c.gpuNone || c.gpus == 0 {
		return 1
	}
	n := 1 + c.gpus + c.gpuEvents
	if c.endpointGPU {
		n++
	}
	if (roomy || c.focus == paneGPU) && c.gpuProcs {
		n += c.gpus
	}
	return n
}

// gpuEssential is what the GPU panel keeps before optional panels: its
// summary line, and this endpoint's share when joined.
func gpuEssential(c counts) int {
	if c.endpointGPU {
		return 2
	}
	return 1
}

func roomyRowLines(sparkH int) int { return roomyBaseLines + roomySparks*sparkH }

// planEndpoint: the findings first, with their evidence where that costs
// only GPU lines: not a sparkline (the roomy form, its height), nor the
// endpoint's engines or features; else in full.
func (l *layout) planEndpoint(c counts) {
	full := *l
	full.planEndpointFor(c, c.findAll)
	l.planEndpointFor(c, max(c.findAll, c.findDetail))
	if l.roomy != full.roomy || l.sparkH != full.sparkH || l.subs != full.subs || l.feat != full.feat {
		*l = full
	}
}

func (l *layout) planEndpointFor(c counts, findWant int) {
	avail := l.body - titleLines
	findAll, findLeast := max(panelMinLines, findWant), max(panelMinLines, c.findLeast)
	subsWant := 0
	if c.subs > 1 {
		subsWant = 1 + c.subs
	}
	// Findings come first and full width: they say what to change. All of
	// them when the compact rows and a GPU line keep their room, else the
	// top one whole; focused, up to two thirds.
	find := min(findAll, max(findLeast, avail-compactRowLines-1))
	switch c.focus {
	case paneFindings:
		find = min(findAll, max(find, avail*2/3))
	case paneGPU:
		find = findLeast
	}
	// What the pane cannot fill goes to what is below it.
	find = findFill(c, min(find, avail-1))
	l.find = size{l.w, find}
	rest := avail - find
	l.sparkH = 1
	if l.w >= wideMinWidth && l.h >= wideMinHeight {
		l.wide = true
		l.left = l.w * wideLeftPct / 100
		l.right = l.w - l.left - width(columnSep)
		l.roomy = rest >= roomyRowLines(1)
		rows := compactRowLines
		if l.roomy {
			l.sparkH = min(maxSparkH, 1+max(0, rest-roomyRowLines(1)-subsWant)/roomySparks)
			rows = roomyRowLines(l.sparkH)
		}
		l.rows = size{l.left, min(rows, rest)}
		l.subs = size{l.left, max(0, min(subsWant, rest-l.rows.h))}
		// The features head the right column; the GPUs keep their
		// summary and this endpoint's line.
		l.feat = size{l.right, max(0, min(c.features, rest-gpuEssential(c)))}
		l.gpu = size{l.right, rest - l.feat.h}
		return
	}
	l.roomy = rest-roomyRowLines(1) >= roomyMinBelow
	rows := compactRowLines
	if l.roomy {
		below := max(roomyMinBelow, gpuWant(c, true)+subsWant)
		l.sparkH = min(maxSparkH, 1+max(0, rest-roomyRowLines(1)-below)/roomySparks)
		rows = roomyRowLines(l.sparkH)
	}
	rows = min(rows, rest)
	l.rows = size{l.w, rows}
	below := rest - rows
	// The features take only what the GPUs' summary and this endpoint's
	// line and the engines leave: they are extras, shown when there is room.
	l.feat = size{l.w, max(0, min(c.features, below-gpuEssential(c)-subsWant))}
	below -= l.feat.h
	// The engines are this endpoint's own: they come before the GPUs,
	// which keep a line; a focused GPU pane takes what it wants first.
	subs := min(subsWant, below-1)
	if c.focus == paneGPU {
		subs = min(subs, below-gpuWant(c, true))
	}
	if subs < panelMinLines {
		subs = 0
	}
	l.subs = size{l.w, subs}
	l.gpu = size{l.w, below - subs}
}
