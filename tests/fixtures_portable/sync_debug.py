# audiocraft's solvers: the sync debug mode behind the device's own test
import torch


def run_step(device, check_synchronization_points):
    if device == "cuda" and check_synchronization_points:
        torch.cuda.set_sync_debug_mode("warn")
    mode = torch.cuda.get_sync_debug_mode()
    return mode
