package memory_test

import (
	"testing"

	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend { return memory.New() })
}
