"""The fusion search space of a graph, for subgraph tuning (SGAT).

A fused kernel is a group of atoms (:func:`aoe_native.graph.partition.atoms`) that a compiler
emits as one kernel:

- a cube atom (Conv, MatMul, Gemm, BatchMatMul) and a chain of element-wise atoms after it
  (its epilogue);
- a row atom (Softmax, LayerNormalization, Reduce*) or a pooling atom with element-wise atoms
  before it that end in its input (prologue: residual Adds, scales, masks, activations) and, when
  its output has its input's size (Softmax, LayerNorm, a stride-1 pool), after it (epilogue);
- a chain of element-wise atoms of one size;
- two LLM operators CANN runs as one kernel (``partition.LLM_PAIRS``: Add + RmsNorm, (Add)RmsNorm +
  DynamicQuant, SwiGlu + DynamicQuant), the first writing its other outputs too;
- any other atom alone.

Members are connected, and every member but the last (in topological order) is read only inside
the group (GELU's decompositions read x two or three times), so a fused kernel writes one tensor
to GM.  Such a group is convex, and any set of disjoint groups covering the graph is a valid
partition: a group's outside consumers all follow its last member, so no two groups can wait on
each other.

The graph is cut into independent *pieces* wherever no candidate group spans the cut; identical
pieces (BERT's twelve layers) have one canonical key and are solved once.  Each piece is solved
exactly by a dynamic programme over its downsets (sets of atoms closed under predecessors):
a step adds one group whose outside predecessors are all placed.  A piece with too many downsets
(a very wide graph) is solved window by window (:func:`solve_windowed`).  :func:`brute_force`
enumerates every partition for the tests.
"""
from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from typing import Callable, Iterator

from ..ascend.ops import op_table
from .ir import numel
from .partition import Atom, Atoms, llm_pair

__all__ = ["MAX_GROUP", "Piece", "FusionSpace", "fusion_space", "solve_piece", "solve_windowed", "brute_force",
           "DPTooLarge",
           "SPACE_VERSION"]

# Longest group searched: a cube op, GPT-2's 8-node tanh GELU and a bias and residual Add fit.
MAX_GROUP = 12
# Bumped when the fusion rules change, so that subgraph-bank entries of older rules miss.
SPACE_VERSION = 2  # 2: CANN's LLM operator pairs (partition.LLM_PAIRS)


@functools.lru_cache(maxsize=None)
def _row_ops() -> frozenset[str]:
    """Ops that take fused element-wise work around them on the vector unit: row ops and pooling."""
    return frozenset(e["name"] for e in op_table() if e["family"] in ("rows", "pool"))


def _is_rows(a: Atom) -> bool:
    return a.spec is not None and a.spec.op_type in _row_ops()


@dataclass
class Piece:
    """A run of atoms (topological positions `start`..`stop`-1) that no candidate group leaves."""
    index: int
    start: int
    stop: int
    key: str                       # canonical structure, shapes, attributes (sha256)
    groups: list[tuple[int, ...]]  # candidate groups (atom indices), singletons included

    @property
    def atoms(self) -> range:
        return range(self.start, self.stop)


@dataclass
class FusionSpace:
    atoms: Atoms
    groups: list[tuple[int, ...]]  # every candidate group, singletons first
    pieces: list[Piece] = field(default_factory=list)


def _size(a: Atom) -> int | None:
    """The element count a group anchored (or started) at `a` works on; None: `a` fuses with nothing."""
    if a.kind in ("elementwise", "cube"):
        return a.out_numel
    if _is_rows(a):
        return numel(a.spec.inputs[0])
    return None


def _groups_from(ag: Atoms, start: Atom, seen_all: set[tuple[int, ...]]) -> None:
    """Every legal group whose lowest member is `start`, added to `seen_all`: connected sets
    grown through producers and consumers of higher index, with at most one non-element-wise
    atom, every element-wise member of one size."""
    size = _size(start)
    if size is None:
        return
    first = frozenset([start.index])
    stack, seen = [first], {first}
    while stack:
        members = stack.pop()
        if len(members) > 1:
            g = tuple(sorted(members))
            if _legal(ag, g):
                seen_all.add(g)
        if len(members) >= MAX_GROUP:
            continue
        has_anchor = any(ag.atoms[i].kind != "elementwise" for i in members)
        for m in sorted(members):
            for nb in ag.atoms[m].succs + ag.atoms[m].preds:
                if nb <= start.index or nb in members:
                    continue
                c = ag.atoms[nb]
                if c.kind == "elementwise":
                    if c.out_numel != size:
                        continue
                elif has_anchor or _size(c) != size or not (c.kind == "cube" or _is_rows(c)):
                    continue
                grown = members | {nb}
                if grown not in seen and len(seen) < _MAX_SETS:
                    seen.add(grown)
                    stack.append(grown)


