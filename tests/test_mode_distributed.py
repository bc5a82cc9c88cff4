"""`migrate ... distributed -m MAIN [-t MODEL]`: single card to multi-card (msFmkTransplt's syntax),
from the installed command: the fixture pair (its B20 cases), a second run that doubles nothing,
bad input, check and --diff. The proof by running two processes is in test_standin.py."""

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from helpers import rows, run_cli, tree_files, write

PROJECT = Path(__file__).parent / "projects" / "distributed"
BEFORE, AFTER = PROJECT / "before", PROJECT / "after"


def distributed(tmp_path, *extra, source=BEFORE, main=None, out="out"):
    main = main if main is not None else source / "train.py"
    result = run_cli(
        "migrate", "-i", source, "-o", tmp_path / out, "-v", "2.8.0", "distributed", "-m", main, *extra
    )
    return result, tmp_path / out / f"{source.stem}_msft_multi"


def migrated_files(out: Path):
    return {
        rel: data for rel, data in tree_files(out).items() if not rel.startswith("transplant_result_file")
    }


def test_the_main_script_becomes_multi_card(tmp_path):
    result, out = distributed(tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"launcher: {out / 'run_distributed_npu.sh'} [NPUS] [arguments...]" in result.stdout
    # train.py, lib/data.py and the launcher as in after/; lib/__init__.py byte for byte
    assert migrated_files(out) == tree_files(BEFORE) | tree_files(AFTER)
    assert stat.S_IMODE(os.stat(out / "run_distributed_npu.sh").st_mode) == 0o755
    reports = out / "transplant_result_file"
    changes = [
        row for row in rows(reports / "change_list.csv") if row[5] in ("G2N730", "G2N741", "G2N742", "G2N743")
    ]
    assert [row[:3] + [row[5]] for row in changes] == [
        ["train.py", "17", "17", "G2N742"],  # the loader a return statement builds, shuffle by position
        ["train.py", "38", "38", "G2N741"],  # DDP once, after the move (not after model.float())
        ["train.py", "44", "44", "G2N742"],  # set_epoch of the training loader
        ["train.py", "47", "47", "G2N742"],  # a loader passed as an argument
        ["train.py", "48", "48", "G2N743"],  # print and log.info on rank 0 (one if)
        ["train.py", "49", "49", "G2N743"],
        ["train.py", "50", "50", "G2N741"],  # model.module.state_dict()
        ["train.py", "50", "50", "G2N743"],  # torch.save on rank 0
        ["train.py", "50", "50", "G2N743"],  # then a barrier: line 51 reads the file
        ["train.py", "51", "51", "G2N741"],  # model.module.load_state_dict() after the wrap
    ]
    assert [row[:4] + row[5:] for row in rows(reports / "unsupported_api.csv")[1:]] == [
        [
            "train.py",
            "17",
            "17",
            "torch.utils.data.DataLoader",
            "supported_with_limits",
            "listed",
            "rules:G2N742",
        ],
        ["train.py", "37", "37", "torch.load", "supported_with_limits", "listed", "rules:G2N183"],
        ["train.py", "43", "43", "torch.utils.data.DataLoader", "unsupported", "listed", "rules:G2N742"],
        ["train.py", "51", "51", "torch.load", "supported_with_limits", "listed", "rules:G2N183"],
    ]  # the evaluation loader stays whole; the batch_sampler one is left to the user


def test_a_script_that_is_distributed_already_gets_nothing_twice(tmp_path):
    _, out = distributed(tmp_path)
    again, out_again = distributed(tmp_path, source=out, main=out / "train.py", out="again")
    assert again.returncode == 0, again.stderr
    assert migrated_files(out_again) == migrated_files(out)
    assert rows(out_again / "transplant_result_file" / "change_list.csv")[1:] == []
    (already,) = [
        row
        for row in rows(out_again / "transplant_result_file" / "unsupported_api.csv")
        if row[3] == "distributed"
    ]
    assert already[4] == (
        "the main script distributes itself (torch.distributed.init_process_group): left as it is, "
        "without DistributedDataParallel, DistributedSampler or rank-0 guards (the full migration still "
        "applies); start it with its own launcher, or with run_distributed_npu.sh if it reads torchrun's "
        "environment"
    )


def test_evaluation_loaders_are_sharded_when_asked(tmp_path):
    result, out = distributed(tmp_path, "--shard-eval")
    assert result.returncode == 0, result.stderr
    assert (
        "DataLoader(val_set, batch_size=64, "
        "sampler=torch.utils.data.distributed.DistributedSampler(val_set, shuffle=False))"
    ) in (out / "train.py").read_text()


def test_the_model_is_found_by_its_name(tmp_path):
    write(
        tmp_path / "p" / "main.py",
        "import torch\n\n\nclass Trainer:\n"
        "    def __init__(self, net):\n        self.net = net.cuda()\n\n"
        "    def fit(self, batches):\n        for epoch in range(2):\n"
        "            self.net(batches).sum().backward()\n",
    )
    result, out = distributed(
        tmp_path, "-t", "self.net", source=tmp_path / "p", main=tmp_path / "p" / "main.py"
    )
    assert result.returncode == 0, result.stderr
    assert (
        "        self.net = net.npu()\n"
        "        self.net = torch.nn.parallel.DistributedDataParallel("
        "self.net, device_ids=[LOCAL_RANK])\n"
    ) in (out / "main.py").read_text()


# what the mode puts after the imports of every main script that imports torch
PROCESS_GROUP = (
    "import torch_npu\n"
    "import os\n"
    "LOCAL_RANK = int(os.environ.get('LOCAL_RANK', '0'))\n"
    "torch_npu.npu.set_device(LOCAL_RANK)\n"
    "if not torch.distributed.is_initialized():\n"
    "    os.environ.setdefault('MASTER_ADDR', '127.0.0.1')\n"
    "    os.environ.setdefault('MASTER_PORT', '29500')\n"
    "    torch.distributed.init_process_group('hccl', rank=int(os.environ.get('RANK', '0')), "
    "world_size=int(os.environ.get('WORLD_SIZE', '1')))\n"
)
DDP = "torch.nn.parallel.DistributedDataParallel({}, device_ids=[LOCAL_RANK])"

# pytorch-cifar's shape: the model is net, a module-level name; test(), called in the epoch loop
# after the wrap, saves the checkpoint that --resume loads
CIFAR = """import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument('--resume', action='store_true')
args = parser.parse_args()
device = 'cuda' if torch.cuda.is_available() else 'cpu'

net = torch.nn.Linear(8, 2)
net = net.to(device)
if args.resume:
    net.load_state_dict(torch.load('ckpt.pth')['net'])
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)


def test(epoch):
    state = {'net': net.state_dict(), 'epoch': epoch}
    torch.save(state, 'ckpt.pth')


for epoch in range(2):
    net(torch.randn(4, 8).to(device)).sum().backward()
    optimizer.step()
    test(epoch)
"""
CIFAR_MULTI = (
    "import argparse\n\nimport torch\n"
    + PROCESS_GROUP
    + """
parser = argparse.ArgumentParser()
parser.add_argument('--resume', action='store_true')
args = parser.parse_args()
device = 'npu' if torch.npu.is_available() else 'cpu'

net = torch.nn.Linear(8, 2)
net = net.to(device)
net = torch.nn.parallel.DistributedDataParallel(net, device_ids=[LOCAL_RANK])
if args.resume:
    net.module.load_state_dict(torch.load('ckpt.pth')['net'])
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)


def test(epoch):
    state = {'net': net.module.state_dict(), 'epoch': epoch}
    if torch.distributed.get_rank() == 0:
        torch.save(state, 'ckpt.pth')


for epoch in range(2):
    net(torch.randn(4, 8).to(device)).sum().backward()
    optimizer.step()
    test(epoch)
"""
)
INFERRED = (
    "the model was taken to be net: -t was not given and the main script never moves model to the "
    "device, while net is moved here and its .parameters() are passed to a call (an optimizer); name "
    "another with -t if it is not the model"
)


def one_script(tmp_path, code, *extra, name="p"):
    """The distributed migration of a project holding only main.py: the result and its main.py."""
    main = write(tmp_path / name / "main.py", code)
    result, out = distributed(tmp_path, *extra, source=main.parent, main=main)
    return result, out / "main.py"


def reported(out_main: Path, rule: str = "G2N741"):
    return [
        row[1:5] + row[5:6]
        for row in rows(out_main.parent / "transplant_result_file" / "unsupported_api.csv")
        if row[-1] == f"rules:{rule}"
    ]


def test_without_t_the_model_is_the_one_moved_whose_parameters_are_optimized(tmp_path):
    """pytorch-cifar names its model net: without -t, model is never moved, so net (moved, its
    parameters given to the optimizer) is wrapped, and the run says so; its checkpoints in test(),
    a function called only after the wrap, keep their keys."""
    result, main = one_script(tmp_path, CIFAR)
    assert result.returncode == 0, result.stderr
    assert main.read_text() == CIFAR_MULTI
    assert result.stdout.splitlines()[-1] == (
        "model: net (-t not given, model never moved to the device; net is moved at main.py line 11, "
        "its .parameters() passed to a call): name another with -t"
    )
    assert reported(main) == [["11", "11", "net", INFERRED, "supported_with_limits"]]
    changes = rows(main.parent / "transplant_result_file" / "change_list.csv")
    assert [row[1:3] + row[4:6] for row in changes if row[5] == "G2N741"] == [
        ["11", "11", f"wrap net in {DDP.split('(')[0]} after it is moved to the device", "G2N741"],
        ["13", "13", "call net.module.load_state_dict: the model is wrapped in DDP", "G2N741"],
        ["18", "18", "call net.module.state_dict: the model is wrapped in DDP", "G2N741"],
    ]
    named, named_main = one_script(tmp_path, CIFAR, "-t", "net", name="named")
    assert named.returncode == 0, named.stderr
    assert named_main.read_text() == CIFAR_MULTI  # the same migration, without the notice or the row
    assert not named.stdout.splitlines()[-1].startswith("model:")
    assert reported(named_main) == []


GAN = """import torch

netG = torch.nn.Linear(4, 8).cuda()
netD = torch.nn.Linear(8, 1).cuda()
optimizerG = torch.optim.Adam(netG.parameters())
optimizerD = torch.optim.Adam([{'params': netD.parameters()}])
for epoch in range(2):
    netD(netG(torch.randn(2, 4).cuda())).sum().backward()
"""
NOT_MOVED = """import torch

net = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(2):
    net(torch.randn(4, 8)).sum().backward()
"""
# PyTorch-YOLOv3: a function of another module builds the model and moves it
FACTORY = """import torch
from nets import load_model

model = load_model('yolo.cfg')
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model(torch.randn(4, 8).cuda()).sum().backward()
"""
BUILT_ELSEWHERE = (
    ": model is built by load_model(...) on line 4 and not moved after it; if load_model puts it on "
    "the device, move it in the main script too (model = model.to(device) after line 4) so that the wrap "
    "can follow; a function that reads the model's own attributes then takes model.module"
)


@pytest.mark.parametrize(
    "code,target,line",
    [
        (
            GAN,
            None,
            "gpu2npu: error: the main script 'main.py' never moves model (the default -t) to the device, "
            "and several variables could be the model (netG, netD: moved to the device, their .parameters() "
            "passed to a call); name the model with -t, or several separated by commas to wrap each "
            "(-t netG,netD)",
        ),
        (
            NOT_MOVED,
            None,
            "gpu2npu: error: the main script 'main.py' never moves model (the default -t) to the device, "
            "and no variable looks like the model (moved to the device, its .parameters() passed to a call "
            "such as an optimizer); name the model with -t",
        ),
        (
            GAN,
            "model",
            "gpu2npu: error: the main script 'main.py' never moves -t 'model' to the device (the variables "
            "that could be the model: netG, netD); name the model with -t (a variable moved to the device, "
            "such as model = model.to(device))",
        ),
        (
            NOT_MOVED,
            "net",
            "gpu2npu: error: the main script 'main.py' never moves -t 'net' to the device; name the model "
            "with -t (a variable moved to the device, such as model = model.to(device))",
        ),
        (
            GAN,
            "netG,model,net",
            "gpu2npu: error: the main script 'main.py' never moves -t 'model, net' to the device (the "
            "variables that could be the model: netG, netD); name the model with -t (a variable moved to "
            "the device, such as model = model.to(device))",
        ),
        (
            GAN,
            "netG,netG",
            "gpu2npu: error: -t 'netG,netG' names a model twice; name each model once",
        ),
        (
            FACTORY,
            None,
            "gpu2npu: error: the main script 'main.py' never moves model (the default -t) to the device"
            + BUILT_ELSEWHERE,
        ),
        (
            FACTORY,
            "model",
            "gpu2npu: error: the main script 'main.py' never moves -t 'model' to the device"
            + BUILT_ELSEWHERE,
        ),
    ],
    ids=[
        "several",
        "none",
        "-t model not moved",
        "-t net not moved",
        "two of three not moved",
        "twice",
        "built elsewhere",
        "-t model built elsewhere",
    ],
)
def test_a_model_that_is_not_found_is_one_line_and_writes_nothing(tmp_path, code, target, line):
    result, _ = one_script(tmp_path, code, *(("-t", target) if target else ()))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line]
    assert not (tmp_path / "out").exists()


