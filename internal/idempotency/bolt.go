package idempotency

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultSweepInterval is how often a Bolt store deletes expired entries.
const DefaultSweepInterval = time.Minute

var boltBucket = []byte("idempotency")

// Bolt is a Store in a bbolt file: entries survive a restart, TTLs are
// checked on every read and expired entries are deleted by a periodic
// sweep. The file is locked by one process, so the waiters are this
// process's and are woken directly.
type Bolt struct {
	db   *bolt.DB
	now  func() time.Time
	mu   sync.Mutex // guards waiters
	wait waiters

	stop chan struct{}
	done chan struct{}
}

// OpenBolt opens (or creates) the file at path and sweeps it every
// sweepEvery (0: DefaultSweepInterval).
func OpenBolt(path string, sweepEvery time.Duration) (*Bolt, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("idempotency store %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("idempotency store %s: %w", path, err)
	}
	if sweepEvery <= 0 {
		sweepEvery = DefaultSweepInterval
	}
	b := &Bolt{db: db, now: time.Now, stop: make(chan struct{}), done: make(chan struct{})}
	go b.sweepLoop(sweepEvery)
	return b, nil
}

// record is the stored value: expiry (unix ns), then Encode's form.
func record(e Entry, expires time.Time) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(expires.UnixNano())), Encode(e)...)
}

// read decodes v, reporting false when it has expired.
func (b *Bolt) read(v []byte) (Entry, bool, error) {
	if len(v) < 8 {
		return Entry{}, false, errCorrupt
	}
	if !b.now().Before(time.Unix(0, int64(binary.BigEndian.Uint64(v)))) {
		return Entry{}, false, nil
	}
	e, err := Decode(v[8:])
	return e, err == nil, err
}

func (b *Bolt) Claim(_ context.Context, key string, hash Hash, token Token, lease time.Duration) (existing Entry, claimed bool, err error) {
	err = b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(boltBucket)
		if v := bk.Get([]byte(key)); v != nil {
			e, live, err := b.read(v)
			if err != nil {
				return err
			}
			if live {
				existing = e
				return nil
			}
		}
		claimed = true
		return bk.Put([]byte(key), record(Entry{State: Running, ArgsHash: hash, Token: token}, b.now().Add(lease)))
	})
	return existing, claimed && err == nil, err
}

func (b *Bolt) Complete(_ context.Context, key string, token Token, e Entry, ttl time.Duration) error {
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(boltBucket)
		if _, err := b.heldOrFree(bk, key, token); err != nil {
			return err
		}
		return bk.Put([]byte(key), record(e, b.now().Add(ttl)))
	})
	b.wake(key)
	return err
}

func (b *Bolt) Release(_ context.Context, key string, token Token) error {
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(boltBucket)
		held, err := b.heldOrFree(bk, key, token)
		if err != nil || !held {
			return err
		}
		return bk.Delete([]byte(key))
	})
	b.wake(key)
	return err
}

// heldOrFree reports whether key holds token's claim (held) or no live
// entry (free: false, nil); another live entry is ErrClaimLost.
func (b *Bolt) heldOrFree(bk *bolt.Bucket, key string, token Token) (held bool, _ error) {
	v := bk.Get([]byte(key))
	if v == nil {
		return false, nil
	}
	e, live, err := b.read(v)
	switch {
	case err != nil:
		return false, err
	case !live:
		return false, nil
	case !e.Holds(token):
		return false, ErrClaimLost
	}
	return true, nil
}

func (b *Bolt) wake(key string) {
	b.mu.Lock()
	b.wait.wake(key)
	b.mu.Unlock()
}

// waitRecheck bounds a wait between reads: a claim whose lease ran out
// wakes nobody.
const waitRecheck = time.Second

func (b *Bolt) Wait(ctx context.Context, key string) (Entry, bool, error) {
	for {
		b.mu.Lock()
		woken := b.wait.watch(key)
		b.mu.Unlock()
		var (
			e    Entry
			live bool
		)
		err := b.db.View(func(tx *bolt.Tx) error {
			v := tx.Bucket(boltBucket).Get([]byte(key))
			if v == nil {
				return nil
			}
			var err error
			e, live, err = b.read(v)
			return err
		})
		if err != nil || !live {
			return Entry{}, false, err
		}
		if e.State != Running {
			return e, true, nil
		}
		t := time.NewTimer(waitRecheck)
		select {
		case <-woken:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Entry{}, false, ctx.Err()
		}
		t.Stop()
	}
}

// Sweep deletes every expired entry; it returns how many.
func (b *Bolt) Sweep() (int, error) {
	n := 0
	err := b.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(boltBucket).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if _, live, err := b.read(v); err == nil && live {
				continue
			}
			if err := c.Delete(); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

func (b *Bolt) sweepLoop(every time.Duration) {
	defer close(b.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.Sweep() // a failed sweep is retried next tick; reads check TTLs anyway
		}
	}
}

// Len is the number of entries in the file, expired or not.
func (b *Bolt) Len() int {
	n := 0
	b.db.View(func(tx *bolt.Tx) error { n = tx.Bucket(boltBucket).Stats().KeyN; return nil })
	return n
}

func (b *Bolt) Close() error {
	close(b.stop)
	<-b.done
	return b.db.Close()
}
