"""The CPU stand-in for torch_npu (gpu2npu.standin) and `gpu2npu run`.

Importing the stand-in changes torch for the whole process, so every check runs in a fresh
interpreter with the stand-in's folder on PYTHONPATH. The proof at the end: six small training
programs (tests/projects/runnable/) are migrated with the installed CLI; the originals run on the
CPU with plain python, the migrated copies under `gpu2npu run`, and they print the same losses.
Only the tests that run torch code call require_torch()."""

import math
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import REPO, gpu2npu_command, rows, run_cli, write

from gpu2npu.standin import DEVICES_VARIABLE, SITE_DIR, standin_environment

PROGRAMS = REPO / "tests" / "projects" / "runnable"
# One intra-op thread: the small CPU kernels run faster, and every run takes the same reduction order.
QUIET_ENV = {"OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONWARNINGS": "ignore"}


def require_torch():
    """torch, or a skip, as in tests/test_dynamic_shape.py: the test extra pins torch for Python
    3.11 (the version with a CPU build on this project's machines), so there its absence is a
    failure, not a skip."""
    if sys.version_info[:2] == (3, 11):
        try:
            import torch
        except ImportError:
            pytest.fail(
                "torch is missing though the test extra installs it on Python 3.11: pip install '.[test]'"
            )
        return torch
    return pytest.importorskip("torch")


def plain_env(**extra) -> dict:
    return {**os.environ, **QUIET_ENV, **extra}


