package launcher

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreeAddr returns a loopback address with a port that was free a moment
// ago, for a child process to listen on. The port is a random one between
// freePortLow and the kernel's range for the local ports of outgoing
// connections (ip_local_port_range): a port the kernel hands out itself
// (port 0) can be taken by any connection the test's processes open
// before the child binds it ("address already in use").
func FreeAddr() (string, error) {
	if high := ephemeralLow(); high > freePortLow+1000 {
		for range 100 {
			port := freePortLow + rand.IntN(high-freePortLow)
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err == nil {
				addr := l.Addr().String()
				l.Close()
				return addr, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// freePortLow is the lowest port FreeAddr returns: above the fixed ports of
// devstack and the benchmarks (9100…, 14222, 18080, 19100…).
const freePortLow = 20000

// ephemeralLow is the first port of the kernel's range for outgoing
// connections, or 0 when it is not known.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return low
}
