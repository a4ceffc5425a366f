"""Data-parallel plumbing for ``spanrl train`` under ``torchrun`` (a no-op with one process).

Every rank reads the same snapshot and plans the same steps, takes every world-th micro-batch of
each step, and the LoRA gradients are summed with one all-reduce (the aggregation weights of a step
already sum to 1 over all ranks). Rank 0 writes.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any


def init_distributed(torch: Any) -> tuple[int, int, Any]:
    """(rank, world, device). torchrun sets WORLD_SIZE/RANK/LOCAL_RANK; gloo on CPU, nccl on GPU."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    device = torch.device(f"cuda:{local}" if cuda else "cpu")
    if world > 1:
        if not torch.distributed.is_initialized():
            torch.distributed.init_process_group(backend="nccl" if cuda else "gloo")
        if cuda:
            torch.cuda.set_device(device)
        else:
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", world))))
    return rank, world, device


def all_reduce_grads(torch: Any, params: list[Any], sums: Any, maxes: Any, world: int) -> None:
    """Sum LoRA grads (one flat buffer) and the step's metric sums over the ranks."""
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    if world == 1:
        return
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    torch.distributed.all_reduce(flat)
    pos = 0
    for p in params:
        p.grad.copy_(flat[pos : pos + p.numel()].view_as(p))
        pos += p.numel()
    all_reduce_cpu(torch, sums, flat.device)
    all_reduce_cpu(torch, maxes, flat.device, op=torch.distributed.ReduceOp.MAX)


def all_reduce_cpu(torch: Any, tensor: Any, device: Any, op: Any = None) -> None:
    """All-reduce a CPU tensor in place; nccl only reduces GPU tensors, so go through ``device``."""
    work = tensor.to(device)
    torch.distributed.all_reduce(work, op=op or torch.distributed.ReduceOp.SUM)
    tensor.copy_(work.cpu())


def weights_digest(torch: Any, model: Any, world: int) -> str:
    """sha256 of the trainable weights; under torchrun every rank must hold the same ones."""
    h = hashlib.sha256()
    for name, p in sorted((n, p) for n, p in model.named_parameters() if p.requires_grad):
        h.update(name.encode())
        h.update(p.detach().float().cpu().contiguous().numpy().tobytes())
    digest = h.hexdigest()
    if world > 1:
        digests: list[Any] = [None] * world
        torch.distributed.all_gather_object(digests, digest)
        if len(set(digests)) != 1:
            raise RuntimeError(f"data-parallel ranks disagree on the adapter weights: {digests}")
    return digest


def finish_distributed(torch: Any, world: int) -> None:
    if world > 1:
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
