package discovery

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/vtop-dev/vtop/sources"
)

// dnsServer is a minimal authoritative DNS responder on loopback UDP for
// the tests: A, AAAA and SRV answers from a table the test rewrites.
type dnsServer struct {
	mu   sync.Mutex
	a    map[string][]net.IP // name (with the final dot) → addresses
	srv  map[string][]net.SRV
	conn net.PacketConn
}

func newDNSServer(t *testing.T) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &dnsServer{a: map[string][]net.IP{}, srv: map[string][]net.SRV{}, conn: pc}
	t.Cleanup(func() { pc.Close() })
	go d.serve()
	return d
}

func (d *dnsServer) set(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f()
}

func (d *dnsServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, addr, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
		b.EnableCompression()
		b.StartQuestions()
		b.Question(q)
		b.StartAnswers()
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
		d.mu.Lock()
		name := q.Name.String()
		switch q.Type {
		case dnsmessage.TypeA:
			for _, ip := range d.a[name] {
				if v4 := ip.To4(); v4 != nil {
					b.AResource(rh, dnsmessage.AResource{A: [4]byte(v4)})
				}
			}
		case dnsmessage.TypeAAAA:
			for _, ip := range d.a[name] {
				if ip.To4() == nil {
					b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: [16]byte(ip.To16())})
				}
			}
		case dnsmessage.TypeSRV:
			for _, s := range d.srv[name] {
				b.SRVResource(rh, dnsmessage.SRVResource{Priority: s.Priority, Weight: s.Weight, Port: s.Port,
					Target: dnsmessage.MustNewName(s.Target)})
			}
		}
		d.mu.Unlock()
		msg, err := b.Finish()
		if err == nil {
			d.conn.WriteTo(msg, addr)
		}
	}
}

// resolver asks only this server.
func (d *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "udp", d.conn.LocalAddr().String())
	}}
}

// vllmAt serves a real vLLM capture on addr (a loopback host:port).
func vllmAt(t *testing.T, addr string) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dumps", "Ahasannn-hardware-aware-router__v0.11.0_full.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// freePort finds a port free on 127.0.0.1 and 127.0.0.2 alike.
func freePort(t *testing.T) int {
	t.Helper()
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if l2, err := net.Listen("tcp", "127.0.0.2:"+strconv.Itoa(port)); err == nil {
			l2.Close()
			return port
		}
	}
	t.Fatal("no port free on both loopback addresses")
	return 0
}

// watcher runs a source and follows which targets are live and answering.
type watcher struct {
	t    *testing.T
	out  chan sources.Batch
	live map[string]bool
	up   map[string]bool
}

func watch(t *testing.T, s *Source) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{t: t, out: make(chan sources.Batch), live: map[string]bool{}, up: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, w.out)
	}()
	t.Cleanup(func() {
		cancel()
		for {
			select {
			case <-w.out:
			case <-done:
				return
			}
		}
	})
	return w
}

// until waits for exactly want to be live, each with a good scrape.
func (w *watcher) until(what string, want ...string) {
	w.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		n := 0
		for name := range w.live {
			if w.up[name] {
				n++
			}
		}
		ok := len(w.live) == len(want) && n == len(want)
		for _, name := range want {
			ok = ok && w.live[name]
		}
		if ok {
			return
		}
		select {
		case b := <-w.out:
			for _, name := range b.Departed {
				delete(w.live, name)
				delete(w.up, name)
			}
			for _, tg := range b.Arrived {
				w.live[tg.Name] = true
			}
			for _, s := range b.Scrapes {
				if w.live[s.Target] {
					w.up[s.Target] = s.Err == nil
				}
			}
		case <-deadline:
			w.t.Fatalf("%s: live %v (up %v), want %v", what, w.live, w.up, want)
		}
	}
}

func pollConfig() sources.PollerConfig {
	pc := sources.DefaultPollerConfig()
	pc.Interval = 100 * time.Millisecond
	return pc
}

