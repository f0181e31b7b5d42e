# codemods: TM008
# emits: torch.utils.data.default_collate
# holds back: torch.optim.lr_scheduler.LRScheduler
# LRScheduler is public from torch 2.0: under target 1.13 the subclass keeps _LRScheduler, while
# default_collate (public since 1.11) still moves.
import torch
from torch.optim.lr_scheduler import _LRScheduler
from torch.utils.data.dataloader import default_collate


class WarmUp(_LRScheduler):
    def __init__(self, optimizer, steps, last_epoch=-1):
        self.steps = steps
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * min(1.0, (self.last_epoch + 1) / self.steps) for base in self.base_lrs]


torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
scheduler = WarmUp(optimizer, steps=4)
x, y = default_collate([(torch.randn(3), torch.randn(1)) for _ in range(16)])
lrs = []
for epoch in range(6):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    scheduler.step()
    lrs.append(optimizer.param_groups[0]["lr"])
is_scheduler = isinstance(scheduler, torch.optim.lr_scheduler._LRScheduler)
bias = model.bias.detach().clone()
