package registry

// The names of the MCP face's discovery meta-tools (server/mcpapi
// discovery.go). No tool may take them: a caller in discovery mode reaches
// the meta-tools by these names, so a tool under one would be unreachable
// there and ambiguous everywhere. Provider-safe (no dots), so a client can
// hand them to any model API as they are.
const (
	SearchToolsName  = "flowdrop_search_tools"
	DescribeToolName = "flowdrop_describe_tool"
)

// Reserved reports whether name is kept for the gateway's own meta-tools.
func Reserved(name string) bool {
	return name == SearchToolsName || name == DescribeToolName
}

// The tool label values the gateway counts under in place of a name: a
// call of a name that is not registered (metrics, the status page's last
// errors) and, in the repair analytics, tools over their cap. No tool may
// take them: its counts would merge with everything folded there.
const (
	LabelUnregistered = "_unknown"
	LabelOther        = "_other"
)

// ReservedLabel reports whether name is one of the label values above.
func ReservedLabel(name string) bool {
	return name == LabelUnregistered || name == LabelOther
}
