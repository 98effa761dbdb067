// Package bareproxy is the benchmark's reference point: a gRPC proxy that
// forwards unary calls to one backend without decoding them (bare mode), or
// that decodes, walks and re-encodes the request's Struct (decode mode). The
// gateway's overhead is judged against these two, so both stay as lean as a
// real proxy could reasonably be — and no leaner (metadata, deadlines,
// headers, trailers and status details are all carried).
//
// It imports gRPC and the generated contract; nothing of the gateway.
package bareproxy