GAN_MULTI = (
    "import torch\n"
    + PROCESS_GROUP
    + """
netG = torch.nn.Linear(4, 8).npu()
netG = torch.nn.parallel.DistributedDataParallel(netG, device_ids=[LOCAL_RANK])
netD = torch.nn.Linear(8, 1).npu()
netD = torch.nn.parallel.DistributedDataParallel(netD, device_ids=[LOCAL_RANK])
optimizerG = torch.optim.Adam(netG.parameters())
optimizerD = torch.optim.Adam([{'params': netD.parameters()}])
for epoch in range(2):
    netD(netG(torch.randn(2, 4).npu())).sum().backward()
"""
)
UNWRAPPED = (
    "netD is moved to the device and its .parameters() are passed to a call (an optimizer), but it is "
    "not wrapped in DistributedDataParallel: each process would train a copy of its own; if it is "
    "trained, name it with the model in -t, separated by a comma (-t MODEL,netD)"
)


def test_several_models_named_by_t_are_each_wrapped_and_a_trained_one_left_out_is_reported(tmp_path):
    """A GAN trains netG and netD: -t netG,netD wraps both, each after its own move; -t netG alone
    wraps netG and reports netD, whose copies would drift apart."""
    both, main = one_script(tmp_path, GAN, "-t", "netG,netD", name="both")
    assert both.returncode == 0, both.stderr
    assert main.read_text() == GAN_MULTI
    assert reported(main) == []
    changes = rows(main.parent / "transplant_result_file" / "change_list.csv")
    assert [row[1] + " " + row[4] for row in changes if row[5] == "G2N741"] == [
        f"3 wrap netG in {DDP.split('(')[0]} after it is moved to the device",
        f"4 wrap netD in {DDP.split('(')[0]} after it is moved to the device",
    ]
    one, one_main = one_script(tmp_path, GAN, "-t", "netG", name="one")
    assert one.returncode == 0, one.stderr
    assert "netD = torch.nn.parallel" not in one_main.read_text()
    assert reported(one_main) == [["4", "4", "netD", UNWRAPPED, "unsupported"]]


APPLIED = """import torch

def init(m):
    torch.nn.init.normal_(m.weight)

model = torch.nn.Linear(2, 2).cuda()
model.apply(init)
model.apply(init)
print(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model(torch.randn(2, 2).cuda()).sum().backward()
"""


def test_the_wrap_goes_after_the_weights_are_drawn(tmp_path):
    """DDP copies rank 0's weights when it is built: model.apply(init) lines right after the move
    draw the weights first, so every process starts from the same ones."""
    result, main = one_script(tmp_path, APPLIED)
    assert result.returncode == 0, result.stderr
    lines = main.read_text().splitlines()
    wrap = lines.index(f"model = {DDP.format('model')}")
    assert lines[wrap - 3 : wrap + 2] == [
        "model = torch.nn.Linear(2, 2).npu()",
        "model.apply(init)",
        "model.apply(init)",
        f"model = {DDP.format('model')}",
        "if torch.distributed.get_rank() == 0:",
    ]


# RAFT's train.py: the model is put in a DataParallel before it is moved, and .module is read
IN_PLACE = """import torch
import torch.nn as nn


def train(args):
    model = nn.DataParallel(Net(args), device_ids=args.gpus)
    model.load_state_dict(torch.load(args.restore_ckpt), strict=False)
    model.cuda()
    model.module.freeze_bn()
    for epoch in range(2):
        model(torch.randn(1, 2).cuda()).sum().backward()
    torch.save(model.state_dict(), 'raft.pth')
"""


@pytest.mark.parametrize(
    "line, wrapped",
    [
        # before the move, .module read (kept by the full migration): moved as it is wrapped
        ("    model = nn.DataParallel(Net(args), device_ids=args.gpus)", "Net(args).npu()"),
        # its own move after it
        ("    model = nn.DataParallel(module=Net(args)).cuda()", "Net(args).npu()"),
        # after the move (pytorch-cifar's, on no condition): the model is on the device already
        ("    model = Net(args).cuda()\n    model = torch.nn.parallel.DataParallel(model)", "model"),
    ],
)
def test_the_wrap_takes_the_place_of_a_data_parallel_of_the_model(tmp_path, line, wrapped):
    """DDP has DataParallel's .module and gives checkpoints the same 'module.' keys: the script's
    other lines stay as written (no wrap of the wrapper, no .module added), and the full
    migration's rows on the DataParallel go."""
    code = IN_PLACE.replace("    model = nn.DataParallel(Net(args), device_ids=args.gpus)", line)
    result, main = one_script(tmp_path, code)
    assert result.returncode == 0, result.stderr
    moved = "    model = Net(args).npu()\n" if wrapped == "model" else ""
    assert main.read_text() == (
        "import torch\nimport torch_npu\nimport torch.nn as nn\n"
        + PROCESS_GROUP.replace("import torch_npu\n", "")
        + "\n\ndef train(args):\n"
        + moved
        + f"    model = {DDP.format(wrapped)}\n"
        "    model.load_state_dict(torch.load(args.restore_ckpt), strict=False)\n"
        "    model.npu()\n"
        "    model.module.freeze_bn()\n"
        "    for epoch in range(2):\n"
        "        model(torch.randn(1, 2).npu()).sum().backward()\n"
        "    if torch.distributed.get_rank() == 0:\n"
        "        torch.save(model.state_dict(), 'raft.pth')\n"
    )
    reports = main.parent / "transplant_result_file"
    assert [
        row[1:3] + row[4:6] for row in rows(reports / "change_list.csv") if row[5] in ("G2N730", "G2N741")
    ] == [
        [
            str(6 + bool(moved)),
            str(6 + bool(moved)),
            f"wrap model in {DDP.split('(')[0]} in place of its DataParallel (the same .module and "
            "checkpoint keys)",
            "G2N741",
        ]
    ]
    assert [row for row in rows(reports / "unsupported_api.csv") if "DataParallel" in row[4]] == []


