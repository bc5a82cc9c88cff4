"""The yaml, json and toml file kinds: every edited fixture still parses with its own parser and
holds the same data but for the rewritten values; YAML read by libyaml and by ruamel gives the
same settings; hostile input (deep nesting, alias bombs, bytes that are not UTF-8, comments in
JSON, duplicate keys) is skipped with a reason or migrated, never raises; large files without
a trigger are never parsed; the rule kinds' checks. The fixture pairs are in
tests/fixtures_files/{yaml,json,toml}/."""

import json
import time
from pathlib import Path

import pytest
import tomlkit
import yaml
from helpers import builtin_index, index_with, migrate_file, write

from gpu2npu.errors import RuleFileError
from gpu2npu.filekinds import classify, json_config, toml_config, yaml_config
from gpu2npu.filekinds._settings import triggered
from gpu2npu.rules.kinds.config_report import reports_for

try:
    import tomllib
except ImportError:  # Python < 3.11: tomlkit's reading of the data
    tomllib = None

FIXTURES = Path(__file__).resolve().parent / "fixtures_files"
PAIRS = sorted(path for kind in ("yaml", "json", "toml") for path in (FIXTURES / kind).glob("*/after/*"))
RENAMES = {"cuda": "npu", "nccl": "hccl"}
ENV_RENAMES = {
    "CUDA_VISIBLE_DEVICES": "ASCEND_RT_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING": "ASCEND_LAUNCH_BLOCKING",
    "PYTORCH_CUDA_ALLOC_CONF": "PYTORCH_NPU_ALLOC_CONF",
    "NCCL_ASYNC_ERROR_HANDLING": "HCCL_ASYNC_ERROR_HANDLING",
}


def parse(kind: str, data: bytes):
    if kind == "yaml":
        return list(yaml.safe_load_all(data.decode("utf-8")))
    if kind == "json":
        return json.loads(data)
    text = data.decode("utf-8")
    return tomllib.loads(text) if tomllib is not None else tomlkit.parse(text).unwrap()


