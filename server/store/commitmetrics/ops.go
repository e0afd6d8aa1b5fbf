package commitmetrics

import "github.com/dedupd/dedupd/server/store"

// KindOf is the kind of a write of one key or one stream, by its
// operation, for the stores that commit them one by one or in groups of
// their own (the embedded ones).
func KindOf(op store.Op) Kind {
	switch op.Name {
	case store.OpClaim.Name:
		return KindClaim
	case store.OpComplete.Name, store.OpReject.Name, store.OpExtendLease.Name:
		return KindFinish
	case store.OpDeleteRecord.Name:
		return KindOther
	}
	return KindStream
}
