package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// BenchConsumer is the consumer bench claims under unless told otherwise.
// Every run uses it (keys carry the run's id), so runs add one consumer
// label to the server's metrics in all, not one each, and the cleanup at
// the end of a run also removes what an interrupted earlier run left.
const BenchConsumer = "dedupctl-bench"

// cleanupTimeout bounds the purge at the end of a run; it runs on a context
// of its own, so that it also runs after Ctrl-C.
const cleanupTimeout = 2 * time.Minute

// cleanup purges every record of the bench consumer (AdminService.Purge,
// which needs an admin credential) and says in the report how many, or why
// it could not. Runs against one server at the same time should each have
// their own --consumer: a run's cleanup deletes the consumer's records.
func (s *service) cleanup(report *Report) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	deleted, err := s.purge(ctx)
	report.RecordsDeleted = deleted
	if err != nil {
		report.CleanupNote = fmt.Sprintf("records of consumer %s not deleted (%v): dedupctl purge %s --yes removes them",
			s.consumer, err, s.consumer)
	}
}

func (s *service) purge(ctx context.Context) (int64, error) {
	stream, err := dedupv1.NewAdminServiceClient(s.conn).Purge(ctx, &dedupv1.PurgeRequest{Consumer: s.consumer})
	if err != nil {
		return 0, err
	}
	var deleted int64
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return deleted, nil
		}
		if err != nil {
			return deleted, err
		}
		deleted = msg.GetDeleted()
	}
}
