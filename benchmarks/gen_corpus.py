#!/usr/bin/env python3
"""Generate a deterministic, synthetic PyTorch training project for benchmarks.

The tree imitates what people actually feed to gpu2npu: a package with ~40
sub-packages, mostly model/layer code that never mentions CUDA, some data
pipelines, some torch-free utilities and a minority of train/eval scripts
full of device handling (``.cuda()``, ``torch.cuda.amp``, NCCL, ...).  A few
shell launchers, YAML configs and a README are added as well.

Every file is built from templates with randomised names and sizes, driven by
a single ``random.Random(seed)``, so the same ``--seed`` and ``--files`` always
produce a byte-identical tree.  Each generated ``.py`` file is compiled before
anything is written; a template bug therefore fails loudly instead of
silently skewing benchmark numbers with files the tool cannot parse.

Usage::

    python benchmarks/gen_corpus.py OUT_DIR [--files 1000] [--seed 0] [--force]

The module can also be imported; see :func:`generate_corpus`.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import textwrap
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

# --------------------------------------------------------------------------
# Size and mix parameters (fractions of the non-__init__ modules)
# --------------------------------------------------------------------------

MIN_LINES = 50
MAX_LINES = 600
# Log-normal around a median of ~170 lines gives a mean close to 200 lines and
# a long tail of big files, which matches what real repositories look like.
MEDIAN_LINES = 170
LINES_SIGMA = 0.55

SHARE_MODEL = 0.60
SHARE_DATA = 0.15
SHARE_UTIL = 0.10
# The remainder (~15 %) are train/eval scripts with CUDA code.

P_CODING_COOKIE = 0.05
P_TABS = 0.01
P_CRLF = 0.01
P_CHINESE_COMMENT = 0.05

MAX_PACKAGES = 40
MIN_FILES = 20

# --------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------

PROJECT_NAMES = [
    "visionlab",
    "deepforge",
    "torchkit",
    "neuralbench",
    "imagenet_lab",
    "segmentx",
    "detcore",
    "mmtrain",
    "fastvision",
    "openclassify",
]

ARCHS = [
    "ResNet",
    "MobileNetV2",
    "EfficientNet",
    "ConvNeXt",
    "ViT",
    "Swin",
    "DenseNet",
    "RegNet",
    "UNet",
    "HRNet",
    "ShuffleNet",
    "Xception",
]
THINGS = [
    "block",
    "layer",
    "module",
    "stage",
    "branch",
    "head",
    "projection",
    "encoder",
    "decoder",
    "stem",
    "bottleneck",
]
ATTRS = [
    "spatial resolution",
    "channel count",
    "receptive field",
    "feature scale",
    "sequence length",
    "embedding size",
    "output stride",
    "hidden width",
    "number of groups",
    "expansion ratio",
]
DATASETS = ["ImageNet", "CIFAR-10", "COCO", "ADE20K", "Cityscapes", "VOC", "LVIS", "Kinetics"]

MODEL_SENTENCES = [
    "The {thing} keeps the {attr} unchanged so several of them can be stacked without extra bookkeeping.",
    "We follow the reference implementation here, "
    "which differs slightly from the paper in how the {attr} is handled.",
    "Weights are initialised with a scaled normal distribution; "
    "this made early training noticeably more stable.",
    "Setting the {attr} too small tends to hurt accuracy on the validation split.",
    "Batch normalisation is applied before the activation, as in the original {arch} design.",
    "Keep this in sync with the configuration files, otherwise released checkpoints will not load.",
    "The extra {thing} is cheap compared to the rest of the network and improves convergence.",
    "Dropout is disabled at inference time by calling eval() on the parent module.",
    "Inputs are expected in NCHW layout with values already normalised.",
    "This path is only exercised when the {attr} changes between stages.",
    "See the ablation table in the project notes for the effect of each option.",
    "Residual connections make it possible to train much deeper networks.",
    "The default values reproduce the numbers reported for {arch} on {dataset}.",
    "TODO: benchmark the fused variant once the new kernels land.",
    "Shapes are annotated in the comments to make the reshapes easier to follow.",
    "Most of the runtime is spent in the convolutions, so the rest is kept simple.",
    "Changing the order of these operations breaks compatibility with existing checkpoints.",
    "The {thing} is deliberately stateless apart from its learnable parameters.",
    "An identity shortcut is used whenever the {attr} matches.",
    "Gradient checkpointing can be enabled by the caller to trade compute for memory.",
    "The {attr} was tuned on {dataset} and transfers reasonably well to other datasets.",
    "Zero-initialising the last norm layer of each {thing} helps the first few epochs.",
]
DATA_SENTENCES = [
    "Images are decoded lazily in __getitem__ so that worker processes share only the file index.",
    "The index is cached next to the data to make start-up fast on network file systems.",
    "Augmentations operate on numpy arrays to keep the worker processes light.",
    "Page-locked host memory (pin_memory=True) makes the copy to the accelerator overlap with compute.",
    "Samples whose annotation is missing are skipped instead of raising, as {dataset} has a few of those.",
    "The split files follow the official {dataset} layout.",
    "Random state comes from numpy so that each worker gets a different stream after seeding.",
    "Labels are remapped to a contiguous range starting at zero.",
    "Keep the transforms picklable; lambdas break multi-process loading on some platforms.",
    "The mean and standard deviation are the usual {dataset} statistics.",
    "Variable-size inputs are padded in the collate function rather than in the dataset.",
    "drop_last is enabled for training so batch norm never sees a batch of one.",
]
UTIL_SENTENCES = [
    "Keep this module free of heavy dependencies so it can be imported by tooling scripts.",
    "Paths are resolved relative to the repository root unless they are absolute.",
    "Configuration values given on the command line override the ones from the file.",
    "The logger writes to both stderr and a file inside the work directory.",
    "Only the main process should create directories to avoid races on shared storage.",
    "Values are parsed with a small literal evaluator, so strings do not need quotes.",
    "This helper is intentionally tiny; it exists so that the call sites read well.",
    "Timings use a monotonic clock, which is immune to system clock changes.",
    "Unknown keys raise an error early instead of being silently ignored.",
    "The registry maps short names from the configs to the classes that implement them.",
]
TRAIN_SENTENCES = [
    "When CUDA is available the model is moved to the GPU before the optimizer is created.",
    "Mixed precision with torch.cuda.amp roughly halves activation memory on recent GPUs.",
    "Each process drives exactly one GPU; the local rank selects which one.",
    "NCCL is the fastest backend for multi-GPU training on a single node.",
    "Synchronise the CUDA stream before reading the timer, kernel launches are asynchronous.",
    "Set CUDA_VISIBLE_DEVICES to restrict the script to a subset of the GPUs.",
    "Checkpoints are saved from rank 0 only to avoid clobbering files on shared storage.",
    "pin_memory together with non_blocking copies lets host-to-GPU transfers overlap with compute.",
    "Emptying the CUDA cache between epochs reduces fragmentation on long runs.",
    "The learning rate is scaled linearly with the global batch size.",
    "cudnn.benchmark picks the fastest convolution algorithms for fixed input sizes.",
    "Fall back to the CPU when no GPU is present so the script can be smoke-tested anywhere.",
    "The recipe reproduces the {arch} results on {dataset} within noise.",
    "Evaluation runs every epoch; it is cheap compared to a training epoch.",
    "Loss scaling is required for fp16 on CUDA, bf16 would not need it.",
    "Out-of-memory errors on the GPU usually mean the batch size per device is too large.",
]
CHINESE_COMMENTS = [
    "# 注意: 这里的参数需要和配置文件保持一致",
    "# 使用混合精度训练可以减少显存占用",
    "# 数据预处理, 保持与官方实现一致",
    "# TODO: 支持多机多卡训练",
    "# 初始化权重, 参考原论文",
]

CLASS_PREFIXES = [
    "Res",
    "Dense",
    "Mobile",
    "Squeeze",
    "Ghost",
    "Shuffle",
    "Efficient",
    "Dual",
    "Pyramid",
    "Cross",
    "Local",
    "Global",
    "Gated",
    "Dilated",
    "Sparse",
    "Deformable",
    "Inverted",
    "Depthwise",
    "Axial",
    "Window",
    "Spatial",
    "Channel",
    "Multi",
    "Light",
    "Deep",
]
CLASS_CORES = [
    "Conv",
    "Attention",
    "Fusion",
    "Mixer",
    "Pool",
    "Proj",
    "Embed",
    "Norm",
    "Gate",
    "Excite",
    "Context",
    "Feature",
    "Token",
    "Patch",
]
CLASS_SUFFIXES = ["Block", "Unit", "Layer", "Module", "Stage", "Head", "Neck", "Branch", "Cell"]
NET_SUFFIXES = ["Net", "Former", "Backbone", "Classifier", "Model"]

MODEL_FILE_WORDS = [
    "resnet",
    "mobilenet",
    "attention",
    "blocks",
    "layers",
    "heads",
    "necks",
    "fpn",
    "unet",
    "vit",
    "swin",
    "convnext",
    "efficientnet",
    "regnet",
    "hrnet",
    "transformer",
    "mixer",
    "losses",
    "embedding",
    "norms",
    "activations",
    "pooling",
    "upsample",
    "decoder",
    "encoder",
    "backbone",
    "classifier",
    "detector",
    "segmentor",
    "aspp",
    "se_layer",
    "drop_path",
]
DATA_FILE_WORDS = [
    "imagenet",
    "coco",
    "cifar",
    "voc",
    "ade20k",
    "cityscapes",
    "folder",
    "transforms",
    "augment",
    "samplers",
    "collate",
    "video",
    "text",
    "loader",
    "pipeline",
    "mixup",
    "autoaugment",
]
UTIL_FILE_WORDS = [
    "logger",
    "config",
    "paths",
    "io",
    "registry",
    "timer",
    "misc",
    "env",
    "file_client",
    "dict_utils",
    "string_utils",
    "progress",
    "version",
]
TRAIN_FILE_WORDS = [
    "train",
    "train_dist",
    "train_amp",
    "finetune",
    "pretrain",
    "eval",
    "evaluate",
    "test",
    "benchmark",
    "distill",
    "train_ddp",
    "main",
    "run",
]
TASK_WORDS = ["imagenet", "cifar", "coco", "seg", "det", "cls", "mae", "clip", "linear_probe"]
FILE_SUFFIXES = ["", "", "", "_v2", "_lite", "_utils", "_ops", "_3d", "_base", "_impl"]
TRAIN_FILE_SUFFIXES = ["", "", "", "_v2", "_new", "_ddp", "_amp", "_debug"]

PACKAGE_LAYOUT = {
    "model": [
        "models",
        "models/backbones",
        "models/heads",
        "models/necks",
        "models/layers",
        "models/losses",
        "models/attention",
        "models/blocks",
        "models/encoders",
        "models/decoders",
        "models/embeddings",
        "models/normalization",
        "models/detectors",
        "models/segmentors",
        "models/transformers",
        "models/generators",
        "models/discriminators",
        "models/classifiers",
        "models/ops",
        "models/pruning",
        "models/quantization",
        "models/distillation",
        "models/backbones/resnets",
        "models/backbones/vits",
        "models/backbones/mobile",
        "models/heads/dense",
        "models/heads/roi",
        "models/utils",
    ],
    "data": [
        "data",
        "data/datasets",
        "data/transforms",
        "data/samplers",
        "data/pipelines",
        "data/augment",
        "data/tokenizers",
        "data/datasets/video",
    ],
    "util": ["utils", "utils/io", "utils/config", "utils/logging_tools", "utils/paths", "utils/misc"],
    # "engine" paths starting with "/" live at the top of the tree, not in the package.
    "train": [
        "/tools",
        "engine",
        "engine/trainers",
        "engine/evaluators",
        "engine/hooks",
        "/tools/experiments",
        "/tools/analysis",
    ],
}
PACKAGE_SHARES = {"model": 0.55, "data": 0.15, "util": 0.12, "train": 0.18}


class CorpusError(RuntimeError):
    """Raised when the generator would produce an invalid or unsafe tree."""


# --------------------------------------------------------------------------
# Small text helpers
# --------------------------------------------------------------------------


def fill_sentence(rng: random.Random, template: str) -> str:
    """Fill the {slots} of one prose template with random vocabulary."""
    return template.format(
        thing=rng.choice(THINGS),
        attr=rng.choice(ATTRS),
        arch=rng.choice(ARCHS),
        dataset=rng.choice(DATASETS),
    )


def prose(rng: random.Random, sentences: Sequence[str], count: int) -> str:
    """Return ``count`` distinct random sentences joined into one paragraph."""
    picked = rng.sample(list(sentences), min(count, len(sentences)))
    return " ".join(fill_sentence(rng, template) for template in picked)


def wrap(text: str, indent: str, width: int = 79) -> List[str]:
    """Wrap prose so that indented lines stay within ``width`` columns."""
    lines = textwrap.wrap(text, width=max(30, width - len(indent)), break_on_hyphens=False)
    return [indent + line for line in lines]


def indent_of(level: int) -> str:
    return "    " * level


class Code:
    """Accumulates source lines; indentation is given in levels of four spaces."""

    def __init__(self) -> None:
        self.lines: List[str] = []

    def __len__(self) -> int:
        return len(self.lines)

    def add(self, level: int, *texts: str) -> "Code":
        for text in texts:
            self.lines.append(indent_of(level) + text if text else "")
        return self

    def blank(self, count: int = 1) -> "Code":
        self.lines.extend([""] * count)
        return self

    def extend(self, lines: Sequence[str]) -> "Code":
        self.lines.extend(lines)
        return self


class FileContext:
    """Per-file state: the RNG, the prose flavour and names already used."""

    def __init__(
        self, rng: random.Random, sentences: Sequence[str], used_classes: Dict[str, int], project: str
    ) -> None:
        self.rng = rng
        self.sentences = sentences
        self.used_classes = used_classes
        self.project = project
        self.quote = rng.choice(["'", '"', '"'])
        self.conv_blocks: List[str] = []
        self.networks: List[str] = []
        self.other_classes: List[str] = []
        self.functions: List[str] = []
        self.used_functions: Dict[str, int] = {}

    def snapshot(self) -> Tuple[List[str], ...]:
        """Copy the name lists so a rejected block leaves no trace in __all__."""
        return (list(self.conv_blocks), list(self.networks), list(self.other_classes), list(self.functions))

    def restore(self, state: Tuple[List[str], ...]) -> None:
        self.conv_blocks, self.networks, self.other_classes, self.functions = (list(x) for x in state)

    def exported(self) -> List[str]:
        return self.conv_blocks + self.networks + self.other_classes + self.functions

    def s(self, text: str) -> str:
        """A string literal in the quote style chosen for this file."""
        return self.quote + text + self.quote

    def sentence_block(self, count: int) -> str:
        return prose(self.rng, self.sentences, count)

    def comment(self, code: Code, level: int, probability: float = 0.5, max_sentences: int = 3) -> None:
        """Maybe add a '# ...' comment, the way authors sprinkle them."""
        if self.rng.random() < probability:
            text = self.sentence_block(self.rng.randint(1, max_sentences))
            code.extend(wrap(text, indent_of(level) + "# "))

    def docstring(
        self,
        code: Code,
        level: int,
        summary: str,
        paragraphs: int = 1,
        args: Sequence[Tuple[str, str]] = (),
        returns: str = "",
    ) -> None:
        """Google-style docstring; body length is randomised for realistic line counts."""
        pad = indent_of(level)
        code.add(level, '"""' + summary)
        for _ in range(paragraphs):
            code.blank()
            code.extend(wrap(self.sentence_block(self.rng.randint(1, 4)), pad))
        if args:
            code.blank().add(level, "Args:")
            for name, desc in args:
                code.extend(wrap(name + ": " + desc, pad + "    "))
        if returns:
            code.blank().add(level, "Returns:")
            code.extend(wrap(returns, pad + "    "))
        if paragraphs or args or returns:
            code.add(level, '"""')
        else:
            code.lines[-1] += '"""'

    def class_name(self, suffixes: Sequence[str] = CLASS_SUFFIXES) -> str:
        """A CamelCase class name that is unique across the whole corpus."""
        rng = self.rng
        base = rng.choice(CLASS_PREFIXES) + rng.choice(CLASS_CORES) + rng.choice(suffixes)
        count = self.used_classes.get(base, 0) + 1
        self.used_classes[base] = count
        return base if count == 1 else base + "V" + str(count)

    def function_name(self, base: str) -> str:
        """A function name unique within the current file."""
        count = self.used_functions.get(base, 0) + 1
        self.used_functions[base] = count
        return base if count == 1 else base + "_" + str(count)


