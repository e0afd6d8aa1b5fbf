package api

import (
	"context"
	"strconv"
	"strings"
)

// itemIndex returns i when path is inside items[i] (or is keys[i]), the
// batch's items being f's; never for nil faults (no batch).
func (f *itemFaults) itemIndex(path string) (int, bool) {
	if f == nil || f.items == "" {
		return 0, false
	}
	rest, ok := strings.CutPrefix(path, f.items+"[")
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
// request was decoded: the first of each item, by index. items is the
// name of the request's repeated field of items: a fault inside one of
// them fails only that item.
type itemFaults struct {
	items  string
	fields map[int]string
}

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
