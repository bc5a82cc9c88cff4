"""Which CUDA tests of a file stay CUDA tests (KeepGuardRule).

A test such as ``torch.cuda.is_available()`` or ``x.is_cuda`` in an ``if``, a conditional
expression or a ``while`` is kept when the statement (its test or a branch) uses code that runs
only on CUDA after the migration:

* a library the status rules mark ``cuda_only`` (``from apex.normalization import
  FusedLayerNorm``), reached through the file's imports;
* a C++/CUDA extension the project builds (``from detectron2 import _C``; a ``load()`` result);
* a torch name that keeps its CUDA name (``torch.cuda.get_device_capability``), or a call kept
  on CUDA where it is (KeepReadRule: ``torch.cuda.get_device_properties(0).major``);
* a name the file binds at module level to one of those: a class deriving from one, or a value
  taken from one (``multi_tensor_l2norm = amp_C.multi_tensor_l2norm``);
* a module-level function that builds CUDA sources (names a ``.cu`` file: stylegan's
  ``_init()``, which compiles the project's kernels);
* an attribute (``self.cuda_config``) that only code behind a kept test sets to a value (None
  elsewhere): a test choosing it must not let the NPU take it.
* in the test's own ``and``/``or`` chain, after the CUDA test, a call of a function that probes
  CUDA: one of the module's that uses CUDA-only code, or an imported one named for CUDA
  (accelerate's ``torch.cuda.is_available() and not check_cuda_fp8_capability()``).

A local name bound only to a CUDA test (``..., is_cuda, device = *q.shape, q.is_cuda, q.device``)
tests what that test tests: where kept branchings are all that read it, or its other reads only
choose what is shown (detectron2's ``has_gpu``), the test it is bound to is kept. An ``and``/``or``
chain outside any branching statement (a ``skipif`` decorator) keeps its test where its later
operands, run only on CUDA, use CUDA-only code.

A test is a CUDA test of the rule (``torch.cuda.is_available()``, ``x.is_cuda``) or a device
compared with ``'cuda'`` (``x.device.type == 'cuda'``), whose literal is kept then. A name compared
with ``'cuda'`` beside it that is no device (``impl == 'cuda' and x.device.type == 'cuda' and
_init()``) selects an implementation: its ``'cuda'`` literals are kept across the file (defaults,
keywords, assignments, comparisons), so it keeps naming the CUDA implementation, which the test
then refuses off CUDA.

Read on the stdlib ast, once per file, before the rewrite pass; the pass leaves the kept tests
as they are and the reports list them.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Dict, FrozenSet, Iterable, Iterator, List, NamedTuple, Optional, Set, Tuple

from gpu2npu.rewrite.changes import STRING, Kept
from gpu2npu.rewrite.compared import literal_numbers, scopes, walk_scope
from gpu2npu.rewrite.string_names import literal_rewritten
from gpu2npu.rules.index import ANY_RECEIVER, CudaSwitch, RuleIndex
from gpu2npu.source.imports import qualify
from gpu2npu.source.modules import imports_one_of
from gpu2npu.source.names import dotted, within
from gpu2npu.source.parse import module_nodes

CUDA = "cuda"
CUDA_SOURCES = (".cu", ".cuh")  # source files of CUDA kernels
EQUAL, UNEQUAL = (ast.Eq, ast.In), (ast.NotEq, ast.NotIn)


def kept_guards(
    tree: ast.AST,
    imports: Dict[str, str],
    index: RuleIndex,
    cuda_modules: FrozenSet[str] = frozenset(),
    kept_calls: FrozenSet[Tuple[int, str]] = frozenset(),
) -> List[Kept]:
    """The CUDA tests to keep in the file; ``cuda_modules``: the modules of the project's own
    C++/CUDA extensions (and the names ``load()`` results are bound to in this file);
    ``kept_calls``: (line, qualified name) of the calls other rules keep on CUDA."""
    modules = index.cuda_only_modules() | set(cuda_modules)
    cuda_only = CudaOnly(tree, imports, index, modules, kept_calls)
    rule_id = next(iter(index.guard_tests.values()), "")
    rule = index.rules_by_id.get(rule_id, {})
    rewritten = literal_rewritten(index)
    # a build gate (torch.version.cuda) is a CUDA test that needs no keeping: nothing rewrites it
    all_tests = {**index.guard_tests, **dict.fromkeys(index.build_gates, rule_id)}
    aliases = _test_aliases(tree, imports, all_tests, rewritten)
    branchings = []
    for node, after in _branchings(tree):
        tests = list(_guard_tests(node.test, imports, all_tests))
        devices = _device_literals(node.test, rewritten)
        named = aliases.get(id(node), {})
        read = [named[n.id] for n in ast.walk(node.test) if isinstance(n, ast.Name) and n.id in named]
        if tests or devices or read:
            branchings.append((node, after, tests, devices, read))
    found: Set[Kept] = set()
    literals: List[ast.Constant] = []
    # the literals kept by a test that excludes ROCm, or by a project's CUDA flag: works?, tip
    reported: Dict[int, Tuple[bool, str]] = {}
    selectors: Set[str] = set()
    kept_nodes: Set[int] = set()
    kept_reads: Set[int] = set()  # the names read in the tests of kept branchings
    chosen: Dict[Alias, List[ast.AST]] = {}  # the names read, with what NPU skips if they are kept
    fails: Set[Alias] = set()  # ... where the NPU's side of a branching reading it fails or moves
    paths: List[ast.AST] = []  # the code that runs only where a kept test says CUDA
    skipped: List[ast.AST] = []  # ... where the test says which side that is
    while True:
        for node, after, tests, devices, read in branchings:
            if id(node) in kept_nodes:
                continue
            named = {name: alias.test for name, alias in aliases.get(id(node), {}).items()}
            table = (all_tests, named)
            probes = cuda_only.probes_in(_later_operands(node.test, imports, table, rewritten))
            nvidia = _nvidia_only(node.test, imports, table, index.rocm_builds, rewritten)
            path = _cuda_path(node, after, imports, table, rewritten)
            # CUDA-only code on the side the NPU takes anyway keeps nothing: keeping the test would send
            # the NPU there (torchtitan's profiler: `elif torch.xpu.is_available(): ...XPU`)
            if probes or nvidia or any(cuda_only.used_in(part) for part in [node.test, *path]):
                kept_nodes.add(id(node))
                polarity = _polarity(node.test, imports, table, rewritten)
                sided = polarity in (1, -1)
                skips = sided and not _moves_to_npu(path, rewritten) and not _raises(node, polarity)
                mixes = sided and _mixes_with_cpu_tensors(node, after, polarity)
                works = skips and not mixes
                tip = rule.get("rocm_tip", "") if nvidia else ""
                found.update(
                    replace(test, works=skips and not (mixes and _of_a_tensor(test)), tip=tip)
                    for test in tests
                )
                literals += devices
                reported.update((id(literal), (works, tip)) for literal in devices if nvidia)
                selectors |= _selectors(node.test, rewritten)
                kept_reads.update(id(n) for n in ast.walk(node.test) if isinstance(n, ast.Name))
                paths += path
                side = path + _later_operands(node.test, imports, table, rewritten) if sided else []
                for alias in read:
                    chosen.setdefault(alias, []).extend(side if not tests else [])
                    fails.update([alias] if not skips else [])
                skipped += side if tests or not read else []
        if not paths or not cuda_only.learn_attributes(tree, paths):
            break
    for alias, side in chosen.items():  # kept only where no other read places, moves or stops anything
        if alias.reads <= kept_reads or alias.only_shown:
            works = alias not in fails
            found.update(replace(test, works=works) for test in _guard_tests(alias.test, imports, all_tests))
            skipped += side
    for tests, later in _short_circuits(
        tree, imports, all_tests, cuda_only, rewritten, index.rocm_builds, rule.get("rocm_tip", "")
    ):
        found.update(tests)
        skipped += later
    peer_tip = rule.get("peer_tip", "")
    flags = _peer_flags(tree, imports, all_tests)
    found.update(replace(test, works=True, tip=peer_tip) for test in flags.values())
    flag_sides = _flag_sides(tree, set(flags))
    skipped += flag_sides  # what runs only where the kept flag says CUDA
    flagged = _flagged_literals(flag_sides, rewritten)
    literals += flagged
    reported.update((id(literal), (True, peer_tip)) for literal in flagged)
    found = {kept for kept in found if kept.key not in index.build_gates}
    found = _strictest(found) | set(
        _skipped_calls(skipped, imports, index, kept_calls, rule.get("guarded_tip", ""))
    )
    if not literals and not selectors:
        return sorted(found)
    numbers = literal_numbers(tree)
    tip = rule.get("selector_tip", "")
    chosen = [(literal, False) for literal in literals]
    chosen += [(literal, True) for literal in _selector_literals(tree, selectors, rewritten)]
    for literal, selector in chosen:  # an implementation's name works as it is: a limit
        line, end = literal.lineno, literal.end_lineno or literal.lineno
        key = f"{STRING}{literal.value}#{numbers[(line, literal.col_offset)]}"
        works, why = reported.get(id(literal), (selector, tip if selector else ""))
        found.add(Kept(line, key, end, repr(literal.value), rule_id, works=works, tip=why))
    return sorted(found)


def kept_switches(
    tree: ast.AST, imports: Dict[str, str], switches: List[CudaSwitch], tests: Dict[str, str]
) -> List[Kept]:
    """The CUDA tests given to a library's CUDA switch (KeepSwitchRule), directly or through a
    local name that nothing else reads: on NPU the library then computes where it does on any
    machine without CUDA, rather than on a "cuda" the NPU host lacks."""
    found: List[Kept] = []
    for scope in scopes(tree):
        nodes = list(walk_scope(scope))
        given = {id(value): rule_id for value, rule_id in _switched(nodes, imports, switches)}
        for node in nodes:
            if id(node) in given and _is_test(node, imports, tests):
                found += _as_switch(node, imports, tests, given[id(node)])
        for name, value in _bound_tests(nodes, imports, tests):
            reads = [
                n for n in nodes if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
            ]
            if reads and all(id(read) in given for read in reads):
                found += _as_switch(value, imports, tests, given[id(reads[0])])
    return found


def _switched(nodes: List[ast.AST], imports, switches: List[CudaSwitch]) -> Iterator[Tuple[ast.AST, str]]:
    """(value, rule id) of each switch keyword given in a call of its library."""
    for node in nodes:
        if isinstance(node, ast.Call):
            callee = qualify(dotted(node.func) or "", imports)
            for switch in switches:
                if callee in switch.funcs:
                    yield from ((k.value, switch.rule_id) for k in node.keywords if k.arg == switch.keyword)


def _bound_tests(nodes: List[ast.AST], imports, tests) -> Iterator[Tuple[str, ast.AST]]:
    """``name = torch.cuda.is_available()`` in the scope, where the name is bound only there."""
    bindings: Dict[str, List[ast.AST]] = {}
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bindings.setdefault(node.id, []).append(node)
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if len(bindings.get(name, [])) == 1 and _is_test(node.value, imports, tests):
                yield name, node.value


def _as_switch(test: ast.AST, imports, tests, rule_id: str) -> List[Kept]:
    return [replace(kept, rule_id=rule_id, works=True) for kept in _guard_tests(test, imports, tests)]


def _cuda_literals(node: ast.AST, rewritten) -> List[ast.Constant]:
    """``'cuda'``, or the ``'cuda'`` items of a tuple, list or set display, where a rule would
    rewrite it."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [
        item
        for item in items
        if isinstance(item, ast.Constant) and item.value == CUDA and rewritten(item.value)
    ]