def test_a_data_parallel_on_a_condition_is_replaced_by_the_model_and_wrapped_after_the_move(tmp_path):
    """``if torch.cuda.device_count() > 1: model = DataParallel(model)`` may not run: the wrap stays
    after the move, on no condition, and the checkpoints go through .module."""
    code = IN_PLACE.replace(
        "    model = nn.DataParallel(Net(args), device_ids=args.gpus)\n",
        "    model = Net(args)\n    if args.multi:\n        model = nn.DataParallel(model)\n",
    ).replace("    model.module.freeze_bn()\n", "")
    result, main = one_script(tmp_path, code)
    assert result.returncode == 0, result.stderr
    text = main.read_text()
    assert "    if args.multi:\n        model = model\n" in text
    assert f"    model.npu()\n    model = {DDP.format('model')}\n" in text
    assert "        torch.save(model.module.state_dict(), 'raft.pth')\n" in text


def test_each_wrap_goes_after_its_model_s_weights_are_drawn_in_a_run_of_them(tmp_path):
    """PyTorch-GAN's dcgan.py moves both models in one if, then draws the generator's weights and
    the discriminator's: each wrap goes after its own model's .apply line."""
    code = (
        "import torch\n\ndef init(m):\n    torch.nn.init.normal_(m.weight)\n\n"
        "generator = torch.nn.Linear(2, 2)\ndiscriminator = torch.nn.Linear(2, 1)\n"
        "if torch.cuda.is_available():\n    generator.cuda()\n    discriminator.cuda()\n\n"
        "# Initialize weights\ngenerator.apply(init)\ndiscriminator.apply(init)\n"
        "for epoch in range(2):\n    discriminator(generator(torch.randn(2, 2).cuda())).sum().backward()\n"
    )
    for models in ("generator,discriminator", "discriminator,generator"):
        result, main = one_script(tmp_path, code, "-t", models, name=models.replace(",", "_"))
        assert result.returncode == 0, result.stderr
        lines = main.read_text().splitlines()
        start = lines.index("# Initialize weights")
        assert lines[start : start + 5] == [
            "# Initialize weights",
            "generator.apply(init)",
            f"generator = {DDP.format('generator')}",
            "discriminator.apply(init)",
            f"discriminator = {DDP.format('discriminator')}",
        ]


FUNCTIONS = """import torch

net = torch.nn.Linear(2, 2)


def save(path):
    torch.save(net.state_dict(), path)


def early():
    net.load_state_dict(torch.load('x.pt'))


def mixed():
    return net.state_dict()


def unused():
    return net.state_dict()


def own():
    net = torch.nn.Linear(2, 2)
    return net.state_dict()


def declared():
    global net
    return net.state_dict()


class Saver:
    def save(self):
        return net.state_dict()


early()
mixed()
net = net.cuda()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
callback = declared
for epoch in range(2):
    net(torch.randn(1, 2).cuda()).sum().backward()
    save('a.pt')
    mixed()
    own()
"""


def test_checkpoints_in_functions_go_through_module_when_they_run_after_the_wrap_only(tmp_path):
    """save() is called only after the wrap: .module; early() only before it: as written; mixed()
    before and after, unused() never, declared() also handed over as a value, a method: kept and
    reported; own() has a net of its own."""
    result, main = one_script(tmp_path, FUNCTIONS, "-t", "net")
    assert result.returncode == 0, result.stderr
    expected = (
        FUNCTIONS.replace("import torch\n", "import torch\n" + PROCESS_GROUP, 1)
        .replace(
            "    torch.save(net.state_dict(), path)",
            "    if torch.distributed.get_rank() == 0:\n        torch.save(net.module.state_dict(), path)",
        )
        .replace("net = net.cuda()\n", "net = net.npu()\nnet = " + DDP.format("net") + "\n")
        .replace(".cuda()).sum()", ".npu()).sum()")
        .replace("    save('a.pt')", "    if torch.distributed.get_rank() == 0:\n        save('a.pt')")
    )
    assert main.read_text() == expected
    tip = (
        "net is wrapped in DistributedDataParallel, but this function is not only called after the wrap "
        "(it is called before it too, used otherwise, or not called in the main script): left as it is; "
        "where it runs on the wrapped model, go through net.module so that checkpoints keep their keys"
    )
    assert reported(main) == [
        [line, line, "net.state_dict", tip, "unsupported"] for line in ("15", "19", "29", "34")
    ]


