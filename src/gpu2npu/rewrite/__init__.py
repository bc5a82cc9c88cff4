"""The rewrite engine: one libcst parse, one transformer pass, one code generation per file."""