# Connected sets visited per lowest member: bounds the enumeration in large element-wise regions.
_MAX_SETS = 4000


def _legal(ag: Atoms, group: tuple[int, ...]) -> bool:
    """One output (only the last member is read outside the group), and the anchor's rules."""
    members = set(group)
    if any(ag.atoms[i].external or not members.issuperset(ag.atoms[i].succs) for i in group[:-1]):
        return False
    anchor = next((ag.atoms[i] for i in group if ag.atoms[i].kind != "elementwise"), None)
    if anchor is None:
        return True
    if anchor.kind == "cube":
        if group[0] != anchor.index:
            return False  # no prologue before a cube op
        for i in group[1:]:  # BN folds into the conv weights only directly after the conv
            a = ag.atoms[i]
            if a.node.op_type == "BatchNormalization" and ag.producer.get(a.node.inputs[0]) != anchor.index:
                return False
        return True
    before = [i for i in group if i < anchor.index]
    after = [i for i in group if i > anchor.index]
    x = anchor.node.inputs[0] if anchor.node.inputs else None
    if before and ag.producer.get(x) not in members:
        return False  # the prologue must end in the row op's data input
    if after and anchor.out_numel != numel(anchor.spec.inputs[0]):
        return False  # a reduction: no epilogue after it
    return True


