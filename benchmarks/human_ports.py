#!/usr/bin/env python3
"""How many porting hunks of *human* ports of real models ``gpu2npu migrate`` reproduces.

    python benchmarks/human_ports.py MIRROR_DIR [--manifest benchmarks/human_ports.yaml]
        [--cmd gpu2npu] [--optimize VALUE] [-v 2.1.0] [-j 2] [--only NAME ...] [--json]
        [--show-missed CATEGORY] [--show-extra] [--hunks FILE]
    python benchmarks/human_ports.py MIRROR_DIR --find-base NAME [--manifest ...]

MIRROR_DIR holds bare git mirrors as ``MIRROR_DIR/<owner>+<name>/repo``. The manifest lists port
pairs: a human port (Ascend/ModelZoo-PyTorch, commit, folder), the upstream it was made from
(repository, commit, folder) and the .py files compared (paths relative to both folders; an item
``{port: P, upstream: U}`` where the port renamed a file). For each pair the upstream folder is
extracted from the mirror (regular files; blobs a mirror lacks, such as images, are left out) and
migrated the way a user would:

    <cmd> migrate -i TMP/<name> -o TMP/out -v VERSION -j J --force [--optimize=VALUE] [--no-cache]

which writes ``TMP/out/<name>_msft``. Each listed file is then diffed twice, upstream -> port (the
human's change) and upstream -> ours, and the two diffs are matched hunk by hunk.

Definitions (every figure the script prints follows from these):

* Lines are normalised before diffing: a trailing comment and trailing whitespace are cut, blank
  lines and pure comment lines are dropped, and lines are compared with all whitespace removed
  (re-indentation and re-spacing are no change). Diffs are ``difflib.SequenceMatcher`` opcodes
  (autojunk off, no context): each non-equal opcode is one *hunk*.
* Human hunks within the first 40 lines whose text names a copyright or licence are dropped.
* Tokens are the identifiers, numbers and string literals (quotes normalised) of lines, with
  "gpu" spelt "npu" in every token (``n_gpu`` -> ``n_npu`` is cosmetic) and device/backend strings
  lower-cased (``"HCCL"`` is ``"hccl"``).
* A human hunk is a *porting hunk* when it falls into a category, the first that matches:
  none (cosmetic) when it only renames gpu -> npu in names and texts; ``device`` when it is a pure
  rename (cuda -> npu, nccl -> hccl, gpu -> npu) or only inserts ``import torch_npu`` lines (a
  ``if torch.__version__ ...:`` guard allowed); then by the keywords of CATEGORIES on the text of
  both sides: fused optimizer, start-up, npu kernel, amp/apex, profiling, distributed, data
  loader, dtype, cuda-only lib, and last ``device`` for code naming npu/cuda/hccl/nccl outside
  string literals (device strings such as ``'npu:0'`` count, ``/opt/npu/data`` does not). Other
  hunks (features, prints, refactors, upstream drift) are counted but left out of the score.
* For a human hunk with upstream lines U and port lines P, *our lines* O are what our output has
  for the same upstream range, found through our own opcodes (upstream -> ours): the lines of our
  equal blocks inside the range plus every line of our non-equal opcodes overlapping it; for a
  pure insertion (U empty) the lines we inserted or replaced within 2 upstream lines of the point.
  Before comparing, P loses its ``if torch.__version__`` guards, and P and O write
  ``apex.optimizers.NpuFused*`` as ``torch_npu.optim.NpuFused*`` and ``torch_npu.npu`` as
  ``torch.npu`` (one API, two spellings). The hunk is *reproduced* when O differs from U and
  either O equals P, or: every token the human added (tokens of P's statements, that is P
  without control-flow headers such as the ``if args.device == 'npu':`` / ``else:`` a port wraps
  around its change, that are not in U) is in O, no token the human removed (tokens of U not in
  P) is left in O, and, where the human added nothing, neither did we. Leaving the lines alone
  never counts; a pure deletion counts when all its tokens are gone.
* An *extra change* is one of our hunks (upstream -> ours) that overlaps no human hunk at all
  (porting or not; a pure insertion overlaps what lies within 2 lines), leaving out hunks that
  only insert ``import torch_npu`` / ``import torch_npu.x`` / ``from torch_npu... import`` lines.
  ``extra renames`` counts those of them that are pure device renames: ports that import
  ``torch_npu.contrib.transfer_to_npu`` leave ``torch.cuda`` calls for it to map at run time.

``--find-base NAME`` searches the upstream history for the commit closest to the port: among the
commits of the default branch touching the listed files, and the tagged commits, the one with
the fewest changed (normalised) lines in total (ties: the oldest); it prints the ten best so the
manifest can store the result. ``--show-missed CATEGORY`` prints the missed porting hunks of a
category (upstream, human and our lines), ``--show-extra`` our extra changes, ``--hunks FILE``
writes every human hunk with its category, verdict and our lines as JSON.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_MANIFEST = HERE / "human_ports.yaml"
INSERT_WINDOW = 2  # upstream lines either side of a pure insertion that still count as "there"
LICENCE_LINES = 40
LICENCE = re.compile(r"copyright|licen[cs]e|huawei|apache|bsd", re.IGNORECASE)
TORCH_NPU_IMPORT = re.compile(r"^(import torch_npu(\.\w+)*(\s+as\s+\w+)?|from torch_npu(\.\w+)* import .*)$")

# Keyword classifier, in priority order (the first category whose pattern is found in the text of
# the hunk's upstream and port lines wins). ``device`` is tried before these for pure renames.
CATEGORIES: List[Tuple[str, re.Pattern]] = [
    (
        "fused optimizer",
        re.compile(
            r"NpuFused|torch_npu\.optim|apex\.optimizers|\bFused(Adam|AdamW|SGD|LAMB|Lamb|Novograd|Adagrad)\b"
            r"|fused_adam|fused_sgd|clip_grad_norm_fused|get_model_combined_params"
        ),
    ),
    (
        "start-up",
        re.compile(
            r"set_compile_mode|jit_compile|allow_internal_format|TASK_QUEUE|environ|set_device|ASCEND"
            r"|allow_hf32|set_option|npu\.config|cudnn\.benchmark|cudnn\.deterministic|set_dump"
        ),
    ),
    (
        "npu kernel",
        re.compile(
            r"(torch_npu|torch)\.npu_\w+|\.npu_format_cast|\bnpu_[a-z]\w*\s*\(|\bNpu[A-Z]\w+"
            r"|torch_npu\.contrib(?!\s+import\s+transfer_to_npu)"
            r"|roi_align|ROIAlign|roi_pool|ROIPool|\bb?nms\b|batched_nms|FusedLayerNorm|fused_layer_norm"
            r"|FusedDense|deform_conv|DeformConv|fast_gelu|MatmulApply|DropoutWithByteMask|npu_fusion"
        ),
    ),
    (
        "amp/apex",
        re.compile(
            r"\bamp\b|apex\.amp|GradScaler|autocast|loss_scale|combine_grad|scale_loss|opt_level"
            r"|master_params|\bscaler\b|keep_batchnorm_fp32"
        ),
    ),
    (
        "profiling",
        re.compile(r"profil|nvtx|\bprof\b|export_chrome_trace|record_function|key_averages|synchronize"),
    ),
    (
        "distributed",
        re.compile(
            r"init_process_group|DistributedDataParallel|\bDDP\b|hccl|nccl|MASTER_ADDR|MASTER_PORT"
            r"|world_size|\brank\b|local_rank|bucket_cap_mb|broadcast_buffers|find_unused_parameters"
            r"|\bdist\.|DistributedSampler|all_reduce|all_gather|\bbarrier\b|mp\.spawn",
            re.IGNORECASE,
        ),
    ),
    (
        "data loader",
        re.compile(
            r"pin_memory|drop_last|num_workers|DataLoader|persistent_workers|prefetch_factor"
            r"|worker_init_fn|non_blocking"
        ),
    ),
    (
        "dtype",
        re.compile(
            r"float16|\bhalf\b|bfloat16|int32|int64|float64|float32|\.double\(|\.long\(|\.int\("
            r"|\.float\(|\bdtype\b"
        ),
    ),
    (
        "cuda-only lib",
        re.compile(
            r"apex|flash_attn|deepspeed|bitsandbytes|xformers|triton|cupy|amp_C|cpp_extension"
            r"|fused_layer_norm_cuda|\bnvidia\b"
        ),
    ),
    # Lower case, not inside a word: not "GPU or NPU" in a help text, not "inputs".
    ("device", re.compile(r"(?<![A-Za-z])npu|npu(?![A-Za-z])|cuda|hccl|nccl")),
]
CATEGORY_NAMES = ["device"] + [name for name, _ in CATEGORIES if name != "device"]
COSMETIC_RENAMES = [(re.compile(r"gpu"), "npu"), (re.compile(r"GPU"), "NPU"), (re.compile(r"Gpu"), "Npu")]
DEVICE_RENAMES = [
    (re.compile(r"cuda"), "npu"),
    (re.compile(r"CUDA"), "NPU"),
    (re.compile(r"nccl"), "hccl"),
    (re.compile(r"NCCL"), "HCCL"),
] + COSMETIC_RENAMES
# The torch 1.5 fork had torch_npu built in: ports guard the import with the version.
VERSION_GUARD = re.compile(r"^if\s*\(?\s*torch\.__version__\s*[<>=!]=?.*:$")
DEVICE_STRING = re.compile(r"^(npu|cuda|hccl|nccl)\b")
# Two spellings of one torch_npu API: apex's NPU fork moved its fused optimizers to torch_npu.optim,
# and torch_npu.npu is torch.npu once torch_npu is imported.
EQUIVALENT_SPELLINGS = [
    (re.compile(r"\bapex\.optimizers\b(?=\.NpuFused|\s+import\s+\(?\s*NpuFused)"), "torch_npu.optim"),
    (re.compile(r"\btorch_npu\.npu\b"), "torch.npu"),
]
# The switch a port adds between its CUDA and NPU paths (``if args.device == 'npu':``, ``else:``);
# a migration to one device needs the statements inside, not the switch.
CONTROL_HEADER = re.compile(r"^(if|elif|else|try|except|finally)\b.*:$")
TOKEN = re.compile(
    r"""(?P<string>'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")|(?P<name>[A-Za-z_]\w*)|(?P<number>\d[\w.]*|\.\d\w*)"""
)


