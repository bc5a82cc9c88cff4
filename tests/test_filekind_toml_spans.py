"""Where the values of a TOML document are (``_toml_spans.toml_values``, used by the toml and
packaging kinds): exact spans on inline tables, dotted keys, arrays of tables (nested ones too),
multi-line arrays with comments, literal and basic strings, escapes, CRLF and non-ASCII text;
every span reads back as tomlkit's value; a document read otherwise than tomlkit is not located."""

import pytest
import tomlkit
from helpers import migrate_file

from gpu2npu.filekinds import toml_config
from gpu2npu.filekinds._toml_spans import toml_values

INLINE = 'a = { b = "cuda", c = { d = \'nccl\' }, e = ["x", {f = "y"}] }\n'
DOTTED = 'a.b.c = "cuda"\n"q.k" . x = \'y\'\n[t]\nu.v = "w"  # c\n'
TABLE_ARRAYS = '[[a]]\n[[a.b]]\nm = "x"\n[[a.b]]\nm = "y"\n[[a]]\n[[a.b]]\nm = "z"\n[a.c]\nk = "w"\n'
ARRAY = 'x = [ # c\n  "a", # "no", ]\n  # ]\n  \'b\' ,\n\n]\ny = 2\n'
STRINGS = "lit = 'C:\\path'\nbasic = \"C:\\\\path\"\nml = '''\nline'''\nmb = \"\"\"\"q\"\"\"\"\nempty = ''\n"
ESCAPES = 'e = "a\\"b\\u00e9"\nlb = """a\\\n   b"""\nend = "\\\\"\n'
CRLF = '[d]\r\nb = "nccl" # c\r\nml = """\r\nx\r\n"""\r\nn = [\r\n  1,\r\n]\r\n'
NON_ASCII = '"é" = "ü"\nname = "日本"\nlist = [\'ñ\', "x"]\n'
SCALARS = "d = 1979-05-27 07:32:00Z\nh = 0x1F  # hex\nb = true\nf = -inf\n"


def values(text: str):
    return toml_values(text, tomlkit.parse(text).unwrap())


@pytest.mark.parametrize(
    "text,path,written,inside,read",
    [
        (INLINE, ("a", "b"), '"cuda"', "cuda", "cuda"),
        (INLINE, ("a", "c", "d"), "'nccl'", "nccl", "nccl"),
        (INLINE, ("a", "e", 1, "f"), '"y"', "y", "y"),
        (DOTTED, ("a", "b", "c"), '"cuda"', "cuda", "cuda"),
        (DOTTED, ("q.k", "x"), "'y'", "y", "y"),
        (DOTTED, ("t", "u", "v"), '"w"', "w", "w"),
        (TABLE_ARRAYS, ("a", 0, "b", 1, "m"), '"y"', "y", "y"),
        (TABLE_ARRAYS, ("a", 1, "b", 0, "m"), '"z"', "z", "z"),  # a new [[a]]: its [[a.b]] count again
        (TABLE_ARRAYS, ("a", 1, "c", "k"), '"w"', "w", "w"),
        (ARRAY, ("x", 0), '"a"', "a", "a"),
        (ARRAY, ("x", 1), "'b'", "b", "b"),
        (STRINGS, ("lit",), "'C:\\path'", "C:\\path", "C:\\path"),
        (STRINGS, ("basic",), '"C:\\\\path"', "C:\\\\path", "C:\\path"),
        (STRINGS, ("ml",), "'''\nline'''", "line", "line"),  # the first line break is not the value's
        (STRINGS, ("mb",), '""""q""""', '"q"', '"q"'),  # quotes just inside the delimiters
        (STRINGS, ("empty",), "''", "", ""),
        (ESCAPES, ("e",), '"a\\"b\\u00e9"', 'a\\"b\\u00e9', 'a"bé'),
        (ESCAPES, ("lb",), '"""a\\\n   b"""', "a\\\n   b", "ab"),
        (ESCAPES, ("end",), '"\\\\"', "\\\\", "\\"),
        (CRLF, ("d", "b"), '"nccl"', "nccl", "nccl"),
        (CRLF, ("d", "ml"), '"""\r\nx\r\n"""', "x\r\n", "x\r\n"),
        (NON_ASCII, ("é",), '"ü"', "ü", "ü"),
        (NON_ASCII, ("name",), '"日本"', "日本", "日本"),
        (NON_ASCII, ("list", 0), "'ñ'", "ñ", "ñ"),
    ],
)
def test_a_string_is_located(text, path, written, inside, read):
    value = values(text)[path]
    assert (value.kind, text[value.start : value.end], text[slice(*value.content)], value.text) == (
        "string",
        written,
        inside,
        read,
    )


