package format

import (
	"testing"
	"time"
)

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 2 << 20: "2.0 MiB", 2100000: "2.0 MiB",
		1288490189: "1.2 GiB", 5 << 40: "5.0 TiB",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
	if Size(0) != "-" || Size(-1) != "-" || Size(2048) != "2.0KiB" || Size(2<<20) != "2.0MiB" {
		t.Errorf("Size: %q %q %q", Size(0), Size(-1), Size(2048))
	}
	if got := Rate(4.3e6); got != "4.1 MiB/s" {
		t.Errorf("Rate = %q", got)
	}
}

func TestAgeLagDash(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		45 * time.Second: "45s", 5 * time.Minute: "5m", 36 * time.Hour: "36h", 72 * time.Hour: "3d", -time.Minute: "0s",
	} {
		if got := Age(now.Add(-d), now); got != want {
			t.Errorf("Age(-%s) = %q, want %q", d, got, want)
		}
	}
	if Age(time.Time{}, now) != "-" {
		t.Error("a zero time has an age")
	}
	l := int64(0)
	if Lag(nil) != "?" || Lag(&l) != "0" {
		t.Errorf("Lag: %q %q", Lag(nil), Lag(&l))
	}
	if Dash("") != "-" || Dash("x") != "x" {
		t.Error("Dash")
	}
}

func TestProgress(t *testing.T) {
	for _, c := range []struct {
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		{0, 0, 0, "0 B, 0 B/s"},
		{999, 0, time.Second, "999 B, 999 B/s"},
		{1536, 3072, time.Second, "1.5 KiB / 3.0 KiB (50%), 1.5 KiB/s, ETA 1s"},
		{12 << 20, 27 << 20, 3 * time.Second, "12.0 MiB / 27.0 MiB (44%), 4.0 MiB/s, ETA 4s"},
		{5 << 30, 5 << 30, 10 * time.Second, "5.0 GiB / 5.0 GiB (100%), 512.0 MiB/s"},
	} {
		if got := Progress(c.done, c.total, c.elapsed); got != c.want {
			t.Errorf("Progress(%d, %d, %s) = %q, want %q", c.done, c.total, c.elapsed, got, c.want)
		}
	}
}

func TestLSN(t *testing.T) {
	for pos, want := range map[uint64]string{0: "0/0", 0x5000060: "0/5000060", 0x1_0000_00A0: "1/A0", 167772160: "0/A000000"} {
		if got := LSN(pos); got != want {
			t.Errorf("LSN(%d) = %q, want %q", pos, got, want)
		}
	}
}
