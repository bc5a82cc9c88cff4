"""The shell and dockerfile file kinds: what they claim, what they change and report (exact
rows), what they never touch (comments, single quotes, here-documents), their rule kinds'
checks, and hostile input that must never raise. The fixture pairs are in
tests/fixtures_files/shell/ and tests/fixtures_files/dockerfile/."""

from pathlib import Path

import bashlex
import pytest
from helpers import builtin_index, index_with, migrate_file, write

from gpu2npu.errors import RuleFileError
from gpu2npu.filekinds import classify
from gpu2npu.filekinds._shell_scan import scan_shell, statement_pieces
from gpu2npu.filekinds.dockerfile import read_instructions
from gpu2npu.filekinds.shell import shebang_shell

FIXTURES = Path(__file__).resolve().parent / "fixtures_files"
RENAMED = "ASCEND_RT_VISIBLE_DEVICES"


def migrated(name: str, text: str, **options) -> str:
    """The new text (the text itself when nothing changes)."""
    new = migrate_file(name, text.encode("utf-8"), **options).new_bytes
    return text if new is None else new.decode("utf-8")


def reported(name: str, text: str, **options):
    return [
        (r.line, r.subject, r.rule, r.category) for r in migrate_file(name, text.encode(), **options).reported
    ]


# --- what each kind claims -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name,head,kind",
    [
        ("run.sh", b"", "shell"),
        ("scripts/train.bash", b"", "shell"),
        ("train", b"#!/bin/bash\n", "shell"),
        ("train", b"#!/usr/bin/env bash\n", "shell"),
        ("train", b"#! /bin/sh -e\n", "shell"),
        ("train", b"#!/usr/bin/env -S bash -eu\n", "shell"),
        ("launch", b"#!/bin/dash\n", "shell"),
        ("launch", b"#!/usr/bin/zsh\n", "shell"),
        ("slurm/nanoVLM.slurm", b"#!/bin/bash\n#SBATCH --gres=gpu:8\n", "shell"),  # a cluster job script
        ("jobs/train.SBATCH", b"#!/bin/bash\n", "shell"),
        ("Dockerfile", b"FROM x\n", "dockerfile"),
        ("docker/Dockerfile.gpu", b"", "dockerfile"),
        ("train.Dockerfile", b"", "dockerfile"),
        ("base.dockerfile", b"", "dockerfile"),
        ("Containerfile", b"", "dockerfile"),
        ("utils/docker/Dockerfile-arm64", b"", "dockerfile"),
        ("Dockerfile_gpu", b"", "dockerfile"),
        ("dockerfile-notes.md", b"", "text"),
    ],
)
def test_claims(name, head, kind):
    assert classify(name, len(head), lambda: head) == kind


@pytest.mark.parametrize(
    "name,head",
    [
        ("train", b"#!/usr/bin/env python\n"),
        ("train", b"echo hi\n"),
        ("notes.txt", b"#!/bin/bash\n"),
        ("train.slurm", b"#SBATCH --gres=gpu:8\n"),
    ],
)
def test_not_claimed_as_shell(name, head):
    assert classify(name, len(head), lambda: head) not in ("shell", "dockerfile")


def test_a_job_script_gets_its_rows_as_a_shell_script_does():
    """nanoVLM's ``slurm/*.slurm``: read as text, its NCCL variables and ``nvidia-smi -L`` got one
    "not migrated" row; as a shell script each gets its own."""
    job = "#!/bin/bash\n#SBATCH --gres=gpu:8\nexport NCCL_DEBUG=INFO\nnvidia-smi -L\nsrun python train.py\n"
    assert [(line, rule) for line, _, rule, _ in reported("slurm/train.slurm", job)] == [
        (3, "G2N812"),
        (4, "G2N800"),
    ]


def test_a_script_whose_last_line_ends_in_a_backslash_is_read():
    """InternVideo's launchers end with ``--mergeclip=True \\`` and no newline: bash runs them,
    bashlex refused them, so the script was copied unchanged and kept ``nccl``."""
    script = "torchrun --nproc_per_node=2 train.py \\\n    --dist-backend nccl \\\n    --lr 0.1 \\"
    assert migrated("run.sh", script) == script.replace("nccl", "hccl")
    assert migrate_file("run.sh", script.encode()).skipped == ""


def test_shebang_shell():
    assert shebang_shell(b"#!/usr/bin/env VAR=1 bash -x\n") == "bash"
    assert shebang_shell(b"#!/bin/bash") == "bash"
    assert shebang_shell(b"#!\n") == ""
    assert shebang_shell(b"echo") == ""


# --- environment variables -------------------------------------------------------------------


