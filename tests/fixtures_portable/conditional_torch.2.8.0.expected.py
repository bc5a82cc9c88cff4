# segment-anything's notebook shape: torch imported under an if that may not run, then again
# unconditionally; the bindings follow the unconditional import.
import os
if os.environ.get("VERBOSE"):
    import torch
    print("CUDA is available:", torch.accelerator.is_available())
import torch
ACCELERATOR = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else None
DEVICE_TYPE = ACCELERATOR or 'cpu'
m = torch.nn.Linear(2, 2)
m.to(device=DEVICE_TYPE)
print("moved", next(m.parameters()).device)
