"""Integrated gradients of the chosen span's start and end scores, per question and context token.

Method (layer integrated gradients over the model's input word embeddings, as captum's
``LayerIntegratedGradients`` computes them but batched (:func:`_integrate`), so that it works for
every architecture the registry loads: BERT, MPNet, XLM-R-vocabulary BERT):

* the targets are the start logit at the span's first token and the end logit at its last token
  (the engine's span score is the product of their softmaxes; logits add, so the two attributions
  add into one ``score`` per token);
* **our choice of baseline**: each part is measured against removing that part with the other
  held fixed. Question tokens are attributed against the same window with every question token
  replaced by the pad token (the context kept), as Mudrakarta et al. (2018, "Did the model
  understand the question?") attribute QA models' question words against an empty question;
  context tokens against the window with every context token padded (the question kept). Special
  tokens ([CLS], [SEP]) and the positions are never replaced. Completeness holds per part: the
  question's attributions sum to start(x) - start(question padded), and so on, up to the
  integration error (captum's convergence delta, kept in :attr:`Attribution.deltas`); with a
  ``tolerance``, :func:`explain` doubles the steps until that error is within it (:func:`step_plan`);
* the weights run in float32 (a copy when they are stored in lower precision: :func:`float32_model`);
* the answer is the torch weights' own (its windows forwarded here, decoded by core.qa.decode as
  the engine decodes), so the span explained is the span these weights choose even when the
  engine answers with another backend. A context longer than one window is read in the engine's
  windows; the window that holds the span with the highest start + end logit is explained, and
  tokens outside it get no score (:attr:`Attribution.window` says which characters it covers).
  A question longer than the engine's question budget (64 tokens) is cut as the engine cuts it;
  its tokens past the cut are not in the window and get no score.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from core.qa.decode import best_spans, window_candidates
from core.qa.features import answer_positions, question_budget, truncate_question
from core.types import Span

QUESTION, CONTEXT = "question", "context"
DEFAULT_STEPS = 50
MAX_STEPS = 1000
FIRST_STEPS = 8        # the first try of an adaptive run (step_plan)
# rows x tokens of one forward pass of the integration: its activations are kept for the
# backward passes, so this bounds the memory an attribution adds; it is also how often a
# progress callback (and so a cancel) is heard
CHUNK_TOKENS = 1024

Progress = Callable[[str, int, int], None]


class Cancelled(Exception):
    """Raised by a progress callback to stop an attribution where it is."""


@dataclass(frozen=True)
class TokenScore:
    """One token: the tokenizer's piece, the characters it covers in its ``segment`` (the question
    or the context, offsets into the text as given), and its attribution to the span's start and
    end logits. ``score`` is their sum."""

    token: str
    segment: str
    start: int
    end: int
    score_start: float
    score_end: float

    @property
    def score(self) -> float:
        return self.score_start + self.score_end

    def as_dict(self, text: str) -> dict:
        return {"token": self.token, "text": text[self.start:self.end], "segment": self.segment,
                "start": self.start, "end": self.end, "score": round(self.score, 6),
                "score_start": round(self.score_start, 6), "score_end": round(self.score_end, 6)}


@dataclass
class Attribution:
    """The answer of one model to one (question, context) and each token's attribution."""

    question: str
    context: str
    answer: Span | None
    tokens: list[TokenScore] = field(default_factory=list)
    # (start, end) characters of the context inside the explained window
    window: tuple[int, int] = (0, 0)
    # per part and target: the target's change from the baseline, and the convergence delta
    # (sum of attributions minus that change): {"question": {"start": {...}, "end": {...}}, ...}
    deltas: dict = field(default_factory=dict)
    n_steps: int = DEFAULT_STEPS

    def integration_error(self) -> float | None:
        """The largest |convergence delta| / |change| over the four (part, target) integrals: how
        far the attributions miss completeness (0.01 = 1 %); more steps lower it. None if none ran.

        >>> Attribution("q", "c", None, deltas={"question": {"start": {"change": 4.0, "delta": 0.2}},
        ...                                    "context": {"end": {"change": -2.0, "delta": 0.02}}}).integration_error()
        0.05
        """
        return integration_error(self.deltas)

    def part(self, segment: str) -> list[TokenScore]:
        return [t for t in self.tokens if t.segment == segment]

    def text_of(self, segment: str) -> str:
        return self.question if segment == QUESTION else self.context

    def as_dict(self) -> dict:
        a = self.answer
        return {
            "question": self.question,
            "answer": None if a is None else {"text": a.text, "start": a.start, "end": a.end,
                                               "score": round(float(a.score), 6)},
            "window": list(self.window),
            "tokens": [t.as_dict(self.text_of(t.segment)) for t in self.tokens],
            "completeness": self.deltas,
            "n_steps": self.n_steps,
        }


