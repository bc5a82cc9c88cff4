"""The trigger regexes of a rule index: one pattern matching any trigger word of the rules.

Plain words (most of them: ``cuda``, ``nccl`` and some 250 ``npu_*`` names) go into a trie
(``npu_(?:a(?:dd_...)|...)``): Python's ``re`` tries the branches of an alternation one by one at
each position, so a flat alternation of hundreds of words scans a file about ten times slower.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, Optional, Set, Tuple

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


Gated = Tuple[Tuple["re.Pattern[bytes]", "re.Pattern[bytes]"], ...]


def split_gated(patterns: Iterable) -> Tuple[Set[str], Set[Tuple[str, str]]]:
    """A kind's triggers: regexes, and ``(gate, pattern)`` pairs, whose two parts must both match
    somewhere in the file (one regex for both would rescan the file from every match of one)."""
    patterns = set(patterns)
    pairs = {p for p in patterns if isinstance(p, tuple)}
    return patterns - pairs, pairs


def compile_gated(pairs: Iterable[Tuple[str, str]]) -> Gated:
    """The pairs, one alternation of the patterns per gate: a file is tested for each gate once."""
    by_gate: Dict[str, Set[str]] = {}
    for gate, pattern in pairs:
        by_gate.setdefault(gate, set()).add(pattern)
    return tuple((alternation([gate]), alternation(patterns)) for gate, patterns in sorted(by_gate.items()))


def any_trigger(pattern: Optional["re.Pattern[bytes]"], gated: Gated, data: bytes) -> bool:
    """Whether a file matches the alternation, or both parts of one gated pair."""
    if pattern is not None and pattern.search(data) is not None:
        return True
    return any(gate.search(data) is not None and pair.search(data) is not None for gate, pair in gated)


def name_words(names: Iterable[str], patterns: Iterable[str]) -> Set[str]:
    """Words for qualified names, added to trigger ``patterns``: for each name, one that every
    reference to it contains.

    The rewrite resolves a reference through the file's own imports, so a reference to
    ``torch.distributed.is_nccl_available`` spells each segment after the root somewhere in the
    file (``dist.is_nccl_available`` after ``import torch.distributed as dist``, or
    ``from torch.distributed import is_nccl_available as ok``): any of them is a valid trigger.
    A name needs no word of its own when a segment contains a plain word already there (``nccl``
    in ``is_nccl_available``, ``DataParallel`` in ``torch.nn.parallel.DistributedDataParallel``);
    else it gets the segment under the root (``distributed``, ``nn``), which covers every
    longer name under it too.
    """
    words = {_unescaped(p) for p in patterns if re.escape(_unescaped(p)) == p}
    added: Set[str] = set()
    for name in sorted(names, key=lambda n: (n.count("."), n)):
        segments = name.split(".")[1:] or [name]
        if not any(word in segment for segment in segments for word in words):
            words.add(segments[0])
            added.add(segments[0])
    return added


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
