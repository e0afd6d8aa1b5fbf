package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/examples/inventory/stock"
)

// sqlstateNoDatabase is invalid_catalog_name: the database does not exist.
const sqlstateNoDatabase = "3D000"

// openDatabase connects to the example's database, creating it when it is
// missing (through the server's postgres database), and creates the
// tables.
func openDatabase(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("-database-url: %w", err)
	}
	db, err := connect(ctx, cfg)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == sqlstateNoDatabase {
		if err := createDatabase(ctx, cfg.ConnConfig); err != nil {
			return nil, err
		}
		db, err = connect(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL database %q (set -database-url or $INVENTORY_DATABASE_URL): %w",
			cfg.ConnConfig.Database, err)
	}
	if err := stock.Migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("creating the tables in %q: %w", cfg.ConnConfig.Database, err)
	}
	return db, nil
}

func connect(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// createDatabase creates the database of cfg, connecting to the same
// server's postgres maintenance database to do so.
func createDatabase(ctx context.Context, cfg *pgx.ConnConfig) error {
	name := cfg.Database
	server := cfg.Copy()
	server.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, server)
	if err != nil {
		return fmt.Errorf("database %q does not exist, and connecting to database postgres to create it failed (create it, or set -database-url): %w", name, err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: created meanwhile
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating database %q (create it, or set -database-url): %w", name, err)
	}
	return nil
}
