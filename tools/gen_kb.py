#!/usr/bin/env python3
"""Generate src/gpu2npu/api_support/api_support.csv, the per-version NPU status of every torch
API, from kb/.

    python tools/gen_kb.py            # rewrite api_support.csv and affinity.yaml
    python tools/gen_kb.py --check    # exit 1 if a file is not what the facts give

src/gpu2npu/modes/affinity_apis/affinity.yaml (the NPU-affine replacements of
analyse -m affinity_apis) is generated from
kb/affinity_api_map.csv by render_affinity(); what it keeps and leaves out is in its header.

One row per fully qualified API name found in any API list, sorted; columns
``api,npu_api,<one per target version>``. A version cell is ``status/confidence/source``:

* status: supported | supported_with_limits | unsupported | unknown;
* confidence: ``listed`` (a list for this exact version says so), ``inferred`` (neighbouring
  versions or operator coverage), ``none`` (unknown);
* source: the facts that decided, ``fact@version`` joined by ``+`` (they agree) or ``~`` (they
  disagree, which is reported as supported_with_limits, never as unsupported); ``-`` for unknown.
  Facts: docs (official support list), msprobe (msFmkTransplt lists), apimd (the 2023 English
  list), intercept (torch_npu makes the API raise), aten (an NPU kernel for the ATen operator of
  the same name, or 1.11.0's list of unsupported operators), cpu (1.11.0 runs the operator on the CPU).

The decision per name and version follows shared/kb/DESIGN.md section 5; see decide().
Sources and licences of the facts: kb/README.md.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
# The status words and the operator naming are shared with the lookup that reads the table.
from gpu2npu.api_support.table import (  # noqa: E402
    INFERRED,
    LIMITED,
    LISTED,
    NO_SOURCE,
    NONE,
    SUPPORTED,
    UNKNOWN,
    UNSUPPORTED,
    operator_name,
    usable,
)

ROOT = Path(__file__).resolve().parent.parent
KB = ROOT / "kb"
OUTPUT = ROOT / "src" / "gpu2npu" / "api_support" / "api_support.csv"
MODULE_PREFIX = "torch.nn."
VERSIONS = [
    str(v) for v in yaml.safe_load((ROOT / "src" / "gpu2npu" / "versions.yaml").read_text())["versions"]
]

# Status codes of the lists. docs 'P' (depends on the chip) is a limit; docs 'V' (listed without
# a status) and apimd 'V' (the doc says: not tested) give no answer.
CODE_STATUS = {"S": SUPPORTED, "SL": LIMITED, "P": LIMITED, "U": UNSUPPORTED}
APIMD_VERSION = "2.1.0"  # the 2023 English list was written for the torch 2.1 line


@dataclass(frozen=True)
class Verdict:
    status: str
    confidence: str
    source: str

    def cell(self) -> str:
        return f"{self.status}/{self.confidence}/{self.source}"


UNKNOWN_VERDICT = Verdict(UNKNOWN, NONE, NO_SOURCE)


def cautious_merge(first: str, second: str) -> str:
    """Two agreeing statuses: the limits of either one are kept."""
    return first if first == second else LIMITED


# -- reading the facts ------------------------------------------------------------------------


def read_csv(name: str) -> List[Dict[str, str]]:
    with open(KB / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@dataclass
class Facts:
    docs: Dict[str, Dict[str, str]]  # api -> {version: code}
    msprobe: Dict[str, Dict[str, str]]
    apimd: Dict[str, str]  # api -> code (torch 2.1 era)
    npu_names: Dict[str, str]  # api -> NPU form name
    intercepted: Dict[str, Set[str]]  # version -> apis torch_npu makes raise
    kernels: Dict[str, Set[str]]  # ATen base name -> versions with an NPU kernel
    fallbacks: Dict[Tuple[str, str], Set[str]]  # (version, ATen base name) -> {tocpu, unsupported}
    operators: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # api -> its ATen operators
    listed_versions: Tuple[str, ...] = ()  # target versions with an API list of their own

    def names(self) -> List[str]:
        return sorted(
            set(self.docs) | set(self.msprobe) | set(self.apimd) | set().union(*self.intercepted.values())
        )


def versions_with_a_list(*tables: Dict[str, Dict[str, str]]) -> Tuple[str, ...]:
    """Target versions for which docs or msprobe has a list (a column with any code)."""
    columns = {v for table in tables for codes in table.values() for v, code in codes.items() if code}
    return tuple(v for v in VERSIONS if v in columns)


def per_version_codes(rows: List[Dict[str, str]]) -> Dict[str, Dict[str, str]]:
    return {row["api"]: {v: row.get(v, "") or "" for v in VERSIONS} for row in rows}


def npu_names(docs_rows: List[Dict[str, str]], apimd_rows: List[Dict[str, str]]) -> Dict[str, str]:
    """The docs' NPU form name, else the 2023 list's; '-' and the API's own name say nothing."""
    names = {}
    for rows, column in ((apimd_rows, "npu_api"), (docs_rows, "npu_name")):  # docs last: they win
        for row in rows:
            value = row[column].strip()
            if value and value != "-" and value != row["api"]:
                names[row["api"]] = value
    return names


