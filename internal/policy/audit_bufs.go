package policy

import (
	"slices"
	"sync"
)

// The audit's byte buffers are recycled: under fail-closed audit every call
// encodes its arguments (SetArgs, SetArgsWire) and then its line (~1–3 KB
// together), and both are dead once the line is built and written. They
// come from one pool and go back when their use ends — the arguments once
// the caller has written the record (ReleaseArgs), the line once the sink
// wrote or dropped it — so a call's audit allocates neither. A buffer grown
// past maxPooledAuditBuf (a huge record) is left to the collector, so the
// pool holds no more than ordinary lines need.

// auditBuf holds a pooled buffer; the pointer travels with the bytes so
// putting it back allocates nothing.
type auditBuf struct{ b []byte }

// maxPooledAuditBuf is the largest buffer put back in the pool.
const maxPooledAuditBuf = 64 << 10

var auditBufs = sync.Pool{New: func() any { return &auditBuf{b: make([]byte, 0, 2048)} }}

// getAuditBuf returns an empty buffer with room for at least n bytes.
func getAuditBuf(n int) *auditBuf {
	ab := auditBufs.Get().(*auditBuf)
	ab.b = slices.Grow(ab.b[:0], n)
	return ab
}

// putAuditBuf recycles ab (nil is ignored); nothing may read its bytes after.
func putAuditBuf(ab *auditBuf) {
	if ab == nil || cap(ab.b) > maxPooledAuditBuf {
		return
	}
	ab.b = ab.b[:0]
	auditBufs.Put(ab)
}

// ReleaseArgs recycles the buffer SetArgs or SetArgsWire encoded the
// arguments into, and clears ArgsSent and ArgsRepaired. Call it once the
// record was handed to Write or WriteWait (both copy the arguments into the
// line before they return), and not while anything still reads the
// arguments. A record whose arguments were set directly is only cleared.
func (a *AuditRecord) ReleaseArgs() {
	ab := a.argsBuf
	a.ArgsSent, a.ArgsRepaired, a.argsEncoded, a.argsBuf = nil, nil, false, nil
	putAuditBuf(ab)
}
