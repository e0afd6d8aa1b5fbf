package store

// Backend is the one contract of a storage backend: keys with their batches,
// admin and policies (Store), and streams with their admin and policies
// (StreamStore), kept in one database. Every backend (pgstore, sqlitestore,
// the suite's in-memory model) implements all of it, and the conformance
// suite (storetest.RunAll) holds it to all of it at once.
//
// The decorators that the server stacks on a backend (replaycache.Store,
// the store metrics, storetrace) implement Backend too, each method
// written out and none inherited from an embedded Backend: a method added
// here makes every decorator fail to compile until it decides what to do
// with it (cache, observe, trace, or pass straight through), so no call can
// slip past a decorator unnoticed, as stream calls once did.
//
// The one-line experiment: add `Probe(ctx context.Context) error` to this
// interface and run `go build ./server/...`. Each decorator's
// compile-time assertion, `var _ store.Backend = (*X)(nil)`, fails with
// "cannot use (*X)(nil) (value of type *X) as store.Backend value in
// variable declaration" and:
//
//	storetrace:  *tracedStore does not implement store.Backend (missing method Probe)
//	replaycache: *Store does not implement store.Backend (missing method Probe)
//	metrics:     *observedStore does not implement store.Backend (missing method Probe)
//
// and so, once those compile, do the backends' own assertions in pgstore
// and sqlitestore.
type Backend interface {
	Store
	StreamStore
}
