"""DataParallel in every mode: replaced by the model it wraps (one NPU runs it), or kept and
reported as manual work where the file reads the wrapper's `.module`."""

import pytest
from helpers import python_change_rows, rows, run_cli, write

UNWRAPPED = (
    "import torch\n"
    "\n"
    "def build(net):\n"
    "    model = torch.nn.DataParallel(net, device_ids=[0, 1]).cuda()\n"
    "    return model.module if isinstance(model, torch.nn.DataParallel) else model\n"
)
READS_MODULE = "import torch.nn as nn\n\ndef build(net):\n    return nn.DataParallel(net).module\n"


@pytest.mark.parametrize("mode", ["full", "auto", "specify-device"])
def test_data_parallel_is_unwrapped_or_kept_and_reported_in_every_mode(mode, tmp_path):
    write(tmp_path / "proj" / "wrap.py", UNWRAPPED)
    write(tmp_path / "proj" / "reads.py", READS_MODULE)
    write(tmp_path / "proj" / "run.py", "import wrap\n\nif __name__ == '__main__':\n    wrap.build(None)\n")
    result = run_cli(
        "migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0", "--mode", mode
    )
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    wrapped = (out / "wrap.py").read_text()
    device = "npu" if mode != "auto" else "cuda"  # auto: transfer_to_npu redirects .cuda() at run time
    assert f"    model = net.{device}()\n" in wrapped
    assert (out / "reads.py").read_text() == READS_MODULE
    reports = out / "transplant_result_file"
    changes = [row for row in python_change_rows(reports / "change_list.csv") if row[5].startswith("G2N73")]
    assert changes == [
        [
            "wrap.py",
            "4",
            "4",
            "MODIFY",
            "replace torch.nn.DataParallel(net) with the model it wraps: one NPU runs it "
            "(several: the distributed mode)",
            "G2N730",
        ]
    ]
    unsupported = [row[:4] + row[5:] for row in rows(reports / "unsupported_api.csv")[1:]]
    assert unsupported == [
        ["reads.py", "4", "4", "torch.nn.DataParallel", "unsupported", "listed", "rules:G2N730"]
    ]


RESUMES = (
    "import torch\n"
    "\n"
    "net = torch.nn.DataParallel(torch.nn.Linear(2, 2))\n"
    "checkpoint = torch.load('ckpt.pth')\n"
    "net.load_state_dict(checkpoint['net'])\n"
)


def test_a_file_resuming_from_a_checkpoint_is_told_the_wrappers_prefix_is_gone(tmp_path):
    """pytorch-cifar's --resume loads a state dict the original saved through DataParallel: its
    keys start with 'module.', which the unwrapped model does not load (Missing key(s))."""
    write(tmp_path / "proj" / "main.py", RESUMES)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (out / "main.py").read_text() == RESUMES.replace(
        "torch.nn.DataParallel(torch.nn.Linear(2, 2))", "torch.nn.Linear(2, 2)"
    ).replace("import torch\n", "import torch\nimport torch_npu\n")
    reported = [
        row[:5] + row[-1:]
        for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
        if row[3] != "torch.load"  # G2N183, torch 2.6's weights_only (tests/test_kept_on_cuda.py)
    ]
    assert reported == [
        [
            "main.py",
            "3",
            "3",
            "torch.nn.DataParallel",
            "the wrapper is removed, so state_dict() keys lose its 'module.' prefix and a checkpoint the "
            "original saved does not load here (Missing key(s)); strip the prefix before load_state_dict: "
            "torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, 'module.')",
            "rules:G2N730",
        ]
    ]


