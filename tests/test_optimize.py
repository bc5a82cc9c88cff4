"""migrate --optimize and check --optimize (issue 16: the rules of rules/optimize/).

The snapshot pairs of tests/fixtures_optimize/, the calls kept (and why), the CLI's choice of
rules (alone, =all, =ID) and its errors, the reports of what was optimized. That optimized
programs train exactly like the originals is tested by running them under the stand-in
(tests/test_standin.py, mode "optimize", and the apex program)."""

import csv
import json

import pytest
from helpers import REPO, builtin_index, run_cli

from gpu2npu.rewrite.engine import migrate_source

FIXTURES = REPO / "tests" / "fixtures_optimize"
CASES = sorted(p for p in FIXTURES.glob("*.py") if not p.name.endswith(".expected.py"))
PROGRAM = """import torch
from torch import optim
from apex import amp

model = torch.nn.Linear(4, 2).cuda()
sgd = torch.optim.SGD(model.parameters(), lr=0.1)
adamw = optim.AdamW(model.parameters(), foreach=True)
adam = optim.Adam(model.parameters())
model, adam = amp.initialize(model, adam, opt_level="O1")
loader = torch.utils.data.DataLoader(range(8), batch_size=3, shuffle=True)
"""


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_optimized_fixture(case):
    index = builtin_index(optimize=True)
    result = migrate_source(case.read_bytes(), index)
    expected = case.with_name(case.name[:-3] + ".expected.py").read_bytes()
    assert result.new_bytes == expected
    assert migrate_source(expected, index).new_bytes is None  # a second run changes nothing


def test_calls_the_fused_optimizer_cannot_take_are_kept_and_reported():
    result = migrate_source((FIXTURES / "fused_optimizers.py").read_bytes(), builtin_index(optimize=True))
    kept = [(k.line, k.name, k.rule_id, k.works) for k in result.kept]
    assert kept == [
        (17, "torch.optim.Adam", "G2N2002", True),  # foreach=True
        (18, "torch.optim.SGD", "G2N2001", True),  # no lr
        (19, "torch.optim.AdamW", "G2N2003", True),  # **settings
        (20, "torch.optim.Adadelta", "G2N2004", True),  # a sixth positional argument
    ]


def test_without_optimize_no_optimization_rule_is_loaded():
    result = migrate_source((FIXTURES / "fused_optimizers.py").read_bytes(), builtin_index())
    assert b"torch_npu.optim" not in result.new_bytes
    assert not [c for c in result.changes if c.rule.startswith("G2N20")]


def migrated(tmp_path, *options):
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "train.py").write_text(PROGRAM)
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", out, "-v", "2.1.0", "--no-cache", *options)
    return result, out / "proj_msft"


def rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))[1:]


ACCELERATE = (
    "from accelerate import Accelerator\n\n\ndef prepare(model, optimizer):\n"
    "    return Accelerator().prepare(model, optimizer)\n"
)
FREEZES = (
    "def freeze(model):\n    for name, p in model.named_parameters():\n"
    "        if 'prototypes' in name:\n            p.grad = None\n"
)


