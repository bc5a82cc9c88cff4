"""What the analysis of one file needs to know about the run (sent once to each worker)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import FrozenSet, List, Mapping, Tuple

from gpu2npu.apis.callsites import CallSite
from gpu2npu.apis.collect import collect_calls

ANALYSED_ROOTS = frozenset({"torch", "torch_npu"})


@dataclass(frozen=True)
class AnalysisContext:
    version: str
    roots: FrozenSet[str] = (
        ANALYSED_ROOTS  # API roots whose uses are kept (torch, CUDA-only libraries, extensions)
    )
    methods: FrozenSet[str] = frozenset()  # method names kept even when the receiver is unknown
    detail_for: FrozenSet[str] = frozenset()  # APIs and methods whose argument texts an analysis reads
    references: FrozenSet[str] = frozenset()  # APIs whose references (not only calls) are uses
    # the project modules' names for the APIs they re-export -> those APIs (gpu2npu.project.scan)
    reexports: Mapping[str, str] = field(default_factory=dict)
    # by file, by module it star-imports as written, the names that binds (project.star_imports)
    star_bindings: Mapping[str, Mapping[str, Tuple[Tuple[str, str], ...]]] = field(default_factory=dict)
    pattern: "re.Pattern[bytes]" = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        words = sorted(self.roots) + sorted({name.rsplit(".", 1)[-1] for name in self.reexports})
        pattern = re.compile(b"|".join(re.escape(word.encode()) for word in words))
        object.__setattr__(self, "pattern", pattern)  # derived once from the roots

    def mentions(self, data: bytes) -> bool:
        """Cheap test: can this file use any analysed API at all?"""
        return self.pattern.search(data) is not None

    def keeps(self, site: CallSite) -> bool:
        if site.api:
            return site.api.split(".", 1)[0] in self.roots
        return site.method in self.methods or site.receiver.split(".", 1)[0] in self.roots


def analyse_source(data: bytes, rel: str, tree, context: AnalysisContext) -> List[CallSite]:
    """The uses of analysed APIs in one file (empty when it cannot be parsed)."""
    if tree is None or not context.mentions(data):
        return []
    sites = collect_calls(
        data,
        rel,
        context.detail_for,
        tree=tree,
        references=context.references,
        reexports=context.reexports,
        star_bindings=context.star_bindings.get(rel),
    )
    return [site for site in sites or () if context.keeps(site)]
