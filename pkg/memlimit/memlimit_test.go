package memlimit

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "3GiB", want: 3 << 30},
		{in: "512MiB", want: 512 << 20},
		{in: "64KiB", want: 64 << 10},
		{in: "2TiB", want: 2 << 40},
		{in: "1000B", want: 1000},
		{in: "123456", want: 123456},
		{in: " 1GiB ", want: 1 << 30},
		{in: "off", want: 0},
		{in: "0", want: 0},
		{in: "3GB", bad: true},
		{in: "3 GiB", bad: true},
		{in: "-1GiB", bad: true},
		{in: "1.5GiB", bad: true},
		{in: "GiB", bad: true},
		{in: "", bad: true},
		{in: "9000000TiB", bad: true},
	} {
		got, err := Parse(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("Parse(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v, want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestFloor(t *testing.T) {
	for _, tc := range []struct {
		limit, live, want int64
	}{
		{limit: 3 << 30, live: 1 << 30, want: 3 << 30},             // well below: the setting
		{limit: 3 << 30, live: 2560 << 20, want: 3200 << 20},       // within the headroom: raised
		{limit: 3 << 30, live: 4 << 30, want: 5 << 30},             // above: Headroom × live
		{limit: 1 << 30, live: 0, want: 1 << 30},                   // nothing live yet
		{limit: 100, live: 80, want: 100},                          // exactly Headroom × live
		{limit: math.MaxInt64, live: 1 << 40, want: math.MaxInt64}, // no overflow of the setting
	} {
		if got := Floor(tc.limit, tc.live); got != tc.want {
			t.Errorf("Floor(%d, %d) = %d, want %d", tc.limit, tc.live, got, tc.want)
		}
	}
}

// TestApply checks which limit is put in force: none when the setting
// is 0, the runtime's own when GOMEMLIMIT is set, else the setting (this
// test's live heap is far below it).
func TestApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name      string
		limit     int64
		gomemlim  string
		wantLimit int64 // in force afterwards (debug.SetMemoryLimit(-1))
		wantFrom  string
	}{
		{name: "setting", limit: 3 << 30, wantLimit: 3 << 30, wantFrom: "setting"},
		{name: "off", limit: 0, wantLimit: before, wantFrom: "none"},
		{name: "GOMEMLIMIT wins", limit: 3 << 30, gomemlim: "1GiB", wantLimit: before, wantFrom: "GOMEMLIMIT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(before)
			_, from, stop := Apply(tc.limit, env(tc.gomemlim))
			defer stop()
			if from != tc.wantFrom {
				t.Errorf("from %q, want %q", from, tc.wantFrom)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
				t.Errorf("limit in force %d, want %d", got, tc.wantLimit)
			}
		})
	}
}

// TestApplyFollowsTheLiveHeap: a live heap past the setting raises the
// limit to Headroom times it after a collection, rather than leaving the
// collector to run over and over.
func TestApplyFollowsTheLiveHeap(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	const setting = 8 << 20
	_, _, stop := Apply(setting, func(string) string { return "" })
	defer stop()
	live := make([]byte, 64<<20)
	for i := range live {
		live[i] = 1
	}
	var got int64
	for range 50 {
		runtime.GC()
		runtime.Gosched()
		if got = debug.SetMemoryLimit(-1); got >= 64<<20 {
			break
		}
	}
	if got < int64(float64(len(live))*Headroom) {
		t.Errorf("limit in force %d with %d bytes live, want at least %d", got, len(live), int64(float64(len(live))*Headroom))
	}
	runtime.KeepAlive(live)
}

// TestContainerLimit: the soft limit stays under a container's memory
// limit (a pod of 2 GiB must not get the 3.5 GiB default, or the kernel
// kills it before the collector acts), and the files' "no limit" forms
// leave the setting alone.
func TestContainerLimit(t *testing.T) {
	const setting = 3584 << 20
	for _, tc := range []struct {
		name      string
		files     map[string]string
		setting   int64
		wantLimit int64 // WithinContainer(setting, ContainerLimit(...))
	}{
		{name: "no cgroup files", setting: setting, wantLimit: setting},
		{name: "cgroup v2 unlimited", files: map[string]string{"/sys/fs/cgroup/memory.max": "max\n"}, setting: setting, wantLimit: setting},
		{name: "cgroup v2 2 GiB", files: map[string]string{"/sys/fs/cgroup/memory.max": "2147483648\n"}, setting: setting, wantLimit: share(2 << 30)},
		{name: "cgroup v2 larger than the setting", files: map[string]string{"/sys/fs/cgroup/memory.max": "17179869184\n"}, setting: setting, wantLimit: setting},
		{name: "cgroup v1 2 GiB", files: map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "2147483648\n"}, setting: setting, wantLimit: share(2 << 30)},
		{name: "cgroup v1 unlimited", files: map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, setting: setting, wantLimit: setting},
		{name: "garbage", files: map[string]string{"/sys/fs/cgroup/memory.max": "lots\n"}, setting: setting, wantLimit: setting},
		{name: "setting off stays off", files: map[string]string{"/sys/fs/cgroup/memory.max": "2147483648\n"}, setting: 0, wantLimit: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(name string) ([]byte, error) {
				if s, ok := tc.files[name]; ok {
					return []byte(s), nil
				}
				return nil, os.ErrNotExist
			}
			if got := WithinContainer(tc.setting, ContainerLimit(read)); got != tc.wantLimit {
				t.Errorf("limit %d, want %d", got, tc.wantLimit)
			}
		})
	}
}

// share is ContainerShare of n bytes, as WithinContainer computes it.
func share(n int64) int64 { return int64(float64(n) * ContainerShare) }
