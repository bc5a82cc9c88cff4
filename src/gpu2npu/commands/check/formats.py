"""Output formats of `gpu2npu check`: text, json, sarif (2.1.0), junit, github (annotations)."""

from __future__ import annotations

import json
from collections import Counter
from itertools import groupby
from typing import Callable, Dict, List
from xml.sax.saxutils import escape, quoteattr

from gpu2npu import __version__
from gpu2npu.commands.check.findings import Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render(fmt: str, findings: List[Finding], summary: dict, failing: Callable[[Finding], bool]) -> str:
    return FORMATS[fmt](findings, summary, failing)


def summary_line(findings: List[Finding], summary: dict) -> str:
    counts = Counter(f.severity for f in findings)
    files = len({f.file for f in findings})
    return (
        f"{len(findings)} finding(s) ({counts['error']} error(s), {counts['warning']} warning(s), "
        f"{counts['note']} note(s)) in {files} file(s); migration readiness: {summary['readiness']:.0%} of "
        f"{summary['python_files']} Python file(s) convert fully; torch {summary['torch_version']}"
    )


def text(findings, summary, failing) -> str:
    lines = []
    for file, group in groupby(findings, key=lambda f: f.file):
        lines.append(file)
        for f in group:
            mark = " (fails)" if failing(f) else ""
            lines.append(f"  {f.line}:{f.column}  {f.severity}  {f.category}  {f.message}  [{f.rule}]{mark}")
    lines.append(summary_line(findings, summary))
    return "\n".join(lines) + "\n"


def as_json(findings, summary, failing) -> str:
    data = {
        "tool": "gpu2npu",
        "tool_version": __version__,
        "summary": {**summary, "findings": len(findings), "failing": sum(1 for f in findings if failing(f))},
        "findings": [
            {
                "file": f.file,
                "line": f.line,
                "column": f.column,
                "category": f.category,
                "severity": f.severity,
                "rule": f.rule,
                "api": f.api,
                "message": f.message,
                "fingerprint": f.fingerprint,
                "fails": failing(f),
            }
            for f in findings
        ],
    }
    return json.dumps(data, indent=2) + "\n"


def sarif(findings, summary, failing) -> str:
    rules: Dict[str, str] = {}
    for f in findings:
        rules.setdefault(f.rule, f"{f.category}: {f.api}")
    run = {
        "tool": {
            "driver": {
                "name": "gpu2npu",
                "version": __version__,
                "rules": [
                    {"id": rule, "shortDescription": {"text": text}} for rule, text in sorted(rules.items())
                ],
            }
        },
        "results": [
            {
                "ruleId": f.rule,
                "level": f.severity,
                "message": {"text": f.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": f.file},
                            "region": {"startLine": f.line, "startColumn": f.column},
                        }
                    }
                ],
                "partialFingerprints": {"gpu2npu/v1": f.fingerprint},
            }
            for f in findings
        ],
    }
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"


def junit(findings, summary, failing) -> str:
    failures = sum(1 for f in findings if failing(f))
    cases = []
    for f in findings:
        name = quoteattr(f"{f.rule} {f.api} at {f.line}:{f.column}")
        body = (
            f'<failure message={quoteattr(f.message)} type="{f.category}"/>'
            if failing(f)
            else f"<system-out>{escape(f.message)}</system-out>"
        )
        cases.append(f"    <testcase classname={quoteattr(f.file)} name={name}>{body}</testcase>")
    if not findings:
        cases.append('    <testcase classname="gpu2npu" name="no findings"/>')
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n'
        f'  <testsuite name="gpu2npu check" tests="{max(1, len(findings))}" '
        f'failures="{failures}" errors="0">\n' + "\n".join(cases) + "\n  </testsuite>\n</testsuites>\n"
    )


def github(findings, summary, failing) -> str:
    """GitHub Actions workflow commands: one annotation per finding."""
    lines = []
    for f in findings:
        level = "error" if failing(f) else ("warning" if f.severity != "note" else "notice")
        props = f"file={_prop(f.file)},line={f.line},col={f.column},title={_prop('gpu2npu ' + f.rule)}"
        lines.append(f"::{level} {props}::{_data(f.message)}")
    lines.append(summary_line(findings, summary))
    return "\n".join(lines) + "\n"


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


FORMATS = {"text": text, "json": as_json, "sarif": sarif, "junit": junit, "github": github}
