#!/usr/bin/env python3
"""A DETR-style inference loop in PyTorch (the model written here, no torchvision), the Python
counterpart of examples/detr_inference, annotated the ways pytorch_resnet50.py is: NVTX ranges
per module from forward pre/post hooks, PyTorch's `emit_nvtx()`, nsightkit's package
(`nsightkit.instrument(model)`), or nothing. It prints one line of JSON with the step time, so
bench/run_pytorch_benchmarks.sh (MODEL=detr) runs it in the same interleaved rounds.

  pytorch_detr.py [--batch 8] [--steps 30] [--warmup 10] [--image 640] [--device cuda|cpu]
                  [--model base|tiny] [--enc-layers 6] [--dec-layers 6] [--queries 100]
                  [--annotate none|hooks|emit_nvtx|nsightkit] [--torch-profiler] [--deterministic]

The model, as examples/detr_inference builds it: a ResNet-18-shaped `backbone` (`stem`,
`stage1`..`stage4` of two residual blocks, batch norm in eval mode), `input_proj` (1x1
convolution to d_model), `transformer` (post-norm `encoder/layers/N`: `self_attn` with `q_proj`,
`k_proj`, `v_proj`, `sdpa`, `out_proj`, then `norm1`, `ffn`, `norm2`; `decoder/layers/N` with
learned object queries: `self_attn`, `norm1`, `cross_attn`, `norm2`, `ffn`, `norm3`, then `norm`;
sine positional encodings), `class_head` and `box_head` (`fc0`, `fc1`, `fc2`). `base` has DETR's
transformer sizes (d_model 256, 8 heads, FFN 1024), `tiny` (the CPU default) d_model 64.

A step is what an inference server does for a batch, under `torch.inference_mode()`: the
forward, `postprocess` (softmax, best real class, top-k queries, boxes to pixels, on the device)
and `to_host` (the detections copied to the host, which waits for the GPU), each its own range.
Images are synthetic and already on the device. With no step range around it, the report's rows
are the module paths themselves (`backbone/stage1/0/conv1`,
`transformer/encoder/layers/0/self_attn/sdpa`), as in the C++ example.

--deterministic turns cuDNN's autotuning off, so that two runs launch the same kernels (for
judging per-module kernel counts against another tool's run). --annotate hooks and emit_nvtx need
a CUDA build of torch (torch.cuda.nvtx); none and nsightkit run on the CPU too.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_resnet50 import _null, _null_range, add_module_ranges  # noqa: E402  (one copy of the hooks)

SIZES = {  # stem width, stage widths, d_model, heads, FFN width (examples/detr_inference)
    "base": (64, (64, 128, 256, 512), 256, 8, 1024),
    "tiny": (16, (16, 32, 64, 128), 64, 4, 128),
}
CLASSES = 80  # the class head has one more output: "no object"


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class Backbone(nn.Module):
    """The image at 1/32 resolution: stem (7x7/2 convolution, 3x3/2 max pool), stage1..stage4."""

    def __init__(self, stem_width, widths):
        super().__init__()
        self.stem = nn.Sequential()
        self.stem.add_module("conv", nn.Conv2d(3, stem_width, 7, stride=2, padding=3, bias=False))
        self.stem.add_module("bn", nn.BatchNorm2d(stem_width))
        self.stem.add_module("relu", nn.ReLU(inplace=True))
        self.stem.add_module("pool", nn.MaxPool2d(3, stride=2, padding=1))
        cin = stem_width
        for i, width in enumerate(widths):
            stride = 1 if i == 0 else 2
            self.add_module(f"stage{i + 1}", nn.Sequential(BasicBlock(cin, width, stride),
                                                           BasicBlock(width, width, 1)))
            cin = width

    def forward(self, x):
        x = self.stem(x)
        return self.stage4(self.stage3(self.stage2(self.stage1(x))))


class ScaledDotProduct(nn.Module):
    """softmax(q kᵀ / √d) v over [batch, heads, tokens, head dim]; a module of its own so that the
    attention core is a row (`sdpa`, as in the C++ example)."""

    def forward(self, q, k, v):
        if hasattr(F, "scaled_dot_product_attention"):  # torch 2.0 and later
            return F.scaled_dot_product_attention(q, k, v)
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        return torch.matmul(scores.softmax(dim=-1), v)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.sdpa = ScaledDotProduct()
        self.out_proj = nn.Linear(dim, dim)

    def _split(self, x):  # [B, L, D] -> [B, heads, L, D / heads]
        b, n, d = x.shape
        return x.view(b, n, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, query, key, value):
        b, n, d = query.shape
        out = self.sdpa(self._split(self.q_proj(query)), self._split(self.k_proj(key)),
                        self._split(self.v_proj(value)))
        return self.out_proj(out.transpose(1, 2).reshape(b, n, d))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.linear1 = nn.Linear(dim, hidden)
        self.linear2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.linear2(F.relu(self.linear1(x)))


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.self_attn = Attention(dim, heads)
        self.norm1 = nn.LayerNorm(dim)
        self.ffn = FeedForward(dim, hidden)
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x, pos):
        q = x + pos  # positions on queries and keys, not on values
        x = self.norm1(x + self.self_attn(q, q, x))
        return self.norm2(x + self.ffn(x))


class DecoderLayer(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.self_attn = Attention(dim, heads)
        self.norm1 = nn.LayerNorm(dim)
        self.cross_attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.ffn = FeedForward(dim, hidden)
        self.norm3 = nn.LayerNorm(dim)

    def forward(self, tgt, memory, memory_pos, query_pos):
        q = tgt + query_pos
        tgt = self.norm1(tgt + self.self_attn(q, q, tgt))
        tgt = self.norm2(tgt + self.cross_attn(tgt + query_pos, memory_pos, memory))
        return self.norm3(tgt + self.ffn(tgt))


class Encoder(nn.Module):
    def __init__(self, layers, dim, heads, hidden):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(dim, heads, hidden) for _ in range(layers))

    def forward(self, x, pos):
        for layer in self.layers:
            x = layer(x, pos)
        return x


class Decoder(nn.Module):
    def __init__(self, layers, dim, heads, hidden):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(dim, heads, hidden) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)

    def forward(self, memory, pos, query_pos):
        tgt = torch.zeros(memory.shape[0], query_pos.shape[0], memory.shape[2],
                          device=memory.device, dtype=memory.dtype)  # DETR's queries start empty
        memory_pos = memory + pos  # the keys of every cross-attention
        for layer in self.layers:
            tgt = layer(tgt, memory, memory_pos, query_pos)
        return self.norm(tgt)


class Transformer(nn.Module):
    def __init__(self, enc_layers, dec_layers, dim, heads, hidden):
        super().__init__()
        self.encoder = Encoder(enc_layers, dim, heads, hidden)
        self.decoder = Decoder(dec_layers, dim, heads, hidden)

    def forward(self, src, pos, query_pos):
        return self.decoder(self.encoder(src, pos), pos, query_pos)


class BoxHead(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc0 = nn.Linear(dim, dim)
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(F.relu(self.fc0(x))))).sigmoid()  # cx, cy, w, h in [0, 1]


def sine_positions(h, w, dim, device):
    """DETR's normalized sine encoding of an h x w map (scale 2π): [h * w, dim], the first dim/2
    channels encode y, the rest x (sine on even channels, cosine on odd ones)."""
    half = dim // 2
    eps, scale = 1e-6, 2 * math.pi
    y = (torch.arange(1, h + 1, dtype=torch.float64) / (h + eps) * scale).view(h, 1, 1).expand(h, w, 1)
    x = (torch.arange(1, w + 1, dtype=torch.float64) / (w + eps) * scale).view(1, w, 1).expand(h, w, 1)
    i = torch.arange(half, dtype=torch.float64)
    freq = torch.pow(10000.0, 2 * torch.div(i, 2, rounding_mode="floor") / half)
    even = (i % 2 == 0)

    def encode(t):
        a = t / freq
        return torch.where(even, a.sin(), a.cos())

    return torch.cat([encode(y), encode(x)], dim=-1).reshape(h * w, dim).to(device, torch.float32)


class Detr(nn.Module):
    def __init__(self, size="base", enc_layers=6, dec_layers=6, queries=100):
        super().__init__()
        stem, widths, dim, heads, hidden = SIZES[size]
        self.backbone = Backbone(stem, widths)
        self.input_proj = nn.Conv2d(widths[-1], dim, 1)
        self.transformer = Transformer(enc_layers, dec_layers, dim, heads, hidden)
        self.query_pos = nn.Parameter(torch.rand(queries, dim) * 2 - 1)  # learned object queries
        self.class_head = nn.Linear(dim, CLASSES + 1)
        self.box_head = BoxHead(dim)
        self._positions = {}  # (h, w, device) -> table: computed once per feature-map size

    def forward(self, images):
        features = self.input_proj(self.backbone(images))  # [B, D, H/32, W/32]
        b, d, h, w = features.shape
        key = (h, w, features.device)
        if key not in self._positions:
            self._positions[key] = sine_positions(h, w, d, features.device)
        src = features.flatten(2).transpose(1, 2)  # tokens [B, h * w, D]
        hs = self.transformer(src, self._positions[key], self.query_pos)
        return self.class_head(hs), self.box_head(hs)


def postprocess(logits, boxes, size, topk):
    """The top-k queries of each image by their best real class: scores, labels and boxes
    (x0, y0, x1, y1 in pixels), still on the device."""
    scores, labels = logits.softmax(-1)[..., :-1].max(-1)
    scores, keep = scores.topk(topk, dim=1)
    labels = labels.gather(1, keep)
    cx, cy, w, h = boxes.gather(1, keep.unsqueeze(-1).expand(-1, -1, 4)).unbind(-1)
    xyxy = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=-1)
    return scores, labels, (xyxy * size).clamp(0, size)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--image", type=int, help="square input size, a multiple of 32 "
                    "(default 640 on cuda, 128 on cpu)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model", choices=sorted(SIZES), help="default base on cuda, tiny on cpu")
    ap.add_argument("--enc-layers", type=int, default=6)
    ap.add_argument("--dec-layers", type=int, default=6)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--topk", type=int, default=10)
    ap.add_argument("--annotate", choices=["none", "hooks", "emit_nvtx", "nsightkit"], default="hooks")
    ap.add_argument("--torch-profiler", action="store_true")
    ap.add_argument("--deterministic", action="store_true")
    a = ap.parse_args()
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    image = a.image or (640 if cuda else 128)
    size = a.model or ("base" if cuda else "tiny")
    if image % 32 or image < 32:
        ap.error(f"--image: {image} is not a positive multiple of 32 (the backbone's total stride)")
    if not 1 <= a.topk <= a.queries:
        ap.error(f"--topk: {a.topk} is not between 1 and --queries ({a.queries})")
    if a.annotate in ("hooks", "emit_nvtx") and not cuda:
        ap.error(f"--annotate {a.annotate} needs CUDA (torch.cuda.nvtx); on the CPU use none or nsightkit")

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = not a.deterministic
    model = Detr(size, a.enc_layers, a.dec_layers, a.queries).to(dev).eval()
    images = torch.rand(a.batch, 3, image, image, device=dev)
    named = _null_range
    if a.annotate == "hooks":
        add_module_ranges(model)
        named = torch.cuda.nvtx.range
    elif a.annotate == "nsightkit":
        import nsightkit

        nsightkit.instrument(model)
        named = nsightkit.range

    def step():
        logits, boxes = model(images)
        with named("postprocess"):
            scores, labels, xyxy = postprocess(logits, boxes, image, a.topk)
        with named("to_host"):
            return scores.cpu(), labels.cpu(), xyxy.cpu()

    def sync():
        if cuda:
            torch.cuda.synchronize()

    emit = torch.autograd.profiler.emit_nvtx() if a.annotate == "emit_nvtx" else _null()
    with torch.inference_mode(), emit:
        for _ in range(a.warmup):
            step()
        sync()
        prof = None
        if a.torch_profiler:
            activities = [torch.profiler.ProfilerActivity.CPU]
            if cuda:
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            prof = torch.profiler.profile(activities=activities, record_shapes=False,
                                          with_stack=False, profile_memory=False)
            prof.__enter__()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            scores, _labels, _boxes = step()
        sync()
        elapsed = time.perf_counter() - t0
        if prof is not None:
            prof.__exit__(None, None, None)
    print(json.dumps({"model": "detr", "size": size, "image": image, "batch": a.batch,
                      "annotate": a.annotate, "torch_profiler": a.torch_profiler, "steps": a.steps,
                      "step_ms": 1e3 * elapsed / a.steps, "score": float(scores.sum())}), flush=True)


if __name__ == "__main__":
    main()