def test_every_way_of_setting_and_reading_a_renamed_variable():
    script = (
        "export CUDA_VISIBLE_DEVICES=0,1\n"
        "CUDA_VISIBLE_DEVICES=0 python a.py\n"
        "CUDA_VISIBLE_DEVICES=2\n"
        "declare -x CUDA_VISIBLE_DEVICES=3\n"
        "f() { local CUDA_VISIBLE_DEVICES=4; }\n"
        "readonly CUDA_VISIBLE_DEVICES\n"
        "unset CUDA_VISIBLE_DEVICES\n"
        "env -u CUDA_VISIBLE_DEVICES CUDA_VISIBLE_DEVICES=5 python a.py\n"
        'echo $CUDA_VISIBLE_DEVICES "${CUDA_VISIBLE_DEVICES}" ${CUDA_VISIBLE_DEVICES:-0}\n'
        "echo ${#CUDA_VISIBLE_DEVICES} ${!CUDA_VISIBLE_DEVICES}\n"
        'N="${X:-$CUDA_VISIBLE_DEVICES}"\n'
    )
    assert migrated("run.sh", script) == script.replace("CUDA_VISIBLE_DEVICES", RENAMED)


def test_single_quotes_comments_and_heredocs_are_data():
    script = (
        "# export CUDA_VISIBLE_DEVICES=0\n"
        "echo 'CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES'  # $CUDA_VISIBLE_DEVICES\n"
        "echo '$CUDA_VISIBLE_DEVICES'\"$CUDA_VISIBLE_DEVICES\"\n"
        "cat <<EOF\n$CUDA_VISIBLE_DEVICES\nexport CUDA_VISIBLE_DEVICES=1\nEOF\n"
        "cat <<\\END\nnvidia-smi\nEND\n"
        'printf "%s" "CUDA_VISIBLE_DEVICES=1"\n'
    )
    expected = script.replace('\'"$CUDA_VISIBLE_DEVICES"', f'\'"${RENAMED}"')
    assert migrated("run.sh", script) == expected
    assert reported("run.sh", script) == []


def test_a_variable_a_quoted_command_line_sets_is_renamed():
    """FastChat's build-api.sh starts its workers with ``screen -X stuff "CUDA_VISIBLE_DEVICES=1
    python3 -m ..."``: the command line runs later in another shell, so the variable is set as
    where the script sets it. Printed text and a longer name stay."""
    script = (
        'screen -DRRS w1 -X stuff  "CUDA_VISIBLE_DEVICES=1 python3 -m worker --path $P \\r"\n'
        "bash -c 'export CUDA_VISIBLE_DEVICES=1; python train.py'\n"
        'tmux send-keys "cd x && CUDA_VISIBLE_DEVICES=2,3 torchrun x.py" Enter\n'
        'ssh host "MY_CUDA_VISIBLE_DEVICES=0 run"\n'
    )
    expected = (
        'screen -DRRS w1 -X stuff  "ASCEND_RT_VISIBLE_DEVICES=1 python3 -m worker --path $P \\r"\n'
        "bash -c 'export ASCEND_RT_VISIBLE_DEVICES=1; python train.py'\n"
        'tmux send-keys "cd x && ASCEND_RT_VISIBLE_DEVICES=2,3 torchrun x.py" Enter\n'
        'ssh host "MY_CUDA_VISIBLE_DEVICES=0 run"\n'
    )
    assert migrated("run.sh", script) == expected


def test_a_here_string_is_no_heredoc_and_the_lines_after_it_are_migrated():
    """``read -ra L <<< "$x"`` (LLaVA's eval scripts): before, its second ``<`` started a heredoc
    that swallowed the rest of the file, so the per-chunk CUDA_VISIBLE_DEVICES stayed."""
    script = (
        'gpu_list="${CUDA_VISIBLE_DEVICES:-0}"\n'
        "IFS=',' read -ra GPULIST <<< \"$gpu_list\"\n"
        "read -r first <<<$gpu_list\n"
        "CUDA_VISIBLE_DEVICES=${GPULIST[0]} python eval.py\n"
    )
    assert migrated("eval.sh", script) == script.replace("CUDA_VISIBLE_DEVICES", RENAMED)
    assert reported("eval.sh", script) == []


def test_a_renamed_variable_is_never_reported_and_other_nccl_variables_are():
    script = "export NCCL_ASYNC_ERROR_HANDLING=1 NCCL_BUFFSIZE=4194304 TORCH_NCCL_TRACE_BUFFER_SIZE=0\n"
    assert migrated("run.sh", script) == script.replace("NCCL_ASYNC", "HCCL_ASYNC")
    assert [(line, subject, rule) for line, subject, rule, _ in reported("run.sh", script)] == [
        (1, "NCCL_BUFFSIZE", "G2N814"),
        (1, "TORCH_NCCL_TRACE_BUFFER_SIZE", "G2N815"),
    ]


