package sources

// WireFamily returns the schema family a sample name (as a TSDB stores it:
// vllm:prompt_tokens_total, vllm:e2e_request_latency_seconds_bucket)
// belongs to and its exposition type ("gauge", "counter", "histogram"),
// with ok false for a name vtop does not read. _created samples are left
// out: a TSDB keeps them as plain gauges, if at all.
func WireFamily(name string) (family, typ string, ok bool) {
	w, found := byWire[name]
	if !found || w.part == partCreated {
		return "", "", false
	}
	f := &families[w.fam]
	switch f.kind {
	case KindCounter:
		typ = "counter"
	case KindHistogram:
		typ = "histogram"
	default:
		typ = "gauge"
	}
	return f.name, typ, true
}

// EndpointNames lists the sample names of the endpoint-level families
// vtop reads: the process ones (resident memory, start time, CPU, file
// descriptors) and the API server's HTTP responses. Every Prometheus
// client (every FastAPI app) exposes them, so a TSDB holds them for every
// kind of target: a reader must keep only those of vLLM's targets.
func EndpointNames() []string {
	var out []string
	for _, f := range families {
		if f.role != RoleProc && f.role != RoleHTTP {
			continue
		}
		if f.kind == KindCounter {
			out = append(out, f.name+"_total")
		} else {
			out = append(out, f.name)
		}
	}
	return out
}
