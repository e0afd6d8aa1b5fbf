package replybudget_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"

	"github.com/dedupd/dedupd/server/replybudget"
)

// peerOf answers EmptyCall and keeps the peer its call saw.
type peerOf struct {
	testgrpc.UnimplementedTestServiceServer
	seen chan *peer.Peer
}

func (p peerOf) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	got, _ := peer.FromContext(ctx)
	p.seen <- got
	return &testgrpc.Empty{}, nil
}

// TestCredentialsLeaveThePeerAsItWas: behind plaintext Credentials a call
// sees what it saw without them: no AuthInfo, and its caller's address,
// network and all.
func TestCredentialsLeaveThePeerAsItWas(t *testing.T) {
	srv := grpc.NewServer(grpc.Creds(replybudget.Credentials(nil)))
	seen := make(chan *peer.Peer, 1)
	testgrpc.RegisterTestServiceServer(srv, peerOf{seen: seen})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	var local net.Addr
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		conn, err := new(net.Dialer).DialContext(ctx, "tcp", addr)
		if err == nil {
			local = conn.LocalAddr()
		}
		return conn, err
	}
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := testgrpc.NewTestServiceClient(conn).EmptyCall(context.Background(), &testgrpc.Empty{}); err != nil {
		t.Fatal(err)
	}
	p := <-seen
	if p.AuthInfo != nil {
		t.Errorf("AuthInfo = %v over plaintext, want none", p.AuthInfo)
	}
	if p.Addr.String() != local.String() || p.Addr.Network() != local.Network() {
		t.Errorf("peer address %s/%s, want the caller's %s/%s", p.Addr.Network(), p.Addr, local.Network(), local)
	}
}