def integration_error(deltas: dict) -> float | None:
    """The largest |delta| / |change| of ``deltas`` (:attr:`Attribution.deltas`), None if empty."""
    ratios = [abs(d["delta"]) / abs(d["change"]) for part in deltas.values() for d in part.values() if d["change"]]
    return max(ratios) if ratios else None


def _encode(tokenizer, question: str, context: str, max_length: int, stride: int):
    """The engine's windows (core.qa.features.build_windows' tokenisation) with offsets for both
    parts; returns (encoding, where the stripped question begins in ``question``, whether it was
    tokenised whole (not cut), the question's sequence id)."""
    budget = question_budget(max_length, stride, tokenizer.num_special_tokens_to_add(pair=True))
    stripped = question.strip()
    lead = len(question) - len(question.lstrip())
    asked = truncate_question(tokenizer, stripped, budget)
    pad_right = tokenizer.padding_side == "right"
    enc = tokenizer(asked if pad_right else context, context if pad_right else asked,
                    truncation="only_second" if pad_right else "only_first", max_length=max_length,
                    stride=stride, return_overflowing_tokens=True, return_offsets_mapping=True, padding=False)
    return enc, lead, asked == stripped, (0 if pad_right else 1)


def _inputs(enc, i: int, tokenizer, device):
    import torch

    keep = [k for k in tokenizer.model_input_names if k in enc and k != "input_ids"]
    ids = torch.tensor([enc["input_ids"][i]], device=device)
    extra = {k: torch.tensor([enc[k][i]], device=device) for k in keep}
    return ids, extra


LOADING = "loading the torch weights"   # the phase progress names while an engine's weights load


def float32_model(engine):
    """The engine's torch model in float32: itself, or a float32 copy made once per engine when
    its weights are stored in lower precision (e5-qa-multi's fp16 folder): integrated gradients
    summed in fp16 miss completeness by 10 % and fp16 runs three times slower on a CPU."""
    import copy

    import torch

    model = engine.model
    if next(model.parameters()).dtype == torch.float32:
        return model
    cached = getattr(engine, "_explain_float32", None)
    if cached is None:
        cached = copy.deepcopy(model).float().eval()
        engine._explain_float32 = cached
    return cached


def step_plan(budget: int, tolerance: float | None, first: int = FIRST_STEPS) -> list[int]:
    """The step counts :func:`explain` tries in turn: ``[budget]`` without a tolerance; else
    ``first`` doubled until the budget (the budget last when doubling misses it).

    >>> step_plan(50, None), step_plan(32, 0.05), step_plan(20, 0.05), step_plan(4, 0.05)
    ([50], [8, 16, 32], [8, 16, 20], [4])
    """
    if tolerance is None or budget <= first:
        return [budget]
    plan = [first]
    while plan[-1] * 2 < budget:
        plan.append(plan[-1] * 2)
    return plan + [budget]