def test_deepspeed_op_prebuilds_are_reported_in_scripts_and_dockerfiles():
    """DALLE-pytorch's install_deepspeed.sh builds DeepSpeed's sparse attention
    (DS_BUILD_SPARSE_ATTN=1), Triton kernels with no NPU build, and its Dockerfile every op:
    neither had a row."""
    script = "DS_BUILD_SPARSE_ATTN=1 DS_BUILD_OPS=1 pip install deepspeed\n"
    assert migrated("install_deepspeed.sh", script) == script
    assert reported("install_deepspeed.sh", script) == [
        (1, "DS_BUILD_OPS", "G2N857", "limited"),
        (1, "DS_BUILD_SPARSE_ATTN", "G2N857", "limited"),
    ]
    assert reported("Dockerfile", "FROM ubuntu:22.04\nENV DS_BUILD_OPS=1\n") == [
        (2, "DS_BUILD_OPS", "G2N857", "limited")
    ]


def test_a_name_wins_over_its_prefix_and_reading_a_variable_is_not_setting_it():
    script = 'export NCCL_IB_HCA=mlx5 NCCL_DEBUG=WARN\necho "$NCCL_SOCKET_IFNAME"\nunset NCCL_ALGO\n'
    assert reported("run.sh", script) == [
        (1, "NCCL_DEBUG", "G2N812", "mention"),
        (1, "NCCL_IB_HCA", "G2N811", "limited"),
    ]


def test_renames_follow_the_target_version_and_disabled_rules():
    script = "export NCCL_BLOCKING_WAIT=1\n"
    assert migrated("run.sh", script, version="2.1.0") == "export HCCL_BLOCKING_WAIT=1\n"
    assert migrated("run.sh", script, version="2.8.0") == "export TORCH_HCCL_BLOCKING_WAIT=1\n"
    index = index_with(disabled=["G2N030"])
    assert (
        migrated("run.sh", "export CUDA_VISIBLE_DEVICES=0\n", index=index)
        == "export CUDA_VISIBLE_DEVICES=0\n"
    )


# --- option values -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "before,after",
    [
        (
            "torchrun --nproc_per_node 8 train.py --backend nccl\n",
            "torchrun --nproc_per_node 8 train.py --backend hccl\n",
        ),
        ('python a.py --backend "nccl"\n', 'python a.py --backend "hccl"\n'),
        ("python a.py --dist_backend='nccl'\n", "python a.py --dist_backend='hccl'\n"),
        # OpenRLHF: its code's default and comparisons become 'hccl'
        ("python -m x --vllm.sync_backend nccl\n", "python -m x --vllm.sync_backend hccl\n"),
        ("python a.py --device=cuda:$LOCAL_RANK\n", "python a.py --device=npu:$LOCAL_RANK\n"),
        ('python a.py --device "cuda:${RANK}"\n', 'python a.py --device "npu:${RANK}"\n'),
        ("python a.py trainer.device=cuda +backend=nccl\n", "python a.py trainer.device=npu +backend=hccl\n"),
        ("python a.py --device=cuda:$CUDA_VISIBLE_DEVICES\n", f"python a.py --device=npu:${RENAMED}\n"),
        # unchanged: not a device or backend value, an expansion, mixed quotes, text for echo
        ("python a.py --device $DEVICE --device=cudnn --backend gloo --name nccl\n", None),
        ('python a.py --device=cuda:"$R" --device cuda-fast\n', None),
        ("echo --backend nccl; echo 'run with --device cuda'\n", None),
        ("python -c 'import torch; torch.device(\"cuda\")'\n", None),
    ],
)
def test_option_values(before, after):
    assert migrated("run.sh", before) == (after or before)


def test_only_the_value_characters_change():
    outcome = migrate_file("run.sh", b"python a.py --device=cuda:0 --backend nccl\n")
    assert outcome.new_bytes == b"python a.py --device=npu:0 --backend hccl\n"
    assert [(c.message, c.rule) for c in outcome.changes] == [
        ("change backend nccl to hccl", "G2N831"),
        ("change device cuda:0 to npu:0", "G2N830"),
    ]


# GLM's config/ds_block_*.sh and Megatron-DeepSpeed's pretrain_gpt_single_node.sh: the options go
# into a quoted variable, which the launch command expands; the migrated argparse accepts only hccl
QUOTED_OPTIONS = """\
gpt_options=" \\
       --block-lm \\
       --distributed-backend nccl \\
"
GPT_ARGS='--dist-backend=nccl --seq-length 1024'
OTHER="$HOME/x --backend nccl --name nccl"
deepspeed pretrain_glm.py ${gpt_options} $GPT_ARGS $OTHER
"""


