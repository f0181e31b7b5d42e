# codemods: TM005
# emits: torch.utils.checkpoint.checkpoint(use_reentrant)
# holds back: torch.utils.checkpoint.checkpoint_sequential(use_reentrant)
# use_reentrant= on checkpoint since 1.11, on checkpoint_sequential only since 2.0.
import torch
import torch.nn as nn
import torch.utils.checkpoint

torch.manual_seed(0)
block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
layers = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU())
x = torch.randn(5, 4, requires_grad=True)

h = torch.utils.checkpoint.checkpoint(block, x)
out = torch.utils.checkpoint.checkpoint_sequential(layers, 2, h)
out.sum().backward()

value = out.detach().clone()
grad_x = x.grad.clone()
grad_block = block[0].weight.grad.clone()
grad_layers = layers[0].weight.grad.clone()
