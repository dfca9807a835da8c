"""PyTorch side of gradient-split tuning: measure a model's gradient timeline and apply a
:class:`~aoe_native.results.GradientPlan` to data-parallel training.

PyTorch is optional: ``pip install "aoe-native[torch]"`` brings ``torch==2.13.0``; every
function here raises an ImportError that says so when torch is missing.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

from .graph.torch_export import require_torch
from .gradients.timeline import TimelineError, describe_unmatched
from .results import GradientPlan

__all__ = ["measure_timeline", "apply_plan", "PlannedAllReduce", "watch_buckets", "ddp_has_bucket_cap_list"]


def _torch() -> Any:
    torch = require_torch("aoe_native.torch_ddp")
    import torch.distributed  # noqa: F401  (DDP, process groups)
    return torch


def _trainable(module: Any) -> list[tuple[str, Any]]:
    return [(n, p) for n, p in module.named_parameters() if p.requires_grad]


def measure_timeline(module: Any, loss_fn: Callable[[], Any], steps: int = 5, warmup: int = 1
                     ) -> list[tuple[str, int, float]]:
    """Run ``warmup + steps`` backward passes of ``loss_fn()`` (which runs the forward pass
    and returns a scalar loss) and record when each parameter's gradient is accumulated
    (``register_post_accumulate_grad_hook``), in µs from the call to ``backward``.
    Returns ``(name, bytes, ready_us)`` in ready order, each time the median over ``steps``."""
    torch = _torch()
    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be >= 1 and warmup >= 0, got {steps}, {warmup}")
    params = _trainable(module)
    if not params:
        raise TimelineError("the module has no trainable parameter")
    stamps: dict[str, int] = {}
    samples: dict[str, list[float]] = {n: [] for n, _ in params}
    handles = [p.register_post_accumulate_grad_hook(lambda _p, n=n: stamps.__setitem__(n, time.perf_counter_ns()))
               for n, p in params]
    try:
        for step in range(warmup + steps):
            module.zero_grad(set_to_none=True)
            stamps.clear()
            loss = loss_fn()
            t0 = time.perf_counter_ns()
            loss.backward()
            missing = [n for n, _ in params if n not in stamps]
            if missing:
                raise TimelineError(f"parameter(s) {missing[:5]} got no gradient from loss_fn "
                                    "(unused parameters cannot be planned)")
            if step >= warmup:
                for n, t in stamps.items():
                    samples[n].append((t - t0) / 1e3)
    finally:
        for h in handles:
            h.remove()
        module.zero_grad(set_to_none=True)
    del torch
    med = {n: statistics.median(v) for n, v in samples.items()}
    order = sorted(range(len(params)), key=lambda i: (med[params[i][0]], -i))
    return [(params[i][0], params[i][1].numel() * params[i][1].element_size(), med[params[i][0]]) for i in order]


def _check_module(module: Any, plan: GradientPlan) -> list[tuple[str, Any]]:
    """The module's trainable parameters must be exactly the plan's gradients, with the same
    bytes.  A plan's name may be any of a tied parameter's names (an ONNX export keeps one of
    them); two plan names of the same tensor are an error (its gradient would be reduced twice)."""
    # every name of every trainable parameter, tied ones included (named_parameters() keeps the first)
    by_name = {n: p for n, p in module.named_parameters(remove_duplicate=False) if p.requires_grad}
    frozen = {n for n, p in module.named_parameters(remove_duplicate=False) if not p.requires_grad}
    planned = set(plan.names)
    missing = [n for n in plan.names if n not in by_name]
    covered = {id(by_name[n]) for n in plan.names if n in by_name}
    extra = [n for n, p in _trainable(module) if id(p) not in covered]
    if missing or extra:
        gone = [n for n in missing if n not in frozen]
        now_frozen = [n for n in missing if n in frozen]
        why = describe_unmatched(plan.unmatched, gone + extra)
        raise ValueError("the model's parameters do not match the plan: "
                         + (f"frozen since the plan was made (requires_grad=False) {now_frozen[:5]}, " if now_frozen
                            else "")
                         + f"not in the model {gone[:5]}, not in the plan {extra[:5]}"
                         + (f"; the plan's timeline could not name them: {why}" if why else ""))
    first_name: dict[int, str] = {}
    for n in plan.names:
        other = first_name.setdefault(id(by_name[n]), n)
        if other != n:
            raise ValueError(f"the plan's gradients {other} and {n} are one tied parameter of the model: "
                             "its gradient would be all-reduced twice; keep one of the names in the timeline")
    for n, nbytes in zip(plan.names, plan.gradient_bytes):
        p = by_name[n]
        if p.numel() * p.element_size() != nbytes:
            raise ValueError(f"parameter {n}: {p.numel() * p.element_size()} bytes in the model, {nbytes} in the plan")
    # The buckets must hold every gradient once (an edited plan may not).
    seen: dict[str, int] = {}
    for k, bucket in enumerate(plan.buckets):
        for n in bucket:
            if n in seen:
                raise ValueError(f"the plan puts parameter {n} in buckets {seen[n]} and {k}")
            if n not in planned:
                raise ValueError(f"bucket {k} of the plan names {n}, which is not a gradient of the plan")
            seen[n] = k
    uncovered = [n for n in plan.names if n not in seen]
    if uncovered:
        raise ValueError(f"the plan's buckets leave out {len(uncovered)} gradient(s): {uncovered[:5]}")
    sizes = [sum(by_name[n].numel() * by_name[n].element_size() for n in b) for b in plan.buckets]
    if list(plan.bucket_bytes) != sizes:
        raise ValueError(f"the plan's bucket_bytes {list(plan.bucket_bytes)} do not match its buckets ({sizes})")
    return [(n, by_name[n]) for n in plan.names]


def ddp_has_bucket_cap_list() -> bool:
    """Whether the installed DistributedDataParallel takes ``bucket_cap_mb_list``."""
    import inspect

    torch = _torch()
    return "bucket_cap_mb_list" in inspect.signature(torch.nn.parallel.DistributedDataParallel.__init__).parameters


class PlannedAllReduce:
    """The portable way to apply a plan (no DDP): post-accumulate-grad hooks collect each
    planned bucket; once complete, and once every earlier bucket has been launched (so all
    ranks launch collectives in the same order), the bucket's gradients are flattened and
    all-reduced asynchronously.  Call :meth:`finish` after ``backward`` and before the
    optimizer step: it waits and writes the averaged gradients back.  ``launched`` lists
    each launched bucket's parameter names (for checks)."""

    def __init__(self, module: Any, plan: GradientPlan, process_group: Any = None) -> None:
        self._torch = _torch()
        self.module = module
        self.group = process_group
        ordered = _check_module(module, plan)
        index = {n: i for i, n in enumerate(plan.names)}
        self._buckets = [[ordered[index[n]] for n in b] for b in plan.buckets]
        self._bucket_of = {n: k for k, b in enumerate(plan.buckets) for n in b}
        self.launched: list[list[str]] = []
        self._reset()
        self._handles = [p.register_post_accumulate_grad_hook(lambda _p, n=n: self._ready(n)) for n, p in ordered]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # parameters(), train(), ... of the wrapped module
        if name == "module":
            raise AttributeError(name)
        return getattr(self.module, name)

    def _reset(self) -> None:
        self._left = [len(b) for b in self._buckets]
        self._next = 0
        self._pending: list[tuple[Any, Any, list[tuple[str, Any]]]] = []

    def _ready(self, name: str) -> None:
        k = self._bucket_of[name]
        if self._left[k] == 0:  # a second backward before finish(): its gradients would be lost
            raise RuntimeError(f"parameter {name}'s gradient is ready again before finish(): one backward per "
                               "finish() with method='hooks' (gradient accumulation: method='ddp' with no_sync())")
        self._left[k] -= 1
        while self._next < len(self._buckets) and self._left[self._next] == 0:
            bucket = self._buckets[self._next]
            flat = self._torch.cat([p.grad.reshape(-1) for _, p in bucket])
            work = self._torch.distributed.all_reduce(flat, group=self.group, async_op=True)
            self._pending.append((work, flat, bucket))
            self.launched.append([n for n, _ in bucket])
            self._next += 1

    def finish(self) -> None:
        """Wait for every bucket and write the rank-averaged gradients back."""
        if self._next != len(self._buckets):
            missing = [n for b in self._buckets for n, p in b if p.grad is None]
            self._reset()  # the next step starts clean
            raise RuntimeError(f"only {self._next} of {len(self._buckets)} buckets were ready after backward"
                               + (f"; no gradient for {missing[:5]} (unused in this forward?)" if missing else ""))
        world = self._torch.distributed.get_world_size(self.group)
        for work, flat, bucket in self._pending:
            work.wait()
            flat.div_(world)
            offset = 0
            for _, p in bucket:
                k = p.numel()
                p.grad.copy_(flat[offset:offset + k].view_as(p.grad))
                offset += k
        self._reset()

    def remove(self) -> None:
        for h in self._handles:
            h.remove()


