package structwire

// HasNull reports, from a Struct's wire bytes and without allocating,
// whether a null Value is anywhere in it (a member's value, a list element,
// at any depth). It is conservative: bytes it cannot read (malformed, an
// unknown field, nesting deeper than MaxDepth) report true, meaning
// "decode and look". The optional-nulls pass uses it to leave arguments
// without a null as bytes.
func HasNull(structBytes []byte) bool { return structHasNull(structBytes, 1) }

func structHasNull(b []byte, depth int) bool {
	if depth > MaxDepth {
		return true
	}
	for len(b) > 0 {
		_, v, rest, ok := NextEntry(b, false)
		if !ok || valueHasNull(v, depth) {
			return true
		}
		b = rest
	}
	return false
}

func valueHasNull(v []byte, depth int) bool {
	kind, _, payload, ok := ReadValue(v, false)
	if !ok {
		return true
	}
	switch kind {
	case NullValue:
		return true
	case StructValue:
		return structHasNull(payload, depth+1)
	case ListValue:
		if depth+1 > MaxDepth {
			return true
		}
		for b := payload; len(b) > 0; {
			item, rest, ok := NextItem(b)
			if !ok || valueHasNull(item, depth+1) {
				return true
			}
			b = rest
		}
	}
	return false
}