# --------------------------------------------------------------------------
# Shared headers
# --------------------------------------------------------------------------


def file_header(ctx: FileContext, title: str, shebang: bool = False) -> Code:
    """Shebang / coding cookie / module docstring, as found at the top of real files."""
    code = Code()
    rng = ctx.rng
    if shebang:
        code.add(0, "#!/usr/bin/env python")
    if rng.random() < P_CODING_COOKIE:
        code.add(0, "# -*- coding: utf-8 -*-")
    if rng.random() < 0.15:
        code.add(0, "# Copyright (c) " + str(rng.randint(2017, 2024)) + " The " + ctx.project + " Authors.")
        code.add(0, "# Licensed under the Apache License, Version 2.0.")
    ctx.docstring(code, 0, title + ".", paragraphs=rng.randint(0, 3))
    if rng.random() < P_CHINESE_COMMENT:
        code.add(0, rng.choice(CHINESE_COMMENTS))
    return code


def finish_with_padding(ctx: FileContext, code: Code, target: int) -> None:
    """Top the file up with a trailing notes comment so it reaches ``target`` lines.

    Blocks rarely fit exactly, and a comment is the only filler that can be cut
    at any line without breaking the syntax.
    """
    missing = target - len(code)
    if missing < 5:
        return
    start = len(code)
    code.blank(2)
    code.add(0, "# Implementation notes")
    code.add(0, "# --------------------")
    while len(code) < target:
        code.extend(wrap(ctx.sentence_block(ctx.rng.randint(1, 3)), "# "))
        if len(code) < target - 2:
            code.add(0, "#")
    del code.lines[max(target, start + 5) :]


def fill_to_target(
    ctx: FileContext,
    code: Code,
    target: int,
    makers: Sequence[Tuple[float, Callable[[FileContext], Optional[Code]]]],
    reserve: int = 0,
) -> None:
    """Append randomly chosen blocks while they fit, leaving ``reserve`` lines free."""
    weights = [w for w, _ in makers]
    misses = 0
    while misses < 12:
        maker = ctx.rng.choices([m for _, m in makers], weights=weights)[0]
        state = ctx.snapshot()
        block = maker(ctx)
        if block is None:
            misses += 1
            continue
        if len(code) + 2 + len(block) + reserve > target and len(code) + reserve >= MIN_LINES:
            ctx.restore(state)
            misses += 1
            continue
        code.blank(2).extend(block.lines)


# --------------------------------------------------------------------------
# Model / layer templates (never mention CUDA)
# --------------------------------------------------------------------------

ACTIVATIONS = ["F.relu({})", "F.relu({}, inplace=True)", "F.gelu({})", "F.silu({})", "F.leaky_relu({}, 0.1)"]


def model_conv_block(ctx: FileContext) -> Code:
    rng = ctx.rng
    name = ctx.class_name()
    depth = rng.randint(1, 4)
    act = rng.choice(ACTIVATIONS)
    use_dropout = rng.random() < 0.4
    code = Code()
    code.add(0, "class " + name + "(nn.Module):")
    ctx.docstring(
        code,
        1,
        "Stack of conv-norm-activation layers.",
        paragraphs=rng.randint(1, 2),
        args=[
            ("in_channels", "Number of channels in the input feature map."),
            ("out_channels", "Number of channels produced by the block."),
            ("kernel_size", "Size of the convolving kernel."),
            ("stride", "Stride of the first convolution; later ones use stride 1."),
        ],
    )
    code.blank()
    code.add(1, "def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3,")
    code.add(
        1, "             stride: int = 1, dropout: float = " + str(rng.choice([0.0, 0.1, 0.2])) + ") -> None:"
    )
    code.add(2, "super().__init__()")
    code.add(2, "padding = kernel_size // 2")
    ctx.comment(code, 2, 0.6)
    code.add(2, "self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,")
    code.add(2, "                       padding=padding, bias=False)")
    code.add(2, "self.bn1 = nn.BatchNorm2d(out_channels)")
    for i in range(2, depth + 1):
        code.add(
            2,
            (
                "self.conv{0} = nn.Conv2d(out_channels, out_channels, kernel_size, "
                "padding=padding, bias=False)"
            ).format(i),
        )
        code.add(2, "self.bn{0} = nn.BatchNorm2d(out_channels)".format(i))
    if use_dropout:
        code.add(2, "self.dropout = nn.Dropout2d(p=dropout)")
    code.blank()
    code.add(1, "def forward(self, x: torch.Tensor) -> torch.Tensor:")
    ctx.comment(code, 2, 0.4, 2)
    code.add(2, "out = " + act.format("self.bn1(self.conv1(x))"))
    for i in range(2, depth + 1):
        code.add(2, "out = " + act.format("self.bn{0}(self.conv{0}(out))".format(i)))
    if use_dropout:
        code.add(2, "out = self.dropout(out)")
    code.add(2, "return out")
    ctx.conv_blocks.append(name)
    return code


def model_residual_block(ctx: FileContext) -> Code:
    rng = ctx.rng
    name = ctx.class_name(["Block", "Bottleneck", "Unit"])
    expansion = rng.choice([1, 2, 4])
    code = Code()
    code.add(0, "class " + name + "(nn.Module):")
    ctx.docstring(
        code,
        1,
        "Residual block with an optional projection shortcut.",
        paragraphs=rng.randint(1, 3),
        args=[
            ("in_channels", "Channels of the input tensor."),
            ("out_channels", "Channels of the output tensor (after expansion)."),
            ("stride", "Spatial stride applied by the middle convolution."),
            ("groups", "Number of groups for the grouped convolution."),
        ],
    )
    code.blank()
    code.add(1, "expansion: int = " + str(expansion))
    code.blank()
    code.add(1, "def __init__(self, in_channels: int, out_channels: int, stride: int = 1,")
    code.add(
        1, "             groups: int = 1, norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:"
    )
    code.add(2, "super().__init__()")
    code.add(2, "if norm_layer is None:")
    code.add(3, "norm_layer = nn.BatchNorm2d")
    code.add(2, "mid_channels = max(out_channels // self.expansion, 1)")
    ctx.comment(code, 2, 0.5)
    code.add(2, "self.conv1 = nn.Conv2d(in_channels, mid_channels, kernel_size=1, bias=False)")
    code.add(2, "self.bn1 = norm_layer(mid_channels)")
    code.add(2, "self.conv2 = nn.Conv2d(mid_channels, mid_channels, kernel_size=3, stride=stride,")
    code.add(2, "                       padding=1, groups=groups, bias=False)")
    code.add(2, "self.bn2 = norm_layer(mid_channels)")
    code.add(2, "self.conv3 = nn.Conv2d(mid_channels, out_channels, kernel_size=1, bias=False)")
    code.add(2, "self.bn3 = norm_layer(out_channels)")
    code.add(2, "self.downsample: Optional[nn.Module] = None")
    code.add(2, "if stride != 1 or in_channels != out_channels:")
    ctx.comment(code, 3, 0.5, 2)
    code.add(3, "self.downsample = nn.Sequential(")
    code.add(4, "nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride, bias=False),")
    code.add(4, "norm_layer(out_channels),")
    code.add(3, ")")
    code.blank()
    code.add(1, "def forward(self, x: torch.Tensor) -> torch.Tensor:")
    code.add(2, "identity = x")
    code.add(2, "out = F.relu(self.bn1(self.conv1(x)), inplace=True)")
    code.add(2, "out = F.relu(self.bn2(self.conv2(out)), inplace=True)")
    code.add(2, "out = self.bn3(self.conv3(out))")
    code.add(2, "if self.downsample is not None:")
    code.add(3, "identity = self.downsample(x)")
    ctx.comment(code, 2, 0.4, 2)
    code.add(2, "return F.relu(out + identity)")
    ctx.conv_blocks.append(name)
    return code


def model_mlp(ctx: FileContext) -> Code:
    rng = ctx.rng
    name = ctx.class_name(["Mlp", "FeedForward", "Projector", "Head"])
    act = rng.choice(["F.gelu", "F.relu", "F.silu"])
    code = Code()
    code.add(0, "class " + name + "(nn.Module):")
    ctx.docstring(
        code,
        1,
        "Multi-layer perceptron used as a feed-forward or projection head.",
        paragraphs=rng.randint(0, 2),
        args=[
            ("in_features", "Size of each input sample."),
            ("hidden_features", "Width of the hidden layers."),
            ("out_features", "Size of each output sample."),
            ("num_layers", "Total number of linear layers."),
            ("drop", "Dropout probability applied after every activation."),
        ],
    )
    code.blank()
    code.add(1, "def __init__(self, in_features: int, hidden_features: Optional[int] = None,")
    code.add(
        1,
        "             out_features: Optional[int] = None, num_layers: int = " + str(rng.randint(2, 4)) + ",",
    )
    code.add(1, "             drop: float = 0.0) -> None:")
    code.add(2, "super().__init__()")
    code.add(2, "hidden_features = hidden_features or in_features * " + str(rng.choice([2, 4])))
    code.add(2, "out_features = out_features or in_features")
    code.add(2, "dims = [in_features] + [hidden_features] * (num_layers - 1) + [out_features]")
    ctx.comment(code, 2, 0.5)
    code.add(2, "self.layers = nn.ModuleList(")
    code.add(3, "nn.Linear(d_in, d_out) for d_in, d_out in zip(dims[:-1], dims[1:])")
    code.add(2, ")")
    code.add(2, "self.drop = nn.Dropout(drop)")
    code.add(2, "self.in_features = in_features")
    code.add(2, "self.out_features = out_features")
    code.blank()
    code.add(1, "def forward(self, x: torch.Tensor) -> torch.Tensor:")
    code.add(2, "for index, layer in enumerate(self.layers):")
    code.add(3, "x = layer(x)")
    code.add(3, "if index < len(self.layers) - 1:")
    code.add(4, "x = self.drop(" + act + "(x))")
    code.add(2, "return x")
    if rng.random() < 0.5:
        code.blank()
        code.add(1, "def extra_repr(self) -> str:")
        code.add(
            2,
            "return "
            + ctx.s("in_features={}, out_features={}")
            + ".format(self.in_features, self.out_features)",
        )
    ctx.other_classes.append(name)
    return code


def model_attention(ctx: FileContext) -> Code:
    rng = ctx.rng
    name = ctx.class_name(["Attention", "SelfAttention", "Block"])
    code = Code()
    code.add(0, "class " + name + "(nn.Module):")
    ctx.docstring(
        code,
        1,
        "Multi-head self-attention over a sequence of tokens.",
        paragraphs=rng.randint(1, 3),
        args=[
            ("dim", "Embedding dimension of every token."),
            ("num_heads", "Number of attention heads; must divide ``dim``."),
            ("qkv_bias", "Whether the query/key/value projection has a bias."),
            ("attn_drop", "Dropout on the attention weights."),
            ("proj_drop", "Dropout on the output projection."),
        ],
    )
    code.blank()
    code.add(
        1,
        "def __init__(self, dim: int, num_heads: int = "
        + str(rng.choice([4, 8, 12, 16]))
        + ", qkv_bias: bool = True,",
    )
    code.add(1, "             attn_drop: float = 0.0, proj_drop: float = 0.0) -> None:")
    code.add(2, "super().__init__()")
    code.add(2, "if dim % num_heads != 0:")
    code.add(
        3,
        "raise ValueError(f"
        + ctx.quote
        + "dim {dim} is not divisible by num_heads {num_heads}"
        + ctx.quote
        + ")",
    )
    code.add(2, "self.num_heads = num_heads")
    code.add(2, "self.head_dim = dim // num_heads")
    code.add(2, "self.scale = self.head_dim ** -0.5")
    ctx.comment(code, 2, 0.5)
    code.add(2, "self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)")
    code.add(2, "self.attn_drop = nn.Dropout(attn_drop)")
    code.add(2, "self.proj = nn.Linear(dim, dim)")
    code.add(2, "self.proj_drop = nn.Dropout(proj_drop)")
    code.blank()
    code.add(1, "def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:")
    code.add(2, "batch, tokens, channels = x.shape")
    code.add(2, "# (3, batch, heads, tokens, head_dim)")
    code.add(2, "qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim)")
    code.add(2, "qkv = qkv.permute(2, 0, 3, 1, 4)")
    code.add(2, "q, k, v = qkv.unbind(0)")
    code.add(2, "attn = (q @ k.transpose(-2, -1)) * self.scale")
    code.add(2, "if mask is not None:")
    code.add(3, "attn = attn.masked_fill(mask[:, None, None, :] == 0, float(" + ctx.s("-inf") + "))")
    code.add(2, "attn = F.softmax(attn, dim=-1)")
    code.add(2, "attn = self.attn_drop(attn)")
    code.add(2, "out = (attn @ v).transpose(1, 2).reshape(batch, tokens, channels)")
    ctx.comment(code, 2, 0.3, 2)
    code.add(2, "return self.proj_drop(self.proj(out))")
    ctx.other_classes.append(name)
    return code


