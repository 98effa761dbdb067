package toolcodec

import (
	"crypto/sha256"
	"runtime"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
)

// A Loader decodes a store's whole list (a cold load): the tools on all
// CPUs, and each distinct schema once — tools with byte-identical stored
// schemas (one generator's many operations, one upstream's many tools)
// share one *structpb.Struct, which the registry.Store contract already
// asks readers to treat as read-only. Decoding was a cold load's largest
// cost and ran on one CPU inside the store's read (BENCHMARKS.md, "Registry
// at 100,000 tools"). A Loader is for one list; it keeps a hash and a
// pointer per distinct schema until dropped.
type Loader struct {
	sh schemas
}

// NewLoader returns a Loader for one list.
func NewLoader() *Loader { return &Loader{sh: schemas{seen: map[[sha256.Size]byte]*structpb.Struct{}}} }

// serialBelow is the batch size under which DecodeAll decodes on the
// calling goroutine: starting workers costs more than it saves.
const serialBelow = 64

// DecodeAll decodes vals[i] into out[i], on all CPUs. check is called once
// per value (concurrently) with Decode's result for it, which it may
// amend (etcd sets the revision from the key); an error it returns is the
// list's error — the one of the lowest index when several fail, so a load
// fails the same way every time.
func (l *Loader) DecodeAll(vals [][]byte, check func(i int, t *registry.Tool, err error) error) ([]registry.Tool, error) {
	out := make([]registry.Tool, len(vals))
	errs := make([]error, len(vals))
	one := func(i int) {
		t, err := decode(vals[i], &l.sh)
		if err = check(i, &t, err); err != nil {
			errs[i] = err
			return
		}
		out[i] = t
	}
	workers := min(runtime.GOMAXPROCS(0), len(vals)/serialBelow)
	if workers <= 1 {
		for i := range vals {
			one(i)
		}
	} else {
		var (
			next atomic.Int64
			wg   sync.WaitGroup
		)
		for range workers {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= len(vals) {
						return
					}
					one(i)
				}
			})
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// schemas shares decoded schemas by the SHA-256 of their stored bytes
// (nil: every schema decoded on its own).
type schemas struct {
	mu   sync.Mutex
	seen map[[sha256.Size]byte]*structpb.Struct
}

func (sh *schemas) decode(raw []byte) (*structpb.Struct, error) {
	if sh == nil {
		return decodeStruct(raw)
	}
	key := sha256.Sum256(raw)
	sh.mu.Lock()
	s, ok := sh.seen[key]
	sh.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := decodeStruct(raw)
	if err != nil {
		return nil, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if first, ok := sh.seen[key]; ok {
		return first, nil // another worker decoded it meanwhile
	}
	sh.seen[key] = s
	return s, nil
}
