"""Integrated gradients of the chosen span's start and end scores, per question and context token.

Method (captum's ``LayerIntegratedGradients`` over the model's input word embeddings, so that it
works for every architecture the registry loads: BERT, MPNet, XLM-R-vocabulary BERT):

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
  integration error captum reports as the convergence delta (kept in :attr:`Attribution.deltas`);
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

from dataclasses import dataclass, field

from core.qa.decode import best_spans, window_candidates
from core.qa.features import answer_positions, question_budget, truncate_question
from core.types import Span

QUESTION, CONTEXT = "question", "context"
DEFAULT_STEPS = 50


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
    # per part and target: the target's change from the baseline, and captum's convergence delta
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
        ratios = [abs(d["delta"]) / abs(d["change"]) for part in self.deltas.values() for d in part.values()
                  if d["change"]]
        return max(ratios) if ratios else None

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


def explain(engine, question: str, context: str, span: tuple[int, int] | None = None,
            n_steps: int = DEFAULT_STEPS) -> Attribution:
    """Attributions of ``engine``'s torch weights for ``span`` (character offsets into
    ``context``; default: the span the weights choose) on (``question``, ``context``).

    ``engine``: a core.qa.engine.QAEngine (its ``model``, ``tokenizer`` and window shape).
    QAInputError for a pair the engine refuses; ValueError for a span outside the context or
    not inside one window.
    """
    import torch

    from core.qa.engine import validate_pair

    validate_pair(question, context)
    if not isinstance(n_steps, int) or isinstance(n_steps, bool) or not 2 <= n_steps <= 1000:
        raise ValueError(f"n_steps must be a whole number in 2..1000, got {n_steps!r}")
    model, tok = float32_model(engine), engine.tokenizer
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
    answer = _chosen_span(engine, context, logits, ctx_offsets, span)
    if answer is None:
        return Attribution(question, context, None, n_steps=n_steps)
    w, ps, pe = _best_window(ctx_offsets, logits, answer)
    ids, extra = _inputs(enc, w, tok, device)
    seq = seqs[w]

    scores, deltas = _integrate(model, tok, ids, extra, seq, (q_seq, c_seq), (ps, pe), n_steps)
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
    return Attribution(question, context, answer, tokens, window, deltas, n_steps)


def _integrate(model, tok, ids, extra: dict, seq: list, sequences: tuple[int, int], positions: tuple[int, int],
               n_steps: int) -> tuple[dict, dict]:
    """Integrated gradients of the start logit at ``positions[0]`` and the end logit at
    ``positions[1]``, over the question's and then the context's tokens (each against a baseline
    with that part's tokens padded): ({(part, start|end): score per token}, {part: deltas})."""
    import torch
    from captum.attr import LayerIntegratedGradients

    q_seq, c_seq = sequences
    ps, pe = positions
    def target(input_ids, which: int, pos: int):
        n = input_ids.shape[0]
        out = model(input_ids=input_ids, **{k: v.expand(n, -1) for k, v in extra.items()})
        return (out.start_logits if which == 0 else out.end_logits)[:, pos].float()

    lig = LayerIntegratedGradients(target, model.get_input_embeddings())
    scores: dict[tuple[str, str], list[float]] = {}
    deltas: dict = {}
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.unk_token_id
    with torch.enable_grad():
        for part, part_seq in ((QUESTION, q_seq), (CONTEXT, c_seq)):
            baseline = ids.clone()
            for j, sid in enumerate(seq):
                if sid == part_seq:
                    baseline[0, j] = pad
            for name, which, pos in (("start", 0, ps), ("end", 1, pe)):
                attr, delta = lig.attribute(ids, baselines=baseline, additional_forward_args=(which, pos),
                                            n_steps=n_steps, internal_batch_size=n_steps,
                                            return_convergence_delta=True)
                scores[(part, name)] = attr.sum(-1)[0].detach().float().cpu().tolist()
                with torch.no_grad():
                    change = float(target(ids, which, pos)[0] - target(baseline, which, pos)[0])
                deltas.setdefault(part, {})[name] = {"change": round(change, 6),
                                                     "delta": round(float(delta[0]), 6)}
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
