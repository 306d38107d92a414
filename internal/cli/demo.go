package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newDemo(e *env) *cobra.Command {
	return &cobra.Command{Use: "demo", Short: "placeholder", RunE: func(*cobra.Command, []string) error { return errors.New("not yet") }}
}
