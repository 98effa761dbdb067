// Package sdkjson decodes JSON exactly as the MCP go-sdk (v1.8.0) decodes
// a message — segmentio/encoding's json with the SDK's flags and nesting
// bound — from bytes already read, without the SDK's per-message Decoder
// and its 32 KiB buffer. The MCP face's tools/call fast path and the
// upstream tools/call client both mirror the SDK with it, so a difference
// from the SDK has one place to be fixed.
package sdkjson

import (
	"bytes"
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

// UnmarshalPart is Unmarshal of data that is part of a value CheckDepth
// passed (a member's raw text): its nesting is no deeper, so it is not
// walked again.
func UnmarshalPart(data []byte, v any) error {
	_, err := sjson.Parse(data, v, Flags)
	return err
}

// CheckDepth fails data nesting objects and arrays deeper than MaxDepth
// (strings skipped), as the SDK's checkMaxDepth does. A string is skipped
// to its first quote after an even run of backslashes (IndexByte, not byte
// by byte: strings are most of a message); each byte is looked at a
// bounded number of times, so hostile text costs linear time.
// TestCheckDepthMatchesByteWalk holds it to the SDK's byte-by-byte walk.
func CheckDepth(data []byte) error {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			end := stringEnd(data, i)
			if end < 0 {
				return nil // unterminated: nothing after it nests
			}
			i = end
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

// stringEnd is the index of the quote ending the string whose opening
// quote is at open, or -1: the first quote preceded by an even number of
// backslashes (an odd run escapes it).
func stringEnd(data []byte, open int) int {
	for from := open + 1; ; {
		k := bytes.IndexByte(data[from:], '"')
		if k < 0 {
			return -1
		}
		q := from + k
		run := 0
		for p := q - 1; p > open && data[p] == '\\'; p-- {
			run++
		}
		if run%2 == 0 {
			return q
		}
		from = q + 1
	}
}
