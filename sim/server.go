package sim

import (
	"compress/gzip"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vtop-dev/vtop/internal/holdport"
)

// ServeConfig says where a fleet is served.
type ServeConfig struct {
	Host     string           // a loopback address: 127.0.0.1, ::1 or localhost
	BasePort int              // replica i listens on BasePort+i; 0: an ephemeral port each
	Clock    func() time.Time // the wall clock (time.Now when nil); tests pass their own
}

// CheckLoopback accepts only addresses of this machine's loopback interface:
// the simulator is a test fixture and must never face a network.
func CheckLoopback(host string) (string, error) {
	if host == "localhost" {
		return "127.0.0.1", nil
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	if ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("the simulator listens on loopback only (127.0.0.1, ::1 or localhost), not %q", host)
	}
	return ip.String(), nil
}

// Server serves each replica of a fleet on its own loopback port, as
// /metrics over real HTTP, and opens and closes the ports as the scenarios
// take endpoints down and bring them back.
type Server struct {
	fleet   *Fleet
	host    string
	eps     []*endpoint
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	scrapes atomic.Int64
}

type endpoint struct {
	r       *Replica
	f       *Fleet
	addr    string
	port    int
	scrapes *atomic.Int64

	mu     sync.Mutex
	srv    *http.Server
	served chan struct{} // closed when srv's Serve returned: its listener is closed
	held   func()        // releases the port held while down
}

// Serve starts the HTTP endpoints. From now on the fleet follows the wall
// clock, continuing from the simulated time it had reached.
func Serve(f *Fleet, cfg ServeConfig) (*Server, error) {
	host, err := CheckLoopback(cfg.Host)
	if err != nil {
		return nil, err
	}
	if cfg.BasePort < 0 || cfg.BasePort+len(f.replicas)-1 > 65535 {
		return nil, fmt.Errorf("ports %d..%d are out of range", cfg.BasePort, cfg.BasePort+len(f.replicas)-1)
	}
	clock := cfg.Clock
	if clock == nil {
		clock = time.Now
	}
	if f.clock != nil {
		return nil, fmt.Errorf("the fleet is already served")
	}
	f.followClock(clock)
	s := &Server{fleet: f, host: host, stop: make(chan struct{}), done: make(chan struct{})}
	for i, r := range f.replicas {
		port := 0
		if cfg.BasePort > 0 {
			port = cfg.BasePort + i
		}
		ep := &endpoint{r: r, f: f, addr: net.JoinHostPort(host, strconv.Itoa(port)), scrapes: &s.scrapes}
		ln, err := net.Listen("tcp", ep.addr)
		if err != nil {
			s.closeAll()
			return nil, fmt.Errorf("%s: %v", r.Name(), err)
		}
		ep.port = ln.Addr().(*net.TCPAddr).Port
		ep.addr = net.JoinHostPort(host, strconv.Itoa(ep.port))
		ep.start(ln)
		s.eps = append(s.eps, ep)
	}
	s.Sync()
	go s.supervise()
	return s, nil
}

// URLs are the replicas' /metrics URLs, in fleet order.
func (s *Server) URLs() []string {
	out := make([]string, len(s.eps))
	for i, ep := range s.eps {
		out[i] = "http://" + ep.addr + "/metrics"
	}
	return out
}

// Summary is the URLs in one compact line, in fleet order (so the n-th
// port is replica n, whose scenario was the n-th given): ascending
// contiguous ports as a range, "http://127.0.0.1:{20000..20999}/metrics".
func (s *Server) Summary() string {
	ports := make([]int, len(s.eps))
	for i, ep := range s.eps {
		ports[i] = ep.port
	}
	if len(ports) == 1 {
		return s.URLs()[0]
	}
	var parts []string
	for i := 0; i < len(ports); {
		j := i
		for j+1 < len(ports) && ports[j+1] == ports[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d..%d", ports[i], ports[j]))
		} else {
			parts = append(parts, strconv.Itoa(ports[i]))
		}
		i = j + 1
	}
	host := s.host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return "http://" + host + ":{" + strings.Join(parts, ",") + "}/metrics"
}

// Scrapes is how many /metrics requests the server has answered.
func (s *Server) Scrapes() int64 { return s.scrapes.Load() }

// Sync opens and closes ports for the current simulated time at once (the
// server also does it every 100 ms by itself).
func (s *Server) Sync() {
	t := s.fleet.simNow()
	for _, ep := range s.eps {
		ep.set(ep.r.reachableAt(t))
	}
}

func (s *Server) supervise() {
	defer close(s.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.Sync()
		}
	}
}

// Close stops every endpoint and waits for the supervisor.
func (s *Server) Close() error {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.closeAll()
	})
	return nil
}

func (s *Server) closeAll() {
	for _, ep := range s.eps {
		ep.close()
	}
}

func (ep *endpoint) start(ln net.Listener) {
	srv := &http.Server{Handler: ep, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	ep.srv = srv
	served := make(chan struct{})
	ep.served = served
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ln.Close()
		}
	}()
}

// set opens or closes the port. Closing drops open keep-alive connections
// too, so a scraper sees "connection refused", not a stale connection.
func (ep *endpoint) set(up bool) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	switch {
	case up && ep.srv == nil:
		if ep.held != nil {
			ep.held()
			ep.held = nil
		}
		ln, err := net.Listen("tcp", ep.addr)
		if err != nil {
			return // the port is busy for a moment; the next tick retries
		}
		ep.start(ln)
	case !up && ep.srv != nil:
		ep.srv.Close()
		ep.srv = nil
		// The listener's socket is closed once Serve's Accept returns;
		// until then a client could still reach it.
		<-ep.served
		// The port stays bound, not listening, while the replica is
		// down: a client is refused, as by a restarting vLLM, and no
		// other server on the host is handed the port meanwhile (one
		// would answer in the replica's name). Merely closed when it
		// cannot be held.
		host, _, _ := net.SplitHostPort(ep.addr)
		if _, release, err := holdport.Hold(&net.TCPAddr{IP: net.ParseIP(host), Port: ep.port}); err == nil {
			ep.held = release
		}
	}
}

// close stops the endpoint for good, its port released.
func (ep *endpoint) close() {
	ep.set(false)
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.held != nil {
		ep.held()
		ep.held = nil
	}
}

var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// ServeHTTP answers like vLLM's API server for the paths a scraper uses.
func (ep *endpoint) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch req.URL.Path {
	case "/metrics":
	case "/health":
		w.WriteHeader(http.StatusOK)
		return
	case "/version":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"version":%q}`, ep.r.profile.Version.String())
		return
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"detail":"Not Found"}`)
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	ep.scrapes.Add(1)
	format := NegotiateFormat(req.Header.Get("Accept"))
	buf := getBuf()
	defer putBuf(buf)
	r := ep.r
	r.mu.Lock()
	ep.f.sync(r)
	*buf = r.appendExposition((*buf)[:0], format)
	r.mu.Unlock()
	h := w.Header()
	h.Set("Content-Type", format.ContentType())
	if strings.Contains(req.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(w)
		_, _ = gz.Write(*buf)
		_ = gz.Close()
		gzipPool.Put(gz)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(*buf)))
	_, _ = w.Write(*buf)
}
