"""Choosing the next token from the logits: greedy, or sampling with temperature, top-k,
top-p (nucleus) and min-p, after repetition, frequency and presence penalties."""

import dataclasses

import numpy as np


@dataclasses.dataclass
class SamplingParams:
    max_tokens: int = 256
    temperature: float = 0.0  # 0: greedy
    top_k: int = 0  # 0: all tokens
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0  # > 1 discourages tokens already in prompt or output
    frequency_penalty: float = 0.0  # minus this times a token's count in the output
    presence_penalty: float = 0.0  # minus this once a token is in the output
    seed: int = None
    stop: list = None  # strings
    stop_token_ids: list = None
    logprobs: bool = False
    ignore_eos: bool = False  # generate max_tokens whatever comes (benchmarks)

    def check(self):
        if int(self.max_tokens) < 1:
            raise ValueError(f"max_tokens must be at least 1, not {self.max_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must not be negative, not {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], not {self.top_p}")
        if not 0.0 <= self.min_p <= 1.0:
            raise ValueError(f"min_p must be in [0, 1], not {self.min_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must not be negative, not {self.top_k}")
        if self.repetition_penalty <= 0:
            raise ValueError(f"repetition_penalty must be positive, not "
                             f"{self.repetition_penalty}")
        if self.seed is not None and not 0 <= int(self.seed) < 2**64:
            raise ValueError(f"seed must be an integer in [0, 2**64), not {self.seed}")
        if isinstance(self.stop, str):
            self.stop = [self.stop]


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


class Sampler:
    def __init__(self, params, eos_token_ids):
        params.check()
        self.p = params
        self.rng = np.random.default_rng(params.seed)
        eos = set() if params.ignore_eos else set(eos_token_ids)
        self.stop_ids = eos | set(params.stop_token_ids or [])

    def _penalize(self, logits, prompt, generated):
        p = self.p
        if p.repetition_penalty != 1.0:
            seen = np.unique(np.asarray(list(prompt) + list(generated), dtype=np.int64))
            v = logits[seen]
            logits[seen] = np.where(v > 0, v / p.repetition_penalty, v * p.repetition_penalty)
        if generated and (p.frequency_penalty or p.presence_penalty):
            ids, counts = np.unique(np.asarray(generated, dtype=np.int64), return_counts=True)
            logits[ids] -= p.frequency_penalty * counts + p.presence_penalty
        return logits

    def pick(self, logits, prompt, generated):
        """(token id, its log-probability under the model or None)."""
        p = self.p
        raw = logits
        logits = self._penalize(np.array(logits, dtype=np.float32), prompt, generated)
        if p.temperature == 0.0:
            token = int(np.argmax(logits))
        else:
            token = self._sample(logits.astype(np.float64) / p.temperature)
        logprob = float(log_softmax(raw)[token]) if p.logprobs else None
        return token, logprob

    def _sample(self, scaled):
        p = self.p
        order = np.argsort(-scaled, kind="stable")
        if p.top_k:
            order = order[:p.top_k]
        z = scaled[order]
        probs = np.exp(z - z[0])
        probs /= probs.sum()
        keep = len(order)
        if p.top_p < 1.0:
            # The smallest prefix whose mass reaches top_p (at least one token).
            keep = min(keep, int(np.searchsorted(np.cumsum(probs), p.top_p)) + 1)
        if p.min_p > 0.0:
            keep = min(keep, max(1, int((probs >= p.min_p * probs[0]).sum())))
        probs = probs[:keep] / probs[:keep].sum()
        return int(order[self.rng.choice(keep, p=probs)])
