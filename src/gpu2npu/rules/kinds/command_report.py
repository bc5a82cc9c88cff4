"""CommandReportRule: a command of a script that has no NPU counterpart or another one
(``nvidia-smi`` -> ``npu-smi``, ``nvcc``, ``nvidia-docker``), reported with ``tip`` wherever a shell
script, a Dockerfile or a notebook's shell code (``!nvidia-smi``, a ``%%bash`` cell) runs it;
nothing is changed. A command is matched by the name it is run by
(``/usr/bin/nvidia-smi`` is ``nvidia-smi``), only where it runs: not in comments, quoted text or
here-documents. ``arguments`` (a regular expression searched in its arguments, joined by spaces)
narrows the rule to some uses: ``docker`` with ``--gpus``.
"""

from gpu2npu.rules.kind import FileRuleKind
from gpu2npu.rules.kinds._reported import regex_problem, report_problem
from gpu2npu.rules.model import Field


class CommandReport(FileRuleKind):
    name = "CommandReportRule"
    file_kind = "shell"
    example_file = "run.sh"
    fields = {
        "command": Field(str, required=True, help="the command's name, e.g. nvidia-smi"),
        "arguments": Field(str, help="a regular expression its arguments must contain, e.g. --gpus"),
        "tip": Field(str, required=True, help="what to do on the NPU"),
        "category": Field(str, default="unsupported", help="unsupported, limited, unknown or mention"),
    }

    def validate(self, fields):
        command = fields["command"]
        if not command or "/" in command or any(char.isspace() for char in command):
            return f"'command' must be a command's name without a folder, not {command!r}"
        return regex_problem("arguments", fields["arguments"]) or report_problem(fields)

    def describe(self, rule):
        arguments = rule.get("arguments")
        return f"report {rule['command']}" + (f" with arguments matching {arguments}" if arguments else "")

    def subject(self, rule):
        return rule["command"]
