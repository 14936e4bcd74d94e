#!/usr/bin/env python3
"""Record gpumem allocation traces from real PyTorch model code, on CPU.

Each workload below runs ordinary model code (a GPT-2-style decoder, a
BERT-style encoder, a ResNet) with random weights and random inputs -- nothing
is downloaded -- under ``torch.profiler`` with ``profile_memory=True``. The
profiler reports every allocation and free that goes through PyTorch's CPU
allocator (pointer, signed size, running total); this script turns them into
a gpumem JSONL trace (``traces/README.md`` and ``docs`` describe the format):

    {"format":"gpumem-trace","version":1}
    {"op":"alloc","id":1,"size":4096,"frames":[{"filename":"traces/record.py","line":88,"name":"forward"},...]}
    {"op":"free","id":1}

Each allocation carries the Python stack it was made from (innermost
first, up to the workload's own function), taken from the profiler's
``with_stack=True`` call tree, so ``gpumem replay`` names the model code
that holds the memory.

An address gets a fresh id at every allocation, so an address reused after a
free is a new allocation. Frees of blocks allocated before recording started
are dropped; blocks still live when recording stops (the model's weights) stay
live, as the replay releases them after its report.

Usage:
    python traces/record.py                 # all four traces into traces/
    python traces/record.py gpt2-train      # just one
    python traces/record.py --out /tmp/t    # somewhere else

Needs only ``torch`` (tested with 2.15.0, CPU).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch._C._profiler import _EventType
from torch.profiler import ProfilerActivity, profile

THREADS = 2
SEED = 0


# --------------------------------------------------------------------------
# GPT-2-style decoder (the GPT-2 architecture: pre-LayerNorm blocks, eager
# causal attention, GELU(tanh) MLP, tied embedding / LM head, GPT-2 init).
# --------------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, n_ctx: int, dropout: float):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        mask = torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool))
        self.register_buffer("bias", mask.view(1, 1, n_ctx, n_ctx), persistent=False)

    def forward(self, x, past=None):
        b, t, c = x.shape
        hd = c // self.n_head
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.n_head, hd).transpose(1, 2)
        k = k.view(b, t, self.n_head, hd).transpose(1, 2)
        v = v.view(b, t, self.n_head, hd).transpose(1, 2)
        if past is not None:
            # The legacy (tuple) KV cache: concatenate, so every step
            # allocates a slightly larger key and value tensor per layer.
            k = torch.cat((past[0], k), dim=2)
            v = torch.cat((past[1], v), dim=2)
        present = (k, v)
        total = k.size(2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~self.bias[:, :, total - t : total, :total], float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y)), present


class GPT2Block(nn.Module):
    def __init__(self, n_embd, n_head, n_ctx, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, n_ctx, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, past=None):
        a, present = self.attn(self.ln_1(x), past)
        x = x + a
        m = self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
        return x + self.dropout(m), present


class GPT2(nn.Module):
    def __init__(self, vocab, n_ctx, n_embd, n_layer, n_head, dropout=0.1):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(n_ctx, n_embd)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(GPT2Block(n_embd, n_head, n_ctx, dropout) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, past=None):
        b, t = idx.shape
        start = 0 if past is None else past[0][0].size(2)
        pos = torch.arange(start, start + t, dtype=torch.long).unsqueeze(0)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        presents = []
        for i, block in enumerate(self.h):
            x, present = block(x, None if past is None else past[i])
            presents.append(present)
        return self.lm_head(self.ln_f(x)), presents


# --------------------------------------------------------------------------
# BERT-style encoder (post-LayerNorm blocks, eager attention with a padding
# mask, GELU(erf) MLP, pooler), as in BERT-base but narrower and shallower.
# --------------------------------------------------------------------------


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask_bias):
        b, t, c = x.shape
        hd = c // self.heads

        def split(y):
            return y.view(b, t, self.heads, hd).permute(0, 2, 1, 3)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd) + mask_bias
        ctx = F.softmax(scores, dim=-1) @ v
        ctx = ctx.permute(0, 2, 1, 3).contiguous().view(b, t, c)
        x = self.attn_norm(x + self.attn_out(ctx))
        return self.out_norm(x + self.output(F.gelu(self.intermediate(x))))


class Bert(nn.Module):
    def __init__(self, vocab, max_pos, hidden, layers, heads, intermediate):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_pos, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.emb_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, intermediate) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, ids, attention_mask):
        b, t = ids.shape
        pos = torch.arange(t, dtype=torch.long).unsqueeze(0)
        x = self.word(ids) + self.position(pos) + self.token_type(torch.zeros_like(ids))
        x = self.emb_norm(x)
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, mask_bias)
        return x, torch.tanh(self.pooler(x[:, 0]))


# --------------------------------------------------------------------------
# ResNet-18 (torchvision's layout: BasicBlock x [2, 2, 2, 2], BatchNorm).
# --------------------------------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        y = F.relu(self.bn1(self.conv1(x)), inplace=True)
        y = self.bn2(self.conv2(y))
        return F.relu(y + identity, inplace=True)


class ResNet18(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, cin = [], 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x)), inplace=True), 3, 2, 1)
        x = self.layers(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# --------------------------------------------------------------------------
# Workloads. Each builds its model inside the recording, so weights,
# optimizer state and the first step's one-time allocations are in the trace.
# --------------------------------------------------------------------------

GPT2_TRAIN = dict(vocab=8192, n_ctx=256, n_embd=256, n_layer=6, n_head=8, dropout=0.1)
GPT2_TRAIN_BATCH, GPT2_TRAIN_SEQ, GPT2_TRAIN_STEPS = 4, 256, 10

GPT2_GEN = dict(vocab=16384, n_ctx=512, n_embd=512, n_layer=8, n_head=8, dropout=0.0)
GPT2_GEN_BATCH, GPT2_GEN_PROMPT, GPT2_GEN_NEW = 4, 64, 128

BERT = dict(vocab=30522, max_pos=512, hidden=512, layers=8, heads=8, intermediate=2048)
BERT_REQUESTS, BERT_MAX_TOKENS = 48, 4096


def bert_batches():
    """(batch, padded length) of each request: a seeded mix, at most 4096 tokens a batch."""
    rng = random.Random(SEED + 1)
    shapes = []
    for _ in range(BERT_REQUESTS):
        t = rng.choice([16, 32, 48, 64, 96, 128, 192, 256, 384, 512])
        b = rng.choice([1, 2, 4, 8, 16, 32, 64])
        while b * t > BERT_MAX_TOKENS:
            b //= 2
        shapes.append((b, t))
    return shapes


RESNET_CLASSES, RESNET_BATCH, RESNET_SIZE, RESNET_STEPS = 100, 32, 112, 20


def gpt2_train():
    model = GPT2(**GPT2_TRAIN)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    for _ in range(GPT2_TRAIN_STEPS):
        tokens = torch.randint(0, GPT2_TRAIN["vocab"], (GPT2_TRAIN_BATCH, GPT2_TRAIN_SEQ + 1))
        x, y = tokens[:, :-1], tokens[:, 1:]
        logits, _ = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))
        del logits
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        del loss
    return model, opt


def gpt2_generate():
    model = GPT2(**GPT2_GEN)
    model.eval()
    with torch.inference_mode():
        idx = torch.randint(0, GPT2_GEN["vocab"], (GPT2_GEN_BATCH, GPT2_GEN_PROMPT))
        logits, past = model(idx)
        out = [idx]
        for _ in range(GPT2_GEN_NEW):
            # Top-k sampling at temperature 0.8, as a chat or completion server would.
            last = logits[:, -1, :] / 0.8
            kth = torch.topk(last, 50).values[:, -1:]
            last = last.masked_fill(last < kth, float("-inf"))
            nxt = torch.multinomial(F.softmax(last, dim=-1), 1)
            out.append(nxt)
            logits, past = model(nxt, past)
        text = torch.cat(out, dim=1)
    return model, text


def bert_infer():
    model = Bert(**BERT)
    model.eval()
    pooled = []
    with torch.inference_mode():
        for b, t in bert_batches():
            ids = torch.randint(0, BERT["vocab"], (b, t))
            # Padded batch: each sequence has its own length, the rest is padding.
            lengths = torch.randint(max(1, t // 4), t + 1, (b,))
            mask = (torch.arange(t)[None, :] < lengths[:, None]).long()
            _, p = model(ids, mask)
            pooled.append(p)
    return model, pooled


def resnet_train():
    model = ResNet18(RESNET_CLASSES)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    for _ in range(RESNET_STEPS):
        images = torch.randn(RESNET_BATCH, 3, RESNET_SIZE, RESNET_SIZE)
        labels = torch.randint(0, RESNET_CLASSES, (RESNET_BATCH,))
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del loss
    return model, opt


WORKLOADS = {
    "gpt2-train": gpt2_train,
    "gpt2-generate": gpt2_generate,
    "bert-infer": bert_infer,
    "resnet18-train": resnet_train,
}
WORKLOADS_BY_FUNCTION = {f.__name__ for f in WORKLOADS.values()}


# --------------------------------------------------------------------------
# Recording and conversion.
# --------------------------------------------------------------------------


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON_EVENTS = (_EventType.PyCall, _EventType.PyCCall)


def frame_file(name):
    """A frame's file as the trace names it: this script as
    ``traces/record.py`` (the profiler names files from their ``sys.path``
    entry, and this script's folder is the first), installed packages as
    the profiler names them (``torch/nn/modules/module.py``)."""
    if name == os.path.basename(__file__):
        return os.path.join("traces", name)
    if os.path.isabs(name) and name.startswith(REPO + os.sep):
        return os.path.relpath(name, REPO)
    return name


def python_stack(node):
    """The Python stack an allocation was made from, innermost first, as
    (file, line, function), ending at the workload's function.

    The profiler's call tree holds one event per Python call (``PyCall``)
    and per call of a built-in (``PyCCall``), each with the frame that made
    the call at the line it was on (``caller``). Those callers, innermost
    first, are the stack. When the innermost Python event is a ``PyCall``
    (the allocation came from an operator such as ``a * b``, which is no
    call the profiler sees), the called function comes first, at its
    ``def`` line: the line within it is not recorded.
    """
    frames = []
    first = True
    parent = node.parent
    while parent is not None:
        kind = parent.typed[0]
        if kind in PYTHON_EVENTS:
            fields = parent.extra_fields
            if first and kind == _EventType.PyCall:
                site = fields.callsite
                frames.append((frame_file(site.file_name), site.line_number, site.function_name))
            first = False
            caller = fields.caller
            frame = (frame_file(caller.file_name), caller.line_number, caller.function_name)
            if not frames or frames[-1] != frame:
                frames.append(frame)
            # Stop at the workload's function: record() and main() above
            # it are the same for every allocation.
            if frame[0] == "traces/record.py" and frame[2] in WORKLOADS_BY_FUNCTION:
                break
        parent = parent.parent
    return frames


def allocation_events(prof):
    """The profiler's allocator events as (time_ns, ptr, signed bytes,
    total, stack): the stack only on allocations."""
    found = []
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.typed[0] == _EventType.Allocation:
            f = node.extra_fields
            if str(f.device) == "cpu" and f.alloc_size != 0:
                frames = python_stack(node) if f.alloc_size > 0 else []
                found.append((node.start_time_ns, f.ptr, f.alloc_size, f.total_allocated, frames))
    found.sort(key=lambda e: e[0])
    return found


def frames_json(frames):
    """``,"frames":[...]`` for an alloc line, or nothing for no stack."""
    if not frames:
        return ""
    listed = [{"filename": file, "line": line, "name": name} for file, line, name in frames]
    return ',"frames":' + json.dumps(listed, separators=(",", ":"))


def to_jsonl(events):
    """Converts allocator events to JSONL lines; returns lines and counts."""
    lines = ['{"format":"gpumem-trace","version":1}']
    live = {}  # address -> (id, size)
    next_id = 1
    live_bytes = peak = 0
    dropped_frees = missed_frees = allocs = frees = with_stack = 0
    for _, ptr, size, _, frames in events:
        if size > 0:
            if ptr in live:
                # The allocator handed out a live address: a free was missed.
                old, old_size = live.pop(ptr)
                lines.append(f'{{"op":"free","id":{old}}}')
                live_bytes -= old_size
                missed_frees += 1
            live[ptr] = (next_id, size)
            lines.append(f'{{"op":"alloc","id":{next_id},"size":{size}{frames_json(frames)}}}')
            next_id += 1
            allocs += 1
            with_stack += bool(frames)
            live_bytes += size
            peak = max(peak, live_bytes)
        else:
            entry = live.pop(ptr, None)
            if entry is None:
                dropped_frees += 1  # allocated before recording started
                continue
            lines.append(f'{{"op":"free","id":{entry[0]}}}')
            frees += 1
            live_bytes -= entry[1]
    stats = dict(
        allocs=allocs,
        frees=frees,
        ops=allocs + frees,
        allocs_with_stack=with_stack,
        live_at_end=len(live),
        live_bytes_at_end=live_bytes,
        peak_live_bytes=peak,
        dropped_frees=dropped_frees,
        missed_frees=missed_frees,
    )
    return lines, stats


def order_mismatches(events):
    """How many events disagree with the allocator's own running total.

    The profiler reports the allocator's total after each event; after
    sorting by time, consecutive totals must differ by exactly the event's
    size. Frees of blocks allocated before recording are reported with
    their size unknown and are skipped by the check.
    """
    bad = 0
    for (_, _, _, before, _), (_, _, size, after, _) in zip(events, events[1:]):
        if after - before != size:
            bad += 1
    return bad


def record(name, out_dir):
    torch.manual_seed(SEED)
    started = time.time()
    with profile(
        activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False, with_stack=True
    ) as prof:
        keep = WORKLOADS[name]()
    seconds = time.time() - started
    events = allocation_events(prof)
    lines, stats = to_jsonl(events)
    stats["order_mismatches"] = order_mismatches(events)
    stats["seconds"] = round(seconds, 1)
    path = os.path.join(out_dir, f"{name}.jsonl.gz")
    raw = ("\n".join(lines) + "\n").encode()
    with open(path, "wb") as f:
        # mtime=0 and no file name in the header: the same events give the same bytes.
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as gz:
            gz.write(raw)
    stats["bytes_gz"] = os.path.getsize(path)
    del keep
    return path, stats


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"workloads to record (default: all of {', '.join(WORKLOADS)})")
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                        help="output folder (default: this script's folder)")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    torch.set_num_threads(THREADS)
    os.makedirs(args.out, exist_ok=True)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", file=sys.stderr)
    for name in args.names or WORKLOADS:
        path, stats = record(name, args.out)
        print(path, " ".join(f"{k}={v}" for k, v in stats.items()), flush=True)


if __name__ == "__main__":
    main()
