package api

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// batchItemsField names, for each batch request, its repeated field of
// items: a fault inside one of them fails only that item.
var batchItemsField = map[protoreflect.FullName]string{
	(&dedupv1.ClaimBatchRequest{}).ProtoReflect().Descriptor().FullName():       "items",
	(&dedupv1.FinishBatchRequest{}).ProtoReflect().Descriptor().FullName():      "items",
	(&dedupv1.ExtendLeaseBatchRequest{}).ProtoReflect().Descriptor().FullName(): "items",
	(&dedupv1.LookupBatchRequest{}).ProtoReflect().Descriptor().FullName():      "keys",
}

// itemIndex returns i when path is inside items[i] (or is keys[i]).
func itemIndex(path, items string) (int, bool) {
	if items == "" {
		return 0, false
	}
	rest, ok := strings.CutPrefix(path, items+"[")
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(digits)
	return i, err == nil
}

// itemFaults are the fields of a batch's items found not UTF-8 while the
// request was decoded: the first of each item, by index.
type itemFaults struct{ fields map[int]string }

func (f *itemFaults) add(i int, field string) {
	if f.fields == nil {
		f.fields = map[int]string{}
	}
	if _, ok := f.fields[i]; !ok {
		f.fields[i] = field
	}
}

type itemFaultsKey struct{}

// itemFault names the field of item i that was not UTF-8, if any.
func itemFault(ctx context.Context, i int) (string, bool) {
	f, _ := ctx.Value(itemFaultsKey{}).(*itemFaults)
	if f == nil {
		return "", false
	}
	field, ok := f.fields[i]
	return field, ok
}
