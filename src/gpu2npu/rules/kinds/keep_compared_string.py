"""KeepComparedStringRule: a device string compared with data keeps its text. A loaded
checkpoint's ``ckpt['device_type'] == 'cuda'``, a parsed TorchScript graph's
``str(node['value']).startswith('cuda')`` or the environment's value still say ``cuda`` after the
migration, so renaming the literal breaks the test on every machine. A literal the string rules
would rewrite stays as it is where it is compared (``==``, ``!=``, ``in``, ``not in``, or an
argument of one of ``methods`` of the compared value) with data: a subscript, a call of one of
``sources`` (``json.load``, ``os.getenv``, ``*.get``), ``str()`` of data, or a name bound only to
data. Values of the program itself (``device.type``, ``args.device``) are not data: their
strings are migrated with them, unless they are one of ``attributes`` of a source's result
(Triton's ``get_current_target().backend``, another framework's device name). With
``only_sources``, subscripts and calls the rules do not know are not data. A call of a function
of the file that returns data is data too. Each entry is a rule of its own, with its own tip.

    rules:
      KeepComparedStringRule:
        - {id: G2N092, methods: [startswith], sources: [json.load, "*.get"], tip: "..."}
"""

from gpu2npu.rules.index import ComparedStrings
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, listed_names
from gpu2npu.rules.model import Field


class KeepComparedString(RuleKind):
    name = "KeepComparedStringRule"
    fields = {
        "methods": Field(list, required=True, help="str methods that compare (startswith, endswith, ...)"),
        "sources": Field(list, required=True, help="calls whose result is data: qualified names or *.method"),
        "attributes": Field(list, default=(), help="attributes of a source's result that are data (backend)"),
        "only_sources": Field(bool, default=False, help="no subscript or unknown call is data"),
        "tip": Field(str, required=True, help="what to do about a string that is kept"),
    }

    def validate(self, fields):
        sources = [s[2:] if isinstance(s, str) and s.startswith("*.") else s for s in fields["sources"]]
        return check_names(
            **listed_names("methods", fields["methods"]),
            **listed_names("sources", sources),
            **listed_names("attributes", list(fields["attributes"])),
        )

    def compile(self, rule, index):
        index.compared_strings += (
            ComparedStrings(
                frozenset(rule["methods"]),
                frozenset(rule["sources"]),
                rule.id,
                frozenset(rule["attributes"]),
                rule["only_sources"],
            ),
        )

    def describe(self, rule):
        return "keep a device string compared with data (a loaded, parsed or external value)"