# --------------------------------------------------------------------------
# Git mirrors
# --------------------------------------------------------------------------


class Mirror:
    """A bare mirror ``MIRROR_DIR/<owner>+<name>/repo``, read with git plumbing."""

    def __init__(self, mirror_dir: Path, repo: str) -> None:
        self.name = repo
        self.git_dir = mirror_dir / repo.replace("/", "+") / "repo"
        if not self.git_dir.is_dir():
            raise SystemExit(f"error: no mirror of {repo} at {self.git_dir}")

    def git(self, *args: str, binary: bool = False, stdin: Optional[bytes] = None):
        # mailmap.blob: a bare mirror would read HEAD:.mailmap, which some mirrors lack.
        argv = ["git", f"--git-dir={self.git_dir}", "-c", "mailmap.blob=", *args]
        result = subprocess.run(argv, input=stdin, capture_output=True, check=False)
        if result.returncode != 0:
            what = shlex.join(args)[:200]
            raise SystemExit(f"error: git {what} in {self.name}: {result.stderr.decode().strip()}")
        return result.stdout if binary else result.stdout.decode("utf-8", "replace")

    def read_objects(self, specs: Sequence[str]) -> Dict[str, Optional[bytes]]:
        """``commit:path`` or blob id -> bytes (None where missing), in one ``cat-file --batch``."""
        data = self.git("cat-file", "--batch", binary=True, stdin="".join(s + "\n" for s in specs).encode())
        found: Dict[str, Optional[bytes]] = {}
        pos = 0
        for spec in specs:
            end = data.index(b"\n", pos)
            header = data[pos:end].split()
            pos = end + 1
            if len(header) < 3 or header[1] != b"blob":
                found[spec] = None
                continue
            size = int(header[2])
            found[spec] = data[pos : pos + size]
            pos += size + 1
        return found

    def read_blobs(self, specs: Sequence[str]) -> Dict[str, Optional[str]]:
        """Like read_objects, decoded as UTF-8."""
        return {
            k: None if v is None else v.decode("utf-8", "replace")
            for k, v in self.read_objects(specs).items()
        }

    def blob_ids(self, specs: Sequence[str]) -> Dict[str, Optional[str]]:
        """``commit:path`` -> blob id (None where missing), in one ``cat-file --batch-check``."""
        out = self.git("cat-file", "--batch-check", stdin="".join(s + "\n" for s in specs).encode())
        ids: Dict[str, Optional[str]] = {}
        for spec, line in zip(specs, out.splitlines()):
            parts = line.split()
            ids[spec] = parts[0] if len(parts) == 3 and parts[1] == "blob" else None
        return ids

    def commits_touching(self, paths: Sequence[str]) -> List[str]:
        """Commits of the default branch that change any of ``paths``, newest first, then the
        tagged commits (releases are often cut on branches of their own)."""
        on_branch = self.git("log", "--format=%H", "HEAD", "--", *paths).split()
        tagged = self.git("rev-list", "--no-walk", "--tags").split()
        kinds = self.git("cat-file", "--batch-check", stdin="".join(c + "\n" for c in tagged).encode())
        tagged = [c for c, kind in zip(tagged, kinds.splitlines()) if kind.split()[1:2] == ["commit"]]
        seen = set(on_branch)
        return on_branch + [c for c in tagged if c not in seen]

    def commit_time(self, commits: Sequence[str]) -> Dict[str, int]:
        out = self.git("log", "--no-walk=unsorted", "--format=%H %ct", *commits) if commits else ""
        return {line.split()[0]: int(line.split()[1]) for line in out.splitlines() if line.strip()}

    def commit_summary(self, commit: str) -> str:
        return self.git("log", "-1", "--format=%h %ad%d %s", "--date=short", commit).strip()[:110]

    def extract_folder(self, commit: str, folder: str, dest: Path) -> None:
        """Write the regular files of ``folder`` at ``commit`` into ``dest``. Mirrors may lack large
        binary blobs (images, weights): those are left out, as are links and submodules."""
        treeish = f"{commit}:{folder}" if folder else commit
        listing = self.git("ls-tree", "-r", "-z", treeish).split("\0")
        blobs = {}
        for entry in filter(None, listing):
            meta, path = entry.split("\t", 1)
            mode, kind, blob = meta.split()
            if kind == "blob" and mode in ("100644", "100755"):
                blobs[path] = blob
        contents = self.read_objects(sorted(set(blobs.values())))
        for path, blob in blobs.items():
            data = contents[blob]
            if data is not None:
                target = dest / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)