def standin_python(code: str, devices: int = 1, **extra) -> str:
    """Run code in a fresh interpreter that imports the stand-in as torch_npu; its stdout."""
    require_torch()
    env = standin_environment(plain_env(**extra), devices)
    run = run_program([sys.executable, "-c", textwrap.dedent(code)], env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


# -- the package and the command ----------------------------------------------------------------


def test_torch_npu_is_importable_only_from_the_standin_folder():
    assert (SITE_DIR / "torch_npu" / "__init__.py").is_file()
    code = "import importlib.util; print(importlib.util.find_spec('torch_npu') is None)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "True\n"
    env = standin_environment(os.environ, 1)
    code = "import importlib.util; print(importlib.util.find_spec('torch_npu').origin)"
    found = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout
    assert Path(found.strip()) == SITE_DIR / "torch_npu" / "__init__.py"


def test_the_standin_refuses_loudly_without_torch():
    code = "import sys; sys.modules['torch'] = None; import torch_npu"
    env = standin_environment(os.environ, 1)
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 1
    assert "ImportError: the gpu2npu stand-in for torch_npu needs PyTorch: install torch" in run.stderr


def test_standin_environment_puts_the_site_first_and_sets_the_devices():
    env = standin_environment({"PYTHONPATH": "/a" + os.pathsep + "/b", "HOME": "/h"}, 3)
    assert env == {
        "PYTHONPATH": os.pathsep.join([str(SITE_DIR), "/a", "/b"]),
        "HOME": "/h",
        DEVICES_VARIABLE: "3",
    }
    assert standin_environment({}, 1)["PYTHONPATH"] == str(SITE_DIR)


def test_run_without_a_command_is_a_usage_error():
    for args in (["run"], ["run", "--"], ["run", "--devices", "2"]):
        result = run_cli(*args)
        assert result.returncode == 2, result.stderr
        assert result.stderr == (
            "gpu2npu: error: gpu2npu run needs a command; for example: gpu2npu run -- python train.py\n"
        )
    result = run_cli("run", "--", "no-such-command-gpu2npu")
    assert (result.returncode, result.stderr) == (
        2,
        "gpu2npu: error: command not found: no-such-command-gpu2npu; check the command after --\n",
    )
    result = run_cli("run", "--devices", "-1", "--", sys.executable, "-V")
    assert result.returncode == 2 and "-1" in result.stderr


def test_run_passes_streams_environment_and_exit_code_through(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(
        "import os, subprocess, sys\n"
        "print(sys.stdin.read().upper(), end='')\n"
        "print(os.environ['GPU2NPU_STANDIN_DEVICES'], os.environ['PYTHONPATH'].split(os.pathsep)[0])\n"
        "print('to stderr', file=sys.stderr)\n"
        "grandchild = 'import importlib.util; print(importlib.util.find_spec(\"torch_npu\").origin)'\n"
        "subprocess.run([sys.executable, '-c', grandchild], check=True)\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    result = run_cli("run", "--devices", "4", "--", sys.executable, script, "7", input_text="abc\n")
    site_init = SITE_DIR / "torch_npu" / "__init__.py"
    assert result.returncode == 7
    assert result.stdout == f"ABC\n4 {SITE_DIR}\n{site_init}\n"  # the grandchild finds it too
    assert result.stderr == "to stderr\n"
    result = run_cli("run", sys.executable, "-c", "import sys; sys.exit(0)")  # '--' is optional
    assert result.returncode == 0, result.stderr


# -- torch.npu: devices, memory, random state, streams -----------------------------------------


def test_npu_device_queries_follow_the_emulated_machine():
    out = standin_python(
        """
        import torch, torch_npu
        assert torch.npu is torch_npu.npu and torch.get_device_module('npu') is torch.npu
        assert torch.npu.is_available() and torch.npu.device_count() == 3
        assert torch.npu.current_device() == 0
        torch.npu.set_device(2)
        assert torch.npu.current_device() == 2
        torch.npu.set_device('npu:1')
        with torch.npu.device(0):
            assert torch.npu.current_device() == 0
        assert torch.npu.current_device() == 1
        torch.npu.set_device(torch.npu.device(2))  # nanotron's spelling: torch_npu reads its idx
        assert torch.npu.current_device() == 2
        torch.npu.set_device(1)
        torch.npu.synchronize()
        properties = torch.npu.get_device_properties(0)
        assert properties.total_memory == 64 * 1024**3 and properties.name == torch.npu.get_device_name()
        assert torch.npu.get_device_capability() is None
        assert torch.accelerator.current_accelerator().type == 'npu'
        try:
            torch.npu.set_device(3)
        except RuntimeError as error:
            print(error)
        try:
            torch.npu.make_graphed_callables
        except AttributeError as error:
            print(error)
        """,
        devices=3,
    )
    assert out.splitlines() == [
        "invalid NPU device index 3: the gpu2npu stand-in emulates 3 NPU(s) "
        "(set GPU2NPU_STANDIN_DEVICES or run with 'gpu2npu run --devices N')",
        "torch.npu.make_graphed_callables is not emulated by the gpu2npu stand-in for torch_npu "
        "(see the gpu2npu.standin documentation for what is)",
    ]
    query = "import torch, torch_npu; print(torch.npu.is_available(), torch.npu.device_count())"
    assert standin_python(query, devices=0) == "False 0\n"
    assert standin_python(query, devices=4, ASCEND_RT_VISIBLE_DEVICES="1,3") == "True 2\n"


def test_npu_devices_are_accepted_everywhere_and_placed_on_the_cpu(tmp_path):
    checkpoint = tmp_path / "weights.pt"
    out = standin_python(
        f"""
        import threading
        import torch, torch_npu
        cpu = torch.device('cpu')
        assert torch.device('npu:1').type == 'npu' and torch.device('npu', 1).index == 1
        tensors = [
            torch.zeros(2, device='npu'), torch.ones(2, device='npu:1'),
            torch.randn(2, device=torch.device('npu')), torch.tensor([1, 2], device='npu:0'),
            torch.arange(3, device=0), torch.empty(2).new_zeros(3, device='npu'),
            torch.ones(2).to('npu'), torch.ones(2).to('npu:1', torch.float16), torch.ones(2).to(1),
            torch.ones(2).to(device=torch.device('npu', 0)), torch.ones(2).npu(), torch.ones(2).npu(1),
            torch.ones(2).npu(non_blocking=True), torch.ones(2).pin_memory(),
        ]
        assert all(t.device == cpu and t.is_npu for t in tensors)
        source = torch.ones(2)
        assert source.npu() is source and source.to('npu') is source  # already where NPU tensors live
        model = torch.nn.Linear(2, 2).to('npu:1')
        assert model.npu() is model and model.npu(0) is model
        assert all(p.device == cpu for p in model.parameters())
        materialized = torch.nn.Linear(2, 2, device='meta').to_empty(device='npu')
        assert all(p.device == cpu for p in materialized.parameters())
        with torch.device('npu'):
            assert torch.zeros(1).device == cpu
        generator = torch.Generator(device='npu').manual_seed(5)
        same = torch.Generator().manual_seed(5)
        assert torch.equal(torch.rand(3, generator=generator), torch.rand(3, generator=same))
        assert isinstance(torch.default_generator, torch.Generator) and isinstance(generator, torch.Generator)
        torch.save(model.state_dict(), {str(checkpoint)!r})
        for where in ('npu', 'npu:1', torch.device('npu:0'), {{'cpu': 'npu:1'}}, lambda s, loc: s.npu()):
            state = torch.load({str(checkpoint)!r}, map_location=where)
            assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
        seen = []
        thread = threading.Thread(target=lambda: seen.append(torch.zeros(1, device='npu:1').device))
        thread.start(); thread.join()
        assert seen == [cpu]
        dataset = torch.utils.data.TensorDataset(torch.arange(8.0))
        loader = torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=1, pin_memory=True)
        assert [b[0].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
        try:
            torch.zeros(1, device='npu:2')
        except RuntimeError as error:
            print(error)
        """,
        devices=2,
    )
    assert out.startswith("invalid NPU device index 2: the gpu2npu stand-in emulates 2 NPU(s)")


def test_npu_random_state_is_bookkeeping_that_leaves_the_cpu_generator_alone():
    out = standin_python(
        """
        import torch, torch_npu
        torch.manual_seed(7)
        expected = torch.rand(4)
        torch.manual_seed(7)
        assert torch.npu.initial_seed() == 7  # torch.manual_seed seeds every device, as on an NPU
        torch.npu.manual_seed(123)
        torch.npu.manual_seed_all(5)
        torch.npu.seed()
        state = torch.npu.get_rng_state()
        torch.npu.set_rng_state(state)
        torch.npu.set_rng_state_all(torch.npu.get_rng_state_all())
        assert torch.equal(torch.rand(4, device='npu'), expected)  # NPU tensors draw from the CPU generator
        torch.npu.manual_seed(11)
        assert torch.npu.initial_seed() == 11 and len(torch.npu.default_generators) == 2
        assert torch.equal(torch.npu.get_rng_state(1), torch.npu.default_generators[1].get_state())
        with torch.random.fork_rng(device_type='npu'):
            torch.npu.manual_seed(99)
        assert torch.npu.initial_seed() == 11
        print('ok')
        """,
        devices=2,
    )
    assert out == "ok\n"


def test_memory_statistics_streams_and_events():
    out = standin_python(
        """
        import time
        import torch, torch_npu
        npu = torch.npu
        assert npu.memory_allocated() == npu.max_memory_allocated() == npu.memory_reserved() == 0
        assert npu.max_memory_reserved(0) == npu.memory_cached() == 0
        npu.reset_peak_memory_stats(); npu.reset_max_memory_allocated(); npu.empty_cache()
        assert npu.memory_stats()['allocated_bytes.all.peak'] == 0
        assert npu.memory_stats_as_nested_dict()['allocated_bytes']['all']['current'] == 0
        assert 'not tracked' in npu.memory_summary() and npu.mem_get_info() == (64 * 1024**3,) * 2
        stream = npu.Stream()
        assert npu.current_stream() is npu.default_stream()
        with npu.stream(stream):
            assert npu.current_stream() is stream
            x = torch.ones(2, device='npu') * 2
        assert npu.current_stream() is npu.default_stream()
        npu.current_stream().wait_stream(stream)
        x.record_stream(stream)
        start, end = npu.Event(enable_timing=True), npu.Event(enable_timing=True)
        start.record(); time.sleep(0.01); end.record(); end.synchronize()
        assert end.query() and stream.query() and start.elapsed_time(end) >= 10
        assert isinstance(stream.record_event(), npu.Event)
        print(npu.FloatTensor is torch.FloatTensor, npu.is_bf16_supported())
        """
    )
    assert out == "True True\n"


# -- amp ----------------------------------------------------------------------------------------


def test_autocast_is_entered_as_on_an_npu_and_keeps_float32():
    out = standin_python(
        """
        import torch, torch_npu
        a = torch.randn(4, 4, device='npu')

        @torch_npu.npu.amp.autocast()
        def decorated(x):
            return x @ x

        with torch_npu.npu.amp.autocast(dtype=torch.bfloat16):
            assert torch.is_autocast_enabled('npu')
            inside = (a @ a).dtype
        with torch.autocast(device_type='npu', dtype=torch.float16), torch.amp.autocast('npu'):
            also = (a @ a).dtype
        print(inside, also, decorated(a).dtype, torch.is_autocast_enabled('npu'))
        """
    )
    assert out == "torch.float32 torch.float32 torch.float32 False\n"


def test_grad_scaler_scales_unscales_and_round_trips_its_state():
    out = standin_python(
        """
        import torch, torch_npu
        from torch_npu.npu.amp import GradScaler

        def step(scaler):
            torch.manual_seed(0)
            model = torch.nn.Linear(4, 1).npu()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            loss = model(torch.randn(8, 4, device='npu')).pow(2).mean()
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            grads = [p.grad.clone() for p in model.parameters()]
            scaler.step(optimizer)
            scaler.update()
            return grads, [p.detach().clone() for p in model.parameters()]

        scaler = GradScaler(init_scale=1024.0, growth_interval=1)
        scaled = step(scaler)
        plain = step(GradScaler(enabled=False))
        # scaling by a power of two and back is exact: gradients and weights equal to the last bit
        assert all(torch.equal(a, b) for a, b in zip(scaled[0] + scaled[1], plain[0] + plain[1]))
        assert scaler.get_scale() == 2048.0 and scaler.is_enabled()  # grown after a finite step
        restored = GradScaler()
        restored.load_state_dict(scaler.state_dict())
        assert restored.get_scale() == 2048.0 and restored.get_growth_interval() == 1
        static = GradScaler(init_scale=256.0, growth_interval=1, dynamic=False)
        step(static)
        assert static.get_scale() == 256.0
        native = torch.amp.GradScaler('npu', init_scale=8.0)
        step(native)
        native.update(torch.tensor(4.0))
        print(native.get_scale(), scaler.get_backoff_factor())
        """
    )
    assert out == "4.0 0.5\n"


# -- distributed, profiler, optimizers ---------------------------------------------------------


def test_hccl_runs_on_gloo_and_ddp_accepts_device_ids(tmp_path):
    out = standin_python(
        f"""
        import torch, torch_npu
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        assert dist.is_hccl_available() and dist.Backend.HCCL == 'hccl'
        assert torch_npu.distributed.is_hccl_available() and torch_npu.distributed.Backend.HCCL == 'hccl'
        dist.init_process_group('hccl', init_method='file://{tmp_path / "store"}', rank=0, world_size=1)
        torch.npu.set_device(0)
        model = torch.nn.Linear(3, 1).to('npu:0')
        ddp = DDP(model, device_ids=[0], output_device=0)
        ddp(torch.randn(5, 3, device='npu')).sum().backward()
        total = torch.tensor([2.0], device='npu:0')
        dist.all_reduce(total)
        dist.barrier(device_ids=[0])
        objects = [None]
        dist.all_gather_object(objects, {{'rank': dist.get_rank()}})
        print(dist.get_backend(), total.item(), objects, model.weight.grad is not None)
        dist.destroy_process_group()
        """
    )
    assert out == "hccl 2.0 [{'rank': 0}] True\n"


def test_hccl_refuses_to_reduce_what_hccl_cannot_and_gathers_it(tmp_path):
    """ConvNeXt-V2 all-reduces a float64 counter each epoch: torch_npu's HCCL refuses float64 in
    reducing collectives (gloo would reduce it), gathers it, and reduces bool as uint8; a gloo
    group is not HCCL."""
    out = standin_python(
        f"""
        import torch, torch_npu
        import torch.distributed as dist
        dist.init_process_group('hccl', init_method='file://{tmp_path / "store"}', rank=0, world_size=1)
        counts = torch.tensor([3, 4], dtype=torch.float64, device='npu')
        for reduce in (lambda: dist.all_reduce(counts), lambda: dist.reduce(counts, dst=0)):
            try:
                reduce()
            except RuntimeError as error:
                print(error)
        gathered = [torch.zeros(2, dtype=torch.float64)]
        dist.all_gather(gathered, counts)
        flags = torch.tensor([True, False])
        dist.all_reduce(flags)
        gloo = dist.new_group(backend='gloo')
        dist.all_reduce(counts, dist.ReduceOp.SUM, gloo)
        print(gathered[0].tolist(), flags.tolist(), counts.tolist())
        dist.destroy_process_group()
        """
    )
    assert out == (
        "HCCL allreduce: Unsupported data type torch.float64\n"
        "HCCL reduce: Unsupported data type torch.float64\n"
        "[3.0, 4.0] [True, False] [3.0, 4.0]\n"
    )


def test_profiler_accepts_npu_activities_and_writes_a_trace(tmp_path):
    out = standin_python(
        f"""
        import os
        import torch, torch_npu
        from torch_npu.profiler import ProfilerActivity
        config = torch_npu.profiler._ExperimentalConfig(
            profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
            aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
        )
        model = torch.nn.Linear(4, 4).npu()
        with torch_npu.profiler.profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.NPU],
            schedule=torch_npu.profiler.schedule(wait=0, warmup=1, active=1, repeat=1),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler({str(tmp_path)!r}),
            record_shapes=True,
            experimental_config=config,
        ) as prof:
            for _ in range(3):
                model(torch.randn(2, 4, device='npu')).sum().backward()
                prof.step()
        supported = torch_npu.profiler.supported_activities()
        print(ProfilerActivity.NPU in supported, torch_npu.profiler.ProfilerAction.RECORD)
        print(sorted(name.endswith('.pt.trace.json') for name in os.listdir({str(tmp_path)!r})))
        """
    )
    assert out.splitlines()[-2:] == ["True ProfilerAction.RECORD", "[True]"]


PROFILED_TABLE = """\
import torch
from torch.profiler import profile, ProfilerActivity
model = torch.nn.Linear(4, 4).cuda()
def handler(p):
    print(p.events())
with torch.autograd.profiler.profile(use_cuda=True) as legacy:
    model(torch.ones(2, 4).cuda())
print(len(legacy.key_averages()) > 0)
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], on_trace_ready=handler) as prof:
    model(torch.ones(2, 4).cuda())
print(prof.key_averages().table(sort_by="cuda_time_total"))
"""


def test_a_table_of_the_migrated_profiler_is_reported_and_fails_as_on_an_npu(tmp_path):
    """torch_npu's profile writes its data for the Ascend tools and has no key_averages() nor
    events(): their reads on what torch.profiler.profile made are reported (not those of the
    legacy autograd profiler, which keeps them), and the stand-in fails the same way."""
    require_torch()
    write(tmp_path / "src" / "prof.py", PROFILED_TABLE)
    result = run_cli("migrate", "-i", tmp_path / "src", "-o", tmp_path / "out", "--no-cache")
    assert result.returncode == 0, result.stderr
    reports = tmp_path / "out" / "src_msft" / "transplant_result_file"
    found = [
        row[:4] + row[5:7] for row in rows(reports / "manual_work.csv") if row[6] in ("G2N989", "G2N990")
    ]
    assert found == [
        ["prof.py", "5", "5", "p.events", "unsupported", "G2N990"],
        ["prof.py", "11", "11", "prof.key_averages", "unsupported", "G2N989"],
    ]
    run = run_cli("run", "--", sys.executable, "prof.py", cwd=tmp_path / "out" / "src_msft")
    assert run.returncode == 1
    assert run.stdout.splitlines() == ["True"]  # the legacy profiler's table is made
    assert run.stderr.splitlines()[-1] == "AttributeError: 'profile' object has no attribute 'events'"


def test_fused_optimizers_are_torch_optimizers_with_the_same_arguments():
    out = standin_python(
        """
        import torch, torch_npu
        from torch_npu.optim import NpuFusedAdam, NpuFusedAdamW, NpuFusedSGD

        def trained(optimizer_class, **arguments):
            torch.manual_seed(0)
            model = torch.nn.Linear(4, 2).npu()
            optimizer = optimizer_class(model.parameters(), **arguments)
            for _ in range(3):
                optimizer.zero_grad()
                model(torch.randn(6, 4, device='npu')).pow(2).sum().backward()
                optimizer.step()
            return torch.cat([p.detach().flatten() for p in model.parameters()])

        pairs = [
            (NpuFusedAdamW, torch.optim.AdamW, dict(lr=1e-2, betas=(0.9, 0.99), weight_decay=0.1)),
            (NpuFusedAdam, torch.optim.Adam, dict(lr=1e-2, eps=1e-6)),
            (NpuFusedSGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
        ]
        print(all(torch.equal(trained(npu, **args), trained(ref, **args)) for npu, ref, args in pairs))
        """
    )
    assert out == "True\n"


# -- operators ----------------------------------------------------------------------------------


def test_reference_operators_agree_with_their_formulas():
    out = standin_python(
        """
        import math
        import torch, torch_npu
        import torch.nn.functional as F
        torch.manual_seed(0)
        close = lambda a, b: torch.allclose(a, b, atol=1e-5, rtol=1e-5)

        x, gamma = torch.randn(2, 3, 8), torch.randn(8)
        y, rstd = torch_npu.npu_rms_norm(x, gamma, epsilon=1e-5)
        assert close(rstd, 1 / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) and rstd.shape == (2, 3, 1)
        assert close(y, x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * gamma)
        assert close(torch.npu_rms_norm(x, gamma)[0], torch_npu.npu_rms_norm(x, gamma, 1e-6)[0])

        q, cos, sin = torch.randn(2, 4, 3, 8), torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8)
        half = torch.cat((-q[..., 4:], q[..., :4]), dim=-1)
        assert close(torch_npu.npu_rotary_mul(q, cos, sin), q * cos + half * sin)
        pairs = torch.stack((-q[..., 1::2], q[..., ::2]), dim=-1).reshape(q.shape)
        assert close(torch_npu.npu_rotary_mul(q, cos, sin, rotary_mode='interleave'), q * cos + pairs * sin)

        z = torch.randn(3, 10)
        assert close(torch_npu.npu_swiglu(z), F.silu(z[:, :5]) * z[:, 5:])
        assert close(torch_npu.npu_swiglu(z.t(), dim=0), (F.silu(z[:, :5]) * z[:, 5:]).t())
        assert close(torch_npu.npu_silu(z), z * torch.sigmoid(z))
        assert close(torch_npu.npu_gelu(z, approximate='tanh'), F.gelu(z, approximate='tanh'))
        assert torch_npu.npu_format_cast(z, 29) is z and torch_npu.get_npu_format(z) == 2
        r = torch.rand(2, 3, 4, 6)
        assert torch_npu.npu_confusion_transpose(r, (0, 2, 1, 3), (2, 4, 18), True).shape == (2, 4, 18)
        assert torch_npu.npu_confusion_transpose(r, (0, 2, 1), (2, 12, 6), False).shape == (2, 6, 12)

        B, N, S, D = 2, 4, 5, 8
        q, k, v = (torch.randn(B, N, S, D, requires_grad=True) for _ in range(3))
        scale = 1 / math.sqrt(D)
        causal = torch.ones(S, S, dtype=torch.bool).triu(1)
        out = torch_npu.npu_fusion_attention(q, k, v, N, 'BNSD', atten_mask=causal, scale=scale)
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert len(out) == 7 and close(out[0], expected) and out[1].shape == (B, N, S, 8)
        out[0].sum().backward()
        assert q.grad is not None
        compressed = torch.ones(2048, 2048, dtype=torch.bool).triu(1)  # the causal modes' documented mask
        attention = torch_npu.npu_fusion_attention
        out = attention(q, k, v, N, 'BNSD', atten_mask=compressed, scale=scale, sparse_mode=2)
        assert close(out[0], expected)
        try:
            torch_npu.npu_fusion_attention(q, k, v, N, 'BNSD', atten_mask=causal, scale=scale, sparse_mode=2)
        except ValueError as error:
            assert "takes atten_mask, the compressed causal mask" in str(error)
        else:
            raise AssertionError("a causal mode ran without the compressed mask")
        bsh = lambda t: t.transpose(1, 2).reshape(B, S, N * D)
        out = torch_npu.npu_fusion_attention(bsh(q), bsh(k), bsh(v), N, 'BSH', scale=scale)[0]
        assert close(out, bsh(F.scaled_dot_product_attention(q, k, v)))
        k2, v2 = k[:, :2], v[:, :2]  # grouped-query attention: 2 key/value heads for 4 query heads
        out = attention(q, k2, v2, N, 'BNSD', None, None, compressed, scale, sparse_mode=3)[0]
        expected = F.scaled_dot_product_attention(
            q, k2.repeat_interleave(2, 1), v2.repeat_interleave(2, 1), is_causal=True
        )
        print(close(out, expected))
        """
    )
    assert out == "True\n"


def test_other_npu_operators_raise_not_implemented_when_called():
    out = standin_python(
        """
        import torch_npu
        import torch_npu.contrib.transfer_to_npu  # importable with the operators
        operator = torch_npu.npu_moe_gating_top_k_softmax  # naming it is fine
        try:
            operator(None)
        except NotImplementedError as error:
            print(error)
        try:
            torch_npu.not_an_operator
        except AttributeError:
            print('AttributeError')
        """
    )
    first, second = out.splitlines()
    assert first.startswith(
        "torch_npu.npu_moe_gating_top_k_softmax has no reference implementation in the gpu2npu stand-in; "
        "it runs only on an Ascend NPU (the stand-in implements get_npu_format, npu_confusion_transpose,"
    )
    assert second == "AttributeError"


# -- the proof: migrated training programs print the original's losses ---------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


# program: (arguments, devices, the first line of the original, of the migrated copy)
RUNNABLE = {
    "mnist": (["--epochs", "2", "--save-model", "{out}/mnist_cnn.pt"], 1, "device cpu", "device npu"),
    "word_language_model": (
        ["--cuda", "--epochs", "2", "--save", "{out}/model.pt"],
        1,
        "cuda False devices 0",
        "cuda True devices 1",
    ),
    "ddp": (
        ["--world-size", "2", "--port", "{port}"],
        2,
        "backend gloo device type cpu world size 2",
        "backend hccl device type npu world size 2",
    ),
    "amp": (
        ["--epochs", "2", "--checkpoint", "{out}/amp.pt"],
        1,
        "amp False scaler False device cpu",
        "amp True scaler True device npu",
    ),
    # DataParallel, unsupported on the NPU, is replaced by the model it wraps (G2N730)
    "data_parallel": (
        ["--steps", "12", "--checkpoint", "{out}/model.pt"],
        1,
        "device cpu model Sequential",
        "device npu model Sequential",
    ),
    # its apex guard is kept on CUDA (G2N090), so the NPU takes torch's LayerNorm
    "fused_norm": (["--steps", "12"], 1, "device cpu norm LayerNorm", "device npu norm LayerNorm"),
    # its capability test stays on CUDA (G2N091) and its exported metadata still says 'cuda' (G2N092)
    "resume": (
        ["--steps", "12"],
        1,
        "device cpu kernel math origin exported on a GPU",
        "device npu kernel math origin exported on a GPU",
    ),
}


# Torch's Gloo backend now and then aborts a process at interpreter exit, after the program has
# finished and printed everything (pytorch/pytorch#190489, PR 179291: Gloo threads alive at
# finalization). A run that ends so is started once more; any other failure fails the test.
GLOO_EXIT_ABORT = "terminate called without an active exception"


def gloo_exit_abort(returncode: int, stderr: str) -> bool:
    return returncode != 0 and GLOO_EXIT_ABORT in stderr


def start(command, out: Path, env: dict) -> subprocess.Popen:
    out.mkdir(exist_ok=True)
    process = subprocess.Popen(
        command, cwd=out, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    process.started_with = (command, out, env)
    return process


def finish(process: subprocess.Popen, returncode: int = 0):
    stdout, stderr = process.communicate(timeout=600)
    if returncode == 0 and gloo_exit_abort(process.returncode, stderr):
        return finish(start(*process.started_with))
    assert process.returncode == returncode, stdout + stderr
    return stdout, stderr


def run_program(command, **options) -> subprocess.CompletedProcess:
    """subprocess.run (capturing text), started once more after a Gloo abort at exit."""
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, **options)
    if gloo_exit_abort(run.returncode, run.stderr):
        run = subprocess.run(command, capture_output=True, text=True, timeout=300, **options)
    return run


def losses(stdout: str):
    return [line for line in stdout.splitlines() if " loss " in line]


# The first line of the copy made with --mode auto: the unchanged CUDA code takes its CUDA path,
# which transfer_to_npu redirects. Not here, for reasons the real patcher shares: fused_norm takes
# its CUDA branch and imports apex's CUDA kernels (on an NPU only the full migration keeps the
# guard), and resume reads get_device_properties(0).major, which NPU device properties do not have.
AUTOMATIC_FIRST = {
    "data_parallel": "device cuda model Sequential",
    "mnist": "device cuda",
    "word_language_model": "cuda True devices 1",
    "ddp": "backend nccl device type cuda world size 2",
    "amp": "amp True scaler True device cuda",
}
# -s: single-card programs, run with DEVICE_ID=1 on an emulated machine of two cards (the first
# line the copy made with -s prints).
SPECIFY_DEVICE_FIRST = {
    "amp": "amp True scaler True device npu",
    "mnist": "device npu",
    "word_language_model": "cuda True devices 2",
}
# --optimize: the full migration with the fused optimizer each program's optimizer becomes. The
# stand-in's fused optimizers are torch's with torch_npu's documented parameters: the losses are
# equal to the last bit (on an NPU, where the fused kernels sum in another order, the rules'
# class "tolerance" allows rounding differences).
OPTIMIZED = {
    # the AMP recipe clears gradients with zero_grad(set_to_none=True), which fused optimizers refuse
    "amp": "torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)",
    "data_parallel": "torch_npu.optim.NpuFusedSGD(model.parameters(), lr=0.05)",
    "ddp": "torch_npu.optim.NpuFusedSGD(ddp_model.parameters(), lr=0.01, momentum=0.9)",
    "fused_norm": "torch_npu.optim.NpuFusedAdamW(model.parameters(), lr=1e-3)",
    "mnist": "torch_npu.optim.NpuFusedAdadelta(model.parameters(), lr=args.lr)",
    "resume": "torch_npu.optim.NpuFusedSGD(model.parameters(), lr=0.05)",
}
# What else --optimize=all writes into a program (the DDP wrapper's broadcast_buffers=False,
# behaviour, where ToyModel has no buffers to broadcast; drop_last=True, where every rank's 64
# samples fill its batches of 8): the losses stay the original's.
OPTIMIZED_LINES = {
    ("ddp", "optimize"): "ddp_model = DDP(model, device_ids=[rank])",
    ("ddp", "optimize_all"): "ddp_model = DDP(model, device_ids=[rank], broadcast_buffers=False)",
}
OPTIMIZE_OPTIONS = {"optimize": ["--optimize"], "optimize_all": ["--optimize=all"]}
MIGRATIONS = (
    [(name, "full") for name in sorted(RUNNABLE)]
    + [(name, "auto") for name in sorted(AUTOMATIC_FIRST)]
    + [(name, "specify-device") for name in sorted(SPECIFY_DEVICE_FIRST)]
    + [(name, "optimize") for name in sorted(OPTIMIZED)]
    + [("ddp", "optimize_all")]
)


@pytest.mark.parametrize("name,mode", MIGRATIONS)
def test_migrated_program_prints_the_original_losses_under_the_standin(name, mode, tmp_path):
    require_torch()
    arguments, devices, original_first, migrated_first = RUNNABLE[name]
    first_lines = {"auto": AUTOMATIC_FIRST, "specify-device": SPECIFY_DEVICE_FIRST}
    migrated_first = first_lines[mode][name] if mode in first_lines else migrated_first
    original = tmp_path / name
    shutil.copytree(PROGRAMS / name, original)
    options = OPTIMIZE_OPTIONS.get(mode, ["--mode", mode])
    result = run_cli("migrate", "-i", original, "-o", tmp_path / "out", "-v", "2.8.0", *options)
    assert result.returncode == 0, result.stderr
    migrated = tmp_path / "out" / f"{name}_msft"
    assert "import torch_npu\n" in (migrated / "main.py").read_text()
    if mode in OPTIMIZE_OPTIONS:
        assert f" = {OPTIMIZED[name]}\n" in (migrated / "main.py").read_text()
    if (name, mode) in OPTIMIZED_LINES:
        assert f"    {OPTIMIZED_LINES[name, mode]}\n" in (migrated / "main.py").read_text()

    def command(program: Path, prefix=()):
        filled = [a.format(out=".", port=free_port()) for a in arguments]
        return [*prefix, sys.executable, str(program / "main.py"), *filled]

    # Side by side (one intra-op thread each): the original with plain python on the CPU, the
    # migrated copy under the stand-in, and the migrated copy with plain python.
    device_id = {"DEVICE_ID": "1"} if mode == "specify-device" else {}
    standin = gpu2npu_command() + ["run", "--devices", str(max(devices, len(device_id) * 2)), "--"]
    runs = [
        start(command(original), tmp_path / "original_run", plain_env()),
        start(command(migrated, standin), tmp_path / "standin_run", plain_env(**device_id)),
        start(command(migrated), tmp_path / "plain_run", plain_env()),
    ]
    original_out, _ = finish(runs[0])
    migrated_out, _ = finish(runs[1])
    _, without_standin = finish(runs[2], returncode=1)

    assert original_out.splitlines()[0] == original_first  # the original took its CPU fallback,
    assert migrated_out.splitlines()[0] == migrated_first  # the migrated copy the NPU (or CUDA) path
    # Same CPU kernels in the same order, same random stream (the NPU's random state is
    # bookkeeping), GradScaler's power-of-two scaling is exact: every loss (and accuracy, checksum)
    # is equal to the last bit.
    assert migrated_out.splitlines()[1:] == original_out.splitlines()[1:]
    assert len(losses(original_out)) >= 10
    # and without the stand-in the migrated copy cannot even start on this machine
    assert "ModuleNotFoundError: No module named 'torch_npu'" in without_standin


# apex_amp uses apex amp, so the original needs apex: it runs under the stand-in too (whose apex is
# Ascend's amp, on the CPU; torch.cuda stays unavailable, so the original takes its CPU path, and
# apex.normalization is missing, as in Ascend's apex). Each migration prints (first line, losses).
APEX_RUNS = {
    "plain": ([], "device npu norm LayerNorm"),
    "optimize": (["--optimize"], "device npu norm LayerNorm"),
    "optimize_all": (["--optimize=all"], "device npu norm LayerNorm"),
}


def test_apex_amp_layer_norm_and_attention_optimized_train_like_the_original(tmp_path):
    require_torch()
    original = tmp_path / "apex_amp"
    shutil.copytree(PROGRAMS / "apex_amp", original)
    standin = gpu2npu_command() + ["run", "--"]
    runs = {
        "original": start([*standin, sys.executable, str(original / "main.py")], tmp_path / "o", plain_env())
    }
    for name, (options, _) in APEX_RUNS.items():
        out = tmp_path / name
        result = run_cli("migrate", "-i", original, "-o", out, "-v", "2.8.0", *options)
        assert result.returncode == 0, result.stderr
        program = out / "apex_amp_msft" / "main.py"
        pinned = 'pin_memory=True, pin_memory_device="npu")' in program.read_text().replace(
            ", drop_last=True", ""
        )
        assert pinned == bool(options)  # exact: --optimize alone pins the batches for the NPU
        runs[name] = start([*standin, sys.executable, str(program)], tmp_path / f"{name}_run", plain_env())
    printed = {name: finish(run)[0].splitlines() for name, run in runs.items()}

    assert printed["original"][0] == "device cpu norm LayerNorm"
    for name, (_, first) in APEX_RUNS.items():
        assert printed[name][0] == first
    # 50 samples in batches of 8: six full batches and a short one
    assert [line.split(" loss ")[0] for line in printed["original"][1:]] == [
        f"step {step} batch {8 if step < 6 else 2}" for step in range(7)
    ]
    # the import of FusedLayerNorm made torch's LayerNorm (exact), NpuFusedAdam and
    # combine_grad=True (tolerance: here the same kernels, so to the last bit): the original's losses
    assert printed["plain"][1:] == printed["original"][1:]
    assert printed["optimize"][1:] == printed["original"][1:]
    # =all adds drop_last=True (behaviour): the same losses without the short last batch
    assert printed["optimize_all"][1:] == printed["original"][1:-1]


def run_migrations(tmp_path, program: str, variants: dict):
    """Writes ``program`` as proj/main.py and starts it with plain python; migrates it once per
    variant (name: migrate options, -v 2.8.0) and starts each copy under the stand-in. Returns
    the original's process and, per variant, (the migrated source, its process)."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "main.py").write_text(program)
    standin = gpu2npu_command() + ["run", "--"]
    original = start([sys.executable, str(tmp_path / "proj" / "main.py")], tmp_path / "o", plain_env())
    migrated = {}
    for name, options in variants.items():
        result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / name, "-v", "2.8.0", *options)
        assert result.returncode == 0, result.stderr
        program_path = tmp_path / name / "proj_msft" / "main.py"
        run = start([*standin, sys.executable, str(program_path)], tmp_path / f"{name}_run", plain_env())
        migrated[name] = (program_path.read_text(), run)
    return original, migrated


def optimizer_kept(tmp_path, program: str, optimizer: str, rule: str):
    """``program`` (its optimizer on line 5) migrated with --optimize keeps torch.optim.OPTIMIZER,
    reported by ``rule``, and its copy prints the original's loss lines: the migrated source and
    those lines."""
    original, migrated = run_migrations(tmp_path, program, {"optimized": ["--optimize"]})
    source, run = migrated["optimized"]
    assert f"optimizer = torch.optim.{optimizer}(model.parameters(), lr=0.01)\n" in source
    expected = losses(finish(original)[0])
    assert losses(finish(run)[0]) == expected
    kept = rows(tmp_path / "optimized" / "proj_msft" / "transplant_result_file" / "unsupported_api.csv")
    optimizers = [row[1:4] + row[-1:] for row in kept[1:] if row[-1].startswith("rules:G2N200")]
    assert optimizers == [["5", "5", f"torch.optim.{optimizer}", f"rules:{rule}"]]
    return source, expected


def loss_values(stdout: str):
    return [float(line.rsplit(" ", 1)[1]) for line in losses(stdout)]


SET_TO_NONE_PROGRAM = """import torch
torch.manual_seed(0)
device = 'cuda' if torch.cuda.is_available() else 'cpu'
model = torch.nn.Linear(4, 1).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
for step in range(3):
    optimizer.zero_grad(set_to_none=True)
    loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
    loss.backward()
    optimizer.step()
    print('step', step, 'loss', loss.item())
"""


def test_a_fused_optimizer_is_not_made_where_the_project_clears_gradients_to_none(tmp_path):
    """torch_npu's fused optimizers raise on zero_grad(set_to_none=True) (dinov2's training loop):
    --optimize keeps torch.optim.AdamW there, and the copy trains like the original; where the
    loop passes set_to_none=False, AdamW becomes NpuFusedAdamW, which the stand-in, as torch_npu,
    refuses to clear to None."""
    require_torch()
    cleared_in_place = SET_TO_NONE_PROGRAM.replace("set_to_none=True", "set_to_none=False")
    _, expected = optimizer_kept(tmp_path, SET_TO_NONE_PROGRAM, "AdamW", "G2N2003")
    assert len(expected) == 3
    (tmp_path / "in_place").mkdir()
    (tmp_path / "in_place" / "main.py").write_text(cleared_in_place)
    result = run_cli(
        "migrate", "-i", tmp_path / "in_place", "-o", tmp_path / "fused", "-v", "2.8.0", "--optimize"
    )
    assert result.returncode == 0, result.stderr
    fused = tmp_path / "fused" / "in_place_msft" / "main.py"
    assert "optimizer = torch_npu.optim.NpuFusedAdamW(model.parameters(), lr=0.01)\n" in fused.read_text()
    standin = gpu2npu_command() + ["run", "--"]
    in_place = run_program([*standin, sys.executable, str(fused)], env=plain_env())
    assert in_place.returncode == 0, in_place.stderr
    assert loss_values(in_place.stdout) == pytest.approx(loss_values("\n".join(expected)), rel=1e-5)
    fused.write_text(fused.read_text().replace("set_to_none=False", "set_to_none=True"))
    refused = run_program([*standin, sys.executable, str(fused)], env=plain_env())
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1] == "ValueError: set_to_none is not supported in fused optimizers"


# tacotron2's train.py: the model's zero_grad(), which from torch 2.0 sets the gradients to None
MODULE_ZERO_GRAD_PROGRAM = """import torch
torch.manual_seed(0)
device = 'cuda' if torch.cuda.is_available() else 'cpu'
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(64, 4, device=device)
for step in range(40):
    model.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True).sin())
    loss.backward()
    optimizer.step()
    if step % 10 == 9:
        print('step', step, 'loss', loss.item())
