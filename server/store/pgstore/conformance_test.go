package pgstore_test

import (
	"testing"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunAll(t, func(t *testing.T) store.Store { return newStore(t) })
}
