"""ApiStatusRule: your own verdict on a torch API (or any dotted name) for some torch versions,
e.g. after testing it on your NPU. It rewrites nothing; ``gpu2npu.api_support`` prefers it over the
built-in lists (source ``user:<rule id>``) wherever an API status is reported or explained.

    rules:
      ApiStatusRule:
        - {api: torch.cdist, status: supported, versions: ">=2.7.1", tip: "tested on our 910B"}

``api`` may list several names that share the verdict. With ``references: true`` a use is any
reference to the name, not only a call (``dtype=torch.float64``; with ``missing``, a from-import
outside a ``try`` that catches ImportError), and for a ``torch.Tensor`` method a call of it on any
receiver (``x.double()``). ``cuda_only: true`` says a library runs only
on CUDA (apex's CUDA kernels, flash-attn, ...): a CUDA test that selects it is not turned into an
NPU test (see KeepGuardRule). A call that passes one of ``unless_keywords`` has made the choice
the verdict is about and is not reported (torch.load's ``weights_only`` from torch 2.6); with
``with_keywords``, only a call passing one of them is (Ray's ``ray.remote(num_gpus=1)``). With
``missing: true`` the verdict is that those versions lack the name: any reference fails there
(``references`` is implied), but a use that runs only where
a ``hasattr`` test found it or a module above it (``torch.accelerator.current_accelerator() if
hasattr(torch, "accelerator") else "cuda"``) is not reported.
"""

from gpu2npu.api_support import STATUSES, StatusOverride, normalise_api
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, is_identifier
from gpu2npu.rules.model import Field


class ApiStatus(RuleKind):
    name = "ApiStatusRule"
    fields = {
        "api": Field(
            (str, list), required=True, dotted=True, help="fully qualified name(s), e.g. torch.cdist"
        ),
        "status": Field(str, required=True, help="one of " + ", ".join(STATUSES)),
        "tip": Field(str, help="what to tell the user, e.g. 'use torch_npu.npu_xxx'"),
        "references": Field(bool, default=False, help="report references to the name too, not only calls"),
        "cuda_only": Field(bool, default=False, help="the library runs only on CUDA"),
        "unless_keywords": Field(list, default=(), help="a call passing one of these is not reported"),
        "with_keywords": Field(list, default=(), help="only a call passing one of these is reported"),
        "missing": Field(bool, default=False, help="the versions lack the name (hasattr-tested uses pass)"),
    }

    def validate(self, fields):
        if fields["status"] not in STATUSES:
            return f"'status' must be one of {', '.join(STATUSES)}, not {fields['status']!r}"
        names = [check_names(api=api) for api in apis(fields)]
        names += [
            f"'{field}' must list parameter names, not {name!r}"
            for field in ("unless_keywords", "with_keywords")
            for name in fields[field]
            if not (isinstance(name, str) and is_identifier(name))
        ]
        return next(filter(None, names), None)

    def compile(self, rule, index):
        # Keyed like lookups are (a trailing .__init__ names the class); later files win.
        for api in apis(rule):
            index.add_status_override(
                StatusOverride(
                    api=normalise_api(api),
                    status=rule["status"],
                    tip=rule.get("tip", ""),
                    versions=rule.versions,
                    rule_id=rule.id,
                    origin=rule.source,
                    builtin=rule.builtin,
                    references=bool(rule.get("references")),
                    cuda_only=bool(rule.get("cuda_only")),
                    unless_keywords=frozenset(rule.get("unless_keywords") or ()),
                    with_keywords=frozenset(rule.get("with_keywords") or ()),
                    missing=bool(rule.get("missing")),
                )
            )

    def describe(self, rule):
        return f"report {', '.join(apis(rule))} as {rule['status']}"


def apis(fields):
    """The names of an entry (a rule or its fields): ``api`` is one name or a list of them."""
    return [fields["api"]] if isinstance(fields["api"], str) else list(fields["api"])
