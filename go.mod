module github.com/heraldpush/herald

go 1.26.0

require (
	github.com/go-fed/httpsig v1.1.0
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1
	github.com/stretchr/testify v1.12.1
	golang.org/x/sync v0.25.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