def _comparisons(test: ast.AST) -> Iterator[Tuple[ast.AST, ast.cmpop, List[ast.Constant]]]:
    """(a compared name or attribute, the operator, what it is compared with) of each single
    comparison in a test, both ways round."""
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        left, right = node.left, node.comparators[0]
        for value, other in ((left, right), (right, left)):
            if isinstance(value, (ast.Name, ast.Attribute)):
                yield value, node.ops[0], other


def _is_device(value: ast.AST) -> bool:
    """``x.device.type``, ``device``, ``args.device_type``: a device (the other side of a
    comparison with 'cuda' that is not an implementation's name)."""
    last = (dotted(value) or "").rsplit(".", 1)[-1]
    return last == "type" or "device" in last


def _device_literals(test: ast.AST, rewritten) -> List[ast.Constant]:
    """The 'cuda' literals a device is compared with in a test (``x.device.type == 'cuda'``)."""
    return [
        literal
        for value, op, other in _comparisons(test)
        if isinstance(op, EQUAL + UNEQUAL) and _is_device(value)
        for literal in _cuda_literals(other, rewritten)
    ]


def _selectors(test: ast.AST, rewritten) -> Set[str]:
    """Names compared with 'cuda' in a kept test that are no device: implementation selectors."""
    return {
        (dotted(value) or "").rsplit(".", 1)[-1]
        for value, op, other in _comparisons(test)
        if isinstance(op, EQUAL + UNEQUAL) and not _is_device(value) and _cuda_literals(other, rewritten)
    }


