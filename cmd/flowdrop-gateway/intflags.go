package main

import (
	"math"
	"strconv"
)

// uint32Flag and int32Flag are flag.Values over the gRPC bounds' fixed-size
// integers (the flag package has none), refusing values out of range.
type uint32Flag struct{ p *uint32 }

func (f uint32Flag) String() string {
	if f.p == nil {
		return ""
	}
	return strconv.FormatUint(uint64(*f.p), 10)
}

func (f uint32Flag) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return err
	}
	*f.p = uint32(v)
	return nil
}

type int32Flag struct{ p *int32 }

func (f int32Flag) String() string {
	if f.p == nil {
		return ""
	}
	return strconv.FormatInt(int64(*f.p), 10)
}

func (f int32Flag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return err
	}
	if v < 0 || v > math.MaxInt32 {
		return strconv.ErrRange
	}
	*f.p = int32(v)
	return nil
}
