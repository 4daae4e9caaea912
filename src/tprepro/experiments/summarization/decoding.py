"""Batched beam search with a length penalty and optional n-gram blocking.

Works with any model of the encode / decode / new_cache interface
(models/transformer.py). With `use_cache` each step feeds only the newest token
through the decoder's K/V caches, reordered as beams are re-ranked; without it each
step re-runs the decoder over the whole prefix. Both give the same summaries.

Scores: a hypothesis's summed log-probability divided by the GNMT length penalty
((5 + length) / 6) ** alpha (alpha 0: no normalisation). A hypothesis ends when its
end symbol ranks among the top `beam_size` candidates of a step; an example is done
once `beam_size` hypotheses have ended (or at `max_len`). Beam size 1 is greedy decoding.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def length_penalty(length: int, alpha: float) -> float:
    return ((5.0 + length) / 6.0) ** alpha


def _blocked_tokens(prefix: list[int], n: int) -> list[int]:
    """Tokens that would repeat an n-gram already in `prefix`."""
    if n < 1 or len(prefix) < n - 1:
        return []
    tail = tuple(prefix[len(prefix) - (n - 1):]) if n > 1 else ()
    return [prefix[i + n - 1] for i in range(len(prefix) - n + 1) if tuple(prefix[i : i + n - 1]) == tail]


def _reorder(cache, rows: Tensor) -> None:
    """Keep cache rows `rows` (beam re-ranking) in every layer's self- and cross-attention cache."""
    for kv in [*cache.self_attn, *cache.cross_attn]:
        if kv.k is not None:
            kv.k, kv.v = kv.k.index_select(0, rows), kv.v.index_select(0, rows)


def beam_search(model: nn.Module, src: Tensor, bos_id: int, eos_id: int, max_len: int, beam_size: int = 4,
                alpha: float = 0.6, no_repeat_ngram: int = 0, use_cache: bool = True) -> list[list[int]]:
    """Decode src [B, S] into one token list per example (end symbol excluded)."""
    batch, k = src.size(0), beam_size
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            memory, src_mask = model.encode(src)  # [B, S, D], [B, S]
            memory = memory.repeat_interleave(k, dim=0)  # [B*K, S, D]
            src_mask = src_mask.repeat_interleave(k, dim=0)  # [B*K, S]
            use_cache = use_cache and model.supports_cache
            cache = model.new_cache() if use_cache else None
            tokens = torch.full((batch * k, 1), bos_id, dtype=torch.long, device=src.device)  # [B*K, 1]
            scores = torch.zeros(batch, k, device=src.device)  # [B, K] summed log-probabilities
            scores[:, 1:] = float("-inf")  # all beams start equal: expand only the first
            finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(batch)]
            done = [False] * batch
            for step in range(max_len):
                step_in = tokens[:, -1:] if use_cache else tokens  # [B*K, 1] or [B*K, t]
                logits = model.decode(step_in, memory, src_mask, cache)[:, -1]  # [B*K, V]
                log_probs = logits.float().log_softmax(dim=-1)  # [B*K, V]
                vocab = log_probs.size(-1)
                if no_repeat_ngram:
                    for row, prefix in enumerate(tokens[:, 1:].tolist()):
                        blocked = _blocked_tokens(prefix, no_repeat_ngram)
                        if blocked:
                            log_probs[row, blocked] = float("-inf")
                candidates = (scores[:, :, None] + log_probs.view(batch, k, vocab)).view(batch, k * vocab)
                top_scores, top_ids = candidates.topk(2 * k, dim=-1)  # [B, 2K]
                beam_of, token_of = top_ids // vocab, top_ids % vocab  # [B, 2K]
                keep_rows, keep_tokens, keep_scores = [], [], []
                for b in range(batch):
                    chosen = []
                    for rank in range(2 * k):
                        score, beam, token = float(top_scores[b, rank]), int(beam_of[b, rank]), int(token_of[b, rank])
                        if token == eos_id:
                            if rank < k and not done[b] and score > float("-inf"):
                                hypothesis = tokens[b * k + beam, 1:].tolist()
                                finished[b].append((score / length_penalty(len(hypothesis) + 1, alpha), hypothesis))
                            continue
                        chosen.append((b * k + beam, token, score))
                        if len(chosen) == k:
                            break
                    while len(chosen) < k:  # every candidate ended: pad with dead beams
                        chosen.append((b * k, eos_id, float("-inf")))
                    if len(finished[b]) >= k:
                        done[b] = True
                    for row, token, score in chosen:
                        keep_rows.append(row)
                        keep_tokens.append(token)
                        keep_scores.append(score if not done[b] else float("-inf"))
                if all(done):
                    break
                rows = torch.tensor(keep_rows, device=src.device)  # [B*K]
                tokens = torch.cat([tokens.index_select(0, rows),
                                    torch.tensor(keep_tokens, device=src.device)[:, None]], dim=1)  # [B*K, t+1]
                scores = torch.tensor(keep_scores, device=src.device).view(batch, k)  # [B, K]
                if cache is not None:
                    _reorder(cache, rows)
            results = []
            for b in range(batch):
                pool = list(finished[b])
                if not done[b]:  # max_len reached: the live beams compete too
                    for beam in range(k):
                        score = float(scores[b, beam])
                        if score > float("-inf"):
                            hypothesis = tokens[b * k + beam, 1:].tolist()
                            pool.append((score / length_penalty(len(hypothesis), alpha), hypothesis))
                results.append(max(pool, key=lambda item: item[0])[1] if pool else [])
            return results
    finally:
        model.train(was_training)


def summarize_documents(model: nn.Module, codec, documents: list[str], batch_size: int, max_len: int,
                        beam_size: int, alpha: float, no_repeat_ngram: int = 0) -> list[str]:
    """Summaries of `documents`, decoded in length-sorted batches (little padding)."""
    device = next(model.parameters()).device
    order = sorted(range(len(documents)), key=lambda i: len(documents[i]))
    summaries = [""] * len(documents)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        src = codec.encode_documents([documents[i] for i in chunk]).to(device)  # [B, S]
        decoded = beam_search(model, src, codec.bos_id, codec.eos_id, max_len, beam_size, alpha, no_repeat_ngram)
        for i, ids in zip(chunk, decoded):
            summaries[i] = codec.decode(ids)
    return summaries
