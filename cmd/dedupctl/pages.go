package main

import "context"

// collectPages reads a listing page by page: fetch is called with each
// page token in turn, from "", each call under its own --timeout. It
// gathers the items until the last page or, unless all, until it has
// limit of them (then cut to limit), and returns them with the token of
// the page after the last one read ("" after the last page).
func collectPages[T any](ctx context.Context, a *app, all bool, limit int,
	fetch func(ctx context.Context, token string) (items []T, next string, err error)) ([]T, string, error) {
	var items []T
	token := ""
	for {
		callCtx, cancel := a.callContext(ctx)
		page, next, err := fetch(callCtx, token)
		cancel()
		if err != nil {
			return nil, "", err
		}
		items, token = append(items, page...), next
		if token == "" || (!all && len(items) >= limit) {
			break
		}
	}
	if !all && len(items) > limit {
		items = items[:limit]
	}
	return items, token, nil
}
