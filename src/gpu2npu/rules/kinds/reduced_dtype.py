"""ReducedDtypeRule: a collective reduces a tensor in a dtype the NPU's collective library
refuses (HCCL's all_reduce of float64: "Unsupported data type"), where the source shows it: the
tensor is a name the same function binds to an expression naming one of ``dtypes``
(``t = torch.tensor([count, total], dtype=torch.float64, device='cuda')`` then
``dist.all_reduce(t)``, the SmoothedValue of DeiT, DINO, MAE, ConvNeXt and ALBEF). The call is
kept and reported as failing on the NPU with ``tip``; NCCL reduces these dtypes, so the original
ran. A float64 made on the device that ``migrate --optimize=all`` makes float32 (DeviceDtypeRule)
is no such tensor there.

    rules:
      ReducedDtypeRule:
        - {id: G2N174, collectives: [torch.distributed.all_reduce], dtypes: [torch.float64], tip: "..."}
"""

import re

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, last, listed_names
from gpu2npu.rules.model import Field


class ReducedDtype(RuleKind):
    name = "ReducedDtypeRule"
    fields = {
        "collectives": Field(list, required=True, help="qualified names of the reducing collectives"),
        "dtypes": Field(list, required=True, help="qualified dtypes they refuse, e.g. torch.float64"),
        "methods": Field(list, default=(), help="tensor methods that give those dtypes, e.g. double"),
        "tip": Field(str, required=True, help="what to do"),
    }

    def validate(self, fields):
        names = {
            **listed_names("collectives", fields["collectives"]),
            **listed_names("dtypes", fields["dtypes"]),
        }
        return check_names(**names, **listed_names("methods", list(fields["methods"])))

    def compile(self, rule, index):
        index.reduced_dtypes.append(rule)

    def triggers(self, rule):
        """A collective and a refused dtype in the same file: no other rule may fire in a file that
        makes its tensors on a device variable (stylegan2-ada's training_stats, in --mode auto)."""
        collectives = "|".join(sorted({re.escape(last(name)) for name in rule["collectives"]}))
        dtypes = "|".join(sorted({re.escape(last(name)) for name in [*rule["dtypes"], *rule["methods"]]}))
        return {(rf"\b(?:{collectives})\b", rf"\b(?:{dtypes})\b")}

    def describe(self, rule):
        return f"report {', '.join(map(last, rule['collectives']))} of a {', '.join(rule['dtypes'])} tensor"

    def subject(self, rule):
        return rule["collectives"][0]
