package diagnose

// SignalName is a signal's display name.
func SignalName(s Signal) string { return signals[s].Name }
