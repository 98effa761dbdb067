package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// What a run costs the process measured (a proxy, or the upstream when it
// is called directly), read from outside it: CPU from /proc/PID/stat, peak
// resident memory from /proc/PID/status, bytes allocated from a Go
// process's Prometheus metrics, new upstream connections from the echo
// upstream's /stats. The driver reads each before and after the measured
// window, so warm-up and session set-up are not counted.

// clockTick is USER_HZ, the unit of /proc/PID/stat's utime and stime: 100
// on every Linux architecture Go supports (the kernel fixes it for user
// space whatever its internal HZ).
const clockTick = 10 * time.Millisecond

// ProcCPU is the user+system CPU time pids have used, summed.
func ProcCPU(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, err
		}
		ticks, err := parseStatCPU(b)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %v", pid, err)
		}
		total += time.Duration(ticks) * clockTick
	}
	return total, nil
}

// parseStatCPU is utime+stime (fields 14 and 15) of a /proc/PID/stat line.
// The command name (field 2) is in parentheses and may hold spaces or
// parentheses itself, so fields are counted from the last ')'.
func parseStatCPU(b []byte) (int64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want ≥ 13", len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return u + s, nil
}

// ResetPeakRSS sets each process's VmHWM back to its current resident size
// (Linux: "5" to /proc/PID/clear_refs), so the peak read after a run is that
// run's. It fails where the kernel or permissions do not allow it; the
// peak is then the process's lifetime peak.
func ResetPeakRSS(pids []int) error {
	for _, pid := range pids {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			return err
		}
	}
	return nil
}

// PeakRSS is VmHWM of pids, summed, in bytes.
func PeakRSS(pids []int) (int64, error) {
	var total int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0, err
		}
		kb, err := statusKB(b, "VmHWM")
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status: %v", pid, err)
		}
		total += kb * 1024
	}
	return total, nil
}

// statusKB is the kB value of field in a /proc/PID/status text.
func statusKB(b []byte, field string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != field {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: %q, want a number of kB", field, v)
		}
		return strconv.ParseInt(f[0], 10, 64)
	}
	return 0, fmt.Errorf("no %s line", field)
}

// maxScrape bounds a metrics or stats answer the driver reads.
const maxScrape = 4 << 20

func get(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxScrape))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return b, err
}

// AllocatedBytes is go_memstats_alloc_bytes_total from a Prometheus text
// exposition at url: the bytes a Go process has allocated since it started.
func AllocatedBytes(ctx context.Context, url string) (float64, error) {
	b, err := get(ctx, url)
	if err != nil {
		return 0, err
	}
	return metricValue(b, "go_memstats_alloc_bytes_total")
}

// metricValue is the value of an unlabelled sample name in a Prometheus
// text exposition.
func metricValue(b []byte, name string) (float64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || !strings.HasPrefix(rest, " ") {
			continue
		}
		f := strings.Fields(rest)
		return strconv.ParseFloat(f[0], 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s sample", name)
}

// ReadEchoStats reads an EchoUpstream's /stats.
func ReadEchoStats(ctx context.Context, url string) (EchoStats, error) {
	var st EchoStats
	b, err := get(ctx, url)
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(b, &st)
	return st, err
}

// Probe is what the driver reads around a run; the zero value reads
// nothing.
type Probe struct {
	PIDs       []int  // the process measured (several for nginx's workers)
	MetricsURL string // its Prometheus /metrics, when it is a Go process exposing go_memstats
	StatsURL   string // the echo upstream's /stats
}

type probeMark struct {
	self      time.Duration // the driver's own CPU
	cpu       time.Duration
	alloc     float64
	accepted  int64
	peakReset bool
}

// Start resets the peak RSS (where the kernel allows: else Finish reports
// the process's lifetime peak) and reads the counters.
func (p Probe) Start(ctx context.Context) (m probeMark, err error) {
	if m.self, err = ProcCPU([]int{os.Getpid()}); err != nil {
		return m, err
	}
	if len(p.PIDs) > 0 {
		m.peakReset = ResetPeakRSS(p.PIDs) == nil
		if m.cpu, err = ProcCPU(p.PIDs); err != nil {
			return m, err
		}
	}
	if p.MetricsURL != "" {
		if m.alloc, err = AllocatedBytes(ctx, p.MetricsURL); err != nil {
			return m, err
		}
	}
	if p.StatsURL != "" {
		st, err := ReadEchoStats(ctx, p.StatsURL)
		if err != nil {
			return m, err
		}
		m.accepted = st.Accepted
	}
	return m, nil
}

// Finish fills r's per-call costs from the counters' change since m over
// calls completed calls.
func (p Probe) Finish(ctx context.Context, m probeMark, calls int64, r *Result) error {
	if calls <= 0 {
		return nil
	}
	n := float64(calls)
	self, err := ProcCPU([]int{os.Getpid()})
	if err != nil {
		return err
	}
	r.DriverCPUusPerCall = round(float64(self-m.self)/float64(time.Microsecond)/n, 1)
	if len(p.PIDs) > 0 {
		cpu, err := ProcCPU(p.PIDs)
		if err != nil {
			return err
		}
		r.CPUusPerCall = round(float64(cpu-m.cpu)/float64(time.Microsecond)/n, 1)
		r.PeakRSSLifetime = !m.peakReset
		peak, err := PeakRSS(p.PIDs)
		if err != nil {
			return err
		}
		r.PeakRSSMiB = round(float64(peak)/(1<<20), 1)
	}
	if p.MetricsURL != "" {
		a, err := AllocatedBytes(ctx, p.MetricsURL)
		if err != nil {
			return err
		}
		r.AllocBytesPerCall = round((a-m.alloc)/n, 0)
	}
	if p.StatsURL != "" {
		st, err := ReadEchoStats(ctx, p.StatsURL)
		if err != nil {
			return err
		}
		v := round(float64(st.Accepted-m.accepted)/n, 4)
		r.UpstreamConnsPerCall = &v
	}
	return nil
}
