package replaycache

import "time"

// SetClock replaces the clock the cache judges freshness by.
func SetClock(s *Store, now func() time.Time) { s.now = now }
