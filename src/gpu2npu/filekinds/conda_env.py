"""conda environment files: ``environment.yml`` / ``environment.yaml`` always; other
``env*.yml``, ``environment*.yml`` and ``conda*.yml`` files (and ``.yaml``) only when their first
bytes show a top-level ``dependencies:`` or ``channels:`` key (else they are plain YAML configs).

Read with ruamel.yaml for the structure and positions; edited by byte span. The ``pip:`` list
is a requirements list: its torch is pinned and ``torch_npu==<release>`` added as the next item
(same indentation and quoting). conda packages are never edited: torch_npu is published on PyPI
only, so a conda ``pytorch`` is reported with what to do; CUDA packages (``cudatoolkit``,
``pytorch-cuda``, ``cudnn``, ``nccl``...) and the ``nvidia`` channel are reported, and every
package a rule knows goes into the dependency plan.
"""

from __future__ import annotations

import posixpath
import re
from typing import List, Optional, Tuple

from gpu2npu.filekinds import FileKind
from gpu2npu.filekinds._dependencies import (
    CONDA_TORCH,
    MANUAL,
    MIB,
    NAME,
    RequirementText,
    Written,
    conda_spec,
    index_report,
    normalise,
    pinned_requirement,
    plan_dependencies,
    read_pip_line,
    source_report,
    why_unread,
)
from gpu2npu.filekinds.base import CharOffsets, KindContext, KindOutcome, SpanEdits, decode

ALWAYS = ("environment.yml", "environment.yaml")
MAX_BYTES = MIB  # environment files are a few KiB; ruamel reads about 1 MiB a second
MAX_DEPTH = 100
CANDIDATE = re.compile(r"^(env|environment|conda)[^/]*\.ya?ml$")
TOP_KEYS = re.compile(rb"(?m)^(dependencies|channels)\s*:")
# A line as ruamel counts them (its line numbers are the positions): it breaks lines at \n, \r\n,
# a lone \r, NEL and the Unicode line and paragraph separators.
BREAKS = "\r\n\x85\u2028\u2029"
YAML_LINE = re.compile(f"[^{BREAKS}]*(?:\r\n|[{BREAKS}])|[^{BREAKS}]+$")
CONDA_ONLY = (
    "torch_npu is published on PyPI only: require torch=={torch} (the CPU build) and then "
    "torch_npu=={torch_npu} in the pip: list instead of conda's pytorch"
)


class CondaEnvironment(FileKind):
    name = "conda-env"
    order = 10

    def claims(self, rel, head):
        base = posixpath.basename(rel).lower()
        if base in ALWAYS:
            return True
        return bool(CANDIDATE.match(base)) and TOP_KEYS.search(head()) is not None

    def migrate(self, data: bytes, rel: str, context: KindContext) -> KindOutcome:
        problem = why_unread(data, MAX_BYTES, "a conda environment file")
        if problem:
            return KindOutcome(skipped=problem)
        text = decode(data)
        document, problem = load_yaml(text)
        if problem:
            return KindOutcome(skipped=f"invalid YAML ({problem}); copied unchanged")
        lines = YAML_LINE.findall(text)
        outcome = KindOutcome()  # the worker counts the lines
        if not isinstance(document, dict) or not isinstance(document.get("dependencies"), list):
            return outcome
        environment = _Environment(data, text, lines, context.index)
        environment.read(document)
        return environment.outcome(outcome)


def load_yaml(text: str):
    """(document, '') or (None, the parser's complaint on one line: 'line 3: ...')."""
    from ruamel.yaml import YAML  # a third of a second to import: only for files of this kind

    try:
        if too_deep(YAML(typ="rt", pure=True), text):
            return None, f"nested deeper than {MAX_DEPTH} levels"
        return YAML(typ="rt", pure=True).load(text), ""
    except Exception as exc:  # ruamel raises many kinds (and RecursionError on deep nesting)
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or first_line(exc)
        return None, f"line {mark.line + 1}: {problem}" if mark is not None else problem


