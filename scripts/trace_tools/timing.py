"""Per-layer forward and backward time, measured with module hooks.

Forward: a forward pre-hook and a forward hook on every leaf module (and
on a module holding parameters beside children where a module below it
holding parameters is not called, such as MultiheadAttention, timed whole:
Layout) read time.perf_counter() just before and just after the module
runs; the difference is the module's forward time (summed over calls if a
module runs more than once). A module holding parameters beside children
whose parameter-holding modules all run (a model's class token, a block's
layer scale) is split: its own parameters are a layer whose forward time is
the module's less its timed calls.

Backward: the forward hook registers a gradient hook on the module's output.
It fires when the gradient with respect to that output is complete, which is
the moment autograd can start the module's own backward (a split module's
own layer: a gradient hook on its parameters, when the first of their
gradients is computed). The events arrive in time order; a module's
backward time is the interval from its event to the next event (the next
module's output gradient being ready), and the last interval ends when
loss.backward() returns. On a CPU autograd runs one node
at a time, so these intervals partition the backward pass: each holds the
module's input-gradient and weight-gradient kernels (and the few unhooked
operations between modules, such as residual additions); where a split
module's parameter gradient is computed inside a module's backward (a
scale passed into that module's forward), the rest of that backward falls
in the split module's interval.

On a GPU the same marks are CUDA events recorded on the current stream
(CudaClock): kernels run in stream order, so the time between two events is
the GPU time of the kernels queued between the two hooks, not the host's
launch time.
"""

import contextlib
import copy
import dataclasses
import time

import torch

from trace_tools.models import owns_parameters


class CpuClock:
    """Marks are host times: the CPU runs each module's work inside its hooks."""

    def mark(self):
        return time.perf_counter()

    def seconds(self, begin, end):
        return end - begin

    def wait(self):
        pass


class CudaClock:
    """Marks are CUDA events on the current stream: GPU time between hooks."""

    def mark(self):
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def seconds(self, begin, end):
        return begin.elapsed_time(end) / 1e3

    def wait(self):
        torch.cuda.synchronize()


def _has_children(module):
    return any(True for _ in module.children())


def _holds_beside(module, is_model):
    # Parameters of its own beside children (the model's own, beside
    # children or not): a module Layout may split.
    return owns_parameters(module) and (is_model or _has_children(module))


def may_split(model):
    """Whether Layout may split a module of `model`: whether its layers
    depend on which modules a pass calls (modules_run)."""
    return any(_holds_beside(module, module is model) for module in model.modules())


class Layout:
    """Which modules a capture times, and the layer each parameter's time
    and gradient go to. Timed by their forward calls (`timed`): the modules
    without children, and a module holding parameters of its own beside
    children, timed whole, its children's parameters its own, when a
    module holding parameters below it did not run in the pass
    (MultiheadAttention: its input projection, and an out_proj it uses
    without calling). A module holding parameters beside children whose
    parameter-holding modules all ran (torchvision's ViT encoder and its
    pos_embedding, ConvNeXt's layer-scaled blocks, a model's class token,
    a gate beside a ReLU) is split (`split`): its children timed as theirs,
    its own parameters a layer of their own, named after it (the model
    itself after its class), whose forward time is the module's less its
    timed calls and whose backward starts when the first of its
    parameters' gradients is computed. `ran` holds the names of the modules
    a forward pass called (modules_run); without it, no module having run,
    such a module is timed whole where a module below it holds parameters
    (time_models_cuda.py's shipped models hold none)."""

    def __init__(self, model, ran=None):
        modules = dict(model.named_modules())
        self.ran = ran
        self.root_name = type(model).__name__  # a name for the model's own parameters

        every_name = dict(model.named_modules(remove_duplicate=False))  # a shared one's too
        ran_ids = {id(every_name[name]) for name in (ran or ()) if name in every_name}

        def accounted(module):
            # Its parameters have a timed call: its own module ran, or it
            # holds none of its own and its children are accounted for.
            if owns_parameters(module):
                return id(module) in ran_ids
            return all(accounted(child) for child in module.children())
        # The model itself is never timed whole: its own parameters are
        # split, beside children or not (a model of no modules is one layer).
        holders = [name for name, module in modules.items() if _holds_beside(module, not name)]
        split = [name for name in holders
                 if not name or all(accounted(child) for child in modules[name].children())]
        whole = [name for name in holders if name not in split]

        def inside(name, outer):
            return not outer or name.startswith(outer + ".")

        # A split module inside a whole one is the whole one's.
        split = [name for name in split if not any(inside(name, outer) for outer in whole)]
        self.timed = [(name, module) for name, module in modules.items()
                      if name and not any(inside(name, outer) for outer in whole)
                      and (name in whole or not _has_children(module))]
        self.split = [(name or self.root_name, modules[name]) for name in split]
        self.modules = dict(self.timed + self.split)

    def layer_of(self, parameter_name):
        """The layer (a timed module, or a split module's own parameters)
        whose time a parameter's is: the innermost of them it lies in."""
        owner = parameter_name.rpartition(".")[0]
        while owner:
            if owner in self.modules:
                return owner
            owner = owner.rpartition(".")[0]
        return self.root_name