def _selector_literals(tree: ast.AST, selectors: Set[str], rewritten) -> List[ast.Constant]:
    """Every 'cuda' literal of the file given to or compared with a selector: its parameters'
    defaults, keywords, assignments and comparisons."""
    if not selectors:
        return []

    def named(node: ast.AST) -> bool:
        return (dotted(node) or "").rsplit(".", 1)[-1] in selectors

    found: List[ast.Constant] = []
    for node in module_nodes(tree):
        if isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args
            pairs = list(zip(positional[len(positional) - len(node.defaults) :], node.defaults))
            pairs += [(arg, default) for arg, default in zip(node.kwonlyargs, node.kw_defaults) if default]
            found += [
                c
                for arg, default in pairs
                if arg.arg in selectors
                for c in _cuda_literals(default, rewritten)
            ]
        elif isinstance(node, ast.keyword) and node.arg in selectors:
            found += _cuda_literals(node.value, rewritten)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(named(target) for target in targets):
                found += _cuda_literals(node.value, rewritten)
        elif isinstance(node, ast.Compare):
            found += [
                c
                for value, _, other in _comparisons(node)
                if named(value)
                for c in _cuda_literals(other, rewritten)
            ]
    return found


def _polarity(test: ast.AST, imports, table, rewritten) -> Optional[int]:
    """1 where the test is true on CUDA only (``torch.cuda.is_available() and x``), -1 where it is
    false on CUDA only (``not x.is_cuda or y``), 0 where it cannot say, None without a CUDA test;
    ``table``: the rule's tests and the scope's names bound to one."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _polarity(test.operand, imports, table, rewritten)
        return -inner if inner else inner
    if isinstance(test, ast.BoolOp):
        parts = {_polarity(value, imports, table, rewritten) for value in test.values} - {None}
        if not parts:
            return None
        wanted = 1 if isinstance(test.op, ast.And) else -1  # the one that decides the whole test
        return wanted if parts == {wanted} else 0
    if isinstance(test, ast.Compare):
        literals = _device_literals(test, rewritten)
        if literals:
            return 1 if isinstance(test.ops[0], EQUAL) else -1
    if next(_guard_tests(test, imports, *table), None) is not None:
        return 1 if isinstance(test, (ast.Call, ast.Attribute, ast.Name)) else 0
    return None


def _short_circuits(
    tree: ast.AST, imports, table, cuda_only, rewritten, rocm_builds: Set[str], rocm_tip: str
) -> Iterator[Tuple[List[Kept], List[ast.AST]]]:
    """The CUDA tests of ``and``/``or`` chains whose later operands run only where the test says
    CUDA and use CUDA-only code (x-transformers' ``skipif(not torch.cuda.is_available() or
    torch.cuda.get_device_capability()[0] < 8)``, a decorator, no branching statement), with those
    operands (the NPU never runs them). A chain that excludes ROCm (``torch.cuda.is_available() and
    torch.version.hip is None``) keeps its tests as a limit: the NPU answers it as ROCm does."""
    for node in module_nodes(tree):
        if not isinstance(node, ast.BoolOp):
            continue
        on_cuda = 1 if isinstance(node.op, ast.And) else -1  # the polarity that lets the rest run on CUDA
        nvidia = _nvidia_only(node, imports, (table, {}), rocm_builds, rewritten)
        for position, value in enumerate(node.values[:-1]):
            if _polarity(value, imports, (table, {}), rewritten) != on_cuda:
                continue
            later = node.values[position + 1 :]
            tests = list(_guard_tests(value, imports, table))
            if nvidia:
                yield [replace(test, works=True, tip=rocm_tip) for test in tests], later
            elif cuda_only.probes_in(later) or any(cuda_only.used_in(operand) for operand in later):
                yield tests, later


def _nvidia_only(test: ast.AST, imports, table, rocm_builds: Set[str], rewritten) -> bool:
    """Whether an ``and`` chain in the test joins a CUDA test to one that the build is not ROCm's
    (torchtitan's ``device_type == "cuda" and torch.cuda.is_available() and torch.version.hip is
    None``): ROCm speaks torch.cuda too, so the author meant NVIDIA's CUDA alone, and the NPU
    must take the way ROCm takes, not NVIDIA's."""
    for node in ast.walk(test):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            operands = node.values
            if any(_not_rocm(o, imports, rocm_builds) for o in operands) and any(
                next(_guard_tests(o, imports, *table), None) is not None or _device_literals(o, rewritten)
                for o in operands
            ):
                return True
    return False


