"""DataLoaderRule (msFmkTransplt's name), for ``distributed -m MAIN``: in the main script, each
training loader gets a ``sampler`` that shards its dataset and takes over its ``shuffle``, and
epoch loops call ``sampler.set_epoch``. A loader is a training loader when it shuffles
(``shuffle=True``), when ``train_words`` appear in its names (the names it is assigned to, its
dataset, its function), or when its shuffle is a value (a config's) and no ``eval_words`` appear
there; the others are evaluation loaders, left unsharded unless ``--shard-eval``. What cannot be
sharded safely is kept and reported (``tips``). The pass is gpu2npu.rewrite.distributed. The optional tip
``card_batch`` reports a batch size multiplied by the number of cards (gpu2npu.rewrite.scaled_batch).

    rules:
      DataLoaderRule:
        - id: G2N742
          loaders: [torch.utils.data.DataLoader]
          sampler: torch.utils.data.distributed.DistributedSampler
          train_words: [train]
          tips: {unpacked: ..., sampler: ..., evaluation: ..., dataset: ..., set_epoch: ..., card_batch: ...}
"""

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, listed_names, tips_problem
from gpu2npu.rules.model import Field

TIPS = ("unpacked", "sampler", "evaluation", "dataset", "set_epoch")


class DataLoader(RuleKind):
    name = "DataLoaderRule"
    fields = {
        "loaders": Field(list, required=True, help="qualified names of the loader class"),
        "sampler": Field(str, required=True, dotted=True, help="the sharding sampler"),
        "train_words": Field(list, default=["train"], help="words that name a training loader"),
        "eval_words": Field(
            list,
            default=["test", "val", "eval"],
            help="words that name an evaluation loader whose shuffle is a value (a config's)",
        ),
        "tips": Field(dict, required=True, help="what to do: " + ", ".join(TIPS) + ", optional card_batch"),
    }
    text_only = True

    def validate(self, fields):
        if any(
            not isinstance(word, str) or not word for word in fields["train_words"] + fields["eval_words"]
        ):
            return "'train_words' and 'eval_words' must be words"
        return check_names(**listed_names("loaders", fields["loaders"])) or tips_problem(fields["tips"], TIPS)

    def compile(self, rule, index):
        plan = index.distributed_plan()
        plan.loaders = frozenset(rule["loaders"])
        plan.sampler = rule["sampler"]
        plan.loader_rule = rule.id
        plan.train_words = tuple(word.lower() for word in rule["train_words"])
        plan.eval_words = tuple(word.lower() for word in rule["eval_words"])
        plan.tips.update(rule["tips"])

    def describe(self, rule):
        return f"main script: training loaders get sampler={rule['sampler']}(dataset, shuffle=...)"
