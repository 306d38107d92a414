package operator

// Field is the name the APIs give a library's field of a registration:
// push's on_rejected is on_4xx, a new registration's next seq is from_seq,
// any other is its own. The CLI's flag is Field's name in kebab case
// (--on-4xx, --from-seq).
func Field(name string) string {
	if f, ok := fields[name]; ok {
		return f
	}
	return name
}

var fields = map[string]string{"on_rejected": "on_4xx", "next seq": "from_seq"}