def _not_rocm(test: ast.AST, imports, rocm_builds: Set[str]) -> bool:
    """``torch.version.hip is None`` or ``not torch.version.hip``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return qualify(dotted(test.operand) or "", imports) in rocm_builds
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.Eq))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and qualify(dotted(test.left) or "", imports) in rocm_builds
    )


def _moves_to_npu(path: List[ast.AST], rewritten) -> bool:
    """Whether the CUDA side of a kept test places anything on the device the migration moves to
    the NPU (a 'cuda' literal, a ``.cuda()`` call): on NPU that side never runs, so the program would
    not use the NPU there (``device = 'npu' if torch.cuda.is_available() and ... else 'cpu'``)."""
    for node in (child for part in path for child in ast.walk(part)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and rewritten(node.value):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == CUDA:
            return True
    return False


def _raises(node: ast.AST, polarity: int) -> bool:
    """Whether the side of a kept test that the NPU takes raises (detectron2's ``if not
    input.is_cuda: raise NotImplementedError(...)``): there the NPU fails, not works slower."""
    side = node.body if polarity == -1 else node.orelse
    side = side if isinstance(side, list) else [side]
    return any(isinstance(child, ast.Raise) for statement in side for child in ast.walk(statement))


CPU_TENSOR_TYPES = frozenset(
    f"torch.{kind}Tensor"
    for kind in ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool")
)


def _of_a_tensor(test: Kept) -> bool:
    return test.key.startswith(ANY_RECEIVER)


def _mixes_with_cpu_tensors(node: ast.AST, after: List[ast.stmt], polarity: int) -> bool:
    """Whether the side of ``x.is_cuda`` the NPU takes combines the tested tensor with one it
    builds on the CPU (dino's PCA: ``torch.mm(torch.FloatTensor(m), x)``): ``x`` is on the NPU
    there, not on the CPU as that side expects, so the operation fails. ``after``: the statements
    that follow a branch that leaves (its other side)."""
    receivers = {
        dotted(n.value) for n in ast.walk(node.test) if isinstance(n, ast.Attribute) and n.attr == "is_cuda"
    } - {None}
    side = node.body if polarity == -1 else node.orelse or after
    for statement in side if isinstance(side, list) else [side]:
        for child in ast.walk(statement):
            operands = _operands(child)
            if any(_builds_on_cpu(o) for o in operands) and any(_reads(o, receivers) for o in operands):
                return True
    return False


def _operands(node: ast.AST) -> List[ast.AST]:
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.AugAssign):
        return [node.target, node.value]
    if isinstance(node, ast.Call):
        return list(node.args)
    return []


def _builds_on_cpu(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and dotted(node.func) in CPU_TENSOR_TYPES


def _reads(node: ast.AST, names: Set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _later_operands(test: ast.AST, imports, table, rewritten) -> List[ast.AST]:
    """The operands of ``and``/``or`` chains in a test that run only where an earlier one says
    CUDA (``torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8``)."""
    return [
        later
        for node in ast.walk(test)
        if isinstance(node, ast.BoolOp)
        for position, value in enumerate(node.values[:-1])
        if _polarity(value, imports, table, rewritten) == (1 if isinstance(node.op, ast.And) else -1)
        for later in node.values[position + 1 :]
    ]


def _skipped_calls(
    skipped: List[ast.AST], imports, index: RuleIndex, kept_calls: FrozenSet[Tuple[int, str]], tip: str
) -> Iterator[Kept]:
    """The calls kept on CUDA (no NPU counterpart, or a read the NPU cannot give) and the imports
    of CUDA-only libraries that run only where a kept test says CUDA: the NPU never makes them, so
    they work there as they are (``if torch.cuda.is_available(): cap =
    torch.cuda.get_device_capability()``; ``import pynvml`` there)."""
    torch_cuda_only = index.cuda_only_torch_names()
    libraries = index.cuda_only_libraries()
    for node in (child for part in skipped for child in ast.walk(part)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from _skipped_imports(node, libraries, tip)
            continue
        if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
            continue
        name = qualify(dotted(node.func) or "", imports)
        line = node.func.lineno
        if (line, name) in kept_calls:
            rule_id = index.kept_reads[name][1]
        elif name.startswith("torch.") and index.stays_on_cuda(name):
            rule_id = index.resolve_name(name).rule_id
        elif name in torch_cuda_only:
            rule_id = torch_cuda_only[name]
        else:
            continue
        yield Kept(line, name, node.func.end_lineno or line, name, rule_id, works=True, tip=tip)


def _skipped_imports(node: ast.AST, libraries: Dict[str, str], tip: str) -> Iterator[Kept]:
    """An import of a CUDA-only library on a side the NPU skips, named as the API reports name
    it (the module), so the kept row takes the place of the library's error."""
    modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    for module in modules:
        rule_id = next((r for api, r in libraries.items() if within(module, api)), None)
        if rule_id is not None and not getattr(node, "level", 0):
            line = node.lineno
            yield Kept(line, module, node.end_lineno or line, module, rule_id, works=True, tip=tip)


def _strictest(found: Iterable[Kept]) -> Set[Kept]:
    """One row per kept test: where one branching keeps it as a limit and another as failing
    (a name bound to it read in both), failing."""
    rows: Dict[Tuple[int, str], Kept] = {}
    for kept in sorted(found, key=lambda k: k.works):
        rows.setdefault((kept.line, kept.key), kept)
    return set(rows.values())


def _cuda_path(node: ast.AST, after: List[ast.stmt], imports, table, rewritten) -> List[ast.AST]:
    """What of a kept branching runs only where its test says CUDA."""
    polarity = _polarity(node.test, imports, table, rewritten)
    body = node.body if isinstance(node.body, list) else [node.body]
    orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
    if polarity == 1:
        return body
    if polarity == -1:
        return orelse + after
    return body + orelse + after


def _branchings(tree: ast.AST) -> Iterator[Tuple[ast.AST, List[ast.stmt]]]:
    """Each if, while and conditional expression, with the statements that follow an ``if``
    whose body always leaves the block (``if not x.is_cuda: return y`` then the CUDA path)."""
    for node in module_nodes(tree):
        if isinstance(node, ast.IfExp):
            yield node, []
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for position, statement in enumerate(block):
                if isinstance(statement, ast.If) and _leaves(statement.body) and not statement.orelse:
                    yield statement, block[position + 1 :]
                elif isinstance(statement, (ast.If, ast.While)):
                    yield statement, []


class Alias(NamedTuple):
    """A local name bound only to a CUDA test: that test, and where the name is read."""

    test: ast.AST
    reads: FrozenSet[int]  # ids of its Name nodes read in the scope
    only_shown: bool  # every read only picks what is shown or skipped (detectron2's has_gpu)


def _test_aliases(tree: ast.AST, imports, table, rewritten) -> Dict[int, Dict[str, Alias]]:
    """For each branching, the local names of its scope bound to a CUDA test and to nothing else
    (``is_cuda = q.is_cuda``; ``_, is_cuda = *q.shape, q.is_cuda``)."""
    found: Dict[int, Dict[str, Alias]] = {}
    for scope in [tree, *(n for n in module_nodes(tree) if isinstance(n, SCOPES))]:
        nodes = list(_scope_nodes(scope))
        bound: Dict[str, List[Optional[ast.AST]]] = {}
        assigned: Set[int] = set()
        for node in nodes:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    assigned.update(id(name) for name in ast.walk(target))
                    for name, value in _unpacked(target, node.value):
                        bound.setdefault(name, []).append(value)
        reads: Dict[str, Set[int]] = {}
        for node in nodes:
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and id(node) not in assigned:
                bound.setdefault(node.id, []).append(None)  # bound otherwise (for, with, walrus)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                reads.setdefault(node.id, set()).add(id(node))
            elif isinstance(node, ast.arg):
                bound.setdefault(node.arg, []).append(None)
        names = [
            name
            for name, values in bound.items()
            if all(value is not None and _is_test(value, imports, table) for value in values)
        ]
        if names:
            uses = _Uses(scope, nodes, reads, rewritten)
            aliases = {
                name: Alias(bound[name][0], frozenset(reads.get(name, ())), uses.only_shown(name))
                for name in names
            }
            found.update((id(n), aliases) for n in nodes if isinstance(n, (ast.If, ast.While, ast.IfExp)))
    return found


class _Uses:
    """What the statements reading a local name do. A name bound to a CUDA test can keep that test
    where every read only chooses what is shown or skipped: a branching (or a name bound from it,
    followed) that places or moves nothing on a device, raises, asserts or exits; any other read
    (returned, passed on, stored on an object) could let the NPU lose its device or its run."""

    def __init__(self, scope: ast.AST, nodes: List[ast.AST], reads: Dict[str, Set[int]], rewritten):
        self.reads, self.rewritten = reads, rewritten
        self.parent = {id(child): node for node in [scope, *nodes] for child in ast.iter_child_nodes(node)}
        self.nodes = {id(node): node for node in nodes}

    def only_shown(self, name: str, seen: FrozenSet[str] = frozenset()) -> bool:
        seen |= {name}
        return all(self._only_shows(self.nodes[read], seen) for read in self.reads.get(name, ()))

    def _only_shows(self, read: ast.AST, seen: FrozenSet[str]) -> bool:
        statement = read
        while not isinstance(statement, ast.stmt):
            statement = self.parent[id(statement)]
        if isinstance(statement, (ast.If, ast.While)) and any(n is read for n in ast.walk(statement.test)):
            return not self._acts_on_device(statement)
        if isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets):
            followed = [t.id for t in statement.targets if t.id not in seen]
            return not self._acts_on_device(statement.value) and all(
                self.only_shown(name, seen) for name in followed
            )
        return False

    def _acts_on_device(self, node: ast.AST) -> bool:
        """Whether code places or moves anything on a device (a device string, ``.cuda()``, ``.to()``,
        a ``device=`` keyword) or stops the run (raise, assert, exit)."""
        for child in ast.walk(node):
            if isinstance(child, (ast.Raise, ast.Assert)):
                return True
            if (
                isinstance(child, ast.Constant)
                and isinstance(child.value, str)
                and self.rewritten(child.value)
            ):
                return True
            if isinstance(child, ast.Call) and (
                (isinstance(child.func, ast.Attribute) and child.func.attr in (CUDA, "to"))
                or dotted(child.func) in STOPS
                or any(keyword.arg == "device" for keyword in child.keywords)
            ):
                return True
        return False


