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
	roomyBaseLines  = 4  // roomy lines without a sparkline
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
	gpus        int  // devices in the snapshot
	gpuNone     bool // no GPU data: the panel is one line
	gpuProcs    bool // some GPU has processes (a line each when roomy)
	gpuEvents   int  // XID events listed (at most maxGPUEvents)
	findings    int
	subs        int // engines (endpoint) or models (fleet aggregate)
	endpointGPU bool
	rows        int  // fleet table rows (endpoints and shown engines)
	nameLen     int  // longest endpoint name
	modelLen    int  // longest model name in the table
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
	l.cols = fleetColumns(l.w, c.nameLen, c.modelLen)
	avail := l.body - fleetHeadLines
	tall := l.h >= fleetGPUMinHeight
	gpuLines := 1
	if tall && !c.gpuNone {
		gpuLines = min(1+c.gpus+c.gpuEvents, fleetGPUMaxLines)
	}
	findWant := 1 + max(1, c.findings)
	if tall {
		findWant = 1 + max(1, 2*c.findings)
	}
	findMax := max(panelMinLines, avail/3)
	switch c.focus {
	case paneFindings:
		findMax = max(panelMinLines, avail*2/3)
	case paneGPU:
		if !c.gpuNone {
			gpuLines = min(1+c.gpus+c.gpuEvents, max(panelMinLines, avail*2/3))
		}
	}
	find := max(1, min(findWant, findMax, avail-gpuLines-1))
	// A short table leaves room: the whole GPU panel (with per-process
	// memory when tall), then the longer form of the findings.
	if free := avail - max(fleetMinRows, c.rows) - find; !c.gpuNone && c.gpus > 0 {
		if full := gpuWant(c, tall); free >= full && full > gpuLines {
			gpuLines = full
		}
	}
	if free := avail - max(fleetMinRows, c.rows) - gpuLines; free > find {
		find = min(free, 1+max(1, 2*c.findings))
	}
	l.fleetGPU = size{l.w, gpuLines}
	l.fleetFind = size{l.w, find}
	l.fleetRows = max(1, avail-l.fleetFind.h-l.fleetGPU.h)
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

func roomyRowLines(sparkH int) int { return roomyBaseLines + roomySparks*sparkH }

func (l *layout) planEndpoint(c counts) {
	avail := l.body - titleLines
	findWant := 1 + max(1, 2*c.findings)
	subsWant := 0
	if c.subs > 1 {
		subsWant = 1 + c.subs
	}
	l.sparkH = 1
	if l.w >= wideMinWidth && l.h >= wideMinHeight {
		l.wide = true
		l.left = l.w * wideLeftPct / 100
		l.right = l.w - l.left - width(columnSep)
		l.roomy = avail >= roomyRowLines(1)
		rows := compactRowLines
		if l.roomy {
			l.sparkH = min(maxSparkH, 1+max(0, avail-roomyRowLines(1)-subsWant)/roomySparks)
			rows = roomyRowLines(l.sparkH)
		}
		l.rows = size{l.left, min(rows, avail)}
		l.subs = size{l.left, max(0, min(subsWant, avail-l.rows.h))}
		g := min(gpuWant(c, l.roomy), max(panelMinLines, avail/2))
		l.gpu = size{l.right, g}
		l.find = size{l.right, avail - g}
		return
	}
	l.roomy = avail-roomyRowLines(1) >= roomyMinBelow
	rows := compactRowLines
	if l.roomy {
		below := max(roomyMinBelow, gpuWant(c, true)+findWant+subsWant)
		l.sparkH = min(maxSparkH, 1+max(0, avail-roomyRowLines(1)-below)/roomySparks)
		rows = roomyRowLines(l.sparkH)
	}
	l.rows = size{l.w, rows}
	rest := avail - rows
	// Findings come first: they say what to change. The GPU panel keeps at
	// least its title and a line; engines take what is left.
	find := min(findWant, max(panelMinLines, rest-panelMinLines))
	if c.focus == paneGPU {
		find = panelMinLines
	}
	g := min(gpuWant(c, l.roomy), max(0, rest-find))
	// Too small for the title and one device: the one-line summary.
	if least := 2 + b2i(c.endpointGPU); !c.gpuNone && c.gpus > 0 && g > 1 && g < least {
		g = 1
	}
	subs := min(subsWant, rest-find-g)
	if subs < panelMinLines {
		subs = 0
	}
	// What no panel wants goes to the findings (room for the longer form).
	find = rest - g - subs
	l.find = size{l.w, find}
	l.gpu = size{l.w, g}
	l.subs = size{l.w, subs}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
