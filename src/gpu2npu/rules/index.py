"""Rules compiled for one target version into tables keyed by what a node matches on.

Each table is a match point of the rewrite pass (gpu2npu.rewrite): qualified names, method and
attribute names, calls, string literals, imports to add or remove; plus the API statuses the
reports read. Matching a node is a dictionary lookup, so a pass costs the same whatever the
number of rules. The rule kinds (gpu2npu.rules.kinds) fill the tables; the rewrite pass reads
them and never needs to know which kind wrote an entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, FrozenSet, List, Optional, Set, Tuple

from gpu2npu.api_support import Namespaces, StatusOverride, normalise_api
from gpu2npu.rules.kind import kind_named
from gpu2npu.rules.model import NORMAL_SWITCHES, Rule, RuleSet
from gpu2npu.rules.triggers import (
    Gated,
    alternation,
    any_trigger,
    compile_gated,
    name_words,
    split_gated,
    without_lookaheads,
)

# Stands for an f-string expression when a string rule matches the f-string's text.
PLACEHOLDER = "\x00"
# What may follow the device type in a device string: an index or a formatting placeholder.
DEVICE_SUFFIX = re.compile(r"^(:([0-9]+|%[sd]|\{[^{}]*\})?)?$")
STRING_MATCHES = ("exact", "device", "prefix", "substring")
TENSOR = "torch.Tensor."
# how rule data names a method or attribute on any receiver (``*.is_cuda``, ``*.no_sync``)
ANY_RECEIVER = "*."
# A refused call a library makes itself, wherever the project imports it: "import accelerate".
REFUSED_IMPORT = "import "
# A CUDA or NPU device as a call writes it out: 'cuda', 'npu:0', f'cuda:{rank}' (DeviceDtypeRule).
DEVICE_TEXT = re.compile(r"^(cuda|npu)(:|$)")
# A refused assignment of None or False to an attribute: ".grad = None", ".requires_grad = False".
REFUSED_ASSIGNMENT = re.compile(r"^\.([A-Za-z_]\w*) = (None|False|\*)$")  # *: any value
# A refused call of a module's method, on a receiver that names no optimizer: "module.zero_grad()".
REFUSED_MODULE = "module."


@dataclass(frozen=True)
class NameTarget:
    """Where a fully qualified name goes. ``new`` None: no NPU counterpart, leave it."""

    new: Optional[str]
    rule_id: str
    label: str  # word used in change messages: function, module, attribute, name
    only_existing: bool = False  # names under it move only where torch_npu has them for the version
    tip: str = ""  # what to do where the name keeps its name
    removed_in: str = ""  # the torch release that removed the name (kept: reported as removed)
    called_only: bool = False  # moves only where it is called; a plain reference keeps it (tip)
    compared_new: Optional[str] = None  # what it becomes where compared (==, !=, in), if not new


@dataclass(frozen=True)
class NameDecision:
    """What becomes of a qualified name a rule covers: ``new`` None means it keeps its name
    (the rule says there is no counterpart, or the counterpart is not in torch_npu for the
    version), and ``tip`` says what to do then."""

    old: str  # the rule's name: the name itself or a dotted prefix of it
    new: Optional[str]
    rule_id: str
    label: str
    tip: str = ""
    removed_in: str = ""
    called_only: bool = False  # the name itself moves only where it is called
    compared_new: Optional[str] = None  # what the name itself becomes where compared


@dataclass(frozen=True)
class Rename:
    """A dot-free method or attribute rename (``.cuda()`` -> ``.npu()``)."""

    new: str
    rule_id: str
    label: str


@dataclass(frozen=True)
class CallEdit:
    """An edit of a call: ``edit(rule, call node, rewrite context) -> call node``."""

    rule: Rule
    edit: Callable


@dataclass(frozen=True)
class StringTarget:
    """A string-literal rewrite. ``match`` says how a literal's text is compared with ``old``:
    ``exact`` (the whole literal), ``device`` (the device alone or with an index or a
    placeholder: ``'cuda:0'``, ``'cuda:%d'``, ``f'cuda:{rank}'``), ``prefix``, ``substring``."""

    old: str
    new: str
    rule_id: str
    match: str
    message: str  # the change_list message
    compared_with: FrozenSet[str] = frozenset()  # only a literal compared with a call of these
    uncompared: bool = False  # ... or compared with nothing

    def apply(self, text: str) -> Optional[str]:
        """The new text, or None when the literal does not match."""
        old = self.old
        if self.match == "exact":
            return self.new if text == old else None
        if self.match == "substring":
            return text.replace(old, self.new) if old in text else None
        if not text.startswith(old):
            return None
        rest = text[len(old) :]
        if self.match == "device" and not DEVICE_SUFFIX.match(rest.replace(PLACEHOLDER, "{}")):
            return None
        if self.match == "prefix" and any(char.isspace() for char in rest):
            return None  # a message that starts so (GLM's "torch.cuda.FloatTensor or ..."), not a name
        return self.new + rest


@dataclass
class StringTable:
    exact: Dict[str, StringTarget] = field(default_factory=dict)
    other: List[StringTarget] = field(default_factory=list)  # prefix, device, substring

    def add(self, target: StringTarget) -> None:
        if target.match == "exact":
            self.exact[target.old] = target
        else:
            self.other.append(target)

    def rewrite(self, text: str) -> Optional[Tuple[str, StringTarget]]:
        """(new text, target) for a literal's text, or None when no string rule applies."""
        target = self.exact.get(text)
        if target is not None:
            return target.new, target
        for target in self.other:
            new = target.apply(text)
            if new is not None:
                return new, target
        return None