STOPS = frozenset({"exit", "quit", "sys.exit", "os._exit"})


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)  # where local names are bound (lambdas bind none)
FUNCTIONS = SCOPES + (ast.Lambda,)


def _scope_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of one function (or the module), not those of the functions and classes in it."""
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, FUNCTIONS + (ast.ClassDef,)):
            pending.extend(ast.iter_child_nodes(node))


def _unpacked(target: ast.AST, value: ast.AST) -> Iterator[Tuple[str, Optional[ast.AST]]]:
    """(name, the expression it is bound to, None where it cannot say) of an assignment,
    through tuple unpacking, also around one starred item (``a, b = *shape, x``)."""
    if isinstance(target, ast.Name):
        yield target.id, value
        return
    pairs = _aligned(target, value)
    if pairs is None:
        yield from _unbound(target)
        return
    for name, item in pairs:
        yield from _unpacked(name, item) if item is not None else _unbound(name)


def _aligned(target: ast.AST, value: ast.AST) -> Optional[List[Tuple[ast.AST, Optional[ast.AST]]]]:
    """The targets of a tuple assignment with their values (None: filled by the starred value)
    where the shapes match: ``a, b, c = *shape, x`` pairs c with x."""
    if not (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))):
        return None
    names, values = target.elts, value.elts
    starred = [i for i, item in enumerate(values) if isinstance(item, ast.Starred)]
    if any(isinstance(name, ast.Starred) for name in names) or len(starred) > 1:
        return None
    if not starred:
        return list(zip(names, values)) if len(names) == len(values) else None
    head, tail = starred[0], len(values) - starred[0] - 1
    if head + tail > len(names):
        return None
    filled = len(names) - tail
    return [
        *zip(names[:head], values[:head]),
        *((name, None) for name in names[head:filled]),
        *zip(names[filled:], values[head + 1 :]),
    ]


def _unbound(target: ast.AST) -> Iterator[Tuple[str, None]]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node.id, None


def _is_test(value: ast.AST, imports, table) -> bool:
    """Whether an expression is one of the rule's CUDA tests itself (``q.is_cuda``)."""
    if isinstance(value, ast.Attribute):
        return ANY_RECEIVER + value.attr in table
    return isinstance(value, ast.Call) and qualify(dotted(value.func) or "", imports) in table


