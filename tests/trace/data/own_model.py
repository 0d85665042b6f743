"""A model of one's own for `capture_traces.py --model-file`: a small MLP
on the 8x8 digits, written as a user might: its head defined first (the
capture lays tensors out in the order the forward pass runs them), an
in-place ReLU (made out of place, so that each layer's time stays its own),
batch norm and dropout (the capture keeps their state and random numbers
out of its checks)."""
from torch import nn

INPUT = (1, 8)  # channels, side: the digits as they are


class OwnModel(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.head = nn.Linear(24, num_classes)
        self.flatten = nn.Flatten()
        self.hidden = nn.Linear(64, 24, bias=False)  # the norm takes out a bias
        self.norm = nn.BatchNorm1d(24)
        self.relu = nn.ReLU(inplace=True)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return self.head(self.dropout(self.relu(self.norm(self.hidden(self.flatten(x))))))


def build(num_classes):
    return OwnModel(num_classes)
