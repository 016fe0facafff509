#!/usr/bin/env python3
"""A ResNet-50 training loop in PyTorch (the model written here, no torchvision), annotated the way
PyTorch users annotate: NVTX ranges per module from forward pre/post hooks, or PyTorch's own
`emit_nvtx()`, or nsightkit's package (`nsightkit.instrument(model)`: forward and backward ranges
per module), or no annotation at all. Run bare, under `nsightkit profile`, or with
torch.profiler around the timed steps, it prints one line of JSON with the step time, so
bench/run_pytorch_benchmarks.sh can compare the modes in interleaved rounds.

  pytorch_resnet50.py [--batch 64] [--steps 30] [--warmup 10] [--image 224]
                      [--annotate none|hooks|emit_nvtx|nsightkit|nsightkit_forward]
                      [--torch-profiler] [--deterministic] [--python-profile FILE]

--deterministic turns cuDNN's autotuning off, so that two runs launch the same kernels (for
judging per-module kernel counts against another tool's run). nsightkit_forward is
instrument(model, backward=False): what the backward ranges cost is the difference.
--python-profile writes cProfile's table of the timed steps (what the host spends its time on,
by function) to FILE.

Data is synthetic and already on the GPU: the step is the model's forward, backward and optimizer
step, nothing else.
"""
import argparse
import json
import time

import torch
from torch import nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        cin = 64
        layers = []
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            seq = []
            for b in range(blocks):
                seq.append(Bottleneck(cin, width, stride if b == 0 else 1))
                cin = width * Bottleneck.expansion
            layers.append(nn.Sequential(*seq))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def add_module_ranges(model):
    """An NVTX range per module call, named by the module's qualified name ('layer1/0/conv1'),
    pushed and popped by forward pre/post hooks (what PyTorch users write for Nsight Systems)."""
    handles = []
    for name, module in model.named_modules():
        label = name.replace(".", "/") or "model"

        def pre(_m, _inputs, label=label):
            torch.cuda.nvtx.range_push(label)

        def post(_m, _inputs, _output):
            torch.cuda.nvtx.range_pop()

        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))
    return handles


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--annotate", choices=["none", "hooks", "emit_nvtx", "nsightkit", "nsightkit_forward"],
                    default="hooks")
    ap.add_argument("--torch-profiler", action="store_true")
    ap.add_argument("--deterministic", action="store_true")
    ap.add_argument("--python-profile", metavar="FILE")
    ap.add_argument("--node-prehooks", action="store_true",
                    help="before each backward, a no-op pre-hook on every autograd node of the step: "
                         "what torch's hook API alone costs per node, the least any per-module "
                         "backward range built on it can cost")
    a = ap.parse_args()

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = not a.deterministic
    dev = torch.device("cuda")
    model = ResNet50().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(a.batch, 3, a.image, a.image, device=dev)
    y = torch.randint(0, 1000, (a.batch,), device=dev)
    named = _null_range
    if a.annotate == "hooks":
        add_module_ranges(model)
        named = torch.cuda.nvtx.range
    elif a.annotate in ("nsightkit", "nsightkit_forward"):
        import nsightkit

        nsightkit.instrument(model, name="model", backward=a.annotate == "nsightkit")
        named = nsightkit.range

    def step():
        with named("train_step"):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            if a.node_prehooks:
                _hook_every_node(loss.grad_fn)
            with named("backward"):
                loss.backward()
            with named("optimizer"):
                opt.step()
        return loss

    emit = torch.autograd.profiler.emit_nvtx() if a.annotate == "emit_nvtx" else _null()
    with emit:
        for _ in range(a.warmup):
            step()
        torch.cuda.synchronize()
        prof = None
        if a.torch_profiler:
            prof = torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU,
                            torch.profiler.ProfilerActivity.CUDA],
                record_shapes=False, with_stack=False, profile_memory=False)
            prof.__enter__()
        cprofile = None
        if a.python_profile:
            import cProfile

            cprofile = cProfile.Profile()
            cprofile.enable()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
        if cprofile is not None:
            import pstats

            cprofile.disable()
            with open(a.python_profile, "w") as f:
                pstats.Stats(cprofile, stream=f).sort_stats("tottime").print_stats(40)
        if prof is not None:
            prof.__exit__(None, None, None)
    print(json.dumps({"batch": a.batch, "annotate": a.annotate,
                      "torch_profiler": a.torch_profiler, "steps": a.steps,
                      "step_ms": 1e3 * elapsed / a.steps, "loss": float(loss)}), flush=True)


def _noop_prehook(_grad_outputs):
    return None


def _hook_every_node(root):
    # Every node once (AccumulateGrad nodes outlive the step: hooked each step, hooks would pile up).
    seen, todo = set(), [root]
    while todo:
        node = todo.pop()
        if node is None or node in seen or type(node).__name__ == "AccumulateGrad":
            continue
        seen.add(node)
        node.register_prehook(_noop_prehook)
        for edge in node.next_functions:
            todo.append(edge[0])


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _null_range(_name):
    return _null()


if __name__ == "__main__":
    main()