@dataclass(frozen=True)
class ImportInsertion:
    """``import module`` after the first module-level import of ``after_module``."""

    module: str
    after_module: str
    rule_id: str
    only_where_needed: bool = False  # only in a file another rule changes, or one run as a program


@dataclass(frozen=True)
class EntryImport:
    """``import module`` (or ``from module import names``) at the top of each entry script."""

    module: str
    names: Tuple[str, ...]
    rule_id: str

    @property
    def statement(self) -> str:
        """The import line (module and names are validated Python names)."""
        if self.names:
            return f"from {self.module} import {', '.join(self.names)}"
        return f"import {self.module}"


@dataclass(frozen=True)
class DeviceBlock:
    """The statements that bind the device index from the environment (``DEVICE_ID``), put after
    the leading imports of each module that uses the name and of each entry script."""

    name: str
    imports: Tuple[str, ...]  # modules the statements need, imported in the block where missing
    statements: Tuple[str, ...]
    device_type: str  # of the device strings that name the index: f'npu:{DEVICE_ID}'
    rule_id: str
    entry_statements: Tuple[str, ...] = ()  # after them, in entry scripts only (the process group)
    select_statements: Tuple[str, ...] = ()  # in entry scripts not selecting their device (set_device)
    select_when_set: Tuple[str, ...] = ()  # instead, in those that do: a selection the environment asks for
    selected_by: FrozenSet[str] = frozenset()  # framework calls that select the device (Accelerator)

    @property
    def device_string(self) -> str:
        return f"f'{self.device_type}:{{{self.name}}}'"

    def for_module(self, source: str) -> "DeviceBlock":
        """The block as a module spells it: where the module binds the name itself (ChatGLM's
        ``DEVICE_ID = "0"``), under a name with ``_`` appended, so the rewrites that write the name
        read the environment's index, not the module's value (``torch.npu.device("0")`` fails)."""
        name = self.name
        while _binds_otherwise(source, name, self._renamed(name).statements):
            name += "_"
        return self if name == self.name else self._renamed(name)

    def _renamed(self, name: str) -> "DeviceBlock":
        if name == self.name:
            return self
        word = re.compile(rf"(?<![\w'\"]){re.escape(self.name)}(?![\w'\"])")  # not the variable's key

        def spelled(statements: Tuple[str, ...]) -> Tuple[str, ...]:
            return tuple(word.sub(name, statement) for statement in statements)

        return replace(
            self,
            name=name,
            statements=spelled(self.statements),
            entry_statements=spelled(self.entry_statements),
            select_statements=spelled(self.select_statements),
            select_when_set=spelled(self.select_when_set),
        )