def _peer_flags(tree: ast.AST, imports, table) -> Dict[str, Kept]:
    """The CUDA tests bound at module level to a name for CUDA where the module binds a name for
    the NPU too (verl's ``is_cuda_available = torch.cuda.is_available()`` beside
    ``is_npu_available = ...``), by name: the project dispatches between the two itself, so its
    CUDA flag must keep saying CUDA, or the NPU would take every CUDA arm."""
    bound = [
        (target.id, statement.value)
        for statement in _module_level(tree)
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None
        for target in getattr(statement, "targets", [getattr(statement, "target", None)])
        if isinstance(target, ast.Name)
    ]
    if not any(_names_device(name, "npu") for name, _ in bound):
        return {}
    return {
        name: test
        for name, value in bound
        if _names_device(name, CUDA)
        for test in _guard_tests(value, imports, table)
    }


def _flag_sides(tree: ast.AST, flags: Set[str]) -> List[ast.AST]:
    """The statements (or expression) a branching runs only where a kept CUDA flag is true
    (``if is_cuda_available: ...``)."""
    sides: List[ast.AST] = []
    for node in module_nodes(tree) if flags else ():
        if isinstance(node, (ast.If, ast.IfExp)) and _requires(node.test, flags):
            sides += node.body if isinstance(node.body, list) else [node.body]
    return sides