def rewritten(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` with a device/backend or an environment variable renamed."""
    for before, after in [*RENAMES.items(), *ENV_RENAMES.items()]:
        if old.startswith(before) and new == after + old[len(before) :]:
            return True
    return False


def assert_same_but_rewritten(old, new, path="") -> int:
    """The two trees are equal but for rewritten strings (values or keys); how many differ."""
    if isinstance(old, dict):
        assert isinstance(new, dict) and len(old) == len(new), path
        changed = 0
        for (old_key, old_value), (new_key, new_value) in zip(old.items(), new.items()):
            if old_key != new_key:
                assert rewritten(old_key, new_key), f"{path}: key {old_key} -> {new_key}"
                changed += 1
            changed += assert_same_but_rewritten(old_value, new_value, f"{path}.{old_key}")
        return changed
    if isinstance(old, list):
        assert isinstance(new, list) and len(old) == len(new), path
        return sum(assert_same_but_rewritten(a, b, f"{path}[{i}]") for i, (a, b) in enumerate(zip(old, new)))
    if old != new:
        assert isinstance(old, str) and rewritten(old, new), f"{path}: {old!r} -> {new!r}"
        return 1
    assert type(old) is type(new), path
    return 0


@pytest.mark.parametrize("after", PAIRS, ids=[f"{p.parents[2].name}/{p.parents[1].name}" for p in PAIRS])
def test_an_edited_config_parses_to_the_same_data_but_the_rewritten_values(after):
    kind = after.parents[2].name
    before = after.parents[1] / "before" / after.name
    changed = assert_same_but_rewritten(parse(kind, before.read_bytes()), parse(kind, after.read_bytes()))
    assert changed >= len(migrate_file(after.name, before.read_bytes()).changes) > 0


def test_toml_edits_are_what_tomlkit_writes_for_the_new_values():
    before = (FIXTURES / "toml/basic/before/config.toml").read_text()
    document = tomlkit.parse(before)
    trainer = document["trainer"]
    trainer["device"] = tomlkit.string("npu:0")
    trainer["dist"]["backend"] = tomlkit.string("hccl", literal=True)
    trainer["loader"]["map_location"] = tomlkit.string("npu")
    trainer["devices"][0] = tomlkit.string("npu:0")
    trainer["devices"][1] = tomlkit.string("npu:1", literal=True)
    document["runs"][0]["device"] = tomlkit.string("npu:${local_rank}")
    trainer["eval"]["device"] = tomlkit.string("npu", multiline=True)
    assert tomlkit.dumps(document) == (FIXTURES / "toml/basic/after/config.toml").read_text()


def test_toml_settings_are_located_in_the_text():
    text = (FIXTURES / "toml/basic/before/config.toml").read_text()
    found = sorted((s.span, text[s.span[0] : s.span[1]]) for s in toml_config.read_settings(text))
    assert [value for _, value in found] == [
        *["runs on cuda", "cuda:0", "nccl", '{ map_location = "cuda", workers = 4 }', "cuda", "4"],
        *["[\"cuda:0\", 'cuda:1']", "cuda:0", "cuda:1", "a", "cuda:${local_rank}", "b", "cpu", "cuda"],
    ]


@pytest.mark.parametrize(
    "path", sorted((FIXTURES / "yaml").glob("*/before/*")), ids=lambda p: p.parents[1].name
)
def test_libyaml_and_ruamel_read_the_same_settings(path):
    text = path.read_bytes().decode("utf-8", "replace")
    try:
        expected = yaml_config.read_settings(text, libyaml=False)
    except yaml_config.InvalidConfig:
        with pytest.raises(yaml_config.InvalidConfig):
            yaml_config.read_settings(text, libyaml=True)
        return
    assert yaml_config.read_settings(text, libyaml=True) == expected


def test_yaml_read_by_ruamel_is_migrated_alike(monkeypatch):
    data = (FIXTURES / "yaml/hydra_flow/before/train.yml").read_bytes()
    expected = migrate_file("train.yml", data)
    monkeypatch.setattr(yaml_config, "LIBYAML", False)
    assert migrate_file("train.yml", data) == expected


# --- exact results --------------------------------------------------------------------------


def migrated(name: str, text: str, **options) -> str:
    new = migrate_file(name, text.encode("utf-8"), **options).new_bytes
    return text if new is None else new.decode("utf-8")


@pytest.mark.parametrize(
    "name,text,expected",
    [
        ("a.yaml", "device: &d cuda  # anchored\nother: *d\n", "device: &d npu  # anchored\nother: *d\n"),
        ("a.yaml", "device: !!str cuda\n", "device: !!str npu\n"),
        ("a.yaml", "trainer.device: cuda:1\n", "trainer.device: npu:1\n"),
        ("a.yaml", "Device-Type: cuda\n", "Device-Type: npu\n"),
        ("a.yaml", "device: [cuda:0, {device: cuda}]\n", "device: [npu:0, {device: npu}]\n"),
        ("a.yaml", "? device\n: cuda\n", "? device\n: npu\n"),
        ("a.yaml", "device:\n  - cuda:0\n  - cuda:1\n", "device:\n  - npu:0\n  - npu:1\n"),
        ("a.yaml", "é: 'ü'\ndevice: 'cuda'\n", "é: 'ü'\ndevice: 'npu'\n"),
        ("a.json", '{"é": "ü", "device": "cuda"}', '{"é": "ü", "device": "npu"}'),
        ("a.toml", '"é" = "ü"\ndevice = "cuda"\n', '"é" = "ü"\ndevice = "npu"\n'),
        ("a.toml", 'trainer = {dist = {backend = "nccl"}}\n', 'trainer = {dist = {backend = "hccl"}}\n'),
        ("a.toml", '[env]\nCUDA_VISIBLE_DEVICES = "0"\n', '[env]\nCUDA_VISIBLE_DEVICES = "0"\n'),
        # OLMo's train.py compares model.init_device with 'cuda', which the code migration renames
        ("a.yaml", "model:\n  init_device: cuda\n", "model:\n  init_device: npu\n"),
    ],
)
def test_exact_results(name, text, expected):
    assert migrated(name, text) == expected


@pytest.mark.parametrize(
    "name,text",
    [
        ("a.yaml", "device: 0\nbackend: 1\n"),  # numbers: not device strings
        ("a.yaml", "device: true\n"),
        ("a.yaml", "device: cudagraphs\n"),
        ("a.yaml", "cuda: device\nnccl: backend\n"),  # keys are not values
        ("a.yaml", "devices: [0, 1]\nname: cuda\n"),
        ("a.json", '{"device": 0, "backend": ["gloo"], "name": "cuda"}'),
        ("a.toml", "device = 0\nbackend = true\n"),
    ],
)
def test_values_that_are_no_device_strings_are_kept(name, text):
    outcome = migrate_file(name, text.encode())
    assert (outcome.new_bytes, outcome.changes, outcome.skipped) == (None, [], "")


def test_env_var_renames_follow_the_target_version():
    text = "env:\n  NCCL_BLOCKING_WAIT: '1'\n"
    assert migrated("c.yaml", text, version="2.1.0") == "env:\n  HCCL_BLOCKING_WAIT: '1'\n"
    assert migrated("c.yaml", text, version="2.8.0") == "env:\n  TORCH_HCCL_BLOCKING_WAIT: '1'\n"


def test_a_disabled_rule_changes_nothing():
    text = "device: cuda\nbackend: nccl\n"
    index = index_with(disabled=["G2N830"])
    assert migrated("c.yaml", text, index=index) == "device: cuda\nbackend: hccl\n"


HYDRA_TRAINERS = """trainer:
  max_epochs: 2
  accelerator: cuda
  _target_: training.trainer.Trainer
lightning:
  _target_: lightning.pytorch.Trainer
  accelerator: cuda
plain:
  accelerator: cuda
nested:
  _target_: training.trainer.Trainer
  inner: {accelerator: cuda}
"""


def test_an_accelerator_is_renamed_where_hydra_builds_the_projects_own_trainer():
    """sam2's ``trainer: {_target_: training.trainer.Trainer, accelerator: cuda}``: the project's
    trainer compares the value with 'cuda', which its migrated code names 'npu'. Lightning's
    accelerator (its class, or no _target_) keeps its value and its row; a mapping inside the
    built one is not built by that class. The portable tree cannot rename it: a row says so."""
    outcome = migrate_file("conf.yaml", HYDRA_TRAINERS.encode())
    assert outcome.new_bytes.decode() == HYDRA_TRAINERS.replace(
        "  accelerator: cuda\n  _target_", "  accelerator: npu\n  _target_"
    )
    assert [(c.start_line, c.message, c.rule) for c in outcome.changes] == [
        (3, "change accelerator cuda to npu", "G2N845")
    ]
    assert [(r.line, r.subject, r.rule) for r in outcome.reported] == [
        (7, "accelerator: cuda", "G2N832"),
        (9, "accelerator: cuda", "G2N832"),
        (12, "accelerator: cuda", "G2N832"),
    ]
    portable = migrate_file("conf.yaml", HYDRA_TRAINERS.encode(), index=builtin_index(target="portable"))
    assert portable.new_bytes is None
    assert [(r.line, r.rule) for r in portable.reported] == [
        (3, "G2N846"), (7, "G2N832"), (9, "G2N832"), (12, "G2N832")
    ]  # fmt: skip


def test_the_portable_tree_keeps_an_nccl_backend_of_a_config_and_says_what_to_do():
    """hifi-gan's config_v1.json: init_process_group(backend=h.dist_config['dist_backend']). The
    npu target writes hccl; the portable tree keeps the value, which stops an NPU run, with a row."""
    config = b'{\n  "dist_config": {\n    "dist_backend": "nccl",\n    "world_size": 1\n  }\n}\n'
    full = migrate_file("config_v1.json", config)
    assert full.new_bytes == config.replace(b'"nccl"', b'"hccl"')
    assert full.reported == []
    portable = migrate_file("config_v1.json", config, index=builtin_index(target="portable"))
    assert portable.new_bytes is None
    assert [(r.line, r.subject, r.rule, r.category) for r in portable.reported] == [
        (3, "dist_backend: nccl", "G2N177", "limited")
    ]
    assert "give hccl here there (gloo on the CPU)" in portable.reported[0].tip


def test_a_report_names_the_key_line_and_its_last_line():
    outcome = migrate_file("c.yaml", b"trainer:\n  gpu_ids:\n    - 0\n    - 1\n  x: 1\n")
    assert [(r.line, r.end_line, r.subject, r.rule) for r in outcome.reported] == [
        (2, 4, "gpu_ids", "G2N836")
    ]


def test_a_tokenizers_vocabulary_is_no_config():
    """GLM's gpt2-vocab.json maps "GPU" to 33346: a token's id, not a card to select."""
    vocabulary = {f"token{n}": n for n in range(1200)} | {"GPU": 33346, "gpus": 5, "merges": "a b"}
    outcome = migrate_file("gpt2-vocab.json", json.dumps(vocabulary).encode())
    assert (outcome.new_bytes, outcome.reported) == (None, [])
    config = migrate_file("train.json", json.dumps({"gpu": 0, "lr": 0.1}).encode())
    assert [(r.subject, r.rule) for r in config.reported] == [("gpu: 0", "G2N836")]


@pytest.mark.parametrize(
    "name,data,line,end_line",
    [
        ("c.yaml", b'device: "cu\\\n  da"\nbackend: nccl\n', 1, 2),  # an escaped line break
        ("c.yaml", b'device: "cu\\x64a"\nbackend: nccl\n', 1, 1),
        ("c.json", b'{"device": "cu\\u0064a", "backend": "nccl"}', 1, 1),
        ("c.toml", b'device = "cu\\u0064a"\nbackend = "nccl"\n', 1, 1),
        ("c.toml", b'device = """\\\n  cuda"""\nbackend = "nccl"\n', 1, 2),
    ],
)
def test_a_value_not_written_as_it_reads_is_reported_not_edited(name, data, line, end_line):
    outcome = migrate_file(name, data)  # (the file has a trigger: the byte search sees no escaped value)
    assert outcome.new_bytes == data.replace(b"nccl", b"hccl")
    tip = "change it to npu by hand (written with escapes or as a block: left as it is)"
    assert [(r.line, r.end_line, r.subject, r.tip, r.rule) for r in outcome.reported] == [
        (line, end_line, "device: cuda", tip, "G2N830")
    ]


@pytest.mark.parametrize(
    "key,text,is_list,expected",
    [
        ("trainer.accelerator", "GPU", False, ["G2N832"]),
        ("accelerator", "npu", False, []),
        ("gpu_ids", "", True, ["G2N836"]),
        ("gpus", "", True, []),  # a list of GPUs under gpus: the rule is for counts
        ("gpus", "0", False, []),
        ("num-gpus", "8", False, ["G2N835"]),
        ("use_xformers", "false", False, []),
        ("optim", "adamw_torch", False, []),
        ("optim", "adamw_bnb_8bit", False, ["G2N842"]),
        ("tf32", "true", False, ["G2N849"]),  # Hugging Face refuses it without CUDA
        ("tf32", "false", False, []),
        ("model.attn_config.attn_impl", "flash", False, ["G2N858"]),  # llm-foundry's MPT configs
        ("model.attn_config.attn_impl", "torch", False, []),
        ("optimizer._component_", "bitsandbytes.optim.PagedAdamW8bit", False, ["G2N859"]),  # torchtune
        ("optimizer._component_", "torch.optim.AdamW", False, []),
        ("use_liger_kernel", "true", False, ["G2N869"]),  # open-r1's recipes
        ("use_liger_kernel", "false", False, []),
        ("optimizer._target_", "apex.optimizers.FusedAdam", False, ["G2N602"]),  # flash-attention training
        ("loss._target_", "flash_attn.losses.cross_entropy.CrossEntropyLoss", False, ["G2N602"]),
        ("optimizer._target_", "apex.optimizers.NpuFusedAdam", False, []),  # Ascend apex's
        ("model._target_", "flash_attention_model.Net", False, []),
    ],
)
def test_report_rules_match(key, text, is_list, expected):
    assert [rule.id for rule in reports_for(builtin_index(), key, text, is_list)] == expected


# --- what is claimed, and what is not read --------------------------------------------------


@pytest.mark.parametrize(
    "name,kind",
    [
        ("conf/train.yaml", "yaml"),
        ("CONFIG.YML", "yaml"),
        ("ds_config.json", "json"),
        ("settings.toml", "toml"),
        ("environment.yml", "conda-env"),
        ("pyproject.toml", "packaging"),
        ("demo.ipynb", "notebook"),
    ],
)
def test_claims(name, kind):
    assert classify(name, 10, lambda: b"") == kind


@pytest.mark.parametrize(
    "module,name",
    [(json_config, "big.json"), (yaml_config, "big.yaml"), (toml_config, "big.toml")],
)
def test_a_large_file_without_a_trigger_is_not_parsed(monkeypatch, module, name):
    def refuse(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr(module, "read_settings", refuse)
    rows = [{"id": i, "caption": "a model trained with cuda on 8 gpus", "device_id": i} for i in range(60000)]
    data = json.dumps({"annotations": rows}).encode()
    assert len(data) > 5_000_000
    started = time.perf_counter()
    outcome = migrate_file(name, data)
    assert (outcome.new_bytes, outcome.changes, outcome.reported, outcome.skipped) == (None, [], [], "")
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize(
    "data,expected",
    [
        (b'{"device": "cuda"}', True),
        (b'{\n    "device":\n        "cuda:0"}', True),
        (b"device:\n  - cuda:0\n", True),
        (b'[trainer]\ndevice = "cuda"\n', True),
        (b'{"Dist-Backend": "nccl"}', True),
        (b'{"env": {"CUDA_VISIBLE_DEVICES": "0"}}', True),
        (b"accelerator: gpu\n", True),
        (b'{"caption": "cuda", "device_id": 3}', False),  # the value is no device key's
        (b'{"gpus": 12345}', False),  # a count of GPUs is small: a vocabulary id is not one
        (b"", False),
    ],
)
def test_triggers(data, expected):
    assert triggered(data, builtin_index()) is expected


# --- hostile input --------------------------------------------------------------------------


def deep_yaml_bomb() -> bytes:
    lines = [b"device: cuda", b"a: &a [x, x, x, x, x, x, x, x, x, x]"]
    names = [bytes([c]) for c in b"bcdefghijklmnopqrstuvwxyz"]
    previous = b"a"
    for name in names:
        lines.append(name + b": &" + name + b" [" + b", ".join([b"*" + previous] * 10) + b"]")
        previous = name
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize(
    "name,data,skipped",
    [
        (
            "c.yaml",
            "device: cuda\nauthor: José\n".encode("latin-1"),
            "invalid YAML (line 2: not UTF-8, byte 0xe9)",
        ),
        (
            "c.json",
            b'{"device": "cuda",}',
            "invalid JSON (line 1: expecting a property name in double quotes)",
        ),
        ("c.json", b'// config\n{"device": "cuda"}', "invalid JSON (line 1: a comment: JSON has none)"),
        ("c.json", b'{"device": "cuda"} {}', "invalid JSON (line 1: extra data after the value)"),
        ("c.json", b'{"device": "cuda", "x": "\x01"}', "invalid JSON (line 1: Invalid control character at)"),
        (
            "c.toml",
            b'device = "cuda"\ndevice = "cuda"\n',
            'invalid TOML (line 2: Key "device" already exists.)',
        ),
        ("c.toml", b'device = "cuda"\nx = [\n', "invalid TOML (line 2: Unexpected character: '\\x00')"),
        ("c.yaml", b"device: cuda\n  bad: [\n", "invalid YAML (line 2: mapping values are not allowed"),
        ("c.yaml", b"device: cuda\nb: *nowhere\n", "invalid YAML (line 2: found undefined alias 'nowhere')"),
        ("c.yaml", b"device: cuda\x00\n", "invalid YAML (line 1: unacceptable character #x0000)"),
        ("c.yaml", b"device: cuda\n\x1b\n", "invalid YAML (line 2: unacceptable character #x001b)"),
        ("c.yaml", b"device: cuda\n\xff\xfe", "invalid YAML (line 2: not UTF-8, byte 0xff)"),
        (
            "c.yaml",
            b"device: cuda\nx: " + b"[" * 10000 + b"]" * 10000,
            "invalid YAML (line 2: nested more than 200 levels deep)",
        ),
        (
            "c.yaml",
            b"device: cuda\n" + b"".join(b" " * i + b"k:\n" for i in range(300)) + b" " * 300 + b"v\n",
            "invalid YAML (line 202: nested more than 200 levels deep)",
        ),
        (
            "c.toml",
            b'device = "cuda"\nx = ' + b"[" * 10000 + b"]" * 10000,
            "invalid TOML (line 2: TOML value nested more than 100 levels deep)",
        ),
    ],
)
def test_invalid_input_is_skipped_with_its_reason(name, data, skipped):
    outcome = migrate_file(name, data)
    assert (outcome.new_bytes, outcome.changes, outcome.reported) == (None, [], [])
    assert outcome.skipped.startswith(skipped) and outcome.skipped.endswith("); copied unchanged")


def test_deeply_nested_json_is_read_without_recursion():
    data = b'{"device": "cuda", "x": ' + b"[" * 10000 + b'{"device": "cuda"}' + b"]" * 10000 + b"}"
    outcome = migrate_file("c.json", data)
    assert outcome.new_bytes == data.replace(b"cuda", b"npu") and outcome.skipped == ""


def test_a_yaml_alias_bomb_is_never_expanded():
    data = deep_yaml_bomb()
    started = time.perf_counter()
    outcome = migrate_file("bomb.yaml", data)
    assert time.perf_counter() - started < 2
    assert outcome.new_bytes == data.replace(b"device: cuda", b"device: npu", 1)


@pytest.mark.parametrize("name", ["c.yaml", "c.json", "c.toml"])
def test_an_empty_or_untriggered_file_is_left_alone(name):
    for data in (b"", b"\x00\xff" * 100, b"# nothing here\n"):
        assert migrate_file(name, data) == migrate_file(name, b"")
        assert migrate_file(name, data).new_bytes is None


def test_a_byte_order_mark_is_kept():
    assert migrated("c.yaml", "\ufeffdevice: cuda\n") == "\ufeffdevice: npu\n"
    assert migrated("c.json", '\ufeff{"device": "cuda"}') == '\ufeff{"device": "npu"}'


# --- the rule kind's checks -----------------------------------------------------------------


@pytest.mark.parametrize(
    "entry,problem",
    [
        ("ConfigReportRule: [{keys: [], tip: t}]", "'keys' must be a non-empty list"),
        ("ConfigReportRule: [{keys: [gpus], value: '(', tip: t}]", "'value' must be a regular"),
        ("ConfigReportRule: [{keys: [gpus], tip: t, category: bad}]", "'category' must be one of"),
        ("ConfigReportRule: [{keys: [gpus], tip: ' '}]", "'tip' must say what to do"),
        ("ConfigValueRule: [{keys: [device], old: cuda, new: 'n p u'}]", "'new' must be a plain value"),
    ],
)
def test_rule_checks(tmp_path, entry, problem):
    rules = write(tmp_path / "bad.yaml", f"rules:\n  {entry}\n")
    with pytest.raises(RuleFileError, match=problem.replace("(", r"\(")):
        index_with([rules])


def test_a_user_report_rule_applies(tmp_path):
    rules = write(
        tmp_path / "mine.yaml",
        "rules:\n  ConfigReportRule:\n"
        "    - {id: my1, keys: [amp_level], value: 'O[12]', tip: check, category: mention}\n",
    )
    outcome = migrate_file("c.yaml", b"amp_level: O2\n", index=index_with([rules]))
    assert [(r.line, r.subject, r.tip, r.rule, r.category) for r in outcome.reported] == [
        (1, "amp_level: O2", "check", "my1", "mention")
    ]


ONEBIT_ADAM = (
    b'{\n  "optimizer": {\n    "type": "OneBitAdam",\n'
    b'    "params": {\n      "comm_backend_name": "nccl"\n    }\n  }\n}\n'
)


@pytest.mark.parametrize(
    "style,target,rule",
    [("full", "npu", "G2N831"), ("auto", "npu", "G2N716"), ("full", "portable", "G2N997")],
)
def test_deepspeeds_onebit_backend_becomes_hccl_which_no_patcher_changes(style, target, rule):
    """DeepSpeedExamples' 1-bit Adam/LAMB configs: ``comm_backend_name: nccl`` makes DeepSpeed
    import its cupy backend (CUDA-only); 'hccl' is its NPU backend. transfer_to_npu patches only
    init_process_group, so auto rewrites it too; the portable tree keeps it with a row."""
    outcome = migrate_file("ds_config.json", ONEBIT_ADAM, index=builtin_index(style=style, target=target))
    if target == "portable":
        assert outcome.new_bytes is None
        assert [(r.line, r.subject, r.rule) for r in outcome.reported] == [
            (5, "comm_backend_name: nccl", rule)
        ]
        return
    assert outcome.new_bytes == ONEBIT_ADAM.replace(b'"nccl"', b'"hccl"')
    assert [(c.start_line, c.message, c.rule) for c in outcome.changes] == [
        (5, "change comm_backend_name nccl to hccl", rule)
    ]
