"""A vision tower: no capture setter, and no EntryClass (tracer example)."""

from torch import nn


class VisionTower(nn.Module):
    def __init__(self, config) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(config.hidden_size, config.hidden_size)])

    def forward(self, pixel_values):
        for block in self.blocks:
            pixel_values = block(pixel_values)
        return pixel_values