def _binds_otherwise(source: str, name: str, own: Tuple[str, ...]) -> bool:
    """Whether a module-level line of ``source`` assigns ``name`` with other than ``own``'s line."""
    assigned = re.findall(rf"(?m)^{re.escape(name)}[ \t]*(?::[^=\n]*)?=(?!=).*$", source)
    return any(line.strip() not in own for line in assigned)


@dataclass
class DistributedPlan:
    """What the distributed kinds compiled (rules/distributed/); parts not given stay None."""

    setups: FrozenSet[str] = frozenset()  # calls that mean the script is distributed already
    wrapper: str = ""  # DistributedDataParallel, with its arguments after the model: "{model}"
    wrapper_rule: str = ""
    module_methods: FrozenSet[str] = frozenset()  # model methods that go through .module after it
    wrapper_members: FrozenSet[str] = frozenset()  # the wrapper's attributes; others go through .module
    replaces: FrozenSet[str] = frozenset()  # wrappers of the model (DataParallel) the wrap replaces
    move: str = ""  # the model moved to the device: "{model}.npu()"
    loaders: FrozenSet[str] = frozenset()  # qualified DataLoader names
    sampler: str = ""  # qualified DistributedSampler
    loader_rule: str = ""
    train_words: Tuple[str, ...] = ()
    eval_words: Tuple[str, ...] = ()  # an evaluation loader's, where its shuffle is a value
    guard_test: str = ""  # the rank-0 test
    guarded_calls: FrozenSet[str] = frozenset()  # qualified calls run on rank 0 only
    guarded_prefixes: Tuple[str, ...] = ()  # function or method names starting so (save_checkpoint)
    logger_methods: FrozenSet[str] = frozenset()  # on a receiver named *log* (logger.info)
    argument_calls: FrozenSet[str] = frozenset()  # the calls a guarded statement's arguments may make
    guard_rule: str = ""
    tips: Dict[str, str] = field(default_factory=dict)  # situation -> what to do


@dataclass(frozen=True)
class ComparedStrings:
    """Where a device string is compared with data and keeps its text (KeepComparedStringRule)."""

    methods: FrozenSet[str]  # str methods that compare: startswith, endswith, ...
    sources: FrozenSet[str]  # calls that return data: qualified names, or "*.method"
    rule_id: str
    attributes: FrozenSet[str] = frozenset()  # of a source's result, data too: get_current_target().backend
    only_sources: bool = False  # subscripts and calls the rules do not know are no data


@dataclass(frozen=True)
class MemberStrings:
    """Device strings that are the values of an enumeration's members (KeepMemberStringRule)."""

    bases: FrozenSet[str]  # qualified enumeration bases (enum.Enum); "*Enum": a base named so
    peers: FrozenSet[str]  # a class body assigning one of these is a table of devices too
    rule_id: str


@dataclass(frozen=True)
class PeerStrings:
    """Device strings kept where the code names their NPU peer beside them (KeepPeerStringRule)."""

    pairs: Tuple[Tuple[str, str], ...]  # (word, the word it becomes): ("cuda", "npu")
    rule_id: str
    getter_tip: str = ""  # what to say of one compared with a project function that names the NPU


@dataclass(frozen=True)
class ArgumentStrings:
    """Device strings passed to a keyword of certain calls, kept (KeepArgumentStringRule)."""

    funcs: FrozenSet[str]  # qualified names of the callees
    keyword: str
    values: FrozenSet[str]  # the literals kept and reported
    rule_id: str
    works: bool
    position: int = -1  # its place among the positional arguments; -1: given by keyword only


@dataclass(frozen=True)
class CudaSwitch:
    """A library's keyword that makes it compute on CUDA (KeepSwitchRule)."""

    funcs: FrozenSet[str]  # qualified names of the library's callables
    keyword: str
    rule_id: str


@dataclass(frozen=True)
class Binding:
    """A name a target's rewrites write (BindNamesRule), and the module-level statement binding it."""

    name: str
    statement: str
    rule_id: str


@dataclass(frozen=True)
class StringName:
    """A device or backend literal that becomes a bound name (StringToNameRule)."""

    name: str
    compared_name: str  # where the literal is compared with something
    match: str  # exact, or device (with an index or a placeholder after a colon)
    rule_id: str
    unindexed_in: FrozenSet[str] = frozenset()  # keywords where an index fails on the CPU (map_location)


