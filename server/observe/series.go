package observe

// Series is one labelled series of a counter or gauge.
type Series struct {
	Labels map[string]string
	Value  float64
}

// Series returns the series of the metric family name (none when it is
// not registered or has none), for the admin console.
func (m *Metrics) Series(name string) []Series {
	fams, err := m.reg.Gather()
	if err != nil {
		return nil
	}
	var out []Series
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			s := Series{Labels: map[string]string{}}
			for _, l := range mt.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch {
			case mt.GetCounter() != nil:
				s.Value = mt.GetCounter().GetValue()
			case mt.GetGauge() != nil:
				s.Value = mt.GetGauge().GetValue()
			}
			out = append(out, s)
		}
	}
	return out
}