def test_a_project_that_resumes_in_another_file_is_told_the_wrappers_prefix_is_gone(tmp_path):
    """score_sde_pytorch wraps the model in models/utils.py and restores checkpoints in utils.py
    with strict=False: the 'module.' keys of the original's checkpoints would load nothing, silently."""
    write(
        tmp_path / "proj" / "models" / "utils.py",
        "import torch\n\ndef create(m):\n    return torch.nn.DataParallel(m)\n",
    )
    write(
        tmp_path / "proj" / "utils.py",
        "import torch\n\ndef restore(state, path):\n"
        "    state['model'].load_state_dict(torch.load(path)['model'], strict=False)\n",
    )
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert "    return m\n" in (out / "models" / "utils.py").read_text()
    reported = [
        row[:4] + row[-1:]
        for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
        if row[3] != "torch.load"
    ]
    assert reported == [["models/utils.py", "4", "4", "torch.nn.DataParallel", "rules:G2N730"]]


TRAINS = (
    "import torch\n"
    "from resume import load\n"
    "\n"
    "net = torch.nn.DataParallel(torch.nn.Linear(2, 2)).cuda()\n"
    "net.load_state_dict(torch.load('ckpt.pth'))\n"
    "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
    "for x in torch.utils.data.DataLoader(torch.randn(8, 2), batch_size=2):\n"
    "    loss = net(x.cuda()).sum()\n"
    "    opt.zero_grad()\n"
    "    loss.backward()\n"
    "    opt.step()\n"
)


def migrate_distributed(tmp_path):
    """``distributed -m train.py`` of the project in tmp_path/proj, into tmp_path/out."""
    out = tmp_path / "out"
    return run_cli(
        "migrate", "-i", tmp_path / "proj", "-o", out, "-v", "2.8.0", "distributed", "-m", "train.py"
    )


def test_distributed_mode_reports_the_lost_prefix_outside_the_main_script_only(tmp_path):
    """The distributed mode wraps the main script's model in DistributedDataParallel, whose keys
    have the same 'module.' prefix; a model unwrapped in another file has no wrapper at all."""
    write(tmp_path / "proj" / "train.py", TRAINS)
    write(tmp_path / "proj" / "resume.py", "def load(path):\n    return None\n\n\n" + RESUMES)
    result = migrate_distributed(tmp_path)
    assert result.returncode == 0, result.stderr
    unsupported = rows(
        tmp_path / "out" / "proj_msft_multi" / "transplant_result_file" / "unsupported_api.csv"
    )
    assert [row[:4] + row[-1:] for row in unsupported[1:] if row[3] == "torch.nn.DataParallel"] == [
        ["resume.py", "7", "7", "torch.nn.DataParallel", "rules:G2N730"]
    ]


CREATE_MODEL = (
    "import torch\n"
    "\n"
    "def create_model(opt):\n"
    "    model = torch.nn.Linear(2, 2)\n"
    "    if len(opt.gpu_ids):\n"
    "        model = torch.nn.DataParallel(model, device_ids=opt.gpu_ids)\n"
    "    return model\n"
    "\n"
    "def create_critic(opt):\n"
    "    return torch.nn.DataParallel(torch.nn.Linear(2, 1))\n"
)
TRAIN = (
    "from models.models import create_critic, create_model\n"
    "\n"
    "model = create_model(opt)\n"
    "critic = create_critic(opt)\n"
    "optimizer = model.module.optimizer\n"
    "net = critic.module if hasattr(critic, 'module') else critic\n"
)


@pytest.mark.parametrize("mode", ["full", "specify-device"])
def test_a_wrapper_whose_module_another_file_reads_is_kept_and_reported(mode, tmp_path):
    """pix2pixHD's create_model returns DataParallel(model); train.py reads model.module. The
    wrapper was replaced by the model, and train.py stopped with AttributeError: 'Linear' object
    has no attribute 'module'. It stays now, reported; a result read behind hasattr is
    unwrapped as before."""
    write(tmp_path / "proj" / "models" / "models.py", CREATE_MODEL)
    write(tmp_path / "proj" / "train.py", TRAIN)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--mode", mode)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    text = (out / "models" / "models.py").read_text()
    assert "        model = torch.nn.DataParallel(model, device_ids=opt.gpu_ids)\n" in text
    assert "    return torch.nn.Linear(2, 1)\n" in text
    kept = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [row[:5] for row in kept if row[0] == "models/models.py"] == [
        [
            "models/models.py",
            "6",
            "6",
            "torch.nn.DataParallel",
            "kept: torch.nn.DataParallel is not supported on the NPU, and another file reads .module of "
            "the model this function returns (pix2pixHD: model = create_model(opt), then "
            "model.module.save()), which the model alone lacks; remove the wrapper and read the model "
            "itself there, or migrate with the distributed mode",
        ]
    ]


