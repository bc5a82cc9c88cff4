"""EnvVarReportRule: an environment variable that CUDA, NCCL or the NVIDIA tools read and that has
no Ascend counterpart of the same meaning (``NCCL_SOCKET_IFNAME``, ``NCCL_IB_*``, ``CUDA_HOME``...).
Where a launch script, a Dockerfile or a notebook (its shell code, ``%env``) sets or exports it,
the shell, dockerfile and notebook kinds report it with ``tip``; nothing is changed. ``name``
matches one variable, ``prefix`` every variable that starts with it (a name wins over a prefix, a
longer prefix over a shorter one). A variable that an EnvVarRenameRule renames is renamed, never
reported.
"""

from gpu2npu.rules.kind import FileRuleKind
from gpu2npu.rules.kinds._reported import report_problem
from gpu2npu.rules.model import Field


class EnvVarReport(FileRuleKind):
    name = "EnvVarReportRule"
    file_kind = "shell"
    example_file = "run.sh"
    fields = {
        "name": Field(str, help="the variable, e.g. NCCL_SOCKET_IFNAME"),
        "prefix": Field(str, help="or the start of its name, e.g. NCCL_IB_"),
        "tip": Field(str, required=True, help="what to do on the NPU"),
        "category": Field(str, default="limited", help="unsupported, limited, unknown or mention"),
    }

    def validate(self, fields):
        if (fields["name"] is None) == (fields["prefix"] is None):
            return "give either 'name' or 'prefix'"
        text = fields["name"] if fields["name"] is not None else fields["prefix"]
        if not text or not text.replace("_", "").isalnum() or text[0].isdigit():
            return f"an environment variable name (or its start) is letters, digits and '_', not {text!r}"
        return report_problem(fields)

    def describe(self, rule):
        return f"report {rule.get('name') or rule['prefix'] + '*'} where it is set"

    def subject(self, rule):
        return rule.get("name") or rule["prefix"]