def model_loss(ctx: FileContext) -> Code:
    rng = ctx.rng
    name = ctx.class_name(["Loss"])
    code = Code()
    code.add(0, "class " + name + "(nn.Module):")
    ctx.docstring(
        code,
        1,
        "Cross entropy with label smoothing and optional class weights.",
        paragraphs=rng.randint(0, 2),
        args=[
            ("smoothing", "Probability mass moved from the target to the other classes."),
            ("reduction", "One of 'none', 'mean' or 'sum'."),
        ],
    )
    code.blank()
    code.add(
        1,
        "def __init__(self, smoothing: float = "
        + str(rng.choice([0.05, 0.1, 0.2]))
        + ", reduction: str = "
        + ctx.s("mean")
        + ") -> None:",
    )
    code.add(2, "super().__init__()")
    code.add(2, "if not 0.0 <= smoothing < 1.0:")
    code.add(3, "raise ValueError(" + ctx.s("smoothing must be in [0, 1)") + ")")
    code.add(2, "self.smoothing = smoothing")
    code.add(2, "self.reduction = reduction")
    code.blank()
    code.add(1, "def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:")
    code.add(2, "log_probs = F.log_softmax(logits, dim=-1)")
    code.add(2, "nll = F.nll_loss(log_probs, target, reduction=" + ctx.s("none") + ")")
    code.add(2, "smooth = -log_probs.mean(dim=-1)")
    ctx.comment(code, 2, 0.5, 2)
    code.add(2, "loss = (1.0 - self.smoothing) * nll + self.smoothing * smooth")
    code.add(2, "if self.reduction == " + ctx.s("mean") + ":")
    code.add(3, "return loss.mean()")
    code.add(2, "if self.reduction == " + ctx.s("sum") + ":")
    code.add(3, "return loss.sum()")
    code.add(2, "return loss")
    ctx.other_classes.append(name)
    return code


def model_helper_function(ctx: FileContext) -> Code:
    rng = ctx.rng
    kind = rng.choice(["init", "count", "divisible", "drop_path", "shuffle"])
    code = Code()
    if kind == "init":
        fname = ctx.function_name("init_weights")
        code.add(0, "def " + fname + "(module: nn.Module, std: float = 0.02) -> None:")
        ctx.docstring(code, 1, "Initialise the weights of ``module`` in place.", paragraphs=rng.randint(0, 2))
        code.add(1, "for m in module.modules():")
        code.add(2, "if isinstance(m, nn.Linear):")
        code.add(3, "nn.init.trunc_normal_(m.weight, std=std)")
        code.add(3, "if m.bias is not None:")
        code.add(4, "nn.init.zeros_(m.bias)")
        code.add(2, "elif isinstance(m, nn.Conv2d):")
        code.add(
            3,
            "nn.init.kaiming_normal_(m.weight, mode="
            + ctx.s("fan_out")
            + ", nonlinearity="
            + ctx.s("relu")
            + ")",
        )
        code.add(2, "elif isinstance(m, (nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm)):")
        code.add(3, "nn.init.ones_(m.weight)")
        code.add(3, "nn.init.zeros_(m.bias)")
    elif kind == "count":
        fname = ctx.function_name("count_parameters")
        code.add(0, "def " + fname + "(model: nn.Module, trainable_only: bool = True) -> int:")
        ctx.docstring(
            code, 1, "Return the number of (trainable) parameters of ``model``.", paragraphs=rng.randint(0, 1)
        )
        code.add(
            1, "return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)"
        )
    elif kind == "divisible":
        fname = ctx.function_name("make_divisible")
        code.add(
            0, "def " + fname + "(value: float, divisor: int = 8, min_value: Optional[int] = None) -> int:"
        )
        ctx.docstring(
            code, 1, "Round ``value`` to the nearest multiple of ``divisor``.", paragraphs=rng.randint(0, 2)
        )
        code.add(1, "min_value = min_value or divisor")
        code.add(1, "new_value = max(min_value, int(value + divisor / 2) // divisor * divisor)")
        ctx.comment(code, 1, 0.8, 1)
        code.add(1, "if new_value < 0.9 * value:")
        code.add(2, "new_value += divisor")
        code.add(1, "return new_value")
    elif kind == "drop_path":
        fname = ctx.function_name("drop_path")
        code.add(
            0,
            "def "
            + fname
            + "(x: torch.Tensor, drop_prob: float = 0.0, training: bool = False) -> torch.Tensor:",
        )
        ctx.docstring(
            code, 1, "Stochastic depth: randomly drop whole residual branches.", paragraphs=rng.randint(1, 2)
        )
        code.add(1, "if drop_prob == 0.0 or not training:")
        code.add(2, "return x")
        code.add(1, "keep_prob = 1.0 - drop_prob")
        code.add(1, "shape = (x.shape[0],) + (1,) * (x.ndim - 1)")
        code.add(1, "mask = torch.rand(shape, dtype=x.dtype, device=x.device) < keep_prob")
        code.add(1, "return x.div(keep_prob) * mask")
    else:
        fname = ctx.function_name("channel_shuffle")
        code.add(0, "def " + fname + "(x: torch.Tensor, groups: int) -> torch.Tensor:")
        ctx.docstring(
            code, 1, "Shuffle channels between groups, as in ShuffleNet.", paragraphs=rng.randint(0, 2)
        )
        code.add(1, "batch, channels, height, width = x.size()")
        code.add(1, "x = x.view(batch, groups, channels // groups, height, width)")
        code.add(1, "x = torch.transpose(x, 1, 2).contiguous()")
        code.add(1, "return x.view(batch, channels, height, width)")
    ctx.functions.append(fname)
    return code


def model_network(ctx: FileContext) -> Optional[Code]:
    """A whole network that reuses a block defined earlier in the same file."""
    rng = ctx.rng
    if not ctx.conv_blocks:
        return None
    block = rng.choice(ctx.conv_blocks)
    name = ctx.class_name(NET_SUFFIXES)
    widths = rng.choice(
        ["(64, 128, 256, 512)", "(32, 64, 128, 256)", "(48, 96, 192, 384)", "(96, 192, 384, 768)"]
    )
    depths = rng.choice(["(2, 2, 2, 2)", "(3, 4, 6, 3)", "(1, 2, 3, 1)", "(2, 2, 6, 2)"])
    code = Code()
    code.add(0, "class " + name + "(nn.Module):")
    ctx.docstring(
        code,
        1,
        "Hierarchical network built from ``" + block + "`` stages.",
        paragraphs=rng.randint(1, 3),
        args=[
            ("num_classes", "Number of output classes; 0 removes the classifier."),
            ("in_channels", "Number of input image channels."),
            ("widths", "Output channels of every stage."),
            ("depths", "Number of blocks in every stage."),
            ("drop_rate", "Dropout before the classifier."),
        ],
    )
    code.blank()
    code.add(1, "def __init__(self, num_classes: int = 1000, in_channels: int = 3,")
    code.add(1, "             widths: Sequence[int] = " + widths + ",")
    code.add(1, "             depths: Sequence[int] = " + depths + ", drop_rate: float = 0.0) -> None:")
    code.add(2, "super().__init__()")
    code.add(2, "self.num_classes = num_classes")
    ctx.comment(code, 2, 0.6)
    code.add(2, "self.stem = nn.Sequential(")
    code.add(3, "nn.Conv2d(in_channels, widths[0], kernel_size=7, stride=2, padding=3, bias=False),")
    code.add(3, "nn.BatchNorm2d(widths[0]),")
    code.add(3, "nn.ReLU(inplace=True),")
    code.add(3, "nn.MaxPool2d(kernel_size=3, stride=2, padding=1),")
    code.add(2, ")")
    code.add(2, "stages: List[nn.Module] = []")
    code.add(2, "channels = widths[0]")
    code.add(2, "for index, (width, depth) in enumerate(zip(widths, depths)):")
    code.add(3, "stride = 1 if index == 0 else 2")
    code.add(3, "stages.append(self._make_stage(channels, width, depth, stride))")
    code.add(3, "channels = width")
    code.add(2, "self.stages = nn.Sequential(*stages)")
    code.add(2, "self.pool = nn.AdaptiveAvgPool2d(1)")
    code.add(2, "self.dropout = nn.Dropout(p=drop_rate)")
    code.add(2, "self.fc = nn.Linear(channels, num_classes) if num_classes > 0 else nn.Identity()")
    code.add(2, "self.out_channels = channels")
    code.add(2, "self._init_weights()")
    code.blank()
    code.add(1, "@staticmethod")
    code.add(
        1, "def _make_stage(in_channels: int, out_channels: int, depth: int, stride: int) -> nn.Sequential:"
    )
    code.add(2, "layers = [" + block + "(in_channels, out_channels, stride=stride)]")
    code.add(2, "for _ in range(1, depth):")
    code.add(3, "layers.append(" + block + "(out_channels, out_channels))")
    code.add(2, "return nn.Sequential(*layers)")
    code.blank()
    code.add(1, "def _init_weights(self) -> None:")
    code.add(2, "for m in self.modules():")
    code.add(3, "if isinstance(m, nn.Conv2d):")
    code.add(
        4,
        "nn.init.kaiming_normal_(m.weight, mode="
        + ctx.s("fan_out")
        + ", nonlinearity="
        + ctx.s("relu")
        + ")",
    )
    code.add(3, "elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):")
    code.add(4, "nn.init.ones_(m.weight)")
    code.add(4, "nn.init.zeros_(m.bias)")
    code.add(3, "elif isinstance(m, nn.Linear):")
    code.add(4, "nn.init.normal_(m.weight, std=0.01)")
    code.add(4, "nn.init.zeros_(m.bias)")
    code.blank()
    code.add(1, "def forward_features(self, x: torch.Tensor) -> torch.Tensor:")
    ctx.docstring(code, 2, "Return the last feature map before pooling.", paragraphs=0)
    code.add(2, "x = self.stem(x)")
    code.add(2, "return self.stages(x)")
    code.blank()
    code.add(1, "def forward(self, x: torch.Tensor) -> torch.Tensor:")
    code.add(2, "x = self.forward_features(x)")
    code.add(2, "x = torch.flatten(self.pool(x), 1)")
    code.add(2, "x = self.dropout(x)")
    code.add(2, "return self.fc(x)")
    ctx.conv_blocks.remove(block)  # keep networks from piling up on the same block
    ctx.networks.append(name)
    return code


def model_factory(ctx: FileContext) -> Optional[Code]:
    """``build_xxx(variant)`` factory for the last network of the file."""
    if not ctx.networks or ctx.networks[-1] + ":factory" in ctx.used_functions:
        return None
    net = ctx.networks[-1]
    ctx.used_functions[net + ":factory"] = 1
    rng = ctx.rng
    fname = ctx.function_name(
        "build_" + "".join("_" + c.lower() if c.isupper() else c for c in net).lstrip("_")
    )
    code = Code()
    code.add(0, "def " + fname + "(variant: str = " + ctx.s("base") + ", **kwargs) -> " + net + ":")
    ctx.docstring(
        code, 1, "Create a ``" + net + "`` from a named configuration.", paragraphs=rng.randint(0, 1)
    )
    code.add(1, "configs: Dict[str, Dict[str, Tuple[int, ...]]] = {")
    for variant, w, d in [
        ("tiny", "(32, 64, 128, 256)", "(1, 1, 2, 1)"),
        ("small", "(48, 96, 192, 384)", "(2, 2, 4, 2)"),
        ("base", "(64, 128, 256, 512)", "(2, 2, 6, 2)"),
        ("large", "(96, 192, 384, 768)", "(3, 4, 18, 3)"),
    ]:
        code.add(
            2, ctx.s(variant) + ": {" + ctx.s("widths") + ": " + w + ", " + ctx.s("depths") + ": " + d + "},"
        )
    code.add(1, "}")
    code.add(1, "if variant not in configs:")
    code.add(
        2,
        "raise KeyError(f"
        + ctx.quote
        + "unknown variant {variant!r}, choose from {sorted(configs)}"
        + ctx.quote
        + ")",
    )
    code.add(1, "config = dict(configs[variant])")
    code.add(1, "config.update(kwargs)")
    code.add(1, "return " + net + "(**config)")
    ctx.functions.append(fname)
    return code


def model_constants(ctx: FileContext) -> Code:
    rng = ctx.rng
    code = Code()
    ctx.comment(code, 0, 0.7, 2)
    code.add(
        0,
        "DEFAULT_WIDTHS: Tuple[int, ...] = "
        + rng.choice(["(64, 128, 256, 512)", "(32, 64, 160, 256)", "(96, 192, 384, 768)"]),
    )
    code.add(0, "BN_MOMENTUM = " + str(rng.choice([0.1, 0.01, 0.03])))
    code.add(0, "_ACTIVATIONS: Dict[str, Callable[..., nn.Module]] = {")
    for key, val in [
        ("relu", "nn.ReLU"),
        ("gelu", "nn.GELU"),
        ("silu", "nn.SiLU"),
        ("hardswish", "nn.Hardswish"),
    ]:
        code.add(1, ctx.s(key) + ": " + val + ",")
    code.add(0, "}")
    return code


