"""Names of torch that readers of source text need to recognise without importing torch."""

DTYPE_NAMES = frozenset(
    "float float16 float32 float64 half double bfloat16 int int8 int16 int32 int64 uint8 long short "
    "bool complex64 complex128 cfloat cdouble qint8 quint8 qint32 chalf float8_e4m3fn float8_e5m2".split()
)
