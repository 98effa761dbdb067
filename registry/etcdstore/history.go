package etcdstore

import (
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/internal/toolcodec"
)

// A tool's history is a key per definition, "<prefix>/versions/NAME/SEQ",
// written in the tool's own transaction, so etcd's compaction loses
// nothing. SEQ (zero-padded, so key order is write order) is the store
// revision read before the write: the write's pin on the tool's revision
// makes it grow with every write of the tool. The entry's revision is its
// key's ModRevision, the tool's.

func (s *Store) historyPrefix(name string) string { return s.versions + name + "/" }

func (s *Store) historyKey(name string, seq int64) string {
	return fmt.Sprintf("%s%020d", s.historyPrefix(name), seq)
}

// readHistoryKeys reads, at one revision, the tool's current revision
// (0: none), its history's keys oldest first, and that revision.
func (s *Store) readHistoryKeys(ctx context.Context, name string) (cur int64, hist []*mvccpb.KeyValue, at int64, err error) {
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpGet(s.key(name), clientv3.WithKeysOnly()),
		clientv3.OpGet(s.historyPrefix(name), clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)),
	).Commit()
	if err != nil {
		return 0, nil, 0, err
	}
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) == 1 {
		cur = kvs[0].ModRevision
	}
	return cur, resp.Responses[1].GetResponseRange().GetKvs(), resp.Header.Revision, nil
}

// History returns the tool's kept definitions, newest first.
func (s *Store) History(ctx context.Context, name string, limit int) ([]registry.ToolRevision, error) {
	if err := registry.ValidateName(name); err != nil {
		return nil, nil // no such tool can have been written
	}
	limit = registry.HistoryLimit(limit)
	var out []registry.ToolRevision
	err := s.call(ctx, fmt.Sprintf("history %q", name), func(ctx context.Context) error {
		out = out[:0]
		resp, err := s.cli.Get(ctx, s.historyPrefix(name), clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(int64(limit)))
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			rev, err := toolcodec.DecodeRevision(kv.Value)
			if err != nil {
				return fmt.Errorf("key %q: %w", kv.Key, err)
			}
			if rev.Tool.Name != name || !strings.HasPrefix(string(kv.Key), s.historyPrefix(name)) {
				return fmt.Errorf("key %q holds tool %q", kv.Key, rev.Tool.Name)
			}
			rev.Revision, rev.Tool.Revision = kv.ModRevision, kv.ModRevision
			out = append(out, rev)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
