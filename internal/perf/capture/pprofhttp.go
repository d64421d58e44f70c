package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// PprofProfiles maps the pprof-http provider's profile kinds to the
// net/http/pprof handler path under /debug/pprof/: cpu is
// /debug/pprof/profile?seconds=N (a CPU profile over N seconds), the others
// are snapshots (protobuf, as `go tool pprof URL` fetches them).
var PprofProfiles = map[string]string{"cpu": "profile", "heap": "heap", "allocs": "allocs", "goroutine": "goroutine"}

// ErrNotLoopback is wrapped by LoopbackURL's refusals: the address is not
// a loopback literal (127.0.0.0/8, ::1) nor localhost resolving only to
// loopback addresses.
var ErrNotLoopback = errors.New("the pprof address is not a loopback address")

// LoopbackURL parses raw, an http URL whose host is a loopback IP literal
// (127.0.0.0/8 or ::1, also in the IPv4-mapped form ::ffff:127.x.y.z, which
// is dialled as the IPv4 address) or "localhost", and returns the URL and
// the loopback addresses to dial. localhost is resolved with the system
// resolver (no connection to the service is made) and is accepted only
// when every address it resolves to is loopback. The URL is the service's
// base: a path ending in /debug/pprof or /debug/pprof/ is the handler
// prefix itself and is cut off it (FetchPprof appends /debug/pprof/NAME);
// a path naming a handler under it (/debug/pprof/heap) is refused. Any
// other host, scheme, user info, query or fragment (a bare "?" or "#"
// included) is refused with an error wrapping ErrNotLoopback (host) or a
// plain error (shape) before any connection.
func LoopbackURL(ctx context.Context, raw string) (*url.URL, []netip.Addr, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, errors.New("the pprof URL does not parse")
	}
	if u.Scheme != "http" {
		return nil, nil, errors.New("the pprof URL must use http://")
	}
	if u.User != nil || strings.ContainsAny(raw, "?#") {
		return nil, nil, errors.New("the pprof URL takes no user info, query or fragment")
	}
	const handlers = "/debug/pprof"
	if p := strings.TrimRight(u.Path, "/"); strings.HasSuffix(p, handlers) {
		u.Path, u.RawPath = strings.TrimSuffix(p, handlers), ""
	}
	if strings.Contains(u.Path+"/", handlers+"/") {
		return nil, nil, errors.New("the pprof URL names a handler under /debug/pprof/: give the service's base URL (e.g. http://127.0.0.1:6060, or one ending in /debug/pprof/) and choose the profile with provider.profile")
	}
	host := u.Hostname()
	if u.Port() == "" {
		return nil, nil, errors.New("the pprof URL must name a port (e.g. http://127.0.0.1:6060)")
	}
	if _, err := strconv.ParseUint(u.Port(), 10, 16); err != nil {
		return nil, nil, errors.New("the pprof URL's port is not a number from 0 to 65535")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if !a.IsLoopback() || a.Zone() != "" {
			return nil, nil, ErrNotLoopback
		}
		return u, []netip.Addr{a}, nil
	}
	if !strings.EqualFold(host, "localhost") {
		return nil, nil, fmt.Errorf("%w: the host is a name other than localhost", ErrNotLoopback)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", "localhost")
	if err != nil || len(addrs) == 0 {
		return nil, nil, fmt.Errorf("%w: localhost does not resolve", ErrNotLoopback)
	}
	for i, a := range addrs {
		a = a.Unmap()
		if !a.IsLoopback() {
			return nil, nil, fmt.Errorf("%w: localhost resolves to %s", ErrNotLoopback, a)
		}
		addrs[i] = a
	}
	return u, addrs, nil
}

// PprofFetch is the outcome of one FetchPprof.
type PprofFetch struct {
	// URL is the fetched URL (with ?seconds=N for cpu).
	URL string `json:"url"`
	// Status is the HTTP status code, 0 when no response arrived.
	Status int `json:"http_status"`
	// Bytes is the body length written to the destination.
	Bytes int64 `json:"bytes"`
	// WallTimeNS is the monotonic duration of the request.
	WallTimeNS int64 `json:"wall_time_ns"`
}

// FetchPprof fetches one profile kind (a PprofProfiles key) from base,
// which LoopbackURL accepted with addrs, and writes the body to dst.
// Connections go only to addrs (never re-resolved), the dialled peer is
// checked to be loopback again, and redirects are refused. seconds is the
// CPU profile duration; the request deadline is seconds + 30 s. A body
// larger than maxBytes, a non-200 status or a transport failure is an
// error (the returned PprofFetch says how far it got).
func FetchPprof(ctx context.Context, base *url.URL, addrs []netip.Addr, kind string, seconds int, maxBytes int64, dst string) (*PprofFetch, error) {
	name, ok := PprofProfiles[kind]
	if !ok {
		return nil, fmt.Errorf("unknown pprof profile kind %q", kind)
	}
	u := *base
	u.Path = strings.TrimRight(u.Path, "/") + "/debug/pprof/" + name
	if kind == "cpu" {
		u.RawQuery = "seconds=" + strconv.Itoa(seconds)
	}
	out := &PprofFetch{URL: u.String()}
	port := base.Port()
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var last error
			for _, a := range addrs {
				c, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), port))
				if err != nil {
					last = err
					continue
				}
				if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err != nil || !ap.Addr().Unmap().IsLoopback() {
					c.Close()
					return nil, ErrNotLoopback
				}
				return c, nil
			}
			return nil, last
		},
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("the pprof endpoint redirected; redirects are not followed")
	}}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return out, err
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		out.WallTimeNS = time.Since(start).Nanoseconds()
		return out, err
	}
	defer resp.Body.Close()
	out.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		line, _, _ := strings.Cut(strings.TrimSpace(string(msg)), "\n")
		out.WallTimeNS = time.Since(start).Nanoseconds()
		return out, fmt.Errorf("%s answered HTTP %d: %s", u.Path, resp.StatusCode, line)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return out, err
	}
	n, err := io.Copy(f, io.LimitReader(resp.Body, maxBytes+1))
	out.Bytes = n
	out.WallTimeNS = time.Since(start).Nanoseconds()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return out, err
	}
	if n > maxBytes {
		return out, fmt.Errorf("the profile is larger than %d bytes", maxBytes)
	}
	return out, nil
}
