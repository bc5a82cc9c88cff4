"""The trigger regexes of a rule index: one pattern matching any trigger word of the rules.

Plain words (most of them: ``cuda``, ``nccl`` and some 250 ``npu_*`` names) go into a trie
(``npu_(?:a(?:dd_...)|...)``): Python's ``re`` tries the branches of an alternation one by one at
each position, so a flat alternation of hundreds of words scans a file about ten times slower.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, Optional

ESCAPED = re.compile(r"\\(.)", re.DOTALL)


def alternation(patterns: Iterable[str], text: bool = False) -> Optional[re.Pattern]:
    """One regex matching wherever one of the patterns does; of bytes, or of text with the
    same (ASCII) classes."""
    patterns = set(patterns)
    if not patterns:
        return None
    words = {p for p in patterns if re.escape(_unescaped(p)) == p}
    branches = sorted(patterns - words, key=len, reverse=True)
    if words:
        branches.append(_trie_pattern(_trie(_unescaped(w) for w in words)))
    pattern = "|".join(branches)
    return re.compile(pattern, re.ASCII) if text else re.compile(pattern.encode("utf-8"))


def without_lookaheads(pattern: str) -> str:
    """``pattern`` with its ``(?!...)`` groups removed: it matches wherever ``pattern`` does."""
    kept, position = [], 0
    while position < len(pattern):
        end = _token_end(pattern, position)
        if not pattern.startswith("(?!", position):
            kept.append(pattern[position:end])
        position = end
    return "".join(kept)


def _unescaped(pattern: str) -> str:
    return ESCAPED.sub(r"\1", pattern)


def _trie(words: Iterable[str]) -> Dict[str, dict]:
    root: Dict[str, dict] = {}
    for word in words:
        node = root
        for character in word:
            node = node.setdefault(character, {})
        node[""] = {}  # a word ends here
    return root


def _trie_pattern(node: Dict[str, dict]) -> str:
    branches = [re.escape(c) + _trie_pattern(child) for c, child in sorted(node.items()) if c]
    if not branches:
        return ""
    if len(branches) == 1 and "" not in node:
        return branches[0]
    return "(?:" + "|".join(branches) + ")" + ("?" if "" in node else "")


def _token_end(pattern: str, position: int) -> int:
    """Where the regex token at ``position`` ends: an escape, a character class, a whole
    group starting with ``(?!``, or one character."""
    if pattern[position] == "\\":
        return position + 2
    if pattern[position] == "[":
        end = position + 1
        end += pattern[end] == "^"
        end += pattern[end] == "]"  # a ] first in a class is a literal
        while pattern[end] != "]":
            end += 2 if pattern[end] == "\\" else 1
        return end + 1
    if pattern.startswith("(?!", position):
        depth, end = 0, position
        while True:
            if pattern[end] in "\\[":
                end = _token_end(pattern, end)
                continue
            depth += {"(": 1, ")": -1}.get(pattern[end], 0)
            end += 1
            if depth == 0:
                return end
    return position + 1