def intercepted_apis() -> Dict[str, Set[str]]:
    branches = json.loads((KB / "torch_npu_namespaces.json").read_text(encoding="utf-8"))["branches"]
    return {v: set(branches.get(f"v{v}", {}).get("intercepted_unsupported", [])) for v in VERSIONS}


def operator_base(aten_op: str) -> str:
    """'add.Tensor' -> 'add': the Python API carries the operator name without the overload."""
    return aten_op.split(".", 1)[0]


def kernel_versions() -> Dict[str, Set[str]]:
    """Versions with an NPU kernel, by operator; ``max_pool2d_with_indices`` counts for
    ``max_pool2d`` too (aten's max_pool2d calls it off the CPU's mkldnn path)."""
    kernels: Dict[str, Set[str]] = {}
    for row in read_csv("aten_ops_npu.csv"):
        present = {v for v in VERSIONS if row.get(v)}
        base = operator_base(row["aten_op"])
        for name in {base, base.removesuffix("_with_indices")}:
            kernels.setdefault(name, set()).update(present)
    return kernels


def fallback_kinds() -> Dict[Tuple[str, str], Set[str]]:
    kinds: Dict[Tuple[str, str], Set[str]] = {}
    for row in read_csv("aten_ops_fallback.csv"):
        kinds.setdefault((row["torch"], operator_base(row["aten_op"])), set()).add(row["kind"])
    return kinds


@lru_cache(maxsize=1)
def load_facts() -> Facts:
    docs_rows, apimd_rows = read_csv("api_support_docs.csv"), read_csv("api_support_apis_md_2023.csv")
    docs, msprobe = per_version_codes(docs_rows), per_version_codes(read_csv("api_support_msprobe.csv"))
    return Facts(
        docs=docs,
        msprobe=msprobe,
        apimd={row["api"]: row["status_2.1_era"] for row in apimd_rows},
        npu_names=npu_names(docs_rows, apimd_rows),
        intercepted=intercepted_apis(),
        kernels=kernel_versions(),
        fallbacks=fallback_kinds(),
        operators={row["api"]: tuple(row["operators"].split()) for row in read_csv("api_operators.csv")},
        listed_versions=versions_with_a_list(docs, msprobe),
    )


# -- deciding one cell --------------------------------------------------------------------------


def two_lists(first: Tuple[str, str], second: Optional[Tuple[str, str]], version: str) -> Verdict:
    """The answer of a primary list, refined by a second list of the same version:
    a disagreement on usability is a conflict (limits, never silently unsupported); agreement
    keeps the limits of either."""
    name, status = first
    if second is None:
        return Verdict(status, LISTED, f"{name}@{version}")
    other_name, other = second
    if usable(status) != usable(other):
        return Verdict(LIMITED, LISTED, f"{name}@{version}~{other_name}@{version}")
    merged = cautious_merge(status, other)
    if merged == status:
        return Verdict(status, LISTED, f"{name}@{version}")
    return Verdict(merged, LISTED, f"{name}@{version}+{other_name}@{version}")