def build_model_file(ctx: FileContext, module_title: str, target: int) -> Tuple[Code, List[str]]:
    rng = ctx.rng
    code = file_header(ctx, module_title)
    if rng.random() < 0.4:
        code.add(0, "import math")
    code.add(0, "from typing import Callable, Dict, List, Optional, Sequence, Tuple")
    code.blank()
    code.add(0, "import torch")
    code.add(0, "import torch.nn as nn")
    code.add(0, "import torch.nn.functional as F")
    if rng.random() < 0.5:
        code.blank(2)
        code.add(0, "__all__ = []")  # filled in below, once the names are known
        all_index = len(code) - 1
    else:
        all_index = -1
    if rng.random() < 0.4:
        code.blank(2).extend(model_constants(ctx).lines)
    makers = [
        (3.0, model_conv_block),
        (2.0, model_residual_block),
        (1.5, model_mlp),
        (1.5, model_attention),
        (0.7, model_loss),
        (1.5, model_helper_function),
        (2.5, model_network),
        (2.0, model_factory),
    ]
    fill_to_target(ctx, code, target, makers)
    finish_with_padding(ctx, code, target)
    if all_index >= 0:
        code.lines[all_index] = "__all__ = [" + ", ".join(ctx.s(n) for n in ctx.exported()) + "]"
    return code, ctx.conv_blocks + ctx.networks + ctx.other_classes


# --------------------------------------------------------------------------
# Data / transform templates
# --------------------------------------------------------------------------


def data_dataset(ctx: FileContext) -> Code:
    rng = ctx.rng
    name = ctx.class_name(["Dataset"])
    ext = rng.choice([".jpg", ".png", ".npy"])
    code = Code()
    code.add(0, "class " + name + "(Dataset):")
    ctx.docstring(
        code,
        1,
        "Map-style dataset reading samples listed in a split file.",
        paragraphs=rng.randint(1, 3),
        args=[
            ("root", "Directory containing the images and the split files."),
            ("split", "Which split to load, e.g. 'train' or 'val'."),
            ("transform", "Optional callable applied to every sample."),
        ],
    )
    code.blank()
    code.add(1, "IMAGE_EXTENSIONS = (" + ctx.s(ext) + ", " + ctx.s(".jpeg") + ")")
    code.blank()
    code.add(
        1,
        "def __init__(self, root: str, split: str = "
        + ctx.s("train")
        + ", transform: Optional[Callable] = None,",
    )
    code.add(1, "             cache_index: bool = True) -> None:")
    code.add(2, "super().__init__()")
    code.add(2, "self.root = os.path.expanduser(root)")
    code.add(2, "self.split = split")
    code.add(2, "self.transform = transform")
    ctx.comment(code, 2, 0.6)
    code.add(2, "self.samples: List[Tuple[str, int]] = self._load_index(cache_index)")
    code.add(2, "if not self.samples:")
    code.add(
        3,
        "raise RuntimeError(f"
        + ctx.quote
        + "no samples found for split {split!r} in {self.root}"
        + ctx.quote
        + ")",
    )
    code.blank()
    code.add(1, "def _load_index(self, use_cache: bool) -> List[Tuple[str, int]]:")
    code.add(
        2, "cache_file = os.path.join(self.root, f" + ctx.quote + "{self.split}_index.npy" + ctx.quote + ")"
    )
    code.add(2, "if use_cache and os.path.isfile(cache_file):")
    code.add(3, "records = np.load(cache_file, allow_pickle=True)")
    code.add(3, "return [(str(path), int(label)) for path, label in records]")
    code.add(2, "samples = []")
    code.add(2, "split_file = os.path.join(self.root, self.split + " + ctx.s(".txt") + ")")
    code.add(2, "with open(split_file) as handle:")
    code.add(3, "for line in handle:")
    code.add(4, "parts = line.strip().split()")
    code.add(4, "if len(parts) != 2:")
    code.add(5, "continue")
    code.add(4, "samples.append((os.path.join(self.root, parts[0]), int(parts[1])))")
    code.add(2, "if use_cache:")
    code.add(3, "np.save(cache_file, np.array(samples, dtype=object))")
    code.add(2, "return samples")
    code.blank()
    code.add(1, "def __len__(self) -> int:")
    code.add(2, "return len(self.samples)")
    code.blank()
    code.add(1, "def __getitem__(self, index: int) -> Tuple[torch.Tensor, int]:")
    code.add(2, "path, label = self.samples[index]")
    if ext == ".npy":
        code.add(2, "array = np.load(path).astype(np.float32)")
    else:
        code.add(2, "with Image.open(path) as image:")
        code.add(3, "array = np.asarray(image.convert(" + ctx.s("RGB") + "), dtype=np.float32) / 255.0")
    code.add(2, "if self.transform is not None:")
    code.add(3, "array = self.transform(array)")
    ctx.comment(code, 2, 0.3, 1)
    code.add(2, "tensor = torch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))")
    code.add(2, "return tensor, label")
    if rng.random() < 0.5:
        code.blank()
        code.add(1, "def class_counts(self) -> Dict[int, int]:")
        ctx.docstring(code, 2, "Number of samples per label, handy for weighted sampling.", paragraphs=0)
        code.add(2, "counts: Dict[int, int] = {}")
        code.add(2, "for _, label in self.samples:")
        code.add(3, "counts[label] = counts.get(label, 0) + 1")
        code.add(2, "return counts")
    ctx.other_classes.append(name)
    return code


def data_transform(ctx: FileContext) -> Code:
    rng = ctx.rng
    kind = rng.choice(["flip", "normalize", "crop", "compose"])
    code = Code()
    if kind == "flip":
        name = ctx.class_name(["Flip"])
        code.add(0, "class " + name + ":")
        ctx.docstring(
            code, 1, "Horizontally flip an HWC array with probability ``p``.", paragraphs=rng.randint(0, 2)
        )
        code.blank()
        code.add(1, "def __init__(self, p: float = 0.5) -> None:")
        code.add(2, "self.p = p")
        code.blank()
        code.add(1, "def __call__(self, array: np.ndarray) -> np.ndarray:")
        code.add(2, "if np.random.rand() < self.p:")
        code.add(3, "return array[:, ::-1, :].copy()")
        code.add(2, "return array")
    elif kind == "normalize":
        name = ctx.class_name(["Normalize"])
        code.add(0, "class " + name + ":")
        ctx.docstring(
            code,
            1,
            "Subtract the mean and divide by the standard deviation per channel.",
            paragraphs=rng.randint(0, 2),
        )
        code.blank()
        code.add(1, "def __init__(self, mean: Sequence[float] = (0.485, 0.456, 0.406),")
        code.add(1, "             std: Sequence[float] = (0.229, 0.224, 0.225)) -> None:")
        code.add(2, "self.mean = np.asarray(mean, dtype=np.float32)")
        code.add(2, "self.std = np.asarray(std, dtype=np.float32)")
        code.blank()
        code.add(1, "def __call__(self, array: np.ndarray) -> np.ndarray:")
        code.add(2, "return (array - self.mean) / self.std")
    elif kind == "crop":
        name = ctx.class_name(["Crop"])
        code.add(0, "class " + name + ":")
        ctx.docstring(
            code,
            1,
            "Random crop with zero padding when the input is too small.",
            paragraphs=rng.randint(0, 2),
        )
        code.blank()
        code.add(
            1,
            "def __init__(self, size: int = "
            + str(rng.choice([32, 224, 256, 384, 512]))
            + ", padding: int = 0) -> None:",
        )
        code.add(2, "self.size = size")
        code.add(2, "self.padding = padding")
        code.blank()
        code.add(1, "def __call__(self, array: np.ndarray) -> np.ndarray:")
        code.add(2, "if self.padding:")
        code.add(3, "pad = ((self.padding, self.padding), (self.padding, self.padding), (0, 0))")
        code.add(3, "array = np.pad(array, pad, mode=" + ctx.s("constant") + ")")
        code.add(2, "height, width = array.shape[:2]")
        code.add(2, "top = np.random.randint(0, max(height - self.size, 0) + 1)")
        code.add(2, "left = np.random.randint(0, max(width - self.size, 0) + 1)")
        code.add(2, "return array[top:top + self.size, left:left + self.size]")
    else:
        name = ctx.class_name(["Compose"])
        code.add(0, "class " + name + ":")
        ctx.docstring(
            code, 1, "Chain several transforms, applying them in order.", paragraphs=rng.randint(0, 2)
        )
        code.blank()
        code.add(1, "def __init__(self, transforms: Sequence[Callable]) -> None:")
        code.add(2, "self.transforms = list(transforms)")
        code.blank()
        code.add(1, "def __call__(self, sample):")
        code.add(2, "for transform in self.transforms:")
        code.add(3, "sample = transform(sample)")
        code.add(2, "return sample")
        code.blank()
        code.add(1, "def __repr__(self) -> str:")
        code.add(2, "inner = " + ctx.s(", ") + ".join(repr(t) for t in self.transforms)")
        code.add(2, "return f" + ctx.quote + "{type(self).__name__}([{inner}])" + ctx.quote)
    ctx.other_classes.append(name)
    return code


def data_collate(ctx: FileContext) -> Code:
    rng = ctx.rng
    fname = ctx.function_name("pad_collate")
    code = Code()
    code.add(0, "def " + fname + "(batch: List[Tuple[torch.Tensor, int]], pad_value: float = 0.0):")
    ctx.docstring(
        code,
        1,
        "Collate samples of different spatial size by padding them.",
        paragraphs=rng.randint(0, 2),
        returns="A tuple ``(images, labels)`` of batched tensors.",
    )
    code.add(1, "max_h = max(img.shape[1] for img, _ in batch)")
    code.add(1, "max_w = max(img.shape[2] for img, _ in batch)")
    code.add(1, "images = torch.full((len(batch), batch[0][0].shape[0], max_h, max_w), pad_value)")
    code.add(1, "for index, (img, _) in enumerate(batch):")
    code.add(2, "images[index, :, :img.shape[1], :img.shape[2]] = img")
    code.add(1, "labels = torch.as_tensor([label for _, label in batch], dtype=torch.long)")
    code.add(1, "return images, labels")
    ctx.functions.append(fname)
    return code


def data_loader_builder(ctx: FileContext) -> Code:
    rng = ctx.rng
    fname = ctx.function_name("build_dataloader")
    code = Code()
    code.add(
        0,
        "def "
        + fname
        + "(dataset: Dataset, batch_size: int = "
        + str(rng.choice([16, 32, 64, 128, 256]))
        + ", num_workers: int = "
        + str(rng.choice([2, 4, 8]))
        + ",",
    )
    code.add(0, "                     shuffle: bool = True, distributed: bool = False) -> DataLoader:")
    ctx.docstring(
        code, 1, "Wrap ``dataset`` in a DataLoader with sensible defaults.", paragraphs=rng.randint(1, 2)
    )
    code.add(1, "sampler = DistributedSampler(dataset, shuffle=shuffle) if distributed else None")
    ctx.comment(code, 1, 0.6, 2)
    code.add(1, "return DataLoader(")
    code.add(2, "dataset,")
    code.add(2, "batch_size=batch_size,")
    code.add(2, "shuffle=shuffle and sampler is None,")
    code.add(2, "sampler=sampler,")
    code.add(2, "num_workers=num_workers,")
    code.add(2, "pin_memory=True,")
    code.add(2, "drop_last=shuffle,")
    code.add(2, "persistent_workers=num_workers > 0,")
    code.add(1, ")")
    ctx.functions.append(fname)
    return code


def build_data_file(ctx: FileContext, module_title: str, target: int) -> Tuple[Code, List[str]]:
    rng = ctx.rng
    code = file_header(ctx, module_title)
    code.add(0, "import os")
    if rng.random() < 0.3:
        code.add(0, "import random")
    code.add(0, "from typing import Callable, Dict, List, Optional, Sequence, Tuple")
    code.blank()
    code.add(0, "import numpy as np")
    code.add(0, "import torch")
    code.add(0, "from PIL import Image")
    code.add(0, "from torch.utils.data import DataLoader, Dataset")
    code.add(0, "from torch.utils.data.distributed import DistributedSampler")
    code.blank(2).extend(data_dataset(ctx).lines)
    makers = [(1.5, data_dataset), (3.0, data_transform), (1.0, data_collate), (1.0, data_loader_builder)]
    fill_to_target(ctx, code, target, makers)
    finish_with_padding(ctx, code, target)
    return code, ctx.other_classes + ctx.functions


# --------------------------------------------------------------------------
# Utility templates (no torch)
# --------------------------------------------------------------------------


def util_logger(ctx: FileContext) -> Code:
    rng = ctx.rng
    fname = ctx.function_name("setup_logger")
    code = Code()
    code.add(0, "def " + fname + "(name: str = " + ctx.s("train") + ", log_dir: Optional[str] = None,")
    code.add(0, "                 level: int = logging.INFO) -> logging.Logger:")
    ctx.docstring(
        code,
        1,
        "Configure a logger that writes to stderr and optionally a file.",
        paragraphs=rng.randint(1, 2),
    )
    code.add(1, "logger = logging.getLogger(name)")
    code.add(1, "if logger.handlers:")
    code.add(2, "return logger")
    code.add(1, "logger.setLevel(level)")
    code.add(
        1, "formatter = logging.Formatter(" + ctx.s("%(asctime)s %(name)s %(levelname)s: %(message)s") + ")"
    )
    code.add(1, "stream = logging.StreamHandler(sys.stderr)")
    code.add(1, "stream.setFormatter(formatter)")
    code.add(1, "logger.addHandler(stream)")
    code.add(1, "if log_dir is not None:")
    code.add(2, "os.makedirs(log_dir, exist_ok=True)")
    code.add(2, "handler = logging.FileHandler(os.path.join(log_dir, name + " + ctx.s(".log") + "))")
    code.add(2, "handler.setFormatter(formatter)")
    code.add(2, "logger.addHandler(handler)")
    code.add(1, "logger.propagate = False")
    code.add(1, "return logger")
    ctx.functions.append(fname)
    return code


def util_config(ctx: FileContext) -> Code:
    rng = ctx.rng
    fname = ctx.function_name("load_config")
    code = Code()
    code.add(0, "def " + fname + "(path: str, overrides: Sequence[str] = ()) -> Dict[str, Any]:")
    ctx.docstring(
        code,
        1,
        "Load a JSON config and apply ``key.sub=value`` overrides.",
        paragraphs=rng.randint(1, 2),
        args=[("path", "Path of the JSON file."), ("overrides", "Strings like 'optim.lr=0.1'.")],
    )
    code.add(1, "with open(path, " + ctx.s("r") + ", encoding=" + ctx.s("utf-8") + ") as handle:")
    code.add(2, "config = json.load(handle)")
    code.add(1, "for item in overrides:")
    code.add(2, "key, _, raw = item.partition(" + ctx.s("=") + ")")
    code.add(2, "try:")
    code.add(3, "value = ast.literal_eval(raw)")
    code.add(2, "except (ValueError, SyntaxError):")
    code.add(3, "value = raw")
    ctx.comment(code, 2, 0.5, 1)
    code.add(2, "node = config")
    code.add(2, "parts = key.split(" + ctx.s(".") + ")")
    code.add(2, "for part in parts[:-1]:")
    code.add(3, "node = node.setdefault(part, {})")
    code.add(2, "node[parts[-1]] = value")
    code.add(1, "return config")
    ctx.functions.append(fname)
    return code