def modules_run(model, example):
    """The names of the modules a forward pass of `model` on `example`
    calls (for Layout), found on a copy, torch's random state kept."""
    probe = copy.deepcopy(model).train()
    called = set()
    handles = [module.register_forward_pre_hook(
        lambda module, inputs, name=name: called.add(name))
        for name, module in probe.named_modules(remove_duplicate=False)]
    state = torch.get_rng_state()
    try:
        probe(example)  # with gradients: a model may take some in its forward
    finally:
        torch.set_rng_state(state)
        for handle in handles:
            handle.remove()
    return frozenset(called)


def parameter_aliases(model):
    """{id(parameter): every name it has in `model`}: a weight tied between
    modules has a name in each (named_parameters() gives the first alone;
    its remove_duplicate is not in Debian's torch)."""
    aliases = {}
    for module_name, module in model.named_modules(remove_duplicate=False):
        for name, parameter in module.named_parameters(recurse=False):
            aliases.setdefault(id(parameter), []).append(
                f"{module_name}.{name}" if module_name else name)
    return aliases


def tensors_in(value):
    """The tensors of a module's input or output, nested tuples, lists,
    dicts and dataclasses walked."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = [getattr(value, field.name) for field in dataclasses.fields(value)]
    if isinstance(value, (tuple, list)):
        return [tensor for item in value for tensor in tensors_in(item)]
    return []


def gradient_outputs(output, inputs=()):
    """The tensors of a module's output that take a gradient:
    MultiheadAttention returns the attention's output and its weights, an
    LSTM its output and (h_n, c_n), of which a model may use any. Not a
    tensor the module was given and returns as it is (nn.Identity,
    Dropout(p=0), Flatten of a flat input): its gradient is the layer
    before's, whose backward it took."""
    given = {id(tensor) for tensor in tensors_in(inputs)}
    return [tensor for tensor in tensors_in(output)
            if tensor.requires_grad and id(tensor) not in given]


def layer_order(model, example, layout):
    """(order, inside): the layers of `model` under `layout` in the order of
    the forward pass (LayerTimer.layer_order: the timed modules as the pass
    first runs them, a split module's own parameters where their gradient
    falls in the backward), and the split modules that ran only inside
    another timed module's forward (LayerTimer.inside: no time of their
    own, not in the order), from a forward and backward pass on a copy,
    torch's random state kept, so the training a capture records is
    untouched."""
    probe = copy.deepcopy(model).train()
    timer = LayerTimer(probe, layout=Layout(probe, layout.ran))
    state = torch.get_rng_state()
    try:
        timer.run(probe, lambda output, _: output.float().sum(), example, None)
    finally:
        torch.set_rng_state(state)
    return timer.layer_order(), timer.inside


