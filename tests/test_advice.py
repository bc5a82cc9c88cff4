"""Precision and performance advice (gpu2npu.apis.advice) on hand-made call sites."""

import json
from pathlib import Path

import pytest
import yaml

from gpu2npu.apis.advice import (
    ADVICE_FILE,
    AdviceRow,
    load_advice,
    parse_advice,
    performance_rows,
    precision_rows,
    project_rows,
)
from gpu2npu.apis.callsites import CallSite
from gpu2npu.errors import RuleFileError

REPO = Path(__file__).resolve().parent.parent
DATALOADER = "torch.utils.data.DataLoader"
DDP = "torch.nn.parallel.DistributedDataParallel"


def site(api="", *args, line=1, file="train.py", kind="call", method="", **keywords):
    return CallSite(file, line, line, api, kind, method, tuple(args), tuple(keywords.items()))


def to_call(*args, **keywords):
    """x.to(...) with an untyped receiver."""
    return site("", *args, method="to", **keywords)


def parameter_tip(target, parameter):
    data = load_advice()
    checks = data.api_checks.get(target, ()) + data.method_checks.get(target, ())
    return next(check.advice for check in checks if check.parameter == parameter)


def configuration_rows():
    return [AdviceRow("", 0, 0, name, advice) for name, advice in load_advice().configuration]


# -- the data file ------------------------------------------------------------------------------


def test_advice_file_loads_and_every_entry_has_advice():
    raw = yaml.safe_load(ADVICE_FILE.read_text(encoding="utf-8"))
    assert set(raw) == {"precision", "performance", "parameters", "suggested_use", "configuration"}
    for section, entries in raw.items():
        assert entries, section
        for entry in entries:
            assert isinstance(entry.get("advice"), str) and entry["advice"].strip(), (section, entry)
            assert "\n" not in entry["advice"].strip(), (section, entry)  # one CSV line per tip
    data = load_advice()
    assert len(data.configuration) == 3 and data.suggested_use


def test_advice_covers_every_fact_of_the_kb():
    facts = json.loads((REPO / "kb" / "perf_precision_advice.json").read_text(encoding="utf-8"))
    data = load_advice()
    groups = list(data.api_checks.values()) + list(data.method_checks.values())
    checks = {(check.target, check.parameter): check for group in groups for check in group}
    for fact in facts["precision"]:
        assert fact["api"] in data.precision
    for fact in facts["doc_limits_worth_reporting"]:
        first, *others = [name.strip() for name in fact["api"].split("/")]
        prefix = first.rsplit(".", 1)[0]  # 'torch.cuda.current_stream / default_stream'
        for api in [first] + [name if "." in name else f"{prefix}.{name}" for name in others]:
            assert api in data.precision, api
    for fact in facts["performance_api"]:
        # set_detect_anomaly is a parameter check, so that set_detect_anomaly(False) gives no row
        assert fact["api"] in data.performance or (fact["api"], "mode") in checks, fact["api"]
        if fact["target"]:
            assert fact["target"].rsplit(".", 1)[-1] in data.performance[fact["api"]]
    for fact in facts["performance_parameters"]:
        target = "to" if fact["api"].endswith(".to") else fact["api"]
        check = checks[(target, fact["parameter"])]
        assert check.position + 1 in fact["positions"]  # msprobe counts positions from 1
        wanted = (fact["recommended"], True) if fact["recommended"] else (fact["avoid"], False)
        assert (check.value, check.must_equal) == wanted
        assert check.default == fact["default"]
    assert [(s.method, list(s.when_used)) for s in data.suggested_use] == [
        (fact["suggest"].split("(")[0], fact["when_used"]) for fact in facts["performance_usage"]
    ]
    assert [name for name, _ in data.configuration] == [fact["name"] for fact in facts["performance_config"]]


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "parameters:\n  - api: a.B\n    parameter: p\n    position: 0\n"
            "    expected: True\n    advice: x\n",
            r"parameters\[0\]\.expected: must be a non-empty \(quoted\) string",
        ),
        (
            "performance:\n  - api: a.B\n    advice: x\n"
            "    when: {keyword: fused, is: true, default: 'None'}\n",
            r"performance\[0\]\.when\.is: must be a list of \(quoted\) source texts",
        ),
    ],
)
def test_a_broken_advice_file_names_the_entry(tmp_path, text, message):
    path = tmp_path / "advice.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RuleFileError, match=message):
        parse_advice(path)


# -- parameter checks -------------------------------------------------------------------------


