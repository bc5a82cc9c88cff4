"""KeepPeerStringRule: a device string stays where the code names the NPU beside it already.
FastChat's ``if device == "cuda": ... elif device == "npu": ...`` migrated would test "npu" twice:
the CUDA branch would take the NPU and the project's own NPU branch would be dead;
``choices=["cpu", "cuda", "npu"]`` would list "npu" twice, and ``{"cuda": a, "npu": b}`` would
lose a key. ``peers`` maps a word to the word it becomes (``cuda: npu``); a literal of the word
(``'cuda'``, ``'cuda:0'``) stays and is reported where one scope compares one expression with it
and with its peer (``'npu'``, ``'npu:0'``), where one list, tuple, set or dict display holds
both, or where it is compared with a project function that names the peer itself (``getter_tip``).

    rules:
      KeepPeerStringRule:
        - {id: G2N162, peers: {cuda: npu}, tip: "..."}
"""

from gpu2npu.rules.index import PeerStrings
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import is_identifier
from gpu2npu.rules.model import Field


class KeepPeerString(RuleKind):
    name = "KeepPeerStringRule"
    fields = {
        "peers": Field(dict, required=True, help="a device word -> the word it becomes (cuda: npu)"),
        "tip": Field(str, required=True, help="what to do about a string that is kept"),
        "getter_tip": Field(
            str,
            default="",
            help="what to say of one compared with a project function that names the NPU itself "
            "(xtuner's get_device() == 'cuda')",
        ),
    }

    def validate(self, fields):
        pairs = fields["peers"].items()
        if not pairs or not all(isinstance(w, str) and isinstance(p, str) for w, p in pairs):
            return "'peers' must map device words to words, such as {cuda: npu}"
        bad = next((w for pair in pairs for w in pair if not is_identifier(w)), None)
        return None if bad is None else f"'peers' must hold words such as cuda, not {bad!r}"

    def compile(self, rule, index):
        index.peer_strings = PeerStrings(
            tuple(sorted(rule["peers"].items())), rule.id, rule.get("getter_tip", "")
        )

    def describe(self, rule):
        pairs = ", ".join(f"'{word}' beside '{peer}'" for word, peer in rule["peers"].items())
        return f"keep {pairs}"