def test_the_options_of_a_quoted_value_a_command_expands_are_migrated():
    outcome = migrate_file("ds_block_base.sh", QUOTED_OPTIONS.encode())
    assert outcome.new_bytes.decode() == QUOTED_OPTIONS.replace("backend nccl", "backend hccl").replace(
        "backend=nccl", "backend=hccl"
    )
    assert [(c.start_line, c.message, c.rule) for c in outcome.changes] == [
        (3, "change distributed_backend nccl to hccl", "G2N831"),
        (5, "change dist_backend nccl to hccl", "G2N831"),
        (6, "change backend nccl to hccl", "G2N831"),
    ]


def test_the_portable_tree_reports_the_nccl_backends_its_launchers_pass():
    """Its code picks the machine's backend, so ``choices`` holds hccl on an NPU: a launcher's nccl
    stops argparse there (a limit), where it was a mention no rule knew."""
    index = builtin_index(target="portable")
    assert migrated("ds_block_base.sh", QUOTED_OPTIONS, index=index) == QUOTED_OPTIONS
    assert reported("ds_block_base.sh", QUOTED_OPTIONS, index=index) == [
        (3, "--distributed-backend nccl", "G2N177", "limited"),
        (5, "--dist-backend nccl", "G2N177", "limited"),
        (6, "--backend nccl", "G2N177", "limited"),
    ]


# stanford_alpaca's launcher: Hugging Face's TrainingArguments refuses tf32 without CUDA
HF_LAUNCH = (
    "torchrun --nproc_per_node=4 train.py \\\n    --bf16 True \\\n    --tf32 True\n"
    "python train.py --tf32=true\n"
)


@pytest.mark.parametrize("style", ["full", "auto", "specify-device", "distributed"])
def test_hf_tf32_becomes_false_in_every_npu_mode(style):
    index = builtin_index(style=style)
    outcome = migrate_file("train.sh", HF_LAUNCH.encode(), index=index)
    assert outcome.new_bytes.decode() == HF_LAUNCH.replace("tf32 True", "tf32 False").replace(
        "tf32=true", "tf32=false"
    )
    assert [(c.message, c.rule) for c in outcome.changes] == [
        ("change tf32 True to False", "G2N847"),
        ("change tf32 true to false", "G2N848"),
    ]


def test_hf_tf32_stays_in_the_portable_tree_which_still_runs_on_cuda():
    index = builtin_index(target="portable")
    assert migrated("train.sh", HF_LAUNCH, index=index) == HF_LAUNCH


# --- commands ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "script,subject",
    [
        ("nvidia-smi\n", "nvidia-smi"),
        ("/usr/bin/nvidia-smi -L\n", "nvidia-smi"),
        ("sudo -u root nvidia-smi -r\n", "nvidia-smi"),
        ("timeout 10 nvidia-smi\n", "nvidia-smi"),
        ("watch -n 1 nvidia-smi\n", "nvidia-smi"),
        ("command -v nvidia-smi >/dev/null\n", "nvidia-smi"),
        ("N=$(nvidia-smi --query-gpu=name --format=csv | wc -l)\n", "nvidia-smi"),
        ('echo "GPUs: $(nvidia-smi -L)"\n', "nvidia-smi"),
        ("docker run --rm --gpus=all img\n", "docker --gpus"),
        ("docker run --runtime nvidia img\n", "docker --runtime nvidia"),
        ("nvidia-docker run img\n", "nvidia-docker"),
        ("nvcc -c k.cu\n", "nvcc"),
        (
            "pip install torch==1.10 -f https://download.pytorch.org/whl/cu111/torch_stable.html\n",
            "pip /whl/cu111/",
        ),
        ("pip3 install torch==2.1.0+cu118\n", "pip3 +cu118"),
        (
            "sudo python3 -m pip install torch \\\n  --index-url https://download.pytorch.org/whl/cu121\n",
            "python3 -m pip",
        ),
        ("conda install pytorch pytorch-cuda=11.8 -c pytorch -c nvidia\n", "conda pytorch-cuda"),
        ("conda install -y cudatoolkit=11.3\n", "conda cudatoolkit"),
    ],
)
def test_commands_are_reported_where_they_run(script, subject):
    assert [row[1] for row in reported("run.sh", script)] == [subject]


