package store_test

import "time"

var t0 = time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

const ns = "webhook"
