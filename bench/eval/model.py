"""The byte-level transformer LM the harness quantizes: pre-LayerNorm blocks of separate q/k/v/out and ReLU MLP Linears."""

import math

import torch
from torch import nn


class Block(nn.Module):
    """x + attn(ln1(x)), then + fc2(relu(fc1(ln2(x)))). Separate q/k/v Linears (AWQ's clip skips
    q_proj and k_proj by name) and a ReLU MLP (positively homogeneous, so AWQ may fold fc2's
    scales into fc1, as for OPT)."""

    def __init__(self, d, heads, mlp):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, mlp)
        self.fc2 = nn.Linear(mlp, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        h = self.ln1(x)
        split = lambda y: y.view(b, t, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q_proj(h)), split(self.k_proj(h)), split(self.v_proj(h))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        att = att.masked_fill(mask[:t, :t], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.out_proj(y)
        return x + self.fc2(torch.relu(self.fc1(self.ln2(x))))


class ByteLM(nn.Module):
    """Next-byte model: byte and learned position embeddings, `layers` Blocks, final LayerNorm,
    lm_head Linear to 256 logits. forward(bytes [B, T] int64) -> logits [B, T, 256]."""

    def __init__(self, layers=4, d=256, heads=4, mlp=1024, context=256):
        super().__init__()
        self.config = {"layers": layers, "d": d, "heads": heads, "mlp": mlp, "context": context}
        self.embed = nn.Embedding(256, d)
        self.pos = nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads, mlp) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, 256)
        self.register_buffer("mask", torch.triu(torch.ones(context, context, dtype=torch.bool), 1),
                             persistent=False)
        self.apply(self._init)

    @staticmethod
    def _init(mod):
        if isinstance(mod, (nn.Linear, nn.Embedding)):
            nn.init.normal_(mod.weight, std=0.02)
        if isinstance(mod, nn.Linear) and mod.bias is not None:
            nn.init.zeros_(mod.bias)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.embed(idx) + self.pos(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x, self.mask)
        return self.lm_head(self.ln_f(x))

    def awq_groups(self):
        """AWQ's (previous module, [Linears sharing its output]) groups, in model order."""
        groups = []
        for i in range(len(self.blocks)):
            p = f"blocks.{i}."
            groups += [(p + "ln1", [p + "q_proj", p + "k_proj", p + "v_proj"]),
                       (p + "v_proj", [p + "out_proj"]),  # attention mixes tokens, not channels
                       (p + "ln2", [p + "fc1"]),
                       (p + "fc1", [p + "fc2"])]  # through ReLU
        return groups + [("ln_f", ["lm_head"])]
