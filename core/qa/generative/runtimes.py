"""The runtimes a generative reader's chat goes to: each turns a chat into the answer's text.

* :class:`LlamaCppRuntime`: a local GGUF file through llama-cpp-python (the offline default; CPU);
* :class:`TransformersRuntime`: any Hugging Face causal LM id or folder with a chat template;
* :class:`ServerRuntime`: an OpenAI-compatible ``/chat/completions`` server (vLLM, llama.cpp's
  server, Ollama, TGI) that the administrator names in models.toml, its API key read from an
  environment variable. Nothing a visitor types ever becomes an address here.

Each has ``name`` (how it answered, shown under the answer), ``identity()`` (what it answers with:
part of the reader's fingerprint), ``concurrency`` (requests it may have in flight at once) and
``complete(messages, settings) -> str``. A failure of the runtime itself (a dead server, a
timeout, a refusal, an answer that is not a chat completion) raises :class:`GenerationError` with
one line saying what happened and what to do; an input too long for the model raises
``QAInputError`` as the extractive engine does.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import threading
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable
from pathlib import Path

from core.qa.engine import QAInputError
from core.qa.generative.prompts import GenerationSettings


class GenerationError(RuntimeError):
    """A runtime that could not answer; the message is the one line a page or a sweep shows."""


def cut_at_stop(text: str, stop: tuple[str, ...]) -> str:
    """``text`` up to the first stop sequence (a runtime that does not stop by itself).

    >>> cut_at_stop("Paris\\nThe capital", ("\\n",))
    'Paris'
    """
    cut = len(text)
    for s in stop:
        i = text.find(s)
        if s and i >= 0:
            cut = min(cut, i)
    return text[:cut]


def _threads(settings: GenerationSettings) -> int:
    from core.qa.threads import budget

    return settings.threads or budget()


def _too_long(n_tokens: int, settings: GenerationSettings) -> QAInputError:
    return QAInputError(f"The passage and question are {n_tokens:,} tokens; with the answer's "
                        f"{settings.max_new_tokens} they do not fit the model's context window of "
                        f"{settings.n_ctx:,} tokens.",
                        f"passage and question longer than the model's context window of {settings.n_ctx:,} tokens")


def _close_if_alive(llm_ref) -> None:
    llm = llm_ref()
    if llm is not None:
        llm.close()


class LlamaCppRuntime:
    """A GGUF file on this machine, answered by llama.cpp (one call at a time: a ``Llama`` holds
    one context)."""

    name = "llama.cpp"
    concurrency = 1
    streams = True   # complete() takes on_text: Ask shows the reply as it is decoded

    def __init__(self, path: Path, settings: GenerationSettings, identity: str | None = None):
        # llama.cpp's OpenMP threads spin between steps by default; on a shared CPU (the app beside
        # a sweep, other processes) spinning threads take the cores the others need. Seen once here
        # at load average 20 on 2 cores (two runs, not a controlled comparison): XQuAD-en at about
        # 55 s a question spinning, 16 s passive.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from llama_cpp import Llama
        except ImportError as e:
            raise GenerationError("the GGUF runtime is not installed: pip install llama-cpp-python==0.3.36") from e
        self.path = Path(path)
        st = self.path.stat()
        self._identity = identity or f"gguf:{self.path.name}:{st.st_size}:{int(st.st_mtime)}"
        self.llm = Llama(model_path=str(self.path), n_ctx=settings.n_ctx, n_threads=_threads(settings),
                         n_threads_batch=_threads(settings), seed=0, verbose=False)
        # Close the model while llama_cpp's module still exists: left to the interpreter's
        # shutdown, its finaliser calls into a module already torn down (a TypeError printed at
        # every exit). A weak reference, so a released engine still frees its memory at once.
        atexit.register(_close_if_alive, weakref.ref(self.llm))
        self._lock = threading.Lock()

    def identity(self) -> str:
        return f"llama.cpp:{self._identity}"

    def complete(self, messages: list[dict], settings: GenerationSettings,
                 on_text: Callable[[str], None] | None = None) -> str:
        """The reply to ``messages``, decoded greedily. ``on_text``: called with the reply so far
        as each piece is decoded (llama.cpp's stream of the same greedy decoding: the final text
        is the one a call without it returns)."""
        kwargs = dict(messages=messages, temperature=0.0, top_k=1, max_tokens=settings.max_new_tokens,
                      stop=list(settings.stop), seed=0)
        with self._lock:
            try:
                if on_text is None:
                    return self.llm.create_chat_completion(**kwargs)["choices"][0]["message"]["content"] or ""
                text = ""
                for chunk in self.llm.create_chat_completion(**kwargs, stream=True):
                    piece = chunk["choices"][0]["delta"].get("content") or ""
                    if piece:
                        text += piece
                        on_text(text)
                return text
            except ValueError as e:
                if "exceed context window" in str(e):
                    n = int("".join(ch for ch in str(e).split("(")[1].split(")")[0] if ch.isdigit()) or 0)
                    raise _too_long(n, settings) from e
                raise


class TransformersRuntime:
    """A Hugging Face causal LM (an id, with internet or in the local cache, or a folder) with a
    chat template, decoded greedily by ``generate``."""

    name = "transformers"
    concurrency = 1

    def __init__(self, source: str, settings: GenerationSettings, local_only: bool):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.source = source
        self.tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local_only)
        if not getattr(self.tokenizer, "chat_template", None):
            raise GenerationError(f"{source} has no chat template: a generative reader needs an instruction-tuned "
                                  "model")
        self.model = AutoModelForCausalLM.from_pretrained(source, local_files_only=local_only, dtype=torch.float32)
        self.model.eval()
        torch.set_num_threads(_threads(settings))
        self._lock = threading.Lock()
        h = hashlib.sha256(source.encode())
        folder = Path(source)
        if folder.is_dir():
            for f in sorted(folder.glob("*.safetensors")):
                h.update(f"{f.name}:{f.stat().st_size}".encode())
        self._identity = h.hexdigest()[:16]

    def identity(self) -> str:
        return f"transformers:{self.source}:{self._identity}"

    def complete(self, messages: list[dict], settings: GenerationSettings) -> str:
        import torch

        enc = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                 return_dict=True)
        n = int(enc["input_ids"].shape[1])
        limit = getattr(self.model.config, "max_position_embeddings", settings.n_ctx)
        if n + settings.max_new_tokens > min(limit, settings.n_ctx):
            raise _too_long(n, settings)
        with self._lock, torch.inference_mode():
            out = self.model.generate(**enc, do_sample=False, max_new_tokens=settings.max_new_tokens,
                                      stop_strings=list(settings.stop) or None, tokenizer=self.tokenizer,
                                      pad_token_id=self.tokenizer.eos_token_id)
        text = self.tokenizer.decode(out[0, n:], skip_special_tokens=True)
        return cut_at_stop(text, settings.stop)


class ServerRuntime:
    """An OpenAI-compatible chat-completions server, as models.toml's ``[model.server]`` names it:
    ``base_url`` (ending before ``/chat/completions``), ``model`` (the name the server knows),
    ``api_key_env`` (the environment variable holding its key; none for a server without one),
    ``max_concurrent`` (requests in flight at once, so the server can batch them) and
    ``timeout_s`` (per request)."""

    name = "server"
    shared = True   # one server for every process that sends to it (Ray's actors split concurrency)

    def __init__(self, base_url: str, model: str, api_key_env: str | None = None, max_concurrent: int = 4,
                 timeout_s: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.concurrency = max(1, int(max_concurrent))
        self.timeout_s = float(timeout_s)
        self.name = f"server ({self.model})"

    def identity(self) -> str:
        return f"server:{self.base_url}:{self.model}"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env, "")
            if not key:
                raise GenerationError(f"the server's API key is not set: the administrator sets the environment "
                                      f"variable {self.api_key_env} (models.toml names it)")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def complete(self, messages: list[dict], settings: GenerationSettings) -> str:
        body = json.dumps({"model": self.model, "messages": messages, "temperature": 0.0, "top_p": 1.0,
                           "max_tokens": settings.max_new_tokens, "stop": list(settings.stop), "seed": 0,
                           "stream": False}).encode()
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=body, headers=self._headers(),
                                         method="POST")
        where = f"the model server {self.base_url}"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read(1 << 20)
        except urllib.error.HTTPError as e:
            detail = e.read(300).decode("utf-8", "replace").strip().replace("\n", " ")
            if e.code in (401, 403):
                raise GenerationError(f"{where} refused the API key (HTTP {e.code}): check {self.api_key_env}") from e
            if e.code == 400 and ("context" in detail.lower() or "too long" in detail.lower()):
                raise QAInputError(f"{where} refused the passage as too long for its model: {detail[:200]}",
                                   "passage too long for the model") from e
            raise GenerationError(f"{where} refused the request (HTTP {e.code}): {detail[:200]}") from e
        except TimeoutError as e:
            raise GenerationError(f"{where} did not answer within {self.timeout_s:g} s") from e
        except urllib.error.URLError as e:
            reason = e.reason
            if isinstance(reason, TimeoutError):
                raise GenerationError(f"{where} did not answer within {self.timeout_s:g} s") from e
            raise GenerationError(f"{where} cannot be reached ({reason}): is it running?") from e
        except OSError as e:
            raise GenerationError(f"{where} dropped the connection ({e})") from e
        return _chat_text(raw, where)


def _chat_text(raw: bytes, where: str) -> str:
    """The answer in an OpenAI chat completion; anything else is one clear error.

    >>> _chat_text(b'{"choices": [{"message": {"content": "Paris"}}]}', "s")
    'Paris'
    >>> _chat_text(b'<html>busy</html>', "server x")
    Traceback (most recent call last):
    ...
    core.qa.generative.runtimes.GenerationError: server x answered something that is not a chat completion (not JSON)
    """
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise GenerationError(f"{where} answered something that is not a chat completion (not JSON)") from e
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as e:
        raise GenerationError(f"{where} answered something that is not a chat completion "
                              "(no choices[0].message.content)") from e
    if content is not None and not isinstance(content, str):
        raise GenerationError(f"{where} answered a chat completion whose content is not text")
    return content or ""