def util_paths(ctx: FileContext) -> Code:
    rng = ctx.rng
    code = Code()
    f1 = ctx.function_name("ensure_dir")
    code.add(0, "def " + f1 + "(path: str) -> Path:")
    ctx.docstring(
        code,
        1,
        "Create ``path`` (and parents) if needed and return it as a Path.",
        paragraphs=rng.randint(0, 1),
    )
    code.add(1, "result = Path(path).expanduser()")
    code.add(1, "result.mkdir(parents=True, exist_ok=True)")
    code.add(1, "return result")
    code.blank(2)
    f2 = ctx.function_name("find_files")
    code.add(
        0,
        "def "
        + f2
        + "(root: str, suffixes: Sequence[str] = ("
        + ctx.s(".json")
        + ",), skip_hidden: bool = True) -> List[Path]:",
    )
    ctx.docstring(
        code,
        1,
        "Recursively list files under ``root`` with one of ``suffixes``.",
        paragraphs=rng.randint(0, 2),
    )
    code.add(1, "found = []")
    code.add(1, "for dirpath, dirnames, filenames in os.walk(root):")
    code.add(2, "if skip_hidden:")
    code.add(3, "dirnames[:] = [d for d in dirnames if not d.startswith(" + ctx.s(".") + ")]")
    code.add(2, "for filename in filenames:")
    code.add(3, "if filename.endswith(tuple(suffixes)):")
    code.add(4, "found.append(Path(dirpath) / filename)")
    code.add(1, "return sorted(found)")
    ctx.functions.extend([f1, f2])
    return code


def util_timer(ctx: FileContext) -> Code:
    rng = ctx.rng
    name = ctx.class_name(["Timer", "Meter"])
    code = Code()
    code.add(0, "class " + name + ":")
    ctx.docstring(
        code, 1, "Accumulate wall-clock durations and running averages.", paragraphs=rng.randint(0, 2)
    )
    code.blank()
    code.add(1, "def __init__(self, name: str = " + ctx.s("timer") + ") -> None:")
    code.add(2, "self.name = name")
    code.add(2, "self.reset()")
    code.blank()
    code.add(1, "def reset(self) -> None:")
    code.add(2, "self.total = 0.0")
    code.add(2, "self.count = 0")
    code.add(2, "self._start: Optional[float] = None")
    code.blank()
    code.add(1, "def __enter__(self) -> " + ctx.s(name) + ":")
    code.add(2, "self._start = time.perf_counter()")
    code.add(2, "return self")
    code.blank()
    code.add(1, "def __exit__(self, *exc_info) -> None:")
    code.add(2, "self.update(time.perf_counter() - (self._start or 0.0))")
    code.blank()
    code.add(1, "def update(self, value: float, n: int = 1) -> None:")
    code.add(2, "self.total += value * n")
    code.add(2, "self.count += n")
    code.blank()
    code.add(1, "@property")
    code.add(1, "def average(self) -> float:")
    code.add(2, "return self.total / max(self.count, 1)")
    code.blank()
    code.add(1, "def __str__(self) -> str:")
    code.add(2, "return f" + ctx.quote + "{self.name}: {self.average:.4f}s avg over {self.count}" + ctx.quote)
    ctx.other_classes.append(name)
    return code


def util_registry(ctx: FileContext) -> Code:
    rng = ctx.rng
    name = ctx.class_name(["Registry"])
    code = Code()
    code.add(0, "class " + name + ":")
    ctx.docstring(
        code,
        1,
        "Map names used in config files to the objects implementing them.",
        paragraphs=rng.randint(1, 2),
    )
    code.blank()
    code.add(1, "def __init__(self, scope: str) -> None:")
    code.add(2, "self.scope = scope")
    code.add(2, "self._entries: Dict[str, Any] = {}")
    code.blank()
    code.add(1, "def register(self, name: Optional[str] = None):")
    code.add(2, "def decorator(obj):")
    code.add(3, "key = name or obj.__name__")
    code.add(3, "if key in self._entries:")
    code.add(
        4, "raise KeyError(f" + ctx.quote + "{key} is already registered in {self.scope}" + ctx.quote + ")"
    )
    code.add(3, "self._entries[key] = obj")
    code.add(3, "return obj")
    code.add(2, "return decorator")
    code.blank()
    code.add(1, "def get(self, name: str) -> Any:")
    code.add(2, "try:")
    code.add(3, "return self._entries[name]")
    code.add(2, "except KeyError:")
    code.add(3, "known = " + ctx.s(", ") + ".join(sorted(self._entries))")
    code.add(
        3,
        "raise KeyError(f"
        + ctx.quote
        + "{name!r} not found in {self.scope}; known: {known}"
        + ctx.quote
        + ") from None",
    )
    code.blank()
    code.add(1, "def __contains__(self, name: str) -> bool:")
    code.add(2, "return name in self._entries")
    ctx.other_classes.append(name)
    return code


def util_format(ctx: FileContext) -> Code:
    rng = ctx.rng
    fname = ctx.function_name("format_seconds")
    code = Code()
    code.add(0, "def " + fname + "(seconds: float) -> str:")
    ctx.docstring(code, 1, "Human readable duration such as '1h 02m 03s'.", paragraphs=rng.randint(0, 1))
    code.add(1, "seconds = int(round(seconds))")
    code.add(1, "hours, rest = divmod(seconds, 3600)")
    code.add(1, "minutes, secs = divmod(rest, 60)")
    code.add(1, "if hours:")
    code.add(2, "return f" + ctx.quote + "{hours}h {minutes:02d}m {secs:02d}s" + ctx.quote)
    code.add(1, "return f" + ctx.quote + "{minutes}m {secs:02d}s" + ctx.quote)
    ctx.functions.append(fname)
    return code


def build_util_file(ctx: FileContext, module_title: str, target: int) -> Tuple[Code, List[str]]:
    code = file_header(ctx, module_title)
    code.add(0, "import ast")
    code.add(0, "import json")
    code.add(0, "import logging")
    code.add(0, "import os")
    code.add(0, "import sys")
    code.add(0, "import time")
    code.add(0, "from pathlib import Path")
    code.add(0, "from typing import Any, Dict, List, Optional, Sequence")
    makers = [
        (1.0, util_logger),
        (1.0, util_config),
        (1.0, util_paths),
        (1.0, util_timer),
        (1.0, util_registry),
        (1.0, util_format),
    ]
    fill_to_target(ctx, code, target, makers)
    finish_with_padding(ctx, code, target)
    return code, ctx.other_classes + ctx.functions


# --------------------------------------------------------------------------
# Train / eval templates (the CUDA-heavy minority)
# --------------------------------------------------------------------------


class TrainStyle:
    """Random choices that shape one train/eval script."""

    def __init__(self, rng: random.Random, is_eval: bool) -> None:
        self.torch = "t" if rng.random() < 0.3 else "torch"
        self.launch = rng.choice(["torchrun", "spawn", "single"])
        self.amp = rng.choice(["from_import", "qualified", "qualified", "none"])
        self.map_location = rng.choice(["cuda0", "fstring", "format", "lambda"])
        self.is_eval = is_eval
        self.cudnn = rng.random() < 0.5


def train_imports(
    ctx: FileContext,
    style: TrainStyle,
    model_import: Optional[Tuple[str, str]],
    data_import: Optional[Tuple[str, str]],
) -> Code:
    code = Code()
    for module in ["argparse", "logging", "math", "os", "random", "time"]:
        code.add(0, "import " + module)
    code.blank()
    code.add(0, "import numpy as np")
    code.add(0, "import torch as t" if style.torch == "t" else "import torch")
    code.add(0, "import torch.distributed as dist")
    if style.launch == "spawn":
        code.add(0, "import torch.multiprocessing as mp")
    code.add(0, "import torch.nn as nn")
    if style.cudnn:
        code.add(0, "import torch.backends.cudnn as cudnn")
    if style.amp == "from_import":
        code.add(0, "from torch.cuda.amp import GradScaler, autocast")
    code.add(0, "from torch.nn.parallel import DistributedDataParallel as DDP")
    code.add(0, "from torch.utils.data import DataLoader")
    code.add(0, "from torch.utils.data.distributed import DistributedSampler")
    if model_import or data_import:
        code.blank()
    if data_import:
        code.add(0, "from " + data_import[0] + " import " + data_import[1])
    if model_import:
        code.add(0, "from " + model_import[0] + " import " + model_import[1])
    code.blank()
    code.add(0, "logger = logging.getLogger(__name__)")
    return code


def train_parse_args(ctx: FileContext, style: TrainStyle) -> Code:
    rng = ctx.rng
    q = ctx.s
    code = Code()
    code.add(0, "def parse_args() -> argparse.Namespace:")
    ctx.docstring(
        code,
        1,
        "Command line options; defaults reproduce the reference recipe.",
        paragraphs=rng.randint(0, 1),
    )
    code.add(
        1,
        "parser = argparse.ArgumentParser(description="
        + q(rng.choice(ARCHS) + " " + ("evaluation" if style.is_eval else "training"))
        + ")",
    )
    code.add(
        1,
        "parser.add_argument("
        + q("--data")
        + ", type=str, default="
        + q("./data")
        + ", help="
        + q("dataset root")
        + ")",
    )
    code.add(
        1,
        "parser.add_argument("
        + q("--epochs")
        + ", type=int, default="
        + str(rng.choice([90, 100, 120, 300]))
        + ")",
    )
    code.add(
        1,
        "parser.add_argument("
        + q("-b")
        + ", "
        + q("--batch-size")
        + ", type=int, default="
        + str(rng.choice([32, 64, 128, 256]))
        + ",",
    )
    code.add(1, "                    help=" + q("mini-batch size per GPU") + ")")
    code.add(
        1,
        "parser.add_argument("
        + q("--lr")
        + ", type=float, default="
        + str(rng.choice([0.1, 0.01, 0.001, 5e-4]))
        + ")",
    )
    code.add(
        1,
        "parser.add_argument(" + q("--workers") + ", type=int, default=" + str(rng.choice([4, 8, 16])) + ")",
    )
    code.add(1, "parser.add_argument(" + q("--device") + ", type=str, default=" + q("cuda") + ",")
    code.add(1, "                    help=" + q("device to use, e.g. cuda, cuda:1 or cpu") + ")")
    code.add(
        1, "parser.add_argument(" + q("--gpu") + ", type=int, default=None, help=" + q("GPU id to use") + ")"
    )
    code.add(1, "parser.add_argument(" + q("--gpus") + ", type=str, default=None,")
    code.add(
        1, "                    help=" + q("comma separated list exported as CUDA_VISIBLE_DEVICES") + ")"
    )
    code.add(
        1,
        "parser.add_argument("
        + q("--local_rank")
        + ", type=int, default=int(os.environ.get("
        + q("LOCAL_RANK")
        + ", 0)))",
    )
    code.add(1, "parser.add_argument(" + q("--world-size") + ", type=int, default=1)")
    code.add(1, "parser.add_argument(" + q("--rank") + ", type=int, default=0)")
    code.add(
        1,
        "parser.add_argument(" + q("--dist-url") + ", type=str, default=" + q("tcp://127.0.0.1:23456") + ")",
    )
    code.add(
        1,
        "parser.add_argument("
        + q("--amp")
        + ", action="
        + q("store_true")
        + ", help="
        + q("use torch.cuda.amp mixed precision")
        + ")",
    )
    code.add(1, "parser.add_argument(" + q("--resume") + ", type=str, default=" + q("") + ")")
    code.add(1, "parser.add_argument(" + q("--output-dir") + ", type=str, default=" + q("./work_dirs") + ")")
    code.add(
        1,
        "parser.add_argument("
        + q("--print-freq")
        + ", type=int, default="
        + str(rng.choice([10, 20, 50, 100]))
        + ")",
    )
    code.add(
        1,
        "parser.add_argument(" + q("--seed") + ", type=int, default=" + str(rng.choice([0, 42, 3407])) + ")",
    )
    for _ in range(rng.randint(0, 8)):
        opt = rng.choice(
            [
                "--weight-decay",
                "--momentum",
                "--warmup-epochs",
                "--label-smoothing",
                "--clip-grad",
                "--drop-path",
                "--ema-decay",
                "--image-size",
                "--num-classes",
                "--accum-steps",
            ]
        )
        if opt in "\n".join(code.lines):
            continue
        default = {
            "--image-size": "224",
            "--num-classes": "1000",
            "--warmup-epochs": "5",
            "--accum-steps": "1",
        }.get(opt)
        if default is not None:
            code.add(1, "parser.add_argument(" + q(opt) + ", type=int, default=" + default + ")")
        else:
            code.add(
                1,
                "parser.add_argument("
                + q(opt)
                + ", type=float, default="
                + str(rng.choice([0.0, 0.1, 0.9, 1e-4, 0.9999]))
                + ")",
            )
    code.add(1, "return parser.parse_args()")
    return code


def train_set_seed(ctx: FileContext, style: TrainStyle) -> Code:
    T = style.torch
    code = Code()
    code.add(0, "def set_seed(seed: int, deterministic: bool = False) -> None:")
    ctx.docstring(
        code, 1, "Seed python, numpy and torch (CPU and all GPUs).", paragraphs=ctx.rng.randint(0, 1)
    )
    code.add(1, "random.seed(seed)")
    code.add(1, "np.random.seed(seed)")
    code.add(1, T + ".manual_seed(seed)")
    code.add(1, T + ".cuda.manual_seed_all(seed)")
    if style.cudnn:
        code.add(1, "cudnn.deterministic = deterministic")
        code.add(1, "cudnn.benchmark = not deterministic")
    else:
        code.add(1, T + ".backends.cudnn.benchmark = not deterministic")
    return code