def test_closures_of_the_function_that_wraps_the_model_go_through_module(tmp_path):
    code = (
        "import torch\n\n\ndef main():\n    model = torch.nn.Linear(2, 2)\n\n"
        "    def save(path):\n        torch.save(model.state_dict(), path)\n\n"
        "    def resume(path):\n        model.load_state_dict(torch.load(path))\n\n"
        "    resume('a.pt')\n    model = model.cuda()\n"
        "    for epoch in range(2):\n        save('a.pt')\n        resume('a.pt')\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    result, main = one_script(tmp_path, code)
    assert result.returncode == 0, result.stderr
    text = main.read_text()
    assert "        torch.save(model.module.state_dict(), path)\n" in text
    assert "        model.load_state_dict(torch.load(path))\n" in text  # also runs before the wrap
    assert [row[:3] for row in reported(main)] == [["11", "11", "model.load_state_dict"]]


def test_a_model_built_again_after_the_wrap_is_the_bare_one(tmp_path):
    """DeepSpeedExamples' cifar10_tutorial.py saves, then builds net again and loads into it."""
    code = (
        "import torch\n\nnet = torch.nn.Linear(2, 2)\nnet.to('cuda')\n"
        "optimizer = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "for epoch in range(2):\n    net(torch.randn(1, 2).cuda()).sum().backward()\n"
        "torch.save(net.state_dict(), 'n.pt')\nnet = torch.nn.Linear(2, 2)\n"
        "net.load_state_dict(torch.load('n.pt'))\n"
    )
    result, main = one_script(tmp_path, code, "-t", "net")
    assert result.returncode == 0, result.stderr
    assert main.read_text().endswith(
        "if torch.distributed.get_rank() == 0:\n    torch.save(net.module.state_dict(), 'n.pt')\n"
        "torch.distributed.barrier()\nnet = torch.nn.Linear(2, 2)\nnet.load_state_dict(torch.load('n.pt'))\n"
    )
    tip = (
        "net is bound again after it is wrapped in DistributedDataParallel (a model built afresh): left as "
        "it is, on the bare model; where net still holds the wrapped one, go through net.module so that "
        "checkpoints keep their keys"
    )
    assert reported(main) == [["10", "10", "net.load_state_dict", tip, "supported_with_limits"]]


def test_a_model_moved_in_the_main_guard_is_wrapped_there_not_after_the_training(tmp_path):
    """pytorch/examples' gat/main.py trains in if __name__ == '__main__': at module level."""
    code = (
        "import torch\n\nif __name__ == '__main__':\n    model = torch.nn.Linear(2, 2).cuda()\n"
        "    for epoch in range(2):\n        model(torch.randn(1, 2).cuda()).sum().backward()\n"
        "    torch.save(model.state_dict(), 'm.pt')\n"
    )
    result, main = one_script(tmp_path, code)
    assert result.returncode == 0, result.stderr
    assert main.read_text() == (
        "import torch\n" + PROCESS_GROUP + "\nif __name__ == '__main__':\n"
        "    model = torch.nn.Linear(2, 2).npu()\n    model = " + DDP.format("model") + "\n"
        "    for epoch in range(2):\n        model(torch.randn(1, 2).npu()).sum().backward()\n"
        "    if torch.distributed.get_rank() == 0:\n        torch.save(model.module.state_dict(), 'm.pt')\n"
    )


def test_a_model_wrapped_in_a_function_that_returns_it_is_reported_at_the_return(tmp_path):
    """SRGAN-PyTorch's build_model moves, wraps and returns the generator; main() loads the
    pretrained weights through the repository's own helper, which keeps only the keys the model has:
    with the 'module.' keys of the wrapper it loaded nothing, with no row."""
    code = (
        "import torch\n\n\ndef build_model():\n    g = torch.nn.Linear(2, 2)\n    g = g.cuda()\n"
        "    return g, 1\n\n\ndef main():\n    g, _ = build_model()\n"
        "    opt = torch.optim.SGD(g.parameters(), lr=0.1)\n"
        "    for epoch in range(2):\n        g(torch.randn(1, 2).cuda()).sum().backward()\n"
    )
    result, main = one_script(tmp_path, code, "-t", "g")
    assert result.returncode == 0, result.stderr
    assert "    g = g.npu()\n    g = " + DDP.format("g") + "\n    return g, 1\n" in main.read_text()
    tip = (
        "g is wrapped in DistributedDataParallel in this function, which returns it: its callers get the "
        "wrapper, whose state_dict keys start with 'module.' and which has none of the model's own "
        "attributes; where a caller saves or loads a checkpoint (its own helpers too) or reads such an "
        "attribute, go through g.module"
    )
    assert reported(main) == [["7", "7", "g", tip, "supported_with_limits"]]


def test_an_import_of_a_package_named_as_the_model_is_not_read_through_module(tmp_path):
    """A package named like the model (YOLO repositories have model/): `import model.loss` after the
    wrap (aliased, so that the name still holds the model) names the package, not an attribute of
    the wrapped model."""
    code = (
        "import torch\n\nif __name__ == '__main__':\n    model = torch.nn.Linear(2, 2).cuda()\n"
        "    for epoch in range(2):\n        model(torch.randn(1, 2).cuda()).sum().backward()\n"
        "    import model.loss as losses\n    from model.utils import show\n    show(model.weight, losses)\n"
    )
    result, main = one_script(tmp_path, code)
    assert result.returncode == 0, result.stderr
    assert main.read_text().endswith(
        "    import model.loss as losses\n    from model.utils import show\n"
        "    show(model.module.weight, losses)\n"
    )


# the repros (the Fabric one without its accelerator="cuda"): a Lightning Fabric script and a
# DeepSpeed one, wrapped in DDP and guarded before
FABRIC = """import torch
import lightning as L


def main():
    fabric = L.Fabric(devices=4, strategy="fsdp")
    fabric.launch()
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.AdamW(model.parameters())
    model, optimizer = fabric.setup(model, optimizer)
    for epoch in range(2):
        loss = model(torch.randn(4, 8, device=fabric.device)).sum()
        fabric.backward(loss)
        optimizer.step()
        fabric.save("ckpt.pt", {"model": model})


if __name__ == "__main__":
    main()
"""
DEEPSPEED = """import torch
import deepspeed


def main():
    model = torch.nn.Linear(8, 8)
    model = model.cuda()
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                                   config="ds_config.json")
    for epoch in range(2):
        loss = engine(torch.randn(4, 8).cuda()).sum()
        engine.backward(loss)
        engine.step()


if __name__ == "__main__":
    main()
"""
LITE = """import torch
from pytorch_lightning.lite import LightningLite


class Lite(LightningLite):
    def run(self):
        model = torch.nn.Linear(2, 2)
        model.cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model, optimizer = self.setup(model, optimizer, move_to_device=False)
        for epoch in range(2):
            self.backward(model(torch.ones(2).cuda()).sum())
            optimizer.step()


if __name__ == "__main__":
    Lite(devices="auto", accelerator="gpu").run()
"""
SPAWNS = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(gpu, world_size):
    dist.init_process_group('nccl', init_method='tcp://localhost:58472', rank=gpu, world_size=world_size)
    torch.cuda.set_device(gpu)
    model = torch.nn.Linear(8, 8).cuda(gpu)
    for epoch in range(2):
        model(torch.ones(8).cuda(gpu)).sum().backward()


if __name__ == "__main__":
    mp.spawn(worker, (2,), 2)
"""


def already_tip(setup: str) -> str:
    return (
        f"the main script distributes itself ({setup}): left as it is, without DistributedDataParallel, "
        "DistributedSampler or rank-0 guards (the full migration still applies); start it with its own "
        "launcher, or with run_distributed_npu.sh if it reads torchrun's environment"
    )


@pytest.mark.parametrize(
    "code,migrated,setup,line",
    [
        (
            FABRIC,
            FABRIC.replace("import torch\n", "import torch\nimport torch_npu\n"),
            "lightning.Fabric",
            "6",
        ),
        (
            DEEPSPEED,
            DEEPSPEED.replace("import torch\n", "import torch\nimport torch_npu\n").replace(
                ".cuda()", ".npu()"
            ),
            "deepspeed.initialize",
            "8",
        ),
        (
            LITE,
            LITE.replace("import torch\n", "import torch\nimport torch_npu\n").replace(".cuda()", ".npu()"),
            "pytorch_lightning.lite.LightningLite",
            "5",
        ),
    ],
    ids=["lightning fabric", "deepspeed", "lightning lite subclassed"],
)
def test_a_script_another_framework_distributes_keeps_the_full_migration(
    tmp_path, code, migrated, setup, line
):
    result, main = one_script(tmp_path, code)
    assert result.returncode == 0, result.stderr
    # no DDP, no sampler, no rank-0 guard, no process group, and no device selected for it
    assert main.read_text() == migrated
    assert reported(main) == [[line, line, "distributed", already_tip(setup), "supported_with_limits"]]


@pytest.mark.parametrize(
    "imports,call,setup",
    [
        ("from lightning.fabric import Fabric", "fabric = Fabric()", "lightning.fabric.Fabric"),
        ("import lightning_fabric", "fabric = lightning_fabric.Fabric()", "lightning_fabric.Fabric"),
        ("from lightning.pytorch import Trainer", "trainer = Trainer()", "lightning.pytorch.Trainer"),
        ("import pytorch_lightning as pl", "trainer = pl.Trainer()", "pytorch_lightning.Trainer"),
        (
            "import pytorch_lightning as pl",
            "trainer = pl.Trainer.from_argparse_args(args)",
            "pytorch_lightning.Trainer.from_argparse_args",
        ),
        ("from accelerate import Accelerator", "accelerator = Accelerator()", "accelerate.Accelerator"),
        (
            "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP",
            "model = FSDP(model)",
            "torch.distributed.fsdp.FullyShardedDataParallel",
        ),
        (
            "from torch.distributed.fsdp import fully_shard",
            "fully_shard(model)",
            "torch.distributed.fsdp.fully_shard",
        ),
        (
            "from torch.distributed._composable.fsdp import fully_shard",
            "fully_shard(model)",
            "torch.distributed._composable.fsdp.fully_shard",
        ),
        ("from transformers import Trainer", "trainer = Trainer(model=model)", "transformers.Trainer"),
        ("import flashy", "flashy.distrib.init()", "flashy.distrib.init"),  # audiocraft's train.py
        (
            "from torch.utils.data import DataLoader, DistributedSampler",
            "loader = DataLoader(range(8), sampler=DistributedSampler(range(8)))",
            "torch.utils.data.DistributedSampler",
        ),
    ],
)
def test_each_framework_that_distributes_the_script_is_recognised(tmp_path, imports, call, setup):
    code = (
        f"import torch\n{imports}\n\nmodel = torch.nn.Linear(8, 8).cuda()\n{call}\n"
        "for epoch in range(2):\n    print(epoch)\ntorch.save(model.state_dict(), 'm.pt')\n"
    )
    result, main = one_script(tmp_path, code)
    assert result.returncode == 0, result.stderr
    assert main.read_text() == (
        code.replace("import torch\n", "import torch\nimport torch_npu\n", 1).replace(".cuda()", ".npu()")
    )
    assert reported(main) == [["5", "5", "distributed", already_tip(setup), "supported_with_limits"]]


def test_a_lightning_trainer_script_needs_no_training_loop_of_its_own(tmp_path):
    code = (
        "import torch\nimport lightning as L\n\nmodel = torch.nn.Linear(8, 8)\n"
        "trainer = L.Trainer(accelerator='cuda', devices=2)\ntrainer.fit(model)\n"
    )
    result, main = one_script(tmp_path, code)
    assert result.returncode == 0, result.stderr
    assert reported(main) == [
        ["5", "5", "distributed", already_tip("lightning.Trainer"), "supported_with_limits"]
    ]


SETS_UP = "import torch.distributed as dist\n\n\ndef {name}(args):\n    dist.init_process_group('nccl')\n"
TRAINS = (
    "model = torch.nn.Linear(2, 2).cuda()\nfor epoch in range(2):\n"
    "    model(torch.ones(2).cuda()).sum().backward()\n"
)


@pytest.mark.parametrize(
    "files,line,module",
    [
        (  # LoRA's gpt2_ft.py calls parse_gpu() of gpu.py, which starts the process group
            {
                "utils/gpu.py": SETS_UP.format(name="parse_gpu"),
                "utils/__init__.py": "",
                "main.py": "import torch\nfrom utils.gpu import parse_gpu\n\nparse_gpu(None)\n" + TRAINS,
            },
            "2",
            "utils/gpu.py",
        ),
        (  # timm's train.py: ``from timm import utils``, whose __init__ imports it from .distributed
            {
                "mylib/utils/distributed.py": SETS_UP.format(name="init_distributed_device"),
                "mylib/utils/__init__.py": "from .distributed import init_distributed_device\n",
                "mylib/__init__.py": "",
                "main.py": "import torch\nimport torchvision.utils\nfrom mylib import utils\n\n"
                "utils.init_distributed_device(None)\n" + TRAINS,
            },
            "3",
            "mylib/utils/distributed.py",
        ),
        (  # imagen-pytorch's __init__ imports its Accelerate trainer by its absolute name
            {
                "mylib/trainer.py": SETS_UP.format(name="build"),
                "mylib/__init__.py": "from mylib.trainer import build\n",
                "main.py": "import torch\nfrom mylib import build\n\nbuild(None)\n" + TRAINS,
            },
            "2",
            "mylib/trainer.py",
        ),
    ],
    ids=["module", "package re-export", "absolute re-export"],
)
def test_a_main_script_set_up_by_a_module_it_imports_is_left_alone(tmp_path, files, line, module):
    """Before, a second init_process_group went into the script ("trying to initialize the
    default process group twice") and DDP around the model."""
    project = tmp_path / "proj"
    for rel, text in files.items():
        write(project / rel, text)
    result, out = distributed(tmp_path, source=project, main=project / "main.py")
    assert result.returncode == 0, result.stderr
    assert "init_process_group" not in (out / "main.py").read_text()
    assert "DistributedDataParallel" not in (out / "main.py").read_text()
    setup = f"torch.distributed.init_process_group, in {module}"
    assert reported(out / "main.py") == [
        [line, line, "distributed", already_tip(setup), "supported_with_limits"]
    ]
    # its launcher says so (detectron2's own launcher ignores torchrun's environment)
    header = (out / "run_distributed_npu.sh").read_text().splitlines()[3:5]
    assert header == [
        f"# The script distributes itself ({setup}).",
        "# torchrun gives each process RANK, LOCAL_RANK and WORLD_SIZE, which it may not read (its own",
    ]


def test_a_main_script_whose_imported_module_narrows_the_visible_devices_selects_no_device_at_import(
    tmp_path,
):
    """consistency_models' ``dist_util.setup_dist`` narrows the visible devices to the MPI rank's
    card; ``set_device(LOCAL_RANK)`` at import came first (there is no LOCAL_RANK under mpiexec)
    and voided it: every rank trained on card 0. The script is distributed already: it gets no
    device block at all (its code does not read LOCAL_RANK)."""
    project = tmp_path / "cm"
    write(
        project / "cm" / "dist_util.py",
        "import os\nimport torch.distributed as dist\n\n\ndef setup_dist():\n"
        "    os.environ['CUDA_VISIBLE_DEVICES'] = os.environ['PMI_RANK']\n"
        "    dist.init_process_group('nccl')\n",
    )
    code = (
        "import torch\nfrom cm import dist_util\n\ndist_util.setup_dist()\n"
        "model = torch.nn.Linear(2, 2).cuda()\nfor epoch in range(2):\n"
        "    model(torch.ones(2).cuda()).sum().backward()\n"
    )
    main = write(project / "edm_train.py", code)
    result, out = distributed(tmp_path, source=project, main=main)
    assert result.returncode == 0, result.stderr
    assert (out / "edm_train.py").read_text() == (
        "import torch\nimport torch_npu\nfrom cm import dist_util\n\ndist_util.setup_dist()\n"
        "model = torch.nn.Linear(2, 2).npu()\nfor epoch in range(2):\n"
        "    model(torch.ones(2).npu()).sum().backward()\n"
    )
    inserted = [row for row in rows(out / "transplant_result_file" / "change_list.csv") if row[5] == "G2N740"]
    assert inserted == []


@pytest.mark.parametrize(
    "function,problem",
    [
        ("{model}.module", ""),
        (
            "{modle}.module",
            "'tips' function: the placeholders are {model} and {setup} (write {{ for a brace)",
        ),
    ],
)
def test_the_wrapper_rule_tips_name_only_the_model_and_the_setup(tmp_path, function, problem):
    rule = write(
        tmp_path / "ddp.yaml",
        "rules:\n  DistributedDataParallelRule:\n    - id: X1\n"
        '      wrapper: "torch.nn.parallel.DistributedDataParallel({model})"\n'
        f'      tips: {{already: "{{setup}}", no_move: "-", inferred: "{{model}}", unwrapped: "{{model}}",\n'
        f'             rebound: "-", returned: "{{model}}", function: "{function}"}}\n',
    )
    result = run_cli("rules", "validate", rule)
    if not problem:
        assert (result.returncode, result.stdout) == (0, f"{rule}: 1 rule(s), valid\n"), result.stderr
        return
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"gpu2npu: error: {rule}: rules.DistributedDataParallelRule[0]: {problem}; "
        "fix the rule file (see 'Rule files' in README.md)"
    ]


NOT_IN_INPUT = (
    "gpu2npu: error: -m '{main}' is not a Python file of the input '{input}'; "
    "name a .py file inside the input"
)


@pytest.mark.parametrize(
    "main,target,line",
    [
        (
            "elsewhere.py",
            "model",
            NOT_IN_INPUT,
        ),
        (
            "README.md",
            "model",
            NOT_IN_INPUT,
        ),
        (
            "train.py",
            "model[0]",
            "gpu2npu: error: -t 'model[0]' is not a variable or attribute path; "
            "give one such as model or self.model (several: separated by commas)",
        ),
        (
            "lib/data.py",
            "model",
            "gpu2npu: error: the main script 'lib/data.py' has no training loop (a loop over epochs, "
            "or one calling .backward() or .step()); name the script that trains with -m",
        ),
    ],
    ids=["outside the input", "not python", "bad target", "no training loop"],
)
def test_bad_main_or_target_is_one_line_and_writes_nothing(tmp_path, main, target, line):
    source = tmp_path / "proj"
    shutil.copytree(BEFORE, source)
    (source / "README.md").write_text("# readme\n")
    write(tmp_path / "elsewhere.py", "for epoch in range(2):\n    pass\n")
    path = tmp_path / main if main == "elsewhere.py" else source / main
    result, _ = distributed(tmp_path, "-t", target, source=source, main=path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line.format(main=path, input=source)]
    assert not (tmp_path / "out").exists()


def test_distributed_without_main_is_a_usage_error(tmp_path):
    result = run_cli("migrate", "-i", BEFORE, "-o", tmp_path / "out", "distributed")
    assert result.returncode == 2
    assert "Missing option '-m' / '--main'" in result.stderr
    assert not (tmp_path / "out").exists()


def test_diff_writes_nothing_and_shows_the_multi_card_changes(tmp_path):
    result, _ = distributed(tmp_path, "--diff")
    assert result.returncode == 2  # --diff belongs before the subcommand
    result = run_cli(
        "migrate",
        "-i",
        BEFORE,
        "-o",
        tmp_path / "out",
        "-v",
        "2.8.0",
        "--diff",
        "distributed",
        "-m",
        BEFORE / "train.py",
    )
    assert result.returncode == 0, result.stderr
    assert (
        "+    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[LOCAL_RANK])\n"
        in result.stdout
    )
    assert not (tmp_path / "out").exists()


def test_check_in_distributed_mode_lists_the_changes_and_writes_nothing(tmp_path):
    copy = tmp_path / "proj"
    shutil.copytree(BEFORE, copy)
    before = tree_files(copy)
    result = run_cli(
        "check",
        copy,
        "-v",
        "2.8.0",
        "--mode",
        "distributed",
        "--entry",
        copy / "train.py",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr  # the batch_sampler loader is manual work
    findings = json.loads(result.stdout)["findings"]
    found = sorted({(f["file"], f["line"], f["rule"]) for f in findings if f["rule"].startswith("G2N74")})
    assert found == [
        ("proj/lib/data.py", 2, "G2N740"),
        ("proj/train.py", 9, "G2N740"),
        ("proj/train.py", 17, "G2N742"),
        ("proj/train.py", 38, "G2N741"),
        ("proj/train.py", 43, "G2N742"),
        ("proj/train.py", 44, "G2N742"),
        ("proj/train.py", 47, "G2N742"),
        ("proj/train.py", 48, "G2N743"),
        ("proj/train.py", 49, "G2N743"),
        ("proj/train.py", 50, "G2N741"),
        ("proj/train.py", 50, "G2N743"),
        ("proj/train.py", 51, "G2N741"),
    ]
    assert tree_files(copy) == before


def test_help_shows_each_mode_with_an_example_and_needs_no_input():
    general = run_cli("migrate", "--help")
    assert general.returncode == 0
    assert "-s                   x = x.to('cuda:0')   ->  x = x.to(f'npu:{DEVICE_ID}')" in general.stdout
    assert "distributed -m MAIN  model = model.cuda() ->  model = model.npu()" in general.stdout
    sub = run_cli("migrate", "distributed", "--help")
    assert sub.returncode == 0, sub.stderr
    assert "-t, --target_model, --target-model TEXT" in sub.stdout and "--shard-eval" in sub.stdout


SAVE_THEN_LOAD = """import torch

PATH = "net.pth"
net = torch.nn.Linear(2, 2).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(2):
    net(torch.ones(1, 2).cuda()).sum().backward()
    opt.step()
torch.save(net.state_dict(), PATH)
torch.save(net.state_dict(), "last.pth")
net = torch.nn.Linear(2, 2)
net.load_state_dict(torch.load(PATH))
"""


def test_a_file_saved_on_rank_0_and_read_after_is_waited_for(tmp_path):
    """DeepSpeedExamples' cifar10_tutorial.py saves the model, then builds it again from the file:
    with the save on rank 0 only, the other processes read a file rank 0 was still writing
    (EOFError), or a stale one. A barrier follows the save of a file the script reads later; a
    file nothing reads needs none."""
    source = tmp_path / "proj"
    write(source / "train.py", SAVE_THEN_LOAD)
    result, out = distributed(tmp_path, source=source)
    assert result.returncode == 0, result.stderr
    text = (out / "train.py").read_text()
    assert (
        "if torch.distributed.get_rank() == 0:\n"
        "    torch.save(net.module.state_dict(), PATH)\n"
        "torch.distributed.barrier()\n"
        "if torch.distributed.get_rank() == 0:\n"
        '    torch.save(net.module.state_dict(), "last.pth")\n'
        "net = torch.nn.Linear(2, 2)\n"
    ) in text
    changes = rows(out / "transplant_result_file" / "change_list.csv")
    assert [row[3:6] for row in changes if row[4].startswith("wait")] == [
        ["INSERT", "wait for rank 0's file (torch.distributed.barrier())", "G2N743"]
    ]


OPEN_THEN_SAVE = """import torch
net = torch.nn.Linear(2, 2).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(2):
    net(torch.ones(1, 2).cuda()).sum().backward()
    opt.step()
    with open("model.pt", "wb") as f:
        print("Save model!")
        torch.save(net, f)
with open("model.pt", "rb") as f:
    net = torch.load(f)
"""


def test_a_file_opened_for_a_save_is_opened_on_rank_0_only(tmp_path):
    """TCN opens the file, then saves into it: with the save alone on rank 0, every other process
    still opened the file for writing, which empties it while rank 0 writes or another reads it.
    A with block that only does what goes on rank 0 goes there whole, then waits where the
    script reads the file later."""
    source = tmp_path / "proj"
    write(source / "train.py", OPEN_THEN_SAVE)
    result, out = distributed(tmp_path, source=source)
    assert result.returncode == 0, result.stderr
    text = (out / "train.py").read_text()
    assert (
        "    if torch.distributed.get_rank() == 0:\n"
        '        with open("model.pt", "wb") as f:\n'
        '            print("Save model!")\n'
        "            torch.save(net, f)\n"
        "    torch.distributed.barrier()\n"
        'with open("model.pt", "rb") as f:\n'
    ) in text
    changes = rows(out / "transplant_result_file" / "change_list.csv")
    assert [row[1] + " " + row[4] for row in changes if row[5] == "G2N743"] == [
        "7 run it on rank 0 only (torch.distributed.get_rank() == 0)",
        "7 wait for rank 0's file (torch.distributed.barrier())",
    ]


FOLDER_THEN_SAVE = """import os
import torch
net = torch.nn.Linear(2, 2).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(2):
    net(torch.ones(1, 2).cuda()).sum().backward()
    opt.step()
    if not os.path.isdir('checkpoint'):
        os.mkdir('checkpoint')
    if not os.path.exists(f'logs/{epoch}'):
        os.makedirs(f'logs/{epoch}', 0o755)
    if not os.path.isdir('other'):
        os.mkdir('checkpoint')
    torch.save(net.state_dict(), './checkpoint/ckpt.pth')
"""


def test_a_folder_created_where_it_is_missing_is_created_with_exist_ok(tmp_path):
    """pytorch-cifar tests for its checkpoint folder, then makes it: under torchrun every process
    does both at once, and the one that loses raises FileExistsError (15 in 200 tries of two
    ranks). Each process makes it with exist_ok=True; another folder than the one tested stays."""
    source = tmp_path / "proj"
    write(source / "train.py", FOLDER_THEN_SAVE)
    result, out = distributed(tmp_path, source=source)
    assert result.returncode == 0, result.stderr
    text = (out / "train.py").read_text()
    assert (
        "    if not os.path.isdir('checkpoint'):\n"
        "        os.makedirs('checkpoint', exist_ok=True)\n"
        "    if not os.path.exists(f'logs/{epoch}'):\n"
        "        os.makedirs(f'logs/{epoch}', 0o755, exist_ok=True)\n"
        "    if not os.path.isdir('other'):\n"
        "        os.mkdir('checkpoint')\n"
        "    if torch.distributed.get_rank() == 0:\n"
    ) in text
    changes = rows(out / "transplant_result_file" / "change_list.csv")
    assert [row[1] + " " + row[4] for row in changes if row[5] == "G2N743"] == [
        "8 create the folder with exist_ok=True: every process tests for it and creates it at once",
        "10 create the folder with exist_ok=True: every process tests for it and creates it at once",
        "14 run it on rank 0 only (torch.distributed.get_rank() == 0)",
    ]


SCALED_BATCH = """import argparse
import torch
from torch.utils.data import DataLoader

def train(opt, dataset):
    model = torch.nn.DataParallel(torch.nn.Linear(2, 2)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(dataset, batch_size=opt.batch_size, shuffle=True)
    for epoch in range(2):
        for x in loader:
            model(x.cuda()).sum().backward()
            optimizer.step()

if __name__ == '__main__':
    opt = argparse.ArgumentParser().parse_args()
    opt.num_gpu = torch.cuda.device_count()
    if opt.num_gpu > 1:
        opt.batch_size = opt.batch_size * opt.num_gpu
    opt.workers = 4 * opt.num_gpu
    batch_size = 8
    batch_size *= torch.cuda.device_count()
    train(opt, None)
"""


def test_a_batch_size_multiplied_by_the_card_count_is_reported(tmp_path):
    """deep-text-recognition-benchmark scales its batch by torch.cuda.device_count() for
    DataParallel to split it; under torchrun every process loads that whole batch, so the global
    batch grows by the card count again. The worker count, not a batch, gets no row."""
    source = tmp_path / "proj"
    write(source / "train.py", SCALED_BATCH)
    result, out = distributed(tmp_path, source=source)
    assert result.returncode == 0, result.stderr
    tip = (
        "the batch size is multiplied by the number of cards, DataParallel's way of splitting one batch "
        "among them; under torchrun each process loads a batch of its own, so this makes the global batch "
        "that many times larger again (and each card's batch as large as the original's whole batch): drop "
        "the multiplication, so that each process loads the original's per-card batch"
    )
    reported = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [row[:6] + row[-1:] for row in reported if row[3] == "batch_size"] == [
        ["train.py", "18", "18", "batch_size", tip, "supported_with_limits", "rules:G2N742"],
        ["train.py", "21", "21", "batch_size", tip, "supported_with_limits", "rules:G2N742"],
    ]


CONFIG_SHUFFLE = """import torch
from torch.utils.data import DataLoader

def main(cfg, train_set, test_set, extra_set):
    model = torch.nn.Linear(2, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = DataLoader(train_set, shuffle=cfg["TRAIN"]["SHUFFLE"])
    paired_test_dataloader = DataLoader(test_set, shuffle=cfg["TEST"]["SHUFFLE"])
    other = DataLoader(extra_set, shuffle=cfg["SHUFFLE"])
    for epoch in range(2):
        for x in train_loader:
            model(x.cuda()).sum().backward()
            opt.step()

if __name__ == "__main__":
    main(None, None, None, None)
"""


def test_a_test_loader_whose_shuffle_comes_from_a_config_stays_whole(tmp_path):
    """SRGAN's Set5 loader takes shuffle from its config (False): sharded, each rank scored a
    fifth of the images and rank 0 picked the best checkpoint on its share. A loader whose
    shuffle is a value is a training loader unless its names say test, val or eval."""
    source = tmp_path / "proj"
    write(source / "train.py", CONFIG_SHUFFLE)
    result, out = distributed(tmp_path, source=source)
    assert result.returncode == 0, result.stderr
    text = (out / "train.py").read_text()
    sampler = "sampler=torch.utils.data.distributed.DistributedSampler"
    assert (
        f'    train_loader = DataLoader(train_set, {sampler}(train_set, shuffle=cfg["TRAIN"]["SHUFFLE"]))\n'
        in text
    )
    assert '    paired_test_dataloader = DataLoader(test_set, shuffle=cfg["TEST"]["SHUFFLE"])\n' in text
    assert f'    other = DataLoader(extra_set, {sampler}(extra_set, shuffle=cfg["SHUFFLE"]))\n' in text
    kept = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [row[1] for row in kept if row[-1] == "rules:G2N742"] == ["8"]


def test_a_script_that_spawns_its_own_workers_gets_no_device_selected_in_the_parent(tmp_path):
    """barlowtwins and YOLOX start their workers themselves: a device selected at import would
    claim NPU 0 in the parent, and a forked worker could not use the NPU at all."""
    result, main = one_script(tmp_path, SPAWNS)
    assert result.returncode == 0, result.stderr
    assert main.read_text() == (
        SPAWNS.replace("import torch\n", "import torch\nimport torch_npu\n", 1)
        .replace("'nccl'", "'hccl'")
        .replace("torch.cuda.set_device", "torch.npu.set_device")
        .replace(".cuda(gpu)", ".npu(gpu)")
    )


NO_SAMPLER = """import torch
from torch.utils.data import DataLoader


def loaders(train_set, args):
    train_sampler = None
    train_loader = DataLoader(
        train_set, batch_size=2, shuffle=(train_sampler is None), sampler=train_sampler
    )
    other = DataLoader(train_set, batch_size=2, shuffle=True, sampler=None)
    chosen = None
    if args.weighted:
        chosen = torch.utils.data.WeightedRandomSampler([1.0] * len(train_set), len(train_set))
    weighted = DataLoader(train_set, batch_size=2, sampler=chosen)
    return train_loader, other, weighted


def main(train_set, args):
    model = torch.nn.Linear(1, 1).cuda()
    for epoch in range(2):
        for loader in loaders(train_set, args):
            for x in loader:
                model(x.cuda()).sum().backward()
"""


def test_a_sampler_that_is_none_is_no_sampler_of_the_project(tmp_path):
    """SupContrast passes ``sampler=train_sampler`` with ``train_sampler = None``: taken for the
    project's own sampler, the loader was left whole, every process training on all the data. A
    sampler only ever None is dropped and the loader sharded (keeping the layout before its
    ")"); one the script may set is the project's own and stays, with its row."""
    write(tmp_path / "p" / "main.py", NO_SAMPLER)
    result, out = distributed(tmp_path, source=tmp_path / "p", main=tmp_path / "p" / "main.py")
    assert result.returncode == 0, result.stderr
    text = (out / "main.py").read_text()
    sampler = "torch.utils.data.distributed.DistributedSampler"
    assert (
        "    train_loader = DataLoader(\n"
        f"        train_set, batch_size=2, sampler={sampler}(train_set, shuffle=(train_sampler is None))\n"
        "    )\n"
        f"    other = DataLoader(train_set, batch_size=2, sampler={sampler}(train_set, shuffle=True))\n"
        "    chosen = None\n"
    ) in text
    assert "    weighted = DataLoader(train_set, batch_size=2, sampler=chosen)\n" in text
    kept = [row[:4] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]]
    assert [row for row in kept if row[3] == "torch.utils.data.DataLoader"] == [
        ["main.py", "14", "14", "torch.utils.data.DataLoader"]
    ]


INIT_THROUGH_AN_ALIAS = """import torch


def train(args, build):
    ssd_net = build()
    net = ssd_net
    if args.cuda:
        net = net.cuda()

    if not args.resume:
        print("Initializing weights...")
        ssd_net.extras.apply(weights_init)
        ssd_net.loc.apply(weights_init)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(2):
        net(torch.ones(1)).sum().backward()
"""


def test_the_wrap_follows_the_initialisation_of_submodules_through_an_alias(tmp_path):
    """ssd.pytorch draws its new layers' weights after the move, through the alias ssd_net
    (``net = ssd_net``) and in an ``if not args.resume:``: DDP, wrapped before, copied rank 0's
    old weights, and each process then drew its own. The wrap follows that block now."""
    write(tmp_path / "p" / "train.py", INIT_THROUGH_AN_ALIAS)
    result, out = distributed(tmp_path, "-t", "net", source=tmp_path / "p")
    assert result.returncode == 0, result.stderr
    assert (
        "        ssd_net.loc.apply(weights_init)\n"
        "    net = torch.nn.parallel.DistributedDataParallel(net, device_ids=[LOCAL_RANK])\n"
        "    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)\n"
    ) in (out / "train.py").read_text()


ONLY_DEFINED = '''"""Train a video classification model."""
import torch
import torch.distributed as dist

logger = print


def train(cfg):
    dist.init_process_group("nccl")
    model = torch.nn.Linear(2, 2).cuda()
    for epoch in range(cfg.epochs):
        model(torch.ones(1, 2).cuda()).sum().backward()
'''


def test_a_console_script_module_that_sets_up_its_own_training_is_refused(tmp_path):
    """lightweight-gan's cli.py defines main(), which setup.py names as a console script; its loop
    passes model.train to a retry helper and it sets up its own process group. The launcher ran
    the file as a script: its processes failed to import the package, and would have trained
    nothing. A module started by a console script only is refused like one another file imports."""
    source = tmp_path / "proj"
    write(
        source / "gan" / "cli.py",
        "import torch.distributed as dist\n\n\ndef main():\n    dist.init_process_group('nccl')\n"
        "    while True:\n        retry(model.train)\n",
    )
    write(source / "setup.py", "setup(\n  entry_points={'console_scripts': ['gan = gan.cli:main']},\n)\n")
    result, _ = distributed(tmp_path, source=source, main=source / "gan" / "cli.py")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "gpu2npu: error: the main script 'gan/cli.py' is a module that 'setup.py' starts as a console "
        "script: it only defines its training (no if __name__ == '__main__': and no call of its functions "
        "at its top level), so started by the launcher it would train nothing; name the script that "
        "starts the training with -m, or call its function in an if __name__ == '__main__': block of its own"
    ]
    assert not (tmp_path / "out").exists()


