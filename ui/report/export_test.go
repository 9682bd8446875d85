package report

import "github.com/vtop-dev/vtop/diagnose"

// BuildJSON is BuildJSONRun for a run as long as the window (the tests' frames).
func BuildJSON(f *diagnose.Frame, vtopVersion string, st Status) JSONReport {
	return BuildJSONRun(f, vtopVersion, st, Run{Window: f.Window, Elapsed: f.Window})
}
