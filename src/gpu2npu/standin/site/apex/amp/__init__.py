"""``apex.amp`` of the stand-in: mixed precision as the Ascend porting guide uses it
(``model, optimizer = amp.initialize(model, optimizer, combine_grad=True)``, then
``with amp.scale_loss(loss, optimizer) as scaled_loss: scaled_loss.backward()``).

On the CPU nothing is cast (as the stand-in's NPU autocast lowers no precision): ``initialize``
returns the models and optimizers it is given. ``scale_loss`` multiplies the loss by the loss
scale and divides the gradients by it afterwards; the scale is a power of two (``loss_scale``, or
2**16 for "dynamic"), so the gradients, and the losses of training, are those of an unscaled run
to the last bit. ``combine_grad`` (Ascend's: the gradients unscaled in one combined buffer) changes
nothing here but is accepted, as the Ascend build accepts it."""

from __future__ import annotations

import contextlib
import math

_OPT_LEVELS = ("O0", "O1", "O2", "O3")
_DYNAMIC_SCALE = 2.0**16
_state = {"scale": None}


def initialize(
    models,
    optimizers=None,
    enabled=True,
    opt_level="O1",
    cast_model_type=None,
    patch_torch_functions=None,
    keep_batchnorm_fp32=None,
    master_weights=None,
    loss_scale=None,
    cast_model_outputs=None,
    num_losses=1,
    verbosity=1,
    min_loss_scale=None,
    max_loss_scale=2.0**24,
    combine_grad=None,
):
    if opt_level not in _OPT_LEVELS:
        raise RuntimeError(f"Unexpected optimization level {opt_level}. Options are 'O0', 'O1', 'O2', 'O3'.")
    scale = _DYNAMIC_SCALE if loss_scale in (None, "dynamic") else float(loss_scale)
    if scale <= 0 or not math.log2(scale).is_integer():
        raise ValueError("the stand-in's loss_scale must be a power of two (exact unscaling)")
    _state["scale"] = scale if enabled and opt_level != "O0" else 1.0
    return models if optimizers is None else (models, optimizers)


@contextlib.contextmanager
def scale_loss(loss, optimizers, loss_id=0, model=None, delay_unscale=False, delay_overflow_check=False):
    if _state["scale"] is None:
        raise RuntimeError("amp.scale_loss before amp.initialize")
    scale = _state["scale"]
    yield loss * scale
    if delay_unscale or scale == 1.0:
        return
    for optimizer in optimizers if isinstance(optimizers, (list, tuple)) else [optimizers]:
        for group in optimizer.param_groups:
            for parameter in group["params"]:
                if parameter.grad is not None:
                    parameter.grad.div_(scale)


def state_dict():
    return {"loss_scaler0": {"loss_scale": _state["scale"], "unskipped": 0}}


def load_state_dict(state):
    _state["scale"] = state["loss_scaler0"]["loss_scale"]


__all__ = ["initialize", "scale_loss", "state_dict", "load_state_dict"]
