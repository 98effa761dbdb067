// Package sdkjson decodes JSON exactly as the MCP go-sdk (v1.8.0) decodes
// a message — segmentio/encoding's json with the SDK's flags and nesting
// bound — from bytes already read, without the SDK's per-message Decoder
// and its 32 KiB buffer. The MCP face's tools/call fast path and the
// upstream tools/call client both mirror the SDK with it, so a difference
// from the SDK has one place to be fixed.
package sdkjson

import (
	"fmt"

	sjson "github.com/segmentio/encoding/json"
)

// Flags are the SDK's parse flags (its internal/json): field names match
// case-sensitively.
const Flags = sjson.DontMatchCaseInsensitiveStructFields

// MaxDepth is the SDK's bound on a message's nesting.
const MaxDepth = 1000

// ErrMaxDepth is CheckDepth's refusal.
var ErrMaxDepth = fmt.Errorf("json: exceeded maximum nesting depth of %d", MaxDepth)

// Unmarshal decodes data into v as the SDK does: the nesting checked before
// anything is decoded; trailing bytes after the value ignored, as the
// SDK's Decoder ignores them.
func Unmarshal(data []byte, v any) error {
	if err := CheckDepth(data); err != nil {
		return err
	}
	_, err := sjson.Parse(data, v, Flags)
	return err
}

// CheckDepth fails data nesting objects and arrays deeper than MaxDepth
// (strings skipped), as the SDK's checkMaxDepth does.
func CheckDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > MaxDepth {
				return ErrMaxDepth
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