def apply_plan(module: Any, plan: GradientPlan, method: str = "auto", **ddp_kwargs: Any) -> Any:
    """Apply ``plan`` to data-parallel training of ``module`` (process group initialised).

    ``method="ddp"``: ``DistributedDataParallel(module, bucket_cap_mb_list=plan's caps)``:
    caps equal to each bucket's bytes in ready order; DDP rebuilds its buckets in the
    observed ready order after the first iteration, from then on exactly the planned ones.
    ``method="hooks"``: a :class:`PlannedAllReduce` (call ``finish()`` before the optimizer
    step).  ``"auto"``: DDP when the installed PyTorch has ``bucket_cap_mb_list``, else hooks.
    Raises ValueError when the module's parameters do not match the plan."""
    torch = _torch()
    if method not in ("auto", "ddp", "hooks"):
        raise ValueError(f"method must be auto, ddp or hooks, got {method!r}")
    if method == "auto":
        method = "ddp" if ddp_has_bucket_cap_list() else "hooks"
    if method == "hooks":
        return PlannedAllReduce(module, plan, ddp_kwargs.get("process_group"))
    _check_module(module, plan)
    if not ddp_has_bucket_cap_list():
        raise ValueError(f"torch {torch.__version__}: DistributedDataParallel has no bucket_cap_mb_list; "
                         "use method='hooks'")
    return torch.nn.parallel.DistributedDataParallel(module, bucket_cap_mb_list=plan.ddp_bucket_cap_mb_list,
                                                     **ddp_kwargs)


def watch_buckets(ddp_model: Any) -> list[list[str]]:
    """Register a comm hook on a DDP model that all-reduces as DDP does and records the
    parameter names of each bucket it is given, in call order (the returned list grows;
    clear it between iterations)."""
    _torch()
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    names = {id(p): n for n, p in ddp_model.module.named_parameters()}
    seen: list[list[str]] = []

    def hook(state, bucket):  # type: ignore[no-untyped-def]  # DDP checks the name and any annotation
        seen.append([names[id(p)] for p in bucket.parameters()])
        return allreduce_hook(state, bucket)

    ddp_model.register_comm_hook(None, hook)
    return seen
