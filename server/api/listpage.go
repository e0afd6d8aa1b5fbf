package api

import (
	"context"

	"google.golang.org/protobuf/proto"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

// recordOverhead bounds what a record holds besides its result and
// detail: key, owner, digest, rejection reason and message at their
// limits, timestamps and framing.
const recordOverhead = MaxKeyBytes + MaxOwnerBytes + MaxDigestBytes + MaxReasonBytes + MaxMessageBytes + 256

// listPage reads one ListRecords page: at most params.Limit records, and
// no more than budget bytes of encoded records, except that the first
// record always comes, however large, so that paging always moves on. It
// reads the store in chunks of at most chunk records, so that the records
// read but not sent stay within about one budget too.
type listPage struct {
	store  store.Store
	params store.ListParams // Limit is the page size
	basic  bool             // RECORD_VIEW_BASIC: no result or detail
	budget int
	chunk  int
}

// chunkSize is how many records to read at once: as many as fit the
// budget at the consumer's current result limit, at least one, and no
// more than the page needs.
func chunkSize(budget, maxResultBytes, pageSize int) int {
	return max(1, min(pageSize, budget/(maxResultBytes+recordOverhead)))
}

// read returns the page, its NextPageToken holding the raw key to
// continue after (empty on the last page).
func (p listPage) read(ctx context.Context) (*dedupv1.ListRecordsResponse, error) {
	resp := &dedupv1.ListRecordsResponse{}
	used := 0
	q := p.params
	for len(resp.GetRecords()) < p.params.Limit {
		want := min(p.chunk, p.params.Limit-len(resp.GetRecords()))
		q.Limit = want + 1 // one more tells whether there is more
		recs, err := p.store.ListRecords(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, r := range recs[:min(len(recs), want)] {
			pr := p.convert(r)
			n := proto.Size(pr)
			if len(resp.GetRecords()) > 0 && used+n > p.budget {
				resp.NextPageToken = lastKey(resp)
				return resp, nil
			}
			resp.Records = append(resp.Records, pr)
			used += n
		}
		if len(recs) <= want {
			return resp, nil // the store has no more
		}
		q.AfterKey = lastKey(resp)
	}
	resp.NextPageToken = lastKey(resp) // the last chunk showed one more
	return resp, nil
}

func (p listPage) convert(r store.Record) *dedupv1.Record {
	pr := recordpb.FromStore(r)
	if p.basic {
		pr.Result = nil
		if rj := pr.GetRejection(); rj != nil {
			rj.Detail = nil
		}
	}
	return pr
}

func lastKey(resp *dedupv1.ListRecordsResponse) string {
	recs := resp.GetRecords()
	return recs[len(recs)-1].GetKey()
}