def train_setup_device(ctx: FileContext, style: TrainStyle) -> Code:
    """Device / process-group initialisation in one of three common idioms."""
    T = style.torch
    q = ctx.s
    code = Code()
    if style.launch == "torchrun":
        code.add(0, "def setup_distributed(args: argparse.Namespace):")
        ctx.docstring(
            code,
            1,
            "Initialise NCCL from torchrun environment variables.",
            paragraphs=ctx.rng.randint(1, 2),
            returns="The ``torch.device`` this process should use.",
        )
        code.add(1, "if args.gpus is not None:")
        code.add(2, "os.environ[" + q("CUDA_VISIBLE_DEVICES") + "] = args.gpus")
        code.add(1, "local_rank = int(os.environ.get(" + q("LOCAL_RANK") + ", args.local_rank))")
        code.add(1, "world_size = int(os.environ.get(" + q("WORLD_SIZE") + ", 1))")
        code.add(1, "args.distributed = world_size > 1")
        code.add(1, "args.local_rank = local_rank")
        code.add(1, "if args.distributed:")
        ctx.comment(code, 2, 0.6, 2)
        code.add(2, T + ".cuda.set_device(local_rank)")
        code.add(2, "dist.init_process_group(backend=" + q("nccl") + ", init_method=" + q("env://") + ")")
        code.add(2, "args.rank = dist.get_rank()")
        code.add(2, "args.world_size = dist.get_world_size()")
        code.add(2, "device = " + T + ".device(" + q("cuda") + ", local_rank)")
        code.add(1, "elif " + T + ".cuda.is_available():")
        code.add(2, "device = " + T + ".device(args.device)")
        code.add(1, "else:")
        code.add(2, "logger.warning(" + q("CUDA is not available, falling back to the CPU") + ")")
        code.add(2, "device = " + T + ".device(" + q("cpu") + ")")
        code.add(
            1, "logger.info(" + q("rank %d uses device %s (%d CUDA devices visible)") + ", args.rank, device,"
        )
        code.add(1, "            " + T + ".cuda.device_count())")
        code.add(1, "return device")
    elif style.launch == "spawn":
        code.add(0, "def setup_worker(gpu: int, ngpus_per_node: int, args: argparse.Namespace):")
        ctx.docstring(
            code,
            1,
            "Per-process initialisation for mp.spawn based launching.",
            paragraphs=ctx.rng.randint(1, 2),
        )
        code.add(1, "args.gpu = gpu")
        code.add(1, "if args.gpu is not None:")
        code.add(2, "print(f" + ctx.quote + "=> Use GPU: {args.gpu} for training" + ctx.quote + ")")
        code.add(1, "if args.distributed:")
        code.add(2, "args.rank = args.rank * ngpus_per_node + gpu")
        code.add(2, "dist.init_process_group(backend=" + q("nccl") + ", init_method=args.dist_url,")
        code.add(2, "                        world_size=args.world_size, rank=args.rank)")
        code.add(1, "if " + T + ".cuda.is_available() and args.gpu is not None:")
        code.add(2, T + ".cuda.set_device(args.gpu)")
        code.add(2, "device = " + T + ".device(f" + ctx.quote + "cuda:{args.gpu}" + ctx.quote + ")")
        code.add(1, "elif " + T + ".cuda.is_available():")
        code.add(
            2,
            "device = " + T + ".device(f" + ctx.quote + "cuda:{args.rank % ngpus_per_node}" + ctx.quote + ")",
        )
        code.add(1, "else:")
        code.add(2, "device = " + T + ".device(" + q("cpu") + ")")
        code.add(1, "return device")
    else:
        code.add(0, "def select_device(args: argparse.Namespace):")
        ctx.docstring(
            code,
            1,
            "Pick the training device, honouring --gpus and --device.",
            paragraphs=ctx.rng.randint(1, 2),
        )
        code.add(1, "if args.gpus:")
        code.add(2, "os.environ[" + q("CUDA_VISIBLE_DEVICES") + "] = args.gpus")
        code.add(1, "args.distributed = False")
        code.add(1, "use_cuda = " + T + ".cuda.is_available() and args.device.startswith(" + q("cuda") + ")")
        code.add(1, "device = " + T + ".device(args.device if use_cuda else " + q("cpu") + ")")
        code.add(1, "if use_cuda:")
        code.add(
            2,
            "logger.info("
            + q("Training on CUDA device %s: %s")
            + ", device, "
            + T
            + ".cuda.get_device_name(device))",
        )
        code.add(1, "return device")
    return code


def train_build_model(ctx: FileContext, style: TrainStyle, net: str) -> Code:
    T = style.torch
    code = Code()
    code.add(0, "def build_model(args: argparse.Namespace, device) -> nn.Module:")
    ctx.docstring(
        code, 1, "Instantiate the network and move it to the right device.", paragraphs=ctx.rng.randint(0, 2)
    )
    code.add(1, "model = " + net + "(num_classes=getattr(args, " + ctx.s("num_classes") + ", 1000))")
    if style.launch == "spawn":
        code.add(1, "if args.gpu is not None:")
        code.add(2, "model.cuda(args.gpu)")
        code.add(2, "if args.distributed:")
        code.add(3, "model = DDP(model, device_ids=[args.gpu])")
        code.add(1, "elif " + T + ".cuda.is_available():")
        code.add(2, "model = model.cuda()")
        code.add(2, "model = nn.DataParallel(model)")
    elif style.launch == "torchrun":
        code.add(1, "model = model.to(device)")
        code.add(1, "if args.distributed:")
        ctx.comment(code, 2, 0.5, 1)
        code.add(2, "model = nn.SyncBatchNorm.convert_sync_batchnorm(model)")
        code.add(2, "model = DDP(model, device_ids=[args.local_rank], output_device=args.local_rank)")
    else:
        code.add(1, "if device.type == " + ctx.s("cuda") + ":")
        code.add(2, "model = model.cuda()")
        code.add(2, "if " + T + ".cuda.device_count() > 1:")
        code.add(3, "model = nn.DataParallel(model)")
        code.add(1, "else:")
        code.add(2, "model = model.to(device)")
    code.add(1, "return model")
    return code


def to_device_lines(ctx: FileContext, style: TrainStyle, names: Sequence[str]) -> List[str]:
    """The various ways scripts copy a batch to the GPU."""
    lines = []
    for name in names:
        if style.launch == "spawn":
            variant = ctx.rng.choice(
                ["{0} = {0}.cuda(args.gpu, non_blocking=True)", "{0} = {0}.to(args.gpu, non_blocking=True)"]
            )
        elif style.launch == "torchrun":
            variant = ctx.rng.choice(["{0} = {0}.to(device, non_blocking=True)", "{0} = {0}.to(device)"])
        else:
            variant = ctx.rng.choice(
                ["{0} = {0}.cuda()", "{0} = {0}.to(device)", "{0} = {0}.cuda(non_blocking=True)"]
            )
        lines.append(variant.format(name))
    return lines


def autocast_line(ctx: FileContext, style: TrainStyle) -> Optional[str]:
    if style.amp == "from_import":
        return "with autocast(enabled=args.amp):"
    if style.amp == "qualified":
        return ctx.rng.choice(
            [
                "with " + style.torch + ".cuda.amp.autocast(enabled=args.amp):",
                "with " + style.torch + ".cuda.amp.autocast():",
            ]
        )
    return None


def train_one_epoch(ctx: FileContext, style: TrainStyle) -> Code:
    T = style.torch
    q = ctx.s
    code = Code()
    code.add(0, "def train_one_epoch(model, loader, criterion, optimizer, scaler, epoch: int, device,")
    code.add(0, "                    args: argparse.Namespace) -> float:")
    ctx.docstring(
        code, 1, "Run one training epoch and return the average loss.", paragraphs=ctx.rng.randint(1, 2)
    )
    code.add(1, "model.train()")
    code.add(1, "total_loss = 0.0")
    code.add(1, "start = time.time()")
    code.add(1, "for step, (images, target) in enumerate(loader):")
    for line in to_device_lines(ctx, style, ["images", "target"]):
        code.add(2, line)
    ctx.comment(code, 2, 0.4, 2)
    ac = autocast_line(ctx, style)
    if ac:
        code.add(2, ac)
        code.add(3, "output = model(images)")
        code.add(3, "loss = criterion(output, target)")
        code.add(2, "optimizer.zero_grad(set_to_none=True)")
        code.add(2, "scaler.scale(loss).backward()")
        code.add(2, "scaler.step(optimizer)")
        code.add(2, "scaler.update()")
    else:
        code.add(2, "output = model(images)")
        code.add(2, "loss = criterion(output, target)")
        code.add(2, "optimizer.zero_grad()")
        code.add(2, "loss.backward()")
        code.add(2, "optimizer.step()")
    code.add(2, "total_loss += loss.item()")
    code.add(2, "if step % args.print_freq == 0:")
    code.add(3, T + ".cuda.synchronize()")
    code.add(3, "elapsed = time.time() - start")
    code.add(
        3, "mem = " + T + ".cuda.max_memory_allocated() / 1024 ** 2 if " + T + ".cuda.is_available() else 0.0"
    )
    code.add(3, "logger.info(" + q("epoch %d step %d/%d loss %.4f time %.1fs cuda mem %.0f MiB") + ",")
    code.add(3, "            epoch, step, len(loader), loss.item(), elapsed, mem)")
    code.add(1, "return total_loss / max(len(loader), 1)")
    return code


def train_evaluate(ctx: FileContext, style: TrainStyle) -> Code:
    T = style.torch
    code = Code()
    code.add(0, "@" + T + ".no_grad()")
    code.add(0, "def evaluate(model, loader, device, args: argparse.Namespace) -> float:")
    ctx.docstring(code, 1, "Top-1 accuracy of ``model`` on ``loader``.", paragraphs=ctx.rng.randint(0, 2))
    code.add(1, "model.eval()")
    code.add(1, "correct = " + T + ".zeros(1, device=device)")
    code.add(1, "seen = " + T + ".zeros(1, device=device)")
    code.add(1, "for images, target in loader:")
    for line in to_device_lines(ctx, style, ["images", "target"]):
        code.add(2, line)
    ac = autocast_line(ctx, style)
    if ac:
        code.add(2, ac)
        code.add(3, "output = model(images)")
    else:
        code.add(2, "output = model(images)")
    code.add(2, "correct += (output.argmax(dim=1) == target).sum()")
    code.add(2, "seen += target.numel()")
    code.add(1, "if args.distributed:")
    code.add(2, "dist.all_reduce(correct)")
    code.add(2, "dist.all_reduce(seen)")
    code.add(1, "return (correct / seen.clamp(min=1)).item() * 100.0")
    return code


def train_checkpoint_helpers(ctx: FileContext, style: TrainStyle) -> Code:
    T = style.torch
    q = ctx.s
    code = Code()
    code.add(0, "def save_checkpoint(state: dict, output_dir: str, is_best: bool = False) -> None:")
    ctx.docstring(
        code, 1, "Write ``state`` to disk; only rank 0 should call this.", paragraphs=ctx.rng.randint(0, 1)
    )
    code.add(1, "os.makedirs(output_dir, exist_ok=True)")
    code.add(1, "path = os.path.join(output_dir, " + q("checkpoint.pth") + ")")
    code.add(1, T + ".save(state, path)")
    code.add(1, "if is_best:")
    code.add(2, T + ".save(state, os.path.join(output_dir, " + q("model_best.pth") + "))")
    code.blank(2)
    code.add(
        0,
        "def load_checkpoint(path: str, model: nn.Module, args: argparse.Namespace, optimizer=None) -> int:",
    )
    ctx.docstring(
        code,
        1,
        "Restore model (and optimizer) state, returning the epoch to resume from.",
        paragraphs=ctx.rng.randint(0, 2),
    )
    code.add(1, "if not os.path.isfile(path):")
    code.add(2, "raise FileNotFoundError(path)")
    if style.map_location == "cuda0":
        code.add(1, "checkpoint = " + T + ".load(path, map_location=" + q("cuda:0") + ")")
    elif style.map_location == "fstring":
        code.add(
            1,
            "checkpoint = "
            + T
            + ".load(path, map_location=f"
            + ctx.quote
            + "cuda:{args.local_rank}"
            + ctx.quote
            + ")",
        )
    elif style.map_location == "format":
        code.add(1, "loc = " + q("cuda:{}") + ".format(args.gpu if args.gpu is not None else 0)")
        code.add(1, "checkpoint = " + T + ".load(path, map_location=loc)")
    else:
        code.add(
            1,
            "checkpoint = "
            + T
            + ".load(path, map_location=lambda storage, loc: storage.cuda(args.local_rank))",
        )
    code.add(1, "state = checkpoint.get(" + q("state_dict") + ", checkpoint)")
    code.add(1, "target = model.module if hasattr(model, " + q("module") + ") else model")
    code.add(1, "target.load_state_dict(state)")
    code.add(1, "if optimizer is not None and " + q("optimizer") + " in checkpoint:")
    code.add(2, "optimizer.load_state_dict(checkpoint[" + q("optimizer") + "])")
    code.add(1, "logger.info(" + q("loaded checkpoint %s onto cuda device") + ", path)")
    code.add(1, "return int(checkpoint.get(" + q("epoch") + ", 0))")
    return code


def train_throughput(ctx: FileContext, style: TrainStyle) -> Code:
    T = style.torch
    code = Code()
    code.add(0, "@" + T + ".no_grad()")
    code.add(
        0, "def measure_throughput(model: nn.Module, device, batch_size: int = 64, image_size: int = 224,"
    )
    code.add(0, "                       steps: int = 50) -> float:")
    ctx.docstring(
        code, 1, "Images per second for inference, timed with CUDA events.", paragraphs=ctx.rng.randint(1, 2)
    )
    code.add(1, "model.eval()")
    code.add(1, "dummy = " + T + ".randn(batch_size, 3, image_size, image_size, device=device)")
    code.add(1, "for _ in range(10):")
    code.add(2, "model(dummy)")
    code.add(1, T + ".cuda.synchronize()")
    code.add(1, "start = " + T + ".cuda.Event(enable_timing=True)")
    code.add(1, "end = " + T + ".cuda.Event(enable_timing=True)")
    code.add(1, "start.record()")
    code.add(1, "for _ in range(steps):")
    code.add(2, "model(dummy)")
    code.add(1, "end.record()")
    code.add(1, T + ".cuda.synchronize()")
    code.add(1, "elapsed_ms = start.elapsed_time(end)")
    code.add(1, "return batch_size * steps / (elapsed_ms / 1000.0)")
    return code