def listed_verdict(facts: Facts, api: str, version: str) -> Optional[Verdict]:
    """What the lists for exactly this version say: docs > msprobe (the 2023 list refines
    msprobe for 2.1.0) > the APIs torch_npu of that version makes raise."""
    docs = CODE_STATUS.get(facts.docs.get(api, {}).get(version, ""))
    msprobe = CODE_STATUS.get(facts.msprobe.get(api, {}).get(version, ""))
    apimd = CODE_STATUS.get(facts.apimd.get(api, "")) if version == APIMD_VERSION else None
    if docs:
        return two_lists(("docs", docs), ("msprobe", msprobe) if msprobe else None, version)
    if msprobe:
        return two_lists(("msprobe", msprobe), ("apimd", apimd) if apimd else None, version)
    if apimd:
        return Verdict(apimd, LISTED, f"apimd@{version}")
    if api in facts.intercepted.get(version, ()):
        return Verdict(UNSUPPORTED, LISTED, f"intercept@{version}")
    return None


def operator_verdict(facts: Facts, api: str, version: str) -> Optional[Verdict]:
    """Operator coverage: an NPU kernel means likely supported; 1.11.0's CPU fallbacks run on
    the CPU (limits), its unsupported operators are unsupported. Mixed overloads are limits."""
    base = operator_name(api)
    if base is None:
        return None
    kinds = set(facts.fallbacks.get((version, base), set()))
    if version in facts.kernels.get(base, ()):
        kinds.add("npu")
    if not kinds:
        return None
    if "tocpu" in kinds:
        return Verdict(LIMITED, INFERRED, f"cpu@{version}")
    if kinds == {"npu"}:
        return Verdict(SUPPORTED, INFERRED, f"aten@{version}")
    if kinds == {"unsupported"}:
        return Verdict(UNSUPPORTED, INFERRED, f"aten@{version}")
    return Verdict(LIMITED, INFERRED, f"aten@{version}")  # some overloads have a kernel, some not


def lead_fact(verdict: Verdict) -> str:
    """The deciding fact of a listed answer ('docs@2.6.0' of 'docs@2.6.0~msprobe@2.6.0')."""
    return verdict.source.replace("~", "+").split("+", 1)[0]


def neighbours(facts: Facts, version: str) -> Tuple[Optional[str], Optional[str]]:
    """The nearest versions with an API list below and above a version without one."""
    listed = facts.listed_versions
    position = VERSIONS.index(version)
    below = next((v for v in reversed(VERSIONS[:position]) if v in listed), None)
    above = next((v for v in VERSIONS[position + 1 :] if v in listed), None)
    return below, above


def agreeing(first: Verdict, second: Verdict) -> Optional[Verdict]:
    if usable(first.status) != usable(second.status):
        return None
    status = cautious_merge(first.status, second.status)
    return Verdict(status, INFERRED, f"{lead_fact(first)}+{lead_fact(second)}")


def fallback_verdict(facts: Facts, api: str, version: str) -> Optional[Verdict]:
    """A version without a list: both neighbours must agree. With a single neighbour (1.11.0)
    its answer counts only when operator evidence of this version agrees. Neighbours that
    answer but disagree leave the name unknown (UNKNOWN_VERDICT); no answer returns None."""
    below, above = neighbours(facts, version)
    answers = [listed_verdict(facts, api, v) for v in (below, above) if v is not None]
    if not answers or any(answer is None for answer in answers):
        return None
    if len(answers) == 2:
        return agreeing(answers[0], answers[1]) or UNKNOWN_VERDICT
    evidence = operator_verdict(facts, api, version)
    return (agreeing(answers[0], evidence) if evidence else None) or UNKNOWN_VERDICT


