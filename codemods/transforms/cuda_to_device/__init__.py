"""TM101 (cuda-to-device): `.cuda()` -> `.to(device)`, legacy `torch.cuda.*Tensor` -> dtype/device forms.

- `transform.py`: the codemod, `CudaToDevice` (its docstring is the rule's documentation);
- `receivers.py`: what a `.cuda()` receiver is (a tensor, a module, an object with its own
  `cuda()`), and the legacy tensor types.
"""

from codemods.transforms.cuda_to_device.receivers import ClassCollector, cuda_tensor_type, type_string_dtype
from codemods.transforms.cuda_to_device.transform import CudaToDevice

__all__ = ["CudaToDevice", "ClassCollector", "cuda_tensor_type", "type_string_dtype"]
