"""Models the trace capture can train: chosen by name (MODELS), or your own from a file (from_file).

Every ReLU is a module (never functional, never in place) so that forward
hooks see it and its time is measured, and so that gradient hooks on module
outputs are well defined.
"""

import copy
import os

from torch import nn


class SmallCNN(nn.Module):
    """Two conv layers and two dense layers for 1x28x28 inputs (29,994 params;
    with hidden=2048 units in fc1, "wide-cnn", 1,084,362: the same model with
    a gradient of 4.3 MB, whose allreduce is the network's work, not the
    processors')."""

    def __init__(self, num_classes=10, in_channels=1, hidden=32):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 16, 5)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 32, 5)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(32 * 4 * 4, hidden)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(hidden, num_classes)

    def forward(self, x):
        x = self.pool1(self.relu1(self.conv1(x)))
        x = self.pool2(self.relu2(self.conv2(x)))
        return self.fc2(self.relu3(self.fc1(self.flatten(x))))


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))
        self.relu2 = nn.ReLU()

    def forward(self, x):
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu2(out + self.shortcut(x))


class CifarResNet18(nn.Module):
    """The CIFAR-style ResNet-18 (3x3 stem, no max-pool) of kuangliu/pytorch-cifar,
    which the DEFT paper uses: 11,173,962 parameters for 10 classes."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.in_planes = 64
        self.layer1 = self._make_layer(64, 2, 1)
        self.layer2 = self._make_layer(128, 2, 2)
        self.layer3 = self._make_layer(256, 2, 2)
        self.layer4 = self._make_layer(512, 2, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.linear = nn.Linear(512, num_classes)

    def _make_layer(self, planes, blocks, stride):
        layers = []
        for s in [stride] + [1] * (blocks - 1):
            layers.append(BasicBlock(self.in_planes, planes, s))
            self.in_planes = planes
        return nn.Sequential(*layers)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        return self.linear(self.flatten(self.pool(out)))


VGG16_CFG = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
             512, 512, 512, "M"]


class CifarVGG16(nn.Module):
    """VGG-16 with batch norm for 32x32 inputs (kuangliu/pytorch-cifar style)."""

    def __init__(self, num_classes=10):
        super().__init__()
        layers, channels = [], 3
        for item in VGG16_CFG:
            if item == "M":
                layers.append(nn.MaxPool2d(2))
                continue
            layers += [nn.Conv2d(channels, item, 3, padding=1), nn.BatchNorm2d(item), nn.ReLU()]
            channels = item
        self.features = nn.Sequential(*layers)
        self.flatten = nn.Flatten()
        self.classifier = nn.Linear(512, num_classes)

    def forward(self, x):
        return self.classifier(self.flatten(self.features(x)))


def no_inplace(model):
    # torchvision's activations are in place (ReLU, ReLU6, Hardswish, SiLU,
    # ...); a gradient hook on the output of one would see the tensor of
    # the layer before, whose backward time then went to the activation.
    for module in model.modules():
        if getattr(module, "inplace", False) is True:
            module.inplace = False
    return model


def _torchvision_resnet50(num_classes):
    import torchvision

    model = torchvision.models.resnet50(weights=None, num_classes=num_classes)
    # torchvision's Bottleneck reuses one ReLU module three times; give each
    # use its own module so that per-layer timings stay per layer.
    for block in [b for layer in (model.layer1, model.layer2, model.layer3, model.layer4)
                  for b in layer]:
        block.relu = PerCall(nn.ReLU(), 3)
    return per_call_restarted(no_inplace(model))


def per_call_restarted(model):
    """`model`, each of its passes starting its PerCall modules at their
    first copy: a pass that failed, or ran one fewer time, shifted every
    later one. The hook takes the module it runs on, so a copy of the model
    restarts its own."""
    def restart(module, inputs):
        for inner in module.modules():
            if isinstance(inner, PerCall):
                inner.calls = 0

    if any(isinstance(inner, PerCall) for inner in model.modules()):
        model.register_forward_pre_hook(restart)
    return model


class PerCall(nn.Module):
    """Stands in for a module without parameters or buffers that a pass
    runs `count` times (Bottleneck.relu, called three times by
    Bottleneck.forward): each run goes to its own copy, so that hooks tell
    the runs apart and each one's time stays with the layer it follows.
    per_call_restarted(model) starts each pass at the first copy."""

    def __init__(self, module, count):
        super().__init__()
        self.runs = nn.ModuleList(copy.deepcopy(module) for _ in range(count))
        self.calls = 0

    def __getattr__(self, name):
        # What the model reads of the module it stood in for (a dropout's p).
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "runs" or "runs" not in self._modules:
                raise
            return getattr(self._modules["runs"][0], name)

    def forward(self, *inputs, **options):
        run = self.runs[self.calls % len(self.runs)]
        self.calls += 1
        return run(*inputs, **options)


def _torchvision_alexnet(num_classes):
    import torchvision

    return no_inplace(torchvision.models.alexnet(weights=None, num_classes=num_classes))


def owns_parameters(module):
    """Whether `module` holds parameters of its own (not only its
    children's): the modules a layer spec and a trace list."""
    return any(True for _ in module.parameters(recurse=False))


# name -> (constructor, input channels, image side in pixels)
MODELS = {
    "cnn": (lambda n: SmallCNN(n), 1, 28),
    "wide-cnn": (lambda n: SmallCNN(n, hidden=2048), 1, 28),
    "resnet18": (lambda n: CifarResNet18(n), 3, 32),
    "resnet50": (_torchvision_resnet50, 3, 64),
    "alexnet": (_torchvision_alexnet, 3, 64),
    "vgg16": (lambda n: CifarVGG16(n), 3, 32),
}


def build(name, num_classes):
    constructor, channels, side = MODELS[name]
    return constructor(num_classes), channels, side


def run_model_code(path, what, call):
    """call(), which runs the code of the model file `path`: its failing or
    exiting is BadInput (the scripts' one-line refusal), `what` failed,
    with the error and the line of the file where it was raised."""
    import traceback

    from script_input import BadInput

    try:
        return call()
    except (KeyboardInterrupt, BadInput):
        raise
    except BaseException as error:  # SystemExit too: a model's sys.exit is not ours
        # Where in the user's code it failed, not in torch: the last line
        # of the model file, or of a helper beside it that it called.
        folder = os.path.dirname(os.path.abspath(path))
        places = [(frame.filename, frame.lineno)
                  for frame in traceback.extract_tb(error.__traceback__)
                  if os.path.dirname(os.path.abspath(frame.filename)) == folder]
        said = str(error).splitlines()[0] if str(error) else ""
        if isinstance(error, SyntaxError):  # its str() names the file and line again
            said, places = error.msg, [(error.filename or path, error.lineno)]
        if isinstance(error, SystemExit):
            said = f"the file called sys.exit({'' if error.code is None else repr(error.code)})"
        where = ""
        if places:
            source, line = places[-1]
            beside = os.path.abspath(source) != os.path.abspath(path)
            where = f" ({os.path.basename(source)} line {line})" if beside else f" (line {line})"
        raise BadInput(f"--model-file {path}: {what}: {type(error).__name__}: {said}"
                       + where) from None


def from_file(path, num_classes, batch):
    """(model, channels, side, name) of a model of your own, from a Python
    file that defines build(num_classes), returning a torch.nn.Module, and
    INPUT = (channels, side), the images it takes (the data set's are
    copied into its channels and resized to side x side pixels); its name
    is the file's, and its folder is on the import path, as for `python
    FILE.py`. Checked before any training, on a copy run forward and
    backward on a batch of `batch` images: BadInput (the scripts' one-line
    refusal, with the line of the file where it failed) for a file whose
    code fails or exits, a model without trainable parameters, a forward
    or backward pass that fails, an output that is not (batch,
    num_classes), trainable parameters it never uses, and parameters whose
    time the capture cannot measure: used outside the forward of the
    module that is timed for them (timing.Layout: a module without
    children; one holding parameters beside children, a module below it
    holding parameters not called in the pass, as MultiheadAttention's
    out_proj, timed whole; otherwise, as the model's own, its parameters a
    layer of their own), or whose module's output takes no gradient in
    the forward (gradient checkpointing); a module named as the model's
    class, the name of the model's own parameters' layer; and a
    TorchScript module, which takes no hooks. Lazy layers get their shapes
    from a first pass, in eval mode. Made ready to time as the shipped
    models are: activations and dropouts out of place (no_inplace), and a
    module without parameters that a pass runs more than once (a ReLU
    shared within a block) a copy per run (PerCall)."""
    import importlib.machinery
    import importlib.util
    import sys

    import torch
    from script_input import BadInput
    from trace_tools.timing import Layout, gradient_outputs, parameter_aliases

    def refuse(why):
        raise BadInput(f"--model-file {path}: {why}")

    def guarded(what, call):
        return run_model_code(path, what, call)

    if not os.path.isfile(path):
        refuse("no such file" if not os.path.exists(path) else "not a file")
    name = os.path.splitext(os.path.basename(path))[0]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # its helpers beside it
    # Loaded as Python source whatever its name ends in (my_model.txt).
    loader = importlib.machinery.SourceFileLoader(f"gcsim_model_{abs(hash(path))}", path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import does: dataclasses look themselves up there
    guarded("failed to run", lambda: spec.loader.exec_module(module))
    if not callable(getattr(module, "build", None)):
        refuse("defines no build(num_classes) returning the model")
    shape = getattr(module, "INPUT", None)
    if not (isinstance(shape, (tuple, list)) and len(shape) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in shape)
            and 1 <= shape[0] <= 64 and 1 <= shape[1] <= 1024):
        refuse(f"INPUT is {shape!r:.40}: expected (channels, side), channels in [1, 64] and "
               f"side in [1, 1024] pixels")
    channels, side = shape
    model = guarded(f"build({num_classes}) failed", lambda: module.build(num_classes))
    if not isinstance(model, nn.Module):
        refuse(f"build({num_classes}) returned a {type(model).__name__}, not a torch.nn.Module")
    if isinstance(model, torch.jit.ScriptModule):
        refuse("build returned a TorchScript module, which takes no hooks to time its layers: "
               "return the module before torch.jit.script")
    if any(isinstance(p, nn.parameter.UninitializedParameter) for p in model.parameters()):
        # Lazy layers (nn.LazyLinear) take their shapes from a first pass:
        # one in eval mode, without gradients, torch's random state kept.
        state = torch.get_rng_state()
        try:
            model.eval()
            with torch.no_grad():
                guarded(f"its first pass (for its lazy layers) on a batch of shape ({batch}, "
                        f"{channels}, {side}, {side}) failed",
                        lambda: model(torch.zeros(batch, channels, side, side)))
        finally:
            torch.set_rng_state(state)
            model.train()
    if not any(p.requires_grad for p in model.parameters()):
        refuse("the model has no trainable parameters: nothing to train or compress")
    if owns_parameters(model) and any(name == type(model).__name__
                                      for name, _ in model.named_modules()):
        refuse(f"a module is named {type(model).__name__}, as the model's class, whose name "
               f"the trace gives the model's own parameters; rename it")
    # The checks run on a copy, torch's random state kept: the training the
    # capture records starts from the model as built.
    probe = guarded("it cannot be copied for the checks before training",
                    lambda: copy.deepcopy(model).train())
    names = {}
    for module_name, child in probe.named_modules(remove_duplicate=False):
        names.setdefault(child, []).append(module_name)
    calls = {child: 0 for child in names}

    # Counted in the forward pass only: gradient checkpointing runs modules
    # again in the backward.
    forward = [True]

    def ran(child, *_):
        if forward[0]:
            calls[child] += 1

    # Whether a timed module's output took a gradient: under gradient
    # checkpointing (or no_grad in a forward) none does, and its backward,
    # recomputed later, is nobody's.
    took = {}

    def gave(child, inputs, output):
        if forward[0]:
            took[child] = took.get(child, False) or bool(gradient_outputs(output, inputs))

    handles = [child.register_forward_pre_hook(ran) for child in names] + \
        [child.register_forward_hook(gave) for child in names]
    state = torch.get_rng_state()
    try:
        output = guarded(f"its forward pass on a batch of shape ({batch}, {channels}, {side}, "
                         f"{side}) failed", lambda: probe(torch.zeros(batch, channels, side, side)))
        if not isinstance(output, torch.Tensor) or tuple(output.shape) != (batch, num_classes):
            shape_given = tuple(output.shape) if isinstance(output, torch.Tensor) else \
                f"a {type(output).__name__}"
            refuse(f"its forward pass on {batch} images gave {shape_given}, not the ({batch}, "
                   f"{num_classes}) class scores the capture's loss takes")
        forward[0] = False
        guarded("its backward pass failed", lambda: output.float().sum().backward())
    finally:
        torch.set_rng_state(state)
        for handle in handles:
            handle.remove()
    trained = [(parameter_name, p) for parameter_name, p in probe.named_parameters()
               if p.requires_grad]
    unused = [parameter_name for parameter_name, p in trained if p.grad is None]
    if unused:
        refuse(f"its forward pass (the check's) never uses parameter {unused[0]}"
               f"{f' (and {len(unused) - 1} more)' if len(unused) > 1 else ''}: its "
               f"gradient would be 0 and its time nobody's")
    # Which modules are timed, and which split (their own parameters a
    # layer of their own), follows from which ones the pass called.
    layout = Layout(probe, {module_name for child, count in calls.items() if count
                            for module_name in names[child]})
    timed = dict(layout.timed)
    # A tied parameter is timed with whichever of its modules runs.
    aliases = parameter_aliases(probe)
    outside = [parameter_name for parameter_name, p in trained
               if not any(calls[layout.modules[layout.layer_of(alias)]]
                          for alias in aliases[id(p)])]
    if outside:
        refuse(f"parameter {outside[0]} is used outside the forward of its module "
               f"{layout.layer_of(outside[0])} (as module.weight): the capture times a "
               f"module by its forward calls, so its time would be nobody's; use it in a "
               f"module's forward")
    untimed = [module_name for module_name, child in timed.items()
               if any(p.requires_grad for p in child.parameters()) and calls[child]
               and not took.get(child)]
    if untimed:
        refuse(f"the output of module {untimed[0]} takes no gradient in the forward pass "
               f"(gradient checkpointing, or no_grad in a forward): its backward, recomputed "
               f"later, cannot be timed; capture without checkpointing")
    # A module timed whole (its own parameters beside children, a module
    # below it holding parameters not called) over children that hold
    # parameters and run: one layer where a reader may expect several.
    # Said, not refused.
    for module_name, child in timed.items():
        inner = [inner_name for inner_name, inner in child.named_modules()
                 if inner_name and calls.get(inner) and any(True for _ in inner.parameters())]
        if inner:
            print(f"capture_traces.py: note: module {module_name} holds parameters beside "
                  f"children that hold parameters and run ({', '.join(inner[:3])}"
                  f"{', ...' if len(inner) > 3 else ''}): timed whole, one layer of the trace")
    # A timed module without parameters run k times a pass (registered
    # once) gets a copy per run, so that each run's time stays with the
    # layer it follows.
    # (Not one with buffers, a shared BatchNorm's statistics: copies would
    # keep their own. Not one registered under several names: left whole.)
    for child, count in calls.items():
        stateless = not any(True for _ in child.parameters()) \
            and not any(True for _ in child.buffers())
        if child in timed.values() and stateless and count > 1 and len(names[child]) == 1 \
                and names[child][0]:
            parent, _, attribute = names[child][0].rpartition(".")
            original = model.get_submodule(names[child][0])
            setattr(model.get_submodule(parent), attribute, PerCall(original, count))
    return per_call_restarted(no_inplace(model)), channels, side, name