def join_path(folder: str, path: str) -> str:
    return f"{folder.rstrip('/')}/{path}" if folder else path


# --------------------------------------------------------------------------
# Manifest
# --------------------------------------------------------------------------


@dataclass
class Side:
    repo: str
    commit: str
    folder: str


@dataclass
class PortPair:
    name: str
    port: Side
    upstream: Side
    files: List[Tuple[str, str]]  # (upstream path, port path)
    note: str = ""


def load_manifest(path: Path) -> List[PortPair]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    pairs = []
    for entry in data["ports"]:
        files = []
        for item in entry["files"]:
            if isinstance(item, dict):
                files.append((item["upstream"], item["port"]))
            else:
                files.append((item, item))
        pairs.append(
            PortPair(
                name=entry["name"],
                port=Side(**entry["port"]),
                upstream=Side(**entry["upstream"]),
                files=files,
                note=entry.get("note", ""),
            )
        )
    return pairs


# --------------------------------------------------------------------------
# Normalised lines, tokens and hunks
# --------------------------------------------------------------------------


def cut_comment(line: str) -> str:
    """``line`` without a trailing ``#`` comment (a ``#`` inside a string literal is kept)."""
    quote = ""
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#":
            return line[:index]
        index += 1
    return line


def normalise(text: str) -> List[str]:
    """The code lines of ``text``: comments and trailing whitespace cut, blank lines dropped."""
    lines = []
    for raw in text.splitlines():
        code = cut_comment(raw).rstrip()
        if code.strip():
            lines.append(code)
    return lines