def _flagged_literals(sides: List[ast.AST], rewritten) -> List[ast.Constant]:
    """The device strings those sides give (``device = "cuda"``): they stay CUDA's."""
    found: List[ast.Constant] = []
    for side in sides:
        value = side if isinstance(side, ast.Constant) else getattr(side, "value", None)
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and rewritten(value.value):
            found.append(value)
    return found


def _requires(test: ast.AST, flags: Set[str]) -> bool:
    """Whether a test is true only where one of ``flags`` is (``flag``, ``flag and x``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_requires(value, flags) for value in test.values)
    return isinstance(test, ast.Name) and test.id in flags


def _names_device(name: str, device: str) -> bool:
    return device in name.lower().split("_")


def _leaves(block: List[ast.stmt]) -> bool:
    return bool(block) and isinstance(block[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _guard_tests(
    test: ast.AST,
    imports: Dict[str, str],
    table: Dict[str, str],
    aliases: Optional[Dict[str, ast.AST]] = None,
) -> Iterator[Kept]:
    """The rule's CUDA tests in a test, and those the names it reads are bound to (``aliases``)."""
    for node in ast.walk(test):
        if isinstance(node, ast.Name) and aliases and node.id in aliases:
            yield from _guard_tests(aliases[node.id], imports, table)
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            name = qualify(dotted(node.func) or "", imports)  # is_torch_cuda_available(): transformers'
            if name in table:
                yield Kept(
                    node.func.lineno, name, node.func.end_lineno or node.func.lineno, name, table[name]
                )
        elif isinstance(node, ast.Attribute) and (name := qualify(dotted(node) or "", imports)) in table:
            yield Kept(
                node.lineno, name, node.end_lineno or node.lineno, name, table[name]
            )  # torch.version.cuda
        elif isinstance(node, ast.Attribute) and ANY_RECEIVER + node.attr in table:
            test_key = ANY_RECEIVER + node.attr
            line = node.end_lineno or node.lineno
            yield Kept(line, test_key, line, f"torch.Tensor.{node.attr}", table[test_key])