def too_deep(yaml, text: str) -> bool:
    """Whether collections nest deeper than MAX_DEPTH (ruamel builds them recursively: a few
    thousand levels exhaust the stack, slowly), found from the parser's events."""
    depth = 0
    for event in yaml.parse(text):
        name = type(event).__name__
        if name in ("SequenceStartEvent", "MappingStartEvent"):
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif name in ("SequenceEndEvent", "MappingEndEvent"):
            depth -= 1
    return False


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class _Environment:
    def __init__(self, data: bytes, text: str, lines: List[str], index):
        self.data, self.text, self.lines, self.index = data, text, lines, index
        self.offsets = CharOffsets(text)
        self.line_starts = [0]
        for line in lines:
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.items: List[Written] = []
        self.reported = []

    def read(self, document) -> None:
        channels = document.get("channels")
        if isinstance(channels, list):
            for number, channel in enumerate(channels):
                if isinstance(channel, str):
                    line = channels.lc.item(number)[0] + 1
                    found = source_report(self.index, "conda_channel", channel.strip(), line)
                    if found is not None:
                        self.reported.append(found)
        dependencies = document["dependencies"]
        for number, dependency in enumerate(dependencies):
            if isinstance(dependency, str):
                self.conda_package(dependency, dependencies.lc.item(number)[0] + 1)
            elif isinstance(dependency, dict) and isinstance(dependency.get("pip"), list):
                pip = dependency["pip"]
                for position, item in enumerate(pip):
                    if isinstance(item, str):
                        self.pip_item(item, *pip.lc.item(position))

    def conda_package(self, spec: str, line: int) -> None:
        """A conda match specification: ``pytorch=2.1.0=py3.10_cuda11.8_0``, ``conda-forge::numpy``."""
        text = spec.split("::", 1)[-1]
        match = NAME.match(text.strip())
        if not match:
            return
        name = match.group()
        key = "torch" if normalise(name) == CONDA_TORCH else normalise(name)
        version = conda_spec(text.strip()[match.end() :])
        requirement = RequirementText(text=spec, name=name, key=key, name_start=0, name_end=len(name))
        if key != "torch" and version:  # compared as a pip specifier, shown as written
            requirement = RequirementText(spec, name, key, 0, len(name), version)
        self.items.append(Written(requirement, line, line, editable=False))

    def pip_item(self, item: str, line: int, column: int) -> None:
        pip = read_pip_line(item)
        found = index_report(self.index, pip.option, pip.value, line + 1)
        if found is not None:
            self.reported.append(found)
        if pip.requirement is None:
            return
        located = self.locate(item, line, column)
        editable = located is not None and not pip.option and not pip.requirement.url
        self.items.append(Written(pip.requirement, line + 1, line + 1, editable, located, MANUAL, "pip"))

    def locate(self, item: str, line: int, column: int) -> Optional[Tuple[int, str, str]]:
        """(character offset of the item's text, its quote, the text before it on its line) when
        the item is written on one line as it reads, else None."""
        if line >= len(self.lines):
            return None
        raw = self.lines[line].rstrip(BREAKS)
        rest = raw[column:]
        quote = rest[:1] if rest[:1] in ("'", '"') else ""
        if quote:
            close = rest.find(quote, 1)
            written = rest[1:close] if close > 0 else None
        else:  # a plain scalar ends at a comment, and in a flow list ([torch, numpy]) at , ] }
            end = re.search(r"\s#|[,\]}]" if "[" in raw[:column] else r"\s#", rest)
            written = (rest[: end.start()] if end else rest).rstrip()
        if written != item:
            return None
        return self.line_starts[line] + column + len(quote), quote, raw[:column]

    def outcome(self, outcome: KindOutcome) -> KindOutcome:
        plan = plan_dependencies(self.items, self.index, CONDA_ONLY)
        edits = SpanEdits(self.data)
        for pin in plan.pins:
            item = self.items[pin.item]
            start, end, new = pinned_requirement(item.requirement, pin.version)
            base = item.where[0]
            span = self.offsets.byte_offset(base + start), self.offsets.byte_offset(base + end)
            edits.replace(*span, new.encode("utf-8", "surrogateescape"), pin.message, pin.rule)
        for addition in plan.additions:
            item = self.items[addition.item]
            new, offset = self.next_item(item, addition.requirement)
            position = self.offsets.byte_offset(offset)
            edits.insert(position, new.encode("utf-8", "surrogateescape"), addition.message, addition.rule)
        outcome = edits.outcome(outcome)
        outcome.reported = sorted(self.reported + plan.reported)
        outcome.dependencies = plan.dependencies
        return outcome

    def next_item(self, item: Written, requirement: str) -> Tuple[str, int]:
        """The new list item after ``item`` and where it goes: a line of its own after a block
        item (``- torch``), or ``, item`` after a flow item (``[torch, numpy]``)."""
        start, quote, before = item.where
        line = item.line - 1
        if re.fullmatch(r"\s*-\s+", before):
            raw = self.lines[line]
            ending = raw[len(raw.rstrip(BREAKS)) :]
            new = f"{before}{quote}{requirement}{quote}"
            if ending:
                return new + ending, self.line_starts[line + 1]
            return "\n" + new, self.line_starts[line] + len(raw)
        end = start + len(item.requirement.text) + len(quote)
        return f", {quote}{requirement}{quote}", end
