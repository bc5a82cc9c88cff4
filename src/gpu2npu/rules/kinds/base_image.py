"""BaseImageRule: the base image of a Dockerfile (``FROM nvidia/cuda:12.1.0-devel-ubuntu22.04``)
that carries CUDA, reported with ``tip`` (an Ascend image with CANN and torch_npu instead); nothing
is changed. ``image`` is compared with the image reference as written, lower case, without a
``docker.io/`` or ``docker.io/library/`` registry prefix and with the build arguments of the
Dockerfile filled in (``FROM ${BASE}`` with ``ARG BASE=nvidia/cuda:11.8.0-runtime``): as a glob
(``nvidia/cuda:*``) with ``match: glob``, or searched as a regular expression with ``match: regex``.
The first rule that matches reports the image.
"""

import fnmatch
import re

from gpu2npu.rules.kind import FileRuleKind
from gpu2npu.rules.kinds._reported import regex_problem, report_problem
from gpu2npu.rules.model import Field

MATCHES = ("glob", "regex")


class BaseImage(FileRuleKind):
    name = "BaseImageRule"
    file_kind = "dockerfile"
    example_file = "Dockerfile"
    fields = {
        "image": Field(str, required=True, help="the image reference, e.g. nvidia/cuda:*"),
        "match": Field(str, default="glob", help="glob or regex"),
        "tip": Field(str, required=True, help="what to build on instead"),
        "category": Field(str, default="unsupported", help="unsupported, limited, unknown or mention"),
    }

    def validate(self, fields):
        if fields["match"] not in MATCHES:
            return f"'match' must be one of {', '.join(MATCHES)}, not {fields['match']!r}"
        if not fields["image"].strip():
            return "'image' must not be empty"
        if fields["match"] == "regex":
            return regex_problem("image", fields["image"]) or report_problem(fields)
        return report_problem(fields)

    def describe(self, rule):
        return f"report base image {rule['image']}"


def image_matches(rule, reference: str) -> bool:
    """Whether a base image reference (as ``normalised_image`` gives it) is the rule's."""
    if rule["match"] == "regex":
        return re.search(rule["image"], reference) is not None
    return fnmatch.fnmatchcase(reference, rule["image"].lower())


def normalised_image(reference: str) -> str:
    """An image reference as the rules compare it: lower case, without Docker Hub's registry prefix."""
    reference = reference.strip().lower()
    for prefix in ("docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/"):
        if reference.startswith(prefix):
            return reference[len(prefix) :]
    return reference
