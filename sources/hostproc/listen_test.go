package hostproc

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// hostHex prints an address as the kernel does: 32-bit words in host order.
func hostHex(ip net.IP, port int) string {
	if v4 := ip.To4(); v4 != nil && !strings.Contains(ip.String(), ":") {
		ip = v4
	}
	var b strings.Builder
	for i := 0; i < len(ip); i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(ip[i:i+4]))
	}
	return fmt.Sprintf("%s:%04X", b.String(), port)
}

type fakeProc struct {
	pid, ppid int
	comm      string
	sockets   []uint64
}

// fakeRoot writes a /proc tree: net/tcp{,6} and each process's stat and fd links.
func fakeRoot(t *testing.T, tcp, tcp6 [][3]string, procs []fakeProc) string {
	t.Helper()
	root := t.TempDir()
	write := func(path, s string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	table := func(rows [][3]string) string {
		s := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		for i, r := range rows { // local, state, "uid inode"
			s += fmt.Sprintf("%4d: %s 00000000:0000 %s 00000000:00000000 00:00000000 00000000 %s 0 1 0000000000000000 100 0 0 10 0\n",
				i, r[0], r[1], strings.Replace(r[2], " ", "        0 ", 1))
		}
		return s
	}
	write(filepath.Join(root, "net", "tcp"), table(tcp))
	write(filepath.Join(root, "net", "tcp6"), table(tcp6))
	for _, p := range procs {
		dir := filepath.Join(root, fmt.Sprint(p.pid))
		write(filepath.Join(dir, "stat"), fmt.Sprintf("%d (%s) S %d %d 0 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 %d 1000 100 18446744073709551615\n",
			p.pid, p.comm, p.ppid, p.pid, 5000+p.pid))
		if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Symlink("/dev/null", filepath.Join(dir, "fd", "0"))
		for i, ino := range p.sockets {
			os.Symlink(fmt.Sprintf("socket:[%d]", ino), filepath.Join(dir, "fd", fmt.Sprint(i+3)))
		}
	}
	return root
}

func TestListenersAndMatching(t *testing.T) {
	root := fakeRoot(t,
		[][3]string{
			{hostHex(net.IPv4zero, 8000), "0A", "1000 111"},
			{hostHex(net.ParseIP("127.0.0.1"), 9000), "0A", "0 222"},
			{hostHex(net.ParseIP("127.0.0.1"), 8000), "01", "0 999"}, // established, not listening
		},
		[][3]string{
			{hostHex(net.IPv6zero, 8001), "0A", "0 333"},
			{hostHex(net.ParseIP("::ffff:127.0.0.1"), 8002), "0A", "0 444"},
			{hostHex(net.ParseIP("::1"), 8003), "0A", "0 555"},
			{hostHex(net.ParseIP("10.1.2.3"), 8004), "0A", "0 666"},
		}, nil)
	ls, err := Listeners(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls {
		got = append(got, fmt.Sprintf("%s:%d/%d/%d", l.IP, l.Port, l.Inode, l.UID))
	}
	want := []string{"0.0.0.0:8000/111/1000", "127.0.0.1:9000/222/0", ":::8001/333/0", "127.0.0.1:8002/444/0", "::1:8003/555/0", "10.1.2.3:8004/666/0"}
	if !slices.Equal(got, want) {
		t.Fatalf("listeners\n got %q\nwant %q", got, want)
	}
	byPort := map[int]Listener{}
	for _, l := range ls {
		byPort[l.Port] = l
	}
	for _, c := range []struct {
		host string
		port int
		want bool
	}{
		{"localhost", 8000, true}, {"10.9.9.9", 8000, true}, // wildcard
		{"127.0.0.1", 9000, true}, {"localhost", 9000, true}, {"10.9.9.9", 9000, false},
		{"::1", 8001, true},
		{"127.0.0.1", 8002, true}, {"localhost", 8002, true}, // IPv4-mapped
		{"::1", 8003, true}, {"localhost", 8003, true}, {"127.0.0.1", 8003, false},
		{"0.0.0.0", 9000, true}, {"10.1.2.3", 8004, true}, {"localhost", 8004, false},
		{"127.0.0.1", 8001 + 1000, false},
	} {
		if got := (Want{c.host, c.port}).matches(byPort[c.port]); got != c.want {
			t.Errorf("%s:%d matches = %v", c.host, c.port, got)
		}
	}
	if _, err := Listeners(t.TempDir()); err == nil {
		t.Error("a /proc without net/tcp must be an error")
	}
}

func TestReadTableAndJoinOnAFakeProc(t *testing.T) {
	root := fakeRoot(t, [][3]string{{hostHex(net.IPv4zero, 8000), "0A", "1000 111"}}, nil, []fakeProc{
		{pid: 1, ppid: 0, comm: "systemd", sockets: []uint64{111}}, // socket activation must not make PID 1 the root
		{pid: 40, ppid: 1, comm: "bash"},
		{pid: 50, ppid: 40, comm: "vllm (serve) x", sockets: []uint64{111}},
		{pid: 51, ppid: 50, comm: "VLLM::EngineCor"},
		{pid: 52, ppid: 51, comm: "VLLM::Worker_TP"},
		{pid: 60, ppid: 40, comm: "other"},
	})
	tb, err := ReadTable(root)
	if err != nil {
		t.Fatal(err)
	}
	if p := tb.Procs[50]; p.Comm != "vllm (serve) x" || p.PPID != 40 || p.Start != 5050 {
		t.Errorf("stat parse: %+v", p)
	}
	if a := tb.Ancestors(52); !slices.Equal(a, []int{51, 50, 40}) {
		t.Errorf("ancestors %v", a)
	}
	for _, gpu := range [][]int{{52}, nil} { // from the GPU process, and by full scan
		res := NewJoiner(root).Join([]Want{{"localhost", 8000}, {"localhost", 8001}}, gpu, time.Now())
		if r := res[0]; r.Root != 50 || r.RootName != "vllm (serve) x" || !slices.Equal(r.PIDs, []int{50, 51, 52}) || r.Note != "" {
			t.Errorf("gpu %v: %+v", gpu, r)
		}
		if res[1].Note != "no process listens on port 8001 here" {
			t.Errorf("%+v", res[1])
		}
	}
}

// A socket no visible process holds (another PID namespace): a note, and
// the full scan is not repeated on every join.
func TestJoinUnheldSocketRateLimitsFullScan(t *testing.T) {
	root := fakeRoot(t, [][3]string{{hostHex(net.IPv4zero, 8000), "0A", "1000 111"}}, nil,
		[]fakeProc{{pid: 50, ppid: 1, comm: "docker-proxy"}})
	j := NewJoiner(root)
	now := time.Unix(1000, 0)
	r := j.Join([]Want{{"localhost", 8000}}, nil, now)[0]
	if r.Root != 0 || !strings.Contains(r.Note, "no process visible here holds port 8000 (socket owner uid 1000)") {
		t.Fatalf("%+v", r)
	}
	// The holder appears; within FullScanEvery the cached miss stands, after it the scan finds it.
	os.Symlink("socket:[111]", filepath.Join(root, "50", "fd", "9"))
	if r := j.Join([]Want{{"localhost", 8000}}, nil, now.Add(time.Second))[0]; r.Root != 0 {
		t.Errorf("full scan repeated within %v: %+v", j.FullScanEvery, r)
	}
	if r := j.Join([]Want{{"localhost", 8000}}, nil, now.Add(j.FullScanEvery))[0]; r.Root != 50 || r.RootName != "docker-proxy" {
		t.Errorf("after the interval: %+v", r)
	}
}
