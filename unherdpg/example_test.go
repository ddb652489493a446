package unherdpg_test

import (
	"context"
	"log"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/unherdpg"
)

// The idempotency records live in PostgreSQL, and InTx commits the
// handler's writes and the record in one transaction. The README quotes
// this example; it compiles but does not run, for want of a database.
func ExampleNewStore() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:5432/test")
	if err != nil {
		log.Fatal(err)
	}
	store := unherdpg.NewStore(pool, unherdpg.StoreConfig{})
	if err := store.EnsureSchema(ctx); err != nil {
		log.Fatal(err)
	}
	// Expired records are deleted every minute, until ctx is cancelled.
	go func() { _ = store.RunJanitor(ctx, unherdpg.JanitorConfig{}) }()
	m, err := idempotency.New(idempotency.Config{Store: store, Required: true})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("POST /charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := store.InTx(r.Context(), func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error) {
			if _, err := tx.Exec(ctx, `INSERT INTO charges (amount) VALUES (100)`); err != nil {
				return nil, err
			}
			return &idempotency.Response{Status: http.StatusCreated}, nil
		})
		if err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		resp.Send(w)
	})))
}
