package agent

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// ReceivePool returns the buffer pool hactl-capture installs as gRPC's
// default (experimental.SetDefaultBufferPool, at its start): gRPC's proto
// codec copies each message it receives into a buffer from the default
// pool before decoding it, and its transport reads frames into them.
// gRPC's own pool zeroes a pooled buffer's whole capacity on every Get; a
// snapshot arrives as one 32 KiB message after another, so a capture spent
// about a seventh of its CPU clearing buffers that the very next copy
// overwrites (perf of hactl-capture, 2026-12-03). gRPC fills exactly the
// length it asks for before reading a buffer and never reads past it, so
// this pool hands buffers out as they are.
func ReceivePool() mem.BufferPool { return receivePool }

var receivePool = newDirtyPool()

const (
	minPoolShift = 9  // 512 B, the smallest pooled capacity
	maxPoolShift = 22 // 4 MiB, the largest: etcd's default request limit is 1.5 MiB
)

// dirtyPool keeps buffers in power-of-two tiers of capacity, from
// 1<<minPoolShift to 1<<maxPoolShift; larger ones are neither pooled nor
// kept.
type dirtyPool struct {
	tiers [maxPoolShift - minPoolShift + 1]sync.Pool
}

func newDirtyPool() *dirtyPool { return &dirtyPool{} }

// tier is the index of the smallest tier holding length bytes, or -1 when
// none does.
func tier(length int) int {
	if length > 1<<maxPoolShift {
		return -1
	}
	shift := 0
	if length > 1 {
		shift = bits.Len(uint(length - 1))
	}
	return max(shift, minPoolShift) - minPoolShift
}

// Get implements mem.BufferPool: a buffer of length bytes whose contents
// are whatever it held before.
func (p *dirtyPool) Get(length int) *[]byte {
	i := tier(length)
	if i < 0 {
		b := make([]byte, length)
		return &b
	}
	if b, ok := p.tiers[i].Get().(*[]byte); ok {
		*b = (*b)[:length]
		return b
	}
	b := make([]byte, length, 1<<(i+minPoolShift))
	return &b
}

// Put implements mem.BufferPool: buffers of a tier's exact capacity are
// kept, others dropped.
func (p *dirtyPool) Put(b *[]byte) {
	c := cap(*b)
	if c < 1<<minPoolShift || c > 1<<maxPoolShift || c&(c-1) != 0 {
		return
	}
	p.tiers[bits.Len(uint(c))-1-minPoolShift].Put(b)
}