def parameters_in_run_order(model, layout, order):
    """[(name, parameter)] of the model, each parameter once, in the order
    of its layers (`order`, layer_order's; layers not in it last), a
    layer's tensors together: gcsim reads a trace's tensors in that order.
    A weight tied between modules goes by the name of the one that runs
    first (its gradient is complete only after that module's backward),
    whichever was defined first."""
    position = {name: at for at, name in enumerate(order)}

    def run_at(name):
        return position.get(layout.layer_of(name), len(position))

    aliases = parameter_aliases(model)
    # min() and sorted() are stable: ties keep named_parameters() order.
    named = [(min(aliases[id(parameter)], key=run_at), parameter)
             for _, parameter in model.named_parameters()]
    return sorted(named, key=lambda item: run_at(item[0]))


@dataclasses.dataclass
class _Call:
    """One outermost call of a timed module, or a call of a split module, in
    clock marks: `begin` to `end` its time; from `entry` to the end of its
    forward hook the same with the hooks' own cost (None outside a split
    module: nobody's to subtract); a split module's `inner` those extents
    of the calls it made."""
    name: str
    begin: object
    end: object = None
    entry: object = None
    inner: list = dataclasses.field(default_factory=list)


class LayerTimer:
    def __init__(self, model, clock=None, layout=None):
        self.clock = clock or CpuClock()
        self.order = []  # timed module names in first-execution order
        self.forward_s = {}
        self.backward_s = {}
        self.samples = 0
        self.forward_total_s = 0.0
        self.backward_total_s = 0.0
        self._active = False
        self._backward_active = False
        self._calls = []  # outermost timed calls (_Call)
        self._open = []  # timed calls under way: a shared module run inside another counts there
        self._frames = []  # split modules' calls under way (_Call)
        self._split_calls = []
        self._grad_events = []
        self._own_fired = set()
        self._framed = set()  # split modules with a call of their own this pass
        self._nested = set()  # split modules run inside a timed call this pass
        # The split modules that ran only inside another timed module's
        # forward in the last pass: that module's time, none of their own.
        self.inside = set()
        # A split module's own layer goes, in the forward order, after the
        # timed module whose backward follows its parameters' gradients
        # (None: first): [(layer, that module)] in backward order.
        self._anchors = []
        self._handles = []
        layout = layout or Layout(model)
        for name, module in layout.timed:
            self._handles.append(module.register_forward_pre_hook(self._pre(name)))
            self._handles.append(module.register_forward_hook(self._post(name)))
        for name, module in layout.split:
            self._handles.append(module.register_forward_pre_hook(self._enter(name)))
            self._handles.append(module.register_forward_hook(self._leave(name)))
            hook = self._own_grad(name)
            for parameter in module.parameters(recurse=False):
                if parameter.requires_grad:
                    self._handles.append(parameter.register_hook(hook))

    def _pre(self, name):
        def hook(module, inputs):
            if not self._active:
                return
            # Inside a split module, the call's extent from here to the end
            # of its forward hook, the hooks' own cost with it, is not the
            # split module's time.
            entry = self.clock.mark() if self._frames and not self._open else None
            self._open.append(name)
            if len(self._open) == 1:
                self._calls.append(_Call(name, self.clock.mark(), entry=entry))
        return hook

    def _post(self, name):
        def hook(module, inputs, output):
            if not self._active:
                return
            self._open.pop()
            if self._open:  # run inside another timed module (a shared activation): its time
                return
            call = self._calls[-1]
            assert call.name == name, "an outermost timed call ends where it began"
            call.end = self.clock.mark()
            # The first of its outputs' gradients to be complete starts the
            # module's backward, whichever the model used.
            hook = self._grad(name)
            for tensor in gradient_outputs(output, inputs):
                tensor.register_hook(hook)
            if call.entry is not None:  # not the split module's own time
                self._frames[-1].inner.append((call.entry, self.clock.mark()))
        return hook

    def _enter(self, name):
        def hook(module, inputs):
            if self._active and self._open:
                self._nested.add(name)
            elif self._active:
                entry = self.clock.mark() if self._frames else None
                self._frames.append(_Call(name, self.clock.mark(), entry=entry))
                self._framed.add(name)
        return hook

    def _leave(self, name):
        def hook(module, inputs, output):
            if not self._active or self._open:
                return
            frame = self._frames.pop()
            assert frame.name == name, "a split module's call ends where it began"
            frame.end = self.clock.mark()
            self._split_calls.append(frame)
            if frame.entry is not None:  # inside another split module
                self._frames[-1].inner.append((frame.entry, self.clock.mark()))
        return hook

    def _grad(self, name):
        fired = []  # one call's outputs share the hook: its first firing counts

        def hook(grad):
            # Autograd runs the hooks one at a time in the order its work is
            # queued, so the list is already in time order.
            if not fired:
                fired.append(True)
                self._grad_events.append((self.clock.mark(), name))
        return hook

    def _own_grad(self, name):
        def hook(grad):
            # The first of the module's own parameters' gradients this pass;
            # not of a module that ran only inside a timed one (its time is
            # that one's, and its parameters' would take that one's backward).
            if self._backward_active and name in self._framed and name not in self._own_fired:
                self._own_fired.add(name)
                self._grad_events.append((self.clock.mark(), name))
        return hook

    def run(self, model, loss_fn, x, y, forward_context=contextlib.nullcontext):
        """One forward and backward pass, timed; returns the loss tensor.
        The forward pass runs inside forward_context() (torch.autocast, say)."""
        self._active, self._calls, self._open, self._grad_events = True, [], [], []
        self._frames, self._split_calls, self._own_fired = [], [], set()
        self._framed, self._nested = set(), set()
        start = self.clock.mark()
        with forward_context():
            loss = loss_fn(model(x), y)
        forward_end = self.clock.mark()
        self._active = False
        self._backward_active = True
        try:
            loss.backward()
        finally:
            self._backward_active = False
        backward_end = self.clock.mark()
        self.inside = self._nested - self._framed
        self.clock.wait()
        seconds = self.clock.seconds

        for call in self._calls:
            if call.name not in self.forward_s:
                self.order.append(call.name)
                self.forward_s[call.name] = 0.0
                self.backward_s[call.name] = 0.0
            self.forward_s[call.name] += seconds(call.begin, call.end)
        events = self._grad_events
        placed = {layer for layer, _ in self._anchors}
        for i, (_, name) in enumerate(events):
            if name in self._own_fired and name not in placed:
                following = [later for _, later in events[i + 1:] if later not in self._own_fired]
                self._anchors.append((name, following[0] if following else None))
                self.forward_s[name] = 0.0
                self.backward_s[name] = 0.0
        for call in self._split_calls:
            if call.name in self.forward_s:
                self.forward_s[call.name] += seconds(call.begin, call.end) - sum(
                    seconds(entry, leave) for entry, leave in call.inner)
        for i, (mark, name) in enumerate(events):
            following = events[i + 1][0] if i + 1 < len(events) else backward_end
            self.backward_s[name] += seconds(mark, following)
        self.forward_total_s += seconds(start, forward_end)
        self.backward_total_s += seconds(forward_end, backward_end)
        self.samples += 1
        return loss

    def layer_order(self):
        """The layers in the order of the forward pass: the timed modules
        in first-execution order, a split module's own layer after the
        timed module whose backward follows its gradient's."""
        after = {}
        for layer, anchor in reversed(self._anchors):  # in forward order
            after.setdefault(anchor, []).append(layer)
        return after.get(None, []) + [layer for name in self.order
                                      for layer in [name] + after.get(name, [])]

    def averages(self):
        """Per-layer mean seconds per micro-batch, in layer_order()."""
        n = max(self.samples, 1)
        return [(name, self.forward_s[name] / n, self.backward_s[name] / n)
                for name in self.layer_order()]
