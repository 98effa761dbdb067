package backend

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/server/rawcodec"
)

func TestBackendStreamWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason  string
		maxRecv int
		want    int32
	}{
		{"the default 4 MiB limit: a whole response and its 5-byte prefix", 4 << 20, 4<<20 + 5},
		{"a small limit: never below HTTP/2's 64 KiB", 1 << 10, 64 << 10},
		{"a limit over the dynamic window's ceiling: the ceiling", 64 << 20, 16 << 20},
		{"a limit whose prefix would cross the ceiling: the ceiling", 16<<20 - 2, 16 << 20},
		{"no limit: the ceiling", 0, 16 << 20},
	} {
		if got := backendStreamWindow(tc.maxRecv); got != tc.want {
			t.Errorf("%s: backendStreamWindow(%d) = %d, want %d", tc.reason, tc.maxRecv, got, tc.want)
		}
	}
}

// TestBackendConnectionSendsNoBandwidthPings: over a real gRPC connection
// to a real backend, the gateway's side announces the static windows
// (SETTINGS_INITIAL_WINDOW_SIZE, one connection WINDOW_UPDATE) and sends no
// PING while calls get answered — a dynamic window would send a
// bandwidth-estimate PING on the first response and about one a call after
// it — and a response of 3 MiB, under the receive limit, still arrives.
func TestBackendConnectionSendsNoBandwidthPings(t *testing.T) {
	t.Parallel()
	const maxRecv = 4 << 20
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingListener{Listener: lis}
	gs := grpc.NewServer()
	gatewayv1.RegisterToolBackendServiceServer(gs, sizedBackend{})
	go gs.Serve(rec)
	defer gs.Stop()

	ts := NewToolService(ToolServiceConfig{MaxRecvMsgSize: maxRecv, MaxSendMsgSize: maxRecv, DefaultTimeout: 5 * time.Second})
	defer ts.Close()
	conn, err := ts.pool.get(lis.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call := func(size string) []byte {
		t.Helper()
		b, err := proto.Marshal(&gatewayv1.InvokeRequest{Tool: size})
		if err != nil {
			t.Fatal(err)
		}
		resp := new(rawcodec.Frame)
		if err := conn.cc.Invoke(ctx, gatewayv1.ToolBackendService_Invoke_FullMethodName, &rawcodec.Forward{Head: b}, resp); err != nil {
			t.Fatalf("call %q: %v", size, err)
		}
		return resp.Buf
	}
	for range 20 {
		call("small")
	}
	if n := len(call("large")); n < 3<<20 {
		t.Fatalf("the large response is %d bytes, want over 3 MiB", n)
	}
	call("small")

	var initialWindow uint32
	var sentSettings bool
	var connUpdate uint32
	pings := 0
	rec.frames(t, func(f http2.Frame) { // f is valid only during the call
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() && !sentSettings {
				sentSettings = true
				initialWindow, _ = f.Value(http2.SettingInitialWindowSize)
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 && connUpdate == 0 {
				connUpdate = f.Increment
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				pings++
			}
		}
	})
	if pings != 0 {
		t.Errorf("the gateway sent %d PINGs to the backend over 22 calls; want none (static windows start no bandwidth estimate)", pings)
	}
	if !sentSettings {
		t.Fatal("no SETTINGS frame from the gateway")
	}
	if want := uint32(backendStreamWindow(maxRecv)); initialWindow != want {
		t.Errorf("SETTINGS_INITIAL_WINDOW_SIZE = %d, want %d", initialWindow, want)
	}
	if want := uint32(maxBackendWindow - 65535); connUpdate != want {
		t.Errorf("first connection WINDOW_UPDATE = %d, want %d (a 16 MiB connection window)", connUpdate, want)
	}
}

// sizedBackend answers a small result, or ~3 MiB when the tool is "large".
type sizedBackend struct {
	gatewayv1.UnimplementedToolBackendServiceServer
}

func (sizedBackend) Invoke(_ context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
	v := "ok"
	if req.GetTool() == "large" {
		v = strings.Repeat("x", 3<<20)
	}
	return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue(v)}, nil
}

// recordingListener keeps every byte its connections read: what the
// gateway sent the backend.
type recordingListener struct {
	net.Listener
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, l: l}, nil
}

type recordingConn struct {
	net.Conn
	l *recordingListener
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.l.mu.Lock()
	c.l.buf.Write(p[:n])
	c.l.mu.Unlock()
	return n, err
}

// frames hands each HTTP/2 frame recorded (one connection, after the
// client preface) to each; a frame cut off at the end is left out.
func (l *recordingListener) frames(t *testing.T, each func(http2.Frame)) {
	t.Helper()
	l.mu.Lock()
	b := bytes.Clone(l.buf.Bytes())
	l.mu.Unlock()
	if !bytes.HasPrefix(b, []byte(http2.ClientPreface)) {
		t.Fatalf("the recording does not start with the HTTP/2 client preface: %q", b[:min(len(b), 24)])
	}
	fr := http2.NewFramer(nil, bytes.NewReader(b[len(http2.ClientPreface):]))
	fr.SetMaxReadFrameSize(1 << 24)
	for {
		f, err := fr.ReadFrame()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return
		}
		if err != nil {
			t.Fatalf("parsing the gateway's frames: %v", err)
		}
		each(f)
	}
}