@dataclass(frozen=True)
class ImportRemoval:
    rule_id: str
    only_unused: bool  # keep the import while the file still uses the name it binds


@dataclass(frozen=True)
class KeptWrapper:
    """A wrapper the NPU lacks (UnwrapModelRule), replaced by the model it wraps unless a file
    reads its ``attribute``."""

    attribute: str  # the wrapper's attribute holding the model (``module``)
    rule_id: str
    returned_tip: str  # where another file reads the attribute of what a function returns
    inputs_tip: str = ""  # where a call gives the model tensors only the wrapper moved ({call}, {line})
    subclass_tip: str = ""  # where a class of the project derives from the wrapper
    attribute_tip: str = (
        ""  # where another file reads the attribute of the object attribute it is assigned to
    )


@dataclass
class RuleIndex:
    version: str
    names: Dict[str, NameTarget] = field(default_factory=dict)
    methods: Dict[str, Rename] = field(default_factory=dict)
    attributes: Dict[str, Rename] = field(default_factory=dict)
    calls: Dict[str, List[CallEdit]] = field(default_factory=dict)  # qualified name or ".method"
    strings: StringTable = field(default_factory=StringTable)
    insert_imports: List[ImportInsertion] = field(default_factory=list)
    entry_imports: List["EntryImport"] = field(default_factory=list)  # at the top of entry scripts
    device_block: Optional[DeviceBlock] = None  # the device index from the environment (-s)
    distributed: Optional[DistributedPlan] = None  # single card to multi-card, in the main script
    indexed_device_strings: Dict[str, str] = field(default_factory=dict)  # device type -> rule id
    # rule id -> the tips where a literal stays: "choice" (a branch names its card beside one taking
    # a rank's), "mask" (the file sets the visible cards)
    device_string_tips: Dict[str, Dict[str, str]] = field(default_factory=dict)
    replaced_apis: Set[str] = field(default_factory=set)  # calls a rule replaces or reports itself
    refused_calls: Set[str] = field(default_factory=set)  # "method(keyword)": see OptimizeCallRule
    kept_wrappers: Dict[str, "KeptWrapper"] = field(default_factory=dict)  # by the wrapper's name
    remove_imports: Dict[str, "ImportRemoval"] = field(default_factory=dict)  # by module
    # imported function -> rule id: the import goes where that rule's rewrites leave it unused
    droppable_imports: Dict[str, str] = field(default_factory=dict)
    guard_tests: Dict[str, str] = field(default_factory=dict)  # CUDA test (name or "*.attr") -> rule id
    # names false on every NPU host that nothing rewrites (torch.version.cuda): CUDA tests as they are
    build_gates: Set[str] = field(default_factory=set)
    # names set only on a ROCm build (torch.version.hip): a CUDA test beside ``name is None`` is NVIDIA's
    rocm_builds: Set[str] = field(default_factory=set)
    # call -> (reads, rule id, keywords of calls outside torch it may not be passed to)
    kept_reads: Dict[str, Tuple[FrozenSet[str], str, FrozenSet[str]]] = field(default_factory=dict)
    compared_strings: Tuple[ComparedStrings, ...] = ()
    reduced_dtypes: List[Rule] = field(default_factory=list)  # ReducedDtypeRule
    # DeviceDtypeRule: call key -> (positional parameters, dtypes it changes where made on the device)
    device_dtype_calls: Dict[str, Tuple[Tuple[str, ...], FrozenSet[str]]] = field(default_factory=dict)
    # callees whose call edits also apply through a project module that re-exports them (yolov5's
    # ``from ultralytics.utils.torch_utils import autocast as smart_amp_autocast``, dinov2.fsdp's
    # ShardedGradScaler)
    reexported_edits: Dict[str, List[CallEdit]] = field(default_factory=dict)
    member_strings: Optional[MemberStrings] = None
    peer_strings: Optional[PeerStrings] = None
    argument_strings: List[ArgumentStrings] = field(default_factory=list)
    cuda_switches: List[CudaSwitch] = field(default_factory=list)
    bindings: Dict[str, Binding] = field(default_factory=dict)  # in the order they are bound
    string_names: Dict[str, StringName] = field(default_factory=dict)  # by the literal's word
    status_overrides: Dict[str, List[StatusOverride]] = field(default_factory=dict)  # by normalised API
    rules_by_id: Dict[str, Rule] = field(default_factory=dict)
    file_rules: Dict[str, List[Rule]] = field(default_factory=dict)  # rules of other file kinds, by kind
    derived: Dict[str, object] = field(default_factory=dict)  # tables a file kind builds once (derive)
    trigger_words: set = field(default_factory=set)  # regexes (plain words escaped)
    tree_trigger_words: set = field(default_factory=set)  # of the kinds that need a syntax tree
    trigger_pairs: set = field(default_factory=set)  # (gate, pattern): both must match (split_gated)
    tree_trigger_pairs: set = field(default_factory=set)
    triggers: Optional["re.Pattern[bytes]"] = None
    tree_triggers: Optional["re.Pattern[bytes]"] = None
    gated: Gated = ()
    tree_gated: Gated = ()
    statement_triggers: Optional["re.Pattern[str]"] = None  # tree_triggers, for decoded source

    def add_call_edit(self, key: str, rule: Rule, edit: Callable) -> None:
        self.calls.setdefault(key, []).append(CallEdit(rule, edit))

    def optimization_of(self, rule_id: str):
        """The ``Optimization`` of an --optimize rule; None for any other rule or id."""
        rule = self.rules_by_id.get(rule_id)
        return rule.optimization if rule is not None else None

    def rules_of(self, kind: str) -> List[Rule]:
        """The rules of a kind that other file kinds read (shell, configs, requirements...)."""
        return self.file_rules.get(kind, [])

    def derive(self, name: str, build: Callable[["RuleIndex"], object]):
        """``build(self)``, made once per index: a file kind's lookup table over its rules."""
        if name not in self.derived:
            self.derived[name] = build(self)
        return self.derived[name]

    def add_status_override(self, override: StatusOverride) -> None:
        self.status_overrides.setdefault(override.api, []).append(override)

    def overrides_for(self, api: str) -> List[StatusOverride]:
        return self.status_overrides.get(normalise_api(api), [])

    def followed_reexports(self) -> Set[str]:
        """The APIs whose re-exports by project modules the scan follows: those with call edits
        or a status of their own (whose rows then name the project's calls of them too)."""
        return set(self.reexported_edits) | {api for api in self.status_overrides if ANY_RECEIVER not in api}

    def reference_apis(self) -> Set[str]:
        """APIs whose mere references are uses to report (``dtype=torch.float64``), and those some
        versions lack, whose import fails there (``from torch.distributed.fsdp import FSDPModule``)."""
        return {
            api
            for api, overrides in self.status_overrides.items()
            if any(o.references or o.missing for o in overrides)
        }

    def any_receiver_methods(self) -> Set[str]:
        """Tensor methods among those: a call of one on a receiver of unknown type is a use."""
        return {
            api[len(TENSOR) :]
            for api in self.reference_apis()
            if api.startswith(TENSOR) and "." not in api[len(TENSOR) :]
        }

    def resolve_name(self, qualified: str) -> Optional[NameDecision]:
        """The decision of the rule for ``qualified`` or its longest dotted prefix; None when no
        rule covers the name."""
        found = self._longest_name_match(qualified)
        if found is None:
            return None
        prefix, target = found
        new = None if target.new is None else target.new + qualified[len(prefix) :]
        if new is not None and prefix != qualified and target.only_existing and not self._exists(new):
            new = None
        whole = prefix == qualified
        return NameDecision(
            prefix,
            new,
            target.rule_id,
            target.label,
            target.tip,
            target.removed_in,
            target.called_only and whole,
            target.compared_new if whole else None,
        )

    def _longest_name_match(self, qualified: str):
        name = qualified
        while True:
            target = self.names.get(name)
            if target is not None:
                return name, target
            if "." not in name:
                return None
            name = name.rsplit(".", 1)[0]

    def _exists(self, name: str) -> bool:
        """Whether torch_npu has ``name`` for the version (names outside its namespaces: yes)."""
        return Namespaces.load().has(name, self.version) is not False

    def removal_for(self, imported: str) -> Optional[ImportRemoval]:
        """The rule removing an import of ``imported`` (the module or a submodule)."""
        parts = imported.split(".")
        for end in range(len(parts), 0, -1):
            removal = self.remove_imports.get(".".join(parts[:end]))
            if removal is not None:
                return removal
        return None

    def cuda_only_modules(self) -> Set[str]:
        """Libraries the status rules say run only on CUDA (with everything under them)."""
        return set(self.cuda_only_libraries())

    def cuda_only_libraries(self) -> Dict[str, str]:
        """Those libraries, by rule id."""
        return {api: rule_id for api, rule_id in self._cuda_only().items() if not api.startswith("torch.")}

    def cuda_only_torch_names(self) -> Dict[str, str]:
        """The torch names the status rules say run only on CUDA, by rule id: only these names
        (``torch.nn.parallel.data_parallel`` the function, not the module's DataParallel)."""
        return {api: rule_id for api, rule_id in self._cuda_only().items() if api.startswith("torch.")}

    def _cuda_only(self) -> Dict[str, str]:
        return {
            api: next(o.rule_id for o in overrides if o.cuda_only)
            for api, overrides in self.status_overrides.items()
            if any(o.cuda_only for o in overrides)
        }

    def stays_on_cuda(self, qualified: str) -> bool:
        """A name a rule keeps as it is (no counterpart for the version; not one torch removed)."""
        decision = self.resolve_name(qualified)
        return decision is not None and decision.new is None and not decision.removed_in

    def distributed_plan(self) -> DistributedPlan:
        if self.distributed is None:
            self.distributed = DistributedPlan()
        return self.distributed

    @property
    def uses_entry_scripts(self) -> bool:
        """Whether a rule inserts into the project's entry scripts (the scan must find them)."""
        return bool(self.entry_imports) or self.device_block is not None

    def needs_rewrite(self, data: bytes) -> bool:
        """Cheap first test on the raw bytes: can any rule fire in this file at all?"""
        return any_trigger(self.triggers, self.gated, data)

    def needs_tree(self, data: bytes) -> bool:
        """Can a rule that edits the syntax tree fire here (not just a text-only import insertion)?"""
        return any_trigger(self.tree_triggers, self.tree_gated, data)


