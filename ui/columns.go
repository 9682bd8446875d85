package ui

// The fleet table's columns. Fixed columns get a width per tier of terminal
// width; name and model get what their longest value needs (within bounds),
// and the worst finding takes the rest.

type colID uint8

const (
	colName colID = iota
	colState
	colEngine
	colModel
	colKV
	colRunWait
	colTTFT
	colITL
	colTok
	colTrend
	colFinding
)

type column struct {
	id    colID
	title string
	w     int
	right bool
}

const (
	markWidth   = 3 // selection and expand markers, a space, before each row
	colGap      = 1
	tierMedium  = 110
	tierLarge   = 160
	nameMax     = 32
	modelMax    = 40
	nameMin     = 8
	modelMin    = 6
	findingMin  = 12
	trendWidth  = 24 // TTFT p95 history, tier large
	engineWidth = 6  // "SGLang"
	kvBarSmall  = 3
	kvBarMedium = 8
	kvBarLarge  = 14
)

// kvCellWidth: the bar, a space, "100%" and a level mark.
func kvCellWidth(bar int) int { return bar + 6 }

func kvBarWidth(w int) int {
	switch {
	case w >= tierLarge:
		return kvBarLarge
	case w >= tierMedium:
		return kvBarMedium
	}
	return kvBarSmall
}

// fleetColumns lays out the table for width w; nameLen and modelLen are the
// longest endpoint name and model shown. engine adds the engine column, for
// a fleet that is not all vLLM.
func fleetColumns(w, nameLen, modelLen int, engine bool) []column {
	type fixed struct{ state, rw, ttft, itl, tok int }
	fx := fixed{12, 9, 8, 7, 5}
	switch {
	case w >= tierLarge:
		fx = fixed{14, 10, 10, 9, 6}
	case w >= tierMedium:
		fx = fixed{14, 10, 9, 9, 6}
	}
	cols := []column{
		{id: colName, title: "endpoint"},
		{id: colState, title: "state", w: fx.state},
		{id: colModel, title: "model"},
		{id: colKV, title: "KV", w: kvCellWidth(kvBarWidth(w))},
		{id: colRunWait, title: "run/wait", w: fx.rw, right: true},
		{id: colTTFT, title: "TTFT p95", w: fx.ttft, right: true},
		{id: colITL, title: "ITL p95", w: fx.itl, right: true},
		{id: colTok, title: "tok/s", w: fx.tok, right: true},
	}
	if engine {
		cols = append(cols[:2], append([]column{{id: colEngine, title: "engine", w: engineWidth}}, cols[2:]...)...)
	}
	if w >= tierLarge {
		cols = append(cols, column{id: colTrend, title: "TTFT p95 history", w: trendWidth})
	}
	finding := column{id: colFinding, title: "!", w: 1}
	if w >= tierMedium {
		// The worst finding's title gets the rest: it is the first thing
		// to read in an incident.
		finding = column{id: colFinding, title: "worst finding"}
	}
	cols = append(cols, finding)
	used := markWidth + colGap*(len(cols)-1)
	for _, c := range cols {
		used += c.w
	}
	flex := max(0, w-used)
	wantName := max(nameMin, nameLen+1)
	wantModel := max(modelMin, modelLen+1)
	var name, model int
	if w >= tierMedium {
		name = min(nameMax, wantName)
		model = min(modelMax, wantModel)
		// The finding keeps at least findingMin; name and model give way.
		if over := name + model + findingMin - flex; over > 0 {
			cutModel := min(over, model-modelMin)
			model -= cutModel
			name = max(nameMin, name-(over-cutModel))
		}
		finding.w = max(0, flex-name-model)
	} else {
		name = max(nameMin, min(wantName, flex-modelMin))
		model = max(modelMin, flex-name)
	}
	for i := range cols {
		switch cols[i].id {
		case colName:
			cols[i].w = name
		case colModel:
			cols[i].w = model
		case colFinding:
			cols[i].w = max(cols[i].w, finding.w)
		}
	}
	return cols
}