def train_meter_and_lr(ctx: FileContext, style: TrainStyle) -> Code:
    code = Code()
    name = ctx.class_name(["Meter"])
    code.add(0, "class " + name + ":")
    ctx.docstring(
        code, 1, "Computes and stores the average and current value.", paragraphs=ctx.rng.randint(0, 2)
    )
    code.blank()
    code.add(1, "def __init__(self, name: str, fmt: str = " + ctx.s(":f") + ") -> None:")
    code.add(2, "self.name = name")
    code.add(2, "self.fmt = fmt")
    code.add(2, "self.val = self.avg = self.sum = 0.0")
    code.add(2, "self.count = 0")
    code.blank()
    code.add(1, "def update(self, val: float, n: int = 1) -> None:")
    code.add(2, "self.val = val")
    code.add(2, "self.sum += val * n")
    code.add(2, "self.count += n")
    code.add(2, "self.avg = self.sum / self.count")
    code.blank(2)
    code.add(0, "def adjust_learning_rate(optimizer, epoch: int, args: argparse.Namespace) -> float:")
    ctx.docstring(code, 1, "Cosine schedule with linear warm-up.", paragraphs=ctx.rng.randint(0, 2))
    code.add(1, "warmup = getattr(args, " + ctx.s("warmup_epochs") + ", 5)")
    code.add(1, "if epoch < warmup:")
    code.add(2, "lr = args.lr * (epoch + 1) / warmup")
    code.add(1, "else:")
    code.add(2, "progress = (epoch - warmup) / max(args.epochs - warmup, 1)")
    code.add(2, "lr = 0.5 * args.lr * (1.0 + math.cos(math.pi * progress))")
    code.add(1, "for group in optimizer.param_groups:")
    code.add(2, "group[" + ctx.s("lr") + "] = lr")
    code.add(1, "return lr")
    return code


def train_main(ctx: FileContext, style: TrainStyle, dataset: str) -> Code:
    T = style.torch
    q = ctx.s
    code = Code()
    if style.launch == "spawn":
        code.add(0, "def main_worker(gpu, ngpus_per_node: int, args: argparse.Namespace) -> None:")
        code.add(1, "device = setup_worker(gpu, ngpus_per_node, args)")
    else:
        code.add(0, "def main() -> None:")
        code.add(1, "args = parse_args()")
        if style.launch == "torchrun":
            code.add(1, "device = setup_distributed(args)")
        else:
            code.add(1, "device = select_device(args)")
    code.add(1, "set_seed(args.seed)")
    code.add(1, "model = build_model(args, device)")
    code.add(1, "criterion = nn.CrossEntropyLoss().to(device)")
    code.add(
        1, "optimizer = " + T + ".optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)"
    )
    if style.amp == "from_import":
        code.add(1, "scaler = GradScaler(enabled=args.amp)")
    elif style.amp == "qualified":
        code.add(1, "scaler = " + T + ".cuda.amp.GradScaler(enabled=args.amp)")
    else:
        code.add(1, "scaler = None")
    code.add(1, "train_set = " + dataset + "(args.data, split=" + q("train") + ")")
    code.add(1, "val_set = " + dataset + "(args.data, split=" + q("val") + ")")
    code.add(1, "sampler = DistributedSampler(train_set) if args.distributed else None")
    code.add(1, "train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=sampler is None,")
    code.add(
        1,
        "                          sampler=sampler, num_workers=args.workers, "
        "pin_memory=True, drop_last=True)",
    )
    code.add(1, "val_loader = DataLoader(val_set, batch_size=args.batch_size, shuffle=False,")
    code.add(1, "                        num_workers=args.workers, pin_memory=True)")
    code.add(1, "start_epoch = 0")
    code.add(1, "if args.resume:")
    code.add(2, "start_epoch = load_checkpoint(args.resume, model, args, optimizer)")
    if style.is_eval:
        code.add(1, "acc = evaluate(model, val_loader, device, args)")
        code.add(1, "logger.info(" + q("top-1 accuracy %.2f") + ", acc)")
        code.add(1, "if " + T + ".cuda.is_available():")
        code.add(
            2,
            "logger.info("
            + q("throughput %.1f img/s on %s")
            + ", measure_throughput(model, device), "
            + T
            + ".cuda.get_device_name())",
        )
    else:
        code.add(1, "best_acc = 0.0")
        code.add(1, "for epoch in range(start_epoch, args.epochs):")
        code.add(2, "if sampler is not None:")
        code.add(3, "sampler.set_epoch(epoch)")
        code.add(
            2,
            "train_loss = train_one_epoch(model, train_loader, criterion, optimizer, scaler, "
            "epoch, device, args)",
        )
        code.add(2, "acc = evaluate(model, val_loader, device, args)")
        code.add(2, "is_best = acc > best_acc")
        code.add(2, "best_acc = max(acc, best_acc)")
        code.add(
            2,
            "logger.info("
            + q("epoch %d: loss %.4f acc %.2f (best %.2f)")
            + ", epoch, train_loss, acc, best_acc)",
        )
        code.add(2, "if not args.distributed or dist.get_rank() == 0:")
        code.add(
            3,
            "state = {"
            + q("epoch")
            + ": epoch + 1, "
            + q("state_dict")
            + ": model.state_dict(), "
            + q("optimizer")
            + ": optimizer.state_dict()}",
        )
        code.add(3, "save_checkpoint(state, args.output_dir, is_best)")
        ctx.comment(code, 2, 0.7, 2)
        code.add(2, T + ".cuda.empty_cache()")
    code.add(1, "if args.distributed:")
    code.add(2, "dist.destroy_process_group()")
    if style.launch == "spawn":
        code.blank(2)
        code.add(0, "def main() -> None:")
        code.add(1, "args = parse_args()")
        code.add(1, "if args.gpus:")
        code.add(2, "os.environ[" + q("CUDA_VISIBLE_DEVICES") + "] = args.gpus")
        code.add(1, "ngpus_per_node = " + T + ".cuda.device_count()")
        code.add(1, "args.distributed = args.world_size > 1 or ngpus_per_node > 1")
        code.add(1, "if args.distributed:")
        code.add(2, "args.world_size = ngpus_per_node * args.world_size")
        code.add(2, "mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, args))")
        code.add(1, "else:")
        code.add(2, "main_worker(args.gpu, ngpus_per_node, args)")
    return code


def build_train_file(
    ctx: FileContext,
    module_title: str,
    target: int,
    is_eval: bool,
    model_import: Optional[Tuple[str, str]],
    data_import: Optional[Tuple[str, str]],
) -> Tuple[Code, List[str]]:
    rng = ctx.rng
    style = TrainStyle(rng, is_eval)
    code = file_header(ctx, module_title, shebang=rng.random() < 0.6)
    code.extend(train_imports(ctx, style, model_import, data_import).lines)
    if rng.random() < 0.5:
        code.blank()
        code.extend(wrap(prose(rng, TRAIN_SENTENCES, rng.randint(1, 3)), "# "))
    parts = [
        train_parse_args(ctx, style),
        train_set_seed(ctx, style),
        train_setup_device(ctx, style),
        train_build_model(ctx, style, model_import[1] if model_import else "nn.Identity"),
        train_checkpoint_helpers(ctx, style),
    ]
    if not is_eval:
        parts.append(train_one_epoch(ctx, style))
    parts.append(train_evaluate(ctx, style))
    if is_eval:
        parts.append(train_throughput(ctx, style))
    tail = train_main(ctx, style, data_import[1] if data_import else "nn.Identity")
    for part in parts:
        code.blank(2).extend(part.lines)
    # Optional helpers are what make real train scripts long; add them while they fit.
    optional = [train_meter_and_lr(ctx, style)]
    if not is_eval:
        optional.append(train_throughput(ctx, style))
    for part in optional:
        if len(code) + len(part) + len(tail) + 8 <= target:
            code.blank(2).extend(part.lines)
    code.blank(2).extend(tail.lines)
    code.blank(2)
    code.add(0, "if __name__ == " + ctx.s("__main__") + ":")
    code.add(1, "main()")
    finish_with_padding(ctx, code, target)
    return code, []


def build_trainer_class_file(ctx: FileContext, module_title: str, target: int) -> Tuple[Code, List[str]]:
    """Engine-style Trainer class (no __main__), common in larger code bases."""
    rng = ctx.rng
    style = TrainStyle(rng, is_eval=False)
    T = style.torch
    q = ctx.s
    name = ctx.class_name(["Trainer", "Runner"])
    code = file_header(ctx, module_title)
    code.add(0, "import logging")
    code.add(0, "import os")
    code.add(0, "import time")
    code.add(0, "from typing import Any, Dict, Optional")
    code.blank()
    code.add(0, "import torch as t" if T == "t" else "import torch")
    code.add(0, "import torch.distributed as dist")
    code.add(0, "import torch.nn as nn")
    if style.amp == "from_import":
        code.add(0, "from torch.cuda.amp import GradScaler, autocast")
    code.add(0, "from torch.nn.parallel import DistributedDataParallel as DDP")
    code.blank()
    code.add(0, "logger = logging.getLogger(__name__)")
    code.blank(2)
    code.add(0, "class " + name + ":")
    ctx.docstring(
        code,
        1,
        "Owns the model, optimizer and device placement for a training run.",
        paragraphs=rng.randint(1, 3),
        args=[
            ("model", "The network to train; moved to the local GPU."),
            ("optimizer", "Optimizer over ``model.parameters()``."),
            ("cfg", "Plain dict with the training options."),
        ],
    )
    code.blank()
    code.add(1, "def __init__(self, model: nn.Module, optimizer, cfg: Dict[str, Any]) -> None:")
    code.add(2, "self.cfg = cfg")
    code.add(2, "self.local_rank = int(os.environ.get(" + q("LOCAL_RANK") + ", 0))")
    code.add(2, "self.distributed = int(os.environ.get(" + q("WORLD_SIZE") + ", 1)) > 1")
    code.add(2, "if self.distributed and not dist.is_initialized():")
    code.add(3, "dist.init_process_group(backend=" + q("nccl") + ")")
    code.add(2, "if " + T + ".cuda.is_available():")
    code.add(3, T + ".cuda.set_device(self.local_rank)")
    code.add(3, "self.device = " + T + ".device(" + q("cuda") + ", self.local_rank)")
    code.add(2, "else:")
    code.add(3, "self.device = " + T + ".device(" + q("cpu") + ")")
    code.add(2, "self.model = model.to(self.device)")
    code.add(2, "if self.distributed:")
    code.add(3, "self.model = DDP(self.model, device_ids=[self.local_rank])")
    code.add(2, "self.optimizer = optimizer")
    if style.amp == "from_import":
        code.add(2, "self.scaler = GradScaler(enabled=cfg.get(" + q("amp") + ", True))")
    else:
        code.add(2, "self.scaler = " + T + ".cuda.amp.GradScaler(enabled=cfg.get(" + q("amp") + ", True))")
    code.add(2, "self.step = 0")
    code.blank()
    code.add(1, "def train_step(self, batch) -> float:")
    ctx.docstring(
        code, 2, "One optimisation step on ``batch`` = (inputs, targets).", paragraphs=rng.randint(0, 2)
    )
    code.add(2, "inputs, targets = batch")
    code.add(2, "inputs = inputs.cuda(self.local_rank, non_blocking=True)")
    code.add(2, "targets = targets.to(self.device, non_blocking=True)")
    if style.amp == "from_import":
        code.add(2, "with autocast():")
    else:
        code.add(2, "with " + T + ".cuda.amp.autocast():")
    code.add(3, "loss = self.model(inputs, targets)")
    code.add(2, "self.optimizer.zero_grad(set_to_none=True)")
    code.add(2, "self.scaler.scale(loss).backward()")
    code.add(2, "self.scaler.step(self.optimizer)")
    code.add(2, "self.scaler.update()")
    code.add(2, "self.step += 1")
    code.add(2, "return loss.item()")
    code.blank()
    code.add(1, "def log_memory(self) -> None:")
    code.add(2, "if not " + T + ".cuda.is_available():")
    code.add(3, "return")
    code.add(2, T + ".cuda.synchronize(self.device)")
    code.add(2, "allocated = " + T + ".cuda.memory_allocated(self.device) / 2 ** 20")
    code.add(2, "reserved = " + T + ".cuda.memory_reserved(self.device) / 2 ** 20")
    code.add(
        2,
        "logger.info("
        + q("step %d: cuda allocated %.0f MiB, reserved %.0f MiB")
        + ", self.step, allocated, reserved)",
    )
    code.blank()
    code.add(1, "def save(self, path: str) -> None:")
    code.add(2, "if self.distributed and dist.get_rank() != 0:")
    code.add(3, "return")
    code.add(2, "model = self.model.module if self.distributed else self.model")
    code.add(2, T + ".save({" + q("model") + ": model.state_dict(), " + q("step") + ": self.step}, path)")
    code.blank()
    code.add(1, "def load(self, path: str) -> None:")
    code.add(
        2,
        "state = "
        + T
        + ".load(path, map_location=f"
        + ctx.quote
        + "cuda:{self.local_rank}"
        + ctx.quote
        + ")",
    )
    code.add(2, "model = self.model.module if self.distributed else self.model")
    code.add(2, "model.load_state_dict(state[" + q("model") + "])")
    code.add(2, "self.step = state.get(" + q("step") + ", 0)")
    code.add(2, T + ".cuda.empty_cache()")
    extra = train_meter_and_lr(ctx, style)
    if len(code) + len(extra) + 2 <= target:
        code.blank(2).extend(extra.lines)
    finish_with_padding(ctx, code, target)
    return code, [name]


# --------------------------------------------------------------------------
# Layout and post-processing
# --------------------------------------------------------------------------


def sample_target_lines(rng: random.Random) -> int:
    value = rng.lognormvariate(math.log(MEDIAN_LINES), LINES_SIGMA)
    return int(min(MAX_LINES, max(MIN_LINES, value)))