def kernel_operators(facts: Facts, api: str) -> Tuple[str, ...]:
    """The ATen operators an API runs on the device: those kb/api_operators.csv names (a name
    that is not its operator's: grid_sample runs grid_sampler_2d), else the operator of a function
    (operator_name), or of a module named after its functional form: torch.nn.AdaptiveMaxPool2d
    -> adaptive_max_pool2d."""
    if api in facts.operators:
        return facts.operators[api]
    operator = operator_name(api)
    if operator is not None or not api.startswith(MODULE_PREFIX):
        return (operator,) if operator is not None else ()
    name = api[len(MODULE_PREFIX) :]
    if not name[:1].isupper() or "." in name:
        return ()
    return (re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower(),)


def against_kernels(facts: Facts, api: str, version: str, verdict: Verdict) -> Verdict:
    """A list's 'unsupported' where torch_npu of that version has NPU kernels for the operator is
    a disagreement of two facts: limits (test it), never a silent unsupported. An API torch_npu
    makes raise stays unsupported."""
    if verdict.status != UNSUPPORTED or lead_fact(verdict).startswith("intercept@"):
        return verdict
    operators = kernel_operators(facts, api)
    if not operators or any(version not in facts.kernels.get(op, ()) for op in operators):
        return verdict
    return Verdict(LIMITED, verdict.confidence, f"{verdict.source}~aten@{version}")


def decide(facts: Facts, api: str, version: str) -> Verdict:
    """Lists of this version > neighbouring versions (both checked against this version's
    kernels) > operator coverage > unknown."""
    listed = listed_verdict(facts, api, version)
    if listed is not None:
        return against_kernels(facts, api, version, listed)
    if version not in facts.listed_versions:
        inferred = fallback_verdict(facts, api, version)
        if inferred is not None:
            return against_kernels(facts, api, version, inferred)
    return operator_verdict(facts, api, version) or UNKNOWN_VERDICT


# -- writing --------------------------------------------------------------------------------------


def rows(facts: Facts) -> Iterable[List[str]]:
    yield ["api", "npu_api", *VERSIONS]
    for api in facts.names():
        yield [api, facts.npu_names.get(api, ""), *(decide(facts, api, v).cell() for v in VERSIONS)]


def render(facts: Facts) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows(facts))
    return buffer.getvalue()


# -- affinity.yaml: NPU-affine replacements (analyse -m affinity_apis) ---------------------------

