# segment-anything's notebook shape: torch imported under an if that may not run, then again
# unconditionally; the bindings follow the unconditional import.
import os
if os.environ.get("VERBOSE"):
    import torch
    print("CUDA is available:", torch.cuda.is_available())
import torch
m = torch.nn.Linear(2, 2)
m.to(device="cuda")
print("moved", next(m.parameters()).device)
