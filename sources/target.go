package sources

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// DefaultTarget is vLLM's default listen address.
const DefaultTarget = "localhost:8000"

// Target is one /metrics endpoint to poll.
type Target struct {
	Name string // what the user typed, for display (host:port when that is all)
	URL  string // full URL of the metrics endpoint
	Host string // host part, to tell whether it is on this machine
	Port int
	// MaxNumSeqs is the engine's --max-num-seqs when the operator told vtop
	// (config file); vLLM does not expose it. 0: unknown.
	MaxNumSeqs int
	// Pool names the replicas replica_imbalance compares this one with
	// (config file); empty: those serving the same model.
	Pool string
	// Pod and Namespace are the Kubernetes pod serving it and its
	// namespace, where discovery says (file_sd labels, Prometheus'
	// series); empty otherwise. User actions name them $POD, $NAMESPACE.
	Pod, Namespace string
}

// ParseTarget accepts host:port, http(s)://host:port, or a full URL. The path
// defaults to /metrics and the scheme to http.
func ParseTarget(s string) (Target, error) {
	raw := strings.TrimSpace(s)
	if raw == "" {
		return Target{}, fmt.Errorf("empty target")
	}
	in := raw
	if !strings.Contains(in, "://") {
		in = "http://" + in
	}
	u, err := url.Parse(in)
	if err != nil {
		// url.Error quotes the whole input, query string included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Target{}, fmt.Errorf("target %q: %v", Sanitize(redactQuery(raw), 80), err)
	}
	// From here on the raw text is only ever shown with its query values
	// redacted: a token there is sent to the target, never displayed.
	shown := Sanitize(RedactURL(u), 80)
	if !strings.Contains(raw, "://") {
		shown = Sanitize(redactQuery(raw), 80)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Target{}, fmt.Errorf("target %q: scheme must be http or https", shown)
	}
	if u.Host == "" {
		return Target{}, fmt.Errorf("target %q: no host", shown)
	}
	if u.User != nil {
		return Target{}, fmt.Errorf("target %q: credentials in the URL are not accepted; use --basic-auth-user and a password file or VTOP_BASIC_AUTH_PASSWORD", shown)
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		if _, err := fmt.Sscanf(p, "%d", &port); err != nil || port <= 0 || port > 65535 {
			return Target{}, fmt.Errorf("target %q: bad port %q", shown, Sanitize(p, 10))
		}
	} else if !strings.Contains(raw, "://") {
		return Target{}, fmt.Errorf("target %q: give a port (vLLM listens on 8000 by default)", shown)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/metrics"
	}
	u.Fragment, u.RawFragment = "", ""
	name := shown
	if !strings.Contains(raw, "://") && !strings.Contains(raw, "/") {
		name = Sanitize(u.Host, 80)
	}
	return Target{Name: name, URL: u.String(), Host: u.Hostname(), Port: port}, nil
}

// IsLoopback reports whether the target's host is a loopback name or address.
func (t Target) IsLoopback() bool {
	if t.Host == "localhost" {
		return true
	}
	ip := net.ParseIP(t.Host)
	return ip != nil && ip.IsLoopback()
}

// IsLocal reports whether the target's host is this machine (loopback or one
// of its interface addresses), so its processes and GPUs can be joined to it.
func (t Target) IsLocal() bool {
	if t.Host == "localhost" {
		return true
	}
	ip := net.ParseIP(t.Host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// Redacted stands in for a query value wherever one would be shown.
const Redacted = "xxxxx"

// RedactURL renders u for display: userinfo and every query value replaced
// by Redacted (query strings carry tokens: ?token=, ?api_key=, signed URLs).
func RedactURL(u *url.URL) string {
	c := *u
	c.User = nil
	// A fragment is never sent to the target; it is not shown either, so
	// text after '#' that looks like a query cannot carry a value to the
	// screen.
	c.Fragment, c.RawFragment = "", ""
	if c.RawQuery != "" {
		c.RawQuery = redactValues(c.RawQuery)
	}
	return c.String()
}

// ShowURL is RedactURL for a URL in text form, sanitized: how every
// outbound client names its server.
func ShowURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return Sanitize(redactQuery(s), 80)
	}
	return Sanitize(RedactURL(u), 80)
}

// redactQuery redacts the query values of text that may not parse as a URL.
// The fragment, never sent, is dropped.
func redactQuery(s string) string {
	s, _, _ = strings.Cut(s, "#")
	i := strings.IndexByte(s, '?')
	if i < 0 {
		return s
	}
	return s[:i+1] + redactValues(s[i+1:])
}

func redactValues(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok {
			parts[i] = k + "=" + Redacted
		}
	}
	return strings.Join(parts, "&")
}
