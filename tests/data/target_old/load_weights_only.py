# codemods: TM301
# emits: torch.load(weights_only)
# torch.load(weights_only=True) is there in 1.13: a plain state-dict restore gets it.
import torch


def save(model, path):
    torch.save(model.state_dict(), path)


def load(model, path):
    model.load_state_dict(torch.load(path))


torch.manual_seed(0)
source = torch.nn.Linear(3, 2)
save(source, "weights.pt")
target = torch.nn.Linear(3, 2)
load(target, "weights.pt")
restored = target.weight.detach().clone()
same = bool(torch.equal(source.weight, target.weight))
