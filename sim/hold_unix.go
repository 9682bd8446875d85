//go:build unix

package sim

import (
	"net"
	"syscall"
)

// holdPort keeps a closed endpoint's port bound, without listening, while
// the simulated server is down: a client still gets "connection refused",
// as from a vLLM process that is restarting, but no other server on the
// host is handed the port in the meantime (the kernel gives port 0 only
// ports with no socket bound), which would answer in the replica's name.
// The socket has SO_REUSEADDR so it binds over the TIME_WAIT connections
// the closed server left. Nil when it cannot be bound: the port is then
// merely closed, as before.
func holdPort(addr *net.TCPAddr) (release func()) {
	family, sa := syscall.AF_INET, syscall.Sockaddr(nil)
	if ip4 := addr.IP.To4(); ip4 != nil {
		a := &syscall.SockaddrInet4{Port: addr.Port}
		copy(a.Addr[:], ip4)
		sa = a
	} else {
		family = syscall.AF_INET6
		a := &syscall.SockaddrInet6{Port: addr.Port}
		copy(a.Addr[:], addr.IP.To16())
		sa = a
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil
	}
	syscall.CloseOnExec(fd)
	if syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1) != nil || syscall.Bind(fd, sa) != nil {
		syscall.Close(fd)
		return nil
	}
	return func() { syscall.Close(fd) }
}
