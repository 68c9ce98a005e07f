"""The two questions every launch asks: the current stream of its device, and the calling
thread's current device.

Until torch has initialised CUDA they are answered by the driver (the legacy default stream of
the device's primary context, ``cuCtxGetDevice``), and each answer checks whether torch has
initialised it since; from then on by torch's C extension (so ``with torch.cuda.stream(s):`` and
CUDA-graph capture, which makes its capture stream current, route launches where torch routes
its own).  Generated launchers read the two functions from :data:`NAMESPACE`, their globals:
switching to torch rewrites two entries once, and no launch pays for asking which applies."""
from __future__ import annotations

import sys

NAMESPACE: dict = {}


def _torch_if_initialised():
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return torch
    return None


def _stream_before_torch(device: int) -> int:
    torch = _torch_if_initialised()
    if torch is not None:
        use_torch(torch)
        return NAMESPACE["stream_of"](device)
    return 0


def _device_before_torch() -> int:
    # asked right after _stream_before_torch, which switches both answers once torch has
    # initialised CUDA
    from cuda.bindings import driver as cu
    err, device = cu.cuCtxGetDevice()
    # no current context: -1, so that the launch pushes its device's context
    return int(device) if err == cu.CUresult.CUDA_SUCCESS else -1


def use_torch(torch) -> None:
    """Answer both questions with torch's calls from now on."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    current = getattr(torch._C, "_cuda_getDevice", None)
    NAMESPACE["stream_of"] = raw if raw is not None else (lambda d: torch.cuda.current_stream(d).cuda_stream)
    NAMESPACE["current_device"] = current if current is not None else torch.cuda.current_device


def reset() -> None:
    """Back to the driver's answers (until torch is found initialised again)."""
    NAMESPACE["stream_of"] = _stream_before_torch
    NAMESPACE["current_device"] = _device_before_torch


def stream_of(device: int) -> int:
    return NAMESPACE["stream_of"](device)


def current_device() -> int:
    return NAMESPACE["current_device"]()


reset()