def line_key(line: str) -> str:
    return "".join(line.split())


def tokens(lines: Iterable[str]) -> Set[str]:
    """Identifiers, numbers and string literals (quotes normalised) of ``lines``, with gpu spelt npu
    (a port's ``n_gpu`` -> ``n_npu`` is cosmetic, see is_cosmetic_rename)."""
    found: Set[str] = set()
    for line in lines:
        for pattern, repl in COSMETIC_RENAMES:
            line = pattern.sub(repl, line)
        for match in TOKEN.finditer(line):
            if match.group("string"):
                content = match.group("string")[1:-1]
                # Backend and device names are case-insensitive: "HCCL" is "hccl".
                found.add("s:" + (content.lower() if DEVICE_STRING.match(content.lower()) else content))
            else:
                found.add(match.group(0))
    return found


@dataclass
class Hunk:
    i1: int
    i2: int
    j1: int
    j2: int
    old: List[str]
    new: List[str]
    category: Optional[str] = None
    ours: List[str] = field(default_factory=list)
    reproduced: bool = False


def diff_hunks(old: List[str], new: List[str]) -> Tuple[List[Hunk], List[Tuple[str, int, int, int, int]]]:
    """The non-equal opcodes of ``old`` -> ``new`` as hunks, and all opcodes."""
    matcher = difflib.SequenceMatcher(None, [line_key(x) for x in old], [line_key(x) for x in new], False)
    opcodes = matcher.get_opcodes()
    hunks = [
        Hunk(i1, i2, j1, j2, old[i1:i2], new[j1:j2]) for tag, i1, i2, j1, j2 in opcodes if tag != "equal"
    ]
    return hunks, opcodes