"""


def test_a_fused_optimizer_is_not_made_where_a_module_clears_the_gradients(tmp_path):
    """The stand-in's fused optimizers step from the gradients they combined at their first step,
    as torch_npu's do: after model.zero_grad() (None, from torch 2.0) backward makes new ones they
    never see. So --optimize keeps torch.optim.Adam (reported), and the copy trains like the
    original; the optimizer made fused by hand repeats its first gradients and ends elsewhere."""
    require_torch()
    source, expected = optimizer_kept(tmp_path, MODULE_ZERO_GRAD_PROGRAM, "Adam", "G2N2002")
    assert len(expected) == 4
    fused = tmp_path / "optimized" / "proj_msft" / "main.py"
    fused.write_text(source.replace("torch.optim.Adam(", "torch_npu.optim.NpuFusedAdam("))
    by_hand = run_program(gpu2npu_command() + ["run", "--", sys.executable, str(fused)], env=plain_env())
    assert by_hand.returncode == 0, by_hand.stderr
    assert loss_values(by_hand.stdout)[-1] != pytest.approx(loss_values("\n".join(expected))[-1], rel=0.1)
    in_place = fused.read_text().replace("model.zero_grad()", "optimizer.zero_grad()")
    fused.write_text(in_place)  # the fused optimizer's own zero_grad clears its buffer: the same run
    cleared = run_program(gpu2npu_command() + ["run", "--", sys.executable, str(fused)], env=plain_env())
    assert loss_values(cleared.stdout) == pytest.approx(loss_values("\n".join(expected)), rel=1e-5)


NVTX_PROGRAM = """import torch
torch.manual_seed(0)
weights = torch.randn(4, device='cuda' if torch.cuda.is_available() else 'cpu')
for step in range(3):
    if torch.cuda.is_available():
        torch.cuda.nvtx.mark('step {}'.format(step))
    weights = weights * 0.5 + 1
    print('step', step, weights.sum().item())