@pytest.mark.parametrize(
    "script",
    [
        "# nvidia-smi\n",
        'echo "run nvidia-smi"\n',
        "echo nvidia-smi\n",
        "docker run --rm img nvidia-smi-like\n",
        "docker build -t img .\n",
        "python -m torch.utils.collect_env\n",
        "pip install nvidia-ml-py\n",
        "pip install -r requirements.txt\n",
        "pip install torch --index-url https://download.pytorch.org/whl/cpu\n",
        "python -m pip install torch==2.1.0+cpu\n",
        "echo https://download.pytorch.org/whl/cu118\n",
        "conda install numpy -c conda-forge\n",
    ],
)
def test_commands_are_not_reported_elsewhere(script):
    assert reported("run.sh", script) == []


def test_a_command_report_row_spans_the_command():
    rows = migrate_file("run.sh", b"docker run \\\n  --gpus all \\\n  img\n").reported
    assert [(r.line, r.end_line, r.subject, r.rule, r.category) for r in rows] == [
        (1, 3, "docker --gpus", "G2N803", "unsupported")
    ]


def test_user_rules_of_the_new_kinds(tmp_path):
    rules = write(
        tmp_path / "mine.yaml",
        "rules:\n"
        "  CommandReportRule:\n"
        "    - {id: U1, command: my-gpu-tool, arguments: '--check', tip: use my-npu-tool,\n"
        "       category: limited}\n"
        "  EnvVarReportRule:\n"
        "    - {id: U2, prefix: MYGPU_, tip: not read on the NPU, category: mention}\n",
    )
    index = index_with([rules])
    script = "my-gpu-tool --check\nmy-gpu-tool --list\nexport MYGPU_COUNT=8\n"
    assert reported("run.sh", script, index=index) == [
        (1, "my-gpu-tool --check", "U1", "limited"),
        (3, "MYGPU_COUNT", "U2", "mention"),
    ]


@pytest.mark.parametrize(
    "entry,problem",
    [
        ("EnvVarReportRule: [{name: A, prefix: B, tip: t}]", "give either 'name' or 'prefix'"),
        ("EnvVarReportRule: [{tip: t}]", "give either 'name' or 'prefix'"),
        ("EnvVarReportRule: [{name: 'A B', tip: t}]", "an environment variable name"),
        ("EnvVarReportRule: [{name: A, tip: t, category: bad}]", "'category' must be one of"),
        (
            "CommandReportRule: [{command: nvidia-smi, arguments: '(', tip: t}]",
            "'arguments' must be a regular",
        ),
        ("CommandReportRule: [{command: /usr/bin/x, tip: t}]", "without a folder"),
        ("CommandReportRule: [{command: x, tip: ' '}]", "'tip' must say what to do"),
        ("BaseImageRule: [{image: 'a', match: exact, tip: t}]", "'match' must be one of glob, regex"),
        ("BaseImageRule: [{image: '(', match: regex, tip: t}]", "'image' must be a regular"),
    ],
)
def test_rule_checks(tmp_path, entry, problem):
    rules = write(tmp_path / "bad.yaml", f"rules:\n  {entry}\n")
    with pytest.raises(RuleFileError, match=problem.replace("(", r"\(")):
        index_with([rules])


# --- scripts bashlex cannot read -----------------------------------------------------------


def test_a_script_nothing_of_which_parses_is_skipped():
    outcome = migrate_file("check.sh", b"#!/bin/bash\nif [[ $DEVICE == cuda ]]; then echo gpu; fi\n")
    assert outcome.new_bytes is None and outcome.changes == [] and outcome.reported == []
    assert (
        outcome.skipped
        == "shell parser cannot read it (line 2: unexpected token '$DEVICE'); copied unchanged"
    )


def test_a_script_bashlex_refuses_whole_is_read_piece_by_piece():
    script = (
        "arr=(a b)\n"
        "case $1 in\n"
        "  a|b) export CUDA_VISIBLE_DEVICES=0 ; nvidia-smi ;;\n"
        "esac\n"
        "for ((i=0; i<2; i++)); do python a.py --backend nccl; done\n"
        "[[ -n $CUDA_VISIBLE_DEVICES ]] && echo $(( 1 + 2 ))\n"
    )
    expected = script.replace("CUDA_VISIBLE_DEVICES", RENAMED).replace("nccl", "hccl")
    assert migrated("run.sh", script) == expected
    assert reported("run.sh", script) == [(3, "nvidia-smi", "G2N800", "unsupported")]


def test_bashlex_positions_are_checked_before_use():
    # bashlex places the nodes after a second elif relative to the if; they are read line by line
    script = (
        "x=1\n"
        "if [ $a = 1 ]; then\n  y=1\nelif [ $a = 2 ]; then\n  y=2\nelif [ $a = 3 ]; then\n"
        "  export CUDA_VISIBLE_DEVICES=3\nfi\n"
        'LOG=$(python a.py \\\n    --backend "nccl" \\\n    --device=cuda:0)\n'
    )
    expected = script.replace("CUDA_VISIBLE_DEVICES", RENAMED).replace('"nccl"', '"hccl"')
    assert migrated("run.sh", script) == expected.replace("cuda:0", "npu:0")


