#!/usr/bin/python3
"""Generates gcsim layer specs (workloads/models/*.json) from the real
PyTorch / torchvision architectures.

For every module that owns parameters it records the parameter count and the
forward FLOPs per sample, counted from the shapes seen by a forward hook on a
real forward pass (a multiply-add counts as 2 FLOPs). Backward FLOPs are
twice the forward FLOPs for layers with weights (gradient with respect to
the input and to the weights), which is the usual accounting.

Run with Debian's interpreter:  /usr/bin/python3 scripts/generate_workloads.py
"""
import argparse
import json
import os
import sys

import torch
import torch.nn as nn
import torchvision


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class CifarResNet18(nn.Module):
    """The CIFAR-10 ResNet-18 of the DEFT and Top-k papers (11,173,962
    parameters): 3x3 stem, no max-pool, 10 classes."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, in_planes = [], 64
        for planes, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            blocks = [BasicBlock(in_planes, planes, stride), BasicBlock(planes, planes, 1)]
            in_planes = planes
            layers.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.linear = nn.Linear(512, num_classes)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        out = torch.flatten(nn.functional.adaptive_avg_pool2d(out, 1), 1)
        return self.linear(out)


class WordLSTM(nn.Module):
    """2-layer LSTM language model for WikiText-2 with tied embedding and
    decoder weights (650 units, 34,069-word vocabulary: 28,949,319
    parameters, the figure of the DEFT paper)."""

    def __init__(self, vocab=34069, units=650, layers=2):
        super().__init__()
        self.encoder = nn.Embedding(vocab, units)
        self.rnn = nn.LSTM(units, units, layers)
        self.decoder = nn.Linear(units, vocab)
        self.decoder.weight = self.encoder.weight

    def forward(self, tokens):
        output, _ = self.rnn(self.encoder(tokens))
        return self.decoder(output)


def models():
    return {
        "resnet18-cifar10": (CifarResNet18, (1, 3, 32, 32), "CIFAR-10 (32x32 RGB)", "image"),
        "resnet50-imagenet": (lambda: torchvision.models.resnet50(), (1, 3, 224, 224),
                              "ImageNet (224x224 RGB)", "image"),
        "alexnet-imagenet": (lambda: torchvision.models.alexnet(), (1, 3, 224, 224),
                             "ImageNet (224x224 RGB)", "image"),
        "vgg16-imagenet": (lambda: torchvision.models.vgg16(), (1, 3, 224, 224),
                           "ImageNet (224x224 RGB)", "image"),
        "lstm-wikitext2": (WordLSTM, (35, 1), "WikiText-2 (sequences of 35 tokens)", "sequence"),
    }


def layer_kind(module):
    if isinstance(module, nn.Conv2d):
        return "conv"
    if isinstance(module, nn.Linear):
        return "linear"
    if isinstance(module, (nn.BatchNorm2d, nn.LayerNorm)):
        return "norm"
    if isinstance(module, nn.Embedding):
        return "embedding"
    if isinstance(module, nn.LSTM):
        return "lstm"
    return "other"


def forward_flops(module, inputs, output):
    if isinstance(module, nn.Conv2d):
        out = output
        per_output = module.in_channels // module.groups * module.kernel_size[0] * module.kernel_size[1]
        return 2 * out.numel() * per_output
    if isinstance(module, nn.Linear):
        return 2 * output.numel() * module.in_features
    if isinstance(module, (nn.BatchNorm2d, nn.LayerNorm)):
        return 4 * output.numel()
    if isinstance(module, nn.Embedding):
        return output.numel()  # a gather: one read per output element
    if isinstance(module, nn.LSTM):
        steps = inputs[0].shape[0] * inputs[0].shape[1]
        flops, size_in = 0, module.input_size
        for _ in range(module.num_layers):
            # four gates: input and recurrent matrix-vector products, plus
            # the element-wise gate arithmetic (about 10 FLOPs per unit).
            flops += steps * (2 * 4 * module.hidden_size * (size_in + module.hidden_size)
                              + 10 * module.hidden_size)
            size_in = module.hidden_size
        return flops
    return 0


def describe(name, build, shape, dataset, sample_unit):
    torch.manual_seed(0)
    model = build().eval()
    records, seen = [], set()

    def hook(module, inputs, output):
        if isinstance(output, tuple):
            output = output[0]
        records.append((module, forward_flops(module, inputs, output)))

    handles = []
    for module in model.modules():
        if any(True for _ in module.parameters(recurse=False)):
            handles.append(module.register_forward_hook(hook))
    with torch.no_grad():
        if sample_unit == "sequence":
            model(torch.zeros(shape, dtype=torch.long))
        else:
            model(torch.zeros(shape))
    for handle in handles:
        handle.remove()

    names = {module: module_name for module_name, module in model.named_modules()}
    layers = []
    for module, flops in records:
        if module in seen:
            continue
        seen.add(module)
        # Tied parameters are counted once, at their first owner.
        params = 0
        for parameter in module.parameters(recurse=False):
            if id(parameter) in seen:
                continue
            seen.add(id(parameter))
            params += parameter.numel()
        kind = layer_kind(module)
        backward = 2 * flops if kind in ("conv", "linear", "lstm") else flops
        layers.append({"name": names[module], "kind": kind, "parameters": params,
                       "forward_flops": flops, "backward_flops": backward})
    total = sum(p.numel() for p in model.parameters())
    assert total == sum(layer["parameters"] for layer in layers), name
    return {
        "name": name,
        "description": f"{type(model).__name__} layer spec generated from the PyTorch architecture",
        "dataset": dataset,
        "sample_unit": sample_unit,
        "input_shape": list(shape),
        "parameters": total,
        "flops_per_sample": {"forward": sum(l["forward_flops"] for l in layers),
                             "backward": sum(l["backward_flops"] for l in layers)},
        "generated_by": "/usr/bin/python3 scripts/generate_workloads.py",
        "torch_version": torch.__version__.split("+")[0],
        "layers": layers,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "workloads", "models"))
    parser.add_argument("--only", nargs="*", help="model names to generate (default: all)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, (build, shape, dataset, unit) in models().items():
        if args.only and name not in args.only:
            continue
        spec = describe(name, build, shape, dataset, unit)
        path = os.path.join(args.out, name + ".json")
        with open(path, "w") as handle:
            json.dump(spec, handle, indent=1)
            handle.write("\n")
        print(f"{path}: {spec['parameters']:,} parameters, {len(spec['layers'])} layers, "
              f"{spec['flops_per_sample']['forward'] / 1e9:.3f} GFLOP forward per sample", file=sys.stderr)


if __name__ == "__main__":
    main()
