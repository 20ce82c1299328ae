// Package format renders the values every face of hactl shows the same
// way: byte sizes (binary units), kubectl-style ages, lag ("?" when
// unknown, never 0) and dashes for what is not known. The CLI, the status
// printers, the TUI and the executor's receipts all use it, so one
// database is "2.0 MiB" wherever it appears.
package format

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/hactl-dev/hactl/model"
)

// Dash is s, or "-" when s is empty.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Count is n, or "-" when it is 0 (a term, index or timeline not read).
func Count(n uint64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatUint(n, 10)
}

// Bytes renders n in binary units with one decimal: "512 B", "2.0 MiB",
// "1.2 GiB", as the verdict's reasons word sizes (model.BytesIEC).
func Bytes(n int64) string { return model.BytesIEC(n) }

// Size is a size in a table cell: as Bytes but without the space, so that
// a column stays one field for awk and cut ("2.0MiB"), and "-" for zero
// or less (a size not reported).
func Size(n int64) string {
	if n <= 0 {
		return "-"
	}
	return cell(n)
}

// Rate renders bytes per second: "4.1 MiB/s".
func Rate(bytesPerSecond float64) string {
	return Bytes(int64(bytesPerSecond)) + "/s"
}

// Progress is "12.3 MiB / 27.1 MiB (45%), 4.1 MiB/s, ETA 4s"; without a
// known total, bytes and rate only.
func Progress(done, total int64, elapsed time.Duration) string {
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	txt := Bytes(done)
	if total > 0 {
		pct := min(100, 100*float64(done)/float64(total))
		txt += fmt.Sprintf(" / %s (%.0f%%)", Bytes(total), pct)
	}
	txt += ", " + Rate(rate)
	if total > 0 && rate > 0 && done < total {
		eta := time.Duration(float64(total-done) / rate * float64(time.Second))
		txt += ", ETA " + eta.Round(time.Second).String()
	}
	return txt
}

// Age is a kubectl-style age of t at now ("45s", "5m", "2d"); "-" for a
// zero time. A time in the future is "0s".
func Age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	return duration.HumanDuration(d)
}

// Lag is a lag in entries, "?" when unknown (nil): an unknown lag is
// never shown as 0.
func Lag(l *int64) string {
	if l == nil {
		return "?"
	}
	return strconv.FormatInt(*l, 10)
}

// WALLag is a lag in bytes of WAL in a table cell ("0B", "6.4MiB"), "?"
// when unknown (nil); a negative lag (a member ahead of the leader, a
// forked history) keeps its sign.
func WALLag(l *int64) string {
	switch {
	case l == nil:
		return "?"
	case *l < 0:
		return "-" + cell(-*l)
	}
	return cell(*l)
}

// cell is a byte count as Bytes words it, without the space.
func cell(n int64) string { return strings.Replace(model.BytesIEC(n), " ", "", 1) }

// LSN prints a WAL position (bytes) as PostgreSQL prints an LSN: the high
// and low 32 bits in hex, "0/5000060".
func LSN(pos uint64) string {
	return strings.ToUpper(strconv.FormatUint(pos>>32, 16) + "/" + strconv.FormatUint(pos&0xFFFFFFFF, 16))
}
