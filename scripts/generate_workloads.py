#!/usr/bin/python3
"""Generates gcsim layer specs (workloads/models/*.json) from the real
PyTorch / torchvision architectures.

For every module that owns parameters it records the parameter count, the
shapes of its parameter tensors (in the order the module holds them) and the
forward FLOPs per sample, counted from the shapes seen by a forward hook on a
real forward pass (a multiply-add counts as 2 FLOPs). Backward FLOPs are
twice the forward FLOPs for layers with weights (gradient with respect to
the input and to the weights), which is the usual accounting.

Run with Debian's interpreter:  /usr/bin/python3 scripts/generate_workloads.py
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

# The CIFAR-10 ResNet-18 of the DEFT and Top-k papers (11,173,962 parameters)
# is the one the trace capture trains too: one definition for both.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_tools.models import CifarResNet18, SmallCNN, owns_parameters  # noqa: E402
from trace_tools.timing import Layout, layer_order, may_split, modules_run  # noqa: E402
from atomic_write import WriteError, write_json_atomically  # noqa: E402
from script_input import Parser, run_script  # noqa: E402


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


class SelfAttention(nn.Module):
    """Softmax(Q K^T / sqrt(d)) V over the heads: no parameters of its own, so
    not a layer of the spec (its time goes with the projection before it)."""

    def __init__(self, heads, dropout):
        super().__init__()
        self.heads, self.dropout = heads, dropout

    def forward(self, q, k, v):
        batch, tokens, width = q.shape
        q, k, v = (t.view(batch, tokens, self.heads, width // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        dropout = self.dropout if self.training else 0.0
        if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0: one fused kernel
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout)
        else:
            weights = torch.softmax(q @ k.transpose(-2, -1) / (width // self.heads) ** 0.5, -1)
            out = F.dropout(weights, dropout, self.training) @ v
        return out.transpose(1, 2).reshape(batch, tokens, width)


class EncoderLayer(nn.Module):
    def __init__(self, width, heads, hidden, dropout):
        super().__init__()
        self.query, self.key, self.value = (nn.Linear(width, width) for _ in range(3))
        self.attention = SelfAttention(heads, dropout)
        self.output = nn.Linear(width, width)
        self.attention_dropout = nn.Dropout(dropout)
        self.attention_norm = nn.LayerNorm(width, eps=1e-12)
        self.intermediate = nn.Linear(width, hidden)
        self.activation = nn.GELU()
        self.feed_forward_output = nn.Linear(hidden, width)
        self.output_dropout = nn.Dropout(dropout)
        self.output_norm = nn.LayerNorm(width, eps=1e-12)

    def forward(self, x):
        attended = self.attention(self.query(x), self.key(x), self.value(x))
        x = self.attention_norm(x + self.attention_dropout(self.output(attended)))
        hidden = self.activation(self.intermediate(x))
        return self.output_norm(x + self.output_dropout(self.feed_forward_output(hidden)))


class BertClassifier(nn.Module):
    """BERT-base (12 layers, 768 wide, 12 heads, 30,522-word vocabulary) with
    its pooler and a two-class head, as fine-tuned on a GLUE sentence task:
    109,483,778 parameters. Batch first: (batch, tokens) of token ids."""

    def __init__(self, vocab=30522, width=768, layers=12, heads=12, hidden=3072, positions=512,
                 classes=2, dropout=0.1):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, width)
        self.position_embeddings = nn.Embedding(positions, width)
        self.token_type_embeddings = nn.Embedding(2, width)
        self.embedding_norm = nn.LayerNorm(width, eps=1e-12)
        self.embedding_dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(EncoderLayer(width, heads, hidden, dropout)
                                    for _ in range(layers))
        self.pooler = nn.Linear(width, width)
        self.pooler_activation = nn.Tanh()
        self.classifier_dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(width, classes)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device).expand_as(tokens)
        x = (self.word_embeddings(tokens) + self.position_embeddings(positions)
             + self.token_type_embeddings(torch.zeros_like(tokens)))
        x = self.embedding_dropout(self.embedding_norm(x))
        for layer in self.layers:
            x = layer(x)
        pooled = self.pooler_activation(self.pooler(x[:, 0]))
        return self.classifier(self.classifier_dropout(pooled))


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
        # Batch first, unlike the LSTM's (tokens, batch).
        "bert-base-seq128": (BertClassifier, (1, 128),
                             "GLUE-style sentence classification (sequences of 128 tokens)",
                             "sequence"),
        # The CNN of the shipped trace workloads/traces/fmnist-cnn-16w, for its
        # FLOPs (a scenario's compute_spec).
        "fmnist-cnn": (SmallCNN, (1, 1, 28, 28), "Fashion-MNIST (28x28 gray)", "image"),
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
        if owns_parameters(module):
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
    firsts = []  # each layer's first parameter, by its name in the model
    for module, flops in records:
        if module in seen:
            continue
        seen.add(module)
        # Tied parameters are counted once, at their first owner.
        params, tensors = 0, []
        for parameter_name, parameter in module.named_parameters(recurse=False):
            if id(parameter) in seen:
                continue
            seen.add(id(parameter))
            params += parameter.numel()
            tensors.append({"name": parameter_name, "shape": list(parameter.shape)})
        kind = layer_kind(module)
        # Every recorded module owns weights: the gradient with respect to its
        # input and the one with respect to its weights, each about a forward's.
        backward = 2 * flops
        # The model's own parameters (a class token) are named after its
        # class, as a trace names them (trace_tools.timing.Layout).
        layers.append({"name": names[module] or type(module).__name__, "kind": kind,
                       "parameters": params, "forward_flops": flops,
                       "backward_flops": backward, "tensors": tensors})
        own = next(parameter_name for parameter_name, _ in module.named_parameters(recurse=False))
        firsts.append(f"{names[module]}.{own}" if names[module] else own)
    total = sum(p.numel() for p in model.parameters())
    counted = sum(layer["parameters"] for layer in layers)
    if counted != total:
        # A model whose forward skips modules (PyTorch's fused attention in
        # eval mode calls no submodule) cannot be described by its hooks.
        missed = [module_name for module_name, module in model.named_modules()
                  if module not in seen and owns_parameters(module)]
        raise ValueError(f"{name}: the forward pass called modules holding {counted} of its "
                         f"{total} parameters; never called: {', '.join(missed[:5])}"
                         f"{' ...' if len(missed) > 5 else ''} (write those layers by hand, "
                         f"workloads/README.md)")
    # In the order a trace of the model lays its layers out: a module holding
    # parameters beside children (the model's class token, a block's layer
    # scale) has its own layer where their gradient falls in the backward
    # pass, not after its children, where its forward hook ends.
    if may_split(model):
        # Two samples: a batch norm in training mode needs more than one value.
        batch = (max(2, shape[0]),) + tuple(shape[1:])
        example = torch.zeros(batch, dtype=torch.long) if sample_unit == "sequence" \
            else torch.zeros(batch)
        layout = Layout(model, modules_run(model, example))
        order, _ = layer_order(model, example, layout)
        position = {layer: at for at, layer in enumerate(order)}
        layers = [layer for _, layer in sorted(
            enumerate(layers),
            key=lambda item: position.get(layout.layer_of(firsts[item[0]]), len(position)))]
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
    parser = Parser(summary_of=__doc__)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "workloads", "models"))
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="model names to generate (default: all)")
    args = parser.parse_args()
    known = models()
    unknown = [name for name in args.only or [] if name not in known]
    if unknown:
        parser.error(f"--only: no model {', '.join(map(repr, unknown))}; the models are "
                     f"{', '.join(known)}")
    if not args.out:
        parser.error("--out: expected a folder, got ''")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        parser.error(f"--out: {args.out} is not a folder")
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as error:
        raise WriteError(args.out, error) from error
    for name, (build, shape, dataset, unit) in known.items():
        if args.only and name not in args.only:
            continue
        spec = describe(name, build, shape, dataset, unit)
        path = os.path.join(args.out, name + ".json")
        write_json_atomically(path, spec, indent=1)
        print(f"{path}: {spec['parameters']:,} parameters, {len(spec['layers'])} layers, "
              f"{spec['flops_per_sample']['forward'] / 1e9:.3f} GFLOP forward per sample", file=sys.stderr)


if __name__ == "__main__":
    run_script(main)
