# audiocraft's solvers: the sync debug mode behind the device's own test
import torch
try:  # registers the NPU where torch_npu is installed (torch before 2.5 does not load it itself)
    import torch_npu  # noqa: F401
except ImportError:
    pass
ACCELERATOR = next((t for t in ('cuda', 'npu') if getattr(torch, t, None) and getattr(torch, t).is_available()), None)
DEVICE_MODULE = getattr(torch, ACCELERATOR or 'cuda')


def run_step(device, check_synchronization_points):
    if device == ACCELERATOR and check_synchronization_points:
        DEVICE_MODULE.set_sync_debug_mode("warn")
    mode = DEVICE_MODULE.get_sync_debug_mode()
    return mode