class CudaOnly:
    """What in one file runs only on CUDA after the migration."""

    def __init__(
        self,
        tree: ast.AST,
        imports: Dict[str, str],
        index: RuleIndex,
        modules: Set[str],
        kept_calls: FrozenSet[Tuple[int, str]] = frozenset(),
    ):
        self.imports = imports
        self.index = index
        self.modules = modules
        self.kept_calls = kept_calls
        self.torch_names = index.cuda_only_torch_names()
        self.local: Set[str] = set()  # module-level names bound to CUDA-only code
        self.attributes: Set[str] = set()  # self.<name> set to a value only behind kept CUDA tests
        self._bind_locals(tree)
        self.imported = set(imports) | {  # names the file's imports bind, relative ones too
            alias.asname or alias.name
            for node in module_nodes(tree)
            if isinstance(node, ast.ImportFrom) and node.level
            for alias in node.names
        }
        self.probes = {  # module-level functions that use CUDA-only code
            s.name
            for s in _module_level(tree)
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(map(self.used_in, s.body))
        }

    def probes_in(self, operands: List[ast.AST]) -> bool:
        """Whether the operands a CUDA test guards call a function that probes CUDA: one of the
        module's that uses CUDA-only code, or an imported one named for CUDA (accelerate's
        ``torch.cuda.is_available() and not check_cuda_fp8_capability()``, which asks nvidia-smi,
        then torch.cuda.get_device_capability()). The NPU must not make the call either."""
        for node in (child for operand in operands for child in ast.walk(operand)):
            name = dotted(node.func) if isinstance(node, ast.Call) else None
            if not name:
                continue
            if name in self.probes:
                return True
            qualified = qualify(name, self.imports)
            imported = name.split(".")[0] in self.imported or "." in name
            if imported and not qualified.startswith("torch.") and _named_for_cuda(name.rsplit(".", 1)[-1]):
                return True
        return False

    def learn_attributes(self, tree: ast.AST, paths: List[ast.AST]) -> bool:
        """Take in the attributes of ``self`` that only code of ``paths`` sets to a value (None
        elsewhere); whether there are new ones."""
        inside = {id(child) for path in paths for child in ast.walk(path)}
        set_inside: Set[str] = set()  # set to a value in the paths
        set_outside: Set[str] = set()  # ... elsewhere
        for node in module_nodes(tree):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            if isinstance(node.value, ast.Constant) and node.value.value is None:
                continue  # None is what the other paths see: no value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {dotted(target) or "" for target in targets}
            (set_inside if id(node) in inside else set_outside).update(
                name for name in names if name.startswith("self.")
            )
        new = set_inside - set_outside - self.attributes
        self.attributes |= new
        return bool(new)

    def used_in(self, node: ast.AST) -> bool:
        """Whether a whole dotted name under ``node`` is CUDA-only (``torch.cuda`` inside
        ``torch.cuda.is_available`` is no use of its own)."""
        children = list(ast.walk(node))
        inner = {id(child.value) for child in children if isinstance(child, ast.Attribute)}
        return any(id(child) not in inner and self._is_cuda_only(child) for child in children)

    def _is_cuda_only(self, node: ast.AST) -> bool:
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return False
        name = dotted(node)
        if name is None:
            return False
        if name.split(".")[0] in self.local:
            return True
        if self.attributes and any(within(name, attribute) for attribute in self.attributes):
            return True
        qualified = qualify(name, self.imports)
        if any(within(qualified, module) for module in self.modules) or qualified in self.torch_names:
            return True
        if (node.lineno, qualified) in self.kept_calls:
            return True
        return qualified.startswith("torch.") and self.index.stays_on_cuda(qualified)

    def _bind_locals(self, tree: ast.AST) -> None:
        """Names bound by relative imports of the project's CUDA-only modules (``from
        .triton_ops import dtw_kernel``), module-level functions that build CUDA sources or
        import CUDA-only code first thing (whisper's ``dtw_cuda``), classes deriving from
        CUDA-only code and names assigned from it (until nothing new is found: a class may
        derive from another such class)."""
        self.local.update(
            name
            for node in module_nodes(tree)
            if isinstance(node, ast.ImportFrom) and node.level
            for name in self._relative_cuda_only(node)
        )
        statements = list(_module_level(tree))
        self.local.update(
            s.name
            for s in statements
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (_builds_cuda(s) or any(self._imports_cuda_only(inner) for inner in s.body))
        )
        grew = True
        while grew:
            before = len(self.local)
            for statement in statements:
                if isinstance(statement, ast.ClassDef):
                    if any(self.used_in(base) for base in statement.bases):
                        self.local.add(statement.name)
                elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                    if self.used_in(statement.value):
                        targets = (
                            statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                        )
                        self.local.update(t.id for t in targets if isinstance(t, ast.Name))
            grew = len(self.local) > before
        self.attributes |= self._cuda_only_attributes(tree)

    def _cuda_only_attributes(self, tree: ast.AST) -> Set[str]:
        """The attributes of ``self`` that every assignment sets to CUDA-only code (gpt-neox's
        ``self.norm_fn = FusedRMSNormAffineFunction``, later called as ``self.norm_fn.apply``)."""
        values: Dict[str, List[ast.AST]] = {}
        for node in module_nodes(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    name = dotted(target) or ""
                    if name.startswith("self.") and name.count(".") == 1:
                        values.setdefault(name, []).append(node.value)
        return {name for name, assigned in values.items() if all(self.used_in(value) for value in assigned)}

    def _relative_cuda_only(self, node: ast.ImportFrom) -> List[str]:
        """The local names a relative import binds to CUDA-only code."""
        module = "." * node.level + (node.module or "")
        joined = module + ("." if node.module else "")
        return [
            alias.asname or alias.name
            for alias in node.names
            if any(within(module, m) or within(joined + alias.name, m) for m in self.modules)
        ]

    def _imports_cuda_only(self, statement: ast.stmt) -> bool:
        if isinstance(statement, ast.ImportFrom) and statement.level:
            return bool(self._relative_cuda_only(statement))
        return imports_one_of(statement, self.modules)


def _named_for_cuda(name: str) -> bool:
    """``check_cuda_fp8_capability``, ``is_cuda_graph_safe``: a word of the name is cuda (not
    the tensor method ``.cuda()`` itself)."""
    words = name.lower().split("_")
    return len(words) > 1 and CUDA in words


def _builds_cuda(function: ast.AST) -> bool:
    """A function naming CUDA source files (``sources = ['op.cpp', 'op.cu']``): it builds the
    project's CUDA kernels."""
    return any(
        isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(CUDA_SOURCES)
        for node in ast.walk(function)
    )


def _module_level(tree: ast.AST) -> Iterator[ast.stmt]:
    """Statements run at import time: the module body, into if/try/with blocks."""
    pending = list(getattr(tree, "body", []))
    while pending:
        statement = pending.pop(0)
        yield statement
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            pending += statement.body + getattr(statement, "orelse", [])
            pending += [s for handler in getattr(statement, "handlers", []) for s in handler.body]
            pending += getattr(statement, "finalbody", [])
