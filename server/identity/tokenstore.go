package identity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TokenStore keeps the user-consent mode's per-user tokens, one per
// (subject, OAuth client), as the sealed bytes Consent gives it: a store
// never sees a token in the clear, so neither does its file or Redis.
// Implementations: BoltTokenStore (one node) and redisstate's (a fleet).
type TokenStore interface {
	// Get is the sealed token of (subject, client); ErrNoToken when none.
	Get(ctx context.Context, subject, client string) ([]byte, error)
	// Put stores it, replacing any; a new pair beyond max stored pairs is
	// refused with ErrStoreFull (a replaced one never is).
	Put(ctx context.Context, subject, client string, sealed []byte, max int) error
	// Delete removes the tokens of subject (every client when client is
	// "") and says how many it removed.
	Delete(ctx context.Context, subject, client string) (int, error)
	// List is every stored pair, subject and client only, at most limit.
	List(ctx context.Context, limit int) ([]TokenEntry, error)
}

// TokenEntry names a stored token: whose, for which OAuth client.
type TokenEntry struct{ Subject, Client string }

// The stores' errors a caller tells apart.
var (
	ErrNoToken   = errors.New("no token stored")
	ErrStoreFull = errors.New("the token store holds its maximum of tokens")
)

// tokenKey is a pair's key: the client, a NUL, the subject. Neither can
// hold a NUL (Consent refuses such a subject; client names are checked).
func tokenKey(subject, client string) []byte {
	return []byte(client + "\x00" + subject)
}

func splitTokenKey(k []byte) (TokenEntry, bool) {
	client, subject, ok := bytes.Cut(k, []byte{0})
	return TokenEntry{Subject: string(subject), Client: string(client)}, ok
}

// BoltTokenStore is a TokenStore in a bbolt file of its own.
type BoltTokenStore struct{ db *bolt.DB }

var boltTokenBucket = []byte("user_tokens/v1")

// OpenBoltTokenStore opens (creating) the file, 0600. It waits at most a
// second for another process's lock on it: two gateways must not share it.
func OpenBoltTokenStore(path string) (*BoltTokenStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("user token store %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltTokenBucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("user token store %s: %w", path, err)
	}
	return &BoltTokenStore{db: db}, nil
}

// Close closes the file.
func (s *BoltTokenStore) Close() error { return s.db.Close() }

func (s *BoltTokenStore) Get(_ context.Context, subject, client string) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(boltTokenBucket).Get(tokenKey(subject, client))
		if v == nil {
			return ErrNoToken
		}
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}

func (s *BoltTokenStore) Put(_ context.Context, subject, client string, sealed []byte, max int) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltTokenBucket)
		k := tokenKey(subject, client)
		if b.Get(k) == nil && b.Stats().KeyN >= max {
			return ErrStoreFull
		}
		return b.Put(k, sealed)
	})
}

func (s *BoltTokenStore) Delete(_ context.Context, subject, client string) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltTokenBucket)
		if client != "" {
			k := tokenKey(subject, client)
			if b.Get(k) != nil {
				n = 1
				return b.Delete(k)
			}
			return nil
		}
		var keys [][]byte
		err := b.ForEach(func(k, _ []byte) error {
			if e, ok := splitTokenKey(k); ok && e.Subject == subject {
				keys = append(keys, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	return n, err
}

func (s *BoltTokenStore) List(_ context.Context, limit int) ([]TokenEntry, error) {
	var out []TokenEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(boltTokenBucket).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
			if e, ok := splitTokenKey(k); ok {
				out = append(out, e)
			}
		}
		return nil
	})
	return out, err
}

// validClientName is what an OAuth client's name may be: it keys the
// store and appears in URLs and flowdropctl's output.
func validClientName(s string) bool {
	return s != "" && len(s) <= 64 && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == ""
}
