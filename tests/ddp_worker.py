"""One rank of the real DDP check in test_gdat_torch.py (run as a script by the test):
default DDP, DDP with a plan applied (bucket_cap_mb_list) and the hook fallback, on gloo."""
import json
import os
import sys

import torch
import torch.distributed as dist

from aoe_native import Cluster, tune_gradients
from aoe_native.torch_ddp import apply_plan, watch_buckets

ITERS = 3


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 48), torch.nn.ReLU(), torch.nn.Linear(48, 10))


def plan_for(m):
    # ready order = reverse registration order; a cluster where merging pays off in part
    grads = [(n, p.numel() * p.element_size(), 10.0 * i) for i, (n, p) in enumerate(reversed(list(m.named_parameters())))]
    return tune_gradients(grads, Cluster(ranks=2, alpha_us=6.0, gbps=1.0))


def train(m, data, finish=None):
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    grads = []
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(m(x), y).backward()
        if finish:
            finish()
        grads.append([p.grad.clone() for p in m.parameters()])
        opt.step()
    return grads


def max_diff(a, b):
    return max(float((x - y).abs().max()) for ga, gb in zip(a, b) for x, y in zip(ga, gb))


def main(rank, port, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    torch.manual_seed(100 + rank)
    data = [(torch.randn(16, 32), torch.randint(0, 10, (16,))) for _ in range(ITERS)]
    plan = plan_for(model())
    ref = train(torch.nn.parallel.DistributedDataParallel(model()), data)
    ddp = apply_plan(model(), plan, method="ddp")
    seen = watch_buckets(ddp)
    per_iter = []
    opt_grads = []
    for x, y in data:  # as train(), recording the buckets of each iteration
        seen.clear()
        opt_grads += train(ddp, [(x, y)])
        per_iter.append([list(b) for b in seen])
    hooked_model = model()
    hooked = apply_plan(hooked_model, plan, method="hooks")
    launched = []

    def finish():
        hooked.finish()
        launched.append(hooked.launched[-len(plan.buckets):])
    hook_grads = train(hooked, data, finish)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"plan": plan.buckets, "ddp_buckets": per_iter, "hook_buckets": launched,
                       "ddp_diff": max_diff(ref, opt_grads), "hook_diff": max_diff(ref, hook_grads)}, f)
    dist.barrier()  # both ranks done before either tears gloo down
    dist.destroy_process_group()
    # The results are written and the process group is gone; skip the interpreter's teardown, in which
    # torch 2.13 now and then (about 1 run in 10 here, once in CI) destroys a still-joinable thread and
    # aborts with "terminate called without an active exception" after every line of this script ran.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
