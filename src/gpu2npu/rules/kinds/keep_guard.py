"""KeepGuardRule: a CUDA test (``torch.cuda.is_available()``, ``x.is_cuda``) stays a CUDA test
where a branch it decides uses code that runs only on CUDA: a library the status rules mark
``cuda_only`` (apex's CUDA kernels, flash-attn, ...), a C++/CUDA extension the project builds,
or a torch name that keeps its CUDA name (no NPU counterpart, ``get_device_capability``), or,
later in the test's own ``and`` chain, a function that probes CUDA (``torch.cuda.is_available()
and not check_cuda_fp8_capability()``), or, beside it in an ``and`` chain, a test that the build is
not ROCm's (``torch.version.hip is None``): the author excluded the other device that speaks
torch.cuda, so what it selects is NVIDIA's alone. On NPU
the kept test is False, so the program takes the branch it takes on any machine without CUDA,
instead of sending NPU tensors into CUDA kernels. The test is reported as manual work. A device
compared with ``'cuda'`` in such a test (``x.device.type == 'cuda'``) keeps its literal too, and a
name compared with ``'cuda'`` beside it that is no device (``impl == 'cuda'``) names an
implementation: its ``'cuda'`` literals in the file stay, reported with ``selector_tip``.
A kept test whose CUDA side places nothing on the device works on NPU as on any machine without
CUDA (a limit); one whose CUDA side would use the NPU (``'npu' if torch.cuda.is_available() and
...``) fails. A call kept on CUDA that runs only on a kept test's CUDA side is never made on NPU:
a limit, reported with ``guarded_tip``.

    rules:
      KeepGuardRule:
        - {id: G2N090, test: [torch.cuda.is_available, "*.is_cuda"], tip: "..."}
"""

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names
from gpu2npu.rules.model import Field


class KeepGuard(RuleKind):
    name = "KeepGuardRule"
    fields = {
        "test": Field(
            (str, list), required=True, help="qualified names (torch.cuda.is_available) or *.attribute"
        ),
        "tip": Field(str, required=True, help="what to do about a test that is kept"),
        "selector_tip": Field(
            str, default="", help="what to say of a kept 'cuda' that names an implementation (impl='cuda')"
        ),
        "rocm_build": Field(
            list,
            default=[],
            help="names set only on a ROCm build (torch.version.hip): a CUDA test beside `name is None` "
            "selects NVIDIA alone and is kept, so the NPU takes ROCm's way",
        ),
        "rocm_tip": Field(str, default="", help="what to say of a test kept because it excludes ROCm"),
        "peer_tip": Field(
            str,
            default="",
            help="what to say of a test bound to a CUDA flag beside the project's own NPU flag",
        ),
        "guarded_tip": Field(
            str,
            default="",
            help="what to say of a call kept on CUDA that runs only where a kept test says CUDA",
        ),
    }

    def validate(self, fields):
        for test in tests(fields):
            problem = check_names(test=test[2:] if test.startswith("*.") else test)
            if problem:
                return problem
        for name in fields.get("rocm_build", []):
            problem = check_names(rocm_build=name)
            if problem:
                return problem
        return None

    def compile(self, rule, index):
        for test in tests(rule):
            index.guard_tests[test] = rule.id
        index.rocm_builds.update(rule.get("rocm_build", []))

    def describe(self, rule):
        return f"keep {', '.join(tests(rule))} where a branch it decides runs only on CUDA"


def tests(fields):
    return [fields["test"]] if isinstance(fields["test"], str) else list(fields["test"])
