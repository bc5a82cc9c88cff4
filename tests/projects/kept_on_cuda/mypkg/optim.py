import torch
import amp_C

multi_tensor_l2norm = amp_C.multi_tensor_l2norm


def grad_norm(grads):
    if torch.cuda.is_available():
        return multi_tensor_l2norm(grads)
    return torch.norm(torch.stack([g.norm() for g in grads]))


def profile(step):
    with torch.cuda.profiler.profile():
        step()
    if torch.cuda.get_device_capability(0)[0] >= 8:
        torch.backends.cuda.matmul.allow_tf32 = True