def changed_line_count(old: List[str], new: List[str]) -> int:
    hunks, _ = diff_hunks(old, new)
    return sum(max(h.i2 - h.i1, h.j2 - h.j1) for h in hunks)


# --------------------------------------------------------------------------
# Classifying human hunks
# --------------------------------------------------------------------------


def is_licence_hunk(hunk: Hunk) -> bool:
    text = "\n".join(hunk.old + hunk.new)
    return hunk.i1 < LICENCE_LINES and bool(LICENCE.search(text))


def without_version_guards(lines: List[str]) -> List[str]:
    return [line for line in lines if not VERSION_GUARD.match(line.strip())]


def only_torch_npu_imports(lines: List[str]) -> bool:
    lines = without_version_guards(lines)
    return bool(lines) and all(TORCH_NPU_IMPORT.match(line.strip()) for line in lines)


def renamed(lines: List[str], renames) -> str:
    text = "".join(lines)
    for pattern, repl in renames:
        text = pattern.sub(repl, text)
    return line_key(text)


def is_cosmetic_rename(hunk: Hunk) -> bool:
    """gpu -> npu in names, strings and help texts only (``args.gpu`` -> ``args.npu``): no porting."""
    return len(hunk.old) == len(hunk.new) > 0 and renamed(hunk.old, COSMETIC_RENAMES) == renamed(hunk.new, [])


def is_device_rename(hunk: Hunk) -> bool:
    """The port's lines are the upstream lines renamed to npu, or torch_npu imports alone."""
    if not hunk.old and only_torch_npu_imports(hunk.new):
        return True
    return len(hunk.old) == len(hunk.new) > 0 and renamed(hunk.old, DEVICE_RENAMES) == renamed(hunk.new, [])


def device_code(lines: List[str]) -> str:
    """The lines with every string literal blanked but device strings (``'npu:0'``, ``"cuda"``):
    ``/opt/npu/dataset`` or a help text naming the NPU is no device change."""

    def keep_device_strings(match: re.Match) -> str:
        literal = match.group("string")
        if literal is None:
            return match.group(0)
        return literal if DEVICE_STRING.match(literal[1:-1]) else "''"

    return "\n".join(TOKEN.sub(keep_device_strings, line) for line in lines)


def classify(hunk: Hunk) -> Optional[str]:
    """The porting category of a human hunk, or None for a non-porting change."""
    if is_cosmetic_rename(hunk):
        return None
    if is_device_rename(hunk):
        return "device"
    text = "\n".join(hunk.old + hunk.new)
    for name, pattern in CATEGORIES:
        if pattern.search(device_code(hunk.old + hunk.new) if name == "device" else text):
            return name
    return None


# --------------------------------------------------------------------------
# Matching our output against the human's
# --------------------------------------------------------------------------


def overlaps(a1: int, a2: int, b1: int, b2: int) -> bool:
    """Whether upstream ranges [a1, a2) and [b1, b2) touch; an empty range (a pure insertion) is a
    point that touches what lies within INSERT_WINDOW lines of it."""
    if a1 == a2 or b1 == b2:
        return a1 - INSERT_WINDOW <= b2 and b1 - INSERT_WINDOW <= a2
    return a1 < b2 and b1 < a2


def our_lines_for(i1: int, i2: int, opcodes, ours: List[str]) -> List[str]:
    """Our output's lines for upstream range [i1, i2) (see the module docstring)."""
    lines: List[str] = []
    for tag, a1, a2, b1, b2 in opcodes:
        if tag == "equal":
            if i1 < i2 and a1 < i2 and i1 < a2:
                start, stop = max(a1, i1), min(a2, i2)
                lines.extend(ours[b1 + start - a1 : b1 + stop - a1])
        elif i1 == i2:
            if a1 - INSERT_WINDOW <= i1 <= a2 + INSERT_WINDOW:
                lines.extend(ours[b1:b2])
        elif (a1 < i2 and i1 < a2) or (a1 == a2 and i1 <= a1 <= i2):
            lines.extend(ours[b1:b2])
    return lines


