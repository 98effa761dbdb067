package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// maxCatalogRows bounds the catalog page's rows; maxQuery the filter.
const (
	maxCatalogRows = 500
	maxQuery       = 200
)

type catalogData struct {
	Query     string
	Tools     []catalogRow
	Total     int
	Truncated bool
}

type catalogRow struct {
	Name, Kind, Description string
	Revision                int64
	Pending                 bool
}

// catalog lists the tools whose name or description holds the query
// (case-insensitive), in name order.
func (c *Console) catalog(w http.ResponseWriter, r *http.Request, ses session) {
	q := r.URL.Query().Get("q")
	if len(q) > maxQuery {
		q = q[:maxQuery]
	}
	needle := strings.ToLower(q)
	entries := c.cfg.Registry.Snapshot().List()
	d := catalogData{Query: q, Total: len(entries)}
	for _, e := range entries {
		t := &e.Tool
		if needle != "" && !strings.Contains(strings.ToLower(t.Name), needle) && !strings.Contains(strings.ToLower(t.Description), needle) {
			continue
		}
		if len(d.Tools) == maxCatalogRows {
			d.Truncated = true
			break
		}
		kind, _ := registry.OperatorView(t)
		d.Tools = append(d.Tools, catalogRow{Name: t.Name, Kind: kind, Description: firstLine(t.Description), Revision: t.Revision, Pending: t.Pending != nil})
	}
	c.render(w, http.StatusOK, pages.catalog, ses.view("Catalog", "tools", d))
}

// firstLine is a description's first line, at most 200 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

type toolData struct {
	Name, Kind, Backend, Description string
	Revision                         int64
	Edited, Pending                  bool
	Schema, OutputSchema             string
	Writes                           []auditLine
	AuditNote                        string
	// History is the store's kept revisions, newest first (history.go);
	// HistoryNote says why there are none.
	History                   []revisionRow
	HistoryNote               string
	HistoryDepth              int
	Arguments, IdempotencyKey string
	Result                    *tryResult
	// MayInvoke shows the Invoke action; Invoked is its answer.
	MayInvoke bool
	Invoked   *invokeResult
}

// tryResult is the try-it panel's answer.
type tryResult struct {
	Refusal    string
	Violations []violation
	Repairs    []repairRow
	Skipped    []string
	Normalized string
}

type violation struct{ Pointer, Message string }
type repairRow struct{ Path, Kind string }

func (c *Console) tool(w http.ResponseWriter, r *http.Request, ses session) {
	c.toolPageWith(w, r, ses, "", "", nil, nil)
}

// try shows the try-it panel's preview of the pasted arguments.
func (c *Console) try(w http.ResponseWriter, r *http.Request, ses session) {
	text := r.PostFormValue("arguments")
	e, ok := c.cfg.Registry.Lookup(r.PathValue("name"))
	if !ok {
		c.fail(w, r, &ses, http.StatusNotFound, "no such tool")
		return
	}
	pv := c.cfg.Preview(r.Context(), e, text)
	res := &tryResult{}
	if pv.Refusal != nil {
		res.Refusal = pv.Refusal.Message
		for _, v := range pv.Refusal.Violations {
			res.Violations = append(res.Violations, violation{Pointer: cmpOr(v.Pointer, "/"), Message: v.Message})
		}
	}
	for _, rp := range pv.Report.Repairs {
		kind := rp.Kind.String()
		if rp.Passes > 1 {
			kind += fmt.Sprintf(" (%d passes)", rp.Passes)
		}
		res.Repairs = append(res.Repairs, repairRow{Path: cmpOr(rp.Path, "/"), Kind: kind})
	}
	for _, s := range pv.Report.Skipped {
		res.Skipped = append(res.Skipped, fmt.Sprintf("%s declared %s, left as a string: %s", s.Path, s.Declared, s.Reason))
	}
	if pv.Normalized != nil && (pv.Refusal == nil || pv.Refusal.Kind == pipeline.KindValidation) {
		res.Normalized = prettyStruct(pv.Normalized)
	}
	c.toolPageWith(w, r, ses, text, r.PostFormValue("idempotency_key"), res, nil)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// toolPageWith is the tool's page with the try-it form as posted (args,
// key) and the answer of Normalize (res) or Invoke (inv).
func (c *Console) toolPageWith(w http.ResponseWriter, r *http.Request, ses session, args, key string, res *tryResult, inv *invokeResult) {
	e, ok := c.cfg.Registry.Lookup(r.PathValue("name"))
	if !ok {
		c.fail(w, r, &ses, http.StatusNotFound, "no such tool")
		return
	}
	t := &e.Tool
	kind, target := registry.OperatorView(t)
	d := toolData{Name: t.Name, Kind: kind, Description: t.Description, Revision: t.Revision, Edited: t.Edited(), Pending: t.Pending != nil,
		Schema: prettyStruct(t.InputSchema), Arguments: args, IdempotencyKey: key, Result: res, Invoked: inv,
		MayInvoke: c.mayInvoke(r.Context(), ses, t.Name)}
	if ses.admin {
		d.Backend = target
	}
	if t.OutputSchema != nil {
		d.OutputSchema = prettyStruct(t.OutputSchema)
	}
	if args == "" {
		d.Arguments = "{}"
	}
	tail, note := c.readAudit(auditFilter{Tool: t.Name, writesOnly: true})
	d.Writes, d.AuditNote = tail.Lines, note
	d.History, d.HistoryNote = c.history(r.Context(), t.Name)
	d.HistoryDepth = registry.HistoryDepth
	c.render(w, http.StatusOK, pages.tool, ses.view(t.Name, "tools", d))
}

// prettyStruct is s as indented JSON.
func prettyStruct(s *structpb.Struct) string {
	if s == nil {
		return ""
	}
	b, err := protojson.Marshal(s)
	if err != nil {
		return ""
	}
	// Compact, then Indent: protojson's spacing is unstable by design,
	// and re-encoding through any would escape <, > and & (what a try-it
	// user wants to see repaired).
	var compact, out bytes.Buffer
	if json.Compact(&compact, b) != nil || json.Indent(&out, compact.Bytes(), "", "  ") != nil {
		return string(b)
	}
	return out.String()
}