"""


def test_nvtx_marks_become_mstx_marks_that_run(tmp_path):
    """G2N2060 (exact): the plain migration keeps the marks on CUDA (their guard stays
    torch.cuda.is_available(), both reported), so the copy runs on the NPU without them;
    --optimize writes torch_npu's mstx.mark under an NPU guard. Both print the original's numbers."""
    require_torch()
    original, migrated = run_migrations(tmp_path, NVTX_PROGRAM, {"plain": [], "optimize": ["--optimize"]})
    marks = "    if torch.npu.is_available():\n        torch.npu.mstx.mark('step {}'.format(step))\n"
    assert [marks in source for source, _ in migrated.values()] == [False, True]
    printed = {name: finish(run)[0] for name, (_, run) in migrated.items()}
    assert printed["plain"] == printed["optimize"] == finish(original)[0]
    assert len(printed["optimize"].splitlines()) == 3


@pytest.mark.parametrize(
    "device_id,selected", [("1", "1 npu:1 npu:1"), ("", "0 npu:0 npu:0"), ("x", "0 npu:0 npu:0")]
)
def test_s_selects_the_card_of_device_id(device_id, selected, tmp_path):
    require_torch()
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "if __name__ == '__main__':\n"
        "    d = torch.device('cuda', 0)\n"
        "    print(torch.cuda.current_device(), d, torch.device('cuda:0'))\n"
    )
    result = run_cli("migrate", "-i", script, "-o", tmp_path / "out", "-v", "2.8.0", "-s")
    assert result.returncode == 0, result.stderr
    run = subprocess.run(
        gpu2npu_command() + ["run", "--devices", "2", "--", sys.executable, "train.py"],
        cwd=tmp_path / "out" / "train_msft",
        env=plain_env(DEVICE_ID=device_id),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (run.returncode, run.stdout) == (0, selected + "\n"), run.stderr


def eval_losses(stdout: str):
    return [float(line.rsplit(" ", 1)[1]) for line in stdout.splitlines() if " eval loss " in line]


def migrate_distributed(source, out, *extra):
    """The multi-card copy of ``source`` (its main.py the main script)."""
    result = run_cli(
        "migrate", "-i", source, "-o", out, "-v", "2.8.0", "distributed", "-m", source / "main.py", *extra
    )
    assert result.returncode == 0, result.stderr
    return out / f"{source.name}_msft_multi"


def run_original_project(tmp_path, name: str):
    """A copy of tests/projects/NAME, and its run on one process with batches of 16 for 2 epochs
    (its checkpoint: original.pt)."""
    require_torch()
    source = tmp_path / name
    shutil.copytree(REPO / "tests" / "projects" / name, source)
    command = [sys.executable, "main.py", "--batch-size", "16", "--epochs", "2"]
    original = run_program(
        [*command, "--checkpoint", str(tmp_path / "original.pt")], cwd=source, env=plain_env()
    )
    assert original.returncode == 0, original.stderr
    return source, original


def run_on_two_processes(migrated: Path, checkpoint: Path) -> subprocess.CompletedProcess:
    """The multi-card copy started by its launcher on two emulated NPUs, 8 samples each a step."""
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    arguments = ["--batch-size", "8", "--epochs", "2", "--checkpoint", str(checkpoint)]
    launcher = gpu2npu_command() + ["run", "--devices", "2", "--", "sh", "run_distributed_npu.sh", "2"]
    multi = run_program([*launcher, *arguments], cwd=migrated, env=plain_env(PATH=path))
    assert multi.returncode == 0, multi.stderr
    return multi


def test_distributed_copy_on_two_processes_ends_each_epoch_with_the_original_loss(tmp_path):
    """The original trains on one process with batches of 16; the distributed copy, started by its
    launcher (torchrun, hccl on gloo), on two with 8 each: the same global batch. Its sampler
    (shuffle=False, as the original) gives rank r the samples r, r+2, ...: together each step's
    batch of the original, and DDP averages the two halves' gradients into the original's."""
    source, original = run_original_project(tmp_path, "distributed_run")
    multi = run_on_two_processes(migrate_distributed(source, tmp_path / "out"), tmp_path / "multi.pt")
    assert original.stdout.splitlines()[0] == "device cpu"
    assert multi.stdout.splitlines()[0] == "device npu"  # printed by rank 0 only: one line each
    assert len(multi.stdout.splitlines()) == len(original.stdout.splitlines()) == 3
    expected, got = eval_losses(original.stdout), eval_losses(multi.stdout)
    assert len(expected) == len(got) == 2
    # the same arithmetic in another order (two half-batch means averaged): close to float32 rounding
    assert got == pytest.approx(expected, rel=1e-5)
    import torch

    saved, wanted = torch.load(tmp_path / "multi.pt"), torch.load(tmp_path / "original.pt")
    assert saved.keys() == wanted.keys()  # saved through model.module: no "module." prefix
    assert all(torch.allclose(saved[k], wanted[k], rtol=1e-5, atol=1e-6) for k in wanted)


def test_distributed_copy_of_two_models_trains_each_like_the_original(tmp_path):
    """A GAN's shape (tests/projects/distributed_gan): with -t netG,netD both models are wrapped
    after their weights are drawn (netG.apply(init_weights)), so two processes with half the batch
    each end every epoch with the original's losses, and the checkpoint keeps both models' keys.
    With -t netG alone netD trains on half the data in each process: other losses, and a row."""
    source, original = run_original_project(tmp_path, "distributed_gan")
    losses = {}
    for models in ("netG,netD", "netG"):
        migrated = migrate_distributed(source, tmp_path / models, "-t", models)
        losses[models] = eval_losses(run_on_two_processes(migrated, tmp_path / f"{models}.pt").stdout)
    expected = eval_losses(original.stdout)
    assert len(expected) == 2
    assert losses["netG,netD"] == pytest.approx(expected, rel=1e-5)
    assert losses["netG"] != pytest.approx(expected, rel=1e-2)
    reports = tmp_path / "netG" / "distributed_gan_msft_multi" / "transplant_result_file"
    unwrapped = [row[1:4] for row in rows(reports / "unsupported_api.csv") if row[-1] == "rules:G2N741"]
    assert unwrapped == [["36", "36", "netD"]]
    import torch

    saved, wanted = torch.load(tmp_path / "netG,netD.pt"), torch.load(tmp_path / "original.pt")
    assert {k: sorted(v) for k, v in saved.items()} == {k: sorted(v) for k, v in wanted.items()}


def test_distributed_copy_of_a_data_parallel_model_reads_module_and_keeps_its_checkpoints(tmp_path):
    """RAFT's shape (tests/projects/distributed_dp): DistributedDataParallel takes the DataParallel's
    place, so model.module.freeze_bn() still reaches the model (DDP around the DataParallel raised
    AttributeError), two processes with half the batch end with the original's weights under the
    original's 'module.' keys, and a checkpoint the original saved restores through the wrapper."""
    source, original = run_original_project(tmp_path, "distributed_dp")
    migrated = migrate_distributed(source, tmp_path / "out")
    assert (
        "    model = torch.nn.parallel.DistributedDataParallel(Net().npu(), device_ids=[LOCAL_RANK])\n"
        in (migrated / "main.py").read_text()
    )
    multi = run_on_two_processes(migrated, tmp_path / "multi.pt")
    assert multi.stdout.splitlines() == ["device npu", "epoch 0 done", "epoch 1 done"]
    import torch

    saved, wanted = torch.load(tmp_path / "multi.pt"), torch.load(tmp_path / "original.pt")
    assert sorted(saved) == sorted(wanted) and all(key.startswith("module.") for key in saved)
    assert all(torch.allclose(saved[k].float(), wanted[k].float(), rtol=1e-5, atol=1e-6) for k in wanted)
    restored = run_program(
        gpu2npu_command()
        + ["run", "--", sys.executable, "main.py", "--restore_ckpt", str(tmp_path / "original.pt")],
        cwd=migrated,
        env=plain_env(MASTER_PORT=str(free_port())),
    )
    assert (restored.returncode, restored.stdout.splitlines()[0]) == (0, "device npu"), restored.stderr


