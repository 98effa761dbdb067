// Package toolcodec is the one on-disk encoding of a registry.Tool shared by
// the durable stores (bbolt, etcd), so a tool written by one reads the same in
// the other and the format can evolve behind a version number.
//
// It imports the registry, protojson and normalize (its strict JSON parser
// reads stored schemas: schema.go).
package toolcodec
