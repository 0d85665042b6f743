"""A model of one's own for `capture_traces.py --model-file`: a small MLP
on the 8x8 digits, written as a user might: its head defined first (the
capture lays tensors out in the order the forward pass runs them), a
frozen first layer (left out of the trace), one in-place ReLU run twice
(made out of place, a copy per run, so that each layer's time stays its
own), a weight tied between two layers (in the trace once, under the one
that runs first, though the other was defined first), a module
from a file beside it, batch norm and dropout (the capture keeps their
state and random numbers out of its checks)."""
from torch import nn

from own_model_parts import Scale  # beside this file

INPUT = (1, 8)  # channels, side: the digits as they are


class OwnModel(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.head = nn.Linear(24, num_classes)
        self.flatten = nn.Flatten()
        self.stem = nn.Linear(64, 64)
        self.hidden = nn.Linear(64, 24, bias=False)  # the norm takes out a bias
        self.norm = nn.BatchNorm1d(24)
        self.relu = nn.ReLU(inplace=True)
        self.unmix = nn.Linear(24, 24)  # defined first, run second
        self.mix = nn.Linear(24, 24)
        self.mix.weight = self.unmix.weight
        self.scale = Scale(24)
        self.dropout = nn.Dropout(0.1)
        self.stem.requires_grad_(False)

    def forward(self, x):
        x = self.relu(self.norm(self.hidden(self.stem(self.flatten(x)))))
        x = self.relu(self.unmix(self.mix(x)))
        return self.head(self.dropout(self.scale(x)))


def build(num_classes):
    return OwnModel(num_classes)