def compile_index(
    rule_set: RuleSet, version: str, disabled_ids=(), switches: FrozenSet[str] = NORMAL_SWITCHES
) -> RuleIndex:
    index = RuleIndex(version=version)
    names, tree_names = set(), set()
    for rule in rule_set.active(version, disabled_ids, switches):
        kind = kind_named(rule.kind)
        kind.compile(rule, index)
        index.rules_by_id[rule.id] = rule
        patterns, pairs = split_gated(kind.triggers(rule))
        index.trigger_words.update(patterns)
        index.trigger_pairs.update(pairs)
        names.update(kind.trigger_names(rule))
        if not kind.text_only:
            index.tree_trigger_words.update(patterns)
            index.tree_trigger_pairs.update(pairs)
            tree_names.update(kind.trigger_names(rule))
    index.tree_trigger_words.update(map(re.escape, name_words(tree_names, index.tree_trigger_words)))
    index.trigger_words.update(index.tree_trigger_words)
    index.trigger_words.update(map(re.escape, name_words(names - tree_names, index.trigger_words)))
    index.triggers = alternation(index.trigger_words)
    index.tree_triggers = alternation(index.tree_trigger_words)
    index.gated = compile_gated(index.trigger_pairs)
    index.tree_gated = compile_gated(index.tree_trigger_pairs)
    # A trigger's lookaheads may judge by the whole file (``x.device`` is no int index unless the
    # file assigns a ``.device`` somewhere): one statement is tested without them.
    # Of a gated pair, the statement the rule edits holds the pattern; the gate's may be anywhere.
    statement_words = {without_lookaheads(word) for word in index.tree_trigger_words}
    statement_words.update(without_lookaheads(pattern) for _, pattern in index.tree_trigger_pairs)
    index.statement_triggers = alternation(statement_words, text=True)
    return index
