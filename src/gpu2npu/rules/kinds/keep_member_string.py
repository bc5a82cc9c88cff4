"""KeepMemberStringRule: a device string that is the value of an enumeration's member keeps its
text. ``class RNGType(Enum): CUDA = "cuda"; NPU = "npu"`` migrated to ``CUDA = "npu"`` would make
``CUDA`` an alias of ``NPU`` (equal values), so ``RNGType("cuda")`` fails and ``RNGType.CUDA is
RNGType.NPU``; the value is data, written to configs and read back. A class is an enumeration
where a base is one of ``bases`` (through the file's imports; ``"*Enum"``: a base whose name ends
so, or a class of the file deriving from one), or where its body assigns one of ``peers`` to a
class attribute (a table of devices that has the NPU already). The literal stays and is reported.

    rules:
      KeepMemberStringRule:
        - {id: G2N159, bases: [enum.Enum, "*Enum"], peers: [npu], tip: "..."}
"""

from gpu2npu.rules.index import MemberStrings
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, listed_names
from gpu2npu.rules.model import Field


class KeepMemberString(RuleKind):
    name = "KeepMemberStringRule"
    fields = {
        "bases": Field(list, required=True, help="qualified enumeration bases (enum.Enum), or *Suffix"),
        "peers": Field(list, default=None, help="literals that make a class body a table of devices"),
        "tip": Field(str, required=True, help="what to do about a member that is kept"),
    }

    def validate(self, fields):
        bases = [b[1:] if isinstance(b, str) and b.startswith("*") else b for b in fields["bases"]]
        peers = fields["peers"] or []
        if not all(isinstance(peer, str) for peer in peers):
            return "'peers' must be a list of strings"
        return check_names(**listed_names("bases", bases))

    def compile(self, rule, index):
        index.member_strings = MemberStrings(
            frozenset(rule["bases"]), frozenset(rule["peers"] or ()), rule.id
        )

    def describe(self, rule):
        return "keep a device string that is an enumeration member's value"