def explain(engine, question: str, context: str, span: tuple[int, int] | None = None,
            n_steps: int = DEFAULT_STEPS, *, tolerance: float | None = None, quadrature_name: str = "gausslegendre",
            progress: Progress | None = None) -> Attribution:
    """Attributions of ``engine``'s torch weights for ``span`` (character offsets into
    ``context``; default: the span the weights choose) on (``question``, ``context``).

    ``engine``: a core.qa.engine.QAEngine (its ``model``, ``tokenizer`` and window shape).
    ``n_steps``: the integration steps, or with ``tolerance`` (e.g. 0.05) the step budget: the
    steps of :func:`step_plan` are tried in turn until the integration error
    (:meth:`Attribution.integration_error`) is within the tolerance or the budget is spent.
    ``progress(phase, done, total)`` is called as the work advances (``phase``: "reading" the
    windows, "integrating" at ``n`` steps); an exception it raises (:class:`Cancelled`) stops the
    work there.
    QAInputError for a pair the engine refuses; ValueError for a span outside the context or
    not inside one window.
    """
    import torch

    from core.qa.engine import validate_pair

    validate_pair(question, context)
    if not isinstance(n_steps, int) or isinstance(n_steps, bool) or not 1 <= n_steps <= MAX_STEPS:
        raise ValueError(f"n_steps must be a whole number in 1..{MAX_STEPS}, got {n_steps!r}")
    if tolerance is not None and not 0 < tolerance < 1:
        raise ValueError(f"tolerance must be a fraction between 0 and 1, got {tolerance!r}")
    quadrature(quadrature_name, 1)   # an unknown rule fails before any work
    # an engine answering from its graph loads its torch weights first (seconds, and the model
    # classes' import the first time): said, and a cancel asked meanwhile is heard right after
    loading = progress is not None and not getattr(engine, "holds_torch", True)
    if loading:
        progress(LOADING, 0, 1)
    model, tok = float32_model(engine), engine.tokenizer
    if loading:
        progress(LOADING, 1, 1)
    device = next(model.parameters()).device
    max_length, stride = engine._window_shape(engine.is_long(context))
    enc, lead, whole, q_seq = _encode(tok, question, context, max_length, stride)
    c_seq = 1 - q_seq
    n_windows = len(enc["input_ids"])
    seqs = [enc.sequence_ids(i) for i in range(n_windows)]
    ctx_offsets = [[tuple(o) if s == c_seq else None for o, s in zip(enc["offset_mapping"][i], seqs[i])]
                   for i in range(n_windows)]
    with torch.no_grad():
        logits = []
        for i in range(n_windows):
            ids, extra = _inputs(enc, i, tok, device)
            out = model(input_ids=ids, **extra)
            logits.append((out.start_logits[0].float().cpu().numpy(), out.end_logits[0].float().cpu().numpy()))
            if progress is not None:
                progress("reading", i + 1, n_windows)
    answer = _chosen_span(engine, context, logits, ctx_offsets, span)
    if answer is None:
        return Attribution(question, context, None, n_steps=n_steps)
    w, ps, pe = _best_window(ctx_offsets, logits, answer)
    ids, extra = _inputs(enc, w, tok, device)
    seq = seqs[w]

    threads = getattr(engine.settings, "threads", None)
    for steps in step_plan(n_steps, tolerance):
        tick = None if progress is None else (lambda done, total, n=steps: progress(f"integrating at {n} steps",
                                                                                   done, total))
        scores, deltas = _integrate(model, tok, ids, extra, seq, (q_seq, c_seq), (ps, pe), steps,
                                    quadrature_name, tick, threads)
        error = integration_error(deltas)
        if tolerance is None or error is None or error <= tolerance:
            break
    pieces = tok.convert_ids_to_tokens(enc["input_ids"][w])
    tokens = []
    for j, (sid, (a, b)) in enumerate(zip(seq, enc["offset_mapping"][w])):
        if sid is None or b <= a:
            continue
        part = QUESTION if sid == q_seq else CONTEXT
        if part == QUESTION and not whole:
            continue   # offsets into the cut (decoded) question, not into the question as given
        shift = lead if part == QUESTION else 0
        tokens.append(TokenScore(pieces[j], part, a + shift, b + shift,
                                 scores[(part, "start")][j], scores[(part, "end")][j]))
    spans = [o for o in ctx_offsets[w] if o is not None]
    window = (spans[0][0], spans[-1][1]) if spans else (0, 0)
    return Attribution(question, context, answer, tokens, window, deltas, steps)


