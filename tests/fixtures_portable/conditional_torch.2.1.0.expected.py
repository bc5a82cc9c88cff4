# segment-anything's notebook shape: torch imported under an if that may not run, then again
# unconditionally; the bindings follow the unconditional import.
import os
import torch
try:  # registers the NPU where torch_npu is installed (torch before 2.5 does not load it itself)
    import torch_npu  # noqa: F401
except ImportError:
    pass
ACCELERATOR = next((t for t in ('cuda', 'npu') if getattr(torch, t, None) and getattr(torch, t).is_available()), None)
DEVICE_TYPE = ACCELERATOR or 'cpu'
DEVICE_MODULE = getattr(torch, ACCELERATOR or 'cuda')
if os.environ.get("VERBOSE"):
    import torch
    print("CUDA is available:", DEVICE_MODULE.is_available())
import torch
m = torch.nn.Linear(2, 2)
m.to(device=DEVICE_TYPE)
print("moved", next(m.parameters()).device)
