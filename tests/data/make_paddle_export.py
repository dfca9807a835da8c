"""Build a small PP-LCNet-like classifier with PaddlePaddle and export it with paddle2onnx.

The ONNX file (exports/lcnet_paddle.onnx) is what the tests read; this script made it, in an
environment with ``pip install paddlepaddle paddle2onnx`` (neither is a dependency of
aoe-native, nor of its test extra: they are large and only this one file needs them).
"""
from __future__ import annotations

import os
import sys

import paddle
from paddle import nn

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exports")
IMAGE = 64


class ConvBN(nn.Layer):
    def __init__(self, cin, cout, k, stride, groups=1):
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias_attr=False)
        self.bn = nn.BatchNorm2D(cout)
        self.act = nn.Hardswish()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class SE(nn.Layer):
    def __init__(self, c, r=4):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc1, self.fc2 = nn.Conv2D(c, c // r, 1), nn.Conv2D(c // r, c, 1)

    def forward(self, x):
        return x * nn.functional.hardsigmoid(self.fc2(nn.functional.relu(self.fc1(self.pool(x)))))


class DepthwiseSeparable(nn.Layer):
    def __init__(self, cin, cout, k, stride, se):
        super().__init__()
        self.dw = ConvBN(cin, cin, k, stride, groups=cin)
        self.se = SE(cin) if se else nn.Identity()
        self.pw = ConvBN(cin, cout, 1, 1)

    def forward(self, x):
        return self.pw(self.se(self.dw(x)))


class LCNetLike(nn.Layer):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = ConvBN(3, 16, 3, 2)
        self.blocks = nn.Sequential(DepthwiseSeparable(16, 32, 3, 1, False), DepthwiseSeparable(32, 64, 3, 2, False),
                                    DepthwiseSeparable(64, 64, 5, 1, True), DepthwiseSeparable(64, 128, 5, 2, True))
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        x = paddle.flatten(self.pool(self.blocks(self.stem(x))), 1)
        return nn.functional.softmax(self.fc(x), -1)


def main(argv: list[str]) -> int:
    paddle.seed(0)
    model = LCNetLike()
    model.eval()
    os.makedirs(HERE, exist_ok=True)
    prefix = os.path.join(HERE, "lcnet_paddle")
    spec = [paddle.static.InputSpec([1, 3, IMAGE, IMAGE], "float32", "x")]
    paddle.onnx.export(model, prefix, input_spec=spec, opset_version=13)
    print(f"{prefix}.onnx: {os.path.getsize(prefix + '.onnx') / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