def respelled(lines: List[str]) -> List[str]:
    for pattern, repl in EQUIVALENT_SPELLINGS:
        lines = [pattern.sub(repl, line) for line in lines]
    return lines


def statements(lines: List[str]) -> List[str]:
    return [line for line in lines if not CONTROL_HEADER.match(line.strip())]


def is_reproduced(hunk: Hunk, ours: List[str]) -> bool:
    old_keys = [line_key(x) for x in hunk.old]
    our_keys = [line_key(x) for x in ours]
    new = respelled(without_version_guards(hunk.new))
    if our_keys == old_keys:
        return False
    if our_keys == [line_key(x) for x in new]:
        return True
    old_tokens, our_tokens = tokens(hunk.old), tokens(respelled(ours))
    added = tokens(statements(new)) - old_tokens
    removed = old_tokens - tokens(new)
    if not added and our_tokens - old_tokens:
        return False  # the human only took something out; we put something else in
    return added <= our_tokens and not (removed & our_tokens)


def is_import_only_change(hunk: Hunk) -> bool:
    return not hunk.old and only_torch_npu_imports(hunk.new)


def extra_changes(our_hunks: List[Hunk], human_hunks: List[Hunk]) -> List[Hunk]:
    """Our hunks that overlap no human hunk, ``import torch_npu`` insertions left out."""
    extra = []
    for ours in our_hunks:
        if is_import_only_change(ours):
            continue
        if not any(overlaps(ours.i1, ours.i2, h.i1, h.i2) for h in human_hunks):
            extra.append(ours)
    return extra


@dataclass
class FileResult:
    path: str
    human: List[Hunk]
    extra: List[Hunk]
    licence: int


def compare_file(path: str, upstream: str, port: str, ours: str) -> FileResult:
    up_lines, port_lines, our_lines = normalise(upstream), normalise(port), normalise(ours)
    human, _ = diff_hunks(up_lines, port_lines)
    licence = [h for h in human if is_licence_hunk(h)]
    human = [h for h in human if not is_licence_hunk(h)]
    our_hunks, our_opcodes = diff_hunks(up_lines, our_lines)
    for hunk in human:
        hunk.category = classify(hunk)
        hunk.ours = our_lines_for(hunk.i1, hunk.i2, our_opcodes, our_lines)
        hunk.reproduced = hunk.category is not None and is_reproduced(hunk, hunk.ours)
    return FileResult(path, human, extra_changes(our_hunks, human), len(licence))


# --------------------------------------------------------------------------
# Running the tool
# --------------------------------------------------------------------------


def resolve_command(cmd: str) -> List[str]:
    argv = shlex.split(cmd)
    if not argv or shutil.which(argv[0]) is None:
        raise SystemExit(f"error: command not found: {cmd!r} (is gpu2npu installed? see --cmd)")
    return argv


def migrate(cmd: List[str], tree: Path, out: Path, args: argparse.Namespace) -> Path:
    """Run ``<cmd> migrate`` on ``tree``; return the ``<name>_msft`` folder it wrote."""
    argv = cmd + ["migrate", "-i", str(tree), "-o", str(out), "-v", args.version, "-j", str(args.jobs)]
    argv.append("--force")
    if args.optimize:
        argv.append(f"--optimize={args.optimize}")
    if args.no_cache:
        argv.append("--no-cache")
    result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    if result.returncode != 0:
        sys.stderr.write(result.stdout.decode("utf-8", "replace")[-4000:])
        sys.stderr.write(result.stderr.decode("utf-8", "replace"))
        raise SystemExit(f"error: exit code {result.returncode}: {shlex.join(argv)}")
    return out / f"{tree.name}_msft"


@dataclass
class PortResult:
    pair: PortPair
    files: List[FileResult]

    @property
    def human(self) -> List[Hunk]:
        return [h for f in self.files for h in f.human]

    @property
    def porting(self) -> List[Hunk]:
        return [h for h in self.human if h.category]

    @property
    def extra(self) -> List[Hunk]:
        return [h for f in self.files for h in f.extra]