AFFINITY_FACTS = KB / "affinity_api_map.csv"
AFFINITY_OUTPUT = ROOT / "src" / "gpu2npu" / "modes" / "affinity_apis" / "affinity.yaml"
NAMESPACES = KB / "torch_npu_namespaces.json"
APEX = "n/a"  # replacement_present_in_torch of the apex replacements
# msFmkTransplt's one "special" pattern (anchor spec 13.4), not a row of the CSV: a boolean-mask
# assignment ``x[condition] = value`` (what counts as a condition: gpu2npu.modes.affinity_apis.match). Its
# versions are those whose torch_npu.contrib.function has the replacement.
SPECIAL_REPLACEMENT = "torch_npu.contrib.function.npu_fast_condition_index_put"
SPECIAL_CALL_NAME = "input[condition] = value"
# The curated pattern rows are prose. Those naming a concrete API or definition name are matched
# as below (replacement: one of the row's ' / '-separated replacements); the others describe data
# flow (SwiGLU, permute + reshape, MoE gating, ...) and are left out.
PATTERN_MATCHERS = {
    "flash_attn.flash_attn_func / flash_attn_varlen_func; hand-written softmax(QK^T)V attention": [
        {"match": "call", "api": api}
        for api in (
            "flash_attn.flash_attn_func",
            "flash_attn.flash_attn_varlen_func",
            "flash_attn.flash_attn_interface.flash_attn_func",
            "flash_attn.flash_attn_interface.flash_attn_varlen_func",
        )
    ],
    "RMSNorm module (e.g. LlamaRMSNorm.forward)": [{"match": "class_suffix", "suffix": "RMSNorm"}],
    "rotary position embedding (apply_rotary_pos_emb)": [
        {"match": "function", "name": "apply_rotary_pos_emb"}
    ],
    "torch.nn.functional.gelu (fast approximation acceptable)": [
        {"match": "call", "api": "torch.nn.functional.gelu"}
    ],
    "torch.nn.functional.silu / Mish activations": [
        {"match": "call", "api": "torch.nn.functional.silu", "replacement": "torch_npu.npu_silu"},
        {"match": "call", "api": "torch.nn.functional.mish", "replacement": "torch_npu.npu_mish"},
    ],
}
AFFINITY_HEADER = """\
# NPU-affine replacements for `gpu2npu analyse -m affinity_apis` (read by
# gpu2npu.modes.affinity_apis.match). Generated by tools/gen_kb.py from
# kb/affinity_api_map.csv; do not edit (python tools/gen_kb.py).
#
# Each entry: match (how code is matched), type (the report's Api Type), replacement (its
# Affinity Api Name), versions (target torch versions whose torch_npu has the replacement; the
# entry is reported only for those, so [] is never reported), source (kb/README.md ids).
#   call:             a call whose fully qualified name (through the file's imports) is `api`
#   function:         a def named `name` with exactly the parameter names `params` (any when absent)
#   class:            a class named `name` deriving from `base`, whose own __init__ and forward have
#                     exactly these parameter names ([]: the class defines none)
#   class_suffix:     a class whose name ends with `suffix`
#   subscript_assign: an assignment x[index] = value whose index is plausibly a boolean condition
#                     tensor (reported as `call_name`), in a file that imports torch: a comparison
#                     (x[x > 0] = 0), a boolean torch function or tensor method (torch.isnan(x),
#                     x.eq(y), m.bool()), ~ / & / | of those, or a name last bound to one in the
#                     same scope; dict-style d[key] = value is not reported (see the docstring of
#                     gpu2npu.modes.affinity_apis.match)
"""


def split_params(text: str) -> List[str]:
    return [name for name in text.split(",") if name]


def class_detail(detail: str) -> Dict[str, object]:
    """'base=nn.Module; __init__=self,p; forward=self,x' -> base (nn. spelled torch.nn.), init, forward."""
    parts = dict(part.strip().split("=", 1) for part in detail.split(";"))
    base = parts["base"]
    return {
        "base": "torch." + base if base.startswith("nn.") else base,
        "init": split_params(parts["__init__"]),
        "forward": split_params(parts["forward"]),
    }


def affinity_entries(row: Dict[str, str], with_torch_npu: Set[str]) -> Tuple[List[Dict[str, object]], str]:
    """The entries of one CSV row, or the reason it is left out. ``with_torch_npu``: the
    originals that have a torch_npu replacement (apex is not part of torch_npu; where both
    exist, the torch_npu one is suggested)."""
    kind, original, detail = row["match_kind"], row["original"], row["match_detail"]
    present = row["replacement_present_in_torch"]
    if present == APEX:
        if original in with_torch_npu:
            return [], "apex replacement; the torch_npu one of the same API is kept"
        return [], "apex replacement only"
    common = {"replacement": row["replacement"], "versions": present.split(), "source": row["evidence"]}
    if kind == "user-defined function":
        return [
            {
                "match": "function",
                "type": "function",
                "name": original,
                "params": split_params(detail.removeprefix("params=")),
                **common,
            }
        ], ""
    if kind == "user-defined class":
        return [{"match": "class", "type": "class", "name": original, **class_detail(detail), **common}], ""
    if kind == "torch api call":
        if detail:
            return [], f"conditional ({detail}), cannot be decided from the source"
        return [{"match": "call", "type": "torch", "api": original, **common}], ""
    if original not in PATTERN_MATCHERS:
        return [], "a data-flow pattern without a name to match"
    replacements = [name.strip() for name in row["replacement"].split(" / ")]
    entries = []
    for matcher in PATTERN_MATCHERS[original]:
        replacement = matcher.get("replacement", replacements[0])
        assert replacement in replacements, (original, replacement)
        fields = {key: value for key, value in matcher.items() if key not in ("match", "replacement")}
        # A list of its own per entry: a shared one would be dumped as a YAML alias.
        entries.append(
            {
                "match": matcher["match"],
                "type": "pattern",
                **fields,
                **common,
                "replacement": replacement,
                "versions": list(common["versions"]),
            }
        )
    return entries, ""