def test_dataloader_without_pin_memory_and_with_zero_workers_gives_two_rows():
    calls = [site(DATALOADER, "ds", line=7, batch_size="8", num_workers="0")]
    assert performance_rows(calls) == sorted(
        [
            AdviceRow("train.py", 7, 7, DATALOADER, parameter_tip(DATALOADER, "pin_memory")),
            AdviceRow("train.py", 7, 7, DATALOADER, parameter_tip(DATALOADER, "num_workers")),
        ],
        key=lambda row: row.tip,
    )


@pytest.mark.parametrize(
    "args,keywords",
    [
        (("ds", "8", "True", "None", "None", "4"), {"pin_memory": "True"}),
        (("ds", "8", "True", "None", "None", "4", "None", "True"), {}),
        (("ds",), {"num_workers": "args.workers", "pin_memory": " True "}),
        (("ds", "8"), {"**": "loader_kwargs"}),  # the values may be inside **kwargs
        (("ds", "*loader_args"), {}),  # the positions after *args are unknown
        (("", "", "", "", "", ""), {"pin_memory": ""}),  # texts the collector did not keep
    ],
)
def test_dataloader_with_good_or_unknown_arguments_gives_no_rows(args, keywords):
    assert performance_rows([site(DATALOADER, *args, **keywords)]) == []


def test_to_device_without_non_blocking_gives_a_row():
    tip = parameter_tip("to", "non_blocking")
    calls = [
        to_call("device", line=3),
        to_call(device="f'npu:{rank}'", line=4),
        to_call("'npu:0'", "torch.float16", "False", line=5),
    ]
    assert performance_rows(calls) == [
        AdviceRow("train.py", 3, 3, "to", tip),
        AdviceRow("train.py", 4, 4, "to", tip),
        AdviceRow("train.py", 5, 5, "to", tip),
    ]


def test_a_typed_to_call_matches_by_its_last_name():
    calls = [site("torch.nn.Linear.to", "device", line=9)]
    tip = parameter_tip("to", "non_blocking")
    assert performance_rows(calls) == [AdviceRow("train.py", 9, 9, "torch.nn.Linear.to", tip)]


@pytest.mark.parametrize(
    "call",
    [
        to_call("device", non_blocking="True"),
        to_call("device", "None", "True"),
        to_call("torch.float16"),
        to_call("th.half", non_blocking="False"),
        to_call("x.dtype"),
        to_call("torch.get_default_dtype()"),
        to_call(dtype="torch.bfloat16"),
        to_call("'cpu'"),  # a copy to the host must block before its result is read
        to_call('torch.device("cpu")'),
        to_call(device="'cpu'"),
        to_call("*args"),
        to_call(),
    ],
)
def test_to_with_non_blocking_or_as_a_cast_gives_no_row(call):
    assert performance_rows([call]) == []


def test_ddp_without_bucket_cap_mb_gives_a_row():
    calls = [
        site(DDP, "model", line=20, device_ids="[rank]"),
        site(DDP, "model", line=21, bucket_cap_mb="500"),
    ]
    assert performance_rows(calls) == [
        AdviceRow("train.py", 20, 20, DDP, parameter_tip(DDP, "bucket_cap_mb"))
    ]


def test_set_detect_anomaly_gives_a_row_unless_it_is_switched_off():
    api = "torch.autograd.set_detect_anomaly"
    calls = [site(api, "True", line=2), site(api, "False", line=3), site(api, mode="False", line=4)]
    assert performance_rows(calls) == [AdviceRow("train.py", 2, 2, api, parameter_tip(api, "mode"))]


# -- API advice -------------------------------------------------------------------------------


def test_adam_gets_the_fused_optimizer_row():
    rows = performance_rows([site("torch.optim.Adam", "model.parameters()", line=30, lr="1e-3")])
    assert rows == [
        AdviceRow("train.py", 30, 30, "torch.optim.Adam", load_advice().performance["torch.optim.Adam"])
    ]
    assert "torch_npu.optim.NpuFusedAdam" in rows[0].tip and "apex.optimizers.NpuFusedAdam" in rows[0].tip


@pytest.mark.parametrize(
    "keywords, rows",
    [
        ({}, 1),
        ({"fused": "False"}, 1),
        ({"fused": "True"}, 0),
        ({"fused": "use_fused"}, 0),
        ({"**": "extra"}, 0),
    ],
)
def test_adamw_gets_the_fused_optimizer_row_only_while_it_is_not_fused(keywords, rows):
    """fused=True is torch's own fused kernel, which the NPU has; an unknown value gives no row."""
    api = "torch.optim.AdamW"
    assert performance_rows([site(api, "params", **keywords)]) == rows * [
        AdviceRow("train.py", 1, 1, api, load_advice().performance[api])
    ]


