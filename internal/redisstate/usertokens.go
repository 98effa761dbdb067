package redisstate

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// UserTokens is the user-consent identity mode's token store of a fleet:
// one Redis hash (namespace + "tokens"), field "client NUL subject", value
// the token as the gateway sealed it (AES-GCM: Redis never holds a token in
// the clear). A put that would add a pair beyond the bound is refused in
// the same script that counts (HLEN), so replicas cannot overshoot it.
type UserTokens struct {
	c   *Client
	key string
}

// UserTokens returns the store under namespace ns (e.g. "flowdrop:usertokens:").
func (c *Client) UserTokens(ns string) *UserTokens { return &UserTokens{c: c, key: ns + "tokens"} }

// The store's outcomes a caller tells apart.
var (
	ErrNoUserToken    = errors.New("no token stored")
	ErrUserTokensFull = errors.New("the token store holds its maximum of tokens")
)

// userTokenPutScript sets field ARGV[1] to ARGV[2] unless it is new and the hash
// already has ARGV[3] fields: 1 stored, 0 full.
var userTokenPutScript = redis.NewScript(`
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 and redis.call("HLEN", KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
return 1
`)

func field(subject, client string) string { return client + "\x00" + subject }

func (s *UserTokens) Get(ctx context.Context, subject, client string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	v, err := s.c.rdb.HGet(ctx, s.key, field(subject, client)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNoUserToken
	}
	return v, err
}

func (s *UserTokens) Put(ctx context.Context, subject, client string, sealed []byte, max int) error {
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	n, err := userTokenPutScript.Run(ctx, s.c.rdb, []string{s.key}, field(subject, client), sealed, max).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrUserTokensFull
	}
	return nil
}

// Delete removes subject's token at client, or at every client when
// client is "" (a scan of the hash: revocation is rare).
func (s *UserTokens) Delete(ctx context.Context, subject, client string) (int, error) {
	if client != "" {
		ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
		defer cancel()
		n, err := s.c.rdb.HDel(ctx, s.key, field(subject, client)).Result()
		return int(n), err
	}
	var fields []string
	err := s.scan(ctx, func(f string) bool {
		if _, sub, ok := strings.Cut(f, "\x00"); ok && sub == subject {
			fields = append(fields, f)
		}
		return true
	})
	if err != nil || len(fields) == 0 {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout)
	defer cancel()
	n, err := s.c.rdb.HDel(ctx, s.key, fields...).Result()
	return int(n), err
}

// List is the stored pairs' fields as (client, subject), at most limit.
func (s *UserTokens) List(ctx context.Context, limit int) ([][2]string, error) {
	var out [][2]string
	err := s.scan(ctx, func(f string) bool {
		if client, sub, ok := strings.Cut(f, "\x00"); ok {
			out = append(out, [2]string{client, sub})
		}
		return len(out) < limit
	})
	return out, err
}

// scan calls f with each field until it returns false; each HSCAN page
// has its own timeout.
func (s *UserTokens) scan(ctx context.Context, f func(string) bool) error {
	var cursor uint64
	for {
		cctx, cancel := context.WithTimeout(ctx, s.c.timeout)
		kv, next, err := s.c.rdb.HScan(cctx, s.key, cursor, "*", 500).Result()
		cancel()
		if err != nil {
			return err
		}
		for i := 0; i < len(kv); i += 2 {
			if !f(kv[i]) {
				return nil
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