def test_a_main_script_that_only_defines_its_training_is_refused(tmp_path):
    """SlowFast's tools/train_net.py (which tools/run_net.py imports as
    vision.fair.slowfast.tools.train_net) and Real-Time-Voice-Cloning's synthesizer/train.py define
    train() and never call it: each got a launcher whose processes trained nothing (or failed to
    import their package). Such a module is refused, whatever it sets up, naming its importer, and
    nothing is written. Called at its top level, or imported by no one, it is a script."""
    source = tmp_path / "proj"
    write(source / "tools" / "train_net.py", ONLY_DEFINED)
    write(
        source / "tools" / "run_net.py",
        "from vision.fair.slowfast.tools.train_net import train\n\ntrain(None)\n",
    )
    result, _ = distributed(tmp_path, source=source, main=source / "tools" / "train_net.py")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "gpu2npu: error: the main script 'tools/train_net.py' is a module that 'tools/run_net.py' "
        "imports: it only defines its training (no if __name__ == '__main__': and no call of its "
        "functions at its top level), so started by the launcher it would train nothing; name the "
        "script that starts the training with -m, or call its function in an if __name__ == '__main__': "
        "block of its own"
    ]
    assert not (tmp_path / "out").exists()
    # the script the tip names is taken: the module path it imports ends as tools/train_net.py does
    # (stop 53 took it for an outside module and refused run_net.py for having no loop)
    starter = distributed(tmp_path, source=source, main=source / "tools" / "run_net.py", out="starter")[0]
    assert starter.returncode == 0, starter.stderr
    # SlowFast's own run_net.py has no loop: it hands train to misc.launch_job, which spawns one
    # worker per card; that is a script distributed already, left as it is
    write(
        source / "slowfast" / "misc.py",
        "import torch\n\n\ndef launch_job(func):\n    torch.multiprocessing.spawn(func)\n",
    )
    write(source / "tools" / "run_net.py", "from slowfast.misc import launch_job\n\nlaunch_job(print)\n")
    spawned, out = distributed(tmp_path, source=source, main=source / "tools" / "run_net.py", out="spawned")
    assert spawned.returncode == 0, spawned.stderr
    found = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [row[1:4] + [row[4][:85]] for row in found] == [
        [
            "1",
            "1",
            "distributed",
            "the main script distributes itself (torch.multiprocessing.spawn, in slowfast/misc.py)",
        ]
    ]
    called = one_script(tmp_path / "called", ONLY_DEFINED + "\n\ntrain(None)\n")[0]
    assert called.returncode == 0, called.stderr
    alone = one_script(tmp_path / "alone", ONLY_DEFINED)[0]
    assert alone.returncode == 0, alone.stderr


