package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/flowdrop/gateway/normalize"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

var normalizeCommand = &command{
	name:    "normalize",
	summary: "apply RT-TOOL-8 normalization to tool arguments offline",
	run:     runNormalize,
}

// normMaxInput bounds what is read from stdin or a schema file, so a wrong
// redirect cannot exhaust memory.
const normMaxInput = 64 << 20

const normHelp = `usage: flowdropctl normalize --schema FILE [--report] [--max-passes N] < args.json

Reads a tool's arguments (one JSON object) on stdin, normalizes them against
the tool's input schema as the gateway does (RT-TOOL-8: JSON-decode string
arguments the schema declares array/object; decode HTML character references
in every string leaf), and writes the result as JSON with sorted keys on stdout.

The arguments are read as a google.protobuf.Struct, exactly as the gateway
receives them: numbers are float64, so a literal such as 9007199254740993 in
the input has already lost precision before normalization sees it.

Exit status: 0 ok; 2 bad flags, unreadable or invalid schema, or stdin that is
not a JSON object (one line on stderr names the problem).

flags:
`

func runNormalize(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("normalize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	schemaFile := fs.String("schema", "", "`FILE` holding the tool's input JSON Schema (required)")
	report := fs.Bool("report", false, "write the repair report to stderr, one line per repair or skip")
	maxPasses := fs.Int("max-passes", normalize.DefaultMaxPasses, "bound on entity-decoding passes per string (>= 1)")
	out := addOutputFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), normHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		// One line, whatever the underlying error looked like.
		msg = strings.Join(strings.Fields(msg), " ")
		fmt.Fprintln(stderr, "flowdropctl normalize: "+msg)
		return 2
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q (arguments are read from stdin)", fs.Arg(0))
	}
	if *schemaFile == "" {
		return fail("--schema FILE is required")
	}
	if *maxPasses < 1 {
		return fail("--max-passes must be at least 1, got %d", *maxPasses)
	}
	schemaBytes, err := normReadLimited(normOpenFile(*schemaFile))
	if err != nil {
		return fail("schema %s: %v", *schemaFile, err)
	}
	schema, err := normParseObject(schemaBytes)
	if err != nil {
		return fail("schema %s: %v", *schemaFile, err)
	}
	plan, err := normalize.Compile(schema, normalize.WithMaxPasses(*maxPasses))
	if err != nil {
		return fail("schema %s: %v", *schemaFile, err)
	}
	argBytes, err := normReadLimited(stdin, nil)
	if err != nil {
		return fail("stdin: %v", err)
	}
	argStruct, err := normParseObject(argBytes)
	if err != nil {
		return fail("stdin: %v", err)
	}
	normalized, rep := plan.Apply(argStruct)

	// text: the normalized arguments alone; json: them and the report.
	var doc any = normalized.AsMap()
	if out.json {
		repairs, skipped := []map[string]any{}, []map[string]any{}
		for _, r := range rep.Repairs {
			m := map[string]any{"path": r.Path, "kind": r.Kind.String()}
			if r.Kind == normalize.EntitiesDecoded {
				m["passes"], m["bound_hit"] = r.Passes, r.BoundHit
			}
			repairs = append(repairs, m)
		}
		for _, s := range rep.Skipped {
			m := map[string]any{"path": s.Path, "declared": s.Declared, "reason": s.Reason.String()}
			if s.Got != "" {
				m["got"] = s.Got
			}
			skipped = append(skipped, m)
		}
		doc = map[string]any{"arguments": normalized.AsMap(), "repairs": repairs, "skipped": skipped}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "a && b" must come out as written, not as \u0026
	if err := enc.Encode(doc); err != nil {
		return fail("encoding the result: %v", err)
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		fmt.Fprintln(stderr, "flowdropctl normalize: writing stdout:", err)
		return 1
	}
	if *report {
		for _, r := range rep.Repairs {
			if r.Kind == normalize.EntitiesDecoded {
				fmt.Fprintf(stderr, "repair\t%s\t%s\tpasses=%d\tbound-hit=%t\n", r.Path, r.Kind, r.Passes, r.BoundHit)
			} else {
				fmt.Fprintf(stderr, "repair\t%s\t%s\n", r.Path, r.Kind)
			}
		}
		for _, s := range rep.Skipped {
			line := fmt.Sprintf("skipped\t%s\tdeclared=%s\treason=%s", s.Path, s.Declared, s.Reason)
			if s.Got != "" {
				line += "\tgot=" + s.Got
			}
			fmt.Fprintln(stderr, line)
		}
	}
	return 0
}

func normOpenFile(name string) (io.Reader, error) {
	f, err := os.Open(name)
	if err != nil {
		// The path is already in the message prefix; keep the OS reason only.
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	return f, nil
}

func normReadLimited(r io.Reader, openErr error) ([]byte, error) {
	if openErr != nil {
		return nil, openErr
	}
	if c, ok := r.(io.Closer); ok {
		defer c.Close()
	}
	b, err := io.ReadAll(io.LimitReader(r, normMaxInput+1))
	if err != nil {
		return nil, err
	}
	if len(b) > normMaxInput {
		return nil, fmt.Errorf("larger than %d bytes", normMaxInput)
	}
	return b, nil
}

// normParseObject reads one JSON object as a google.protobuf.Struct. encoding/json
// checks the syntax first because its errors carry a byte offset.
func normParseObject(b []byte) (*structpb.Struct, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("invalid JSON at byte offset %d: %v", se.Offset, se)
		case errors.Is(err, io.EOF):
			return nil, errors.New("empty input, want a JSON object")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("invalid JSON at byte offset %d: unexpected end of input", len(b))
		}
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("invalid JSON at byte offset %d: data after the JSON object", dec.InputOffset())
	}
	if first := bytes.TrimLeft(raw, " \t\r\n"); len(first) == 0 || first[0] != '{' {
		return nil, fmt.Errorf("want a JSON object, got %s", normJSONKind(first))
	}
	var s structpb.Struct
	if err := protojson.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a google.protobuf.Struct: %v", err)
	}
	return &s, nil
}

func normJSONKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "nothing"
	case b[0] == '[':
		return "an array"
	case b[0] == '"':
		return "a string"
	case b[0] == 't' || b[0] == 'f':
		return "a boolean"
	case b[0] == 'n':
		return "null"
	}
	return "a number"
}
