"""Timings for issue 22 (eager speed of convolutional nets), apart from `python -m benchmarks`.

    PYTHONPATH=$PWD python -m benchmarks.cnn_eval ember|torch [bn|resnet|cnn_train|all] [cpu]

Runs one library per process (both OpenMP runtimes in one process would disturb each other), at
1 thread, and prints the median time of each case in milliseconds: wall-clock, or with `cpu`
the calling thread's CPU time (time.thread_time: at 1 thread all the work runs in it), which a
machine shared with other jobs disturbs less.
"""
import statistics
import sys
import time


CLOCK = time.thread_time if "cpu" in sys.argv[3:] else time.perf_counter


def median_ms(fn, reps, warm=3):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t0 = CLOCK()
        fn()
        ts.append(CLOCK() - t0)
    return statistics.median(ts) * 1e3


def resnet(torch):
    """A torchvision-like small ResNet: stem conv3x3(3->16)+BN+ReLU, then BasicBlocks
    16, 16, 32(stride 2), 32, 64(stride 2), 64, global avg pool, Linear(64, 10)."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    layers = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    for cin, cout, s in ((16, 16, 1), (16, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2),
                         (64, 64, 1)):
        layers.append(Block(cin, cout, s))
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


def main():
    lib = sys.argv[1]
    which = sys.argv[2] if len(sys.argv) > 2 else "all"
    if lib == "torch":
        import torch
    else:
        import ember as torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    F = torch.nn.functional
    if which in ("bn", "all"):
        for shape in ((8, 64, 16, 16), (32, 64, 32, 32)):
            x = torch.randn(*shape)
            c = shape[1]
            rm, rv = torch.randn(c), torch.rand(c) + 0.5
            w, b = torch.randn(c), torch.randn(c)
            t = median_ms(lambda: F.batch_norm(x, rm, rv, w, b, False), 200)
            print(f"bn eval {shape}: {t:.3f} ms")
            xcl = x.contiguous(memory_format=torch.channels_last)
            t = median_ms(lambda: F.batch_norm(xcl, rm, rv, w, b, False), 200)
            print(f"bn eval {shape} channels_last: {t:.3f} ms")
    if which in ("resnet", "all"):
        m = resnet(torch).eval()
        x = torch.randn(8, 3, 32, 32)
        with torch.no_grad():
            t = median_ms(lambda: m(x), 60)
        print(f"resnet eval forward b8 3x32x32: {t:.3f} ms")
    if which in ("cnn_train", "all"):
        from .train_workloads import cnn_train
        step = cnn_train(torch)
        t = median_ms(step, 40)
        print(f"cnn_train step: {t:.3f} ms")


if __name__ == "__main__":
    main()