LIBRARY_TRAINER = """import torch


class Trainer:
    def __init__(self, model, loader):
        self.model, self.loader = model, loader

    def run(self):
        while True:
            for x in self.loader:
                self.model(x.cuda()).sum().backward()
"""

BY_HAND = (
    "wrap the model in DistributedDataParallel and give the loader a DistributedSampler by hand in "
    "'mingpt/trainer.py', then start 'projects/adder.py' with torchrun; or call the training from an "
    "if __name__ == '__main__': block of 'mingpt/trainer.py' and name it with -m"
)


@pytest.mark.parametrize(
    "main,line",
    [
        (
            "projects/adder.py",
            "gpu2npu: error: the main script 'projects/adder.py' has no training loop (a loop over epochs, "
            "or one calling .backward() or .step()); the loop it starts is in 'mingpt/trainer.py', and this "
            "mode distributes only a loop of the main script; " + BY_HAND,
        ),
        (
            "mingpt/trainer.py",
            "gpu2npu: error: the main script 'mingpt/trainer.py' is a module that 'projects/adder.py' "
            "imports: it only defines its training (no if __name__ == '__main__': and no call of its "
            "functions at its top level), so started by the launcher it would train nothing; " + BY_HAND,
        ),
    ],
    ids=["the driver", "the library"],
)
def test_a_loop_in_a_library_class_gets_one_way_out_from_either_script(tmp_path, main, line):
    """minGPT trains in mingpt/trainer.py's Trainer.run, which its project scripts start. -m on a
    script said "name the script that trains", -m on the trainer "name the script that starts the
    training": each sent the user to the other. Both now name the two files and the same way out."""
    source = tmp_path / "proj"
    write(source / "mingpt" / "trainer.py", LIBRARY_TRAINER)
    write(
        source / "projects" / "adder.py",
        "import torch\nfrom mingpt.trainer import Trainer\n\nif __name__ == '__main__':\n"
        "    Trainer(torch.nn.Linear(2, 2).cuda(), []).run()\n",
    )
    result, _ = distributed(tmp_path, source=source, main=source / main)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "declared,migrated",
    [
        (
            "parser.add_argument('--local_rank', default=0, type=int)",
            "parser.add_argument('--local_rank', '--local-rank', "
            "default=int(os.environ.get('LOCAL_RANK', 0)), type=int)",
        ),
        (
            "parser.add_argument('--local-rank', type=int)",
            "parser.add_argument('--local-rank', type=int, default=os.environ.get('LOCAL_RANK'))",
        ),
        (
            "parser.add_argument('--local_rank', default=defaults.rank, type=int)",
            "parser.add_argument('--local_rank', '--local-rank', default=defaults.rank, type=int)",
        ),
    ],
    ids=["literal", "type int", "kept"],
)
def test_a_local_rank_option_takes_its_default_from_torchrun(tmp_path, declared, migrated):
    """The launcher's torchrun sets LOCAL_RANK and passes no --local-rank. A default the script
    writes as a number falls back after the variable, none with type=int becomes the variable
    (argparse converts it), and one the migration cannot read is kept and reported."""
    code = (
        "import argparse\n\nimport torch\n\nparser = argparse.ArgumentParser()\n"
        f"{declared}\nargs = parser.parse_args()\n"
        "if __name__ == '__main__':\n    model = torch.nn.Linear(2, 2).cuda()\n"
        "    for epoch in range(2):\n        model(torch.randn(1, 2).cuda()).sum().backward()\n"
    )
    result, main = one_script(tmp_path, code)
    assert result.returncode == 0, result.stderr
    text = main.read_text()
    assert f"\n{migrated}\n" in text
    changed = declared != migrated.replace(", '--local-rank'", "")
    assert text.startswith("import os\n") == changed
    option = "--local-rank" if "'--local-rank', type" in declared else "--local_rank"
    expected = [] if changed else [["6", "6", f" {option}", "unsupported"]]
    assert [row[:3] + row[4:] for row in reported(main, "G2N744")] == expected


