# codemods: TM004
# emits: torch.amp.autocast, torch.amp.autocast(dtype)
# holds back: torch.amp.GradScaler
# torch.amp.autocast is there in 1.13 and kept; torch.amp.GradScaler (2.3) is not: the scaler stays.
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler(enabled=torch.cuda.is_available())
x = torch.randn(8, 4)
y = torch.randn(8, 2)

losses = []
for step in range(3):
    optimizer.zero_grad()
    with torch.cpu.amp.autocast(dtype=torch.bfloat16):
        out = model(x)
    loss = nn.functional.mse_loss(out.float(), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    losses.append(loss.item())

out_dtype_is_bf16 = out.dtype == torch.bfloat16
weight = model.weight.detach().clone()
scale = scaler.get_scale()
