// Package hostproc finds, from /proc, the process tree that serves a local
// port: the listening socket in /proc/net/tcp{,6}, the process holding it
// through /proc/PID/fd, and its descendants through /proc/PID/stat. It is
// plain file reading; off Linux every lookup ends in a note.
package hostproc

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listener is one listening TCP socket.
type Listener struct {
	IP    net.IP
	Port  int
	Inode uint64
	UID   int
}

// tcpListen is the LISTEN state in /proc/net/tcp.
const tcpListen = "0A"

// Listeners reads the listening TCP sockets of this network namespace.
func Listeners(root string) ([]Listener, error) {
	var out []Listener
	read := 0
	for _, name := range []string{"tcp", "tcp6"} {
		ls, err := readTCP(filepath.Join(root, "net", name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // IPv6 off, or not Linux
		}
		if err != nil {
			return nil, err
		}
		read++
		out = append(out, ls...)
	}
	if read == 0 {
		return nil, fmt.Errorf("no %s/net/tcp: the process join needs Linux /proc", root)
	}
	return out, nil
}

func readTCP(path string) ([]Listener, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Listener
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fl := strings.Fields(sc.Text())
		if len(fl) < 10 || fl[3] != tcpListen {
			continue
		}
		ip, port, ok := parseAddr(fl[1])
		if !ok {
			continue
		}
		uid, err1 := strconv.Atoi(fl[7])
		ino, err2 := strconv.ParseUint(fl[9], 10, 64)
		if err1 != nil || err2 != nil || ino == 0 {
			continue
		}
		out = append(out, Listener{IP: ip, Port: port, Inode: ino, UID: uid})
	}
	return out, sc.Err()
}

// parseAddr reads "0100007F:1F40": the address as 32-bit words printed in
// host byte order, the port in hex.
func parseAddr(s string) (net.IP, int, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, 0, false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return ip, int(port), true
}