GLOW = """import torch


def train(model, optimizer, loader):
    for i, image in enumerate(loader):
        if i == 0:
            with torch.no_grad():
                model.module(image.cuda())
            continue
        loss = model(image.cuda()).mean()
        loss.backward()
        optimizer.step()


if __name__ == '__main__':
    model_single = torch.nn.Linear(2, 2)
    model = torch.nn.DataParallel(model_single).cuda()
    optimizer = torch.optim.Adam(model.parameters())
    loader = torch.utils.data.DataLoader(torch.ones(8, 2), batch_size=2)
    for epoch in range(2):
        train(model, optimizer, loader)
"""


def test_a_forward_through_module_after_the_wrap_is_reported(tmp_path):
    """glow initialises its ActNorm layers with model.module(...) on the first batch, written for
    DataParallel (the whole batch, one copy). Under DistributedDataParallel each process ran it on
    its own shard and the parameters differed between the ranks from then on (the helper's 2-rank
    stand-in run), with no row. The call is kept and reported with the broadcast that fixes it."""
    result, main = one_script(tmp_path, GLOW)
    assert result.returncode == 0, result.stderr
    assert "                model.module(image.npu())\n" in main.read_text()
    found = [row for row in reported(main) if row[2] == "model.module"]
    assert [row[:3] + [row[3][:60], row[4]] for row in found] == [
        [
            "8",
            "8",
            "model.module",
            "model.module(...) runs the model around DistributedDataParal",
            "supported_with_limits",
        ]
    ]
    assert "torch.distributed.broadcast(t, 0)" in found[0][3]