// dns+name:port polls every address the name has; a record removed from
// DNS is a departure, one added an arrival, without a restart.
func TestDNSARecords(t *testing.T) {
	d := newDNSServer(t)
	port := freePort(t)
	vllmAt(t, "127.0.0.1:"+strconv.Itoa(port))
	vllmAt(t, "127.0.0.2:"+strconv.Itoa(port))
	d.set(func() { d.a["vllm.test."] = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.2")} })
	f, _ := sources.NewFetcher(sources.HTTPConfig{Timeout: time.Second})
	spec, err := ParseSpec("dns+vllm.test:" + strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	w := watch(t, &Source{Specs: []Spec{spec}, Resolver: d.resolver(), Fetcher: f, Poll: pollConfig(), Refresh: 100 * time.Millisecond})
	p := ":" + strconv.Itoa(port)
	w.until("both records", "127.0.0.1"+p, "127.0.0.2"+p)
	d.set(func() { d.a["vllm.test."] = []net.IP{net.ParseIP("127.0.0.2")} })
	w.until("one removed", "127.0.0.2"+p)
	d.set(func() { d.a["vllm.test."] = []net.IP{net.ParseIP("127.0.0.2"), net.ParseIP("127.0.0.1")} })
	w.until("back", "127.0.0.1"+p, "127.0.0.2"+p)
}

// dnssrv+ polls each SRV target at its port, resolving the target names
// through the same resolver.
func TestDNSSRV(t *testing.T) {
	d := newDNSServer(t)
	p1, p2 := freePort(t), freePort(t)
	vllmAt(t, "127.0.0.1:"+strconv.Itoa(p1))
	vllmAt(t, "127.0.0.1:"+strconv.Itoa(p2))
	d.set(func() {
		d.a["a.test."] = []net.IP{net.ParseIP("127.0.0.1")}
		d.a["b.test."] = []net.IP{net.ParseIP("127.0.0.1")}
		d.srv["_vllm._tcp.test."] = []net.SRV{{Target: "a.test.", Port: uint16(p1)}, {Target: "b.test.", Port: uint16(p2)}}
	})
	f, _ := sources.NewFetcher(sources.HTTPConfig{Timeout: time.Second, Resolver: d.resolver()})
	spec, err := ParseSpec("dnssrv+_vllm._tcp.test")
	if err != nil {
		t.Fatal(err)
	}
	w := watch(t, &Source{Specs: []Spec{spec}, Resolver: d.resolver(), Fetcher: f, Poll: pollConfig(), Refresh: 100 * time.Millisecond})
	a, b := "a.test:"+strconv.Itoa(p1), "b.test:"+strconv.Itoa(p2)
	w.until("both", a, b)
	d.set(func() { d.srv["_vllm._tcp.test."] = []net.SRV{{Target: "b.test.", Port: uint16(p2)}} })
	w.until("a removed", b)
}

// A file_sd file rewritten while running (JSON, then YAML, then empty)
// adds and removes targets.
func TestFileSD(t *testing.T) {
	p1, p2 := freePort(t), freePort(t)
	vllmAt(t, "127.0.0.1:"+strconv.Itoa(p1))
	vllmAt(t, "127.0.0.1:"+strconv.Itoa(p2))
	a, b := "127.0.0.1:"+strconv.Itoa(p1), "127.0.0.1:"+strconv.Itoa(p2)
	path := filepath.Join(t.TempDir(), "targets.json")
	write := func(s string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(`[{"targets": ["` + a + `"], "labels": {"job": "vllm"}}]`)
	f, _ := sources.NewFetcher(sources.HTTPConfig{Timeout: time.Second})
	w := watch(t, &Source{Specs: []Spec{{Kind: "file", Path: path}}, Fetcher: f, Poll: pollConfig()})
	w.until("json", a)
	write("- targets:\n    - " + a + "\n    - " + b + "\n")
	w.until("yaml", a, b)
	write("[]\n")
	w.until("emptied")
	if !strings.Contains(Spec{Kind: "file", Path: path}.String(), "file_sd") {
		t.Error("spec name")
	}
}

// A file_sd group's pod and namespace labels (relabelled, or Kubernetes
// SD's meta labels as a generator copies them) name its targets' pod and
// namespace, for the user's actions; none, none.
func TestFileSDPodLabels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sd.yaml")
	body := `[{"targets": ["10.0.0.1:8000"], "labels": {"pod": "vllm-0", "namespace": "llm", "__meta_kubernetes_pod_name": "other"}},
	 {"targets": ["10.0.0.2:8000"], "labels": {"__meta_kubernetes_pod_name": "vllm-1", "__meta_kubernetes_namespace": "llm-b"}},
	 {"targets": ["10.0.0.3:8000"], "labels": {"job": "vllm", "pod": "evil\u001b]52;c;x\u0007"}},
	 {"targets": ["10.0.0.4:8000"]}]`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, err := readFileSD(path)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"vllm-0", "llm"}, {"vllm-1", "llm-b"}, {"", ""}, {"", ""}}
	if len(ts) != len(want) {
		t.Fatalf("%d targets", len(ts))
	}
	// A label value is untrusted text: sanitized where it enters.
	if p := ts[2].Pod; p == "" || strings.ContainsAny(p, "\x1b\x07") {
		t.Errorf("hostile pod label read as %q", p)
	}
	ts[2].Pod = ""
	for i, w := range want {
		if got := [2]string{ts[i].Pod, ts[i].Namespace}; got != w {
			t.Errorf("%s: pod, namespace %q, want %q", ts[i].Name, got, w)
		}
	}
}
