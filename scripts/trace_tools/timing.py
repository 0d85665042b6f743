"""Per-layer forward and backward time, measured with module hooks.

Forward: a forward pre-hook and a forward hook on every leaf module read
time.perf_counter() just before and just after the module runs; the
difference is the module's forward time (summed over calls if a module runs
more than once).

Backward: the forward hook registers a gradient hook on the module's output.
It fires when the gradient with respect to that output is complete, which is
the moment autograd can start the module's own backward. The events are
sorted by time; a module's backward time is the interval from its event to
the next event (the next module's output gradient being ready), and the last
interval ends when loss.backward() returns. On a CPU autograd runs one node
at a time, so these intervals partition the backward pass: each holds the
module's input-gradient and weight-gradient kernels (and the few unhooked
operations between modules, such as residual additions).
"""

import time

import torch


class LayerTimer:
    def __init__(self, model):
        self.order = []  # leaf module names in first-execution order
        self.forward_s = {}
        self.backward_s = {}
        self.samples = 0
        self.forward_total_s = 0.0
        self.backward_total_s = 0.0
        self._active = False
        self._calls = []
        self._grad_events = []
        self._handles = []
        for name, module in model.named_modules():
            if name and not list(module.children()):
                self._handles.append(module.register_forward_pre_hook(self._pre(name)))
                self._handles.append(module.register_forward_hook(self._post(name)))

    def _pre(self, name):
        def hook(module, inputs):
            if self._active:
                self._calls.append([name, time.perf_counter(), None])
        return hook

    def _post(self, name):
        def hook(module, inputs, output):
            if not self._active:
                return
            now = time.perf_counter()
            call = self._calls[-1]
            assert call[0] == name, "leaf modules do not nest, so calls cannot interleave"
            call[2] = now
            if isinstance(output, torch.Tensor) and output.requires_grad:
                output.register_hook(self._grad(name))
        return hook

    def _grad(self, name):
        def hook(grad):
            self._grad_events.append((time.perf_counter(), name))
        return hook

    def run(self, model, loss_fn, x, y):
        """One forward and backward pass, timed; returns the loss tensor."""
        self._active, self._calls, self._grad_events = True, [], []
        start = time.perf_counter()
        loss = loss_fn(model(x), y)
        forward_end = time.perf_counter()
        self._active = False
        loss.backward()
        backward_end = time.perf_counter()

        for name, begin, end in self._calls:
            if name not in self.forward_s:
                self.order.append(name)
                self.forward_s[name] = 0.0
                self.backward_s[name] = 0.0
            self.forward_s[name] += end - begin
        events = sorted(self._grad_events)
        for i, (t, name) in enumerate(events):
            following = events[i + 1][0] if i + 1 < len(events) else backward_end
            self.backward_s[name] += following - t
        self.forward_total_s += forward_end - start
        self.backward_total_s += backward_end - forward_end
        self.samples += 1
        return loss

    def averages(self):
        """Per-module mean seconds per micro-batch, in execution order."""
        n = max(self.samples, 1)
        return [(name, self.forward_s[name] / n, self.backward_s[name] / n) for name in self.order]