PADDED_PATHS = """import torch
net = torch.nn.Linear(2, 2).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for i in range(2):
    net(torch.ones(1, 2).cuda()).sum().backward()
    opt.step()
    torch.save(net.state_dict(), f"checkpoint/model_{str(i + 1).zfill(6)}.pt")
    torch.save(opt.state_dict(), f"checkpoint/optim_{str(i + 1).rjust(6, '0')}.pt")
"""


def test_a_save_whose_path_pads_a_number_runs_on_rank_0(tmp_path):
    """glow-pytorch names its checkpoints ``f"model_{str(i + 1).zfill(6)}.pt"``: the ``zfill``
    call only formats, but the save stayed on every rank (N processes truncating one file)."""
    source = tmp_path / "proj"
    write(source / "train.py", PADDED_PATHS)
    result, out = distributed(tmp_path, source=source)
    assert result.returncode == 0, result.stderr
    text = (out / "train.py").read_text()
    assert (
        "    if torch.distributed.get_rank() == 0:\n"
        '        torch.save(net.module.state_dict(), f"checkpoint/model_{str(i + 1).zfill(6)}.pt")\n'
        "        torch.save(opt.state_dict(), f\"checkpoint/optim_{str(i + 1).rjust(6, '0')}.pt\")\n"
    ) in text


SRC_LAYOUT_SETUP = """import os
import torch


def init_distributed_device(args):
    if "WORLD_SIZE" in os.environ:
        torch.distributed.init_process_group(backend="nccl")
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    return torch.device("cuda")
"""
SRC_LAYOUT_MAIN = """import torch
from pkg.distributed import init_distributed_device


def main():
    device = init_distributed_device(None)
    model = torch.nn.Linear(2, 2).to(device)
    for epoch in range(2):
        model(torch.ones(2, device=device))


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("flag", ["distributed", "-s"])
def test_a_main_script_of_a_src_layout_package_is_seen_to_distribute_itself(tmp_path, flag):
    """open_clip's src/open_clip_train/main.py imports open_clip_train.distributed, which calls
    init_process_group: the import was not followed below src/, so the distributed mode added a
    second process group (torch: "trying to initialize the default process group twice") and a
    second DDP, and -s selected DEVICE_ID unconditionally."""
    source = tmp_path / "proj"
    write(source / "src" / "pkg" / "__init__.py", "")
    write(source / "src" / "pkg" / "distributed.py", SRC_LAYOUT_SETUP)
    write(source / "src" / "pkg" / "main.py", SRC_LAYOUT_MAIN)
    mode = ["-s"] if flag == "-s" else ["distributed", "-m", source / "src" / "pkg" / "main.py"]
    result = run_cli("migrate", "-i", source, "-o", tmp_path / "out", "-v", "2.8.0", *mode)
    assert result.returncode == 0, result.stderr
    main = (next((tmp_path / "out").iterdir()) / "src" / "pkg" / "main.py").read_text()
    assert "init_process_group" not in main and "DistributedDataParallel" not in main
    if flag == "-s":
        assert (
            "    if os.environ.get('DEVICE_ID', '').isdigit():\n        torch_npu.npu.set_device(DEVICE_ID)\n"
            in main
        )
    else:
        assert "src/pkg/main.py: distributed (line 2)" in result.stdout


def test_a_main_script_relative_to_the_input_is_found_from_a_folder_inside_it(tmp_path):
    """lerobot, run from inside the input: ``-m src/pkg/train.py`` names no file from the working
    directory (``<input>/src/src/pkg/...``, also inside the input), so it is read from the input."""
    source = tmp_path / "proj"
    write(source / "src" / "pkg" / "train.py", (BEFORE / "train.py").read_text())
    write(source / "src" / "pkg" / "lib" / "__init__.py", "")
    shutil.copytree(BEFORE / "lib", source / "src" / "pkg" / "lib", dirs_exist_ok=True)
    args = ("migrate", "-i", source, "-o", tmp_path / "out", "distributed", "-m", "src/pkg/train.py")
    result = run_cli(*args, cwd=source / "src")
    assert result.returncode == 0, result.stderr
    assert (
        "DistributedDataParallel" in (tmp_path / "out" / "proj_msft_multi" / "src/pkg/train.py").read_text()
    )


def test_a_loop_loading_pretrained_weights_is_no_training_loop(tmp_path):
    """ms-swift: the error named 'helpers.py' as the loop to distribute by hand, a loop calling
    ``tuner.from_pretrained(...)``: "train" was matched inside "pretrained". Words of the name count
    (``train_one_epoch``, ``pretrain_step``), so the error names no such file."""
    source = tmp_path / "proj"
    write(
        source / "helpers.py",
        "def load_adapters(model, adapters, tuner):\n    for adapter in adapters:\n"
        "        model = tuner.from_pretrained(model, adapter)\n    return model\n",
    )
    write(
        source / "main.py",
        "import torch\nfrom helpers import load_adapters\n\n\ndef main():\n"
        "    model = load_adapters(torch.nn.Linear(2, 2).cuda(), [], None)\n\n\n"
        "if __name__ == '__main__':\n    main()\n",
    )
    result, _ = distributed(tmp_path, source=source, main=source / "main.py")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "gpu2npu: error: the main script 'main.py' has no training loop (a loop over epochs, or one calling "
        ".backward() or .step()); name the script that trains with -m"
    ]
    write(
        source / "helpers.py", "def fit(model, steps):\n    for _ in steps:\n        pretrain_step(model)\n"
    )
    write(source / "main.py", "from helpers import fit\n\nif __name__ == '__main__':\n    fit(None, [])\n")
    result, _ = distributed(tmp_path, source=source, main=source / "main.py")
    assert "the loop it starts is in 'helpers.py'" in result.stderr
