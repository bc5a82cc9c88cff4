# audiocraft's solvers: the sync debug mode behind the device's own test
import torch
ACCELERATOR = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else None
DEVICE_MODULE = torch.get_device_module(ACCELERATOR or 'cuda')


def run_step(device, check_synchronization_points):
    if device == ACCELERATOR and check_synchronization_points:
        DEVICE_MODULE.set_sync_debug_mode("warn")
    mode = DEVICE_MODULE.get_sync_debug_mode()
    return mode
