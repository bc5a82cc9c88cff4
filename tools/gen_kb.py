#!/usr/bin/env python3
"""Generate rules/api_support.csv, the per-version NPU status of every torch API, from kb/.

    python tools/gen_kb.py            # rewrite rules/api_support.csv
    python tools/gen_kb.py --check    # exit 1 if the file is not what the facts give

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
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
# The status words and the operator naming are shared with the lookup that reads the table.
from gpu2npu.kb.table import (  # noqa: E402
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
OUTPUT = ROOT / "rules" / "api_support.csv"
VERSIONS = [str(v) for v in yaml.safe_load((ROOT / "rules" / "versions.yaml").read_text())["versions"]]

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
    listed_versions: Tuple[str, ...] = ()  # target versions with an API list of their own

    def names(self) -> List[str]:
        return sorted(set(self.docs) | set(self.msprobe) | set(self.apimd) | set().union(*self.intercepted.values()))


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
    kernels: Dict[str, Set[str]] = {}
    for row in read_csv("aten_ops_npu.csv"):
        present = {v for v in VERSIONS if row.get(v)}
        kernels.setdefault(operator_base(row["aten_op"]), set()).update(present)
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


def decide(facts: Facts, api: str, version: str) -> Verdict:
    """Lists of this version > neighbouring versions > operator coverage > unknown."""
    listed = listed_verdict(facts, api, version)
    if listed is not None:
        return listed
    if version not in facts.listed_versions:
        inferred = fallback_verdict(facts, api, version)
        if inferred is not None:
            return inferred
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the file is up to date")
    args = parser.parse_args(argv)
    text = render(load_facts())
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else None
    if current == text:
        print(f"{OUTPUT.name} is up to date")
        return 0
    if args.check:
        print(f"out of date: {OUTPUT.name}; run python tools/gen_kb.py", file=sys.stderr)
        return 1
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"regenerated: {OUTPUT.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