def measure_port(pair: PortPair, mirror_dir: Path, cmd: List[str], args, scratch: Path) -> PortResult:
    upstream, port = Mirror(mirror_dir, pair.upstream.repo), Mirror(mirror_dir, pair.port.repo)
    tree = scratch / pair.name
    upstream.extract_folder(pair.upstream.commit, pair.upstream.folder, tree)
    out = migrate(cmd, tree, scratch / "out", args)
    port_texts = port.read_blobs(
        [f"{pair.port.commit}:{join_path(pair.port.folder, p)}" for _, p in pair.files]
    )
    results = []
    for up_path, port_path in pair.files:
        port_text = port_texts[f"{pair.port.commit}:{join_path(pair.port.folder, port_path)}"]
        up_file, our_file = tree / up_path, out / up_path
        if port_text is None or not up_file.is_file() or not our_file.is_file():
            raise SystemExit(f"error: {pair.name}: {up_path} / {port_path} missing on one side")
        upstream_text = up_file.read_text(encoding="utf-8", errors="replace")
        ours_text = our_file.read_text(encoding="utf-8", errors="replace")
        results.append(compare_file(up_path, upstream_text, port_text, ours_text))
    shutil.rmtree(tree, ignore_errors=True)
    shutil.rmtree(scratch / "out", ignore_errors=True)
    return PortResult(pair, results)


# --------------------------------------------------------------------------
# Finding the upstream base
# --------------------------------------------------------------------------


def find_base(pair: PortPair, mirror_dir: Path, top: int = 10) -> None:
    """Rank upstream commits touching the files by total changed lines against the port."""
    upstream, port = Mirror(mirror_dir, pair.upstream.repo), Mirror(mirror_dir, pair.port.repo)
    port_specs = [f"{pair.port.commit}:{join_path(pair.port.folder, p)}" for _, p in pair.files]
    port_texts = port.read_blobs(port_specs)
    port_lines = {up: normalise(port_texts[spec] or "") for (up, _), spec in zip(pair.files, port_specs)}
    paths = [join_path(pair.upstream.folder, up) for up, _ in pair.files]
    commits = upstream.commits_touching(paths)
    specs = [f"{c}:{p}" for c in commits for p in paths]
    ids = upstream.blob_ids(specs)
    distinct = sorted({blob for blob in ids.values() if blob})
    texts = upstream.read_blobs(distinct)
    cost_of: Dict[Tuple[str, str], int] = {}
    ranking = []
    for commit in commits:
        total = missing = 0
        for (up, _), path in zip(pair.files, paths):
            blob = ids[f"{commit}:{path}"]
            if blob is None:
                missing += 1
                total += len(port_lines[up])
                continue
            if (up, blob) not in cost_of:
                cost_of[(up, blob)] = changed_line_count(normalise(texts[blob] or ""), port_lines[up])
            total += cost_of[(up, blob)]
        ranking.append((total, missing, commit))
    when = upstream.commit_time(commits)
    ranking.sort(key=lambda row: (row[0], row[1], when[row[2]]))  # ties: the oldest
    print(f"{pair.name}: {len(commits)} upstream commits touch the {len(paths)} files")
    for total, missing, commit in ranking[:top]:
        print(f"  {total:6d} changed lines, {missing} missing  {upstream.commit_summary(commit)}  {commit}")


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}" if whole else "-"


def port_row(result: PortResult) -> Dict[str, object]:
    porting = result.porting
    reproduced = sum(h.reproduced for h in porting)
    return {
        "port": result.pair.name,
        "files": len(result.files),
        "human hunks": len(result.human),
        "porting hunks": len(porting),
        "reproduced": reproduced,
        "%": percent(reproduced, len(porting)),
        "extra": len(result.extra),
        "extra renames": sum(is_device_rename(h) for h in result.extra),
    }


def category_rows(results: List[PortResult]) -> List[Dict[str, object]]:
    porting = [h for r in results for h in r.porting]
    rows = []
    for name in CATEGORY_NAMES:
        hunks = [h for h in porting if h.category == name]
        reproduced = sum(h.reproduced for h in hunks)
        rows.append({"category": name, "porting hunks": len(hunks), "reproduced": reproduced})
        rows[-1]["%"] = percent(reproduced, len(hunks))
    return rows


def summary(results: List[PortResult], args) -> Dict[str, object]:
    rows = [port_row(r) for r in results]
    total = {key: sum(row[key] for row in rows) for key in ("files", "human hunks", "porting hunks")}
    total.update({key: sum(row[key] for row in rows) for key in ("reproduced", "extra", "extra renames")})
    total["%"] = percent(total["reproduced"], total["porting hunks"])
    return {
        "command": args.cmd,
        "optimize": args.optimize,
        "version": args.version,
        "ports": rows,
        "total": total,
        "categories": category_rows(results),
    }