def _piece_key(ag: Atoms, start: int, stop: int, dtype: str, tag: str) -> str:
    desc = []
    for a in ag.atoms[start:stop]:
        ins = []
        for t in a.inputs:
            p = ag.producer.get(t)
            ins.append(p - start if p is not None and start <= p < stop else ["ext", list(ag.graph.shape(t) or [])])
        spec = None if a.spec is None else [a.spec.op_type, a.spec.inputs, a.spec.attrs]
        leaves = a.external or any(s >= stop for s in a.succs)
        desc.append([a.onnx_types, spec, a.out_shape, ins, leaves])
    text = json.dumps([SPACE_VERSION, dtype, tag, desc], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def fusion_space(ag: Atoms, dtype: str = "float16", tag: str = "") -> FusionSpace:
    """Candidate groups and pieces of `ag`.  `tag` goes into the piece keys (options that
    change what a piece's plan may contain)."""
    singles = [(a.index,) for a in ag.atoms]
    found: set[tuple[int, ...]] = set()
    for a in ag.atoms:
        _groups_from(ag, a, found)
        found.update((p, a.index) for p in a.preds if llm_pair(ag, ag.atoms[p], a))
    multi = sorted(found)
    space = FusionSpace(ag, singles + multi)
    # Cut between positions i and i+1 where no group spans.
    n = len(ag.atoms)
    spans = [0] * (n + 1)
    for g in multi:
        spans[g[0]] += 1
        spans[g[-1]] -= 1
    open_ = 0
    start = 0
    for i in range(n):
        open_ += spans[i]
        if open_ == 0:
            space.pieces.append(Piece(len(space.pieces), start, i + 1, _piece_key(ag, start, i + 1, dtype, tag), []))
            start = i + 1
    piece_at = {}
    for p in space.pieces:
        for i in p.atoms:
            piece_at[i] = p
    for g in space.groups:
        piece_at[g[0]].groups.append(g)
    return space


class DPTooLarge(Exception):
    """The piece has more downsets than the exact search may visit."""


def solve_piece(piece: Piece, ag: Atoms, cost: Callable[[tuple[int, ...]], float],
                max_states: int = 200_000) -> tuple[float, list[tuple[int, ...]]]:
    """The cheapest partition of `piece` into its candidate groups: exact DP over downsets.

    cost(group) is the group's time (inf: not a valid kernel).  Returns (total, groups in
    placement order).  Raises :class:`DPTooLarge` beyond `max_states` downsets."""
    base = piece.start
    n = piece.stop - piece.start
    full = (1 << n) - 1
    cands = []
    for g in piece.groups:
        c = cost(g)
        if c == float("inf"):
            continue
        mask = 0
        for i in g:
            mask |= 1 << (i - base)
        preds = 0
        for i in g:
            for p in ag.atoms[i].preds:
                if base <= p < piece.stop and p not in g:
                    preds |= 1 << (p - base)
        cands.append((mask, preds, c, g))
    # Groups under each of their members: a downset's next group must contain an atom all of
    # whose predecessors are placed (a "ready" atom), so only the ready atoms' groups are tried.
    by_low: dict[int, list] = {}
    for cand in cands:
        for i in cand[3]:
            by_low.setdefault(i - base, []).append(cand)
    best: dict[int, tuple[float, int, tuple[int, ...] | None]] = {full: (0.0, -1, None)}
    # Iterative DFS with memo (recursion would overflow on long pieces).
    pred_mask = [0] * n
    for i in range(n):
        for p in ag.atoms[base + i].preds:
            if base <= p < piece.stop:
                pred_mask[i] |= 1 << (p - base)
    stack = [0]
    while stack:
        s = stack[-1]
        if s in best:
            stack.pop()
            continue
        if len(best) > max_states:
            raise DPTooLarge(f"piece {piece.index} ({n} atoms) has more than {max_states} downsets")
        moves = []
        pending = []
        seen_groups = set()
        for i in range(n):
            if s >> i & 1 or (pred_mask[i] & ~s):
                continue
            for cand in by_low.get(i, ()):
                mask, preds, c, g = cand
                if mask & s or (preds & ~s) or g in seen_groups:
                    continue
                seen_groups.add(g)
                nxt = s | mask
                moves.append((c, nxt, g))
                if nxt not in best:
                    pending.append(nxt)
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        choice = min(((c + best[nxt][0], idx, nxt, g) for idx, (c, nxt, g) in enumerate(moves)
                      if nxt in best), default=None)
        best[s] = (float("inf"), -1, None) if choice is None else (choice[0], choice[2], choice[3])
    total, groups, s = best[0][0], [], 0
    while s != full and best[s][2] is not None:
        groups.append(best[s][2])
        s = best[s][1]
    return total, groups


def solve_windowed(piece: Piece, ag: Atoms, cost: Callable[[tuple[int, ...]], float], window: int = 24,
                   max_states: int = 200_000) -> tuple[float, list[tuple[int, ...]]]:
    """The budgeted search for a piece too large for the exact DP: consecutive windows of
    `window` atoms in topological order, each solved exactly with the groups inside it (groups
    across a window boundary are given up); a window still too large is halved.  Windows are
    placed in order, so the result is a valid partition."""
    total, groups = 0.0, []
    for lo in range(piece.start, piece.stop, window):
        hi = min(lo + window, piece.stop)
        sub = Piece(piece.index, lo, hi, piece.key, [g for g in piece.groups if lo <= g[0] and g[-1] < hi])
        try:
            t, gs = solve_piece(sub, ag, cost, max_states)
        except DPTooLarge:
            t, gs = solve_windowed(sub, ag, cost, max(1, window // 2), max_states)
        total += t
        groups += gs
    return total, groups


def brute_force(piece: Piece, ag: Atoms, cost: Callable[[tuple[int, ...]], float]) -> float:
    """The cheapest partition of `piece` by enumerating every set partition of its atoms
    (exponential; for tests on small pieces).  Blocks that are not candidate groups are
    refused; the partition must be acyclic between blocks."""
    atoms = list(piece.atoms)
    valid = {g: cost(g) for g in piece.groups}
    best = float("inf")

    def blocks(rest: list[int]) -> Iterator[list[tuple[int, ...]]]:
        if not rest:
            yield []
            return
        first, others = rest[0], rest[1:]
        for r in range(1 << len(others)):
            block = tuple(sorted([first] + [x for k, x in enumerate(others) if r >> k & 1]))
            if block not in valid:
                continue
            remaining = [x for k, x in enumerate(others) if not r >> k & 1]
            for tail in blocks(remaining):
                yield [block] + tail

    for part in blocks(atoms):
        if _acyclic(ag, part):
            best = min(best, sum(valid[b] for b in part))
    return best


def _acyclic(ag: Atoms, part: list[tuple[int, ...]]) -> bool:
    block_of = {i: k for k, b in enumerate(part) for i in b}
    edges = {k: set() for k in range(len(part))}
    for k, b in enumerate(part):
        for i in b:
            for p in ag.atoms[i].preds:
                if p in block_of and block_of[p] != k:
                    edges[k].add(block_of[p])
    try:
        tuple(TopologicalSorter(edges).static_order())
    except CycleError:
        return False
    return True
