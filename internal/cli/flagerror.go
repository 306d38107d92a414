package cli

import (
	"errors"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// rangeAnnotation is the flag annotation that states an integer flag's
// range in words ("1 to 64"), for the error of a value that is no number.
const rangeAnnotation = "herald/range"

// intRange notes the range of cmd's integer flag name, as its check in the
// command states it, for flagError.
func intRange(cmd *cobra.Command, name, words string) {
	if err := cmd.Flags().SetAnnotation(name, rangeAnnotation, []string{words}); err != nil {
		panic(err) // a flag that does not exist: a programming error, caught by every test of the command
	}
}

// flagError is the usage error (exit 2) for a flag that cobra could not
// parse. A value its type cannot read is named with the flag and what the
// flag takes (an integer flag's range, when intRange noted it), in place
// of strconv's wording ("strconv.ParseInt: parsing \"abc\": invalid syntax").
func flagError(_ *cobra.Command, err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return usageError{err}
	}
	f := ive.GetFlag()
	var want string
	switch t := f.Value.Type(); {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		var rng string
		if r := f.Annotations[rangeAnnotation]; len(r) == 1 {
			rng = ": it must be " + r[0]
		}
		if errors.Is(err, strconv.ErrRange) {
			// Too far from zero for the flag's integer type, either way:
			// say which, since a range like "at least 1" reads as if the
			// value were too small.
			way := "more than the largest number the flag holds"
			if strings.HasPrefix(strings.TrimSpace(ive.GetValue()), "-") {
				way = "less than the smallest number the flag holds"
			}
			return usagef("--%s %q is out of range (%s)%s", f.Name, ive.GetValue(), way, rng)
		}
		want = "a whole number" + rng
	case t == "duration":
		want = "a duration: a number with a unit, such as 500ms, 30s, 5m or 2h"
	case t == "bool":
		want = "true or false"
	default:
		return usageError{err}
	}
	return usagef("--%s %q is not %s", f.Name, ive.GetValue(), want)
}
