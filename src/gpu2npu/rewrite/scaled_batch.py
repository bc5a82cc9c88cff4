"""Batch sizes multiplied by the number of cards, in the distributed mode's main script.
DataParallel splits one batch among the cards, so scripts scale the batch size by them
(deep-text-recognition-benchmark: ``opt.batch_size = opt.batch_size * opt.num_gpu``, with
``opt.num_gpu = torch.cuda.device_count()``). Under torchrun each process loads a batch of its
own: the same line makes the global batch that many times larger again. Found on the stdlib ast
of the original."""

from __future__ import annotations

import ast
from typing import Dict, List, Set

from gpu2npu.source.imports import qualify
from gpu2npu.source.names import dotted
from gpu2npu.source.parse import module_nodes

COUNT = "device_count"  # torch.cuda.device_count, torch.npu.device_count, torch.accelerator.device_count


def scaled_batches(tree: ast.AST, imports: Dict[str, str]) -> List[int]:
    """Lines that bind a batch size to a product with the number of cards."""
    counts = _card_counts(tree, imports)
    lines = []
    for node in module_nodes(tree):
        if isinstance(node, ast.Assign) and any(_names_a_batch(target) for target in node.targets):
            product = node.value
        elif isinstance(node, ast.AugAssign) and _names_a_batch(node.target):
            product = node if isinstance(node.op, ast.Mult) else node.value
        else:
            continue
        if _multiplies_by(product, counts, imports):
            lines.append(node.lineno)
    return sorted(lines)


def _card_counts(tree: ast.AST, imports: Dict[str, str]) -> Set[str]:
    """The names bound to the number of cards (``opt.num_gpu = torch.cuda.device_count()``)."""
    return {
        dotted(target) or ""
        for node in module_nodes(tree)
        if isinstance(node, ast.Assign) and _counts_cards(node.value, imports)
        for target in node.targets
    } - {""}


def _counts_cards(node: ast.AST, imports: Dict[str, str]) -> bool:
    return isinstance(node, ast.Call) and qualify(dotted(node.func) or "", imports).endswith("." + COUNT)


def _names_a_batch(target: ast.AST) -> bool:
    name = dotted(target) or ""
    return "batch" in name.rsplit(".", 1)[-1].lower()


def _multiplies_by(node: ast.AST, counts: Set[str], imports: Dict[str, str]) -> bool:
    """A product (``a * n``, or ``a *= n``) one factor of which is the number of cards."""
    for child in ast.walk(node):
        if isinstance(child, ast.BinOp) and isinstance(child.op, ast.Mult):
            factors = (child.left, child.right)
        elif isinstance(child, ast.AugAssign) and isinstance(child.op, ast.Mult):
            factors = (child.value,)
        else:
            continue
        if any(_counts_cards(f, imports) or (dotted(f) or "") in counts for f in factors):
            return True
    return False