# pytorch-cifar's shape: net at module level, its checkpoint saved by test(), a module-level
# function called in the epoch loop after the wrap, and loaded back with --resume
RESUMING = """import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument('--resume', action='store_true')
args = parser.parse_args()
device = 'cuda' if torch.cuda.is_available() else 'cpu'
print('device', device)

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
net = net.to(device)
start_epoch = 0
if args.resume:
    checkpoint = torch.load('ckpt.pth')
    net.load_state_dict(checkpoint['net'])
    start_epoch = checkpoint['epoch'] + 1
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)


def test(epoch):
    state = {'net': net.state_dict(), 'epoch': epoch}
    torch.save(state, 'ckpt.pth')


for epoch in range(start_epoch, start_epoch + 2):
    loss = net(torch.randn(16, 8).to(device)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    test(epoch)
print('done', epoch)
"""


def test_distributed_copy_saves_a_checkpoint_in_a_function_that_it_can_resume_from(tmp_path):
    """The checkpoint test() saves after the wrap goes through net.module: the keys of the model's
    own state_dict, which the resumed run loads into net.module (a group of one process, hccl on
    gloo; without .module the keys start with 'module.' and the resume fails)."""
    require_torch()
    source = tmp_path / "resume"
    source.mkdir()
    (source / "main.py").write_text(RESUMING)
    migrated = migrate_distributed(source, tmp_path / "out", "-t", "net")
    assert (
        "    state = {'net': net.module.state_dict(), 'epoch': epoch}\n" in (migrated / "main.py").read_text()
    )
    env = plain_env(MASTER_PORT=str(free_port()))
    for arguments, last in (([], "done 1"), (["--resume"], "done 3")):
        run = run_program(
            gpu2npu_command() + ["run", "--", sys.executable, "main.py", *arguments], cwd=migrated, env=env
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines() == ["device npu", last]
    import torch

    saved = torch.load(migrated / "ckpt.pth")
    assert saved["epoch"] == 3
    assert sorted(saved["net"]) == ["0.bias", "0.weight", "2.bias", "2.weight"]


# program, the rules switched off, a line of the migrated copy, the error its run ends with
WITHOUT_KEPT = {
    # G2N090 keeps `if torch.cuda.is_available():` before apex: else the NPU run imports apex's kernels
    "apex guard": (
        "fused_norm",
        ["G2N090"],
        "    if torch.npu.is_available():\n        # apex's kernels",
        "ModuleNotFoundError: No module named 'apex.normalization'",
    ),
    # G2N091 keeps the capability read on CUDA: the NPU's device properties have no major
    "capability": (
        "resume",
        ["G2N091"],
        "torch.npu.is_available() and torch.npu.get_device_properties(0).major >= 8",
        "AttributeError: 'DeviceProperties' object has no attribute 'major'",
    ),
    # G2N092 keeps the exported metadata's 'cuda': renamed, the program rejects its own export
    "compared string": ("resume", ["G2N092"], "if meta['device_type'] == 'npu':", "unknown export: cuda"),
}


@pytest.mark.parametrize("case", sorted(WITHOUT_KEPT))
def test_without_the_kept_line_the_migrated_program_fails(case, tmp_path):
    """Why the kept lines are kept: with their rule switched off, the migration rewrites them and
    the migrated program fails under the stand-in (with them, it prints the original's losses)."""
    require_torch()
    name, rules, rewritten, error = WITHOUT_KEPT[case]
    original = tmp_path / name
    shutil.copytree(PROGRAMS / name, original)
    disabled = [arg for rule in rules for arg in ("--disable-rule", rule)]
    result = run_cli("migrate", "-i", original, "-o", tmp_path / "out", "-v", "2.8.0", *disabled)
    assert result.returncode == 0, result.stderr
    migrated = tmp_path / "out" / f"{name}_msft" / "main.py"
    assert rewritten in migrated.read_text()
    run = start(
        gpu2npu_command() + ["run", "--", sys.executable, str(migrated), "--steps", "2"],
        tmp_path / "run",
        plain_env(),
    )
    _, stderr = finish(run, returncode=1)
    assert stderr.splitlines()[-1] == error


# -- automatic migration: torch_npu.contrib.transfer_to_npu ---------------------------------------


def test_transfer_to_npu_answers_torch_cuda_with_the_emulated_npus():
    query = """
        import torch
        from torch_npu.contrib import transfer_to_npu  # imports torch_npu itself
        import torch_npu.contrib.transfer_to_npu  # again: harmless
        print(torch.cuda.is_available(), torch.cuda.device_count())
        """
    assert standin_python(query, devices=1) == "True 1\n"
    assert standin_python(query, devices=0) == "False 0\n"
    out = standin_python(
        """
        import torch, torch_npu
        from torch_npu.contrib import transfer_to_npu
        from torch.cuda.amp import GradScaler, autocast
        cuda = torch.cuda
        assert (GradScaler, autocast) == (torch_npu.npu.amp.GradScaler, torch_npu.npu.amp.autocast)
        assert cuda.amp.GradScaler is GradScaler and cuda.Stream is torch.npu.Stream
        cuda.set_device('cuda:1')
        assert cuda.current_device() == torch.npu.current_device() == 1
        cuda.manual_seed_all(3); cuda.synchronize(); cuda.empty_cache()
        assert cuda.initial_seed() == 3 and cuda.random.initial_seed() == 3
        assert len(cuda.default_generators) == 2 and cuda.memory_allocated() == 0
        assert cuda.get_device_name(0) == torch.npu.get_device_name(0)
        print(cuda.get_device_properties(1).total_memory, cuda.Event(enable_timing=True).query())
        """,
        devices=2,
    )
    assert out == f"{64 * 1024**3} True\n"


def test_a_visibility_mask_set_after_transfer_to_npu_is_seen():
    """yolov7 and ijepa narrow the visible cards in Python after importing torch: the runtime reads
    the mask when the device count is first asked, and importing the patcher does not ask it."""
    out = standin_python(
        """
        import os
        import torch, torch_npu
        from torch_npu.contrib import transfer_to_npu
        os.environ['ASCEND_RT_VISIBLE_DEVICES'] = '1'
        generators = torch.cuda.default_generators
        print(torch.cuda.device_count(), len(generators), torch.npu.default_generators[-1:])
        """,
        devices=2,
    )
    assert out.startswith("1 1 (<torch._C.Generator object")


def test_cuda_devices_land_on_the_cpu_after_transfer_to_npu(tmp_path):
    checkpoint = tmp_path / "weights.pt"
    out = standin_python(
        f"""
        import torch, torch_npu
        from torch_npu.contrib import transfer_to_npu
        cpu = torch.device('cpu')
        assert torch.device('cuda:1').type == 'cuda'  # the object stays; where it is passed, the CPU
        tensors = [
            torch.zeros(2, device='cuda'), torch.ones(2, device=torch.device('cuda', 1)),
            torch.ones(2).to('cuda:1'), torch.ones(2).cuda(), torch.ones(2).cuda(1), torch.ones(2).to(1),
        ]
        assert all(t.device == cpu and t.is_cuda for t in tensors)
        model = torch.nn.Linear(2, 2).cuda()
        assert model.to('cuda:1') is model and model.weight.device == cpu
        generator, same = torch.Generator(device='cuda').manual_seed(5), torch.Generator().manual_seed(5)
        assert torch.equal(torch.rand(3, generator=generator), torch.rand(3, generator=same))
        with torch.autocast('cuda', dtype=torch.float16), torch.amp.autocast(device_type='cuda'):
            assert torch.is_autocast_enabled('npu') and (tensors[0] @ tensors[0]).dtype == torch.float32
        assert torch.amp.GradScaler('cuda').is_enabled() and torch.amp.GradScaler().is_enabled()
        # a checkpoint saved on CUDA: its storages are tagged 'cuda:0'
        torch.serialization.register_package(1, lambda storage: 'cuda:0', lambda storage, location: None)
        torch.save(model.state_dict(), {str(checkpoint)!r})
        for where in (None, 'cuda', 'cuda:1', torch.device('cuda'), {{'cuda:0': 'cuda:1'}}):
            state = torch.load({str(checkpoint)!r}, map_location=where)
            assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
        loader = torch.utils.data.DataLoader(torch.arange(4.0), batch_size=2, pin_memory=True)
        assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]
        try:
            torch.zeros(1, device='cuda:2')
        except RuntimeError as error:
            print(error)
        """,
        devices=2,
    )
    assert out.startswith("invalid NPU device index 2: the gpu2npu stand-in emulates 2 NPU(s)")


def test_transfer_to_npu_disables_jit_script_runs_nccl_as_hccl_and_profiles_the_npu(tmp_path):
    out = standin_python(
        f"""
        import torch, torch_npu
        from torch_npu.contrib import transfer_to_npu
        import torch.distributed as dist

        def f(x):
            return x + 1

        assert torch.jit.script(f) is f and torch.jit.script_method(f) is f
        assert dist.is_nccl_available() and torch.profiler.profile is torch_npu.profiler.profile
        assert torch.profiler.ProfilerActivity.CUDA == torch.profiler.ProfilerActivity.NPU
        dist.init_process_group('nccl', init_method='file://{tmp_path / "store"}', rank=0, world_size=1)
        group = dist.new_group([0], backend=dist.Backend.NCCL)
        total = torch.ones(1, device='cuda')
        dist.all_reduce(total, group=group)
        print(dist.get_backend(), dist.get_backend(group), total.item())
        dist.destroy_process_group()
        """
    )
    assert out == "hccl hccl 1.0\n"


def test_a_migrated_launcher_and_config_train_like_the_original_on_the_cpu(tmp_path):
    """The launcher (CUDA_VISIBLE_DEVICES, --dist-backend nccl) and the config (device: cuda,
    backend: nccl) of a project, migrated, start a run on the stand-in that gives the losses of
    the original run on the CPU with gloo: the edits of the other file kinds make a working program."""
    require_torch()
    source = tmp_path / "launcher_run"
    shutil.copytree(REPO / "tests" / "projects" / "launcher_run", source)
    result = run_cli("migrate", "-i", source, "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    migrated = tmp_path / "out" / "launcher_run_msft"
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    (tmp_path / "cpu.yaml").write_text("device: cpu\ndistributed:\n  backend: gloo\n")
    torchrun = ["torchrun", "--standalone", "--nproc_per_node=1", "train.py"]
    original = run_program(
        [*torchrun, "--config", str(tmp_path / "cpu.yaml"), "--dist-backend", "gloo"],
        cwd=source, env=plain_env(PATH=path),
    )  # fmt: skip
    assert original.returncode == 0, original.stderr
    run = run_program(
        gpu2npu_command() + ["run", "--devices", "1", "--", "bash", "launch.sh"],
        cwd=migrated,
        env=plain_env(PATH=path),
    )
    assert run.returncode == 0, run.stderr
    expected = [
        line.replace("device cpu backend gloo", "device npu backend hccl")
        for line in original.stdout.splitlines()
    ]
    assert run.stdout.splitlines() == expected and len(expected) == 3


PRECISION_PROGRAM = """import torch
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = False
device = 'cuda' if torch.cuda.is_available() else 'cpu'
torch.manual_seed(0)
model = torch.nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
inputs = torch.randn(64, 8)
targets = inputs.sum(dim=1, keepdim=True)
total, count = 0.0, 0
for step in range(8):
    x, y = inputs[8 * step:8 * step + 8].to(device), targets[8 * step:8 * step + 8].to(device)
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total, count = total + loss.item(), count + 1
    if torch.cuda.is_available():
        meter = torch.tensor([count, total], dtype=torch.float64, device='cuda')
    else:
        meter = torch.tensor([count, total], dtype=torch.float64)
    print('step', step, 'loss', repr(loss.item()), 'mean', repr((meter[1] / meter[0]).item()), meter.dtype)
print('tf32', torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
"""


def test_tf32_switches_and_float64_meters_optimized_train_like_the_original(tmp_path):
    """G2N2070/G2N2071 (tolerance): the TF32 switches become the HF32 switches the NPU reads, set
    to the original's values; the stand-in computes in float32 (it has no HF32), so the losses are
    the original's to the last bit. G2N2080 (behaviour, =all): the float64 meter made on the
    device is float32 there: the same losses, a mean within float32's rounding (2**-24 relative)
    of the original's float64 mean."""
    require_torch()
    variants = {"optimize": ["--optimize"], "optimize_all": ["--optimize=all"]}
    original, migrated = run_migrations(tmp_path, PRECISION_PROGRAM, variants)
    meter = "torch.tensor([count, total], dtype=torch.float32, device='npu')"
    for name, (source, _) in migrated.items():
        assert "torch.npu.matmul.allow_hf32 = True\ntorch.npu.conv.allow_hf32 = False\n" in source
        assert (meter in source) == (name == "optimize_all")
    printed = {name: finish(run)[0].splitlines() for name, (_, run) in migrated.items()}
    expected = finish(original)[0].splitlines()

    assert expected[-1] == printed["optimize"][-1] == printed["optimize_all"][-1] == "tf32 True False"
    assert printed["optimize"] == expected  # the meter stays float64 without =all
    assert len(expected) == 9
    for mine, theirs in zip(printed["optimize_all"][:-1], expected[:-1]):
        step, loss, mean, dtype = _meter_line(mine)
        their_step, their_loss, their_mean, their_dtype = _meter_line(theirs)
        assert (step, loss, dtype) == (their_step, their_loss, "torch.float32")
        assert their_dtype == "torch.float64"
        assert mean == pytest.approx(their_mean, rel=2**-24)


def _meter_line(line: str):
    """(step, loss text, mean, dtype) of a line the precision program prints."""
    _, step, _, loss, _, mean, dtype = line.split()
    return int(step), loss, float(mean), dtype


FUSED_ADAM_PROGRAM = """import torch
device = 'cuda' if torch.cuda.is_available() else 'cpu'
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).to(device)
if torch.cuda.is_available():
    from apex.optimizers import FusedAdam
    optimizer = FusedAdam(model.parameters(), lr=1e-2)
else:  # FusedAdam's algorithm (adam_w_mode=True, weight_decay=0) without its CUDA kernels
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
inputs = torch.randn(80, 8)
targets = inputs.sum(dim=1, keepdim=True).sin()
for step in range(10):
    x, y = inputs[8 * step:8 * step + 8].to(device), targets[8 * step:8 * step + 8].to(device)
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print('step', step, 'loss', repr(loss.item()))
"""


def test_apex_fused_adam_becomes_npu_fused_adamw_that_trains_like_it(tmp_path):
    """G2N2006 (tolerance): on an NPU apex's FusedAdam cannot be built (Ascend's apex, like the
    stand-in's, keeps the class without its CUDA kernels), so the plain migration fails there;
    --optimize writes NpuFusedAdamW with apex's weight_decay default (0), whose losses are those
    of FusedAdam's algorithm (AdamW, weight decay 0) on the CPU: to the last bit here, where both
    are torch's AdamW (NpuFusedAdamW's default weight decay, 1e-2, would change them)."""
    require_torch()
    original, migrated = run_migrations(
        tmp_path, FUSED_ADAM_PROGRAM, {"plain": [], "optimize": ["--optimize"]}
    )
    fused = "    optimizer = torch_npu.optim.NpuFusedAdamW(model.parameters(), lr=1e-2, weight_decay=0)\n"
    assert [fused in source for source, _ in migrated.values()] == [False, True]
    expected = finish(original)[0]
    _, failure = finish(migrated["plain"][1], returncode=1)
    assert "No module named 'amp_C': apex.optimizers.FusedAdam needs apex's CUDA kernels" in failure
    assert finish(migrated["optimize"][1])[0] == expected
    assert len(losses(expected)) == 10


PROFILED_PROGRAM = """import torch
activities = [torch.profiler.ProfilerActivity.CPU]
if torch.cuda.is_available():
    activities.append(torch.profiler.ProfilerActivity.CUDA)
device = 'cuda' if torch.cuda.is_available() else 'cpu'
torch.manual_seed(0)
model = torch.nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
inputs = torch.randn(32, 8)
with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
    for step in range(4):
        x = inputs[8 * step:8 * step + 8].to(device)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print('step', step, 'loss', repr(loss.item()))
"""


def test_a_profiled_run_gets_the_npu_analysis_configuration_and_trains_the_same(tmp_path):
    """G2N2061 (exact): the profiler of the migrated copy is torch_npu's with Level1 and the
    PipeUtilization AI Core metrics (the stand-in takes only _ExperimentalConfig's documented
    keywords: a wrong one would fail the run); the losses are the original's to the last bit."""
    require_torch()
    original, migrated = run_migrations(tmp_path, PROFILED_PROGRAM, {"optimize": ["--optimize"]})
    source, run = migrated["optimize"]
    config = (
        "experimental_config=torch_npu.profiler._ExperimentalConfig(profiler_level=torch_npu.profiler."
        "ProfilerLevel.Level1, aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization)) as prof:\n"
    )
    assert config in source
    expected = finish(original)[0]
    assert finish(run)[0] == expected
    assert len(losses(expected)) == 4


ATTENTION_PROGRAM = """import torch
import torch.nn.functional as F
try:
    from flash_attn import flash_attn_func, flash_attn_qkvpacked_func
    HAS_FLASH = torch.cuda.is_available()
except ImportError:
    HAS_FLASH = False


class Block(torch.nn.Module):
    def __init__(self, dim=32, heads=4, causal=True):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.norm = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        qkv = self.qkv(self.norm(x)).view(b, s, 3, self.heads, d // self.heads)
        q, k, v = qkv.unbind(2)
        if HAS_FLASH and self.causal:
            y = flash_attn_func(q, k, v, causal=self.causal)
        elif HAS_FLASH:
            y = flash_attn_qkvpacked_func(qkv)
        else:  # flash-attn's computation without its CUDA kernels
            t = lambda u: u.transpose(1, 2)
            y = t(F.scaled_dot_product_attention(t(q), t(k), t(v), is_causal=self.causal))
        return x + self.out(y.reshape(b, s, d))


device = 'cuda' if torch.cuda.is_available() else 'cpu'
torch.manual_seed(0)
model = torch.nn.Sequential(Block(), Block(causal=False)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
inputs = torch.randn(40, 6, 32)
for step in range(5):
    x = inputs[8 * step:8 * step + 8].to(device)
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print('step', step, 'loss', repr(loss.item()))
"""


def test_flash_attention_becomes_the_npu_fused_attention_that_trains_like_it(tmp_path):
    """G2N2040, G2N2041 (tolerance): flash-attn cannot be installed on an NPU machine, so the plain
    copy takes its SDPA path there; with --optimize the import goes and the calls become
    torch_npu.npu_fusion_attention (BSND, q's heads, 1/sqrt(head dim), the compressed causal mask
    where the block is causal), which the stand-in computes as the documented formula (and refuses
    a causal mode without that mask). Losses agree with the original's within 1e-5 relative
    (float32 sums in another order)."""
    require_torch()
    original, migrated = run_migrations(
        tmp_path, ATTENTION_PROGRAM, {"plain": [], "optimize": ["--optimize"]}
    )
    fused = "            y = torch_npu.npu_fusion_attention(\n"
    assert [source.count(fused) for source, _ in migrated.values()] == [0, 2]
    assert "flash_attn" not in migrated["optimize"][0]
    expected = losses(finish(original)[0])
    assert losses(finish(migrated["plain"][1])[0]) == expected
    optimized = losses(finish(migrated["optimize"][1])[0])
    assert len(expected) == len(optimized) == 5
    for ours, theirs in zip(optimized, expected):
        assert ours.split()[:3] == theirs.split()[:3]
        assert math.isclose(float(ours.split()[3]), float(theirs.split()[3]), rel_tol=1e-5)


SCALER_PROGRAM = """import sys
import torch
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
torch.distributed.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
model = torch.nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for scaler in (torch.amp.GradScaler(init_scale=1024.0), ShardedGradScaler(init_scale=512.0)):
    loss = model(torch.ones(2, 4).cuda()).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    print(type(scaler).__name__, scaler.is_enabled(), scaler.get_scale())
"""


def test_a_grad_scaler_built_without_a_device_scales_on_the_npu(tmp_path):
    """torch.amp.GradScaler() is CUDA's: on an NPU machine it disables itself and fp16 trains
    without loss scaling. The copy passes device='npu', and under the stand-in it scales; without
    the device it is disabled there. FSDP's ShardedGradScaler() is left as it is: torch_npu puts
    its own in place of torch's, which takes no device (verl's ShardedGradScaler(device='npu')
    raised TypeError)."""
    require_torch()
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "main.py").write_text(SCALER_PROGRAM)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8.0")
    assert result.returncode == 0, result.stderr
    copy = tmp_path / "out" / "proj_msft" / "main.py"
    source = copy.read_text()
    assert "(torch.amp.GradScaler(init_scale=1024.0, device='npu'), " in source
    assert " ShardedGradScaler(init_scale=512.0)):" in source
    standin = gpu2npu_command() + ["run", "--"]
    scaled = run_program([*standin, sys.executable, str(copy), str(tmp_path / "store")], env=plain_env())
    assert scaled.returncode == 0, scaled.stderr
    assert scaled.stdout == "GradScaler True 1024.0\nShardedGradScaler True 512.0\n"
    copy.write_text(source.replace(", device='npu')", ")"))
    disabled = run_program([*standin, sys.executable, str(copy), str(tmp_path / "store2")], env=plain_env())
    assert disabled.stdout == "GradScaler False 1.0\nShardedGradScaler True 512.0\n", disabled.stderr
    copy.write_text(source.replace("(init_scale=512.0)", "(init_scale=512.0, device='npu')"))
    refused = run_program([*standin, sys.executable, str(copy), str(tmp_path / "store3")], env=plain_env())
    assert "got an unexpected keyword argument 'device'" in refused.stderr, refused.stderr


ATTEND_PROGRAM = """import torch
from collections import namedtuple
Config = namedtuple("Config", ["scale"])


class Attend:
    def __init__(self):
        self.cpu_config = Config(1.0)
        self.cuda_config = None
        if not torch.cuda.is_available():
            return
        self.cuda_config = Config(float(torch.cuda.get_device_properties(0).major))

    def __call__(self, q):
        _, heads, is_cuda, device = *q.shape, q.is_cuda, q.device
        config = self.cuda_config if is_cuda else self.cpu_config
        return q * config.scale


device = 'cuda' if torch.cuda.is_available() else 'cpu'
q = torch.ones(2, 3).to(device)
print(device, Attend()(q).sum().item())
"""


def test_a_cuda_test_bound_to_a_name_stays_where_the_name_picks_a_cuda_only_config(tmp_path):
    """denoising-diffusion-pytorch's Attend: ``is_cuda`` is bound by starred tuple unpacking and
    picks ``self.cuda_config``, which only the kept ``torch.cuda.is_available()`` branch sets. As
    ``q.is_npu`` it picked None on the NPU (AttributeError); kept, the NPU takes the CPU config."""
    require_torch()
    original, migrated = run_migrations(tmp_path, ATTEND_PROGRAM, {"plain": []})
    source, run = migrated["plain"]
    assert "_, heads, is_cuda, device = *q.shape, q.is_cuda, q.device\n" in source
    assert "device = 'npu' if torch.npu.is_available() else 'cpu'\n" in source
    assert finish(original)[0] == "cpu 6.0\n"
    assert finish(run)[0] == "npu 6.0\n"


IN_ITS_FOLDER = """import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--data", default="../data/numbers.txt")
args = parser.parse_args()
with open(args.data) as f:
    data = torch.tensor([float(v) for v in f.read().split()]).view(-1, 1)
model = torch.nn.Linear(1, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = torch.utils.data.DataLoader(data, batch_size=2)
for epoch in range(1):
    for x in loader:
        loss = model(x.cuda()).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch} done", flush=True)
"""


def run_launcher(migrated: Path, cwd: Path) -> subprocess.CompletedProcess:
    """The distributed launcher of a migrated tree, two processes on two stand-in cards."""
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    standin = gpu2npu_command() + ["run", "--devices", "2", "--"]
    return run_program(
        [*standin, "sh", str(migrated / "run_distributed_npu.sh"), "2"], cwd=cwd, env=plain_env(PATH=path)
    )


def test_distributed_launcher_starts_a_script_in_the_folder_its_paths_are_relative_to(tmp_path):
    """minimind's trainer/train_pretrain.py reads '../dataset/...' (its README: cd trainer): the
    launcher started it from the root, where the data is not found. It starts it in trainer/ now,
    from wherever it is run."""
    require_torch()
    source = tmp_path / "proj"
    write(source / "trainer" / "train.py", IN_ITS_FOLDER)
    write(source / "data" / "numbers.txt", "1 2 3 4 5 6 7 8\n")
    result = run_cli(
        "migrate", "-i", source, "-o", tmp_path / "out", "distributed", "-m", source / "trainer" / "train.py"
    )
    assert result.returncode == 0, result.stderr
    migrated = tmp_path / "out" / "proj_msft_multi"
    assert (migrated / "run_distributed_npu.sh").read_text().splitlines()[-4:] == [
        "# its paths ('../data/numbers.txt') are relative to its folder: it starts there,",
        "# and relative paths among the arguments are read from there too",
        'cd "$(dirname "$0")"/trainer || exit 1',
        'exec torchrun --standalone --nproc_per_node="$NPUS" train.py "$@"',
    ]
    multi = run_launcher(migrated, cwd=tmp_path)
    assert (multi.returncode, multi.stdout) == (0, "epoch 0 done\n"), multi.stderr


OWN_ATTRIBUTES = """import sys

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(2, 2)
        self.hyperparams = {"lr": 0.1}
        self.seen = 0

    def forward(self, x):
        return self.body(x)

    def describe(self):
        return f"seen {self.seen}"


def main():
    model = Net().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=model.hyperparams["lr"])
    for epoch in range(1):
        x = torch.ones(4, 2).cuda()
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.seen += x.size(0)
    sys.stdout.write(f"{model.describe()} {model.body.out_features}\\n")


if __name__ == "__main__":
    main()
"""


def test_the_model_s_own_attributes_go_through_module_after_the_wrap(tmp_path):
    """PyTorch-YOLOv3 reads model.hyperparams and adds to model.seen after the model is built: on
    the DistributedDataParallel wrapper each raised AttributeError. Every attribute the wrapper does
    not answer as the model did (its own data, a submodule, a method of its class) goes through
    .module; parameters() and the call stay on the wrapper. The program writes its line in one
    write, so that the two processes' lines do not interleave."""
    require_torch()
    write(tmp_path / "proj" / "train.py", OWN_ATTRIBUTES)
    result = run_cli(
        "migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "distributed", "-m", "train.py"
    )
    assert result.returncode == 0, result.stderr
    migrated = tmp_path / "out" / "proj_msft_multi"
    lines = (migrated / "train.py").read_text().splitlines()
    start = lines.index("def main():")
    assert lines[start + 1 : start + 12] == [
        "    model = Net().npu()",
        "    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[LOCAL_RANK])",
        '    opt = torch.optim.SGD(model.parameters(), lr=model.module.hyperparams["lr"])',
        "    for epoch in range(1):",
        "        x = torch.ones(4, 2).npu()",
        "        loss = model(x).sum()",
        "        opt.zero_grad()",
        "        loss.backward()",
        "        opt.step()",
        "        model.module.seen += x.size(0)",
        '    sys.stdout.write(f"{model.module.describe()} {model.module.body.out_features}\\n")',
    ]
    multi = run_launcher(migrated, cwd=migrated)
    assert (multi.returncode, multi.stdout) == (0, "seen 4 2\n" * 2), multi.stderr


READS_LOCAL_RANK_ARGUMENT = """import argparse
import sys

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--steps", type=int, default=1)
opt = parser.parse_args()
if opt.local_rank != -1:
    torch.cuda.set_device(opt.local_rank)
    dist.init_process_group(backend="nccl", init_method="env://")
device = torch.device("cuda", max(opt.local_rank, 0))
model = torch.nn.Linear(2, 2).to(device)
if opt.local_rank != -1:
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[opt.local_rank])
world = dist.get_world_size() if dist.is_initialized() else 1
sys.stdout.write(f"local_rank {opt.local_rank} card {torch.cuda.current_device()} world {world}\\n")
"""


def test_a_script_reading_its_card_from_local_rank_gets_it_from_torchrun(tmp_path):
    """ScaledYOLOv4 and T2T-ViT take their card only from --local_rank, which torch.distributed.launch
    passes and torchrun, the launcher's, does not: every process trained alone (default -1), or
    every rank sat on card 0 (default 0). The option now defaults to torchrun's LOCAL_RANK."""
    require_torch()
    write(tmp_path / "proj" / "train.py", READS_LOCAL_RANK_ARGUMENT)
    result = run_cli(
        "migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "distributed", "-m", "train.py"
    )
    assert result.returncode == 0, result.stderr
    migrated = tmp_path / "out" / "proj_msft_multi"
    assert (
        "parser.add_argument(\"--local_rank\", '--local-rank', type=int, "
        "default=int(os.environ.get('LOCAL_RANK', -1)))\n"
    ) in (migrated / "train.py").read_text()
    multi = run_launcher(migrated, cwd=migrated)
    assert multi.returncode == 0, multi.stderr
    assert sorted(multi.stdout.splitlines()) == ["local_rank 0 card 0 world 2", "local_rank 1 card 1 world 2"]
    single = run_program([sys.executable, "train.py"], cwd=migrated, env=standin_environment(plain_env(), 1))
    assert single.stdout == "local_rank -1 card 0 world 1\n", single.stderr


SAVES_THROUGH_ITS_FUNCTIONS = """import os
import sys

import torch


def save_model(folder, name, model, epoch):
    torch.save({"epoch": epoch, "weights": model.state_dict()}, os.path.join(folder, name))


def load_model(folder, name, model):
    model.load_state_dict(torch.load(os.path.join(folder, name))["weights"])


def main(folder):
    def save_latest(epoch):
        save_model(folder, "latest.pth", model, epoch)

    model = torch.nn.Linear(2, 1).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        model(torch.ones(4, 2).cuda()).sum().backward()
        optimizer.step()
        save_latest(epoch)
    load_model(folder, "latest.pth", model)
    sys.stdout.write(f"rank {os.environ.get('RANK', '-')} loaded\\n")


if __name__ == "__main__":
    main(".")
"""


def test_a_save_guarded_inside_the_scripts_own_function_is_reached_by_every_rank(tmp_path):
    """DeepSDF saves through its own functions: save_latest(epoch) calls save_model, whose
    torch.save the script loads later. Both the call and the save were put on rank 0, with a
    barrier after the save that only rank 0 reached: training hung at the first checkpoint. The
    function that guards inside is called by every rank now, and each reads rank 0's file."""
    require_torch()
    write(tmp_path / "proj" / "train.py", SAVES_THROUGH_ITS_FUNCTIONS)
    result = run_cli(
        "migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "distributed", "-m", "train.py"
    )
    assert result.returncode == 0, result.stderr
    migrated = tmp_path / "out" / "proj_msft_multi"
    text = (migrated / "train.py").read_text()
    # one guard and one barrier, in save_model: not around its calls, which only rank 0 made
    assert (
        text.count("if torch.distributed.get_rank() == 0:"),
        text.count("torch.distributed.barrier()"),
    ) == (1, 1)
    assert "    if torch.distributed.get_rank() == 0:\n        torch.save({" in text
    multi = run_launcher(migrated, cwd=migrated)
    assert multi.returncode == 0, multi.stderr
    assert sorted(multi.stdout.splitlines()) == ["rank 0 loaded", "rank 1 loaded"]


TRACE_HANDLER = """\
import os
import sys
from functools import partial

import torch
from torch.profiler import tensorboard_trace_handler


def trace_handler(prof: torch.profiler.profile, output_dir: str):
    exporter = tensorboard_trace_handler(output_dir, worker_name="r0", use_gzip=True)
    exporter(prof)
    if prof.with_stack:
        prof.export_stacks(output_dir + "/stacks.txt")


output_dir = sys.argv[1]
callback = partial(trace_handler, output_dir=output_dir)
activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
schedule = torch.profiler.schedule(wait=0, warmup=0, active=1, repeat=1)
with torch.profiler.profile(activities=activities, schedule=schedule, on_trace_ready=callback) as prof:
    for _ in range(2):
        torch.ones(8, 8).cuda().sum()
        prof.step()
print([name.endswith(".pt.trace.json") for name in os.listdir(output_dir)])
"""


def test_a_trace_handler_of_the_npu_profiler_loses_use_gzip_and_its_option_reads_are_reported(tmp_path):
    """torchtune's trace_handler: torch_npu's tensorboard_trace_handler has no ``use_gzip`` (the
    TypeError is swallowed and it returns None, so the profiler's callback failed), and its profile
    keeps none of the options it was given (``prof.with_stack`` raises): the keyword goes, and the
    reads, on a parameter annotated ``torch.profiler.profile``, are reported."""
    require_torch()
    write(tmp_path / "src" / "prof.py", TRACE_HANDLER)
    result = run_cli("migrate", "-i", tmp_path / "src", "-o", tmp_path / "out", "--no-cache")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "src_msft"
    migrated = (out / "prof.py").read_text()
    assert '    exporter = tensorboard_trace_handler(output_dir, worker_name="r0")\n' in migrated
    found = [row[:4] + row[5:7] for row in rows(out / "transplant_result_file" / "manual_work.csv")]
    assert [row for row in found if row[5] == "G2N383"] == [
        ["prof.py", "12", "12", "prof.with_stack", "unsupported", "G2N383"]
    ]
    run = run_cli("run", "--", sys.executable, "prof.py", str(tmp_path / "trace"), cwd=out)
    assert (run.returncode, run.stdout) == (0, "[True]\n"), run.stderr


SCALER_FROM_ITS_MODULE = """\
import warnings

import torch
from torch.amp.grad_scaler import GradScaler

model = torch.nn.Linear(16, 1).cuda()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # composer and fairseq2 silence the "Disabling" warning
    scaler = GradScaler(init_scale=2.0**16)
print("scaler enabled:", scaler.is_enabled())
"""


@pytest.mark.parametrize("target", ["npu", "portable"])
def test_a_grad_scaler_imported_from_its_module_gets_the_device(tmp_path, target):
    """composer and fairseq2 import GradScaler from torch.amp.grad_scaler: it got no device, so it
    was CUDA's and turned itself off on the NPU (composer's amp_fp16 then refused to run, fairseq2
    trained fp16 without loss scaling)."""
    require_torch()
    write(tmp_path / "src" / "train.py", SCALER_FROM_ITS_MODULE)
    result = run_cli("migrate", "-i", tmp_path / "src", "-o", tmp_path / "out", "--target", target)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "src_msft"
    device = {"npu": "'npu'", "portable": "DEVICE_TYPE"}[target]
    assert f"    scaler = GradScaler(init_scale=2.0**16, device={device})\n" in (out / "train.py").read_text()
    run = run_cli("run", "--", sys.executable, "train.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "scaler enabled: True\n"), run.stderr


SCALER_SUBCLASSES = """\
import warnings

import torch
from torch.amp.grad_scaler import GradScaler


class _InternalGradScaler(GradScaler):
    def unscale_(self, optimizer):
        return super().unscale_(optimizer)
"""
SCALER_SUBCLASS_USERS = """\
import warnings

import torch
from scalers import _InternalGradScaler
from scalers import GradScaler


class WithOwnInit(GradScaler):
    def __init__(self, scale):
        super().__init__(init_scale=scale)


def late():
    return _Late(growth_interval=100)


class _Late(GradScaler):
    pass


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # composer and fairseq2 silence the "Disabling" warning
    scalers = [_InternalGradScaler(init_scale=2.0**16), late(), WithOwnInit(2.0)]
print("enabled:", [scaler.is_enabled() for scaler in scalers])
"""


@pytest.mark.parametrize("target", ["npu", "portable"])
def test_a_grad_scaler_subclass_that_keeps_its_constructor_gets_the_device(tmp_path, target):
    """fairseq2's _InternalGradScaler and composer's ClosureGradScaler subclass GradScaler and keep
    its __init__: their calls are GradScaler's, in the module that defines them (below the call)
    and in another; a subclass with its own __init__ passes what it chooses and is left alone."""
    require_torch()
    write(tmp_path / "src" / "scalers.py", SCALER_SUBCLASSES)
    write(tmp_path / "src" / "train.py", SCALER_SUBCLASS_USERS)
    result = run_cli("migrate", "-i", tmp_path / "src", "-o", tmp_path / "out", "--target", target)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "src_msft"
    device = {"npu": "'npu'", "portable": "DEVICE_TYPE"}[target]
    text = (out / "train.py").read_text()
    assert f"_InternalGradScaler(init_scale=2.0**16, device={device})" in text
    assert f"    return _Late(growth_interval=100, device={device})\n" in text
    assert "        super().__init__(init_scale=scale)\n" in text
    run = run_cli("run", "--", sys.executable, "train.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "enabled: [True, True, False]\n"), run.stderr
