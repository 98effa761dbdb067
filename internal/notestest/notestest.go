// Package notestest is a real flowdrop.testing.v1.NotesService on
// loopback, for fronting as gRPC-method tools in tests: it records every
// request it receives, serves server reflection (v1 and v1alpha) when
// asked and can stop serving it while it runs, and gives the service's
// descriptor set as a file would hold it.
//
// It imports gRPC, protobuf and the generated test contract only.
package notestest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	testingv1 "github.com/flowdrop/gateway/gen/flowdrop/testing/v1"
)

// Service is the NotesService: CreateNote stores and echoes a note,
// GetNote finds one (NotFound otherwise), Ping answers.
type Service struct {
	testingv1.UnimplementedNotesServiceServer
	mu       sync.Mutex
	created  []*testingv1.CreateNoteRequest
	notes    map[string]*testingv1.Note
	noRecord bool
}

// DontRecord stops recording requests and storing notes (benchmarks).
func (s *Service) DontRecord() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRecord = true
}

// NewService is an empty service.
func NewService() *Service { return &Service{notes: map[string]*testingv1.Note{}} }

// CreateNote records the request and answers with the stored note.
func (s *Service) CreateNote(_ context.Context, req *testingv1.CreateNoteRequest) (*testingv1.CreateNoteResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := &testingv1.Note{Id: "note", Title: req.GetTitle(), Tags: req.GetTags(), AuthorId: req.GetAuthorId(), Priority: req.GetPriority()}
	if !s.noRecord {
		s.created = append(s.created, proto.CloneOf(req))
		n.Id = fmt.Sprintf("note-%d", len(s.created))
		s.notes[n.Id] = n
	}
	return &testingv1.CreateNoteResponse{Note: n}, nil
}

// GetNote answers with a stored note, NotFound (the service's own status)
// otherwise.
func (s *Service) GetNote(_ context.Context, req *testingv1.GetNoteRequest) (*testingv1.GetNoteResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.notes[req.GetId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no note %q", req.GetId())
	}
	return &testingv1.GetNoteResponse{Note: n}, nil
}

// Ping answers.
func (s *Service) Ping(context.Context, *testingv1.PingRequest) (*testingv1.PingResponse, error) {
	return &testingv1.PingResponse{}, nil
}

// Created is every CreateNote request received, in order.
func (s *Service) Created() []*testingv1.CreateNoteRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*testingv1.CreateNoteRequest(nil), s.created...)
}

// Server is a Service served on 127.0.0.1.
type Server struct {
	Addr    string
	Service *Service
	// reflection: server reflection answers (else Unimplemented, as from a
	// server that does not register it).
	reflection atomic.Bool
}

// Start serves a new Service on 127.0.0.1 until the test ends, with server
// reflection on when withReflection is true.
func Start(t testing.TB, withReflection bool) *Server {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: lis.Addr().String(), Service: NewService()}
	s.reflection.Store(withReflection)
	gs := grpc.NewServer(grpc.StreamInterceptor(s.refuseReflectionWhenOff))
	testingv1.RegisterNotesServiceServer(gs, s.Service)
	reflection.Register(gs)
	done := make(chan struct{})
	go func() { defer close(done); gs.Serve(lis) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	return s
}

// SetReflection turns server reflection on or off.
func (s *Server) SetReflection(on bool) { s.reflection.Store(on) }

func (s *Server) refuseReflectionWhenOff(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if strings.HasPrefix(info.FullMethod, "/grpc.reflection.") && !s.reflection.Load() {
		return status.Errorf(codes.Unimplemented, "unknown service %s", strings.Split(info.FullMethod, "/")[1])
	}
	return h(srv, ss)
}

// DescriptorSet is the NotesService's file and every file it imports as a
// serialized google.protobuf.FileDescriptorSet, dependencies first, as
// `protoc --include_imports --descriptor_set_out` writes it.
func DescriptorSet() []byte {
	return FileSet(testingv1.File_flowdrop_testing_v1_notes_proto)
}

// FileSet is f and its imports, transitively, as a serialized
// FileDescriptorSet, dependencies first.
func FileSet(f protoreflect.FileDescriptor) []byte {
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(f protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		for i := range f.Imports().Len() {
			add(f.Imports().Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(f))
	}
	add(f)
	b, err := proto.Marshal(set)
	if err != nil {
		panic(err) // a compiled-in descriptor always marshals
	}
	return b
}
