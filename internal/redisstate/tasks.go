package redisstate

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowdrop/gateway/internal/mcptasks"
)

// Tasks is the MCP task records of a fleet: each record one Redis string
// (ns + "t:" + id) that expires with the task, and each owner's live task
// ids a sorted set (ns + "o:" + owner) scored by expiry, pruned of expired
// ids on every write and read, which bounds an owner's tasks
// (mcptasks.MaxPerOwner) in one atomic script. That script (and List's
// MGET) spans a record and its owner's set, so every key of the store is
// in one hash slot — one shard of a Cluster; task records are few and
// small.
type Tasks struct {
	c  *Client
	ns string
}

// Tasks returns the store under namespace ns (e.g. "flowdrop:{task}:").
// The keys' hash slot is ns's hash tag; an ns without one gets "{task}:"
// appended.
func (c *Client) Tasks(ns string) *Tasks {
	if !hasHashTag(ns) {
		ns += "{task}:"
	}
	return &Tasks{c: c, ns: ns}
}

// hasHashTag reports whether key has a non-empty {…}, the part Redis
// Cluster hashes instead of the whole key.
func hasHashTag(key string) bool {
	i := strings.IndexByte(key, '{')
	return i >= 0 && strings.IndexByte(key[i+1:], '}') > 0
}

var _ mcptasks.Store = (*Tasks)(nil)

func (s *Tasks) cmdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.c.timeout)
}

// putScript: KEYS[1] the record, KEYS[2] the owner's set; ARGV[1] the
// record, ARGV[2] its expiry (Unix ms), ARGV[3] now (Unix ms), ARGV[4] the
// id, ARGV[5] the owner's bound. 0: the owner is full.
var putScript = redis.NewScript(`
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", ARGV[3])
if redis.call("ZSCORE", KEYS[2], ARGV[4]) == false and redis.call("ZCARD", KEYS[2]) >= tonumber(ARGV[5]) then return 0 end
local ttl = tonumber(ARGV[2]) - tonumber(ARGV[3])
if ttl < 1 then ttl = 1 end
redis.call("SET", KEYS[1], ARGV[1], "PX", ttl)
redis.call("ZADD", KEYS[2], ARGV[2], ARGV[4])
if redis.call("PTTL", KEYS[2]) < ttl then redis.call("PEXPIRE", KEYS[2], ttl) end
return 1
`)

func (s *Tasks) Put(ctx context.Context, id string, r mcptasks.Record) error {
	if err := r.Check(); err != nil {
		return err
	}
	b, err := mcptasks.Encode(r)
	if err != nil {
		return err
	}
	ctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	ok, err := putScript.Run(ctx, s.c.rdb, []string{s.ns + "t:" + id, s.ns + "o:" + r.Owner},
		b, r.Expires, time.Now().UnixMilli(), id, mcptasks.MaxPerOwner).Int()
	if err != nil {
		return err
	}
	if ok == 0 {
		return mcptasks.ErrFull
	}
	return nil
}

func (s *Tasks) Get(ctx context.Context, id string) (mcptasks.Record, bool, error) {
	ctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	b, err := s.c.rdb.Get(ctx, s.ns+"t:"+id).Bytes()
	if errors.Is(err, redis.Nil) {
		return mcptasks.Record{}, false, nil
	}
	if err != nil {
		return mcptasks.Record{}, false, err
	}
	r, err := mcptasks.Decode(b)
	if err != nil {
		return mcptasks.Record{}, false, err
	}
	return r, r.Expires > time.Now().UnixMilli(), nil
}

func (s *Tasks) List(ctx context.Context, owner string) ([]mcptasks.Entry, error) {
	ctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	set := s.ns + "o:" + owner
	now := time.Now().UnixMilli()
	if err := s.c.rdb.ZRemRangeByScore(ctx, set, "-inf", "("+strconv.FormatInt(now, 10)).Err(); err != nil {
		return nil, err
	}
	ids, err := s.c.rdb.ZRange(ctx, set, 0, mcptasks.MaxPerOwner-1).Result()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.ns + "t:" + id
	}
	vals, err := s.c.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	out := make([]mcptasks.Entry, 0, len(ids))
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue // gone (deleted, expired)
		}
		r, err := mcptasks.Decode([]byte(str))
		if err != nil || r.Owner != owner || r.Expires <= now {
			continue
		}
		out = append(out, mcptasks.Entry{ID: ids[i], Record: r})
	}
	return out, nil
}

func (s *Tasks) Delete(ctx context.Context, id string) error {
	r, ok, err := s.Get(ctx, id)
	if err != nil || !ok {
		return err
	}
	ctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	_, err = s.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.ns+"t:"+id)
		p.ZRem(ctx, s.ns+"o:"+r.Owner, id)
		return nil
	})
	return err
}

// maxUpdateTries bounds Update's optimistic retries under contention.
const maxUpdateTries = 16

// Update is a WATCH/MULTI transaction on the record's key: f's change is
// written only when no other write came between (else it runs again),
// with the key's own expiry kept.
func (s *Tasks) Update(ctx context.Context, id string, f func(*mcptasks.Record) error) (mcptasks.Record, bool, error) {
	ctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	key := s.ns + "t:" + id
	var out mcptasks.Record
	var found bool
	for range maxUpdateTries {
		err := s.c.rdb.Watch(ctx, func(tx *redis.Tx) error {
			b, err := tx.Get(ctx, key).Bytes()
			if errors.Is(err, redis.Nil) {
				found = false
				return nil
			}
			if err != nil {
				return err
			}
			r, err := mcptasks.Decode(b)
			if err != nil {
				return err
			}
			if found = r.Expires > time.Now().UnixMilli(); !found {
				return nil
			}
			owner, expires := r.Owner, r.Expires
			if err := f(&r); err != nil {
				return err
			}
			r.Owner, r.Expires = owner, expires
			if err := r.Check(); err != nil {
				return err
			}
			nb, err := mcptasks.Encode(r)
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.SetArgs(ctx, key, nb, redis.SetArgs{KeepTTL: true})
				return nil
			})
			out = r
			return err
		}, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil || !found {
			return mcptasks.Record{}, found, err
		}
		return out, true, nil
	}
	return mcptasks.Record{}, true, errors.New("task record: too many concurrent updates")
}
