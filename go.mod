module github.com/heraldpush/herald

go 1.26.0

require (
	github.com/go-fed/httpsig v1.1.0
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1
	golang.org/x/sync v0.25.0
)

require (
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