@pytest.mark.parametrize(
    "text,path,kind,written,size",
    [
        (INLINE, ("a",), "table", INLINE[4:-1], 3),
        (INLINE, ("a", "e"), "array", '["x", {f = "y"}]', 2),
        (ARRAY, ("x",), "array", ARRAY[4 : ARRAY.index("]\ny")] + "]", 2),
        (ARRAY, ("y",), "other", "2", 0),
        (CRLF, ("d", "n"), "array", "[\r\n  1,\r\n]", 1),
        (SCALARS, ("d",), "other", "1979-05-27 07:32:00Z", 0),
        (SCALARS, ("h",), "other", "0x1F", 0),
        (SCALARS, ("b",), "other", "true", 0),
        (SCALARS, ("f",), "other", "-inf", 0),
    ],
)
def test_other_values_are_located(text, path, kind, written, size):
    value = values(text)[path]
    assert (value.kind, text[value.start : value.end], value.size) == (kind, written, size)


def test_a_dotted_key_or_a_table_is_no_value_of_its_own():
    assert sorted(values(DOTTED)) == [("a", "b", "c"), ("q.k", "x"), ("t", "u", "v")]
    assert sorted(values(TABLE_ARRAYS), key=str) == [
        ("a", 0, "b", 0, "m"),
        ("a", 0, "b", 1, "m"),
        ("a", 1, "b", 0, "m"),
        ("a", 1, "c", "k"),
    ]


@pytest.mark.parametrize(
    "text", [INLINE, DOTTED, TABLE_ARRAYS, ARRAY, STRINGS, ESCAPES, CRLF, NON_ASCII, SCALARS]
)
def test_every_span_reads_as_tomlkits_value(text):
    data = tomlkit.parse(text).unwrap()
    for path, value in values(text).items():
        expected = data
        for key in path:
            expected = expected[key]
        assert tomlkit.parse("x = " + text[value.start : value.end]).unwrap()["x"] == expected, path


def test_a_document_read_otherwise_than_tomlkit_is_not_located():
    assert toml_values('a = "x"\n', {"a": "y"}) is None
    assert toml_values('a = "x"\n', {"b": "x"}) is None
    assert toml_values("a = [1, 2]\n", {"a": [1]}) is None
    assert toml_values('a = "x" b\n', {"a": "x"}) is None  # text the scanner cannot follow


def test_toml_settings_have_byte_spans():
    text = NON_ASCII + 'device = "cuda"\n'
    data = text.encode("utf-8")
    spans = {setting.text: setting.span for setting in toml_config.read_settings(text)}
    assert {value: data[start:end].decode("utf-8") for value, (start, end) in spans.items()} == {
        "ü": "ü",
        "日本": "日本",
        "": "['ñ', \"x\"]",
        "ñ": "ñ",
        "x": "x",
        "cuda": "cuda",
    }


@pytest.mark.parametrize(
    "text,expected",
    [
        ('device = """\ncuda"""\n', 'device = """\nnpu"""\n'),
        ("device = '''\r\ncuda'''\r\n", "device = '''\r\nnpu'''\r\n"),
        (
            '[[a]]\n[[a.b]]\n[[a]]\n[[a.b]]\ndevice = "cuda"  # c\n',
            '[[a]]\n[[a.b]]\n[[a]]\n[[a.b]]\ndevice = "npu"  # c\n',
        ),
    ],
)
def test_a_toml_config_is_edited_at_the_located_value(text, expected):
    assert migrate_file("c.toml", text.encode("utf-8")).new_bytes == expected.encode("utf-8")
