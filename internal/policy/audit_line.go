package policy

import (
	"strconv"
	"time"
)

// appendLine writes the record as encoding/json writes it (MarshalJSON:
// the same members in the same order, the same omissions and escaping),
// without reflection or the second pass json.Marshal makes over a
// Marshaler's output; the arguments go in as SetArgs encoded them.
// audit_line_test.go holds it to json.Marshal.
func (a *AuditRecord) appendLine(b []byte) ([]byte, error) {
	str := func(b []byte, name, v string, omitEmpty bool) []byte {
		if omitEmpty && v == "" {
			return b
		}
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b, _ = appendQuoted(b, v, true)
		return b
	}
	// RFC 3339 is digits and "-:.TZ+": nothing to escape, so it is
	// formatted in place rather than into a string of its own.
	b = append(b, `{"time":"`...)
	b = a.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = str(b, "caller_subject", a.CallerSubject, false)
	b = str(b, "caller_method", a.CallerMethod, false)
	if len(a.CallerRoles) > 0 {
		b = append(b, `,"caller_roles":[`...)
		for i, r := range a.CallerRoles {
			if i > 0 {
				b = append(b, ',')
			}
			b, _ = appendQuoted(b, r, true)
		}
		b = append(b, ']')
	}
	b = str(b, "client", a.Client, true)
	b = str(b, "tool", a.Tool, false)
	b = str(b, "target", a.Target, true)
	b = str(b, "call_id", a.CallID, true)
	b = str(b, "decision", a.Decision, false)
	b = str(b, "reason", a.Reason, true)
	b = str(b, "rule", a.Rule, true)
	if len(a.Repairs) > 0 {
		b = append(b, `,"repairs":[`...)
		for i, r := range a.Repairs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"path":`...)
			b, _ = appendQuoted(b, r.Path, true)
			b = str(b, "kind", r.Kind, false)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = str(b, "validation", a.Validation, true)
	if len(a.Violations) > 0 {
		b = append(b, `,"violations":[`...)
		for i, v := range a.Violations {
			if i > 0 {
				b = append(b, ',')
			}
			b, _ = appendQuoted(b, v, true)
		}
		b = append(b, ']')
	}
	b = str(b, "backend_code", a.BackendCode, true)
	b = str(b, "identity_mode", a.IdentityMode, true)
	b = str(b, "identity_subject", a.IdentitySubject, true)
	b = append(b, `,"latency_ms":`...)
	b, err := appendJSONNumber(b, a.LatencyMS)
	if err != nil {
		return b, err
	}
	if len(a.ArgsSent) > 0 {
		b = append(b, `,"args_sent":`...)
		b = append(b, a.ArgsSent...)
	}
	if len(a.ArgsRepaired) > 0 {
		b = append(b, `,"args_repaired":`...)
		b = append(b, a.ArgsRepaired...)
	}
	if len(a.ShadowDenials) > 0 {
		b = append(b, `,"shadow_denials":[`...)
		for i, d := range a.ShadowDenials {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"reason":`...)
			b, _ = appendQuoted(b, d.Reason, true)
			b = str(b, "rule", d.Rule, true)
			b = str(b, "message", d.Message, false)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = str(b, "idempotency_key", a.IdempotencyKey, true)
	if a.Replayed {
		b = append(b, `,"replayed":true`...)
	}
	if a.RecordsDropped != 0 {
		b = append(b, `,"records_dropped":`...)
		b = strconv.AppendInt(b, a.RecordsDropped, 10)
	}
	b = str(b, "operation", a.Operation, true)
	if a.Revision != 0 {
		b = append(b, `,"revision":`...)
		b = strconv.AppendInt(b, a.Revision, 10)
	}
	if a.InputRound != 0 {
		b = append(b, `,"input_round":`...)
		b = strconv.AppendInt(b, int64(a.InputRound), 10)
	}
	if len(a.InputAsked) > 0 {
		b = append(b, `,"input_asked":[`...)
		for i, k := range a.InputAsked {
			if i > 0 {
				b = append(b, ',')
			}
			b, _ = appendQuoted(b, k, true)
		}
		b = append(b, ']')
	}
	if a.InputAnswered != 0 {
		b = append(b, `,"input_answered":`...)
		b = strconv.AppendInt(b, int64(a.InputAnswered), 10)
	}
	if len(a.InputRelayed) > 0 {
		b = append(b, `,"input_relayed":[`...)
		for i, k := range a.InputRelayed {
			if i > 0 {
				b = append(b, ',')
			}
			b, _ = appendQuoted(b, k, true)
		}
		b = append(b, ']')
	}
	return append(b, '}', '\n'), nil
}
