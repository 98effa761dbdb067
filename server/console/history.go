package console

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/flowdrop/gateway/registry"
)

// historyTimeout bounds the store read behind a tool page's revisions: a
// store that does not answer leaves the rest of the page served.
const historyTimeout = 3 * time.Second

// maxMembersShown bounds the changed schema members one revision lists;
// maxDiffDepth how deep the comparison walks (a hostile schema's nesting
// costs no more).
const (
	maxMembersShown = 40
	maxDiffDepth    = 32
)

// revisionRow is one kept definition and what it changed from the one
// before it.
type revisionRow struct {
	Revision int64
	Time     time.Time
	Writer   string
	// First: the oldest kept definition, nothing to compare with.
	First bool
	// Changes are registry.ChangeKinds' kinds, and "backend", "timeout",
	// "labels", "limits" for the operator's own fields.
	Changes []string
	Notes   []registry.CompatNote
	// Members are the input schema's changed members; MoreMembers were
	// not listed.
	Members     []memberChange
	MoreMembers int
}

// memberChange is one schema member "added", "removed" or "changed", by
// JSON Pointer.
type memberChange struct{ Change, Pointer string }

// history reads the tool's kept revisions, newest first, each with its
// difference from the one before; note says why there are none.
func (c *Console) history(ctx context.Context, name string) (rows []revisionRow, note string) {
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	revs, err := c.cfg.Registry.History(ctx, name, registry.HistoryDepth)
	switch {
	case errors.Is(err, registry.ErrHistoryNotKept):
		return nil, "the registry's store keeps no revision history"
	case err != nil:
		// The cause may name the store's address: the log has it, the page does not.
		c.cfg.Log.WarnContext(ctx, "console: revision history unreadable", "tool", name, "error", err.Error())
		return nil, "the revision history could not be read from the store now (the gateway's log says why)"
	case len(revs) == 0:
		return nil, "no revision kept"
	}
	rows = make([]revisionRow, len(revs))
	for i, rv := range revs {
		rows[i] = revisionRow{Revision: rv.Revision, Time: rv.Time, Writer: rv.Writer}
		if i == len(revs)-1 {
			rows[i].First = true
			continue
		}
		prev := revs[i+1].Tool
		rows[i].Changes, rows[i].Notes = registry.ChangeKinds(prev, registry.PendingChange{Definition: rv.Tool.Definition()})
		rows[i].Changes = append(rows[i].Changes, operatorChanges(prev, rv.Tool)...)
		if !proto.Equal(prev.InputSchema, rv.Tool.InputSchema) {
			var d memberDiff
			d.walk(prev.InputSchema.AsMap(), rv.Tool.InputSchema.AsMap(), "", 0)
			rows[i].Members, rows[i].MoreMembers = d.shown, d.more
		}
	}
	return rows, ""
}

// operatorChanges names the changed fields an admin sets that are not
// the upstream-defined definition; the values are not shown (a backend's
// target is an address).
func operatorChanges(old, next registry.Tool) []string {
	var out []string
	if old.Target() != next.Target() || !reflect.DeepEqual(old.Spec, next.Spec) {
		out = append(out, "backend")
	}
	if old.Timeout != next.Timeout {
		out = append(out, "timeout")
	}
	if !reflect.DeepEqual(old.Labels, next.Labels) {
		out = append(out, "labels")
	}
	if old.MaxResultBytes != next.MaxResultBytes || old.OnInvalidOutput != next.OnInvalidOutput {
		out = append(out, "limits")
	}
	return out
}

// memberDiff lists, by JSON Pointer, the members of two schemas that
// differ: objects are walked member by member, anything else compared
// whole.
type memberDiff struct {
	shown []memberChange
	more  int
}

func (d *memberDiff) add(change, ptr string) {
	if len(d.shown) == maxMembersShown {
		d.more++
		return
	}
	d.shown = append(d.shown, memberChange{Change: change, Pointer: cmpOr(ptr, "/")})
}

func (d *memberDiff) walk(old, next map[string]any, ptr string, depth int) {
	keys := make([]string, 0, len(old)+len(next))
	for k := range old {
		keys = append(keys, k)
	}
	for k := range next {
		if _, ok := old[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := ptr + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
		o, inOld := old[k]
		n, inNext := next[k]
		switch {
		case !inOld:
			d.add("added", p)
		case !inNext:
			d.add("removed", p)
		default:
			om, ok1 := o.(map[string]any)
			nm, ok2 := n.(map[string]any)
			if ok1 && ok2 && depth < maxDiffDepth {
				d.walk(om, nm, p, depth+1)
			} else if !reflect.DeepEqual(o, n) {
				d.add("changed", p)
			}
		}
	}
}