def special_entry(namespaces: Dict[str, dict]) -> Dict[str, object]:
    namespace, name = SPECIAL_REPLACEMENT.rsplit(".", 1)
    versions = [v for v in VERSIONS if name in namespaces.get(f"v{v}", {}).get(namespace, [])]
    return {
        "match": "subscript_assign",
        "type": "special",
        "call_name": SPECIAL_CALL_NAME,
        "replacement": SPECIAL_REPLACEMENT,
        "versions": versions,
        "source": "MSAFF+NS",
    }


def render_affinity(facts: Path = AFFINITY_FACTS, namespaces: Path = NAMESPACES) -> str:
    with open(facts, newline="", encoding="utf-8") as handle:
        csv_rows = list(csv.DictReader(handle))
    branches = json.loads(namespaces.read_text(encoding="utf-8"))["branches"]
    with_torch_npu = {row["original"] for row in csv_rows if row["replacement_present_in_torch"] != APEX}
    entries, left_out = [], []
    for row in csv_rows:
        found, reason = affinity_entries(row, with_torch_npu)
        entries.extend(found)
        if reason:
            left_out.append(f"#   {row['original']} -> {row['replacement']}: {reason}")
    entries.append(special_entry(branches))
    body = yaml.safe_dump({"entries": entries}, sort_keys=False, default_flow_style=None, width=100)
    return AFFINITY_HEADER + "#\n# Rows of the CSV left out:\n" + "\n".join(left_out) + "\n\n" + body


# -- main -----------------------------------------------------------------------------------------


# -- namespaces.csv: the names torch_npu's public namespaces have, per target version -------------

NAMESPACES_OUTPUT = ROOT / "src" / "gpu2npu" / "api_support" / "namespaces.csv"
NAMESPACES_HEADER = ("namespace", "name", "versions")


def render_namespaces(namespaces: Path = NAMESPACES) -> str:
    """One row per (namespace, name) with the target versions whose torch_npu has it; a
    namespace of torch_npu is listed with the name '' (it exists itself)."""
    branches = json.loads(namespaces.read_text(encoding="utf-8"))["branches"]
    present: Dict[Tuple[str, str], List[str]] = {}
    for version in VERSIONS:
        for namespace, names in branches.get(f"v{version}", {}).items():
            if namespace.startswith("torch_npu") and isinstance(names, list):
                for name in ["", *names]:
                    present.setdefault((namespace, name), []).append(version)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(NAMESPACES_HEADER)
    for (namespace, name), versions in sorted(present.items()):
        writer.writerow([namespace, name, " ".join(versions)])
    return buffer.getvalue()


def update(output: Path, text: str, check: bool) -> int:
    current = output.read_text(encoding="utf-8") if output.exists() else None
    if current == text:
        print(f"{output.name} is up to date")
        return 0
    if check:
        print(f"out of date: {output.name}; run python tools/gen_kb.py", file=sys.stderr)
        return 1
    output.write_text(text, encoding="utf-8")
    print(f"regenerated: {output.name}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the files are up to date")
    args = parser.parse_args(argv)
    results = [
        update(OUTPUT, render(load_facts()), args.check),
        update(AFFINITY_OUTPUT, render_affinity(), args.check),
        update(NAMESPACES_OUTPUT, render_namespaces(), args.check),
    ]
    return max(results)


if __name__ == "__main__":
    sys.exit(main())