@pytest.mark.parametrize(
    "name,code,why",
    [
        # DALLE2's trainers hand their optimizers to accelerate, whose zero_grad passes
        # set_to_none=True, which torch_npu's fused optimizers refuse (ValueError at the first step)
        (
            "trainer.py",
            ACCELERATE,
            "or imports accelerate (whose prepared optimizers call zero_grad(set_to_none=True))",
        ),
        # SwAV sets its prototypes' .grad to None for the first iterations: a fused optimizer
        # combines the parameters that have a gradient at its first step, once (never updated)
        (
            "freeze.py",
            FREEZES,
            "or the project sets a .grad to None or to a new tensor (SwAV's frozen prototypes",
        ),
        # improved-diffusion gives its fp16 master parameter a new .grad tensor every step: the
        # fused optimizer kept reading the gradient it combined at its first step (losses diverged
        # from step 2 under the stand-in)
        (
            "fp16_util.py",
            "def model_grads_to_master_grads(model_params, master_params):\n"
            "    master_params[0].grad = _flatten_dense_tensors([p.grad.float() for p in model_params])\n",
            "or to a new tensor (SwAV's frozen prototypes, improved-diffusion's fp16 master gradients)",
        ),
        # torchreid freezes all but the classifier for its first fixbase_epoch epochs: the fused
        # optimizer combined the classifier only, and never trained the backbone once it was opened
        (
            "torchtools.py",
            "def open_specified_layers(model):\n    for p in model.backbone.parameters():\n"
            "        p.requires_grad = False\n",
            "or freezes parameters (requires_grad = False, requires_grad_(False): torchreid's fixbase_epoch)",
        ),
        (
            "frozen.py",
            "def freeze(model):\n    model.backbone.requires_grad_(False)\n",
            "or freezes parameters (requires_grad = False",
        ),
        # tacotron2 clears the gradients with model.zero_grad(): None from torch 2.0, and the fused
        # optimizer keeps stepping with the gradients it combined at its first step
        (
            "clear.py",
            "def clear(model):\n    model.zero_grad()\n",
            "or the project calls a module's zero_grad() (model.zero_grad(), netD.zero_grad())",
        ),
    ],
)
def test_no_fused_optimizer_where_the_project_does_what_they_refuse(tmp_path, name, code, why):
    """Every optimizer call of the project stays, reported with the reason."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / name).write_text(code)
    result, tree = migrated(tmp_path, "--optimize")
    assert result.returncode == 0, result.stderr
    text = (tree / "train.py").read_text()
    assert "sgd = torch.optim.SGD(model.parameters(), lr=0.1)\n" in text
    assert "adam = optim.Adam(model.parameters())\n" in text
    kept = rows(tree / "transplant_result_file" / "unsupported_api.csv")
    optimizers = [row for row in kept if row[-1].startswith("rules:G2N200")]
    assert [(row[1], row[3], row[-1]) for row in optimizers] == [
        ("6", "torch.optim.SGD", "rules:G2N2001"),
        ("7", "torch.optim.AdamW", "rules:G2N2003"),
        ("8", "torch.optim.Adam", "rules:G2N2002"),
    ]
    assert all(why in row[4] for row in optimizers)


def test_a_gradient_compared_with_none_or_cleared_in_place_is_no_refusal(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "check.py").write_text(
        "def unused(p, model, optim_g):\n    optim_g.zero_grad()\n    model.zero_grad(set_to_none=False)\n"
        "    p.grad += 1\n    p.grad.copy_(p.grad * 2)\n    return p.grad == None or p.grad is None\n"
    )
    result, tree = migrated(tmp_path, "--optimize")
    assert result.returncode == 0, result.stderr
    assert (
        "sgd = torch_npu.optim.NpuFusedSGD(model.parameters(), lr=0.1)\n" in (tree / "train.py").read_text()
    )


def test_the_cli_applies_the_safe_optimizations_and_reports_each(tmp_path):
    result, tree = migrated(tmp_path, "--optimize")
    assert result.returncode == 0, result.stderr
    text = (tree / "train.py").read_text()
    assert "sgd = torch_npu.optim.NpuFusedSGD(model.parameters(), lr=0.1)\n" in text
    assert "adamw = optim.AdamW(model.parameters(), foreach=True)\n" in text
    assert "adam = torch_npu.optim.NpuFusedAdam(model.parameters())\n" in text
    assert 'model, adam = amp.initialize(model, adam, opt_level="O1", combine_grad=True)\n' in text
    assert (
        "loader = torch.utils.data.DataLoader(range(8), batch_size=3, shuffle=True)\n" in text
    )  # behaviour: not alone
    reports = tree / "transplant_result_file"
    optimized = [row[:6] for row in rows(reports / "change_list.csv") if row[5].startswith("G2N20")]
    assert optimized == [
        [
            "train.py",
            "6",
            "6",
            "MODIFY",
            "change call torch.optim.SGD to torch_npu.optim.NpuFusedSGD",
            "G2N2001",
        ],
        [
            "train.py",
            "8",
            "8",
            "MODIFY",
            "change call torch.optim.Adam to torch_npu.optim.NpuFusedAdam",
            "G2N2002",
        ],
        ["train.py", "9", "9", "MODIFY", "pass combine_grad=True to apex.amp.initialize", "G2N2020"],
    ]
    kept = [row for row in rows(reports / "unsupported_api.csv") if row[7] == "rules:G2N2003"]
    assert [row[:3] + row[5:6] for row in kept] == [["train.py", "7", "7", "supported_with_limits"]]
    assert kept[0][4].startswith(
        "kept torch.optim.AdamW: the call passes arguments NpuFusedAdamW does not take"
    )


AMP_DOC = (
    "Ascend PyTorch porting and tuning guide, Mixed Precision > Integrating Mixed Precision Module "
    "Into the PyTorch Model"
)
LOADER_DOC = (
    "Ascend PyTorch porting and tuning guide, Model Porting > Single-Server Multi-Device Training "
    "Modification, step 10 (data loader)"
)


def test_optimizations_csv_summary_and_report_json_say_what_each_optimization_is(tmp_path):
    result, tree = migrated(tmp_path, "--optimize=all")
    assert result.returncode == 0, result.stderr
    assert (
        "loader = torch.utils.data.DataLoader(range(8), batch_size=3, shuffle=True, drop_last=True)\n"
        in (tree / "train.py").read_text()
    )
    reports = tree / "transplant_result_file"
    sgd_doc = (
        "torch_npu.optim.NpuFusedSGD(params, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False)"
    )
    adam_doc = (
        "torch_npu.optim.NpuFusedAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, "
        "amsgrad=False)"
    )
    assert rows(reports / "optimizations.csv") == [
        ["train.py", "6", "6", "G2N2001", "fused optimizer", "tolerance",
         "change call torch.optim.SGD to torch_npu.optim.NpuFusedSGD", sgd_doc],
        ["train.py", "8", "8", "G2N2002", "fused optimizer", "tolerance",
         "change call torch.optim.Adam to torch_npu.optim.NpuFusedAdam", adam_doc],
        ["train.py", "9", "9", "G2N2020", "amp", "tolerance",
         "pass combine_grad=True to apex.amp.initialize", AMP_DOC],
        ["train.py", "10", "10", "G2N2030", "data loading", "behaviour",
         "pass drop_last=True to torch.utils.data.DataLoader", LOADER_DOC],
    ]  # fmt: skip
    by_rule = json.loads((reports / "report.json").read_text())["optimizations_by_rule"]
    assert [(r["rule"], r["equivalence"], r["applied"], r["kept"]) for r in by_rule] == [
        ("G2N2001", "tolerance", 1, 0),
        ("G2N2002", "tolerance", 1, 0),
        ("G2N2003", "tolerance", 0, 1),  # AdamW(foreach=True) kept
        ("G2N2020", "tolerance", 1, 0),
        ("G2N2030", "behaviour", 1, 0),
    ]
    table = [line for line in result.stdout.splitlines() if "G2N20" in line and line.count("|") == 7]
    assert [[cell.strip() for cell in line.split("|")[1:6]] for line in table] == [
        ["G2N2001", "fused optimizer", "tolerance", "1", "0"],
        ["G2N2002", "fused optimizer", "tolerance", "1", "0"],
        ["G2N2003", "fused optimizer", "tolerance", "0", "1"],
        ["G2N2020", "amp", "tolerance", "1", "0"],
        ["G2N2030", "data loading", "behaviour", "1", "0"],
    ]
    page = (reports / "report.html").read_text()
    assert '<section id="optimizations">' in page and "<td>G2N2030</td><td>data loading</td>" in page


def test_a_plain_run_writes_no_optimization_report(tmp_path):
    result, tree = migrated(tmp_path)
    assert result.returncode == 0, result.stderr
    reports = tree / "transplant_result_file"
    assert not (reports / "optimizations.csv").exists()
    assert "optimizations_by_rule" not in json.loads((reports / "report.json").read_text())
    assert 'id="optimizations"' not in (reports / "report.html").read_text()
    assert "optimization" not in result.stdout


def test_check_optimize_lists_what_migrate_optimize_would_do(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text(PROGRAM)
    result = run_cli(
        "check", tmp_path / "proj", "-v", "2.1.0", "--no-cache", "--optimize=all", "--format", "json"
    )
    found = json.loads(result.stdout)["findings"]
    optimizations = [(f["line"], f["rule"], f["severity"]) for f in found if f["category"] == "optimization"]
    assert optimizations == [
        (6, "G2N2001", "note"),
        (8, "G2N2002", "note"),
        (9, "G2N2020", "note"),
        (10, "G2N2030", "note"),
    ]
    message = next(f["message"] for f in found if f["rule"] == "G2N2030")
    assert message == (
        "gpu2npu migrate --optimize=all would modify: pass drop_last=True to torch.utils.data.DataLoader "
        f"[data loading, behaviour; {LOADER_DOC}]"
    )
    plain = run_cli("check", tmp_path / "proj", "-v", "2.1.0", "--no-cache", "--format", "json")
    assert not [f for f in json.loads(plain.stdout)["findings"] if f["category"] == "optimization"]


def test_a_from_import_whose_names_all_move_is_no_use_of_apex(tmp_path):
    source = (
        "import torch\n"
        "from apex.normalization import FusedLayerNorm\n"
        "from apex.normalization import FusedLayerNorm, FusedRMSNorm\n"
    )
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "net.py").write_text(source)
    out = tmp_path / "out"
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", out, "-v", "2.1.0", "--optimize")
    assert result.returncode == 0, result.stderr
    unsupported = rows(out / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    assert [row[:4] for row in unsupported] == [["net.py", "3", "3", "apex.normalization"]]


RENAME = "rules:\n  NameRenameRule:\n  - old_name: a.b\n    new_name: c.d\n    optimization: {}\n"
KEYWORD_SET = (
    "rules:\n  KeywordSetRule:\n  - func_name: a.load\n    keyword: device\n    value: '\"npu\"'\n"
    "    parameters: [data, device]\n    only_with: [pin]\n    tip: pass device\n"
)
OPTIMIZE_CALL = (
    "rules:\n  OptimizeCallRule:\n  - old_name: a.Old\n    new_name: b.New\n    positional: 1\n"
    "    keywords: [params, lr]\n    tip: keep\n    {}\n"
)
CALL_MAPPING = (
    "rules:\n  CallMappingRule:\n  - func_names: [a.f]\n    new_name: b.g\n    parameters: [x, y]\n"
    "    tip: keep\n    {}\n"
)


@pytest.mark.parametrize(
    "rule_file,message",
    [
        (
            RENAME.format("{category: c, equivalence: e}"),
            "must have exactly 'category', 'equivalence' and 'doc'",
        ),
        (
            RENAME.format("{category: c, equivalence: faster, doc: d}"),
            "must be one of exact, tolerance, behaviour",
        ),
        (
            RENAME.format("{category: '', equivalence: exact, doc: d}"),
            "'category', 'equivalence' and 'doc' must be text",
        ),
        (
            KEYWORD_SET,
            "'parameters' must name 'keyword' and every parameter of 'not_with', 'not_none', 'only_with' "
            "and 'only_on'",
        ),
        (
            OPTIMIZE_CALL.format("defaults: {eps: '1e-8'}"),
            "'needs' and 'defaults' must name parameters of 'keywords'",
        ),
        (
            OPTIMIZE_CALL.format("fixed: {lr: '0.1'}"),
            "'fixed' names parameters new_name lacks, not parameters of 'keywords'",
        ),
        (
            OPTIMIZE_CALL.format("fixed: {mode: 'x ='}"),
            "the values of 'fixed' and 'defaults' must be Python expressions",
        ),
        (CALL_MAPPING.format("arguments: ['{x}', '{z} + 1']"), "the arguments read unknown parameters: z"),
        (CALL_MAPPING.format("arguments: ['{x} +']"), "an argument must be a Python expression"),
        (
            CALL_MAPPING.format("arguments: ['{x}', {keyword: k, value: '{y}', when: y}]"),
            "an argument mapping takes only else, if, if_none, keyword, value",
        ),
        (CALL_MAPPING.format("arguments: ['{x}', [1]]"), "each of 'arguments' is a template (text)"),
        (
            CALL_MAPPING.format("arguments: ['{x}']\n    defaults: {'y z': '1'}"),
            "'parameters', 'unmapped' and the keys of 'defaults' must be parameter names",
        ),
        (CALL_MAPPING.format("arguments: ['{x}']\n    item: -1"), "'item' must be an index"),
        (
            CALL_MAPPING.format("arguments: ['{x}']\n    unmapped: [y]"),
            "'unmapped' must name parameters that have a default in 'defaults'",
        ),
    ],
)
def test_a_wrong_optimization_rule_is_a_rule_file_error(tmp_path, rule_file, message):
    rules = tmp_path / "mine.yaml"
    rules.write_text(rule_file)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text(PROGRAM)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-r", rules)
    assert result.returncode == 2
    assert message in result.stderr and "mine.yaml" in result.stderr, result.stderr


def test_keyword_set_keeps_a_call_that_may_pass_the_keyword_unseen():
    result = migrate_source((FIXTURES / "amp_and_loading.py").read_bytes(), builtin_index(optimize=True))
    assert [(k.line, k.name, k.rule_id, k.works) for k in result.kept] == [
        (22, "torch.utils.data.DataLoader", "G2N2030", True),  # **{...} may hold drop_last,
        (22, "torch.utils.data.DataLoader", "G2N2031", True),  # or pin_memory and its device
    ]


def test_optimize_by_id_applies_only_those_rules(tmp_path):
    result, tree = migrated(tmp_path, "--optimize=G2N2002")
    assert result.returncode == 0, result.stderr
    text = (tree / "train.py").read_text()
    assert "sgd = torch.optim.SGD(model.parameters(), lr=0.1)\n" in text
    assert "adam = torch_npu.optim.NpuFusedAdam(model.parameters())\n" in text


def test_without_optimize_the_tree_is_the_plain_migration(tmp_path):
    plain, plain_tree = migrated(tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "NpuFused" not in (plain_tree / "train.py").read_text()
    assert "sgd = torch.optim.SGD(model.parameters(), lr=0.1)\n" in (plain_tree / "train.py").read_text()


@pytest.mark.parametrize(
    "options,message",
    [
        (["--optimize=G2N9999"], "gpu2npu: error: --optimize names unknown optimization(s) G2N9999; "),
        (
            ["--optimize", "--target", "portable"],
            "gpu2npu: error: --optimize is for --target npu, not portable",
        ),
    ],
)
def test_a_wrong_optimize_choice_is_one_clear_error(tmp_path, options, message):
    result, tree = migrated(tmp_path, *options)
    assert result.returncode == 2
    assert result.stderr.startswith(message), result.stderr
    assert not tree.exists()


@pytest.mark.parametrize(
    "option,reported", [("--optimize", [9, 13, 15, 16, 17, 18, 20, 21, 22]), ("--optimize=all", [20, 21, 22])]
)
def test_float64_made_float32_is_no_longer_reported_as_float64(tmp_path, option, reported):
    """The reports are decided on the original code: a float64 that G2N2080/G2N2081 (=all) made
    float32 is gone from the migrated file, so unsupported_api.csv lists only the float64 kept
    (on the CPU, on a device held in a variable, a cast with no device)."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "dtype.py").write_bytes((FIXTURES / "dtype.py").read_bytes())
    out = tmp_path / "out"
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", out, "-v", "2.1.0", "--no-cache", option)
    assert result.returncode == 0, result.stderr
    unsupported = rows(out / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    assert [int(row[1]) for row in unsupported if row[7] == "rules:M054"] == reported
    optimized = rows(out / "proj_msft" / "transplant_result_file" / "optimizations.csv")
    assert [(int(row[1]), row[3]) for row in optimized] == (
        [(9, "G2N2080"), (13, "G2N2080"), (14, "G2N2080"), (15, "G2N2080"), (16, "G2N2080")]
        + [(17, "G2N2081"), (18, "G2N2081")]
        if option == "--optimize=all"
        else []
    )


@pytest.mark.parametrize("options,reported", [((), [4, 5, 7]), (("--optimize",), [])])
def test_tf32_switches_set_are_reported_unless_optimize_moves_them_to_the_hf32_ones(
    tmp_path, options, reported
):
    """stylegan2-ada turns TF32 off for precision; on the NPU those switches do nothing and
    convolutions run in HF32 (on by default): the plain migration reports each switch set or
    read (G2N093), --optimize sets the NPU's switches instead and reports none."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "loop.py").write_text(
        "import torch\n\ndef setup(allow_tf32=False):\n"
        "    torch.backends.cuda.matmul.allow_tf32 = allow_tf32\n"
        "    torch.backends.cudnn.allow_tf32 = allow_tf32\n"
        "    torch.backends.cudnn.benchmark = True\n"
        "    return torch.backends.cudnn.allow_tf32\n"
    )
    out = tmp_path / "out"
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", out, "--no-cache", *options)
    assert result.returncode == 0, result.stderr
    unsupported = rows(out / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    assert [int(row[1]) for row in unsupported if row[7] == "rules:G2N093"] == reported
    assert all(row[5] == "supported_with_limits" for row in unsupported)


def test_flash_attention_rows_follow_what_the_rewrite_did(tmp_path):
    """G2N2040: a call kept is an unsupported row with the rule's tip; an import the rewrite took
    out leaves unsupported_api.csv (its G2N056 row named the package), one it kept stays."""
    (tmp_path / "proj").mkdir()
    for name in ("attention.py", "attention_imports.py"):
        (tmp_path / "proj" / name).write_bytes((FIXTURES / name).read_bytes())

    def rows(*options):
        out = tmp_path / f"out{len(options)}"
        result = run_cli("migrate", "-i", tmp_path / "proj", "-o", out, "-v", "2.1.0", *options)
        assert result.returncode == 0, result.stderr
        with open(out / "proj_msft" / "transplant_result_file" / "unsupported_api.csv") as f:
            return [(r["File"], r["Start Line"], r["OP"], r["Source"]) for r in csv.DictReader(f)]

    package = [("attention.py", "6", "flash_attn", "rules:G2N056")]
    interface = "flash_attn.flash_attn_interface"
    packed = ("attention.py", "8", "flash_attn", "rules:G2N056")  # one of its two names stays
    assert rows() == [
        ("attention.py", "3", "flash_attn", "rules:G2N056"),
        *package,
        ("attention.py", "7", interface, "rules:G2N056"),
        packed,
        ("attention_imports.py", "5", "flash_attn", "rules:G2N056"),
        ("attention_imports.py", "9", interface, "rules:G2N056"),
        ("attention_imports.py", "10", "flash_attn", "rules:G2N056"),
    ]
    kept = [
        ("attention.py", line, "flash_attn.flash_attn_func", "rules:G2N2040")
        for line in "46 47 48 49".split()
    ]
    assert rows("--optimize") == [
        *package,
        ("attention.py", "7", interface, "rules:G2N056"),
        packed,
        *kept,
        ("attention.py", "53", interface + ".flash_attn_func", "rules:G2N2040"),
        ("attention.py", "55", "flash_attn.flash_attn_qkvpacked_func", "rules:G2N2041"),
        ("attention_imports.py", "9", interface, "rules:G2N056"),
    ]
