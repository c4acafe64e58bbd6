"""Inheritance across modules of a package: a mixin first in the MRO, a base in another module."""
from models import LlamaForCausalLM
from models.base import BaseModel

model = LlamaForCausalLM({"layers": 2})
model.set_capture([1])
model.forward(0)
model.model.forward(0)
BaseModel({}).forward(1)