def test_trigger_words_are_whole_words():
    script = "setup_cuda() {\n  echo hi\n}\nif [[ $X == 1 ]]; then setup_cuda; fi\nexport MY_NCCL_DIR=/x\n"
    outcome = migrate_file("run.sh", script.encode())
    assert (outcome.new_bytes, outcome.changes, outcome.reported, outcome.skipped) == (None, [], [], "")


def test_statement_pieces():
    view = scan_shell('if [ -n "$A;B" ]; then x=1 && nvidia-smi 2>&1 | tee log; fi\n').view
    pieces = [view[start:end] for start, end in statement_pieces(view, 0, len(view))]
    assert pieces == ['[ -n "$A;B" ]', "x=1", "nvidia-smi 2>&1", "tee log"]


def test_the_scan_blanks_comments_and_heredoc_bodies_and_keeps_positions():
    text = "a=1 # c\r\ncat <<'E'\r\nbody $X\r\nE\r\necho ${#a} x#y\n"
    scan = scan_shell(text)
    assert len(scan.view) == len(text)
    assert scan.view == "a=1     \ncat << E  \n        \nE \necho ${#a} x#y\n"
    assert [text[s:e] for s, e in scan.statements] == [
        "a=1 # c\r\n",
        "cat <<'E'\r\nbody $X\r\nE\r\n",
        "echo ${#a} x#y\n",
    ]


def test_migrated_scripts_still_parse():
    for after in sorted(FIXTURES.glob("shell/*/after/*")):
        if after.parent.parent.name != "unparseable":
            scan = scan_shell(after.read_bytes().decode("utf-8", "surrogateescape"))
            assert bashlex.parse(scan.view), after


