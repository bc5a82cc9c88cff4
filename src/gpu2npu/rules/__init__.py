"""Rule files: locating, loading, validating and compiling them into a lookup index."""
