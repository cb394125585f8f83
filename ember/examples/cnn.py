"""Two image classifiers written as plain PyTorch code: LeNet-5 and a small ResNet.

The only ember-specific line is the import; the tests run this same source under real
``torch`` too and check that training follows the same trajectory.

    python -m ember.examples.cnn                 # a few SGD steps of each on random images
"""
import argparse

import ember as torch
import ember.nn as nn
import ember.nn.functional as F


class LeNet5(nn.Module):
    """LeCun et al. (1998), with ReLU and max pooling: 1x28x28 -> 10 classes."""

    def __init__(self, num_classes=10, in_channels=1):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 6, kernel_size=5, padding=2), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 16, kernel_size=5), nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm, added to a (projected) skip connection."""
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = conv3x3(in_planes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or in_planes != planes * self.expansion:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_planes, planes * self.expansion, kernel_size=1, stride=stride,
                          bias=False),
                nn.BatchNorm2d(planes * self.expansion),
            )

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """A CIFAR-style ResNet: 3x3 stem, stages of BasicBlocks, global average pool, linear."""

    def __init__(self, block=BasicBlock, layers=(2, 2, 2), widths=(16, 32, 64),
                 num_classes=10, in_channels=3):
        super().__init__()
        self.in_planes = widths[0]
        self.stem = nn.Sequential(conv3x3(in_channels, widths[0]), nn.BatchNorm2d(widths[0]),
                                  nn.ReLU(inplace=True))
        stages = []
        for i, (n, w) in enumerate(zip(layers, widths)):
            stages.append(self._make_layer(block, w, n, stride=1 if i == 0 else 2))
        self.layers = nn.Sequential(*stages)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[-1] * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, blocks, stride):
        layers = [block(self.in_planes, planes, stride)]
        self.in_planes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.in_planes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.stem(x)
        x = self.layers(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


def train(model, images, labels, steps, lr):
    """A few SGD-with-momentum steps on one batch; returns the losses."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    model.train()
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ember.examples.cnn")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.manual_seed(args.seed)

    x = torch.randn(args.batch_size, 1, 28, 28)
    y = torch.randint(10, (args.batch_size,))
    losses = train(LeNet5(), x, y, args.steps, lr=0.05)
    print(f"LeNet-5 : loss {losses[0]:.4f} -> {losses[-1]:.4f} over {args.steps} steps")

    x = torch.randn(args.batch_size, 3, 32, 32)
    y = torch.randint(10, (args.batch_size,))
    model = ResNet()
    losses = train(model, x, y, args.steps, lr=0.05)
    print(f"ResNet  : loss {losses[0]:.4f} -> {losses[-1]:.4f} over {args.steps} steps "
          f"({sum(p.numel() for p in model.parameters()):,} parameters)")
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(dim=1) == y).float().mean().item()
    print(f"ResNet  : eval accuracy on the memorised batch {acc:.2f}")


if __name__ == "__main__":
    main()
