package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// OpenTraced is Open with a query tracer on every connection, so that tests
// can see the statements a call sends.
func OpenTraced(ctx context.Context, databaseURL string, tracer pgx.QueryTracer) (*Store, error) {
	return open(ctx, databaseURL, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = tracer })
}