DEVICE = (
    "import torch\n"
    "\n"
    "class Device:\n"
    "    def parallelize_model(self):\n"
    "        if torch.cuda.device_count() > 1:\n"
    "            self.model = torch.nn.DataParallel(self.model)\n"
    "        self.critic = torch.nn.DataParallel(self.critic)\n"
)
CHECKPOINT = (
    "class Checkpoint:\n"
    "    def save(self):\n"
    "        model = self.trainer.model\n"
    "        if self.data_parallel:\n"
    "            model = model.module\n"
    "        return model.state_dict(), self.trainer.model.module\n"
)


def test_a_wrapper_assigned_to_an_attribute_another_file_reads_module_through_is_kept(tmp_path):
    """mmf: device.py sets self.model = DataParallel(self.model) on several cards; checkpoint.py
    reads self.trainer.model.module (and model.module of model = self.trainer.model). The wrapper
    was replaced, and the first checkpoint save stopped with AttributeError. It stays now,
    reported; a wrapper on an attribute no file reads .module through is replaced as before."""
    write(tmp_path / "proj" / "trainers" / "device.py", DEVICE)
    write(tmp_path / "proj" / "utils" / "checkpoint.py", CHECKPOINT)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--no-cache")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    text = (out / "trainers" / "device.py").read_text()
    assert "            self.model = torch.nn.DataParallel(self.model)\n" in text
    assert "        self.critic = self.critic\n" in text
    kept = rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    assert [row[:4] for row in kept] == [["trainers/device.py", "6", "6", "torch.nn.DataParallel"]]
    assert kept[0][4].startswith(
        "kept: torch.nn.DataParallel is not supported on the NPU, and another file reads"
    )
    assert "self.trainer.model.module" in kept[0][4]
    assert run_cli("check", tmp_path / "proj", "--no-cache").returncode == 1


SCATTERED = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "\n"
    "def deep_sdf(dataset, net, lat_vecs):\n"
    "    decoder = torch.nn.DataParallel(net.cuda())\n"
    "    sdf_loader = DataLoader(dataset, batch_size=4)\n"
    "    for sdf_data, indices in sdf_loader:\n"
    "        sdf_data = sdf_data.reshape(-1, 4)\n"
    "        xyz = torch.chunk(sdf_data[:, 0:3], 2)\n"
    "        for i in range(2):\n"
    "            batch = torch.cat([lat_vecs(indices[i]), xyz[i]], dim=1)\n"
    "            loss = decoder(batch).sum()\n"
    "\n"
    "def moved(dataset, net):\n"
    "    model = torch.nn.DataParallel(net).cuda()\n"
    "    for step, (images, target) in enumerate(DataLoader(dataset)):\n"
    "        images = images.cuda()\n"
    "        out = model(images, step=step)\n"
    "\n"
    "def prefetched(prefetcher, net):\n"
    "    model = torch.nn.DataParallel(net).cuda()\n"
    "    for images in prefetcher:\n"
    "        out = model(images)\n"
    "\n"
    "def noise(net):\n"
    "    generator = torch.nn.DataParallel(net).cuda()\n"
    "    return generator(torch.randn(4, 128))\n"
)


