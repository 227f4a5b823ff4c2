"""Consistency distillation for noise-augmented training: the noisy question learns the clean one's answer.

Plain augmentation trains a perturbed question towards the gold span only. Distillation adds a
second target: the answer distribution that a frozen teacher (the model training starts from)
gives the *clean* question over the same context. A question-only perturbation leaves the context,
and so its tokens, unchanged; only their positions in the window move with the question's length.
So the teacher's start/end logits are keyed by each context token's character offset and laid
back onto the noisy question's window (:func:`align_to_window`), and the student pays the KL
divergence from that distribution (:func:`distill_kl`), beside the usual loss on the gold span.
It penalises exactly what hurts on noisy input: an answer that flips when the wording changes.
"""
from __future__ import annotations

from core.qa.features import Window, build_windows

# Logit given to positions that are not context (question, [CLS], [SEP], padding) in a target:
# exp(-1e4) is 0 in float32, so they get no probability and add nothing to the KL sum.
EXCLUDED = -1e4


def teacher_logits_by_char(model, tokenizer, questions: list[str], contexts: list[str], max_length: int,
                           stride: int, batch_size: int = 64, device="cpu") -> list[dict[int, tuple[float, float]]]:
    """Per pair, {character start of a context token: (start logit, end logit)} from ``model``.

    A token seen in two overlapping windows keeps the values of the first window, the same rule
    for every pair, so a run recomputes the same targets.
    """
    import torch

    windows = build_windows(tokenizer, questions, contexts, max_length=max_length, stride=stride)
    out: list[dict[int, tuple[float, float]]] = [{} for _ in questions]
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for b in range(0, len(windows), batch_size):
            batch = windows[b : b + batch_size]
            enc = tokenizer.pad([{"input_ids": w.input_ids, **w.extra} for w in batch], padding=True,
                                return_tensors="pt")
            res = model(**{k: v.to(device) for k, v in enc.items()})
            starts, ends = res.start_logits.float().cpu().tolist(), res.end_logits.float().cpu().tolist()
            for w, s_row, e_row in zip(batch, starts, ends):
                by_char = out[w.pair_index]
                for i, off in enumerate(w.offsets):
                    if off is not None and off[0] not in by_char:
                        by_char[off[0]] = (s_row[i], e_row[i])
    model.train(was_training)
    return out


def align_to_window(window: Window, by_char: dict[int, tuple[float, float]]) -> tuple[list[float], list[float]] | None:
    """The teacher's start and end logits laid onto ``window``'s positions, :data:`EXCLUDED`
    where a position is not context; None when no context token of the window is known.

    >>> w = Window(pair_index=0, input_ids=[101, 7, 102, 8, 9, 102], extra={},
    ...            offsets=[None, None, None, (0, 3), (4, 9), None])
    >>> align_to_window(w, {0: (2.0, -1.0), 4: (0.5, 3.0)})
    ([-10000.0, -10000.0, -10000.0, 2.0, 0.5, -10000.0], [-10000.0, -10000.0, -10000.0, -1.0, 3.0, -10000.0])
    >>> align_to_window(w, {10: (1.0, 1.0)}) is None
    True
    """
    start, end, found = [], [], False
    for off in window.offsets:
        pair = by_char.get(off[0]) if off is not None else None
        if pair is None:
            start.append(EXCLUDED)
            end.append(EXCLUDED)
        else:
            start.append(pair[0])
            end.append(pair[1])
            found = True
    return (start, end) if found else None


def distill_kl(student_logits, teacher_logits, temperature: float = 1.0):
    """Mean over rows of KL(teacher || student), both softened by ``temperature`` and scaled by
    its square (Hinton et al. 2015, so the gradient's size does not depend on it).

    >>> import math, torch
    >>> t = torch.tensor([[0.0, 0.0]])
    >>> float(distill_kl(torch.tensor([[0.0, 0.0]]), t))
    0.0
    >>> round(float(distill_kl(torch.tensor([[math.log(3.0), 0.0]]), t)), 6)   # KL((.5,.5) || (.75,.25))
    0.143841
    """
    import torch.nn.functional as F

    log_p_student = F.log_softmax(student_logits.float() / temperature, dim=-1)
    p_teacher = F.softmax(teacher_logits.float() / temperature, dim=-1)
    log_p_teacher = F.log_softmax(teacher_logits.float() / temperature, dim=-1)
    kl = (p_teacher * (log_p_teacher - log_p_student)).sum(dim=-1)
    return kl.mean() * temperature ** 2


def distill_targets(model, tokenizer, clean: list, perturbed: list, first_perturbed: int, windows: list[Window],
                    max_length: int, stride: int, device="cpu") -> dict[int, tuple[list[float], list[float]]]:
    """{index into ``windows``: (start, end) teacher logits} for the windows of perturbed questions
    that hold the gold answer.

    ``perturbed`` are the examples at indices ``first_perturbed``... of the training list (a
    window's ``pair_index``); each keeps the id of the clean example it was made from, whose
    question the teacher ``model`` reads over the same context.
    """
    by_id = {e.id: e for e in clean}
    sources = [by_id.get(p.id) for p in perturbed]
    usable = [k for k, (p, c) in enumerate(zip(perturbed, sources)) if c is not None and c.context == p.context]
    logits = teacher_logits_by_char(model, tokenizer, [sources[k].question for k in usable],
                                    [perturbed[k].context for k in usable], max_length, stride, device=device)
    by_example = {first_perturbed + k: logits[n] for n, k in enumerate(usable)}
    targets = {}
    for i, w in enumerate(windows):
        if w.start_position > 0 and w.pair_index in by_example:
            aligned = align_to_window(w, by_example[w.pair_index])
            if aligned is not None:
                targets[i] = aligned
    return targets


def batch_distill_kl(start_logits, end_logits, rows: list[int], targets: list[tuple[list[float], list[float]]],
                     temperature: float = 1.0):
    """The distillation loss of a batch: (KL of the start + KL of the end) / 2 over ``rows``, whose
    ``targets`` are padded with :data:`EXCLUDED` to the batch's length.

    >>> import math, torch
    >>> s = torch.tensor([[0.0, 0.0, 5.0], [1.0, 2.0, 3.0]])
    >>> # row 1 against the target (1, 2, pad): teacher p = (0.269, 0.731, 0), student softmax(1, 2, 3)
    >>> round(float(batch_distill_kl(s, s, [1], [([1.0, 2.0], [1.0, 2.0])])), 4)
    1.0943
    """
    import torch

    width = start_logits.shape[1]
    pad = lambda v: v + [EXCLUDED] * (width - len(v))  # noqa: E731
    t_start = torch.tensor([pad(s) for s, _ in targets], device=start_logits.device)
    t_end = torch.tensor([pad(e) for _, e in targets], device=start_logits.device)
    index = torch.tensor(rows, device=start_logits.device)
    return (distill_kl(start_logits[index], t_start, temperature)
            + distill_kl(end_logits[index], t_end, temperature)) / 2
