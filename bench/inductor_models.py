"""The models ``bench/inductor_kernels.py`` compiles with ``torch.compile``: each factory takes a
device and returns ``(module or function, inputs, backward, compile options)``; ``backward``
says whether the check also runs ``loss.backward()`` (Inductor then generates the backward
kernels too).  Sizes are small: the point is the variety of generated kernels, not speed."""
from __future__ import annotations

import math


def _torch():
    import torch
    return torch


def mlp(dev):
    torch = _torch()
    m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256), torch.nn.ReLU())
    return m.to(dev), (torch.randn(64, 256, device=dev, requires_grad=True),), True, {}


def layer_norm(dev):
    torch = _torch()
    return torch.nn.LayerNorm(1024).to(dev), (torch.randn(128, 1024, device=dev, requires_grad=True),), True, {}


def masked_softmax(dev):
    torch = _torch()

    def f(x, mask):
        return torch.softmax(x.masked_fill(mask, float("-inf")), dim=-1) * 2.0
    x = torch.randn(64, 500, device=dev)
    mask = torch.rand(64, 500, device=dev) < 0.2
    return f, (x, mask), False, {}


def transformer_encoder(dev):
    torch = _torch()
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, dropout=0.0,
                                             batch_first=True).to(dev).eval()
    return layer, (torch.randn(4, 32, 128, device=dev),), False, {}


def reductions(dev):
    torch = _torch()

    def f(x, y):
        v, m = torch.var_mean(x, dim=1)
        return (x.sum(0), x.amax(1), x.argmax(1), v, m, y.prod(-1), x.abs().min(), (x > 0).sum(1),
                torch.logsumexp(x, 1), y.to(torch.int32).sum(0))
    return f, (torch.randn(256, 333, device=dev), torch.rand(64, 7, 9, device=dev) + 0.5), False, {}


class RMSNormSwiGLU:
    @staticmethod
    def make(dev):
        torch = _torch()

        class M(torch.nn.Module):
            def __init__(self, d=256, h=512):
                super().__init__()
                self.w = torch.nn.Parameter(torch.ones(d))
                self.w1 = torch.nn.Linear(d, h, bias=False)
                self.w3 = torch.nn.Linear(d, h, bias=False)
                self.w2 = torch.nn.Linear(h, d, bias=False)

            def forward(self, x):
                x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
                return self.w2(torch.nn.functional.silu(self.w1(x)) * self.w3(x))
        return M().to(dev)


def rmsnorm_swiglu(dev):
    torch = _torch()
    return RMSNormSwiGLU.make(dev), (torch.randn(64, 256, device=dev, requires_grad=True),), True, {}


def cross_entropy(dev):
    torch = _torch()

    def f(logits, target):
        return torch.nn.functional.cross_entropy(logits, target, label_smoothing=0.1)
    logits = torch.randn(128, 1000, device=dev, requires_grad=True)
    return f, (logits, torch.randint(0, 1000, (128,), device=dev)), True, {}


def sort_topk(dev):
    torch = _torch()

    def f(x):
        s, i = torch.sort(x, dim=-1, stable=True)
        t, j = torch.topk(x, 8, dim=-1)
        return s, i, t, j, torch.cumsum(x, -1), torch.cumprod(x[:, :16] * 0.5 + 1, -1)
    return f, (torch.randn(32, 128, device=dev),), False, {}


def matmul_templates(dev):
    torch = _torch()

    def f(a, b, bias):
        return torch.relu(torch.addmm(bias, a, b)), (a @ b).sum(-1)
    a = torch.randn(256, 128, device=dev, dtype=torch.float16)
    b = torch.randn(128, 256, device=dev, dtype=torch.float16)
    bias = torch.randn(256, device=dev, dtype=torch.float16)
    options = {"max_autotune": True, "max_autotune_gemm_backends": "TRITON", "autotune_in_subproc": False}
    return f, (a, b, bias), False, options


def attention(dev):
    torch = _torch()

    def f(q, k, v, mask):
        s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        s = s.masked_fill(mask, float("-inf"))
        return torch.softmax(s, -1) @ v
    q, k, v = (torch.randn(2, 4, 64, 32, device=dev, requires_grad=True) for _ in range(3))
    mask = torch.triu(torch.ones(64, 64, device=dev, dtype=torch.bool), 1)
    return f, (q, k, v, mask), True, {}


def embedding_bag(dev):
    torch = _torch()

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = torch.nn.EmbeddingBag(1000, 64, mode="mean")

        def forward(self, i, o):
            return self.bag(i, o) * 2 + torch.nn.functional.embedding(i[:32], self.bag.weight).sum(0)
    idx = torch.randint(0, 1000, (200,), device=dev)
    return M().to(dev), (idx, torch.arange(0, 200, 10, device=dev)), True, {}


def group_norm(dev):
    torch = _torch()
    return torch.nn.GroupNorm(8, 64).to(dev), (torch.randn(4, 64, 16, 16, device=dev, requires_grad=True),), True, {}


def conv_epilogue(dev):
    torch = _torch()
    m = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.SiLU(),
                            torch.nn.AdaptiveAvgPool2d(1)).to(dev).eval()
    return m, (torch.randn(8, 16, 32, 32, device=dev),), False, {}


def pointwise_mix(dev):
    torch = _torch()

    def f(x, n, h):
        y = torch.where(x > 0, torch.erf(x), torch.clamp(x, -0.5) ** 2)
        return (y.to(torch.bfloat16) * 3, (n << 2) ^ (n >> 1), n % 7, torch.floor_divide(n, 3), h.float().exp(),
                torch.sigmoid(x) * torch.tanh(x), torch.isnan(x / (x - x.round())))
    x = torch.randn(4096, device=dev)
    n = torch.randint(-1000, 1000, (4096,), device=dev, dtype=torch.int32)
    return f, (x, n, torch.randn(4096, device=dev, dtype=torch.float16)), False, {}


def dropout_train(dev):
    torch = _torch()
    m = torch.nn.Sequential(torch.nn.Dropout(0.3), torch.nn.Softplus()).to(dev).train()
    return m, (torch.randn(1024, 64, device=dev, requires_grad=True),), True, {}


MODELS = {f.__name__: f for f in (mlp, layer_norm, masked_softmax, transformer_encoder, reductions, rmsnorm_swiglu,
                                   cross_entropy, sort_topk, matmul_templates, attention, embedding_bag, group_norm,
                                   conv_epilogue, pointwise_mix, dropout_train)}
