package normalize

// DefaultMaxPasses bounds entity-decoding passes per string (RT-TOOL-8 clause 4 allows a bound).
const DefaultMaxPasses = 8

// MaxJSONDepth is the deepest nesting a JSON-decoded argument may have (the project's reading).
const MaxJSONDepth = 100

// Option configures a Plan.
type Option func(*options)

type options struct {
	maxPasses int
}

func defaultOptions() options { return options{maxPasses: DefaultMaxPasses} }

// WithMaxPasses sets the bound on entity-decoding passes per string (n >= 1).
func WithMaxPasses(n int) Option {
	return func(o *options) {
		if n >= 1 {
			o.maxPasses = n
		}
	}
}
