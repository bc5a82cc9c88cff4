"""TOML configs (``*.toml``; ``pyproject.toml`` is the packaging kind's): settings migrated in
place (gpu2npu.filekinds._settings).

tomlkit checks the file (and says why one is invalid); ``_toml_spans.toml_values`` locates its
values in the text, as for pyproject.toml, and the edits are made on the original bytes.
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from gpu2npu.filekinds import FileKind
from gpu2npu.filekinds._settings import (
    LIST,
    SCALAR,
    STRING,
    InvalidConfig,
    Setting,
    migrate_config,
)
from gpu2npu.filekinds._toml_spans import Path, Value, toml_values
from gpu2npu.filekinds.base import CharOffsets

ERROR_PLACE = re.compile(r"\s+at line \d+ col \d+$")


class TomlConfig(FileKind):
    name = "toml"
    order = 30

    def claims(self, rel, head):
        return rel.lower().endswith(".toml")

    def migrate(self, data, rel, context):
        return migrate_config(data, context, "TOML", lambda text: (read_settings(text), ()))


def read_settings(text: str) -> List[Setting]:
    """Every value under a key, with the byte span of its characters (inside a string's quotes)."""
    values = toml_values(text, _parse(text))
    if values is None:
        raise InvalidConfig("TOML laid out in a way gpu2npu cannot follow")
    offsets = CharOffsets(text)
    settings = (_setting(value, text, offsets) for value in values.values())
    return [setting for setting in settings if setting is not None]


def _parse(text: str):
    """tomlkit's data of the document; InvalidConfig with the reason when it refuses it."""
    import tomlkit  # only for TOML files with a trigger
    from tomlkit.exceptions import ParseError, TOMLKitError

    try:
        return tomlkit.parse(text).unwrap()
    except ParseError as exc:
        problem = ERROR_PLACE.sub("", str(exc))
        raise InvalidConfig(f"invalid TOML (line {exc.line}: {' '.join(problem.split())})") from None
    except TOMLKitError as exc:
        raise InvalidConfig(f"invalid TOML ({' '.join(str(exc).split())})") from None
    except RecursionError:
        raise InvalidConfig("invalid TOML (nested too deeply)") from None
    except Exception as exc:  # noqa: BLE001 - any refusal of a third-party parser is an invalid file
        raise InvalidConfig(f"invalid TOML ({type(exc).__name__}: {' '.join(str(exc).split())})") from None


def _setting(value: Value, text: str, offsets: CharOffsets) -> Optional[Setting]:
    key, item = _setting_key(value.path)
    if key is None:
        return None
    if value.kind == "string":
        start, end = value.content
        return Setting(key, value.text, STRING, span=_bytes(offsets, start, end), item=item)
    span = _bytes(offsets, value.start, value.end)
    if value.kind in ("array", "table"):  # a list or an inline table: reported under its key, never edited
        return Setting(key, "", LIST, span=span) if value.size and not item else None
    return Setting(key, text[value.start : value.end], SCALAR, span=span, item=item)


def _setting_key(path: Path) -> Tuple[Optional[str], bool]:
    """(the key a value is under, whether it is an item of a list): an array's items are under the
    array's key; those of an array inside an array under none."""
    if isinstance(path[-1], str):
        return path[-1], False
    if len(path) > 1 and isinstance(path[-2], str):
        return path[-2], True
    return None, True


def _bytes(offsets: CharOffsets, start: int, end: int) -> Tuple[int, int]:
    return offsets.byte_offset(start), offsets.byte_offset(end)
