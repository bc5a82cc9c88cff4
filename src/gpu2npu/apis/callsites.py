"""The record every analysis works on: one use of an API in one file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True, order=True)
class CallSite:
    file: str  # POSIX path relative to the project root
    start_line: int  # 1-based, in the original file
    end_line: int
    # fully qualified name through the file's imports ('torch.optim.Adam', 'torch.optim.Adam.step');
    # '' when unknown
    api: str
    kind: str  # 'call', 'base' (class base), 'decorator', 'import'
    method: str = (
        ""  # the called method's name when the receiver's type is unknown ('to' in x.to(d)); api is '' then
    )
    args: Tuple[str, ...] = ()  # source text of the positional arguments; a from-import's names
    keywords: Tuple[Tuple[str, str], ...] = ()  # (keyword, source text of the value)
    receiver: str = ""  # dotted receiver of a method call whose type is unknown ('ext' in ext.op(x))
    column: int = 1  # 1-based column where the use starts
    optional: bool = False  # an import with a fallback: in a try whose ImportError handler goes on
    tested: bool = False  # runs only where a hasattr test found it or a module above it (torch.accelerator)

    def keyword(self, name: str, default: str = None):
        for key, value in self.keywords:
            if key == name:
                return value
        return default