def quadrature(name: str, n: int) -> tuple[list[float], list[float]]:
    """(points in (0, 1], weights) of an n-point rule for the integral over the path from the
    baseline (0) to the input (1): ``gausslegendre`` (captum's default, exact for polynomials of
    degree 2n-1) or ``riemann_right`` (n equal steps ending at the input; one step is gradient x
    input).

    >>> quadrature("riemann_right", 2)
    ([0.5, 1.0], [0.5, 0.5])
    >>> [round(x, 4) for x in quadrature("gausslegendre", 2)[0]]
    [0.2113, 0.7887]
    """
    if name == "gausslegendre":
        import numpy as np

        nodes, weights = np.polynomial.legendre.leggauss(n)
        return (0.5 * (1 + nodes)).tolist(), (0.5 * weights).tolist()
    if name == "riemann_right":
        return [(k + 1) / n for k in range(n)], [1.0 / n] * n
    raise ValueError(f"unknown quadrature {name!r}: gausslegendre or riemann_right")


def _integrate(model, tok, ids, extra: dict, seq: list, sequences: tuple[int, int], positions: tuple[int, int],
               n_steps: int, quadrature_name: str = "gausslegendre", progress: Progress | None = None,
               threads: int | None = None) -> tuple[dict, dict]:
    """Integrated gradients of the start logit at ``positions[0]`` and the end logit at
    ``positions[1]``, over the question's and then the context's tokens (each against a baseline
    with that part's tokens padded): ({(part, start|end): score per token}, {part: deltas}).

    Layer integrated gradients over the input word embeddings, as captum's
    ``LayerIntegratedGradients`` computes them (a forward hook swaps the embedding layer's output
    for the point on the path, so positions and token types stay the input's), but batched: every
    point of both parts' paths is one row, a chunk of rows is one forward pass, and the start and
    the end logit share it (two backward passes through the same graph). Captum runs one forward
    and one backward per (part, target) integral: four times the forward passes and twice the
    backward passes for the same numbers (tests/test_explain.py compares the two).
    """
    import torch

    from core.qa.threads import Slot

    q_seq, c_seq = sequences
    ps, pe = positions
    alphas, weights = quadrature(quadrature_name, n_steps)
    embed = model.get_input_embeddings()
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.unk_token_id
    parts = []
    for part, part_seq in ((QUESTION, q_seq), (CONTEXT, c_seq)):
        baseline = ids.clone()
        for j, sid in enumerate(seq):
            if sid == part_seq:
                baseline[0, j] = pad
        parts.append((part, baseline))
    with torch.no_grad():
        x_emb = embed(ids)[0]
        base_embs = [embed(b)[0] for _, b in parts]
    rows = [(p, a, w) for p in range(len(parts)) for a, w in zip(alphas, weights)]
    per_chunk = max(1, CHUNK_TOKENS // ids.shape[1])
    grads = {(p, which): torch.zeros_like(x_emb) for p in range(len(parts)) for which in (0, 1)}
    swap: dict = {}

    def hook(module, inputs, output):   # the point on the path instead of the input's embeddings
        return swap["emb"]

    handle = embed.register_forward_hook(hook)
    old_threads = torch.get_num_threads()
    try:
        with Slot(threads) as slot:
            for lo in range(0, len(rows), per_chunk):
                chunk = rows[lo:lo + per_chunk]
                n = len(chunk)
                wanted = slot.threads()
                if torch.get_num_threads() != wanted:
                    torch.set_num_threads(wanted)
                alpha = torch.tensor([a for _, a, _ in chunk], dtype=x_emb.dtype).view(n, 1, 1)
                start_emb = torch.stack([base_embs[p] for p, _, _ in chunk])
                point = (start_emb + alpha * (x_emb.unsqueeze(0) - start_emb)).requires_grad_(True)
                swap["emb"] = point
                with torch.enable_grad():
                    out = model(input_ids=ids.expand(n, -1), **{k: v.expand(n, -1) for k, v in extra.items()})
                    g_start, = torch.autograd.grad(out.start_logits[:, ps].float().sum(), point, retain_graph=True)
                    g_end, = torch.autograd.grad(out.end_logits[:, pe].float().sum(), point)
                for r, (p, _, w) in enumerate(chunk):
                    grads[(p, 0)] += w * g_start[r]
                    grads[(p, 1)] += w * g_end[r]
                del out, g_start, g_end, point
                if progress is not None:
                    progress(lo + n, len(rows))
    finally:
        handle.remove()
        swap.clear()
        if torch.get_num_threads() != old_threads:
            torch.set_num_threads(old_threads)
    return _scores_and_deltas(model, ids, extra, parts, (x_emb, base_embs), grads, positions)


def _scores_and_deltas(model, ids, extra: dict, parts: list, embeddings: tuple, grads: dict,
                       positions: tuple[int, int]) -> tuple[dict, dict]:
    """Each part's attributions (its input's difference from its baseline times the integrated
    gradient) and completeness (the target's change from the baseline, and the attributions'
    sum minus that change)."""
    import torch

    x_emb, base_embs = embeddings
    scores: dict[tuple[str, str], list[float]] = {}
    deltas: dict = {}
    with torch.no_grad():
        full = model(input_ids=ids, **extra)
        for p, (part, baseline) in enumerate(parts):
            empty = model(input_ids=baseline, **extra)
            for name, which, pos in (("start", 0, positions[0]), ("end", 1, positions[1])):
                attr = ((x_emb - base_embs[p]) * grads[(p, which)]).sum(-1)
                scores[(part, name)] = attr.float().cpu().tolist()
                logits = "start_logits" if which == 0 else "end_logits"
                change = float(getattr(full, logits)[0, pos] - getattr(empty, logits)[0, pos])
                deltas.setdefault(part, {})[name] = {"change": round(change, 6),
                                                     "delta": round(float(attr.sum()) - change, 6)}
    return scores, deltas


def _chosen_span(engine, context: str, logits: list, ctx_offsets: list, span: tuple[int, int] | None):
    """The span to explain: ``span`` checked, or the one the weights choose (None: no span)."""
    if span is None:
        s = engine.settings
        cands = [c for (sl, el), offs in zip(logits, ctx_offsets)
                 for c in window_candidates(sl, el, offs, s.top_k, s.max_answer_tokens)]
        found = best_spans(context, cands, 1) if cands else []
        return found[0] if found else None
    a, b = span
    if not (0 <= a < b <= len(context)):
        raise ValueError(f"span {a}-{b} is not inside the context (0-{len(context)})")
    return Span(text=context[a:b], start=a, end=b, score=float("nan"))


def _best_window(ctx_offsets: list, logits: list, answer) -> tuple[int, int, int]:
    """(window, start token, end token) of the window that holds ``answer`` with the highest
    start + end logit; ValueError when no window holds it whole."""
    best = None
    for i, offs in enumerate(ctx_offsets):
        ps, pe = answer_positions(offs, answer.start, answer.end)
        if ps == 0 and pe == 0:
            continue
        total = float(logits[i][0][ps] + logits[i][1][pe])
        if best is None or total > best[0]:
            best = (total, i, ps, pe)
    if best is None:
        raise ValueError(f"span {answer.start}-{answer.end} does not fit in one window of the model")
    return best[1:]