def choose_packages(rng: random.Random, project: str, n_files: int) -> List[Tuple[str, str]]:
    """Return ``(relative_dir, kind)`` pairs, parents always before children."""
    total = min(MAX_PACKAGES, max(5, n_files // 25))
    remaining = total - 1  # the project package itself
    counts = {kind: max(1, int(round(share * remaining))) for kind, share in PACKAGE_SHARES.items()}
    counts["model"] += remaining - sum(counts.values())
    packages = [(project, "root")]
    for kind in ["model", "data", "util", "train"]:
        for rel in PACKAGE_LAYOUT[kind][: counts[kind]]:
            path = rel[1:] if rel.startswith("/") else project + "/" + rel
            packages.append((path, kind))
    return packages


def unique_module_name(
    rng: random.Random, words: Sequence[str], taken: Dict[str, bool], suffixes: Sequence[str] = FILE_SUFFIXES
) -> str:
    for _ in range(50):
        name = rng.choice(words) + rng.choice(suffixes)
        if name not in taken:
            taken[name] = True
            return name
    name = rng.choice(words) + "_" + str(len(taken))
    taken[name] = True
    return name


def to_tabs(text: str) -> str:
    """Re-indent with tabs, like the occasional editor-configured file."""
    out = []
    for line in text.split("\n"):
        stripped = line.lstrip(" ")
        spaces = len(line) - len(stripped)
        out.append("\t" * (spaces // 4) + " " * (spaces % 4) + stripped)
    return "\n".join(out)


def finalise_source(rng: random.Random, lines: List[str], allow_variants: bool) -> bytes:
    """Join lines, occasionally switching to tabs or CRLF, and encode as UTF-8."""
    text = "\n".join(lines).rstrip("\n") + "\n"
    if allow_variants and rng.random() < P_TABS:
        text = to_tabs(text)
    if allow_variants and rng.random() < P_CRLF:
        text = text.replace("\n", "\r\n")
    return text.encode("utf-8")


def check_compiles(path: str, data: bytes) -> None:
    """Fail loudly if a template produced invalid Python."""
    try:
        compile(data, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        lines = data.decode("utf-8", "replace").splitlines()
        lineno = getattr(exc, "lineno", None) or 0
        shown = range(max(0, lineno - 4), min(len(lines), lineno + 2))
        context = "\n".join("%5d| %s" % (i + 1, lines[i]) for i in shown)
        raise CorpusError("generated file does not compile: %s: %s\n%s" % (path, exc, context)) from exc


def dotted(path: str) -> str:
    return path.replace("/", ".")


def title_for(rng: random.Random, kind: str, module: str) -> str:
    words = module.replace("_", " ")
    options = {
        "model": [
            "{} building blocks",
            "{} model definitions",
            "Layers used by the {} family",
            "{} architecture",
        ],
        "data": ["{} dataset and transforms", "Data loading for {}", "{} input pipeline"],
        "util": ["{} helpers", "Utilities: {}", "Small {} utilities shared by the tools"],
        "train": [
            "{} entry point",
            "Training script ({})",
            "Distributed {} recipe",
            "{} for image classification",
        ],
    }[kind]
    text = rng.choice(options).format(words)
    return text[0].upper() + text[1:]


# --------------------------------------------------------------------------
# Non-Python files
# --------------------------------------------------------------------------


def make_shell_script(rng: random.Random, project: str, train_scripts: Sequence[str], index: int) -> str:
    script = rng.choice(train_scripts) if train_scripts else "tools/train.py"
    gpus = rng.choice([2, 4, 8])
    devices = ",".join(str(i) for i in range(gpus))
    config = (
        "configs/" + rng.choice(["resnet50", "vit_base", "convnext_tiny", "swin_t", "mobilenet_v2"]) + ".yaml"
    )
    lines = [
        "#!/usr/bin/env bash",
        "# Launch script #%d for %s; edit GPUS to match your machine." % (index, project),
        "set -euo pipefail",
        "",
        "GPUS=${GPUS:-%d}" % gpus,
        "PORT=${PORT:-%d}" % rng.randint(20000, 30000),
        "export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-%s}" % devices,
        "export NCCL_DEBUG=${NCCL_DEBUG:-WARN}",
        "",
        "nvidia-smi --query-gpu=name,memory.total --format=csv",
        "",
    ]
    style = rng.choice(["torchrun", "launch", "single"])
    if style == "torchrun":
        lines += [
            "torchrun --nproc_per_node=$GPUS --master_port=$PORT \\",
            '    %s --config %s --amp "$@"' % (script, config),
        ]
    elif style == "launch":
        lines += [
            "python -m torch.distributed.launch --nproc_per_node=$GPUS --master_port=$PORT \\",
            '    %s --config %s --device cuda "$@"' % (script, config),
        ]
    else:
        lines += ['CUDA_VISIBLE_DEVICES=0 python %s --config %s --gpu 0 "$@"' % (script, config)]
    return "\n".join(lines) + "\n"


def make_yaml_config(rng: random.Random, name: str) -> str:
    arch = rng.choice(ARCHS)
    lines = [
        "# %s on %s" % (arch, rng.choice(DATASETS)),
        "model:",
        "  type: %s" % arch,
        "  num_classes: %d" % rng.choice([10, 100, 1000]),
        "  drop_path: %.2f" % rng.choice([0.0, 0.1, 0.2]),
        "data:",
        "  root: ./data/%s" % name,
        "  batch_size: %d" % rng.choice([32, 64, 128]),
        "  workers: %d" % rng.choice([4, 8]),
        "  pin_memory: true",
        "optim:",
        "  type: SGD",
        "  lr: %s" % rng.choice(["0.1", "0.01", "5.0e-4"]),
        "  weight_decay: 1.0e-4",
        "schedule:",
        "  epochs: %d" % rng.choice([90, 100, 300]),
        "  warmup_epochs: 5",
        "runtime:",
        "  device: cuda",
        "  gpus: [%s]" % ", ".join(str(i) for i in range(rng.choice([1, 2, 4, 8]))),
        "  dist_backend: nccl",
        "  amp: %s" % rng.choice(["true", "false"]),
        "  cudnn_benchmark: true",
        "  seed: %d" % rng.choice([0, 42]),
    ]
    return "\n".join(lines) + "\n"


def make_readme(project: str, n_py: int) -> str:
    return "\n".join(
        [
            "# %s" % project,
            "",
            "Synthetic PyTorch training project (%d Python files) generated for gpu2npu benchmarks." % n_py,
            "",
            "## Training",
            "",
            "```bash",
            "pip install -r requirements.txt",
            "CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node=4 "
            "tools/train.py --config configs/example.yaml",
            "```",
            "",
            "Requires a CUDA capable GPU with at least 16 GB of memory for the default batch size.",
            "",
        ]
    )


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def plan_categories(n_modules: int) -> List[str]:
    n_model = int(round(n_modules * SHARE_MODEL))
    n_data = int(round(n_modules * SHARE_DATA))
    n_util = int(round(n_modules * SHARE_UTIL))
    n_train = max(1, n_modules - n_model - n_data - n_util)
    n_model = n_modules - n_data - n_util - n_train
    # Order matters: train scripts import names produced by model/data files.
    return ["model"] * n_model + ["data"] * n_data + ["util"] * n_util + ["train"] * n_train


def assign_packages(
    rng: random.Random, categories: Sequence[str], packages: Sequence[Tuple[str, str]]
) -> List[str]:
    """Give each module a package of the matching kind, covering every package first."""
    by_kind: Dict[str, List[str]] = {}
    for path, kind in packages:
        by_kind.setdefault(kind, []).append(path)
    cursor: Dict[str, int] = {}
    result = []
    for category in categories:
        pool = by_kind[category]
        i = cursor.get(category, 0)
        cursor[category] = i + 1
        result.append(pool[i] if i < len(pool) else rng.choice(pool))
    return result


def generate_files(n_files: int, seed: int) -> Dict[str, bytes]:
    """Build the whole corpus in memory as ``{relative_path: content}``."""
    if n_files < MIN_FILES:
        raise CorpusError("--files must be at least %d" % MIN_FILES)
    rng = random.Random(seed)
    project = rng.choice(PROJECT_NAMES)
    packages = choose_packages(rng, project, n_files)
    categories = plan_categories(n_files - len(packages))
    homes = assign_packages(rng, categories, packages)

    used_classes: Dict[str, int] = {}
    taken_names: Dict[str, Dict[str, bool]] = {path: {"__init__": True} for path, _ in packages}
    for path, _ in packages:
        # A module must not share its name with a sibling sub-package.
        parent, _, base = path.rpartition("/")
        if parent in taken_names:
            taken_names[parent][base] = True
    exports: Dict[str, List[Tuple[str, List[str]]]] = {path: [] for path, _ in packages}
    model_symbols: List[Tuple[str, str]] = []
    data_symbols: List[Tuple[str, str]] = []
    files: Dict[str, bytes] = {}
    train_scripts: List[str] = []

    sentences = {
        "model": MODEL_SENTENCES,
        "data": DATA_SENTENCES,
        "util": UTIL_SENTENCES,
        "train": TRAIN_SENTENCES,
    }
    words = {"model": MODEL_FILE_WORDS, "data": DATA_FILE_WORDS, "util": UTIL_FILE_WORDS}
    for category, home in zip(categories, homes):
        ctx = FileContext(rng, sentences[category], used_classes, project)
        target = sample_target_lines(rng)
        if category == "train":
            base = rng.choice(TRAIN_FILE_WORDS)
            module = unique_module_name(
                rng, [base, base + "_" + rng.choice(TASK_WORDS)], taken_names[home], TRAIN_FILE_SUFFIXES
            )
        else:
            module = unique_module_name(rng, words[category], taken_names[home])
        title = title_for(rng, category, module)
        if category == "model":
            code, names = build_model_file(ctx, title, target)
            model_symbols.extend(
                (dotted(home) + "." + module, n) for n in names if n.endswith(tuple(NET_SUFFIXES))
            )
        elif category == "data":
            code, names = build_data_file(ctx, title, target)
            data_symbols.extend((dotted(home) + "." + module, n) for n in names if n.endswith("Dataset"))
        elif category == "util":
            code, names = build_util_file(ctx, title, target)
        elif home.startswith(project + "/engine") and rng.random() < 0.5:
            code, names = build_trainer_class_file(ctx, title, target)
        else:
            is_eval = module.startswith(("eval", "test", "benchmark"))
            model_import = rng.choice(model_symbols) if model_symbols else None
            data_import = rng.choice(data_symbols) if data_symbols else None
            code, names = build_train_file(ctx, title, target, is_eval, model_import, data_import)
            if home.startswith("tools"):
                train_scripts.append(home + "/" + module + ".py")
        path = home + "/" + module + ".py"
        files[path] = finalise_source(rng, code.lines, allow_variants=True)
        exports[home].append((module, names))

    for path, kind in packages:
        files[path + "/__init__.py"] = make_init(rng, path, kind, exports[path])

    for path, data in files.items():
        check_compiles(path, data)

    for index in range(3 + n_files // 250):
        files["scripts/%s_%d.sh" % (rng.choice(["dist_train", "train", "eval", "slurm_train"]), index)] = (
            make_shell_script(rng, project, train_scripts, index).encode("utf-8")
        )
    for index in range(4 + n_files // 150):
        name = rng.choice(["resnet50", "vit_base", "convnext_tiny", "swin_t", "mobilenet_v2", "deit_s"])
        files["configs/%s_%d.yaml" % (name, index)] = make_yaml_config(rng, name).encode("utf-8")
    files["README.md"] = make_readme(project, n_files).encode("utf-8")
    return files


def make_init(rng: random.Random, path: str, kind: str, modules: Sequence[Tuple[str, List[str]]]) -> bytes:
    """Package ``__init__`` re-exporting public names, like most real projects."""
    lines = ['"""' + path.split("/")[-1].replace("_", " ").capitalize() + ' package."""']
    if kind == "root":
        lines += [
            "",
            "__version__ = " + repr("%d.%d.%d" % (rng.randint(0, 2), rng.randint(0, 12), rng.randint(0, 9))),
        ]
    public = []
    for module, names in modules:
        names = [n for n in names if not n.startswith("_")]
        if kind in ("model", "data") and names:
            if not public:
                lines.append("")
            lines.append("from ." + module + " import " + ", ".join(names))
            public.extend(names)
    if public:
        lines += ["", "__all__ = ["] + ["    " + repr(n) + "," for n in public] + ["]"]
    return ("\n".join(lines) + "\n").encode("utf-8")


def directory_is_empty(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def write_tree(out_dir: Path, files: Dict[str, bytes]) -> None:
    """Write files in sorted order; binary mode keeps CRLF files byte-exact."""
    for rel in sorted(files):
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(files[rel])


def generate_corpus(out_dir, n_files: int = 1000, seed: int = 0, force: bool = False) -> Dict[str, int]:
    """Generate the corpus into ``out_dir`` and return a few statistics.

    Raises CorpusError if ``out_dir`` is a non-empty directory and ``force`` is
    false, or if a generated file fails to compile.  With ``force`` existing
    files are overwritten but nothing else is deleted.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise CorpusError("%s exists and is not a directory" % out)
    if not force and not directory_is_empty(out):
        raise CorpusError("%s is not empty; use --force to write into it anyway" % out)
    files = generate_files(n_files, seed)
    out.mkdir(parents=True, exist_ok=True)
    write_tree(out, files)
    py_lines = {rel: data.count(b"\n") for rel, data in files.items() if rel.endswith(".py")}
    modules = [n for rel, n in py_lines.items() if not rel.endswith("__init__.py")]
    return {
        "files": len(files),
        "py_files": len(py_lines),
        "py_lines": sum(py_lines.values()),
        "packages": len(py_lines) - len(modules),
        "module_min_lines": min(modules),
        "module_max_lines": max(modules),
        "module_mean_lines": int(round(sum(modules) / len(modules))),
    }


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Generate a deterministic synthetic PyTorch project for benchmarking gpu2npu."
    )
    parser.add_argument(
        "out_dir", metavar="OUT_DIR", help="directory to create (must be empty unless --force)"
    )
    parser.add_argument(
        "--files", type=int, default=1000, help="number of .py files, __init__.py included (default: 1000)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="random seed; same seed gives a byte-identical tree (default: 0)"
    )
    parser.add_argument(
        "--force", action="store_true", help="write into a non-empty OUT_DIR, overwriting files"
    )
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        stats = generate_corpus(args.out_dir, args.files, args.seed, args.force)
    except CorpusError as exc:
        print("gen_corpus: error: %s" % exc, file=sys.stderr)
        return 1
    print(
        "wrote %(files)d files (%(py_files)d .py in %(packages)d packages, %(py_lines)d lines; "
        "module lines min/mean/max %(module_min_lines)d/%(module_mean_lines)d/%(module_max_lines)d) to "
        % stats
        + os.fspath(args.out_dir)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
