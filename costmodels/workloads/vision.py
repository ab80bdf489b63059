"""ResNet-50 and VGG-16 parameter tensors, from their definitions, named as torchvision names them.

- ResNet-50: He et al., "Deep Residual Learning for Image Recognition", CVPR 2016, Table 1
  (50-layer column: bottleneck stages of 3, 4, 6, 3 blocks), with torchvision's layout (batch
  norm after every convolution, bias-free convolutions, projection shortcut in each stage's
  first block, 1000-way fully connected head).
- VGG-16: Simonyan and Zisserman, "Very Deep Convolutional Networks for Large-Scale Image
  Recognition", ICLR 2015, Table 1 configuration D (13 3x3 convolutions, three fully connected
  layers of 4096, 4096 and 1000 units), torchvision's ``features`` / ``classifier`` indices.
"""

from __future__ import annotations

from costmodels.workloads.base import Tensor


def _batch_norm(prefix: str, channels: int) -> list[Tensor]:
    return [Tensor(f"{prefix}.weight", channels), Tensor(f"{prefix}.bias", channels)]


def resnet50_tensors(num_classes: int = 1000) -> tuple[Tensor, ...]:
    """ResNet-50 v1.5 (torchvision): 25,557,032 parameters with 1000 classes."""
    tensors = [Tensor("conv1.weight", 64 * 3 * 7 * 7), *_batch_norm("bn1", 64)]
    in_channels = 64
    for stage, (blocks, width) in enumerate(
        zip((3, 4, 6, 3), (64, 128, 256, 512), strict=True), start=1
    ):
        out_channels = width * 4  # bottleneck expansion
        for block in range(blocks):
            p = f"layer{stage}.{block}"
            tensors += [
                Tensor(f"{p}.conv1.weight", width * in_channels),
                *_batch_norm(f"{p}.bn1", width),
                Tensor(f"{p}.conv2.weight", width * width * 3 * 3),
                *_batch_norm(f"{p}.bn2", width),
                Tensor(f"{p}.conv3.weight", out_channels * width),
                *_batch_norm(f"{p}.bn3", out_channels),
            ]
            if block == 0:  # the projection shortcut that changes width (and stride)
                tensors += [
                    Tensor(f"{p}.downsample.0.weight", out_channels * in_channels),
                    *_batch_norm(f"{p}.downsample.1", out_channels),
                ]
            in_channels = out_channels
    tensors += [Tensor("fc.weight", num_classes * 2048), Tensor("fc.bias", num_classes)]
    return tuple(tensors)


# Configuration D: output channels of each 3x3 convolution, "M" for a 2x2 max-pool.
_VGG16_CFG: tuple[int | str, ...] = (
    64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M",
)  # fmt: skip


def vgg16_tensors(num_classes: int = 1000) -> tuple[Tensor, ...]:
    """VGG-16 without batch norm (torchvision): 138,357,544 parameters with 1000 classes."""
    tensors: list[Tensor] = []
    index, in_channels = 0, 3
    for item in _VGG16_CFG:
        if item == "M":
            index += 1  # a pooling layer holds no parameters but takes an index
            continue
        out_channels = int(item)
        tensors += [
            Tensor(f"features.{index}.weight", out_channels * in_channels * 3 * 3),
            Tensor(f"features.{index}.bias", out_channels),
        ]
        index += 2  # the convolution and its ReLU
        in_channels = out_channels
    # classifier: Linear(512*7*7, 4096), ReLU, Dropout, Linear(4096, 4096), ReLU, Dropout, Linear
    for idx, (n_in, n_out) in zip(
        (0, 3, 6), ((512 * 7 * 7, 4096), (4096, 4096), (4096, num_classes)), strict=True
    ):
        tensors += [
            Tensor(f"classifier.{idx}.weight", n_out * n_in),
            Tensor(f"classifier.{idx}.bias", n_out),
        ]
    return tuple(tensors)