def scattered_tip(call, line):
    return (
        f"the wrapper is removed, and it moved each call's tensors to the device: {call} (line {line}) "
        "is given a tensor this file never moves (a DataLoader's batch, or one made on the CPU), which "
        "the model alone gets on the CPU (Expected all tensors to be on the same device); move it to "
        "the model's device before the call (.npu(), .to(device)), or migrate with the distributed "
        "mode, whose DistributedDataParallel moves them too"
    )


@pytest.mark.parametrize("mode", ["full", "auto", "specify-device"])
def test_a_model_given_tensors_only_the_wrapper_moved_is_reported_where_it_is_unwrapped(mode, tmp_path):
    """DeepSDF: DataParallel scattered the loader's CPU batch to the card at each call; the model
    alone gets it on the CPU. A batch the loop moves itself, a prefetcher's (which may move it) and
    enumerate's count get no row."""
    write(tmp_path / "proj" / "train.py", SCATTERED + "\nif __name__ == '__main__':\n    noise(None)\n")
    result = run_cli(
        "migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0", "--mode", mode
    )
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert "    decoder = net." in (out / "train.py").read_text()  # still replaced
    reported = [
        row[:5] + row[-1:] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    ]
    assert reported == [
        ["train.py", "5", "5", "torch.nn.DataParallel", scattered_tip("decoder(batch)", 12), "rules:G2N730"],
        [
            "train.py",
            "26",
            "26",
            "torch.nn.DataParallel",
            scattered_tip("generator(torch.randn(4, 128))", 27),
            "rules:G2N730",
        ],
    ]


def test_the_distributed_main_script_gets_no_row_on_inputs_its_wrapper_moves(tmp_path):
    """Where DistributedDataParallel takes DataParallel's place, it moves the inputs as well."""
    main = (
        "import torch\n"
        "from torch.utils.data import DataLoader\n"
        "\n"
        "def main(dataset, net):\n"
        "    model = torch.nn.DataParallel(net).cuda()\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for x, y in DataLoader(dataset):\n"
        "        loss = model(x).sum()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    main(None, None)\n"
    )
    write(tmp_path / "proj" / "train.py", main)
    result = migrate_distributed(tmp_path)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft_multi"
    assert "DistributedDataParallel" in (out / "train.py").read_text()
    reported = [row for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]]
    assert [row for row in reported if row[3] == "torch.nn.DataParallel"] == []


SUBCLASS = (
    "import torch.nn as nn\n"
    "\n"
    "class CustomDataParallel(nn.DataParallel):\n"
    "    def scatter(self, inputs, kwargs, device_ids):\n"
    "        return super().scatter(inputs, kwargs, device_ids)\n"
)


@pytest.mark.parametrize("mode", ["full", "auto", "specify-device"])
def test_a_class_deriving_from_data_parallel_is_kept_and_reported(mode, tmp_path):
    """EfficientDet's CustomDataParallel(nn.DataParallel) is DataParallel under another name: no
    call to replace, so the class is reported as manual work and `check` fails on it."""
    write(tmp_path / "proj" / "utils.py", SUBCLASS)
    write(
        tmp_path / "proj" / "train.py",
        "import utils\n\nif __name__ == '__main__':\n    utils.CustomDataParallel\n",
    )
    result = run_cli(
        "migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0", "--mode", mode
    )
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (out / "utils.py").read_text() == SUBCLASS
    reported = [
        row[:7] + row[-1:] for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    ]
    assert reported == [
        [
            "utils.py",
            "3",
            "3",
            "torch.nn.DataParallel",
            "kept: this class derives from DataParallel, which is not supported on the NPU in any torch "
            "version; where it wraps the model, use the model alone (one NPU runs it) and move its inputs "
            "to the device, or migrate with the distributed mode (DistributedDataParallel, one process "
            "per NPU)",
            "unsupported",
            "listed",
            "rules:G2N730",
        ]
    ]
    check = run_cli("check", tmp_path / "proj", "--mode", mode, "--no-cache", "--format", "json")
    assert check.returncode == 1, check.stderr