def test_a_script_without_trigger_words_is_not_parsed(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr(bashlex, "parse", refuse)
    outcome = migrate_file("run.sh", b"#!/bin/bash\npython train.py --lr 0.1\n")
    assert outcome.new_bytes is None and not outcome.changes and not outcome.reported and not outcome.skipped


def test_idempotent():
    script = (FIXTURES / "shell/launcher/before/train_dist.sh").read_bytes()
    once = migrate_file("run.sh", script)
    twice = migrate_file("run.sh", once.new_bytes)
    assert twice.new_bytes is None and twice.changes == []
    assert [(r.line, r.subject) for r in twice.reported] == [(r.line, r.subject) for r in once.reported]


HOSTILE = {
    "empty": b"",
    "only comments": b"#!/bin/bash\n# CUDA_VISIBLE_DEVICES nvidia-smi nccl\n",
    "binary garbage": bytes(range(256)) * 64 + b"CUDA_VISIBLE_DEVICES nccl\x00cuda",
    "nul bytes": b"export CUDA_VISIBLE_DEVICES=0\x00\x00\nnvidia-smi\x00\n",
    "invalid utf-8": b"echo \xff\xfe $CUDA_VISIBLE_DEVICES \xc3\n",
    "deep substitutions": b"$(" * 5000 + b"nvidia-smi",
    "deep parentheses": b"(" * 5000 + b"cuda" + b")" * 5000,
    "unterminated quote": b'echo "cuda\nexport CUDA_VISIBLE_DEVICES=0\n',
    "unterminated single quote": b"echo 'cuda\n",
    "unterminated heredoc": b"cat <<EOF\nCUDA_VISIBLE_DEVICES=0\n",
    "backslash at the end": b"python a.py --backend nccl \\",
    "lone carriage returns": b"export CUDA_VISIBLE_DEVICES=0\rnvidia-smi\r",
    "many heredocs": b"cat <<A <<B\nx\nA\ny\nB\nnvidia-smi\n" * 200,
    "keywords only": b"if then fi case esac do done { } cuda\n",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_input_never_raises(name):
    data = HOSTILE[name]
    outcome = migrate_file("hostile.sh", data)
    if outcome.new_bytes is not None:
        assert migrate_file("hostile.sh", outcome.new_bytes).new_bytes is None
    migrate_file("Dockerfile", b"RUN " + data)


def test_a_one_megabyte_script():
    data = b"echo step; sleep 0\n" * 56000 + b"export CUDA_VISIBLE_DEVICES=0\nnvidia-smi\n"
    assert len(data) > 1024 * 1024
    outcome = migrate_file("big.sh", data)
    assert outcome.new_bytes == data.replace(b"CUDA_VISIBLE_DEVICES", RENAMED.encode())
    assert [(r.line, r.subject) for r in outcome.reported] == [(56002, "nvidia-smi")]


# --- Dockerfiles ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dockerfile,subject,rule",
    [
        ("FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04\n", "nvidia/cuda:12.1.0-runtime-ubuntu22.04", "G2N825"),
        ("FROM docker.io/nvidia/cuda\n", "docker.io/nvidia/cuda", "G2N825"),
        (
            "FROM --platform=$BUILDPLATFORM nvcr.io/nvidia/pytorch:23.10-py3 AS b\n",
            "nvcr.io/nvidia/pytorch:23.10-py3",
            "G2N826",
        ),
        (
            "FROM pytorch/pytorch:2.3.0-cuda12.1-cudnn8-devel\n",
            "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-devel",
            "G2N827",
        ),
        ("FROM pytorch/pytorch\n", "pytorch/pytorch", "G2N827"),
        ("ARG BASE=nvidia/cuda:11.8.0-base\nFROM ${BASE}\n", "nvidia/cuda:11.8.0-base", "G2N825"),
        ("FROM ${BASE:-nvidia/cuda:11.8.0-base}\n", "nvidia/cuda:11.8.0-base", "G2N825"),
        ("FROM mycorp/train:torch2.1-cu121\n", "mycorp/train:torch2.1-cu121", "G2N828"),
    ],
)
def test_cuda_base_images(dockerfile, subject, rule):
    rows = reported("Dockerfile", dockerfile)
    assert [(r[1], r[2], r[3]) for r in rows] == [(subject, rule, "unsupported")]


@pytest.mark.parametrize(
    "dockerfile",
    [
        "FROM python:3.10-slim\n",
        "FROM ubuntu:22.04 AS base\nFROM base\n",
        "FROM ascendhub/pytorch-modelzoo:23.0\n",
    ],
)
def test_other_base_images(dockerfile):
    assert reported("Dockerfile", dockerfile) == []


def test_dockerfile_instructions():
    dockerfile = (
        "ENV CUDA_VISIBLE_DEVICES=0 A='$CUDA_VISIBLE_DEVICES'\n"
        "ENV CUDA_LAUNCH_BLOCKING 1\n"
        "ARG CUDA_VISIBLE_DEVICES=1\n"
        "RUN --mount=type=cache,target=/var/cache/pip python a.py --device cuda\n"
        'ENTRYPOINT ["python", "a.py", "--backend", "nccl"]\n'
        'CMD ["python", "a.py", "--device", "cu\\u0064a"]\n'
        "HEALTHCHECK --interval=5s CMD nvidia-smi || exit 1\n"
        "LABEL device=cuda\n"
    )
    expected = (
        f"ENV {RENAMED}=0 A='$CUDA_VISIBLE_DEVICES'\n"
        "ENV ASCEND_LAUNCH_BLOCKING 1\n"
        f"ARG {RENAMED}=1\n"
        "RUN --mount=type=cache,target=/var/cache/pip python a.py --device npu\n"
        'ENTRYPOINT ["python", "a.py", "--backend", "hccl"]\n'
        'CMD ["python", "a.py", "--device", "cu\\u0064a"]\n'
        "HEALTHCHECK --interval=5s CMD nvidia-smi || exit 1\n"
        "LABEL device=cuda\n"
    )
    assert migrated("Dockerfile", dockerfile) == expected
    assert reported("Dockerfile", dockerfile) == [(7, "nvidia-smi", "G2N800", "unsupported")]


def test_dockerfile_heredocs():
    dockerfile = (
        "RUN <<EOF\nexport CUDA_VISIBLE_DEVICES=0\nEOF\n"
        "RUN <<EOF\n#!/usr/bin/env python3\nimport os; os.environ['CUDA_VISIBLE_DEVICES'] = '0'\nEOF\n"
        "COPY <<-EOF /run.sh\n\texport CUDA_VISIBLE_DEVICES=0\n\tEOF\n"
        "RUN cat <<EOF > /x && nvidia-smi\nnvcc\nEOF\n"
    )
    new = migrated("Dockerfile", dockerfile)
    assert new == dockerfile.replace("export CUDA_VISIBLE_DEVICES=0\nEOF", f"export {RENAMED}=0\nEOF", 1)
    assert reported("Dockerfile", dockerfile) == [(11, "nvidia-smi", "G2N800", "unsupported")]


def test_a_quoted_or_unterminated_heredoc_operator_in_a_dockerfile_is_text():
    dockerfile = 'RUN echo "a <<EOF" && nvidia-smi\nENV CUDA_VISIBLE_DEVICES=0\nRUN cat <<X\nnvcc\n'
    assert migrated("Dockerfile", dockerfile) == dockerfile.replace("CUDA_VISIBLE_DEVICES", RENAMED)
    assert reported("Dockerfile", dockerfile) == [(1, "nvidia-smi", "G2N800", "unsupported")]


def test_dockerfile_continuations_and_comments():
    dockerfile = "RUN a && \\\n# nvidia-smi here is a comment\n\n    python t.py \\  \n  --device cuda\n"
    instructions, view = read_instructions(dockerfile)
    assert [(i.keyword, dockerfile[i.arguments : i.end]) for i in instructions] == [("RUN", dockerfile[4:-1])]
    assert len(view) == len(dockerfile)
    assert bashlex.parse(view[4:-1])  # one shell command, the comment and empty line gone
    assert migrated("Dockerfile", dockerfile) == dockerfile.replace("--device cuda", "--device npu")
    assert reported("Dockerfile", dockerfile) == []


def test_dockerfile_escape_directive_and_crlf():
    dockerfile = b"# escape=`\r\nRUN python t.py `\r\n  --backend nccl\r\nENV NCCL_DEBUG INFO\r\n"
    outcome = migrate_file("Dockerfile", dockerfile)
    assert outcome.new_bytes == dockerfile.replace(b"nccl", b"hccl")
    assert [(r.line, r.subject) for r in outcome.reported] == [(4, "NCCL_DEBUG")]


INLINE_PYTHON = """#!/bin/bash
GPUS_PER_NODE=$(python -c 'import torch; print(torch.cuda.device_count())')
python3 -u -W ignore -c "import torch; print(torch.cuda.is_available())"
python -c import torch
python -c "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')"
python -c 'x = 1'
python train.py -c 'torch.cuda.synchronize()' --device cuda
"""


def test_python_c_code_is_migrated_where_it_fits_its_quotes():
    """Qwen's launchers count devices with ``python -c '...torch.cuda.device_count()'``: 0 on an
    NPU, so torchrun got --nproc_per_node 0. The code is migrated as Python (one line stays one
    line). Left as written: unquoted code (the shell splits it), code holding other quotes (the
    mentions row lists it), code with nothing to change, and a script's own -c option."""
    expected = (
        INLINE_PYTHON.replace(
            "'import torch; print(torch.cuda.device_count())'",
            "'import torch; import torch_npu; print(torch.npu.device_count())'",
        )
        .replace(
            '"import torch; print(torch.cuda.is_available())"',
            '"import torch; import torch_npu; print(torch.npu.is_available())"',
        )
        .replace("--device cuda", "--device npu")
    )
    outcome = migrate_file("run.sh", INLINE_PYTHON.encode())
    assert outcome.new_bytes.decode() == expected
    assert [(c.start_line, c.message, c.rule) for c in outcome.changes] == [
        (
            2,
            "python -c: insert import torch_npu; change function torch.cuda.device_count to "
            "torch_npu.npu.device_count",
            "G2N289",
        ),
        (
            3,
            "python -c: insert import torch_npu; change function torch.cuda.is_available to "
            "torch_npu.npu.is_available",
            "G2N317",
        ),
        (7, "change device cuda to npu", "G2N830"),
    ]
    portable = migrated("run.sh", INLINE_PYTHON, index=builtin_index(target="portable"))
    assert (
        portable.splitlines()[1]
        == "GPUS_PER_NODE=$(python -c 'import torch; print(torch.accelerator.device_count())')"
    )


def test_python_c_code_in_a_dockerfile_run_is_migrated():
    text = 'FROM python:3.10\nRUN python -c "import torch; assert torch.cuda.is_available()"\n'
    assert migrated("Dockerfile", text) == text.replace(
        "import torch; assert torch.cuda", "import torch; import torch_npu; assert torch.npu"
    )


def test_only_the_nvidia_container_runtimes_variables_are_reported_as_such():
    """FastChat's NVIDIA_API_KEY (NVIDIA's hosted models) was reported as a container-runtime
    variable to replace with ASCEND_VISIBLE_DEVICES."""
    text = (
        "export NVIDIA_API_KEY=x\nexport NVIDIA_DRIVER_CAPABILITIES=all\n"
        'export NVIDIA_REQUIRE_CUDA="cuda>=12"\nexport NVIDIA_VISIBLE_DEVICES=0\n'
    )
    assert [row[:3] for row in reported("run.sh", text)] == [
        (2, "NVIDIA_DRIVER_CAPABILITIES", "G2N824"),
        (3, "NVIDIA_REQUIRE_CUDA", "G2N829"),
        (4, "NVIDIA_VISIBLE_DEVICES", "G2N820"),
    ]
