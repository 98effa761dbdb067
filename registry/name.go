package registry

// NamePattern is the rule every tool name must match: RegisterTool, the
// stores, and every tool call (the pipeline's identifiers stage) check it
// with ValidName.
const NamePattern = `^[a-zA-Z0-9_.-]{1,64}$`

// maxNameBytes is NamePattern's length bound.
const maxNameBytes = 64

// ValidName reports whether name matches NamePattern. It looks at no more
// than 65 bytes of name, and does not allocate (it runs on every call).
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > maxNameBytes {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '_', b == '.', b == '-':
		default:
			return false
		}
	}
	return true
}

// ValidateName reports a name that does not match NamePattern (the faces
// quote only a bounded prefix of the name).
func ValidateName(name string) error {
	if !ValidName(name) {
		return &ToolError{Tool: name, Field: "name", Reason: "must match " + NamePattern}
	}
	return nil
}