@pytest.mark.parametrize(
    "backend, rows", [(None, 0), ('"inductor"', 0), ("'cudagraphs'", 1), ('"cudagraphs"', 1)]
)
def test_compile_gets_the_npugraphs_row_only_with_the_cudagraphs_backend(backend, rows):
    keywords = {"backend": backend} if backend else {}
    tip = load_advice().precision["torch.compile"]
    assert precision_rows([site("torch.compile", "model", **keywords)]) == rows * [
        AdviceRow("train.py", 1, 1, "torch.compile", tip)
    ]


def test_a_class_deriving_from_linear_gets_the_linear_advice():
    calls = [
        site("torch.nn.Linear", kind="base", line=5, file="model.py"),
        site("torch.nn.Module", kind="base"),
    ]
    tip = load_advice().performance["torch.nn.Linear"]
    assert performance_rows(calls) == [AdviceRow("model.py", 5, 5, "torch.nn.Linear", tip)]
    assert "torch_npu.npu_linear" in tip


def test_imports_and_methods_of_typed_objects_get_no_api_advice():
    calls = [site("torch.optim.Adam", kind="import"), site("torch.optim.Adam.step"), site(method="matmul")]
    assert performance_rows(calls) == [] and precision_rows(calls) == []


def test_precision_rows_for_matmul():
    calls = [
        site("torch.matmul", "a", "b", line=12),
        site("torch.Tensor.matmul", "a", line=11),
        site("torch.mm", "a"),
    ]
    tips = load_advice().precision
    assert precision_rows(calls) == [
        AdviceRow("train.py", 11, 11, "torch.Tensor.matmul", tips["torch.Tensor.matmul"]),
        AdviceRow("train.py", 12, 12, "torch.matmul", tips["torch.matmul"]),
    ]
    assert performance_rows(calls) == []


def test_rows_are_sorted_by_file_line_op_and_tip():
    calls = [
        site("torch.baddbmm", line=9, file="b.py"),
        site("torch.nn.Embedding", line=9, file="a.py"),
        site("torch.reshape", line=2, file="b.py"),
        site("torch.baddbmm", line=1, file="b.py"),
    ]
    assert [(row.file, row.start_line, row.op) for row in precision_rows(calls)] == [
        ("a.py", 9, "torch.nn.Embedding"),
        ("b.py", 1, "torch.baddbmm"),
        ("b.py", 2, "torch.reshape"),
        ("b.py", 9, "torch.baddbmm"),
    ]


# -- project rows -----------------------------------------------------------------------------


def test_project_rows_suggest_no_sync_when_ddp_is_used_without_it():
    calls = [site(DDP, "model", file="train.py"), site("", method="backward")]
    no_sync = load_advice().suggested_use[0]
    assert project_rows(calls) == configuration_rows() + [AdviceRow("", 0, 0, "no_sync", no_sync.advice)]
    assert [row.op for row in configuration_rows()] == [
        "torch_npu.npu.set_compile_mode",
        "TASK_QUEUE_ENABLE",
        "HCCL_OP_BASE_FFTS_MODE_ENABLE",
    ]


@pytest.mark.parametrize("no_sync", [site("", method="no_sync"), site(f"{DDP}.no_sync")])
def test_project_rows_are_configuration_only_when_no_sync_is_called(no_sync):
    assert project_rows([site(DDP, "model"), no_sync]) == configuration_rows()


def test_project_rows_without_ddp_are_configuration_only():
    assert project_rows([site("torch.optim.SGD"), site(DDP, kind="import")]) == configuration_rows()


def test_a_no_sync_passed_on_uncalled_counts_as_used(tmp_path):
    """lightweight-gan enters ``ddp.no_sync`` through ``map(lambda ddp: ddp.no_sync, ddps)`` and
    calls it later: the project uses no_sync, yet the run advised it. A reference to the method
    counts as its use; a project that names it nowhere still gets the advice."""
    from helpers import rows, run_cli, write

    passed_on = """import torch
from torch.nn.parallel import DistributedDataParallel as DDP

def contexts(ddps):
    return [ctx() for ctx in map(lambda ddp: ddp.no_sync, ddps)]

model = DDP(torch.nn.Linear(2, 2))
"""
    for name, source in (("passed_on", passed_on), ("never", passed_on.replace("ddp.no_sync", "ddp"))):
        write(tmp_path / name / "train.py", source)
        assert run_cli("migrate", "-i", tmp_path / name, "-o", tmp_path / "out").returncode == 0
    advised = {
        name: [
            row[:4]
            for row in rows(
                tmp_path / "out" / f"{name}_msft/transplant_result_file/api_performance_advice.csv"
            )
            if row[3] == "no_sync"
        ]
        for name in ("passed_on", "never")
    }
    assert advised == {"passed_on": [], "never": [["NA", "NA", "NA", "no_sync"]]}
