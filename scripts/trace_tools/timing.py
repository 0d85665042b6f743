"""Per-layer forward and backward time, measured with module hooks.

Forward: a forward pre-hook and a forward hook on every leaf module (and
on a module holding parameters beside children, such as MultiheadAttention,
timed whole: timed_modules) read time.perf_counter() just before and just
after the module runs; the difference is the module's forward time (summed
over calls if a module runs more than once).

Backward: the forward hook registers a gradient hook on the module's output.
It fires when the gradient with respect to that output is complete, which is
the moment autograd can start the module's own backward. The events arrive
in time order; a module's backward time is the interval from its event to
the next event (the next module's output gradient being ready), and the last
interval ends when loss.backward() returns. On a CPU autograd runs one node
at a time, so these intervals partition the backward pass: each holds the
module's input-gradient and weight-gradient kernels (and the few unhooked
operations between modules, such as residual additions).

On a GPU the same marks are CUDA events recorded on the current stream
(CudaClock): kernels run in stream order, so the time between two events is
the GPU time of the kernels queued between the two hooks, not the host's
launch time.
"""

import contextlib
import dataclasses
import time

import torch


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


def timed_modules(model):
    """[(name, module)] the timer hooks, in definition order: the modules
    without children, except inside a module that holds parameters of its
    own beside children (MultiheadAttention: its input projection, and an
    out_proj child it never calls but uses), which is timed whole, its
    children's parameters its own. The model itself is never one."""
    whole = [name for name, module in model.named_modules()
             if name and any(True for _ in module.parameters(recurse=False))
             and any(True for _ in module.children())]
    return [(name, module) for name, module in model.named_modules()
            if name and not any(name.startswith(outer + ".") for outer in whole)
            and (name in whole or not any(True for _ in module.children()))]


def timed_module_of(parameter_name, timed_names):
    """The timed module (timed_modules' name) a parameter's time goes to:
    its own module, or the one it lies inside."""
    owner = parameter_name.rpartition(".")[0]
    return next((name for name in timed_names if owner == name or owner.startswith(name + ".")),
                owner)


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


class LayerTimer:
    def __init__(self, model, clock=None):
        self.clock = clock or CpuClock()
        self.order = []  # timed module names in first-execution order
        self.forward_s = {}
        self.backward_s = {}
        self.samples = 0
        self.forward_total_s = 0.0
        self.backward_total_s = 0.0
        self._active = False
        self._calls = []
        self._open = []  # timed calls under way: a shared module run inside another counts there
        self._grad_events = []
        self._handles = []
        for name, module in timed_modules(model):
            self._handles.append(module.register_forward_pre_hook(self._pre(name)))
            self._handles.append(module.register_forward_hook(self._post(name)))

    def _pre(self, name):
        def hook(module, inputs):
            if not self._active:
                return
            self._open.append(name)
            if len(self._open) == 1:
                self._calls.append([name, self.clock.mark(), None])
        return hook

    def _post(self, name):
        def hook(module, inputs, output):
            if not self._active:
                return
            self._open.pop()
            if self._open:  # run inside another timed module (a shared activation): its time
                return
            now = self.clock.mark()
            call = self._calls[-1]
            assert call[0] == name, "an outermost timed call ends where it began"
            call[2] = now
            # The first of its outputs' gradients to be complete starts the
            # module's backward, whichever the model used.
            hook = self._grad(name)
            for tensor in gradient_outputs(output, inputs):
                tensor.register_hook(hook)
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

    def run(self, model, loss_fn, x, y, forward_context=contextlib.nullcontext):
        """One forward and backward pass, timed; returns the loss tensor.
        The forward pass runs inside forward_context() (torch.autocast, say)."""
        self._active, self._calls, self._open, self._grad_events = True, [], [], []
        start = self.clock.mark()
        with forward_context():
            loss = loss_fn(model(x), y)
        forward_end = self.clock.mark()
        self._active = False
        loss.backward()
        backward_end = self.clock.mark()
        self.clock.wait()
        seconds = self.clock.seconds

        for name, begin, end in self._calls:
            if name not in self.forward_s:
                self.order.append(name)
                self.forward_s[name] = 0.0
                self.backward_s[name] = 0.0
            self.forward_s[name] += seconds(begin, end)
        events = self._grad_events
        for i, (mark, name) in enumerate(events):
            following = events[i + 1][0] if i + 1 < len(events) else backward_end
            self.backward_s[name] += seconds(mark, following)
        self.forward_total_s += seconds(start, forward_end)
        self.backward_total_s += seconds(forward_end, backward_end)
        self.samples += 1
        return loss

    def averages(self):
        """Per-module mean seconds per micro-batch, in execution order."""
        n = max(self.samples, 1)
        return [(name, self.forward_s[name] / n, self.backward_s[name] / n) for name in self.order]
