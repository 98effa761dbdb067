package structwire

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"pgregory.net/rapid"
)

// TestSameAsProtowire: for any bytes — short, long, truncated, with
// multi-byte varints and field number 0 — both functions return exactly
// what protowire's do.
func TestSameAsProtowire(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		b := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(rt, "b")
		if rapid.Bool().Draw(rt, "lengthPrefixed") && len(b) > 0 {
			// Make a well-formed length prefix more likely than random bytes do.
			b = protowire.AppendBytes(nil, b[:rapid.IntRange(0, len(b)).Draw(rt, "len")])
			b = b[:rapid.IntRange(0, len(b)).Draw(rt, "cut")]
		}
		num, typ, n := ConsumeTag(b)
		wnum, wtyp, wn := protowire.ConsumeTag(b)
		if num != wnum || typ != wtyp || n != wn {
			rt.Fatalf("ConsumeTag(%x) = %d,%d,%d; protowire %d,%d,%d", b, num, typ, n, wnum, wtyp, wn)
		}
		v, n := ConsumeBytes(b)
		wv, wn2 := protowire.ConsumeBytes(b)
		if !bytes.Equal(v, wv) || n != wn2 || (v == nil) != (wv == nil) {
			rt.Fatalf("ConsumeBytes(%x) = %x,%d; protowire %x,%d", b, v, n, wv, wn2)
		}
	})
}

func TestEdges(t *testing.T) {
	for _, tc := range []struct {
		reason string
		b      []byte
	}{
		{"empty", nil},
		{"field number 0", []byte{0x02, 0x00}},
		{"tag 15, the last one-byte tag", []byte{0x7a, 0x01, 'x'}},
		{"tag 16 needs two bytes", []byte{0x82, 0x01, 0x00}},
		{"length 127, the last one-byte length", append([]byte{0x7f}, make([]byte, 127)...)},
		{"length 127 truncated", append([]byte{0x7f}, make([]byte, 126)...)},
		{"length 128 needs two bytes", append([]byte{0x80, 0x01}, make([]byte, 128)...)},
		{"length 0", []byte{0x00}},
	} {
		num, typ, n := ConsumeTag(tc.b)
		wnum, wtyp, wn := protowire.ConsumeTag(tc.b)
		if num != wnum || typ != wtyp || n != wn {
			t.Errorf("%s: ConsumeTag = %d,%d,%d; protowire %d,%d,%d", tc.reason, num, typ, n, wnum, wtyp, wn)
		}
		v, n := ConsumeBytes(tc.b)
		wv, wn2 := protowire.ConsumeBytes(tc.b)
		if !bytes.Equal(v, wv) || n != wn2 {
			t.Errorf("%s: ConsumeBytes = %x,%d; protowire %x,%d", tc.reason, v, n, wv, wn2)
		}
	}
}
