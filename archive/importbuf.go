package archive

import "sync"

// importBuf lends Import a buffer to decompress a zstd record from a peer
// into, for the time the record is checked and stored: every copy a
// replica imports otherwise allocated its uncompressed size anew (about
// 50 KB a page, the heap's largest churn while a ring replicates).
// Buffers of at most maxPooledImport bytes go back to a pool on release;
// larger records get a buffer of their own.
type importBuf struct {
	b *[]byte
}

// maxPooledImport is the largest buffer importBufs keeps.
const maxPooledImport = 1 << 20

var importBufs sync.Pool // of *[]byte

// take returns an empty slice with room for n bytes, borrowed from the
// pool when n fits it. A nil importBuf lends nothing (nil).
func (ib *importBuf) take(n int) []byte {
	if ib == nil || n > maxPooledImport {
		return nil
	}
	if ib.b == nil {
		if p, ok := importBufs.Get().(*[]byte); ok {
			ib.b = p
		} else {
			ib.b = new([]byte)
		}
	}
	if cap(*ib.b) < n {
		*ib.b = make([]byte, 0, max(n, 64<<10))
	}
	return (*ib.b)[:0]
}

// release gives the buffer back: nothing decoded into it may be used
// after.
func (ib *importBuf) release() {
	if ib == nil || ib.b == nil {
		return
	}
	importBufs.Put(ib.b)
	ib.b = nil
}