def print_table(rows: List[Dict[str, object]], columns: List[str], first_width: int) -> None:
    print(f"{columns[0]:<{first_width}} " + " ".join(f"{c:>13}" for c in columns[1:]))
    for row in rows:
        print(f"{str(row[columns[0]]):<{first_width}} " + " ".join(f"{str(row[c]):>13}" for c in columns[1:]))


def print_summary(data: Dict[str, object]) -> None:
    columns = ["port", "files", "human hunks", "porting hunks", "reproduced", "%", "extra", "extra renames"]
    optimize = f" --optimize={data['optimize']}" if data["optimize"] else ""
    print(f"{data['command']} migrate -v {data['version']}{optimize}\n")
    print_table(data["ports"] + [{"port": "total", **data["total"]}], columns, 28)
    print()
    print_table(data["categories"], ["category", "porting hunks", "reproduced", "%"], 28)


def hunk_record(result: PortResult, file: FileResult, hunk: Hunk) -> Dict[str, object]:
    return {
        "port": result.pair.name,
        "file": file.path,
        "upstream line": hunk.i1 + 1,
        "category": hunk.category,
        "reproduced": hunk.reproduced,
        "upstream": hunk.old,
        "human": hunk.new,
        "ours": hunk.ours,
    }


def print_lines(label: str, lines: List[str]) -> None:
    print(f"  {label}:")
    for line in lines or ["(nothing)"]:
        print(f"    | {line}")


def show_missed(results: List[PortResult], category: str) -> None:
    for result in results:
        for file in result.files:
            for hunk in file.human:
                if hunk.category == category and not hunk.reproduced:
                    print(f"--- {result.pair.name}/{file.path}:{hunk.i1 + 1} [{category}]")
                    print_lines("upstream", hunk.old)
                    print_lines("human", hunk.new)
                    print_lines("ours", hunk.ours)


def show_extra(results: List[PortResult]) -> None:
    for result in results:
        for file in result.files:
            for hunk in file.extra:
                print(f"--- {result.pair.name}/{file.path}:{hunk.i1 + 1} [extra]")
                print_lines("upstream", hunk.old)
                print_lines("ours", hunk.new)


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("mirror_dir", type=Path, help="folder of <owner>+<name>/repo git mirrors")
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    parser.add_argument("--cmd", default="gpu2npu")
    parser.add_argument("--optimize", help="pass --optimize=VALUE to migrate (e.g. all)")
    parser.add_argument("-v", "--version", default="2.1.0")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--no-cache", action="store_true", help="pass --no-cache to migrate")
    parser.add_argument("--only", action="append", metavar="NAME", help="measure this port only; repeat")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--show-missed", metavar="CATEGORY", choices=CATEGORY_NAMES)
    parser.add_argument("--show-extra", action="store_true", help="print our changes no human made")
    parser.add_argument("--hunks", type=Path, metavar="FILE", help="write every human hunk as JSON")
    parser.add_argument("--find-base", metavar="NAME", help="rank upstream commits for this port")
    return parser.parse_args(argv)


def selected(pairs: List[PortPair], names: Optional[List[str]]) -> List[PortPair]:
    if not names:
        return pairs
    unknown = set(names) - {p.name for p in pairs}
    if unknown:
        raise SystemExit(f"error: not in the manifest: {', '.join(sorted(unknown))}")
    return [p for p in pairs if p.name in names]


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    mirror_dir = args.mirror_dir.resolve()
    pairs = load_manifest(args.manifest)
    if args.find_base:
        find_base(selected(pairs, [args.find_base])[0], mirror_dir)
        return 0
    cmd = resolve_command(args.cmd)
    results = []
    with tempfile.TemporaryDirectory(prefix="gpu2npu-human-ports-") as scratch:
        for pair in selected(pairs, args.only):
            print(f"migrating {pair.name} ...", file=sys.stderr, flush=True)
            results.append(measure_port(pair, mirror_dir, cmd, args, Path(scratch)))
    data = summary(results, args)
    if args.hunks:
        records = [hunk_record(r, f, h) for r in results for f in r.files for h in f.human]
        args.hunks.write_text(json.dumps(records, indent=1), encoding="utf-8")
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print_summary(data)
    if args.show_missed:
        show_missed(results, args.show_missed)
    if args.show_extra:
        show_extra(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
